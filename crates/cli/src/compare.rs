//! `parbench-cli compare A.json B.json [C.json …]`: the same cells of several reports side by
//! side, in the manner of critcmp.
//!
//! The first file is the baseline. For every other file and every cell both have, the time ratio
//! `median(other) / median(baseline)` gets a 95 % percentile-bootstrap confidence interval over
//! the raw samples ([`crate::stats::bootstrap_ratio_ci`]) and a verdict: *slower* when the whole
//! interval lies above 1 and the ratio exceeds `1 + threshold`, *faster* when the interval lies
//! below 1 and the ratio is under `1 / (1 + threshold)`, otherwise *no significant difference*
//! (with "within threshold" when the interval excludes 1 but the change is smaller than the
//! threshold, which on a shared machine is noise in all but name).
//!
//! Files are labelled A, B, C … and each letter's environment (host, CPU, commit, date) is printed
//! above the table, so reports from different machines can be set side by side. The command
//! exits 0 whenever it could compare (whatever the verdicts), so it can run in CI and be read by
//! people; files it cannot read, a file given twice, or a report of another command or without a
//! cell in common with the baseline ([`check_comparable`]), are one error line and exit 2.

use std::path::PathBuf;

use clap::Args;

use crate::commands::{read_reports, write_stdout};
use crate::error::CliError;
use crate::export::text_grid::{format_ratio, format_seconds};
use crate::results::{Cell, Report};
use crate::results_file::refuse_repeated_files;
use crate::stats::{RatioCiError, bootstrap_ratio_ci, median};

/// Bootstrap resamples per compared cell.
pub const RESAMPLES: usize = 2000;

/// Seed of the bootstrap, fixed so that the same files always give the same intervals.
const BOOTSTRAP_SEED: u64 = 0x5EED_C0DE;

/// Options of `parbench-cli compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// JSON reports of one command (`sweep -o FILE.json`, also `locks`), the first the baseline;
    /// each must share at least one cell with it. Negative or non-finite times are refused.
    #[arg(value_name = "RESULTS.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Changes smaller than this are reported as no significant difference, e.g. `5%` or `5`.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = parse_percent)]
    pub threshold: f64,
    /// Use reports of unfinished sweeps too (fewer rounds than planned: still running, or
    /// stopped early); without it such a report is an error.
    #[arg(long)]
    pub allow_partial: bool,
}

/// Parses `5%` or `5` as the fraction 0.05.
///
/// ```
/// use parbench_cli::compare::parse_percent;
/// assert_eq!(parse_percent("5%"), Ok(0.05));
/// assert_eq!(parse_percent("12.5"), Ok(0.125));
/// assert!(parse_percent("-1%").is_err());
/// assert!(parse_percent("five").is_err());
/// assert!(parse_percent("5%%").is_err());
/// ```
///
/// # Errors
/// A message for clap unless the text is a non-negative number with at most one `%`.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let number = trimmed.strip_suffix('%').unwrap_or(trimmed).trim();
    match number.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value / 100.0),
        _ => Err(format!(
            "'{text}' is not a non-negative percentage such as 5%"
        )),
    }
}

/// What a comparison of one cell concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Significantly and materially faster than the baseline.
    Faster,
    /// Significantly and materially slower than the baseline.
    Slower,
    /// The interval contains 1.
    NoDifference,
    /// The interval excludes 1, but the change is smaller than the threshold.
    WithinThreshold,
}

impl Verdict {
    /// The verdict for a time ratio and its 95 % interval, given the threshold (a fraction).
    ///
    /// ```
    /// use parbench_cli::compare::Verdict;
    /// assert_eq!(Verdict::judge(2.0, 1.9, 2.1, 0.05), Verdict::Slower);
    /// assert_eq!(Verdict::judge(0.5, 0.45, 0.55, 0.05), Verdict::Faster);
    /// assert_eq!(Verdict::judge(1.01, 0.97, 1.05, 0.05), Verdict::NoDifference);
    /// assert_eq!(Verdict::judge(1.02, 1.01, 1.03, 0.05), Verdict::WithinThreshold);
    /// ```
    pub fn judge(ratio: f64, low: f64, high: f64, threshold: f64) -> Verdict {
        if low > 1.0 {
            if ratio > 1.0 + threshold {
                Verdict::Slower
            } else {
                Verdict::WithinThreshold
            }
        } else if high < 1.0 {
            if ratio < 1.0 / (1.0 + threshold) {
                Verdict::Faster
            } else {
                Verdict::WithinThreshold
            }
        } else {
            Verdict::NoDifference
        }
    }

