//! Lock throughput and fairness: T threads compete for a shared budget of acquisitions.
//!
//! The budget (`threads × iterations`) lives inside the mutex, as a plain integer. Each thread
//! repeatedly locks, takes one unit of budget if any is left, spins for the critical-section
//! length, and unlocks; it counts how many units it took. So the per-thread counts always sum to
//! the budget exactly (a lock that broke mutual exclusion would overdraw it), while their spread
//! shows fairness: a FIFO ticket lock gives every thread nearly the same share, a TAS lock lets the
//! thread whose cache already holds the line win again and again.
//!
//! This module measures; it never judges. Timings under emulation (qemu) mean nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::error::Error;
use crate::runtime_mutex::{MutexKind, RuntimeMutex};

/// The result of one [`lock_bench`] run.
///
/// # Example
///
/// ```
/// use parbench_atomics::{lock_bench, Backend, MutexKind};
/// use std::time::Duration;
///
/// let run = lock_bench(MutexKind::Std, Backend::Portable, 2, 100, Duration::ZERO)?;
/// assert_eq!(run.total_acquisitions(), 200);
/// assert!(run.fairness_spread() >= 0.0);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LockBenchRun {
    /// The mutex measured.
    pub kind: MutexKind,
    /// The backend of a spin lock; `None` for `std::sync::Mutex`.
    pub backend: Option<Backend>,
    /// Wall-clock time from releasing the threads until the last one finished.
    pub elapsed: Duration,
    /// Acquisitions (units of budget) taken by each thread, in spawn order.
    pub acquisitions: Vec<u64>,
}

impl LockBenchRun {
    /// All acquisitions; always `threads × iterations`.
    ///
    /// ```
    /// # use parbench_atomics::{lock_bench, Backend, MutexKind};
    /// # use std::time::Duration;
    /// let run = lock_bench("tas".parse()?, Backend::Portable, 3, 10, Duration::ZERO)?;
    /// assert_eq!(run.total_acquisitions(), 30);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn total_acquisitions(&self) -> u64 {
        self.acquisitions.iter().sum()
    }

    /// Acquisitions per second of wall-clock time (0 if no time elapsed).
    ///
    /// ```
    /// # use parbench_atomics::{lock_bench, Backend, MutexKind};
    /// # use std::time::Duration;
    /// let run = lock_bench(MutexKind::Std, Backend::Portable, 1, 1000, Duration::ZERO)?;
    /// assert!(run.acquisitions_per_second() >= 0.0);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn acquisitions_per_second(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.total_acquisitions() as f64 / seconds
        } else {
            0.0
        }
    }

    /// `(max − min) / mean` of the per-thread acquisitions: 0 is perfectly fair, 1 means the
    /// busiest thread took one mean share more than the least busy one. 0 for an empty run.
    ///
    /// ```
    /// # use parbench_atomics::{Backend, LockBenchRun, MutexKind};
    /// # use std::time::Duration;
    /// let run = LockBenchRun {
    ///     kind: MutexKind::Std,
    ///     backend: None,
    ///     elapsed: Duration::from_millis(1),
    ///     acquisitions: vec![50, 150],
    /// };
    /// assert_eq!(run.fairness_spread(), 1.0);
    /// ```
    pub fn fairness_spread(&self) -> f64 {
        let (Some(min), Some(max)) = (
            self.acquisitions.iter().min(),
            self.acquisitions.iter().max(),
        ) else {
            return 0.0;
        };
        let mean = self.total_acquisitions() as f64 / self.acquisitions.len() as f64;
        if mean > 0.0 {
            (max - min) as f64 / mean
        } else {
            0.0
        }
    }
}

/// Runs `threads` threads competing for `threads × iterations` acquisitions of one mutex of
/// `kind` (`backend` applies to spin locks), each holding it for `critical_section` (busy-waiting).
///
/// Each thread takes the lock once more than it counts, to see that the budget is exhausted.
/// Errors: [`Error::ZeroThreads`], [`Error::BackendUnavailable`], [`Error::TooManyThreads`] if
/// there is no memory to keep track of that many threads, or [`Error::Spawn`] if the OS refuses a
/// thread.
///
/// # Example
///
/// ```
/// use parbench_atomics::{lock_bench, Backend, MutexKind};
/// use std::time::Duration;
///
/// for kind in MutexKind::ALL {
///     let run = lock_bench(kind, Backend::best(), 2, 500, Duration::ZERO)?;
///     assert_eq!(run.acquisitions.len(), 2);
///     assert_eq!(run.total_acquisitions(), 1000);
/// }
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
pub fn lock_bench(
    kind: MutexKind,
    backend: Backend,
    threads: usize,
    iterations: u64,
    critical_section: Duration,
) -> Result<LockBenchRun, Error> {
    if threads == 0 {
        return Err(Error::ZeroThreads);
    }
    let budget = RuntimeMutex::new(kind, backend, iterations.saturating_mul(threads as u64))?;
    let start = AtomicBool::new(false);
    let (elapsed, acquisitions) = thread::scope(|scope| {
        let mut handles = Vec::new();
        // Fallible: `with_capacity` would panic (capacity overflow) or abort (out of memory) on a
        // thread count the caller chose, before the OS had a chance to refuse a single thread.
        handles
            .try_reserve_exact(threads)
            .map_err(|source| Error::TooManyThreads { threads, source })?;
        let mut spawn_error = None;
        for index in 0..threads {
            let spawned = thread::Builder::new()
                .name(format!("lock-bench-{index}"))
                .spawn_scoped(scope, || compete(&budget, &start, critical_section));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    spawn_error = Some(error);
                    break;
                }
            }
        }
        let began = Instant::now();
        // Set even after a spawn error, so the threads already running finish instead of waiting
        // forever. Relaxed: a pure signal, the threads read nothing that it would publish.
        start.store(true, Ordering::Relaxed);
        let acquisitions: Vec<u64> = handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        let elapsed = began.elapsed();
        match spawn_error {
            Some(error) => Err(Error::Spawn(error)),
            None => Ok((elapsed, acquisitions)),
        }
    })?;
    Ok(LockBenchRun {
        kind,
        backend: matches!(kind, MutexKind::Spin(_)).then_some(backend),
        elapsed,
        acquisitions,
    })
}

