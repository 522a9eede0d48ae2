//! The SMT study's co-scheduling scenarios, measured on this machine.
//!
//! Given two workloads that stress different execution units (say `fp-add` and `int-add`),
//! pick one core with two SMT siblings and measure each workload's throughput:
//!
//! - **A — alone:** the workload runs on one sibling, the other sibling idles;
//! - **B — same-unit siblings:** two copies of the workload run on the two siblings;
//! - **C — different-unit siblings:** the two workloads run side by side on the siblings.
//!
//! B and C are reported relative to A: the study saw B drop towards 0.5 (units shared) and C
//! stay near 1.0. A workload is a closure that does one *batch* of work and returns how many
//! operations it did; each thread repeats batches until the time window has passed (always at
//! least one batch), so throughput = operations / elapsed time.
//!
//! Scenarios need a real core with siblings: on a synthetic/XML topology the result is
//! [`ScenarioOutcome::NotThisSystem`], on a machine without SMT siblings (this project's CI VM)
//! it is [`ScenarioOutcome::NoSmtSiblings`] — typed results the CLI prints, not errors.

use std::fmt;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::contention::overlap;
use crate::mix::InstructionMix;
use crate::topology::{Topology, pin_current_thread};

/// A named workload: one call runs a batch and returns the operations it did.
///
/// ```
/// let w = parbench_mapper::Workload { name: "noop".into(), batch: &|| 1 };
/// assert_eq!((w.batch)(), 1);
/// ```
pub struct Workload<'a> {
    /// Name for the report.
    pub name: String,
    /// One batch of work.
    pub batch: &'a (dyn Fn() -> u64 + Sync),
}

/// Errors while running scenarios.
///
/// ```
/// let err = parbench_mapper::ScenarioError::Pin { cpu: 3 };
/// assert_eq!(err.to_string(), "cannot pin a scenario thread to CPU 3");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The OS refused to pin a thread (e.g. the CPU is outside this process's cpuset).
    #[error("cannot pin a scenario thread to CPU {cpu}")]
    Pin {
        /// OS CPU number.
        cpu: usize,
    },
    /// A workload panicked.
    #[error("workload {name} panicked")]
    WorkloadPanicked {
        /// Its name.
        name: String,
    },
}

/// One measured throughput.
///
/// ```
/// let row = parbench_mapper::ScenarioRow { scenario: "A alone".into(), workload: "fp-add".into(), ops_per_second: 1e9, relative_to_alone: 1.0 };
/// assert_eq!(row.relative_to_alone, 1.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRow {
    /// `A alone`, `B same-unit siblings` or `C different-unit siblings`.
    pub scenario: String,
    /// The workload measured.
    pub workload: String,
    /// Its throughput in that scenario (mean of both copies in B).
    pub ops_per_second: f64,
    /// Throughput divided by scenario A's.
    pub relative_to_alone: f64,
}

/// Throughputs of both workloads in scenarios A, B and C.
///
/// ```
/// let r = parbench_mapper::ScenarioReport { cpus: (0, 4), window_ms: 200, rows: vec![] };
/// assert_eq!(r.cpus, (0, 4));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// The OS CPU numbers of the two siblings used.
    pub cpus: (usize, usize),
    /// Measurement window per run, in milliseconds.
    pub window_ms: u64,
    /// Two rows per scenario (one per workload).
    pub rows: Vec<ScenarioRow>,
}

/// What [`run_scenarios`] found.
///
/// ```
/// use parbench_mapper::{run_scenarios, ScenarioOutcome, Topology, Workload};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// let w = Workload { name: "noop".into(), batch: &|| 1 };
/// let outcome = run_scenarios(&t, &w, &w, std::time::Duration::from_millis(1))?;
/// assert_eq!(outcome, ScenarioOutcome::NotThisSystem);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ScenarioOutcome {
    /// Measured on a pair of siblings.
    Measured(ScenarioReport),
    /// No core has two PUs this process may use (under `taskset`, a core's siblings may be left
    /// out): the scenarios cannot be run here.
    NoSmtSiblings {
        /// Cores seen.
        cores: usize,
        /// PUs seen.
        pus: usize,
    },
    /// The topology is synthetic or from XML: nothing can be pinned.
    NotThisSystem,
}

