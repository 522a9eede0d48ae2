//! Building a pool: [`ThreadPoolBuilder`], [`Pinning`] and [`Timespan`].

use std::any::Any;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::error::BuildError;
use crate::pool::ThreadPool;
use crate::registry::Registry;

/// The environment variable that sets the default number of threads (like `RAYON_NUM_THREADS`).
///
/// Read by [`ThreadPoolBuilder::build`] when no [`num_threads`](ThreadPoolBuilder::num_threads)
/// was given: a positive integer is the thread count (a count that cannot be started is then an
/// error of `build`, e.g. [`BuildError::TooManyThreads`]); anything else is ignored and the count
/// is [`std::thread::available_parallelism`]. The default global pool (see
/// [`global_pool`](crate::global_pool)) has no caller to report an error to, so it falls back
/// instead: if the variable's count cannot be started it has the available parallelism, and if
/// that cannot be started either, one thread.
pub const NUM_THREADS_ENV: &str = "PARBENCH_NUM_THREADS";

/// The default spin window: idle threads keep looking for work this long before they park.
///
/// 200 µs bridges the serial gap between back-to-back parallel calls — a loop, a reduction, the
/// next loop — so the next call finds its threads awake instead of paying a wake-up (tens of
/// microseconds on a VM). It bounds the CPU an idle pool burns to 0.2 ms per worker per idle
/// period; after it, parked workers use no CPU at all.
///
/// A call after a longer idle period pays for the wake-up, and on some VMs that is far more than
/// tens of microseconds: on this project's 2-vCPU VM (27 Nov 2026), after 2 ms of idleness the
/// second thread of a two-thread pool took part in only about half of the calls of 1.2 ms of
/// work (95–101 of 200 calls; when it did, it started after a median of ≈ 100 µs), so the
/// caller ran most calls alone; with `spin_before_park` at 3 ms it started in 199–200 of 200
/// after a median of 2.5 µs. The host apparently takes an idle vCPU back: with the worker pinned
/// to the other vCPU it started in 0–6 of 200. A latency-sensitive program with such gaps
/// between its calls can raise the window above them, at the cost of that much spinning per
/// idle period; `sched-time --param idle-us=N --param per-thread=M` measures it.
pub const DEFAULT_SPIN_BEFORE_PARK: Duration = Duration::from_micros(200);

/// Where worker threads run.
///
/// Only the pool's workers are pinned. A thread outside the pool that calls one of its
/// algorithms takes part in the call in worker 0's place (worker 0 steals nothing meanwhile) and
/// keeps its own affinity; pin it to worker 0's CPU to have every participant placed
/// (`parbench_kernels::PinPolicy::pin_caller` does that for a while, and `parbench-cli sweep
/// --pin compact` for each block of runs). Build the pool before pinning the caller: the CPUs
/// "this process may use" are those of the thread that calls `build`.
///
/// ```
/// use parbench_scheduler::{Pinning, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(1).pin(Pinning::Compact).build();
/// assert!(pool.is_ok() || cfg!(not(any(target_os = "linux", target_os = "windows"))));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Pinning {
    /// Leave placement to the operating system.
    #[default]
    None,
    /// Worker `i` on the `i`-th CPU this process may use (wrapping around).
    Compact,
    /// Worker `i` on CPU `cpus[i % cpus.len()]` (operating-system CPU numbers).
    Cpus(Vec<usize>),
}

