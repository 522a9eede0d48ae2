//! Per-thread performance counters (Linux `perf_event_open` through the `perf-event` crate).
//!
//! Layout: [`events`] says *what* to count on each CPU family, [`counter`] opens one counter on
//! the calling thread with typed errors, [`metrics`] turns totals into the latency study's
//! metrics, and [`profile`] runs a workload on N threads — each opening its own counters — and
//! stores the result as JSON.
//!
//! A machine without a PMU (this project's CI VM: hardware events fail with `ENOENT`) or a
//! qemu-user emulator (`ENOSYS`) still profiles: software events always work, every hardware
//! event that fails is listed in [`Profile::unavailable`] with the kernel's reason, and every
//! metric that needed it is `None` with the missing counters named. Opening a single hardware
//! counter directly returns [`ProfileError::Unsupported`]; nothing here panics on a missing PMU.

pub mod command;
pub mod counter;
mod descriptors;
pub mod events;
pub mod metrics;
pub mod profile;
pub mod study_metrics;
pub mod thread_counters;
mod workload_mix;

use std::io;
use std::path::PathBuf;

pub use crate::corun::launch::raise_descriptor_limit;
pub use command::{CommandProfile, profile_command};
pub use counter::{EventCounter, Reading};
pub use events::{
    CpuFamily, EventSource, EventSpec, Quantity, SOFTWARE_EVENTS, event_table, int_class_is_derived,
};
pub use metrics::{Metrics, QuantityTotals, SMT_FRIENDLY_RULE, SmtClass};
pub use profile::{
    EventRecord, MixSource, Profile, ProfileRequest, ThreadProfile, UnavailableEvent,
    profile_threads,
};
pub use study_metrics::{StallResource, StudyMetrics, nominal_frequency_mhz, tail_latency_events};
pub use thread_counters::{ThreadCounters, probe_events};

/// Errors from counters and profiles.
///
/// ```
/// use parbench_mapper::perf::{profile_threads, ProfileError, ProfileRequest};
/// let err = profile_threads(&ProfileRequest::software_only("x", 0), |_| {}).unwrap_err();
/// assert!(matches!(err, ProfileError::NoThreads));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The kernel has no such event on this machine (no PMU, emulator, or unknown raw code).
    #[error("perf event {event} is not supported on this machine")]
    Unsupported {
        /// Event name.
        event: String,
    },
    /// The kernel refused (see `/proc/sys/kernel/perf_event_paranoid`).
    #[error(
        "perf event {event}: permission denied (lower kernel.perf_event_paranoid or run as root)"
    )]
    PermissionDenied {
        /// Event name.
        event: String,
    },
    /// Any other system-call failure.
    #[error("perf event {event}: {source}")]
    Os {
        /// Event name.
        event: String,
        /// The OS error.
        source: io::Error,
    },
    /// Profiling needs at least one thread.
    #[error("the number of threads must be at least 1")]
    NoThreads,
    /// The profiled workload panicked on one thread.
    #[error("the workload panicked on thread {thread}")]
    WorkloadPanicked {
        /// The thread index.
        thread: usize,
    },
    /// A profile file could not be read.
    #[error("profile file {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A profile file is not valid profile JSON.
    #[error("profile file {} is not a valid profile: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A command to profile could not be started.
    #[error("cannot run `{command}`: {source}")]
    CommandFailed {
        /// The command line.
        command: String,
        /// The OS error.
        source: io::Error,
    },
    /// Too few file descriptors for the counters that must be open at once, even with the soft
    /// limit raised to the hard one: one per event for a command's totals
    /// ([`profile_command`]), one per event on every thread ([`profile_threads`]), one to probe
    /// the events.
    #[error(
        "{needed} file descriptors are needed to count the events, but the limit is {limit} \
         (ulimit -n; hard limit {hard}) with {open} open"
    )]
    DescriptorLimit {
        /// Descriptors needed: those open and the counters (for a command, also a few spare for
        /// starting it).
        needed: u64,
        /// The soft limit (`RLIMIT_NOFILE`) after trying to raise it.
        limit: u64,
        /// The hard limit.
        hard: u64,
        /// Descriptors open in this process.
        open: u64,
    },
    /// The profile lacks the class counters needed for an instruction mix.
    #[error("the profile has no instruction-class counts ({}) — use a profile recorded on hardware with a PMU, or the kernel's declared mix", missing.join(", "))]
    NoInstructionMix {
        /// The unavailable class quantities.
        missing: Vec<String>,
    },
}

impl ProfileError {
    /// Classifies a failed `perf_event_open` (or counter ioctl/read) of `event`.
    ///
    /// ```
    /// use parbench_mapper::perf::ProfileError;
    /// let no_pmu = std::io::Error::from_raw_os_error(libc::ENOENT);
    /// assert!(matches!(ProfileError::from_open("cycles", no_pmu), ProfileError::Unsupported { .. }));
    /// ```
    pub fn from_open(event: &str, error: io::Error) -> ProfileError {
        let event = event.to_owned();
        match error.raw_os_error() {
            Some(libc::ENOENT | libc::ENOSYS | libc::EOPNOTSUPP | libc::ENODEV) => {
                ProfileError::Unsupported { event }
            }
            Some(libc::EACCES | libc::EPERM) => ProfileError::PermissionDenied { event },
            _ => ProfileError::Os {
                event,
                source: error,
            },
        }
    }
}
