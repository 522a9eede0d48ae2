//! Processes and threads of running programs, seen from outside through `/proc`, and the CPU
//! affinity of each thread.
//!
//! Nothing here needs the program's cooperation (no `LD_PRELOAD`, no source change): a
//! process's threads are the entries of `/proc/PID/task`, its parent and process group are
//! fields of `/proc/PID/stat`, and `sched_setaffinity` pins any thread by its id (TID) as long
//! as the caller may (same user, or `CAP_SYS_NICE`). `Cpus_allowed_list` in
//! `/proc/PID/task/TID/status` is what the kernel will let the thread run on, which is how the
//! tests check a placement from outside.
//!
//! Descendants are found by scanning `/proc/*/stat` for parent and process-group ids, because
//! `/proc/PID/task/TID/children` only exists on kernels built with `CONFIG_PROC_CHILDREN`.

use std::fs;
use std::io;

/// A process or thread id, as the kernel numbers them.
pub type Pid = i32;

/// Errors of affinity calls and `/proc` reads.
///
/// ```
/// use parbench_mapper::tasks::{pin_thread, TaskError};
/// // pid_max is at most 2^22, so this thread cannot exist.
/// assert!(matches!(pin_thread(i32::MAX, 0), Err(TaskError::Gone { .. })));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The thread or process does not exist (any more).
    #[error("thread {tid} does not exist (it may have exited)")]
    Gone {
        /// The id asked for.
        tid: Pid,
    },
    /// The caller may not change this thread's affinity (another user's, without `CAP_SYS_NICE`).
    #[error("not permitted to set the CPU affinity of thread {tid} (another user's thread?)")]
    NotPermitted {
        /// The id asked for.
        tid: Pid,
    },
    /// The CPU is not one the thread may use (outside its cpuset, or offline).
    #[error("CPU {cpu} is not available to thread {tid} (offline, or outside its cpuset)")]
    CpuNotAllowed {
        /// The id asked for.
        tid: Pid,
        /// The CPU.
        cpu: usize,
    },
    /// Any other failure of a system call or `/proc` read.
    #[error("thread {tid}: {source}")]
    Os {
        /// The id asked for.
        tid: Pid,
        /// The OS error.
        source: io::Error,
    },
}

impl TaskError {
    fn from_os(tid: Pid, cpu: Option<usize>, error: io::Error) -> TaskError {
        match (error.raw_os_error(), cpu) {
            (Some(libc::ESRCH), _) => TaskError::Gone { tid },
            (Some(libc::EPERM), _) => TaskError::NotPermitted { tid },
            (Some(libc::EINVAL), Some(cpu)) => TaskError::CpuNotAllowed { tid, cpu },
            _ => TaskError::Os { tid, source: error },
        }
    }
}

/// The fields of `/proc/PID/stat` the mapper uses.
///
/// ```
/// let me = parbench_mapper::tasks::read_process_stat(std::process::id() as i32).unwrap();
/// assert_eq!(me.pid, std::process::id() as i32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessStat {
    /// Process id.
    pub pid: Pid,
    /// Executable name (`comm`, at most 15 bytes).
    pub comm: String,
    /// State letter (`R`, `S`, `Z` for a zombie, …).
    pub state: char,
    /// Parent process id.
    pub ppid: Pid,
    /// Process group id.
    pub pgrp: Pid,
    /// Start time ([`parse_start_time`]): with the pid, what tells a process from a later one
    /// the kernel gave its pid to. `None` only for a truncated text.
    pub start_time: Option<u64>,
}

/// Parses the text of `/proc/PID/stat`. The name is in parentheses and may itself contain
/// spaces and parentheses, so the fields after it are found from the *last* `)`.
///
/// ```
/// use parbench_mapper::tasks::parse_stat;
/// let stat = parse_stat("42 (a (b) c) S 7 42 42 0 -1").unwrap();
/// assert_eq!((stat.pid, stat.comm.as_str(), stat.state, stat.ppid, stat.pgrp), (42, "a (b) c", 'S', 7, 42));
/// assert_eq!(stat.start_time, None);
/// let full = "42 (sh) S 7 42 42 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 1 0 123456 2 3";
/// assert_eq!(parse_stat(full).unwrap().start_time, Some(123456));
/// assert!(parse_stat("garbage").is_none());
/// ```
pub fn parse_stat(text: &str) -> Option<ProcessStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some(ProcessStat {
        pid,
        comm,
        state,
        ppid,
        pgrp,
        start_time: parse_start_time(text),
    })
}

