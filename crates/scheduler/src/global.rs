//! The lazily built global pool and the pool the free functions act on.

use std::sync::OnceLock;

use crate::builder::ThreadPoolBuilder;
use crate::error::BuildError;
use crate::pool::ThreadPool;
use crate::registry::Registry;

static GLOBAL: OnceLock<ThreadPool> = OnceLock::new();

/// Initializes the global pool from `builder` (see [`ThreadPoolBuilder::build_global`]).
pub(crate) fn init(builder: ThreadPoolBuilder) -> Result<(), BuildError> {
    let mut result = Err(BuildError::GlobalPoolAlreadyInitialized);
    GLOBAL.get_or_init(|| match builder.build() {
        Ok(pool) => {
            result = Ok(());
            pool
        }
        Err(error) => {
            result = Err(error);
            fallback_pool()
        }
    });
    result
}

/// A single-thread pool, used when the default global pool cannot be built (the OS refused the
/// threads): the free functions then still work, sequentially.
fn fallback_pool() -> ThreadPool {
    match ThreadPoolBuilder::new().num_threads(1).build() {
        Ok(pool) => pool,
        Err(error) => panic!("parbench-scheduler: cannot start even one worker thread: {error}"),
    }
}

/// The global pool, built with the defaults on first use.
///
/// ```
/// let pool = parbench_scheduler::global_pool();
/// assert!(pool.num_threads() >= 1);
/// ```
pub fn global_pool() -> &'static ThreadPool {
    GLOBAL.get_or_init(|| {
        ThreadPoolBuilder::new()
            .build()
            .unwrap_or_else(|_| fallback_pool())
    })
}

/// The pool the calling thread is working for, else the global pool.
pub(crate) fn current_registry() -> &'static Registry {
    match Registry::current() {
        Some(registry) => registry,
        None => global_pool().registry(),
    }
}
