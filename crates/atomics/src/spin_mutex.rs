//! A mutex that owns its data, on top of any [`RawLock`].
//!
//! The lock and the data live side by side; the only way to reach the data is through a
//! [`SpinMutexGuard`], which exists while the lock is held and releases it when dropped — even if
//! the critical section panics, which is why there is no poisoning to handle.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::any_lock::{AnyLock, LockKind};
use crate::backend::Backend;
use crate::error::Error;
use crate::raw_lock::RawLock;

/// Data guarded by a spin lock `L` ([`AnyLock`] unless chosen otherwise).
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, LockKind, SpinMutex};
///
/// let total = SpinMutex::new(LockKind::Ticket, Backend::best(), 0_u64)?;
/// std::thread::scope(|scope| {
///     for _ in 0..2 {
///         scope.spawn(|| {
///             for _ in 0..1000 {
///                 *total.lock() += 1;
///             }
///         });
///     }
/// });
/// assert_eq!(total.into_inner(), 2000);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
///
/// Sharing the mutex between threads hands `T` from one thread to another, so the mutex is `Sync`
/// only when `T` is `Send`, as `std::sync::Mutex` is:
///
/// ```compile_fail
/// use parbench_atomics::{Backend, LockKind, SpinMutex};
/// fn shared<S: Sync>(_: &S) {}
/// let counts = SpinMutex::new(LockKind::Tas, Backend::Portable, std::rc::Rc::new(0)).unwrap();
/// shared(&counts); // Rc is not Send
/// ```
///
/// ```
/// use parbench_atomics::{Backend, LockKind, SpinMutex};
/// fn shared<S: Sync>(_: &S) {}
/// let cell = SpinMutex::new(LockKind::Tas, Backend::Portable, std::cell::Cell::new(0)).unwrap();
/// shared(&cell); // Cell is Send but not Sync: the lock makes it shareable
/// ```
pub struct SpinMutex<T, L = AnyLock> {
    lock: L,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time, so sharing the mutex only
// moves `T` between threads (T: Send), as with `std::sync::Mutex`.
unsafe impl<T: Send, L: RawLock> Sync for SpinMutex<T, L> {}

impl<T> SpinMutex<T, AnyLock> {
    /// `value` guarded by a new lock of `kind` using `backend`, or an error if this CPU cannot run
    /// the backend.
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let names = SpinMutex::new(LockKind::Tas, Backend::Portable, Vec::<String>::new())?;
    /// names.lock().push("first".into());
    /// assert_eq!(names.lock().len(), 1);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn new(kind: LockKind, backend: Backend, value: T) -> Result<Self, Error> {
        Ok(SpinMutex::with_lock(AnyLock::new(kind, backend)?, value))
    }
}

impl<T, L: RawLock> SpinMutex<T, L> {
    /// `value` guarded by `lock`, which must be free.
    ///
    /// ```
    /// use parbench_atomics::{Backend, SpinMutex, TtasLock};
    /// let mutex = SpinMutex::with_lock(TtasLock::new(Backend::Portable)?, 1);
    /// assert_eq!(*mutex.lock(), 1);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn with_lock(lock: L, value: T) -> Self {
        SpinMutex {
            lock,
            value: UnsafeCell::new(value),
        }
    }

    /// Waits for the lock and returns a guard giving access to the data. Calling it while this
    /// thread holds a guard of the same mutex never returns (see [`RawLock::lock`]).
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let mutex = SpinMutex::new(LockKind::Ttas, Backend::Portable, 1)?;
    /// *mutex.lock() += 1;
    /// assert_eq!(*mutex.lock(), 2);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn lock(&self) -> SpinMutexGuard<'_, T, L> {
        self.lock.lock();
        SpinMutexGuard {
            mutex: self,
            _data: PhantomData,
        }
    }

    /// Returns a guard if the lock is free right now, `None` if another guard exists.
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let mutex = SpinMutex::new(LockKind::Ticket, Backend::Portable, ())?;
    /// let guard = mutex.try_lock();
    /// assert!(guard.is_some());
    /// assert!(mutex.try_lock().is_none());
    /// drop(guard);
    /// assert!(mutex.try_lock().is_some());
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    ///
    /// Ignoring the result is a warning: the guard, if any, is dropped at once.
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// # use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let mutex = SpinMutex::new(LockKind::Tas, Backend::Portable, 10).unwrap();
    /// mutex.try_lock(); // taken and released at once, or not taken
    /// ```
    #[must_use = "if unused the SpinMutex will immediately unlock"]
    pub fn try_lock(&self) -> Option<SpinMutexGuard<'_, T, L>> {
        // `then`, not `then_some`: a guard built eagerly would be dropped on failure and release a
        // lock this thread does not hold.
        self.lock.try_lock().then(|| SpinMutexGuard {
            mutex: self,
            _data: PhantomData,
        })
    }

    /// The data, without locking: `&mut self` proves no guard exists.
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let mut mutex = SpinMutex::new(LockKind::Tas, Backend::Portable, 1)?;
    /// *mutex.get_mut() = 5;
    /// assert_eq!(mutex.into_inner(), 5);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// Consumes the mutex and returns the data.
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let mutex = SpinMutex::new(LockKind::Tas, Backend::Portable, "data")?;
    /// assert_eq!(mutex.into_inner(), "data");
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }

    /// The underlying lock, e.g. to ask an [`AnyLock`] for its kind and backend.
    ///
    /// ```
    /// use parbench_atomics::{Backend, LockKind, SpinMutex};
    /// let mutex = SpinMutex::new(LockKind::Ttas, Backend::Portable, 0)?;
    /// assert_eq!(mutex.raw_lock().kind(), LockKind::Ttas);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn raw_lock(&self) -> &L {
        &self.lock
    }
}

