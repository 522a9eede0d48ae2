//! Opening one counter on the calling thread, with errors the caller can act on.
//!
//! Every counter is opened alone (never in a `perf_event::Group`): perf-event 0.4.9 keeps a
//! group member whose open failed in the group's bookkeeping and the next `Group::read()`
//! panics, and alone each counter also carries its own `time_enabled` / `time_running`, so
//! multiplexing is corrected per counter. The price is that counters multiplexed onto the PMU
//! at different moments are not measured over exactly the same instructions; for the steady
//! loops profiled here the scaled estimates agree.
//!
//! `pid = 0, cpu = -1` (perf-event's default) observes the *calling thread* only, wherever it
//! runs, so counters must be opened on the thread they observe.
//!
//! perf-event 0.4.9 opens counters without `PERF_FLAG_FD_CLOEXEC`: every command started later
//! inherited every counter open then, took descriptor slots under its limit with them (a shell
//! started under a low limit then failed to load libc) and kept them open as long as it ran.
//! Each counter is made close-on-exec right after it opened; a process another thread starts
//! in between still inherits it.

use perf_event::events::{Cache, CacheOp};
use perf_event::hooks::sys::bindings::PERF_TYPE_RAW;
use std::os::fd::AsRawFd;

use perf_event::{Builder, Counter};

use super::ProfileError;
use super::events::{EventSource, EventSpec};

/// A count with the time the counter was enabled and actually on the PMU.
///
/// ```
/// use parbench_mapper::perf::Reading;
/// let half_time = Reading { count: 100, time_enabled: 10, time_running: 5 };
/// assert_eq!(half_time.scaled(), Some(200.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Raw count.
    pub count: u64,
    /// Nanoseconds the counter was enabled.
    pub time_enabled: u64,
    /// Nanoseconds it was scheduled on the PMU.
    pub time_running: u64,
}

impl Reading {
    /// The multiplexing-corrected estimate `count × time_enabled / time_running`; the raw
    /// count when the counter ran the whole time; `None` when it never ran (no estimate exists).
    ///
    /// ```
    /// use parbench_mapper::perf::Reading;
    /// assert_eq!(Reading { count: 7, time_enabled: 0, time_running: 0 }.scaled(), Some(7.0));
    /// assert_eq!(Reading { count: 0, time_enabled: 9, time_running: 0 }.scaled(), None);
    /// ```
    pub fn scaled(&self) -> Option<f64> {
        if self.time_running == self.time_enabled {
            Some(self.count as f64)
        } else if self.time_running == 0 {
            None
        } else {
            Some(self.count as f64 * self.time_enabled as f64 / self.time_running as f64)
        }
    }
}

/// An open, disabled counter observing the thread that opened it.
///
/// ```
/// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
/// let mut counter = EventCounter::open_on_current_thread(&SOFTWARE_EVENTS[0])?;
/// counter.enable()?;
/// let busy: u64 = (0..100_000u64).map(std::hint::black_box).sum();
/// counter.disable()?;
/// assert!(busy > 0 && counter.read()?.count > 0);
/// # Ok::<(), parbench_mapper::perf::ProfileError>(())
/// ```
#[derive(Debug)]
pub struct EventCounter {
    spec: EventSpec,
    counter: Counter,
}

impl EventCounter {
    /// Opens `spec` for the calling thread: user space only (perf-event's default) for hardware
    /// events; software events also count in the kernel where the kernel permits it.
    ///
    /// # Errors
    /// [`ProfileError::Unsupported`] when the kernel has no such event here (`ENOENT`,
    /// `ENOSYS` under qemu-user, `EOPNOTSUPP`, `ENODEV`: no PMU, or a PMU without this code),
    /// [`ProfileError::PermissionDenied`] for `EACCES`/`EPERM`, [`ProfileError::Os`] otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::perf::{event_table, CpuFamily, EventCounter, ProfileError};
    /// let cycles = event_table(CpuFamily::Other).into_iter().find(|e| e.name == "cycles").unwrap();
    /// match EventCounter::open_on_current_thread(&cycles) {
    ///     Ok(_) => println!("this machine has a PMU"),
    ///     Err(ProfileError::Unsupported { event }) => assert_eq!(event, "cycles"),
    ///     Err(other) => println!("cannot count cycles: {other}"),
    /// }
    /// ```
    pub fn open_on_current_thread(spec: &EventSpec) -> Result<EventCounter, ProfileError> {
        Self::open_with(spec, |builder| builder)
    }

