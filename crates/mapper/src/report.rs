//! Printable and serialisable results for the CLI's `map` subcommand.
//!
//! Each report is plain data (`serde`) plus a `Display` rendering for people, so the CLI only
//! parses arguments, calls one function and prints or writes JSON.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::contention::contention;
use crate::mapping::{Algorithm, MapError, threads_in_blocks};
use crate::mix::{InstructionMix, NamedMix, nas_like_mixes, smt_bench_mixes};
use crate::topology::Topology;

/// `count` and `noun`, in the plural unless `count` is 1 (`s`, or `es` after an `s`): what the
/// messages of this crate and the CLI print instead of "1 thread(s)".
///
/// ```
/// use parbench_mapper::plural;
/// assert_eq!(plural(1, "PU"), "1 PU");
/// assert_eq!(plural(0, "thread"), "0 threads");
/// assert_eq!(plural(2, "process"), "2 processes");
/// ```
pub fn plural(count: usize, noun: &str) -> String {
    match (count, noun.ends_with('s')) {
        (1, _) => format!("{count} {noun}"),
        (_, true) => format!("{count} {noun}es"),
        (_, false) => format!("{count} {noun}s"),
    }
}

/// One algorithm's model score (`None` when it pins nothing).
///
/// ```
/// let s = parbench_mapper::AlgorithmScore { algorithm: "os".into(), score: None };
/// assert!(s.score.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlgorithmScore {
    /// Algorithm name.
    pub algorithm: String,
    /// Contention-model total; lower is better.
    pub score: Option<f64>,
}

/// Summary of the model scores of seeded random placements.
///
/// ```
/// use parbench_mapper::{compare_on_model, smt_bench_mixes, threads_in_blocks, Topology};
/// let t = Topology::synthetic("core:4 pu:2")?;
/// let threads = threads_in_blocks(&smt_bench_mixes()[..4], 8)?;
/// let random = compare_on_model(&t, &threads, 20, 1)?.random.unwrap();
/// assert!(random.min <= random.mean && random.mean <= random.max);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomPlacements {
    /// How many placements were drawn.
    pub samples: usize,
    /// Seed of the first placement (the others use the following seeds).
    pub seed: u64,
    /// Best (lowest) score.
    pub min: f64,
    /// Mean score.
    pub mean: f64,
    /// Worst score.
    pub max: f64,
}

/// Model scores of every named algorithm and of random placements for one set of threads.
///
/// ```
/// use parbench_mapper::{compare_on_model, declared_kernel_mixes, threads_in_blocks, Topology};
/// let t = Topology::synthetic("core:4 pu:2")?;
/// let kernels = declared_kernel_mixes(&["fp-add", "int-add", "fp-mul", "load-dep"])?;
/// let threads = threads_in_blocks(&kernels, 8)?;
/// let comparison = compare_on_model(&t, &threads, 10, 1)?;
/// assert_eq!(comparison.score_of("instruction-aware"), Some(0.0));
/// assert_eq!(comparison.score_of("round-robin"), Some(4.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelComparison {
    /// What was compared.
    pub title: String,
    /// Workload name per thread.
    pub threads: Vec<String>,
    /// Named algorithms in [`Algorithm::NAMED`] order.
    pub scores: Vec<AlgorithmScore>,
    /// Random placements, when any were requested.
    pub random: Option<RandomPlacements>,
}

impl ModelComparison {
    /// The score of an algorithm by name, when it has one.
    ///
    /// ```
    /// use parbench_mapper::{compare_on_model, smt_bench_mixes, threads_in_blocks, Topology};
    /// let t = Topology::synthetic("core:1 pu:2")?;
    /// let c = compare_on_model(&t, &threads_in_blocks(&smt_bench_mixes()[..1], 2)?, 0, 0)?;
    /// assert_eq!(c.score_of("round-robin"), Some(1.0));
    /// assert_eq!(c.score_of("os"), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn score_of(&self, algorithm: &str) -> Option<f64> {
        self.scores
            .iter()
            .find(|s| s.algorithm == algorithm)
            .and_then(|s| s.score)
    }
}

