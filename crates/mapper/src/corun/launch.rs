//! Starting commands in process groups of their own, waiting for them, and making sure none
//! outlives the watch.
//!
//! Each command starts as the leader of a new process group (`setpgid(0, 0)`), so everything it
//! starts — threads, child processes, their children — can be found by group and signalled at
//! once with `kill(-pgid, …)`. The child also asks for `SIGKILL` when the thread that started it
//! dies (`PR_SET_PDEATHSIG`), so even a `parbench-cli` killed with `SIGKILL` leaves no command
//! behind. A [`Launched`] value owns the running commands: dropping it (also on an error or a
//! panic) kills and reaps every command still running.
//!
//! Each command is also made a child subreaper (`PR_SET_CHILD_SUBREAPER`, kept across `exec`):
//! a process its descendants orphan (a double fork under `setsid`, the usual way to leave the
//! group and the session) is re-parented to the command rather than to init, so the walk of its
//! descendants still finds it while the command runs. The command then also gets to wait for
//! such orphans (shells and most programs reap whatever child exits). Out of reach remain a
//! process orphaned after the command itself exited (re-parented to init then) that no scan saw
//! before, and processes started on the command's behalf by another one (a daemon asked over
//! IPC, a service manager).
//!
//! A leader that exits is *not* reaped at once: its exit is read with `waitid(WNOWAIT)` and it
//! stays a zombie until [`Launched`] is dropped. The zombie keeps its pid — which is also its
//! group's id — from being given to another process, so every `kill(-pgid, …)` here reaches only
//! the command's own group, even after the leader exited and the rest of the group with it. A
//! reaped leader whose group had emptied would free that number, and a later unrelated process
//! (its own group leader after `setsid`) could get it and receive our `SIGKILL`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{ChildOutput, CommandStatus};
use crate::tasks::{Pid, ProcessStat, all_processes, is_running, read_process_stat};

/// One started command.
#[derive(Debug)]
pub(crate) struct Running {
    pub child: Child,
    pub pid: Pid,
    pub started: Instant,
    /// A pidfd that becomes readable when the command exits, to wake the watch loop at once;
    /// `None` where `pidfd_open` is unavailable (the loop then sleeps its poll interval).
    pidfd: Option<OwnedFd>,
    /// When and how it exited; it stays unreaped (a zombie) until [`Launched`] is dropped.
    pub finished: Option<(Instant, ExitStatus)>,
}

/// The commands started by one watch.
#[derive(Debug, Default)]
pub(crate) struct Launched {
    pub running: Vec<Option<Running>>,
}

/// The soft `RLIMIT_NOFILE` this process had before [`raise_descriptor_limit`] first raised it;
/// `u64::MAX` until then.
static SOFT_DESCRIPTOR_LIMIT_BEFORE_RAISE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Raises this process's soft limit on open descriptors (`ulimit -n`, `RLIMIT_NOFILE`) to its hard
/// limit, best effort, and returns the soft limit now in force (`None` when it cannot be read).
/// Per-thread counters take one descriptor per event on every thread, so with a PMU's dozen
/// events the usual soft limit of 1024 runs out near 90 threads, while the hard limit is often
/// far higher. The commands that corun and
/// [`profile_command`](crate::perf::profile_command) start afterwards get the soft limit as it
/// was: they run as they would without the profiler (a soft limit above 1024 breaks programs
/// that pass descriptors to `select`).
///
/// ```
/// let raised = parbench_mapper::perf::raise_descriptor_limit().unwrap();
/// assert_eq!(parbench_mapper::perf::raise_descriptor_limit(), Some(raised));
/// ```
pub fn raise_descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid rlimit we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur >= limit.rlim_max {
        return Some(limit.rlim_cur);
    }
    let raised = libc::rlimit {
        rlim_cur: limit.rlim_max,
        ..limit
    };
    // SAFETY: setrlimit reads a valid rlimit; raising the soft limit up to the hard one is always
    // allowed (it can still fail, e.g. under a seccomp filter: then the limit stays as it was).
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Some(limit.rlim_cur);
    }
    // Relaxed: the value is all there is to publish; only the first raise records the original.
    let _ = SOFT_DESCRIPTOR_LIMIT_BEFORE_RAISE.compare_exchange(
        u64::MAX,
        limit.rlim_cur,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    Some(raised.rlim_cur)
}

