//! The data every command produces and every exporter consumes.
//!
//! A [`Report`] is a list of [`Cell`]s plus the metadata needed to interpret and redraw them. A cell
//! is deliberately generic — *labels* (which configuration: `kernel=reduce`, `scheduler=tree`,
//! `threads=2`, or for another command whatever identifies its cells), *raw samples* (seconds per
//! timed run), optional per-run *metrics* reported by the workload, derived statistics, and an
//! error when the configuration could not be measured — so that commands other than `sweep` reuse
//! the exporters and the statistics unchanged.
//!
//! The JSON form of a [`Report`] (serde) is the interchange format: `plot` reads it back, and it
//! keeps every raw sample so that any figure can be redrawn from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::stats::{Relative, RoundSpread, Summary};

/// Version of the JSON layout; bumped on incompatible changes so that readers can refuse old files.
pub const SCHEMA_VERSION: u32 = 1;

/// The metadata setting in which `sweep` records how many of its rounds the report holds
/// (`rounds` is how many it planned). A sweep rewrites its file after every round, so until it
/// ends the file holds fewer.
pub const ROUNDS_DONE_SETTING: &str = "rounds.done";

/// The metadata setting in which `sweep` records, in one line, why it stopped before its last
/// round: `interrupted by SIGINT: …`, or a failed round's error (and `latency` why it stopped
/// before its last load). Absent when it finished.
pub const STOPPED_SETTING: &str = "stopped";

/// The results of one command invocation.
///
/// ```
/// use parbench_cli::results::{Cell, Report};
/// let mut report = Report::new("sweep", &["kernel", "threads"]);
/// report.cells.push(Cell::measured(&[("kernel", "reduce"), ("threads", "1")], vec![1e-3, 2e-3]));
/// assert_eq!(report.cells[0].summary.as_ref().unwrap().runs, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] at the time of writing.
    pub schema: u32,
    /// The subcommand that produced the report, e.g. `"sweep"`.
    pub command: String,
    /// The label names in the order tables show them (cells may lack some).
    pub label_names: Vec<String>,
    /// How the measurement was set up.
    pub metadata: Metadata,
    /// Measured configurations, in measurement order.
    pub cells: Vec<Cell>,
}

impl Report {
    /// An empty report for `command` whose cells are identified by `label_names`.
    pub fn new(command: &str, label_names: &[&str]) -> Report {
        Report {
            schema: SCHEMA_VERSION,
            command: command.to_owned(),
            label_names: label_names.iter().map(|&name| name.to_owned()).collect(),
            metadata: Metadata::default(),
            cells: Vec::new(),
        }
    }

    /// `Some((held, planned))` when this is the report of a sweep that holds fewer complete
    /// rounds than it planned: one still running (a sweep rewrites its file after every round) or
    /// one that stopped early. Its cells have fewer samples than the other reports of the same
    /// command, and its rounds are not the ones the sweep's order planned.
    ///
    /// Reports written before `sweep` recorded [`ROUNDS_DONE_SETTING`] are judged by the most
    /// round medians any of their cells has; a report that says neither is taken as finished.
    ///
    /// ```
    /// use parbench_cli::results::{Report, ROUNDS_DONE_SETTING};
    /// let mut report = Report::new("sweep", &["kernel"]);
    /// report.metadata.settings.insert("rounds".into(), "3".into());
    /// report.metadata.settings.insert(ROUNDS_DONE_SETTING.into(), "2".into());
    /// assert_eq!(report.unfinished_rounds(), Some((2, 3)));
    /// report.metadata.settings.insert(ROUNDS_DONE_SETTING.into(), "3".into());
    /// assert_eq!(report.unfinished_rounds(), None);
    /// ```
    pub fn unfinished_rounds(&self) -> Option<(usize, usize)> {
        let settings = &self.metadata.settings;
        let planned: usize = settings.get("rounds")?.parse().ok()?;
        let held = match settings.get(ROUNDS_DONE_SETTING) {
            Some(done) => done.parse().ok()?,
            None => self
                .cells
                .iter()
                .filter_map(|cell| cell.rounds.as_ref())
                .map(|rounds| rounds.medians.len())
                .max()?,
        };
        (held < planned).then_some((held, planned))
    }
}

