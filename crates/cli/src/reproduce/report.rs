//! A study's reproduction report: every published figure beside the value measured here, both
//! with their conditions, plus sections of prose, SVG figures and the raw results.
//!
//! `reproduce` writes a directory: `report.md` (the Markdown report), one `.svg` per
//! figure, and `results.json` (every measured cell with its raw samples, the `sweep` JSON format,
//! so `parbench-cli plot` and any script can redraw or re-analyse it).

use std::fmt::Write as _;

use crate::error::CliError;
use crate::reproduce::Scale;
use crate::reproduce::published::{PublishedData, format_number};
use crate::results::Report;
use crate::results_file::ResultsDirectory;

/// What a study run produced.
#[derive(Debug, Clone)]
pub struct StudyReport {
    /// The scale it ran at.
    pub scale: Scale,
    /// How this scale differs from the study's own experiment (sizes, runs, threads).
    pub scaling: String,
    /// How and where it was measured here (machine, build, statistics).
    pub conditions_here: String,
    /// Measured values, each referring to a published figure by id (or to none: then it is listed
    /// as a figure of this machine only).
    pub measured: Vec<MeasuredFigure>,
    /// Further sections (tables, explanations), in order.
    pub sections: Vec<Section>,
    /// SVG figures.
    pub figures: Vec<FigureFile>,
    /// Every measured cell with its raw samples.
    pub results: Report,
}

/// One measured value, or the reason there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredFigure {
    /// The published figure's id it stands beside.
    pub id: String,
    /// The value.
    pub value: Measured,
    /// The conditions here (threads, sizes, runs, backend …).
    pub conditions: String,
}

/// A measured value.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// A number with its unit and, when it is a mean, the 95 % confidence interval of the mean.
    Number {
        /// The value.
        value: f64,
        /// Its unit.
        unit: String,
        /// `(low, high)` of the 95 % CI of the mean.
        ci95: Option<(f64, f64)>,
    },
    /// A finding in words (e.g. which backend was faster).
    Finding(String),
    /// Not measurable here, with the reason (no PMU, no SMT, not aarch64 …).
    Unavailable(String),
}

impl Measured {
    /// A plain number.
    pub fn number(value: f64, unit: &str) -> Measured {
        Measured::Number {
            value,
            unit: unit.to_owned(),
            ci95: None,
        }
    }

    fn text(&self) -> String {
        match self {
            Measured::Number { value, unit, ci95 } => {
                let mut text = format_number(*value);
                if !unit.is_empty() {
                    text = format!("{text} {unit}");
                }
                if let Some((low, high)) = ci95 {
                    let _ = write!(
                        text,
                        " (CI95 {}–{})",
                        format_number(*low),
                        format_number(*high)
                    );
                }
                text
            }
            Measured::Finding(text) => text.clone(),
            Measured::Unavailable(reason) => format!("unavailable here: {reason}"),
        }
    }
}

/// A titled block of Markdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The heading (level 2).
    pub heading: String,
    /// Markdown body.
    pub body: String,
}

/// An SVG figure of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureFile {
    /// File name inside the report directory, ending in `.svg`.
    pub file: String,
    /// Caption, saying what is drawn and how (whiskers, error bars).
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

/// Escapes `|` and line breaks so that text stays inside one Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown report.
///
/// ```
/// use parbench_cli::reproduce::published::PublishedData;
/// use parbench_cli::reproduce::report::{render_markdown, Measured, MeasuredFigure, StudyReport};
/// use parbench_cli::reproduce::Scale;
/// use parbench_cli::results::Report;
/// let published = PublishedData::parse(r#"{"study": "demo", "title": "Demo", "reference": "r",
///   "machine": "m", "conditions": "c", "figures": [{"id": "x", "source": "Table 1",
///   "quantity": "speed-up", "value": 2.0, "unit": "x"}]}"#)?;
/// let report = StudyReport {
///     scale: Scale::Tiny, scaling: "1 run".into(), conditions_here: "2 cores".into(),
///     measured: vec![MeasuredFigure { id: "x".into(), value: Measured::number(1.5, "x"),
///         conditions: "2 threads".into() }],
///     sections: vec![], figures: vec![], results: Report::new("reproduce", &[]),
/// };
/// let markdown = render_markdown(&published, &report);
/// assert!(markdown.contains("| speed-up | Table 1 | 2 x |"));
/// assert!(markdown.contains("| 1.5 x | 2 threads |"));
/// # Ok::<(), parbench_cli::reproduce::published::PublishedError>(())
/// ```
pub fn render_markdown(published: &PublishedData, report: &StudyReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Reproduction: {}\n", published.title);
    let _ = writeln!(md, "- Study: {}", published.reference);
    let _ = writeln!(md, "- Study's machine: {}", published.machine);
    let _ = writeln!(md, "- Study's method: {}", published.conditions);
    let _ = writeln!(md, "- Here: {}", report.conditions_here);
    let _ = writeln!(
        md,
        "- Scale: `{}` — {}\n",
        report.scale.name(),
        report.scaling
    );
    let _ = writeln!(md, "## Measured beside published\n");
    let _ = writeln!(
        md,
        "| quantity | source | published | published conditions | measured here | conditions here |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for figure in &published.figures {
        let measured: Vec<&MeasuredFigure> = report
            .measured
            .iter()
            .filter(|m| m.id == figure.id)
            .collect();
        let rows: Vec<(String, String)> = if measured.is_empty() {
            vec![(
                "not measured by this run".to_owned(),
                "(no measurement for this figure)".to_owned(),
            )]
        } else {
            measured
                .iter()
                .map(|m| (m.value.text(), m.conditions.clone()))
                .collect()
        };
        for (value, conditions) in rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&figure.quantity),
                cell(&figure.source),
                cell(&figure.value_text()),
                cell(&figure.conditions),
                cell(&value),
                cell(&conditions)
            );
        }
    }
    let own: Vec<&MeasuredFigure> = report
        .measured
        .iter()
        .filter(|m| published.figure(&m.id).is_none())
        .collect();
    if !own.is_empty() {
        let _ = writeln!(md, "\n## Measured here without a published counterpart\n");
        let _ = writeln!(md, "| quantity | measured here | conditions here |");
        let _ = writeln!(md, "|---|---|---|");
        for m in own {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                cell(&m.id),
                cell(&m.value.text()),
                cell(&m.conditions)
            );
        }
    }
    let unavailable: Vec<&MeasuredFigure> = report
        .measured
        .iter()
        .filter(|m| matches!(m.value, Measured::Unavailable(_)))
        .collect();
    if !unavailable.is_empty() {
        let _ = writeln!(md, "\n## Not measurable here\n");
        for m in unavailable {
            let _ = writeln!(md, "- `{}`: {}", m.id, m.value.text());
        }
    }
    for section in &report.sections {
        let _ = writeln!(
            md,
            "\n## {}\n\n{}",
            section.heading,
            section.body.trim_end()
        );
    }
    if !report.figures.is_empty() {
        let _ = writeln!(md, "\n## Figures\n");
        for figure in &report.figures {
            let _ = writeln!(
                md,
                "![{}]({})\n\n{}\n",
                figure.file, figure.file, figure.caption
            );
        }
    }
    let _ = writeln!(
        md,
        "\nRaw results (every sample of every cell): `results.json` (the `sweep` JSON format)."
    );
    md
}