    /// The words the table shows.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "no significant difference",
            Verdict::WithinThreshold => "no significant difference (within threshold)",
        }
    }
}

/// One cell of one non-baseline file against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `median(other) / median(baseline)`.
    pub ratio: f64,
    /// 95 % bootstrap interval of the ratio.
    pub low: f64,
    /// Upper end of that interval.
    pub high: f64,
    /// The conclusion.
    pub verdict: Verdict,
}

/// Compares the samples of a cell in another file with the baseline's.
///
/// # Errors
/// [`RatioCiError`] when there is no interval: a side without usable samples, a baseline
/// median of 0 s, or baseline samples of 0 s that give resamples a median of 0 s.
///
/// ```
/// use parbench_cli::compare::{compare_samples, Verdict};
/// let a: Vec<f64> = (0..30).map(|i| 1.0 + 0.01 * f64::from(i % 5)).collect();
/// let b: Vec<f64> = a.iter().map(|x| x * 2.0).collect();
/// let c = compare_samples(&a, &b, 0.05).unwrap();
/// assert_eq!(c.verdict, Verdict::Slower);
/// assert!((c.ratio - 2.0).abs() < 1e-12);
/// ```
pub fn compare_samples(
    baseline: &[f64],
    other: &[f64],
    threshold: f64,
) -> Result<Comparison, RatioCiError> {
    let (ratio, low, high) = bootstrap_ratio_ci(baseline, other, RESAMPLES, BOOTSTRAP_SEED)?;
    Ok(Comparison {
        ratio,
        low,
        high,
        verdict: Verdict::judge(ratio, low, high, threshold),
    })
}

/// Runs `compare`.
///
/// # Errors
/// [`CliError`] when a file cannot be read or is not a report, and when a report cannot be set
/// beside the baseline ([`check_comparable`]).
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    let reports = read_reports(&args.files, args.allow_partial)?;
    refuse_repeated_files(
        &args.files,
        "compare sets different reports side by side (a file against itself compares nothing)",
    )?;
    let names: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
    check_comparable(&reports, &names)?;
    let text = render(&reports, &names, args.threshold);
    write_stdout(|out| out.write_all(text.as_bytes()))
}

/// Refuses a report that has nothing to compare with the baseline (the first): one written by
/// another command (a `locks` report beside a `sweep` report), or one without a single cell whose
/// labels the baseline shares. Either would print a table in which every row is "not in this
/// file" and exit 0, as if the comparison had been made.
///
/// ```
/// use parbench_cli::compare::check_comparable;
/// use parbench_cli::results::{Cell, Report};
/// let mut a = Report::new("sweep", &["kernel"]);
/// a.cells.push(Cell::measured(&[("kernel", "k")], vec![1.0]));
/// let mut b = a.clone();
/// let names = ["a.json".to_owned(), "b.json".to_owned()];
/// assert!(check_comparable(&[a.clone(), b.clone()], &names).is_ok());
/// b.cells[0].labels.insert("kernel".into(), "other".into());
/// let error = check_comparable(&[a, b], &names).unwrap_err().to_string();
/// assert!(error.contains("a.json and b.json have no cell in common"));
/// ```
///
/// # Errors
/// [`CliError::Usage`] naming the baseline, the other file and why.
pub fn check_comparable(reports: &[Report], names: &[String]) -> Result<(), CliError> {
    let Some((baseline, others)) = reports.split_first() else {
        return Ok(());
    };
    for (report, name) in others.iter().zip(&names[1..]) {
        if report.command != baseline.command {
            return Err(CliError::Usage(format!(
                "{} is a {} report and {name} a {} report: compare sets reports of the same \
                 command side by side",
                names[0], baseline.command, report.command
            )));
        }
        let shared = report
            .cells
            .iter()
            .any(|cell| baseline.cells.iter().any(|b| b.labels == cell.labels));
        if !shared {
            let example = |report: &Report| {
                report
                    .cells
                    .first()
                    .map_or_else(|| "none".to_owned(), |cell| report.cell_name(cell))
            };
            return Err(CliError::Usage(format!(
                "{} and {name} have no cell in common, so nothing can be compared (first \
                 cells: {} / {})",
                names[0],
                example(baseline),
                example(report)
            )));
        }
    }
    Ok(())
}

