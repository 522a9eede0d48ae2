//! `install` (run a closure inside a pool) and `broadcast` (run a closure once on every worker).
//!
//! `install` enters the pool the way any parallel call does (`Registry::in_context`): the calling
//! thread becomes a context of the pool for the duration of the closure, so the free functions
//! called inside ([`crate::parallel_for`], [`crate::for_each_mut`], …) act on this pool, and the
//! caller takes part in the work as the pool's stand-in for worker 0 — a pool of P threads still
//! runs on P threads. (rayon moves the closure onto a worker instead; the observable difference
//! is [`crate::current_thread_index`], which is `None` inside `install` from outside the pool.)
//! The closure runs at the pool's *top*: the parallel calls it makes are outermost, as calls made
//! from outside are, and only the calls made in their work are nested (`Registry::install`).
//!
//! `broadcast` queues one job per worker in a queue only that worker reads (no other thread may
//! steal it), counts their completions on one completion node, and waits for it like a loop call;
//! the caller helps with other work meanwhile. A worker runs its broadcast job when it next looks
//! for work, so a worker stuck in a long task delays the broadcast (as in rayon). A worker that
//! waits inside another pool's operation (its `install`, say) runs it there while it waits, with
//! the rest of its own pool's work (`serve_home` in `registry.rs`): nobody else may, and that
//! operation may be waiting for this very broadcast.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use crate::global::current_registry;
use crate::latch::{CountNode, Latch};
use crate::pool::ThreadPool;
use crate::registry::Registry;
use crate::strategy::{NodeRef, counted_job};

/// Where a [`broadcast`](ThreadPool::broadcast) closure runs: which worker, out of how many.
///
/// ```
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let seen = pool.broadcast(|ctx| (ctx.index(), ctx.num_threads()));
/// assert_eq!(seen, [(0, 3), (1, 3), (2, 3)]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BroadcastContext {
    index: usize,
    num_threads: usize,
}

impl BroadcastContext {
    /// The index of the worker running the closure (also [`crate::current_thread_index`]).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of workers of the pool (how many times the closure runs).
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

impl ThreadPool {
    /// Runs `op` inside this pool and returns its result: parallel algorithms called by `op`
    /// through the free functions ([`crate::for_each_mut`], [`crate::join()`], …) use this pool
    /// instead of the global one. From outside, the calling thread runs `op` itself and takes
    /// part in the pool's work as its stand-in for worker 0 (so [`crate::current_thread_index`]
    /// is `None` in `op`, where rayon's is a worker's index — except on a worker of this pool
    /// that enters it again through another pool's work, which keeps its index); from a worker
    /// of this pool, `op` just runs. Up to 16 outside threads take part at once; while 16 do, a
    /// further one queues `op` to a worker and blocks until it has run there, as rayon does for
    /// every outside caller. A panic in `op` propagates.
    ///
    /// A worker of another pool that calls in here (as one of the 16, or blocked while its `op`
    /// is queued) keeps running its own pool's work while it waits, as rayon's cross-pool wait
    /// does: the broadcast jobs and shares handed to it, the tasks on its own deque, the work
    /// queued on its pool as a whole (an `install` queued there, a task spawned into it from
    /// outside), and what it may steal from its pool's other threads. Work queued on its pool
    /// while no worker there sleeps unparks such a worker. So pools may call into each other in
    /// any pattern — a pool of 64 threads whose loop bodies `install` into a pool of 2 whose
    /// work broadcasts or loops on the large pool, say — with any number of threads calling in
    /// at once: what one pool's work waits for in the other is run even while every worker of
    /// the other waits in the first. One limit bounds the stack: a worker with 16 waits for
    /// calls on its stack (the depth beyond which loops and `join`s run sequentially — still in
    /// the pool they were made on, whose free functions the code they run addresses) runs, while
    /// it waits away, only the broadcast jobs and shares handed to it, so pools can still
    /// deadlock when every worker of one waits in the other that deep. (As in any work-stealing
    /// pool, a wait runs other work on top of its stack, so what a waiting thread runs may
    /// delay its own return; `op` blocking its thread outside the pool's waits — on a lock, a
    /// channel — helps nobody.)
    ///
    /// The parallel calls `op` makes when `install` entered the pool (from outside, or queued to
    /// a worker) are *outermost*, as if made from outside: the tree strategy hands them out
    /// through its tree of threads with a timespan (see [`NestedCalls`](crate::NestedCalls)).
    /// Calls made inside their bodies and tasks, or in `op` of an `install` called from inside
    /// the pool, are nested.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    /// let threads = pool.install(|| {
    ///     let mut v = vec![1u64; 1000];
    ///     parbench_scheduler::for_each_mut(&mut v, |x| *x *= 2); // on `pool`
    ///     assert_eq!(v.iter().sum::<u64>(), 2000);
    ///     parbench_scheduler::current_num_threads()
    /// });
    /// assert_eq!(threads, 3);
    /// ```
    pub fn install<R: Send, OP: FnOnce() -> R + Send>(&self, op: OP) -> R {
        self.registry().install(op)
    }

