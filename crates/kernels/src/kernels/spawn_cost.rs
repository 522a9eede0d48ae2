//! `spawn-cost`: mean time to create and join one task, for 1, 2, 4, … 256 tasks at once.
//!
//! Tasks go through [`Executor::for_each_task`], so on the `spawn` executor this is the pthreads
//! study's thread create + join cost, and on a pool it is the pool's task overhead for the same
//! pattern. Each count is repeated `reps` times; the metric is the mean per task.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};

/// The `spawn-cost` kernel.
pub(crate) struct SpawnCost;

impl Kernel for SpawnCost {
    fn name(&self) -> &'static str {
        "spawn-cost"
    }

    fn description(&self) -> &'static str {
        "mean create + join time per task for 1, 2, 4 … max tasks at once"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "max",
                default: "256",
                help: "largest number of tasks (powers of two up to it)",
            },
            ParamSpec {
                name: "reps",
                default: "4",
                help: "repetitions of each task count",
            },
        ]
    }

    fn is_default_suite(&self) -> bool {
        false
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("max", "8"), ("reps", "1")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let max = params.get_usize_in(self, "max", 1..=1 << 14)?;
        let reps = params.get_usize_in(self, "reps", 1..=1 << 20)?;
        let counts = std::iter::successors(Some(1usize), |&c| Some(c * 2))
            .take_while(|&c| c <= max)
            .collect();
        Ok(Box::new(PreparedSpawnCost { counts, reps }))
    }
}

struct PreparedSpawnCost {
    counts: Vec<usize>,
    reps: usize,
}

impl PreparedKernel for PreparedSpawnCost {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let ran = AtomicUsize::new(0);
        let task = |_: usize| {
            // Relaxed: only counted, read after every task has been joined.
            ran.fetch_add(1, Relaxed);
            Ok(())
        };
        let (per_task, elapsed) = timed(exec, || {
            self.counts
                .iter()
                .map(|&count| {
                    let start = Instant::now();
                    for _ in 0..self.reps {
                        exec.for_each_task(count, &task)?;
                    }
                    Ok((
                        count,
                        start.elapsed().as_nanos() as f64 / (count * self.reps) as f64,
                    ))
                })
                .collect::<Result<Vec<_>, KernelError>>()
        })?;
        let per_task = per_task?;
        let expected = self.counts.iter().sum::<usize>() * self.reps;
        if ran.load(Relaxed) != expected {
            return Err(wrong_result(
                "spawn-cost",
                format!("{} of {expected} tasks ran", ran.load(Relaxed)),
            ));
        }
        let metrics = per_task
            .into_iter()
            .map(|(count, ns)| Metric::new(format!("create-join-ns@{count}"), ns, "ns"))
            .collect();
        Ok(RunReport { elapsed, metrics })
    }
}