/// Runs scenarios A, B and C for workloads `a` and `b`, each run lasting about `window`.
///
/// # Errors
/// [`ScenarioError::Pin`] when pinning fails, [`ScenarioError::WorkloadPanicked`].
///
/// # Examples
///
/// ```
/// use parbench_mapper::{run_scenarios, ScenarioOutcome, Topology, Workload};
/// let t = Topology::this_system()?;
/// let w = Workload { name: "noop".into(), batch: &|| 1 };
/// match run_scenarios(&t, &w, &w, std::time::Duration::from_millis(5))? {
///     ScenarioOutcome::NoSmtSiblings { .. } => println!("no SMT here"),
///     other => println!("{other}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_scenarios(
    topology: &Topology,
    a: &Workload<'_>,
    b: &Workload<'_>,
    window: Duration,
) -> Result<ScenarioOutcome, ScenarioError> {
    if !topology.is_this_system() {
        return Ok(ScenarioOutcome::NotThisSystem);
    }
    let Some(core) = topology.cores().iter().find(|core| core.pus.len() >= 2) else {
        return Ok(ScenarioOutcome::NoSmtSiblings {
            cores: topology.cores().len(),
            pus: topology.pus().len(),
        });
    };
    let cpus = (
        topology.pus()[core.pus[0]].os_index,
        topology.pus()[core.pus[1]].os_index,
    );
    let mut rows = Vec::new();
    let alone_a = run_pinned(&[(cpus.0, a)], window)?[0];
    let alone_b = run_pinned(&[(cpus.0, b)], window)?[0];
    let mut push = |scenario: &str, workload: &Workload<'_>, ops: f64, alone: f64| {
        rows.push(ScenarioRow {
            scenario: scenario.to_owned(),
            workload: workload.name.clone(),
            ops_per_second: ops,
            relative_to_alone: if alone > 0.0 { ops / alone } else { 0.0 },
        });
    };
    push("A alone", a, alone_a, alone_a);
    push("A alone", b, alone_b, alone_b);
    for (workload, alone) in [(a, alone_a), (b, alone_b)] {
        let pair = run_pinned(&[(cpus.0, workload), (cpus.1, workload)], window)?;
        push(
            "B same-unit siblings",
            workload,
            (pair[0] + pair[1]) / 2.0,
            alone,
        );
    }
    let mixed = run_pinned(&[(cpus.0, a), (cpus.1, b)], window)?;
    push("C different-unit siblings", a, mixed[0], alone_a);
    push("C different-unit siblings", b, mixed[1], alone_b);
    Ok(ScenarioOutcome::Measured(ScenarioReport {
        cpus,
        window_ms: window.as_millis().try_into().unwrap_or(u64::MAX),
        rows,
    }))
}

/// For each workload, the index of its scenario-C partner: the first other workload after it
/// (cyclically) whose mix overlaps its own least ([`overlap`]), i.e. one that
/// stresses different execution units. A single workload has itself as partner.
///
/// ```
/// use parbench_mapper::{different_unit_partners, smt_bench_mixes};
/// let mixes: Vec<_> = smt_bench_mixes().iter().map(|m| m.mix).collect();
/// // fp-add fp-mul fp-div int-add int-mul int-div branch load-dep
/// assert_eq!(different_unit_partners(&mixes), vec![3, 3, 3, 6, 6, 6, 7, 0]);
/// ```
pub fn different_unit_partners(mixes: &[InstructionMix]) -> Vec<usize> {
    let n = mixes.len();
    (0..n)
        .map(|i| {
            (1..n)
                .map(|step| (i + step) % n)
                // min_by keeps the first of equal overlaps, i.e. the nearest one after i.
                .min_by(|&a, &b| {
                    overlap(&mixes[i], &mixes[a]).total_cmp(&overlap(&mixes[i], &mixes[b]))
                })
                .unwrap_or(i)
        })
        .collect()
}

/// One workload's scenario times over all repetitions, as the study reports them: the time the
/// same work takes relative to scenario A, in percent (A = 100 %; B ≈ 200 % when the siblings
/// serialise on one unit, C ≈ 100 % when they do not). Measured as throughput, so
/// percent = 100 × A's ops/s ÷ the scenario's ops/s.
///
/// ```
/// let row = parbench_mapper::SuiteRow {
///     workload: "fp-add".into(), partner: "int-add".into(),
///     alone_ops_per_s: vec![1e9], b_percent: vec![190.0], c_percent: vec![101.0],
/// };
/// assert_eq!(row.median_b_percent(), Some(190.0));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteRow {
    /// The workload measured.
    pub workload: String,
    /// Its different-unit partner in scenario C.
    pub partner: String,
    /// Scenario A throughput per repetition.
    pub alone_ops_per_s: Vec<f64>,
    /// Scenario B time relative to A, percent, per repetition.
    pub b_percent: Vec<f64>,
    /// Scenario C time relative to A, percent, per repetition.
    pub c_percent: Vec<f64>,
}

