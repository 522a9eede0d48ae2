//! Profiling an unmodified command: its instruction mix for `corun --profile`.
//!
//! [`profile_command`] opens the counters on the calling thread *before* starting the command,
//! disabled, inherited and enabled at `exec`
//! ([`ThreadCounters::open_for_next_exec`](super::ThreadCounters::open_for_next_exec)): every
//! thread and child process the command creates gets its own copy of each counter, from its
//! first instruction, and the copies add up as they exit — so the totals cover all of the
//! command's threads, however late they start, and nothing of the profiler. The result is one
//! [`ThreadProfile`](super::ThreadProfile) holding the command's totals (the per-thread split
//! is not kept by inherited counters).
//!
//! Where the machine has no PMU the class counters are unavailable and the profile says so;
//! the user can declare the command's dominant class instead ([`CommandProfile::declared_class`]),
//! which [`CommandProfile::mix`] then uses.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::descriptors;
use super::profile::{counted_quantities, read_json_file};
use super::{MixSource, Profile, ProfileError, ProfileRequest, ThreadCounters, probe_events};
use crate::corun::ChildOutput;
use crate::corun::launch::{self, Launched, raise_descriptor_limit};
use crate::corun::{kill_leftovers, note_outside_group};
use crate::mix::{InstrClass, InstructionMix};
use crate::report::plural;
use crate::tasks::{Pid, all_processes, descendants, thread_start_time, threads_of};

/// Per-thread counters are opened on at most this many threads (each costs one descriptor per
/// event).
pub const MAX_PROFILED_THREADS: usize = 256;

/// Descriptors left free while per-thread counters are opened: scanning `/proc` for new threads
/// needs a few, and once none were left the scans failed and later threads went unseen.
const SPARE_DESCRIPTORS: u64 = 16;

/// Descriptors starting the command takes for a moment: the pipe that reports a failed `exec`,
/// the pidfd, and one to read `/proc`.
const DESCRIPTORS_TO_START: u64 = 4;

/// Identity of one profiled thread of a command.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CommandThread {
    /// Its process.
    pub pid: Pid,
    /// The thread id.
    pub tid: Pid,
    /// Seconds from the start of the command until it was seen and its counters opened.
    pub first_seen_s: f64,
}

/// The profile of one command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandProfile {
    /// Program and arguments, as `corun` matches them.
    pub command: Vec<String>,
    /// The class the user declared for it, used when the counters cannot measure the mix.
    pub declared_class: Option<InstrClass>,
    /// Counter totals over all of its threads and processes (one entry in `threads`).
    pub profile: Profile,
    /// Per thread, counted from when it was seen (`threads[i]` is `thread_ids[i]`); `None` in
    /// profiles written before per-thread counting existed.
    #[serde(default)]
    pub per_thread: Option<Profile>,
    /// Which thread each entry of `per_thread` is (a TID appears twice when the kernel gave an
    /// exited thread's TID to a later one).
    #[serde(default)]
    pub thread_ids: Vec<CommandThread>,
    /// Threads seen after [`MAX_PROFILED_THREADS`] had their counters, when more counters would
    /// have left too few file descriptors (each thread costs one per event), or whose counters
    /// the OS refused while they ran: they are in the totals (`profile`) but have no entry in
    /// `per_thread`.
    #[serde(default)]
    pub threads_not_listed: usize,
    /// Seconds from start to exit.
    pub wall_s: f64,
    /// Its exit code (`None` when a signal ended it).
    pub exit_code: Option<i32>,
}

