//! `rayon`: the reference work-stealing runtime with its default splitting.
//!
//! Loops use rayon's own adaptive length splitter (the one `(0..n).into_par_iter()` uses) through a
//! producer whose items are whole sub-ranges, so the body is called once per leaf, not once per
//! index; join is `rayon::join`; tasks are a `par_iter` over the task indices.

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::thread;

use rayon::iter::plumbing::{Producer, UnindexedConsumer, bridge_producer_consumer};
use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;

use super::{Executor, ExecutorError, ExecutorKind, PinPolicy};

/// A rayon pool of its own (one per executor instance, so sweeps do not share the global pool).
///
/// Dropping it returns only after every worker thread has exited. A plain `rayon::ThreadPool` only
/// *asks* its workers to terminate on drop; they finish (and may still be spinning or being torn
/// down) after the next benchmark cell has started, and compete with it for the CPU. Here the
/// workers are spawned by our own spawn handler, which keeps their join handles, and
/// `WorkerThreads` joins them once the pool is gone.
///
/// ```
/// use parbench_kernels::{Executor, PinPolicy, RayonExecutor};
///
/// let exec = RayonExecutor::new(2, PinPolicy::None)?;
/// let total = parbench_kernels::parallel_sum(&exec, 0..1000, |r| r.map(|i| i as u64).sum());
/// assert_eq!(total, 499_500);
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug)]
pub struct RayonExecutor {
    // Field order matters: fields drop in declaration order, so the pool is told to terminate
    // before `_workers` joins its threads (the other way round would wait forever).
    pool: rayon::ThreadPool,
    // Held for its `Drop` only.
    _workers: WorkerThreads,
}

/// The join handles of a pool's worker threads; dropping joins them all.
#[derive(Debug, Default)]
struct WorkerThreads {
    handles: Arc<Mutex<Vec<thread::JoinHandle<()>>>>,
}

impl Drop for WorkerThreads {
    fn drop(&mut self) {
        let handles = match self.handles.lock() {
            Ok(mut handles) => std::mem::take(&mut *handles),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for handle in handles {
            // A worker that panicked has already reported it (rayon aborts on a worker panic
            // outside a job); joining is only about waiting for it to be gone.
            let _ = handle.join();
        }
    }
}

impl RayonExecutor {
    /// A pool of `threads` workers, pinned according to `pin`.
    ///
    /// # Errors
    /// [`ExecutorError::ZeroThreads`] for 0 threads (rayon would pick a count itself),
    /// [`ExecutorError::TooManyThreads`] past the process's thread limits,
    /// [`ExecutorError::Build`] if rayon cannot start its workers.
    pub fn new(threads: usize, pin: PinPolicy) -> Result<Self, ExecutorError> {
        if threads == 0 {
            return Err(ExecutorError::ZeroThreads);
        }
        // rayon would abort the process, not return an error, past the OS's thread limits.
        super::check_thread_count(threads)?;
        let workers = WorkerThreads::default();
        let handles = Arc::clone(&workers.handles);
        let mut builder = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|index| format!("rayon-{index}"))
            .spawn_handler(move |worker| {
                let handle = thread::Builder::new()
                    .name(worker.name().unwrap_or("rayon").to_owned())
                    .spawn(move || worker.run())?;
                match handles.lock() {
                    Ok(mut list) => list.push(handle),
                    Err(poisoned) => poisoned.into_inner().push(handle),
                }
                Ok(())
            });
        if pin == PinPolicy::Compact {
            let cores = core_affinity::get_core_ids().unwrap_or_default();
            if !cores.is_empty() {
                builder = builder.start_handler(move |index| {
                    // Pinning is best effort: an unpinned worker still computes correct results.
                    let _pinned = core_affinity::set_for_current(cores[index % cores.len()]);
                });
            }
        }
        let pool = builder.build().map_err(|e| ExecutorError::Build {
            kind: ExecutorKind::Rayon,
            reason: e.to_string(),
        })?;
        Ok(RayonExecutor {
            pool,
            _workers: workers,
        })
    }
}

impl RayonExecutor {
    /// [`crate::par_chunks_mut`] with rayon's `par_chunks_mut`.
    pub(crate) fn par_chunks_mut<T: Send>(
        &self,
        data: &mut [T],
        chunk_len: usize,
        body: &(impl Fn(usize, &mut [T]) + Sync),
    ) {
        self.pool.install(|| {
            data.par_chunks_mut(chunk_len)
                .enumerate()
                .for_each(|(k, chunk)| body(k, chunk));
        });
    }
}

impl Executor for RayonExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Rayon
    }

    fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        if range.is_empty() {
            return;
        }
        self.pool.install(|| RangeChunks { range }.for_each(body));
    }

    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        self.pool.install(|| rayon::join(a, b));
        Ok(())
    }

    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError> {
        self.pool
            .install(|| (0..n).into_par_iter().try_for_each(task))
    }
}

/// A parallel iterator over sub-ranges of a range, split exactly like rayon splits the range.
struct RangeChunks {
    range: Range<usize>,
}

impl ParallelIterator for RangeChunks {
    type Item = Range<usize>;

    fn drive_unindexed<C: UnindexedConsumer<Self::Item>>(self, consumer: C) -> C::Result {
        let len = self.range.len();
        bridge_producer_consumer(len, RangeChunkProducer { range: self.range }, consumer)
    }
}

/// Produces one item, its whole range, at each leaf of rayon's split tree.
struct RangeChunkProducer {
    range: Range<usize>,
}

impl Producer for RangeChunkProducer {
    type Item = Range<usize>;
    type IntoIter = std::iter::Once<Range<usize>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self.range)
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let mid = self.range.start + index;
        (
            RangeChunkProducer {
                range: self.range.start..mid,
            },
            RangeChunkProducer {
                range: mid..self.range.end,
            },
        )
    }
}