/// How the tree strategy's timespan is chosen.
///
/// ```
/// use parbench_scheduler::{ThreadPoolBuilder, Timespan};
/// use std::time::Duration;
/// let pool = ThreadPoolBuilder::new()
///     .num_threads(2)
///     .timespan(Timespan::Fixed(Duration::from_micros(20)))
///     .build()
///     .unwrap();
/// assert_eq!(pool.timespan(), Duration::from_micros(20));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timespan {
    /// Measure it when the pool is built: a bounded run of [`crate::tune_timespan`] (at most
    /// [`CALIBRATION_ROUNDS`] measured rounds after 5 discarded warm-up rounds, and
    /// [`CALIBRATION_BUDGET`]; ≈ 1–20 ms, plus a one-time
    /// 4 ms clock-rate measurement per process on x86-64), clamped to [`CALIBRATION_RANGE`].
    /// Robust to a noisy machine: a run's result is the median of the 99th percentiles of five
    /// consecutive blocks of rounds, and a run whose budget ran out before half of its rounds
    /// (a new pool's threads sharing one CPU for a few milliseconds) or whose blocks disagree
    /// (its result above both the floor and twice its smallest block's) is repeated, at most
    /// three runs in all (so a build can take up to three budgets); the smallest result of the
    /// runs that measured half of their rounds counts.
    ///
    /// A calibrated timespan above the floor is then checked against the pool's own outermost
    /// tree calls (the time until a call's last share started, the quantity calibrated): every
    /// 16 calls, if four times the median of their starts is below the timespan, the timespan is
    /// lowered to that, never below the floor and never raised (see
    /// [`ThreadPool::timespan`](crate::ThreadPool::timespan)).
    #[default]
    Calibrate,
    /// Use this timespan; nothing is measured.
    Fixed(Duration),
}

/// Rounds of the build-time calibration.
pub const CALIBRATION_ROUNDS: usize = 500;
/// Wall-time budget of one run of the build-time calibration (a run cut short by it is repeated,
/// at most three runs in all; see [`Timespan::Calibrate`]).
pub const CALIBRATION_BUDGET: Duration = Duration::from_millis(30);
/// The calibrated timespan is clamped into this range. The timespan also sizes the balancing
/// tasks (each carries about one timespan of work), and a task costs ≈ 0.1–0.2 µs to create,
/// queue and complete: below 10 µs that overhead would exceed 1–2 % (on a lightly loaded pool the
/// measured start-up time is often only 1–2 µs). Above 500 µs one preempted calibration round
/// would delay balancing for every later call.
pub const CALIBRATION_RANGE: (Duration, Duration) =
    (Duration::from_micros(10), Duration::from_micros(500));

type ThreadName = Box<dyn FnMut(usize) -> String>;
/// A start or exit handler, shared by every worker.
type ThreadHandler = Arc<dyn Fn(usize) + Send + Sync>;
/// Where the panics of detached tasks go.
pub(crate) type PanicHandler = Box<dyn Fn(Box<dyn Any + Send>) + Send + Sync>;

/// Configures and builds a [`ThreadPool`], following rayon's `ThreadPoolBuilder`.
///
/// ```
/// use parbench_scheduler::ThreadPoolBuilder;
/// let pool = ThreadPoolBuilder::new()
///     .num_threads(2)
///     .thread_name(|i| format!("worker-{i}"))
///     .stack_size(4 << 20)
///     .build()
///     .unwrap();
/// assert_eq!(pool.num_threads(), 2);
/// ```
pub struct ThreadPoolBuilder {
    num_threads: Option<usize>,
    thread_name: Option<ThreadName>,
    stack_size: Option<usize>,
    pinning: Pinning,
    spin_before_park: Duration,
    timespan: Timespan,
    start_handler: Option<ThreadHandler>,
    exit_handler: Option<ThreadHandler>,
    panic_handler: Option<PanicHandler>,
    /// Set by [`build_global`](Self::build_global): the start handlers run marked as the global
    /// pool's (see `global::as_global_start_handler`).
    for_global: bool,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ThreadPoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field(
                "thread_name",
                &self.thread_name.as_ref().map(|_| "<closure>"),
            )
            .field("stack_size", &self.stack_size)
            .field("pinning", &self.pinning)
            .field("spin_before_park", &self.spin_before_park)
            .field("timespan", &self.timespan)
            .field(
                "start_handler",
                &self.start_handler.as_ref().map(|_| "<closure>"),
            )
            .field(
                "exit_handler",
                &self.exit_handler.as_ref().map(|_| "<closure>"),
            )
            .field(
                "panic_handler",
                &self.panic_handler.as_ref().map(|_| "<closure>"),
            )
            .finish()
    }
}

