//! The pool and its workers: queues, the worker loop, finding work, and calling contexts.
//!
//! Every worker owns a LIFO [`Worker`] deque (tasks it creates itself, popped newest-first, stolen
//! oldest-first by others) and an *inbox* [`Injector`] (tasks other threads hand to it with
//! `spawn_on`; anybody may steal from it, which is how a caller takes back work queued for a worker
//! that has not woken up yet). One more [`Injector`] takes `spawn`s from outside the pool.
//!
//! A thread outside the pool that calls a parallel algorithm takes part in it, like the study's
//! `JoinMainThread`: it claims one of a few *guest slots*, each a deque that workers can steal from,
//! and runs the algorithm exactly as a worker would. Should every guest slot be taken, the call is
//! injected into the pool and the caller just blocks.
//!
//! A worker of pool A that waits in such a context of another operation — a guest of pool B, or
//! blocked on a call injected into B — instead of in A's worker loop still runs A's work while it
//! waits, in its A worker context, exactly where its worker loop would look (`serve_home`): its
//! deque, inbox and broadcast jobs, A's injector, and the other queues of A unless it stands
//! aside for outside callers. It is marked away so that work handed to it, or queued on A while
//! no worker of A sleeps, unparks it (`sleep.rs`). So pools may call into each other: work of A
//! that the operation in B waits for is run even while every worker of A waits in B, as
//! rayon's cross-pool wait runs it. Unlike rayon's, this wait keeps to `MAX_NESTED_WAITS`:
//! deeper, the worker runs only the work handed to it (`serve_home`).

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;

use crate::job::{HeapJob, JobRef, StackJob};
use crate::latch::Latch;
use crate::retune::PoolTimespan;
use crate::sleep::{Away, Sleep};
use crate::snapshot::{PoolSnapshot, WaitKind, WorkerSnapshot};
use crate::timer;

/// How many outside threads can take part in calls at the same time (more just block).
const GUEST_SLOTS: usize = 16;

/// Which queue a calling context owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Worker(usize),
    Guest(usize),
    /// A call on a pool the thread is not inside, made with [`MAX_NESTED_WAITS`] waits on its
    /// stack (see [`Registry::in_sequential_context`]): it runs on the thread alone and owns no
    /// queue of the pool. Its deque is a thread-local one that stays empty — only a call that
    /// goes parallel pushes to its context's deque, and every call made in this context is as
    /// deep — and a wait in it runs no work of the pool (see [`WorkerCtx::wait_for`]).
    Inline,
}

/// The calling context of a thread inside a pool operation.
pub(crate) struct WorkerCtx<'r> {
    pub(crate) registry: &'r Registry,
    pub(crate) slot: Slot,
    pub(crate) deque: &'r Worker<JobRef>,
    rng: Cell<u64>,
    /// Set while the thread runs the closure of an `install` that entered the pool, outside the
    /// work of any operation started in it: a parallel call made there is outermost, as one made
    /// from outside the pool (see [`Registry::install`]).
    at_install_top: Cell<bool>,
}

/// Nested waits beyond which new parallel calls on a thread run sequentially.
///
/// A thread waiting for a call helps by executing other tasks; such a task may start a nested
/// call whose wait helps again, and so on: with many concurrent nested calls, one thread can end
/// up with every pending outer iteration on its stack (the "leapfrogging" that overflows stacks
/// in work-stealing pools). Like OpenMP's `max-active-levels`, a loop or `join` started while
/// this many waits are already on the thread's stack runs on that thread alone, in order, and
/// so does every task a `scope` spawns there. That bounds the stack, and cannot deadlock: a
/// sequential call waits for nobody.
///
/// Running alone does not change which pool the call is in: a call on pool X runs inside X, so
/// the code it runs sees X (`current_num_threads`, `current_thread_index`) and the free
/// functions it calls act on X, as they would below the limit. A thread not inside X enters it
/// for such a call through an inline context ([`Registry::in_sequential_context`]), which
/// takes no guest slot and queues nothing. `scope` and `install` enter their pool at any depth
/// (only the tasks of a scope run sequentially), and `broadcast` cannot run sequentially.
pub(crate) const MAX_NESTED_WAITS: u32 = 16;

thread_local! {
    /// The context of the pool operation this thread is inside, if any.
    static CURRENT: Cell<*const WorkerCtx<'static>> = const { Cell::new(ptr::null()) };
    /// How many waits for a latch (or for a call queued by `in_worker_blocking`) are on this
    /// thread's stack.
    static WAIT_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The deque of this thread's inline contexts (see [`Slot::Inline`]): always empty.
    static INLINE_DEQUE: Worker<JobRef> = Worker::new_lifo();
    /// The worker context of the pool this thread is a worker of (null on other threads), for
    /// the whole of `Registry::worker_main`: while the thread waits in a context of another
    /// operation (a guest slot, or blocked in `in_worker_blocking`), it still runs the work of
    /// that pool (see `serve_home`).
    static HOME: Cell<*const WorkerCtx<'static>> = const { Cell::new(ptr::null()) };
}

/// A deque an outside thread borrows for the duration of its outermost call.
struct GuestSlot {
    claimed: AtomicBool,
    deque: Worker<JobRef>,
    stealer: Stealer<JobRef>,
}

// SAFETY: `deque` (not `Sync`) is only used by the thread that claimed the slot, between its
// Acquire claim and its Release un-claim; `stealer` is `Sync`. Slots live as long as the registry
// and are never freed while a guest holds one (a guest is inside a call that borrows the pool).
// A guest leaves with an empty deque: it runs what is left there before releasing the slot (see
// `ContextScope`'s Drop; detached tasks never go there, see `spawn_detached`).
unsafe impl Sync for GuestSlot {}

