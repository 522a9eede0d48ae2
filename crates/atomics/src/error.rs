//! The one error type of this crate.
//!
//! Every fallible entry point (choosing a backend or a lock by name, building a lock for a backend
//! this CPU lacks, running the lock benchmark) returns [`Error`], so a caller such as the CLI can turn
//! any of them into one line for the user.

use crate::backend::Backend;

/// Why a lock, counter or benchmark could not be built or run.
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, Error};
///
/// let err = "arm".parse::<Backend>().unwrap_err();
/// assert!(matches!(err, Error::UnknownBackend { .. }));
/// assert_eq!(err.to_string(), "unknown backend `arm` (valid: lse, llsc, portable)");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A backend name that is not one of `lse`, `llsc`, `portable`.
    #[error("unknown backend `{name}` (valid: lse, llsc, portable)")]
    UnknownBackend {
        /// The name as given.
        name: String,
    },
    /// A lock name that is not one of the valid names listed in the message.
    #[error("unknown lock `{name}` (valid: {valid})")]
    UnknownLock {
        /// The name as given.
        name: String,
        /// The accepted names, comma separated.
        valid: &'static str,
    },
    /// The backend exists but this CPU (or this architecture) cannot run its instructions.
    #[error("backend `{backend}` is not available on this CPU: {reason}")]
    BackendUnavailable {
        /// The backend that was asked for.
        backend: Backend,
        /// Why it is unavailable, e.g. "the CPU lacks ARMv8.1 LSE atomics".
        reason: &'static str,
    },
    /// The lock benchmark was asked to run with zero threads.
    #[error("the lock benchmark needs at least one thread")]
    ZeroThreads,
    /// The lock benchmark was asked for more threads than there is memory to keep track of
    /// (checked before any thread starts).
    #[error("the lock benchmark cannot keep track of {threads} threads: {source}")]
    TooManyThreads {
        /// The thread count as given.
        threads: usize,
        /// Why their handles could not be allocated.
        source: std::collections::TryReserveError,
    },
    /// The operating system refused to start a benchmark thread.
    #[error("could not start a benchmark thread: {0}")]
    Spawn(#[from] std::io::Error),
}
