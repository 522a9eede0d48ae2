//! What a sweep keeps when it is stopped from outside: a signal to it, or its round's child
//! process dying. Each test starts a sweep long enough to be caught mid-round, waits until the
//! round's child has reported a finished cell (by polling the child's round report in the
//! sweep's scratch directory, under a `TMPDIR` of the test's own), and then stops it.
//!
//! Likewise what `corun --compare` keeps when a signal stops it: its command leaves a file when
//! a run of it is under way, and the test signals once that file appears.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use parbench_cli::results::{ROUNDS_DONE_SETTING, Report, STOPPED_SETTING};

/// A sweep of one round with eight cells of a few hundred runs, each cell's runs back to back
/// (`--interleave 1`, so cells finish one at a time).
const LONG_ROUND: [&str; 18] = [
    "sweep",
    "--kernels",
    "reduce",
    "--schedulers",
    "seq,static,dynamic,guided",
    "--threads",
    "1,2",
    "--runs",
    "300",
    "--warmup",
    "0",
    "--rounds",
    "1",
    "--interleave",
    "1",
    "--quiet",
    "--n",
    "200000",
];

/// A sweep started by a test, with what it needs to find the sweep's scratch directory.
struct Sweep {
    process: Child,
    output: PathBuf,
    tmpdir: PathBuf,
}

impl Sweep {
    /// Starts [`LONG_ROUND`] with `-o NAME.json` and its own `TMPDIR` ([`start_cli`]).
    fn start(name: &str) -> Sweep {
        Sweep::start_ignoring(name, &[])
    }

    /// [`Sweep::start`] with the `ignored` signals ignored, as a shell's background job or
    /// `nohup` starts it ([`start_cli_ignoring`]).
    fn start_ignoring(name: &str, ignored: &[libc::c_int]) -> Sweep {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parbench-interruption-tests");
        let tmpdir = dir.join(format!("{name}-tmp"));
        // Leftovers of an earlier run would be mistaken for this one's.
        let _ = fs::remove_dir_all(&tmpdir);
        fs::create_dir_all(&tmpdir).expect("scratch directory");
        let output = dir.join(format!("{name}.json"));
        let _ = fs::remove_file(&output);
        let process = start_cli_ignoring(
            LONG_ROUND
                .iter()
                .map(OsStr::new)
                .chain([OsStr::new("-o"), output.as_os_str()]),
            &tmpdir,
            ignored,
        );
        Sweep {
            process,
            output,
            tmpdir,
        }
    }

    fn pid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.process.id()).expect("a pid fits pid_t")
    }

    /// The sweep's scratch directory, where its rounds' requests and reports live.
    fn scratch(&self) -> PathBuf {
        self.tmpdir.join(format!("parbench-sweep-{}", self.pid()))
    }

    /// Waits until the running round's child has written a report with at least one finished
    /// cell, and returns the child's pid (recorded in that report).
    fn wait_for_a_finished_cell(&self) -> libc::pid_t {
        let report_path = self.scratch().join("round-1-report.json");
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let report = fs::read(&report_path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Report>(&bytes).ok());
            if let Some(report) = report.filter(|r| !r.cells.is_empty()) {
                let pid = report
                    .metadata
                    .settings
                    .get("pid")
                    .expect("the round's pid");
                return pid.parse().expect("a pid");
            }
            assert!(
                Instant::now() < deadline,
                "no cell finished in the first round"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `signal` to the sweep alone, or with `group` to its whole process group.
    fn signal(&self, signal: libc::c_int, group: bool) {
        send(&self.process, signal, group);
    }

    /// Waits for the sweep to end; returns its output and its `-o` report.
    fn finish(self) -> (Output, Report) {
        let output = self.process.wait_with_output().expect("the sweep ends");
        let text = fs::read(&self.output).expect("the -o file exists");
        let report = serde_json::from_slice(&text).expect("the -o file is a JSON report");
        (output, report)
    }
}

/// Starts `parbench-cli ARGS` with stdout and stderr piped and `tmpdir` as its `TMPDIR`, in a
/// process group of its own (so that a test can signal it the way a terminal's Ctrl-C does).
fn start_cli<'a>(args: impl IntoIterator<Item = &'a OsStr>, tmpdir: &Path) -> Child {
    start_cli_ignoring(args, tmpdir, &[])
}

