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
/// half of its rounds measured, or whose blocks disagree, is repeated, at most this many times in
/// all.
const CALIBRATION_ATTEMPTS: usize = 3;

/// The build-time calibration cuts its samples into this many consecutive blocks and takes the
/// median of their 99th percentiles.
const CALIBRATION_BLOCKS: usize = 5;

/// A bounded tuner for build time: the 99th percentile of [`tune_timespan`], made robust against
/// the two ways a noisy machine spoils it. `floor` is the smallest timespan the pool will use.
///
/// * **A pool's first milliseconds.** Just after a pool is built its threads can share one CPU
///   until the OS moves one away (on a 2-vCPU VM: ≈ 4 ms, a scheduler tick, per round, for every
///   round in the budget — 3 of 100 builds here). A run that measured fewer than half of `rounds`
///   before its `budget` ran out is therefore repeated. Right after such a run a new one measures
///   the usual 1–2 µs.
/// * **Bursts of host noise.** A few rounds of hundreds of µs, in a row, make the 99th percentile
///   of one run that large. The samples, in the order they were taken, are cut into
///   [`CALIBRATION_BLOCKS`] blocks and the median of the blocks' 99th percentiles is the run's
///   result, so a burst within two of the five blocks does not move it. A burst over more of
///   them (the whole run takes ≈ 1 ms here) shows as blocks that disagree — the result above
///   both `floor` and twice the smallest block's — and the run is repeated too.
///
/// At most [`CALIBRATION_ATTEMPTS`] runs; the smallest result of the runs that measured at least
/// half of their rounds counts (if none did, the run with the most samples). A machine that is
/// slow to start threads for a while measures the same in every block and is not repeated; if
/// the pool's later calls start faster, they lower the timespan again (`retune.rs`).
///
/// Before this, in 40 default sweeps on a 2-vCPU VM, 51 of the 1 560 pools of tree cells (one per
/// cell and round) calibrated 500 µs (the clamp) and 30 more 20–250 µs. Such a pool runs an
/// irregular loop nearly as `Static` does (no balancing for the first timespan, and grains of
/// one timespan): spmv-triangle's tree / fastest other was 1.13–1.29 in the five sweeps where
/// its tree cell had one, 1.008 (median) in the other 35.
pub(crate) fn calibrate(
    pool: &ThreadPool,
    rounds: usize,
    budget: Duration,
    floor: Duration,
) -> Duration {
    calibrated(rounds, floor, || {
        rendezvous_rounds(pool, rounds + WARMUP_ROUNDS, Some(budget))
    })
}

/// One run of the build-time calibration, judged.
struct Attempt {
    samples: usize,
    /// It measured at least half of its rounds.
    complete: bool,
    /// The median of its blocks' 99th percentiles.
    result: Duration,
}

impl Attempt {
    /// Which of two runs counts: a complete one before one cut short; of two complete ones the
    /// smaller result; of two cut short the one with more samples.
    fn better(self, other: Attempt) -> Attempt {
        let self_first = match (self.complete, other.complete) {
            (true, false) => true,
            (false, true) => false,
            (true, true) => self.result <= other.result,
            (false, false) => self.samples >= other.samples,
        };
        if self_first { self } else { other }
    }
}

/// The calibration's rule, apart from the measurement: `run` is one bounded run of the tuner
/// (its samples in the order taken) that was meant to measure `rounds` rounds.
fn calibrated(rounds: usize, floor: Duration, mut run: impl FnMut() -> Vec<u64>) -> Duration {
    let mut chosen: Option<Attempt> = None;
    for _ in 0..CALIBRATION_ATTEMPTS {
        let samples = run();
        let blocks = block_percentiles(&samples, CALIBRATION_BLOCKS);
        let result = blocks.get(blocks.len() / 2).copied().unwrap_or_default();
        let complete = samples.len() * 2 >= rounds;
        let agree = blocks
            .first()
            .is_none_or(|&smallest| result <= floor || result <= smallest * 2);
        let attempt = Attempt {
            samples: samples.len(),
            complete,
            result,
        };
        chosen = Some(match chosen {
            Some(previous) => previous.better(attempt),
            None => attempt,
        });
        if complete && agree {
            break;
        }
    }
    chosen.map_or(Duration::ZERO, |attempt| attempt.result)
}

