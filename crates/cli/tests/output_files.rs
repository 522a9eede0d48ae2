//! End-to-end tests of what `--output` (and `latency --plot`) do with each kind of path — a new
//! or regular file, a symbolic link, a device, a FIFO, a directory, a socket — and with a write
//! that fails after measuring: an earlier results file survives bad input, measured results are
//! never dropped, nothing is left behind.
//!
//! Devices are made in the tests' own scratch directory (`mknod`, root only; skipped otherwise),
//! never taken from /dev: before these fixes `-o` replaced whatever it was given by a regular file.
//! Measurements are tiny; nothing here looks at a timing.

mod support;
#[path = "support/tiny_runs.rs"]
mod tiny_runs;

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use parbench_cli::results::Report;
use support::{assert_bad_input, cli, cli_ok, scratch, text};
use tiny_runs::{MATMUL, TINY_LATENCY, one_run_sweep};

/// A one-cell sweep small enough for a debug build, then `extra`.
fn sweep<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    with(&one_run_sweep(&MATMUL, &["--seed=1"]), extra)
}

/// A latency curve of two tiny loads on one worker.
fn latency() -> Vec<&'static str> {
    let loads = ["--qps", "400,200", "--requests", "20", "--warmup", "2"];
    [&TINY_LATENCY[..], &loads, &["--placement", "single", "-q"]].concat()
}

/// One lock benchmark cell set at one thread.
const LOCKS: [&str; 10] = [
    "locks",
    "--iterations",
    "500",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--threads",
    "1",
    "-q",
];

/// A 2 × 2 MatrixMarket matrix for `spmv-balanced --matrix`.
const MATRIX: &str = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 2.0\n";

/// A fresh, empty directory of the test's own.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = scratch(&format!("output-files-{name}"));
    // Ignoring the error is right: the directory usually does not exist yet.
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("directory listing")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn command(args: &[&str], tmpdir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parbench-cli"));
    // Rescue files and the sweep's scratch directory stay in the test's own directory.
    command.args(args).env("TMPDIR", tmpdir);
    command
}

fn run(args: &[&str], tmpdir: &Path) -> Output {
    command(args, tmpdir)
        .stdin(Stdio::null())
        .output()
        .expect("the parbench-cli binary runs")
}

/// `base` followed by `extra`.
fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Asserts exit code 2 and exactly one `error:` line on stderr containing every one of `needles`;
/// returns the line.
fn assert_one_error_line(output: &Output, needles: &[&str]) -> String {
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(
        err.starts_with("error:") && !err.contains("panicked"),
        "{err}"
    );
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
    err.trim_end().to_owned()
}

/// The rescue file an error line names (`… saved the results to PATH instead`).
fn rescued_path(line: &str, what: &str) -> PathBuf {
    let start = format!("saved the {what} to ");
    let from = line
        .find(&start)
        .unwrap_or_else(|| panic!("no rescue in: {line}"))
        + start.len();
    let rest = &line[from..];
    PathBuf::from(&rest[..rest.find(" instead").expect("`instead` ends the path")])
}

fn read_report(path: &Path) -> Report {
    serde_json::from_slice(&fs::read(path).expect("report written")).expect("a JSON report")
}

