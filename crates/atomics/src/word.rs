//! A shared 64-bit word whose compare-and-swap and minimum instructions are fixed by its backend.
//!
//! This is the "CAS loop" case of the LSE vs LL/SC question, as branch-and-bound searches use it
//! for their shared best bound (INNCABS qap and floorplan): LSE compares and swaps with one `CASAL`
//! or lowers the value with one `LDUMINAL`; LL/SC runs an `LDAXR`/`CMP`/`STLXR` loop (with `CLREX`
//! when the compare fails) or an `LDAXR`/`CSEL`/`STLXR` loop.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::arch::dispatch;
use crate::backend::{Backend, Detected};
use crate::error::Error;

/// A 64-bit word with acquire-release `compare_exchange` and `fetch_min` through a run-time chosen
/// [`Backend`].
///
/// # Example
///
/// ```
/// use parbench_atomics::{AtomicWord, Backend};
///
/// let best = AtomicWord::new(Backend::best(), u64::MAX)?;
/// std::thread::scope(|scope| {
///     for offset in 0..2 {
///         let best = &best;
///         scope.spawn(move || {
///             for cost in (10..1000).rev() {
///                 best.fetch_min(cost * 2 + offset);
///             }
///         });
///     }
/// });
/// assert_eq!(best.load(), 20);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub struct AtomicWord {
    value: AtomicU64,
    backend: Detected,
}

impl AtomicWord {
    /// A word holding `initial` using `backend`, or an error if this CPU cannot run the backend.
    ///
    /// ```
    /// use parbench_atomics::{AtomicWord, Backend};
    /// assert_eq!(AtomicWord::new(Backend::Portable, 7)?.load(), 7);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn new(backend: Backend, initial: u64) -> Result<Self, Error> {
        Ok(AtomicWord {
            value: AtomicU64::new(initial),
            backend: backend.detect()?,
        })
    }

    /// Stores `new` if the value is `current`: `Ok(current)` then, else `Err(actual value)`.
    /// Acquire-release on success, acquire on failure, like `compare_exchange(AcqRel, Acquire)`.
    ///
    /// ```
    /// use parbench_atomics::{AtomicWord, Backend};
    /// let word = AtomicWord::new(Backend::Portable, 5)?;
    /// assert_eq!(word.compare_exchange(5, 3), Ok(5));
    /// assert_eq!(word.compare_exchange(5, 1), Err(3));
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        let previous = dispatch!(
            self.backend,
            word_compare_exchange(&self.value, current, new)
        );
        if previous == current {
            Ok(previous)
        } else {
            Err(previous)
        }
    }

    /// Lowers the value to `value` if that is smaller (unsigned) and returns the previous value;
    /// acquire-release.
    ///
    /// ```
    /// use parbench_atomics::{AtomicWord, Backend};
    /// let word = AtomicWord::new(Backend::Portable, 5)?;
    /// assert_eq!(word.fetch_min(9), 5);
    /// assert_eq!(word.fetch_min(2), 5);
    /// assert_eq!(word.load(), 2);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn fetch_min(&self, value: u64) -> u64 {
        dispatch!(self.backend, word_fetch_min(&self.value, value))
    }

    /// The current value.
    pub fn load(&self) -> u64 {
        // Acquire: pairs with the release half of a successful `compare_exchange`/`fetch_min`.
        self.value.load(Ordering::Acquire)
    }

    /// Sets the value; `&mut` proves no other thread uses the word meanwhile.
    ///
    /// ```
    /// use parbench_atomics::{AtomicWord, Backend};
    /// let mut word = AtomicWord::new(Backend::Portable, 5)?;
    /// word.set(9);
    /// assert_eq!(word.load(), 9);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn set(&mut self, value: u64) {
        *self.value.get_mut() = value;
    }

    /// The backend this word was built with.
    pub fn backend(&self) -> Backend {
        self.backend.backend()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_workload::{backends_under_test, PER_THREAD, THREADS};

    #[test]
    fn concurrent_cas_increments_lose_nothing() {
        for backend in backends_under_test() {
            let word = AtomicWord::new(backend, 0).unwrap();
            std::thread::scope(|scope| {
                for _ in 0..THREADS {
                    scope.spawn(|| {
                        for _ in 0..PER_THREAD {
                            let mut current = word.load();
                            while let Err(actual) = word.compare_exchange(current, current + 1) {
                                current = actual;
                            }
                        }
                    });
                }
            });
            assert_eq!(word.load(), THREADS as u64 * PER_THREAD, "{backend}");
        }
    }

    #[test]
    fn concurrent_minimum_keeps_the_smallest_and_never_raises() {
        for backend in backends_under_test() {
            let word = AtomicWord::new(backend, u64::MAX).unwrap();
            std::thread::scope(|scope| {
                for thread in 0..THREADS as u64 {
                    let word = &word;
                    scope.spawn(move || {
                        for i in (0..PER_THREAD).rev() {
                            let previous = word.fetch_min(i * THREADS as u64 + thread + 1);
                            assert!(previous >= word.load(), "{backend}: the minimum rose");
                        }
                    });
                }
            });
            assert_eq!(word.load(), 1, "{backend}");
            assert_eq!(
                word.fetch_min(u64::MAX),
                1,
                "{backend}: larger values do not raise it"
            );
            assert_eq!(word.load(), 1, "{backend}");
        }
    }

    #[test]
    fn failed_compare_reports_the_actual_value() {
        for backend in backends_under_test() {
            let word = AtomicWord::new(backend, 10).unwrap();
            assert_eq!(word.compare_exchange(11, 0), Err(10), "{backend}");
            assert_eq!(word.compare_exchange(10, u64::MAX), Ok(10), "{backend}");
            assert_eq!(word.load(), u64::MAX, "{backend}");
        }
    }

    #[cfg(not(target_arch = "aarch64"))]
    #[test]
    fn arm_backends_are_refused_off_aarch64() {
        assert!(AtomicWord::new(Backend::Lse, 0).is_err());
        assert!(AtomicWord::new(Backend::LlSc, 0).is_err());
    }
}
