//! A composable work-stealing thread pool whose `parallel_for` hands the range out through a
//! K-ary tree of threads.
//!
//! # Design
//!
//! The pool ([`ThreadPool`], built by [`ThreadPoolBuilder`]) is a classic work-stealing pool:
//! every worker owns a `crossbeam_deque` deque plus an inbox that other threads can hand it work
//! through, and idle workers steal, spin for a while, then park (`registry.rs`, `sleep.rs`).
//!
//! Its parallel loops use, by default, the *tree distribution* of the study "fast work
//! distribution for composable task schedulers" ([`Strategy::Tree`], `strategy/tree.rs`): the
//! caller hands shares of the range to threads through a K-ary tree, so every thread gets its
//! share after `⌈log_K P⌉` hand-offs; each thread runs its share for a *timespan* (calibrated
//! when the pool is built, and lowered later if the pool's calls start their threads much faster
//! than the calibration measured; [`ThreadPool::timespan`]) without creating any task, then
//! offers the rest as stealable *balancing tasks*, one at a time (a new one only when its deque is
//! empty), while at least twice as many iterations as it managed in that timespan are left
//! (fewer only once some thread of the call has run out of work, so that the threads finish
//! together). The thief of one takes chunks from the far end of what is left, each a `2·P`-th of
//! it, while the owner goes on from the near end. On a balanced load this costs about as little as static scheduling; on an
//! unbalanced one the balancing tasks are stolen. Because everything runs as tasks on one pool,
//! calls compose: a loop inside a loop body runs on the same threads. Such
//! a *nested* call (made from a loop body, a `join` or `scope` closure or a task; a call made
//! directly in [`ThreadPool::install`]'s closure is outermost, as one from outside), and an outermost call of at most a few iterations per thread, skips the tree
//! and makes a stealable task only when the running thread's deque is empty: a nested call runs
//! inline while the deque holds a task and then by lazy binary splitting (the upper half of what
//! is left becomes the task), a small outermost one by
//! claims in index order from a shared cursor, which a thread joins by stealing a *claim offer*
//! ([`NestedCalls`], [`TreeConfig::small_per_thread`], `strategy/lazy.rs`). A pool of one thread
//! runs every call inline.
//!
//! The baselines a scheduler study compares against are strategies of the same pool:
//! [`Strategy::Static`], [`Strategy::Dynamic`], [`Strategy::Guided`] (OpenMP-like) and
//! [`Strategy::Simple`] (TBB-like), plus the two ablations of the study
//! ([`Strategy::tree_no_timespan`], [`Strategy::tree_fixed_grain`]).
//!
//! A thread outside the pool that calls a parallel algorithm takes part in it: it runs its own
//! share first, and takes back work queued for threads that have not woken up yet. It stands in
//! for worker 0 (which meanwhile steals nothing), so a pool of P threads runs a loop on P threads.
//!
//! # Iterations that wait for each other
//!
//! Like rayon, the pool promises that every iteration runs exactly once, not that any two run at
//! the same time. A thread waiting for a call runs other tasks meanwhile, and one of them can be
//! an iteration that waits for the very iteration beneath it on the same stack — one of an
//! enclosing call, or a share queued for a busy worker and taken back — and then neither ever
//! finishes. A lazy call's P − 1 first offers let P of its iterations run at once only while P
//! threads are free to take them, and a call nested in a body or task of the tree strategy runs
//! its iterations one after another on its thread while that thread has other work queued (see
//! [`NestedCalls::LazyInline`]). Iterations that must meet should run on threads of their own
//! (`std::thread::scope`) or wait with a time limit, as the `round` kernel's barrier does.
//!
//! # Panics
//!
//! A panic in a loop body, a task or a closure of `join` stops the call it belongs to (no new
//! iterations start) and is re-raised in the caller once every task of that call has stopped;
//! the pool stays usable. A panic in the scheduler's own code while a call's work is out — a bug
//! of this crate — aborts the process instead, with a line saying so after the panic hook's
//! message: unwinding would free memory that other threads still use (rayon-core aborts in the
//! same places).
//!
//! # Example
//!
//! ```
//! use parbench_scheduler::{Strategy, ThreadPoolBuilder};
//!
//! let pool = ThreadPoolBuilder::new().num_threads(2).build()?;
//! let data: Vec<u64> = (0..10_000).collect();
//! let total = pool.parallel_reduce(0..data.len(), || 0, |i| data[i], |a, b| a + b);
//! assert_eq!(total, 49_995_000);
//!
//! // Nested calls run on the same pool.
//! let cells = std::sync::atomic::AtomicUsize::new(0);
//! pool.parallel_for_with(&Strategy::Static, 0..8, |_| {
//!     pool.parallel_for(0..8, |_| {
//!         cells.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
//!     });
//! });
//! assert_eq!(cells.into_inner(), 64);
//! # Ok::<(), parbench_scheduler::BuildError>(())
//! ```
//!
//! The free functions ([`parallel_for`], [`join()`], …) act on the pool the calling thread works
//! for or is [installed](ThreadPool::install) into, or else on the [global pool](global_pool):
//! the one [`ThreadPoolBuilder::build_global`] built, else one built with the defaults on first
//! use (sized by `PARBENCH_NUM_THREADS`, falling back to the available parallelism, then to one
//! thread, if that many cannot be started; see [`NUM_THREADS_ENV`]). Outside any pool they panic
//! if not even that one thread can be started (see [`global_pool`]).
//!
//! # Slices, for rayon users
//!
//! The slice algorithms hand out `&mut` elements and chunks, so code written with rayon's
//! `par_iter_mut` or `par_chunks_mut` ports without `unsafe`: [`ThreadPool::for_each_mut`],
//! [`ThreadPool::for_each_indexed_mut`], [`ThreadPool::par_chunks_mut`],
//! [`ThreadPool::map_collect`] and [`ThreadPool::sort_unstable_by`] (with `_by_key` and plain
//! variants), each also with an explicit strategy (`…_with`) and as a free function.
//! [`ThreadPool::install`], [`ThreadPool::broadcast`], [`ThreadPool::spawn`], [`scope()`],
//! [`join()`], [`current_num_threads`], [`current_thread_index`] and the builder's start, exit and
//! panic handlers cover the parts of rayon's pool API most programs use. Not provided:
//! `spawn_fifo`, `scope_fifo`, `in_place_scope`, `spawn_broadcast`, `yield_now`, `yield_local`,
//! `current_thread_has_pending_tasks`, and the builder's `breadth_first`, `use_current_thread`,
//! `spawn_handler` and `build_scoped`.
//!
//! One difference shows in code ported from rayon: a thread outside the pool that calls into it
//! (a parallel call, or `install`) runs its part itself instead of waiting for a worker, so
//! [`current_thread_index`] is `None` there — for the iterations it runs too. Per-thread state
//! indexed by `current_thread_index().unwrap()` needs a place for outside callers as well (or a
//! `thread_local!`).
//!
//! ```
//! let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build()?;
//! let mut v: Vec<f64> = (0..10_000).map(f64::from).collect();
//! pool.for_each_mut(&mut v, |x| *x = x.sqrt() * 1.5);
//! pool.par_chunks_mut(&mut v, 512, |k, chunk| chunk[0] = k as f64);
//! let mut keys = pool.map_collect(0..10_000, |i| (i * 7919) % 10_007);
//! pool.sort_unstable(&mut keys);
//! assert!(keys.windows(2).all(|w| w[0] <= w[1]));
//! # Ok::<(), parbench_scheduler::BuildError>(())
//! ```