impl Report {
    /// Why this report cannot hold measured times, if it cannot: a sample or round median that is
    /// negative or not finite (a hand-edited or corrupted file), named with its cell. Reading a
    /// report refuses it, since every ratio and verdict computed from it would be nonsense.
    ///
    /// ```
    /// use parbench_cli::results::{Cell, Report};
    /// let mut report = Report::new("sweep", &["kernel", "threads"]);
    /// report.cells.push(Cell::measured(&[("kernel", "reduce"), ("threads", "2")], vec![1e-3]));
    /// assert_eq!(report.invalid_time(), None);
    /// report.cells[0].samples_s.push(-0.5);
    /// let reason = report.invalid_time().unwrap();
    /// assert!(reason.contains("kernel=reduce threads=2") && reason.contains("-0.5"));
    /// ```
    pub fn invalid_time(&self) -> Option<String> {
        let is_time = |value: &f64| value.is_finite() && *value >= 0.0;
        self.cells.iter().find_map(|cell| {
            let (what, value) = cell
                .samples_s
                .iter()
                .find(|value| !is_time(value))
                .map(|value| ("sample", value))
                .or_else(|| {
                    let medians = cell.rounds.as_ref().map_or(&[][..], |r| &r.medians[..]);
                    medians
                        .iter()
                        .find(|value| !is_time(value))
                        .map(|value| ("round median", value))
                })?;
            Some(format!(
                "cell {} has a {what} of {value} s (times must be finite and non-negative)",
                self.cell_name(cell)
            ))
        })
    }

    /// `name=value` for each of the cell's labels, in the order of [`Report::label_names`] (then
    /// any others), e.g. `kernel=reduce scheduler=tree threads=2`.
    pub fn cell_name(&self, cell: &Cell) -> String {
        let ordered = self
            .label_names
            .iter()
            .filter_map(|name| Some((name.as_str(), cell.label(name)?)));
        let others = cell
            .labels
            .iter()
            .filter(|(name, _)| !self.label_names.contains(name))
            .map(|(name, value)| (name.as_str(), value.as_str()));
        ordered
            .chain(others)
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Context of a measurement: where and how it ran.
///
/// ```
/// use parbench_cli::results::Metadata;
/// let m = Metadata::default();
/// assert!(m.settings.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Version of parbench-cli that wrote the report.
    pub parbench_version: String,
    /// Seconds since the Unix epoch when the measurement started.
    pub started_unix_s: u64,
    /// Hardware threads the OS reported as available.
    pub available_cores: usize,
    /// Command settings (runs, warm-up, pinning, kernel parameters …) as text.
    pub settings: BTreeMap<String, String>,
    /// Machine, build and command line (recorded by `sweep`).
    #[serde(default)]
    pub environment: Option<Environment>,
}

impl Metadata {
    /// Metadata of a measurement starting now on this machine, with `settings`.
    ///
    /// ```
    /// use parbench_cli::results::Metadata;
    /// let m = Metadata::now(Default::default());
    /// assert!(m.available_cores >= 1 && m.started_unix_s > 0);
    /// ```
    pub fn now(settings: BTreeMap<String, String>) -> Metadata {
        Metadata {
            parbench_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            available_cores: std::thread::available_parallelism().map_or(1, usize::from),
            settings,
            environment: None,
        }
    }
}

/// One measured configuration.
///
/// ```
/// use parbench_cli::results::Cell;
/// let cell = Cell::failed(&[("kernel", "qap")], "input file missing".into());
/// assert_eq!(cell.label("kernel"), Some("qap"));
/// assert!(cell.summary.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// What was measured, e.g. `kernel`, `scheduler`, `threads`.
    pub labels: BTreeMap<String, String>,
    /// Wall time of each timed run, in seconds, in run order.
    pub samples_s: Vec<f64>,
    /// Statistics of `samples_s`; `None` for a failed cell or one without samples.
    pub summary: Option<Summary>,
    /// How the rounds of `sweep --rounds` agree (each round a separate process); `None` for a
    /// cell measured in one process only.
    #[serde(default)]
    pub rounds: Option<RoundSpread>,
    /// Comparison with the cell's baseline, when it has one.
    pub relative: Option<Relative>,
    /// Per-run values the workload reported besides time (operations per second, …).
    pub metrics: Vec<MetricSeries>,
    /// Why the cell could not be measured (completely); its samples are then not summarised.
    pub error: Option<String>,
}

impl Cell {
    /// A successfully measured cell; the summary is computed from `samples_s`.
    pub fn measured(labels: &[(&str, &str)], samples_s: Vec<f64>) -> Cell {
        Cell {
            labels: to_label_map(labels),
            summary: Summary::from_samples(&samples_s),
            samples_s,
            rounds: None,
            relative: None,
            metrics: Vec::new(),
            error: None,
        }
    }

