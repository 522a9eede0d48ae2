//! Thread → PU mappings.
//!
//! A mapping takes one [`InstructionMix`] per software thread and a [`Topology`] and decides
//! which processing unit each thread is pinned to. The algorithms differ only in *which PUs
//! share a core*:
//!
//! - [`Algorithm::InstructionAware`] — the SMT study's Algorithm 1, generalised and refined
//!   (see [`instruction_aware`]): co-locate threads whose mixes stress different units.
//! - [`Algorithm::Algorithm1`] — the study's Algorithm 1 exactly as published: sort the threads
//!   by one instruction class, put the maximum and the minimum on the next core, repeat.
//! - [`Algorithm::RoundRobin`] — the study's baseline as the study defines it: threads in order
//!   onto PUs in topology (logical) order, filling a core's siblings before the next core, so the
//!   consecutive threads of one application share a core. `compact` is accepted as another name
//!   for it (what OpenMP and the scheduler's `Pinning::Compact` call this placement).
//! - [`Algorithm::OsIndex`] — PUs in OS-number order (`taskset`'s numbering). The same as
//!   round-robin where OS numbers follow the hierarchy (all synthetic topologies without explicit
//!   `indexes=`); on machines that number core by core first (CPU 0 and CPU N siblings) it spreads
//!   over cores instead.
//! - [`Algorithm::Scatter`] — one thread per core (alternating packages) before any sibling.
//! - [`Algorithm::Random`] — a seeded uniform placement, the model report's reference.
//! - [`Algorithm::Os`] — no pinning; the scheduler of the operating system decides.
//!
//! Every pinned mapping made by [`Algorithm::map`] uses each PU at most once; more threads than
//! PUs is an error rather than silent oversubscription, because the contention model has no
//! meaning for it. [`Algorithm::map_sharing`] is the explicit exception for running programs
//! (`corun`), whose thread counts nobody chose: PUs then take several threads, evenly.

pub mod instruction_aware;
mod placement;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::mix::{InstrClass, InstructionMix, NamedMix};
use crate::topology::Topology;

/// Errors while building a mapping or its inputs.
///
/// ```
/// use parbench_mapper::{Algorithm, InstructionMix, MapError, Topology};
/// let t = Topology::synthetic("core:1 pu:2")?;
/// let err = Algorithm::RoundRobin.map(&t, &[InstructionMix::default(); 3]).unwrap_err();
/// assert_eq!(err.to_string(), "3 threads do not fit on 2 PUs (one thread per PU; CPUs 0-1)");
/// let one = Topology::synthetic("core:1 pu:1")?;
/// let err = Algorithm::RoundRobin.map(&one, &[InstructionMix::default(); 2]).unwrap_err();
/// assert_eq!(err.to_string(), "2 threads do not fit on 1 PU (one thread per PU; CPU 0)");
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// Nothing to map.
    #[error("the number of threads must be at least 1")]
    NoThreads,
    /// An empty list of workloads to give threads to.
    #[error("no workloads to map: give at least one")]
    NoWorkloads,
    /// More threads than PUs. On this machine's topology the CPUs are those the process may use
    /// (see [`Topology::this_system`]), so the message names what a `taskset` or a container
    /// left.
    #[error(
        "{threads} threads do not fit on {pus} PU{} (one thread per PU; CPU{} {})",
        if *pus == 1 { "" } else { "s" },
        if cpus.len() == 1 { "" } else { "s" },
        crate::topology::cpu_ranges(cpus)
    )]
    TooManyThreads {
        /// Threads requested.
        threads: usize,
        /// PUs in the topology.
        pus: usize,
        /// The OS CPU numbers of those PUs, ascending.
        cpus: Vec<usize>,
    },
    /// An algorithm name that does not exist.
    #[error("unknown mapping algorithm {name:?}; valid: {}, compact (= round-robin), algorithm1:CLASS with CLASS one of {}", Algorithm::NAMES.join(", "), crate::mix::InstrClass::ALL.map(|c| c.name()).join(", "))]
    UnknownAlgorithm {
        /// The name given.
        name: String,
    },
    /// A kernel name without a declared instruction mix.
    #[error("unknown kernel {name:?}; valid: {}", InstructionMix::declared_kernel_names().join(", "))]
    UnknownKernel {
        /// The name given.
        name: String,
    },
    /// Fewer threads than workloads to give them to.
    #[error(
        "{} cannot run {} (need at least one thread each)",
        crate::report::plural(*threads, "thread"),
        crate::report::plural(*workloads, "workload")
    )]
    FewerThreadsThanWorkloads {
        /// Threads requested.
        threads: usize,
        /// Workloads listed.
        workloads: usize,
    },
}

