//! `sched-time`: how long a parallel loop takes to reach each thread, i.e. the time from the call
//! to each thread's first iteration.
//!
//! Executors built on parbench-scheduler answer with the scheduler's own probe
//! ([`Executor::sched_time_probe`]); for the others the kernel measures the same thing through the
//! loop: every iteration busy-waits for a microsecond (so one thread cannot finish the loop before
//! the others wake up) and each thread records when it first got a chunk. Threads that never got work
//! are simply absent; the `threads-started` metric shows how many did. The loop must have run
//! every iteration once: each chunk adds its length and a checksum of its iterations' tags to one
//! counter (a count of iterations alone would pass a chunk run twice in place of another).
//! Only a loop the kernel runs itself is checked so: the scheduler's probe reports start times
//! alone.
//!
//! The loop has `per-thread` iterations per executor thread (default 64, the study's probe). A
//! thread that starts later than the others need to run the whole loop never shows up, so a longer
//! loop shows later starts.
//!
//! `idle-us=N` (default 0) measures a call to an idle pool instead: before each run the calling
//! thread sleeps N µs, untimed, so that a pool whose threads park after a spin window shorter than
//! that (parbench-scheduler's default is 200 µs) has to wake them. `threads-started` and
//! `last-start` then show how soon a caller gets its parked threads back, and `elapsed` what
//! that costs a call of `per-thread` µs per thread.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::rng::mix64;

/// Bits of the loop's coverage counter that count iterations (far more than the at most
/// threads × 10^6 of a loop); the checksum of their tags takes the bits above.
const COUNT_BITS: u32 = 40;

/// What iteration `i` adds to the coverage counter: one iteration, and its tag.
fn iteration_mark(i: usize) -> u64 {
    1u64.wrapping_add(mix64(i as u64) << COUNT_BITS)
}

/// The coverage counter's value after the iterations `range`, each run once.
fn marks(range: std::ops::Range<usize>) -> u64 {
    range.map(iteration_mark).fold(0, u64::wrapping_add)
}

/// The `sched-time` kernel.
pub(crate) struct SchedTime;

impl Kernel for SchedTime {
    fn name(&self) -> &'static str {
        "sched-time"
    }

    fn description(&self) -> &'static str {
        "time from a parallel loop's call to each thread's first iteration"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "per-thread",
                default: "64",
                help: "loop iterations (of ~1 µs) per executor thread (1..=1000000)",
            },
            ParamSpec {
                name: "idle-us",
                default: "0",
                help: "sleep this many µs (untimed) before each run, so the run starts on an idle pool (0..=1000000)",
            },
        ]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let per_thread = params.get_usize_in(self, "per-thread", 1..=1_000_000)?;
        let idle = params.get_usize_in(self, "idle-us", 0..=1_000_000)?;
        Ok(Box::new(PreparedSchedTime {
            per_thread,
            idle: Duration::from_micros(idle as u64),
        }))
    }
}

struct PreparedSchedTime {
    /// Loop iterations per executor thread (`per-thread`).
    per_thread: usize,
    /// Untimed sleep before each run (`idle-us`).
    idle: Duration,
}

/// Work per iteration: long enough that one thread cannot finish the loop before the others wake
/// up, the same as the scheduler's own probe uses.
const ITERATION_WORK: Duration = Duration::from_micros(1);

/// Busy-waits for [`ITERATION_WORK`].
fn iteration_work() {
    let start = Instant::now();
    while start.elapsed() < ITERATION_WORK {
        std::hint::spin_loop();
    }
}

/// The start times, sorted, of a loop of `iterations` iterations, and its coverage counter
/// (see [`check_coverage`]).
fn through_the_loop(exec: &dyn Executor, iterations: usize) -> (Vec<Duration>, u64) {
    let first_seen: Mutex<Vec<(ThreadId, Duration)>> = Mutex::new(Vec::new());
    let covered = AtomicU64::new(0);
    let start = Instant::now();
    exec.for_chunks(0..iterations, &|chunk| {
        let at = start.elapsed();
        let me = thread::current().id();
        {
            let mut seen = first_seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if seen.iter().all(|(id, _)| *id != me) {
                seen.push((me, at));
            }
        }
        // Relaxed: read after the loop, whose completion orders it.
        covered.fetch_add(marks(chunk.clone()), Relaxed);
        chunk.for_each(|_| iteration_work());
    });
    let seen = first_seen
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut starts: Vec<Duration> = seen.into_iter().map(|(_, at)| at).collect();
    starts.sort();
    (starts, covered.into_inner())
}