    /// A cell that failed with `error` before producing a usable measurement.
    pub fn failed(labels: &[(&str, &str)], error: String) -> Cell {
        Cell {
            labels: to_label_map(labels),
            samples_s: Vec::new(),
            summary: None,
            rounds: None,
            relative: None,
            metrics: Vec::new(),
            error: Some(error),
        }
    }

    /// The value of label `name`, if the cell has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).map(String::as_str)
    }
}

fn to_label_map(labels: &[(&str, &str)]) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|&(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The values of one workload metric over a cell's runs.
///
/// ```
/// use parbench_cli::results::MetricSeries;
/// let m = MetricSeries { name: "ops".into(), unit: "op/s".into(), values: vec![1.0, 3.0, 2.0] };
/// assert_eq!(m.median(), Some(2.0));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSeries {
    /// Metric name as the workload reports it.
    pub name: String,
    /// Unit of the values, e.g. `op/s`.
    pub unit: String,
    /// One value per timed run.
    pub values: Vec<f64>,
}

impl MetricSeries {
    /// Median of the values, the number tables show; `None` without (finite) values.
    pub fn median(&self) -> Option<f64> {
        Summary::from_samples(&self.values).map(|s| s.median)
    }

    /// `name=median unit` (no unit for a unitless count), with the median written by
    /// `format_value`; `None` without (finite) values.
    ///
    /// ```
    /// use parbench_cli::results::MetricSeries;
    /// let rate = MetricSeries { name: "rate".into(), unit: "op/s".into(), values: vec![5.0] };
    /// assert_eq!(rate.median_text(|v| v.to_string()).unwrap(), "rate=5 op/s");
    /// let count = MetricSeries { name: "meals".into(), unit: String::new(), values: vec![7.0] };
    /// assert_eq!(count.median_text(|v| v.to_string()).unwrap(), "meals=7");
    /// ```
    pub fn median_text(&self, format_value: impl Fn(f64) -> String) -> Option<String> {
        let value = format_value(self.median()?);
        Some(if self.unit.is_empty() {
            format!("{}={value}", self.name)
        } else {
            format!("{}={value} {}", self.name, self.unit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep report planned for `planned` rounds whose one cell holds `held` of them, as written
    /// before `rounds.done` was recorded.
    fn older_report(planned: &str, held: usize) -> Report {
        let mut report = Report::new("sweep", &["kernel"]);
        report
            .metadata
            .settings
            .insert("rounds".to_owned(), planned.to_owned());
        let round = [1e-3, 2e-3];
        let rounds: Vec<&[f64]> = vec![&round; held];
        let mut cell = Cell::measured(&[("kernel", "reduce")], round.repeat(held));
        cell.rounds = RoundSpread::from_rounds(&rounds);
        report.cells.push(cell);
        report
    }

    #[test]
    fn negative_and_non_finite_times_are_invalid_with_their_cell_named() {
        let mut report = Report::new("sweep", &["kernel", "scheduler", "threads"]);
        let labels = [("kernel", "matmul"), ("scheduler", "seq"), ("threads", "1")];
        report.cells.push(Cell::measured(&labels, vec![1e-3, 0.0]));
        assert_eq!(report.invalid_time(), None);
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            let mut broken = report.clone();
            broken.cells[0].samples_s.push(bad);
            let reason = broken.invalid_time().expect("invalid");
            assert!(
                reason.contains("kernel=matmul scheduler=seq threads=1"),
                "{reason}"
            );
            assert!(reason.contains(&format!("sample of {bad} s")), "{reason}");
        }
        let mut rounds = older_report("2", 2);
        rounds.cells[0].rounds.as_mut().expect("rounds").medians[1] = -1.0;
        let reason = rounds.invalid_time().expect("invalid");
        assert!(reason.contains("round median of -1 s"), "{reason}");
    }

    #[test]
    fn older_reports_are_judged_by_their_cells_round_medians() {
        assert_eq!(older_report("3", 2).unfinished_rounds(), Some((2, 3)));
        assert_eq!(older_report("3", 3).unfinished_rounds(), None);
        // Nothing tells: a report without rounds per cell, or one not written by a sweep.
        let mut bare = older_report("3", 1);
        bare.cells[0].rounds = None;
        assert_eq!(bare.unfinished_rounds(), None);
        bare.metadata.settings.clear();
        assert_eq!(bare.unfinished_rounds(), None);
        // The recorded count wins over the cells.
        let mut recorded = older_report("3", 3);
        recorded
            .metadata
            .settings
            .insert(ROUNDS_DONE_SETTING.to_owned(), "1".to_owned());
        assert_eq!(recorded.unfinished_rounds(), Some((1, 3)));
    }
}