/// `/proc/PID/stat` of one process; `None` when it does not exist (any more).
///
/// ```
/// assert!(parbench_mapper::tasks::read_process_stat(i32::MAX).is_none());
/// ```
pub fn read_process_stat(pid: Pid) -> Option<ProcessStat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process now in `/proc` (processes that exit during the scan are skipped).
///
/// ```
/// let all = parbench_mapper::tasks::all_processes();
/// assert!(all.iter().any(|p| p.pid == std::process::id() as i32));
/// ```
pub fn all_processes() -> Vec<ProcessStat> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<Pid>().ok())
        .filter_map(read_process_stat)
        .collect()
}

/// The threads (TIDs) of process `pid`, ascending; empty when it does not exist.
///
/// ```
/// let me = std::process::id() as i32;
/// assert!(parbench_mapper::tasks::threads_of(me).contains(&me));
/// ```
pub fn threads_of(pid: Pid) -> Vec<Pid> {
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<Pid> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// The start time of a task from the text of its `/proc/PID/task/TID/stat` (field 22, in clock
/// ticks since boot): with its TID, it names one thread for good, since the kernel gives the TID
/// of an exited thread to later ones.
///
/// ```
/// use parbench_mapper::tasks::parse_start_time;
/// let stat = "42 (a (b) c) S 7 42 42 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 1 0 123456 2 3";
/// assert_eq!(parse_start_time(stat), Some(123456));
/// assert_eq!(parse_start_time("42 (sh) S 7"), None);
/// ```
pub fn parse_start_time(text: &str) -> Option<u64> {
    // Fields 3 (state) onwards follow the last `)`; the start time is field 22.
    text.get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .nth(22 - 3)?
        .parse()
        .ok()
}

/// The start time of thread `tid` of process `pid` ([`parse_start_time`]); `None` when it does
/// not exist (any more).
///
/// ```
/// let me = std::process::id() as i32;
/// assert!(parbench_mapper::tasks::thread_start_time(me, me).is_some());
/// assert_eq!(parbench_mapper::tasks::thread_start_time(me, i32::MAX), None);
/// ```
pub fn thread_start_time(pid: Pid, tid: Pid) -> Option<u64> {
    parse_start_time(&fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?)
}

/// Whether a `/proc` state letter is an exited task's: `Z` (zombie) or `X` (dead).
fn has_exited(state: char) -> bool {
    matches!(state, 'Z' | 'X')
}

/// The threads of `process` that have not exited, ascending; empty for a zombie.
///
/// `/proc/PID/stat` shows the state of the process's *main* thread, so a process whose main
/// thread ended alone (`pthread_exit` in `main`) reads `Z` while its other threads still run:
/// for such a process each thread's own state is read, and the running ones are kept.
///
/// ```
/// use parbench_mapper::tasks::{read_process_stat, running_threads};
/// let me = read_process_stat(std::process::id() as i32).unwrap();
/// assert!(running_threads(&me).contains(&me.pid));
/// ```
pub fn running_threads(process: &ProcessStat) -> Vec<Pid> {
    let tids = threads_of(process.pid);
    if !has_exited(process.state) {
        return tids;
    }
    tids.into_iter()
        .filter(|tid| {
            fs::read_to_string(format!("/proc/{}/task/{tid}/stat", process.pid))
                .ok()
                .and_then(|text| parse_stat(&text))
                .is_some_and(|thread| !has_exited(thread.state))
        })
        .collect()
}

/// Whether `process` still runs: it is no zombie, or only its main thread has exited (see
/// [`running_threads`]).
///
/// ```
/// use parbench_mapper::tasks::{is_running, read_process_stat};
/// assert!(is_running(&read_process_stat(std::process::id() as i32).unwrap()));
/// ```
pub fn is_running(process: &ProcessStat) -> bool {
    !has_exited(process.state) || !running_threads(process).is_empty()
}

/// `pid` and all its descendants among `processes`, parents before children (zombies kept:
/// the caller decides what an exited process means).
///
/// ```
/// use parbench_mapper::tasks::{descendants, parse_stat};
/// let ps: Vec<_> = ["1 (init) S 0 1", "5 (sh) S 1 5", "6 (w) S 5 5", "9 (x) S 1 9"]
///     .iter().map(|t| parse_stat(t).unwrap()).collect();
/// assert_eq!(descendants(5, &ps), vec![5, 6]);
/// ```
pub fn descendants(pid: Pid, processes: &[ProcessStat]) -> Vec<Pid> {
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            processes
                .iter()
                .filter(|p| p.ppid == parent && p.pid != parent)
                .map(|p| p.pid),
        );
        next += 1;
    }
    found.retain(|&p| p == pid || processes.iter().any(|q| q.pid == p));
    found
}