/// The 99th percentiles of `blocks` consecutive, near-equal blocks of `samples` (fewer blocks if
/// there are fewer samples), smallest first.
fn block_percentiles(samples: &[u64], blocks: usize) -> Vec<Duration> {
    if samples.is_empty() {
        return Vec::new();
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
    percentiles
}

fn rendezvous_rounds(pool: &ThreadPool, rounds: usize, budget: Option<Duration>) -> Vec<u64> {
    let threads = pool.num_threads();
    let limit = timer::duration_to_ticks(RENDEZVOUS_LIMIT);
    let began = Instant::now();
    // Reserved up to the study's run only: `rounds` is the caller's, and `usize::MAX` (to be
    // cut short by `budget`) must not fail the allocation; a longer run grows the vector between
    // rounds, outside the measured calls.
    let mut samples = Vec::with_capacity(rounds.min(DEFAULT_TUNING_ROUNDS + WARMUP_ROUNDS));
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

/// The iterations of a probe call: `per_thread` (clamped to `1..=MAX_PROBE_PER_THREAD`) per
/// thread; saturating, since a pool of many threads on a 32-bit target could pass `usize::MAX`.
fn probe_iterations(threads: usize, per_thread: usize) -> usize {
    threads.saturating_mul(per_thread.clamp(1, MAX_PROBE_PER_THREAD))
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
/// the chance to join; the call has 64 iterations per thread ([`sched_time_probe_with`] sets
/// that).
///
/// ```
/// use parbench_scheduler::{sched_time_probe, Strategy, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let times = sched_time_probe(&pool, &Strategy::default());
/// assert!(!times.is_empty() && times.len() <= 3);
/// assert!(times.windows(2).all(|w| w[0] <= w[1]));
/// ```
pub fn sched_time_probe(pool: &ThreadPool, strategy: &Strategy) -> Vec<Duration> {
    sched_time_probe_with(pool, strategy, 64)
}

/// The most iterations per thread [`sched_time_probe_with`] runs: about a second of ~1 µs
/// iterations per thread, far longer than any wake-up it is meant to show (the `sched-time`
/// kernel's `per-thread` parameter has the same bound).
pub const MAX_PROBE_PER_THREAD: usize = 1_000_000;

/// [`sched_time_probe`] with `per_thread` iterations (of ~1 µs) per thread: a longer call shows
/// threads that join late, such as parked workers woken on a busy host, which a short one ends
/// without. `per_thread` is clamped to `1..=`[`MAX_PROBE_PER_THREAD`].
///
/// ```
/// use parbench_scheduler::{sched_time_probe_with, Strategy, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let times = sched_time_probe_with(&pool, &Strategy::Static, 500);
/// assert!(!times.is_empty() && times.len() <= 3);
/// ```
pub fn sched_time_probe_with(
    pool: &ThreadPool,
    strategy: &Strategy,
    per_thread: usize,
) -> Vec<Duration> {
    let threads = pool.num_threads();
    // One slot per worker plus one for an outside caller.
    let first: Vec<AtomicU64> = (0..=threads).map(|_| AtomicU64::new(0)).collect();
    let work = timer::duration_to_ticks(Duration::from_micros(1));
    let call = timer::now();
    let iterations = probe_iterations(threads, per_thread);
    pool.parallel_for_with(strategy, 0..iterations, |_| {
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
        assert_eq!(micros(block_percentiles(&samples, 5)[2]), 2);
        // In more than half of the blocks the burst wins: then it is no outlier.
        samples[500 - 3..].fill(ticks(400));
        samples[0..3].fill(ticks(400));
        assert_eq!(micros(block_percentiles(&samples, 5)[2]), 400);
    }

    /// Runs `calibrated` for 500 rounds with a 10 µs floor over the given runs (first run first);
    /// returns how many runs it made and its result in µs.
    fn calibrate_over(runs: Vec<Vec<u64>>) -> (usize, u64) {
        let mut runs = runs.into_iter();
        let mut calls = 0;
        let result = calibrated(500, Duration::from_micros(10), || {
            calls += 1;
            runs.next().unwrap()
        });
        (calls, micros(result))
    }

    fn steady(len: usize, micros: u64) -> Vec<u64> {
        (0..len).map(|i| ticks(micros + (i % 2) as u64)).collect()
    }

    #[test]
    fn a_calibration_cut_short_by_its_budget_is_repeated() {
        // The first run measured 3 rounds of ≈ 4 ms (threads sharing a CPU), the second all 500.
        assert_eq!(
            calibrate_over(vec![vec![ticks(3_900); 3], steady(500, 1)]),
            (2, 2)
        );
        // A run that measured at least half of its rounds, all alike, is not repeated.
        assert_eq!(calibrate_over(vec![vec![ticks(5); 250]]), (1, 5));
        // Runs that never get far enough: three attempts, the one with the most samples counts.
        let short = |n: usize| vec![ticks(n as u64); n];
        assert_eq!(
            calibrate_over(vec![short(40), short(90), short(10)]),
            (3, 90)
        );
        // A complete run counts before any run cut short, even a longer result.
        assert_eq!(
            calibrate_over(vec![short(60), short(20), steady(300, 30)]),
            (3, 31)
        );
        assert_eq!(calibrated(500, Duration::ZERO, Vec::new), Duration::ZERO);
    }

    #[test]
    fn a_run_whose_blocks_disagree_is_repeated_and_the_smallest_result_counts() {
        // A burst over three of the five blocks: the blocks' p99s are 240, 100, 250, 30 and 2 µs.
        let mut burst = steady(500, 1);
        for (block, value) in [(0, 240), (1, 100), (2, 250), (3, 30)] {
            burst[block * 100 + 40..block * 100 + 45].fill(ticks(value));
        }
        assert_eq!(micros(block_percentiles(&burst, 5)[2]), 100);
        assert_eq!(calibrate_over(vec![burst.clone(), steady(500, 1)]), (2, 2));
        // Disagreeing every time: three runs, the smallest result counts.
        assert_eq!(
            calibrate_over(vec![burst.clone(), burst.clone(), burst]),
            (3, 100)
        );
        // A slow state of the machine, the same in every block, is kept at once.
        assert_eq!(calibrate_over(vec![steady(500, 15)]), (1, 16));
        // Blocks that disagree below the floor do not matter: the pool uses the floor anyway.
        let mut low = steady(500, 1);
        low[440..445].fill(ticks(9));
        low[240..245].fill(ticks(8));
        low[40..45].fill(ticks(7));
        assert_eq!(calibrate_over(vec![low]), (1, 7));
    }

    #[test]
    fn probe_iterations_are_capped_per_thread_and_never_overflow() {
        assert_eq!(probe_iterations(2, 0), 2);
        assert_eq!(probe_iterations(2, 64), 128);
        assert_eq!(probe_iterations(3, usize::MAX), 3 * MAX_PROBE_PER_THREAD);
        assert_eq!(probe_iterations(usize::MAX, 2), usize::MAX);
    }

    /// Only a run's budget bounds it: `usize::MAX` rounds with a zero budget stop after the first
    /// round (a warm-up round, not sampled) rather than reserving room for every round.
    #[test]
    fn a_run_of_usize_max_rounds_ends_by_its_budget() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .timespan(crate::Timespan::Fixed(Duration::from_micros(5)))
            .build()
            .unwrap();
        assert_eq!(
            rendezvous_rounds(&pool, usize::MAX, Some(Duration::ZERO)),
            Vec::<u64>::new()
        );
    }

    /// `per_thread` beyond the cap runs the capped call (about a second of ~1 µs iterations per
    /// thread) instead of overflowing `threads · per_thread`.
    #[test]
    fn sched_time_probe_with_usize_max_per_thread_runs_the_capped_call() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .timespan(crate::Timespan::Fixed(Duration::from_micros(5)))
            .build()
            .unwrap();
        let times = sched_time_probe_with(&pool, &Strategy::Static, usize::MAX);
        assert!(!times.is_empty() && times.len() <= 3, "{times:?}");
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
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