/// Shared state of one pool.
pub(crate) struct Registry {
    stealers: Vec<Stealer<JobRef>>,
    inboxes: Vec<Injector<JobRef>>,
    /// Jobs only worker `i` may run (`broadcast`): nobody steals from these.
    broadcasts: Vec<Injector<JobRef>>,
    injector: Injector<JobRef>,
    /// Where panics of detached `spawn`s go (set once, by the builder).
    panic_handler: std::sync::OnceLock<crate::builder::PanicHandler>,
    guests: Vec<GuestSlot>,
    /// Written on every call from outside, read by idle workers on every round: on a cache line
    /// of its own, so that it does not drag the read-mostly fields along.
    active_guests: CachePadded<AtomicUsize>,
    pub(crate) sleep: Sleep,
    terminate: AtomicBool,
    /// Detached tasks (`spawn`, `spawn_on`) queued or running: the workers of a dropped pool
    /// exit only once this is zero, so every such task runs, including tasks spawned by tasks
    /// while the pool shuts down.
    detached: CachePadded<AtomicUsize>,
    /// Workers not yet past their exit hook: the workers of a dropped pool keep taking work
    /// until this is zero, so what an exit handler starts on the pool (a loop, a broadcast, a
    /// spawn) finds every worker still there (see `worker_main`).
    workers_in_exit: AtomicUsize,
    spin_ticks: u64,
    /// The tree strategy's timespan (and its online lowering, `retune.rs`).
    pub(crate) timespan: PoolTimespan,
}

impl Registry {
    /// Creates the shared state and returns the workers' own deques, one per thread.
    pub(crate) fn new(
        num_threads: usize,
        spin_before_park: std::time::Duration,
    ) -> (Registry, Vec<Worker<JobRef>>) {
        let deques: Vec<Worker<JobRef>> = (0..num_threads).map(|_| Worker::new_lifo()).collect();
        let guests = (0..GUEST_SLOTS)
            .map(|_| {
                let deque = Worker::new_lifo();
                let stealer = deque.stealer();
                GuestSlot {
                    claimed: AtomicBool::new(false),
                    deque,
                    stealer,
                }
            })
            .collect();
        let registry = Registry {
            stealers: deques.iter().map(Worker::stealer).collect(),
            inboxes: (0..num_threads).map(|_| Injector::new()).collect(),
            broadcasts: (0..num_threads).map(|_| Injector::new()).collect(),
            injector: Injector::new(),
            panic_handler: std::sync::OnceLock::new(),
            guests,
            active_guests: CachePadded::new(AtomicUsize::new(0)),
            sleep: Sleep::new(num_threads),
            terminate: AtomicBool::new(false),
            detached: CachePadded::new(AtomicUsize::new(0)),
            // The builder starts every worker's loop or none (see `ThreadPoolBuilder::build`).
            workers_in_exit: AtomicUsize::new(num_threads),
            spin_ticks: timer::duration_to_ticks(spin_before_park),
            timespan: PoolTimespan::new(),
        };
        (registry, deques)
    }

    #[inline]
    pub(crate) fn num_threads(&self) -> usize {
        self.stealers.len()
    }

    /// The tree strategy's timespan in ticks (0 until calibrated or set).
    #[inline]
    pub(crate) fn timespan_ticks(&self) -> u64 {
        self.timespan.ticks()
    }

    /// The index of the calling thread if it is a worker of this pool inside an operation of
    /// this pool: in its worker context, or in a guest slot it took when it re-entered the pool
    /// through another pool's work (`b.install(|| a.install(..))` on a worker of A), where it is
    /// still that worker (as in rayon, whose `install` runs on a worker).
    pub(crate) fn current_thread_index(&self) -> Option<usize> {
        let current = CURRENT.get();
        if current.is_null() {
            return None;
        }
        // SAFETY: CURRENT points to a live context while its thread is inside an operation.
        let ctx = unsafe { &*current };
        if !ptr::eq(ctx.registry, self) {
            return None;
        }
        let worker = match ctx.slot {
            Slot::Worker(_) => ctx,
            Slot::Guest(_) | Slot::Inline => home().filter(|home| ptr::eq(home.registry, self))?,
        };
        match worker.slot {
            Slot::Worker(index) => Some(index),
            Slot::Guest(_) | Slot::Inline => None,
        }
    }

    /// Whether a parallel call made now on this thread is nested: made from inside this pool (a
    /// loop body, a `join` or `scope` closure, a task), not from outside it or at the top of an
    /// `install` that entered it (see [`Registry::install`]).
    #[inline]
    pub(crate) fn call_is_nested(&self) -> bool {
        let current = CURRENT.get();
        // SAFETY: see `current_thread_index`.
        !current.is_null() && {
            let ctx = unsafe { &*current };
            ptr::eq(ctx.registry, self) && !ctx.at_install_top.get()
        }
    }

    /// Whether the calling thread is inside an operation of this pool.
    #[inline]
    pub(crate) fn current_context_is_this(&self) -> bool {
        let current = CURRENT.get();
        // SAFETY: see `current_thread_index`.
        !current.is_null() && ptr::eq(unsafe { (*current).registry }, self)
    }

