//! `sweep --rounds R`: the whole plan measured R times, each round in a fresh child process.
//!
//! Why processes: a cell's numbers move between processes far more than within one (allocator
//! state, page placement, which core the OS prefers, a pool still winding down), so a confidence
//! interval from one process overstates what a reader can expect to reproduce. Each round is a
//! `parbench-cli sweep-round` child (hidden subcommand) that gets a [`RoundRequest`] — the
//! resolved plan and the order of its cells — in a JSON file, measures the cells in that order and
//! writes its [`Report`] to another JSON file (rewritten after every cell, so a round that stops
//! early still hands back what it measured).
//!
//! Order: every round shuffles the cells ([`round_orders`], seeded; the seed is recorded in the
//! report's settings, so `--seed` reproduces every round's order), so that no scheduler always
//! runs right after the same neighbour or always first on a cold machine.
//!
//! Merging ([`merge_rounds`]): a cell's samples and metrics are concatenated over rounds (its
//! summary is over all samples), its [`RoundSpread`] shows how the per-round medians agree, and
//! speed-ups are paired by round ([`crate::stats::Relative::paired`]) over the rounds both cells
//! have (the last round, when it stopped early, may have only some).
//!
//! Progress: the child reports on stderr with lines starting with [`PROGRESS_PREFIX`]; the parent
//! drives its one progress bar from them and passes any other line through once the child's next
//! progress line shows that it lived on (a dying child's panic and backtrace become one error
//! line, [`failure`], with the whole text saved to a file the line names). Finished runs are
//! reported at most every 100 ms and at the end of each cell, not after every run: each line
//! wakes the parent, which would otherwise run beside the start of nearly every timed run.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use parbench_kernels::{Params, PinPolicy, SchedulerSpec, find_kernel};
use serde::{Deserialize, Serialize};

use crate::error::CliError;
use crate::interruption::ChildWatch;
use crate::results::{Cell, MetricSeries, Report};
use crate::stats::{RoundSpread, SplitMix64, Summary};
use crate::sweep::{SweepPlan, assign_relatives};

/// Prefix of the progress lines a round's child writes on stderr.
pub const PROGRESS_PREFIX: &str = "parbench-progress:";

/// What one round's child process measures: the plan by names, and the order of its cells.
///
/// ```
/// use parbench_cli::rounds::RoundRequest;
/// use parbench_cli::sweep::SweepPlan;
/// use parbench_kernels::{find_kernel, ExecutorKind, Params, PinPolicy};
/// let plan = SweepPlan {
///     kernels: vec![find_kernel("reduce")?],
///     schedulers: vec![ExecutorKind::Rayon.into(), ExecutorKind::Seq.into()],
///     threads: vec![1, 2],
///     runs: 3, warmup: 1, pin: PinPolicy::None,
///     params: Params::new().with("n", "4096"),
///     interleave: 1,
/// };
/// let request = RoundRequest::new(&plan, 0, vec![3, 1, 0, 2]);
/// let back = request.plan()?;
/// assert_eq!((back.cell_count(), back.runs, back.params), (4, 3, plan.params));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRequest {
    /// Kernel names, in plan order.
    pub kernels: Vec<String>,
    /// Scheduler names, in plan order.
    pub schedulers: Vec<String>,
    /// Thread counts, in plan order.
    pub threads: Vec<usize>,
    /// Timed runs per cell in this round.
    pub runs: usize,
    /// Warm-up runs per cell.
    pub warmup: usize,
    /// `none` or `compact`.
    pub pin: String,
    /// Kernel parameters that were given, `(name, value)`.
    pub params: Vec<(String, String)>,
    /// Blocks per cell ([`SweepPlan::interleave`]); 1 in requests that do not say.
    #[serde(default = "one")]
    pub interleave: usize,
    /// Which round this is (0-based).
    pub round: usize,
    /// Cell indices ([`SweepPlan::cell_at`]) in measurement order.
    pub order: Vec<usize>,
}

