//! `parbench-cli locks`: throughput and fairness of every lock × backend available on this CPU,
//! plus `std::sync::Mutex`, over thread counts.
//!
//! The measurement is `parbench_atomics::lock_bench`; this module only plans the cells, repeats
//! each run and files the results as a [`Report`] (labels `lock`, `backend`, `threads`), so the
//! statistics and every export format are exactly those of `sweep`. A cell's samples are the
//! wall times of its runs; its metrics are the throughput (acquisitions per second) and the
//! fairness spread (`(max − min) / mean` of the per-thread acquisitions: 0 = perfectly fair).
//!
//! Which backends exist is decided at run time (`Backend::available()`), and the command says so
//! before measuring. Timings taken under an emulator (qemu) mean nothing: ARM numbers need real
//! ARM hardware, and on x86-64 only the portable backend runs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use parbench_atomics::{Backend, LockBenchRun, LockKind, MutexKind, lock_bench};
use parbench_kernels::check_thread_count;

use crate::args::{ThreadCounts, parse_in_range, parse_runs, parse_thread_counts, parse_warmup};
use crate::commands::{OutputFile, print_report};
use crate::error::CliError;
use crate::export::ExportFormat;
use crate::progress::Progress;
use crate::results::{Cell, Metadata, MetricSeries, Report};

/// The label names of a `locks` report, in table order.
pub const LABELS: [&str; 3] = ["lock", "backend", "threads"];

/// The `backend` label of `std::sync::Mutex`, which has no backend of ours; `sweep` records the
/// same for `round` and `trapezoid` on the std lock.
pub use parbench_atomics::NO_BACKEND;

/// Printed (and stored in the report) with every `locks` run.
pub const TIMING_NOTE: &str = "note: emulated timings (qemu) mean nothing; ARM numbers need real \
    ARM hardware; on x86-64 only the portable backend runs";

/// Options of `parbench-cli locks`.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from(["parbench-cli", "locks", "--threads", "1,2", "--iterations", "500"])?;
/// let Command::Locks(args) = cli.command else { unreachable!() };
/// assert_eq!((args.threads.unwrap().0, args.iterations), (vec![1, 2], 500));
/// assert!(Cli::try_parse_from(["parbench-cli", "locks", "--iterations", "0"]).is_err());
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
pub struct LocksArgs {
    /// Thread counts, e.g. `1,2,4` or `1-4` [default: 1, 2, 4, … below the available cores, then
    /// the available cores].
    #[arg(long, value_name = "LIST", value_parser = parse_thread_counts)]
    pub threads: Option<ThreadCounts>,
    /// Acquisitions per thread in one run (the threads share `threads × N`) [at most
    /// 1000000000].
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = parse_iterations)]
    pub iterations: u64,
    /// Busy-wait inside each critical section, in nanoseconds [at most 1000000, 1 ms].
    #[arg(long, value_name = "NS", default_value_t = 0, value_parser = parse_critical_section)]
    pub critical_section: u64,
    /// Timed runs per cell [at most 1000000].
    #[arg(long, value_name = "R", default_value_t = 10, value_parser = parse_runs)]
    pub runs: usize,
    /// Untimed warm-up runs per cell, before the timed ones [at most 1000000].
    #[arg(long, value_name = "W", default_value_t = 1, value_parser = parse_warmup)]
    pub warmup: usize,
    /// Output format of stdout, or of `--output` [default: table; for a file: from its extension].
    #[arg(long, value_enum)]
    pub format: Option<ExportFormat>,
    /// Also write the results to FILE (rewritten after every cell).
    ///
    /// A new or regular FILE is replaced through FILE.PID.partial and a rename (never half
    /// written); a symbolic link is followed and its target replaced, the link kept; a device or
    /// FIFO is opened before measuring, as a shell redirection would, and gets the final results
    /// once; a directory or socket is refused. FILE is checked before measuring without changing
    /// it, and is first written once there are results. If it cannot be written after
    /// measuring, the results go to $TMPDIR/parbench-rescued-PID-NAME (stdout if even that
    /// fails), the error on stderr says where, and the exit code is 2.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress bar, backends or note on stderr (the note is still stored in the report).
    #[arg(long, short)]
    pub quiet: bool,
}

