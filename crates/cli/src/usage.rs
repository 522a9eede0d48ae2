//! CPU time of this process from `getrusage(RUSAGE_SELF)`, for the share of a run spent in the
//! kernel on the process's behalf (system calls, page faults, thread creation) — the far-atomics
//! study's "syscall share" of `std::async` runs.

use std::time::Duration;

/// User and system CPU time of the whole process so far, with its context switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessUsage {
    /// CPU time in user mode.
    pub user: Duration,
    /// CPU time in the kernel on the process's behalf.
    pub system: Duration,
    /// Voluntary plus involuntary context switches.
    pub context_switches: u64,
}

impl ProcessUsage {
    /// The usage now; `None` if `getrusage` fails (it does not on Linux).
    ///
    /// ```
    /// let usage = parbench_cli::usage::ProcessUsage::now().unwrap();
    /// assert!(usage.user + usage.system > std::time::Duration::ZERO);
    /// ```
    pub fn now() -> Option<ProcessUsage> {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `usage` points to writable memory of the size `getrusage` fills; RUSAGE_SELF
        // is a valid `who`.
        let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if status != 0 {
            return None;
        }
        // SAFETY: getrusage succeeded, so it initialised the whole struct (and it was zeroed).
        let usage = unsafe { usage.assume_init() };
        let time = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        Some(ProcessUsage {
            user: time(usage.ru_utime),
            system: time(usage.ru_stime),
            context_switches: (usage.ru_nvcsw.max(0) + usage.ru_nivcsw.max(0)) as u64,
        })
    }

    /// The share of CPU time between `earlier` and `self` spent in the kernel, in percent; `None`
    /// when no CPU time passed (getrusage's resolution is coarse for very short runs).
    ///
    /// ```
    /// use parbench_cli::usage::ProcessUsage;
    /// use std::time::Duration;
    /// let a = ProcessUsage { user: Duration::ZERO, system: Duration::ZERO, context_switches: 0 };
    /// let b = ProcessUsage { user: Duration::from_millis(3), system: Duration::from_millis(1), context_switches: 2 };
    /// assert_eq!(b.system_share_since(&a), Some(25.0));
    /// assert_eq!(a.system_share_since(&a), None);
    /// ```
    pub fn system_share_since(&self, earlier: &ProcessUsage) -> Option<f64> {
        let system = self.system.saturating_sub(earlier.system).as_secs_f64();
        let user = self.user.saturating_sub(earlier.user).as_secs_f64();
        (system + user > 0.0).then(|| 100.0 * system / (system + user))
    }
}