impl SuiteRow {
    /// Median of [`b_percent`](Self::b_percent).
    pub fn median_b_percent(&self) -> Option<f64> {
        median(&self.b_percent)
    }

    /// Median of [`c_percent`](Self::c_percent).
    pub fn median_c_percent(&self) -> Option<f64> {
        median(&self.c_percent)
    }
}

/// Scenarios A/B/C over a list of workloads with repetitions, summarised by the geometric mean
/// over workloads of each workload's median (the study: 100 / 187.2 / 102.7 % over its 8 kernels).
///
/// ```
/// use parbench_mapper::{ScenarioSuite, SuiteRow};
/// let row = |b: f64, c: f64| SuiteRow {
///     workload: "w".into(), partner: "p".into(), alone_ops_per_s: vec![1.0],
///     b_percent: vec![b], c_percent: vec![c],
/// };
/// let suite = ScenarioSuite::new((0, 1), 10, 1, vec![row(100.0, 100.0), row(400.0, 100.0)]);
/// assert!((suite.geomean_b_percent.unwrap() - 200.0).abs() < 1e-9); // √(100 · 400)
/// assert!((suite.geomean_c_percent.unwrap() - 100.0).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSuite {
    /// The OS CPU numbers of the two siblings used.
    pub cpus: (usize, usize),
    /// Measurement window per run, in milliseconds.
    pub window_ms: u64,
    /// Repetitions per workload.
    pub repetitions: usize,
    /// One row per workload.
    pub rows: Vec<SuiteRow>,
    /// Geometric mean over workloads of the median B time (percent of A).
    pub geomean_b_percent: Option<f64>,
    /// Geometric mean over workloads of the median C time (percent of A).
    pub geomean_c_percent: Option<f64>,
}

impl ScenarioSuite {
    /// A suite from its rows, computing the geometric means.
    pub fn new(
        cpus: (usize, usize),
        window_ms: u64,
        repetitions: usize,
        rows: Vec<SuiteRow>,
    ) -> ScenarioSuite {
        let b: Vec<f64> = rows.iter().filter_map(SuiteRow::median_b_percent).collect();
        let c: Vec<f64> = rows.iter().filter_map(SuiteRow::median_c_percent).collect();
        ScenarioSuite {
            cpus,
            window_ms,
            repetitions,
            rows,
            geomean_b_percent: geometric_mean(&b),
            geomean_c_percent: geometric_mean(&c),
        }
    }
}

/// What [`run_scenario_suite`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SuiteOutcome {
    /// Measured on a pair of siblings.
    Measured(ScenarioSuite),
    /// Not measurable here; the single-pair outcome says why.
    Skipped(ScenarioOutcome),
}

