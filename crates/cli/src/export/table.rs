//! Aligned plain-text table, the default on stdout.

use std::io::{self, Write};

use super::Exporter;
use super::text_grid::{Align, TextGrid};
use crate::results::Report;

/// Writes the report as a table whose columns are padded to their widest entry.
///
/// ```
/// use parbench_cli::export::{table::TableExporter, Exporter};
/// use parbench_cli::results::{Cell, Report};
/// let mut report = Report::new("sweep", &["kernel"]);
/// report.cells.push(Cell::measured(&[("kernel", "reduce")], vec![1e-3]));
/// let mut out = Vec::new();
/// TableExporter.write(&report, &mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().starts_with("kernel  runs"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TableExporter;

/// Spaces between two columns.
const GAP: &str = "  ";

impl Exporter for TableExporter {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        let grid = TextGrid::from_report(report);
        let mut widths: Vec<usize> = grid.header.iter().map(|h| h.chars().count()).collect();
        for row in &grid.rows {
            for (width, entry) in widths.iter_mut().zip(row) {
                *width = (*width).max(entry.chars().count());
            }
        }
        let last = grid.header.len().saturating_sub(1);
        for line in &grid.preamble {
            writeln!(out, "{line}")?;
        }
        if !grid.preamble.is_empty() {
            writeln!(out)?;
        }
        for row in std::iter::once(&grid.header).chain(&grid.rows) {
            let mut line = String::new();
            for (column, entry) in row.iter().enumerate() {
                if column > 0 {
                    line.push_str(GAP);
                }
                let pad = widths[column] - entry.chars().count();
                match grid.align[column] {
                    // The last column is left-aligned free text: no trailing spaces.
                    Align::Left if column == last => line.push_str(entry),
                    Align::Left => {
                        line.push_str(entry);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(entry);
                    }
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        for note in &grid.footnotes {
            writeln!(out, "{note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::sample_report;

    #[test]
    fn table_columns_line_up() {
        let mut out = Vec::new();
        TableExporter.write(&sample_report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            1 + 3 + 1,
            "header, three cells, one footnote:\n{text}"
        );
        // Right-aligned numeric columns end at the same character position in every line.
        let end_of = |line: &str, word: &str| line.find(word).map(|i| i + word.chars().count());
        let runs_end = end_of(lines[0], "runs").unwrap();
        for line in &lines[1..4] {
            let before: String = line.chars().take(runs_end).collect();
            assert!(before.ends_with(char::is_numeric), "{line}");
        }
        assert!(lines[3].contains("error: cannot spawn thread"));
    }
}