#![deny(missing_docs)]

mod broadcast;
mod builder;
mod capacity;
mod error;
mod global;
mod job;
mod join;
mod latch;
mod pool;
mod reduce;
mod registry;
mod retune;
mod scan;
mod scope;
mod sleep;
mod slice;
mod snapshot;
mod strategy;
mod timer;
mod tune;
mod unwind;

use std::ops::Range;

pub use broadcast::{BroadcastContext, broadcast};
pub use builder::{
    CALIBRATION_BUDGET, CALIBRATION_RANGE, CALIBRATION_ROUNDS, DEFAULT_SPIN_BEFORE_PARK,
    NUM_THREADS_ENV, Pinning, ThreadPoolBuilder, Timespan,
};
pub use capacity::{ThreadCapacity, ThreadLimit, thread_capacity};
pub use error::{BuildError, SpawnError};
pub use global::global_pool;
pub use pool::ThreadPool;
pub use scope::Scope;
pub use slice::{
    for_each_indexed_mut, for_each_indexed_mut_with, for_each_mut, for_each_mut_with, map_collect,
    map_collect_with, par_chunks_mut, par_chunks_mut_with, sort_unstable, sort_unstable_by,
    sort_unstable_by_key, sort_unstable_by_with,
};
pub use snapshot::{PoolSnapshot, WaitKind, WorkerSnapshot, WorkerState};
pub use strategy::{
    Grain, Handoff, NestedCalls, Strategy, TreeConfig, TreeTimespan, tree_handoffs,
};
pub use tune::{
    DEFAULT_TUNING_ROUNDS, MAX_PROBE_PER_THREAD, sched_time_probe, sched_time_probe_with,
    tune_timespan,
};

