//! Running unmodified programs together and mapping all of their threads: `corun`.
//!
//! The SMT study maps the threads of several applications that run at the same time. This module
//! does it from outside the programs — no `LD_PRELOAD`, no source change:
//!
//! 1. [`corun`] starts every command in a process group of its own ([`launch`](self)), and
//!    remembers when it started.
//! 2. Every poll interval (10 ms after a change, doubling to 100 ms while nothing changes, and
//!    at once when a command exits, through a pidfd) it scans `/proc`
//!    for each command's processes — its process group, plus descendants that left it (the
//!    command is made a child subreaper, so what they orphan stays among them) — and
//!    their threads (`/proc/PID/task`), so threads and child processes created late are seen.
//! 3. A [`Roster`] maps all threads of all commands together over the machine's topology
//!    ([`Algorithm::map_sharing`]: instruction-aware, the study's Algorithm 1, round-robin,
//!    os-index, scatter or `os`)
//!    whenever a thread appears or disappears, and pins with `sched_setaffinity` the threads whose
//!    CPU changed.
//! 4. When a command's leader exits, its exit status and wall time are recorded and anything it
//!    left running — in its group, or descendants that left the group, also those seen before
//!    that its exit handed on to init — is killed; when all have
//!    exited, the [`CorunReport`] has each command's status and wall time and the *system time*
//!    (first start to last exit).
//!
//! A command that cannot start is reported with the reason and the others run (and are mapped)
//! as usual. On a stop request (the `stop` flag, e.g. from [`stop_on_termination_signals`]) or
//! the timeout, every group and each descendant that left it gets `SIGTERM`, then `SIGKILL` after
//! a grace period; the report says which commands were stopped and why. No command outlives the call, even on an error.
//!
//! [`map_running`] applies one mapping to processes that are already running (`map --pid`).

pub(crate) mod launch;
mod roster;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use launch::{signal_process, stop_on_termination_signals, stop_signal};
pub use roster::{PinnedThread, Roster};

use crate::mapping::{Algorithm, MapError};
use crate::mix::InstructionMix;
use crate::report::plural;
use crate::tasks::{
    Pid, ProcessStat, all_processes, descendants, running_threads, thread_start_time,
};
use crate::topology::Topology;

/// Errors that prevent a watch from starting.
///
/// ```
/// use parbench_mapper::corun::{corun, CorunError, CorunOptions};
/// let t = parbench_mapper::Topology::synthetic("core:2 pu:1")?;
/// let stop = std::sync::atomic::AtomicBool::new(false);
/// assert!(matches!(corun(&t, &[], &CorunOptions::default(), &stop), Err(CorunError::NoCommands)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
pub enum CorunError {
    /// Nothing to run.
    #[error("no command to run")]
    NoCommands,
    /// A command with no program name (e.g. two `:::` in a row).
    #[error("command {index} is empty")]
    EmptyCommand {
        /// Its position (0-based).
        index: usize,
    },
    /// Pinning needs the topology of this machine, not a synthetic or XML one.
    #[error("cannot pin threads on a planned topology ({topology}); use this machine's topology")]
    NotThisSystem {
        /// Description of the topology given.
        topology: String,
    },
    /// The mapping failed.
    #[error(transparent)]
    Map(#[from] MapError),
    /// No process with this id exists (`map --pid`).
    #[error("no process {pid} (it may have exited)")]
    NoSuchProcess {
        /// The id given.
        pid: Pid,
    },
    /// This process ignores SIGCHLD, so the kernel would reap the commands unseen and corun could
    /// never tell that they exited ([`crate::tasks::ignores_sigchld`]).
    #[error(
        "SIGCHLD is ignored in this process, so the commands' exits could not be seen; set it to \
         its default (SIG_DFL) first"
    )]
    SigchldIgnored,
}

/// One command to run, with the instruction mix of its threads if known.
///
/// ```
/// let spec = parbench_mapper::corun::CommandSpec::new(vec!["sleep".into(), "1".into()]);
/// assert_eq!(spec.label, "sleep 1");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CommandSpec {
    /// Name in reports (the command line by default).
    pub label: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Mix given to each of its threads (from a profile or a declared class); `None`: unknown.
    pub mix: Option<InstructionMix>,
}

impl CommandSpec {
    /// A command without a known mix, labelled by its command line.
    pub fn new(argv: Vec<String>) -> CommandSpec {
        CommandSpec {
            label: argv.join(" "),
            argv,
            mix: None,
        }
    }
}

