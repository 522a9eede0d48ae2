//! End-to-end tests of `parbench-cli latency`: the table per placement, the exports, the figure,
//! the SMT skip, and every bad-input path. Runs are tiny (a small matmul, a few dozen requests);
//! the tests check what was produced, never how long it took.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use parbench_cli::results::Report;

#[path = "support/one_cpu.rs"]
mod one_cpu;
use one_cpu::on_one_cpu;

fn latency(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .arg("latency")
        .args(args)
        .output()
        .expect("the parbench-cli binary runs")
}

/// A tiny measurement: matmul of order 8 at two loads, 40 requests each.
fn tiny(extra: &[&str]) -> Output {
    latency(&tiny_args(extra)[1..])
}

/// The arguments of [`tiny`], from `latency` on.
fn tiny_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "latency",
        "--service",
        "matmul",
        "--n",
        "8",
        "--qps",
        "400,200",
        "--requests",
        "40",
        "--warmup",
        "5",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    args
}

/// The placement column of a CSV report's rows.
fn csv_placements(csv: &str) -> Vec<String> {
    csv.lines()
        .skip(1)
        .map(|row| row.split(',').nth(1).unwrap_or("").to_owned())
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parbench-latency-tests");
    fs::create_dir_all(&dir).expect("scratch directory");
    dir.join(name)
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let cases: [(&[&str], &str); 9] = [
        (&["--service", "matmul", "--qps", "0"], "positive"),
        (&["--service", "matmul", "--qps=-5"], "positive"),
        (
            &["--service", "matmul", "--qps-range", "300:100:100"],
            "empty",
        ),
        (&["--service", "matmull", "--qps", "100"], "valid kernels: "),
        (
            &["--service", "matmul", "--qps", "100", "--placement", "numa"],
            "valid placements: single",
        ),
        (
            &["--service", "matmul", "--qps", "100", "--warmup", "0"],
            "at least 1",
        ),
        (
            &["--service", "matmul"],
            "missing required argument: <--qps",
        ),
        (
            &["--service", "matmul", "--qps", "100", "--width", "64"],
            "takes no parameter `width`",
        ),
        // 101 arrivals at 100 QPS span about a second: a 0.5 s bound would report the load
        // saturated whatever the server (it did, with a p95 of 0.1 ms, before the check).
        (
            &[
                "--service",
                "matmul",
                "--qps",
                "100",
                "--requests",
                "100",
                "--warmup",
                "1",
                "--max-duration",
                "0.5",
            ],
            "duration bound",
        ),
    ];
    for (args, needle) in cases {
        let output = latency(args);
        let err = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error:") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(
            output.stdout.is_empty(),
            "{args:?}: nothing measured, nothing printed"
        );
    }
}

#[test]
fn smt_placement_is_skipped_without_smt_siblings() {
    let topology = parbench_mapper::Topology::this_system();
    if topology.as_ref().is_ok_and(|t| t.has_smt_siblings()) {
        eprintln!("SKIPPED: this machine has SMT siblings, so `smt` is measured, not skipped");
        return;
    }
    let output = tiny(&["--placement", "smt,single"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("no SMT siblings: skipping placement smt"),
        "{err}"
    );
    let out = text(&output.stdout);
    assert!(
        out.contains("placement single") && !out.contains("placement smt"),
        "{out}"
    );
}

/// Without `--placement`, a default placement one CPU cannot host is skipped with a note, as
/// `smt` is without siblings, and the others are measured.
#[test]
fn default_placements_on_one_cpu_measure_single_and_note_the_skipped_cores() {
    let output = on_one_cpu(&tiny_args(&["--format", "csv"]));
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.lines().any(|line| line
            == "placement cores needs 2 cores, this process may use 1 core: skipping placement cores"),
        "{err}"
    );
    assert!(!err.contains("error"), "{err}");
    let csv = text(&output.stdout);
    assert_eq!(csv_placements(&csv), ["single", "single"], "{csv}");
}

/// A placement the user names that one CPU cannot host is refused, before measuring.
#[test]
fn named_placements_one_cpu_cannot_host_are_one_line_errors() {
    for placement in ["cores", "single,cores"] {
        let output = on_one_cpu(&tiny_args(&["--placement", placement]));
        let err = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{placement}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{placement}: {err}");
        assert_eq!(
            err.trim_end(),
            "error: placement cores needs 2 cores, this process may use 1 core",
            "{placement}"
        );
        assert!(output.stdout.is_empty(), "{placement}: nothing measured");
    }
}