    /// The registry whose operation the calling thread is inside, if any.
    pub(crate) fn current() -> Option<&'static Registry> {
        let current = CURRENT.get();
        if current.is_null() {
            return None;
        }
        // SAFETY: the registry outlives every context that points to it, and the caller only uses
        // the reference while it is inside that context (the free functions of this crate).
        Some(unsafe { (*current).registry })
    }

    /// Runs `op` in a context of this pool: the current one if the thread is already inside
    /// this pool, else a guest slot, else (all slots taken) on a worker while the caller blocks.
    pub(crate) fn in_context<R: Send>(&self, op: impl FnOnce(&WorkerCtx<'_>) -> R + Send) -> R {
        let current = CURRENT.get();
        if !current.is_null() {
            // SAFETY: see `current_thread_index`.
            let ctx = unsafe { &*current };
            if ptr::eq(ctx.registry, self) {
                // What `op` runs is the work of an operation: a call made in it is nested, also
                // when this operation was started at the top of an `install`.
                let _within = ctx.set_install_top(false);
                return op(ctx);
            }
        }
        match self.claim_guest() {
            Some(index) => {
                let ctx = WorkerCtx::new(self, Slot::Guest(index), &self.guests[index].deque);
                let _scope = ContextScope::enter(&ctx);
                op(&ctx)
            }
            None => self.in_worker_blocking(op),
        }
    }

    /// Runs `op`, a call on this pool that must run sequentially ([`must_run_sequentially`]),
    /// on the calling thread inside this pool: in its current context if it is inside this pool,
    /// else in an inline context of it ([`Slot::Inline`]) until `op` returns. So the code `op`
    /// runs addresses this pool, as it would below the limit, and not the pool whose work the
    /// thread was running — or the global pool. The inline context claims no guest slot and
    /// queues nothing, so the call still waits for nobody: entering through `in_context` could
    /// block, all guest slots taken, on a worker running it.
    ///
    /// Out of line: the calls below the limit only test `must_run_sequentially`, as before.
    #[cold]
    #[inline(never)]
    pub(crate) fn in_sequential_context<R>(&self, op: impl FnOnce() -> R) -> R {
        if self.current_context_is_this() {
            return op();
        }
        INLINE_DEQUE.with(|deque| {
            let ctx = WorkerCtx::new(self, Slot::Inline, deque);
            let _scope = ContextScope::enter(&ctx);
            op()
        })
    }

    /// Runs `op` inside this pool for [`ThreadPool::install`](crate::ThreadPool::install).
    ///
    /// A thread already inside the pool runs `op` as it is: in a loop body or a task it stays
    /// nested. A thread that enters the pool here — from outside, or on a worker when every guest
    /// slot is taken — runs `op` at the pool's top: the parallel calls it makes are outermost, as
    /// if made from outside (the tree strategy hands them out and times them), while the calls
    /// made inside their work are nested. rayon users wrap their parallel code in `install` to
    /// run it on a pool of their own, and it must not lose the tree distribution there.
    pub(crate) fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        if self.current_context_is_this() {
            return op();
        }
        self.in_context(|ctx| {
            let _top = ctx.set_install_top(true);
            op()
        })
    }

    fn claim_guest(&self) -> Option<usize> {
        for (index, slot) in self.guests.iter().enumerate() {
            // Acquire: everything the previous holder did with the deque happened before.
            if !slot.claimed.load(Ordering::Relaxed)
                && slot
                    .claimed
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                self.active_guests.fetch_add(1, Ordering::Relaxed);
                return Some(index);
            }
        }
        None
    }

    fn release_guest(&self, index: usize) {
        self.active_guests.fetch_sub(1, Ordering::Relaxed);
        // Release: pairs with the Acquire claim of the next holder.
        self.guests[index].claimed.store(false, Ordering::Release);
    }

    fn in_worker_blocking<R: Send>(&self, op: impl FnOnce(&WorkerCtx<'_>) -> R + Send) -> R {
        let job = StackJob::new(|| {
            let current = CURRENT.get();
            // SAFETY: the job runs on a worker of this pool, inside its context.
            op(unsafe { &*current })
        });
        // SAFETY: `job` lives in this frame, which this thread leaves only after it saw the latch
        // set below — the worker that runs the job touches nothing of it after setting it.
        self.injector.push(unsafe { job.as_job_ref() });
        self.sleep.wake_one();
        // A worker of another pool blocked here still runs its own pool's work (see
        // `serve_home`); marked away, it is unparked for it. That work nests on this stack like
        // the tasks a latch wait runs: it counts as one.
        let _depth = WaitDepth::enter();
        wait_away(&job.latch);
        job.into_result().into_value()
    }

    /// Hands `job` to worker `index` and wakes it; if it is busy running a task, wakes another
    /// worker that may steal the job instead. A busy worker may be waiting away from this pool
    /// (in another pool's operation, where it still runs its inbox: see `serve_home`), parked
    /// outside the sleep protocol: it is unparked too. A worker away is always busy (it went
    /// away from inside a task or a hook), so a worker found idle needs no such unpark.
    pub(crate) fn push_to(&self, index: usize, job: JobRef) {
        self.inboxes[index].push(job);
        if self.sleep.wake(index) {
            self.sleep.unpark_if_away(index);
            self.wake_one_thief();
        }
    }

    /// Sends the panics of detached `spawn`s to `handler` (set at most once, before any spawn).
    pub(crate) fn set_panic_handler(&self, handler: crate::builder::PanicHandler) {
        let _ = self.panic_handler.set(handler);
    }

    /// The handler for panics of detached `spawn`s, if the builder set one.
    pub(crate) fn panic_handler(&self) -> Option<&crate::builder::PanicHandler> {
        self.panic_handler.get()
    }

    /// Hands `job` to worker `index` alone (no other thread takes it) and wakes it — also when
    /// it waits away from this pool, where it runs the job (see `serve_home`).
    pub(crate) fn push_broadcast(&self, index: usize, job: JobRef) {
        self.broadcasts[index].push(job);
        self.sleep.wake(index);
        self.sleep.unpark_if_away(index);
    }

    /// Submits `job` from outside any context.
    pub(crate) fn inject(&self, job: JobRef) {
        self.injector.push(job);
        self.sleep.wake_one();
    }

    /// Queues a detached task (`spawn`, `spawn_on`): in worker `target`'s inbox if given; else on
    /// the calling worker's own deque (stealable) if the caller is a worker of this pool; else on
    /// the injector. A guest's deque is never used for it: the guest may leave its call before
    /// anyone steals the task, and workers look at guest deques only while guests are active.
    pub(crate) fn spawn_detached<F: FnOnce() + Send + 'static>(
        &self,
        target: Option<usize>,
        task: F,
    ) {
        // Relaxed: the caller either owns the pool (so it is not being dropped) or runs inside
        // it, in a task that a detached count or a call keeps the workers alive for; the
        // decrement that may reach zero is a read-modify-write and sees this increment.
        self.detached.fetch_add(1, Ordering::Relaxed);
        let done = DetachedDone(self);
        let run = move || {
            let _done = done;
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(task)) {
                with_current_ctx(|ctx| {
                    if let Some(handler) = ctx.registry.panic_handler() {
                        // A panicking handler is dropped like an unhandled panic (the hook
                        // printed it): the worker must go on either way.
                        let _ = panic::catch_unwind(AssertUnwindSafe(|| handler(payload)));
                    }
                });
            }
        };
        // SAFETY: `run` is 'static, so it borrows nothing that could die first; the job is
        // executed exactly once, because the workers of this pool exit only when no detached
        // task is left (see `worker_main`), and every queued job is executed by whoever takes it.
        let job = unsafe { HeapJob::into_job_ref(run) };
        if let Some(index) = target {
            self.push_to(index, job);
            return;
        }
        let current = CURRENT.get();
        // SAFETY: CURRENT points to a live context while its thread is inside an operation.
        match unsafe { current.as_ref() } {
            Some(ctx) if ptr::eq(ctx.registry, self) && matches!(ctx.slot, Slot::Worker(_)) => {
                ctx.push_local_and_wake(job);
            }
            _ => self.inject(job),
        }
    }

    pub(crate) fn terminate(&self) {
        // SeqCst: read by the workers' exit condition (`may_exit`) inside the sleep protocol, and
        // totally ordered with the last detached task's decrement (see `DetachedDone`).
        self.terminate.store(true, Ordering::SeqCst);
        self.sleep.wake_all();
    }

    /// A racy picture of the pool's state (see [`PoolSnapshot`]).
    pub(crate) fn snapshot(&self) -> PoolSnapshot {
        let workers = (0..self.num_threads())
            .map(|index| {
                let (state, waits) = self.sleep.state(index);
                WorkerSnapshot {
                    index,
                    state,
                    waits,
                    innermost_wait: self.sleep.innermost_wait(index),
                    deque: self.stealers[index].len(),
                    inbox: self.inboxes[index].len(),
                }
            })
            .collect();
        PoolSnapshot {
            workers,
            injected: self.injector.len(),
            detached: self.detached.load(Ordering::Relaxed),
            guests: self
                .guests
                .iter()
                .filter(|guest| guest.claimed.load(Ordering::Relaxed))
                .map(|guest| guest.stealer.len())
                .collect(),
            terminating: self.terminate.load(Ordering::Relaxed),
        }
    }

    /// Whether a worker may exit: the pool was dropped and no detached task is left.
    fn may_exit(&self) -> bool {
        // SeqCst: pairs with `terminate` and `DetachedDone` (see there).
        self.terminate.load(Ordering::SeqCst) && self.detached.load(Ordering::SeqCst) == 0
    }

    /// The life of worker thread `index`: `on_start`, the worker loop, `on_exit`; returns after
    /// the pool was dropped, every worker's `on_exit` has returned and no work is left. Every
    /// worker of the pool must run this (the exit waits for all of them).
    ///
    /// Both hooks run as worker `index` of this pool, like a task: `current_thread_index()` is
    /// `Some(index)`, the free functions act on this pool (never on the global pool, which may
    /// be the very pool being built), and the worker counts as busy. What a hook starts on the
    /// pool is served: every worker is in this function, and after the pool was dropped every
    /// worker keeps taking work until every worker's exit hook has returned (a broadcast made in
    /// an exit hook needs them all).
    pub(crate) fn worker_main(
        &self,
        index: usize,
        deque: &Worker<JobRef>,
        on_start: impl FnOnce(),
        on_exit: impl FnOnce(),
    ) {
        // Before anything can park this thread: a wake-up needs its handle.
        self.sleep.register_current(index);
        let ctx = WorkerCtx::new(self, Slot::Worker(index), deque);
        let _scope = ContextScope::enter(&ctx);
        let _home = HomeScope::enter(&ctx);
        {
            let _busy = BusyMark::set(self, index, true);
            on_start();
        }
        ctx.wait_until(None, &|| self.may_exit());
        {
            let _busy = BusyMark::set(self, index, true);
            on_exit();
        }
        // SeqCst: the store-buffer pattern of `sleep.rs` with a worker that announced its sleep
        // and then re-checks the count (as with `terminate`), so the last worker's wake-up below
        // is not lost.
        if self.workers_in_exit.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.sleep.wake_all();
        }
        // SeqCst: pairs with the decrement above.
        ctx.wait_until(None, &|| {
            self.may_exit() && self.workers_in_exit.load(Ordering::SeqCst) == 0
        });
        // Nothing is queued any more (every queued job belongs to a detached task or to a call
        // made inside one or inside an exit hook); this only guards against a job this reasoning
        // missed.
        while let Some(job) = ctx.find_work() {
            // SAFETY: every job in the queues is executed exactly once, by whoever takes it.
            unsafe { job.execute() };
        }
    }

    /// Whether `slot` is a worker that outside callers currently stand in for.
    ///
    /// An outside thread taking part in a call stands in for a worker (see `LoopCall`), so that a
    /// pool of P threads runs a call on P threads. While k outside threads take part in calls,
    /// workers 0..k-1 therefore only run work handed to them (own deque, inbox, the injector) and
    /// do not steal; otherwise a pool of one thread would run an outside caller's loop on two.
    pub(crate) fn is_standing_aside(&self, slot: Slot) -> bool {
        matches!(slot, Slot::Worker(index) if index < self.active_guests.load(Ordering::Relaxed))
    }

    /// How many workers currently stand aside (workers `0..n`; see `is_standing_aside`).
    pub(crate) fn standing_aside(&self) -> usize {
        self.active_guests.load(Ordering::Relaxed)
    }

    /// Wakes one sleeping worker that may steal (see `is_standing_aside`).
    pub(crate) fn wake_one_thief(&self) {
        let first = self.active_guests.load(Ordering::Relaxed);
        self.sleep.wake_one_of(first..self.num_threads());
    }

    fn has_visible_work(&self, ctx: &WorkerCtx<'_>) -> bool {
        let own_inbox = match ctx.slot {
            Slot::Worker(index) => {
                !self.inboxes[index].is_empty() || !self.broadcasts[index].is_empty()
            }
            Slot::Guest(_) | Slot::Inline => false,
        };
        if !ctx.deque.is_empty() || own_inbox || !self.injector.is_empty() {
            return true;
        }
        if self.is_standing_aside(ctx.slot) {
            return false;
        }
        !self.injector.is_empty()
            || self.inboxes.iter().any(|q| !q.is_empty())
            || self.stealers.iter().any(|s| !s.is_empty())
            || (self.active_guests.load(Ordering::Relaxed) > 0
                && self.guests.iter().any(|g| !g.stealer.is_empty()))
    }
}

