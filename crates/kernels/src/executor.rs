//! Executors: the one abstraction through which every kernel expresses its parallelism.
//!
//! A kernel never talks to a thread pool directly. It asks an [`Executor`] for a parallel loop over a
//! range ([`Executor::for_chunks`]; the body receives disjoint sub-ranges that cover the range exactly
//! once), for fork-join ([`Executor::join`]) or for one task per item ([`Executor::for_each_task`]).
//! Each scheduler under study implements the trait in its own file, so the same kernel code runs on
//! all of them and a sweep compares schedulers, not kernel implementations.
//!
//! The loop is chunked (the body gets a `Range`, not an index) because a dynamic call per index would
//! dominate fine-grained kernels; [`parallel_for`] and [`parallel_sum`] are the per-index
//! conveniences built on top.
//!
//! Loops that write an output slice use [`par_chunks_mut`]: each body gets its own `&mut` chunk,
//! through the executor's native slice API (parbench-scheduler's and rayon's `par_chunks_mut`,
//! scoped threads for `spawn`), so no kernel needs `unsafe` to write disjoint parts of a slice.
//!
//! Loops cannot fail, but the `spawn` executor may be refused a thread by the OS in the middle of
//! one. It then runs that chunk on the calling thread (so the loop still covers its range) and keeps
//! the error; kernels collect it with [`Executor::take_error`] after the timed section, so the cell
//! reports the error instead of a timing.

mod rayon_pool;
mod scheduler_pool;
mod seq;
mod spawn;
mod spec;

use std::any::Any;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::ops::Range;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use thiserror::Error;

use crate::affinity;

pub use rayon_pool::RayonExecutor;
pub use scheduler_pool::SchedulerExecutor;
pub use seq::SeqExecutor;
pub use spawn::SpawnExecutor;
pub use spec::SchedulerSpec;