impl ThreadPoolBuilder {
    /// A builder with the defaults: threads from `PARBENCH_NUM_THREADS` or the available
    /// parallelism, no pinning, [`DEFAULT_SPIN_BEFORE_PARK`], a calibrated timespan.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().build().unwrap();
    /// assert!(pool.num_threads() >= 1);
    /// ```
    pub fn new() -> Self {
        ThreadPoolBuilder {
            num_threads: None,
            thread_name: None,
            stack_size: None,
            pinning: Pinning::None,
            spin_before_park: DEFAULT_SPIN_BEFORE_PARK,
            timespan: Timespan::Calibrate,
            start_handler: None,
            exit_handler: None,
            panic_handler: None,
            for_global: false,
        }
    }

    /// The number of worker threads. With 0, or without this call, the count is chosen as rayon
    /// chooses it: the environment variable `PARBENCH_NUM_THREADS` if it holds a positive integer
    /// (surrounding whitespace allowed; other values are ignored, as rayon ignores a bad
    /// `RAYON_NUM_THREADS`), else [`std::thread::available_parallelism`]. `build` refuses a count
    /// the process cannot start, wherever it came from (only the default global pool falls back to
    /// fewer threads; see [`NUM_THREADS_ENV`]).
    ///
    /// ```
    /// use parbench_scheduler::ThreadPoolBuilder;
    /// assert_eq!(ThreadPoolBuilder::new().num_threads(3).build().unwrap().num_threads(), 3);
    /// // 0 means "choose", as in rayon.
    /// let chosen = ThreadPoolBuilder::new().num_threads(0).build().unwrap().num_threads();
    /// assert_eq!(chosen, ThreadPoolBuilder::new().build().unwrap().num_threads());
    /// ```
    pub fn num_threads(mut self, num_threads: usize) -> Self {
        self.num_threads = Some(num_threads);
        self
    }

