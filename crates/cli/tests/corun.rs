//! `corun`, `profile -- CMD` and `map --pid` on real, unmodified programs, checked from outside:
//! every thread's `Cpus_allowed_list` in `/proc/PID/task/TID/status` is sampled while the
//! command runs and compared with where the report says the mapping put it.
//!
//! Programs: Debian's `stress-ng` (multi-process; the tests that need it print SKIPPED without
//! it) and `tests/programs/late_threads.rs`, a small multi-threaded program compiled here with
//! `rustc`, which starts a thread late.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parbench_mapper::tasks::{Pid, all_processes, cpus_allowed, descendants, threads_of};
use serde_json::Value;
use support::{assert_bad_input, cli, cli_ok, scratch, text};

/// The compiled `late_threads` program, or why it could not be built.
fn late_threads() -> Result<&'static str, String> {
    static BUILT: OnceLock<Result<String, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs/late_threads.rs");
            let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("late_threads");
            let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
            let output = Command::new(&rustc)
                .args(["--edition", "2021", "-O", "-o"])
                .arg(&binary)
                .arg(&source)
                .output()
                .map_err(|e| format!("cannot run {rustc}: {e}"))?;
            if !output.status.success() {
                return Err(format!("rustc failed: {}", text(&output.stderr)));
            }
            Ok(binary.to_str().ok_or("non-UTF-8 path")?.to_owned())
        })
        .as_deref()
        .map_err(Clone::clone)
}

