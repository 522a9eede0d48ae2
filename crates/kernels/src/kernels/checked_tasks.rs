//! An executor wrapper for kernels whose result cannot show a lost or doubled task: it checks
//! that every `for_each_task` call ran each of its tasks exactly once.
//!
//! A branch-and-bound search (`qap`, `floorplan`) finds its optimum without the subtrees it
//! prunes, so a task the executor never runs often leaves the optimum right, and a task it runs
//! twice always does; either way the run searched another tree than the one it is timed for. The
//! tasks below the top are spawned only where the bound at that moment allows, so no fixed list
//! of them exists to compare with afterwards; each call is checked on its own instead, against
//! the `n` it asked for.
//!
//! Per call this costs one `Vec<AtomicBool>` of `n` flags, set by its task (an exchange on the
//! task's own flag), and a pass over the flags when the call returns: less than the search node
//! each task copies anyway.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::executor::{Executor, ExecutorError, ExecutorKind};

/// `inner`, with every [`Executor::for_each_task`] call checked to run each task exactly once.
pub(crate) struct CheckedTasks<'e> {
    inner: &'e dyn Executor,
    /// Tasks run more than once, plus tasks not run by a call that returned `Ok`.
    miscounted: AtomicU64,
}

impl<'e> CheckedTasks<'e> {
    pub(crate) fn new(inner: &'e dyn Executor) -> Self {
        CheckedTasks {
            inner,
            miscounted: AtomicU64::new(0),
        }
    }

    /// How many tasks ran twice or more, or never, over all calls so far.
    pub(crate) fn miscounted(&self) -> u64 {
        // Relaxed: read after the calls that counted have returned.
        self.miscounted.load(Relaxed)
    }
}

impl Executor for CheckedTasks<'_> {
    fn kind(&self) -> ExecutorKind {
        self.inner.kind()
    }

    fn threads(&self) -> usize {
        self.inner.threads()
    }

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        self.inner.for_chunks(range, body);
    }

    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        self.inner.join(a, b)
    }

    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError> {
        let ran: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
        self.inner.for_each_task(n, &|index| {
            // Relaxed: the flags and the count are read after the call has joined every task.
            if ran[index].swap(true, Relaxed) {
                self.miscounted.fetch_add(1, Relaxed);
            }
            task(index)
        })?;
        let never = ran.iter().filter(|flag| !flag.load(Relaxed)).count();
        if never > 0 {
            self.miscounted.fetch_add(never as u64, Relaxed);
        }
        Ok(())
    }

    fn threads_created(&self) -> u64 {
        self.inner.threads_created()
    }

    fn take_error(&self) -> Option<ExecutorError> {
        self.inner.take_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::SeqExecutor;

    #[test]
    fn counts_tasks_run_twice_and_tasks_never_run() {
        let seq = SeqExecutor::new();
        let checked = CheckedTasks::new(&seq);
        checked.for_each_task(5, &|_| Ok(())).unwrap();
        assert_eq!(checked.miscounted(), 0);
        // A call from inside a task is checked on its own, against its own count.
        checked
            .for_each_task(2, &|_| checked.for_each_task(3, &|_| Ok(())))
            .unwrap();
        assert_eq!(checked.miscounted(), 0);
        struct SecondTwice(SeqExecutor);
        impl Executor for SecondTwice {
            fn kind(&self) -> ExecutorKind {
                ExecutorKind::Seq
            }
            fn threads(&self) -> usize {
                1
            }
            fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
                self.0.for_chunks(range, body);
            }
            fn join(
                &self,
                a: &mut (dyn FnMut() + Send),
                b: &mut (dyn FnMut() + Send),
            ) -> Result<(), ExecutorError> {
                self.0.join(a, b)
            }
            fn for_each_task(
                &self,
                n: usize,
                task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
            ) -> Result<(), ExecutorError> {
                // Tasks 0, 1, 1: the last task never runs.
                (0..n).try_for_each(|i| task(i.min(1)))
            }
        }
        let broken = SecondTwice(SeqExecutor::new());
        let checked = CheckedTasks::new(&broken);
        checked.for_each_task(3, &|_| Ok(())).unwrap();
        assert_eq!(checked.miscounted(), 2);
    }
}
