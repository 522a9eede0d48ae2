//! `seq`: everything on the calling thread, the baseline every speedup is measured against.

use std::ops::Range;

use super::{Executor, ExecutorError, ExecutorKind};

/// Runs every loop and task on the calling thread, in order.
///
/// ```
/// use parbench_kernels::{Executor, SeqExecutor};
///
/// let exec = SeqExecutor::new();
/// let (mut a, mut b) = (0, 0);
/// exec.join(&mut || a = 1, &mut || b = 2)?;
/// assert_eq!((a, b, exec.threads()), (1, 2, 1));
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SeqExecutor;

impl SeqExecutor {
    /// The sequential executor.
    pub fn new() -> Self {
        SeqExecutor
    }
}

impl Executor for SeqExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Seq
    }

    fn threads(&self) -> usize {
        1
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        if !range.is_empty() {
            body(range);
        }
    }

    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        a();
        b();
        Ok(())
    }

    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError> {
        (0..n).try_for_each(task)
    }
}