/// [`start_cli`] with `ignored` signals ignored when it starts, as `nohup` starts a program
/// with SIGHUP ignored.
fn start_cli_ignoring<'a>(
    args: impl IntoIterator<Item = &'a OsStr>,
    tmpdir: &Path,
    ignored: &[libc::c_int],
) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parbench-cli"));
    let ignored = ignored.to_vec();
    // SAFETY: between fork and exec only `signal`, which is async-signal-safe, runs (`ignored`
    // was allocated before the fork and is only read). A test process started in the background
    // (`nohup`, `cmd &` in a script, as CI may run) passes SIGINT ignored on to its children, and
    // a sweep keeps an ignored signal ignored; a terminal's foreground job has the default
    // disposition, which is what is tested here, unless a test asks for `ignored` signals.
    unsafe {
        command.pre_exec(move || {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
                let disposition = if ignored.contains(&signal) {
                    libc::SIG_IGN
                } else {
                    libc::SIG_DFL
                };
                if libc::signal(signal, disposition) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command
        .args(args)
        .env("TMPDIR", tmpdir)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("parbench-cli runs")
}

/// Sends `signal` to `process` alone, or with `group` to its whole process group (which
/// [`start_cli`] made its own).
fn send(process: &Child, signal: libc::c_int, group: bool) {
    let pid = libc::pid_t::try_from(process.id()).expect("a pid fits pid_t");
    let target = if group { -pid } else { pid };
    // SAFETY: kill with our child's pid (or its group) and a valid signal; no memory involved.
    assert_eq!(unsafe { libc::kill(target, signal) }, 0);
}

/// Whether process `pid` still exists as a round of a sweep (a reused pid would not be one).
fn is_round_process(pid: libc::pid_t) -> bool {
    fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("sweep-round"))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

#[test]
fn a_round_process_that_dies_fails_the_sweep_in_one_line_and_keeps_its_cells() {
    let sweep = Sweep::start("round-killed");
    let round = sweep.wait_for_a_finished_cell();
    let scratch = sweep.scratch();
    // SAFETY: kill with a pid read from the round's report and a valid signal.
    assert_eq!(unsafe { libc::kill(round, libc::SIGKILL) }, 0);
    let (output, report) = sweep.finish();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with(
            "error: round 1's process failed (killed by signal 9, SIGKILL) without a message; \
             the cells measured before are kept"
        ),
        "{err}"
    );
    assert!(
        !report.cells.is_empty(),
        "the cells finished before are kept"
    );
    assert_eq!(report.unfinished_rounds(), Some((0, 1)));
    assert!(!exists(&scratch), "the scratch directory is removed");
    assert!(!is_round_process(round));
}

#[test]
fn an_interrupted_sweep_saves_every_finished_cell_and_leaves_no_process_behind() {
    // Ctrl-C signals the terminal's whole process group, the round's process included; `kill`
    // signals the sweep alone.
    let cases = [
        (libc::SIGINT, "SIGINT", true, 130),
        (libc::SIGTERM, "SIGTERM", false, 143),
        (libc::SIGHUP, "SIGHUP", false, 129),
    ];
    for (signal, name, group, status) in cases {
        let sweep = Sweep::start(&format!("interrupted-{name}"));
        let round = sweep.wait_for_a_finished_cell();
        let (scratch, output_path) = (sweep.scratch(), sweep.output.clone());
        sweep.signal(signal, group);
        let (output, report) = sweep.finish();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(status), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: one line: {err}");
        let kept = format!(
            "error: interrupted by {name}: {} of 8 cells kept in {} (0 of 1 rounds complete)",
            report.cells.len(),
            output_path.display()
        );
        assert_eq!(err.trim_end(), kept, "{name}");
        assert!(
            !report.cells.is_empty(),
            "{name}: the cells the interrupted round finished are kept"
        );
        assert!(
            report.cells.iter().all(|c| c.summary.is_some()),
            "{name}: only finished cells"
        );
        assert_eq!(report.unfinished_rounds(), Some((0, 1)), "{name}");
        let stopped = report
            .metadata
            .settings
            .get(STOPPED_SETTING)
            .map(String::as_str);
        assert_eq!(stopped, Some(&kept["error: ".len()..]), "{name}");
        assert!(
            !is_round_process(round),
            "{name}: the round's process {round} is still running"
        );
        assert!(
            !exists(&scratch),
            "{name}: the scratch directory is removed"
        );
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("reduce"),
            "{name}: stdout still gets the table of what was kept"
        );
    }
}