#[test]
fn default_placements_on_two_cpus_measure_single_and_cores() {
    if cpus() < 2 {
        eprintln!(
            "SKIPPED: the defaults measure `cores` on two CPUs, this process may use {}",
            cpus()
        );
        return;
    }
    let output = tiny(&["--format", "csv"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains("skipping placement cores"), "{err}");
    let csv = text(&output.stdout);
    assert_eq!(
        csv_placements(&csv),
        ["single", "single", "cores", "cores"],
        "{csv}"
    );
}

#[test]
fn single_and_cores_give_tables_exports_and_a_figure() {
    if cpus() < 2 {
        eprintln!(
            "SKIPPED: placement `cores` needs two CPUs, this machine has {}",
            cpus()
        );
        return;
    }
    let json = scratch("latency.json");
    let svg = scratch("latency.svg");
    let output = tiny(&[
        "--placement",
        "single,cores",
        "--output",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    for needle in [
        "placement single",
        "placement cores",
        "p95 ms",
        "saturation: ",
    ] {
        assert!(table.contains(needle), "`{needle}` missing from:\n{table}");
    }
    let report: Report = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.command, "latency");
    assert_eq!(report.cells.len(), 4, "two loads × two placements");
    for cell in &report.cells {
        let measured = cell.samples_s.len();
        if cell.label("stopped") == Some("") {
            assert_eq!(measured, 40, "every measured request is a sample");
        }
        assert!(cell.metrics.iter().all(|m| m.values.len() == measured));
        let series = |name: &str| {
            let found = cell.metrics.iter().find(|m| m.name == name);
            found
                .unwrap_or_else(|| panic!("no {name} series"))
                .values
                .clone()
        };
        // The generator's lag is part of each request's queue time.
        let (queue, lag) = (series("queue"), series("generator_lag"));
        assert!(queue.iter().zip(&lag).all(|(q, l)| 0.0 <= *l && l <= q));
        assert_eq!(
            cell.label("qps").map(|q| q == "200" || q == "400"),
            Some(true)
        );
    }
    assert_eq!(report.cells[0].label("qps"), Some("200"), "ascending loads");
    assert!(
        report
            .metadata
            .settings
            .contains_key("saturation_qps.cores")
    );
    let figure = fs::read_to_string(&svg).unwrap();
    assert!(
        figure.starts_with("<svg") && figure.contains("cores ("),
        "{figure:.200}"
    );
}

#[test]
fn csv_on_stdout_has_a_row_per_load_with_every_sample() {
    let output = tiny(&["--placement", "single", "--format", "csv"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let csv = text(&output.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "header and two loads:\n{csv}");
    assert!(lines[0].starts_with("service,placement,qps,"));
    for row in &lines[1..] {
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(&fields[..2], ["matmul", "single"], "{row}");
        let samples = fields.last().unwrap().split(' ').count();
        // Column 7 is `stopped`: empty unless the load saturated and its run was cut short.
        if fields[6].is_empty() {
            assert_eq!(samples, 40, "{row}");
        }
    }
}

/// A load listed twice is measured once, as a kernel or scheduler named twice in `sweep` is.
#[test]
fn a_load_listed_twice_is_measured_once() {
    let output = latency(&[
        "--service",
        "matmul",
        "--n",
        "8",
        "--qps",
        "400,200,400",
        "--requests",
        "20",
        "--warmup",
        "2",
        "--placement",
        "single",
        "--format",
        "csv",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let csv = text(&output.stdout);
    let loads: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|row| row.split(',').nth(2).unwrap_or(""))
        .collect();
    assert_eq!(loads, ["200", "400"], "{csv}");
}

#[test]
fn counters_under_load_and_qps_scaled_requests() {
    // 20 ms of warm-up arrivals: 4 + 12 requests at 200 QPS, 8 + 24 at 400 QPS.
    let out = latency(&[
        "--service",
        "matmul",
        "--n",
        "8",
        "--qps",
        "200,400",
        "--placement",
        "single",
        "--scale-with-qps",
        "0.005",
        "--counters",
        "--quiet",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Report = serde_json::from_slice(&out.stdout).expect("JSON report");
    let counts: Vec<usize> = report.cells.iter().map(|c| c.samples_s.len()).collect();
    assert_eq!(counts, [12, 24]);
    for cell in &report.cells {
        let task_clock = cell
            .metrics
            .iter()
            .find(|m| m.name == "counter.worker0.task-clock ns")
            .expect("task clock counted under load");
        assert!(task_clock.values[0] > 0.0);
    }
    let table = tiny(&[
        "--placement",
        "single",
        "--counters",
        "--runs-per-request",
        "3",
    ]);
    assert!(table.status.success(), "{}", text(&table.stderr));
    let stdout = text(&table.stdout);
    assert!(stdout.contains("counters under load"), "{stdout}");
    assert!(stdout.contains("QPS worker 0: task-clock"), "{stdout}");
    let both = latency(&[
        "--service",
        "matmul",
        "--qps",
        "100",
        "--requests",
        "5",
        "--scale-with-qps",
        "1",
    ]);
    assert_eq!(both.status.code(), Some(2));
    assert_eq!(
        text(&both.stderr).lines().count(),
        1,
        "{}",
        text(&both.stderr)
    );
}

#[test]
fn plot_to_a_png_name_writes_a_png() {
    let png = scratch("latency-plot.png");
    let _ = fs::remove_file(&png);
    let output = tiny(&["--placement", "single", "--plot", png.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let bytes = fs::read(&png).expect("figure written");
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "PNG signature expected, got {:?}",
        &bytes[..bytes.len().min(16)]
    );
    assert!(!png.with_extension("partial.png").exists());
}