fn mkfifo(path: &Path) {
    let name = CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in the path");
    // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// A character device like /dev/null (1, 3) or /dev/full (1, 7) at `path`, if this process may
/// make one.
fn char_device(path: &Path, major: u32, minor: u32) -> bool {
    let name = CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in the path");
    // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
    let made = unsafe {
        libc::mknod(
            name.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    made == 0
}

/// Whether `path` is (still) a character device.
fn is_char_device(path: &Path) -> bool {
    fs::metadata(path)
        .expect("the device is still there")
        .file_type()
        .is_char_device()
}

/// Asserts that `args`, whose output is the device `null` (like /dev/null), succeed, rescue files
/// going to `tmpdir`, and that `null` is still a device.
fn assert_written_through(args: &[&str], null: &Path, tmpdir: &Path) {
    let output = run(args, tmpdir);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        text(&output.stderr)
    );
    assert!(is_char_device(null), "{args:?}: null is still a device");
}

/// A fresh directory `name` ([`fresh_dir`]) with devices like /dev/null and /dev/full in it, or
/// `None` after printing why the test is skipped.
fn fresh_dir_with_null_and_full(name: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let dir = fresh_dir(name);
    let (null, full) = (dir.join("null"), dir.join("full"));
    if char_device(&null, 1, 3) && char_device(&full, 1, 7) {
        Some((dir, null, full))
    } else {
        eprintln!("SKIPPED: this process may not make device nodes (mknod needs root)");
        None
    }
}

/// `args` started with stdout and stderr piped, rescue files going to `tmpdir`.
fn spawn(args: &[&str], tmpdir: &Path) -> Child {
    command(args, tmpdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the parbench-cli binary runs")
}

/// The rescue file that `line` names, asserted to be in `tmpdir` (the test's TMPDIR).
fn rescued_in(tmpdir: &Path, line: &str, what: &str) -> PathBuf {
    let rescued = rescued_path(line, what);
    assert!(
        rescued.starts_with(tmpdir),
        "in TMPDIR: {}",
        rescued.display()
    );
    rescued
}

/// Writes `bytes` to the FIFO at `path` once its next reader has opened it.
/// Writes `bytes` into the FIFO at `path` once `child` opens it for reading.
fn feed_fifo(path: &Path, bytes: &str, child: &mut Child) {
    let mut writer = fifo_writer(path, child);
    writer.write_all(bytes.as_bytes()).expect("FIFO written");
}

/// The FIFO at `path` opened for writing, once `child` has opened it for reading. A child that
/// exits first (it refused its arguments) fails the test with its stderr instead of leaving the
/// test blocked in `open` for ever.
fn fifo_writer(path: &Path, child: &mut Child) -> File {
    loop {
        // Without a reader, a non-blocking open for writing fails with ENXIO at once.
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => {
                // SAFETY: `file` owns a valid descriptor; F_SETFL only changes its flags.
                let cleared = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0) };
                assert_eq!(cleared, 0, "FIFO made blocking again");
                return file;
            }
            Err(error) if error.raw_os_error() == Some(libc::ENXIO) => {
                if let Some(status) = child.try_wait().expect("child status") {
                    let mut stderr = String::new();
                    if let Some(mut pipe) = child.stderr.take() {
                        let _ = pipe.read_to_string(&mut stderr);
                    }
                    panic!("parbench-cli exited ({status}) before reading {path:?}:\n{stderr}");
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(error) => panic!("cannot open the FIFO {path:?}: {error}"),
        }
    }
}

#[test]
fn bad_input_leaves_an_earlier_results_file_as_it_was() {
    let dir = fresh_dir("bad-input");
    let keep = dir.join("keep.json");
    let earlier = "earlier results, not to be touched\n";
    fs::write(&keep, earlier).unwrap();
    let garbage = dir.join("garbage.mtx");
    fs::write(&garbage, "not a matrix\n").unwrap();
    let keep_arg = path_arg(&keep);
    let mut latency_n0 = latency();
    latency_n0[4] = "0";
    latency_n0.extend(["-o", keep_arg]);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // Found only when the round's process prepares the kernel.
        (
            one_run_sweep(&["--kernels", "matmul", "--n", "0"], &["-o", keep_arg]),
            "`n`",
        ),
        (
            one_run_sweep(
                &["--kernels", "qap", "--input", "/nonexistent/qap.dat"],
                &["-o", keep_arg],
            ),
            "qap.dat",
        ),
        (
            one_run_sweep(
                &["--kernels", "spmv-balanced", "--matrix", path_arg(&garbage)],
                &["-o", keep_arg],
            ),
            "garbage.mtx",
        ),
        (latency_n0, "`n`"),
    ];
    for (args, needle) in cases {
        let output = run(&args, &dir);
        assert_one_error_line(&output, &[needle]);
        assert_eq!(fs::read_to_string(&keep).unwrap(), earlier, "{args:?}");
        assert_eq!(names(&dir), ["garbage.mtx", "keep.json"], "{args:?}");
    }
    let smt = parbench_mapper::Topology::this_system().is_ok_and(|t| t.has_smt_siblings());
    if smt {
        eprintln!("SKIPPED: this machine has SMT siblings, so `--placement smt` can run");
        return;
    }
    let mut only_smt = latency();
    only_smt[12] = "smt";
    only_smt.extend(["-o", keep_arg]);
    let output = run(&only_smt, &dir);
    assert_one_error_line(&output, &["no requested placement can run", "smt"]);
    assert_eq!(fs::read_to_string(&keep).unwrap(), earlier);
}

#[test]
fn a_symlinked_output_writes_its_target_and_stays_a_link() {
    let dir = fresh_dir("symlink");
    fs::write(dir.join("target.json"), "old").unwrap();
    std::os::unix::fs::symlink("target.json", dir.join("link.json")).unwrap();
    let link = dir.join("link.json");
    cli_ok(&sweep(&["-o", path_arg(&link)]));
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read_report(&dir.join("target.json")).cells.len(), 1);
    assert_eq!(names(&dir), ["link.json", "target.json"]);
}