/// Where the commands' stdout and stderr go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildOutput {
    /// Shared with the caller.
    Inherit,
    /// Discarded.
    Null,
    /// Both to the caller's stderr (keeps the caller's stdout for results).
    Stderr,
}

/// How to watch.
///
/// ```
/// let options = parbench_mapper::corun::CorunOptions::default();
/// assert_eq!(options.algorithm, parbench_mapper::Algorithm::InstructionAware);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CorunOptions {
    /// Mapping algorithm.
    pub algorithm: Algorithm,
    /// How often `/proc` is scanned for new and exited threads right after a change; while
    /// nothing changes the interval doubles up to `max_poll` (a scan reads every
    /// `/proc/PID/stat`, so scanning fast all the time would cost the measured programs CPU).
    pub poll: Duration,
    /// The longest interval between scans.
    pub max_poll: Duration,
    /// Stop every command after this long.
    pub timeout: Option<Duration>,
    /// Time between `SIGTERM` and `SIGKILL` when stopping commands.
    pub grace: Duration,
    /// The commands' output.
    pub output: ChildOutput,
}

impl Default for CorunOptions {
    fn default() -> Self {
        CorunOptions {
            algorithm: Algorithm::InstructionAware,
            poll: Duration::from_millis(10),
            max_poll: Duration::from_millis(100),
            timeout: None,
            grace: Duration::from_millis(500),
            output: ChildOutput::Stderr,
        }
    }
}

/// Why the watch stopped commands itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// The timeout passed.
    Timeout,
    /// A stop was requested (a signal to the watcher).
    Interrupted,
}

/// How a command ended.
///
/// ```
/// use parbench_mapper::corun::CommandStatus;
/// assert_eq!(CommandStatus::Exited { code: 0 }.to_string(), "exit 0");
/// assert!(!CommandStatus::Exited { code: 1 }.success());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandStatus {
    /// It never ran (program not found, not executable, …).
    FailedToStart {
        /// The OS's reason.
        reason: String,
    },
    /// It exited with a code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// A signal ended it.
    Signalled {
        /// The signal number.
        signal: i32,
        /// Set when the watch itself sent it.
        stopped_by: Option<StopReason>,
    },
}

impl CommandStatus {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        *self == CommandStatus::Exited { code: 0 }
    }
}

impl fmt::Display for CommandStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandStatus::FailedToStart { reason } => write!(f, "failed to start: {reason}"),
            CommandStatus::Exited { code } => write!(f, "exit {code}"),
            CommandStatus::Signalled { signal, stopped_by } => {
                let name = signal_name(*signal).unwrap_or("other");
                write!(f, "killed by signal {signal} ({name})")?;
                match stopped_by {
                    Some(StopReason::Timeout) => write!(f, ", stopped by corun: timeout"),
                    Some(StopReason::Interrupted) => write!(f, ", stopped by corun: interrupted"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The name of the signals a process is commonly killed by (`SIGABRT` for 6), if it is one.
///
/// ```
/// assert_eq!(parbench_mapper::corun::signal_name(6), Some("SIGABRT"));
/// assert_eq!(parbench_mapper::corun::signal_name(64), None);
/// ```
pub fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

/// What happened to one command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandOutcome {
    /// Its label.
    pub label: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Its process id (also its process group id); `None` if it never started.
    pub pid: Option<Pid>,
    /// How it ended.
    pub status: CommandStatus,
    /// Seconds from its start to its exit; `None` if it never started.
    pub wall_s: Option<f64>,
    /// Distinct threads seen (over all its processes).
    pub threads_seen: usize,
    /// Distinct processes seen (a process that got the pid of an exited one counts too).
    pub processes_seen: usize,
    /// Processes of its group still running when its leader exited, which the watch killed.
    pub leftovers_killed: usize,
}

/// The result of a watch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorunReport {
    /// The mapping algorithm.
    pub algorithm: Algorithm,
    /// One per command, in the order given.
    pub commands: Vec<CommandOutcome>,
    /// Seconds from the first start to the last exit.
    pub system_time_s: f64,
    /// How many times all threads were mapped (the first mapping counts).
    pub remaps: usize,
    /// Every thread seen and where it was last pinned.
    pub threads: Vec<PinnedThread>,
    /// Pins that failed for another reason than the thread having exited.
    pub pin_failures: Vec<String>,
    /// Set when the watch stopped the commands itself.
    pub stopped: Option<StopReason>,
}

impl CorunReport {
    /// Whether every command exited with code 0.
    pub fn all_succeeded(&self) -> bool {
        self.commands.iter().all(|c| c.status.success())
    }
}

impl fmt::Display for CorunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "algorithm: {}", self.algorithm)?;
        for (index, command) in self.commands.iter().enumerate() {
            let wall = command
                .wall_s
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.3} s"));
            writeln!(
                f,
                "command {index}: {}\n  status: {}\n  wall time: {wall}, {}, {} seen{}",
                command.label,
                command.status,
                plural(command.processes_seen, "process"),
                plural(command.threads_seen, "thread"),
                if command.leftovers_killed > 0 {
                    format!(
                        ", {} killed",
                        plural(command.leftovers_killed, "leftover process")
                    )
                } else {
                    String::new()
                }
            )?;
            let pins: Vec<String> = self
                .threads
                .iter()
                .filter(|t| t.command == index)
                .map(|t| match t.cpu {
                    Some(cpu) => format!("{}→cpu {cpu}", t.tid),
                    None => format!("{}→os", t.tid),
                })
                .collect();
            if !pins.is_empty() {
                writeln!(f, "  threads (tid→last cpu): {}", pins.join(" "))?;
            }
        }
        writeln!(
            f,
            "system time: {:.3} s (first start to last exit), {}",
            self.system_time_s,
            plural(self.remaps, "mapping")
        )?;
        for failure in &self.pin_failures {
            writeln!(f, "pin failed: {failure}")?;
        }
        Ok(())
    }
}