/// The comparison as text: a legend of the files, one row per cell, a count of verdicts.
///
/// ```
/// use parbench_cli::compare::render;
/// use parbench_cli::results::{Cell, Report};
/// let mut a = Report::new("sweep", &["kernel"]);
/// a.cells.push(Cell::measured(&[("kernel", "k")], vec![1.0, 1.0, 1.0]));
/// let text = render(&[a.clone(), a], &["a.json".into(), "b.json".into()], 0.05);
/// assert!(text.contains("no significant difference"));
/// ```
pub fn render(reports: &[Report], names: &[String], threshold: f64) -> String {
    let mut out = String::new();
    let letter = |index: usize| -> String {
        char::from_u32(u32::from(b'A') + index as u32 % 26)
            .map_or_else(|| index.to_string(), String::from)
    };
    for (index, (report, name)) in reports.iter().zip(names).enumerate() {
        let environment = report.metadata.environment.as_ref().map_or_else(
            || "environment not recorded".to_owned(),
            |env| format!("{}, {}", env.label(), env.date_utc),
        );
        let role = if index == 0 { " (baseline)" } else { "" };
        out.push_str(&format!(
            "{} = {name}{role}: {environment}\n",
            letter(index)
        ));
    }
    out.push_str(&format!(
        "ratio = median time / median time of A, with its 95 % bootstrap CI ({RESAMPLES} \
         resamples); changes under {}% are no significant difference\n\n",
        // As given, to 0.01 %: to 0.1 % a threshold of 2.55 % read "2.6%".
        (threshold * 10_000.0).round() / 100.0
    ));
    let Some(baseline) = reports.first() else {
        return out;
    };
    let label_names = &baseline.label_names;
    let mut header: Vec<String> = label_names.clone();
    header.push("A median".to_owned());
    for index in 1..reports.len() {
        let l = letter(index);
        header.extend([
            format!("{l} median"),
            format!("{l}/A"),
            "95% CI".to_owned(),
            format!("{l} verdict"),
        ]);
    }
    let mut rows = Vec::new();
    let mut counts = [0usize; 4];
    for cell in &baseline.cells {
        let mut row: Vec<String> = label_names
            .iter()
            .map(|name| cell.label(name).unwrap_or("").to_owned())
            .collect();
        row.push(median_text(cell));
        for report in &reports[1..] {
            let Some(other) = report.cells.iter().find(|c| c.labels == cell.labels) else {
                row.extend(["-", "-", "-", "not in this file"].map(str::to_owned));
                continue;
            };
            row.push(median_text(other));
            let Some((a, b)) = usable(cell).zip(usable(other)) else {
                row.extend(["-", "-", "not measured (error)"].map(str::to_owned));
                continue;
            };
            match compare_samples(a, b, threshold) {
                Ok(c) => {
                    counts[c.verdict as usize] += 1;
                    row.extend([
                        format!("{}x", format_ratio(c.ratio)),
                        format!("{}–{}", format_ratio(c.low), format_ratio(c.high)),
                        c.verdict.text().to_owned(),
                    ]);
                }
                Err(RatioCiError::ZeroResampledMedian {
                    ratio,
                    zero,
                    resamples,
                }) => row.extend([
                    format!("{}x", format_ratio(ratio)),
                    "-".to_owned(),
                    format!("no CI ({zero} of {resamples} resamples of A have a median of 0)"),
                ]),
                Err(RatioCiError::ZeroBaselineMedian) => {
                    row.extend(["-", "-", "no ratio (A's median is 0)"].map(str::to_owned));
                }
                Err(RatioCiError::NoSamples) => {
                    row.extend(["-", "-", "not measured (error)"].map(str::to_owned));
                }
            }
        }
        rows.push(row);
    }
    out.push_str(&align(&header, &rows, label_names.len()));
    let [faster, slower, same, within] = counts;
    out.push_str(&format!(
        "\n{} comparisons: {faster} faster, {slower} slower, {} no significant difference\n",
        faster + slower + same + within,
        same + within
    ));
    let missing: Vec<String> = reports[1..]
        .iter()
        .enumerate()
        .flat_map(|(index, report)| {
            report
                .cells
                .iter()
                .filter(|c| !baseline.cells.iter().any(|b| b.labels == c.labels))
                .map(move |c| {
                    let name: Vec<&str> = c.labels.values().map(String::as_str).collect();
                    format!("{} only: {}", letter(index + 1), name.join(" / "))
                })
        })
        .collect();
    for line in missing {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The samples of a cell that was measured without error.
fn usable(cell: &Cell) -> Option<&[f64]> {
    (cell.error.is_none() && !cell.samples_s.is_empty()).then_some(cell.samples_s.as_slice())
}

fn median_text(cell: &Cell) -> String {
    usable(cell)
        .and_then(median)
        .map_or_else(|| "-".to_owned(), format_seconds)
}

/// Pads columns: the first `text_columns` (and the verdicts) to the left, numbers to the right.
fn align(header: &[String], rows: &[Vec<String>], text_columns: usize) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, entry) in widths.iter_mut().zip(row) {
            *width = (*width).max(entry.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (column, entry) in row.iter().enumerate() {
            let pad = " ".repeat(widths[column] - entry.chars().count());
            let left = column < text_columns || header[column].ends_with("verdict");
            if column > 0 {
                line.push_str("  ");
            }
            if left {
                line.push_str(entry);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(entry);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(factor: f64) -> Report {
        let mut report = Report::new("sweep", &["kernel", "threads"]);
        for (kernel, base) in [("fast", 1e-3), ("slow", 5e-3)] {
            let samples: Vec<f64> = (0..20)
                .map(|i| factor * base * (1.0 + 0.01 * f64::from(i % 4)))
                .collect();
            report.cells.push(Cell::measured(
                &[("kernel", kernel), ("threads", "2")],
                samples,
            ));
        }
        report
    }

    #[test]
    fn thresholds_decide_between_change_and_noise() {
        assert_eq!(
            Verdict::judge(1.04, 1.01, 1.07, 0.05),
            Verdict::WithinThreshold
        );
        assert_eq!(Verdict::judge(1.06, 1.01, 1.07, 0.05), Verdict::Slower);
        assert_eq!(
            Verdict::judge(0.96, 0.9, 0.99, 0.05),
            Verdict::WithinThreshold
        );
        assert_eq!(Verdict::judge(0.9, 0.85, 0.95, 0.05), Verdict::Faster);
        assert_eq!(Verdict::judge(1.5, 0.9, 2.0, 0.05), Verdict::NoDifference);
    }

    #[test]
    fn rows_pair_cells_by_labels_and_count_verdicts() {
        let names = [
            "a.json".to_owned(),
            "b.json".to_owned(),
            "c.json".to_owned(),
        ];
        let mut shuffled = report(2.0);
        shuffled.cells.reverse();
        let text = render(&[report(1.0), shuffled, report(1.0)], &names, 0.05);
        let row = text.lines().find(|l| l.starts_with("fast")).unwrap();
        assert!(row.contains("2.00x"), "{text}");
        assert!(row.contains("slower"), "{text}");
        assert!(row.contains("1.00x"), "{text}");
        assert!(text.contains("4 comparisons: 0 faster, 2 slower, 2 no significant difference"));
        assert!(text.starts_with("A = a.json (baseline): environment not recorded"));
        // The threshold is written as given.
        let narrow = render(&[report(1.0), report(1.0)], &names[..2], 0.0255);
        assert!(
            narrow.contains("changes under 2.55% are no significant difference"),
            "{narrow}"
        );
    }

    #[test]
    fn cells_missing_or_failed_are_named_not_compared() {
        let mut other = report(1.0);
        other.cells[1].error = Some("boom".into());
        other.cells[1].samples_s.clear();
        other.cells.push(Cell::measured(
            &[("kernel", "extra"), ("threads", "2")],
            vec![1.0],
        ));
        let mut base = report(1.0);
        base.cells.push(Cell::measured(
            &[("kernel", "gone"), ("threads", "2")],
            vec![1.0],
        ));
        let text = render(&[base, other], &["a".into(), "b".into()], 0.05);
        assert!(text.contains("not measured (error)"));
        assert!(text.contains("not in this file"));
        assert!(text.contains("B only: extra / 2"));
    }

    #[test]
    fn a_zero_baseline_median_is_no_ratio_not_an_error() {
        let labels = [("kernel", "k"), ("threads", "2")];
        let mut base = Report::new("sweep", &["kernel", "threads"]);
        base.cells.push(Cell::measured(&labels, vec![0.0; 3]));
        let mut other = base.clone();
        other.cells[0] = Cell::measured(&labels, vec![1e-3; 3]);
        let text = render(&[base, other], &["a".into(), "b".into()], 0.05);
        let row = text.lines().find(|l| l.starts_with("k ")).unwrap();
        assert!(row.ends_with("no ratio (A's median is 0)"), "{text}");
    }
}