/// Scores every named algorithm and `random_samples` seeded random placements (seeds `seed`,
/// `seed + 1`, …) on the contention model.
///
/// # Errors
/// The [`MapError`]s of [`Algorithm::map`] (no threads, more threads than PUs).
///
/// # Examples
///
/// ```
/// use parbench_mapper::{compare_on_model, nas_like_mixes, threads_in_blocks, Topology};
/// let t = Topology::synthetic("pack:1 core:8 pu:2")?;
/// let c = compare_on_model(&t, &threads_in_blocks(&nas_like_mixes(), 16)?, 50, 42)?;
/// assert!(c.score_of("instruction-aware") <= c.score_of("round-robin"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compare_on_model(
    topology: &Topology,
    threads: &[NamedMix],
    random_samples: usize,
    seed: u64,
) -> Result<ModelComparison, MapError> {
    let mixes: Vec<InstructionMix> = threads.iter().map(|t| t.mix).collect();
    let score = |algorithm: Algorithm| -> Result<Option<f64>, MapError> {
        let mapping = algorithm.map(topology, &mixes)?;
        Ok(contention(topology, &mapping, &mixes).map(|s| s.total))
    };
    let scores = Algorithm::NAMED
        .into_iter()
        .map(|algorithm| {
            Ok(AlgorithmScore {
                algorithm: algorithm.to_string(),
                score: score(algorithm)?,
            })
        })
        .collect::<Result<Vec<_>, MapError>>()?;
    let random_scores = (0..random_samples as u64)
        .map(|offset| {
            score(Algorithm::Random {
                seed: seed.wrapping_add(offset),
            })
            .map(|s| s.unwrap_or(0.0))
        })
        .collect::<Result<Vec<f64>, MapError>>()?;
    let random = (!random_scores.is_empty()).then(|| RandomPlacements {
        samples: random_scores.len(),
        seed,
        min: random_scores.iter().copied().fold(f64::INFINITY, f64::min),
        mean: random_scores.iter().sum::<f64>() / random_scores.len() as f64,
        max: random_scores
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max),
    });
    Ok(ModelComparison {
        title: format!(
            "{} on {} / {}",
            plural(threads.len(), "thread"),
            plural(topology.cores().len(), "core"),
            plural(topology.pus().len(), "PU")
        ),
        threads: threads.iter().map(|t| t.name.clone()).collect(),
        scores,
        random,
    })
}

impl fmt::Display for ModelComparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "model scores ({}; lower = less sibling contention):",
            self.title
        )?;
        for entry in &self.scores {
            match entry.score {
                Some(score) => writeln!(f, "  {:<18} {score:>8.3}", entry.algorithm)?,
                None => writeln!(
                    f,
                    "  {:<18} {:>8}  (not pinned: the OS decides)",
                    entry.algorithm, "n/a"
                )?,
            }
        }
        if let Some(random) = &self.random {
            writeln!(
                f,
                "  {:<18} {:>8.3}  (mean of {} seeded placements from seed {}; min {:.3}, max {:.3})",
                "random", random.mean, random.samples, random.seed, random.min, random.max
            )?;
        }
        Ok(())
    }
}

/// Where one thread was placed.
///
/// ```
/// let p = parbench_mapper::ThreadPlacement { thread: 0, workload: "fp-add".into(), pu: Some(0), core: Some(0), cpu: Some(0) };
/// assert_eq!(p.cpu, Some(0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPlacement {
    /// Thread id.
    pub thread: usize,
    /// Workload (kernel or application) the thread runs.
    pub workload: String,
    /// Logical PU index, `None` when not pinned.
    pub pu: Option<usize>,
    /// Logical core index, `None` when not pinned.
    pub core: Option<usize>,
    /// OS CPU number, `None` when not pinned.
    pub cpu: Option<usize>,
}