/// Releases a detached task's count when the task has run (also if it panicked).
struct DetachedDone(*const Registry);

// SAFETY: the registry is `Sync`; the pointer is only used while the registry is alive (see Drop).
unsafe impl Send for DetachedDone {}

impl Drop for DetachedDone {
    fn drop(&mut self) {
        // SAFETY: the task runs on a worker of this registry, which holds a reference to the
        // registry until it exits, and it does not exit before this count is released (or on a
        // guest, whose call borrows the pool). So the registry is alive here, also after the
        // decrement, for the wake-up below.
        let registry = unsafe { &*self.0 };
        // SeqCst: with the SeqCst store in `terminate`, either this thread sees `terminate` (and
        // wakes the workers itself) or `terminate` comes later in the single total order and its
        // own `wake_all` lets the workers re-check `may_exit`, which then reads this decrement.
        if registry.detached.fetch_sub(1, Ordering::SeqCst) == 1
            && registry.terminate.load(Ordering::SeqCst)
        {
            registry.sleep.wake_all();
        }
    }
}

/// Marks `ctx` as this thread's home for the life of a worker (see `HOME`).
struct HomeScope;

impl HomeScope {
    fn enter(ctx: &WorkerCtx<'_>) -> Self {
        HOME.set((ctx as *const WorkerCtx<'_>).cast());
        HomeScope
    }
}

impl Drop for HomeScope {
    fn drop(&mut self) {
        HOME.set(ptr::null());
    }
}

/// The calling thread's worker context in the pool it is a worker of, if it is one.
fn home() -> Option<&'static WorkerCtx<'static>> {
    // SAFETY: HOME points to the context in `worker_main`'s frame, which outlives everything
    // this thread runs (it is reset before that frame is left).
    unsafe { HOME.get().as_ref() }
}

/// Runs one task of the pool the calling thread is a worker of, in that worker's context, as
/// its worker loop would; returns whether there was one. Called where such a thread waits in
/// the context of another operation — a guest slot (of another pool, or of its own pool
/// entered through another pool's work) or `in_worker_blocking` — instead of its worker loop,
/// marked away ([`AwayMark`]) so that hand-offs and work injected into its pool unpark it.
///
/// It looks where its worker loop looks (`find_work`): its own deque, inbox and broadcast jobs,
/// the pool's injector, and — unless it stands aside for outside callers — the other workers'
/// and the guests' queues. Nobody else may run its broadcast jobs, and a broadcast waits for
/// all of them; its inbox is stealable, but not by the workers that stand aside, which may be
/// all the others; and while every worker of its pool waits away, nobody else takes what is
/// injected there (an `install` queued because the guest slots were taken, a `spawn` from
/// outside). A worker of pool A waiting in `B.install` for B's work, whose tasks broadcast on
/// A, make a loop call on A that hands this worker a share, or queue work on A as a whole,
/// would otherwise wait for work that waits for it. rayon's cross-pool wait runs all of its
/// pool's work for the same reason.
///
/// One task per call: the caller re-checks what it waits for, and its own operation's work,
/// in between. The task runs as work of an operation of the home pool (calls made in it are
/// nested), on top of the caller's wait, which counts in `WAIT_DEPTH`.
///
/// With [`MAX_NESTED_WAITS`] waits on the stack (this one included) it runs only the work
/// handed to this worker — its broadcast jobs and inbox — and nothing it would take from the
/// pool at large. A task run here may itself wait away again (a loop body that `install`s into
/// a pool whose guest slots are all taken), and there `MAX_NESTED_WAITS` does not turn the wait
/// into a sequential call: running any task at any depth let one thread pile up the pending
/// iterations of a loop on its stack, thousands deep (a tree of `join`s of 5 000 such bodies
/// on 8 threads nested 2 499 of them on one thread). So pools calling into each other
/// deadlock only if every worker of one waits away with that many waits on its stack while the
/// other needs work queued on it as a whole.
fn serve_home() -> bool {
    let Some(home) = home() else {
        return false;
    };
    let job = if away_runs_all() {
        home.find_work()
    } else {
        home.find_handed_work()
    };
    let Some(job) = job else {
        return false;
    };
    let _scope = ContextScope::enter(home);
    let _within = home.set_install_top(false);
    home.execute_busy(job);
    true
}

/// Waits until `latch` is set, running only the work of the pool the calling thread is a worker
/// of (`serve_home`), marked away so that work handed or queued there unparks it. The caller
/// counts the wait in `WAIT_DEPTH`.
fn wait_away(latch: &Latch) {
    let _away = AwayMark::enter();
    while !latch.probe() {
        if serve_home() {
            continue;
        }
        if latch.prepare_sleep() {
            std::thread::park();
            latch.cancel_sleep();
        }
    }
}

/// Whether `serve_home` runs all of the home pool's work at the current depth, or only what
/// is handed to the worker.
fn away_runs_all() -> bool {
    WAIT_DEPTH.get() < MAX_NESTED_WAITS
}

/// Marks the calling thread, if it is a worker, as waiting away from its worker loop until
/// dropped (see `Sleep::set_away`), with what `serve_home` runs at the current depth (call
/// with the wait already counted in `WAIT_DEPTH`).
struct AwayMark {
    home: &'static WorkerCtx<'static>,
    index: usize,
    previous: Away,
}

impl AwayMark {
    fn enter() -> Option<Self> {
        let home = home()?;
        let Slot::Worker(index) = home.slot else {
            return None;
        };
        let registry = home.registry;
        let away = if away_runs_all() {
            Away::All
        } else {
            Away::Handed
        };
        let previous = registry
            .sleep
            .enter_away(index, away, || !registry.injector.is_empty());
        Some(AwayMark {
            home,
            index,
            previous,
        })
    }
}

impl Drop for AwayMark {
    fn drop(&mut self) {
        self.home.registry.sleep.set_away(self.index, self.previous);
    }
}

/// Counts a wait in `WAIT_DEPTH` until dropped (also on unwind).
struct WaitDepth;

impl WaitDepth {
    fn enter() -> Self {
        WAIT_DEPTH.set(WAIT_DEPTH.get() + 1);
        WaitDepth
    }
}

impl Drop for WaitDepth {
    fn drop(&mut self) {
        WAIT_DEPTH.set(WAIT_DEPTH.get() - 1);
    }
}

/// Whether a parallel call started now on this thread must run sequentially (see
/// [`MAX_NESTED_WAITS`]).
pub(crate) fn must_run_sequentially() -> bool {
    WAIT_DEPTH.get() >= MAX_NESTED_WAITS
}

/// Runs `f` with the context of the operation the calling thread is inside.
///
/// Jobs are only ever executed from inside a context (a worker's loop, or a caller waiting for its
/// call), so a missing context is a bug in this crate, not a user error.
pub(crate) fn with_current_ctx<R>(f: impl FnOnce(&WorkerCtx<'_>) -> R) -> R {
    let current = CURRENT.get();
    assert!(
        !current.is_null(),
        "parbench-scheduler: a job ran outside a pool context"
    );
    // SAFETY: CURRENT points to a live context while its thread is inside an operation.
    f(unsafe { &*current })
}

/// Restores a worker's busy mark when dropped.
struct BusyMark<'r> {
    registry: &'r Registry,
    index: usize,
    previous: bool,
}

impl<'r> BusyMark<'r> {
    fn set(registry: &'r Registry, index: usize, busy: bool) -> Self {
        let previous = registry.sleep.set_busy(index, busy);
        BusyMark {
            registry,
            index,
            previous,
        }
    }
}

impl Drop for BusyMark<'_> {
    fn drop(&mut self) {
        self.registry.sleep.set_busy(self.index, self.previous);
    }
}

/// Sets `CURRENT` for the duration of a context and restores it (also on unwind).
/// Restores a context's install-top mark when dropped (see [`WorkerCtx::set_install_top`]).
struct InstallTop<'a> {
    mark: &'a Cell<bool>,
    before: bool,
}

