//! JSON export: the complete [`Report`] via serde, the format `plot` reads back.

use std::io::{self, Write};

use super::Exporter;
use crate::results::Report;

/// Writes the report as pretty-printed JSON.
///
/// ```
/// use parbench_cli::export::{json::JsonExporter, Exporter};
/// use parbench_cli::results::Report;
/// let mut out = Vec::new();
/// JsonExporter.write(&Report::new("sweep", &[]), &mut out).unwrap();
/// let back: Report = serde_json::from_slice(&out).unwrap();
/// assert_eq!(back.command, "sweep");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures::sample_report;

    #[test]
    fn json_round_trips_every_sample_and_metric() {
        let report = sample_report();
        let mut out = Vec::new();
        JsonExporter.write(&report, &mut out).unwrap();
        let back: Report = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, report);
    }
}
