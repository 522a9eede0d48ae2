//! `parbench-cli reproduce <study>`: rerun one study's own experiment grid on this machine and set
//! every measured figure beside the published one, with the conditions of both.
//!
//! A study is one file implementing [`Study`], one published-data file
//! (`crates/cli/data/published/<study>.json`, see [`published`]) and one line in [`studies`]. Its
//! [`Study::run`] plans sweeps (or any measurement), runs them through [`StudyRun::measure`] — which
//! shows progress on stderr and keeps every cell for `results.json` — and returns a
//! [`report::StudyReport`]: measured values keyed by the published figures' ids, sections, and SVG
//! figures from [`figure`]. `report::write_study_report` writes the directory, checked before the
//! study runs and rescued whole when a file cannot be written (`results_file::ResultsDirectory`);
//! the Markdown goes to stdout as well.
//!
//! Scales ([`Scale`]): `tiny` (seconds; what the tests run), `default` (under 10 minutes on a
//! 2-core machine; each study says how it is scaled down) and `full` (the study's own parameters,
//! hours). Figures that need hardware this machine lacks (a PMU, SMT, an aarch64 CPU with LSE) are
//! reported as unavailable with the reason, never invented; on a machine that has it, the same
//! command fills them in.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::args::parse_runs;
use crate::commands::write_stdout;
use crate::error::CliError;
use crate::progress::Progress;
use crate::results::{Cell, Metadata, Report, STOPPED_SETTING};
use crate::results_file::ResultsDirectory;
use crate::stats::Summary;
use crate::sweep::{LABELS, SweepError, SweepObserver, SweepPlan, run_sweep};

pub mod far_atomics;
pub mod figure;
pub mod pending;
pub mod pthreads;
pub mod published;
pub mod report;
pub mod scheduler;
pub mod smt_mapping;
pub mod tail_latency;

use published::PublishedData;
use report::StudyReport;

/// A study that `reproduce` can rerun.
pub trait Study: Sync {
    /// Its name on the command line, e.g. `"far-atomics"`.
    fn name(&self) -> &'static str;
    /// The text of its published-data file (`include_str!` of `data/published/<name>.json`).
    fn published_json(&self) -> &'static str;
    /// Whether [`Study::run`] measures anything yet.
    fn implemented(&self) -> bool {
        true
    }
    /// How `scale` differs from the study's own experiment (sizes, runs, threads), one paragraph.
    fn scaling(&self, scale: Scale) -> String;
    /// Runs the experiment grid at `run.scale` and reports it.
    ///
    /// # Errors
    /// Any [`CliError`]: a kernel that cannot be prepared, an output that cannot be written.
    fn run(&self, run: &mut StudyRun) -> Result<StudyReport, CliError>;
}

/// Every study, in `--list` order.
///
/// ```
/// let names: Vec<&str> = parbench_cli::reproduce::studies().iter().map(|s| s.name()).collect();
/// assert_eq!(names.len(), 5);
/// assert!(names.contains(&"far-atomics"));
/// ```
pub fn studies() -> &'static [&'static dyn Study] {
    STUDIES
}

/// The registry behind [`studies`]: adding a study adds one line here.
static STUDIES: &[&dyn Study] = &[
    &far_atomics::FarAtomics,
    &tail_latency::TailLatencyStudy,
    &pthreads::PthreadsStudy,
    &smt_mapping::SmtMappingStudy,
    &scheduler::SchedulerStudy,
];

/// The study named `name`.
///
/// # Errors
/// [`CliError::Usage`] naming the studies that exist.
pub fn find_study(name: &str) -> Result<&'static dyn Study, CliError> {
    studies()
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = studies().iter().map(|s| s.name()).collect();
            CliError::Usage(format!(
                "unknown study `{name}`; the studies are: {}",
                names.join(", ")
            ))
        })
}

/// A study's published data, parsed.
///
/// # Errors
/// [`CliError::Usage`] if the embedded file is malformed (a bug, caught by the tests).
pub fn published_data(study: &dyn Study) -> Result<PublishedData, CliError> {
    PublishedData::parse(study.published_json()).map_err(|e| CliError::Usage(e.to_string()))
}

/// How big a reproduction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    /// Seconds: the smallest sizes and 2 runs per cell; checks the pipeline, measures nothing
    /// meaningful.
    Tiny,
    /// Under 10 minutes on a 2-core machine; each study says how it is scaled down.
    Default,
    /// The study's own sizes and run counts (can take hours).
    Full,
}