    /// Opens `spec` on the calling thread *for the programs it is about to start*: disabled,
    /// inherited by every thread and process created from now on (`inherit`), and enabled in a
    /// child when it calls `exec` (`enable_on_exec`). The caller's own work is not counted; a
    /// started command's threads and child processes are, each with its own inherited copy of the
    /// counter, and their counts add up into this one as they exit. Read it after the command
    /// has exited. No other thread of the caller may start processes meanwhile.
    ///
    /// # Errors
    /// As [`open_on_current_thread`](Self::open_on_current_thread).
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
    /// let mut counter = EventCounter::open_for_next_exec(&SOFTWARE_EVENTS[0])?;
    /// std::process::Command::new("true").status().unwrap();
    /// assert!(counter.read()?.count > 0); // the task clock of `true`, not of this thread
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn open_for_next_exec(spec: &EventSpec) -> Result<EventCounter, ProfileError> {
        Self::open_with(spec, |mut builder| {
            builder.enabled(false).inherit(true).enable_on_exec(true);
            builder
        })
    }

    /// Opens `spec` on another thread, `tid` (any process's, as far as the caller may observe
    /// it), counting from now on; its count stays readable after the thread has exited.
    ///
    /// # Errors
    /// As [`open_on_current_thread`](Self::open_on_current_thread); a thread that does not exist
    /// is [`ProfileError::Os`] with `ESRCH`.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
    /// let mut child = std::process::Command::new("sleep").arg("1").spawn().unwrap();
    /// let mut counter = EventCounter::open_on_thread(&SOFTWARE_EVENTS[0], child.id() as i32)?;
    /// child.kill().unwrap();
    /// child.wait().unwrap();
    /// let _ = counter.read()?; // still readable
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn open_on_thread(
        spec: &EventSpec,
        tid: libc::pid_t,
    ) -> Result<EventCounter, ProfileError> {
        Self::open_with(spec, |builder| {
            let mut builder = builder.observe_pid(tid);
            builder.enabled(true);
            builder
        })
    }

    fn open_with(
        spec: &EventSpec,
        configure: impl Fn(Builder<'static>) -> Builder<'static>,
    ) -> Result<EventCounter, ProfileError> {
        let build = |include_kernel| configure(Self::builder(spec, include_kernel)).build();
        let counter = match spec.source {
            // Context switches and migrations happen in the kernel: a user-only software counter
            // (perf-event's default) never sees them. Count kernel time where the kernel allows
            // it (root, or perf_event_paranoid <= 1) and fall back to user-only otherwise.
            EventSource::Software(_) => build(true).or_else(|_| build(false)),
            _ => build(false),
        }
        .map_err(|error| ProfileError::from_open(spec.name, error))?;
        close_on_exec(&counter).map_err(|source| ProfileError::Os {
            event: spec.name.to_owned(),
            source,
        })?;
        Ok(EventCounter {
            spec: *spec,
            counter,
        })
    }

    fn builder(spec: &EventSpec, include_kernel: bool) -> Builder<'static> {
        let mut builder = match spec.source {
            EventSource::Software(software) => Builder::new().kind(software),
            EventSource::Hardware(hardware) => Builder::new().kind(hardware),
            EventSource::CacheRead { cache, result } => Builder::new().kind(Cache {
                which: cache,
                operation: CacheOp::READ,
                result,
            }),
            EventSource::Raw(code) => {
                let mut builder = Builder::new();
                builder.attrs_mut().type_ = PERF_TYPE_RAW;
                builder.attrs_mut().config = code;
                builder
            }
        };
        if include_kernel {
            builder.include_kernel();
        }
        builder
    }

