//! The pool's timespan, and how a calibrated one is lowered from the pool's own calls.
//!
//! The build-time calibration (`tune::calibrate`) measures how long a call takes to get every
//! thread going, once. If the machine is slow to start threads during those few milliseconds —
//! a burst of host noise over the whole calibration — the pool keeps a timespan far above what
//! its calls see later (2 of 780 pools in 20 default sweeps on a 2-vCPU VM calibrated the
//! 500 µs ceiling), and every irregular loop on it runs nearly as `Static` does.
//!
//! So a pool whose calibrated timespan is above the floor keeps checking it against its
//! outermost tree calls, which measure the same thing the calibration does: the time from the
//! call until its last thread starts its share. The sample of a call is slot 1's start — the
//! root hands slot 1 its share last, at the deepest level of the hand-off. After
//! [`WINDOW_CALLS`] samples, if [`MEDIAN_FACTOR`] times their median is below the timespan, the
//! timespan becomes that (at least the floor): it only ever goes down, to where the calls show
//! it can. Once at the floor, or once the timespan is set by hand, the pool stops watching, and
//! its calls pay one relaxed load for this. Only calls the tree distributes measure: nested calls
//! and outermost ones of at most `small_per_thread` iterations per thread (the task kernels'
//! calls), run lazily, have no share start to record, and there the timespan only bounds how far
//! index-order claims grow.
//!
//! Why the median: the slowest starts of a window are mostly calls that woke a parked worker.
//! On the 2-vCPU VM, slot 1's start in back-to-back two-thread calls had a median of 1.1–1.2 µs
//! and a 99th percentile of 2.8–4.3 µs (three processes of 3 000 calls, `sched_time_probe`);
//! with a 2 ms pause every 17 calls — what a sweep's interleaved blocks do — the median stayed
//! 1.1–1.2 µs and the 99th percentile became 107–128 µs (the wake-ups). The slowest start of a
//! window would thus keep most pools where they are; four times the median is about the 99th
//! percentile of the back-to-back calls the calibration measures.

use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::timer;

/// Calls whose share starts make one judgement of the timespan.
pub(crate) const WINDOW_CALLS: usize = 16;

/// A window lowers the timespan to this many times its median share start (see the module
/// docs).
const MEDIAN_FACTOR: u64 = 4;

/// The tree strategy's timespan of one pool, in ticks and as set, and its online lowering.
pub(crate) struct PoolTimespan {
    ticks: AtomicU64,
    /// The same timespan as set, for reporting without tick-conversion rounding.
    nanos: AtomicU64,
    /// The timespan the build calibrated, in nanoseconds (0: not calibrated). Kept for reporting
    /// once lowering or `set` has replaced it.
    calibrated: AtomicU64,
    /// Set while the timespan was calibrated and is above the floor (a hint for the calls: the
    /// window, under its lock, decides).
    watching: AtomicBool,
    /// Written only while watching; on a line of its own so that it does not drag the fields
    /// every call reads along.
    window: CachePadded<Mutex<Window>>,
}

/// The share starts seen since the last judgement.
#[derive(Default)]
struct Window {
    /// Whether lowering is still allowed (the authoritative copy of `watching`).
    watching: bool,
    /// The smallest timespan lowering may reach.
    floor: Duration,
    /// The share starts of the window's calls so far, in ticks.
    starts: [u64; WINDOW_CALLS],
    calls: usize,
}

impl PoolTimespan {
    /// A timespan of zero (not set yet), not watching.
    pub(crate) fn new() -> Self {
        PoolTimespan {
            ticks: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
            calibrated: AtomicU64::new(0),
            watching: AtomicBool::new(false),
            window: CachePadded::new(Mutex::new(Window::default())),
        }
    }

    /// The timespan in ticks (0 until set).
    #[inline]
    pub(crate) fn ticks(&self) -> u64 {
        // Relaxed: a tuning value; no other data is published through it.
        self.ticks.load(Ordering::Relaxed)
    }

    /// The timespan as it was set (or lowered to).
    pub(crate) fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// The timespan the pool's build calibrated, if it did (whatever the timespan is now).
    pub(crate) fn calibrated(&self) -> Option<Duration> {
        // Relaxed: a reported value; no other data is published through it.
        match self.calibrated.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }

