//! `parbench-cli standings R1.json R2.json …`: how one scheduler stands against the others over
//! several sweep reports, one per process — the table behind a claim such as "tree is within 5 %
//! of the fastest other scheduler on every kernel, and the fastest on qap", computed the same way
//! every time.
//!
//! On a shared machine a cell moves more between processes than within one, so such a claim needs
//! several processes, and how often it holds is part of it. Each report counts once: a
//! scheduler's time in a report is its cell's median (over all of that report's rounds). Per
//! kernel, at one thread count, with S the ranked scheduler:
//! * **S / fastest other**: in each report, S's time over the fastest of the others' times in
//!   that report; the median over reports, with the lowest and highest;
//! * **S fastest in**: the reports in which S beat every other;
//! * **fastest other, most often**: the other that was fastest in the most reports;
//! * **S / Y paired, highest**: for each other Y, the median over reports of S / Y; the highest of
//!   these (the closest competitor), with its name;
//! * **S faster than each other in ≥**: the fewest reports in which S beat one particular other;
//! * **medians**: S's median over reports divided by the lowest of the others' medians over
//!   reports, with that other's name;
//! * **S / seq (1 t)**: in each report, S's time at one thread over `seq`'s; the median, with
//!   the lowest and highest (when the reports have those cells);
//! * **others' own, lowest**: the first figure for each other Y instead of S — in each report,
//!   Y's time over the fastest of the rest (S included), the median over reports — and the lowest
//!   of these, with Y's name. It is the scale for *S / fastest other*: the fastest of several
//!   noisy times is lower than a typical one, so a scheduler level with the others scores above 1
//!   by about as much as they do, and one whose figure is at or below this is ahead of every
//!   other by the same measure.
//!
//! A report is used for a kernel only if it has a measured cell for S and for every other at that
//! thread count, without error and with a median above 0 s (a time of 0 s has no ratio). Every
//! figure of the kernel's row, S / seq at one thread included, is over the reports used, which
//! its `reports` column counts; the footer names the kernels that left reports out. A footer counts the kernels within `--within` of the fastest other and those where
//! S was fastest (median of S / fastest other below 1).
//!
//! `--format csv` and `--format json` print the same figures as data, at full precision, one row
//! (object) per kernel, without header text or footer; see [`StandingRow`] for the columns.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::commands::{read_reports, write_stdout};
use crate::compare::parse_percent;
use crate::error::CliError;
use crate::export::csv::quote;
use crate::results::{Cell, Report};
use crate::results_file::refuse_repeated_files;
use crate::stats::median;

/// The others when `--versus` is not given: the baselines of the default sweep.
pub const DEFAULT_VERSUS: [&str; 5] = ["static", "dynamic", "guided", "simple", "rayon"];

/// Options of `parbench-cli standings`.
#[derive(Debug, Args)]
pub struct StandingsArgs {
    /// JSON reports of sweeps (`sweep -o FILE.json`), one per process; each counts once, so a
    /// file given twice or a report of another command is an error.
    #[arg(value_name = "RESULTS.json", num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// The scheduler to rank.
    #[arg(long, value_name = "NAME", default_value = "tree")]
    pub scheduler: String,
    /// The schedulers it is compared with, comma-separated [default: static, dynamic, guided,
    /// simple and rayon, without the ranked one].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub versus: Vec<String>,
    /// Thread count of the comparison [default: the highest in the reports].
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// The margin the footer counts kernels within, e.g. `5%` or `5`.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = parse_percent)]
    pub within: f64,
    /// `text` (aligned columns), `markdown` (a table to paste into a document), or `csv` / `json`
    /// (the figures as data at full precision, one row per kernel, no header text or footer).
    #[arg(long, value_enum, default_value_t = StandingsFormat::Text)]
    pub format: StandingsFormat,
    /// Use reports of unfinished sweeps too (fewer rounds than planned: still running, or
    /// stopped early); without it such a report is an error, since it would count as a whole
    /// process's verdict.
    #[arg(long)]
    pub allow_partial: bool,
}

/// How `standings` prints its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StandingsFormat {
    /// Aligned columns.
    Text,
    /// A Markdown table.
    Markdown,
    /// CSV, one row per kernel: the kernel, the reports used, the ratio to the fastest other
    /// (median, min, max), wins, the closest others, and the one-thread ratio to seq.
    Csv,
    /// JSON: what is compared, and one object per kernel with the CSV's columns as fields.
    Json,
}