/// A sweep started with SIGHUP ignored (as under `nohup`) keeps it ignored: a hang-up neither
/// stops it nor is what it reports; a SIGTERM after it does, and is.
#[test]
fn a_sweep_started_with_sighup_ignored_keeps_it_ignored() {
    let sweep = Sweep::start_ignoring("nohup", &[libc::SIGHUP]);
    sweep.wait_for_a_finished_cell();
    assert!(
        ignores(sweep.pid(), libc::SIGHUP),
        "sweep took over the ignored SIGHUP"
    );
    assert!(
        !ignores(sweep.pid(), libc::SIGTERM),
        "SIGTERM is still the sweep's to handle"
    );
    // Had the hang-up been handled, it would be the signal the sweep reports (the first one).
    sweep.signal(libc::SIGHUP, false);
    sweep.signal(libc::SIGTERM, false);
    let (output, _) = sweep.finish();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(143), "{err}");
    assert!(err.starts_with("error: interrupted by SIGTERM: "), "{err}");
}

#[test]
fn a_sweep_started_with_sigchld_ignored_still_waits_for_its_rounds() {
    // A parent may pass SIGCHLD ignored on; each round is a child process, which the kernel would
    // then reap at once ("round 1 was lost: No child processes").
    let dir = fresh_dir("sigchld-ignored");
    let out = dir.join("run.json");
    let args = [
        "sweep",
        "--kernels",
        "reduce",
        "--n",
        "4096",
        "--schedulers",
        "seq",
        "--threads",
        "1",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--rounds",
        "2",
        "-q",
        "-o",
    ]
    .map(OsStr::new)
    .into_iter()
    .chain([out.as_os_str()]);
    let sweep = start_cli_ignoring(args, &dir, &[libc::SIGCHLD]);
    let output = sweep.wait_with_output().expect("the sweep finishes");
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let report: Report =
        serde_json::from_slice(&fs::read(&out).expect("the report")).expect("a report");
    assert_eq!(
        report
            .metadata
            .settings
            .get(ROUNDS_DONE_SETTING)
            .map(String::as_str),
        Some("2"),
        "{err}"
    );
}