impl RoundRequest {
    /// The request to measure `plan` in `order` as round `round`.
    pub fn new(plan: &SweepPlan, round: usize, order: Vec<usize>) -> RoundRequest {
        RoundRequest {
            kernels: plan.kernels.iter().map(|k| k.name().to_owned()).collect(),
            schedulers: plan
                .schedulers
                .iter()
                .map(SchedulerSpec::to_string)
                .collect(),
            threads: plan.threads.clone(),
            runs: plan.runs,
            warmup: plan.warmup,
            pin: pin_name(plan.pin).to_owned(),
            params: plan
                .params
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            interleave: plan.interleave,
            round,
            order,
        }
    }

    /// The plan again, resolved against this binary's registry.
    ///
    /// # Errors
    /// [`CliError`] for a name this binary does not know (a request from another version).
    pub fn plan(&self) -> Result<SweepPlan, CliError> {
        let mut params = Params::new();
        for (name, value) in &self.params {
            params.set(name.clone(), value.clone());
        }
        Ok(SweepPlan {
            kernels: self
                .kernels
                .iter()
                .map(|name| find_kernel(name))
                .collect::<Result<_, _>>()?,
            schedulers: self
                .schedulers
                .iter()
                .map(|name| name.parse::<SchedulerSpec>())
                .collect::<Result<_, _>>()?,
            threads: self.threads.clone(),
            runs: self.runs,
            warmup: self.warmup,
            pin: match self.pin.as_str() {
                "compact" => PinPolicy::Compact,
                "none" => PinPolicy::None,
                other => return Err(CliError::Usage(format!("unknown pinning `{other}`"))),
            },
            params,
            interleave: self.interleave,
        })
    }
}

fn one() -> usize {
    1
}

/// The name `--pin` gives `pin`.
pub fn pin_name(pin: PinPolicy) -> &'static str {
    match pin {
        PinPolicy::None => "none",
        PinPolicy::Compact => "compact",
    }
}

/// The cell order of each of `rounds` rounds over `cells` cells: independent shuffles drawn from
/// one generator seeded with `seed`, so the seed alone reproduces every round's order.
///
/// ```
/// use parbench_cli::rounds::round_orders;
/// let orders = round_orders(5, 3, 42);
/// assert_eq!(orders, round_orders(5, 3, 42));
/// assert_eq!(orders.len(), 3);
/// assert!(orders.iter().all(|o| { let mut s = o.clone(); s.sort(); s == [0, 1, 2, 3, 4] }));
/// ```
pub fn round_orders(cells: usize, rounds: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    (0..rounds)
        .map(|_| {
            let mut order: Vec<usize> = (0..cells).collect();
            rng.shuffle(&mut order);
            order
        })
        .collect()
}

