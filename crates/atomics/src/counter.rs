//! A shared 64-bit counter whose increment instruction is fixed by its backend.
//!
//! This is the "per-CPU counter" case of the LSE vs LL/SC question: LSE adds with one `LDADDAL`
//! executed in the cache hierarchy, LL/SC with an `LDAXR`/`ADD`/`STLXR` loop on the core that
//! retries when another core touched the line in between.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::arch::dispatch;
use crate::backend::{Backend, Detected};
use crate::error::Error;

/// A counter with acquire-release `fetch_add` through a run-time chosen [`Backend`].
///
/// # Example
///
/// ```
/// use parbench_atomics::{AtomicCounter, Backend};
///
/// let counter = AtomicCounter::new(Backend::best())?;
/// std::thread::scope(|scope| {
///     for _ in 0..2 {
///         scope.spawn(|| {
///             for _ in 0..1000 {
///                 counter.fetch_add(1);
///             }
///         });
///     }
/// });
/// assert_eq!(counter.load(), 2000);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub struct AtomicCounter {
    value: AtomicU64,
    backend: Detected,
}

impl AtomicCounter {
    /// A counter at 0 using `backend`, or an error if this CPU cannot run the backend.
    ///
    /// ```
    /// use parbench_atomics::{AtomicCounter, Backend};
    /// assert_eq!(AtomicCounter::new(Backend::Portable)?.load(), 0);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn new(backend: Backend) -> Result<Self, Error> {
        Ok(AtomicCounter {
            value: AtomicU64::new(0),
            backend: backend.detect()?,
        })
    }

    /// Adds `addend` (wrapping at 2^64) and returns the previous value.
    ///
    /// The ordering is acquire-release, so the counter can count completions: whoever reads the
    /// final count with [`load`](Self::load) also sees what the counting threads wrote before.
    ///
    /// ```
    /// use parbench_atomics::{AtomicCounter, Backend};
    /// let counter = AtomicCounter::new(Backend::Portable)?;
    /// assert_eq!(counter.fetch_add(5), 0);
    /// assert_eq!(counter.fetch_add(1), 5);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn fetch_add(&self, addend: u64) -> u64 {
        dispatch!(self.backend, counter_fetch_add(&self.value, addend))
    }

    /// The current value.
    ///
    /// ```
    /// use parbench_atomics::{AtomicCounter, Backend};
    /// let counter = AtomicCounter::new(Backend::Portable)?;
    /// counter.fetch_add(2);
    /// assert_eq!(counter.load(), 2);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn load(&self) -> u64 {
        // Acquire: pairs with the release half of `fetch_add` (see there).
        self.value.load(Ordering::Acquire)
    }

    /// The backend this counter was built with.
    ///
    /// ```
    /// use parbench_atomics::{AtomicCounter, Backend};
    /// assert_eq!(AtomicCounter::new(Backend::Portable)?.backend(), Backend::Portable);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend.backend()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_workload::{backends_under_test, PER_THREAD, THREADS};

    #[test]
    fn concurrent_increments_sum_exactly() {
        for backend in backends_under_test() {
            let counter = AtomicCounter::new(backend).unwrap();
            let mut seen: Vec<u64> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|_| {
                        scope.spawn(|| {
                            (0..PER_THREAD)
                                .map(|_| counter.fetch_add(1))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|handle| handle.join().unwrap())
                    .collect()
            });
            let total = THREADS as u64 * PER_THREAD;
            assert_eq!(counter.load(), total, "{backend}");
            // Every increment saw a distinct previous value: none was lost or duplicated.
            seen.sort_unstable();
            assert!(seen.iter().copied().eq(0..total), "{backend}");
        }
    }

    #[test]
    fn fetch_add_wraps_at_u64_max() {
        for backend in backends_under_test() {
            let counter = AtomicCounter::new(backend).unwrap();
            counter.value.store(u64::MAX, Ordering::Relaxed);
            assert_eq!(counter.fetch_add(2), u64::MAX, "{backend}");
            assert_eq!(counter.load(), 1, "{backend}");
        }
    }

    #[cfg(not(target_arch = "aarch64"))]
    #[test]
    fn arm_backends_are_refused_off_aarch64() {
        assert!(AtomicCounter::new(Backend::Lse).is_err());
        assert!(AtomicCounter::new(Backend::LlSc).is_err());
    }
}
