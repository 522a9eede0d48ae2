//! End-to-end tests of `parbench-cli locks`: every lock × available backend plus std, the same
//! statistics and exports as `sweep`, the backends and timing note, and bad input.
//!
//! Runs are tiny (2 threads × 2000 acquisitions, two runs); nothing here looks at a timing.

mod support;

use parbench_atomics::Backend;
use parbench_cli::results::Report;
use support::{assert_bad_input, cli_ok, scratch};

const TINY: [&str; 8] = [
    "locks",
    "--quiet",
    "--iterations",
    "2000",
    "--runs",
    "2",
    "--warmup",
    "0",
];

fn tiny(threads: &str, extra: &[&str]) -> (String, String) {
    let mut args = TINY.to_vec();
    args.extend_from_slice(&["--threads", threads]);
    args.extend_from_slice(extra);
    cli_ok(&args)
}

/// `(lock, backend)` labels expected on this CPU: each spin lock with each available backend,
/// then std without one.
fn expected_locks() -> Vec<(String, String)> {
    let mut expected = Vec::new();
    for lock in ["tas", "ttas", "ticket"] {
        for backend in Backend::available() {
            expected.push((lock.to_owned(), backend.name().to_owned()));
        }
    }
    expected.push(("std".to_owned(), "-".to_owned()));
    expected
}

#[test]
fn json_report_has_every_lock_and_backend_with_throughput_and_fairness() {
    let (out, _) = tiny("2", &["--format", "json"]);
    let report: Report = serde_json::from_str(&out).expect("valid JSON report");
    assert_eq!(report.command, "locks");
    let found: Vec<(String, String)> = report
        .cells
        .iter()
        .map(|c| {
            let label = |name| c.label(name).unwrap_or_default().to_owned();
            (label("lock"), label("backend"))
        })
        .collect();
    assert_eq!(found, expected_locks());
    for cell in &report.cells {
        assert_eq!(cell.error, None);
        assert_eq!(cell.label("threads"), Some("2"));
        assert_eq!(cell.summary.as_ref().map(|s| s.runs), Some(2));
        let names: Vec<&str> = cell.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["throughput", "fairness-spread"]);
        assert!(cell.metrics.iter().all(|m| m.values.len() == 2));
        // 2 threads share 4000 acquisitions: the spread is at most 2 (one thread took all).
        assert!(
            cell.metrics[1]
                .values
                .iter()
                .all(|&v| (0.0..=2.0).contains(&v))
        );
    }
    let note = report.metadata.settings.get("note").expect("note stored");
    assert!(note.contains("need real ARM hardware"), "{note}");
}

#[test]
fn stderr_names_the_available_backends_and_the_emulation_note_first() {
    let args: Vec<&str> = TINY.iter().copied().filter(|&a| a != "--quiet").collect();
    let (_, err) = cli_ok(&[&args[..], &["--threads", "2"]].concat());
    let names: Vec<&str> = Backend::available().iter().map(|b| b.name()).collect();
    let mut lines = err.lines();
    assert_eq!(
        lines.next(),
        Some(format!("backends available on this CPU: {}", names.join(", ")).as_str())
    );
    let note = lines.next().unwrap_or_default();
    assert!(note.starts_with("note: emulated timings"), "{err}");
    #[cfg(target_arch = "x86_64")]
    assert_eq!(names, ["portable"]);
}

#[test]
fn table_has_a_row_per_lock_and_csv_file_a_row_per_cell() {
    let path = scratch("locks.csv");
    let path_text = path.to_str().expect("UTF-8 path");
    let (out, _) = tiny("1,2", &["--output", path_text]);
    let rows = expected_locks().len() * 2;
    let header = out.lines().next().unwrap_or_default();
    assert!(header.starts_with("lock") && header.contains("backend") && header.contains("median"));
    let table_rows = out.lines().filter(|l| l.contains("throughput=")).count();
    assert_eq!(table_rows, rows, "{out}");
    let csv = std::fs::read_to_string(&path).expect("CSV written");
    assert!(csv.starts_with("lock,backend,threads,runs,median_s"));
    assert_eq!(csv.lines().count(), rows + 1);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    assert_bad_input(&["locks", "--threads", "0"], &["--threads"]);
    assert_bad_input(&["locks", "--iterations", "0"], &["--iterations"]);
    assert_bad_input(&["locks", "--threads", "1,x"], &["'x'"]);
    assert_bad_input(&["locks", "--threads", "4-2"], &["empty"]);
    assert_bad_input(&["locks", "--runs", "0"], &["--runs"]);
    assert_bad_input(
        &["locks", "--critical-section", "x"],
        &["--critical-section"],
    );
    assert_bad_input(
        &["locks", "--iterations", "10", "--output", "r.txt"],
        &["--format"],
    );
}

#[test]
fn quiet_prints_only_the_error_for_an_unwritable_output() {
    // The backends and the note used to come first, even with --quiet.
    assert_bad_input(
        &[
            "locks",
            "-q",
            "--threads",
            "1",
            "--iterations",
            "1",
            "-o",
            "/nonexistent-dir/locks.json",
        ],
        &["/nonexistent-dir/locks.json"],
    );
}