impl Scale {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Default => "default",
            Scale::Full => "full",
        }
    }

    /// Picks the value for this scale.
    ///
    /// ```
    /// use parbench_cli::reproduce::Scale;
    /// assert_eq!(Scale::Default.pick(1, 10, 100), 10);
    /// ```
    pub fn pick<T>(self, tiny: T, default: T, full: T) -> T {
        match self {
            Scale::Tiny => tiny,
            Scale::Default => default,
            Scale::Full => full,
        }
    }
}

/// Options of `parbench-cli reproduce`.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from(["parbench-cli", "reproduce", "far-atomics", "--scale", "tiny"])?;
/// let Command::Reproduce(args) = cli.command else { unreachable!() };
/// assert_eq!(args.study.as_deref(), Some("far-atomics"));
/// assert!(Cli::try_parse_from(["parbench-cli", "reproduce"]).is_err());
/// assert!(Cli::try_parse_from(["parbench-cli", "reproduce", "--list"]).is_ok());
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The study to reproduce (see `--list`).
    #[arg(value_name = "STUDY", required_unless_present = "list")]
    pub study: Option<String>,
    /// List the studies, what each reproduces and how its default scale is scaled down.
    // With a study or its settings it would list and run nothing, as if they had been taken.
    #[arg(long, conflicts_with_all = ["study", "scale", "runs", "output", "quiet"])]
    pub list: bool,
    /// tiny (seconds), default (< 10 minutes on 2 cores) or full (the study's own sizes).
    #[arg(long, value_enum, default_value_t = Scale::Default)]
    pub scale: Scale,
    /// Timed runs per cell instead of the scale's [at most 1000000].
    #[arg(long, value_name = "N", value_parser = parse_runs)]
    pub runs: Option<usize>,
    /// Directory for report.md, the figures and results.json [default: reproduce-STUDY].
    ///
    /// DIR is checked before measuring (a directory a file can be created in; a missing one is
    /// made for the check and removed again, then made when the first file is written); each
    /// file is replaced atomically. If one cannot be written after measuring, the
    /// whole report goes to the directory $TMPDIR/parbench-rescued-PID-DIRNAME, the error says
    /// where, and the exit code is 2.
    /// A study that fails partway writes the cells it measured to DIR/results.json (marked
    /// `stopped`) before it stops. So does tail-latency on Ctrl-C, SIGTERM or SIGHUP: the first
    /// stops it after the load under way, a second at once; it then exits with 128 + the first.
    #[arg(long, short, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `parbench-cli reproduce`.
///
/// # Errors
/// [`CliError`] for an unknown or unimplemented study, a failed measurement or an unwritable
/// output directory.
pub fn run(args: &ReproduceArgs) -> Result<(), CliError> {
    if args.list {
        return list();
    }
    let Some(name) = args.study.as_deref() else {
        return Err(CliError::Usage("name a study or give --list".to_owned()));
    };
    let study = find_study(name)?;
    let published = published_data(study)?;
    if !study.implemented() {
        return Err(CliError::Usage(format!(
            "study `{name}` is not yet implemented"
        )));
    }
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("reproduce-{name}")));
    // An unwritable directory fails now, before the plan is printed and the study measured.
    let output = ResultsDirectory::open(&dir)?;
    let mut run = StudyRun::new(args.scale, args.runs, args.quiet);
    run.note(&format!(
        "reproduce {name} at scale {}: {}",
        args.scale.name(),
        study.scaling(args.scale)
    ));
    let mut report = match study.run(&mut run) {
        Ok(report) => report,
        Err(error) => return Err(keep_measured(output, run.results, name, error)),
    };
    report
        .results
        .metadata
        .settings
        .insert("study".into(), name.to_owned());
    let markdown = report::render_markdown(&published, &report);
    let written = report::write_study_report(output, &markdown, &report);
    if written.is_ok() {
        run.note(&format!(
            "report written to {}",
            dir.join("report.md").display()
        ));
    }
    // The Markdown goes to stdout even when the directory failed, as sweep's table does.
    let printed = write_stdout(|out| out.write_all(markdown.as_bytes()));
    CliError::all(
        [written.err(), printed.err()]
            .into_iter()
            .flatten()
            .collect(),
    )
}