impl Drop for InstallTop<'_> {
    fn drop(&mut self) {
        self.mark.set(self.before);
    }
}

struct ContextScope<'a, 'r> {
    ctx: &'a WorkerCtx<'r>,
    previous: *const WorkerCtx<'static>,
}

impl<'a, 'r> ContextScope<'a, 'r> {
    fn enter(ctx: &'a WorkerCtx<'r>) -> Self {
        let previous = CURRENT.replace((ctx as *const WorkerCtx<'r>).cast());
        ContextScope { ctx, previous }
    }
}

impl Drop for ContextScope<'_, '_> {
    fn drop(&mut self) {
        if let Slot::Guest(index) = self.ctx.slot {
            // A guest may leave with tasks of *other* calls on its deque: while it waited it ran a
            // stolen share or task of another caller's loop, which pushed that loop's balancing
            // tasks here. Once the slot is released nobody may look at this deque again — workers
            // standing aside for the remaining guests do not steal, and the other caller parks
            // until its latch is set — so that call would hang. Run them before leaving (jobs
            // catch their own panics, so this is safe during unwinding too).
            while let Some(job) = self.ctx.deque.pop() {
                // SAFETY: every job in the queues is executed exactly once, by whoever takes it.
                unsafe { job.execute() };
            }
            CURRENT.set(self.previous);
            self.ctx.registry.release_guest(index);
            // One guest fewer: a worker that stood aside may steal again. Other guests may be
            // parked on calls whose tasks only a stealing worker can reach: let one look.
            if self.ctx.registry.active_guests.load(Ordering::Relaxed) > 0 {
                self.ctx.registry.wake_one_thief();
            }
        } else {
            CURRENT.set(self.previous);
        }
    }
}

fn steal_from<T>(mut attempt: impl FnMut() -> Steal<T>) -> Option<T> {
    loop {
        match attempt() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

impl<'r> WorkerCtx<'r> {
    fn new(registry: &'r Registry, slot: Slot, deque: &'r Worker<JobRef>) -> Self {
        let seed = match slot {
            Slot::Worker(i) => i as u64 + 1,
            Slot::Guest(i) => (i as u64 + 1) << 32,
            Slot::Inline => 0,
        };
        WorkerCtx {
            registry,
            slot,
            deque,
            rng: Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            at_install_top: Cell::new(false),
        }
    }

    /// Marks whether the thread is at the top of an `install` (see [`Registry::install`]) until
    /// the returned guard restores the mark before, also when unwinding.
    fn set_install_top(&self, value: bool) -> InstallTop<'_> {
        InstallTop {
            mark: &self.at_install_top,
            before: self.at_install_top.replace(value),
        }
    }

    /// Pushes a stealable task on this context's own deque without waking anybody.
    #[inline]
    pub(crate) fn push_local(&self, job: JobRef) {
        self.deque.push(job);
    }

    /// Pushes a stealable task and wakes one sleeping worker to steal it.
    pub(crate) fn push_local_and_wake(&self, job: JobRef) {
        self.deque.push(job);
        self.registry.wake_one_thief();
    }

    /// Whether this context's own deque is empty (nothing here for a thief to steal).
    #[inline]
    pub(crate) fn deque_is_empty(&self) -> bool {
        self.deque.is_empty()
    }

    /// Pops the newest task of this context's own deque.
    pub(crate) fn pop_local(&self) -> Option<JobRef> {
        self.deque.pop()
    }

    fn next_random(&self) -> usize {
        // xorshift64: a cheap, good-enough victim order.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x as usize
    }

    /// A task handed to this context if it is a worker: its inbox, then its broadcast jobs.
    #[inline]
    fn find_handed_work(&self) -> Option<JobRef> {
        let Slot::Worker(index) = self.slot else {
            return None;
        };
        let registry = self.registry;
        steal_from(|| registry.inboxes[index].steal())
            .or_else(|| steal_from(|| registry.broadcasts[index].steal()))
    }

    /// Finds a task: own deque, own inbox, the injector, then other threads' queues.
    pub(crate) fn find_work(&self) -> Option<JobRef> {
        if let Some(job) = self.deque.pop() {
            return Some(job);
        }
        if let Some(job) = self.find_handed_work() {
            return Some(job);
        }
        let registry = self.registry;
        if let Some(job) = steal_from(|| registry.injector.steal()) {
            return Some(job);
        }
        if registry.is_standing_aside(self.slot) {
            return None;
        }
        let n = registry.num_threads();
        let start = self.next_random() % n;
        for offset in 0..n {
            let victim = (start + offset) % n;
            if self.slot == Slot::Worker(victim) {
                continue;
            }
            if let Some(job) = steal_from(|| registry.stealers[victim].steal()) {
                return self.keep_or_hand_back(job, Some(victim));
            }
            if let Some(job) = steal_from(|| registry.inboxes[victim].steal()) {
                return self.keep_or_hand_back(job, Some(victim));
            }
        }
        if registry.active_guests.load(Ordering::Relaxed) > 0 {
            for (index, guest) in registry.guests.iter().enumerate() {
                if self.slot == Slot::Guest(index) {
                    continue;
                }
                if let Some(job) = steal_from(|| guest.stealer.steal()) {
                    return self.keep_or_hand_back(job, None);
                }
            }
        }
        None
    }

    /// Re-checks a steal that passed the standing-aside check in `find_work`: an outside call
    /// may have registered in between. Its tasks — the shares in the workers' inboxes, the
    /// balancing tasks on its guest's deque and on its participants' deques — are all pushed
    /// after the registration, and the steal synchronizes with that push, so this re-check sees
    /// it. A worker that must stand aside then hands the task to a worker taking part (`owner`,
    /// the worker it came from, or else the first one not standing aside) instead of running
    /// it: an outside call keeps to P threads. With as many outside callers as workers no
    /// worker takes part and the task is kept (its caller may be parked waiting for it).
    fn keep_or_hand_back(&self, job: JobRef, owner: Option<usize>) -> Option<JobRef> {
        let registry = self.registry;
        if !registry.is_standing_aside(self.slot) {
            return Some(job);
        }
        let first_active = registry.standing_aside();
        let to = owner.or((first_active < registry.num_threads()).then_some(first_active));
        match to {
            Some(index) => {
                registry.push_to(index, job);
                None
            }
            None => Some(job),
        }
    }

    /// Executes `job`, marked busy (see `Sleep::set_busy`) if this context is a worker.
    fn execute_busy(&self, job: JobRef) {
        let Slot::Worker(index) = self.slot else {
            // SAFETY: every job in the queues is executed exactly once, by whoever takes it.
            unsafe { job.execute() };
            return;
        };
        let registry = self.registry;
        let was_busy = registry.sleep.set_busy(index, true);
        if !registry.inboxes[index].is_empty() {
            registry.wake_one_thief();
        }
        // SAFETY: as above.
        unsafe { job.execute() };
        registry.sleep.set_busy(index, was_busy);
    }

    /// Executes tasks until `done` holds, spinning and then sleeping when there is nothing to do.
    /// `latch`, if given, is what `done` watches: the thread announces its sleep on it so that
    /// setting it wakes the thread.
    pub(crate) fn wait_until(&self, latch: Option<&Latch>, done: &dyn Fn() -> bool) {
        let registry = self.registry;
        // A worker waiting inside a task looks at its inbox again: not busy until it returns.
        let _busy = match self.slot {
            Slot::Worker(index) => Some(BusyMark::set(registry, index, false)),
            Slot::Guest(_) | Slot::Inline => None,
        };
        // A guest that is a worker of a pool keeps running that pool's work.
        let away = match self.slot {
            Slot::Guest(_) | Slot::Inline => AwayMark::enter(),
            Slot::Worker(_) => None,
        };
        let mut idle_since: Option<u64> = None;
        let mut idle_rounds = 0u32;
        loop {
            if done() {
                return;
            }
            if let Some(job) = self.find_work() {
                self.execute_busy(job);
                idle_since = None;
                idle_rounds = 0;
                continue;
            }
            // A guest that is a worker of a pool runs that pool's work.
            if away.is_some() && serve_home() {
                idle_since = None;
                idle_rounds = 0;
                continue;
            }
            let now = timer::now();
            let since = *idle_since.get_or_insert(now);
            if now.wrapping_sub(since) < registry.spin_ticks {
                idle_rounds += 1;
                // One pause per round keeps the reaction time to new work or a set latch at a
                // few hundred nanoseconds (a pause alone can take ~40 ns). Yield now and then so
                // that, with more runnable threads than cores, a spinning thread does not hold a
                // core that a working thread needs.
                if idle_rounds % 128 == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            if latch.is_some_and(|latch| !latch.prepare_sleep()) {
                continue;
            }
            match self.slot {
                Slot::Worker(index) => registry
                    .sleep
                    .sleep(index, || done() || registry.has_visible_work(self)),
                // Nothing but this guest pushes to its deque, which is empty here, so only its
                // latch (which unparks it) can end the wait — or, on a thread that is a worker
                // of a pool, work handed to it or queued there (`serve_home`; it is unparked
                // for it: `push_to`, `push_broadcast`, `Sleep::wake_one`).
                Slot::Guest(_) | Slot::Inline => {
                    if !done() {
                        std::thread::park();
                    }
                }
            }
            if let Some(latch) = latch {
                latch.cancel_sleep();
            }
            idle_since = None;
        }
    }

    /// Executes tasks until `latch` is set; `kind` says what the call waits for (diagnostics).
    ///
    /// The tasks on this thread's own deque come first, run as part of the task that waits:
    /// typically they are the call's own unclaimed offers or pieces, which end it at once. Only
    /// when the deque is empty and the latch still unset does the thread mark itself waiting
    /// (`note_wait`) and idle (not busy) and look elsewhere. A nested call of the tree strategy
    /// on a busy pool thus ends without those marks: six atomic read-modify-writes and two
    /// `SeqCst` fences fewer per call, of which nqueens makes ≈ 450 per run.
    pub(crate) fn wait_for(&self, latch: &Latch, kind: WaitKind) {
        if latch.probe() {
            return;
        }
        struct Depth<'a, 'r> {
            ctx: &'a WorkerCtx<'r>,
            outer: Option<Option<WaitKind>>,
        }
        impl Drop for Depth<'_, '_> {
            fn drop(&mut self) {
                WAIT_DEPTH.set(WAIT_DEPTH.get() - 1);
                if let (Slot::Worker(index), Some(outer)) = (self.ctx.slot, self.outer) {
                    self.ctx.registry.sleep.note_wait(index, None, outer);
                }
            }
        }
        // Counted from here: the tasks run below nest on this stack like those of `wait_until`.
        WAIT_DEPTH.set(WAIT_DEPTH.get() + 1);
        let mut depth = Depth {
            ctx: self,
            outer: None,
        };
        while let Some(job) = self.deque.pop() {
            if let Slot::Worker(index) = self.slot
                && !self.registry.inboxes[index].is_empty()
            {
                // As `execute_busy` does: this thread stays busy, so let a thief take the share.
                self.registry.wake_one_thief();
            }
            // SAFETY: every job in the queues is executed exactly once, by whoever takes it.
            unsafe { job.execute() };
            if latch.probe() {
                return;
            }
        }
        match self.slot {
            Slot::Worker(index) => {
                depth.outer = Some(self.registry.sleep.innermost_wait(index));
                self.registry.sleep.note_wait(index, Some(kind), None);
            }
            Slot::Guest(_) => {}
            // A call that must wait (a `broadcast`, a `scope` given tasks by other threads) made
            // in an inline context: this thread is no participant of the pool, whose work would
            // run here on a deque nobody else sees — what it pushed there could be left behind.
            Slot::Inline => return wait_away(latch),
        }
        self.wait_until(Some(latch), &|| latch.probe());
    }
}