impl CommandProfile {
    /// The command's mix — measured when the class counters were available, else the declared
    /// class — and where it came from.
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, CommandProfile, MixSource, ProfileRequest};
    /// use parbench_mapper::InstrClass;
    /// let profile = profile_threads(&ProfileRequest::software_only("x", 1), |_| {})?;
    /// let p = CommandProfile { command: vec!["x".into()], declared_class: Some(InstrClass::Fp),
    ///                          profile, per_thread: None, thread_ids: vec![],
    ///                          threads_not_listed: 0, wall_s: 0.1, exit_code: Some(0) };
    /// let (mix, source) = p.mix();
    /// assert_eq!((mix.unwrap().count(InstrClass::Fp), source), (1.0, MixSource::Declared));
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn mix(&self) -> (Option<InstructionMix>, MixSource) {
        let declared = self
            .declared_class
            .map(|class| InstructionMix::new([(class, 1.0)]));
        self.profile.workload_mix(declared)
    }

    /// One line saying how many threads have no per-thread entry because of the cap, if any did.
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, CommandProfile, ProfileRequest};
    /// let profile = profile_threads(&ProfileRequest::software_only("x", 1), |_| {})?;
    /// let mut p = CommandProfile { command: vec!["x".into()], declared_class: None, profile,
    ///                              per_thread: None, thread_ids: vec![], threads_not_listed: 0,
    ///                              wall_s: 0.1, exit_code: Some(0) };
    /// assert_eq!(p.threads_not_listed_note(), None);
    /// p.threads_not_listed = 3;
    /// assert!(p.threads_not_listed_note().unwrap().starts_with("3 more threads of this command are not"));
    /// p.threads_not_listed = 1;
    /// assert!(p.threads_not_listed_note().unwrap().starts_with("1 more thread of this command is not"));
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn threads_not_listed_note(&self) -> Option<String> {
        (self.threads_not_listed > 0).then(|| {
            format!(
                "{} of this command {} not listed per thread: per-thread counters stop at \
                 {MAX_PROFILED_THREADS} threads or when they would leave too few file descriptors \
                 under the hard limit (ulimit -Hn); the totals include {}",
                plural(self.threads_not_listed, "more thread"),
                if self.threads_not_listed == 1 {
                    "is"
                } else {
                    "are"
                },
                if self.threads_not_listed == 1 {
                    "it"
                } else {
                    "them"
                }
            )
        })
    }

    /// Reads a profile from a JSON file as serde writes it (`parbench-cli profile -o FILE --
    /// CMD`); this crate writes none (see [`profile`](super::profile)).
    ///
    /// # Errors
    /// [`ProfileError::File`] or [`ProfileError::Json`].
    pub fn read_json(path: impl AsRef<Path>) -> Result<CommandProfile, ProfileError> {
        read_json_file(path.as_ref())
    }
}

impl fmt::Display for CommandProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self
            .exit_code
            .map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"));
        writeln!(
            f,
            "command: {}\n{status}, wall time {:.3} s; counters cover all of its threads and child processes (inherited)",
            self.command.join(" "),
            self.wall_s
        )?;
        write!(f, "{}", self.profile)?;
        if let Some(per_thread) = &self.per_thread {
            writeln!(
                f,
                "per thread ({}, each counted from when it was seen):",
                plural(self.thread_ids.len(), "thread")
            )?;
            for (index, id) in self.thread_ids.iter().enumerate() {
                let totals = per_thread.thread_totals(index).unwrap_or_default();
                writeln!(
                    f,
                    "  process {} thread {} (seen at {:.3} s): {}",
                    id.pid,
                    id.tid,
                    id.first_seen_s,
                    counted_quantities(&totals)
                )?;
            }
        }
        if let Some(note) = self.threads_not_listed_note() {
            writeln!(f, "{note}")?;
        }
        let (mix, source) = self.mix();
        match (mix, source) {
            (Some(mix), MixSource::Measured) => writeln!(f, "instruction mix (measured): {mix}"),
            (Some(mix), _) => writeln!(
                f,
                "hardware counters for instruction classes are unavailable here: using the declared class {} ({mix})",
                self.declared_class.map_or("?", InstrClass::name)
            ),
            (None, _) => writeln!(
                f,
                "hardware counters for instruction classes are unavailable here and no class was declared: \
                 corun will treat this command's threads as of unknown mix (declare one with --class {})",
                InstrClass::NAMES.join("|")
            ),
        }
    }
}

