//! [`ThreadPool`]: the public face of a pool.

use std::ops::Range;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::SpawnError;
use crate::registry::Registry;
use crate::scope::Scope;
use crate::strategy::{Body, Strategy, run_loop};

/// A work-stealing thread pool whose parallel loops use the tree distribution by default.
///
/// Calls compose: a parallel algorithm called inside a body runs on the same threads. A thread
/// outside the pool that calls an algorithm takes part in executing it. Dropping the pool lets
/// queued `spawn`ed tasks finish and joins every worker — unless one of its own workers drops it
/// (a spawned task that owned it): then the drop returns at once, and the workers exit on their
/// own once every task has run.
///
/// ```
/// use parbench_scheduler::ThreadPoolBuilder;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let sum = AtomicU64::new(0);
/// pool.parallel_for(0..1000, |i| {
///     sum.fetch_add(i as u64, Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), 499_500);
/// ```
pub struct ThreadPool {
    registry: Arc<Registry>,
    handles: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.num_threads())
            .field("timespan", &self.timespan())
            .field("calibrated_timespan", &self.calibrated_timespan())
            .finish()
    }
}

impl ThreadPool {
    pub(crate) fn from_parts(registry: Arc<Registry>, handles: Vec<JoinHandle<()>>) -> Self {
        ThreadPool { registry, handles }
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Stops the workers of a pool under construction or being dropped, and joins them.
    ///
    /// The workers first run every queued `spawn`/`spawn_on` task, and the tasks those spawn (see
    /// `Registry::terminate`). The last handle of a pool may be dropped by one of its own workers
    /// (a spawned task that owned it). Then nobody is joined: the other workers wait for the
    /// running task — the one dropping the pool — to finish, and joining oneself would deadlock.
    /// The workers exit on their own once every task has run; each holds its own reference to the
    /// registry, so nothing they use is freed under them.
    pub(crate) fn shut_down(registry: &Registry, handles: Vec<JoinHandle<()>>) {
        registry.terminate();
        let me = std::thread::current().id();
        if handles.iter().any(|handle| handle.thread().id() == me) {
            return;
        }
        for handle in handles {
            // A worker never panics (jobs catch their panics); nothing to report if it did.
            let _ = handle.join();
        }
    }

    /// The number of worker threads.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    /// assert_eq!(pool.num_threads(), 3);
    /// ```
    pub fn num_threads(&self) -> usize {
        self.registry.num_threads()
    }

    /// The index of the calling thread in this pool, or `None` if it is not one of its workers —
    /// also while an outside thread runs `install`'s closure or its part of a parallel call (see
    /// [`crate::current_thread_index`]).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// assert_eq!(pool.current_thread_index(), None);
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.spawn(move || tx.send(parbench_scheduler::current_thread_index()).unwrap());
    /// // Spawned tasks run on workers (whichever takes them first).
    /// assert!(matches!(rx.recv().unwrap(), Some(0 | 1)));
    /// ```
    pub fn current_thread_index(&self) -> Option<usize> {
        self.registry.current_thread_index()
    }

    /// A racy picture of what the pool's threads are doing: each worker's state, the calls waiting
    /// on its stack, its queue lengths, and the pool's outside callers — for diagnosing a hang
    /// (print it from a watchdog thread). See [`PoolSnapshot`](crate::PoolSnapshot).
    pub fn snapshot(&self) -> crate::PoolSnapshot {
        self.registry.snapshot()
    }

    /// The tree strategy's timespan (calibrated at build time or fixed by the builder).
    ///
    /// A calibrated timespan above the floor of [`CALIBRATION_RANGE`](crate::CALIBRATION_RANGE)
    /// can go down later: the pool's outermost tree calls measure how long after the call its
    /// last share started, and every 16 calls, if four times the median of those starts is below
    /// the timespan, that becomes the timespan (never below the floor; it never goes up). A
    /// build during a slow stretch of the machine thus stops costing the pool's later calls. See
    /// [`Timespan::Calibrate`](crate::Timespan::Calibrate).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// assert!(pool.timespan() > std::time::Duration::ZERO);
    /// ```
    pub fn timespan(&self) -> Duration {
        self.registry.timespan.get()
    }

    /// The timespan this pool calibrated when it was built, or `None` if the builder fixed it
    /// ([`Timespan::Fixed`](crate::Timespan::Fixed)).
    ///
    /// [`timespan`](Self::timespan) is the value calls use now: the calibrated one, lowered by
    /// the pool's calls or replaced by [`set_timespan`](Self::set_timespan). This is what the
    /// calibration measured (clamped to [`CALIBRATION_RANGE`](crate::CALIBRATION_RANGE)), so a
    /// report can tell a timespan calibrated high and lowered since from one calibrated low.
    ///
    /// ```
    /// use parbench_scheduler::{ThreadPoolBuilder, Timespan};
    /// use std::time::Duration;
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let calibrated = pool.calibrated_timespan().unwrap();
    /// assert!(pool.timespan() <= calibrated);
    ///
    /// let fixed = ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .timespan(Timespan::Fixed(Duration::from_micros(30)))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(fixed.calibrated_timespan(), None);
    /// ```
    pub fn calibrated_timespan(&self) -> Option<Duration> {
        self.registry.timespan.calibrated()
    }

    /// Sets the tree strategy's timespan for later calls (it stays as set: the pool no longer
    /// lowers it from its calls).
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// pool.set_timespan(Duration::from_micros(50));
    /// assert_eq!(pool.timespan(), Duration::from_micros(50));
    /// ```
    pub fn set_timespan(&self, timespan: Duration) {
        self.registry.timespan.set(timespan);
    }

    /// Runs `task` on some worker, detached. From a worker it goes on that worker's own deque
    /// (stealable); from anywhere else — including an outside thread inside a call or
    /// [`install`](Self::install) of this pool — on the pool's injector.
    ///
    /// A panic in `task` goes to the builder's
    /// [`panic_handler`](crate::ThreadPoolBuilder::panic_handler). Without one it is printed by
    /// the panic hook and dropped, and the worker goes on (rayon aborts the process instead).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.spawn(move || tx.send(6 * 7).unwrap());
    /// assert_eq!(rx.recv().unwrap(), 42);
    /// ```
    pub fn spawn<F: FnOnce() + Send + 'static>(&self, task: F) {
        spawn_in(&self.registry, task);
    }