/// A way to run parallel loops and tasks; every kernel runs on any implementation.
///
/// ```
/// use parbench_kernels::{Executor, SeqExecutor};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let exec = SeqExecutor::new();
/// let covered = AtomicUsize::new(0);
/// exec.for_chunks(0..100, &|r| {
///     covered.fetch_add(r.len(), Ordering::Relaxed);
/// });
/// assert_eq!(covered.into_inner(), 100);
/// ```
pub trait Executor: Send + Sync {
    /// Which scheduler this is.
    fn kind(&self) -> ExecutorKind;
    /// How many threads take part in parallel work (the calling thread included).
    fn threads(&self) -> usize;
    /// Parallel loop over `range`: `body` gets disjoint sub-ranges covering it exactly once.
    /// Calls may nest (a body may call `for_chunks` or `join` on the same executor).
    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync));
    /// Fork-join of two closures; both have run when it returns `Ok`.
    ///
    /// # Errors
    /// [`ExecutorError::Spawn`] if a task cannot be started (the `spawn` executor when the OS
    /// refuses a thread); then neither closure has run.
    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError>;
    /// Runs `task(i)` for every `i` in `0..n` in parallel (one task per item) and waits for all.
    ///
    /// The construct each scheduler uses (the task kernels nqueens, qap, floorplan, round and
    /// smt call this, nested several levels deep):
    /// * every parbench-scheduler strategy — the same way for all: a parallel loop over `0..n` with
    ///   that strategy (`parallel_for_chunks_with`), distributed by the strategy. Under `tree`,
    ///   an outermost call of at most 8 tasks per thread runs by lazy claims in index order
    ///   ([`parbench_scheduler::NestedCalls::Lazy`]: the tasks are claimed from a shared cursor,
    ///   and another thread joins through a stealable claim offer made only when the running
    ///   thread's deque is empty), and a nested call (from inside a task) inline while the running
    ///   thread's deque holds a task, then by lazy binary splitting
    ///   ([`parbench_scheduler::NestedCalls::LazyInline`]: once the deque is empty, the upper half
    ///   of what is left becomes a stealable task, again only when the deque is empty);
    /// * `rayon`: `(0..n).into_par_iter().try_for_each` inside the pool (rayon's adaptive splitting);
    /// * `spawn`: one OS thread per task, joined by the caller (`std::async(launch::async)`);
    /// * `seq`: a plain loop.
    ///
    /// # Errors
    /// The first error a task returned, or [`ExecutorError::Spawn`] if a task could not start.
    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError>;
    /// OS threads this executor created since it was built, beyond those it started with: only
    /// `spawn` creates threads while running (one per task or loop block); pools report 0.
    fn threads_created(&self) -> u64 {
        0
    }
    /// The error a loop swallowed since the last call (only `spawn` ever has one), if any.
    fn take_error(&self) -> Option<ExecutorError> {
        None
    }
    /// The scheduler's own start-up probe (time from call to each thread's first iteration,
    /// sorted; a loop of `per_thread` iterations of ~1 µs per thread), if this executor has one;
    /// `None` means "measure it through the loop".
    fn sched_time_probe(&self, per_thread: usize) -> Option<Vec<std::time::Duration>> {
        let _ = per_thread;
        None
    }
    /// The tree strategy's timespan, if this executor's strategy waits one before it offers
    /// balancing tasks (a pool's is calibrated when the pool is built, so it can differ from one
    /// executor to the next); `None` for every other executor and for a one-thread pool.
    ///
    /// ```
    /// use parbench_kernels::{Executor, ExecutorKind, PinPolicy, SchedulerExecutor};
    /// let tree = SchedulerExecutor::new(ExecutorKind::Tree, 2, PinPolicy::None)?;
    /// assert!(tree.timespan().is_some_and(|t| t > std::time::Duration::ZERO));
    /// let guided = SchedulerExecutor::new(ExecutorKind::Guided, 2, PinPolicy::None)?;
    /// assert_eq!(guided.timespan(), None);
    /// # Ok::<(), parbench_kernels::ExecutorError>(())
    /// ```
    fn timespan(&self) -> Option<std::time::Duration> {
        None
    }
    /// The timespan this executor's pool calibrated when it was built, for an executor whose
    /// [`timespan`](Executor::timespan) is the pool's; `None` otherwise. The timespan in use can
    /// be lower: a pool lowers a calibrated timespan its calls show to be too high.
    ///
    /// ```
    /// use parbench_kernels::{Executor, ExecutorKind, PinPolicy, SchedulerExecutor};
    /// let tree = SchedulerExecutor::new(ExecutorKind::Tree, 2, PinPolicy::None)?;
    /// let calibrated = tree.calibrated_timespan().expect("tree's pool calibrates");
    /// assert!(tree.timespan().is_some_and(|t| t <= calibrated));
    /// let guided = SchedulerExecutor::new(ExecutorKind::Guided, 2, PinPolicy::None)?;
    /// assert_eq!(guided.calibrated_timespan(), None);
    /// # Ok::<(), parbench_kernels::ExecutorError>(())
    /// ```
    fn calibrated_timespan(&self) -> Option<std::time::Duration> {
        None
    }
    /// This executor as [`Any`], so that [`par_chunks_mut`] can reach its native slice API.
    /// `None` (the default, for executors defined elsewhere) makes `par_chunks_mut` run through
    /// [`Executor::for_chunks`] instead.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

/// Calls `body(k, chunk)` for every `chunk_len`-element chunk of `data` (the last may be shorter;
/// a `chunk_len` of 0 acts as 1), in parallel on `exec`, each chunk exactly once.
///
/// The executors of this crate run it with their native slice API: parbench-scheduler's
/// `par_chunks_mut_with` with the executor's strategy, rayon's `par_chunks_mut`, one scoped
/// thread per block of chunks for `spawn`, a plain loop for `seq`. Any other executor gets it
/// through its [`Executor::for_chunks`] over the chunk indices (one uncontended lock per chunk
/// hands each chunk out).
///
/// ```
/// use parbench_kernels::{par_chunks_mut, ExecutorKind, PinPolicy};
///
/// for kind in ExecutorKind::ALL {
///     let exec = kind.build(2, PinPolicy::None)?;
///     let mut v = vec![0usize; 10];
///     par_chunks_mut(exec.as_ref(), &mut v, 3, |k, chunk| chunk.fill(k));
///     assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3], "{kind}");
/// }
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
pub fn par_chunks_mut<T: Send>(
    exec: &dyn Executor,
    data: &mut [T],
    chunk_len: usize,
    body: impl Fn(usize, &mut [T]) + Sync,
) {
    let chunk_len = chunk_len.max(1);
    if data.is_empty() {
        return;
    }
    let native = exec.as_any();
    if let Some(exec) = native.and_then(|any| any.downcast_ref::<SchedulerExecutor>()) {
        exec.par_chunks_mut(data, chunk_len, &body);
    } else if let Some(exec) = native.and_then(|any| any.downcast_ref::<RayonExecutor>()) {
        exec.par_chunks_mut(data, chunk_len, &body);
    } else if let Some(exec) = native.and_then(|any| any.downcast_ref::<SpawnExecutor>()) {
        exec.par_chunks_mut(data, chunk_len, &body);
    } else if native.is_some_and(|any| any.is::<SeqExecutor>()) {
        for (k, chunk) in data.chunks_mut(chunk_len).enumerate() {
            body(k, chunk);
        }
    } else {
        let chunks: Vec<Mutex<Option<&mut [T]>>> = data
            .chunks_mut(chunk_len)
            .map(|chunk| Mutex::new(Some(chunk)))
            .collect();
        exec.for_chunks(0..chunks.len(), &|indices| {
            for k in indices {
                let chunk = chunks[k]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                // `None` only if an executor broke its promise and handed out `k` twice.
                if let Some(chunk) = chunk {
                    body(k, chunk);
                }
            }
        });
    }
}

