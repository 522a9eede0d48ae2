//! How many more threads this process can start: [`thread_capacity`].
//!
//! Asking the OS for more threads than it can serve does not always fail cleanly. `clone` may
//! succeed and the standard library's per-thread set-up (the guard page of the alternate signal
//! stack) then fail *inside the new thread*, where it can only abort the whole process ("failed
//! to set up alternative stack guard page", exit 134). On Linux that happens when the process
//! runs out of memory mappings: every thread costs about four (its stack and guard page, the
//! alternate signal stack and its guard page), and `vm.max_map_count` (65 530 by default) caps
//! them, so a process dies at roughly 16 000 threads. Pool builders therefore check the request
//! against every limit they can read and refuse with a typed error instead.
//!
//! The limits read (Linux; elsewhere nothing is known and nothing is refused):
//! memory mappings (`/proc/sys/vm/max_map_count` against `/proc/self/maps`), the system's task
//! limits (`/proc/sys/kernel/threads-max` and `pid_max` against the tasks in `/proc/loadavg`),
//! the cgroup's `pids.max`, `RLIMIT_NPROC`, `RLIMIT_AS` and, under strict overcommit
//! (`vm.overcommit_memory = 2`), the commit limit against the threads' stacks. They are a
//! snapshot: other threads of the process may take some of the room before the pool is built,
//! so a small reserve is kept, and a refusal that comes anyway surfaces as
//! [`BuildError::Spawn`](crate::BuildError::Spawn).

use std::fmt;
use std::fs;

/// Memory mappings one thread costs: stack + guard page, alternate signal stack + guard page.
const MAPPINGS_PER_THREAD: usize = 4;

/// Mappings kept free for everything else the process maps meanwhile (allocator arenas, files).
const RESERVED_MAPPINGS: usize = 512;

/// Tasks (threads) kept free below system-wide task limits, for the rest of the system.
const RESERVED_TASKS: usize = 64;

/// Stack size assumed when none is given: the standard library's default.
const DEFAULT_STACK: usize = 2 << 20;

/// The limit that bounds how many more threads this process can start.
///
/// ```
/// use parbench_scheduler::ThreadLimit;
/// let limit = ThreadLimit::MemoryMappings { max_map_count: 65_530, in_use: 30 };
/// assert!(limit.to_string().contains("vm.max_map_count = 65530"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThreadLimit {
    /// `vm.max_map_count`: every thread needs about four memory mappings.
    MemoryMappings {
        /// The system's limit.
        max_map_count: usize,
        /// Mappings this process uses now.
        in_use: usize,
    },
    /// `kernel.threads-max`: threads of the whole system.
    SystemThreads {
        /// The system's limit.
        threads_max: usize,
        /// Tasks running on the system now.
        in_use: usize,
    },
    /// `kernel.pid_max`: every thread takes a process id.
    ProcessIds {
        /// The largest pid plus one.
        pid_max: usize,
        /// Tasks running on the system now.
        in_use: usize,
    },
    /// The `pids.max` of this process's control group.
    CgroupPids {
        /// The group's limit.
        max: usize,
        /// Tasks in the group now.
        in_use: usize,
    },
    /// `RLIMIT_NPROC` (`ulimit -u`): processes and threads of this user.
    UserProcesses {
        /// The soft limit.
        limit: usize,
        /// Threads of this process (other processes of the user count too, but are not read).
        in_use: usize,
    },
    /// `RLIMIT_AS` (`ulimit -v`): this process's address space, which every thread's stack takes
    /// room in.
    AddressSpace {
        /// The soft limit in bytes.
        limit_bytes: u64,
        /// Bytes mapped now.
        in_use_bytes: u64,
    },
    /// Strict overcommit (`vm.overcommit_memory = 2`): stacks count against the commit limit.
    CommitLimit {
        /// `CommitLimit` of `/proc/meminfo`, in bytes.
        limit_bytes: u64,
        /// `Committed_AS`, in bytes.
        committed_bytes: u64,
    },
}