#[test]
fn a_device_output_is_written_through_and_stays_a_device() {
    let Some((dir, null, full)) = fresh_dir_with_null_and_full("devices") else {
        return;
    };
    for base in [sweep(&[]), latency(), LOCKS.to_vec()] {
        let to_null = with(&base, &["-o", path_arg(&null), "--format", "json"]);
        assert_written_through(&to_null, &null, &dir);
        // The device's own error, and the results saved all the same.
        let output = run(
            &with(&base, &["-o", path_arg(&full), "--format", "json"]),
            &dir,
        );
        // `locks` always names its backends first; the error is the last line.
        let err = text(&output.stderr);
        let line = err.trim_end().lines().last().unwrap_or_default().to_owned();
        assert_eq!(output.status.code(), Some(2), "{base:?}: {err}");
        assert!(
            line.starts_with("error: cannot write ") && line.contains("No space left on device"),
            "{base:?}: {err}"
        );
        let rescued = rescued_in(&dir, &line, "results");
        assert!(!read_report(&rescued).cells.is_empty(), "{base:?}");
        assert!(is_char_device(&full), "{base:?}: full is still a device");
        fs::remove_file(rescued).unwrap();
    }
    assert_eq!(names(&dir), ["full", "null"], "nothing else left behind");
}

#[test]
fn a_fifo_output_feeds_its_reader_the_final_results() {
    let dir = fresh_dir("fifo");
    let fifo = dir.join("fifo.json");
    mkfifo(&fifo);
    // A second name for the FIFO: it still reaches the pipe if the sweep wrongly replaces
    // fifo.json, so that the reader below can always be ended instead of waiting forever.
    let spare = dir.join("spare");
    fs::hard_link(&fifo, &spare).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).expect("FIFO read"))
    };
    let output = run(&sweep(&["-o", path_arg(&fifo)]), &dir);
    // Opening for writing without blocking succeeds only while the reader still waits (and then
    // ends it); once the reader is done, it fails, which changes nothing.
    let _ = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&spare);
    let received = reader.join().expect("reader thread");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: Report = serde_json::from_slice(&received).expect("one JSON report read");
    assert_eq!(report.cells.len(), 1);
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(&dir), ["fifo.json", "spare"]);
}