    /// The event this counter counts.
    ///
    /// ```
    /// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
    /// let counter = EventCounter::open_on_current_thread(&SOFTWARE_EVENTS[1])?;
    /// assert_eq!(counter.spec().name, "context-switches");
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn spec(&self) -> &EventSpec {
        &self.spec
    }

    /// Starts counting.
    ///
    /// ```
    /// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
    /// let mut counter = EventCounter::open_on_current_thread(&SOFTWARE_EVENTS[0])?;
    /// counter.enable()?;
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    ///
    /// # Errors
    /// [`ProfileError::Os`] when the ioctl fails.
    pub fn enable(&mut self) -> Result<(), ProfileError> {
        let name = self.spec.name;
        self.counter
            .enable()
            .map_err(|e| ProfileError::from_open(name, e))
    }

    /// Stops counting; a disabled counter keeps its count.
    ///
    /// ```
    /// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
    /// let mut counter = EventCounter::open_on_current_thread(&SOFTWARE_EVENTS[0])?;
    /// counter.enable()?;
    /// counter.disable()?;
    /// let frozen = counter.read()?.count;
    /// std::hint::black_box((0..10_000u64).sum::<u64>());
    /// assert_eq!(counter.read()?.count, frozen);
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    ///
    /// # Errors
    /// [`ProfileError::Os`] when the ioctl fails.
    pub fn disable(&mut self) -> Result<(), ProfileError> {
        let name = self.spec.name;
        self.counter
            .disable()
            .map_err(|e| ProfileError::from_open(name, e))
    }

    /// Reads the count and its enabled/running times.
    ///
    /// ```
    /// use parbench_mapper::perf::{EventCounter, SOFTWARE_EVENTS};
    /// let mut never_enabled = EventCounter::open_on_current_thread(&SOFTWARE_EVENTS[0])?;
    /// assert_eq!(never_enabled.read()?.count, 0);
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    ///
    /// # Errors
    /// [`ProfileError::Os`] when the read fails.
    pub fn read(&mut self) -> Result<Reading, ProfileError> {
        let name = self.spec.name;
        let raw = self
            .counter
            .read_count_and_time()
            .map_err(|e| ProfileError::from_open(name, e))?;
        Ok(Reading {
            count: raw.count,
            time_enabled: raw.time_enabled,
            time_running: raw.time_running,
        })
    }
}

/// Sets `FD_CLOEXEC` on `counter`'s descriptor, so that commands started later do not inherit it.
fn close_on_exec(counter: &Counter) -> std::io::Result<()> {
    let fd = counter.as_raw_fd();
    // SAFETY: fcntl on a descriptor `counter` owns and keeps open; F_GETFD/F_SETFD only read and
    // set its descriptor flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::SOFTWARE_EVENTS;

    fn is_close_on_exec(counter: &EventCounter) -> bool {
        // SAFETY: F_GETFD on a descriptor the counter owns and keeps open.
        let flags = unsafe { libc::fcntl(counter.counter.as_raw_fd(), libc::F_GETFD) };
        assert!(flags >= 0, "{}", std::io::Error::last_os_error());
        flags & libc::FD_CLOEXEC != 0
    }

    #[test]
    fn every_way_of_opening_a_counter_leaves_it_out_of_started_commands() {
        let spec = &SOFTWARE_EVENTS[0];
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let opened = [
            EventCounter::open_on_current_thread(spec),
            EventCounter::open_for_next_exec(spec),
            EventCounter::open_on_thread(spec, child.id() as libc::pid_t),
        ];
        child.kill().unwrap();
        child.wait().unwrap();
        for counter in opened {
            assert!(is_close_on_exec(&counter.unwrap()));
        }
    }
}