/// Merges the reports of the rounds into one cell per plan cell, in the plan's canonical order;
/// cells no round measured are left out. See the module docs for what a merged cell holds.
///
/// A cell that failed in any round keeps the first error (prefixed by its round) and no summary:
/// a configuration that works only sometimes is not one whose timing can be reported.
pub fn merge_rounds(plan: &SweepPlan, rounds: &[Report]) -> Vec<Cell> {
    let mut merged = Vec::new();
    for index in 0..plan.cell_count() {
        let Some((kernel_index, threads, kind)) = plan.cell_at(index) else {
            continue;
        };
        let threads_text = threads.to_string();
        let scheduler = kind.to_string();
        let labels = [
            ("kernel", plan.kernels[kernel_index].name()),
            ("scheduler", scheduler.as_str()),
            ("threads", threads_text.as_str()),
        ];
        let found: Vec<(usize, &Cell)> = rounds
            .iter()
            .enumerate()
            .filter_map(|(round, report)| {
                let cell = report.cells.iter().find(|c| {
                    labels
                        .iter()
                        .all(|&(name, value)| c.label(name) == Some(value))
                })?;
                Some((round, cell))
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        merged.push(merge_cell(&labels, &found));
    }
    assign_relatives(&mut merged);
    merged
}

fn merge_cell(labels: &[(&str, &str)], found: &[(usize, &Cell)]) -> Cell {
    let samples: Vec<f64> = found
        .iter()
        .flat_map(|(_, c)| c.samples_s.iter().copied())
        .collect();
    let mut cell = Cell::measured(labels, samples);
    for (_, round_cell) in found {
        for series in &round_cell.metrics {
            match cell.metrics.iter_mut().find(|m| m.name == series.name) {
                Some(existing) => existing.values.extend_from_slice(&series.values),
                None => cell.metrics.push(MetricSeries::clone(series)),
            }
        }
    }
    if let Some((round, failed)) = found.iter().find(|(_, c)| c.error.is_some()) {
        let error = failed.error.as_deref().unwrap_or_default();
        cell.error = Some(format!("round {}: {error}", round + 1));
        cell.summary = None;
        return cell;
    }
    let per_round: Vec<&[f64]> = found.iter().map(|(_, c)| c.samples_s.as_slice()).collect();
    cell.rounds = RoundSpread::from_rounds(&per_round).map(|spread| RoundSpread {
        rounds: found.iter().map(|(round, _)| round + 1).collect(),
        ..spread
    });
    cell.summary = Summary::from_samples(&cell.samples_s);
    cell
}

/// Runs one round in a child `parbench-cli sweep-round` process and returns its report.
///
/// `progress` receives the child's progress events. Its other stderr lines are held back until
/// its next progress event shows that it outlived them, and then passed through (a kernel's
/// caught panic, a note); the lines after its last event are its dying words when it fails, and
/// become this function's error in one line ([`failure`]) instead of being forwarded.
///
/// # Errors
/// When the round fails: the child's own one-line error ([`CliError::Usage`]) when it exited
/// with status 2 after an `error:` line (bad input, e.g. a kernel that cannot be prepared),
/// otherwise [`CliError::RoundFailed`]. The cells it measured before are still returned through
/// `partial`.
pub fn run_round_in_child(
    request: &RoundRequest,
    scratch: &Path,
    progress: &mut dyn FnMut(RoundEvent),
    partial: &mut Option<Report>,
) -> Result<Report, CliError> {
    let round = request.round + 1;
    let request_path = scratch.join(format!("round-{round}-request.json"));
    let report_path = scratch.join(format!("round-{round}-report.json"));
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| CliError::Write { path, source }
    };
    let text = serde_json::to_vec(request).map_err(|e| CliError::Usage(e.to_string()))?;
    fs::write(&request_path, text).map_err(write_error(&request_path))?;
    let exe = std::env::current_exe().map_err(|source| CliError::Read {
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    let mut child = Command::new(exe)
        .arg("sweep-round")
        .arg("--request")
        .arg(&request_path)
        .arg("--output")
        .arg(&report_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliError::Usage(format!("cannot start round {round}: {e}")))?;
    // A SIGINT, SIGTERM or SIGHUP to the sweep kills the child from here until just before it is
    // reaped.
    let watch = ChildWatch::new(&child);
    // Every line that is not a progress event, for the log of a failed round, and those since
    // the last progress event, not passed through yet.
    let mut said: Vec<String> = Vec::new();
    let mut held = 0;
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(event) = line.strip_prefix(PROGRESS_PREFIX) {
                for line in &said[said.len() - held..] {
                    progress(RoundEvent::Message(line.clone()));
                }
                held = 0;
                if let Some(event) = RoundEvent::parse(event.trim()) {
                    progress(event);
                }
                continue;
            }
            said.push(line);
            held += 1;
        }
    }
    drop(watch);
    let status = child
        .wait()
        .map_err(|e| CliError::Usage(format!("round {round} was lost: {e}")))?;
    let report = fs::read_to_string(&report_path)
        .ok()
        .and_then(|text| serde_json::from_str::<Report>(&text).ok());
    // Scratch files are ours alone; a leftover is harmless, so failures to remove are ignored.
    let _ = fs::remove_file(&request_path);
    let _ = fs::remove_file(&report_path);
    let last_words = &said[said.len() - held..];
    if status.success() {
        for line in last_words {
            progress(RoundEvent::Message(line.clone()));
        }
        return report.ok_or_else(|| {
            CliError::Usage(format!(
                "round {round} finished without writing its results"
            ))
        });
    }
    *partial = report;
    if let Some(signal) = crate::interruption::received() {
        // Killed for the sweep's interruption, which the caller reports.
        return Err(CliError::interrupted(signal, None));
    }
    let mut error = failure(round, status, last_words);
    if let CliError::RoundFailed {
        reason, stderr_log, ..
    } = &mut error
    {
        // Saved only when it holds more than the quoted line, and beside (not in) the scratch
        // directory, which is removed when the sweep ends.
        let more =
            said.iter().filter(|l| !l.trim().is_empty()).count() > usize::from(reason.is_some());
        if more {
            let mut path = scratch.as_os_str().to_owned();
            path.push(format!("-round-{round}-stderr.txt"));
            let path = PathBuf::from(path);
            if fs::write(&path, said.join("\n") + "\n").is_ok() {
                *stderr_log = Some(path);
            }
        }
    }
    Err(error)
}

/// The error of a round whose child process ended with `status` after writing `last_words` on
/// stderr (its lines after its last progress event).
///
/// The child's own error (status 2 after an `error:` line: bad input) is passed on as it is;
/// anything else is a [`CliError::RoundFailed`] that quotes the one line that says why — a panic
/// (`thread '…' panicked at …` with its message, or `error: internal error …` from our panic
/// hook), a failed allocation, a fatal runtime error — or else the first line that is not empty.
///
/// ```
/// use std::os::unix::process::ExitStatusExt;
/// use std::process::ExitStatus;
/// use parbench_cli::rounds::failure;
/// let lines: Vec<String> = ["memory allocation of 8 bytes failed", "stack backtrace:", "   0: x"]
///     .map(String::from).to_vec();
/// let error = failure(2, ExitStatus::from_raw(libc::SIGABRT), &lines);
/// assert_eq!(
///     error.to_string(),
///     "round 2's process failed (killed by signal 6, SIGABRT): memory allocation of 8 bytes \
///      failed; the cells measured before are kept"
/// );
/// ```
pub fn failure(round: usize, status: ExitStatus, last_words: &[String]) -> CliError {
    if status.code() == Some(2) {
        if let Some(own) = last_words
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
        {
            return CliError::Usage(own.to_owned());
        }
    }
    let status = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => match parbench_mapper::corun::signal_name(signal) {
            Some(name) => format!("killed by signal {signal}, {name}"),
            None => format!("killed by signal {signal}"),
        },
        (None, None) => status.to_string(),
    };
    CliError::RoundFailed {
        round,
        status,
        reason: why(last_words),
        stderr_log: None,
    }
}