/// Runs scenarios A, B and C for every workload (C with `workloads[partners[i]]`), `repetitions`
/// times each, interleaved (repetition r of every workload before repetition r + 1 of any).
///
/// # Errors
/// [`ScenarioError`] as [`run_scenarios`].
///
/// # Examples
///
/// ```
/// use parbench_mapper::{run_scenario_suite, SuiteOutcome, Topology, Workload};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// let w = [Workload { name: "noop".into(), batch: &|| 1 }];
/// let outcome = run_scenario_suite(&t, &w, &[0], std::time::Duration::from_millis(1), 2)?;
/// assert!(matches!(outcome, SuiteOutcome::Skipped(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_scenario_suite(
    topology: &Topology,
    workloads: &[Workload<'_>],
    partners: &[usize],
    window: Duration,
    repetitions: usize,
) -> Result<SuiteOutcome, ScenarioError> {
    let mut rows: Vec<SuiteRow> = workloads
        .iter()
        .zip(partners)
        .map(|(workload, &partner)| SuiteRow {
            workload: workload.name.clone(),
            partner: workloads
                .get(partner)
                .map_or_else(String::new, |p| p.name.clone()),
            alone_ops_per_s: Vec::new(),
            b_percent: Vec::new(),
            c_percent: Vec::new(),
        })
        .collect();
    let mut cpus = (0, 0);
    for _ in 0..repetitions.max(1) {
        for (index, (workload, &partner)) in workloads.iter().zip(partners).enumerate() {
            let Some(other) = workloads.get(partner) else {
                continue;
            };
            let report = match run_scenarios(topology, workload, other, window)? {
                ScenarioOutcome::Measured(report) => report,
                skipped => return Ok(SuiteOutcome::Skipped(skipped)),
            };
            cpus = report.cpus;
            // Rows 0, 2 and 4 are the first workload's A, B and C (see run_scenarios).
            let relative = |row: usize| report.rows.get(row).map(|r| r.relative_to_alone);
            let percent = |relative: Option<f64>| relative.filter(|r| *r > 0.0).map(|r| 100.0 / r);
            let row = &mut rows[index];
            row.alone_ops_per_s
                .extend(report.rows.first().map(|r| r.ops_per_second));
            row.b_percent.extend(percent(relative(2)));
            row.c_percent.extend(percent(relative(4)));
        }
    }
    Ok(SuiteOutcome::Measured(ScenarioSuite::new(
        cpus,
        window.as_millis().try_into().unwrap_or(u64::MAX),
        repetitions.max(1),
        rows,
    )))
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// exp(mean(ln x)) over positive values; `None` when there are none.
fn geometric_mean(values: &[f64]) -> Option<f64> {
    let positive: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
    (!positive.is_empty())
        .then(|| (positive.iter().map(|v| v.ln()).sum::<f64>() / positive.len() as f64).exp())
}

impl fmt::Display for SuiteOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuiteOutcome::Skipped(outcome) => write!(f, "{outcome}"),
            SuiteOutcome::Measured(suite) => {
                writeln!(
                    f,
                    "co-scheduling on siblings cpu {} and cpu {} ({} ms per run, {}; time for the same work, % of A alone, median):",
                    suite.cpus.0,
                    suite.cpus.1,
                    suite.window_ms,
                    crate::report::plural(suite.repetitions, "repetition")
                )?;
                writeln!(
                    f,
                    "  {:<12} {:<12} {:>8} {:>8} {:>8}",
                    "workload", "C partner", "A", "B", "C"
                )?;
                let show =
                    |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}"));
                for row in &suite.rows {
                    writeln!(
                        f,
                        "  {:<12} {:<12} {:>8} {:>8} {:>8}",
                        row.workload,
                        row.partner,
                        "100.0",
                        show(row.median_b_percent()),
                        show(row.median_c_percent())
                    )?;
                }
                writeln!(
                    f,
                    "  {:<12} {:<12} {:>8} {:>8} {:>8}",
                    "geomean",
                    "",
                    "100.0",
                    show(suite.geomean_b_percent),
                    show(suite.geomean_c_percent)
                )
            }
        }
    }
}