/// A mapping algorithm.
///
/// ```
/// use parbench_mapper::Algorithm;
/// assert_eq!("scatter".parse::<Algorithm>()?, Algorithm::Scatter);
/// assert_eq!(Algorithm::InstructionAware.to_string(), "instruction-aware");
/// assert!("fastest".parse::<Algorithm>().is_err());
/// # Ok::<(), parbench_mapper::MapError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Algorithm {
    /// Pair threads with complementary instruction mixes on each core (refined Algorithm 1).
    InstructionAware,
    /// The study's Algorithm 1 as published, sorting by `class` (`None`: the class whose share
    /// varies most across the threads).
    Algorithm1 {
        /// The instruction class threads are sorted by.
        class: Option<InstrClass>,
    },
    /// The study's round-robin: PUs in topology order, a core's siblings first.
    RoundRobin,
    /// PUs in OS-number order.
    OsIndex,
    /// One thread per core before any sibling.
    Scatter,
    /// A uniform random placement from a seed.
    Random {
        /// Seed of the deterministic generator.
        seed: u64,
    },
    /// No pinning.
    Os,
}

impl Algorithm {
    /// Names accepted by [`str::parse`], in report order.
    ///
    /// ```
    /// assert_eq!(parbench_mapper::Algorithm::NAMES[0], "instruction-aware");
    /// ```
    pub const NAMES: [&'static str; 6] = [
        "instruction-aware",
        "algorithm1",
        "round-robin",
        "os-index",
        "scatter",
        "os",
    ];

    /// The named (non-random) algorithms, in report order.
    ///
    /// ```
    /// use parbench_mapper::Algorithm;
    /// let names: Vec<String> = Algorithm::NAMED.iter().map(|a| a.to_string()).collect();
    /// assert_eq!(names, Algorithm::NAMES);
    /// ```
    pub const NAMED: [Algorithm; 6] = [
        Algorithm::InstructionAware,
        Algorithm::Algorithm1 { class: None },
        Algorithm::RoundRobin,
        Algorithm::OsIndex,
        Algorithm::Scatter,
        Algorithm::Os,
    ];