    /// Sets the timespan by hand (the builder's `Timespan::Fixed`, `ThreadPool::set_timespan`):
    /// the pool stops watching it.
    pub(crate) fn set(&self, timespan: Duration) {
        let mut window = self.lock();
        *window = Window::default();
        self.watching.store(false, Ordering::Relaxed);
        self.store(timespan);
    }

    /// Sets a calibrated timespan: if it is above `floor`, the pool's outermost tree calls may
    /// lower it (towards `floor`, never below it).
    pub(crate) fn set_calibrated(&self, timespan: Duration, floor: Duration) {
        let mut window = self.lock();
        let watching = timespan > floor;
        *window = Window {
            watching,
            floor,
            ..Window::default()
        };
        self.watching.store(watching, Ordering::Relaxed);
        self.store(timespan);
        let nanos = u64::try_from(timespan.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        self.calibrated.store(nanos, Ordering::Relaxed);
    }

    /// Whether the calls should record their share starts.
    #[inline]
    pub(crate) fn watching(&self) -> bool {
        // Relaxed: a hint; `record` checks the window's own flag under its lock.
        self.watching.load(Ordering::Relaxed)
    }

    /// Records one outermost tree call's share start, `ticks` after the call began; every
    /// [`WINDOW_CALLS`] calls, lowers the timespan if they show it can be.
    pub(crate) fn record(&self, ticks: u64) {
        let mut window = self.lock();
        if !window.watching {
            return;
        }
        let call = window.calls;
        window.starts[call] = ticks;
        window.calls += 1;
        if window.calls < WINDOW_CALLS {
            return;
        }
        window.calls = 0;
        window.starts.sort_unstable();
        let median = window.starts[WINDOW_CALLS / 2];
        let floor = timer::duration_to_ticks(window.floor);
        if let Some(lower) = lowered(self.ticks(), median, floor) {
            if lower <= floor {
                self.store(window.floor);
                window.watching = false;
                self.watching.store(false, Ordering::Relaxed);
            } else {
                self.store(timer::ticks_to_duration(lower));
            }
        }
    }

    fn store(&self, timespan: Duration) {
        let nanos = u64::try_from(timespan.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.store(nanos, Ordering::Relaxed);
        self.ticks
            .store(timer::duration_to_ticks(timespan), Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The rule: a window whose median share start, times [`MEDIAN_FACTOR`], is below the `current`
/// timespan lowers it to that (at least `floor`); otherwise nothing changes. All values in ticks.
fn lowered(current: u64, median: u64, floor: u64) -> Option<u64> {
    let proposed = median.saturating_mul(MEDIAN_FACTOR).max(floor);
    (proposed < current).then_some(proposed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(us: u64) -> u64 {
        timer::duration_to_ticks(Duration::from_micros(us))
    }

    /// Within a tick-conversion rounding of `us` microseconds.
    fn about(timespan: Duration, us: u64) -> bool {
        timespan.as_nanos().abs_diff(u128::from(us) * 1000) <= 10
    }

    #[test]
    fn the_rule_only_lowers_and_never_below_the_floor() {
        assert_eq!(lowered(500, 2, 10), Some(10), "fast: down to the floor");
        assert_eq!(lowered(500, 40, 10), Some(160), "four times the median");
        assert_eq!(lowered(500, 125, 10), None, "that is the timespan");
        assert_eq!(lowered(50, 400, 10), None, "slow starts never raise it");
        assert_eq!(lowered(10, 1, 10), None, "at the floor already");
    }

    #[test]
    fn a_window_of_fast_starts_lowers_a_calibrated_timespan_to_the_floor_and_stops_watching() {
        let timespan = PoolTimespan::new();
        timespan.set_calibrated(Duration::from_micros(500), Duration::from_micros(10));
        assert!(timespan.watching());
        for _ in 0..WINDOW_CALLS - 1 {
            timespan.record(micros(2));
        }
        assert!(
            about(timespan.get(), 500),
            "no judgement before the window is full"
        );
        // The slowest start of the window (a call that woke a parked worker) does not count.
        timespan.record(micros(300));
        assert_eq!(
            timespan.get(),
            Duration::from_micros(10),
            "exactly the floor"
        );
        assert!(!timespan.watching());
        timespan.record(0);
        assert!(about(timespan.get(), 10));
        assert_eq!(
            timespan.calibrated(),
            Some(Duration::from_micros(500)),
            "the calibrated value stays reported"
        );
    }

    #[test]
    fn mostly_slow_starts_hold_the_timespan_and_the_next_window_starts_afresh() {
        let timespan = PoolTimespan::new();
        timespan.set_calibrated(Duration::from_micros(500), Duration::from_micros(10));
        // Half of the window slow: its median is a slow start.
        for call in 0..WINDOW_CALLS {
            timespan.record(micros(if call % 2 == 0 { 200 } else { 2 }));
        }
        assert!(about(timespan.get(), 500), "{:?}", timespan.get());
        assert!(timespan.watching());
        // A window whose median start is 40 µs lowers it to 160 µs and keeps watching.
        for call in 0..WINDOW_CALLS {
            timespan.record(micros(if call < WINDOW_CALLS / 2 { 2 } else { 40 }));
        }
        assert!(about(timespan.get(), 160), "{:?}", timespan.get());
        assert!(timespan.watching());
    }

    #[test]
    fn a_timespan_set_by_hand_or_calibrated_at_the_floor_is_never_lowered() {
        let timespan = PoolTimespan::new();
        assert_eq!(timespan.calibrated(), None);
        timespan.set(Duration::from_micros(20));
        assert_eq!(timespan.calibrated(), None, "set by hand is not calibrated");
        timespan.set_calibrated(Duration::from_micros(500), Duration::from_micros(10));
        timespan.set(Duration::from_micros(500));
        assert!(!timespan.watching());
        for _ in 0..2 * WINDOW_CALLS {
            timespan.record(0);
        }
        assert!(about(timespan.get(), 500));

        timespan.set_calibrated(Duration::from_micros(10), Duration::from_micros(10));
        assert!(!timespan.watching());
    }

    /// A two-thread pool whose timespan is treated as calibrated at `timespan` (floor 10 µs).
    fn pool_calibrated_at(timespan: Duration) -> crate::ThreadPool {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .timespan(crate::Timespan::Fixed(timespan))
            .build()
            .unwrap();
        pool.registry()
            .timespan
            .set_calibrated(timespan, Duration::from_micros(10));
        pool
    }

    fn outermost_call(pool: &crate::ThreadPool, strategy: &crate::Strategy) {
        pool.parallel_for_with(strategy, 0..2_000, |i| {
            std::hint::black_box(i);
        });
    }

    #[test]
    fn outermost_tree_calls_lower_a_timespan_calibrated_too_high() {
        let ceiling = Duration::from_micros(500);
        let pool = pool_calibrated_at(ceiling);
        let tree = crate::Strategy::default();
        // Each window of 16 calls lowers it unless half of its share starts took ≥ 125 µs; a
        // loaded machine (sanitizers, tests in parallel) gets many windows.
        let mut calls = 0;
        while pool.timespan() == ceiling && calls < 250 * WINDOW_CALLS {
            outermost_call(&pool, &tree);
            calls += 1;
        }
        assert!(pool.timespan() < ceiling, "{calls} calls");
        assert!(calls >= WINDOW_CALLS, "lowered after {calls} calls");

        // Calls at the top of `install` are outermost too.
        let pool = pool_calibrated_at(ceiling);
        let calls = pool.install(|| {
            let mut calls = 0;
            while pool.timespan() == ceiling && calls < 250 * WINDOW_CALLS {
                outermost_call(&pool, &tree);
                calls += 1;
            }
            calls
        });
        assert!(pool.timespan() < ceiling, "{calls} calls in install");
    }

    #[test]
    fn nested_calls_other_strategies_and_a_fixed_timespan_leave_it_alone() {
        let ceiling = Duration::from_micros(500);
        let pool = pool_calibrated_at(ceiling);
        let nested_tree = crate::Strategy::Tree(crate::TreeConfig {
            nested: crate::NestedCalls::Tree,
            ..crate::TreeConfig::default()
        });
        // Calls from a `join` closure are nested, here with the tree distribution.
        pool.join(
            || {
                for _ in 0..4 * WINDOW_CALLS {
                    outermost_call(&pool, &nested_tree);
                }
            },
            || (),
        );
        for _ in 0..4 * WINDOW_CALLS {
            outermost_call(&pool, &crate::Strategy::Static);
        }
        assert_eq!(
            pool.timespan(),
            ceiling,
            "calls inside the pool, or not tree"
        );

        pool.set_timespan(ceiling);
        for _ in 0..4 * WINDOW_CALLS {
            outermost_call(&pool, &crate::Strategy::default());
        }
        assert_eq!(pool.timespan(), ceiling, "set by hand");
    }
}
