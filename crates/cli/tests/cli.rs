//! End-to-end tests of the `parbench-cli` binary: formats, files, plots and every bad-input path.
//!
//! Sweeps here are tiny (a small `reduce`, two runs) so the suite stays fast in debug builds; they
//! check what was produced, never how long it took.

// Only `one_run_sweep` is used here; the other items serve bad_input.rs and output_files.rs.
#[allow(dead_code)]
#[path = "support/tiny_runs.rs"]
mod tiny_runs;

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use parbench_cli::results::Report;
use tiny_runs::one_run_sweep;

/// A sweep small enough for a debug build: reduce on 5000 elements, two schedulers, two rounds of
/// two runs.
const TINY: [&str; 16] = [
    "sweep",
    "--kernels",
    "reduce",
    "--schedulers",
    "seq,rayon",
    "--threads",
    "1,2",
    "--runs",
    "2",
    "--rounds",
    "2",
    "--warmup",
    "0",
    "--quiet",
    "--n",
    "5000",
];

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(args)
        .output()
        .expect("the parbench-cli binary runs")
}

fn tiny(extra: &[&str]) -> Output {
    let mut args = TINY.to_vec();
    args.extend_from_slice(extra);
    cli(&args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh path in the test's scratch directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parbench-cli-tests");
    fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join(name);
    // Ignoring the error is right: the file usually does not exist yet.
    let _ = fs::remove_file(&path);
    path
}

/// Asserts exit code 2 and exactly one line on stderr, starting with `error:` and containing
/// every one of `needles`.
fn assert_bad_input(output: &Output, needles: &[&str]) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "stderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected, got: {err}"
    );
    assert!(err.starts_with("error:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
}

/// A kernel that reads an input file, and the parameter naming it, if the registry has one.
fn kernel_with_input_file() -> Option<(&'static str, &'static str)> {
    parbench_kernels::registry().iter().find_map(|kernel| {
        kernel
            .params()
            .iter()
            .find(|p| p.name == "input" || p.name == "matrix")
            .map(|p| (kernel.name(), p.name))
    })
}

#[test]
fn tiny_sweep_prints_a_table_with_every_cell() {
    let output = tiny(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    // The environment comes first, then a blank line, then the table.
    assert!(lines[0].starts_with("machine: "), "{text}");
    let header = lines.iter().position(|l| l.starts_with("kernel")).unwrap();
    assert!(lines[header - 1].is_empty() && lines[header].contains("median"));
    for topic in ["system: Linux", "build: parbench-cli", "command: "] {
        assert!(
            lines[..header].iter().any(|l| l.starts_with(topic)),
            "{text}"
        );
    }
    let cells: Vec<&&str> = lines.iter().filter(|l| l.starts_with("reduce")).collect();
    assert_eq!(cells.len(), 4, "2 schedulers × 2 thread counts:\n{text}");
    assert!(cells.iter().all(|l| !l.contains("error:")), "{text}");
    assert!(stderr(&output).is_empty(), "--quiet: {}", stderr(&output));
}

#[test]
fn rounds_run_in_seeded_shuffled_orders_that_are_recorded() {
    let path = scratch("rounds.json");
    let mut args = TINY.to_vec();
    let rounds = args.iter().position(|&a| a == "--rounds").unwrap();
    args[rounds + 1] = "3";
    args.extend(["--seed", "11", "-o", path.to_str().unwrap()]);
    let output = cli(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Report = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let setting = |name: &str| report.metadata.settings.get(name).cloned();
    assert_eq!(setting("rounds").as_deref(), Some("3"));
    assert_eq!(
        setting("rounds.done").as_deref(),
        Some("3"),
        "a finished sweep"
    );
    assert_eq!(report.unfinished_rounds(), None);
    assert_eq!(setting("seed").as_deref(), Some("11"));
    let orders = parbench_cli::rounds::round_orders(4, 3, 11);
    for (round, order) in orders.iter().enumerate() {
        let text: Vec<String> = order.iter().map(usize::to_string).collect();
        assert_eq!(
            setting(&format!("order.round{}", round + 1)),
            Some(text.join(" "))
        );
    }
    // Each round ran in its own child process.
    let mut pids: Vec<String> = (1..=3)
        .map(|round| setting(&format!("pid.round{round}")).expect("round pid recorded"))
        .collect();
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 3, "three distinct processes: {pids:?}");
    for cell in &report.cells {
        assert_eq!(cell.samples_s.len(), 6, "3 rounds × 2 runs");
        let spread = cell.rounds.as_ref().expect("round spread");
        assert_eq!(spread.medians.len(), 3);
        assert!(spread.min <= spread.max);
    }
    // Without --seed, a seed is still chosen and recorded.
    let path = scratch("rounds-unseeded.json");
    let output = tiny(&["-o", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Report = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let seed = report.metadata.settings.get("seed").expect("seed recorded");
    assert!(seed.parse::<u64>().is_ok(), "{seed}");
}

#[test]
fn interleaved_rounds_keep_every_sample_and_record_the_blocks() {
    let path = scratch("interleave.json");
    let output = tiny(&["--interleave", "2", "-o", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Report = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let interleave = report.metadata.settings.get("interleave");
    assert_eq!(interleave.map(String::as_str), Some("2"));
    assert_eq!(report.cells.len(), 4);
    for cell in &report.cells {
        assert!(cell.error.is_none(), "{:?}", cell.error);
        assert_eq!(cell.samples_s.len(), 4, "2 rounds × 2 runs");
        assert_eq!(cell.rounds.as_ref().expect("round spread").medians.len(), 2);
    }
}

#[test]
fn round_and_trapezoid_record_the_backend_their_lock_ran_on() {
    // Without --backend a spin lock runs on the best backend this CPU has and std::sync::Mutex on
    // none of ours: the results say which, with the labels of `locks`, never the empty default.
    // A trapezoid method that takes no lock records neither lock nor backend (`-`).
    let best = parbench_atomics::Backend::best().name();
    let none = parbench_cli::locks::NO_BACKEND;
    /// Extra arguments, then the recorded `lock` and `backend` of round and of trapezoid.
    type Case = (&'static [&'static str], [(&'static str, &'static str); 2]);
    let cases: [Case; 4] = [
        (&[], [("std", none), ("std", none)]),
        (&["--lock", "std"], [("std", none), ("std", none)]),
        (&["--lock", "tas"], [("tas", best), ("tas", best)]),
        (&["--method", "spin"], [("std", none), (none, none)]),
    ];
    for (index, (extra, expected)) in cases.into_iter().enumerate() {
        let path = scratch(&format!("lock-backend-{index}.json"));
        let kernels = [
            "--kernels",
            "round,trapezoid",
            "--n",
            "5",
            "--param",
            "meals=50",
        ];
        let mut args = one_run_sweep(&kernels, &["-o", path.to_str().unwrap()]);
        args.extend(extra);
        let output = cli(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        let report: Report = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        for (kernel, (lock, backend)) in ["round", "trapezoid"].into_iter().zip(expected) {
            let setting = |name: &str| {
                report
                    .metadata
                    .settings
                    .get(&format!("{kernel}.{name}"))
                    .cloned()
            };
            let recorded = (setting("lock"), setting("backend"));
            let expected = (Some(lock.to_owned()), Some(backend.to_owned()));
            assert_eq!(recorded, expected, "{kernel} {extra:?}");
        }
    }
}

#[test]
fn csv_format_has_a_header_and_a_row_per_cell() {
    let output = tiny(&["--format", "csv"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with("# machine: "),
        "environment comment lines first"
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(lines[0].starts_with("kernel,scheduler,threads,runs,median_s"));
    assert!(lines[0].contains(",outliers_high_severe,") && lines[0].contains(",unstable,"));
    assert_eq!(lines.len(), 5);
    // Four raw samples (two rounds of two), space-separated, in the last column.
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.rsplit(',').next().unwrap().split(' ').count() == 4)
    );
}

#[test]
fn json_format_is_a_complete_report() {
    let output = tiny(&["--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Report = serde_json::from_slice(&output.stdout).expect("valid JSON report");
    assert_eq!(report.cells.len(), 4);
    assert!(
        report
            .cells
            .iter()
            .all(|c| c.samples_s.len() == 4 && c.summary.is_some())
    );
    assert!(
        report
            .cells
            .iter()
            .all(|c| c.rounds.as_ref().is_some_and(|r| r.medians.len() == 2))
    );
    assert_eq!(
        report.metadata.settings.get("runs").map(String::as_str),
        Some("2")
    );
    let env = report.metadata.environment.as_ref().expect("environment");
    assert!(env.logical_cpus >= 1 && env.date_utc.ends_with('Z'));
    assert!(env.command_line.iter().any(|a| a == "sweep"));
    assert!(env.rustc.is_some(), "rustc version recorded at build time");
    let rayon_2 = report
        .cells
        .iter()
        .find(|c| c.label("scheduler") == Some("rayon") && c.label("threads") == Some("2"))
        .expect("rayon cell on 2 threads");
    assert!(rayon_2.relative.is_some(), "speed-up over seq is computed");
}

#[test]
fn markdown_format_is_a_pipe_table() {
    let output = tiny(&["--format", "markdown"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("machine: "), "environment above the table");
    assert!(
        text.lines()
            .any(|l| l.starts_with("| kernel | scheduler | threads |"))
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("| reduce")).count(),
        4
    );
}

#[test]
fn output_file_format_follows_the_extension_and_stdout_keeps_the_table() {
    let path = scratch("by-extension.csv");
    let output = tiny(&["--output", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output)
            .lines()
            .any(|l| l.starts_with("kernel  scheduler"))
    );
    let csv = fs::read_to_string(&path).expect("csv written");
    let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(rows[0].starts_with("kernel,scheduler,threads,"));
    assert_eq!(rows.len(), 5);
}

#[test]
fn output_file_without_known_extension_needs_a_format() {
    let path = scratch("results.dat");
    let output = tiny(&["--output", path.to_str().unwrap()]);
    assert_bad_input(&output, &["--format"]);
    let output = tiny(&["--output", path.to_str().unwrap(), "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(serde_json::from_slice::<Report>(&fs::read(&path).unwrap()).is_ok());
}

#[test]
fn a_format_contradicting_the_output_extension_is_refused_before_measuring() {
    let path = scratch("contradiction.json");
    let output = tiny(&["--format", "csv", "--output", path.to_str().unwrap()]);
    assert_bad_input(&output, &["--format csv", "contradiction.json", "json"]);
    assert!(!path.exists(), "nothing is written");
    // Agreeing spellings are fine: .md is markdown.
    let path = scratch("agree.md");
    let output = tiny(&["--format", "markdown", "--output", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn plot_draws_an_svg_from_sweep_results() {
    let results = scratch("for-plot.json");
    let figure = scratch("figure.svg");
    let output = tiny(&["-o", results.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = cli(&[
        "plot",
        results.to_str().unwrap(),
        "-o",
        figure.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let svg = fs::read_to_string(&figure).expect("svg written");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("\nreduce\n") && svg.contains("time per run"));

    // PNG by extension or by --format; a contradicting --format is one line, exit 2.
    let png = scratch("figure.png");
    let output = cli(&[
        "plot",
        results.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let output = cli(&[
        "plot",
        results.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
        "--format",
        "svg",
    ]);
    assert_bad_input(&output, &["--format svg", "figure.png"]);
}

#[test]
fn list_names_kernels_parameters_and_schedulers() {
    let output = cli(&["list"]);
    assert!(output.status.success());
    let text = stdout(&output);
    for kernel in parbench_kernels::registry() {
        assert!(text.contains(kernel.name()), "{} missing", kernel.name());
        for param in kernel.params() {
            assert!(text.contains(&format!("--param {}=", param.name)));
        }
    }
    for kind in parbench_kernels::ExecutorKind::ALL {
        assert!(text.contains(kind.name()));
        assert_eq!(
            text.contains(&format!(" {}:N", kind.name())),
            kind.takes_grain(),
            "{kind}"
        );
    }
}

#[test]
fn unknown_kernel_is_one_line_listing_valid_kernels() {
    assert_bad_input(
        &cli(&["sweep", "--kernels", "reduce,nope"]),
        &["nope", "reduce"],
    );
}

#[test]
fn unknown_scheduler_is_one_line_listing_valid_schedulers() {
    let output = cli(&["sweep", "--kernels", "reduce", "--schedulers", "fast"]);
    assert_bad_input(&output, &["fast", "tree", "rayon", "seq"]);
}

#[test]
fn chunks_and_grains_are_part_of_the_scheduler_name() {
    let path = scratch("grains.json");
    let mut args = TINY.to_vec();
    let schedulers = args.iter().position(|&a| a == "--schedulers").unwrap();
    // `dynamic:1` is `dynamic`, so it is measured once; the rounds run in child processes,
    // which get the schedulers back from their names.
    args[schedulers + 1] = "dynamic,dynamic:64,dynamic:1,simple:8,tree-fixed-grain:16";
    args.extend(["-o", path.to_str().unwrap()]);
    let output = cli(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Report = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let mut names: Vec<&str> = report
        .cells
        .iter()
        .filter_map(|c| c.label("scheduler"))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names,
        ["dynamic", "dynamic:64", "simple:8", "tree-fixed-grain:16"]
    );
    assert!(
        report
            .cells
            .iter()
            .all(|c| c.error.is_none() && c.summary.is_some())
    );
    for (spec, words) in [
        (
            "tree:8",
            &["tree:8", "takes no chunk or grain", "dynamic"][..],
        ),
        ("dynamic:0", &["dynamic:0", "at least 1"][..]),
        ("guided:many", &["guided:many", "`many`"][..]),
        ("dynamo:4", &["dynamo", "dynamic"][..]),
    ] {
        let output = cli(&["sweep", "--kernels", "reduce", "--schedulers", spec]);
        assert_bad_input(&output, words);
    }
}

#[test]
fn zero_or_unparsable_threads_are_one_line_errors() {
    assert_bad_input(&cli(&["sweep", "--threads", "0"]), &["--threads"]);
    assert_bad_input(&cli(&["sweep", "--threads", "two"]), &["two"]);
    assert_bad_input(&cli(&["sweep", "--threads", "1,,2"]), &["--threads"]);
}

#[test]
fn thread_counts_the_process_cannot_start_are_refused_up_front() {
    if !cfg!(target_os = "linux") {
        eprintln!("SKIPPED: thread limits are only read on Linux");
        return;
    }
    // No Linux system can start ten million threads (pid_max is at most 2^22); at the default
    // vm.max_map_count even 100 000 would abort the process in the standard library.
    let output = cli(&["sweep", "--threads", "10000000", "--kernels", "reduce"]);
    assert_bad_input(&output, &["--threads 10000000", "can start about"]);
    assert!(stdout(&output).is_empty(), "nothing may be measured");
    // seq starts no thread, but its rows are labelled with the count: refused alike, so that it
    // never runs where no other scheduler could.
    let output = cli(&["sweep", "--schedulers", "seq", "--threads", "1,10000000"]);
    assert_bad_input(&output, &["--threads 10000000", "can start about"]);
    assert!(stdout(&output).is_empty(), "nothing may be measured");
    // A range is not expanded into millions of counts first.
    assert_bad_input(
        &cli(&["sweep", "--threads", "1-100000"]),
        &["more than 4096 thread counts"],
    );
    // Interleaved, the pools of a kernel live side by side: a count the process could start once
    // but not for all six pool schedulers at once is refused, with the way out.
    let Some(capacity) = parbench_scheduler::thread_capacity(None) else {
        eprintln!("SKIPPED (interleaved part): the thread limits cannot be read here");
        return;
    };
    let half = (capacity.available() / 2).max(1).to_string();
    let output = cli(&["sweep", "--threads", &half, "--kernels", "reduce"]);
    assert_bad_input(
        &output,
        &[
            &format!("--threads {half} with --interleave 5"),
            "--interleave 1",
        ],
    );
    assert!(stdout(&output).is_empty(), "nothing may be measured");
}

#[test]
fn zero_runs_is_a_one_line_error() {
    assert_bad_input(&cli(&["sweep", "--runs", "0"]), &["--runs"]);
    assert_bad_input(&cli(&["sweep", "--interleave", "0"]), &["--interleave"]);
}

#[test]
fn unknown_flag_and_unknown_parameter_are_one_line_errors() {
    assert_bad_input(&cli(&["sweep", "--fast"]), &["--fast"]);
    let output = cli(&["sweep", "--kernels", "reduce", "--param", "colour=blue"]);
    assert_bad_input(&output, &["colour"]);
}

#[test]
fn bad_kernel_parameter_value_is_a_one_line_error() {
    let output = cli(&["sweep", "--kernels", "reduce", "--param", "n=lots", "-q"]);
    assert_bad_input(&output, &["lots"]);
}

/// Sweeps the first kernel that reads an input file on `file`; `None` (after printing SKIPPED)
/// when no kernel reads one yet.
fn sweep_with_input_file(file: &std::path::Path) -> Option<Output> {
    let Some((kernel, param)) = kernel_with_input_file() else {
        eprintln!("SKIPPED: no kernel in the registry reads an input file yet");
        return None;
    };
    let setting = format!("{param}={}", file.display());
    Some(cli(&[
        "sweep",
        "--kernels",
        kernel,
        "--param",
        &setting,
        "-q",
    ]))
}

#[test]
fn missing_input_file_is_a_one_line_error() {
    if let Some(output) = sweep_with_input_file(&scratch("does-not-exist.txt")) {
        assert_bad_input(&output, &["does-not-exist.txt"]);
    }
}

#[test]
fn malformed_input_file_is_a_one_line_error() {
    let garbage = scratch("garbage-input.txt");
    fs::write(&garbage, "this is not\nan instance } 3 -x\n").unwrap();
    if let Some(output) = sweep_with_input_file(&garbage) {
        assert_bad_input(&output, &["garbage-input.txt"]);
    }
}

#[test]
fn results_measured_before_an_error_are_still_written() {
    let results = scratch("partial.json");
    // spmv-balanced (which takes no `n`) is measured, then nqueens rejects `--n 0` when it is
    // prepared: an error after measuring (input files are checked before anything runs). The
    // seed is one whose first round measures spmv first.
    let seed = (0..)
        .find(|&seed| parbench_cli::rounds::round_orders(2, 1, seed)[0] == [0, 1])
        .unwrap()
        .to_string();
    let output = cli(&[
        "sweep",
        "--seed",
        &seed,
        "--rounds",
        "1",
        "--kernels",
        "spmv-balanced,nqueens",
        "--schedulers",
        "seq",
        "--threads",
        "1",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--quiet",
        "--width",
        "2^10",
        "--n",
        "0",
        "-o",
        results.to_str().unwrap(),
    ]);
    assert_bad_input(&output, &["nqueens", "`n`"]);
    let report: Report = serde_json::from_slice(&fs::read(&results).unwrap()).unwrap();
    assert_eq!(
        report.cells.len(),
        1,
        "the spmv cell measured before the error"
    );
    assert_eq!(report.cells[0].label("kernel"), Some("spmv-balanced"));
    assert_eq!(
        report.unfinished_rounds(),
        Some((0, 1)),
        "the failed round is not a complete one"
    );
    assert!(
        stdout(&output).contains("spmv-balanced"),
        "stdout still gets the partial table"
    );
}

#[test]
fn plot_of_missing_or_malformed_results_is_a_one_line_error() {
    let figure = scratch("never.svg");
    let missing = scratch("no-results.json");
    let output = cli(&[
        "plot",
        missing.to_str().unwrap(),
        "-o",
        figure.to_str().unwrap(),
    ]);
    assert_bad_input(&output, &["no-results.json"]);
    let malformed = scratch("malformed.json");
    fs::write(&malformed, "{\"schema\": 1, \"cells\": [").unwrap();
    let output = cli(&[
        "plot",
        malformed.to_str().unwrap(),
        "-o",
        figure.to_str().unwrap(),
    ]);
    assert_bad_input(&output, &["malformed", "malformed.json"]);
    assert!(!figure.exists());
}

#[test]
fn unwritable_output_fails_before_measuring() {
    let path = scratch("no-such-dir").join("results.json");
    let output = tiny(&["-o", path.to_str().unwrap()]);
    assert_bad_input(&output, &["cannot write", "results.json"]);
    assert!(stdout(&output).is_empty(), "nothing was measured");
}

#[test]
fn a_missing_temp_directory_is_one_error_line_and_is_not_created() {
    let missing = scratch("no-such-tmpdir");
    let output = Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(TINY)
        .env("TMPDIR", missing.join("tmp"))
        .output()
        .expect("the parbench-cli binary runs");
    assert_bad_input(&output, &["temp directory", "TMPDIR", "no-such-tmpdir/tmp"]);
    assert!(
        !missing.exists(),
        "the sweep made no directory outside TMPDIR"
    );
}

#[test]
fn closed_stdout_pipe_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the parbench-cli binary runs");
    // Closing the read end makes the child's writes fail with EPIPE (SIGPIPE is ignored by Rust).
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("child exits");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("panicked"));
}

/// `--lock` and `--backend` reach round and trapezoid; a backend this CPU lacks is bad input.
#[test]
fn lock_and_backend_flags_select_the_kernels_locks() {
    let base = [
        "sweep",
        "--kernels",
        "round,trapezoid",
        "--schedulers",
        "seq,tree",
        "--threads",
        "2",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--quiet",
        "--format",
        "json",
        "--lock",
        "ticket",
        "--method",
        "mutex",
        "--param",
        "meals=50",
    ];
    let mut args = base.to_vec();
    args.extend(["--backend", "portable"]);
    let output = cli(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json = stdout(&output);
    assert!(
        json.contains("\"ticket\""),
        "the lock parameter is recorded: {json}"
    );
    assert!(
        json.contains("\"portable\""),
        "the backend parameter is recorded: {json}"
    );
    if cfg!(target_arch = "aarch64") {
        eprintln!(
            "SKIPPED: LSE may be available on this aarch64 CPU; the missing-backend case needs x86-64"
        );
        return;
    }
    let mut args = base.to_vec();
    args.extend(["--backend", "lse"]);
    assert_bad_input(&cli(&args), &["lse"]);
}

/// Without `--quiet` too, a missing or malformed input file is one line (no plan printed first).
#[test]
fn input_file_errors_come_before_the_plan() {
    let missing = cli(&[
        "sweep",
        "--kernels",
        "qap",
        "--input",
        "/no/such/instance.dat",
        "--threads",
        "1",
    ]);
    assert_bad_input(&missing, &["/no/such/instance.dat"]);
    let malformed = scratch("malformed-qap.dat");
    fs::write(&malformed, "3\n1 2\n").expect("scratch file");
    let path = malformed.to_string_lossy().into_owned();
    let output = cli(&[
        "sweep",
        "--kernels",
        "qap",
        "--input",
        &path,
        "--threads",
        "1",
    ]);
    assert_bad_input(&output, &[&format!("{path}:2")]);
}

/// A report whose cells' samples are `factor` times a fixed pattern.
fn scaled_report(factor: f64) -> Report {
    let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
    for (scheduler, base) in [("seq", 2e-3), ("rayon", 1e-3)] {
        let samples: Vec<f64> = (0..30)
            .map(|i| factor * base * (1.0 + 0.02 * f64::from(i % 5)))
            .collect();
        report.cells.push(parbench_cli::results::Cell::measured(
            &[
                ("kernel", "reduce"),
                ("scheduler", scheduler),
                ("threads", "2"),
            ],
            samples,
        ));
    }
    report
}

#[test]
fn compare_finds_a_known_twofold_difference_and_exits_zero() {
    let a = scratch("compare-a.json");
    let b = scratch("compare-b.json");
    fs::write(&a, serde_json::to_vec(&scaled_report(1.0)).unwrap()).unwrap();
    fs::write(&b, serde_json::to_vec(&scaled_report(2.0)).unwrap()).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    let output = cli(&["compare", a, b]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("reduce")).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows.iter()
            .all(|r| r.contains("2.00x") && r.ends_with("slower")),
        "{text}"
    );
    assert!(text.contains("2 comparisons: 0 faster, 2 slower, 0 no significant difference"));

    let output = cli(&["compare", b, a, "--threshold", "10%"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(
        text.lines().filter(|l| l.ends_with("faster")).count() == 2,
        "{text}"
    );
    assert!(text.contains("0.50x"), "{text}");

    // A copy of the baseline, and three files at once (columns B and C).
    let copy = scratch("compare-a-copy.json");
    fs::copy(a, &copy).unwrap();
    let output = cli(&["compare", a, copy.to_str().unwrap(), b]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.contains("B/A") && text.contains("C/A"), "{text}");
    assert!(
        text.contains("4 comparisons: 0 faster, 2 slower, 2 no significant difference"),
        "{text}"
    );
}

/// A report of one process: `tree` at 2 threads takes `tree` ms, every other default scheduler
/// 1 ms except `guided`, which takes `guided` ms; at 1 thread tree and seq take 2 ms.
fn standings_report(tree: f64, guided: f64) -> Report {
    let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
    let mut cell = |scheduler: &str, threads: &str, ms: f64| {
        report.cells.push(parbench_cli::results::Cell::measured(
            &[
                ("kernel", "reduce"),
                ("scheduler", scheduler),
                ("threads", threads),
            ],
            vec![ms * 1e-3; 5],
        ));
    };
    cell("tree", "2", tree);
    cell("guided", "2", guided);
    for other in ["static", "dynamic", "simple", "rayon"] {
        cell(other, "2", 1.0);
    }
    cell("tree", "1", 2.0);
    cell("seq", "1", 2.0);
    report
}

#[test]
fn standings_rank_tree_over_reports_and_reject_bad_input() {
    let files: Vec<PathBuf> = [(0.8, 0.9), (1.2, 0.6), (0.7, 1.1)]
        .iter()
        .enumerate()
        .map(|(index, &(tree, guided))| {
            let path = scratch(&format!("standings-{index}.json"));
            fs::write(
                &path,
                serde_json::to_vec(&standings_report(tree, guided)).unwrap(),
            )
            .unwrap();
            path
        })
        .collect();
    let paths: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let mut args = vec!["standings"];
    args.extend(&paths);
    let output = cli(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with(
            "tree at 2 threads against static, dynamic, guided, simple, rayon — 3 reports"
        ),
        "{text}"
    );
    // Per report tree / fastest other: 0.8 / 0.9 = 0.89, 1.2 / 0.6 = 2.00, 0.7 / 1 = 0.70.
    let row = text.lines().find(|l| l.starts_with("reduce")).expect(&text);
    for expected in ["0.89 (0.70–2.00)", "2 of 3", "guided", "1.00 (1.00–1.00)"] {
        assert!(row.contains(expected), "`{expected}` missing from: {row}");
    }
    assert!(
        text.contains("fastest (median below 1.00): reduce (0.889)"),
        "{text}"
    );

    args.extend(["--format", "markdown", "--versus", "guided"]);
    let text = stdout(&cli(&args));
    assert!(
        text.contains("| reduce | 3 | 0.89 (0.64–2.00) | 2 of 3 | guided |"),
        "{text}"
    );

    // As data: full precision, no header text or footer.
    let mut data_args = vec!["standings"];
    data_args.extend(&paths);
    data_args.extend(["--format", "csv"]);
    let csv = stdout(&cli(&data_args));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[0].starts_with("kernel,reports,versus_fastest,"),
        "{csv}"
    );
    let fields: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(fields.len(), lines[0].split(',').count(), "{csv}");
    assert_eq!((fields[0], fields[1], fields[5]), ("reduce", "3", "2"));
    let ratio: f64 = fields[2].parse().unwrap();
    assert!((ratio - 0.8 / 0.9).abs() < 1e-12, "{ratio}");
    *data_args.last_mut().unwrap() = "json";
    let json: serde_json::Value = serde_json::from_str(&stdout(&cli(&data_args))).unwrap();
    assert_eq!(
        (
            json["scheduler"].as_str(),
            json["files"].as_u64(),
            json["unfinished_files"].as_u64()
        ),
        (Some("tree"), Some(3), Some(0))
    );
    let kernel = &json["kernels"][0];
    assert_eq!(kernel["fastest_other"], "guided");
    assert!((kernel["versus_fastest_max"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(kernel["one_thread"].as_f64(), Some(1.0));
    // Guided's own figure: 0.9 / 0.8, 0.6 / 1, 1.1 / 0.7 → 1.125; the others' 1 / 0.8, 1 / 0.6,
    // 1 / 0.7 → 1.43.
    assert_eq!(kernel["others_own_lowest_versus"], "guided");
    assert!((kernel["others_own_lowest"].as_f64().unwrap() - 1.125).abs() < 1e-12);

    let first = paths[0];
    assert_bad_input(
        &cli(&["standings", first, "--threads", "0"]),
        &["--threads"],
    );
    assert_bad_input(
        &cli(&["standings", first, "--threads", "4"]),
        &["at 4 threads"],
    );
    assert_bad_input(
        &cli(&["standings", first, "--versus", "nosuch"]),
        &["'nosuch'"],
    );
    assert_bad_input(&cli(&["standings", first, "--versus", "tree"]), &["ranked"]);
    let missing = scratch("standings-missing.json");
    assert_bad_input(
        &cli(&["standings", missing.to_str().unwrap()]),
        &["standings-missing.json"],
    );
    assert_eq!(
        cli(&["standings"]).status.code(),
        Some(2),
        "one file at least"
    );

    // A report read while its sweep still runs (2 of 3 rounds so far) is refused, by `compare`
    // too, unless asked for.
    let mut unfinished = standings_report(0.5, 1.0);
    let settings = &mut unfinished.metadata.settings;
    settings.insert("rounds".to_owned(), "3".to_owned());
    settings.insert("rounds.done".to_owned(), "2".to_owned());
    let partial = scratch("standings-unfinished.json");
    fs::write(&partial, serde_json::to_vec(&unfinished).unwrap()).unwrap();
    let partial = partial.to_str().unwrap();
    let mut with_partial = vec!["standings"];
    with_partial.extend(&paths);
    with_partial.push(partial);
    assert_bad_input(
        &cli(&with_partial),
        &[
            "standings-unfinished.json holds 2 of the 3 rounds",
            "--allow-partial",
        ],
    );
    assert_bad_input(
        &cli(&["compare", first, partial]),
        &["standings-unfinished.json", "--allow-partial"],
    );
    with_partial.push("--allow-partial");
    let output = cli(&with_partial);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(
            "— 4 reports, each counted once (its cells' medians); 1 of them from unfinished sweeps"
        ),
        "{}",
        stdout(&output)
    );
    let output = cli(&["compare", first, partial, "--allow-partial"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // `plot` draws it (a figure of a running sweep is useful) but says it is partial.
    let figure = scratch("standings-unfinished.svg");
    let output = cli(&["plot", partial, "-o", figure.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("holds 2 of the 3 rounds its sweep planned (unfinished)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn compare_labels_files_by_environment_and_rejects_bad_input() {
    let path = scratch("compare-env.json");
    let output = tiny(&["-o", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let p = path.to_str().unwrap();
    let copy = scratch("compare-env-copy.json");
    fs::copy(&path, &copy).unwrap();
    let output = cli(&["compare", p, copy.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let legend = text.lines().next().unwrap();
    assert!(
        legend.starts_with("A = ") && legend.contains("(baseline)"),
        "{text}"
    );
    assert!(!legend.contains("environment not recorded"), "{text}");

    let missing = scratch("compare-missing.json");
    assert_bad_input(
        &cli(&["compare", p, missing.to_str().unwrap()]),
        &["compare-missing.json"],
    );
    assert_bad_input(&cli(&["compare", p, p, "--threshold", "lots"]), &["lots"]);
    assert_eq!(
        cli(&["compare", p]).status.code(),
        Some(2),
        "two files at least"
    );
}