    /// Names worker `i` with `name(i)` (default `parbench-worker-{i}`).
    ///
    /// `build` calls `name` for every worker before it starts any thread: a name containing a NUL
    /// byte (which no thread name can hold) makes it fail with
    /// [`BuildError::InvalidThreadName`], and a panic in `name` propagates out of `build` with no
    /// thread started.
    ///
    /// ```
    /// use parbench_scheduler::{BuildError, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .thread_name(|i| format!("solver-{i}"))
    ///     .build()
    ///     .unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.spawn_on(0, move || tx.send(std::thread::current().name().map(String::from)).unwrap()).unwrap();
    /// assert_eq!(rx.recv().unwrap().as_deref(), Some("solver-0"));
    ///
    /// let bad = ThreadPoolBuilder::new().num_threads(2).thread_name(|i| format!("w\0{i}")).build();
    /// assert!(matches!(bad, Err(BuildError::InvalidThreadName { index: 0, .. })));
    /// ```
    pub fn thread_name<F: FnMut(usize) -> String + 'static>(mut self, name: F) -> Self {
        self.thread_name = Some(Box::new(name));
        self
    }

    /// The stack size of each worker thread, in bytes (default: the standard library's).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(1).stack_size(8 << 20).build();
    /// assert!(pool.is_ok());
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Pins workers to CPUs; `build` checks that every named CPU exists.
    ///
    /// ```
    /// use parbench_scheduler::{BuildError, Pinning, ThreadPoolBuilder};
    /// let missing = ThreadPoolBuilder::new().num_threads(1).pin(Pinning::Cpus(vec![1 << 20])).build();
    /// assert!(matches!(missing, Err(BuildError::NoSuchCpu { .. } | BuildError::PinningUnsupported)));
    /// ```
    pub fn pin(mut self, pinning: Pinning) -> Self {
        self.pinning = pinning;
        self
    }

    /// How long idle threads keep spinning and stealing before they park
    /// (default [`DEFAULT_SPIN_BEFORE_PARK`]; `Duration::ZERO` parks at once).
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .spin_before_park(Duration::ZERO) // lowest idle cost, slower back-to-back calls
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(pool.parallel_reduce(0..10, || 0, |i| i, |a, b| a + b), 45);
    /// ```
    pub fn spin_before_park(mut self, duration: Duration) -> Self {
        self.spin_before_park = duration;
        self
    }

    /// How the tree strategy's timespan is chosen (default [`Timespan::Calibrate`]).
    ///
    /// ```
    /// use parbench_scheduler::{ThreadPoolBuilder, Timespan, CALIBRATION_RANGE};
    /// let pool = ThreadPoolBuilder::new().num_threads(2).timespan(Timespan::Calibrate).build().unwrap();
    /// assert!(pool.timespan() >= CALIBRATION_RANGE.0 && pool.timespan() <= CALIBRATION_RANGE.1);
    /// ```
    pub fn timespan(mut self, timespan: Timespan) -> Self {
        self.timespan = timespan;
        self
    }

    /// Calls `handler(i)` on worker `i` when it starts, before it runs any task (`build` returns
    /// after every worker's start handler has returned). A panic in it goes to the
    /// [`panic_handler`](Self::panic_handler) (else it is printed and dropped) and the worker
    /// starts normally. Start handlers run once every worker has been started and pinned, so a
    /// pool whose build fails runs no start (and no exit) handler.
    ///
    /// As in rayon, the handler runs as worker `i` of the new pool:
    /// [`current_thread_index`](crate::current_thread_index) is `Some(i)`,
    /// [`current_num_threads`](crate::current_num_threads) is this pool's size, and the other free
    /// functions act on this pool. They never touch the global pool, so a start handler given to
    /// [`build_global`](Self::build_global) may call them too (the pool's timespan is calibrated
    /// only after the start handlers, so a tree loop run in one does not balance by it).
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use std::sync::Arc;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let record = Arc::clone(&seen);
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .start_handler(move |index| {
    ///         let me = parbench_scheduler::current_thread_index();
    ///         let size = parbench_scheduler::current_num_threads();
    ///         record.lock().unwrap().push((index, me, size));
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let mut seen = seen.lock().unwrap().clone();
    /// seen.sort_unstable();
    /// assert_eq!(seen, [(0, Some(0), 2), (1, Some(1), 2)]);
    /// # drop(pool);
    /// ```
    pub fn start_handler<H: Fn(usize) + Send + Sync + 'static>(mut self, handler: H) -> Self {
        self.start_handler = Some(Arc::new(handler));
        self
    }

    /// Calls `handler(i)` on worker `i` when it exits (the pool was dropped and no work is left);
    /// dropping the pool returns after every exit handler has returned. Panics are handled as in
    /// [`start_handler`](Self::start_handler).
    ///
    /// The handler runs as worker `i` of the pool, as a start handler does (`current_thread_index`
    /// is `Some(i)`, the free functions act on this pool). Every worker keeps taking work until
    /// every worker's exit handler has returned, so a parallel call, broadcast or spawn made in
    /// an exit handler runs to completion before the workers exit.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let exited = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&exited);
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .exit_handler(move |_index| {
    ///         counter.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// drop(pool);
    /// assert_eq!(exited.load(Ordering::Relaxed), 2);
    /// ```
    pub fn exit_handler<H: Fn(usize) + Send + Sync + 'static>(mut self, handler: H) -> Self {
        self.exit_handler = Some(Arc::new(handler));
        self
    }

    /// Sends the panic payload of a task started with [`ThreadPool::spawn`],
    /// [`ThreadPool::spawn_on`] or [`crate::spawn`] (and of start and exit handlers) to
    /// `handler`, on the worker that ran it. Panics of parallel loops, `join`, `scope` and the
    /// slice algorithms are not sent here: they propagate to their caller.
    ///
    /// Without a panic handler such a panic is printed by the panic hook and dropped; the worker
    /// goes on (rayon aborts the process instead). A panic in the handler itself is dropped too.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .panic_handler(move |payload| {
    ///         let message = payload.downcast_ref::<&str>().copied().unwrap_or("?");
    ///         tx.lock().unwrap().send(message.to_string()).unwrap();
    ///     })
    ///     .build()
    ///     .unwrap();
    /// pool.spawn(|| panic!("lost task"));
    /// assert_eq!(rx.recv().unwrap(), "lost task");
    /// ```
    pub fn panic_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Box::new(handler));
        self
    }

    /// The number of threads this builder would create.
    fn resolved_num_threads(&self) -> usize {
        match self.num_threads {
            Some(0) | None => default_num_threads(),
            Some(count) => count,
        }
    }

    /// Builds the pool: starts (and pins) every worker, runs the start handlers, then calibrates
    /// the timespan if asked to. When it fails, no worker thread is left running and no handler
    /// has run.
    ///
    /// # Errors
    ///
    /// Before any thread is created:
    /// - [`BuildError::TooManyThreads`] for more threads than the process can start (see
    ///   [`thread_capacity`](crate::thread_capacity)): the standard library aborts the whole
    ///   process when a thread it created cannot set up its signal stack;
    /// - [`BuildError::EmptyCpuList`], [`BuildError::NoSuchCpu`] or
    ///   [`BuildError::PinningUnsupported`] for a [`pin`](Self::pin) setting that cannot be met;
    /// - [`BuildError::InvalidThreadName`] for a [`thread_name`](Self::thread_name) with a NUL
    ///   byte.
    ///
    /// While the workers start (those started are stopped and joined before `build` returns):
    /// - [`BuildError::Spawn`] if the operating system refuses to create a worker thread;
    /// - [`BuildError::PinFailed`] if it refuses to pin a worker to its CPU.
    ///
    /// # Panics
    ///
    /// Only if the [`thread_name`](Self::thread_name) closure panics: the panic propagates, and
    /// since every name is computed before the first thread starts, no thread is left behind.
    /// Panics of start handlers do not propagate (see [`start_handler`](Self::start_handler)).
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_scheduler::ThreadPoolBuilder;
    /// match ThreadPoolBuilder::new().num_threads(2).build() {
    ///     Ok(pool) => assert_eq!(pool.num_threads(), 2),
    ///     Err(error) => eprintln!("cannot build the pool: {error}"),
    /// }
    /// ```
    pub fn build(self) -> Result<ThreadPool, BuildError> {
        let num_threads = self.resolved_num_threads();
        if let Some(capacity) = crate::capacity::thread_capacity(self.stack_size) {
            if num_threads > capacity.available() {
                return Err(BuildError::TooManyThreads {
                    requested: num_threads,
                    available: capacity.available(),
                    limit: capacity.limit().clone(),
                });
            }
        }
        let cpus = resolve_pinning(&self.pinning, num_threads)?;
        let names = thread_names(self.thread_name, num_threads)?;
        let (registry, deques) = Registry::new(num_threads, self.spin_before_park);
        if let Some(handler) = self.panic_handler {
            registry.set_panic_handler(handler);
        }
        let registry = Arc::new(registry);
        // Two steps, so that a pool whose build fails runs no handler and no worker loop: each
        // worker pins itself and reports, then waits for the go (a dropped sender means the
        // build failed) before its start handler and its loop. The registry counts on all
        // `num_threads` workers reaching their loops (see `Registry::worker_main`).
        let (pinned_tx, pinned_rx) = mpsc::channel();
        let (started_tx, started_rx) = mpsc::channel();
        let mut handles = Vec::with_capacity(num_threads);
        let mut go = Vec::with_capacity(num_threads);
        for ((index, deque), thread_name) in deques.into_iter().enumerate().zip(names) {
            let mut builder = thread::Builder::new().name(thread_name);
            if let Some(bytes) = self.stack_size {
                builder = builder.stack_size(bytes);
            }
            let worker_registry = Arc::clone(&registry);
            let cpu = cpus.as_ref().map(|cpus| cpus[index]);
            let (pinned, started) = (pinned_tx.clone(), started_tx.clone());
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let (start, exit) = (self.start_handler.clone(), self.exit_handler.clone());
            let for_global = self.for_global;
            let spawned = builder.spawn(move || {
                let is_pinned = cpu.is_none_or(|cpu| {
                    core_affinity::set_for_current(core_affinity::CoreId { id: cpu })
                });
                let _ = pinned.send((index, cpu, is_pinned));
                if go_rx.recv().is_err() {
                    return;
                }
                worker_registry.worker_main(
                    index,
                    &deque,
                    || {
                        let run = || run_handler(&worker_registry, start.as_deref(), index);
                        if for_global {
                            crate::global::as_global_start_handler(run);
                        } else {
                            run();
                        }
                        let _ = started.send(());
                    },
                    || run_handler(&worker_registry, exit.as_deref(), index),
                );
            });
            match spawned {
                Ok(handle) => {
                    handles.push(handle);
                    go.push(go_tx);
                }
                Err(source) => {
                    drop(go);
                    ThreadPool::shut_down(&registry, handles);
                    return Err(BuildError::Spawn { index, source });
                }
            }
        }
        drop((pinned_tx, started_tx));
        let mut failure = None;
        for _ in 0..num_threads {
            match pinned_rx.recv() {
                Ok((index, Some(cpu), false)) => {
                    failure = Some(BuildError::PinFailed { index, cpu })
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if let Some(error) = failure {
            drop(go);
            ThreadPool::shut_down(&registry, handles);
            return Err(error);
        }
        for go in go {
            // Cannot fail: the worker waits for it (it has reported its pinning).
            let _ = go.send(());
        }
        for _ in 0..num_threads {
            if started_rx.recv().is_err() {
                break;
            }
        }
        let pool = ThreadPool::from_parts(registry, handles);
        match self.timespan {
            Timespan::Fixed(duration) => pool.registry().timespan.set(duration),
            Timespan::Calibrate => {
                let measured = crate::tune::calibrate(
                    &pool,
                    CALIBRATION_ROUNDS,
                    CALIBRATION_BUDGET,
                    CALIBRATION_RANGE.0,
                );
                pool.registry().timespan.set_calibrated(
                    measured.clamp(CALIBRATION_RANGE.0, CALIBRATION_RANGE.1),
                    CALIBRATION_RANGE.0,
                );
            }
        }
        Ok(pool)
    }

    /// Builds the global pool used by the free functions of this crate.
    ///
    /// The start handlers run before this returns, as workers of the new pool, so the free
    /// functions called in them act on it (see [`start_handler`](Self::start_handler)). The pool
    /// is not the global pool until this returns: [`global_pool`](crate::global_pool) called in
    /// one of these start handlers panics (the panic goes where a start handler's panics go, and
    /// the build goes on) instead of waiting for this build, which waits for the handler. A start
    /// handler must not wait for another thread that calls a free function outside any pool
    /// either: until this build returns, that thread waits for it.
    ///
    /// # Errors
    ///
    /// [`BuildError::GlobalPoolAlreadyInitialized`] if the global pool exists already (built by
    /// an earlier `build_global`, or with the defaults by the first use of a free function or
    /// [`global_pool`](crate::global_pool)), else any error of [`build`](Self::build). A failed
    /// `build_global` leaves the global pool unbuilt: a corrected retry can succeed, and otherwise
    /// the first use builds the default pool. Concurrent calls are serialised; exactly one of them
    /// can succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_scheduler::{BuildError, Pinning, ThreadPoolBuilder};
    /// // A failed build leaves the global pool unbuilt...
    /// let no_cpu = ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .pin(Pinning::Cpus(Vec::new()))
    ///     .build_global();
    /// assert!(matches!(no_cpu, Err(BuildError::EmptyCpuList)));
    /// // ...so the corrected one succeeds; it is the only one that does.
    /// assert!(ThreadPoolBuilder::new().num_threads(2).build_global().is_ok());
    /// assert!(matches!(
    ///     ThreadPoolBuilder::new().num_threads(2).build_global(),
    ///     Err(BuildError::GlobalPoolAlreadyInitialized)
    /// ));
    /// assert_eq!(parbench_scheduler::current_num_threads(), 2);
    /// ```
    pub fn build_global(mut self) -> Result<(), BuildError> {
        self.for_global = true;
        crate::global::init(self)
    }
}

/// Every worker's name, computed before any thread is started: a `thread_name` closure that panics
/// then unwinds out of `build` with no worker to stop, and a name no thread can have is a
/// [`BuildError::InvalidThreadName`] instead of a panic in `std::thread::Builder::spawn`.
fn thread_names(
    mut name: Option<ThreadName>,
    num_threads: usize,
) -> Result<Vec<String>, BuildError> {
    (0..num_threads)
        .map(|index| {
            let thread_name = match name.as_mut() {
                Some(name) => name(index),
                None => format!("parbench-worker-{index}"),
            };
            if thread_name.contains('\0') {
                return Err(BuildError::InvalidThreadName {
                    index,
                    name: thread_name,
                });
            }
            Ok(thread_name)
        })
        .collect()
}

/// Runs a start or exit handler on worker `index`, sending a panic to the pool's panic handler.
fn run_handler(registry: &Registry, handler: Option<&(dyn Fn(usize) + Send + Sync)>, index: usize) {
    let Some(handler) = handler else {
        return;
    };
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| handler(index))) {
        if let Some(panic_handler) = registry.panic_handler() {
            // Dropped if it panics too: the worker must start (or exit) either way.
            let _ = panic::catch_unwind(AssertUnwindSafe(|| panic_handler(payload)));
        }
    }
}

