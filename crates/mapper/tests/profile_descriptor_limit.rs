//! `profile_command` opens one descriptor per event on each thread it finds. With a PMU's dozen
//! events the usual soft limit of 1024 runs out near 90 threads, while the hard limit is often
//! far higher: profile_command raises the soft limit itself when it needs more (library callers
//! had to call `raise_descriptor_limit` first, as the CLI does). Beyond the hard limit, threads
//! left without counters are counted as not listed, and the scans of `/proc` must go on finding
//! them (with no descriptor left they failed, and later threads went unseen).
//!
//! `profile_threads` opens one descriptor per event on each of its threads, all open at once:
//! it raises the soft limit as well, and says when the hard limit is too low before the workload
//! runs (before, the threads failed part-way with `EMFILE`). Both need one descriptor free for
//! the probe, which opens each event alone (before, a limit with none free marked every event
//! unavailable, "Too many open files").
//!
//! The limits are process-wide and a lowered hard limit cannot be raised again without
//! privileges: each case lowers them in a child process, this test binary run again for one
//! test with `CHILD_CASE` set, so this process's limits are never touched.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use parbench_mapper::perf::{
    CommandProfile, Profile, ProfileError, ProfileRequest, Quantity, profile_command,
    profile_threads,
};

/// Names the case a child process runs; unset in the parent.
const CHILD_CASE: &str = "PARBENCH_DESCRIPTOR_LIMIT_CASE";

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

fn limits() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid rlimit we own.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    limit
}

/// The limit that leaves exactly `free` descriptor numbers unused below it: the limit bounds
/// numbers, and descriptors this process inherited may be open anywhere (a shell's fd 251 takes
/// none of the numbers below 64), so "open plus n" would leave more room on one machine than on
/// another.
fn limit_leaving(free: u64) -> u64 {
    let open: Vec<u64> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    // The listing's own descriptor is closed by now, and free.
    let is_free =
        |fd: &u64| !open.contains(fd) || std::fs::metadata(format!("/proc/self/fd/{fd}")).is_err();
    (0..).filter(is_free).nth(free as usize).unwrap()
}

/// In the child: lowers the soft limit to `soft` (and the hard one with `hard_too`).
fn lower_limits(soft: u64, hard_too: bool) {
    let before = limits();
    // Room above for the profiles' counters once the soft limit is raised.
    assert!(before.rlim_max > soft + 128, "{}", before.rlim_max);
    let lowered = libc::rlimit {
        rlim_cur: soft,
        rlim_max: if hard_too { soft } else { before.rlim_max },
    };
    // SAFETY: setrlimit reads a valid rlimit; lowering is always allowed. This is a child
    // process running this one test.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
}

/// Profiles 4 threads of a short spin under the software events, counting the runs.
fn profile_four_threads(runs: &AtomicUsize) -> Result<Profile, ProfileError> {
    profile_threads(&ProfileRequest::software_only("spin", 4), |_| {
        // Relaxed: a plain count, read after the threads were joined.
        runs.fetch_add(1, Ordering::Relaxed);
        std::hint::black_box((0..100_000u64).sum::<u64>());
    })
}

/// In the child: lowers the soft limit (and the hard one with `hard_too`) to room for the
/// inherited counters, profile_command's 16 spare descriptors and about two threads' counters
/// (`room` false: to one descriptor more than are open), then profiles the shell and four
/// sleeps, alive for a second (scans come every 50 ms at most).
fn profile_under_lowered_limit(room: bool, hard_too: bool) -> Result<CommandProfile, ProfileError> {
    let request = ProfileRequest::software_only("sh", 1);
    let events = request.events.len() as u64;
    let low = open_descriptors() + if room { 3 * events + 16 } else { 1 };
    lower_limits(low, hard_too);
    let script = "for i in 1 2 3 4; do sleep 1 & done; wait";
    let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
    profile_command(&argv, &request, None)
}

/// Runs `test` of this binary in a child process with [`CHILD_CASE`] set, and checks it passed.
fn run_in_child(test: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_CASE, test)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} failed in its child process ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// Whether this process is the child for `test`; in the parent, runs the child first.
fn is_child_for(test: &str) -> bool {
    if std::env::var(CHILD_CASE).as_deref() == Ok(test) {
        return true;
    }
    if std::env::var_os(CHILD_CASE).is_none() {
        run_in_child(test);
    }
    false
}