/// One benchmark thread: take budget until none is left; returns how much it took.
fn compete(budget: &RuntimeMutex<u64>, start: &AtomicBool, critical_section: Duration) -> u64 {
    // Relaxed: see the store in `lock_bench`.
    while !start.load(Ordering::Relaxed) {
        thread::yield_now();
    }
    let mut taken = 0;
    loop {
        let mut remaining = budget.lock();
        if *remaining == 0 {
            return taken;
        }
        *remaining -= 1;
        taken += 1;
        hold_for(critical_section);
    }
}

/// Busy-waits for `duration`, modelling work inside the critical section.
fn hold_for(duration: Duration) {
    if duration.is_zero() {
        return;
    }
    let began = Instant::now();
    while began.elapsed() < duration {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_workload::backends_under_test;

    #[test]
    fn counts_sum_exactly_to_the_budget_for_every_mutex() {
        for backend in backends_under_test() {
            for kind in MutexKind::ALL {
                let run = lock_bench(kind, backend, 4, 2_000, Duration::ZERO).unwrap();
                assert_eq!(run.acquisitions.len(), 4, "{kind}/{backend}");
                assert_eq!(run.total_acquisitions(), 8_000, "{kind}/{backend}");
            }
        }
    }

    #[test]
    fn critical_section_runs_inside_the_lock() {
        let run = lock_bench(
            MutexKind::Spin(crate::LockKind::Ticket),
            Backend::best(),
            2,
            20,
            Duration::from_micros(5),
        )
        .unwrap();
        assert_eq!(run.total_acquisitions(), 40);
    }

    #[test]
    fn zero_threads_is_an_error() {
        assert!(matches!(
            lock_bench(MutexKind::Std, Backend::Portable, 0, 10, Duration::ZERO),
            Err(Error::ZeroThreads)
        ));
    }

    #[test]
    fn backend_is_reported_for_spin_locks_only() {
        let spin = lock_bench(
            "ttas".parse().unwrap(),
            Backend::Portable,
            1,
            1,
            Duration::ZERO,
        );
        assert_eq!(spin.unwrap().backend, Some(Backend::Portable));
        let std = lock_bench(MutexKind::Std, Backend::Portable, 1, 1, Duration::ZERO);
        assert_eq!(std.unwrap().backend, None);
    }

    #[test]
    fn absurd_thread_count_is_an_error_not_a_panic() {
        // Both overflow the handles' capacity (more than isize::MAX bytes), so they are refused
        // deterministically, before a single thread starts, whatever memory the machine has.
        for threads in [usize::MAX, usize::MAX / 2] {
            let run = lock_bench(
                MutexKind::Std,
                Backend::Portable,
                threads,
                1,
                Duration::ZERO,
            );
            match run {
                Err(error @ Error::TooManyThreads { .. }) => {
                    assert!(error.to_string().contains(&threads.to_string()), "{error}");
                }
                other => panic!("{threads} threads: {other:?}"),
            }
        }
    }

    #[cfg(not(target_arch = "aarch64"))]
    #[test]
    fn unavailable_backend_is_an_error() {
        let run = lock_bench("tas".parse().unwrap(), Backend::Lse, 2, 10, Duration::ZERO);
        assert!(matches!(run, Err(Error::BackendUnavailable { .. })));
    }

    #[test]
    fn fairness_spread_is_zero_for_equal_shares() {
        let run = LockBenchRun {
            kind: MutexKind::Std,
            backend: None,
            elapsed: Duration::from_secs(1),
            acquisitions: vec![7, 7, 7],
        };
        assert_eq!(run.fairness_spread(), 0.0);
        assert_eq!(run.acquisitions_per_second(), 21.0);
    }
}