    /// Runs `task` on worker `index` (or on a thread that steals it from that worker's inbox).
    /// Panics are handled as in [`spawn`](Self::spawn).
    ///
    /// # Errors
    ///
    /// [`SpawnError::NoSuchThread`] if `index` is not below [`num_threads`](Self::num_threads);
    /// `task` is then dropped without running.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_scheduler::{SpawnError, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// assert_eq!(
    ///     pool.spawn_on(5, || ()),
    ///     Err(SpawnError::NoSuchThread { index: 5, num_threads: 2 })
    /// );
    /// ```
    pub fn spawn_on<F: FnOnce() + Send + 'static>(
        &self,
        index: usize,
        task: F,
    ) -> Result<(), SpawnError> {
        spawn_on_in(&self.registry, index, task)
    }

    /// Calls `body(i)` for every `i` in `range`, in parallel, with the default strategy (Tree).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let hits: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
    /// pool.parallel_for(0..64, |i| {
    ///     hits[i].fetch_add(1, Ordering::Relaxed);
    /// });
    /// assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    /// ```
    pub fn parallel_for<F: Fn(usize) + Sync>(&self, range: Range<usize>, body: F) {
        self.parallel_for_with(&Strategy::default(), range, body);
    }

    /// [`parallel_for`](Self::parallel_for) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let count = AtomicUsize::new(0);
    /// pool.parallel_for_with(&Strategy::Guided { min_chunk: 4 }, 0..100, |_| {
    ///     count.fetch_add(1, Ordering::Relaxed);
    /// });
    /// assert_eq!(count.into_inner(), 100);
    /// ```
    pub fn parallel_for_with<F: Fn(usize) + Sync>(
        &self,
        strategy: &Strategy,
        range: Range<usize>,
        body: F,
    ) {
        run_loop(&self.registry, strategy, range, Body::Index(&body));
    }

    /// Calls `body` on disjoint sub-ranges that together cover `range` exactly once: the chunks
    /// the strategy hands out (at most `chunk` iterations each under
    /// [`Strategy::Dynamic`]), except on a pool of one thread, which runs every call inline and
    /// passes the whole range at once.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let covered = AtomicUsize::new(0);
    /// pool.parallel_for_chunks(10..1010, |chunk| {
    ///     covered.fetch_add(chunk.len(), Ordering::Relaxed);
    /// });
    /// assert_eq!(covered.into_inner(), 1000);
    /// ```
    pub fn parallel_for_chunks<F: Fn(Range<usize>) + Sync>(&self, range: Range<usize>, body: F) {
        self.parallel_for_chunks_with(&Strategy::default(), range, body);
    }

    /// [`parallel_for_chunks`](Self::parallel_for_chunks) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let chunks = AtomicUsize::new(0);
    /// pool.parallel_for_chunks_with(&Strategy::Static, 0..10, |_| {
    ///     chunks.fetch_add(1, Ordering::Relaxed);
    /// });
    /// assert_eq!(chunks.into_inner(), 2); // one block per thread
    /// ```
    pub fn parallel_for_chunks_with<F: Fn(Range<usize>) + Sync>(
        &self,
        strategy: &Strategy,
        range: Range<usize>,
        body: F,
    ) {
        run_loop(&self.registry, strategy, range, Body::Chunks(&body));
    }

    /// Maps every index and combines the results; `combine` must be associative (it is applied
    /// in index order) and `identity()` its neutral element. Each chunk's result is combined with
    /// those of the finished chunks next to it as soon as both are done, on the threads of the
    /// call, so the partial results held at once stay a few per thread whatever the strategy.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let sum = pool.parallel_reduce(0..1000, || 0u64, |i| i as u64, |a, b| a + b);
    /// assert_eq!(sum, 499_500);
    /// // Order is kept: string concatenation is associative but not commutative.
    /// let s = pool.parallel_reduce(0..5, String::new, |i| i.to_string(), |a, b| a + &b);
    /// assert_eq!(s, "01234");
    /// ```
    pub fn parallel_reduce<T, ID, M, C>(
        &self,
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
        self.parallel_reduce_with(&Strategy::default(), range, identity, map, combine)
    }

    /// [`parallel_reduce`](Self::parallel_reduce) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let max = pool.parallel_reduce_with(&Strategy::Simple { grain: 8 }, 0..100, || 0, |i| i, usize::max);
    /// assert_eq!(max, 99);
    /// ```
    pub fn parallel_reduce_with<T, ID, M, C>(
        &self,
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
        crate::reduce::parallel_reduce(&self.registry, strategy, range, identity, map, combine)
    }

    /// Replaces every element by `op` applied to it and all elements before it (an inclusive
    /// prefix scan), in parallel: up-sweep then down-sweep. `op` must be associative.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![1u64; 10];
    /// pool.scan_inclusive(&mut v, |a, b| a + b);
    /// assert_eq!(v, (1..=10).collect::<Vec<u64>>());
    /// ```
    pub fn scan_inclusive<T, F>(&self, data: &mut [T], op: F)
    where
        T: Copy + Send + Sync,
        F: Fn(T, T) -> T + Sync,
    {
        self.scan_inclusive_with(&Strategy::default(), data, op);
    }

    /// [`scan_inclusive`](Self::scan_inclusive) with an explicit strategy for both sweeps.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![3i32, 1, 4, 1, 5];
    /// pool.scan_inclusive_with(&Strategy::Static, &mut v, i32::max);
    /// assert_eq!(v, [3, 3, 4, 4, 5]);
    /// ```
    pub fn scan_inclusive_with<T, F>(&self, strategy: &Strategy, data: &mut [T], op: F)
    where
        T: Copy + Send + Sync,
        F: Fn(T, T) -> T + Sync,
    {
        crate::scan::scan_inclusive(&self.registry, strategy, data, op);
    }

    /// Runs `a` and `b`, potentially in parallel, and returns both results.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// fn fib(pool: &parbench_scheduler::ThreadPool, n: u64) -> u64 {
    ///     if n < 2 { return n; }
    ///     let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    ///     a + b
    /// }
    /// assert_eq!(fib(&pool, 15), 610);
    /// ```
    ///
    /// # Panics
    ///
    /// Whatever happens, both closures run, each exactly once, as in rayon. If one of them
    /// panics, `join` panics with that closure's panic value once the other one has finished
    /// (`b` still runs after a panic of `a`, here or on the thread that stole it). If both
    /// panic, `join` panics with the value from `a`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let b_ran = AtomicBool::new(false);
    /// let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
    ///     pool.join(|| panic!("a"), || b_ran.store(true, Ordering::Relaxed))
    /// }));
    /// assert_eq!(result.unwrap_err().downcast_ref::<&str>(), Some(&"a"));
    /// assert!(b_ran.into_inner());
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        crate::join::join(&self.registry, a, b)
    }

    /// Creates a scope in which tasks borrowing from the caller's frame can be spawned; returns
    /// when `op` and all of them have finished. See [`Scope`].
    ///
    /// # Panics
    ///
    /// A panic stops neither `op` nor any task: once all have finished, `scope` panics with
    /// `op`'s panic if it panicked, else with the first panic of a task (rayon propagates one of
    /// them, not saying which).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let nodes = AtomicUsize::new(0);
    /// fn visit<'s>(s: &parbench_scheduler::Scope<'s>, depth: u32, nodes: &'s AtomicUsize) {
    ///     nodes.fetch_add(1, Ordering::Relaxed);
    ///     if depth > 0 {
    ///         s.spawn(move |s| visit(s, depth - 1, nodes));
    ///         s.spawn(move |s| visit(s, depth - 1, nodes));
    ///     }
    /// }
    /// pool.scope(|s| visit(s, 5, &nodes));
    /// assert_eq!(nodes.into_inner(), 63);
    /// ```
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        crate::scope::scope(&self.registry, op)
    }
}

/// Spawns a detached task for worker `index` of `registry` (see `Registry::spawn_detached`).
pub(crate) fn spawn_on_in<F: FnOnce() + Send + 'static>(
    registry: &Registry,
    index: usize,
    task: F,
) -> Result<(), SpawnError> {
    let num_threads = registry.num_threads();
    if index >= num_threads {
        return Err(SpawnError::NoSuchThread { index, num_threads });
    }
    registry.spawn_detached(Some(index), task);
    Ok(())
}

/// Spawns a detached task on `registry` (see `Registry::spawn_detached`).
pub(crate) fn spawn_in<F: FnOnce() + Send + 'static>(registry: &Registry, task: F) {
    registry.spawn_detached(None, task);
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        ThreadPool::shut_down(&self.registry, std::mem::take(&mut self.handles));
    }
}
