//! `parbench-cli reproduce`: the list of studies, bad input, and each implemented study end to end
//! at `--scale tiny` (a report with measured beside published, figures and raw results).

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

#[path = "support/one_cpu.rs"]
mod one_cpu;
use one_cpu::on_one_cpu;

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(args)
        .output()
        .expect("the parbench-cli binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("parbench-reproduce-tests")
        .join(name);
    // Ignoring the error is right: the directory usually does not exist yet.
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// On one CPU the studies' thread and CPU counts are 1, and their texts say so in the singular
/// (they said "1 thread(s)", "1 CPU(s): 1 cells", "1 threads", "1 cores, 1 PUs"), naming the
/// CPUs this process may use rather than "this machine's cores".
#[test]
fn studies_on_one_cpu_count_in_the_singular() {
    let cases: [(&str, &[&str]); 4] = [
        (
            "pthreads",
            &[
                "\n| method | 1 thread | seq |\n",
                " | 1 thread: ",
                " | 1 thread created per run (spawn), ",
                ", 1 hardware thread available, ",
            ],
        ),
        (
            "far-atomics",
            &[
                "`tiny` — 1 thread (one per CPU this process may use); round: ",
                " | std atomics, 1 thread, 2 runs |",
            ],
        ),
        ("scheduler", &[" | 1 thread, width 2^10, rows = 1 × 2^9, "]),
        (
            "smt-mapping",
            &[
                "; 1 core, 1 PU (no SMT siblings)\n",
                " | every PU this process may use busy, the 8 kernels' threads in blocks; 5 ms \
                 per run, 1 repetition; ",
            ],
        ),
    ];
    for (study, needles) in cases {
        let dir = scratch(&format!("{study}-one-cpu"));
        let dir_text = dir.to_string_lossy().into_owned();
        // Not quiet: the progress notes on stderr count cells and CPUs too.
        let output = on_one_cpu(&["reproduce", study, "--scale", "tiny", "-o", &dir_text]);
        let (markdown, err) = (text(&output.stdout), text(&output.stderr));
        assert!(output.status.success(), "{study}: {err}");
        for needle in needles {
            assert!(
                markdown.contains(needle),
                "{study}: `{needle}` missing:\n{markdown}"
            );
        }
        if study == "far-atomics" {
            let note = "\n  round tas/portable on 1 CPU: 1 cell × 2 runs\n";
            assert!(err.contains(note), "{err}");
        }
    }
}

#[test]
fn list_shows_all_five_studies() {
    let output = cli(&["reproduce", "--list"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    for study in [
        "far-atomics",
        "tail-latency",
        "pthreads",
        "smt-mapping",
        "scheduler",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(study)),
            "{study} missing:\n{stdout}"
        );
    }
    assert!(stdout.contains("default scale:"), "{stdout}");
}

#[test]
fn unknown_studies_and_missing_names_are_one_line_errors() {
    let output = cli(&["reproduce", "gpu-study"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("far-atomics"), "{stderr}");
    let output = cli(&["reproduce"]);
    assert_eq!(output.status.code(), Some(2));
    let output = cli(&["reproduce", "scheduler", "--runs", "0"]);
    assert_eq!(output.status.code(), Some(2));
}

/// Runs `study` at the tiny scale and checks the report directory.
fn reproduce_tiny(study: &str) {
    let dir = scratch(study);
    let dir_text = dir.to_string_lossy().into_owned();
    let output = cli(&["reproduce", study, "--scale", "tiny", "-q", "-o", &dir_text]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let markdown = fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert_eq!(markdown, text(&output.stdout), "stdout carries the report");
    assert!(
        markdown.contains("## Measured beside published"),
        "{markdown}"
    );
    assert!(
        !markdown.contains("not measured by this run"),
        "every published figure is measured or explained:\n{markdown}"
    );
    let results = fs::read_to_string(dir.join("results.json")).expect("results.json");
    assert!(results.contains("\"samples_s\""), "raw samples kept");
    let svgs = fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(svgs > 0, "at least one figure");
}

/// On one CPU the study measures `single`, the one placement it can host, and its report says
/// which placements are missing, why, and that the smt-vs-cores classification is unavailable.
#[test]
fn tail_latency_on_one_cpu_reports_the_placements_it_cannot_host() {
    let dir = scratch("tail-latency-one-cpu");
    let dir_text = dir.to_string_lossy().into_owned();
    let args = [
        "reproduce",
        "tail-latency",
        "--scale",
        "tiny",
        "-q",
        "-o",
        &dir_text,
    ];
    let output = on_one_cpu(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let markdown = fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(markdown.contains("| QPS | single |\n"), "{markdown}");
    // Counts of one in the singular: the tiny scale has one service and one repetition.
    assert!(
        markdown.contains("— 1 kernel service instead of TailBench's applications"),
        "{markdown}"
    );
    assert!(markdown.contains("; 1 repetition per curve,"), "{markdown}");
    let runs: usize = markdown
        .split("A request = ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no 'A request = N run':\n{markdown}"));
    let noun = if runs == 1 { "run" } else { "runs" };
    assert!(
        markdown.contains(&format!("A request = {runs} {noun} of the kernel")),
        "{markdown}"
    );
    let cores_note =
        "placement cores needs 2 cores, this process may use 1 core: skipping placement cores";
    let finding = markdown
        .lines()
        .find(|line| line.starts_with("- `smt-finding`"))
        .unwrap_or_else(|| panic!("no smt-finding:\n{markdown}"));
    assert!(
        finding.contains("unavailable here: the classification compares smt with cores")
            && finding.contains(cores_note),
        "{finding}"
    );
    let section = markdown
        .split("## Placements not measured\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no section on the missing placements:\n{markdown}"));
    assert!(
        section.contains(cores_note) && section.contains("no cores or smt column"),
        "{section}"
    );
}

#[test]
fn implemented_studies_run_at_the_tiny_scale() {
    let list = text(&cli(&["reproduce", "--list"]).stdout);
    for line in list.lines().filter(|l| !l.starts_with(' ')).skip(1) {
        let study = line.split_whitespace().next().unwrap();
        if line.contains("not yet implemented") {
            let output = cli(&["reproduce", study, "--scale", "tiny", "-q"]);
            assert_eq!(output.status.code(), Some(2), "{study}");
            println!("{study}: not yet implemented");
            continue;
        }
        reproduce_tiny(study);
    }
}