use global::current_registry;
use strategy::{Body, run_loop};

/// [`ThreadPool::parallel_for`] on the current pool (the one the calling thread works for, else
/// the global pool).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let n = AtomicUsize::new(0);
/// parbench_scheduler::parallel_for(0..100, |_| {
///     n.fetch_add(1, Ordering::Relaxed);
/// });
/// assert_eq!(n.into_inner(), 100);
/// ```
pub fn parallel_for<F: Fn(usize) + Sync>(range: Range<usize>, body: F) {
    run_loop(
        current_registry(),
        &Strategy::default(),
        range,
        Body::Index(&body),
    );
}

/// [`ThreadPool::parallel_for_with`] on the current pool.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let n = AtomicUsize::new(0);
/// parbench_scheduler::parallel_for_with(&parbench_scheduler::Strategy::Static, 0..10, |_| {
///     n.fetch_add(1, Ordering::Relaxed);
/// });
/// assert_eq!(n.into_inner(), 10);
/// ```
pub fn parallel_for_with<F: Fn(usize) + Sync>(strategy: &Strategy, range: Range<usize>, body: F) {
    run_loop(current_registry(), strategy, range, Body::Index(&body));
}

/// [`ThreadPool::parallel_for_chunks`] on the current pool.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let n = AtomicUsize::new(0);
/// parbench_scheduler::parallel_for_chunks(0..100, |r| {
///     n.fetch_add(r.len(), Ordering::Relaxed);
/// });
/// assert_eq!(n.into_inner(), 100);
/// ```
pub fn parallel_for_chunks<F: Fn(Range<usize>) + Sync>(range: Range<usize>, body: F) {
    run_loop(
        current_registry(),
        &Strategy::default(),
        range,
        Body::Chunks(&body),
    );
}

/// [`ThreadPool::parallel_for_chunks_with`] on the current pool.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// // The global pool can have a single thread (one CPU, or `PARBENCH_NUM_THREADS=1`), which
/// // passes the whole range at once; a pool of two keeps the strategy's chunks.
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let n = AtomicUsize::new(0);
/// let strategy = parbench_scheduler::Strategy::Dynamic { chunk: 7 };
/// pool.install(|| {
///     parbench_scheduler::parallel_for_chunks_with(&strategy, 0..100, |r| {
///         assert!(r.len() <= 7);
///         n.fetch_add(r.len(), Ordering::Relaxed);
///     });
/// });
/// assert_eq!(n.into_inner(), 100);
/// ```
pub fn parallel_for_chunks_with<F: Fn(Range<usize>) + Sync>(
    strategy: &Strategy,
    range: Range<usize>,
    body: F,
) {
    run_loop(current_registry(), strategy, range, Body::Chunks(&body));
}

/// [`ThreadPool::parallel_reduce`] on the current pool.
///
/// ```
/// let sum = parbench_scheduler::parallel_reduce(1..11, || 0, |i| i, |a, b| a + b);
/// assert_eq!(sum, 55);
/// ```
pub fn parallel_reduce<T, ID, M, C>(range: Range<usize>, identity: ID, map: M, combine: C) -> T
where
    T: Send,
    ID: Fn() -> T + Sync,
    M: Fn(usize) -> T + Sync,
    C: Fn(T, T) -> T + Sync,
{
    reduce::parallel_reduce(
        current_registry(),
        &Strategy::default(),
        range,
        identity,
        map,
        combine,
    )
}

/// [`ThreadPool::parallel_reduce_with`] on the current pool.
///
/// ```
/// let strategy = parbench_scheduler::Strategy::Guided { min_chunk: 2 };
/// let product = parbench_scheduler::parallel_reduce_with(&strategy, 1..6, || 1u64, |i| i as u64, |a, b| a * b);
/// assert_eq!(product, 120);
/// ```
pub fn parallel_reduce_with<T, ID, M, C>(
    strategy: &Strategy,
    range: Range<usize>,
    identity: ID,
    map: M,
    combine: C,
) -> T
where
    T: Send,
    ID: Fn() -> T + Sync,
    M: Fn(usize) -> T + Sync,
    C: Fn(T, T) -> T + Sync,
{
    reduce::parallel_reduce(current_registry(), strategy, range, identity, map, combine)
}