impl<T, L: fmt::Debug> fmt::Debug for SpinMutex<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The data is not shown: reading it would need the lock.
        f.debug_struct("SpinMutex")
            .field("lock", &self.lock)
            .finish_non_exhaustive()
    }
}

/// Access to the data of a locked [`SpinMutex`]; dropping it releases the lock.
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, LockKind, SpinMutex};
///
/// let mutex = SpinMutex::new(LockKind::Tas, Backend::Portable, 10)?;
/// {
///     let mut guard = mutex.lock();
///     *guard -= 3;
/// } // released here
/// assert_eq!(*mutex.lock(), 7);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
///
/// A guard that is not bound to a variable is dropped at once, so the lock is released before the
/// next statement runs; that is a warning (`unused_must_use`), as for `std::sync::MutexGuard`:
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # use parbench_atomics::{Backend, LockKind, SpinMutex};
/// let mutex = SpinMutex::new(LockKind::Tas, Backend::Portable, 10).unwrap();
/// mutex.lock(); // not held past this line
/// ```
///
/// A shared guard hands out `&T` to every thread it is shared with, so the guard is `Sync` only
/// when `T` is:
///
/// ```compile_fail
/// use parbench_atomics::{Backend, LockKind, SpinMutex};
/// fn shared<S: Sync>(_: &S) {}
/// let cell = SpinMutex::new(LockKind::Tas, Backend::Portable, std::cell::Cell::new(0)).unwrap();
/// let guard = cell.lock();
/// shared(&guard); // would let two threads `set` the Cell at once
/// ```
#[must_use = "if unused the SpinMutex will immediately unlock"]
pub struct SpinMutexGuard<'a, T, L: RawLock = AnyLock> {
    mutex: &'a SpinMutex<T, L>,
    /// Makes the guard `Sync` only for `T: Sync` (and `Send` only for `T: Send`), as `&mut T` is:
    /// a shared guard hands out `&T` to several threads.
    _data: PhantomData<&'a mut T>,
}

impl<T, L: RawLock> Deref for SpinMutexGuard<'_, T, L> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock, so no `&mut T` exists.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T, L: RawLock> DerefMut for SpinMutexGuard<'_, T, L> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock and `&mut self` makes this the only reference.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T, L: RawLock> Drop for SpinMutexGuard<'_, T, L> {
    fn drop(&mut self) {
        // SAFETY: a guard is created only after `lock` or a successful `try_lock`, and each guard
        // releases exactly once.
        unsafe { self.mutex.lock.unlock() }
    }
}

impl<T: fmt::Debug, L: RawLock> fmt::Debug for SpinMutexGuard<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_workload::backends_under_test;

    #[test]
    fn failed_try_lock_leaves_the_holder_in_place() {
        for backend in backends_under_test() {
            for kind in LockKind::ALL {
                let mutex = SpinMutex::new(kind, backend, 0).unwrap();
                let held = mutex.lock();
                assert!(mutex.try_lock().is_none(), "{kind}/{backend}");
                assert!(
                    mutex.try_lock().is_none(),
                    "{kind}/{backend}: refusal released it"
                );
                drop(held);
                assert!(mutex.try_lock().is_some(), "{kind}/{backend}");
            }
        }
    }

    #[test]
    fn guard_releases_even_when_the_critical_section_panics() {
        for backend in backends_under_test() {
            for kind in LockKind::ALL {
                let mutex = SpinMutex::new(kind, backend, 1).unwrap();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let mut guard = mutex.lock();
                    *guard = 2;
                    panic!("inside the critical section");
                }));
                assert!(outcome.is_err());
                assert_eq!(
                    mutex.try_lock().map(|guard| *guard),
                    Some(2),
                    "{kind}/{backend}"
                );
            }
        }
    }

    #[test]
    fn debug_of_a_locked_mutex_returns() {
        let mutex = SpinMutex::new(LockKind::Ticket, Backend::best(), 1).unwrap();
        let guard = mutex.lock();
        let shown = format!("{mutex:?}");
        assert!(shown.starts_with("SpinMutex { lock: Ticket("), "{shown}");
        assert_eq!(format!("{guard:?}"), "1");
    }
}