/// One kernel's standing as data (`--format csv|json`): the figures of [`Standing`] flattened,
/// ratios unrounded. A missing one-thread figure is an empty CSV field and `null` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StandingRow {
    /// The kernel.
    pub kernel: String,
    /// Reports used for this kernel.
    pub reports: usize,
    /// Median over reports of the ranked scheduler's time over the fastest other's.
    pub versus_fastest: f64,
    /// The lowest of those ratios.
    pub versus_fastest_min: f64,
    /// The highest of those ratios.
    pub versus_fastest_max: f64,
    /// Reports in which the ranked scheduler beat every other.
    pub fastest_in: usize,
    /// The other that was fastest in the most reports.
    pub fastest_other: String,
    /// The other with the highest median of paired ratios …
    pub paired_highest_versus: String,
    /// … and that median.
    pub paired_highest: f64,
    /// The other that the ranked scheduler beat in the fewest reports …
    pub fewest_wins_versus: String,
    /// … and in how many it beat it.
    pub fewest_wins: usize,
    /// The other with the lowest median time over reports …
    pub medians_versus: String,
    /// … and the ranked scheduler's median over it.
    pub medians: f64,
    /// Median over reports of the ranked scheduler's time at one thread over `seq`'s.
    pub one_thread: Option<f64>,
    /// The lowest of those ratios.
    pub one_thread_min: Option<f64>,
    /// The highest of those ratios.
    pub one_thread_max: Option<f64>,
    /// The other whose own `versus_fastest` (its time over the fastest of the rest, the ranked
    /// scheduler included) is the lowest …
    pub others_own_lowest_versus: String,
    /// … and that figure.
    pub others_own_lowest: f64,
}

impl From<&Standing> for StandingRow {
    fn from(standing: &Standing) -> StandingRow {
        StandingRow {
            kernel: standing.kernel.clone(),
            reports: standing.reports,
            versus_fastest: standing.versus_fastest.median,
            versus_fastest_min: standing.versus_fastest.min,
            versus_fastest_max: standing.versus_fastest.max,
            fastest_in: standing.fastest_in,
            fastest_other: standing.fastest_other.clone(),
            paired_highest_versus: standing.closest.0.clone(),
            paired_highest: standing.closest.1,
            fewest_wins_versus: standing.fewest_wins.0.clone(),
            fewest_wins: standing.fewest_wins.1,
            medians_versus: standing.medians.0.clone(),
            medians: standing.medians.1,
            one_thread: standing.one_thread.map(|s| s.median),
            one_thread_min: standing.one_thread.map(|s| s.min),
            one_thread_max: standing.one_thread.map(|s| s.max),
            others_own_lowest_versus: standing.others_own.0.clone(),
            others_own_lowest: standing.others_own.1,
        }
    }
}

/// The CSV columns, in [`StandingRow`]'s field order.
const CSV_COLUMNS: [&str; 18] = [
    "kernel",
    "reports",
    "versus_fastest",
    "versus_fastest_min",
    "versus_fastest_max",
    "fastest_in",
    "fastest_other",
    "paired_highest_versus",
    "paired_highest",
    "fewest_wins_versus",
    "fewest_wins",
    "medians_versus",
    "medians",
    "one_thread",
    "one_thread_min",
    "one_thread_max",
    "others_own_lowest_versus",
    "others_own_lowest",
];

impl StandingRow {
    /// The row's CSV fields, in [`CSV_COLUMNS`] order.
    fn csv_fields(&self) -> [String; 18] {
        let optional = |value: Option<f64>| value.map_or_else(String::new, |v| v.to_string());
        [
            quote(&self.kernel),
            self.reports.to_string(),
            self.versus_fastest.to_string(),
            self.versus_fastest_min.to_string(),
            self.versus_fastest_max.to_string(),
            self.fastest_in.to_string(),
            quote(&self.fastest_other),
            quote(&self.paired_highest_versus),
            self.paired_highest.to_string(),
            quote(&self.fewest_wins_versus),
            self.fewest_wins.to_string(),
            quote(&self.medians_versus),
            self.medians.to_string(),
            optional(self.one_thread),
            optional(self.one_thread_min),
            optional(self.one_thread_max),
            quote(&self.others_own_lowest_versus),
            self.others_own_lowest.to_string(),
        ]
    }
}

/// What `--format json` prints.
#[derive(Debug, Serialize)]
struct StandingsData<'a> {
    scheduler: &'a str,
    versus: &'a [String],
    threads: usize,
    files: usize,
    /// How many of the files are reports of unfinished sweeps (only with `--allow-partial`).
    unfinished_files: usize,
    kernels: Vec<StandingRow>,
}

