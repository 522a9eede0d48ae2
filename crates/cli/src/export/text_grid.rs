//! The human-readable layout shared by the table and markdown exporters: one row of text per cell,
//! values rounded to three significant digits with a unit chosen per value.

use crate::results::{Cell, Report};
use crate::stats::{CI_MIN_RUNS, RoundSpread};

/// Whether a column's values line up on the left (names) or on the right (numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text columns.
    Left,
    /// Numeric columns.
    Right,
}

/// A report laid out as text: a header, one row per cell, and footnotes.
///
/// ```
/// use parbench_cli::export::text_grid::TextGrid;
/// use parbench_cli::results::{Cell, Report};
/// let mut report = Report::new("sweep", &["kernel"]);
/// report.cells.push(Cell::measured(&[("kernel", "reduce")], vec![1e-3, 3e-3]));
/// let grid = TextGrid::from_report(&report);
/// assert_eq!(grid.header[0], "kernel");
/// assert_eq!(grid.rows[0][2], "2.00 ms"); // the median column
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TextGrid {
    /// Column titles.
    pub header: Vec<String>,
    /// Alignment of each column.
    pub align: Vec<Align>,
    /// One row per cell, as many entries as `header`.
    pub rows: Vec<Vec<String>>,
    /// Lines to print below the table.
    pub footnotes: Vec<String>,
    /// Lines to print above the table: the environment of the measurement, when recorded.
    pub preamble: Vec<String>,
}

/// Marks a confidence interval computed from fewer than [`CI_MIN_RUNS`] runs.
const ROUGH_MARK: &str = "*";

/// Marks a cell whose rounds disagree beyond their own confidence intervals.
const UNSTABLE_MARK: &str = "!";

const STAT_COLUMNS: [&str; 18] = [
    "runs",
    "median",
    "mean",
    "sd",
    "cv",
    "se",
    "ci95",
    "min",
    "p5",
    "p25",
    "p75",
    "p95",
    "max",
    "rounds",
    "outl",
    "speedup",
    "eff",
    "metrics / error",
];

impl TextGrid {
    /// Lays `report` out: its label columns first, then the statistics.
    pub fn from_report(report: &Report) -> TextGrid {
        let header: Vec<String> = report
            .label_names
            .iter()
            .map(String::as_str)
            .chain(STAT_COLUMNS)
            .map(str::to_owned)
            .collect();
        let mut align = vec![Align::Left; report.label_names.len()];
        align.extend(std::iter::repeat_n(Align::Right, STAT_COLUMNS.len() - 1));
        align.push(Align::Left);
        let rows = report
            .cells
            .iter()
            .map(|cell| cell_row(&report.label_names, cell))
            .collect();
        let mut footnotes = Vec::new();
        let any_rough = report
            .cells
            .iter()
            .any(|cell| cell.summary.as_ref().is_some_and(|s| s.ci_is_rough));
        if any_rough {
            footnotes.push(format!(
                "{ROUGH_MARK} ci95 = mean ± 1.96·SE from fewer than {CI_MIN_RUNS} runs: \
                 the normal approximation is rough."
            ));
        }
        // A sweep stopped in a round leaves some cells with fewer rounds than others: the
        // footnote then says how many each has, not the most any has.
        let round_counts = report
            .cells
            .iter()
            .filter_map(|c| c.rounds.as_ref().map(|r| r.medians.len()));
        let fewest = round_counts.clone().min();
        if let Some((fewest, most)) = fewest.zip(round_counts.max()) {
            let medians = if fewest == most {
                format!("the {most} per-round medians")
            } else {
                format!("each cell's per-round medians ({fewest} to {most} rounds)")
            };
            footnotes.push(format!(
                "rounds = min–max of {medians} (each round a separate process, cells \
                 shuffled); speedup = median of per-round paired ratios (min–max); outl = Tukey \
                 outliers mild/severe, counted, not removed."
            ));
        }
        for cell in &report.cells {
            if let Some(spread) = cell.rounds.as_ref().filter(|r| r.unstable) {
                footnotes.push(unstable_note(&report.label_names, cell, spread));
            }
        }
        TextGrid {
            header,
            align,
            rows,
            footnotes,
            preamble: report
                .metadata
                .environment
                .as_ref()
                .map_or_else(Vec::new, |env| env.lines()),
        }
    }
}