/// Whether this process ignores SIGCHLD. A parent can pass SIGCHLD ignored on through `exec`;
/// the kernel then reaps every child the moment it exits, and waiting for one fails with ECHILD,
/// so a program that watches its children (`corun`, `profile_command`) could never see them
/// exit. `parbench-cli` sets SIGCHLD back to its default when it starts; a library caller must
/// do the same.
///
/// ```
/// assert!(!parbench_mapper::tasks::ignores_sigchld());
/// ```
pub fn ignores_sigchld() -> bool {
    // SAFETY: all-zero is a valid sigaction (empty mask, no flags, SIG_DFL), overwritten by the
    // query below.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries the current one into `current`, a valid sigaction
    // we own. It cannot fail for a valid signal number.
    unsafe { libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut current) };
    current.sa_sigaction == libc::SIG_IGN
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
///
/// ```
/// use parbench_mapper::tasks::parse_cpu_list;
/// assert_eq!(parse_cpu_list("0-2,5"), Some(vec![0, 1, 2, 5]));
/// assert_eq!(parse_cpu_list("1"), Some(vec![1]));
/// assert_eq!(parse_cpu_list("x"), None);
/// ```
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((low, high)) => {
                let (low, high): (usize, usize) = (low.parse().ok()?, high.parse().ok()?);
                cpus.extend(low..=high);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// The CPUs thread `tid` of process `pid` may run on, from `Cpus_allowed_list` in
/// `/proc/PID/task/TID/status` — the view from outside the program.
///
/// # Errors
/// [`TaskError::Gone`] when the thread does not exist, [`TaskError::Os`] for an unreadable or
/// unparsable file.
///
/// # Examples
///
/// ```
/// use parbench_mapper::tasks::{cpus_allowed, Pid};
/// let me = std::process::id() as Pid;
/// assert!(!cpus_allowed(me, me)?.is_empty());
/// # Ok::<(), parbench_mapper::tasks::TaskError>(())
/// ```
pub fn cpus_allowed(pid: Pid, tid: Pid) -> Result<Vec<usize>, TaskError> {
    let path = format!("/proc/{pid}/task/{tid}/status");
    let status = fs::read_to_string(&path).map_err(|error| match error.kind() {
        io::ErrorKind::NotFound => TaskError::Gone { tid },
        _ => TaskError::from_os(tid, None, error),
    })?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_list)
        .ok_or_else(|| TaskError::Os {
            tid,
            source: io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{path} has no Cpus_allowed_list"),
            ),
        })
}

/// Sets thread `tid`'s affinity to exactly `cpus` (`sched_setaffinity`).
///
/// # Errors
/// [`TaskError::Gone`], [`TaskError::NotPermitted`], [`TaskError::CpuNotAllowed`] (for the
/// first CPU, when the kernel rejects the set) or [`TaskError::Os`]; CPU numbers beyond the
/// kernel's `cpu_set_t` are [`TaskError::CpuNotAllowed`].
///
/// # Examples
///
/// ```
/// use parbench_mapper::tasks::{set_thread_affinity, thread_affinity, Pid};
/// let tid = unsafe { libc::gettid() } as Pid;
/// let before = thread_affinity(tid)?;
/// set_thread_affinity(tid, &before)?;
/// assert_eq!(thread_affinity(tid)?, before);
/// # Ok::<(), parbench_mapper::tasks::TaskError>(())
/// ```
pub fn set_thread_affinity(tid: Pid, cpus: &[usize]) -> Result<(), TaskError> {
    let set = cpu_set(tid, cpus)?;
    // SAFETY: `set` is a valid, initialised cpu_set_t of the size passed; the call only reads it.
    let result =
        unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if result == 0 {
        Ok(())
    } else {
        Err(TaskError::from_os(
            tid,
            cpus.first().copied(),
            io::Error::last_os_error(),
        ))
    }
}