/// Writes `markdown` as `report.md`, the figures and `results.json` into `dir`, checked before
/// measuring; when a file cannot be written, the whole report goes to a rescue directory
/// ([`ResultsDirectory::finish`]).
///
/// # Errors
/// [`CliError::WrittenElsewhere`] saying where the report went instead.
pub(crate) fn write_study_report(
    dir: ResultsDirectory,
    markdown: &str,
    report: &StudyReport,
) -> Result<(), CliError> {
    let json = serde_json::to_vec_pretty(&report.results).map_err(|error| CliError::Write {
        path: dir.path().join("results.json"),
        source: error.into(),
    })?;
    let mut files = vec![("report.md", markdown.as_bytes())];
    files.extend(
        report
            .figures
            .iter()
            .map(|figure| (figure.file.as_str(), figure.svg.as_bytes())),
    );
    files.push(("results.json", &json));
    dir.finish("report", &files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published() -> PublishedData {
        PublishedData::parse(
            r#"{"study": "s", "title": "T", "reference": "r", "machine": "m", "conditions": "c",
            "figures": [
              {"id": "a", "source": "Table 3", "quantity": "speed-up", "value": 2.0, "unit": "x",
               "conditions": "64 threads"},
              {"id": "b", "source": "Fig. 4", "quantity": "IPC", "claim": "below 1"},
              {"id": "c", "source": "Sec. 5", "quantity": "unmeasured", "value": 3.0}
            ]}"#,
        )
        .unwrap()
    }

    fn report(measured: Vec<MeasuredFigure>) -> StudyReport {
        StudyReport {
            scale: Scale::Default,
            scaling: "scaled".into(),
            conditions_here: "here".into(),
            measured,
            sections: vec![Section {
                heading: "Details".into(),
                body: "text".into(),
            }],
            figures: vec![FigureFile {
                file: "f.svg".into(),
                caption: "cap".into(),
                svg: "<svg/>".into(),
            }],
            results: Report::new("reproduce", &["kernel"]),
        }
    }

    #[test]
    fn every_published_figure_gets_a_row_beside_its_measurement() {
        let measured = vec![
            MeasuredFigure {
                id: "a".into(),
                value: Measured::Number {
                    value: 1.5,
                    unit: "x".into(),
                    ci95: Some((1.4, 1.6)),
                },
                conditions: "2 threads".into(),
            },
            MeasuredFigure {
                id: "b".into(),
                value: Measured::Unavailable("no PMU".into()),
                conditions: "-".into(),
            },
            MeasuredFigure {
                id: "extra".into(),
                value: Measured::Finding("lse faster".into()),
                conditions: "-".into(),
            },
        ];
        let md = render_markdown(&published(), &report(measured));
        assert!(md.contains(
            "| speed-up | Table 3 | 2 x | 64 threads | 1.5 x (CI95 1.4–1.6) | 2 threads |"
        ));
        assert!(md.contains("| IPC | Fig. 4 | below 1 |  | unavailable here: no PMU | - |"));
        assert!(md.contains("| unmeasured | Sec. 5 | 3 |  | not measured by this run |"));
        assert!(md.contains("| extra | lse faster | - |"));
        assert!(md.contains("- `b`: unavailable here: no PMU"));
        assert!(md.contains("## Details\n\ntext"));
        assert!(md.contains("![f.svg](f.svg)"));
    }

    #[test]
    fn the_directory_gets_markdown_figures_and_raw_results() {
        let dir = std::env::temp_dir().join(format!("parbench-report-{}", std::process::id()));
        let report = report(vec![]);
        let md = render_markdown(&published(), &report);
        let checked = ResultsDirectory::open(&dir).unwrap();
        write_study_report(checked, &md, &report).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("report.md")).unwrap(), md);
        assert_eq!(
            std::fs::read_to_string(dir.join("f.svg")).unwrap(),
            "<svg/>"
        );
        let raw = std::fs::read_to_string(dir.join("results.json")).unwrap();
        assert!(raw.contains("\"command\": \"reproduce\""));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