impl fmt::Display for ThreadLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadLimit::MemoryMappings {
                max_map_count,
                in_use,
            } => write!(
                f,
                "vm.max_map_count = {max_map_count} memory mappings, {in_use} in use, \
                 about {MAPPINGS_PER_THREAD} per thread"
            ),
            ThreadLimit::SystemThreads {
                threads_max,
                in_use,
            } => write!(
                f,
                "kernel.threads-max = {threads_max}, {in_use} tasks running"
            ),
            ThreadLimit::ProcessIds { pid_max, in_use } => {
                write!(f, "kernel.pid_max = {pid_max}, {in_use} tasks running")
            }
            ThreadLimit::CgroupPids { max, in_use } => {
                write!(f, "the cgroup's pids.max = {max}, {in_use} in use")
            }
            ThreadLimit::UserProcesses { limit, in_use } => write!(
                f,
                "RLIMIT_NPROC (ulimit -u) = {limit}, this process has {in_use} threads"
            ),
            ThreadLimit::AddressSpace {
                limit_bytes,
                in_use_bytes,
            } => write!(
                f,
                "RLIMIT_AS (ulimit -v) = {} MiB, {} MiB mapped",
                limit_bytes >> 20,
                in_use_bytes >> 20
            ),
            ThreadLimit::CommitLimit {
                limit_bytes,
                committed_bytes,
            } => write!(
                f,
                "strict overcommit: CommitLimit {} MiB, {} MiB committed",
                limit_bytes >> 20,
                committed_bytes >> 20
            ),
        }
    }
}

/// How many more threads this process can start now, and the limit that binds first.
///
/// ```
/// if let Some(capacity) = parbench_scheduler::thread_capacity(None) {
///     assert!(capacity.available() >= 1);
///     println!("at most {} more threads: {}", capacity.available(), capacity.limit());
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadCapacity {
    available: usize,
    limit: ThreadLimit,
}

impl ThreadCapacity {
    /// How many more threads can be started (after a small reserve for the rest of the process
    /// and the system).
    pub fn available(&self) -> usize {
        self.available
    }

    /// The limit that gives [`available`](Self::available).
    pub fn limit(&self) -> &ThreadLimit {
        &self.limit
    }
}

/// How many more threads with stacks of `stack_size` bytes (default: the standard library's
/// 2 MiB) this process can start now; `None` where the limits cannot be read (not Linux).
///
/// ```
/// let capacity = parbench_scheduler::thread_capacity(Some(8 << 20));
/// assert!(capacity.is_none() || capacity.unwrap().available() > 0);
/// ```
pub fn thread_capacity(stack_size: Option<usize>) -> Option<ThreadCapacity> {
    let stack = stack_size.unwrap_or(DEFAULT_STACK).max(1) as u64;
    limits(stack)
        .into_iter()
        .min_by_key(|capacity| capacity.available)
}

/// Every limit that can be read, each with the threads it leaves room for.
fn limits(stack: u64) -> Vec<ThreadCapacity> {
    let mut found = Vec::new();
    let mut add =
        |available: usize, limit: ThreadLimit| found.push(ThreadCapacity { available, limit });
    if let (Some(max_map_count), Some(in_use)) = (
        read_number("/proc/sys/vm/max_map_count"),
        fs::read_to_string("/proc/self/maps")
            .ok()
            .map(|maps| maps.lines().count()),
    ) {
        let free = max_map_count.saturating_sub(in_use + RESERVED_MAPPINGS);
        add(
            free / MAPPINGS_PER_THREAD,
            ThreadLimit::MemoryMappings {
                max_map_count,
                in_use,
            },
        );
    }
    if let Some(tasks) = system_tasks() {
        if let Some(threads_max) = read_number("/proc/sys/kernel/threads-max") {
            add(
                threads_max.saturating_sub(tasks + RESERVED_TASKS),
                ThreadLimit::SystemThreads {
                    threads_max,
                    in_use: tasks,
                },
            );
        }
        if let Some(pid_max) = read_number("/proc/sys/kernel/pid_max") {
            add(
                pid_max.saturating_sub(tasks + RESERVED_TASKS),
                ThreadLimit::ProcessIds {
                    pid_max,
                    in_use: tasks,
                },
            );
        }
    }
    if let Some((max, in_use)) = cgroup_pids() {
        add(
            max.saturating_sub(in_use),
            ThreadLimit::CgroupPids { max, in_use },
        );
    }
    let own_threads = fs::read_dir("/proc/self/task").map_or(1, |tasks| tasks.count());
    if let Some(limit) = soft_limit(Resource::Processes) {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        add(
            limit.saturating_sub(own_threads),
            ThreadLimit::UserProcesses {
                limit,
                in_use: own_threads,
            },
        );
    }
    if let (Some(limit_bytes), Some(in_use_bytes)) =
        (soft_limit(Resource::AddressSpace), status_bytes("VmSize:"))
    {
        let free = limit_bytes.saturating_sub(in_use_bytes);
        add(
            usize::try_from(free / stack).unwrap_or(usize::MAX),
            ThreadLimit::AddressSpace {
                limit_bytes,
                in_use_bytes,
            },
        );
    }
    if read_number("/proc/sys/vm/overcommit_memory") == Some(2) {
        if let (Some(limit_bytes), Some(committed_bytes)) = (
            meminfo_bytes("CommitLimit:"),
            meminfo_bytes("Committed_AS:"),
        ) {
            let free = limit_bytes.saturating_sub(committed_bytes);
            add(
                usize::try_from(free / stack).unwrap_or(usize::MAX),
                ThreadLimit::CommitLimit {
                    limit_bytes,
                    committed_bytes,
                },
            );
        }
    }
    found
}

