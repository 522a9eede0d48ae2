//! `spawn`: a new OS thread per task, joined by its parent.
//!
//! This is the `std::async(launch::async)` baseline of the INNCABS study: no pool, no reuse, so a
//! fine-grained recursive kernel pays one thread creation per task. Loops split their range into
//! one equal block per thread and spawn a thread for every block but the first, which the calling
//! thread runs.
//!
//! With [`PinPolicy::Compact`] the thread of block or task `i` pins itself to the `(i mod cores)`-th
//! available CPU (block 0 runs on the calling thread, which is left where it is). Every thread
//! created is counted ([`Executor::threads_created`]).
//!
//! When the OS refuses a thread (limits, memory), `join` and `for_each_task` return
//! [`ExecutorError::Spawn`]; a loop runs the refused block on the calling thread and keeps the error
//! for [`Executor::take_error`], so the kernel reports it rather than a misleading timing.

use std::io;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, Scope, ScopedJoinHandle};

use super::{Executor, ExecutorError, ExecutorKind, PinPolicy};

/// Spawns a fresh OS thread for every task.
///
/// ```
/// use parbench_kernels::{Executor, SpawnExecutor};
///
/// let exec = SpawnExecutor::new(2);
/// let (mut a, mut b) = (0, 0);
/// exec.join(&mut || a = 1, &mut || b = 2)?;
/// assert_eq!((a, b), (1, 2));
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug)]
pub struct SpawnExecutor {
    threads: usize,
    stack_size: Option<usize>,
    swallowed: Mutex<Option<ExecutorError>>,
    /// CPUs to pin spawned threads to, in order (empty: no pinning).
    cpus: Vec<core_affinity::CoreId>,
    /// OS threads created so far.
    created: AtomicU64,
}

impl SpawnExecutor {
    /// Loops use `threads` threads (at least 1); tasks always get one thread each.
    pub fn new(threads: usize) -> Self {
        SpawnExecutor {
            threads: threads.max(1),
            stack_size: None,
            swallowed: Mutex::new(None),
            cpus: Vec::new(),
            created: AtomicU64::new(0),
        }
    }

    /// Pins spawned threads as `pin` says: with [`PinPolicy::Compact`], the thread of block or
    /// task `i` goes on the `(i mod cores)`-th CPU available to this process.
    ///
    /// ```
    /// use parbench_kernels::{Executor, PinPolicy, SpawnExecutor};
    ///
    /// let exec = SpawnExecutor::new(2).with_pinning(PinPolicy::Compact);
    /// exec.for_each_task(3, &|_| Ok(()))?;
    /// assert_eq!(exec.threads_created(), 3);
    /// # Ok::<(), parbench_kernels::ExecutorError>(())
    /// ```
    pub fn with_pinning(mut self, pin: PinPolicy) -> Self {
        self.cpus = match pin {
            PinPolicy::None => Vec::new(),
            PinPolicy::Compact => core_affinity::get_core_ids().unwrap_or_default(),
        };
        self
    }

    /// Gives every spawned thread a stack of `bytes` bytes instead of the platform default.
    ///
    /// ```
    /// use parbench_kernels::{Executor, SpawnExecutor};
    ///
    /// // An impossible stack makes the OS refuse the thread: the error comes back, no panic.
    /// let exec = SpawnExecutor::new(2).with_stack_size(1 << 60);
    /// assert!(exec.join(&mut || {}, &mut || {}).is_err());
    /// ```
    pub fn with_stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Spawns `f` as the thread of block or task `index` (which decides its CPU when pinning).
    fn spawn_in<'scope, 'env, T: Send + 'scope>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        index: usize,
        f: impl FnOnce() -> T + Send + 'scope,
    ) -> io::Result<ScopedJoinHandle<'scope, T>> {
        let mut builder = thread::Builder::new();
        if let Some(bytes) = self.stack_size {
            builder = builder.stack_size(bytes);
        }
        let cpu = (!self.cpus.is_empty()).then(|| self.cpus[index % self.cpus.len()]);
        let handle = builder.spawn_scoped(scope, move || {
            if let Some(cpu) = cpu {
                // A refused pin leaves the thread where the OS put it; the work is still right.
                let _pinned = core_affinity::set_for_current(cpu);
            }
            f()
        })?;
        // Relaxed: a statistic, read after the threads were joined.
        self.created.fetch_add(1, Ordering::Relaxed);
        Ok(handle)
    }

    fn keep_error(&self, error: io::Error) {
        let mut slot = self
            .swallowed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(ExecutorError::Spawn(error));
    }
}