/// The most acquisitions per thread in one run (`--iterations`): seconds to minutes of a
/// contended lock, not days.
pub const MAX_ITERATIONS: usize = 1_000_000_000;
/// The longest critical section (`--critical-section`, ns): a lock benchmark's critical sections
/// are short; past a millisecond a run of the default iterations takes minutes per thread.
pub const MAX_CRITICAL_SECTION_NS: usize = 1_000_000;

fn parse_iterations(text: &str) -> Result<u64, String> {
    parse_in_range(text, 1, MAX_ITERATIONS).map(|n| n as u64)
}

fn parse_critical_section(text: &str) -> Result<u64, String> {
    parse_in_range(text, 0, MAX_CRITICAL_SECTION_NS).map(|n| n as u64)
}

/// One lock to measure: a mutex kind with the backend its spin lock uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockUnderTest {
    /// The mutex.
    pub kind: MutexKind,
    /// The backend of a spin lock; ignored for `std`.
    pub backend: Backend,
}

impl LockUnderTest {
    /// Every spin lock × `backends`, then `std::sync::Mutex` once.
    ///
    /// ```
    /// use parbench_atomics::Backend;
    /// use parbench_cli::locks::LockUnderTest;
    /// let all = LockUnderTest::all(&[Backend::Portable]);
    /// let names: Vec<String> = all.iter().map(|l| l.name()).collect();
    /// assert_eq!(names, ["tas/portable", "ttas/portable", "ticket/portable", "std"]);
    /// ```
    pub fn all(backends: &[Backend]) -> Vec<LockUnderTest> {
        let spin = LockKind::ALL.into_iter().flat_map(|lock| {
            backends.iter().map(move |&backend| LockUnderTest {
                kind: MutexKind::Spin(lock),
                backend,
            })
        });
        let std = LockUnderTest {
            kind: MutexKind::Std,
            backend: Backend::Portable,
        };
        spin.chain(std::iter::once(std)).collect()
    }

    /// The `backend` label: the backend's name, or [`NO_BACKEND`] for `std`.
    pub fn backend_label(&self) -> &'static str {
        self.kind.backend_label(self.backend)
    }

    /// `lock/backend` (or just `std`) for progress lines.
    pub fn name(&self) -> String {
        match self.kind {
            MutexKind::Spin(_) => format!("{}/{}", self.kind, self.backend),
            MutexKind::Std => self.kind.to_string(),
        }
    }
}

/// Measures one cell: `warmup` untimed and `runs` timed runs of `lock` on `threads` threads.
///
/// A failed run (the OS refused a thread) makes the whole cell a failed cell carrying the error.
///
/// ```
/// use parbench_atomics::Backend;
/// use parbench_cli::locks::{measure_cell, LockUnderTest};
/// use std::time::Duration;
/// let std_mutex = LockUnderTest::all(&[Backend::Portable])[3];
/// let cell = measure_cell(std_mutex, 2, 100, Duration::ZERO, 0, 3, &mut |_| {});
/// assert_eq!(cell.samples_s.len(), 3);
/// assert_eq!(cell.label("backend"), Some("-"));
/// assert_eq!(cell.metrics[0].name, "throughput");
/// ```
pub fn measure_cell(
    lock: LockUnderTest,
    threads: usize,
    iterations: u64,
    critical_section: Duration,
    warmup: usize,
    runs: usize,
    on_run: &mut dyn FnMut(u64),
) -> Cell {
    let threads_label = threads.to_string();
    let labels = [
        ("lock", lock.kind.name()),
        ("backend", lock.backend_label()),
        ("threads", threads_label.as_str()),
    ];
    let mut measured: Vec<LockBenchRun> = Vec::new();
    let total = warmup.saturating_add(runs);
    for run in 0..total {
        match lock_bench(
            lock.kind,
            lock.backend,
            threads,
            iterations,
            critical_section,
        ) {
            Ok(result) if run >= warmup => measured.push(result),
            Ok(_) => {}
            Err(error) => {
                on_run((total - run) as u64);
                return Cell::failed(&labels, error.to_string());
            }
        }
        on_run(1);
    }
    let samples = measured.iter().map(|r| r.elapsed.as_secs_f64()).collect();
    let mut cell = Cell::measured(&labels, samples);
    cell.metrics = vec![
        MetricSeries {
            name: "throughput".into(),
            unit: "acq/s".into(),
            values: measured
                .iter()
                .map(LockBenchRun::acquisitions_per_second)
                .collect(),
        },
        MetricSeries {
            name: "fairness-spread".into(),
            unit: String::new(),
            values: measured.iter().map(LockBenchRun::fairness_spread).collect(),
        },
    ];
    cell
}