/// `cpus` as a `cpu_set_t`; [`TaskError::CpuNotAllowed`] (for `tid`) past its capacity.
fn cpu_set(tid: Pid, cpus: &[usize]) -> Result<libc::cpu_set_t, TaskError> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is its valid empty value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus {
        if cpu >= capacity {
            return Err(TaskError::CpuNotAllowed { tid, cpu });
        }
        // SAFETY: `cpu` is below the set's capacity (checked above) and `set` is a valid set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// Makes `command` start confined to `cpus`, as `taskset -c` does: its affinity is set in the
/// child before `exec`, so the program's every thread and every program it starts inherit it.
/// A set the kernel refuses (no allowed CPU in it) fails the spawn (`EINVAL`).
///
/// # Errors
/// [`TaskError::CpuNotAllowed`] (thread 0, the child to be) for a CPU number beyond the kernel's
/// `cpu_set_t`.
///
/// # Examples
///
/// ```
/// use parbench_mapper::tasks::{confine_command, thread_affinity};
/// let first = thread_affinity(0)?[0];
/// let mut command = std::process::Command::new("grep");
/// command.args(["Cpus_allowed_list", "/proc/self/status"]);
/// let output = confine_command(&mut command, &[first])?.output()?;
/// let line = String::from_utf8(output.stdout)?;
/// assert_eq!(line.split_whitespace().nth(1), Some(first.to_string().as_str()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn confine_command<'a>(
    command: &'a mut std::process::Command,
    cpus: &[usize],
) -> Result<&'a mut std::process::Command, TaskError> {
    use std::os::unix::process::CommandExt;
    let set = cpu_set(0, cpus)?;
    // SAFETY: the closure runs in the forked child before exec; it makes one system call, which
    // is async-signal-safe, on a set copied in beforehand, and allocates nothing.
    Ok(unsafe {
        command.pre_exec(move || {
            match libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            }
        })
    })
}

/// Pins thread `tid` to the single CPU `cpu` (OS numbering, as [`crate::Pu::os_index`]).
///
/// # Errors
/// As [`set_thread_affinity`].
///
/// # Examples
///
/// ```
/// use parbench_mapper::tasks::{pin_thread, thread_affinity, set_thread_affinity, Pid};
/// let tid = unsafe { libc::gettid() } as Pid;
/// let before = thread_affinity(tid)?;
/// pin_thread(tid, before[0])?;
/// assert_eq!(thread_affinity(tid)?, vec![before[0]]);
/// set_thread_affinity(tid, &before)?;
/// # Ok::<(), parbench_mapper::tasks::TaskError>(())
/// ```
pub fn pin_thread(tid: Pid, cpu: usize) -> Result<(), TaskError> {
    set_thread_affinity(tid, &[cpu])
}

/// The CPUs thread `tid` may run on (`sched_getaffinity`), ascending.
///
/// # Errors
/// [`TaskError::Gone`] for a thread that does not exist, [`TaskError::Os`] otherwise.
///
/// # Examples
///
/// ```
/// let me = std::process::id() as i32;
/// assert!(!parbench_mapper::tasks::thread_affinity(me)?.is_empty());
/// # Ok::<(), parbench_mapper::tasks::TaskError>(())
/// ```
pub fn thread_affinity(tid: Pid) -> Result<Vec<usize>, TaskError> {
    // SAFETY: all-zero is the valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of exactly the size passed.
    let result =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if result != 0 {
        return Err(TaskError::from_os(tid, None, io::Error::last_os_error()));
    }
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: every index is below the set's capacity and `set` was filled by the kernel.
    Ok((0..capacity)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_process_is_a_descendant_and_its_threads_are_listed() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as Pid;
        let me = std::process::id() as Pid;
        let processes = all_processes();
        assert!(descendants(me, &processes).contains(&pid));
        assert_eq!(threads_of(pid), vec![pid]);
        assert_eq!(read_process_stat(pid).unwrap().ppid, me);
        let allowed = cpus_allowed(pid, pid).unwrap();
        pin_thread(pid, allowed[0]).unwrap();
        assert_eq!(cpus_allowed(pid, pid).unwrap(), vec![allowed[0]]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(matches!(
            cpus_allowed(pid, pid),
            Err(TaskError::Gone { .. })
        ));
    }

    #[test]
    fn out_of_range_cpus_are_refused_before_the_kernel() {
        let me = std::process::id() as Pid;
        assert!(matches!(
            set_thread_affinity(me, &[1 << 20]),
            Err(TaskError::CpuNotAllowed { cpu: 1048576, .. })
        ));
    }
}