/// The line of a dying process's stderr that says why; see [`failure`].
fn why(lines: &[String]) -> Option<String> {
    let says_why = |line: &str| {
        (line.starts_with("thread '") && line.contains("panicked at"))
            || line.starts_with("memory allocation of")
            || line.starts_with("error: ")
            || line.contains("fatal runtime error")
    };
    let lines: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
    let Some(at) = lines.iter().position(|l| says_why(l)) else {
        return lines.iter().find(|l| !l.is_empty()).map(|&l| l.to_owned());
    };
    let line = lines[at].strip_prefix("error: ").unwrap_or(lines[at]);
    // Since Rust 1.73 the default hook puts the panic's message on the line after its location.
    match lines.get(at + 1) {
        Some(message) if line.starts_with("thread '") && line.ends_with(':') => {
            Some(format!("{line} {message}"))
        }
        _ => Some(line.to_owned()),
    }
}

/// Something a round's child reported on stderr.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundEvent {
    /// A cell started.
    Cell(String),
    /// This many runs finished.
    Runs(u64),
    /// A line that is not a progress event, to pass through.
    Message(String),
}

impl RoundEvent {
    /// The progress line for this event, as the child writes it.
    ///
    /// ```
    /// use parbench_cli::rounds::RoundEvent;
    /// let line = RoundEvent::Runs(3).line().unwrap();
    /// let event = line.strip_prefix(parbench_cli::rounds::PROGRESS_PREFIX).unwrap();
    /// assert_eq!(RoundEvent::parse(event.trim()), Some(RoundEvent::Runs(3)));
    /// ```
    pub fn line(&self) -> Option<String> {
        match self {
            RoundEvent::Cell(name) => Some(format!("{PROGRESS_PREFIX} cell {name}")),
            RoundEvent::Runs(count) => Some(format!("{PROGRESS_PREFIX} runs {count}")),
            RoundEvent::Message(_) => None,
        }
    }

