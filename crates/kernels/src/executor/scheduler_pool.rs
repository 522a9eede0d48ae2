//! The parbench-scheduler executors: `tree`, `tree-no-timespan`, `tree-fixed-grain`,
//! `tree-nested-halves`, `static`, `dynamic`, `guided`, `simple`.
//!
//! All eight are one pool type with a different [`Strategy`] for their loops; each executor owns
//! its own pool (built with [`ThreadPoolBuilder`]), so cells of a sweep do not share threads.
//! The baselines use the defaults of the runtimes they stand for: OpenMP `dynamic` and `guided`
//! with chunk 1, TBB `simple_partitioner` with grain 1, and the fixed-grain tree ablation with
//! grain 1 too, unless the scheduler is written `name:N` ([`crate::SchedulerSpec`]). Tasks ([`Executor::for_each_task`]) are a loop over the task indices with the
//! executor's strategy, so the strategy shapes task kernels as well.

use std::ops::Range;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use parbench_scheduler::{
    BuildError, NestedCalls, Pinning, Strategy, ThreadPool, ThreadPoolBuilder, TreeConfig,
    TreeTimespan,
};

use super::{Executor, ExecutorError, ExecutorKind, PinPolicy};

/// Grain / chunk of the baselines and the fixed-grain ablation unless one is given (the runtimes'
/// defaults; [`crate::SchedulerSpec::DEFAULT_GRAIN`]).
const BASELINE_GRAIN: usize = 1;

/// A parbench-scheduler pool with the strategy of one [`ExecutorKind`].
///
/// ```
/// use parbench_kernels::{Executor, ExecutorKind, PinPolicy, SchedulerExecutor};
///
/// let exec = SchedulerExecutor::new(ExecutorKind::Guided, 2, PinPolicy::None)?;
/// let total = parbench_kernels::parallel_sum(&exec, 0..1000, |r| r.map(|i| i as u64).sum());
/// assert_eq!((total, exec.kind()), (499_500, ExecutorKind::Guided));
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug)]
pub struct SchedulerExecutor {
    kind: ExecutorKind,
    pool: ThreadPool,
    strategy: Strategy,
}

impl SchedulerExecutor {
    /// A pool of `threads` threads using `kind`'s strategy.
    ///
    /// # Errors
    /// [`ExecutorError::ZeroThreads`] for 0 threads (the pool's builder would pick a count itself,
    /// as rayon's does); [`ExecutorError::Build`] if `kind` is not a parbench-scheduler strategy
    /// or the pool cannot be built; [`ExecutorError::Spawn`] if the OS refuses a worker thread.
    pub fn new(kind: ExecutorKind, threads: usize, pin: PinPolicy) -> Result<Self, ExecutorError> {
        Self::with_grain(kind, threads, pin, BASELINE_GRAIN)
    }

    /// [`SchedulerExecutor::new`] with chunk or grain `grain` for the kinds that take one
    /// (`dynamic`, `guided`, `simple`, `tree-fixed-grain`; see [`crate::SchedulerSpec`]); the
    /// other kinds ignore it.
    ///
    /// # Errors
    /// As [`SchedulerExecutor::new`]; a `grain` of 0 runs as 1.
    pub fn with_grain(
        kind: ExecutorKind,
        threads: usize,
        pin: PinPolicy,
        grain: usize,
    ) -> Result<Self, ExecutorError> {
        if threads == 0 {
            return Err(ExecutorError::ZeroThreads);
        }
        let grain = grain.max(1);
        let strategy = match kind {
            ExecutorKind::Tree => Strategy::default(),
            ExecutorKind::TreeNoTimespan => Strategy::tree_no_timespan(),
            ExecutorKind::TreeFixedGrain => Strategy::tree_fixed_grain(grain),
            ExecutorKind::TreeNestedHalves => Strategy::Tree(TreeConfig {
                nested: NestedCalls::LazyHalves,
                ..TreeConfig::default()
            }),
            ExecutorKind::Static => Strategy::Static,
            ExecutorKind::Dynamic => Strategy::Dynamic { chunk: grain },
            ExecutorKind::Guided => Strategy::Guided { min_chunk: grain },
            ExecutorKind::Simple => Strategy::Simple { grain },
            ExecutorKind::Rayon | ExecutorKind::Spawn | ExecutorKind::Seq => {
                return Err(ExecutorError::Build {
                    kind,
                    reason: "not a parbench-scheduler strategy".to_owned(),
                });
            }
        };
        let pinning = match pin {
            PinPolicy::None => Pinning::None,
            PinPolicy::Compact => Pinning::Compact,
        };
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads)
            .pin(pinning)
            .build()
            .map_err(|error| match error {
                BuildError::Spawn { source, .. } => ExecutorError::Spawn(source),
                BuildError::TooManyThreads {
                    requested,
                    available,
                    limit,
                } => ExecutorError::TooManyThreads {
                    requested,
                    available,
                    limit: limit.to_string(),
                },
                other => ExecutorError::Build {
                    kind,
                    reason: other.to_string(),
                },
            })?;
        Ok(SchedulerExecutor {
            kind,
            pool,
            strategy,
        })
    }
}