    /// Maps one thread per entry of `mixes` onto `topology`.
    ///
    /// # Errors
    /// [`MapError::NoThreads`] for an empty slice, [`MapError::TooManyThreads`] when the threads
    /// outnumber the PUs (not checked for [`Algorithm::Os`], which pins nothing).
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:2 pu:2")?;
    /// let mixes = vec![InstructionMix::default(); 3];
    /// let mapping = Algorithm::Scatter.map(&t, &mixes)?;
    /// assert_eq!(mapping.pus(), &[Some(0), Some(2), Some(1)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map(self, topology: &Topology, mixes: &[InstructionMix]) -> Result<Mapping, MapError> {
        let threads = mixes.len();
        if threads == 0 {
            return Err(MapError::NoThreads);
        }
        if self == Algorithm::Os {
            return Ok(Mapping {
                algorithm: self,
                pus: vec![None; threads],
            });
        }
        let available = topology.pus().len();
        if threads > available {
            return Err(MapError::TooManyThreads {
                threads,
                pus: available,
                cpus: topology.cpus(),
            });
        }
        Ok(Mapping {
            algorithm: self,
            pus: self
                .place(topology, mixes, 1)
                .into_iter()
                .map(Some)
                .collect(),
        })
    }

    /// Like [`map`](Self::map), but when the threads outnumber the PUs every PU takes several of
    /// them instead of failing: threads are spread as evenly as possible (no PU gets two more
    /// than another), as `corun` needs when the programs it maps start more threads than the
    /// machine has PUs. The mix-oblivious algorithms go round their PU order again; the
    /// instruction-aware one lets each core take up to `rounds × PUs` threads, blending heavy
    /// and light users as before, and deals a core's group to its PUs in turn. With no more
    /// threads than PUs the result equals [`map`](Self::map).
    ///
    /// # Errors
    /// [`MapError::NoThreads`] for an empty slice.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:2 pu:1")?;
    /// let mapping = Algorithm::RoundRobin.map_sharing(&t, &[InstructionMix::default(); 5])?;
    /// assert_eq!(mapping.cpu_list(&t), Some(vec![0, 1, 0, 1, 0]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map_sharing(
        self,
        topology: &Topology,
        mixes: &[InstructionMix],
    ) -> Result<Mapping, MapError> {
        let available = topology.pus().len();
        if self == Algorithm::Os || mixes.len() <= available || available == 0 {
            return self.map(topology, mixes);
        }
        let rounds = mixes.len().div_ceil(available);
        Ok(Mapping {
            algorithm: self,
            pus: self
                .place(topology, mixes, rounds)
                .into_iter()
                .map(Some)
                .collect(),
        })
    }

    /// PU per thread for a pinned algorithm, each PU taking at most `rounds` threads; the caller
    /// has checked `1 <= mixes.len() <= rounds × PUs`.
    fn place(self, topology: &Topology, mixes: &[InstructionMix], rounds: usize) -> Vec<usize> {
        let order: Vec<usize> = match self {
            Algorithm::InstructionAware => return instruction_aware::map(topology, mixes, rounds),
            Algorithm::Algorithm1 { class } => {
                return instruction_aware::map_algorithm1(topology, mixes, class, rounds);
            }
            Algorithm::RoundRobin => placement::logical_order(topology),
            Algorithm::OsIndex => placement::os_order(topology),
            Algorithm::Scatter => placement::scatter_order(topology),
            Algorithm::Random { seed } => placement::random_order(topology, seed),
            Algorithm::Os => Vec::new(),
        };
        order.into_iter().cycle().take(mixes.len()).collect()
    }
}

impl std::str::FromStr for Algorithm {
    type Err = MapError;

    /// A name of [`Algorithm::NAMES`], `compact` (another name for round-robin), or
    /// `algorithm1:CLASS` (e.g. `algorithm1:fp`) to choose the class Algorithm 1 sorts by.
    ///
    /// ```
    /// use parbench_mapper::{Algorithm, InstrClass};
    /// assert_eq!("compact".parse::<Algorithm>()?, Algorithm::RoundRobin);
    /// let by_load = Algorithm::Algorithm1 { class: Some(InstrClass::Load) };
    /// assert_eq!("algorithm1:load".parse::<Algorithm>()?, by_load);
    /// assert_eq!(by_load.to_string(), "algorithm1:load");
    /// assert!("algorithm1:simd".parse::<Algorithm>().is_err());
    /// # Ok::<(), parbench_mapper::MapError>(())
    /// ```
    fn from_str(name: &str) -> Result<Self, MapError> {
        let unknown = || MapError::UnknownAlgorithm {
            name: name.to_owned(),
        };
        if name == "compact" {
            return Ok(Algorithm::RoundRobin);
        }
        if let Some(class) = name.strip_prefix("algorithm1:") {
            return class
                .parse::<InstrClass>()
                .map(|class| Algorithm::Algorithm1 { class: Some(class) })
                .map_err(|_| unknown());
        }
        Algorithm::NAMED
            .into_iter()
            .find(|algorithm| algorithm.to_string() == name)
            .ok_or_else(unknown)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::InstructionAware => f.write_str("instruction-aware"),
            Algorithm::Algorithm1 { class: None } => f.write_str("algorithm1"),
            Algorithm::Algorithm1 { class: Some(class) } => {
                write!(f, "algorithm1:{}", class.name())
            }
            Algorithm::RoundRobin => f.write_str("round-robin"),
            Algorithm::OsIndex => f.write_str("os-index"),
            Algorithm::Scatter => f.write_str("scatter"),
            Algorithm::Random { seed } => write!(f, "random(seed {seed})"),
            Algorithm::Os => f.write_str("os"),
        }
    }
}