/// The running processes of command `pgid` — its group's members and their descendants,
/// zombies left out — each with its running threads.
fn members(pgid: Pid, processes: &[ProcessStat]) -> Vec<(Pid, Vec<Pid>)> {
    let mut found: Vec<Pid> = processes
        .iter()
        .filter(|p| p.pgrp == pgid)
        .flat_map(|p| descendants(p.pid, processes))
        .collect();
    found.sort_unstable();
    found.dedup();
    found
        .into_iter()
        .filter_map(|pid| {
            let process = processes.iter().find(|p| p.pid == pid)?;
            let threads = running_threads(process);
            (!threads.is_empty()).then_some((pid, threads))
        })
        .collect()
}

/// The running processes of command `pgid` (as [`members`]) that have left its process group
/// (`setsid`, `setpgid`): a signal to the group does not reach them.
fn outside_group(pgid: Pid, processes: &[ProcessStat]) -> Vec<ProcessStat> {
    members(pgid, processes)
        .into_iter()
        .filter_map(|(pid, _)| processes.iter().find(|p| p.pid == pid && p.pgrp != pgid))
        .cloned()
        .collect()
}

/// Records in `seen` (latest listing per pid) the running processes of command `pgid` that have
/// left its group, for [`kill_leftovers`].
pub(crate) fn note_outside_group(
    pgid: Pid,
    processes: &[ProcessStat],
    seen: &mut Vec<ProcessStat>,
) {
    for process in outside_group(pgid, processes) {
        seen.retain(|p| p.pid != process.pid);
        seen.push(process);
    }
}

/// Kills what the exited leader of command `pgid` left running: its group at once, and the
/// processes that left the group (which a signal to the group misses) one by one — those among
/// its descendants now and those seen outside the group before (`seen_outside`, from
/// [`note_outside_group`]): the leader, a child subreaper, had adopted what its descendants
/// orphaned, and its exit handed them on to init, out of its descendants. Returns how many
/// processes it killed.
pub(crate) fn kill_leftovers(
    pgid: Pid,
    processes: &[ProcessStat],
    seen_outside: &[ProcessStat],
) -> usize {
    let rest = members(pgid, processes);
    let mut outside = outside_group(pgid, processes);
    for process in seen_outside {
        let running_now = processes
            .iter()
            .any(|now| now.pid == process.pid && crate::tasks::is_running(now));
        if running_now && !outside.iter().any(|p| p.pid == process.pid) {
            outside.push(process.clone());
        }
    }
    let in_group = rest
        .iter()
        .filter(|(pid, _)| !outside.iter().any(|p| p.pid == *pid))
        .count();
    let group_killed = in_group > 0 && launch::signal_group(pgid, libc::SIGKILL);
    let outside_killed = outside
        .iter()
        .filter(|process| launch::signal_process(process, libc::SIGKILL))
        .count();
    usize::from(group_killed) * in_group + outside_killed
}