impl SchedulerExecutor {
    /// [`crate::par_chunks_mut`] on this pool with this executor's strategy.
    pub(crate) fn par_chunks_mut<T: Send>(
        &self,
        data: &mut [T],
        chunk_len: usize,
        body: &(impl Fn(usize, &mut [T]) + Sync),
    ) {
        self.pool
            .par_chunks_mut_with(&self.strategy, data, chunk_len, body);
    }

    /// Where the timespan this executor's calls wait comes from, if they wait one: only the
    /// tree strategies do, and not on a one-thread pool, which runs every call inline.
    fn waited_timespan(&self) -> Option<TreeTimespan> {
        match &self.strategy {
            Strategy::Tree(config) if self.pool.num_threads() > 1 => Some(config.timespan),
            _ => None,
        }
    }
}

impl Executor for SchedulerExecutor {
    fn kind(&self) -> ExecutorKind {
        self.kind
    }

    fn threads(&self) -> usize {
        self.pool.num_threads()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        if !range.is_empty() {
            self.pool
                .parallel_for_chunks_with(&self.strategy, range, body);
        }
    }

    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        self.pool.join(a, b);
        Ok(())
    }

    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError> {
        let first_error = Mutex::new(None);
        self.for_chunks(0..n, &|tasks| {
            for i in tasks {
                if let Err(error) = task(i) {
                    first_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(error);
                }
            }
        });
        match first_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn timespan(&self) -> Option<Duration> {
        match self.waited_timespan()? {
            TreeTimespan::Pool => Some(self.pool.timespan()),
            TreeTimespan::Fixed(duration) => Some(duration),
            TreeTimespan::Disabled => None,
        }
    }

    fn calibrated_timespan(&self) -> Option<Duration> {
        match self.waited_timespan()? {
            TreeTimespan::Pool => self.pool.calibrated_timespan(),
            TreeTimespan::Fixed(_) | TreeTimespan::Disabled => None,
        }
    }

    fn sched_time_probe(&self, per_thread: usize) -> Option<Vec<Duration>> {
        Some(parbench_scheduler::sched_time_probe_with(
            &self.pool,
            &self.strategy,
            per_thread,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each tree kind runs the rule its name says: the default tree's nested calls run inline
    /// while the deque holds a task, the `tree-nested-halves` ablation's halve from the start.
    #[test]
    fn the_tree_kinds_differ_in_the_rule_they_name() {
        let nested = |kind: ExecutorKind| {
            let exec = SchedulerExecutor::new(kind, 2, PinPolicy::None).unwrap();
            match exec.strategy {
                Strategy::Tree(config) => config,
                other => panic!("{kind:?} runs {other:?}"),
            }
        };
        let tree = nested(ExecutorKind::Tree);
        let halves = nested(ExecutorKind::TreeNestedHalves);
        assert_eq!(tree.nested, NestedCalls::LazyInline);
        assert_eq!(halves.nested, NestedCalls::LazyHalves);
        assert_eq!(
            TreeConfig {
                nested: tree.nested,
                ..halves
            },
            tree,
            "only the nested rule differs"
        );
        assert_eq!(
            "tree-nested-halves".parse::<ExecutorKind>().unwrap(),
            ExecutorKind::TreeNestedHalves
        );
    }
}
