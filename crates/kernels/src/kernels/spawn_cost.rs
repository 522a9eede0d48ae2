//! `spawn-cost`: mean time to create and join one task, for 1, 2, 4, … 256 tasks at once.
//!
//! Tasks go through [`Executor::for_each_task`], so on the `spawn` executor this is the pthreads
//! study's thread create + join cost, and on a pool it is the pool's task overhead for the same
//! pattern. Each count is repeated `reps` times; the metric is the mean per task.
//!
//! Validation: every task ran once. A count of the tasks that ran would miss a task run twice in
//! place of another (an executor handing out indices off by one), so each task adds a tag of its
//! index to the same counter: the count in the low [`COUNT_BITS`] bits, a checksum of the tags
//! (mod 2^24) above them. A task still makes one atomic add, as before.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::rng::mix64;

/// Bits of the task counter that count the tasks (at most 2^15 · 2^20 = 2^35 per run); the
/// checksum of their indices' tags takes the bits above.
const COUNT_BITS: u32 = 40;

/// What task `index` adds to the task counter: one task, and its index's tag.
fn task_mark(index: usize) -> u64 {
    1u64.wrapping_add(mix64(index as u64) << COUNT_BITS)
}

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

impl PreparedSpawnCost {
    /// The task counter after a run whose every task ran once.
    fn expected_marks(&self) -> u64 {
        let one_rep = |&count: &usize| (0..count).map(task_mark).fold(0, u64::wrapping_add);
        let per_rep = self.counts.iter().map(one_rep).fold(0, u64::wrapping_add);
        per_rep.wrapping_mul(self.reps as u64)
    }
}

impl PreparedKernel for PreparedSpawnCost {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let marks = AtomicU64::new(0);
        let task = |index: usize| {
            // Relaxed: only counted, read after every task has been joined.
            marks.fetch_add(task_mark(index), Relaxed);
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
        let (marks, expected) = (marks.into_inner(), self.expected_marks());
        let count = |marks: u64| marks & ((1 << COUNT_BITS) - 1);
        if count(marks) != count(expected) {
            return Err(wrong_result(
                "spawn-cost",
                format!("{} of {} tasks ran", count(marks), count(expected)),
            ));
        }
        if marks != expected {
            return Err(wrong_result(
                "spawn-cost",
                "as many tasks ran as were asked for, but not each once: some ran twice and \
                 others never",
            ));
        }
        let metrics = per_task
            .into_iter()
            .map(|(count, ns)| Metric::new(format!("create-join-ns@{count}"), ns, "ns"))
            .collect();
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

    #[test]
    fn the_expected_marks_are_one_per_task_and_the_tags_of_their_indices() {
        let prepared = PreparedSpawnCost {
            counts: vec![1, 2, 4],
            reps: 3,
        };
        let tags = [0, 0, 1, 0, 1, 2, 3].map(|index| mix64(index) << COUNT_BITS);
        let expected = tags.iter().fold(7u64, |sum, &tag| sum.wrapping_add(tag));
        assert_eq!(prepared.expected_marks(), expected.wrapping_mul(3));
        // Task 0 twice in place of task 3 keeps the count, not the checksum.
        let swapped = prepared
            .expected_marks()
            .wrapping_sub(task_mark(3))
            .wrapping_add(task_mark(0));
        assert_eq!(
            swapped & ((1 << COUNT_BITS) - 1),
            prepared.expected_marks() & ((1 << COUNT_BITS) - 1)
        );
        assert_ne!(swapped, prepared.expected_marks());
    }
}