/// The threads `tids` of process `pid` of program `program` as the [`Roster`] takes them, with
/// their start times; a thread that exited since the listing has none and is left out.
fn live_threads(
    program: usize,
    pid: Pid,
    tids: Vec<Pid>,
) -> impl Iterator<Item = (usize, Pid, Pid, u64)> {
    tids.into_iter()
        .filter_map(move |tid| thread_start_time(pid, tid).map(|start| (program, pid, tid, start)))
}

/// Runs `commands` together, mapping all their threads with `options.algorithm` until every
/// command has exited (see the module documentation). Setting `stop` stops them all.
///
/// # Errors
/// [`CorunError::NoCommands`], [`CorunError::EmptyCommand`], [`CorunError::NotThisSystem`] for a
/// planned topology with a pinning algorithm. A command that fails to start is *not* an error:
/// its outcome says so.
///
/// # Examples
///
/// ```
/// use parbench_mapper::corun::{corun, CommandSpec, CommandStatus, CorunOptions, ChildOutput};
/// use parbench_mapper::{Algorithm, Topology};
/// let topology = Topology::this_system()?;
/// let options = CorunOptions { algorithm: Algorithm::RoundRobin, output: ChildOutput::Null, ..Default::default() };
/// let commands = [
///     CommandSpec::new(vec!["sleep".into(), "0.2".into()]),
///     CommandSpec::new(vec!["no-such-program-here".into()]),
/// ];
/// let stop = std::sync::atomic::AtomicBool::new(false);
/// let report = corun(&topology, &commands, &options, &stop)?;
/// assert_eq!(report.commands[0].status, CommandStatus::Exited { code: 0 });
/// assert!(matches!(report.commands[1].status, CommandStatus::FailedToStart { .. }));
/// assert!(report.threads.iter().any(|t| t.command == 0 && t.cpu.is_some()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn corun(
    topology: &Topology,
    commands: &[CommandSpec],
    options: &CorunOptions,
    stop: &AtomicBool,
) -> Result<CorunReport, CorunError> {
    if commands.is_empty() {
        return Err(CorunError::NoCommands);
    }
    if crate::tasks::ignores_sigchld() {
        return Err(CorunError::SigchldIgnored);
    }
    if let Some(index) = commands.iter().position(|c| c.argv.is_empty()) {
        return Err(CorunError::EmptyCommand { index });
    }
    if options.algorithm != Algorithm::Os && !topology.is_this_system() {
        return Err(not_this_system(topology));
    }
    let mixes = commands.iter().map(|c| c.mix.unwrap_or_default()).collect();
    let mut roster = Roster::new(topology, options.algorithm, mixes);
    let mut launched = launch::Launched::default();
    let mut statuses: Vec<Option<CommandStatus>> = vec![None; commands.len()];
    // Each process with its start time: a pid alone may be an exited process's, reused.
    let mut processes_seen: Vec<Vec<(Pid, Option<u64>)>> = vec![Vec::new(); commands.len()];
    let mut leftovers = vec![0usize; commands.len()];
    let mut outside_seen: Vec<Vec<ProcessStat>> = vec![Vec::new(); commands.len()];
    let start = Instant::now();
    for (index, command) in commands.iter().enumerate() {
        match launch::spawn(&command.argv, options.output) {
            Ok(running) => launched.running.push(Some(running)),
            Err(error) => {
                launched.running.push(None);
                statuses[index] = Some(CommandStatus::FailedToStart {
                    reason: error.to_string(),
                });
            }
        }
    }
    let mut stopped = None;
    let mut interval = options.poll;
    loop {
        let finished_now = launched.note_exits();
        let processes = all_processes();
        for index in finished_now {
            if let Some(running) = &launched.running[index] {
                leftovers[index] = kill_leftovers(running.pid, &processes, &outside_seen[index]);
            }
        }
        if stopped.is_none() {
            // Acquire: the handler of `stop_on_termination_signals` records its signal before it
            // raises the flag with Release, so the caller of a stopped watch finds the signal.
            if stop.load(Ordering::Acquire) {
                stopped = Some(StopReason::Interrupted);
            } else if options.timeout.is_some_and(|t| start.elapsed() >= t) {
                stopped = Some(StopReason::Timeout);
            }
            if let Some(reason) = stopped {
                let outside: Vec<ProcessStat> = launched
                    .running
                    .iter()
                    .flatten()
                    .filter(|running| running.finished.is_none())
                    .flat_map(|running| outside_group(running.pid, &processes))
                    .collect();
                for process in &outside {
                    launch::signal_process(process, libc::SIGTERM);
                }
                let stopped_now = launched.stop_all(options.grace);
                for process in &outside {
                    launch::signal_process(process, libc::SIGKILL);
                }
                for index in stopped_now {
                    if let Some(Some(running)) = launched.running.get(index) {
                        if let Some((_, status)) = running.finished {
                            statuses[index] = Some(launch::status_of(status, Some(reason)));
                        }
                    }
                }
            }
        }
        if launched.all_finished() {
            break;
        }
        let mut alive = Vec::new();
        for (index, slot) in launched.running.iter().enumerate() {
            let Some(running) = slot else { continue };
            if running.finished.is_some() {
                continue;
            }
            note_outside_group(running.pid, &processes, &mut outside_seen[index]);
            for (pid, threads) in members(running.pid, &processes) {
                let start = processes
                    .iter()
                    .find(|p| p.pid == pid)
                    .and_then(|p| p.start_time);
                if !processes_seen[index].contains(&(pid, start)) {
                    processes_seen[index].push((pid, start));
                }
                alive.extend(live_threads(index, pid, threads));
            }
        }
        interval = if roster.update(&alive, start.elapsed())? {
            options.poll
        } else {
            (interval * 2).min(options.max_poll.max(options.poll))
        };
        launched.wait_any(interval);
    }
    // Every leader has exited (unreaped until `launched` is dropped, so each group id is still
    // the command's); threads still marked alive have exited with it. Whatever is left in a group
    // gets SIGKILL; wait (briefly) until the kernel has removed it.
    roster.update(&[], start.elapsed())?;
    launched.kill_groups_and_wait(Duration::from_secs(1));
    let mut last_exit = start;
    let outcomes = commands
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let running = launched.running[index].as_ref();
            let finished = running.and_then(|r| r.finished);
            if let Some((at, _)) = finished {
                last_exit = last_exit.max(at);
            }
            let status = statuses[index].clone().unwrap_or_else(|| match finished {
                Some((_, status)) => launch::status_of(status, None),
                None => CommandStatus::FailedToStart {
                    reason: "not started".into(),
                },
            });
            let threads = roster.threads();
            CommandOutcome {
                label: command.label.clone(),
                argv: command.argv.clone(),
                pid: running.map(|r| r.pid),
                status,
                wall_s: running
                    .zip(finished)
                    .map(|(r, (at, _))| (at - r.started).as_secs_f64()),
                threads_seen: threads.iter().filter(|t| t.command == index).count(),
                processes_seen: processes_seen[index].len(),
                leftovers_killed: leftovers[index],
            }
        })
        .collect();
    Ok(CorunReport {
        algorithm: options.algorithm,
        commands: outcomes,
        system_time_s: (last_exit - start).as_secs_f64(),
        remaps: roster.remaps(),
        threads: roster.threads(),
        pin_failures: roster.failures().to_vec(),
        stopped,
    })
}