/// The error of study `name` that failed with `error` after measuring `results`: those cells go
/// to `results.json` in the output directory (through its rescue if that fails), marked
/// `stopped` with the error as a sweep's unfinished report is, and the error says where. Without
/// a cell measured, `error` as it is.
fn keep_measured(
    output: ResultsDirectory,
    mut results: Report,
    name: &str,
    error: CliError,
) -> CliError {
    let cells = results.cells.len();
    if cells == 0 {
        return error;
    }
    let settings = &mut results.metadata.settings;
    settings.insert("study".into(), name.to_owned());
    let reason = error.to_string();
    let reason = reason.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    settings.insert(STOPPED_SETTING.to_owned(), reason);
    let kept = output.path().join("results.json");
    let written = serde_json::to_vec_pretty(&results)
        .map_err(|source| CliError::Write {
            path: kept.clone(),
            source: source.into(),
        })
        .and_then(|json| output.finish("results", &[("results.json", &json)]));
    match written {
        Ok(()) => CliError::StudyStopped {
            error: Box::new(error),
            cells,
            kept,
        },
        Err(write_error) => CliError::Several(vec![error, write_error]),
    }
}

fn list() -> Result<(), CliError> {
    let mut lines = Vec::new();
    for study in studies() {
        let published = published_data(*study)?;
        let status = if study.implemented() {
            String::new()
        } else {
            " (not yet implemented)".to_owned()
        };
        lines.push(format!("{:<13} {}{status}", study.name(), published.title));
        lines.push(format!(
            "              default scale: {}",
            study.scaling(Scale::Default)
        ));
    }
    write_stdout(|out| {
        writeln!(
            out,
            "Studies (parbench-cli reproduce <study> [--scale tiny|default|full]):"
        )?;
        for line in &lines {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
}

/// The label names of a reproduction's `results.json`: the study's condition, then a sweep's.
pub const RESULT_LABELS: [&str; 4] = ["condition", "kernel", "scheduler", "threads"];

/// One study run in progress: its scale, the measurements so far, and progress on stderr.
#[derive(Debug)]
pub struct StudyRun {
    /// The scale to run at.
    pub scale: Scale,
    /// `--runs`, overriding the scale's run count.
    pub runs_override: Option<usize>,
    /// No progress on stderr.
    pub quiet: bool,
    /// Every cell measured so far, labelled with its condition.
    pub results: Report,
}

impl StudyRun {
    /// A run at `scale` with no measurements yet.
    pub fn new(scale: Scale, runs_override: Option<usize>, quiet: bool) -> StudyRun {
        let mut results = Report::new("reproduce", &RESULT_LABELS);
        let mut settings = BTreeMap::new();
        settings.insert("scale".to_owned(), scale.name().to_owned());
        results.metadata = Metadata::now(settings);
        StudyRun {
            scale,
            runs_override,
            quiet,
            results,
        }
    }

    /// Timed runs per cell: `--runs` if given, else the study's choice for this scale.
    pub fn runs(&self, tiny: usize, default: usize, full: usize) -> usize {
        self.runs_override
            .unwrap_or_else(|| self.scale.pick(tiny, default, full))
    }

    /// A line on stderr, unless quiet.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }

    /// Measures `plan` (as `sweep` does: warm-up, timed runs, validation, statistics) and files
    /// its cells under `condition`; returns them.
    ///
    /// # Errors
    /// [`CliError::Kernel`] when a kernel cannot be prepared.
    pub fn measure(&mut self, condition: &str, plan: &SweepPlan) -> Result<Vec<Cell>, CliError> {
        struct Bar<'a>(&'a Progress);
        impl SweepObserver for Bar<'_> {
            fn cell_started(&mut self, name: &str) {
                self.0.start_cell(name);
            }
            fn runs_done(&mut self, count: u64) {
                self.0.advance(count);
            }
            fn cell_finished(&mut self, _: &Report) -> Result<(), SweepError> {
                Ok(())
            }
        }
        self.note(&format!(
            "  {condition}: {} × {}",
            parbench_mapper::plural(plan.cell_count(), "cell"),
            parbench_mapper::plural(plan.runs + plan.warmup, "run")
        ));
        let progress = Progress::new(plan.total_runs(), self.quiet);
        let mut report = Report::new("sweep", &LABELS);
        let outcome = run_sweep(plan, &mut report, &mut Bar(&progress));
        progress.finish();
        outcome.map_err(|error| match error {
            SweepError::Prepare(error) => CliError::Kernel(error),
            SweepError::Observer(error) => CliError::Usage(error.to_string()),
        })?;
        for cell in &mut report.cells {
            cell.labels
                .insert("condition".to_owned(), condition.to_owned());
        }
        self.results.cells.extend(report.cells.iter().cloned());
        Ok(report.cells)
    }
}

/// The summary of the cell with these labels among `cells`, if it was measured.
///
/// ```
/// use parbench_cli::reproduce::summary_of;
/// use parbench_cli::results::Cell;
/// let cells = vec![Cell::measured(&[("kernel", "k"), ("scheduler", "seq")], vec![1.0, 3.0])];
/// assert_eq!(summary_of(&cells, &[("kernel", "k")]).unwrap().mean, 2.0);
/// assert!(summary_of(&cells, &[("kernel", "x")]).is_none());
/// ```
pub fn summary_of<'a>(cells: &'a [Cell], labels: &[(&str, &str)]) -> Option<&'a Summary> {
    cells
        .iter()
        .find(|c| labels.iter().all(|(k, v)| c.label(k) == Some(v)))
        .and_then(|c| c.summary.as_ref())
}