#[test]
fn a_corun_started_with_sigchld_ignored_sees_its_command_exit() {
    // corun waits for its commands with waitpid; with SIGCHLD ignored the kernel reaped them
    // unseen, and corun ran on past its own --timeout (a `true` kept it for minutes).
    let dir = fresh_dir("sigchld-ignored-corun");
    let args = [
        "corun",
        "--algorithm",
        "os",
        "--timeout",
        "30",
        "--",
        "true",
    ]
    .map(OsStr::new);
    let mut corun = start_cli_ignoring(args, &dir, &[libc::SIGCHLD]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while corun.try_wait().expect("corun's status").is_none() {
        if Instant::now() >= deadline {
            let _ = corun.kill();
            panic!("corun did not see `true` exit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = corun.wait_with_output().expect("corun's output");
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("status: exit 0"), "{report}");
}

/// An empty scratch directory `name` for one test (leftovers of an earlier run would be mistaken
/// for this one's).
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("parbench-interruption-tests")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A `corun --compare` started by a test, under `os` only (nothing is pinned), of one command that
/// finishes at once in its first run and sleeps in every later one until it is stopped; every run
/// that sleeps first writes its pid to the file [`Corun::wait_until_sleeping`] waits for.
struct Corun {
    process: Child,
    dir: PathBuf,
}

impl Corun {
    /// Two runs, the first quick ([`Corun`]); with `quick_first` false every run sleeps. With
    /// `output`, `-o DIR/compare.json`.
    fn start(name: &str, quick_first: bool, output: bool) -> Corun {
        let dir = fresh_dir(&format!("corun-{name}"));
        if quick_first {
            fs::write(dir.join("first"), "").expect("the first run's marker");
        }
        // The leader execs `sleep`, so the pid it writes is the sleeping process's.
        let script = format!(
            "cd '{}' && if [ -e first ]; then rm first; else echo $$ > sleeping.partial && \
             mv sleeping.partial sleeping && exec sleep 60; fi",
            dir.display()
        );
        let output_path = dir.join("compare.json");
        let mut args: Vec<&OsStr> = ["corun", "--compare", "--repeat", "2", "--algorithms", "os"]
            .map(OsStr::new)
            .to_vec();
        if output {
            args.extend([OsStr::new("-o"), output_path.as_os_str()]);
        }
        args.extend(["--", "sh", "-c", &script].map(OsStr::new));
        let process = start_cli(args, &dir);
        Corun { process, dir }
    }

    /// The `-o` file.
    fn output(&self) -> PathBuf {
        self.dir.join("compare.json")
    }

    /// Waits until a run's command sleeps; returns the sleeping process's pid.
    fn wait_until_sleeping(&self) -> libc::pid_t {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(text) = fs::read_to_string(self.dir.join("sleeping")) {
                return text.trim().parse().expect("a pid");
            }
            assert!(Instant::now() < deadline, "no run's command started");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether process `pid` still exists as one of [`Corun`]'s sleeping commands.
fn is_sleeping_command(pid: libc::pid_t) -> bool {
    fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).starts_with("sleep\0"))
}

#[test]
fn an_interrupted_corun_compare_keeps_the_runs_it_finished_and_leaves_no_command_behind() {
    // Ctrl-C signals the terminal's whole process group (corun's commands each have their own);
    // `kill` signals corun alone.
    let cases = [
        (libc::SIGINT, "SIGINT", true, 130, true),
        (libc::SIGTERM, "SIGTERM", false, 143, true),
        (libc::SIGHUP, "SIGHUP", false, 129, false),
    ];
    for (signal, name, group, status, to_file) in cases {
        let corun = Corun::start(&format!("interrupted-{name}"), true, to_file);
        let sleeping = corun.wait_until_sleeping();
        send(&corun.process, signal, group);
        let path = corun.output();
        let output = corun.process.wait_with_output().expect("corun ends");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(status), "{name}: {err}");
        let place = if to_file {
            format!("in {}", path.display())
        } else {
            "on stdout".to_owned()
        };
        let kept = format!(
            "error: interrupted by {name}: 1 of 2 runs kept {place} (the run in progress was \
             stopped and left out)"
        );
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors, [kept.as_str()], "{name}: one error line: {err}");
        assert!(err.starts_with("run 1/2: os, system time"), "{name}: {err}");
        assert!(
            !is_sleeping_command(sleeping),
            "{name}: the stopped run's command {sleeping} is still running"
        );
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(
            out.lines()
                .any(|line| line.starts_with("os ") && line.split_whitespace().nth(1) == Some("1")),
            "{name}: stdout still gets the table of the run kept: {out}"
        );
        if to_file {
            let text = fs::read(&path).expect("the -o file exists");
            let report: serde_json::Value = serde_json::from_slice(&text).expect("JSON");
            assert_eq!(report["planned_runs"], 2, "{name}");
            assert_eq!(report["stopped"], kept["error: ".len()..], "{name}");
            let runs = report["runs"].as_array().expect("runs");
            assert_eq!(runs.len(), 1, "{name}: only the finished run");
            assert!(runs[0]["stopped"].is_null(), "{name}: {}", runs[0]);
            let times = &report["comparison"]["rows"][0]["system_times_s"];
            assert_eq!(times.as_array().map(Vec::len), Some(1), "{name}");
        }
    }
}

#[test]
fn a_corun_compare_interrupted_in_its_first_run_leaves_its_output_file_as_it_was() {
    let corun = Corun::start("first-run", false, true);
    let path = corun.output();
    // corun checks its -o path without changing it and writes it only once a run finished, so
    // the file may as well appear after the check.
    fs::write(&path, "earlier results\n").expect("an earlier file");
    let sleeping = corun.wait_until_sleeping();
    send(&corun.process, libc::SIGTERM, false);
    let output = corun.process.wait_with_output().expect("corun ends");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(143), "{err}");
    assert_eq!(
        err.trim_end(),
        "error: interrupted by SIGTERM: no run had finished, nothing was written"
    );
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "earlier results\n");
    assert!(!is_sleeping_command(sleeping));
}