/// A median over reports with the lowest and highest value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The lowest value.
    pub min: f64,
    /// The highest value.
    pub max: f64,
}

impl Spread {
    /// `None` for no values.
    fn of(values: &[f64]) -> Option<Spread> {
        Some(Spread {
            median: median(values)?,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    fn text(self) -> String {
        format!("{:.2} ({:.2}–{:.2})", self.median, self.min, self.max)
    }
}

/// Where the ranked scheduler stands on one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// The kernel.
    pub kernel: String,
    /// Reports that have the ranked scheduler and every other at the thread count.
    pub reports: usize,
    /// Per report, the ranked scheduler's time over the fastest other's.
    pub versus_fastest: Spread,
    /// Reports in which the ranked scheduler beat every other.
    pub fastest_in: usize,
    /// The other that was fastest in the most reports (the first listed on a tie).
    pub fastest_other: String,
    /// The other with the highest median of paired ratios, and that median.
    pub closest: (String, f64),
    /// The other that the ranked scheduler beat in the fewest reports, and that count.
    pub fewest_wins: (String, usize),
    /// The other with the lowest median time, and the ranked scheduler's median over it.
    pub medians: (String, f64),
    /// Per report used, the ranked scheduler's time at one thread over `seq`'s.
    pub one_thread: Option<Spread>,
    /// The other with the lowest median of its own time over the fastest of the rest (the
    /// ranked scheduler included), and that median: what `versus_fastest` is for the best of
    /// the others.
    pub others_own: (String, f64),
}

/// A scheduler's time per (kernel, scheduler, threads) in one report: the cell's median, for
/// cells measured without error.
type Times = BTreeMap<(String, String, usize), f64>;

fn times(report: &Report) -> Times {
    report
        .cells
        .iter()
        .filter_map(|cell| Some((key(cell)?, cell_time(cell)?)))
        .collect()
}

fn key(cell: &Cell) -> Option<(String, String, usize)> {
    Some((
        cell.label("kernel")?.to_owned(),
        cell.label("scheduler")?.to_owned(),
        cell.label("threads")?.parse().ok()?,
    ))
}

fn cell_time(cell: &Cell) -> Option<f64> {
    if cell.error.is_some() {
        return None;
    }
    cell.summary
        .as_ref()
        .map(|summary| summary.median)
        .or_else(|| median(&cell.samples_s))
        .filter(|time| time.is_finite() && *time > 0.0)
}

/// The standings of `subject` against `versus` at `threads`, one per kernel (in the order the
/// kernels first appear in the reports) that some report has all of them for.
///
/// ```
/// use parbench_cli::results::{Cell, Report};
/// use parbench_cli::standings::standings;
/// let mut reports = Vec::new();
/// for (tree, guided) in [(1.0, 2.0), (3.0, 2.0), (1.0, 4.0)] {
///     let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
///     for (scheduler, time) in [("tree", tree), ("guided", guided)] {
///         let labels = [("kernel", "k"), ("scheduler", scheduler), ("threads", "2")];
///         report.cells.push(Cell::measured(&labels, vec![time]));
///     }
///     reports.push(report);
/// }
/// let table = standings(&reports, "tree", &["guided".to_owned()], 2);
/// assert_eq!(table[0].versus_fastest.median, 0.5); // of 0.5, 1.5 and 0.25
/// assert_eq!(table[0].fastest_in, 2);
/// ```
pub fn standings(
    reports: &[Report],
    subject: &str,
    versus: &[String],
    threads: usize,
) -> Vec<Standing> {
    let times: Vec<Times> = reports.iter().map(times).collect();
    let mut kernels: Vec<String> = Vec::new();
    for report in reports {
        for cell in &report.cells {
            if let Some(kernel) = cell.label("kernel")
                && !kernels.iter().any(|k| k == kernel)
            {
                kernels.push(kernel.to_owned());
            }
        }
    }
    kernels
        .into_iter()
        .filter_map(|kernel| standing(&times, &kernel, subject, versus, threads))
        .collect()
}

fn standing(
    times: &[Times],
    kernel: &str,
    subject: &str,
    versus: &[String],
    threads: usize,
) -> Option<Standing> {
    let time = |report: &Times, scheduler: &str, threads: usize| {
        report
            .get(&(kernel.to_owned(), scheduler.to_owned(), threads))
            .copied()
    };
    // The usable reports, and per usable report the subject's time and each other's, in
    // `versus` order. Every figure of the row is over these reports alone, so that its
    // `reports` column counts the reports behind each of them.
    let (used, rows): (Vec<&Times>, Vec<(f64, Vec<f64>)>) = times
        .iter()
        .filter_map(|report| {
            let own = time(report, subject, threads)?;
            let others = versus
                .iter()
                .map(|other| time(report, other, threads))
                .collect::<Option<Vec<f64>>>()?;
            Some((report, (own, others)))
        })
        .unzip();
    if rows.is_empty() || versus.is_empty() {
        return None;
    }
    let fastest_index = |others: &[f64]| {
        (0..others.len())
            .min_by(|&a, &b| others[a].total_cmp(&others[b]))
            .unwrap_or(0)
    };
    let ratios: Vec<f64> = rows
        .iter()
        .map(|(own, others)| own / others[fastest_index(others)])
        .collect();
    let mut fastest_counts = vec![0usize; versus.len()];
    for (_, others) in &rows {
        fastest_counts[fastest_index(others)] += 1;
    }
    let most_often = (0..versus.len())
        .max_by(|&a, &b| fastest_counts[a].cmp(&fastest_counts[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let column = |index: usize| rows.iter().map(move |(own, others)| (*own, others[index]));
    let paired: Vec<f64> = (0..versus.len())
        .map(|index| {
            let ratios: Vec<f64> = column(index).map(|(own, other)| own / other).collect();
            median(&ratios).unwrap_or(f64::NAN)
        })
        .collect();
    let closest = (0..versus.len())
        .max_by(|&a, &b| paired[a].total_cmp(&paired[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let wins: Vec<usize> = (0..versus.len())
        .map(|index| column(index).filter(|(own, other)| own < other).count())
        .collect();
    let fewest = (0..versus.len())
        .min_by(|&a, &b| wins[a].cmp(&wins[b]).then(a.cmp(&b)))
        .unwrap_or(0);
    let own_median = median(&rows.iter().map(|(own, _)| *own).collect::<Vec<_>>())?;
    let other_medians: Vec<f64> = (0..versus.len())
        .map(|index| {
            median(&column(index).map(|(_, other)| other).collect::<Vec<_>>()).unwrap_or(f64::NAN)
        })
        .collect();
    let lowest = fastest_index(&other_medians);
    // Each other ranked the same way, against the rest with the subject in its place.
    let others_own: Vec<f64> = (0..versus.len())
        .map(|index| {
            let ratios: Vec<f64> = rows
                .iter()
                .map(|(own, others)| {
                    let rest = others
                        .iter()
                        .enumerate()
                        .filter(|&(other, _)| other != index)
                        .map(|(_, time)| *time)
                        .fold(*own, f64::min);
                    others[index] / rest
                })
                .collect();
            median(&ratios).unwrap_or(f64::NAN)
        })
        .collect();
    let best_other = fastest_index(&others_own);
    let one_thread: Vec<f64> = used
        .iter()
        .filter_map(|report| Some(time(report, subject, 1)? / time(report, "seq", 1)?))
        .collect();
    Some(Standing {
        kernel: kernel.to_owned(),
        reports: rows.len(),
        versus_fastest: Spread::of(&ratios)?,
        fastest_in: ratios.iter().filter(|&&ratio| ratio < 1.0).count(),
        fastest_other: versus[most_often].clone(),
        closest: (versus[closest].clone(), paired[closest]),
        fewest_wins: (versus[fewest].clone(), wins[fewest]),
        medians: (versus[lowest].clone(), own_median / other_medians[lowest]),
        one_thread: Spread::of(&one_thread),
        others_own: (versus[best_other].clone(), others_own[best_other]),
    })
}

/// Runs `standings`.
///
/// # Errors
/// [`CliError`] when a file cannot be read or is not a report, when the thread count is 0, or
/// when the ranked scheduler or one of the others has no measured cell at that thread count in
/// any report.
pub fn run(args: &StandingsArgs) -> Result<(), CliError> {
    let reports = read_reports(&args.files, args.allow_partial)?;
    check_distinct_sweeps(&args.files, &reports)?;
    let versus: Vec<String> = if args.versus.is_empty() {
        DEFAULT_VERSUS
            .iter()
            .filter(|&&name| name != args.scheduler)
            .map(|&name| name.to_owned())
            .collect()
    } else {
        args.versus.clone()
    };
    if versus.iter().any(|name| name.trim().is_empty()) {
        return Err(CliError::Usage(format!(
            "--versus {} has an empty scheduler name",
            versus.join(",")
        )));
    }
    // An other listed twice would be the fastest of "the rest" in its own others' figure (1).
    if let Some((_, name)) = versus
        .iter()
        .enumerate()
        .find(|&(index, name)| versus[..index].contains(name))
    {
        return Err(CliError::Usage(format!(
            "--versus lists '{name}' twice; each other is compared once"
        )));
    }
    if versus.contains(&args.scheduler) {
        return Err(CliError::Usage(format!(
            "--versus lists '{}', the scheduler being ranked",
            args.scheduler
        )));
    }
    let all: Vec<Times> = reports.iter().map(times).collect();
    let threads = match args.threads {
        Some(0) => return Err(CliError::Usage("--threads must be at least 1".to_owned())),
        Some(threads) => threads,
        None => all
            .iter()
            .flat_map(|times| times.keys().map(|(_, _, threads)| *threads))
            .max()
            .ok_or_else(|| CliError::Usage("the reports have no measured cell".to_owned()))?,
    };
    for name in std::iter::once(&args.scheduler).chain(&versus) {
        let present = all.iter().any(|times| {
            times
                .keys()
                .any(|(_, scheduler, t)| scheduler == name && *t == threads)
        });
        if !present {
            return Err(CliError::Usage(format!(
                "no report has a measured cell of scheduler '{name}' at {threads} threads"
            )));
        }
    }
    let table = standings(&reports, &args.scheduler, &versus, threads);
    let text = match args.format {
        StandingsFormat::Text | StandingsFormat::Markdown => {
            render(&table, &args.scheduler, &versus, threads, &reports, args)
        }
        StandingsFormat::Csv => {
            let mut text = CSV_COLUMNS.join(",") + "\n";
            for row in &table {
                text.push_str(&StandingRow::from(row).csv_fields().join(","));
                text.push('\n');
            }
            text
        }
        StandingsFormat::Json => {
            let data = StandingsData {
                scheduler: &args.scheduler,
                versus: &versus,
                threads,
                files: reports.len(),
                unfinished_files: reports
                    .iter()
                    .filter(|report| report.unfinished_rounds().is_some())
                    .count(),
                kernels: table.iter().map(StandingRow::from).collect(),
            };
            serde_json::to_string_pretty(&data).expect("plain data serializes") + "\n"
        }
    };
    write_stdout(|out| out.write_all(text.as_bytes()))
}

/// Each report counts as one process's verdict, so the same file given twice (compared by
/// canonical path: `a.json` and `./a.json` are one file) would count one process twice, and a
/// report of another command (`locks`, `latency`) would be counted in the header while
/// contributing nothing.
///
/// # Errors
/// [`CliError::Usage`] naming the file.
fn check_distinct_sweeps(paths: &[PathBuf], reports: &[Report]) -> Result<(), CliError> {
    for (path, report) in paths.iter().zip(reports) {
        if report.command != "sweep" {
            return Err(CliError::Usage(format!(
                "{} is a {} report, not a sweep report: standings ranks schedulers \
                 over sweep reports (`sweep -o FILE.json`)",
                path.display(),
                report.command
            )));
        }
    }
    refuse_repeated_files(paths, "each report counts once, as one process")
}

/// The table with a header naming what is compared and a footer counting the kernels within the
/// margin and those where the ranked scheduler was fastest.
fn render(
    table: &[Standing],
    subject: &str,
    versus: &[String],
    threads: usize,
    reports: &[Report],
    args: &StandingsArgs,
) -> String {
    let s = subject;
    let files = reports.len();
    let unfinished = reports
        .iter()
        .filter(|report| report.unfinished_rounds().is_some())
        .count();
    // Only with --allow-partial can there be any; the header says how many, so a table built on
    // them is not quoted as if every process had run its whole plan.
    let unfinished = match unfinished {
        0 => String::new(),
        n => format!("; {n} of them from unfinished sweeps (fewer rounds than planned)"),
    };
    let mut out = format!(
        "{s} at {threads} threads against {} — {files} reports, each counted once \
         (its cells' medians){unfinished}\n\n",
        versus.join(", ")
    );
    let header = [
        "kernel".to_owned(),
        "reports".to_owned(),
        format!("{s} / fastest other"),
        format!("{s} fastest in"),
        "fastest other, most often".to_owned(),
        format!("{s} / X paired, highest"),
        format!("{s} faster than each other in"),
        "medians".to_owned(),
        format!("{s} / seq (1 t)"),
        "others' own, lowest".to_owned(),
    ];
    let rows: Vec<Vec<String>> = table
        .iter()
        .map(|row| {
            vec![
                row.kernel.clone(),
                row.reports.to_string(),
                row.versus_fastest.text(),
                format!("{} of {}", row.fastest_in, row.reports),
                row.fastest_other.clone(),
                format!("{:.3} ({})", row.closest.1, row.closest.0),
                format!(
                    "≥ {} of {} ({})",
                    row.fewest_wins.1, row.reports, row.fewest_wins.0
                ),
                format!("{:.3} ({})", row.medians.1, row.medians.0),
                row.one_thread.map_or_else(|| "–".to_owned(), Spread::text),
                format!("{:.3} ({})", row.others_own.1, row.others_own.0),
            ]
        })
        .collect();
    out.push_str(&match args.format {
        StandingsFormat::Markdown => markdown(&header, &rows),
        _ => aligned(&header, &rows),
    });
    let margin = 1.0 + args.within;
    let behind: Vec<String> = table
        .iter()
        .filter(|row| row.versus_fastest.median > margin)
        .map(|row| {
            format!(
                "{} ({:.3}; the others' own, lowest: {:.3}, {})",
                row.kernel, row.versus_fastest.median, row.others_own.1, row.others_own.0
            )
        })
        .collect();
    // Three decimals here: the table's two would show 0.997 as "1.00".
    let fastest: Vec<String> = table
        .iter()
        .filter(|row| row.versus_fastest.median < 1.0)
        .map(|row| format!("{} ({:.3})", row.kernel, row.versus_fastest.median))
        .collect();
    // The margin as exactly as it was given (to 0.01 %): with two decimals `--within 2.5%`
    // would read "≤ 1.02" beside a kernel at 1.024 counted within.
    let _ = writeln!(
        out,
        "\nwithin {}% of the fastest other (median of {s} / fastest other ≤ {}): {} of {} \
         kernels{}",
        (args.within * 10_000.0).round() / 100.0,
        (margin * 10_000.0).round() / 10_000.0,
        table.len() - behind.len(),
        table.len(),
        if behind.is_empty() {
            String::new()
        } else {
            format!("; not: {}", behind.join(", "))
        }
    );
    let _ = writeln!(
        out,
        "fastest (median below 1.00): {}",
        if fastest.is_empty() {
            "none".to_owned()
        } else {
            fastest.join(", ")
        }
    );
    // The same figure as the fastest line, but against what the best other scores by it.
    let ahead: Vec<String> = table
        .iter()
        .filter(|row| row.versus_fastest.median < row.others_own.1)
        .map(|row| {
            format!(
                "{} ({:.3} < {:.3}, {})",
                row.kernel, row.versus_fastest.median, row.others_own.1, row.others_own.0
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "below every other's own figure (median of {s} / fastest other < the others' own, \
         lowest): {}",
        if ahead.is_empty() {
            "none".to_owned()
        } else {
            ahead.join(", ")
        }
    );
    // A report without a usable cell counts in the header but not in the row: say where.
    let left_out: Vec<String> = table
        .iter()
        .filter(|row| row.reports < files)
        .map(|row| format!("{} ({} of {files})", row.kernel, files - row.reports))
        .collect();
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "reports left out (a cell of {s} or of another at {threads} threads missing, failed \
             or of 0 s): {}",
            left_out.join(", ")
        );
    }
    let slowest_alone = table
        .iter()
        .filter_map(|row| Some((row.one_thread?.median, row.kernel.as_str())))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((ratio, kernel)) = slowest_alone {
        let _ = writeln!(
            out,
            "at 1 thread, the highest median of {s} / seq: {ratio:.3} ({kernel})"
        );
    }
    out
}

fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, entry) in widths.iter_mut().zip(row) {
            *width = (*width).max(entry.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(entry, width)| format!("{entry}{}", " ".repeat(width - entry.chars().count())))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn markdown(header: &[String], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut out = line(header);
    out.push_str(&line(&vec!["---".to_owned(); header.len()]));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_describes_the_formats_without_internal_names() {
        use clap::CommandFactory;
        let mut command = crate::args::Cli::command();
        let help = command
            .find_subcommand_mut("standings")
            .expect("standings exists")
            .render_long_help()
            .to_string();
        assert!(help.contains("one row per kernel"), "{help}");
        assert!(
            !help.contains("StandingRow") && !help.contains("[`"),
            "{help}"
        );
    }

    /// A report with one kernel's cells: `(scheduler, threads, time)`.
    fn report(kernel: &str, cells: &[(&str, &str, f64)]) -> Report {
        let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
        for &(scheduler, threads, time) in cells {
            let labels = [
                ("kernel", kernel),
                ("scheduler", scheduler),
                ("threads", threads),
            ];
            report.cells.push(Cell::measured(&labels, vec![time; 3]));
        }
        report
    }

    /// The defaults of the command line, in `format`.
    fn args(format: StandingsFormat) -> StandingsArgs {
        StandingsArgs {
            files: Vec::new(),
            scheduler: "tree".to_owned(),
            versus: Vec::new(),
            threads: None,
            within: 0.05,
            format,
            allow_partial: false,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|&name| name.to_owned()).collect()
    }

    #[test]
    fn every_column_follows_its_definition() {
        // At 2 threads tree, guided, static; at 1 thread tree and seq, when given.
        let process = |tree: f64, guided: f64, stat: f64, one: Option<f64>| {
            let mut cells = vec![
                ("tree", "2", tree),
                ("guided", "2", guided),
                ("static", "2", stat),
            ];
            cells.extend(one.map(|tree| ("tree", "1", tree)));
            cells.extend(one.map(|_| ("seq", "1", 2.0)));
            report("k", &cells)
        };
        let reports = [
            process(0.9, 1.0, 1.2, Some(2.0)), // tree / fastest other 0.9 (guided)
            process(1.5, 2.0, 1.0, Some(2.2)), // 1.5 (static)
            process(1.1, 1.0, 3.0, None),      // 1.1 (guided)
        ];
        let table = standings(&reports, "tree", &names(&["static", "guided"]), 2);
        assert_eq!(table.len(), 1);
        let row = &table[0];
        assert_eq!(row.reports, 3);
        assert_eq!(
            row.versus_fastest,
            Spread {
                median: 1.1,
                min: 0.9,
                max: 1.5
            }
        );
        assert_eq!(row.fastest_in, 1);
        assert_eq!(row.fastest_other, "guided");
        // Paired medians: static of 0.75, 1.5, 0.367 → 0.75; guided of 0.9, 0.75, 1.1 → 0.9.
        assert_eq!(row.closest.0, "guided");
        assert!((row.closest.1 - 0.9).abs() < 1e-12);
        // Beats static in 2 reports, guided in 2 (the first listed wins the tie).
        assert_eq!(row.fewest_wins, ("static".to_owned(), 2));
        // Medians: tree 1.1; static 1.2, guided 1.0 → 1.1 against guided.
        assert_eq!(row.medians.0, "guided");
        assert!((row.medians.1 - 1.1).abs() < 1e-12);
        let one = row.one_thread.unwrap();
        assert!((one.median - 1.05).abs() < 1e-12, "{one:?}");
        // Others' own: static over the fastest of tree and guided: 1.2/0.9, 1.0/1.5, 3.0/1.0
        // → 1.333; guided over the fastest of tree and static: 1.0/0.9, 2.0/1.0, 1.0/1.1 → 1.111.
        assert_eq!(row.others_own.0, "guided");
        assert!((row.others_own.1 - 1.0 / 0.9).abs() < 1e-12, "{row:?}");
        let text = render(
            &table,
            "tree",
            &names(&["static", "guided"]),
            2,
            &reports,
            &args(StandingsFormat::Text),
        );
        assert!(
            text.contains("at 1 thread, the highest median of tree / seq: 1.050 (k)"),
            "{text}"
        );
        assert!(
            text.contains("not: k (1.100; the others' own, lowest: 1.111, guided)"),
            "{text}"
        );
    }

    #[test]
    fn reports_missing_a_scheduler_or_with_a_failed_cell_are_left_out() {
        let mut failed = report("k", &[("tree", "2", 5.0), ("guided", "2", 1.0)]);
        failed.cells[1].error = Some("wrong result".to_owned());
        let reports = [
            report("k", &[("tree", "2", 1.0), ("guided", "2", 2.0)]),
            report("k", &[("tree", "2", 9.0)]),
            failed,
        ];
        let table = standings(&reports, "tree", &names(&["guided"]), 2);
        assert_eq!(table[0].reports, 1);
        assert_eq!(table[0].versus_fastest.median, 0.5);
        assert!(table[0].one_thread.is_none());
        // As data, the missing one-thread figure is empty in CSV and null in JSON.
        let row = StandingRow::from(&table[0]);
        let fields = row.csv_fields();
        assert_eq!(fields.len(), CSV_COLUMNS.len());
        assert_eq!(&fields[..3], ["k", "1", "0.5"]);
        assert!(fields[13..16].iter().all(String::is_empty), "{fields:?}");
        assert_eq!(&fields[16..], ["guided", "2"]);
        let json = serde_json::to_value(&row).unwrap();
        assert!(
            json["one_thread"].is_null() && json["medians"] == 0.5,
            "{json}"
        );
        // The footer says which kernel left reports out, and how many.
        let text = render(
            &table,
            "tree",
            &names(&["guided"]),
            2,
            &reports,
            &args(StandingsFormat::Text),
        );
        assert!(
            text.contains(
                "reports left out (a cell of tree or of another at 2 threads missing, failed or \
                 of 0 s): k (2 of 3)\n"
            ),
            "{text}"
        );
        // No kernel has every scheduler at 4 threads: no rows.
        assert!(standings(&reports, "tree", &names(&["guided"]), 4).is_empty());
    }

    #[test]
    fn a_report_with_a_zero_time_is_left_out_of_every_figure_its_reports_column_counts() {
        let process = |tree: f64, one: f64| {
            report(
                "k",
                &[
                    ("tree", "2", tree),
                    ("guided", "2", 1.0),
                    ("tree", "1", one),
                    ("seq", "1", 1.0),
                ],
            )
        };
        // The second report's tree cell at 2 threads took 0 s: it is left out of the row, and
        // so is its one-thread ratio of 4.
        let reports = [process(0.5, 1.0), process(0.0, 4.0), process(1.5, 2.0)];
        let table = standings(&reports, "tree", &names(&["guided"]), 2);
        let row = &table[0];
        assert_eq!(row.reports, 2);
        assert_eq!(row.versus_fastest.median, 1.0);
        assert_eq!(
            row.one_thread,
            Some(Spread {
                median: 1.5,
                min: 1.0,
                max: 2.0
            }),
            "{row:?}"
        );
    }

    #[test]
    fn kernels_keep_their_order_and_the_footer_counts_the_margin() {
        let mut combined = report("b-kernel", &[("tree", "2", 1.2), ("guided", "2", 1.0)]);
        combined
            .cells
            .extend(report("a-kernel", &[("tree", "2", 0.8), ("guided", "2", 1.0)]).cells);
        let table = standings(
            std::slice::from_ref(&combined),
            "tree",
            &names(&["guided"]),
            2,
        );
        let kernels: Vec<&str> = table.iter().map(|row| row.kernel.as_str()).collect();
        assert_eq!(kernels, ["b-kernel", "a-kernel"]);
        let text = render(
            &table,
            "tree",
            &names(&["guided"]),
            2,
            std::slice::from_ref(&combined),
            &args(StandingsFormat::Markdown),
        );
        assert!(
            text.contains("| b-kernel | 1 | 1.20 (1.20–1.20) | 0 of 1 |"),
            "{text}"
        );
        assert!(text.contains("within 5% of the fastest other (median of tree / fastest other ≤ 1.05): 1 of 2 kernels; not: b-kernel (1.200; the others' own, lowest: 0.833, guided)"), "{text}");
        assert!(
            text.contains("fastest (median below 1.00): a-kernel (0.800)"),
            "{text}"
        );
        // A margin of 2.5 % is written as given: 1.024 is within it, 1.026 not.
        let close = |tree: f64| report("k", &[("tree", "2", tree), ("guided", "2", 1.0)]);
        let pair = [close(1.024), close(1.026)];
        let narrow = StandingsArgs {
            within: 0.025,
            ..args(StandingsFormat::Text)
        };
        for (process, counted) in pair.iter().zip(["1 of 1", "0 of 1"]) {
            let reports = std::slice::from_ref(process);
            let table = standings(reports, "tree", &names(&["guided"]), 2);
            let text = render(&table, "tree", &names(&["guided"]), 2, reports, &narrow);
            let line = format!(
                "within 2.5% of the fastest other (median of tree / fastest other ≤ 1.025): \
                 {counted} kernels"
            );
            assert!(text.contains(&line), "{text}");
        }
        // a-kernel: guided's own is 1.0 / 0.8 = 1.25; b-kernel: 1.0 / 1.2 = 0.833, below tree's.
        assert!(
            text.contains(
                "below every other's own figure (median of tree / fastest other < the others' \
                 own, lowest): a-kernel (0.800 < 1.250, guided)\n"
            ),
            "{text}"
        );
    }
}