/// Runs `argv` to completion with every event of `request` counted over all its threads and
/// child processes; the command's output goes to the caller's stderr. Must be called from a
/// thread that no other part of the program uses to start processes meanwhile.
///
/// Per-thread counters take one descriptor per event on each thread: when the soft limit on
/// open descriptors (`ulimit -n`) would stop them, it is raised to the hard limit, once and for
/// the rest of the process ([`raise_descriptor_limit`]; the command keeps the limit it started
/// with). Threads beyond the hard limit are in the totals but not listed
/// ([`CommandProfile::threads_not_listed`]).
///
/// The command runs as corun runs its commands: in a process group of its own, killed if the
/// calling thread dies. When it exits, whatever it left running (its group, and processes that
/// left the group) is killed; on an error or a panic part-way the whole group is killed and the
/// command reaped, so nothing of it outlives the call.
///
/// # Errors
/// [`ProfileError::CommandFailed`] when the command cannot start;
/// [`ProfileError::DescriptorLimit`] when even the hard limit on open descriptors leaves too
/// few for the counters of the command's totals; counter errors.
///
/// # Examples
///
/// ```
/// use parbench_mapper::perf::{profile_command, ProfileRequest, Quantity};
/// let argv = vec!["sh".to_owned(), "-c".to_owned(), "true".to_owned()];
/// let p = profile_command(&argv, &ProfileRequest::software_only("sh", 1), None)?;
/// assert_eq!(p.exit_code, Some(0));
/// assert!(p.profile.thread_totals(0).unwrap()[&Quantity::TaskClockNs].unwrap() > 0.0);
/// # Ok::<(), parbench_mapper::perf::ProfileError>(())
/// ```
pub fn profile_command(
    argv: &[String],
    request: &ProfileRequest,
    declared_class: Option<InstrClass>,
) -> Result<CommandProfile, ProfileError> {
    profile_command_listing(
        argv,
        request,
        declared_class,
        MAX_PROFILED_THREADS,
        &mut |_| Ok(()),
    )
}