/// Whether process `pid` ignores `signal` (`SigIgn` in `/proc/PID/status`, a hexadecimal mask
/// whose bit `signal - 1` is set for an ignored signal).
fn ignores(pid: libc::pid_t, signal: libc::c_int) -> bool {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .expect("a SigIgn line");
    let mask = u64::from_str_radix(mask.trim(), 16).expect("a hexadecimal mask");
    mask & (1 << (signal - 1)) != 0
}

/// `corun` started with SIGHUP ignored (as under `nohup`) keeps it ignored: the mapper's
/// handlers take over only the signals it was started to receive, as sweep's do, so a hang-up
/// neither stops its commands nor ends it.
#[test]
fn corun_started_with_sighup_ignored_keeps_it_ignored() {
    let dir = fresh_dir("corun-nohup");
    // The command says it runs (corun installs its handlers before it starts any command), then
    // waits for the test's `go`.
    let script = format!(
        "cd '{}' && touch started && while [ ! -e go ]; do sleep 0.01; done",
        dir.display()
    );
    let args = ["corun", "--algorithm", "os", "--", "sh", "-c", &script].map(OsStr::new);
    let corun = start_cli_ignoring(args, &dir, &[libc::SIGHUP]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !exists(&dir.join("started")) {
        assert!(Instant::now() < deadline, "the command did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = libc::pid_t::try_from(corun.id()).expect("a pid fits pid_t");
    assert!(
        ignores(pid, libc::SIGHUP),
        "corun took over the ignored SIGHUP"
    );
    assert!(
        !ignores(pid, libc::SIGTERM),
        "SIGTERM is still corun's to handle"
    );
    send(&corun, libc::SIGHUP, false);
    fs::write(dir.join("go"), "").expect("the command's go");
    let output = corun.wait_with_output().expect("corun ends");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains("status: exit 0"),
        "the command ran to its end: {out}"
    );
    assert!(!out.contains("stopped"), "{out}");
}

/// A single `corun` (no `--compare`) stopped by a signal still prints its report, the commands
/// marked stopped, says so in one line and exits with 128 + the signal, as sweep does.
#[test]
fn an_interrupted_corun_prints_its_report_and_exits_with_the_signal() {
    // Ctrl-C signals the terminal's whole process group; `kill` signals corun alone.
    let cases = [
        (libc::SIGINT, "SIGINT", true, 130),
        (libc::SIGHUP, "SIGHUP", false, 129),
    ];
    for (signal, name, group, status) in cases {
        let dir = fresh_dir(&format!("corun-single-{name}"));
        // The leader execs `sleep` once it has said it runs.
        let script = format!("cd '{}' && touch started && exec sleep 60", dir.display());
        let args = ["corun", "--algorithm", "os", "--", "sh", "-c", &script].map(OsStr::new);
        let corun = start_cli(args, &dir);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !exists(&dir.join("started")) {
            assert!(
                Instant::now() < deadline,
                "{name}: the command did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        send(&corun, signal, group);
        let output = corun.wait_with_output().expect("corun ends");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(status), "{name}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        let line = format!(
            "error: interrupted by {name}: every command was stopped, the report is on stdout"
        );
        assert_eq!(errors, [line.as_str()], "{name}: one error line: {err}");
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(
            out.contains("stopped by corun: interrupted"),
            "{name}: the report is printed: {out}"
        );
    }
}

/// `latency` without `--output`, stopped by Ctrl-C after its first load: the loads it finished
/// are printed as its table, the error says so in one line, and it exits with 128 + SIGINT.
#[test]
fn an_interrupted_latency_prints_the_loads_it_finished_and_exits_with_the_signal() {
    use std::io::{BufRead, BufReader, Read};
    // 20 loads of 0.32 s of arrivals each: far from done when the first one is reported.
    let (mut latency, reading) = start_latency(
        "latency",
        &[
            "--n",
            "8",
            "--qps-range",
            "200:4000:200",
            "--scale-with-qps",
            "0.02",
        ],
    );
    let mut stderr = BufReader::new(latency.stderr.take().expect("piped stderr"));
    let mut err = String::new();
    loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).expect("stderr is text");
        assert!(read > 0, "latency ended before its first load: {err}");
        err.push_str(&line);
        if line.contains("QPS offered") {
            break;
        }
    }
    send(&latency, libc::SIGINT, true);
    stderr.read_to_string(&mut err).expect("stderr is text");
    let status = latency.wait().expect("latency ends");
    let out = reading.join().expect("stdout read");
    let reported = assert_kept_on_stdout(status, &err, &out);
    assert!(reported < 20, "stopped early: {err}");
}

/// Starts `parbench-cli latency` of matmul on one unpinned worker with `args`, in a fresh
/// directory `name`; returns it and the thread reading its stdout.
fn start_latency(name: &str, args: &[&str]) -> (Child, std::thread::JoinHandle<String>) {
    use std::io::Read;
    let common = [
        "latency",
        "--service",
        "matmul",
        "--placement",
        "single",
        "--no-pin",
    ];
    let mut latency = start_cli(common.iter().chain(args).map(OsStr::new), &fresh_dir(name));
    let mut stdout = latency.stdout.take().expect("piped stdout");
    let reading = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).expect("stdout is text");
        out
    });
    (latency, reading)
}

