//! The studies' published figures: one JSON file per study under `crates/cli/data/published/`,
//! compiled into the binary so `reproduce` works from any directory.
//!
//! Each figure names where it comes from (`source`: the table, figure or section of the study), what
//! it is (`quantity`, `unit`), the conditions it was measured under, and either a number (`value`)
//! or, for a finding the study states without a number, the finding itself (`claim`). A figure
//! whose number this project could not transcribe has `value: null` and says so in `claim`: numbers
//! are never made up. Files are checked when loaded (unique ids, a source, a value or a claim).
//!
//! ```
//! use parbench_cli::reproduce::published::PublishedData;
//! let text = r#"{"study": "demo", "title": "Demo", "reference": "a paper", "machine": "a server",
//!   "conditions": "100 runs", "figures": [{"id": "speedup", "source": "Table 2",
//!   "quantity": "speed-up of A over B", "value": 1.5, "unit": "x", "conditions": "16 threads"}]}"#;
//! let data = PublishedData::parse(text)?;
//! assert_eq!(data.figure("speedup").unwrap().value, Some(1.5));
//! # Ok::<(), parbench_cli::reproduce::published::PublishedError>(())
//! ```

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a study published, with the conditions of its measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedData {
    /// The study's name on the command line (`reproduce <study>`).
    pub study: String,
    /// A one-line title of the study.
    pub title: String,
    /// The publication, and where this project's account of it is written down.
    pub reference: String,
    /// The machine the study measured on.
    pub machine: String,
    /// How the study measured (runs, statistics, build), in one paragraph.
    pub conditions: String,
    /// The published figures.
    pub figures: Vec<PublishedFigure>,
}

/// One published figure (a number) or finding (a claim without a number).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedFigure {
    /// Identifier that a study's measured values refer to, unique within the study.
    pub id: String,
    /// Where in the study: a table, figure, listing or section.
    pub source: String,
    /// What the figure measures.
    pub quantity: String,
    /// The published number; `None` when the study states a finding without one (see `claim`).
    #[serde(default)]
    pub value: Option<f64>,
    /// Unit of `value` (empty for a count or a ratio written without unit).
    #[serde(default)]
    pub unit: String,
    /// The finding in words, required when `value` is `None`.
    #[serde(default)]
    pub claim: Option<String>,
    /// The conditions of this figure (threads, sizes, machine parts) beyond the study's.
    #[serde(default)]
    pub conditions: String,
}

impl PublishedFigure {
    /// The published side as one cell of a table: the number with its unit, or the claim.
    ///
    /// ```
    /// use parbench_cli::reproduce::published::PublishedFigure;
    /// let f = PublishedFigure { id: "a".into(), source: "Fig. 1".into(), quantity: "q".into(),
    ///     value: Some(2.5), unit: "x".into(), claim: None, conditions: String::new() };
    /// assert_eq!(f.value_text(), "2.5 x");
    /// ```
    pub fn value_text(&self) -> String {
        match (self.value, &self.claim) {
            (Some(value), _) if self.unit.is_empty() => format_number(value),
            (Some(value), _) => format!("{} {}", format_number(value), self.unit),
            (None, Some(claim)) => claim.clone(),
            (None, None) => "(none)".to_owned(),
        }
    }
}

/// Up to four significant digits, without trailing zeros.
pub(crate) fn format_number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let digits = (4 - 1 - value.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let text = format!("{value:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// Why a published-data file is not usable.
#[derive(Debug, Error)]
pub enum PublishedError {
    /// Not JSON of the expected shape.
    #[error("published data is malformed: {0}")]
    Malformed(String),
    /// Two figures share an id.
    #[error("published data of `{study}`: figure id `{id}` appears twice")]
    DuplicateId {
        /// The study.
        study: String,
        /// The repeated id.
        id: String,
    },
    /// A figure lacks its source, or has neither a value nor a claim.
    #[error("published data of `{study}`: figure `{id}` {problem}")]
    Incomplete {
        /// The study.
        study: String,
        /// The figure.
        id: String,
        /// What is missing.
        problem: &'static str,
    },
}

impl PublishedData {
    /// Parses and checks one study's file.
    ///
    /// # Errors
    /// [`PublishedError`] when the text is not such a file, ids repeat, or a figure lacks its
    /// source or both its value and its claim.
    pub fn parse(text: &str) -> Result<PublishedData, PublishedError> {
        let data: PublishedData =
            serde_json::from_str(text).map_err(|e| PublishedError::Malformed(e.to_string()))?;
        for (index, figure) in data.figures.iter().enumerate() {
            let incomplete = |problem| PublishedError::Incomplete {
                study: data.study.clone(),
                id: figure.id.clone(),
                problem,
            };
            if data.figures[..index].iter().any(|f| f.id == figure.id) {
                return Err(PublishedError::DuplicateId {
                    study: data.study.clone(),
                    id: figure.id.clone(),
                });
            }
            if figure.source.trim().is_empty() {
                return Err(incomplete("names no source (table, figure or section)"));
            }
            if figure.value.is_none() && figure.claim.as_deref().is_none_or(str::is_empty) {
                return Err(incomplete("has neither a value nor a claim"));
            }
            if figure.value.is_some_and(|v| !v.is_finite()) {
                return Err(incomplete("has a value that is not a finite number"));
            }
        }
        Ok(data)
    }

    /// The figure with this id.
    pub fn figure(&self, id: &str) -> Option<&PublishedFigure> {
        self.figures.iter().find(|f| f.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(figures: &str) -> String {
        format!(
            r#"{{"study": "s", "title": "t", "reference": "r", "machine": "m", "conditions": "c",
                "figures": [{figures}]}}"#
        )
    }

    #[test]
    fn repeated_ids_and_incomplete_figures_are_rejected() {
        let one = r#"{"id": "a", "source": "Table 1", "quantity": "q", "value": 1}"#;
        assert!(PublishedData::parse(&file(one)).is_ok());
        assert!(matches!(
            PublishedData::parse(&file(&format!("{one}, {one}"))),
            Err(PublishedError::DuplicateId { .. })
        ));
        let no_source = r#"{"id": "a", "source": " ", "quantity": "q", "value": 1}"#;
        let no_value = r#"{"id": "a", "source": "Fig. 2", "quantity": "q"}"#;
        for bad in [no_source, no_value] {
            assert!(matches!(
                PublishedData::parse(&file(bad)),
                Err(PublishedError::Incomplete { .. })
            ));
        }
        assert!(matches!(
            PublishedData::parse("{}"),
            Err(PublishedError::Malformed(_))
        ));
    }

    #[test]
    fn numbers_are_written_with_four_significant_digits() {
        assert_eq!(format_number(187.2), "187.2");
        assert_eq!(format_number(1.0), "1");
        assert_eq!(format_number(0.012345), "0.01235");
        assert_eq!(format_number(123456.0), "123456");
    }
}