fn cell_row(label_names: &[String], cell: &Cell) -> Vec<String> {
    let mut row: Vec<String> = label_names
        .iter()
        .map(|name| cell.label(name).unwrap_or("").to_owned())
        .collect();
    let dash = || "-".to_owned();
    match &cell.summary {
        Some(s) => {
            let half_width = s.se.map(|se| 1.96 * se);
            let rough = if s.ci_is_rough { ROUGH_MARK } else { "" };
            row.extend([
                s.runs.to_string(),
                format_seconds(s.median),
                format_seconds(s.mean),
                s.sd.map_or_else(dash, format_seconds),
                s.cv.map_or_else(dash, |cv| format!("{:.1}%", cv * 100.0)),
                s.se.map_or_else(dash, format_seconds),
                half_width.map_or_else(dash, |h| format!("±{}{rough}", format_seconds(h))),
                format_seconds(s.min),
                format_seconds(s.p5),
                format_seconds(s.p25),
                format_seconds(s.p75),
                format_seconds(s.p95),
                format_seconds(s.max),
                cell.rounds.as_ref().map_or_else(dash, |r| {
                    let mark = if r.unstable { UNSTABLE_MARK } else { "" };
                    format!("{}–{}{mark}", format_seconds(r.min), format_seconds(r.max))
                }),
                s.outliers.short_text(),
            ]);
        }
        None => {
            row.push(cell.samples_s.len().to_string());
            row.extend(std::iter::repeat_n(dash(), 14));
        }
    }
    row.push(
        cell.relative
            .map_or_else(dash, |r| match (r.speedup_min, r.speedup_max) {
                (Some(low), Some(high)) if low != high => format!(
                    "{}x ({}–{})",
                    format_ratio(r.speedup),
                    format_ratio(low),
                    format_ratio(high)
                ),
                _ => format!("{}x", format_ratio(r.speedup)),
            }),
    );
    row.push(
        cell.relative
            .map_or_else(dash, |r| format_ratio(r.efficiency)),
    );
    row.push(match &cell.error {
        Some(error) => format!("error: {error}"),
        None => metrics_text(cell),
    });
    row
}

/// The fewest rounds whose Student-t interval of the round medians an unstable cell's footnote
/// quotes. With two rounds it has one degree of freedom (t = 12.7): its half-width is 6.35 times
/// the log-difference of the two medians: rounds 5 % apart (the least that makes a cell unstable)
/// give an interval spanning a factor 1.9, rounds a factor 2 apart one from 1/82 to 82 times
/// their geometric mean. That says nothing the two medians do not; JSON and CSV still carry it.
const INTERVAL_MIN_ROUNDS: usize = 3;

/// "! unstable: reduce / rayon / 2: rounds differ by 23 % (round medians …; 95 % CI of their
/// geometric mean …)".
fn unstable_note(label_names: &[String], cell: &Cell, spread: &RoundSpread) -> String {
    let name: Vec<&str> = label_names
        .iter()
        .filter_map(|label| cell.label(label))
        .collect();
    let medians: Vec<String> = spread.medians.iter().map(|&m| format_seconds(m)).collect();
    let interval = match (spread.ci95_low, spread.ci95_high) {
        (Some(low), Some(high)) if spread.medians.len() >= INTERVAL_MIN_ROUNDS => format!(
            "; 95 % CI of their geometric mean {}–{}",
            format_seconds(low),
            format_seconds(high)
        ),
        _ => String::new(),
    };
    let differ = spread.spread.map_or_else(
        || "by more than any fraction of the lowest, 0 s".to_owned(),
        |spread| format!("by {:.0} %", spread * 100.0),
    );
    format!(
        "{UNSTABLE_MARK} unstable: {}: rounds differ {differ} (round medians {}{interval})",
        name.join(" / "),
        medians.join(", ")
    )
}