/// The machine and build this run measures on, for a report's "Here" line.
pub fn machine_conditions() -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let build = if cfg!(debug_assertions) {
        "debug build (timings are not representative: use --release)"
    } else {
        "release build"
    };
    format!(
        "{} {}, {} available, {build}",
        std::env::consts::ARCH,
        std::env::consts::OS,
        parbench_mapper::plural(cores, "hardware thread")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_published_file_parses_and_names_its_study() {
        for study in studies() {
            let data = published_data(*study).unwrap();
            assert_eq!(data.study, study.name());
            assert!(!data.figures.is_empty(), "{}", study.name());
        }
    }

    #[test]
    fn names_are_unique_and_unknown_names_list_the_real_ones() {
        let mut names: Vec<&str> = studies().iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), studies().len());
        let error = find_study("nope").err().unwrap().to_string();
        assert!(
            error.contains("far-atomics") && error.contains("scheduler"),
            "{error}"
        );
    }

    /// A study that fails after measuring keeps its cells in `results.json`, marked stopped, and
    /// its error says how many and where; one that measured nothing writes nothing, not even
    /// the directory.
    #[test]
    fn a_study_that_fails_keeps_the_cells_it_measured() {
        let dir =
            std::env::temp_dir().join(format!("parbench-reproduce-keep-{}", std::process::id()));
        // Ignoring the error is right: the directory usually does not exist yet.
        let _ = std::fs::remove_dir_all(&dir);
        let failure = || CliError::Usage("kernel x failed\non two lines".to_owned());

        let nothing = StudyRun::new(Scale::Tiny, None, true).results;
        let output = ResultsDirectory::open(&dir).unwrap();
        let error = keep_measured(output, nothing, "s", failure());
        assert_eq!(error.to_string(), failure().to_string());
        assert!(!dir.exists(), "no empty directory is left behind");

        let mut run = StudyRun::new(Scale::Tiny, None, true);
        let cell = Cell::measured(&[("kernel", "k"), ("scheduler", "seq")], vec![1.0, 2.0]);
        run.results.cells.push(cell);
        let output = ResultsDirectory::open(&dir).unwrap();
        let error = keep_measured(output, run.results, "s", failure());
        let kept = dir.join("results.json");
        assert_eq!(
            error.to_string(),
            format!(
                "kernel x failed\non two lines; the 1 cells measured before are kept in {}",
                kept.display()
            )
        );
        let report: Report =
            serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
        assert_eq!(report.cells.len(), 1);
        let settings = &report.metadata.settings;
        assert_eq!(settings[STOPPED_SETTING], "kernel x failed on two lines");
        assert_eq!(settings["study"], "s");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn runs_override_wins_over_the_scale() {
        let run = StudyRun::new(Scale::Tiny, Some(7), true);
        assert_eq!(run.runs(1, 2, 3), 7);
        let run = StudyRun::new(Scale::Full, None, true);
        assert_eq!(run.runs(1, 2, 3), 3);
    }
}
