//! A picture of what a pool's threads are doing, for diagnosing hangs ([`ThreadPool::snapshot`]).
//!
//! [`ThreadPool::snapshot`]: crate::ThreadPool::snapshot

use std::fmt;

/// What a parallel call is waiting for when its thread waits on a latch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// A parallel loop (`parallel_for*`, `parallel_reduce*`, scans and slice algorithms) waiting
    /// for its iterations.
    Loop,
    /// `join` waiting for its stolen second closure.
    Join,
    /// `scope` waiting for its tasks.
    Scope,
    /// `broadcast` waiting for every worker.
    Broadcast,
}

/// What a worker is doing, as far as the scheduler knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerState {
    /// Parked, waiting to be woken.
    Parked,
    /// Running a task (it does not look for other work meanwhile).
    RunningTask,
    /// Looking for work: spinning, stealing, or helping while one of its calls waits.
    LookingForWork,
}

/// One worker in a [`PoolSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerSnapshot {
    /// The worker's index.
    pub index: usize,
    /// What it does.
    pub state: WorkerState,
    /// How many calls on its stack wait on a latch and have looked for work beyond the worker's
    /// own deque (nested calls wait inside each other). A call that is still running tasks from
    /// its own deque — usually its own unclaimed pieces — is not counted yet; a call that waits
    /// long enough to matter in a hang is.
    pub waits: u32,
    /// What the innermost of those waits is for.
    pub innermost_wait: Option<WaitKind>,
    /// Tasks on its own deque.
    pub deque: usize,
    /// Tasks handed to it (`spawn_on`, tree shares) not yet taken.
    pub inbox: usize,
}

/// A racy picture of a pool's state: each field is read at a slightly different moment while the
/// pool goes on, so it may be inconsistent; it says what a hung pool is stuck on.
///
/// ```
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let snapshot = pool.snapshot();
/// assert_eq!(snapshot.workers.len(), 2);
/// assert!(snapshot.to_string().starts_with("pool of 2 threads"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSnapshot {
    /// Every worker, by index.
    pub workers: Vec<WorkerSnapshot>,
    /// Tasks injected from outside the pool not yet taken.
    pub injected: usize,
    /// Detached tasks (`spawn`, `spawn_on`) queued or running.
    pub detached: usize,
    /// Outside threads taking part in calls right now, with the length of each one's deque.
    pub guests: Vec<usize>,
    /// Whether the pool is being dropped.
    pub terminating: bool,
}

impl fmt::Display for PoolSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "pool of {} threads: {} injected, {} detached tasks, {} outside callers (deques {:?}){}",
            self.workers.len(),
            self.injected,
            self.detached,
            self.guests.len(),
            self.guests,
            if self.terminating {
                ", terminating"
            } else {
                ""
            }
        )?;
        for worker in &self.workers {
            write!(
                f,
                "  worker {:>3}: {:?}, deque {}, inbox {}",
                worker.index, worker.state, worker.deque, worker.inbox
            )?;
            match worker.innermost_wait {
                Some(kind) => writeln!(f, ", {} waits, innermost for {kind:?}", worker.waits)?,
                None => writeln!(f)?,
            }
        }
        Ok(())
    }
}