/// What `parbench-cli map` prints: the chosen mapping and every algorithm's model score.
///
/// ```
/// use parbench_mapper::{declared_kernel_mixes, map_report, Algorithm, Topology};
/// let t = Topology::synthetic("pack:1 core:4 pu:2")?;
/// let kernels = declared_kernel_mixes(&["fp-add", "int-add", "fp-mul", "load-dep"])?;
/// let report = map_report(&t, &kernels, 8, Algorithm::InstructionAware, 100, 1)?;
/// assert_eq!(report.placements.len(), 8);
/// assert!(report.to_string().contains("instruction-aware"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapReport {
    /// The topology's one-line summary.
    pub topology: String,
    /// The chosen algorithm.
    pub algorithm: String,
    /// OS CPU list for `Pinning::Cpus`, `None` for the `os` algorithm.
    pub cpu_list: Option<Vec<usize>>,
    /// One entry per thread.
    pub placements: Vec<ThreadPlacement>,
    /// All algorithms on the model.
    pub comparison: ModelComparison,
}

/// Maps `threads` threads running `workloads` (contiguous blocks, see [`threads_in_blocks`])
/// with `algorithm`, and scores all algorithms plus `random_samples` random placements.
///
/// # Errors
/// [`MapError`] for zero threads, fewer threads than workloads or more threads than PUs.
///
/// # Examples
///
/// ```
/// use parbench_mapper::{declared_kernel_mixes, map_report, Algorithm, MapError, Topology};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// let kernels = declared_kernel_mixes(&["fp-add"])?;
/// assert!(matches!(map_report(&t, &kernels, 5, Algorithm::RoundRobin, 0, 0), Err(MapError::TooManyThreads { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn map_report(
    topology: &Topology,
    workloads: &[NamedMix],
    threads: usize,
    algorithm: Algorithm,
    random_samples: usize,
    seed: u64,
) -> Result<MapReport, MapError> {
    let per_thread = threads_in_blocks(workloads, threads)?;
    let mixes: Vec<InstructionMix> = per_thread.iter().map(|t| t.mix).collect();
    let mapping = algorithm.map(topology, &mixes)?;
    let placements = per_thread
        .iter()
        .zip(mapping.pus())
        .enumerate()
        .map(|(thread, (workload, &pu))| {
            let found = pu.and_then(|pu| topology.pus().get(pu));
            ThreadPlacement {
                thread,
                workload: workload.name.clone(),
                pu,
                core: found.map(|p| p.core),
                cpu: found.map(|p| p.os_index),
            }
        })
        .collect();
    Ok(MapReport {
        topology: topology
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        algorithm: algorithm.to_string(),
        cpu_list: mapping.cpu_list(topology),
        placements,
        comparison: compare_on_model(topology, &per_thread, random_samples, seed)?,
    })
}

impl fmt::Display for MapReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "topology: {}", self.topology)?;
        writeln!(f, "mapping ({}):", self.algorithm)?;
        for placement in &self.placements {
            match (placement.core, placement.cpu) {
                (Some(core), Some(cpu)) => writeln!(
                    f,
                    "  thread {:>3} {:<10} -> core {core:>3} cpu {cpu:>3}",
                    placement.thread, placement.workload
                )?,
                _ => writeln!(
                    f,
                    "  thread {:>3} {:<10} -> not pinned",
                    placement.thread, placement.workload
                )?,
            }
        }
        write!(f, "{}", self.comparison)
    }
}

