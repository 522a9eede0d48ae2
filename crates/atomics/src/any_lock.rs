//! Lock and backend chosen at run time, for kernels and benchmarks that take `--lock`/`--backend`.
//!
//! [`AnyLock`] is an enum over the three spin locks rather than a `Box<dyn RawLock>`: the match is
//! a well-predicted branch and the lock stays inline in whatever contains it.

use std::fmt;
use std::str::FromStr;

use crate::backend::Backend;
use crate::error::Error;
use crate::raw_lock::RawLock;
use crate::tas::TasLock;
use crate::ticket::TicketLock;
use crate::ttas::TtasLock;

/// Which spin-lock algorithm to build.
///
/// # Example
///
/// ```
/// use parbench_atomics::LockKind;
///
/// assert_eq!("ticket".parse::<LockKind>()?, LockKind::Ticket);
/// assert_eq!(LockKind::Ttas.to_string(), "ttas");
/// assert!("mcs".parse::<LockKind>().unwrap_err().to_string().contains("tas, ttas, ticket"));
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockKind {
    /// [`TasLock`]: swap until the previous value was 0.
    Tas,
    /// [`TtasLock`]: load until 0, then compare-and-swap.
    Ttas,
    /// [`TicketLock`]: FIFO fetch-add tickets.
    Ticket,
}

impl LockKind {
    /// Every lock kind, in the order benchmarks report them.
    ///
    /// ```
    /// use parbench_atomics::LockKind;
    /// assert_eq!(LockKind::ALL, [LockKind::Tas, LockKind::Ttas, LockKind::Ticket]);
    /// ```
    pub const ALL: [LockKind; 3] = [LockKind::Tas, LockKind::Ttas, LockKind::Ticket];

    /// The name accepted by [`FromStr`]: `tas`, `ttas` or `ticket`.
    ///
    /// ```
    /// assert_eq!(parbench_atomics::LockKind::Tas.name(), "tas");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Tas => "tas",
            LockKind::Ttas => "ttas",
            LockKind::Ticket => "ticket",
        }
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for LockKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        LockKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| Error::UnknownLock {
                name: name.to_owned(),
                valid: "tas, ttas, ticket",
            })
    }
}

/// One of the spin locks, chosen at run time.
///
/// # Example
///
/// ```
/// use parbench_atomics::{AnyLock, Backend, LockKind, RawLock};
///
/// let lock = AnyLock::new("ttas".parse()?, "portable".parse()?)?;
/// assert_eq!((lock.kind(), lock.backend()), (LockKind::Ttas, Backend::Portable));
/// lock.lock();
/// // SAFETY: this thread holds the lock.
/// unsafe { lock.unlock() };
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub enum AnyLock {
    /// A test-and-set lock.
    Tas(TasLock),
    /// A test-and-test-and-set lock.
    Ttas(TtasLock),
    /// A ticket lock.
    Ticket(TicketLock),
}

impl AnyLock {
    /// A free lock of `kind` using `backend`, or an error if this CPU cannot run the backend.
    ///
    /// ```
    /// use parbench_atomics::{AnyLock, Backend, LockKind};
    /// assert!(AnyLock::new(LockKind::Ticket, Backend::best()).is_ok());
    /// ```
    pub fn new(kind: LockKind, backend: Backend) -> Result<Self, Error> {
        Ok(match kind {
            LockKind::Tas => AnyLock::Tas(TasLock::new(backend)?),
            LockKind::Ttas => AnyLock::Ttas(TtasLock::new(backend)?),
            LockKind::Ticket => AnyLock::Ticket(TicketLock::new(backend)?),
        })
    }

    /// Which lock algorithm this is.
    ///
    /// ```
    /// use parbench_atomics::{AnyLock, Backend, LockKind};
    /// assert_eq!(AnyLock::new(LockKind::Tas, Backend::Portable)?.kind(), LockKind::Tas);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn kind(&self) -> LockKind {
        match self {
            AnyLock::Tas(_) => LockKind::Tas,
            AnyLock::Ttas(_) => LockKind::Ttas,
            AnyLock::Ticket(_) => LockKind::Ticket,
        }
    }

    /// The backend the lock was built with.
    ///
    /// ```
    /// use parbench_atomics::{AnyLock, Backend, LockKind};
    /// assert_eq!(AnyLock::new(LockKind::Tas, Backend::Portable)?.backend(), Backend::Portable);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        match self {
            AnyLock::Tas(lock) => lock.backend(),
            AnyLock::Ttas(lock) => lock.backend(),
            AnyLock::Ticket(lock) => lock.backend(),
        }
    }
}

// SAFETY: forwards every call to the one lock inside, which upholds the contract itself.
unsafe impl RawLock for AnyLock {
    fn lock(&self) {
        match self {
            AnyLock::Tas(lock) => lock.lock(),
            AnyLock::Ttas(lock) => lock.lock(),
            AnyLock::Ticket(lock) => lock.lock(),
        }
    }

    fn try_lock(&self) -> bool {
        match self {
            AnyLock::Tas(lock) => lock.try_lock(),
            AnyLock::Ttas(lock) => lock.try_lock(),
            AnyLock::Ticket(lock) => lock.try_lock(),
        }
    }

