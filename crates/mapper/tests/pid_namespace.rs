//! `corun` and `profile -- CMD` run as PID 1 of a PID namespace (as in a container), where they
//! can also make the kernel reuse a TID on demand: each test runs this binary again, alone, as
//! root of new user and PID namespaces with their own `/proc` (`unshare`), where the commands can
//! set the next PID (`/proc/sys/kernel/ns_last_pid`) — as can the test itself, to check that
//! `signal_process` leaves alone a process that got a listed one's PID. It prints SKIPPED where
//! such namespaces cannot be made. A binary of its own: inside, nothing else may create threads
//! meanwhile.

use std::process::{Child, Command};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use parbench_mapper::corun::{
    ChildOutput, CommandSpec, CommandStatus, CorunOptions, CorunReport, corun, signal_process,
};
use parbench_mapper::perf::{ProfileRequest, profile_command};
use parbench_mapper::tasks::{ProcessStat, read_process_stat};
use parbench_mapper::{Algorithm, Topology};

/// Set in the environment of the run inside the namespaces.
const INSIDE: &str = "PARBENCH_PID_NAMESPACE_INSIDE";

/// Runs `inside` when this is the run inside the namespaces; otherwise runs test `name` of this
/// binary there and checks that it passed.
fn in_new_pid_namespace(name: &str, inside: fn()) {
    if std::env::var_os(INSIDE).is_some() {
        inside();
        return;
    }
    let output = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--mount-proc",
        ])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            eprintln!("SKIPPED: {name}: cannot run unshare: {error}");
            return;
        }
    };
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    if !output.status.success() && err.starts_with("unshare:") {
        eprintln!("SKIPPED: {name}: no user and PID namespaces here: {err}");
        return;
    }
    assert!(output.status.success(), "inside the namespaces: {out}{err}");
    assert!(
        out.contains("1 passed"),
        "inside the namespaces: {out}{err}"
    );
}

/// The first sleep exits and is reaped; the next PID is set back so that the second sleep gets
/// the first one's PID (and TID); the shell exits with 9 if it did not. Each sleep runs for half
/// a second: the scans of `profile_command` and `corun` come every 50 and 100 ms at most.
const SECOND_SLEEP_REUSES_THE_FIRSTS_PID: &str = "sleep 0.5 & first=$!; wait; \
     echo $((first - 1)) > /proc/sys/kernel/ns_last_pid; \
     sleep 0.5 & second=$!; wait; [ $first = $second ] || exit 9";

/// Runs `sh -c script` under corun, pinning nothing.
fn corun_script(script: &str) -> CorunReport {
    let topology = Topology::this_system().unwrap();
    let options = CorunOptions {
        algorithm: Algorithm::Os,
        output: ChildOutput::Null,
        ..CorunOptions::default()
    };
    let commands = [CommandSpec::new(
        ["sh", "-c", script].map(String::from).to_vec(),
    )];
    corun(&topology, &commands, &options, &AtomicBool::new(false)).unwrap()
}

#[test]
fn corun_as_pid_1_runs_its_commands() {
    in_new_pid_namespace("corun_as_pid_1_runs_its_commands", || {
        assert_eq!(std::process::id(), 1);
        let report = corun_script("exit 3");
        assert_eq!(report.commands[0].status, CommandStatus::Exited { code: 3 });
    });
}

#[test]
fn a_thread_that_reuses_an_exited_threads_tid_is_listed_too() {
    in_new_pid_namespace(
        "a_thread_that_reuses_an_exited_threads_tid_is_listed_too",
        || {
            let argv: Vec<String> = ["sh", "-c", SECOND_SLEEP_REUSES_THE_FIRSTS_PID]
                .map(String::from)
                .to_vec();
            let request = ProfileRequest::software_only("sh", 1);
            let profile = profile_command(&argv, &request, None).unwrap();
            assert_eq!(profile.exit_code, Some(0), "TID not reused: {profile}");
            let tids: Vec<_> = profile.thread_ids.iter().map(|id| id.tid).collect();
            assert_eq!(tids.len(), 3, "the shell and both sleeps: {profile}");
            assert_eq!(tids[1], tids[2], "{profile}");
            assert_eq!(profile.threads_not_listed, 0, "{profile}");
        },
    );
}

#[test]
fn corun_counts_a_process_that_reuses_an_exited_ones_pid_as_another() {
    in_new_pid_namespace(
        "corun_counts_a_process_that_reuses_an_exited_ones_pid_as_another",
        || {
            let report = corun_script(SECOND_SLEEP_REUSES_THE_FIRSTS_PID);
            let outcome = &report.commands[0];
            assert_eq!(
                outcome.status,
                CommandStatus::Exited { code: 0 },
                "PID not reused: {report}"
            );
            assert_eq!(
                outcome.processes_seen, 3,
                "the shell and both sleeps: {report}"
            );
            assert_eq!(outcome.threads_seen, 3, "{report}");
        },
    );
}

/// `sleep 60` as the leader of a process group of its own (as a shell starts a job), with its
/// `/proc/PID/stat`.
fn sleep_in_own_group() -> (Child, ProcessStat) {
    use std::os::unix::process::CommandExt;
    let child = Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap();
    let stat = read_process_stat(child.id() as i32).unwrap();
    (child, stat)
}

#[test]
fn a_process_that_reuses_a_listed_ones_pid_group_and_name_is_not_signalled() {
    in_new_pid_namespace(
        "a_process_that_reuses_a_listed_ones_pid_group_and_name_is_not_signalled",
        || {
            let (mut first, listed) = sleep_in_own_group();
            // Start times count clock ticks (1/100 s): the second sleep must start in a later
            // one for the two to differ at all.
            std::thread::sleep(Duration::from_millis(50));
            first.kill().unwrap();
            first.wait().unwrap();
            std::fs::write("/proc/sys/kernel/ns_last_pid", (listed.pid - 1).to_string()).unwrap();
            let (mut second, now) = sleep_in_own_group();
            assert_eq!(now.pid, listed.pid, "PID not reused");
            assert_eq!((&now.comm, now.pgrp), (&listed.comm, listed.pgrp));
            assert_ne!(now.start_time, listed.start_time);
            let signalled = signal_process(&listed, libc::SIGKILL);
            let second_alive = second.try_wait().unwrap().is_none();
            assert!(
                signal_process(&now, libc::SIGKILL),
                "the second sleep itself"
            );
            second.wait().unwrap();
            assert!(!signalled, "the first sleep's listing reached the second");
            assert!(second_alive);
        },
    );
}