impl SpawnExecutor {
    /// Runs `run(block)` for every block: the first on the calling thread, each other one on a
    /// thread of its own (or on the calling thread if the OS refuses it, keeping the error).
    fn run_blocks<B: Send>(&self, blocks: Vec<B>, run: &(impl Fn(B) + Sync + ?Sized)) {
        // Each block sits in a slot that exactly one thread empties: the thread started for it,
        // or the calling thread if the OS refused that thread (its closure was dropped unrun).
        let slots: Vec<Mutex<Option<B>>> =
            blocks.into_iter().map(|b| Mutex::new(Some(b))).collect();
        let take = |index: usize| {
            slots[index]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        };
        let run_slot = |index: usize| {
            if let Some(block) = take(index) {
                run(block);
            }
        };
        if slots.len() <= 1 {
            (0..slots.len()).for_each(run_slot);
            return;
        }
        thread::scope(|scope| {
            let mut handles = Vec::with_capacity(slots.len() - 1);
            for index in 1..slots.len() {
                match self.spawn_in(scope, index, move || run_slot(index)) {
                    Ok(handle) => handles.push(handle),
                    Err(error) => {
                        self.keep_error(error);
                        run_slot(index);
                    }
                }
            }
            run_slot(0);
            handles.into_iter().for_each(join_propagating);
        });
    }

    /// [`crate::par_chunks_mut`]: one block of whole chunks per thread.
    pub(crate) fn par_chunks_mut<T: Send>(
        &self,
        data: &mut [T],
        chunk_len: usize,
        body: &(impl Fn(usize, &mut [T]) + Sync),
    ) {
        let chunks = 0..data.len().div_ceil(chunk_len);
        let parts = self.threads.min(chunks.len());
        let mut blocks = Vec::with_capacity(parts);
        let mut rest = data;
        for index in 0..parts {
            let indices = block(&chunks, parts, index);
            let elements = (indices.len() * chunk_len).min(rest.len());
            let (head, tail) = rest.split_at_mut(elements);
            blocks.push((indices.start, head));
            rest = tail;
        }
        self.run_blocks(blocks, &|(first, part): (usize, &mut [T])| {
            for (k, chunk) in part.chunks_mut(chunk_len).enumerate() {
                body(first + k, chunk);
            }
        });
    }
}

/// Joins a scoped thread, re-raising its panic on the joining thread.
fn join_propagating<T>(handle: ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|payload| std::panic::resume_unwind(payload))
}

/// Block `index` of `parts` equal blocks of `range` (the first blocks get the remainder).
fn block(range: &Range<usize>, parts: usize, index: usize) -> Range<usize> {
    let len = range.len();
    let (base, extra) = (len / parts, len % parts);
    let start = range.start + index * base + index.min(extra);
    let size = base + usize::from(index < extra);
    start..start + size
}