#[test]
fn a_directory_or_socket_output_is_refused_before_measuring() {
    let dir = fresh_dir("refused");
    fs::create_dir(dir.join("d.json")).unwrap();
    assert_bad_input(
        &sweep(&["-o", path_arg(&dir.join("d.json"))]),
        &["d.json", "Is a directory"],
    );
    let _listener = UnixListener::bind(dir.join("s.json")).unwrap();
    let output = run(&with(&LOCKS, &["-o", path_arg(&dir.join("s.json"))]), &dir);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("s.json") && err.contains("socket"), "{err}");
    assert!(output.stdout.is_empty(), "nothing measured");
    // The figure is checked up front too: nothing is measured, so the results file is not made.
    let (results, figure) = (dir.join("l.json"), dir.join("plot.svg"));
    fs::create_dir(&figure).unwrap();
    let args = ["-o", path_arg(&results), "--plot", path_arg(&figure)];
    let output = cli(&with(&latency(), &args));
    assert_one_error_line(&output, &["plot.svg", "Is a directory"]);
    assert!(
        output.stdout.is_empty() && !results.exists(),
        "nothing measured"
    );
    assert_eq!(
        names(&dir),
        ["d.json", "plot.svg", "s.json"],
        "no partial file left"
    );
}

#[test]
fn sweep_results_survive_an_output_directory_removed_while_measuring() {
    let dir = fresh_dir("sweep-gone");
    let gone = dir.join("gone");
    fs::create_dir(&gone).unwrap();
    let matrix = dir.join("m.mtx");
    mkfifo(&matrix);
    let results = gone.join("r.json");
    let args = [
        "sweep",
        "--kernels",
        "spmv-balanced",
        "--matrix",
        path_arg(&matrix),
        "--schedulers",
        "seq",
        "--threads",
        "1",
        "--runs",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "-o",
        path_arg(&results),
    ];
    let mut child = spawn(&args, &dir);
    // The matrix is read twice through the FIFO: by the sweep's check of its input files, then
    // by the round's process. The plan on stderr comes between them, after the output check.
    feed_fifo(&matrix, MATRIX, &mut child);
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut err = String::new();
    while !err.starts_with("sweep:") {
        err.clear();
        assert!(stderr.read_line(&mut err).unwrap() > 0, "no plan on stderr");
    }
    fs::remove_dir(&gone).unwrap();
    feed_fifo(&matrix, MATRIX, &mut child);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{rest}");
    let line = rest.trim_end().lines().last().unwrap_or_default();
    assert!(
        line.starts_with("error: cannot write ") && line.contains("gone/r.json"),
        "{rest}"
    );
    let rescued = rescued_path(line, "results");
    assert_eq!(read_report(&rescued).cells.len(), 1, "the measured cell");
    assert!(
        text(&output.stdout).contains("spmv-balanced"),
        "the table too"
    );
}

#[test]
fn latency_results_and_figure_survive_their_directory_removed_while_measuring() {
    let dir = fresh_dir("latency-gone");
    let gone = dir.join("gone");
    fs::create_dir(&gone).unwrap();
    let matrix = dir.join("m.mtx");
    mkfifo(&matrix);
    let (results, figure) = (gone.join("l.json"), gone.join("l.svg"));
    let mut args = latency();
    args[2] = "spmv-balanced";
    args[3] = "--matrix";
    args[4] = path_arg(&matrix);
    args.extend(["-o", path_arg(&results), "--plot", path_arg(&figure)]);
    let mut child = spawn(&args, &dir);
    // The one worker's service reads the matrix after both paths were checked.
    let mut writer = fifo_writer(&matrix, &mut child);
    fs::remove_dir(&gone).unwrap();
    writer.write_all(MATRIX.as_bytes()).unwrap();
    drop(writer);
    let output = child.wait_with_output().unwrap();
    let line = assert_one_error_line(&output, &["gone/l.json", "gone/l.svg"]);
    let rescued = rescued_path(&line, "results");
    assert_eq!(read_report(&rescued).cells.len(), 2, "both loads");
    let figure = fs::read_to_string(rescued_path(&line, "figure")).unwrap();
    assert!(figure.starts_with("<svg"), "{figure:.100}");
    assert!(
        text(&output.stdout).contains("placement single"),
        "the table too"
    );
}