fn metrics_text(cell: &Cell) -> String {
    cell.metrics
        .iter()
        .filter_map(|m| m.median_text(format_significant))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Formats a duration in seconds with three significant digits and the unit (ns, µs, ms, s) that
/// keeps the number between 1 and 1000.
///
/// ```
/// use parbench_cli::export::text_grid::format_seconds;
/// assert_eq!(format_seconds(0.0123), "12.3 ms");
/// assert_eq!(format_seconds(4.5e-6), "4.50 µs");
/// ```
pub fn format_seconds(seconds: f64) -> String {
    // Decided on the value as three significant digits show it: 999.7 ms is "1.00 s", not
    // "1000 ms".
    let magnitude = seconds.abs();
    let (scale, unit) = if magnitude >= 0.9995 {
        (1.0, "s")
    } else if magnitude >= 0.9995e-3 {
        (1e3, "ms")
    } else if magnitude >= 0.9995e-6 {
        (1e6, "µs")
    } else {
        (1e9, "ns")
    };
    format!("{} {unit}", format_significant(seconds * scale))
}

/// Two decimals, or as many as three significant digits need for ratios below 0.1 (a `spawn`
/// cell can be a thousand times slower than `seq`, which must not read as 0.00).
pub(crate) fn format_ratio(ratio: f64) -> String {
    if !ratio.is_finite() || ratio >= 0.1 || ratio <= 0.0 {
        return format!("{ratio:.2}");
    }
    let decimals = (2.0 - ratio.log10().floor()) as usize;
    format!("{ratio:.decimals$}")
}

/// Three significant digits for values below 1000, plain integers up to 10^6, and scientific
/// notation beyond.
fn format_significant(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{value:.3e}")
    } else if magnitude >= 99.95 {
        // Thresholds just below 100 and 10: 99.99 rounds to "100", not "100.0".
        format!("{value:.0}")
    } else if magnitude >= 9.995 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::sample_report;

    #[test]
    fn seconds_get_the_unit_that_keeps_three_digits() {
        assert_eq!(format_seconds(2.5), "2.50 s");
        assert_eq!(format_seconds(0.25), "250 ms");
        assert_eq!(format_seconds(2.5e-5), "25.0 µs");
        assert_eq!(format_seconds(2.5e-8), "25.0 ns");
        assert_eq!(format_seconds(0.0), "0.00 ns");
        // Values that round up to the next unit are written in it.
        assert_eq!(format_seconds(0.9997), "1.00 s");
        assert_eq!(format_seconds(0.9994), "999 ms");
        assert_eq!(format_seconds(999.7e-6), "1.00 ms");
        assert_eq!(format_seconds(999.7e-9), "1.00 µs");
        assert_eq!(format_seconds(999.4e-9), "999 ns");
    }

    #[test]
    fn small_ratios_keep_three_significant_digits() {
        assert_eq!(format_ratio(1.9634), "1.96");
        assert_eq!(format_ratio(0.25), "0.25");
        assert_eq!(format_ratio(0.0163), "0.0163");
        assert_eq!(format_ratio(0.001634), "0.00163");
        assert_eq!(format_ratio(0.0), "0.00");
    }

    #[test]
    fn large_metric_values_use_scientific_notation() {
        assert_eq!(format_significant(4.0e9), "4.000e9");
        assert_eq!(format_significant(123456.0), "123456");
        assert_eq!(format_significant(99.99), "100");
        assert_eq!(format_significant(9.999), "10.0");
        assert_eq!(format_significant(99.94), "99.9");
    }

    #[test]
    fn every_row_has_one_entry_per_column() {
        let grid = TextGrid::from_report(&sample_report());
        assert_eq!(grid.align.len(), grid.header.len());
        assert_eq!(grid.rows.len(), 3);
        assert!(grid.rows.iter().all(|row| row.len() == grid.header.len()));
    }

    #[test]
    fn rows_show_statistics_speedup_metrics_and_errors() {
        let grid = TextGrid::from_report(&sample_report());
        let column = |name: &str| grid.header.iter().position(|h| h == name).unwrap();
        let seq = &grid.rows[0];
        assert_eq!(seq[column("median")], "2.00 ms");
        assert!(seq[column("ci95")].ends_with(ROUGH_MARK));
        let tree = &grid.rows[1];
        assert_eq!(tree[column("speedup")], "2.00x");
        assert_eq!(tree[column("eff")], "1.00");
        assert_eq!(tree[column("sd")], "-");
        assert_eq!(tree[column("metrics / error")], "ops=4.000e9 op/s");
        let failed = &grid.rows[2];
        assert_eq!(failed[column("median")], "-");
        assert!(failed[column("metrics / error")].starts_with("error: cannot spawn"));
        assert_eq!(grid.footnotes.len(), 1);
        assert_eq!(seq[column("outl")], "0/0");
        assert_eq!(seq[column("rounds")], "-", "measured in one process");
    }

    #[test]
    fn round_spreads_paired_speedups_and_unstable_cells_are_shown() {
        let mut report = sample_report();
        let steady: Vec<f64> = (0..10).map(|i| 1e-3 + 1e-6 * f64::from(i)).collect();
        let slow: Vec<f64> = steady.iter().map(|x| x * 1.5).collect();
        report.cells[0].rounds = RoundSpread::from_rounds(&[&steady, &slow]);
        report.cells[1].relative = crate::stats::Relative::paired(&[4.0, 6.0], &[2.0, 2.0], 2);
        let grid = TextGrid::from_report(&report);
        let column = |name: &str| grid.header.iter().position(|h| h == name).unwrap();
        assert_eq!(grid.rows[0][column("rounds")], "1.00 ms–1.51 ms!");
        assert_eq!(grid.rows[1][column("speedup")], "2.50x (2.00–3.00)");
        let note = grid
            .footnotes
            .iter()
            .find(|n| n.contains("unstable"))
            .unwrap();
        assert!(note.starts_with("! unstable: reduce / seq / 1: rounds differ by 50 %"));
        assert!(
            grid.footnotes
                .iter()
                .any(|n| n.starts_with("rounds = min–max of the 2"))
        );
        // A cell of 3 rounds beside one of 2 (a sweep stopped in its third round): the
        // footnote gives both counts, not "the 3 per-round medians".
        report.cells[1].rounds = RoundSpread::from_rounds(&[&steady, &slow, &steady]);
        let grid = TextGrid::from_report(&report);
        let legend = grid.footnotes.iter().find(|n| n.starts_with("rounds = "));
        assert!(
            legend.is_some_and(|n| n.starts_with(
                "rounds = min–max of each cell's per-round medians (2 to 3 rounds) (each round"
            )),
            "{:?}",
            grid.footnotes
        );
    }

    #[test]
    fn unstable_notes_quote_the_interval_of_round_medians_from_three_rounds_on() {
        let round =
            |m: f64| -> Vec<f64> { (0..10).map(|i| m * (1.0 + 1e-3 * f64::from(i))).collect() };
        let note = |rounds: &[&[f64]]| {
            let mut report = sample_report();
            report.cells[0].rounds = RoundSpread::from_rounds(rounds);
            let grid = TextGrid::from_report(&report);
            let found = grid.footnotes.iter().find(|n| n.contains("unstable"));
            found.expect("an unstable note").clone()
        };
        // Two rounds a factor 2 apart: t(0.975, 1) = 12.7 stretches the interval to 1/82–82
        // times their geometric mean (17.4 ns–116 µs); the note leaves it out.
        let (fast, slow, mid) = (round(1e-6), round(2e-6), round(1.5e-6));
        let two = note(&[&fast, &slow]);
        assert!(two.ends_with("(round medians 1.00 µs, 2.01 µs)"), "{two}");
        let three = note(&[&fast, &slow, &mid]);
        assert!(
            three.contains("; 95 % CI of their geometric mean 610 ns–3.44 µs)"),
            "{three}"
        );
        // A round of 0 s beside one of 1 µs: no percentage, and not "0 %".
        let zero = note(&[&[0.0; 10], &fast]);
        assert!(
            zero.contains("rounds differ by more than any fraction of the lowest, 0 s (round"),
            "{zero}"
        );
    }
}