/// Runs each workload pinned to its CPU, all starting together; returns ops per second each.
fn run_pinned(
    runs: &[(usize, &Workload<'_>)],
    window: Duration,
) -> Result<Vec<f64>, ScenarioError> {
    let placed: Vec<(Option<usize>, &Workload<'_>)> = runs
        .iter()
        .map(|&(cpu, workload)| (Some(cpu), workload))
        .collect();
    run_placed(&placed, window)
}

/// Runs each workload on its own thread, pinned to its CPU when one is given (`None`: the OS
/// places it), all starting together; returns ops per second each.
pub(crate) fn run_placed(
    runs: &[(Option<usize>, &Workload<'_>)],
    window: Duration,
) -> Result<Vec<f64>, ScenarioError> {
    let start_line = Barrier::new(runs.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&(cpu, workload)| {
                let start_line = &start_line;
                scope.spawn(move || {
                    let pinned = cpu.is_none_or(pin_current_thread);
                    // Wait even when pinning failed, so the other threads are not left blocked.
                    start_line.wait();
                    if let (false, Some(cpu)) = (pinned, cpu) {
                        return Err(ScenarioError::Pin { cpu });
                    }
                    let started = Instant::now();
                    let mut ops = 0u64;
                    loop {
                        ops = ops.saturating_add((workload.batch)());
                        if started.elapsed() >= window {
                            break;
                        }
                    }
                    Ok(ops as f64 / started.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(runs)
            .map(|(handle, (_, workload))| {
                handle
                    .join()
                    .unwrap_or(Err(ScenarioError::WorkloadPanicked {
                        name: workload.name.clone(),
                    }))
            })
            .collect()
    })
}

impl fmt::Display for ScenarioOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioOutcome::NotThisSystem => {
                writeln!(
                    f,
                    "co-scheduling scenarios skipped: the topology is not this machine"
                )
            }
            ScenarioOutcome::NoSmtSiblings { cores, pus } => writeln!(
                f,
                "co-scheduling scenarios skipped: no SMT siblings among the CPUs this process may \
                 use ({}, {})",
                crate::report::plural(*cores, "core"),
                crate::report::plural(*pus, "PU")
            ),
            ScenarioOutcome::Measured(report) => {
                writeln!(
                    f,
                    "co-scheduling on siblings cpu {} and cpu {} ({} ms per run):",
                    report.cpus.0, report.cpus.1, report.window_ms
                )?;
                for row in &report.rows {
                    writeln!(
                        f,
                        "  {:<26} {:<10} {:>14.0} ops/s  {:>5.2}x alone",
                        row.scenario, row.workload, row.ops_per_second, row.relative_to_alone
                    )?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_without_siblings_says_so() {
        let t = Topology::this_system().unwrap();
        let w = Workload {
            name: "one".into(),
            batch: &|| 1,
        };
        let outcome = run_scenarios(&t, &w, &w, Duration::from_millis(2)).unwrap();
        if t.has_smt_siblings() {
            eprintln!(
                "SKIPPED: this machine has SMT siblings; the NoSmtSiblings path cannot be exercised"
            );
            assert!(matches!(outcome, ScenarioOutcome::Measured(_)));
        } else {
            assert_eq!(
                outcome,
                ScenarioOutcome::NoSmtSiblings {
                    cores: t.cores().len(),
                    pus: t.pus().len()
                }
            );
            assert!(outcome.to_string().contains("no SMT siblings"));
        }
    }

    #[test]
    fn a_suite_says_its_repetitions_in_the_singular_and_the_plural() {
        let heading = |repetitions| {
            SuiteOutcome::Measured(ScenarioSuite::new((0, 1), 20, repetitions, Vec::new()))
                .to_string()
        };
        let one = heading(1);
        assert!(
            one.starts_with(
                "co-scheduling on siblings cpu 0 and cpu 1 (20 ms per run, 1 repetition; "
            ),
            "{one}"
        );
        assert!(heading(3).contains("(20 ms per run, 3 repetitions; "));
    }

    #[test]
    fn no_smt_siblings_counts_in_the_singular_and_the_plural() {
        let text = |cores, pus| ScenarioOutcome::NoSmtSiblings { cores, pus }.to_string();
        assert_eq!(
            text(1, 1),
            "co-scheduling scenarios skipped: no SMT siblings among the CPUs this process may use \
             (1 core, 1 PU)\n"
        );
        assert!(text(2, 2).ends_with("(2 cores, 2 PUs)\n"), "{}", text(2, 2));
    }

    #[test]
    fn pinned_runs_always_complete_at_least_one_batch() {
        // A CPU this process may run on (CI may restrict the affinity mask).
        let Some(cpu) =
            core_affinity::get_core_ids().and_then(|ids| ids.first().map(|core| core.id))
        else {
            eprintln!("SKIPPED: cannot read this process's CPU affinity");
            return;
        };
        let w = Workload {
            name: "ten".into(),
            batch: &|| 10,
        };
        let rates = run_pinned(&[(cpu, &w)], Duration::ZERO).unwrap();
        assert!(rates[0] > 0.0);
    }

    #[test]
    fn medians_and_geometric_means_follow_their_definitions() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let g = geometric_mean(&[100.0, 187.2 * 187.2 / 100.0]).unwrap();
        assert!((g - 187.2).abs() < 1e-9);
        assert_eq!(geometric_mean(&[]), None);
    }

    #[test]
    fn the_suite_is_skipped_without_siblings_and_says_why() {
        let t = Topology::this_system().unwrap();
        if t.has_smt_siblings() {
            eprintln!("SKIPPED: this machine has SMT siblings; the skip path cannot be exercised");
            return;
        }
        let w = [Workload {
            name: "one".into(),
            batch: &|| 1,
        }];
        let outcome = run_scenario_suite(&t, &w, &[0], Duration::from_millis(1), 3).unwrap();
        assert!(outcome.to_string().contains("no SMT siblings"), "{outcome}");
    }

    #[test]
    fn partners_differ_in_their_units_when_one_exists() {
        use crate::mix::InstrClass;
        let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
        let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
        assert_eq!(different_unit_partners(&[fp, fp, int]), vec![2, 2, 0]);
        assert_eq!(different_unit_partners(&[fp, fp]), vec![1, 0]);
        assert_eq!(different_unit_partners(&[fp]), vec![0]);
    }

    #[test]
    fn pinning_to_a_missing_cpu_is_an_error() {
        let w = Workload {
            name: "one".into(),
            batch: &|| 1,
        };
        assert_eq!(
            run_pinned(&[(100_000, &w)], Duration::ZERO),
            Err(ScenarioError::Pin { cpu: 100_000 })
        );
    }
}