/// `reproduce` of the quickest study (well under a second in a debug build), progress shown:
/// a check that fails before measuring leaves stderr at its one error line.
fn reproduce_args(dir: &str) -> Vec<&str> {
    vec!["reproduce", "pthreads", "--scale", "tiny", "-o", dir]
}

#[test]
fn reproduce_refuses_a_directory_it_cannot_write_before_measuring() {
    let dir = fresh_dir("reproduce-refused");
    let file = dir.join("file");
    fs::write(&file, "kept").unwrap();
    // A regular file given as the directory, and a directory to be made under a regular file
    // (which root cannot write into either, unlike a chmod-ed directory).
    let under = file.join("sub");
    for target in [&file, &under] {
        let output = run(&reproduce_args(path_arg(target)), &dir);
        assert_one_error_line(&output, &[path_arg(target), "Not a directory"]);
        assert!(output.stdout.is_empty(), "nothing measured");
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), "kept");
    assert_eq!(names(&dir), ["file"], "nothing left behind");
}

#[test]
fn reproduce_results_survive_a_report_file_that_cannot_be_written() {
    let dir = fresh_dir("reproduce-rescued");
    let report = dir.join("report");
    // Passes the check of the directory, fails the write of report.md after measuring.
    fs::create_dir_all(report.join("report.md")).unwrap();
    let output = run(&reproduce_args(path_arg(&report)), &dir);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let line = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        line.starts_with("error: cannot write ")
            && line.contains("report/report.md")
            && line.contains("Is a directory"),
        "{err}"
    );
    let rescued = rescued_in(&dir, line, "report");
    let markdown = fs::read_to_string(rescued.join("report.md")).expect("report.md rescued");
    assert_eq!(
        markdown,
        text(&output.stdout),
        "stdout carries the report too"
    );
    let results = read_report(&rescued.join("results.json"));
    assert!(!results.cells.is_empty(), "the measured cells");
    assert!(
        names(&rescued).iter().any(|name| name.ends_with(".svg")),
        "the figures too: {:?}",
        names(&rescued)
    );
    assert_eq!(names(&report), ["report.md"], "nothing else written there");
}

/// Outputs that are refused before any work, each with what its error line says: a path in a
/// directory that does not exist, a directory, and a path under a regular file (root may write
/// into any directory whatever its mode bits, so that stands for a place nobody can write).
fn unwritable_outputs(dir: &Path, name: &str) -> Vec<(PathBuf, &'static str)> {
    let directory = dir.join("a-directory");
    let file = dir.join("a-file");
    fs::create_dir_all(&directory).unwrap();
    fs::write(&file, "kept").unwrap();
    vec![
        (dir.join("missing").join(name), "No such file or directory"),
        (directory, "Is a directory"),
        (file.join(name), "Not a directory"),
    ]
}

/// A sweep report for `plot` to draw, at `path`.
fn sweep_report_at(path: &Path) {
    cli_ok(&sweep(&["-o", path_arg(path)]));
}

#[test]
fn plot_corun_and_profile_refuse_an_unwritable_output_before_any_work() {
    let dir = fresh_dir("refused-before-work");
    // A command that would leave this behind if it ran.
    let marker = dir.join("ran");
    let touch = ["touch", path_arg(&marker)];
    // Missing: read first, it would be the error instead.
    let results = dir.join("no-results.json");
    for name in ["f.svg", "f.png", "c.json"] {
        for (output, reason) in unwritable_outputs(&dir, name) {
            let output_arg = path_arg(&output);
            let runs: Vec<Vec<&str>> = if name == "c.json" {
                vec![
                    with(&["corun", "-o", output_arg, "--"], &touch),
                    with(&["profile", "-o", output_arg, "--"], &touch),
                    vec!["profile", "--kernel", "fp-add", "-o", output_arg],
                ]
            } else {
                vec![vec!["plot", path_arg(&results), "-o", output_arg]]
            };
            for args in runs {
                let ran = run(&args, &dir);
                assert_one_error_line(&ran, &[output_arg, reason]);
                assert!(ran.stdout.is_empty(), "{args:?}: nothing measured");
                assert!(!marker.exists(), "{args:?}: the command ran");
            }
        }
    }
    assert_eq!(fs::read_to_string(dir.join("a-file")).unwrap(), "kept");
    assert_eq!(
        names(&dir),
        ["a-directory", "a-file"],
        "nothing left behind"
    );
    assert!(names(&dir.join("a-directory")).is_empty());
}