/// [`profile_command`] with per-thread counters on at most `max_listed` threads; `after_scan`
/// sees the threads listed so far after each scan of `/proc`, and its error ends the profile.
fn profile_command_listing(
    argv: &[String],
    request: &ProfileRequest,
    declared_class: Option<InstrClass>,
    max_listed: usize,
    after_scan: &mut dyn FnMut(&[CommandThread]) -> Result<(), ProfileError>,
) -> Result<CommandProfile, ProfileError> {
    let command_failed = |source| ProfileError::CommandFailed {
        command: argv.join(" "),
        source,
    };
    if argv.is_empty() {
        return Err(command_failed(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty command",
        )));
    }
    if crate::tasks::ignores_sigchld() {
        // The child could not be waited for (ECHILD at the first look): it would run on unseen.
        return Err(command_failed(std::io::Error::other(
            "SIGCHLD is ignored in this process, so the command's exit could not be seen; set it \
             to its default (SIG_DFL) first",
        )));
    }
    // The probe opens one counter at a time.
    descriptors::make_room_for(1)?;
    let (available, unavailable) = probe_events(&request.events);
    // Each thread's counters take one descriptor per available event; the command's totals
    // take one set, which must fit.
    let per_thread = request
        .events
        .iter()
        .filter(|event| available.contains(event))
        .count() as u64;
    let open_before = descriptors::make_room_for(per_thread + DESCRIPTORS_TO_START)?;
    let mut counters = ThreadCounters::open_for_next_exec(&request.events, &available)?;
    // Started as corun starts its commands: in a process group of its own, killed if this thread
    // dies; `launched` owns it, so any early return or panic from here on kills its group and
    // reaps it, and nothing of it runs on after the profiler gave up.
    let running = launch::spawn(argv, ChildOutput::Stderr).map_err(command_failed)?;
    let (root, started) = (running.pid, running.started);
    let mut launched = Launched {
        running: vec![Some(running)],
    };
    // Each listed thread with its start time (a TID alone may be an exited thread's, reused).
    let mut watched: Vec<(CommandThread, u64, ThreadCounters)> = Vec::new();
    let mut listed: Vec<CommandThread> = Vec::new();
    let mut not_listed: Vec<(Pid, u64)> = Vec::new();
    // Per-thread counters stay open until the command exits. Open them only while enough stay
    // free for the scans.
    let descriptors_left = || {
        descriptors::limits()
            .0
            .saturating_sub(open_before)
            .saturating_sub(SPARE_DESCRIPTORS)
    };
    let mut left = descriptors_left();
    let mut limit_raised = false;
    let mut interval = Duration::from_millis(2);
    let mut outside_seen = Vec::new();
    let status = loop {
        let processes = all_processes();
        note_outside_group(root, &processes, &mut outside_seen);
        let mut found_new = false;
        for pid in descendants(root, &processes) {
            for tid in threads_of(pid) {
                let Some(start) = thread_start_time(pid, tid) else {
                    continue; // exited since the listing
                };
                let known = |(id, since, _): &(CommandThread, u64, ThreadCounters)| {
                    id.tid == tid && *since == start
                };
                if watched.iter().any(known) || not_listed.contains(&(tid, start)) {
                    continue;
                }
                let needed = (watched.len() as u64 + 1).saturating_mul(per_thread);
                if needed > left && !limit_raised {
                    // Once, when first needed, so that callers need not know: the soft limit
                    // (often 1024) up to the hard one. The command started with the soft limit
                    // as it was and keeps it.
                    limit_raised = true;
                    raise_descriptor_limit();
                    left = descriptors_left();
                }
                if watched.len() >= max_listed || needed > left {
                    not_listed.push((tid, start));
                    continue;
                }
                match ThreadCounters::open_on_thread(&request.events, &available, tid) {
                    // The thread exited and a new one got its TID between the look at its start
                    // time and the open: these counters are on the new thread, which the next
                    // scan finds with its own start time.
                    Ok(_) if thread_start_time(pid, tid).is_some_and(|now| now != start) => {}
                    Ok(counters) => {
                        let id = CommandThread {
                            pid,
                            tid,
                            first_seen_s: started.elapsed().as_secs_f64(),
                        };
                        watched.push((id, start, counters));
                        listed.push(id);
                        found_new = true;
                    }
                    // Out of descriptors after all (another part of the program took some): say
                    // so. Any other failure means the thread exited (ESRCH; a zombie thread is
                    // still listed in /proc), and it is simply not listed.
                    Err(ProfileError::Os { source, .. })
                        if matches!(source.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) =>
                    {
                        not_listed.push((tid, start));
                    }
                    Err(_) => {}
                }
            }
        }
        after_scan(&listed)?;
        if !launched.note_exits().is_empty() {
            // Unreaped until `launched` is dropped, so the group's id stays the command's.
            let Some(Some((_, status))) = launched.running[0].as_ref().map(|r| r.finished) else {
                unreachable!("note_exits reported the exit of the only command")
            };
            break status;
        }
        interval = if found_new {
            Duration::from_millis(2)
        } else {
            (interval * 2).min(Duration::from_millis(50))
        };
        // Wakes at once when the command exits.
        launched.wait_any(interval);
    };
    let wall_s = started.elapsed().as_secs_f64();
    // What the command left running dies with it, as under corun; once it has exited, its
    // counts are in the inherited totals.
    kill_leftovers(root, &all_processes(), &outside_seen);
    launched.kill_groups_and_wait(Duration::from_secs(1));
    let totals = counters.read(0)?;
    let mut thread_ids = Vec::with_capacity(watched.len());
    let mut threads = Vec::with_capacity(watched.len());
    for (index, (id, _, mut counters)) in watched.into_iter().enumerate() {
        threads.push(counters.read(index)?);
        thread_ids.push(id);
    }
    let profile = |threads| Profile {
        workload: argv.join(" "),
        family: request.family,
        threads,
        unavailable: unavailable.clone(),
    };
    Ok(CommandProfile {
        command: argv.to_vec(),
        declared_class,
        profile: profile(vec![totals]),
        per_thread: Some(profile(threads)),
        thread_ids,
        threads_not_listed: not_listed.len(),
        wall_s,
        exit_code: status.code(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::perf::Quantity;

    #[test]
    fn each_thread_gets_its_own_counters_from_when_it_is_seen() {
        // A child process starts 200 ms after the command and spins: it is found late, listed
        // with its own task clock, and the shell itself is listed first.
        let script = "sleep 0.2; (i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done) & wait";
        let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
        let profile =
            profile_command(&argv, &ProfileRequest::software_only("sh", 1), None).unwrap();
        let ids = &profile.thread_ids;
        assert_eq!(ids[0].tid, ids[0].pid, "the command itself first: {ids:?}");
        let late = ids
            .iter()
            .position(|id| id.first_seen_s >= 0.2)
            .unwrap_or_else(|| panic!("the late child was not seen: {ids:?}"));
        let per_thread = profile.per_thread.as_ref().unwrap();
        let clock = per_thread.thread_totals(late).unwrap()[&Quantity::TaskClockNs].unwrap();
        assert!(clock > 0.0);
        let per_thread_line = format!("per thread ({} threads, each counted from", ids.len());
        assert!(profile.to_string().contains(&per_thread_line), "{profile}");
    }

    #[test]
    fn a_grandchild_orphaned_under_setsid_is_profiled() {
        let Some(orphan) = crate::corun::OrphanedGrandchild::new("profile") else {
            return;
        };
        let request = ProfileRequest::software_only("sh", 1);
        let profile = profile_command(&orphan.argv(true), &request, None).unwrap();
        let pid = orphan.pid();
        let index = profile
            .thread_ids
            .iter()
            .position(|id| id.tid == pid)
            .unwrap_or_else(|| panic!("grandchild {pid} not profiled: {profile}"));
        let per_thread = profile.per_thread.as_ref().unwrap();
        let clock = per_thread.thread_totals(index).unwrap()[&Quantity::TaskClockNs].unwrap();
        assert!(clock > 0.0, "{profile}");
    }

    #[test]
    fn a_grandchild_orphaned_under_setsid_is_killed_when_the_command_exits() {
        let Some(orphan) = crate::corun::OrphanedGrandchild::new("profile-left") else {
            return;
        };
        let request = ProfileRequest::software_only("sh", 1);
        profile_command(&orphan.argv(false), &request, None).unwrap();
        let pid = orphan.pid();
        let deadline = Instant::now() + Duration::from_secs(2);
        while any_running(&[pid]) {
            assert!(Instant::now() < deadline, "grandchild {pid} left running");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn threads_beyond_the_cap_are_counted_and_said_to_be_unlisted() {
        // The shell and four sleeps, all alive for a second (scans come every 50 ms at most),
        // with per-thread counters on two of them.
        let script = "for i in 1 2 3 4; do sleep 1 & done; wait";
        let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
        let request = ProfileRequest::software_only("sh", 1);
        let profile = profile_command_listing(&argv, &request, None, 2, &mut |_| Ok(())).unwrap();
        assert_eq!(profile.thread_ids.len(), 2);
        assert_eq!(profile.threads_not_listed, 3, "{profile}");
        let text = profile.to_string();
        assert!(
            text.contains("3 more threads of this command are"),
            "{text}"
        );
        let json = serde_json::to_string(&profile).unwrap();
        assert!(json.contains("\"threads_not_listed\":3"), "{json}");
    }

    /// Whether any of `pids` is still a running process (a zombie is not).
    fn any_running(pids: &[Pid]) -> bool {
        pids.iter().any(|&pid| {
            crate::tasks::read_process_stat(pid).is_some_and(|p| crate::tasks::is_running(&p))
        })
    }

    #[test]
    fn a_profile_that_fails_or_panics_part_way_leaves_nothing_of_the_command_running() {
        // The shell and two sleeps of 30 s; the profile gives up (an error, then a panic) once
        // it has seen all three, and none may run on after it returned.
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & sleep 30 & wait"]
            .map(String::from)
            .to_vec();
        let request = ProfileRequest::software_only("sh", 1);
        for panics in [false, true] {
            let mut seen: Vec<Pid> = Vec::new();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                profile_command_listing(&argv, &request, None, 8, &mut |threads| {
                    seen = threads.iter().map(|t| t.pid).collect();
                    match (threads.len() >= 3, panics) {
                        (false, _) => Ok(()),
                        (true, false) => Err(ProfileError::NoThreads),
                        (true, true) => panic!("the profile panics part-way"),
                    }
                })
            }));
            match outcome {
                Ok(result) => assert!(matches!(result, Err(ProfileError::NoThreads))),
                Err(_) => assert!(panics),
            }
            assert_eq!(seen.len(), 3, "{seen:?}");
            let deadline = Instant::now() + Duration::from_secs(5);
            while any_running(&seen) {
                assert!(
                    Instant::now() < deadline,
                    "still running after the profile gave up (panics: {panics}): {seen:?}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    #[test]
    fn what_the_command_leaves_running_when_it_exits_is_killed_and_its_exit_code_reported() {
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & sleep 0.3; exit 4"]
            .map(String::from)
            .to_vec();
        let profile =
            profile_command(&argv, &ProfileRequest::software_only("sh", 1), None).unwrap();
        assert_eq!(profile.exit_code, Some(4));
        let pids: Vec<Pid> = profile.thread_ids.iter().map(|id| id.pid).collect();
        assert_eq!(pids.len(), 3, "the shell and both sleeps: {profile}");
        assert!(!any_running(&pids), "left running: {pids:?}");
    }

    #[test]
    fn a_missing_program_is_a_typed_error() {
        let argv = vec!["no-such-program-here".to_owned()];
        let result = profile_command(&argv, &ProfileRequest::software_only("x", 1), None);
        assert!(matches!(result, Err(ProfileError::CommandFailed { .. })));
    }
}