/// [`ThreadPool::scan_inclusive`] on the current pool.
///
/// ```
/// let mut v = [1, 2, 3, 4];
/// parbench_scheduler::scan_inclusive(&mut v, |a, b| a + b);
/// assert_eq!(v, [1, 3, 6, 10]);
/// ```
pub fn scan_inclusive<T, F>(data: &mut [T], op: F)
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    scan::scan_inclusive(current_registry(), &Strategy::default(), data, op);
}

/// [`ThreadPool::scan_inclusive_with`] on the current pool.
///
/// ```
/// let mut v = [5, 1, 1];
/// parbench_scheduler::scan_inclusive_with(&parbench_scheduler::Strategy::Static, &mut v, |a, b| a * b);
/// assert_eq!(v, [5, 5, 5]);
/// ```
pub fn scan_inclusive_with<T, F>(strategy: &Strategy, data: &mut [T], op: F)
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    scan::scan_inclusive(current_registry(), strategy, data, op);
}

/// [`ThreadPool::join`] on the current pool. Both closures always run, each exactly once; a
/// panic of either propagates once both have finished, `a`'s if both panic (see
/// [`ThreadPool::join`]).
///
/// ```
/// let (a, b) = parbench_scheduler::join(|| 1 + 1, || "two");
/// assert_eq!((a, b), (2, "two"));
/// ```
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    join::join(current_registry(), a, b)
}

/// [`ThreadPool::scope`] on the current pool.
///
/// ```
/// let mut out = [0; 3];
/// parbench_scheduler::scope(|s| {
///     for (i, slot) in out.iter_mut().enumerate() {
///         s.spawn(move |_| *slot = i * 10);
///     }
/// });
/// assert_eq!(out, [0, 10, 20]);
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    scope::scope(current_registry(), op)
}

/// [`ThreadPool::spawn`] on the current pool.
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// parbench_scheduler::spawn(move || tx.send(1).unwrap());
/// assert_eq!(rx.recv().unwrap(), 1);
/// ```
pub fn spawn<F: FnOnce() + Send + 'static>(task: F) {
    pool::spawn_in(current_registry(), task);
}

/// [`ThreadPool::spawn_on`] on the current pool.
///
/// # Errors
///
/// [`SpawnError::NoSuchThread`] if `index` is not below [`current_num_threads`]; `task` is then
/// dropped without running.
///
/// # Examples
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// parbench_scheduler::spawn_on(0, move || tx.send(7).unwrap()).unwrap();
/// assert_eq!(rx.recv().unwrap(), 7);
/// ```
pub fn spawn_on<F: FnOnce() + Send + 'static>(index: usize, task: F) -> Result<(), SpawnError> {
    pool::spawn_on_in(current_registry(), index, task)
}

/// The index of the calling thread in the pool it works for (`0..num_threads`), or `None` if it
/// is not a worker of a pool.
///
/// Unlike rayon's, this is `None` inside [`ThreadPool::install`] called from outside the pool,
/// and in the iterations an outside caller runs of its own parallel call: the calling thread
/// runs them itself, standing in for worker 0, instead of waiting for a worker (see the crate
/// docs). A worker of the pool that enters it again through another pool's work (a worker of
/// `a` in `b.install(|| a.install(..))`) runs there as a guest too, but is still that worker:
/// it sees its index. Two threads that run at the same time never see the same `Some(i)`.
///
/// ```
/// assert_eq!(parbench_scheduler::current_thread_index(), None);
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// // From outside, `install` runs its closure on the calling thread.
/// assert_eq!(pool.install(parbench_scheduler::current_thread_index), None);
/// // A worker has its index.
/// assert_eq!(pool.broadcast(|_| parbench_scheduler::current_thread_index()), [Some(0), Some(1)]);
/// ```
pub fn current_thread_index() -> Option<usize> {
    registry::Registry::current().and_then(|registry| registry.current_thread_index())
}

/// The number of threads of the current pool (the global pool outside any pool, built on first
/// use: see [`global_pool`] for its size). Inside a pool's start or exit handler, that pool.
///
/// ```
/// assert!(parbench_scheduler::current_num_threads() >= 1);
/// ```
pub fn current_num_threads() -> usize {
    current_registry().num_threads()
}

/// The crate README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