    /// Runs `op` once on every worker of the pool and returns the results in worker order. Waits
    /// for all of them; a panic in any of them propagates (after all have finished).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let ran = AtomicUsize::new(0);
    /// let indices = pool.broadcast(|ctx| {
    ///     assert_eq!(parbench_scheduler::current_thread_index(), Some(ctx.index()));
    ///     ran.fetch_add(1, Ordering::Relaxed);
    ///     ctx.index()
    /// });
    /// assert_eq!((indices, ran.into_inner()), (vec![0, 1], 2));
    /// ```
    pub fn broadcast<R: Send, OP: Fn(BroadcastContext) -> R + Sync>(&self, op: OP) -> Vec<R> {
        broadcast_in(self.registry(), &op)
    }

    /// The number of worker threads (rayon's name for [`num_threads`](Self::num_threads)).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// assert_eq!(pool.current_num_threads(), 2);
    /// ```
    pub fn current_num_threads(&self) -> usize {
        self.num_threads()
    }
}

/// [`ThreadPool::broadcast`] on the current pool (the one the calling thread works for or is
/// installed into, else the global pool).
///
/// ```
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let n = pool.install(|| parbench_scheduler::broadcast(|ctx| ctx.num_threads()).len());
/// assert_eq!(n, 2);
/// ```
pub fn broadcast<R: Send, OP: Fn(BroadcastContext) -> R + Sync>(op: OP) -> Vec<R> {
    broadcast_in(current_registry(), &op)
}

fn broadcast_in<R: Send>(
    registry: &Registry,
    op: &(dyn Fn(BroadcastContext) -> R + Sync),
) -> Vec<R> {
    let num_threads = registry.num_threads();
    let results: Vec<Mutex<Option<R>>> = (0..num_threads).map(|_| Mutex::new(None)).collect();
    let first_panic: Mutex<Option<Box<dyn Any + Send>>> = Mutex::new(None);
    registry.in_context(|ctx| {
        let latch = Latch::new();
        let root = CountNode::root(&latch);
        let root_ref = NodeRef(&root);
        for index in 0..num_threads {
            root_ref.add(1);
            let (results, first_panic) = (&results, &first_panic);
            let work = move |_: &crate::registry::WorkerCtx<'_>| {
                let context = BroadcastContext { index, num_threads };
                // Caught here: the job must release its count whatever `op` does.
                match panic::catch_unwind(AssertUnwindSafe(|| op(context))) {
                    Ok(value) => {
                        *results[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
                    }
                    Err(payload) => {
                        let mut first = first_panic.lock().unwrap_or_else(|e| e.into_inner());
                        first.get_or_insert(payload);
                    }
                }
            };
            // SAFETY: the job holds the count just added; everything it borrows lives in this
            // frame, which waits for the root latch (set only after every job completed).
            let job = unsafe { counted_job(root_ref, work) };
            registry.push_broadcast(index, job);
        }
        // SAFETY: the caller's own count of the root, released once.
        unsafe { root_ref.complete() };
        ctx.wait_for(&latch, crate::WaitKind::Broadcast);
    });
    if let Some(payload) = first_panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        panic::resume_unwind(payload);
    }
    results
        .into_iter()
        .map(
            |slot| match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(value) => value,
                None => unreachable!("a broadcast job completed without a result or a panic"),
            },
        )
        .collect()
}
