//! GitHub-flavoured markdown table, for reports and READMEs.

use std::io::{self, Write};

use super::Exporter;
use super::text_grid::{Align, TextGrid};
use crate::results::Report;

/// Writes the report as a markdown table (numbers right-aligned), footnotes below it.
///
/// ```
/// use parbench_cli::export::{markdown::MarkdownExporter, Exporter};
/// use parbench_cli::results::Report;
/// let mut out = Vec::new();
/// MarkdownExporter.write(&Report::new("sweep", &["kernel"]), &mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().starts_with("| kernel | runs |"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        let grid = TextGrid::from_report(report);
        for line in &grid.preamble {
            // Two trailing spaces: a markdown line break, so each line stays a line.
            writeln!(out, "{}  ", line.replace('*', "\\*"))?;
        }
        if !grid.preamble.is_empty() {
            writeln!(out)?;
        }
        write_row(out, &grid.header)?;
        let rule: Vec<String> = grid
            .align
            .iter()
            .map(|align| match align {
                Align::Left => ":---".to_owned(),
                Align::Right => "---:".to_owned(),
            })
            .collect();
        write_row(out, &rule)?;
        for row in &grid.rows {
            write_row(out, row)?;
        }
        if !grid.footnotes.is_empty() {
            writeln!(out)?;
            for note in &grid.footnotes {
                writeln!(out, "{}", note.replace('*', "\\*"))?;
            }
        }
        Ok(())
    }
}

fn write_row(out: &mut dyn Write, entries: &[String]) -> io::Result<()> {
    let escaped: Vec<String> = entries
        .iter()
        .map(|entry| entry.replace('|', "\\|").replace('*', "\\*"))
        .collect();
    writeln!(out, "| {} |", escaped.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::sample_report;

    #[test]
    fn markdown_has_header_rule_and_one_row_per_cell() {
        let mut out = Vec::new();
        MarkdownExporter.write(&sample_report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), 2 + 3);
        assert!(rows[1].starts_with("| :--- | :--- | :--- | ---: |"));
        let columns = rows[0].matches(" | ").count();
        assert!(rows.iter().all(|row| row.matches(" | ").count() == columns));
        assert!(text.contains("\\*"), "rough CI mark is escaped");
    }

    #[test]
    fn markdown_escapes_pipes_in_entries() {
        let mut out = Vec::new();
        write_row(&mut out, &["a|b".to_owned()]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "| a\\|b |\n");
    }
}
