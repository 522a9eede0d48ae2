//! A mutex whose implementation — one of the spin locks or `std::sync::Mutex` — is chosen at run
//! time, so kernels can offer `--lock tas|ttas|ticket|std` without being generic over the lock.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::any_lock::LockKind;
use crate::backend::Backend;
use crate::error::Error;
use crate::spin_mutex::{SpinMutex, SpinMutexGuard};

/// A spin lock of this crate or the standard library's (futex-based, sleeping) mutex.
///
/// # Example
///
/// ```
/// use parbench_atomics::{LockKind, MutexKind};
///
/// assert_eq!("std".parse::<MutexKind>()?, MutexKind::Std);
/// assert_eq!("tas".parse::<MutexKind>()?, MutexKind::Spin(LockKind::Tas));
/// let message = "futex".parse::<MutexKind>().unwrap_err().to_string();
/// assert!(message.contains("tas, ttas, ticket, std"));
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MutexKind {
    /// One of the spin locks, with a [`Backend`] chosen separately.
    Spin(LockKind),
    /// `std::sync::Mutex` (the backend is ignored).
    Std,
}

impl MutexKind {
    /// Every mutex kind, in the order benchmarks report them.
    ///
    /// ```
    /// use parbench_atomics::MutexKind;
    /// let names: Vec<_> = MutexKind::ALL.iter().map(|kind| kind.name()).collect();
    /// assert_eq!(names, ["tas", "ttas", "ticket", "std"]);
    /// ```
    pub const ALL: [MutexKind; 4] = [
        MutexKind::Spin(LockKind::Tas),
        MutexKind::Spin(LockKind::Ttas),
        MutexKind::Spin(LockKind::Ticket),
        MutexKind::Std,
    ];

    /// The name accepted by [`FromStr`]: `tas`, `ttas`, `ticket` or `std`.
    ///
    /// ```
    /// assert_eq!(parbench_atomics::MutexKind::Std.name(), "std");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            MutexKind::Spin(kind) => kind.name(),
            MutexKind::Std => "std",
        }
    }

    /// The backend a report names for this mutex built on `backend`: the backend's name for a
    /// spin lock, [`NO_BACKEND`] for `std`, which ignores it.
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, MutexKind, NO_BACKEND};
    /// assert_eq!(MutexKind::Spin(LockKind::Tas).backend_label(Backend::Portable), "portable");
    /// assert_eq!(MutexKind::Std.backend_label(Backend::Portable), NO_BACKEND);
    /// ```
    pub fn backend_label(self, backend: Backend) -> &'static str {
        match self {
            MutexKind::Spin(_) => backend.name(),
            MutexKind::Std => NO_BACKEND,
        }
    }
}

/// The backend label of `std::sync::Mutex`, which has no backend of this crate (see
/// [`MutexKind::backend_label`]).
pub const NO_BACKEND: &str = "-";

impl fmt::Display for MutexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for MutexKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        MutexKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| Error::UnknownLock {
                name: name.to_owned(),
                valid: "tas, ttas, ticket, std",
            })
    }
}

/// Data guarded by the mutex a [`MutexKind`] names.
///
/// Neither variant poisons: a panic inside a critical section releases the lock and leaves the data
/// as the panicking thread left it, so both behave the same way.
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, MutexKind, RuntimeMutex};
///
/// for kind in MutexKind::ALL {
///     let sum = RuntimeMutex::new(kind, Backend::best(), 0_u32)?;
///     *sum.lock() += 2;
///     assert_eq!(sum.into_inner(), 2);
/// }
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub enum RuntimeMutex<T> {
    /// Guarded by a spin lock.
    Spin(SpinMutex<T>),
    /// Guarded by `std::sync::Mutex`.
    Std(Mutex<T>),
}

impl<T> RuntimeMutex<T> {
    /// `value` guarded by a new mutex of `kind`; `backend` applies to spin locks only, and an error
    /// says this CPU cannot run it.
    ///
    /// ```
    /// use parbench_atomics::{Backend, MutexKind, RuntimeMutex};
    /// let mutex = RuntimeMutex::new(MutexKind::Std, Backend::Portable, 'a')?;
    /// assert_eq!(*mutex.lock(), 'a');
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn new(kind: MutexKind, backend: Backend, value: T) -> Result<Self, Error> {
        Ok(match kind {
            MutexKind::Spin(lock) => RuntimeMutex::Spin(SpinMutex::new(lock, backend, value)?),
            MutexKind::Std => RuntimeMutex::Std(Mutex::new(value)),
        })
    }

    /// Waits for the lock and returns a guard giving access to the data.
    ///
    /// ```
    /// use parbench_atomics::{Backend, MutexKind, RuntimeMutex};
    /// let mutex = RuntimeMutex::new("ticket".parse()?, Backend::Portable, vec![1])?;
    /// mutex.lock().push(2);
    /// assert_eq!(*mutex.lock(), [1, 2]);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn lock(&self) -> RuntimeMutexGuard<'_, T> {
        match self {
            RuntimeMutex::Spin(mutex) => RuntimeMutexGuard::Spin(mutex.lock()),
            RuntimeMutex::Std(mutex) => {
                RuntimeMutexGuard::Std(mutex.lock().unwrap_or_else(PoisonError::into_inner))
            }
        }
    }

    /// Consumes the mutex and returns the data.
    ///
    /// ```
    /// use parbench_atomics::{Backend, MutexKind, RuntimeMutex};
    /// let mutex = RuntimeMutex::new(MutexKind::Std, Backend::Portable, 3)?;
    /// assert_eq!(mutex.into_inner(), 3);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            RuntimeMutex::Spin(mutex) => mutex.into_inner(),
            RuntimeMutex::Std(mutex) => mutex.into_inner().unwrap_or_else(PoisonError::into_inner),
        }
    }
}

/// Access to the data of a locked [`RuntimeMutex`]; dropping it releases the lock.
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, MutexKind, RuntimeMutex};
///
/// let mutex = RuntimeMutex::new(MutexKind::Std, Backend::Portable, 1)?;
/// let mut guard = mutex.lock();
/// *guard += 1;
/// drop(guard);
/// assert_eq!(*mutex.lock(), 2);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
///
/// A guard that is not bound to a variable is dropped at once, releasing the lock; that is a
/// warning (`unused_must_use`):
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # use parbench_atomics::{Backend, MutexKind, RuntimeMutex};
/// let mutex = RuntimeMutex::new(MutexKind::Std, Backend::Portable, 1).unwrap();
/// mutex.lock(); // not held past this line
/// ```
#[derive(Debug)]
#[must_use = "if unused the RuntimeMutex will immediately unlock"]
pub enum RuntimeMutexGuard<'a, T> {
    /// Guard of a spin lock.
    Spin(SpinMutexGuard<'a, T>),
    /// Guard of `std::sync::Mutex`.
    Std(MutexGuard<'a, T>),
}

impl<T> Deref for RuntimeMutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            RuntimeMutexGuard::Spin(guard) => guard,
            RuntimeMutexGuard::Std(guard) => guard,
        }
    }
}

impl<T> DerefMut for RuntimeMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match self {
            RuntimeMutexGuard::Spin(guard) => guard,
            RuntimeMutexGuard::Std(guard) => guard,
        }
    }
}