    unsafe fn unlock(&self) {
        // SAFETY: the caller holds this lock, hence the inner one.
        unsafe {
            match self {
                AnyLock::Tas(lock) => lock.unlock(),
                AnyLock::Ttas(lock) => lock.unlock(),
                AnyLock::Ticket(lock) => lock.unlock(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::test_workload::{backends_under_test, PER_THREAD, THREADS};

    /// Every lock × available backend (the others are reported as skipped).
    fn every_lock() -> Vec<AnyLock> {
        backends_under_test()
            .into_iter()
            .flat_map(|backend| LockKind::ALL.map(|kind| AnyLock::new(kind, backend)))
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// A plain (non-atomic) integer that only the lock protects.
    struct Unprotected(UnsafeCell<u64>);
    // SAFETY: the test only touches the cell while holding the lock under test.
    unsafe impl Sync for Unprotected {}

    impl Unprotected {
        /// # Safety
        /// The caller holds the lock that protects this counter.
        unsafe fn increment(&self) {
            // SAFETY: the caller holds the lock, so no other thread accesses the cell.
            unsafe { *self.0.get() += 1 };
        }
    }

    #[test]
    fn every_lock_keeps_a_plain_counter_exact() {
        for lock in every_lock() {
            let counter = Unprotected(UnsafeCell::new(0));
            std::thread::scope(|scope| {
                for _ in 0..THREADS {
                    scope.spawn(|| {
                        for _ in 0..PER_THREAD {
                            lock.lock();
                            // SAFETY: the lock is held.
                            unsafe { counter.increment() };
                            // SAFETY: taken just above.
                            unsafe { lock.unlock() };
                        }
                    });
                }
            });
            let expected = THREADS as u64 * PER_THREAD;
            assert_eq!(counter.0.into_inner(), expected, "{lock:?}");
        }
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after_unlock() {
        for lock in every_lock() {
            assert!(lock.try_lock(), "free lock refused: {lock:?}");
            assert!(!lock.try_lock(), "held lock taken twice: {lock:?}");
            let taken_elsewhere =
                std::thread::scope(|scope| scope.spawn(|| lock.try_lock()).join().unwrap());
            assert!(
                !taken_elsewhere,
                "held lock taken by another thread: {lock:?}"
            );
            // SAFETY: the first `try_lock` succeeded.
            unsafe { lock.unlock() };
            assert!(lock.try_lock(), "released lock refused: {lock:?}");
            // SAFETY: just taken.
            unsafe { lock.unlock() };
            lock.lock();
            assert!(!lock.try_lock(), "lock() did not take the lock: {lock:?}");
            // SAFETY: taken by `lock()`.
            unsafe { lock.unlock() };
        }
    }

    #[test]
    fn lock_waits_for_the_holder() {
        for lock in every_lock() {
            let released = AtomicBool::new(false);
            lock.lock();
            std::thread::scope(|scope| {
                let waiter = scope.spawn(|| {
                    lock.lock();
                    // Relaxed: the lock's acquire/release already orders this read after the
                    // holder's store; the test checks exactly that.
                    let saw_release = released.load(Ordering::Relaxed);
                    // SAFETY: taken just above.
                    unsafe { lock.unlock() };
                    saw_release
                });
                std::thread::yield_now();
                released.store(true, Ordering::Relaxed);
                // SAFETY: taken before the scope.
                unsafe { lock.unlock() };
                assert!(
                    waiter.join().unwrap(),
                    "waiter entered before release: {lock:?}"
                );
            });
        }
    }

    #[test]
    fn kind_and_backend_are_reported() {
        for lock in every_lock() {
            let rebuilt = AnyLock::new(lock.kind(), lock.backend()).unwrap();
            assert_eq!(
                (rebuilt.kind(), rebuilt.backend()),
                (lock.kind(), lock.backend())
            );
        }
        assert_eq!(
            AnyLock::new(LockKind::Ticket, Backend::Portable)
                .unwrap()
                .kind(),
            LockKind::Ticket
        );
    }

    #[test]
    fn unknown_lock_name_lists_valid_names() {
        assert_eq!(
            format!("[{:<6}]", LockKind::Tas),
            "[tas   ]",
            "Display honours width"
        );
        let message = "spin".parse::<LockKind>().unwrap_err().to_string();
        assert_eq!(message, "unknown lock `spin` (valid: tas, ttas, ticket)");
        for kind in LockKind::ALL {
            assert_eq!(kind.name().parse::<LockKind>().ok(), Some(kind));
        }
    }

    #[cfg(not(target_arch = "aarch64"))]
    #[test]
    fn arm_backends_are_refused_off_aarch64() {
        for kind in LockKind::ALL {
            for backend in [Backend::Lse, Backend::LlSc] {
                assert!(matches!(
                    AnyLock::new(kind, backend),
                    Err(Error::BackendUnavailable { .. })
                ));
            }
        }
    }

    #[cfg(target_arch = "aarch64")]
    #[test]
    fn lse_locks_exist_exactly_when_the_cpu_has_lse() {
        let has_lse = std::arch::is_aarch64_feature_detected!("lse");
        for kind in LockKind::ALL {
            assert_eq!(AnyLock::new(kind, Backend::Lse).is_ok(), has_lse);
            assert!(AnyLock::new(kind, Backend::LlSc).is_ok());
        }
    }
}