fn read_number(path: &str) -> Option<usize> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Tasks (threads) on the whole system: the denominator of `/proc/loadavg`'s fourth field.
fn system_tasks() -> Option<usize> {
    let loadavg = fs::read_to_string("/proc/loadavg").ok()?;
    let field = loadavg.split_whitespace().nth(3)?;
    field.split_once('/')?.1.parse().ok()
}

/// `pids.max` and `pids.current` of this process's cgroup (v2, or v1's `pids` controller), if it
/// has a limit.
fn cgroup_pids() -> Option<(usize, usize)> {
    let membership = fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let directory = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}")
        } else if controllers.split(',').any(|c| c == "pids") {
            format!("/sys/fs/cgroup/pids{path}")
        } else {
            continue;
        };
        let max = fs::read_to_string(format!("{directory}/pids.max")).ok();
        let current = read_number(&format!("{directory}/pids.current"));
        if let (Some(max), Some(current)) = (max, current) {
            if let Ok(max) = max.trim().parse() {
                return Some((max, current));
            }
        }
    }
    None
}

/// A `kB` line of `/proc/meminfo`, in bytes.
fn meminfo_bytes(key: &str) -> Option<u64> {
    kilobyte_line(&fs::read_to_string("/proc/meminfo").ok()?, key)
}

/// A `kB` line of `/proc/self/status`, in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    kilobyte_line(&fs::read_to_string("/proc/self/status").ok()?, key)
}

fn kilobyte_line(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|line| line.starts_with(key))?;
    let kilobytes: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kilobytes.saturating_mul(1024))
}

enum Resource {
    Processes,
    AddressSpace,
}

/// A finite soft resource limit.
#[cfg(target_os = "linux")]
fn soft_limit(resource: Resource) -> Option<u64> {
    let resource = match resource {
        Resource::Processes => libc::RLIMIT_NPROC,
        Resource::AddressSpace => libc::RLIMIT_AS,
    };
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the duration of the call.
    let status = unsafe { libc::getrlimit(resource, &mut limit) };
    (status == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

#[cfg(not(target_os = "linux"))]
fn soft_limit(_: Resource) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kilobyte_lines_are_read_in_bytes() {
        let meminfo = "MemTotal:       24576000 kB\nCommitLimit:    12288000 kB\n";
        assert_eq!(
            kilobyte_line(meminfo, "CommitLimit:"),
            Some(12_288_000 * 1024)
        );
        assert_eq!(kilobyte_line(meminfo, "Committed_AS:"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_machine_reports_the_mapping_limit_and_room_for_a_pool() {
        let all = limits(DEFAULT_STACK as u64);
        assert!(
            all.iter()
                .any(|c| matches!(c.limit, ThreadLimit::MemoryMappings { .. })),
            "{all:?}"
        );
        let capacity = thread_capacity(None).expect("Linux limits are readable");
        assert!(capacity.available() >= 256, "{capacity:?}");
        // The tightest limit, read again: other threads of the test process may map or unmap a
        // few pages in between, so the counts may differ slightly, the binding limit not.
        let tightest = all.iter().min_by_key(|c| c.available).expect("limits");
        assert_eq!(
            std::mem::discriminant(&capacity.limit),
            std::mem::discriminant(&tightest.limit),
            "{all:?}"
        );
        assert!(
            capacity.available().abs_diff(tightest.available) <= 64,
            "{capacity:?} vs {all:?}"
        );
    }
}