/// The descriptor limit a command should start with: the soft limit from before
/// [`raise_descriptor_limit`] under the hard limit now, if the soft limit was raised.
fn descriptor_limit_for_commands() -> Option<libc::rlimit> {
    // Relaxed: see raise_descriptor_limit.
    let before = SOFT_DESCRIPTOR_LIMIT_BEFORE_RAISE.load(Ordering::Relaxed);
    if before == u64::MAX {
        return None;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid rlimit we own.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then(|| libc::rlimit {
        rlim_cur: before.min(limit.rlim_max),
        ..limit
    })
}

/// Starts `argv` in a new process group.
pub(crate) fn spawn(argv: &[String], output: ChildOutput) -> io::Result<Running> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut command = Command::new(program);
    command.args(args).process_group(0).stdin(Stdio::null());
    match output {
        ChildOutput::Inherit => {}
        ChildOutput::Null => {
            command.stdout(Stdio::null()).stderr(Stdio::null());
        }
        ChildOutput::Stderr => {
            let stderr = io::stderr();
            let fd = std::os::fd::AsFd::as_fd(&stderr).try_clone_to_owned()?;
            command
                .stdout(Stdio::from(fd.try_clone()?))
                .stderr(Stdio::from(fd));
        }
    }
    let parent = std::process::id() as libc::pid_t;
    let descriptor_limit = descriptor_limit_for_commands();
    // SAFETY: the closure runs in the forked child between fork and exec. It only calls prctl,
    // setrlimit (a bare system call), getppid and raise, which are async-signal-safe, and
    // allocates nothing; `descriptor_limit` is a plain value it reads.
    unsafe {
        command.pre_exec(move || {
            // Lowering the soft limit is always allowed; a failure leaves it raised, harmless.
            if let Some(limit) = &descriptor_limit {
                libc::setrlimit(libc::RLIMIT_NOFILE, limit);
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The command becomes a child subreaper (kept across exec): see the module
            // documentation. Best effort (Linux 3.4 and later).
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            // The parent may have died before prctl took effect: then no signal would come, and
            // the child has a new parent. (Not "the parent is 1": the parent may itself be PID 1,
            // in a container or a new PID namespace.)
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let child = command.spawn()?;
    let pid = child.id() as Pid;
    Ok(Running {
        pidfd: pidfd_open(pid),
        child,
        pid,
        started,
        finished: None,
    })
}

fn pidfd_open(pid: Pid) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; no memory is
    // passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative result is a fresh descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// How child `pid` exited, if it has, leaving it unreaped (`waitid` with `WNOWAIT`); with `block`,
/// waits for it to exit.
fn exit_status_unreaped(pid: Pid, block: bool) -> io::Result<Option<ExitStatus>> {
    let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: all-zero is a valid siginfo_t; with WNOHANG and no exit yet, waitid leaves
        // si_pid at 0, which is how that case is told apart below.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t; the other arguments are integers.
        if unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) } != 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        // SAFETY: waitid succeeded, so `info` is a SIGCHLD siginfo (or still all zero), whose
        // si_pid and si_status fields these read.
        let (child, status) = unsafe { (info.si_pid(), info.si_status()) };
        if child == 0 {
            return Ok(None);
        }
        // The wait status waitpid would have returned, from which ExitStatus decodes the same.
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => status | 0x80,
            _ => status, // CLD_KILLED: only exits were asked for (no WSTOPPED/WCONTINUED)
        };
        return Ok(Some(ExitStatus::from_raw(raw)));
    }
}

