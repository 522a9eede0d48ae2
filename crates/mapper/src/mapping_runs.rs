//! Mappings measured on this machine: every thread runs its workload where a mapping puts it,
//! all at once, and the algorithms are compared by the throughput each thread reached.
//!
//! This is the SMT study's mapping experiment in small: threads of several applications (here
//! workloads, one per thread, in blocks) placed by the instruction-aware mapping, by Algorithm 1
//! as published, by round-robin and by the operating system (`os`, unpinned), each run for a time
//! window, `repetitions` times interleaved. The gain of one algorithm over another is the
//! geometric mean over threads of the ratio of their median throughputs, minus one — each thread
//! compared with the same thread (same workload) under the other mapping.
//!
//! Like the scenarios, it needs a real machine with SMT siblings: on a synthetic/XML topology or
//! a machine without siblings the outcome says so ([`MappingOutcome::Skipped`]), since every
//! pinned mapping would then give each thread a core of its own.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::mapping::{Algorithm, MapError};
use crate::mix::InstructionMix;
use crate::scenarios::{ScenarioError, ScenarioOutcome, Workload, run_placed};
use crate::topology::Topology;

/// Errors of a measured mapping comparison.
///
/// ```
/// let err = parbench_mapper::MappingRunError::from(parbench_mapper::MapError::NoThreads);
/// assert!(err.to_string().contains("at least 1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingRunError {
    /// The mapping could not be built.
    #[error(transparent)]
    Map(#[from] MapError),
    /// A run failed.
    #[error(transparent)]
    Run(#[from] ScenarioError),
}

/// One algorithm's throughputs: per repetition, ops/s of every thread.
///
/// ```
/// let run = parbench_mapper::MappingRun { algorithm: "os".into(), ops_per_s: vec![vec![1.0, 3.0], vec![3.0, 1.0]] };
/// assert_eq!(run.median_per_thread(), vec![2.0, 2.0]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingRun {
    /// The algorithm's name.
    pub algorithm: String,
    /// `ops_per_s[repetition][thread]`.
    pub ops_per_s: Vec<Vec<f64>>,
}

impl MappingRun {
    /// Each thread's median throughput over the repetitions.
    pub fn median_per_thread(&self) -> Vec<f64> {
        let threads = self.ops_per_s.iter().map(Vec::len).min().unwrap_or(0);
        (0..threads)
            .map(|thread| {
                let mut values: Vec<f64> = self.ops_per_s.iter().map(|r| r[thread]).collect();
                values.sort_by(f64::total_cmp);
                let n = values.len();
                if n % 2 == 1 {
                    values[n / 2]
                } else {
                    (values[n / 2 - 1] + values[n / 2]) / 2.0
                }
            })
            .collect()
    }
}

/// The gain of `better` over `baseline` in percent: the geometric mean over threads of the
/// ratio of their median throughputs, minus one; `None` without comparable threads.
///
/// ```
/// use parbench_mapper::{gain_percent, MappingRun};
/// let run = |ops: Vec<f64>| MappingRun { algorithm: "x".into(), ops_per_s: vec![ops] };
/// let gain = gain_percent(&run(vec![2.0, 8.0]), &run(vec![1.0, 4.0])).unwrap();
/// assert!((gain - 100.0).abs() < 1e-9);
/// ```
pub fn gain_percent(better: &MappingRun, baseline: &MappingRun) -> Option<f64> {
    let ratios: Vec<f64> = better
        .median_per_thread()
        .iter()
        .zip(baseline.median_per_thread())
        .filter(|(b, a)| **b > 0.0 && *a > 0.0)
        .map(|(b, a)| (b / a).ln())
        .collect();
    (!ratios.is_empty())
        .then(|| ((ratios.iter().sum::<f64>() / ratios.len() as f64).exp() - 1.0) * 100.0)
}

/// What [`run_mappings`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MappingOutcome {
    /// One run per algorithm, in the order asked.
    Measured(Vec<MappingRun>),
    /// Not measurable here (why, as for the scenarios).
    Skipped(ScenarioOutcome),
}