    /// Parses what follows [`PROGRESS_PREFIX`] on a progress line.
    pub fn parse(text: &str) -> Option<RoundEvent> {
        match text.split_once(' ')? {
            ("cell", name) => Some(RoundEvent::Cell(name.to_owned())),
            ("runs", count) => count.parse().ok().map(RoundEvent::Runs),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::LABELS;

    fn plan() -> SweepPlan {
        SweepPlan {
            kernels: vec![find_kernel("reduce").unwrap()],
            schedulers: vec![
                parbench_kernels::ExecutorKind::Rayon.into(),
                parbench_kernels::ExecutorKind::Seq.into(),
            ],
            threads: vec![2],
            runs: 10,
            warmup: 0,
            pin: PinPolicy::None,
            params: Params::new(),
            interleave: 1,
        }
    }

    fn round(rayon: &[f64], seq: &[f64], rayon_first: bool) -> Report {
        let mut report = Report::new("sweep", &LABELS);
        let rayon = Cell::measured(
            &[
                ("kernel", "reduce"),
                ("scheduler", "rayon"),
                ("threads", "2"),
            ],
            rayon.to_vec(),
        );
        let seq = Cell::measured(
            &[("kernel", "reduce"), ("scheduler", "seq"), ("threads", "2")],
            seq.to_vec(),
        );
        report.cells = if rayon_first {
            vec![rayon, seq]
        } else {
            vec![seq, rayon]
        };
        report
    }

    fn ten(base: f64) -> Vec<f64> {
        (0..10).map(|i| base + 0.01 * f64::from(i)).collect()
    }

    #[test]
    fn merged_cells_hold_every_sample_in_plan_order_with_round_spreads() {
        // The machine is twice as slow in round 2; rayon is twice as fast as seq in both.
        let first = round(&ten(1.0), &ten(2.0), true);
        let second = round(&ten(2.0), &ten(4.0), false);
        let cells = merge_rounds(&plan(), &[first, second]);
        assert_eq!(cells.len(), 2);
        let (rayon, seq) = (&cells[0], &cells[1]);
        assert_eq!(rayon.label("scheduler"), Some("rayon"), "plan order");
        assert_eq!(rayon.samples_s.len(), 20);
        let spread = rayon.rounds.as_ref().unwrap();
        assert!((spread.medians[0] - 1.045).abs() < 1e-9);
        assert!((spread.medians[1] - 2.045).abs() < 1e-9);
        assert!(spread.unstable, "rounds 1 s apart with 0.1 s of noise");
        // Paired: 2.045/1.045 and 4.045/2.045, both near 2 whatever the drift.
        let relative = rayon.relative.unwrap();
        assert!(relative.speedup_min.unwrap() > 1.9 && relative.speedup_max.unwrap() < 2.0);
        assert_eq!(seq.relative.unwrap().speedup, 1.0);
    }

    #[test]
    fn speedups_are_paired_over_the_rounds_both_cells_were_measured_in() {
        // Round 2 stopped after rayon's cell: seq has no round 2 to pair it with.
        let first = round(&ten(1.0), &ten(2.0), true);
        let mut second = round(&ten(4.0), &[], true);
        second.cells.truncate(1);
        let cells = merge_rounds(&plan(), &[first, second]);
        let (rayon, seq) = (&cells[0], &cells[1]);
        assert_eq!(rayon.rounds.as_ref().unwrap().rounds, [1, 2]);
        assert_eq!(seq.rounds.as_ref().unwrap().rounds, [1]);
        // Round 1 alone: 2.045 / 1.045, not seq's round 1 over rayon's rounds 1 and 2 pooled.
        let relative = rayon.relative.unwrap();
        let paired = 2.045 / 1.045;
        assert!((relative.speedup - paired).abs() < 1e-9, "{relative:?}");
        assert_eq!(relative.speedup_min, Some(relative.speedup));
        assert_eq!(relative.speedup_max, Some(relative.speedup));
    }

    #[test]
    fn a_failure_in_any_round_fails_the_merged_cell() {
        let first = round(&ten(1.0), &ten(2.0), true);
        let mut second = round(&ten(1.0), &ten(2.0), true);
        second.cells[0].error = Some("wrong result".into());
        let cells = merge_rounds(&plan(), &[first, second]);
        assert_eq!(cells[0].error.as_deref(), Some("round 2: wrong result"));
        assert!(cells[0].summary.is_none());
        assert!(cells[1].summary.is_some());
    }

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    /// The one line a crashed round's error quotes, for a process killed by SIGABRT.
    fn quoted(stderr: &str) -> Option<String> {
        match failure(3, ExitStatus::from_raw(libc::SIGABRT), &lines(stderr)) {
            CliError::RoundFailed { reason, .. } => reason,
            other => panic!("not a RoundFailed: {other}"),
        }
    }

    #[test]
    fn a_crashed_rounds_error_quotes_the_line_that_says_why() {
        // The default panic hook: location, then the message on the next line, then the note.
        let panic = "thread 'main' panicked at src/x.rs:3:5:\nindex out of bounds\n\
                     note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
        assert_eq!(
            quoted(panic).as_deref(),
            Some("thread 'main' panicked at src/x.rs:3:5: index out of bounds")
        );
        let oom = "memory allocation of 34359738368 bytes failed\nstack backtrace:\n   0: x";
        assert_eq!(
            quoted(oom).as_deref(),
            Some("memory allocation of 34359738368 bytes failed")
        );
        // Our own panic hook's line, after an unrelated one.
        let hook = "\nsomething first\nerror: internal error at a.rs:1: boom\nmore";
        assert_eq!(
            quoted(hook).as_deref(),
            Some("internal error at a.rs:1: boom")
        );
        assert_eq!(
            quoted("\n  \nfirst words\nsecond").as_deref(),
            Some("first words")
        );
        assert_eq!(quoted(""), None);
        let error = failure(1, ExitStatus::from_raw(101 << 8), &lines(panic));
        let text = error.to_string();
        assert!(
            text.starts_with("round 1's process failed (exit status 101): thread 'main'"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1);
        let silent = failure(2, ExitStatus::from_raw(libc::SIGKILL), &[]);
        assert_eq!(
            silent.to_string(),
            "round 2's process failed (killed by signal 9, SIGKILL) without a message; the \
             cells measured before are kept"
        );
    }

    #[test]
    fn a_rounds_own_input_error_is_passed_on_as_it_is() {
        let said = lines("a note\nerror: nqueens: `n` must be at least 1");
        let error = failure(1, ExitStatus::from_raw(2 << 8), &said);
        assert!(matches!(&error, CliError::Usage(_)), "{error:?}");
        assert_eq!(error.to_string(), "nqueens: `n` must be at least 1");
        // The same line from a process that crashed is quoted as the reason of the crash.
        let error = failure(1, ExitStatus::from_raw(libc::SIGSEGV), &said);
        assert!(
            error
                .to_string()
                .contains("(killed by signal 11, SIGSEGV): nqueens"),
            "{error}"
        );
    }

    #[test]
    fn orders_differ_between_rounds_and_seeds() {
        let orders = round_orders(20, 3, 7);
        assert_ne!(orders[0], orders[1]);
        assert_ne!(orders[1], orders[2]);
        assert_ne!(round_orders(20, 1, 8)[0], orders[0]);
    }

    #[test]
    fn requests_round_trip_through_json() {
        let mut p = plan();
        p.params = Params::new().with("n", "100");
        p.pin = PinPolicy::Compact;
        p.interleave = 4;
        let request = RoundRequest::new(&p, 2, vec![1, 0]);
        let text = serde_json::to_string(&request).unwrap();
        let back: RoundRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, request);
        let plan = back.plan().unwrap();
        assert_eq!((plan.pin, plan.params), (PinPolicy::Compact, p.params));
        assert_eq!(plan.interleave, 4);
        // A request that does not say measures each cell's runs back to back.
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json.as_object_mut().unwrap().remove("interleave");
        let older: RoundRequest = serde_json::from_value(json).unwrap();
        assert_eq!(older.plan().unwrap().interleave, 1);
        let mut bad = request;
        bad.pin = "sideways".into();
        assert!(bad.plan().is_err());
    }
}
