//! `scope`: any number of tasks that may borrow from the enclosing frame.
//!
//! Every spawned task takes one count of the scope's completion node; `scope` returns once the
//! closure and every task (including tasks spawned by tasks) have finished, then re-raises the
//! first panic, if any.

use std::any::Any;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use crate::job::HeapJob;
use crate::latch::{CountNode, Latch};
use crate::registry::Registry;

/// Makes [`Scope`] invariant in `'scope`, as rayon's scope: tasks may borrow for exactly `'scope`.
type InvariantScope<'scope> = PhantomData<Box<dyn FnOnce(&Scope<'scope>) + Send + Sync + 'scope>>;

/// A scope in which tasks borrowing from the enclosing frame can be spawned; see
/// [`crate::ThreadPool::scope`].
///
/// ```
/// use parbench_scheduler::ThreadPoolBuilder;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let visited = AtomicUsize::new(0);
/// pool.scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|s| {
///             visited.fetch_add(1, Ordering::Relaxed);
///             s.spawn(|_| {
///                 visited.fetch_add(1, Ordering::Relaxed);
///             });
///         });
///     }
/// });
/// assert_eq!(visited.into_inner(), 8);
/// ```
pub struct Scope<'scope> {
    registry: *const Registry,
    node: CountNode,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    marker: InvariantScope<'scope>,
}

// SAFETY: the registry outlives the scope (the scope's thread is inside one of its contexts, and
// the pool cannot be dropped while a call borrows it); everything shared is an atomic count or a
// mutex, and the scope itself is freed by its owner only after its latch is set (see `spawn`).
unsafe impl Send for Scope<'_> {}
// SAFETY: as above.
unsafe impl Sync for Scope<'_> {}

struct ScopeRef<'scope>(*const Scope<'scope>);
// SAFETY: Scope is Sync; the scope outlives all its tasks.
unsafe impl Send for ScopeRef<'_> {}

impl<'scope> Scope<'scope> {
    /// Runs a task, keeping its panic (the first of the scope) for `scope` to re-raise.
    fn run_task<F: FnOnce(&Scope<'scope>)>(&self, task: F) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| task(self))) {
            let mut first = self.panic.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert(payload);
        }
    }

    /// Spawns a task that may borrow anything that outlives the scope.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut halves = [0u64; 2];
    /// let (lo, hi) = halves.split_at_mut(1);
    /// pool.scope(|s| {
    ///     s.spawn(|_| lo[0] = (0..50).sum());
    ///     s.spawn(|_| hi[0] = (50..100).sum());
    /// });
    /// assert_eq!(halves[0] + halves[1], 4950);
    /// ```
    pub fn spawn<F>(&self, task: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        if crate::registry::must_run_sequentially() {
            // Too deeply nested to queue more work (see `MAX_NESTED_WAITS`): run it here.
            self.run_task(task);
            return;
        }
        self.node.add(1);
        let this = ScopeRef(self);
        let run = move || {
            let this = this;
            // SAFETY: the scope lives in the frame of the thread that called `scope`, which frees
            // it by returning — only after the scope's latch is set, which needs this job's count
            // of the node. So the scope (and anything the task borrows) is alive until the
            // `complete` below.
            let scope = unsafe { &*this.0 };
            scope.run_task(task);
            // SAFETY: releases the count taken in `spawn`; after it the scope's owner may return
            // at once, so neither `scope` nor anything borrowed from it is used below.
            unsafe { CountNode::complete(&scope.node) };
        };
        // SAFETY: as above, everything `task` borrows outlives the scope's wait.
        let job = unsafe { HeapJob::into_job_ref(run) };
        // SAFETY: see the Send impl.
        let registry = unsafe { &*self.registry };
        if registry.current_context_is_this() {
            crate::registry::with_current_ctx(|ctx| ctx.push_local_and_wake(job));
        } else {
            registry.inject(job);
        }
    }
}

pub(crate) fn scope<'scope, OP, R>(registry: &Registry, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    registry.in_context(|ctx| {
        let latch = Latch::new();
        let scope = Scope {
            registry,
            node: CountNode::root(&latch),
            panic: Mutex::new(None),
            marker: PhantomData,
        };
        let result = panic::catch_unwind(AssertUnwindSafe(|| op(&scope)));
        // SAFETY: the scope's own count, held since `CountNode::root`.
        unsafe { CountNode::complete(&scope.node) };
        ctx.wait_for(&latch, crate::WaitKind::Scope);
        let task_panic = scope.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        match (result, task_panic) {
            (Err(payload), _) | (Ok(_), Some(payload)) => panic::resume_unwind(payload),
            (Ok(value), None) => value,
        }
    })
}