/// Which PU (logical index into [`Topology::pus`]) each thread runs on; `None` = not pinned.
///
/// ```
/// use parbench_mapper::{Algorithm, InstructionMix, Topology};
/// let t = Topology::synthetic("core:2 pu:2(indexes=0,2,1,3)")?;
/// let mapping = Algorithm::RoundRobin.map(&t, &[InstructionMix::default(); 2])?;
/// assert_eq!(mapping.pus(), &[Some(0), Some(1)]);
/// assert_eq!(mapping.cpu_list(&t), Some(vec![0, 2]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mapping {
    algorithm: Algorithm,
    pus: Vec<Option<usize>>,
}

impl Mapping {
    /// The algorithm that produced this mapping.
    ///
    /// ```
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:1 pu:1")?;
    /// assert_eq!(Algorithm::Os.map(&t, &[InstructionMix::default()])?.algorithm(), Algorithm::Os);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Per thread, its PU's logical index, or `None` when the OS places it.
    ///
    /// ```
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:2 pu:1")?;
    /// assert_eq!(Algorithm::Os.map(&t, &[InstructionMix::default()])?.pus(), &[None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pus(&self) -> &[Option<usize>] {
        &self.pus
    }

    /// The OS CPU numbers in thread order, ready for parbench-scheduler's
    /// `Pinning::Cpus(Vec<usize>)` or `taskset`; `None` for an unpinned ([`Algorithm::Os`]) mapping.
    /// Only meaningful for a topology that [is this system](Topology::is_this_system).
    ///
    /// ```
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:2 pu:2")?;
    /// let mapping = Algorithm::RoundRobin.map(&t, &[InstructionMix::default(); 3])?;
    /// assert_eq!(mapping.cpu_list(&t), Some(vec![0, 1, 2]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cpu_list(&self, topology: &Topology) -> Option<Vec<usize>> {
        self.pus
            .iter()
            .map(|pu| pu.and_then(|pu| topology.pus().get(pu).map(|found| found.os_index)))
            .collect()
    }
}

/// Expands workloads into one mix per thread: `threads` threads split into contiguous blocks,
/// one block per workload (the first `threads % workloads` blocks get one extra thread), as an
/// application's team of threads has consecutive ids.
///
/// # Errors
/// [`MapError::NoWorkloads`] for an empty `workloads`, [`MapError::NoThreads`] for zero
/// threads, [`MapError::FewerThreadsThanWorkloads`] when some workload would get no thread.
///
/// # Examples
///
/// ```
/// use parbench_mapper::{smt_bench_mixes, threads_in_blocks};
/// let mixes = smt_bench_mixes();
/// let threads = threads_in_blocks(&mixes[..2], 5)?;
/// let names: Vec<&str> = threads.iter().map(|t| t.name.as_str()).collect();
/// assert_eq!(names, ["fp-add", "fp-add", "fp-add", "fp-mul", "fp-mul"]);
/// # Ok::<(), parbench_mapper::MapError>(())
/// ```
pub fn threads_in_blocks(
    workloads: &[NamedMix],
    threads: usize,
) -> Result<Vec<NamedMix>, MapError> {
    // Checked first: with no workloads the thread count is beside the point ("8 threads cannot
    // run 0 workloads" was the message).
    if workloads.is_empty() {
        return Err(MapError::NoWorkloads);
    }
    if threads == 0 {
        return Err(MapError::NoThreads);
    }
    if threads < workloads.len() {
        return Err(MapError::FewerThreadsThanWorkloads {
            threads,
            workloads: workloads.len(),
        });
    }
    let base = threads / workloads.len();
    let extra = threads % workloads.len();
    Ok(workloads
        .iter()
        .enumerate()
        .flat_map(|(index, workload)| {
            std::iter::repeat_n(workload.clone(), base + usize::from(index < extra))
        })
        .collect())
}