/// Runs `body(i)` for every `i` in `range` in parallel.
///
/// ```
/// use parbench_kernels::{parallel_for, SeqExecutor};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let sum = AtomicU64::new(0);
/// parallel_for(&SeqExecutor::new(), 0..10, |i| {
///     sum.fetch_add(i as u64, Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), 45);
/// ```
pub fn parallel_for(exec: &dyn Executor, range: Range<usize>, body: impl Fn(usize) + Sync) {
    exec.for_chunks(range, &|chunk| chunk.for_each(&body));
}

/// Sum (wrapping) of `chunk_sum(chunk)` over disjoint chunks covering `range`.
///
/// ```
/// use parbench_kernels::{parallel_sum, SeqExecutor};
///
/// let total = parallel_sum(&SeqExecutor::new(), 0..10, |chunk| chunk.map(|i| i as u64).sum());
/// assert_eq!(total, 45);
/// ```
pub fn parallel_sum(
    exec: &dyn Executor,
    range: Range<usize>,
    chunk_sum: impl Fn(Range<usize>) -> u64 + Sync,
) -> u64 {
    let total = AtomicU64::new(0);
    exec.for_chunks(range, &|chunk| {
        // Relaxed: the loop's completion (a join) orders these adds before the final read.
        total.fetch_add(chunk_sum(chunk), Ordering::Relaxed);
    });
    total.into_inner()
}

/// The schedulers a kernel can run on.
///
/// ```
/// use parbench_kernels::ExecutorKind;
///
/// let kind: ExecutorKind = "tree-fixed-grain".parse()?;
/// assert_eq!(kind, ExecutorKind::TreeFixedGrain);
/// assert_eq!(kind.name(), "tree-fixed-grain");
/// assert!("nope".parse::<ExecutorKind>().unwrap_err().to_string().contains("rayon"));
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExecutorKind {
    /// parbench-scheduler, tree distribution with timespan-delayed balancing (the default).
    Tree,
    /// parbench-scheduler tree without the timespan delay.
    TreeNoTimespan,
    /// parbench-scheduler tree with a fixed grain instead of adaptive splitting.
    TreeFixedGrain,
    /// parbench-scheduler tree whose nested calls halve lazily from the start
    /// ([`parbench_scheduler::NestedCalls::LazyHalves`], the default until 28 Nov 2026) instead
    /// of running inline while the thread's deque holds a task: the ablation of that rule.
    TreeNestedHalves,
    /// parbench-scheduler, one equal block per thread (OpenMP `static`).
    Static,
    /// parbench-scheduler, chunks taken from a shared counter (OpenMP `dynamic`).
    Dynamic,
    /// parbench-scheduler, shrinking chunks (OpenMP `guided`).
    Guided,
    /// parbench-scheduler, recursive halving down to a grain (TBB `simple_partitioner`).
    Simple,
    /// rayon with its default splitting.
    Rayon,
    /// A new OS thread per task, joined by its parent (`std::async(launch::async)`).
    Spawn,
    /// Everything on the calling thread.
    Seq,
}