#[test]
fn corun_and_profile_results_survive_their_directory_removed_by_the_command() {
    let dir = fresh_dir("corun-gone");
    let gone = dir.join("gone");
    for command in ["corun", "profile"] {
        fs::create_dir(&gone).unwrap();
        let results = gone.join("r.json");
        // The measured command itself removes the output's directory, after the check.
        let args = [
            command,
            "-o",
            path_arg(&results),
            "--",
            "rmdir",
            path_arg(&gone),
        ];
        let output = run(&args, &dir);
        let line = assert_one_error_line(&output, &["gone/r.json", "No such file"]);
        let what = if command == "corun" {
            "report"
        } else {
            "profile"
        };
        let rescued = rescued_in(&dir, &line, what);
        let json: serde_json::Value =
            serde_json::from_slice(&fs::read(&rescued).unwrap()).expect("JSON rescued");
        let argv = if command == "corun" {
            &json["commands"][0]["argv"]
        } else {
            &json["command"]
        };
        assert_eq!(argv[0], "rmdir", "{command}: {json}");
        assert!(!output.stdout.is_empty(), "{command}: the table too");
        fs::remove_file(rescued).unwrap();
        assert!(!gone.exists());
    }
    assert!(names(&dir).is_empty(), "nothing else left behind");
}

#[test]
fn plot_figure_survives_its_directory_removed_while_reading_the_results() {
    let dir = fresh_dir("plot-gone");
    let report = dir.join("sweep.json");
    sweep_report_at(&report);
    let results = dir.join("results.json");
    mkfifo(&results);
    let gone = dir.join("gone");
    for name in ["f.svg", "f.png"] {
        fs::create_dir(&gone).unwrap();
        let figure = gone.join(name);
        let args = ["plot", path_arg(&results), "-o", path_arg(&figure)];
        let mut child = spawn(&args, &dir);
        // The figure's path is checked before the results are read.
        let mut writer = fifo_writer(&results, &mut child);
        fs::remove_dir(&gone).unwrap();
        writer.write_all(&fs::read(&report).unwrap()).unwrap();
        drop(writer);
        let output = child.wait_with_output().unwrap();
        let line = assert_one_error_line(&output, &[path_arg(&figure), "No such file"]);
        let rescued = rescued_in(&dir, &line, "figure");
        let bytes = fs::read(&rescued).unwrap();
        let magic: &[u8] = if name == "f.svg" { b"<svg" } else { b"\x89PNG" };
        assert!(bytes.starts_with(magic), "{name}: {:?}", &bytes[..8]);
        fs::remove_file(rescued).unwrap();
    }
    assert_eq!(names(&dir), ["results.json", "sweep.json"]);
}

