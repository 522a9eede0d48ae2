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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
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

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        let parts = self.threads.min(range.len());
        if parts <= 1 {
            if !range.is_empty() {
                body(range);
            }
            return;
        }
        thread::scope(|scope| {
            let mut handles = Vec::with_capacity(parts - 1);
            for index in 1..parts {
                let chunk = block(&range, parts, index);
                match self.spawn_in(scope, index, move || body(chunk)) {
                    Ok(handle) => handles.push(handle),
                    Err(error) => {
                        self.keep_error(error);
                        body(block(&range, parts, index));
                    }
                }
            }
            body(block(&range, parts, 0));
            handles.into_iter().for_each(join_propagating);
        });
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
            // SAFETY: sched_getcpu has no preconditions; it reads the calling thread's CPU.
            let cpu = unsafe { libc_sched_getcpu() };
            seen.lock().unwrap()[i] = Some(cpu);
            Ok(())
        })
        .unwrap();
        for (i, cpu) in seen.into_inner().unwrap().into_iter().enumerate() {
            assert_eq!(cpu, Some(cpus[i % cpus.len()].id as i32), "task {i}");
        }
        assert_eq!(exec.threads_created(), n as u64);
        exec.for_chunks(0..10, &|_| {});
        assert_eq!(
            exec.threads_created(),
            n as u64 + 1,
            "a 2-thread loop spawns one"
        );
    }

    extern "C" {
        #[link_name = "sched_getcpu"]
        fn libc_sched_getcpu() -> i32;
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