/// The default thread count: `PARBENCH_NUM_THREADS` if positive, else the available parallelism.
pub(crate) fn default_num_threads() -> usize {
    env_num_threads().unwrap_or_else(available_parallelism)
}

/// The thread count `PARBENCH_NUM_THREADS` asks for, if it holds a positive integer.
pub(crate) fn env_num_threads() -> Option<usize> {
    std::env::var(NUM_THREADS_ENV)
        .ok()
        .and_then(|value| value.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
}

/// [`std::thread::available_parallelism`], or 1 if it cannot be determined.
pub(crate) fn available_parallelism() -> usize {
    thread::available_parallelism().map_or(1, |n| n.get())
}

/// Maps each worker to its CPU, checking that every CPU exists.
fn resolve_pinning(
    pinning: &Pinning,
    num_threads: usize,
) -> Result<Option<Vec<usize>>, BuildError> {
    let requested = match pinning {
        Pinning::None => return Ok(None),
        Pinning::Compact => None,
        Pinning::Cpus(cpus) if cpus.is_empty() => return Err(BuildError::EmptyCpuList),
        Pinning::Cpus(cpus) => Some(cpus),
    };
    let mut available: Vec<usize> = core_affinity::get_core_ids()
        .ok_or(BuildError::PinningUnsupported)?
        .into_iter()
        .map(|core| core.id)
        .collect();
    available.sort_unstable();
    let cpus: Vec<usize> = match requested {
        None => available.clone(),
        Some(cpus) => {
            if let Some(&cpu) = cpus
                .iter()
                .find(|cpu| available.binary_search(cpu).is_err())
            {
                return Err(BuildError::NoSuchCpu { cpu, available });
            }
            cpus.clone()
        }
    };
    if cpus.is_empty() {
        return Err(BuildError::PinningUnsupported);
    }
    Ok(Some(
        (0..num_threads).map(|i| cpus[i % cpus.len()]).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::{BuildError, ThreadPoolBuilder, Timespan};

    /// Runs `scenario` on its own thread and returns its result; fails the test if it has not
    /// finished within 60 s (a watchdog: a regressed deadlock fails instead of hanging).
    fn within_a_minute<R: Send + 'static>(scenario: impl FnOnce() -> R + Send + 'static) -> R {
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(scenario());
        });
        match done_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the scenario hung (60 s)"),
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the scenario panicked"),
        }
    }

    /// What a handler saw: its argument, `current_thread_index()`, `current_num_threads()`.
    type Seen = Arc<Mutex<Vec<(usize, Option<usize>, usize)>>>;

    fn record(seen: &Seen) -> impl Fn(usize) + Send + Sync + 'static {
        let seen = Arc::clone(seen);
        move |index| {
            let me = crate::current_thread_index();
            let size = crate::current_num_threads();
            seen.lock().unwrap().push((index, me, size));
        }
    }

    fn sorted(seen: &Seen) -> Vec<(usize, Option<usize>, usize)> {
        let mut seen = seen.lock().unwrap().clone();
        seen.sort_unstable();
        seen
    }

    #[test]
    fn handlers_run_as_workers_of_their_own_pool() {
        // Three threads: not the size of the global pool on this project's 2-CPU machines, so a
        // handler that asked the global pool would be caught by the count too.
        let (started, exited): (Seen, Seen) = Default::default();
        let pool = ThreadPoolBuilder::new()
            .num_threads(3)
            .timespan(Timespan::Fixed(Duration::from_micros(5)))
            .start_handler(record(&started))
            .exit_handler(record(&exited))
            .build()
            .unwrap();
        let expected = [(0, Some(0), 3), (1, Some(1), 3), (2, Some(2), 3)];
        assert_eq!(sorted(&started), expected);
        drop(pool);
        assert_eq!(sorted(&exited), expected);
    }

    #[test]
    fn handlers_can_broadcast_and_loop_on_their_own_pool() {
        // What a handler got from a broadcast and a reduction on the current pool.
        type Results = Arc<Mutex<Vec<(usize, Vec<usize>, usize)>>>;
        fn on_pool(results: &Results) -> impl Fn(usize) + Send + Sync + 'static {
            let results = Arc::clone(results);
            move |index| {
                let indices = crate::broadcast(|ctx| ctx.index());
                let sum = crate::parallel_reduce(0..1000, || 0, |i| i, |a, b| a + b);
                results.lock().unwrap().push((index, indices, sum));
            }
        }
        // An exit handler's broadcast needs every worker of the dropped pool: none may have left
        // before it returns (else this hangs, and the watchdog fails the test).
        let (at_start, at_exit) = within_a_minute(|| {
            let (at_start, at_exit): (Results, Results) = Default::default();
            let pool = ThreadPoolBuilder::new()
                .num_threads(3)
                .timespan(Timespan::Fixed(Duration::from_micros(5)))
                .start_handler(on_pool(&at_start))
                .exit_handler(on_pool(&at_exit))
                .build()
                .unwrap();
            drop(pool);
            let take = |results: Results| {
                let mut results = results.lock().unwrap().clone();
                results.sort_unstable();
                results
            };
            (take(at_start), take(at_exit))
        });
        let expected: Vec<_> = (0..3).map(|i| (i, vec![0, 1, 2], 499_500)).collect();
        assert_eq!(at_start, expected);
        assert_eq!(at_exit, expected);
    }

    #[test]
    fn a_thread_name_with_a_nul_byte_is_an_error() {
        let built = ThreadPoolBuilder::new()
            .num_threads(3)
            .thread_name(|i| match i {
                1 => "worker\0one".to_string(),
                _ => format!("worker-{i}"),
            })
            .build();
        match built {
            Err(error @ BuildError::InvalidThreadName { index: 1, .. }) => assert_eq!(
                error.to_string(),
                r#"the name of worker thread 1 contains a NUL byte: "worker\0one""#
            ),
            other => panic!("expected InvalidThreadName for worker 1, got {other:?}"),
        }
    }
}
