//! Test-and-set lock: every attempt swaps 1 into the lock word.
//!
//! The simplest spin lock: an attempt is an unconditional swap (LSE `SWPA`, LL/SC `LDAXR`/`STXR`),
//! and the previous value says whether the lock was free. Waiters keep writing the lock's cache
//! line, so under contention the line bounces between cores on every attempt;
//! [`TtasLock`](crate::TtasLock) avoids that by reading first. Unlock is a release store of 0
//! (`STLR`).

use std::sync::atomic::AtomicU32;

use crate::arch::{dispatch, AtomicOps};
use crate::backend::{Backend, Detected};
use crate::error::Error;
use crate::raw_lock::RawLock;
use crate::spin_wait::SpinWait;

/// Value of a free lock word.
pub(crate) const UNLOCKED: u32 = 0;
/// Value of a held lock word.
pub(crate) const LOCKED: u32 = 1;

/// Test-and-set spin lock with a run-time chosen [`Backend`].
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, RawLock, TasLock};
///
/// let lock = TasLock::new(Backend::best())?;
/// lock.lock();
/// assert!(!lock.try_lock());
/// // SAFETY: this thread holds the lock.
/// unsafe { lock.unlock() };
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub struct TasLock {
    word: AtomicU32,
    backend: Detected,
}

impl TasLock {
    /// A free lock using `backend`'s instructions, or an error if this CPU cannot run them.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TasLock};
    /// assert!(TasLock::new(Backend::Portable).is_ok());
    /// ```
    pub fn new(backend: Backend) -> Result<Self, Error> {
        Ok(TasLock {
            word: AtomicU32::new(UNLOCKED),
            backend: backend.detect()?,
        })
    }

    /// The backend this lock was built with.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TasLock};
    /// assert_eq!(TasLock::new(Backend::Portable)?.backend(), Backend::Portable);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend.backend()
    }
}

// SAFETY: a swap returning UNLOCKED means this thread changed the word from 0 to 1, which only one
// thread can do until the release store of 0; the swap is acquire, the store release.
unsafe impl RawLock for TasLock {
    fn lock(&self) {
        dispatch!(self.backend, tas_lock(&self.word))
    }

    fn try_lock(&self) -> bool {
        dispatch!(self.backend, tas_try_lock(&self.word))
    }

    unsafe fn unlock(&self) {
        dispatch!(self.backend, word_unlock(&self.word))
    }
}

/// The acquire loop, instantiated per backend by `arch::entry_points!`.
///
/// # Safety
/// The CPU supports `O`'s instructions.
#[inline(always)]
pub(crate) unsafe fn lock<O: AtomicOps>(word: &AtomicU32) {
    let mut wait = SpinWait::default();
    // SAFETY: forwarded contract (the CPU supports `O`).
    while unsafe { O::swap_acquire(word, LOCKED) } != UNLOCKED {
        wait.wait();
    }
}

/// One attempt, instantiated per backend by `arch::entry_points!`.
///
/// # Safety
/// The CPU supports `O`'s instructions.
#[inline(always)]
pub(crate) unsafe fn try_lock<O: AtomicOps>(word: &AtomicU32) -> bool {
    // SAFETY: forwarded contract (the CPU supports `O`).
    unsafe { O::swap_acquire(word, LOCKED) == UNLOCKED }
}