/// Maps the threads of processes that are already running — each with its descendants — with
/// `algorithm`, and pins them (`map --pid`). `targets` pairs each process id with the mix of its
/// threads, if known. With `follow`, it keeps watching (10 ms after a change, up to 100 ms) and
/// re-maps as threads come and go until every target has exited or `follow` is set; without, it
/// maps once.
///
/// # Errors
/// [`CorunError::NoCommands`] for no target, [`CorunError::NoSuchProcess`] for a process that
/// does not exist, [`CorunError::NotThisSystem`] for a planned topology.
///
/// # Examples
///
/// ```
/// use parbench_mapper::corun::map_running;
/// use parbench_mapper::{Algorithm, Topology};
/// let mut child = std::process::Command::new("sleep").arg("2").spawn()?;
/// let pid = child.id() as i32;
/// let topology = Topology::this_system()?;
/// let threads = map_running(&topology, &[(pid, None)], Algorithm::RoundRobin, None)?;
/// assert_eq!(threads[0].tid, pid);
/// assert_eq!(threads[0].cpu, Some(topology.pus()[0].os_index));
/// child.kill()?;
/// child.wait()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn map_running(
    topology: &Topology,
    targets: &[(Pid, Option<InstructionMix>)],
    algorithm: Algorithm,
    follow: Option<&AtomicBool>,
) -> Result<Vec<PinnedThread>, CorunError> {
    if targets.is_empty() {
        return Err(CorunError::NoCommands);
    }
    if algorithm != Algorithm::Os && !topology.is_this_system() {
        return Err(not_this_system(topology));
    }
    let running = |processes: &[ProcessStat], pid: Pid| {
        processes
            .iter()
            .find(|p| p.pid == pid)
            .map(running_threads)
            .unwrap_or_default()
    };
    let processes = all_processes();
    if let Some(&(pid, _)) = targets
        .iter()
        .find(|(pid, _)| running(&processes, *pid).is_empty())
    {
        return Err(CorunError::NoSuchProcess { pid });
    }
    let mixes = targets
        .iter()
        .map(|(_, mix)| mix.unwrap_or_default())
        .collect();
    let mut roster = Roster::new(topology, algorithm, mixes);
    let start = Instant::now();
    let (fast, slow) = (Duration::from_millis(10), Duration::from_millis(100));
    let mut interval = fast;
    let mut processes = processes;
    loop {
        let mut alive = Vec::new();
        for (index, &(pid, _)) in targets.iter().enumerate() {
            for member in descendants(pid, &processes) {
                alive.extend(live_threads(index, member, running(&processes, member)));
            }
        }
        let changed = roster.update(&alive, start.elapsed())?;
        // Relaxed: a plain stop flag, nothing is published through it.
        let following = follow.is_some_and(|stop| !stop.load(Ordering::Relaxed));
        if !following || alive.is_empty() {
            break;
        }
        interval = if changed {
            fast
        } else {
            (interval * 2).min(slow)
        };
        std::thread::sleep(interval);
        processes = all_processes();
    }
    Ok(roster.threads())
}

