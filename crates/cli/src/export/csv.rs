//! CSV export: one row per cell, times in seconds at full precision, raw samples in the last column.

use std::io::{self, Write};

use super::Exporter;
use crate::results::{Cell, Report};

/// Writes the report as RFC 4180 CSV.
///
/// When the report records its environment (sweeps do), it comes first as `# key: value` comment
/// lines (`pandas.read_csv(f, comment="#")`, R's `read.csv(comment.char = "#")`).
/// The columns are the report's label names, then `runs`, the statistics (`*_s` in seconds, `cv`
/// as a fraction), the distribution-free CI of the median, the Tukey outlier counts, the round
/// spread (`rounds`, `round_medians_s` space-separated, min/max, the Student-t CI of the round
/// medians, `round_spread` as a fraction — empty when the lowest round median is 0 s —, `unstable`), `speedup` with its per-round
/// `speedup_min`/`speedup_max`, `efficiency`, `ci_is_rough`, `metrics` (median per metric),
/// `error`, and `samples_s`: every raw sample separated by spaces.
///
/// ```
/// use parbench_cli::export::{csv::CsvExporter, Exporter};
/// use parbench_cli::results::{Cell, Report};
/// let mut report = Report::new("sweep", &["kernel"]);
/// report.cells.push(Cell::measured(&[("kernel", "reduce")], vec![0.5, 1.5]));
/// let mut out = Vec::new();
/// CsvExporter.write(&report, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.lines().nth(1).unwrap().ends_with(",0.5 1.5"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

const STAT_COLUMNS: [&str; 36] = [
    "runs",
    "median_s",
    "mean_s",
    "sd_s",
    "cv",
    "se_s",
    "ci95_low_s",
    "ci95_high_s",
    "min_s",
    "p5_s",
    "p25_s",
    "p75_s",
    "p95_s",
    "max_s",
    "median_ci95_low_s",
    "median_ci95_high_s",
    "outliers_low_severe",
    "outliers_low_mild",
    "outliers_high_mild",
    "outliers_high_severe",
    "rounds",
    "round_medians_s",
    "round_min_s",
    "round_max_s",
    "round_ci95_low_s",
    "round_ci95_high_s",
    "round_spread",
    "unstable",
    "speedup",
    "speedup_min",
    "speedup_max",
    "efficiency",
    "ci_is_rough",
    "metrics",
    "error",
    "samples_s",
];

impl Exporter for CsvExporter {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        if let Some(env) = &report.metadata.environment {
            for line in env.lines() {
                // Each environment line is `topic: text`; keep it one comment line.
                writeln!(out, "# {}", line.replace(['\n', '\r'], " "))?;
            }
        }
        let header: Vec<String> = report
            .label_names
            .iter()
            .map(String::as_str)
            .chain(STAT_COLUMNS)
            .map(quote)
            .collect();
        writeln!(out, "{}", header.join(","))?;
        for cell in &report.cells {
            let row: Vec<String> = cell_fields(&report.label_names, cell)
                .iter()
                .map(|field| quote(field))
                .collect();
            writeln!(out, "{}", row.join(","))?;
        }
        Ok(())
    }
}

fn cell_fields(label_names: &[String], cell: &Cell) -> Vec<String> {
    let mut fields: Vec<String> = label_names
        .iter()
        .map(|name| cell.label(name).unwrap_or("").to_owned())
        .collect();
    let number = |value: Option<f64>| value.map_or_else(String::new, |v| v.to_string());
    let s = cell.summary.as_ref();
    fields.push(cell.samples_s.len().to_string());
    fields.extend(
        [
            s.map(|s| s.median),
            s.map(|s| s.mean),
            s.and_then(|s| s.sd),
            s.and_then(|s| s.cv),
            s.and_then(|s| s.se),
            s.and_then(|s| s.ci95_low),
            s.and_then(|s| s.ci95_high),
            s.map(|s| s.min),
            s.map(|s| s.p5),
            s.map(|s| s.p25),
            s.map(|s| s.p75),
            s.map(|s| s.p95),
            s.map(|s| s.max),
            s.and_then(|s| s.median_ci95_low),
            s.and_then(|s| s.median_ci95_high),
        ]
        .map(number),
    );
    let outliers = s.map(|s| s.outliers);
    fields.extend(
        [
            outliers.map(|o| o.low_severe),
            outliers.map(|o| o.low_mild),
            outliers.map(|o| o.high_mild),
            outliers.map(|o| o.high_severe),
        ]
        .map(|count| count.map_or_else(String::new, |c| c.to_string())),
    );
    let r = cell.rounds.as_ref();
    fields.push(r.map_or_else(String::new, |r| r.medians.len().to_string()));
    fields.push(r.map_or_else(String::new, |r| {
        let medians: Vec<String> = r.medians.iter().map(f64::to_string).collect();
        medians.join(" ")
    }));
    fields.extend(
        [
            r.map(|r| r.min),
            r.map(|r| r.max),
            r.and_then(|r| r.ci95_low),
            r.and_then(|r| r.ci95_high),
            r.and_then(|r| r.spread),
        ]
        .map(number),
    );
    fields.push(r.map_or_else(String::new, |r| r.unstable.to_string()));
    fields.extend(
        [
            cell.relative.map(|r| r.speedup),
            cell.relative.and_then(|r| r.speedup_min),
            cell.relative.and_then(|r| r.speedup_max),
            cell.relative.map(|r| r.efficiency),
        ]
        .map(number),
    );
    fields.push(s.map_or_else(String::new, |s| s.ci_is_rough.to_string()));
    let metrics: Vec<String> = cell
        .metrics
        .iter()
        .filter_map(|m| m.median_text(|v| v.to_string()))
        .collect();
    fields.push(metrics.join("; "));
    fields.push(cell.error.clone().unwrap_or_default());
    let samples: Vec<String> = cell.samples_s.iter().map(f64::to_string).collect();
    fields.push(samples.join(" "));
    fields
}

/// Quotes a field when it contains a separator, a quote or a line break (RFC 4180).
pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::sample_report;

    #[test]
    fn quote_escapes_separators_and_quotes_only_when_needed() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn csv_rows_keep_full_precision_samples_and_errors() {
        let mut out = Vec::new();
        CsvExporter.write(&sample_report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        let header: Vec<&str> = lines[0].split(',').collect();
        assert_eq!(header.len(), 3 + STAT_COLUMNS.len());
        assert!(lines[1].starts_with("reduce,seq,1,3,0.002,"));
        assert!(lines[1].ends_with(",0.002 0.0022 0.0018"));
        assert!(lines[2].contains(",ops=4000000000 op/s,"));
        assert!(lines[3].contains(",\"cannot spawn thread, \"\"resource\"\" busy\","));
    }
}