/// Looks up the declared mix of each kernel name.
///
/// # Errors
/// [`MapError::UnknownKernel`] (listing the valid names) for a name without a declaration.
///
/// # Examples
///
/// ```
/// let mixes = parbench_mapper::declared_kernel_mixes(&["fp-add", "load-dep"])?;
/// assert_eq!(mixes[1].name, "load-dep");
/// assert!(parbench_mapper::declared_kernel_mixes(&["nope"]).is_err());
/// # Ok::<(), parbench_mapper::MapError>(())
/// ```
pub fn declared_kernel_mixes<S: AsRef<str>>(names: &[S]) -> Result<Vec<NamedMix>, MapError> {
    names
        .iter()
        .map(|name| {
            let name = name.as_ref();
            InstructionMix::declared_for_kernel(name)
                .map(|mix| NamedMix {
                    name: name.to_owned(),
                    mix,
                })
                .ok_or_else(|| MapError::UnknownKernel {
                    name: name.to_owned(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::InstrClass;

    fn uniform(threads: usize) -> Vec<InstructionMix> {
        vec![InstructionMix::default(); threads]
    }

    fn assorted(threads: usize) -> Vec<InstructionMix> {
        (0..threads)
            .map(|thread| {
                InstructionMix::new([(
                    InstrClass::ALL[thread % InstrClass::ALL.len()],
                    1.0 + thread as f64,
                )])
            })
            .collect()
    }

    #[test]
    fn every_mapping_maps_every_thread_to_a_distinct_pu() {
        for description in [
            "core:4 pu:2",
            "pack:2 core:3 pu:2",
            "pack:2 core:2 pu:4",
            "core:3 pu:1",
        ] {
            let t = Topology::synthetic(description).unwrap();
            for threads in 1..=t.pus().len() {
                let mixes = assorted(threads);
                let algorithms = Algorithm::NAMED
                    .into_iter()
                    .chain([Algorithm::Random { seed: 7 }]);
                for algorithm in algorithms.filter(|a| *a != Algorithm::Os) {
                    let mapping = algorithm.map(&t, &mixes).unwrap();
                    let mut used: Vec<usize> = mapping.pus().iter().map(|pu| pu.unwrap()).collect();
                    assert_eq!(used.len(), threads, "{algorithm} on {description}");
                    used.sort_unstable();
                    used.dedup();
                    assert_eq!(
                        used.len(),
                        threads,
                        "{algorithm} reused a PU on {description}"
                    );
                    assert!(used.iter().all(|&pu| pu < t.pus().len()));
                }
            }
        }
    }

    #[test]
    fn sharing_spreads_threads_evenly_and_equals_map_when_they_fit() {
        for description in ["core:2 pu:1", "core:2 pu:2", "pack:2 core:2 pu:2"] {
            let t = Topology::synthetic(description).unwrap();
            let pus = t.pus().len();
            for threads in 1..=3 * pus + 1 {
                let mixes = assorted(threads);
                for algorithm in Algorithm::NAMED.into_iter().filter(|a| *a != Algorithm::Os) {
                    let shared = algorithm.map_sharing(&t, &mixes).unwrap();
                    if threads <= pus {
                        assert_eq!(shared, algorithm.map(&t, &mixes).unwrap());
                    }
                    let mut per_pu = vec![0usize; pus];
                    for pu in shared.pus() {
                        per_pu[pu.unwrap()] += 1;
                    }
                    let (low, high) = (per_pu.iter().min(), per_pu.iter().max());
                    assert!(
                        high.unwrap() - low.unwrap() <= 1,
                        "{algorithm} on {description} with {threads} threads: {per_pu:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn sharing_instruction_aware_pairs_unlike_mixes_on_each_core() {
        // 4 fp and 4 int threads on two single-PU cores: each core gets 2 fp + 2 int.
        let t = Topology::synthetic("core:2 pu:1").unwrap();
        let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
        let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
        let mixes = [fp, fp, fp, fp, int, int, int, int];
        let mapping = Algorithm::InstructionAware.map_sharing(&t, &mixes).unwrap();
        for pu in 0..2 {
            let fps = (0..8)
                .filter(|&th| mapping.pus()[th] == Some(pu) && mixes[th] == fp)
                .count();
            assert_eq!(fps, 2, "PU {pu}: {:?}", mapping.pus());
        }
        // Round-robin in thread order is blind to the mix but still even.
        let rr = Algorithm::RoundRobin.map_sharing(&t, &mixes).unwrap();
        assert_eq!(rr.cpu_list(&t).unwrap(), vec![0, 1, 0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn os_index_follows_os_numbers() {
        let t = Topology::synthetic("core:2 pu:2(indexes=0,2,1,3)").unwrap();
        let mapping = Algorithm::OsIndex.map(&t, &uniform(4)).unwrap();
        assert_eq!(mapping.pus(), &[Some(0), Some(2), Some(1), Some(3)]);
        assert_eq!(mapping.cpu_list(&t).unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn round_robin_puts_consecutive_threads_on_one_core_whatever_the_os_numbers() {
        // The study's round-robin: one application's consecutive threads share a core.
        let t = Topology::synthetic("core:2 pu:2(indexes=0,2,1,3)").unwrap();
        let mapping = Algorithm::RoundRobin.map(&t, &uniform(4)).unwrap();
        assert_eq!(mapping.pus(), &[Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(mapping.cpu_list(&t).unwrap(), vec![0, 2, 1, 3]);
        let core = |thread: usize| t.pus()[mapping.pus()[thread].unwrap()].core;
        assert_eq!((core(0), core(1), core(2), core(3)), (0, 0, 1, 1));
        assert_eq!(
            "compact".parse::<Algorithm>().unwrap(),
            Algorithm::RoundRobin
        );
    }

    #[test]
    fn round_robin_and_os_index_agree_when_os_numbers_follow_the_hierarchy() {
        let t = Topology::synthetic("pack:1 core:4 pu:2").unwrap();
        let rr = Algorithm::RoundRobin.map(&t, &uniform(8)).unwrap();
        assert_eq!(rr.cpu_list(&t).unwrap(), vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(
            Algorithm::OsIndex.map(&t, &uniform(8)).unwrap().pus(),
            rr.pus()
        );
    }

    #[test]
    fn unknown_names_list_every_form() {
        let message = "best".parse::<Algorithm>().unwrap_err().to_string();
        for needle in [
            "algorithm1",
            "os-index",
            "compact",
            "algorithm1:CLASS",
            "store",
        ] {
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn scatter_uses_every_core_before_siblings_alternating_packages() {
        let t = Topology::synthetic("pack:2 core:2 pu:2").unwrap();
        let mapping = Algorithm::Scatter.map(&t, &uniform(8)).unwrap();
        assert_eq!(mapping.cpu_list(&t).unwrap(), vec![0, 4, 2, 6, 1, 5, 3, 7]);
    }

    #[test]
    fn os_mapping_pins_nothing_and_has_no_cpu_list() {
        let t = Topology::synthetic("core:2 pu:1").unwrap();
        let mapping = Algorithm::Os.map(&t, &uniform(5)).unwrap();
        assert_eq!(mapping.pus(), &[None; 5]);
        assert_eq!(mapping.cpu_list(&t), None);
    }

    #[test]
    fn random_is_deterministic_per_seed() {
        let t = Topology::synthetic("core:8 pu:2").unwrap();
        let a = Algorithm::Random { seed: 3 }.map(&t, &uniform(16)).unwrap();
        let b = Algorithm::Random { seed: 3 }.map(&t, &uniform(16)).unwrap();
        let c = Algorithm::Random { seed: 4 }.map(&t, &uniform(16)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.pus(), c.pus());
    }

    #[test]
    fn bad_thread_counts_are_errors() {
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        assert_eq!(Algorithm::RoundRobin.map(&t, &[]), Err(MapError::NoThreads));
        assert_eq!(
            Algorithm::InstructionAware.map(&t, &uniform(5)),
            Err(MapError::TooManyThreads {
                threads: 5,
                pus: 4,
                cpus: vec![0, 1, 2, 3]
            })
        );
        assert!(matches!(
            threads_in_blocks(&crate::smt_bench_mixes(), 3),
            Err(MapError::FewerThreadsThanWorkloads {
                threads: 3,
                workloads: 8
            })
        ));
        assert_eq!(
            threads_in_blocks(&crate::smt_bench_mixes()[..2], 1)
                .unwrap_err()
                .to_string(),
            "1 thread cannot run 2 workloads (need at least one thread each)"
        );
        for threads in [0, 8] {
            let empty = threads_in_blocks(&[], threads);
            assert_eq!(empty, Err(MapError::NoWorkloads), "{threads} threads");
            assert_eq!(
                empty.unwrap_err().to_string(),
                "no workloads to map: give at least one"
            );
        }
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let message = "best".parse::<Algorithm>().unwrap_err().to_string();
        assert!(
            message.contains("instruction-aware, algorithm1, round-robin, os-index, scatter, os"),
            "{message}"
        );
        let message = declared_kernel_mixes(&["fp-sqrt"]).unwrap_err().to_string();
        assert!(message.contains("load-dep"), "{message}");
    }
}
