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
//! Each task adds a tag of its index ([`mix64`], a bijection, so no two indices share a tag) to a
//! sum in the call's frame, and the call compares the sum with the tags of `0..n` when it
//! returns. A task lost, run twice, or one run in place of another changes the sum; several
//! errors cancel out only as rarely as random 64-bit numbers collide. That is one atomic add per
//! task and no allocation: a branch-and-bound run makes hundreds of calls, each inside the timed
//! section, and a flag per task (a `Vec<AtomicBool>` per call) cost an allocation per call. The
//! sum sits on a line of its own in the caller's frame, so that tasks on other threads do not take
//! the caller's lines. Measured (one binary against the build without the check, 20–24
//! alternating processes): qap and floorplan at one thread within 0.5 % under every scheduler;
//! at two threads floorplan level and qap within its noise (tree 328 → 334 µs, dynamic 350 → 355,
//! static 413 → 410).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::executor::{Executor, ExecutorError, ExecutorKind};
use crate::kernels::rng::mix64;

/// `inner`, with every [`Executor::for_each_task`] call checked to run each task exactly once.
pub(crate) struct CheckedTasks<'e> {
    inner: &'e dyn Executor,
    /// Calls that returned `Ok` without running each of their tasks exactly once.
    wrong_calls: AtomicU64,
}

impl<'e> CheckedTasks<'e> {
    pub(crate) fn new(inner: &'e dyn Executor) -> Self {
        CheckedTasks {
            inner,
            wrong_calls: AtomicU64::new(0),
        }
    }

    /// How many calls so far ran a task twice or more, or never, or one in place of another.
    pub(crate) fn wrong_calls(&self) -> u64 {
        // Relaxed: read after the calls that counted have returned.
        self.wrong_calls.load(Relaxed)
    }
}

/// A value on a cache line (and the adjacent-line prefetch pair) of its own: the sum lives in the
/// calling thread's frame, and the tasks that add to it from other threads must not take the lines
/// the caller is using meanwhile.
#[repr(align(128))]
struct LineOfItsOwn<T>(T);

/// Task `index`'s tag: distinct for distinct indices, and never 0 (`mix64` maps only 0 to 0), so
/// that task 0 lost or doubled shows too.
fn tag(index: usize) -> u64 {
    mix64(index as u64 + 1)
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
        let tags = LineOfItsOwn(AtomicU64::new(0));
        self.inner.for_each_task(n, &|index| {
            // Relaxed: the sum is read after the call has joined every task.
            tags.0.fetch_add(tag(index), Relaxed);
            task(index)
        })?;
        let expected = (0..n).fold(0u64, |sum, index| sum.wrapping_add(tag(index)));
        if tags.0.into_inner() != expected {
            self.wrong_calls.fetch_add(1, Relaxed);
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

    /// An executor whose `for_each_task(n, …)` runs the task indices `order(n)`, one after the
    /// other (a broken one unless they are `0..n` in some order).
    struct TaskOrder(fn(usize) -> Vec<usize>);

    impl Executor for TaskOrder {
        fn kind(&self) -> ExecutorKind {
            ExecutorKind::Seq
        }
        fn threads(&self) -> usize {
            1
        }
        fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
            SeqExecutor::new().for_chunks(range, body);
        }
        fn join(
            &self,
            a: &mut (dyn FnMut() + Send),
            b: &mut (dyn FnMut() + Send),
        ) -> Result<(), ExecutorError> {
            SeqExecutor::new().join(a, b)
        }
        fn for_each_task(
            &self,
            n: usize,
            task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
        ) -> Result<(), ExecutorError> {
            (self.0)(n).into_iter().try_for_each(task)
        }
    }

    /// How many calls of 3 tasks `checked` finds wrong on an executor running `order`.
    fn wrong_calls_of(order: fn(usize) -> Vec<usize>) -> u64 {
        let exec = TaskOrder(order);
        let checked = CheckedTasks::new(&exec);
        checked.for_each_task(3, &|_| Ok(())).unwrap();
        checked.wrong_calls()
    }

    #[test]
    fn counts_calls_that_ran_a_task_twice_or_never() {
        let seq = SeqExecutor::new();
        let checked = CheckedTasks::new(&seq);
        checked.for_each_task(5, &|_| Ok(())).unwrap();
        assert_eq!(checked.wrong_calls(), 0);
        // A call from inside a task is checked on its own, against its own count.
        checked
            .for_each_task(2, &|_| checked.for_each_task(3, &|_| Ok(())))
            .unwrap();
        assert_eq!(checked.wrong_calls(), 0);
        assert_eq!(wrong_calls_of(|n| (0..n).rev().collect()), 0, "any order");
        assert_eq!(wrong_calls_of(|n| (0..n).map(|i| i.min(1)).collect()), 1);
        assert_eq!(wrong_calls_of(|n| (1..n).collect()), 1, "task 0 never");
        // A task run again after every task ran once shows, task 0 too (its tag is not 0).
        assert_eq!(wrong_calls_of(|n| (0..n).chain([0]).collect()), 1);
        assert_eq!(wrong_calls_of(|n| (0..n).chain([1]).collect()), 1);
    }
}
