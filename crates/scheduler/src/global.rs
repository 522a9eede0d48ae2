//! The lazily built global pool and the pool the free functions act on.
//!
//! The global pool is published only once a build of it has succeeded. Builds are serialised by
//! a lock instead of running inside `OnceLock::get_or_init`, whose initialiser cannot fail: a
//! failed [`ThreadPoolBuilder::build_global`] thus leaves the global pool unbuilt, and a
//! corrected retry (or the default pool, built on first use) takes its place.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::builder::{self, ThreadPoolBuilder};
use crate::error::BuildError;
use crate::pool::ThreadPool;
use crate::registry::Registry;

/// The global pool, set once, by a build that succeeded, while `BUILDING` is held.
static GLOBAL: OnceLock<ThreadPool> = OnceLock::new();
/// Held while the global pool is being built: one build at a time, and none after it is set.
static BUILDING: Mutex<()> = Mutex::new(());

thread_local! {
    /// Set while this thread runs a start handler of a [`ThreadPoolBuilder::build_global`], which
    /// holds `BUILDING` and waits for the handler: [`global_pool`] would wait for it in turn.
    static IN_GLOBAL_START_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `handler` as a start handler of the global pool's build (see `IN_GLOBAL_START_HANDLER`).
/// `handler` does not unwind (`run_handler` catches its panics).
pub(crate) fn as_global_start_handler(handler: impl FnOnce()) {
    IN_GLOBAL_START_HANDLER.with(|flag| flag.set(true));
    handler();
    IN_GLOBAL_START_HANDLER.with(|flag| flag.set(false));
}

/// Holds off other builds of the global pool while the caller checks for it and builds it.
fn lock_building() -> MutexGuard<'static, ()> {
    // A build that panicked (a `thread_name` closure) poisons the lock but set nothing: the state
    // it guards is still consistent.
    BUILDING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Builds the global pool from `builder` (see [`ThreadPoolBuilder::build_global`]).
pub(crate) fn init(builder: ThreadPoolBuilder) -> Result<(), BuildError> {
    let _building = lock_building();
    if GLOBAL.get().is_some() {
        return Err(BuildError::GlobalPoolAlreadyInitialized);
    }
    let pool = builder.build()?;
    // Unset until here: only set under the lock, and checked above.
    GLOBAL.get_or_init(|| pool);
    Ok(())
}

/// The default global pool: [`NUM_THREADS_ENV`](crate::NUM_THREADS_ENV) threads if it holds a
/// positive integer and that many can be started, else the available parallelism, else one
/// thread; the error of the one-thread build if even that fails.
fn default_pool() -> Result<ThreadPool, BuildError> {
    let mut tried = Vec::with_capacity(2);
    for count in builder::env_num_threads()
        .into_iter()
        .chain([builder::available_parallelism()])
    {
        // One thread is what the last build below makes: a count of 1 goes straight to it
        // (skipping it would try the available parallelism first).
        if count == 1 {
            break;
        }
        if tried.contains(&count) {
            continue;
        }
        tried.push(count);
        if let Ok(pool) = ThreadPoolBuilder::new().num_threads(count).build() {
            return Ok(pool);
        }
    }
    ThreadPoolBuilder::new().num_threads(1).build()
}

/// The global pool, built with the defaults on first use unless
/// [`build_global`](ThreadPoolBuilder::build_global) built it before.
///
/// The default global pool has [`NUM_THREADS_ENV`](crate::NUM_THREADS_ENV)
/// (`PARBENCH_NUM_THREADS`) threads if that variable holds a positive integer; if it does not,
/// or if that many threads cannot be started (the build fails, e.g. with
/// [`BuildError::TooManyThreads`]), it has [`std::thread::available_parallelism`] threads, and if
/// those cannot be started either, one thread. Nothing is printed: compare
/// [`current_num_threads`](crate::current_num_threads) with the request to detect a fallback.
///
/// # Panics
///
/// If not even a one-thread pool can be built (the operating system refuses to start a thread),
/// and in a start handler of [`build_global`](ThreadPoolBuilder::build_global): that pool becomes
/// the global pool only once its start handlers have returned, so waiting for it would never end.
///
/// # Examples
///
/// ```
/// let pool = parbench_scheduler::global_pool();
/// assert!(pool.num_threads() >= 1);
/// ```
pub fn global_pool() -> &'static ThreadPool {
    if let Some(pool) = GLOBAL.get() {
        return pool;
    }
    if IN_GLOBAL_START_HANDLER.with(Cell::get) {
        panic!(
            "parbench-scheduler: global_pool() called in a start handler of build_global: the \
             pool being built becomes the global pool only after its start handlers return \
             (the free functions act on it already)"
        );
    }
    let _building = lock_building();
    // Set if another thread built it while this one waited for the lock.
    if let Some(pool) = GLOBAL.get() {
        return pool;
    }
    match default_pool() {
        Ok(pool) => GLOBAL.get_or_init(|| pool),
        Err(error) => panic!("parbench-scheduler: cannot start even one worker thread: {error}"),
    }
}

/// The pool the calling thread is working for, else the global pool.
pub(crate) fn current_registry() -> &'static Registry {
    match Registry::current() {
        Some(registry) => registry,
        None => global_pool().registry(),
    }
}