#[test]
fn plot_and_profile_write_a_device_through_and_rescue_what_it_refuses() {
    let Some((dir, null, full)) = fresh_dir_with_null_and_full("devices-plot-profile") else {
        return;
    };
    let report = dir.join("sweep.json");
    sweep_report_at(&report);
    let plot = |output: &Path, format: &'static str| -> Vec<String> {
        let args = [
            "plot",
            path_arg(&report),
            "-o",
            path_arg(output),
            "--format",
            format,
        ];
        args.iter().map(ToString::to_string).collect()
    };
    let profile = |output: &Path| -> Vec<String> {
        let args = ["profile", "--kernel", "fp-add", "-o", path_arg(output)];
        args.iter().map(ToString::to_string).collect()
    };
    let cases = [
        (
            plot(&null, "svg"),
            plot(&full, "svg"),
            "figure",
            &b"<svg"[..],
        ),
        (
            plot(&null, "png"),
            plot(&full, "png"),
            "figure",
            &b"\x89PNG"[..],
        ),
        (profile(&null), profile(&full), "profile", &b"{"[..]),
    ];
    for (to_null, to_full, what, magic) in cases {
        let to_null: Vec<&str> = to_null.iter().map(String::as_str).collect();
        assert_written_through(&to_null, &null, &dir);
        let to_full: Vec<&str> = to_full.iter().map(String::as_str).collect();
        let output = run(&to_full, &dir);
        let line = assert_one_error_line(&output, &["full", "No space left on device"]);
        let rescued = rescued_in(&dir, &line, what);
        assert!(
            fs::read(&rescued).unwrap().starts_with(magic),
            "{to_full:?}"
        );
        assert!(is_char_device(&full), "{to_full:?}: full is still a device");
        fs::remove_file(rescued).unwrap();
    }
    assert_eq!(
        names(&dir),
        ["full", "null", "sweep.json"],
        "nothing else left"
    );
}

#[test]
fn results_whose_only_copy_is_stdout_survive_a_stdout_that_cannot_be_written() {
    // `> r.json` on a full disk: /dev/full as stdout fails every write with ENOSPC.
    let full = || {
        OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full opens")
    };
    let runs = [
        ("sweep", sweep(&["--format", "json"]), "json"),
        ("locks", with(&LOCKS, &["--format", "csv"]), "csv"),
        ("latency", latency(), "txt"),
    ];
    for (name, args, extension) in runs {
        let tmpdir = fresh_dir(&format!("stdout-full-{name}"));
        let output = command(&args, &tmpdir)
            .stdin(Stdio::null())
            .stdout(full())
            .output()
            .expect("the parbench-cli binary runs");
        let line = assert_one_error_line(&output, &["cannot write -: No space left on device"]);
        let rescued = rescued_in(&tmpdir, &line, "results");
        assert!(
            path_arg(&rescued).ends_with(&format!("-stdout.{extension}")),
            "{line}"
        );
        let saved = fs::read_to_string(&rescued).expect("rescue file read");
        match name {
            "sweep" => assert_eq!(read_report(&rescued).cells.len(), 1),
            "latency" => assert!(saved.contains("QPS"), "{saved}"),
            _ => assert!(saved.lines().count() > 1, "{saved}"),
        }
    }
    // With --output the results are safe there: stdout's table failing is a plain error.
    let tmpdir = fresh_dir("stdout-full-with-output");
    let file = tmpdir.join("r.json");
    let output = command(&sweep(&["-o", path_arg(&file)]), &tmpdir)
        .stdin(Stdio::null())
        .stdout(full())
        .output()
        .expect("the parbench-cli binary runs");
    let line = assert_one_error_line(&output, &["cannot write -: No space left on device"]);
    assert!(!line.contains("saved"), "{line}");
    assert_eq!(read_report(&file).cells.len(), 1);
    assert_eq!(names(&tmpdir), ["r.json"]);
}

#[test]
fn output_to_dev_stdout_on_a_pipe_gets_the_results_alone() {
    // `/dev/stdout` → `/proc/self/fd/1` → `pipe:[…]`, a link target that names no path.
    let tmpdir = fresh_dir("dev-stdout");
    let stdout = ["--format", "json", "-o", "/dev/stdout"];
    let output = run(&sweep(&stdout), &tmpdir);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: Report = serde_json::from_slice(&output.stdout).expect("stdout is the JSON alone");
    assert_eq!(report.cells.len(), 1);
    let output = run(
        &with(&LOCKS, &["--format", "csv", "-o", "/dev/stdout"]),
        &tmpdir,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let csv = text(&output.stdout);
    let mut lines = csv.lines().filter(|line| !line.starts_with('#'));
    assert!(
        lines
            .next()
            .is_some_and(|header| header.starts_with("lock,")),
        "{csv}"
    );
    assert!(lines.all(|row| row.contains(',')), "only CSV rows: {csv}");
}