impl ExecutorKind {
    /// Every executor, in display order.
    pub const ALL: [ExecutorKind; 11] = [
        ExecutorKind::Tree,
        ExecutorKind::TreeNoTimespan,
        ExecutorKind::TreeFixedGrain,
        ExecutorKind::TreeNestedHalves,
        ExecutorKind::Static,
        ExecutorKind::Dynamic,
        ExecutorKind::Guided,
        ExecutorKind::Simple,
        ExecutorKind::Rayon,
        ExecutorKind::Spawn,
        ExecutorKind::Seq,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Tree => "tree",
            ExecutorKind::TreeNoTimespan => "tree-no-timespan",
            ExecutorKind::TreeFixedGrain => "tree-fixed-grain",
            ExecutorKind::TreeNestedHalves => "tree-nested-halves",
            ExecutorKind::Static => "static",
            ExecutorKind::Dynamic => "dynamic",
            ExecutorKind::Guided => "guided",
            ExecutorKind::Simple => "simple",
            ExecutorKind::Rayon => "rayon",
            ExecutorKind::Spawn => "spawn",
            ExecutorKind::Seq => "seq",
        }
    }

    /// Whether this kind takes a chunk or grain (`name:N`, see [`SchedulerSpec`]): `dynamic`,
    /// `guided`, `simple` and `tree-fixed-grain`.
    pub fn takes_grain(self) -> bool {
        matches!(
            self,
            ExecutorKind::Dynamic
                | ExecutorKind::Guided
                | ExecutorKind::Simple
                | ExecutorKind::TreeFixedGrain
        )
    }

    /// Builds an executor of this kind with `threads` threads (its own pool, if it has one).
    ///
    /// `seq` ignores `threads` beyond checking it is not 0 and always reports one thread.
    ///
    /// ```
    /// use parbench_kernels::{ExecutorKind, PinPolicy};
    ///
    /// let exec = ExecutorKind::Spawn.build(4, PinPolicy::None)?;
    /// assert_eq!(exec.threads(), 4);
    /// assert!(ExecutorKind::Rayon.build(0, PinPolicy::None).is_err());
    /// # Ok::<(), parbench_kernels::ExecutorError>(())
    /// ```
    ///
    /// # Errors
    /// [`ExecutorError::ZeroThreads`] for 0 threads, [`ExecutorError::TooManyThreads`] for more
    /// threads than the process can start, [`ExecutorError::Build`] if the pool cannot be built.
    pub fn build(self, threads: usize, pin: PinPolicy) -> Result<Box<dyn Executor>, ExecutorError> {
        SchedulerSpec::from(self).build(threads, pin)
    }
}

impl fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExecutorKind {
    type Err = ExecutorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExecutorKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| ExecutorError::UnknownExecutor {
                name: s.to_owned(),
                valid: ExecutorKind::ALL.map(ExecutorKind::name).join(", "),
            })
    }
}

/// Where an executor's threads run.
///
/// ```
/// use parbench_kernels::{ExecutorKind, PinPolicy};
///
/// let exec = ExecutorKind::Tree.build(2, PinPolicy::Compact)?;
/// assert_eq!(exec.threads(), 2);
/// assert_eq!(PinPolicy::default(), PinPolicy::None);
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PinPolicy {
    /// Let the OS place threads.
    #[default]
    None,
    /// Thread `i` on core `i` (modulo the number of cores). A thread that calls into a
    /// parbench-scheduler pool from outside runs slot 0 of the call, standing in for worker 0:
    /// a harness that wants it placed too pins it with [`PinPolicy::pin_caller`].
    Compact,
}

impl PinPolicy {
    /// Pins the calling thread where this policy puts thread 0 — the lowest CPU it may run on,
    /// where a [`PinPolicy::Compact`] pool puts worker 0 — until the returned guard is dropped,
    /// which restores the affinity the thread had. `None` under [`PinPolicy::None`], or if the OS
    /// does not support pinning or refuses.
    ///
    /// Build executors before pinning: a pool built while its builder is pinned sees only that
    /// one CPU.
    ///
    /// Why a harness wants this: the calling thread runs slot 0 of a parbench-scheduler call
    /// (and times every executor's runs). Left to the OS while the workers are pinned, it can
    /// share a CPU with worker 1. On a VM whose kernel packs threads onto few vCPUs, that
    /// happened in about a third of the blocks of a sweep, and the two threads then ran one
    /// after the other.
    ///
    /// ```
    /// use parbench_kernels::PinPolicy;
    ///
    /// assert!(PinPolicy::None.pin_caller().is_none());
    /// let pinned = PinPolicy::Compact.pin_caller();
    /// assert!(pinned.is_some() || !cfg!(target_os = "linux"));
    /// drop(pinned); // the thread may run where it could before
    /// ```
    #[must_use = "the thread is unpinned when the guard is dropped"]
    pub fn pin_caller(self) -> Option<PinnedCaller> {
        match self {
            PinPolicy::None => None,
            PinPolicy::Compact => {
                let first = *affinity::allowed_cpus().first()?;
                affinity::Pinned::to(first).map(|pinned| PinnedCaller {
                    cpu: first,
                    _pinned: pinned,
                    _this_thread: PhantomData,
                })
            }
        }
    }
}

