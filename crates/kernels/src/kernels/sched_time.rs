//! `sched-time`: how long a parallel loop takes to reach each thread, i.e. the time from the call
//! to each thread's first iteration.
//!
//! Executors built on parbench-scheduler answer with the scheduler's own probe
//! ([`Executor::sched_time_probe`]); for the others the kernel measures the same thing through the
//! loop: every iteration busy-waits for a microsecond (so one thread cannot finish the loop before
//! the others wake up) and each thread records when it first got a chunk. Threads that never got work
//! are simply absent; the `threads-started` metric shows how many did.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};

/// Loop iterations per executor thread.
const ITERATIONS_PER_THREAD: usize = 64;

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
        &[]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn prepare(
        &self,
        _params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        Ok(Box::new(PreparedSchedTime))
    }
}

struct PreparedSchedTime;

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

fn through_the_loop(exec: &dyn Executor) -> Result<Vec<Duration>, KernelError> {
    let iterations = exec.threads() * ITERATIONS_PER_THREAD;
    let first_seen: Mutex<Vec<(ThreadId, Duration)>> = Mutex::new(Vec::new());
    let covered = AtomicUsize::new(0);
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
        covered.fetch_add(chunk.len(), Relaxed);
        chunk.for_each(|_| iteration_work());
    });
    let seen = first_seen
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if covered.load(Relaxed) != iterations {
        return Err(wrong_result(
            "sched-time",
            format!(
                "loop covered {} of {iterations} iterations",
                covered.load(Relaxed)
            ),
        ));
    }
    let mut starts: Vec<Duration> = seen.into_iter().map(|(_, at)| at).collect();
    starts.sort();
    Ok(starts)
}

impl PreparedKernel for PreparedSchedTime {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let (starts, elapsed) = timed(exec, || match exec.sched_time_probe() {
            Some(starts) => Ok(starts),
            None => through_the_loop(exec),
        })?;
        let starts = starts?;
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
        Ok(RunReport { elapsed, metrics })
    }
}