/// The model study: every algorithm and random placements for the SMT-bench kernels and for the
/// NAS-like applications ([`nas_like_mixes`]), each filling every PU of `topology` in contiguous
/// blocks of threads per workload.
///
/// # Errors
/// [`MapError::FewerThreadsThanWorkloads`] on topologies with fewer than 8 PUs.
///
/// # Examples
///
/// ```
/// let t = parbench_mapper::Topology::synthetic("pack:2 core:4 pu:2")?;
/// let study = parbench_mapper::study_report(&t, 20, 7)?;
/// assert_eq!(study.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn study_report(
    topology: &Topology,
    random_samples: usize,
    seed: u64,
) -> Result<Vec<ModelComparison>, MapError> {
    let threads = topology.pus().len();
    [
        ("SMT-bench kernels", smt_bench_mixes()),
        ("NAS-like applications", nas_like_mixes()),
    ]
    .into_iter()
    .map(|(name, workloads)| {
        let mut comparison = compare_on_model(
            topology,
            &threads_in_blocks(&workloads, threads)?,
            random_samples,
            seed,
        )?;
        comparison.title = format!("{name}, {}", comparison.title);
        Ok(comparison)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::InstrClass;

    fn score(comparison: &ModelComparison, algorithm: &str) -> f64 {
        comparison.score_of(algorithm).unwrap()
    }

    #[test]
    fn instruction_aware_is_no_worse_than_round_robin_on_adversarial_mixes() {
        // Adversarial for round-robin: each workload's threads are consecutive, so round-robin
        // stacks equal mixes on one core.
        let cases = [
            ("core:4 pu:2", smt_bench_mixes()[..4].to_vec(), 8),
            ("pack:2 core:4 pu:2", smt_bench_mixes(), 16),
            ("pack:1 core:8 pu:2", nas_like_mixes(), 16),
            ("pack:2 core:2 pu:4", nas_like_mixes(), 16),
            ("core:6 pu:2", nas_like_mixes()[..3].to_vec(), 12),
        ];
        for (description, workloads, threads) in cases {
            let t = Topology::synthetic(description).unwrap();
            let c = compare_on_model(&t, &threads_in_blocks(&workloads, threads).unwrap(), 0, 0)
                .unwrap();
            assert!(
                score(&c, "instruction-aware") <= score(&c, "round-robin"),
                "{description}: {c}"
            );
        }
    }

    #[test]
    fn instruction_aware_beats_random_mean_on_the_smt_bench_mixes() {
        let t = Topology::synthetic("pack:2 core:4 pu:2").unwrap();
        let study = study_report(&t, 200, 11).unwrap();
        let smt = &study[0];
        assert!(
            score(smt, "instruction-aware") < smt.random.as_ref().unwrap().mean,
            "{smt}"
        );
    }

    #[test]
    fn round_robin_stacks_equal_blocks_and_aware_separates_them() {
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        let fp = NamedMix {
            name: "fp".into(),
            mix: InstructionMix::new([(InstrClass::Fp, 1.0)]),
        };
        let int = NamedMix {
            name: "int".into(),
            mix: InstructionMix::new([(InstrClass::Int, 1.0)]),
        };
        let c = compare_on_model(&t, &threads_in_blocks(&[fp, int], 4).unwrap(), 0, 0).unwrap();
        assert_eq!(score(&c, "round-robin"), 2.0);
        assert_eq!(score(&c, "instruction-aware"), 0.0);
        assert_eq!(score(&c, "scatter"), 0.0);
        assert!(c.random.is_none());
        assert_eq!(c.title, "4 threads on 2 cores / 4 PUs");
        let one = Topology::synthetic("core:1 pu:1").unwrap();
        let alone = compare_on_model(&one, &threads_in_blocks(&[fp_mix()], 1).unwrap(), 0, 0);
        assert_eq!(alone.unwrap().title, "1 thread on 1 core / 1 PU");
    }

    fn fp_mix() -> NamedMix {
        NamedMix {
            name: "fp".into(),
            mix: InstructionMix::new([(InstrClass::Fp, 1.0)]),
        }
    }

    #[test]
    fn map_report_lists_cpus_and_all_scores() {
        let t = Topology::synthetic("pack:1 core:4 pu:2").unwrap();
        let kernels =
            crate::declared_kernel_mixes(&["fp-add", "int-add", "fp-mul", "load-dep"]).unwrap();
        let report = map_report(&t, &kernels, 8, Algorithm::RoundRobin, 5, 3).unwrap();
        assert_eq!(report.cpu_list, Some((0..8).collect()));
        let text = report.to_string();
        for name in Algorithm::NAMES {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
        assert!(text.contains("not pinned: the OS decides"));
        let json = serde_json::to_string(&report).unwrap();
        assert_eq!(serde_json::from_str::<MapReport>(&json).unwrap(), report);
    }
}