/// Checks that the loop whose coverage counter is `covered` ran each of its `iterations` once.
fn check_coverage(covered: u64, iterations: usize) -> Result<(), KernelError> {
    let expected = marks(0..iterations);
    let count = |marks: u64| marks & ((1 << COUNT_BITS) - 1);
    if count(covered) != count(expected) {
        return Err(wrong_result(
            "sched-time",
            format!("loop covered {} of {iterations} iterations", count(covered)),
        ));
    }
    if covered != expected {
        return Err(wrong_result(
            "sched-time",
            format!(
                "loop ran {iterations} iterations, but not each once: some ran twice and others never"
            ),
        ));
    }
    Ok(())
}

impl PreparedKernel for PreparedSchedTime {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        if !self.idle.is_zero() {
            thread::sleep(self.idle);
        }
        let iterations = exec.threads() * self.per_thread;
        let ((starts, covered), elapsed) =
            timed(exec, || match exec.sched_time_probe(self.per_thread) {
                // The scheduler's probe does not report what its loop covered.
                Some(starts) => (starts, None),
                None => {
                    let (starts, covered) = through_the_loop(exec, iterations);
                    (starts, Some(covered))
                }
            })?;
        if let Some(covered) = covered {
            check_coverage(covered, iterations)?;
        }
        // The calling thread may work alongside all of a pool's workers (parbench-scheduler lets
        // it run stolen pieces too), hence the one extra thread.
        if starts.is_empty() || starts.len() > exec.threads() + 1 {
            return Err(wrong_result(
                "sched-time",
                format!(
                    "{} threads started on a {}-thread executor",
                    starts.len(),
                    exec.threads()
                ),
            ));
        }
        let ns = |d: Duration| d.as_nanos() as f64;
        let metrics = vec![
            Metric::new("threads-started", starts.len() as f64, "threads"),
            Metric::new("first-start", ns(starts[0]), "ns"),
            Metric::new("median-start", ns(starts[starts.len() / 2]), "ns"),
            Metric::new("last-start", ns(starts[starts.len() - 1]), "ns"),
        ];
        Ok(RunReport {
            elapsed,
            metrics,
            untimed_threads_created: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{ExecutorKind, PinPolicy};

    #[test]
    fn the_idle_sleep_comes_before_the_timed_run_and_is_not_timed() {
        let exec = ExecutorKind::Tree.build(2, PinPolicy::None).unwrap();
        let idle = Duration::from_millis(300);
        let params = Params::new().with("idle-us", "300000");
        let mut prepared = SchedTime.prepare(&params, 2).unwrap();
        let before = Instant::now();
        let report = prepared.run(exec.as_ref()).unwrap();
        assert!(before.elapsed() >= idle, "the run did not sleep first");
        // The loop itself takes ≈ 64 µs of work per thread: far below the sleep.
        assert!(
            report.elapsed < idle,
            "{:?} includes the sleep",
            report.elapsed
        );
        let started = report.metrics.iter().find(|m| m.name == "threads-started");
        assert!(started.is_some_and(|m| (1.0..=3.0).contains(&m.value)));
        let out_of_range = Params::new().with("idle-us", "1000001");
        assert!(SchedTime.prepare(&out_of_range, 2).is_err());
        assert!(
            SchedTime
                .prepare(&Params::new().with("per-thread", "0"), 2)
                .is_err()
        );
    }

    #[test]
    fn every_executor_runs_the_loop_it_is_given() {
        // rayon measures through the loop, parbench-scheduler's pools with their own probe; with
        // one thread both run exactly `per-thread` iterations, which take at least that many µs.
        for kind in [ExecutorKind::Rayon, ExecutorKind::Tree] {
            let exec = kind.build(1, PinPolicy::None).unwrap();
            let params = Params::new().with("per-thread", "2000");
            let report = SchedTime
                .prepare(&params, 1)
                .unwrap()
                .run(exec.as_ref())
                .unwrap();
            assert!(
                report.elapsed >= Duration::from_millis(2),
                "{kind:?}: {:?}",
                report.elapsed
            );
        }
    }
}
