//! CSV export: one row per cell, times in seconds at full precision, raw samples in the last column.

use std::io::{self, Write};

use super::Exporter;
use crate::results::{Cell, Report};

/// Writes the report as RFC 4180 CSV.
///
/// The columns are the report's label names, then `runs`, the statistics (`*_s` in seconds, `cv`
/// as a fraction), `speedup`, `efficiency`, `ci_is_rough`, `metrics` (median per metric), `error`,
/// and `samples_s`: every raw sample separated by spaces.
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

const STAT_COLUMNS: [&str; 20] = [
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
    "speedup",
    "efficiency",
    "ci_is_rough",
    "metrics",
    "error",
    "samples_s",
];

impl Exporter for CsvExporter {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
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
            cell.relative.map(|r| r.speedup),
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
fn quote(field: &str) -> String {
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
