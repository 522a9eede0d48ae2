//! The timespan tuner and the scheduling-time probe of the study.
//!
//! Both measure how long a parallel call takes to get every thread going. The tuner repeats a
//! call of `num_threads` iterations whose bodies wait until every thread has started one (a
//! rendezvous, so each iteration really runs on a different thread) and records, per round, the
//! time from the call until the last thread started; its 99th percentile is the timespan the tree
//! strategy waits before it creates balancing tasks — long enough that, on a balanced load, every
//! thread has received its share before anybody considers stealing.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::pool::ThreadPool;
use crate::strategy::Strategy;
use crate::timer;

/// Rounds of [`tune_timespan`] in the study.
pub const DEFAULT_TUNING_ROUNDS: usize = 10_000;

/// A rendezvous waits at most this long for the other threads (a thread busy elsewhere must not
/// hang the tuner).
const RENDEZVOUS_LIMIT: Duration = Duration::from_millis(100);

/// Rounds discarded at the start (threads waking up from their first park).
const WARMUP_ROUNDS: usize = 5;

/// The study's timespan tuner: the 99th percentile, over `rounds` calls, of the time from a
/// parallel call until its last thread started. Returns `Duration::ZERO` for `rounds == 0`.
///
/// ```
/// use parbench_scheduler::{tune_timespan, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let timespan = tune_timespan(&pool, 100);
/// assert!(timespan > std::time::Duration::ZERO);
/// ```
pub fn tune_timespan(pool: &ThreadPool, rounds: usize) -> Duration {
    percentile_99(rendezvous_rounds(pool, rounds, None))
}

/// A bounded tuner for build time: at most `rounds` rounds and `budget` of wall time.
pub(crate) fn calibrate(pool: &ThreadPool, rounds: usize, budget: Duration) -> Duration {
    percentile_99(rendezvous_rounds(
        pool,
        rounds + WARMUP_ROUNDS,
        Some(budget),
    ))
}

fn rendezvous_rounds(pool: &ThreadPool, rounds: usize, budget: Option<Duration>) -> Vec<u64> {
    let threads = pool.num_threads();
    let limit = timer::duration_to_ticks(RENDEZVOUS_LIMIT);
    let began = Instant::now();
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let started = AtomicUsize::new(0);
        let last_start = AtomicU64::new(0);
        let call = timer::now();
        pool.parallel_for(0..threads, |_| {
            let now = timer::now();
            // AcqRel/Acquire: the rendezvous only needs the count, but keeping the waits ordered
            // after every start makes the "last start" time well defined.
            if started.fetch_add(1, Ordering::AcqRel) + 1 == threads {
                last_start.store(now, Ordering::Relaxed);
            }
            while started.load(Ordering::Acquire) < threads {
                if timer::now().wrapping_sub(now) > limit {
                    break;
                }
                std::hint::spin_loop();
            }
        });
        let last = last_start.load(Ordering::Relaxed);
        if round >= WARMUP_ROUNDS.min(rounds.saturating_sub(1)) && last != 0 {
            samples.push(last.saturating_sub(call));
        }
        if budget.is_some_and(|budget| began.elapsed() > budget) {
            break;
        }
    }
    samples
}

fn percentile_99(mut samples: Vec<u64>) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = (samples.len() * 99).div_ceil(100).max(1) - 1;
    timer::ticks_to_duration(samples[rank])
}

/// The study's scheduling-time probe: for one call with `strategy`, the time from the call to
/// each thread's first iteration, sorted ascending. Threads that ran no iteration (because others
/// took all the work first) are absent. Every iteration busy-waits ~1 µs so that all threads get
/// the chance to join; the call has 64 iterations per thread.
///
/// ```
/// use parbench_scheduler::{sched_time_probe, Strategy, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let times = sched_time_probe(&pool, &Strategy::default());
/// assert!(!times.is_empty() && times.len() <= 3);
/// assert!(times.windows(2).all(|w| w[0] <= w[1]));
/// ```
pub fn sched_time_probe(pool: &ThreadPool, strategy: &Strategy) -> Vec<Duration> {
    let threads = pool.num_threads();
    // One slot per worker plus one for an outside caller.
    let first: Vec<AtomicU64> = (0..=threads).map(|_| AtomicU64::new(0)).collect();
    let work = timer::duration_to_ticks(Duration::from_micros(1));
    let call = timer::now();
    pool.parallel_for_with(strategy, 0..threads * 64, |_| {
        let now = timer::now();
        let slot = pool.current_thread_index().unwrap_or(threads);
        let _ = first[slot].compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        while timer::now().wrapping_sub(now) < work {
            std::hint::spin_loop();
        }
    });
    let mut times: Vec<Duration> = first
        .iter()
        .map(|t| t.load(Ordering::Relaxed))
        .filter(|&t| t != 0)
        .map(|t| timer::ticks_to_duration(t.saturating_sub(call)))
        .collect();
    times.sort_unstable();
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_99_picks_the_rank_ceiling() {
        let samples: Vec<u64> = (1..=200).collect();
        let expected = timer::ticks_to_duration(198);
        assert_eq!(percentile_99(samples), expected);
        assert_eq!(percentile_99(Vec::new()), Duration::ZERO);
        assert_eq!(percentile_99(vec![7]), timer::ticks_to_duration(7));
    }
}