/// Sends `signal` to every process of group `pgid`; false when the group no longer exists.
pub(crate) fn signal_group(pgid: Pid, signal: i32) -> bool {
    // SAFETY: kill takes plain integers; a negative pid addresses the process group.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Sends `signal` to `process` (as listed by [`read_process_stat`] or [`all_processes`]) if it
/// is still that process: same group, name and start time as when it was listed — not the same
/// parent: it may have been re-parented since. A process that got its pid later is left alone
/// even in the same group under the same name (a shell's job, its own group leader like a
/// command's `setsid` child). False when it is gone or another process has its pid.
///
/// ```
/// use parbench_mapper::corun::signal_process;
/// use parbench_mapper::tasks::read_process_stat;
/// let me = read_process_stat(std::process::id() as i32).unwrap();
/// assert!(signal_process(&me, 0)); // signal 0: only checks that it may be signalled
/// let mut later = me.clone();
/// later.start_time = me.start_time.map(|start| start + 1);
/// assert!(!signal_process(&later, 0));
/// ```
pub fn signal_process(process: &ProcessStat, signal: i32) -> bool {
    let same = read_process_stat(process.pid).is_some_and(|now| {
        now.pgrp == process.pgrp && now.comm == process.comm && now.start_time == process.start_time
    });
    // SAFETY: kill takes plain integers; a positive pid addresses one process.
    same && unsafe { libc::kill(process.pid, signal) == 0 }
}

impl Launched {
    /// Records the exit of commands that have exited (leaving them unreaped); returns the
    /// indices that finished now.
    pub fn note_exits(&mut self) -> Vec<usize> {
        let mut done = Vec::new();
        for (index, slot) in self.running.iter_mut().enumerate() {
            let Some(running) = slot else { continue };
            if running.finished.is_some() {
                continue;
            }
            if let Ok(Some(status)) = exit_status_unreaped(running.pid, false) {
                running.finished = Some((Instant::now(), status));
                done.push(index);
            }
        }
        done
    }

    /// Whether every started command has exited.
    pub fn all_finished(&self) -> bool {
        self.running.iter().flatten().all(|r| r.finished.is_some())
    }

    /// Sleeps until a command exits or `timeout` passes.
    pub fn wait_any(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = self
            .running
            .iter()
            .flatten()
            .filter(|r| r.finished.is_none())
            .filter_map(|r| r.pidfd.as_ref())
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let millis = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        if fds.is_empty() {
            std::thread::sleep(timeout);
            return;
        }
        // SAFETY: `fds` is a valid array of initialised pollfd of the length passed, alive for
        // the whole call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
        if ready < 0 {
            std::thread::sleep(timeout); // EINTR (a signal): the caller checks its stop flag
        }
    }

    /// Stops every running command: `SIGTERM` to its group, up to `grace` for it to exit, then
    /// `SIGKILL`. Returns the indices of the commands it had to stop.
    pub fn stop_all(&mut self, grace: Duration) -> Vec<usize> {
        let targets: Vec<usize> = self
            .running
            .iter()
            .enumerate()
            .filter(|(_, r)| r.as_ref().is_some_and(|r| r.finished.is_none()))
            .map(|(index, _)| index)
            .collect();
        for &index in &targets {
            if let Some(running) = &self.running[index] {
                signal_group(running.pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + grace;
        while !self.all_finished() && Instant::now() < deadline {
            self.wait_any(Duration::from_millis(10));
            self.note_exits();
        }
        self.kill_remaining();
        targets
    }

    /// `SIGKILL` to every group whose leader has not exited, then waits until the leaders have
    /// (leaving them unreaped).
    fn kill_remaining(&mut self) {
        for running in self.running.iter_mut().flatten() {
            if running.finished.is_none() {
                signal_group(running.pid, libc::SIGKILL);
                if let Ok(Some(status)) = exit_status_unreaped(running.pid, true) {
                    running.finished = Some((Instant::now(), status));
                }
            }
        }
    }
}

impl Launched {
    /// `SIGKILL` to every command's group, then waits up to `limit` until no process of any
    /// group is left (zombies aside: their parents reap them).
    pub fn kill_groups_and_wait(&self, limit: Duration) {
        let groups: Vec<Pid> = self.running.iter().flatten().map(|r| r.pid).collect();
        let deadline = Instant::now() + limit;
        loop {
            let processes = all_processes();
            let alive = groups
                .iter()
                .filter(|&&pgid| processes.iter().any(|p| p.pgrp == pgid && is_running(p)))
                .filter(|&&pgid| signal_group(pgid, libc::SIGKILL))
                .count();
            if alive == 0 || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.kill_remaining();
        // Descendants that outlived their leader keep the group: kill those too. Every leader is
        // still unreaped here, so each group id is still the command's own.
        for running in self.running.iter().flatten() {
            signal_group(running.pid, libc::SIGKILL);
        }
        // Only now may the group ids be reused.
        for running in self.running.iter_mut().flatten() {
            let _ = running.child.wait();
        }
    }
}

/// The status of an exited command, noting when the watch itself stopped it.
pub(crate) fn status_of(
    status: ExitStatus,
    stopped_by: Option<super::StopReason>,
) -> CommandStatus {
    match (status.code(), status.signal()) {
        (Some(code), _) => CommandStatus::Exited { code },
        (None, Some(signal)) => CommandStatus::Signalled { signal, stopped_by },
        (None, None) => CommandStatus::Exited { code: -1 },
    }
}

/// Set by the handler of [`stop_on_termination_signals`].
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// The first signal the handler of [`stop_on_termination_signals`] got; 0 before one.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn request_stop(signal: libc::c_int) {
    // Relaxed: published by the flag's Release below.
    let _ = STOP_SIGNAL.compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
    // Release: whoever sees the flag (the watch loop loads it with Acquire) also sees the signal,
    // so a caller that finds its watch stopped can name the signal ([`stop_signal`]).
    STOP_REQUESTED.store(true, Ordering::Release);
}

/// The first signal that [`stop_on_termination_signals`]'s handler got, if one came: a caller
/// that saves what it measured before stopping can name it (and exit with 128 + it).
///
/// ```
/// assert_eq!(parbench_mapper::corun::stop_signal(), None);
/// ```
pub fn stop_signal() -> Option<i32> {
    // Relaxed: after a watch that saw the flag (with Acquire) the signal is visible; before
    // that it is, like the flag, seen when it is seen.
    match STOP_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

/// Installs handlers for `SIGINT`, `SIGTERM` and `SIGHUP` that only record the first signal
/// ([`stop_signal`]) and set a flag, and returns the flag: pass it as the `stop` argument of
/// [`super::corun`] so that a signal to the watcher stops every command's process group (instead
/// of leaving them running without their watcher). A signal that is ignored when this is called
/// stays ignored: a watcher started under `nohup` (SIGHUP ignored) or in a shell's background job
/// (SIGINT ignored) is not stopped by it, as it would not be without the handlers.
///
/// # Errors
/// The OS error of `sigaction`.
///
/// # Examples
///
/// ```no_run
/// let stop = parbench_mapper::corun::stop_on_termination_signals()?;
/// assert!(!stop.load(std::sync::atomic::Ordering::Relaxed));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn stop_on_termination_signals() -> io::Result<&'static AtomicBool> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: all-zero is a valid sigaction (empty mask, no flags, SIG_DFL), overwritten by
        // the query below.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only queries the current one into `previous`, a valid
        // sigaction we own.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut previous) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if previous.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: all-zero is a valid sigaction (empty mask, no flags) before the handler is set.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = request_stop as extern "C" fn(libc::c_int) as usize;
        // SAFETY: `action` is a valid sigaction whose handler only stores to atomics, which is
        // async-signal-safe; the old action is not needed (null).
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(&STOP_REQUESTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(script: &str) -> Launched {
        let argv = ["sh", "-c", script].map(String::from);
        Launched {
            running: vec![Some(spawn(&argv, ChildOutput::Null).unwrap())],
        }
    }

    fn wait_for_exit(launched: &mut Launched) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        while launched.note_exits().is_empty() {
            assert!(Instant::now() < deadline, "the command did not exit");
            launched.wait_any(Duration::from_millis(10));
        }
        launched.running[0].as_ref().unwrap().finished.unwrap().1
    }

    #[test]
    fn an_exited_leader_keeps_its_group_id_until_the_group_is_killed() {
        // The leader exits at once and leaves a member in its group.
        let mut launched = launch("sleep 30 & exit 3");
        let pgid = launched.running[0].as_ref().unwrap().pid;
        assert_eq!(wait_for_exit(&mut launched).code(), Some(3));
        // Unreaped, so no other process can be given its pid, the group's id.
        let leader = read_process_stat(pgid).map(|p| p.state);
        assert_eq!(
            leader,
            Some('Z'),
            "the leader was reaped while its group was signalled"
        );
        let member = all_processes()
            .into_iter()
            .find(|p| p.pgrp == pgid && p.pid != pgid)
            .expect("the background sleep");
        drop(launched);
        assert_eq!(read_process_stat(pgid), None, "drop reaps the leader");
        let deadline = Instant::now() + Duration::from_secs(2);
        while read_process_stat(member.pid).is_some_and(|p| is_running(&p)) {
            assert!(Instant::now() < deadline, "the member outlived the drop");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn an_unreaped_exit_reads_as_the_status_the_reaping_wait_returns() {
        for (script, code, signal) in [
            ("exit 0", Some(0), None),
            ("exit 200", Some(200), None),
            ("kill -KILL $$", None, Some(libc::SIGKILL)),
        ] {
            let mut launched = launch(script);
            let noted = wait_for_exit(&mut launched);
            assert_eq!((noted.code(), noted.signal()), (code, signal), "{script}");
            let reaped = launched.running[0].as_mut().unwrap().child.wait().unwrap();
            assert_eq!(noted, reaped, "{script}");
        }
    }
}