fn not_this_system(topology: &Topology) -> CorunError {
    CorunError::NotThisSystem {
        topology: topology
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// A command whose grandchild leaves its group and session by a double fork under `setsid` and
/// is orphaned at once, then spins until told to stop; the command exits 300 ms after the
/// grandchild started, telling it to stop first or not. For the tests that it is still reached.
#[cfg(test)]
pub(crate) struct OrphanedGrandchild {
    /// Where the grandchild writes its pid; `.done` beside it tells it to stop.
    pid_file: std::path::PathBuf,
}

#[cfg(test)]
impl OrphanedGrandchild {
    /// `None`, saying the test is skipped, without a `setsid` program.
    pub(crate) fn new(name: &str) -> Option<OrphanedGrandchild> {
        let setsid = std::process::Command::new("setsid").arg("true").status();
        if !setsid.is_ok_and(|status| status.success()) {
            eprintln!("SKIPPED: no setsid program to start a process outside the session");
            return None;
        }
        let pid_file =
            std::env::temp_dir().join(format!("orphan-{name}-{}.pid", std::process::id()));
        let _ = std::fs::remove_file(&pid_file);
        let _ = std::fs::remove_file(pid_file.with_extension("done"));
        Some(OrphanedGrandchild { pid_file })
    }

    /// The command (`sh -c SCRIPT`); with `stop_it`, it tells the grandchild to stop before it
    /// exits, else the grandchild spins on until killed (or this value is dropped).
    pub(crate) fn argv(&self, stop_it: bool) -> Vec<String> {
        let pid = self.pid_file.display();
        let done = self.pid_file.with_extension("done");
        let done = done.display();
        let script = format!(
            "(setsid sh -c 'echo $$ > {pid}.tmp; mv {pid}.tmp {pid}; \
               while [ ! -e {done} ]; do :; done' &); \
             while [ ! -e {pid} ]; do sleep 0.01; done; sleep 0.3; {stop}",
            stop = if stop_it {
                format!("touch {done}")
            } else {
                "true".to_owned()
            }
        );
        vec!["sh".to_owned(), "-c".to_owned(), script]
    }

    /// The grandchild's pid, once the command has run.
    pub(crate) fn pid(&self) -> Pid {
        std::fs::read_to_string(&self.pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

#[cfg(test)]
impl Drop for OrphanedGrandchild {
    fn drop(&mut self) {
        let _ = std::fs::write(self.pid_file.with_extension("done"), "");
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(algorithm: Algorithm) -> CorunOptions {
        CorunOptions {
            algorithm,
            output: ChildOutput::Null,
            poll: Duration::from_millis(5),
            ..CorunOptions::default()
        }
    }

    fn sh(script: &str) -> CommandSpec {
        CommandSpec::new(vec!["sh".into(), "-c".into(), script.into()])
    }

    #[test]
    fn the_report_counts_in_the_singular_and_the_plural() {
        let outcome = |processes, threads, leftovers| CommandOutcome {
            label: "sh".into(),
            argv: vec!["sh".into()],
            pid: Some(42),
            status: CommandStatus::Exited { code: 0 },
            wall_s: Some(0.5),
            threads_seen: threads,
            processes_seen: processes,
            leftovers_killed: leftovers,
        };
        let report = |commands, remaps| CorunReport {
            algorithm: Algorithm::Os,
            commands,
            system_time_s: 0.5,
            remaps,
            threads: Vec::new(),
            pin_failures: Vec::new(),
            stopped: None,
        };
        for (count, counted, mappings) in [
            (
                1,
                "1 process, 1 thread seen, 1 leftover process killed",
                "1 mapping",
            ),
            (
                2,
                "2 processes, 2 threads seen, 2 leftover processes killed",
                "2 mappings",
            ),
        ] {
            let text = report(vec![outcome(count, count, count)], count).to_string();
            let wall = format!("wall time: 0.500 s, {counted}\n");
            assert!(text.contains(&wall), "{text}");
            let end = format!("(first start to last exit), {mappings}\n");
            assert!(text.ends_with(&end), "{text}");
        }
    }

    fn group_members(pgid: Pid) -> Vec<Pid> {
        all_processes()
            .into_iter()
            .filter(|p| p.pgrp == pgid && p.state != 'Z')
            .map(|p| p.pid)
            .collect()
    }

    #[test]
    fn the_timeout_stops_every_command_and_says_so() {
        let topology = Topology::this_system().unwrap();
        let options = CorunOptions {
            timeout: Some(Duration::from_millis(200)),
            ..quiet(Algorithm::RoundRobin)
        };
        let stop = AtomicBool::new(false);
        let report = corun(&topology, &[sh("sleep 30 & sleep 30")], &options, &stop).unwrap();
        assert_eq!(report.stopped, Some(StopReason::Timeout));
        assert_eq!(
            report.commands[0].status,
            CommandStatus::Signalled {
                signal: libc::SIGTERM,
                stopped_by: Some(StopReason::Timeout)
            }
        );
        assert!(report.system_time_s < 5.0, "{report}");
        assert!(group_members(report.commands[0].pid.unwrap()).is_empty());
    }

    #[test]
    fn what_a_command_leaves_in_its_group_is_killed_when_it_exits() {
        let topology = Topology::this_system().unwrap();
        let stop = AtomicBool::new(false);
        // The shell exits at once, leaving a background sleep in its process group.
        let commands = [sh("sleep 30 & sleep 0.2; exit 0")];
        let report = corun(&topology, &commands, &quiet(Algorithm::Os), &stop).unwrap();
        let outcome = &report.commands[0];
        assert_eq!(outcome.status, CommandStatus::Exited { code: 0 });
        assert_eq!(outcome.leftovers_killed, 1, "{report}");
        assert_eq!(outcome.processes_seen, 3, "{report}"); // sh and both sleeps
        // `os` pins nothing.
        assert!(
            report
                .threads
                .iter()
                .all(|t| t.cpu.is_none() && t.pins.is_empty())
        );
        let deadline = Instant::now() + Duration::from_secs(2);
        while !group_members(outcome.pid.unwrap()).is_empty() {
            assert!(Instant::now() < deadline, "the leftover sleep survived");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn has_setsid() -> bool {
        std::process::Command::new("setsid")
            .arg("true")
            .status()
            .is_ok_and(|status| status.success())
    }

    /// Waits up to 2 s until none of `pids` is running; the ones still running then.
    fn still_running_after_a_while(pids: &[Pid]) -> Vec<Pid> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let running: Vec<Pid> = pids
                .iter()
                .copied()
                .filter(|&pid| crate::tasks::read_process_stat(pid).is_some_and(|p| p.state != 'Z'))
                .collect();
            if running.is_empty() || Instant::now() >= deadline {
                return running;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn what_a_command_leaves_outside_its_group_is_killed_too() {
        if !has_setsid() {
            eprintln!("SKIPPED: no setsid program to start a process outside the group");
            return;
        }
        let topology = Topology::this_system().unwrap();
        let stop = AtomicBool::new(false);
        // A shell in the group starts a sleep in a session (and group) of its own, and the
        // leader exits; then a command stopped by the timeout leaves one the same way.
        let exits = sh("sh -c 'setsid sleep 30 & wait' & sleep 0.2; exit 0");
        let report = corun(&topology, &[exits], &quiet(Algorithm::Os), &stop).unwrap();
        assert_eq!(report.commands[0].leftovers_killed, 2, "{report}");
        let timed_out = CorunOptions {
            timeout: Some(Duration::from_millis(200)),
            ..quiet(Algorithm::Os)
        };
        let stopped = corun(
            &topology,
            &[sh("setsid sleep 30 & wait")],
            &timed_out,
            &stop,
        )
        .unwrap();
        assert_eq!(stopped.stopped, Some(StopReason::Timeout));
        for report in [report, stopped] {
            // Single-threaded processes: every TID seen is a process id.
            let seen: Vec<Pid> = report.threads.iter().map(|t| t.tid).collect();
            assert!(seen.len() >= 2, "{report}");
            assert_eq!(
                still_running_after_a_while(&seen),
                Vec::<Pid>::new(),
                "{report}"
            );
        }
    }

    /// Runs an [`OrphanedGrandchild`]'s command (see [`OrphanedGrandchild::argv`]) under corun,
    /// pinning round-robin; `None` when skipped. Dropping the first value tells the grandchild
    /// to stop, so a test must keep it until its checks are done.
    fn corun_orphaned_grandchild(
        name: &str,
        stop_it: bool,
    ) -> Option<(OrphanedGrandchild, CorunReport)> {
        let orphan = OrphanedGrandchild::new(name)?;
        let topology = Topology::this_system().unwrap();
        let command = CommandSpec::new(orphan.argv(stop_it));
        let options = quiet(Algorithm::RoundRobin);
        let report = corun(&topology, &[command], &options, &AtomicBool::new(false)).unwrap();
        Some((orphan, report))
    }

    #[test]
    fn a_grandchild_orphaned_under_setsid_is_still_mapped() {
        let Some((orphan, report)) = corun_orphaned_grandchild("corun", true) else {
            return;
        };
        let pid = orphan.pid();
        // Single-threaded: its one TID is its pid. A scan may catch it in the group before its
        // setsid; it must stay found until it exits, at least 300 ms after the start (it
        // vanished from the scans at its setsid).
        let grandchild = report
            .threads
            .iter()
            .find(|t| t.tid == pid)
            .unwrap_or_else(|| panic!("grandchild {pid} not mapped: {report}"));
        assert!(grandchild.cpu.is_some(), "{report}");
        assert!(
            grandchild.gone_s.is_none_or(|gone| gone >= 0.3),
            "grandchild {pid} lost at {:?} s: {report}",
            grandchild.gone_s
        );
    }

    #[test]
    fn a_grandchild_orphaned_under_setsid_is_killed_when_the_command_exits() {
        let Some((orphan, report)) = corun_orphaned_grandchild("corun-left", false) else {
            return;
        };
        let pid = orphan.pid();
        // Re-parented to init when the command exited, it is no descendant any more; the scans
        // before saw it.
        assert_eq!(still_running_after_a_while(&[pid]), Vec::<Pid>::new());
        assert_eq!(report.commands[0].leftovers_killed, 1, "{report}");
    }

    #[test]
    fn following_a_running_process_catches_its_late_child_and_ends_with_it() {
        let topology = Topology::this_system().unwrap();
        // A shell that starts a second process after 150 ms and exits after 400 ms.
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 0.15; sleep 0.25"])
            .spawn()
            .unwrap();
        let pid = shell.id() as Pid;
        let stop = AtomicBool::new(false);
        let threads = map_running(
            &topology,
            &[(pid, None)],
            Algorithm::RoundRobin,
            Some(&stop),
        )
        .unwrap();
        shell.wait().unwrap();
        // The shell and both sleeps, each pinned while it ran, and all gone at the end.
        assert!(threads.len() >= 3, "{threads:?}");
        assert!(
            threads.iter().all(|t| !t.alive && !t.pins.is_empty()),
            "{threads:?}"
        );
        assert!(threads.iter().any(|t| t.first_seen_s >= 0.1), "{threads:?}");
    }

    #[test]
    fn a_set_stop_flag_stops_at_once_and_planned_topologies_are_refused() {
        let topology = Topology::this_system().unwrap();
        let stop = AtomicBool::new(true);
        let report = corun(
            &topology,
            &[sh("sleep 30")],
            &quiet(Algorithm::Scatter),
            &stop,
        )
        .unwrap();
        assert_eq!(report.stopped, Some(StopReason::Interrupted));
        let planned = Topology::synthetic("core:2 pu:2").unwrap();
        assert!(matches!(
            corun(&planned, &[sh("true")], &quiet(Algorithm::Scatter), &stop),
            Err(CorunError::NotThisSystem { .. })
        ));
        assert!(matches!(
            corun(
                &topology,
                &[CommandSpec::new(Vec::new())],
                &quiet(Algorithm::Os),
                &stop
            ),
            Err(CorunError::EmptyCommand { index: 0 })
        ));
    }
}
