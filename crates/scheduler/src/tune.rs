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

/// Attempts of the build-time calibration: a run that ends (by its time budget) with fewer than
/// half of its rounds measured is repeated, at most this many times in all.
const CALIBRATION_ATTEMPTS: usize = 3;

/// The build-time calibration cuts its samples into this many consecutive blocks and takes the
/// median of their 99th percentiles.
const CALIBRATION_BLOCKS: usize = 5;

/// A bounded tuner for build time: the 99th percentile of [`tune_timespan`], made robust against
/// the two ways a noisy machine spoils it.
///
/// * **A pool's first milliseconds.** Just after a pool is built its threads can share one CPU
///   until the OS moves one away (on a 2-vCPU VM: ≈ 4 ms, a scheduler tick, per round, for every
///   round in the budget — 3 of 100 builds here). A run that measured fewer than half of `rounds`
///   before its `budget` ran out is therefore repeated (at most [`CALIBRATION_ATTEMPTS`] runs; the
///   one with the most samples counts). Right after such a run a new one measures the usual
///   1–2 µs.
/// * **Short bursts of host noise.** A few rounds of hundreds of µs, in a row, make the 99th
///   percentile of one run that large. The samples, in the order they were taken, are cut into
///   [`CALIBRATION_BLOCKS`] blocks and the median of the blocks' 99th percentiles is the result,
///   so a burst within two of the five blocks does not move it.
///
/// Before this, in 40 default sweeps on a 2-vCPU VM, 51 of the 1 560 pools of tree cells (one per
/// cell and round) calibrated 500 µs (the clamp) and 30 more 20–250 µs. Such a pool runs an
/// irregular loop nearly as `Static` does (no balancing for the first timespan, and grains of
/// one timespan): spmv-triangle's tree / fastest other was 1.13–1.29 in the five sweeps where
/// its tree cell had one, 1.008 (median) in the other 35.
pub(crate) fn calibrate(pool: &ThreadPool, rounds: usize, budget: Duration) -> Duration {
    calibrated(rounds, || {
        rendezvous_rounds(pool, rounds + WARMUP_ROUNDS, Some(budget))
    })
}

/// The calibration's rule, apart from the measurement: `run` is one bounded run of the tuner
/// (its samples in the order taken) that was meant to measure `rounds` rounds.
fn calibrated(rounds: usize, mut run: impl FnMut() -> Vec<u64>) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..CALIBRATION_ATTEMPTS {
        let attempt = run();
        let enough = attempt.len() * 2 >= rounds;
        if attempt.len() > samples.len() {
            samples = attempt;
        }
        if enough {
            break;
        }
    }
    median_of_block_percentiles(&samples, CALIBRATION_BLOCKS)
}

/// The median of the 99th percentiles of `blocks` consecutive, near-equal blocks of `samples`
/// (fewer blocks if there are fewer samples; the upper median of an even count).
fn median_of_block_percentiles(samples: &[u64], blocks: usize) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let blocks = blocks.clamp(1, samples.len());
    let mut percentiles: Vec<Duration> = (0..blocks)
        .map(|index| {
            let start = samples.len() * index / blocks;
            let end = samples.len() * (index + 1) / blocks;
            percentile_99(samples[start..end].to_vec())
        })
        .collect();
    percentiles.sort_unstable();
    percentiles[blocks / 2]
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

    fn ticks(micros: u64) -> u64 {
        timer::duration_to_ticks(Duration::from_micros(micros))
    }

    fn micros(duration: Duration) -> u64 {
        // Rounded: ticks and durations convert through the measured clock rate.
        (duration.as_secs_f64() * 1e6).round() as u64
    }

    #[test]
    fn a_burst_within_two_of_five_blocks_does_not_move_the_calibration() {
        // 500 rounds of 1–2 µs, with bursts of 400 µs rounds inside blocks 1 and 3.
        let mut samples: Vec<u64> = (0..500).map(|i| ticks(1 + i % 2)).collect();
        for i in (100..110).chain(300..306) {
            samples[i] = ticks(400);
        }
        assert_eq!(
            micros(percentile_99(samples.clone())),
            400,
            "the plain p99 is spoiled"
        );
        assert_eq!(micros(median_of_block_percentiles(&samples, 5)), 2);
        // In more than half of the blocks the burst wins: then it is no outlier.
        samples[500 - 3..].fill(ticks(400));
        samples[0..3].fill(ticks(400));
        assert_eq!(micros(median_of_block_percentiles(&samples, 5)), 400);
    }

    #[test]
    fn a_calibration_cut_short_by_its_budget_is_repeated() {
        // The first run measured 3 rounds of ≈ 4 ms (threads sharing a CPU), the second all 500.
        let mut runs = vec![
            (0..500).map(|i| ticks(1 + i % 2)).collect::<Vec<_>>(),
            vec![ticks(3_900); 3],
        ];
        let mut calls = 0;
        let result = calibrated(500, || {
            calls += 1;
            runs.pop().unwrap()
        });
        assert_eq!((calls, micros(result)), (2, 2));
        // A run that measured at least half of its rounds is not repeated.
        let mut calls = 0;
        let result = calibrated(500, || {
            calls += 1;
            vec![ticks(5); 250]
        });
        assert_eq!((calls, micros(result)), (1, 5));
        // Runs that never get far enough: three attempts, the one with the most samples counts.
        let mut sizes = vec![40, 90, 10].into_iter();
        let mut calls = 0;
        let result = calibrated(500, || {
            calls += 1;
            let n = sizes.next().unwrap();
            vec![ticks(n as u64); n]
        });
        assert_eq!((calls, micros(result)), (3, 90));
        assert_eq!(calibrated(500, Vec::new), Duration::ZERO);
    }

    #[test]
    fn percentile_99_picks_the_rank_ceiling() {
        let samples: Vec<u64> = (1..=200).collect();
        let expected = timer::ticks_to_duration(198);
        assert_eq!(percentile_99(samples), expected);
        assert_eq!(percentile_99(Vec::new()), Duration::ZERO);
        assert_eq!(percentile_99(vec![7]), timer::ticks_to_duration(7));
    }
}