fn has_stress_ng() -> bool {
    Command::new("stress-ng")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Every distinct CPU list each thread (by TID) of `root`'s descendants had, in the order seen.
type Observations = BTreeMap<Pid, Vec<Vec<usize>>>;

/// Samples, every 3 ms until `done`, the `Cpus_allowed_list` of every thread of every
/// descendant of `root` (not `root` itself: that is parbench-cli).
fn watch_from_outside(root: Pid, done: Arc<AtomicBool>) -> std::thread::JoinHandle<Observations> {
    std::thread::spawn(move || {
        let mut seen = Observations::new();
        // Relaxed: a stop flag; the samples are handed over by join().
        while !done.load(Ordering::Relaxed) {
            let processes = all_processes();
            for pid in descendants(root, &processes)
                .into_iter()
                .filter(|&p| p != root)
            {
                for tid in threads_of(pid) {
                    if let Ok(cpus) = cpus_allowed(pid, tid) {
                        let list = seen.entry(tid).or_default();
                        if list.last() != Some(&cpus) {
                            list.push(cpus);
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(3));
        }
        seen
    })
}

/// Runs `parbench-cli args` while sampling from outside; returns (exit code, stdout, stderr,
/// observations).
fn corun_watched(args: &[&str]) -> (Option<i32>, String, String, Observations) {
    let child = Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("parbench-cli runs");
    let done = Arc::new(AtomicBool::new(false));
    let sampler = watch_from_outside(child.id() as Pid, Arc::clone(&done));
    let output = child.wait_with_output().expect("parbench-cli finishes");
    done.store(true, Ordering::Relaxed);
    let observations = sampler.join().expect("sampler");
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
        observations,
    )
}

fn read_json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written")).expect("JSON")
}

/// Pins held at least this long must have been seen by the 3 ms sampler (with a wide margin for
/// a sampler descheduled on a busy machine).
const HELD: f64 = 0.15;

/// Asserts that every pin the report lists that was held for at least [`HELD`] seconds (until
/// the next pin of the thread, or until it was gone) was seen from outside: the thread's
/// `Cpus_allowed_list` was exactly that CPU. Returns how many threads had such a pin.
fn assert_pins_seen_from_outside(report: &Value, observations: &Observations) -> usize {
    let threads = report["threads"].as_array().expect("threads");
    let mut checked = 0;
    for thread in threads {
        let tid = thread["tid"].as_i64().unwrap() as Pid;
        let pins: Vec<(f64, u64)> = thread["pins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_f64().unwrap(), p[1].as_u64().unwrap()))
            .collect();
        let end = thread["gone_s"].as_f64().unwrap_or(f64::INFINITY);
        let mut long_held = false;
        for (index, &(at, cpu)) in pins.iter().enumerate() {
            let until = pins.get(index + 1).map_or(end, |next| next.0);
            if until - at < HELD {
                continue;
            }
            long_held = true;
            let seen = observations.get(&tid).unwrap_or_else(|| {
                panic!("thread {tid} was never seen from outside: {observations:?}")
            });
            assert!(
                seen.contains(&vec![cpu as usize]),
                "thread {tid}: pinned to cpu {cpu} from {at:.3} s to {until:.3} s, outside saw {seen:?}"
            );
        }
        checked += usize::from(long_held);
    }
    checked
}

/// No process of the commands' process groups is left.
fn assert_no_process_left(report: &Value) {
    let groups: Vec<Pid> = report["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["pid"].as_i64().map(|p| p as Pid))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left: Vec<Pid> = all_processes()
            .into_iter()
            .filter(|p| groups.contains(&p.pgrp) && p.state != 'Z')
            .map(|p| p.pid)
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes left running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn late_threads_are_caught_and_every_thread_ends_where_the_mapping_put_it() {
    let program = match late_threads() {
        Ok(program) => program,
        Err(reason) => return eprintln!("SKIPPED: {reason}"),
    };
    let path = scratch("corun-late.json");
    let path_text = path.to_str().unwrap();
    // Command 0: 2 threads at once, one more after 250 ms, all until 1000 ms; command 1: 1 at
    // once, one after 150 ms, until 1300 ms. Between about 0.25 s and 1.0 s all 7 threads run.
    let (code, out, err, observations) = corun_watched(&[
        "corun",
        "--algorithm",
        "round-robin",
        "--poll-ms",
        "5",
        "-o",
        path_text,
        "--",
        program,
        "2",
        "250",
        "1000",
        ":::",
        program,
        "1",
        "150",
        "1300",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("cannot show"), "{out}");
    let report = read_json(&path);
    let commands = report["commands"].as_array().unwrap();
    for (index, threads) in [(0, 4), (1, 3)] {
        assert_eq!(
            commands[index]["status"],
            serde_json::json!({"Exited": {"code": 0}})
        );
        // main + early threads + the late one
        assert_eq!(commands[index]["threads_seen"], threads, "{out}");
    }
    let threads = report["threads"].as_array().unwrap();
    let tid = |t: &Value| t["tid"].as_i64().unwrap() as Pid;
    let first_seen = |t: &Value| t["first_seen_s"].as_f64().unwrap();
    // A command's late thread has its largest TID and cannot exist before LATE_AFTER_MS after
    // corun started it, so it was caught late — and pinned, and seen pinned from outside.
    for (command, late_after) in [(0, 0.25), (1, 0.15)] {
        let mine: Vec<&Value> = threads.iter().filter(|t| t["command"] == command).collect();
        let late = mine.iter().max_by_key(|t| tid(t)).unwrap();
        assert!(first_seen(late) >= late_after, "late thread {late}");
        assert!(late["cpu"].is_u64(), "late thread not pinned: {late}");
    }
    assert_eq!(assert_pins_seen_from_outside(&report, &observations), 7);
    // With all 7 threads running, round-robin puts thread i (commands in order, then in order of
    // arrival) on the i-th PU in topology order, modulo the PU count.
    let topology = parbench_mapper::Topology::this_system().unwrap();
    let cpus: Vec<usize> = topology.pus().iter().map(|pu| pu.os_index).collect();
    let mut order: Vec<&Value> = threads.iter().collect();
    order.sort_by(|a, b| {
        (a["command"].as_u64(), first_seen(a), tid(a))
            .partial_cmp(&(b["command"].as_u64(), first_seen(b), tid(b)))
            .unwrap()
    });
    let probe = 0.7; // all 7 threads alive
    for (position, thread) in order.iter().enumerate() {
        let held = thread["pins"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|p| p[0].as_f64().unwrap() <= probe)
            .map(|p| p[1].as_u64().unwrap() as usize);
        assert_eq!(
            held,
            Some(cpus[position % cpus.len()]),
            "thread {} at {probe} s: {report}",
            tid(thread)
        );
    }
    // Threads came and went: the first mapping, each arrival, each departure.
    assert!(report["remaps"].as_u64().unwrap() >= 3, "{report}");
    assert_no_process_left(&report);
}

#[test]
fn stress_ng_processes_are_mapped_by_their_declared_classes() {
    if !has_stress_ng() {
        return eprintln!("SKIPPED: stress-ng is not installed (scripts/deps.sh installs it)");
    }
    let fp = [
        "stress-ng",
        "--cpu",
        "2",
        "--cpu-method",
        "float64",
        "-t",
        "1",
    ];
    let int = [
        "stress-ng",
        "--cpu",
        "2",
        "--cpu-method",
        "int64",
        "-t",
        "1",
    ];
    let fp_profile = scratch("stress-fp.json");
    let int_profile = scratch("stress-int.json");
    for (command, class, path) in [(&fp, "fp", &fp_profile), (&int, "int", &int_profile)] {
        let mut args = vec![
            "profile",
            "--class",
            class,
            "-o",
            path.to_str().unwrap(),
            "--",
        ];
        args.extend_from_slice(command);
        let output = cli(&args);
        let out = text(&output.stdout);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(out.contains("counters cover all of its threads"), "{out}");
        // stress-ng's parent and its two workers, each with counters of its own
        assert!(out.contains("per thread (3 threads,"), "{out}");
        if !out.contains("instruction mix (measured)") {
            assert!(
                out.contains("hardware counters for instruction classes are unavailable here"),
                "{out}"
            );
        }
    }
    let path = scratch("corun-stress.json");
    let mut args = vec![
        "corun",
        "--algorithm",
        "instruction-aware",
        "--poll-ms",
        "5",
        "--profile",
        fp_profile.to_str().unwrap(),
        "--profile",
        int_profile.to_str().unwrap(),
        "-o",
        path.to_str().unwrap(),
        "--",
    ];
    args.extend_from_slice(&fp);
    args.push(":::");
    args.extend_from_slice(&int);
    let (code, out, err, observations) = corun_watched(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("command 0 mix: declared class fp") || out.contains("command 0 mix: measured"),
        "{out}"
    );
    let report = read_json(&path);
    for command in report["commands"].as_array().unwrap() {
        assert_eq!(
            command["status"],
            serde_json::json!({"Exited": {"code": 0}}),
            "{out}"
        );
        // the stress-ng parent and its two workers
        assert_eq!(command["processes_seen"], 3, "{out}");
    }
    assert_eq!(assert_pins_seen_from_outside(&report, &observations), 6);
    assert_no_process_left(&report);
}

#[test]
fn failed_quick_and_killed_commands_are_reported_and_the_rest_still_pinned() {
    let program = match late_threads() {
        Ok(program) => program,
        Err(reason) => return eprintln!("SKIPPED: {reason}"),
    };
    let path = scratch("corun-failures.json");
    let (code, out, err, observations) = corun_watched(&[
        "corun",
        "--algorithm",
        "compact",
        "--poll-ms",
        "5",
        "-o",
        path.to_str().unwrap(),
        "--",
        "no-such-program-here",
        ":::",
        "sh",
        "-c",
        "exit 3",
        ":::",
        "sh",
        "-c",
        "kill -9 $$",
        ":::",
        program,
        "1",
        "100",
        "500",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let report = read_json(&path);
    let status = |index: usize| report["commands"][index]["status"].clone();
    assert!(
        status(0)["FailedToStart"]["reason"]
            .as_str()
            .unwrap()
            .contains("No such file")
    );
    assert_eq!(status(1), serde_json::json!({"Exited": {"code": 3}}));
    assert_eq!(
        status(2),
        serde_json::json!({"Signalled": {"signal": 9, "stopped_by": null}})
    );
    assert_eq!(status(3), serde_json::json!({"Exited": {"code": 0}}));
    assert!(out.contains("failed to start: No such file"), "{out}");
    assert!(out.contains("killed by signal 9 (SIGKILL)"), "{out}");
    assert!(report["commands"][0]["wall_s"].is_null());
    assert_eq!(report["commands"][3]["threads_seen"], 3);
    assert!(assert_pins_seen_from_outside(&report, &observations) >= 3);
    assert_no_process_left(&report);
}

/// A command that cannot start is part of the result when others ran: their measurements are kept
/// (exit 0, `FailedToStart` in the report), unlike a `corun` where nothing could start (exit 2,
/// `bad_input::corun_where_no_command_can_start_is_a_one_line_error`).
#[test]
fn a_command_that_cannot_start_is_reported_beside_the_commands_that_ran() {
    let path = scratch("corun-partly-started.json");
    let (out, _) = cli_ok(&[
        "corun",
        "--algorithm",
        "compact",
        "-o",
        path.to_str().unwrap(),
        "--",
        "true",
        ":::",
        "/nonexistent/cmd",
        "x",
    ]);
    let report = read_json(&path);
    assert_eq!(
        report["commands"][0]["status"],
        serde_json::json!({"Exited": {"code": 0}})
    );
    assert!(
        report["commands"][1]["status"]["FailedToStart"]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("No such file")),
        "{report}"
    );
    assert!(out.contains("failed to start: No such file"), "{out}");
    assert!(out.contains("status: exit 0"), "{out}");
}

/// A `corun --compare` whose later run fails with an error (here its only command no longer
/// exists, so nothing could start) keeps the runs finished before it, as an interrupted one does:
/// on stdout as the table and in `-o` marked `stopped`, one error line, exit 2.
#[test]
fn a_corun_compare_whose_later_run_fails_keeps_the_runs_it_finished() {
    for to_file in [true, false] {
        let script = scratch("corun-vanishing.sh");
        // Its first run removes it, so the second cannot start it.
        std::fs::write(&script, "#!/bin/sh\nrm \"$0\"\n").expect("the script");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("an executable script");
        let path = scratch("corun-compare-failed.json");
        let mut args = vec!["corun", "--compare", "--repeat", "2", "--algorithms", "os"];
        if to_file {
            args.extend(["-o", path.to_str().unwrap()]);
        }
        args.extend(["--", script.to_str().unwrap()]);
        let output = cli(&args);
        let (out, err) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(2), "{err}");
        let place = if to_file {
            format!("in {}", path.display())
        } else {
            "on stdout".to_owned()
        };
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "one error line: {err}");
        let line = errors[0];
        assert!(
            line.starts_with("error: run 2/2 (os) failed: no command could be started")
                && line.ends_with(&format!("; 1 of 2 runs kept {place}")),
            "{line}"
        );
        assert!(err.starts_with("run 1/2: os, system time"), "{err}");
        assert!(!err.contains("report written"), "{err}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("os ") && l.split_whitespace().nth(1) == Some("1")),
            "the table of the run kept: {out}"
        );
        if to_file {
            let report = read_json(&path);
            assert_eq!(report["planned_runs"], 2);
            assert_eq!(report["stopped"], line["error: ".len()..]);
            assert_eq!(report["runs"].as_array().map(Vec::len), Some(1), "{report}");
        }
    }
}

/// A report that cannot be printed (stdout on a full device) is still written to `-o`, and the
/// failed print is the one error line (exit 2).
#[test]
fn a_failed_print_does_not_keep_corun_from_writing_its_report() {
    let path = scratch("corun-full-stdout.json");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(["corun", "--algorithm", "os", "-o", path.to_str().unwrap()])
        .args(["--", "true"])
        .stdout(full)
        .output()
        .expect("parbench-cli runs");
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(errors[0].starts_with("error: cannot write -: "), "{err}");
    let report = read_json(&path);
    assert_eq!(
        report["commands"][0]["status"],
        serde_json::json!({"Exited": {"code": 0}})
    );
}

fn spawn_cli(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("parbench-cli runs")
}

#[test]
fn a_signal_to_corun_stops_every_command_and_leaves_none_behind() {
    let program = match late_threads() {
        Ok(program) => program,
        Err(reason) => return eprintln!("SKIPPED: {reason}"),
    };
    let path = scratch("corun-signal.json");
    let child = spawn_cli(&[
        "corun",
        "--poll-ms",
        "5",
        "-o",
        path.to_str().unwrap(),
        "--",
        program,
        "2",
        "50",
        "60000",
        ":::",
        "sh",
        "-c",
        "sleep 60 & sleep 60",
    ]);
    let cli_pid = child.id() as Pid;
    // Wait until both commands run (program + sh + its two sleeps).
    let deadline = Instant::now() + Duration::from_secs(5);
    while descendants(cli_pid, &all_processes()).len() < 5 {
        assert!(Instant::now() < deadline, "commands did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: kill with a valid pid and signal number; no memory is involved.
    assert_eq!(unsafe { libc::kill(cli_pid, libc::SIGTERM) }, 0);
    let started = Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "corun did not stop in time"
    );
    let err = text(&output.stderr);
    // The report is kept, and the signal decides the exit code, as for sweep.
    assert_eq!(output.status.code(), Some(128 + libc::SIGTERM), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        errors,
        [format!(
            "error: interrupted by SIGTERM: every command was stopped, the report is on stdout \
             and in {}",
            path.display()
        )],
        "one error line: {err}"
    );
    assert!(!err.contains("report written"), "{err}");
    let report = read_json(&path);
    assert_eq!(report["stopped"], "Interrupted");
    for command in report["commands"].as_array().unwrap() {
        assert_eq!(
            command["status"]["Signalled"]["stopped_by"], "Interrupted",
            "{command}"
        );
    }
    assert!(text(&output.stdout).contains("stopped by corun: interrupted"));
    assert_no_process_left(&report);
}

#[test]
fn compare_reports_every_algorithm_normalised_to_os() {
    let program = match late_threads() {
        Ok(program) => program,
        Err(reason) => return eprintln!("SKIPPED: {reason}"),
    };
    let path = scratch("corun-compare.json");
    let output = cli(&[
        "corun",
        "--compare",
        "--repeat",
        "2",
        "--algorithms",
        "round-robin,scatter",
        "-o",
        path.to_str().unwrap(),
        "--",
        program,
        "1",
        "20",
        "150",
        ":::",
        program,
        "1",
        "20",
        "150",
    ]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.contains("cannot show"), "{out}");
    assert!(out.contains("t(0.975, n−1)"), "{out}");
    assert!(out.contains("no command has a known mix"), "{out}");
    let report = read_json(&path);
    let rows = report["comparison"]["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["round-robin", "scatter", "os"]);
    for row in rows {
        assert_eq!(row["system_times_s"].as_array().unwrap().len(), 2, "{row}");
        assert!(row["ci95_s"].is_array(), "{row}");
    }
    assert_eq!(rows[2]["vs_os"], 1.0);
    // Every run ran under its algorithm, in a shuffled order.
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let os_line = out.lines().find(|l| l.starts_with("os ")).expect("os row");
    assert!(os_line.contains("1.000"), "{os_line}");
}

#[test]
fn map_pid_pins_the_threads_of_a_running_program() {
    let program = match late_threads() {
        Ok(program) => program,
        Err(reason) => return eprintln!("SKIPPED: {reason}"),
    };
    // Held for a minute (killed below): the test waits for the threads, not for a time.
    let mut target = Command::new(program)
        .args(["2", "10", "60000"])
        .spawn()
        .unwrap();
    let pid = target.id() as Pid;
    wait_for_threads(pid, 4);
    let pid_text = pid.to_string();
    let (out, _) = cli_ok(&[
        "map",
        "--pid",
        &pid_text,
        "--class",
        "fp",
        "--algorithm",
        "scatter",
    ]);
    let mut checked = 0;
    for line in out
        .lines()
        .filter(|l| l.trim_start().starts_with("process"))
    {
        // "  process P thread T -> cpu C"
        let words: Vec<&str> = line.split_whitespace().collect();
        let tid: Pid = words[3].parse().unwrap();
        let cpu: usize = words[6].parse().unwrap();
        assert_eq!(cpus_allowed(pid, tid).unwrap(), vec![cpu], "{line}");
        checked += 1;
    }
    assert_eq!(checked, 4, "main + 2 early + 1 late thread: {out}");
    target.kill().unwrap();
    target.wait().unwrap();
}

/// Waits until process `pid` has at least `count` threads. A fixed sleep in its place raced the
/// program's start: on a loaded machine its late thread could come after the sleep, and `map`
/// pinned three threads of four.
fn wait_for_threads(pid: Pid, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while threads_of(pid).len() < count {
        assert!(
            Instant::now() < deadline,
            "process {pid} did not reach {count} threads"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `parbench-cli profile -o PATH -- sh -c SCRIPT`'s arguments.
fn profile_sh_args<'a>(path: &'a std::path::Path, script: &'a str) -> [&'a str; 7] {
    let path = path.to_str().unwrap();
    ["profile", "-o", path, "--", "sh", "-c", script]
}

#[test]
fn profile_says_on_stdout_stderr_and_in_json_that_threads_beyond_the_cap_are_not_listed() {
    // 300 single-threaded sleeps and their shell, all alive for 3 s (scans come every 50 ms at
    // most): at most 256 get per-thread counters (fewer where a PMU's many events would use up
    // the descriptor limit), the others are counted.
    let script = "i=0; while [ $i -lt 300 ]; do sleep 3 & i=$((i+1)); done; wait";
    let path = scratch("profile-many-threads.json");
    let (out, err) = cli_ok(&profile_sh_args(&path, script));
    let report = read_json(&path);
    let listed = report["thread_ids"].as_array().unwrap().len();
    let not_listed = report["threads_not_listed"].as_u64().unwrap() as usize;
    assert!(listed <= 256 && not_listed >= 45, "{out}");
    assert_eq!(listed + not_listed, 301, "{out}");
    assert!(
        out.contains(&format!("per thread ({listed} threads,")),
        "{out}"
    );
    let note = format!("{not_listed} more threads of this command are not listed per thread");
    assert!(out.contains(&note), "{out}");
    assert!(err.contains(&format!("warning: {note}")), "{err}");
}

#[test]
fn profile_raises_its_descriptor_limit_for_the_counters_and_not_for_the_command() {
    // Under a soft limit of 64 descriptors, only a dozen of 41 threads would get per-thread
    // counters; the hard limit is the bound once profile raises the soft one. The command
    // itself must still run under 64 (`ulimit -Sn` prints it to parbench-cli's stderr).
    let soft: u64 = 64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid rlimit we own.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    if limit.rlim_max < 1024 {
        eprintln!(
            "SKIPPED: descriptor limit raise: hard limit {}",
            limit.rlim_max
        );
        return;
    }
    let lowered = libc::rlimit {
        rlim_cur: soft,
        ..limit
    };
    // `ulimit` and `printf` are builtins: a command substitution would fork a short-lived 42nd
    // process, listed or not depending on whether a scan caught it.
    let script = "i=0; while [ $i -lt 40 ]; do sleep 2 & i=$((i+1)); done; \
                  printf 'soft limit '; ulimit -Sn; wait";
    let path = scratch("profile-descriptor-limit.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_parbench-cli"));
    command.args(profile_sh_args(&path, script));
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit (a bare
    // system call) on a value it reads; lowering a soft limit is always allowed.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = command.output().unwrap();
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{err}");
    let report = read_json(&path);
    let listed = report["thread_ids"].as_array().unwrap().len();
    let not_listed = report["threads_not_listed"].as_u64().unwrap();
    assert_eq!((listed, not_listed), (41, 0), "{out}");
    assert!(err.contains(&format!("soft limit {soft}\n")), "{err}");
}

#[test]
fn bad_corun_input_is_one_line() {
    assert_bad_input(
        &["corun", "--algorithm", "best", "--", "true"],
        &["unknown mapping algorithm"],
    );
    assert_bad_input(
        &["corun", "--", "true", ":::"],
        &["command 2 after `--` is empty"],
    );
    assert_bad_input(
        &["corun", "--profile", "/nonexistent/p.json", "--", "true"],
        &["/nonexistent/p.json"],
    );
    assert_bad_input(
        &["corun", "--timeout", "0", "--", "true"],
        &["positive number of seconds"],
    );
    assert_bad_input(&["map", "--pid", "2147483646"], &["no process 2147483646"]);
    assert_bad_input(
        &["profile", "--class", "simd", "--", "true"],
        &["unknown instruction class"],
    );
    assert_bad_input(
        &["profile", "--class", "fp", "--kernel", "fp-add"],
        &["--class is for profiling a command"],
    );
}

#[test]
fn map_pid_follow_catches_a_late_thread_and_returns_when_the_program_exits() {
    let program = match late_threads() {
        Ok(program) => program,
        Err(reason) => return eprintln!("SKIPPED: {reason}"),
    };
    // One thread at once, one after 200 ms, exit after 600 ms.
    let mut target = Command::new(program)
        .args(["1", "200", "600"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let pid_text = target.id().to_string();
    let (out, err) = cli_ok(&["map", "--pid", &pid_text, "--follow"]);
    target.wait().unwrap();
    assert!(
        err.contains("following until the process exits (Ctrl-C stops following)"),
        "{err}"
    );
    assert!(out.contains("followed until exit"), "{out}");
    let threads = out
        .lines()
        .filter(|l| l.trim_start().starts_with("process"))
        .count();
    assert_eq!(threads, 3, "main, early and late thread: {out}");
}

#[test]
fn a_profile_gives_its_mix_to_every_copy_of_its_command_and_only_one_profile_per_command() {
    let first = scratch("corun-true-first.json");
    let first_text = first.to_str().expect("UTF-8 path");
    cli_ok(&["profile", "--class", "fp", "-o", first_text, "--", "true"]);
    // Two copies of one program (the study's scenario B): the second had an unknown mix.
    let (out, _) = cli_ok(&[
        "corun",
        "--profile",
        first_text,
        "--",
        "true",
        ":::",
        "true",
    ]);
    for copy in [
        "command 0 mix: declared class fp",
        "command 1 mix: declared class fp",
    ] {
        assert!(out.contains(copy), "{out}");
    }
    // A second profile of the command replaced the first's mix without a word.
    let second = scratch("corun-true-second.json");
    std::fs::copy(&first, &second).expect("profile copied");
    let second_text = second.to_str().expect("UTF-8 path");
    assert_bad_input(
        &[
            "corun",
            "--profile",
            first_text,
            "--profile",
            second_text,
            "--",
            "true",
        ],
        &[
            "corun-true-first.json and ",
            "corun-true-second.json are both of `true`",
        ],
    );
}
