//! Test-and-test-and-set lock: wait with plain loads, then compare-and-swap 0 → 1.
//!
//! Waiters spin on a relaxed load, which keeps the lock's cache line shared instead of bouncing
//! it; only when the load sees the lock free do they try a compare-and-swap. This is listing 2.2 of
//! the INNCABS study (LSE: `CASA` after the load saw 0) and listing 2.1 (LL/SC: `LDAXR`, `CBNZ`,
//! `STXR`, `CBNZ`; a lock seen taken executes `CLREX`). Unlock is a release store of 0 (`STLR`).

use std::sync::atomic::{AtomicU32, Ordering};

use crate::arch::{dispatch, AtomicOps};
use crate::backend::{Backend, Detected};
use crate::error::Error;
use crate::raw_lock::RawLock;
use crate::spin_wait::SpinWait;
use crate::tas::{LOCKED, UNLOCKED};

// The take compares against zero (`CBNZ` in LL/SC), so a free lock word must be 0.
const _: () = assert!(UNLOCKED == 0);

/// Test-and-test-and-set spin lock with a run-time chosen [`Backend`].
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, RawLock, TtasLock};
///
/// let lock = TtasLock::new(Backend::best())?;
/// assert!(lock.try_lock());
/// assert!(!lock.try_lock());
/// // SAFETY: this thread holds the lock.
/// unsafe { lock.unlock() };
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub struct TtasLock {
    word: AtomicU32,
    backend: Detected,
}

impl TtasLock {
    /// A free lock using `backend`'s instructions, or an error if this CPU cannot run them.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TtasLock};
    /// assert!(TtasLock::new(Backend::Portable).is_ok());
    /// ```
    pub fn new(backend: Backend) -> Result<Self, Error> {
        Ok(TtasLock {
            word: AtomicU32::new(UNLOCKED),
            backend: backend.detect()?,
        })
    }

    /// The backend this lock was built with.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TtasLock};
    /// assert_eq!(TtasLock::new(Backend::Portable)?.backend(), Backend::Portable);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend.backend()
    }
}

// SAFETY: only a compare-and-swap that found UNLOCKED takes the lock, and only one thread can move
// the word from 0 to 1 until the release store of 0; the CAS is acquire, the store release.
unsafe impl RawLock for TtasLock {
    fn lock(&self) {
        dispatch!(self.backend, ttas_lock(&self.word))
    }

    fn try_lock(&self) -> bool {
        dispatch!(self.backend, ttas_try_lock(&self.word))
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
    loop {
        // Relaxed: the load only decides whether to try; the CAS below provides the acquire.
        while word.load(Ordering::Relaxed) != UNLOCKED {
            wait.wait();
        }
        // SAFETY: forwarded contract (the CPU supports `O`).
        if unsafe { O::compare_zero_swap_acquire(word, LOCKED) } == UNLOCKED {
            return;
        }
    }
}

/// One attempt, instantiated per backend by `arch::entry_points!`.
///
/// # Safety
/// The CPU supports `O`'s instructions.
#[inline(always)]
pub(crate) unsafe fn try_lock<O: AtomicOps>(word: &AtomicU32) -> bool {
    // SAFETY: forwarded contract (the CPU supports `O`).
    unsafe { O::compare_zero_swap_acquire(word, LOCKED) == UNLOCKED }
}