impl Executor for SpawnExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Spawn
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        let parts = self.threads.min(range.len());
        self.run_blocks(
            (0..parts)
                .map(|index| block(&range, parts, index))
                .collect(),
            body,
        );
    }

    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        thread::scope(|scope| {
            let handle = self.spawn_in(scope, 1, a).map_err(ExecutorError::Spawn)?;
            b();
            join_propagating(handle);
            Ok(())
        })
    }

    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError> {
        thread::scope(|scope| {
            let mut handles = Vec::with_capacity(n);
            let mut refused = None;
            for i in 0..n {
                match self.spawn_in(scope, i, move || task(i)) {
                    Ok(handle) => handles.push(handle),
                    Err(error) => {
                        refused = Some(ExecutorError::Spawn(error));
                        break;
                    }
                }
            }
            let results: Vec<_> = handles.into_iter().map(join_propagating).collect();
            match refused {
                Some(error) => Err(error),
                None => results.into_iter().collect(),
            }
        })
    }

    fn threads_created(&self) -> u64 {
        // Relaxed: a statistic; callers read it between runs.
        self.created.load(Ordering::Relaxed)
    }

    fn take_error(&self) -> Option<ExecutorError> {
        self.swallowed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_range_exactly_once() {
        for len in 0..40 {
            for parts in 1..9 {
                let range = 5..5 + len;
                let mut next = range.start;
                for index in 0..parts {
                    let b = block(&range, parts, index);
                    assert_eq!(b.start, next);
                    next = b.end;
                }
                assert_eq!(next, range.end);
            }
        }
    }

    #[test]
    fn refused_loop_thread_still_covers_the_range_and_reports_the_error() {
        let exec = SpawnExecutor::new(4).with_stack_size(1 << 60);
        let covered = std::sync::atomic::AtomicUsize::new(0);
        exec.for_chunks(0..100, &|r| {
            covered.fetch_add(r.len(), std::sync::atomic::Ordering::Relaxed);
        });
        assert_eq!(covered.into_inner(), 100);
        assert!(matches!(exec.take_error(), Some(ExecutorError::Spawn(_))));
        assert!(exec.take_error().is_none());
    }

    #[test]
    fn compact_pinning_puts_task_i_on_the_i_th_cpu_and_threads_are_counted() {
        let cpus = core_affinity::get_core_ids().unwrap_or_default();
        if cpus.is_empty() {
            println!("SKIPPED: this process cannot read its CPU affinity");
            return;
        }
        let exec = SpawnExecutor::new(2).with_pinning(PinPolicy::Compact);
        let n = cpus.len() * 2;
        let seen = Mutex::new(vec![None; n]);
        exec.for_each_task(n, &|i| {
            seen.lock().unwrap()[i] = crate::executor::current_cpu();
            Ok(())
        })
        .unwrap();
        for (i, cpu) in seen.into_inner().unwrap().into_iter().enumerate() {
            assert_eq!(cpu, Some(cpus[i % cpus.len()].id), "task {i}");
        }
        assert_eq!(exec.threads_created(), n as u64);
        exec.for_chunks(0..10, &|_| {});
        assert_eq!(
            exec.threads_created(),
            n as u64 + 1,
            "a 2-thread loop spawns one"
        );
    }

    #[test]
    fn refused_threads_still_write_every_chunk_once() {
        let exec = SpawnExecutor::new(4).with_stack_size(1 << 60);
        let mut v = vec![0usize; 103];
        crate::par_chunks_mut(&exec, &mut v, 10, |k, chunk| {
            chunk.iter_mut().for_each(|x| *x += k + 1)
        });
        let expected: Vec<usize> = (0..103).map(|i| i / 10 + 1).collect();
        assert_eq!(v, expected);
        assert!(matches!(exec.take_error(), Some(ExecutorError::Spawn(_))));
    }

    #[test]
    fn refused_task_thread_is_an_error_not_a_panic() {
        let exec = SpawnExecutor::new(2).with_stack_size(1 << 60);
        let result = exec.for_each_task(3, &|_| Ok(()));
        assert!(matches!(result, Err(ExecutorError::Spawn(_))));
        let result = exec.join(&mut || {}, &mut || {});
        assert!(matches!(result, Err(ExecutorError::Spawn(_))));
    }
}