/// Checks what an interrupted `latency` without `--output` leaves: exit 128 + SIGINT, one error
/// line saying how many loads were kept, and their table on stdout; returns that count.
fn assert_kept_on_stdout(status: std::process::ExitStatus, err: &str, out: &str) -> usize {
    assert_eq!(status.code(), Some(130), "{err}");
    let reported = err.lines().filter(|l| l.contains("QPS offered")).count();
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    let line = format!("error: interrupted by SIGINT: {reported} loads kept on stdout");
    assert_eq!(errors, [line.as_str()], "one error line: {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"placement single"), "{out}");
    // Heading, column names, a row per finished load, the saturation line.
    assert_eq!(
        lines.len(),
        reported + 3,
        "every finished load printed: {out}"
    );
    reported
}

/// `latency` stopped by a second Ctrl-C during a load that would last far longer than the test
/// waits (160 000 requests of 1000 matmul runs each, queued within 0.16 s, with no bound that
/// ends the load early): it stops at once, prints the load it finished as its table, says so
/// in one error line and exits with 128 + SIGINT, as after one Ctrl-C.
#[test]
fn a_second_ctrl_c_stops_latency_at_once_with_the_loads_it_finished() {
    let (mut latency, reading) = start_latency(
        "latency-twice",
        &[
            "--n",
            "16",
            "--qps",
            "10,1000000",
            "--scale-with-qps",
            "0.01",
            "--runs-per-request",
            "1000",
            "--max-backlog",
            "1000000",
            "--max-duration",
            "86400",
        ],
    );
    let (status, err) = stop_twice(&mut latency, "QPS offered");
    let out = reading.join().expect("stdout read");
    let reported = assert_kept_on_stdout(status, &err, &out);
    assert_eq!(reported, 1, "only the first load finished: {err}");
    let row = out.lines().nth(2).unwrap_or_default();
    assert!(row.trim_start().starts_with("10 "), "{out}");
}

/// Sends `child` (a `latency` or a tail-latency study) a Ctrl-C once its stderr shows a line
/// containing `first_load`, and a second once it says it saw the first; returns its exit status
/// and its stderr once it ended (within [`StderrLines::BOUND`] of each step).
fn stop_twice(child: &mut Child, first_load: &str) -> (std::process::ExitStatus, String) {
    let mut err = StderrLines::read(child);
    err.wait_for(Some(first_load), child);
    send(child, libc::SIGINT, true);
    // Two signals pending at once would be delivered once: wait until the first was handled.
    err.wait_for(Some("again to stop now"), child);
    send(child, libc::SIGINT, true);
    // Until its stderr closes, when it ends.
    err.wait_for(None, child);
    let status = child.wait().expect("it ends");
    (status, err.finish())
}

/// A child's stderr read line by line on a thread of its own, so that waiting for a line can
/// time out; [`StderrLines::wait_for`] collects every line read.
struct StderrLines {
    incoming: std::sync::mpsc::Receiver<String>,
    reading: std::thread::JoinHandle<()>,
    text: String,
}

impl StderrLines {
    /// Long enough for anything the tests wait for, short beside a load that would last minutes.
    const BOUND: Duration = Duration::from_secs(60);

    /// Takes `child`'s piped stderr and starts reading it.
    fn read(child: &mut Child) -> StderrLines {
        use std::io::{BufRead, BufReader};
        let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let (lines, incoming) = std::sync::mpsc::channel();
        let reading = std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        StderrLines {
            incoming,
            reading,
            text: String::new(),
        }
    }

    /// Waits for a line containing `wanted`, or with `None` for the end of the stderr (when
    /// `child` ends); kills `child` and panics after [`StderrLines::BOUND`].
    fn wait_for(&mut self, wanted: Option<&str>, child: &mut Child) {
        let deadline = Instant::now() + Self::BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(line) => {
                    self.text.push_str(&line);
                    self.text.push('\n');
                    if wanted.is_some_and(|wanted| line.contains(wanted)) {
                        return;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "still running {:?} later, waited for {wanted:?}: {}",
                        Self::BOUND,
                        self.text
                    );
                }
                // The stderr closed: the child ended.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    assert!(wanted.is_none(), "ended before {wanted:?}: {}", self.text);
                    return;
                }
            }
        }
    }

    /// Every line read, once the stderr closed ([`StderrLines::wait_for`] with `None`).
    fn finish(self) -> String {
        self.reading.join().expect("stderr read");
        self.text
    }
}