#[test]
fn a_low_soft_limit_is_raised_for_the_counters_without_the_caller_asking() {
    if !is_child_for("a_low_soft_limit_is_raised_for_the_counters_without_the_caller_asking") {
        return;
    }
    let profile = profile_under_lowered_limit(true, false).unwrap();
    assert_eq!(profile.threads_not_listed, 0, "{profile}");
    assert_eq!(profile.thread_ids.len(), 5, "{profile}");
    // Raised to the hard limit, which is far above the lowered soft one.
    let now = limits();
    assert_eq!(now.rlim_cur, now.rlim_max);
}

#[test]
fn threads_whose_counters_the_hard_limit_refuses_are_counted_as_not_listed() {
    if !is_child_for("threads_whose_counters_the_hard_limit_refuses_are_counted_as_not_listed") {
        return;
    }
    let profile = profile_under_lowered_limit(true, true).unwrap();
    let listed = profile.thread_ids.len();
    assert!(listed >= 1, "{profile}");
    assert!(profile.threads_not_listed >= 1, "{profile}");
    assert_eq!(listed + profile.threads_not_listed, 5, "{profile}");
    assert!(
        profile.to_string().contains("not listed per thread"),
        "{profile}"
    );
}

#[test]
fn a_soft_limit_too_low_for_the_totals_is_raised_too() {
    if !is_child_for("a_soft_limit_too_low_for_the_totals_is_raised_too") {
        return;
    }
    let profile = profile_under_lowered_limit(false, false).unwrap();
    assert_eq!(profile.thread_ids.len(), 5, "{profile}");
}

#[test]
fn a_hard_limit_too_low_for_the_totals_is_a_typed_error_naming_it() {
    if !is_child_for("a_hard_limit_too_low_for_the_totals_is_a_typed_error_naming_it") {
        return;
    }
    let error = profile_under_lowered_limit(false, true).unwrap_err();
    let limit = limits().rlim_cur;
    match &error {
        ProfileError::DescriptorLimit {
            limit: named, hard, ..
        } => assert_eq!((*named, *hard), (limit, limit), "{error}"),
        other => panic!("expected DescriptorLimit, got {other:?}"),
    }
    assert!(
        error.to_string().contains(&format!("the limit is {limit}")),
        "{error}"
    );
}

#[test]
fn profile_threads_raises_a_soft_limit_too_low_for_its_counters() {
    if !is_child_for("profile_threads_raises_a_soft_limit_too_low_for_its_counters") {
        return;
    }
    // Room for the probe only; the 4 threads need 12.
    lower_limits(limit_leaving(1), false);
    let runs = AtomicUsize::new(0);
    let profile = profile_four_threads(&runs).unwrap();
    assert!(profile.unavailable.is_empty(), "{profile}");
    for thread in 0..4 {
        let clock = profile.thread_totals(thread).unwrap()[&Quantity::TaskClockNs];
        assert!(clock.unwrap() > 0.0, "{profile}");
    }
    let now = limits();
    assert_eq!(now.rlim_cur, now.rlim_max);
}

#[test]
fn profile_threads_under_a_hard_limit_too_low_is_a_typed_error_before_the_workload_runs() {
    if !is_child_for(
        "profile_threads_under_a_hard_limit_too_low_is_a_typed_error_before_the_workload_runs",
    ) {
        return;
    }
    let low = limit_leaving(1);
    lower_limits(low, true);
    let runs = AtomicUsize::new(0);
    let error = profile_four_threads(&runs).unwrap_err();
    match &error {
        ProfileError::DescriptorLimit { limit, hard, .. } => {
            assert_eq!((*limit, *hard), (low, low), "{error}")
        }
        other => panic!("expected DescriptorLimit, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::Relaxed), 0, "the workload ran");
}

#[test]
fn no_descriptor_free_for_the_probe_leaves_the_events_available() {
    if !is_child_for("no_descriptor_free_for_the_probe_leaves_the_events_available") {
        return;
    }
    lower_limits(limit_leaving(0), false);
    let runs = AtomicUsize::new(0);
    let threads = profile_four_threads(&runs).unwrap();
    assert!(threads.unavailable.is_empty(), "{threads}");
    // Lowering the soft limit again is allowed: the hard one is where it was.
    lower_limits(limit_leaving(0), false);
    let argv: Vec<String> = ["sh", "-c", "true"].map(String::from).to_vec();
    let command = profile_command(&argv, &ProfileRequest::software_only("sh", 1), None).unwrap();
    assert!(command.profile.unavailable.is_empty(), "{command}");
}