/// Maps `threads` (one mix and one workload each) with every algorithm of `algorithms` and runs
/// them all at once for `window`, `repetitions` times (algorithms interleaved).
///
/// # Errors
/// [`MappingRunError::Map`] when a mapping cannot be built (e.g. more threads than PUs),
/// [`MappingRunError::Run`] when pinning fails or a workload panics.
///
/// # Examples
///
/// ```
/// use parbench_mapper::{run_mappings, Algorithm, InstructionMix, MappingOutcome, Topology, Workload};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// let w = Workload { name: "noop".into(), batch: &|| 1 };
/// let threads = [(InstructionMix::default(), &w)];
/// let outcome = run_mappings(&t, &threads, &[Algorithm::RoundRobin], std::time::Duration::ZERO, 1)?;
/// assert!(matches!(outcome, MappingOutcome::Skipped(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_mappings(
    topology: &Topology,
    threads: &[(InstructionMix, &Workload<'_>)],
    algorithms: &[Algorithm],
    window: Duration,
    repetitions: usize,
) -> Result<MappingOutcome, MappingRunError> {
    if !topology.is_this_system() {
        return Ok(MappingOutcome::Skipped(ScenarioOutcome::NotThisSystem));
    }
    if !topology.has_smt_siblings() {
        return Ok(MappingOutcome::Skipped(ScenarioOutcome::NoSmtSiblings {
            cores: topology.cores().len(),
            pus: topology.pus().len(),
        }));
    }
    let mixes: Vec<InstructionMix> = threads.iter().map(|(mix, _)| *mix).collect();
    let mut placements = Vec::new();
    for algorithm in algorithms {
        let mapping = algorithm.map(topology, &mixes)?;
        let cpus: Vec<Option<usize>> = match mapping.cpu_list(topology) {
            Some(cpus) => cpus.into_iter().map(Some).collect(),
            None => vec![None; threads.len()],
        };
        placements.push((algorithm.to_string(), cpus));
    }
    let mut runs: Vec<MappingRun> = placements
        .iter()
        .map(|(name, _)| MappingRun {
            algorithm: name.clone(),
            ops_per_s: Vec::new(),
        })
        .collect();
    for _ in 0..repetitions.max(1) {
        for ((_, cpus), run) in placements.iter().zip(&mut runs) {
            let placed: Vec<(Option<usize>, &Workload<'_>)> = cpus
                .iter()
                .zip(threads)
                .map(|(&cpu, (_, workload))| (cpu, *workload))
                .collect();
            run.ops_per_s.push(run_placed(&placed, window)?);
        }
    }
    Ok(MappingOutcome::Measured(runs))
}

impl fmt::Display for MappingOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappingOutcome::Skipped(outcome) => {
                let text = outcome
                    .to_string()
                    .replace("co-scheduling scenarios", "measured mappings");
                f.write_str(&text)
            }
            MappingOutcome::Measured(runs) => {
                for run in runs {
                    let total: f64 = run.median_per_thread().iter().sum();
                    writeln!(
                        f,
                        "  {:<20} {total:>16.0} ops/s in total (medians)",
                        run.algorithm
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
    fn this_machine_without_siblings_is_skipped() {
        let t = Topology::this_system().unwrap();
        if t.has_smt_siblings() {
            eprintln!("SKIPPED: this machine has SMT siblings; the skip path cannot be exercised");
            return;
        }
        let w = Workload {
            name: "one".into(),
            batch: &|| 1,
        };
        let outcome = run_mappings(
            &t,
            &[(InstructionMix::default(), &w)],
            &[Algorithm::Os],
            Duration::ZERO,
            1,
        )
        .unwrap();
        assert!(outcome.to_string().contains("no SMT siblings"), "{outcome}");
    }

    #[test]
    fn unpinned_threads_all_run() {
        let w = Workload {
            name: "ten".into(),
            batch: &|| 10,
        };
        let rates = run_placed(&[(None, &w), (None, &w)], Duration::ZERO).unwrap();
        assert!(rates.iter().all(|r| *r > 0.0));
    }

    #[test]
    fn gains_compare_each_thread_with_itself() {
        let run = |ops: Vec<Vec<f64>>| MappingRun {
            algorithm: "x".into(),
            ops_per_s: ops,
        };
        // Thread 0 twice as fast, thread 1 as fast: geomean ratio √2.
        let better = run(vec![vec![2.0, 5.0], vec![2.0, 5.0]]);
        let baseline = run(vec![vec![1.0, 5.0], vec![1.0, 5.0]]);
        let gain = gain_percent(&better, &baseline).unwrap();
        assert!((gain - (2f64.sqrt() - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(gain_percent(&run(vec![]), &baseline), None);
    }
}