/// `reproduce tail-latency` at `--scale full` (16 s of arrivals per load) stopped by two Ctrl-Cs
/// after its first load: the second stops it at once, in the second load; the load it finished
/// is kept in results.json (marked stopped), the error says so in one line, and it exits with
/// 128 + SIGINT, as latency does.
#[test]
fn a_second_ctrl_c_stops_reproduce_tail_latency_at_once_with_the_loads_it_finished() {
    let dir = fresh_dir("reproduce-twice");
    let output = dir.join("study");
    let args = [
        OsStr::new("reproduce"),
        OsStr::new("tail-latency"),
        OsStr::new("--scale"),
        OsStr::new("full"),
        OsStr::new("--output"),
        output.as_os_str(),
    ];
    let mut study = start_cli(args, &dir);
    let (status, err) = stop_twice(&mut study, "QPS: p95");
    assert_eq!(status.code(), Some(130), "{err}");
    let kept = output.join("results.json");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    let line = format!(
        "error: interrupted by SIGINT; the 1 cells measured before are kept in {}",
        kept.display()
    );
    assert_eq!(errors, [line.as_str()], "one error line: {err}");
    let report: Report = serde_json::from_slice(&fs::read(&kept).expect("results.json written"))
        .expect("results.json is a report");
    assert_eq!(report.cells.len(), 1, "only the first load finished: {err}");
    let stopped = report.metadata.settings.get(STOPPED_SETTING);
    assert_eq!(stopped.map(String::as_str), Some("interrupted by SIGINT"));
}