/// The calling thread pinned by [`PinPolicy::pin_caller`]; dropping it restores the thread's
/// previous affinity. Not `Send`: it must be dropped on the thread it pinned.
pub struct PinnedCaller {
    cpu: usize,
    _pinned: affinity::Pinned,
    _this_thread: PhantomData<*const ()>,
}

impl fmt::Debug for PinnedCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedCaller")
            .field("cpu", &self.cpu)
            .finish()
    }
}

impl PinnedCaller {
    /// The CPU the thread is pinned to.
    pub fn cpu(&self) -> usize {
        self.cpu
    }
}

/// Why an executor could not be built or could not run a task.
///
/// ```
/// use parbench_kernels::{ExecutorError, ExecutorKind, PinPolicy};
///
/// let error = ExecutorKind::Static.build(0, PinPolicy::None).err().unwrap();
/// assert!(matches!(error, ExecutorError::ZeroThreads));
/// assert_eq!(error.to_string(), "the number of threads must be at least 1");
/// ```
#[derive(Debug, Error)]
pub enum ExecutorError {
    /// A name that is not an executor.
    #[error("unknown scheduler `{name}`; valid schedulers: {valid}")]
    UnknownExecutor {
        /// The name given.
        name: String,
        /// Every valid name, comma-separated.
        valid: String,
    },
    /// An executor was asked for 0 threads.
    #[error("the number of threads must be at least 1")]
    ZeroThreads,
    /// The executor's pool could not be built.
    #[error("cannot build the {kind} executor: {reason}")]
    Build {
        /// Which executor.
        kind: ExecutorKind,
        /// What went wrong.
        reason: String,
    },
    /// The OS refused to start a thread for a task.
    #[error("the OS refused to start a thread: {0}")]
    Spawn(#[source] io::Error),
    /// A malformed `name:N` scheduler, or `:N` on a scheduler that takes no chunk or grain.
    #[error("bad scheduler `{spec}`: {reason}")]
    BadGrain {
        /// The scheduler as written.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// More threads were asked for than this process can start (see [`check_thread_count`]).
    #[error(
        "cannot run {requested} threads: this process can start about {available} more ({limit})"
    )]
    TooManyThreads {
        /// The requested thread count.
        requested: usize,
        /// How many more threads the process can start.
        available: usize,
        /// The limit that binds, in words.
        limit: String,
    },
}

/// Checks that this process can start `threads` more threads, so that no executor is asked for
/// a count the OS cannot serve (the standard library aborts the process when a thread it created
/// cannot set up its signal stack; see `parbench_scheduler::thread_capacity`). Where the limits
/// cannot be read, nothing is refused.
///
/// # Errors
/// [`ExecutorError::TooManyThreads`] naming the limit that binds.
///
/// # Examples
///
/// ```
/// use parbench_kernels::{check_thread_count, ExecutorError};
/// assert!(check_thread_count(2).is_ok());
/// if cfg!(target_os = "linux") {
///     // No Linux system hands out ten million threads (pid_max is at most 2^22).
///     assert!(matches!(check_thread_count(10_000_000), Err(ExecutorError::TooManyThreads { .. })));
/// }
/// ```
pub fn check_thread_count(threads: usize) -> Result<(), ExecutorError> {
    match parbench_scheduler::thread_capacity(None) {
        Some(capacity) if threads > capacity.available() => Err(ExecutorError::TooManyThreads {
            requested: threads,
            available: capacity.available(),
            limit: capacity.limit().to_string(),
        }),
        _ => Ok(()),
    }
}

/// The CPU the calling thread is running on, as the OS reports it (`sched_getcpu`); `None` where
/// the OS cannot say (outside Linux, or if the call fails). The answer may be stale as soon as it
/// is read: the OS can move the thread at any time.
pub(crate) fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        unsafe extern "C" {
            fn sched_getcpu() -> i32;
        }
        // SAFETY: sched_getcpu has no preconditions; it reads the calling thread's CPU.
        usize::try_from(unsafe { sched_getcpu() }).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}
