//! Export formats, each behind the one [`Exporter`] trait (hyperfine's design).
//!
//! People read [`Table`](table::TableExporter) and [`Markdown`](markdown::MarkdownExporter): values are
//! rounded and carry units, chosen per value. Programs read [`Csv`](csv::CsvExporter) and
//! [`Json`](json::JsonExporter): values are in seconds at full precision, and both keep every raw
//! sample (JSON also every metric value and the metadata) so that figures can be redrawn.
//! The two human formats share their cell-to-text layout in [`text_grid`].

pub mod csv;
pub mod json;
pub mod markdown;
pub mod table;
pub mod text_grid;

use std::io::{self, Write};
use std::path::Path;

use crate::results::Report;

/// Writes a [`Report`] in one format.
///
/// ```
/// use parbench_cli::export::{ExportFormat, Exporter};
/// use parbench_cli::results::Report;
/// let mut out = Vec::new();
/// ExportFormat::Json.exporter().write(&Report::new("sweep", &["kernel"]), &mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().contains("\"command\": \"sweep\""));
/// ```
pub trait Exporter {
    /// Writes the whole report to `out`.
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()>;
}

/// The available export formats.
///
/// ```
/// use parbench_cli::export::ExportFormat;
/// assert_eq!(ExportFormat::from_extension("out/r.md".as_ref()), Some(ExportFormat::Markdown));
/// assert_eq!(ExportFormat::from_extension("r.txt".as_ref()), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Aligned plain-text table for a terminal.
    Table,
    /// Comma-separated values, one row per cell, raw samples in the last column.
    Csv,
    /// The complete report: metadata, raw samples, metrics and statistics.
    Json,
    /// A GitHub-flavoured markdown table.
    Markdown,
}

impl ExportFormat {
    /// The format a file name's extension implies (`.csv`, `.json`, `.md`/`.markdown`, `.txt` is
    /// deliberately not guessed), if any.
    pub fn from_extension(path: &Path) -> Option<ExportFormat> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "csv" => Some(ExportFormat::Csv),
            "json" => Some(ExportFormat::Json),
            "md" | "markdown" => Some(ExportFormat::Markdown),
            _ => None,
        }
    }

    /// The name `--format` takes for this format.
    ///
    /// ```
    /// use parbench_cli::export::ExportFormat;
    /// assert_eq!(ExportFormat::Markdown.name(), "markdown");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Table => "table",
            ExportFormat::Csv => "csv",
            ExportFormat::Json => "json",
            ExportFormat::Markdown => "markdown",
        }
    }

    /// The extension of a file in this format (`txt` for the table, which none implies).
    ///
    /// ```
    /// use parbench_cli::export::ExportFormat;
    /// assert_eq!(ExportFormat::Markdown.extension(), "md");
    /// ```
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Table => "txt",
            ExportFormat::Csv => "csv",
            ExportFormat::Json => "json",
            ExportFormat::Markdown => "md",
        }
    }

    /// The exporter writing this format.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            ExportFormat::Table => Box::new(table::TableExporter),
            ExportFormat::Csv => Box::new(csv::CsvExporter),
            ExportFormat::Json => Box::new(json::JsonExporter),
            ExportFormat::Markdown => Box::new(markdown::MarkdownExporter),
        }
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A small report with a measured, a single-run and a failed cell, shared by the format tests.
    use crate::results::{Cell, MetricSeries, Report};
    use crate::stats::Relative;

    pub(crate) fn sample_report() -> Report {
        let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
        let mut seq = Cell::measured(
            &[("kernel", "reduce"), ("scheduler", "seq"), ("threads", "1")],
            vec![2.0e-3, 2.2e-3, 1.8e-3],
        );
        seq.relative = Some(Relative::against(2.0e-3, 2.0e-3, 1));
        let mut tree = Cell::measured(
            &[
                ("kernel", "reduce"),
                ("scheduler", "tree"),
                ("threads", "2"),
            ],
            vec![1.0e-3],
        );
        tree.relative = Some(Relative::against(2.0e-3, 1.0e-3, 2));
        tree.metrics.push(MetricSeries {
            name: "ops".into(),
            unit: "op/s".into(),
            values: vec![4.0e9],
        });
        let failed = Cell::failed(
            &[
                ("kernel", "reduce"),
                ("scheduler", "spawn"),
                ("threads", "2"),
            ],
            "cannot spawn thread, \"resource\" busy".into(),
        );
        report.cells = vec![seq, tree, failed];
        report
    }
}
