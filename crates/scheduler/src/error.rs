//! Typed errors of the scheduler.

/// Why a pool could not be built.
///
/// ```
/// use parbench_scheduler::{BuildError, Pinning, ThreadPoolBuilder};
/// let error = ThreadPoolBuilder::new().pin(Pinning::Cpus(Vec::new())).build().unwrap_err();
/// assert!(matches!(error, BuildError::EmptyCpuList));
/// assert_eq!(error.to_string(), "Pinning::Cpus needs at least one CPU");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A CPU named in `Pinning::Cpus` does not exist (or is not available to this process).
    #[error(
        "cannot pin to CPU {cpu}: it does not exist or is not available (available: {available:?})"
    )]
    NoSuchCpu {
        /// The requested CPU.
        cpu: usize,
        /// The CPUs this process may run on.
        available: Vec<usize>,
    },
    /// `Pinning::Cpus` was given an empty list.
    #[error("Pinning::Cpus needs at least one CPU")]
    EmptyCpuList,
    /// Pinning was requested but the platform cannot report or set CPU affinity.
    #[error("CPU pinning is not supported on this platform")]
    PinningUnsupported,
    /// The operating system refused to pin a worker to its CPU.
    #[error("the operating system refused to pin worker {index} to CPU {cpu}")]
    PinFailed {
        /// The worker.
        index: usize,
        /// Its CPU.
        cpu: usize,
    },
    /// The [`thread_name`](crate::ThreadPoolBuilder::thread_name) closure returned a name with a
    /// NUL byte, which a thread name cannot contain. Checked before any worker is started.
    #[error("the name of worker thread {index} contains a NUL byte: {name:?}")]
    InvalidThreadName {
        /// The worker the name was for.
        index: usize,
        /// The name the closure returned.
        name: String,
    },
    /// The operating system refused to create a worker thread.
    #[error("could not spawn worker thread {index}: {source}")]
    Spawn {
        /// The worker that could not be created.
        index: usize,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// More threads were requested than this process can start (see
    /// [`thread_capacity`](crate::thread_capacity)); starting them could abort the process.
    #[error(
        "cannot start {requested} worker threads: this process can start about {available} more ({limit})"
    )]
    TooManyThreads {
        /// The requested number of workers.
        requested: usize,
        /// How many more threads the process can start.
        available: usize,
        /// The limit that binds.
        limit: crate::ThreadLimit,
    },
    /// `build_global` was called after the global pool already existed.
    #[error("the global thread pool has already been initialized")]
    GlobalPoolAlreadyInitialized,
}

/// Why a task could not be spawned.
///
/// ```
/// use parbench_scheduler::{SpawnError, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let error = pool.spawn_on(1, || ()).unwrap_err();
/// assert_eq!(error.to_string(), "the pool has 1 threads, there is no thread with index 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// `spawn_on` named a worker the pool does not have.
    #[error("the pool has {num_threads} threads, there is no thread with index {index}")]
    NoSuchThread {
        /// The requested index.
        index: usize,
        /// The pool's size.
        num_threads: usize,
    },
}
