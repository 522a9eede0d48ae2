//! A contention model for comparing mappings without running them.
//!
//! Two threads on one SMT core compete for an execution unit in proportion to how much both use
//! it, so the model scores a pair by the **overlap** of their instruction-class shares,
//! `Σ_class min(share_a, share_b)`: 1 for identical mixes, 0 for disjoint ones. A core's score
//! is the sum over all pairs of threads placed on it (threads alone on a core score 0), and a
//! mapping's score is the sum over cores. Lower is better. The model ignores memory bandwidth,
//! caches and frequency, and is meant to rank mappings on the same topology and mixes, not to
//! predict speed-ups.

use serde::{Deserialize, Serialize};

use crate::mapping::Mapping;
use crate::mix::InstructionMix;
use crate::topology::Topology;

/// The overlap of two mixes: `Σ_class min(share_a, share_b)`, between 0 and 1.
///
/// ```
/// use parbench_mapper::{overlap, InstrClass, InstructionMix};
/// let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
/// let half = InstructionMix::new([(InstrClass::Fp, 1.0), (InstrClass::Int, 1.0)]);
/// assert_eq!(overlap(&fp, &fp), 1.0);
/// assert_eq!(overlap(&fp, &half), 0.5);
/// ```
pub fn overlap(a: &InstructionMix, b: &InstructionMix) -> f64 {
    a.shares()
        .iter()
        .zip(b.shares())
        .map(|(x, y)| x.min(y))
        .sum()
}

/// A mapping's model score: the total and each occupied core's part.
///
/// ```
/// use parbench_mapper::{contention, smt_bench_mixes, Algorithm, Topology};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// let fp = smt_bench_mixes()[0].mix;
/// let mapping = Algorithm::RoundRobin.map(&t, &[fp; 4])?;
/// let score = contention(&t, &mapping, &[fp; 4]).unwrap();
/// assert_eq!(score.total, 2.0);
/// assert_eq!(score.per_core, vec![(0, 1.0), (1, 1.0)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentionScore {
    /// Sum over cores.
    pub total: f64,
    /// `(core index, score)` for every core holding at least one thread.
    pub per_core: Vec<(usize, f64)>,
}

/// Scores a mapping of `mixes` (one per thread); `None` for an unpinned mapping, where the
/// model cannot know which threads share a core.
///
/// ```
/// use parbench_mapper::{contention, Algorithm, InstructionMix, Topology};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// let mixes = [InstructionMix::default(); 2];
/// assert!(contention(&t, &Algorithm::Os.map(&t, &mixes)?, &mixes).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn contention(
    topology: &Topology,
    mapping: &Mapping,
    mixes: &[InstructionMix],
) -> Option<ContentionScore> {
    let mut threads_on_core: Vec<Vec<usize>> = vec![Vec::new(); topology.cores().len()];
    for (thread, pu) in mapping.pus().iter().enumerate() {
        let core = topology.pus().get((*pu)?)?.core;
        threads_on_core[core].push(thread);
    }
    let per_core: Vec<(usize, f64)> = threads_on_core
        .iter()
        .enumerate()
        .filter(|(_, threads)| !threads.is_empty())
        .map(|(core, threads)| {
            let pairs = threads
                .iter()
                .enumerate()
                .flat_map(|(i, &a)| threads[i + 1..].iter().map(move |&b| (a, b)));
            // fold from +0.0, not sum(): `Sum for f64` starts at -0.0, so a core without pairs
            // would score -0.0 and print as "-0.000".
            let score = pairs
                .filter_map(|(a, b)| Some(overlap(mixes.get(a)?, mixes.get(b)?)))
                .fold(0.0, |total, pair| total + pair);
            (core, score)
        })
        .collect();
    Some(ContentionScore {
        total: per_core.iter().fold(0.0, |total, (_, score)| total + score),
        per_core,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Algorithm;
    use crate::mix::InstrClass;

    #[test]
    fn threads_alone_on_cores_score_zero() {
        let t = Topology::synthetic("core:4 pu:2").unwrap();
        let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
        let mapping = Algorithm::Scatter.map(&t, &[fp; 4]).unwrap();
        let score = contention(&t, &mapping, &[fp; 4]).unwrap();
        assert_eq!(score.total, 0.0);
        // Positive zero, so reports print "0.000" and not "-0.000".
        assert!(score.total.is_sign_positive());
        assert!(score.per_core.iter().all(|(_, s)| s.is_sign_positive()));
    }

    #[test]
    fn three_identical_threads_on_one_core_score_three_pairs() {
        let t = Topology::synthetic("core:1 pu:4").unwrap();
        let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
        let mapping = Algorithm::RoundRobin.map(&t, &[int; 3]).unwrap();
        assert_eq!(contention(&t, &mapping, &[int; 3]).unwrap().total, 3.0);
    }
}