/// Runs `parbench-cli locks`.
///
/// # Errors
/// [`CliError::Usage`] for an output file of unknown format, [`CliError::Write`] for one that
/// cannot be written (before measuring), [`CliError::WrittenElsewhere`] when writing the results
/// failed after measuring (they went to a rescue file or stdout).
pub fn run(args: &LocksArgs) -> Result<(), CliError> {
    // An unwritable path fails now, before anything is printed or measured; nothing is written
    // to it before the first cell's results.
    let (mut output, stdout_format) = OutputFile::from_args(args.output.as_deref(), args.format)?;
    let threads = match &args.threads {
        Some(counts) => counts.0.clone(),
        None => ThreadCounts::up_to_available_cores().0,
    };
    check_thread_count(threads.iter().copied().max().unwrap_or(1))?;
    let backends = Backend::available();
    let backend_names: Vec<&str> = backends.iter().map(|b| b.name()).collect();
    let backends_line = format!(
        "backends available on this CPU: {}",
        backend_names.join(", ")
    );
    let locks = LockUnderTest::all(&backends);
    let critical_section = Duration::from_nanos(args.critical_section);

    let mut report = Report::new("locks", &LABELS);
    report.metadata = Metadata::now(BTreeMap::from([
        ("backends".to_owned(), backend_names.join(",")),
        ("iterations".to_owned(), args.iterations.to_string()),
        (
            "critical_section_ns".to_owned(),
            args.critical_section.to_string(),
        ),
        ("runs".to_owned(), args.runs.to_string()),
        ("warmup".to_owned(), args.warmup.to_string()),
        ("note".to_owned(), TIMING_NOTE.to_owned()),
    ]));
    if !args.quiet {
        eprintln!("{backends_line}");
        eprintln!("{TIMING_NOTE}");
    }
    let total_runs = (locks.len() as u64)
        .saturating_mul(threads.len() as u64)
        .saturating_mul(args.warmup.saturating_add(args.runs) as u64);
    let progress = Progress::new(total_runs, args.quiet);
    for lock in &locks {
        for &count in &threads {
            progress.start_cell(&format!("{} × {count} threads", lock.name()));
            let cell = measure_cell(
                *lock,
                count,
                args.iterations,
                critical_section,
                args.warmup,
                args.runs,
                &mut |runs| progress.advance(runs),
            );
            report.cells.push(cell);
            let note = output.as_mut().and_then(|output| output.snapshot(&report));
            if let Some(line) = note.filter(|_| !args.quiet) {
                progress.message(&line);
            }
        }
    }
    progress.finish();
    let only_copy = output.is_none();
    let table = !output.as_ref().is_some_and(OutputFile::is_stdout);
    let saved = output.map_or(Ok(()), |output| output.finish(&report));
    let printed = if table {
        print_report(&report, stdout_format, only_copy)
    } else {
        Ok(())
    };
    CliError::all([saved.err(), printed.err()].into_iter().flatten().collect())
}
