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

use crate::topology::{pin_current_thread, Topology};

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
    /// This machine has no core with two PUs: the scenarios cannot be run here.
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

/// Runs each workload pinned to its CPU, all starting together; returns ops per second each.
fn run_pinned(
    runs: &[(usize, &Workload<'_>)],
    window: Duration,
) -> Result<Vec<f64>, ScenarioError> {
    let start_line = Barrier::new(runs.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&(cpu, workload)| {
                let start_line = &start_line;
                scope.spawn(move || {
                    let pinned = pin_current_thread(cpu);
                    // Wait even when pinning failed, so the other threads are not left blocked.
                    start_line.wait();
                    if !pinned {
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
                writeln!(f, "co-scheduling scenarios skipped: the topology is not this machine")
            }
            ScenarioOutcome::NoSmtSiblings { cores, pus } => writeln!(
                f,
                "co-scheduling scenarios skipped: this machine has no SMT siblings ({cores} cores, {pus} PUs)"
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
            eprintln!("SKIPPED: this machine has SMT siblings; the NoSmtSiblings path cannot be exercised");
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
