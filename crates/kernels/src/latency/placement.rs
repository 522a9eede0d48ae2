//! Where the server's workers and the load generator run.
//!
//! A [`Placement`] names a configuration of the latency study — one worker (`single`), two workers
//! on two different cores (`cores`), two workers on SMT siblings of one core (`smt`), or workers
//! on an explicit CPU list (`cpus:LIST`) — and [`Placement::plan`] turns it into concrete CPUs for
//! a machine described by a [`CpuLayout`] (cores and their hardware threads; the CLI builds it
//! from the mapper's hwloc topology, tests write it by hand).
//!
//! The generator goes on a core that no worker uses, so that issuing requests does not steal
//! time from serving them. When every core hosts a worker (two workers on a two-core machine)
//! there is no such core; the plan then leaves the generator unpinned and says so in
//! [`PlacementPlan::note`], because its latencies then include that interference.

use std::fmt;
use std::str::FromStr;

use super::LatencyError;

/// The CPUs of a machine grouped by core: each inner list holds the OS CPU numbers of one core's
/// hardware threads (SMT siblings).
///
/// ```
/// use parbench_kernels::latency::CpuLayout;
///
/// let smt = CpuLayout::new(vec![vec![0, 2], vec![1, 3]]);
/// assert!(smt.has_smt_siblings());
/// assert!(!CpuLayout::one_thread_per_core(&[0, 1]).has_smt_siblings());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuLayout {
    cores: Vec<Vec<usize>>,
}

impl CpuLayout {
    /// A layout of `cores`, each a list of OS CPU numbers; empty cores are dropped.
    pub fn new(cores: Vec<Vec<usize>>) -> Self {
        CpuLayout {
            cores: cores.into_iter().filter(|pus| !pus.is_empty()).collect(),
        }
    }

    /// A machine without SMT: every CPU is its own core.
    pub fn one_thread_per_core(cpus: &[usize]) -> Self {
        CpuLayout::new(cpus.iter().map(|&cpu| vec![cpu]).collect())
    }

    /// The cores, each a list of OS CPU numbers.
    pub fn cores(&self) -> &[Vec<usize>] {
        &self.cores
    }

    /// Whether some core has more than one hardware thread.
    pub fn has_smt_siblings(&self) -> bool {
        self.cores.iter().any(|pus| pus.len() > 1)
    }

    fn core_of(&self, cpu: usize) -> Option<usize> {
        self.cores.iter().position(|pus| pus.contains(&cpu))
    }

    fn all_cpus(&self) -> Vec<usize> {
        self.cores.iter().flatten().copied().collect()
    }
}

/// A server configuration of the latency study.
///
/// ```
/// use parbench_kernels::latency::Placement;
///
/// assert_eq!("cores".parse::<Placement>()?, Placement::Cores);
/// assert_eq!("cpus:0,1".parse::<Placement>()?, Placement::Cpus(vec![0, 1]));
/// assert!("numa".parse::<Placement>().unwrap_err().to_string().contains("single, cores, smt"));
/// # Ok::<(), parbench_kernels::latency::LatencyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// One worker thread.
    Single,
    /// Two worker threads on two different cores.
    Cores,
    /// Two worker threads on two SMT siblings of one core.
    Smt,
    /// One worker thread per listed OS CPU.
    Cpus(Vec<usize>),
}

/// The placement names `FromStr` accepts, for error messages and help.
pub const PLACEMENT_NAMES: &str = "single, cores, smt, cpus:LIST (e.g. cpus:0,1)";

impl FromStr for Placement {
    type Err = LatencyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || LatencyError::UnknownPlacement {
            name: text.to_owned(),
            valid: PLACEMENT_NAMES,
        };
        match text.trim() {
            "single" => Ok(Placement::Single),
            "cores" => Ok(Placement::Cores),
            "smt" => Ok(Placement::Smt),
            other => {
                let list = other.strip_prefix("cpus:").ok_or_else(unknown)?;
                let cpus: Vec<usize> = list
                    .split(',')
                    .map(|cpu| cpu.trim().parse().map_err(|_| unknown()))
                    .collect::<Result<_, _>>()?;
                let mut distinct = cpus.clone();
                distinct.sort_unstable();
                distinct.dedup();
                if distinct.len() != cpus.len() {
                    return Err(unknown());
                }
                Ok(Placement::Cpus(cpus))
            }
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Single => f.write_str("single"),
            Placement::Cores => f.write_str("cores"),
            Placement::Smt => f.write_str("smt"),
            Placement::Cpus(cpus) => {
                let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
                write!(f, "cpus:{}", list.join(","))
            }
        }
    }
}

/// Concrete CPUs for one placement on one machine.
///
/// ```
/// use parbench_kernels::latency::{CpuLayout, Placement};
///
/// let plan = Placement::Single.plan(&CpuLayout::one_thread_per_core(&[0, 1]))?;
/// assert_eq!((plan.worker_cpus.as_slice(), plan.generator_cpu), (&[0][..], Some(1)));
/// # Ok::<(), parbench_kernels::latency::LatencyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementPlan {
    /// The placement's name, e.g. `"cores"`.
    pub name: String,
    /// The OS CPU of each worker thread (one worker per entry).
    pub worker_cpus: Vec<usize>,
    /// The generator's CPU: on a core without workers, `None` when there is no such core.
    pub generator_cpu: Option<usize>,
    /// Why the plan falls short of the placement's intent (the unpinned generator), if it does.
    pub note: Option<String>,
}

impl Placement {
    /// The CPUs of this placement on `layout`.
    ///
    /// ```
    /// use parbench_kernels::latency::{CpuLayout, LatencyError, Placement};
    ///
    /// let two_cores = CpuLayout::one_thread_per_core(&[0, 1]);
    /// let cores = Placement::Cores.plan(&two_cores)?;
    /// assert_eq!(cores.worker_cpus, vec![0, 1]);
    /// assert!(cores.note.unwrap().contains("no spare core"));
    /// assert!(matches!(Placement::Smt.plan(&two_cores), Err(LatencyError::NoSmtSiblings)));
    /// let siblings = Placement::Smt.plan(&CpuLayout::new(vec![vec![0, 2], vec![1, 3]]))?;
    /// assert_eq!((siblings.worker_cpus, siblings.generator_cpu), (vec![0, 2], Some(1)));
    /// # Ok::<(), LatencyError>(())
    /// ```
    ///
    /// # Errors
    /// [`LatencyError::NoSmtSiblings`] for `smt` on a machine without SMT,
    /// [`LatencyError::NotEnoughCores`] for `cores` on one core, [`LatencyError::UnknownCpu`] for
    /// a listed CPU the layout does not have.
    pub fn plan(&self, layout: &CpuLayout) -> Result<PlacementPlan, LatencyError> {
        let cores = layout.cores();
        let worker_cpus = match self {
            Placement::Single => vec![cores.first().ok_or(LatencyError::NoCpus)?[0]],
            Placement::Cores => match cores {
                [first, second, ..] => vec![first[0], second[0]],
                _ => {
                    return Err(LatencyError::NotEnoughCores {
                        placement: self.to_string(),
                        needed: 2,
                        available: cores.len(),
                    });
                }
            },
            Placement::Smt => {
                let core = cores
                    .iter()
                    .find(|pus| pus.len() > 1)
                    .ok_or(LatencyError::NoSmtSiblings)?;
                vec![core[0], core[1]]
            }
            Placement::Cpus(cpus) => {
                if let Some(&cpu) = cpus.iter().find(|&&cpu| layout.core_of(cpu).is_none()) {
                    let available: Vec<String> =
                        layout.all_cpus().iter().map(usize::to_string).collect();
                    return Err(LatencyError::UnknownCpu {
                        cpu,
                        available: available.join(","),
                    });
                }
                cpus.clone()
            }
        };
        let busy_cores: Vec<Option<usize>> =
            worker_cpus.iter().map(|&cpu| layout.core_of(cpu)).collect();
        let generator_cpu = (0..cores.len())
            .find(|core| !busy_cores.contains(&Some(*core)))
            .map(|core| cores[core][0]);
        let note = generator_cpu
            .is_none()
            .then(|| "no spare core: the generator shares CPUs with the workers".to_owned());
        Ok(PlacementPlan {
            name: self.to_string(),
            worker_cpus,
            generator_cpu,
            note,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_placements_are_rejected_with_the_valid_names() {
        for bad in ["", "numa", "cpus:", "cpus:0,x", "cpus:1,1", "Single"] {
            let error = bad.parse::<Placement>().unwrap_err().to_string();
            assert!(error.contains(PLACEMENT_NAMES), "{bad}: {error}");
        }
    }

    #[test]
    fn placement_names_round_trip() {
        for name in ["single", "cores", "smt", "cpus:3,1"] {
            assert_eq!(name.parse::<Placement>().unwrap().to_string(), name);
        }
    }

    #[test]
    fn generator_avoids_every_worker_core() {
        let layout = CpuLayout::new(vec![vec![0, 4], vec![1, 5], vec![2, 6]]);
        let plan = Placement::Cpus(vec![4, 1]).plan(&layout).unwrap();
        assert_eq!(plan.generator_cpu, Some(2));
        assert_eq!(plan.note, None);
        let plan = Placement::Cpus(vec![0, 5, 6]).plan(&layout).unwrap();
        assert_eq!(plan.generator_cpu, None);
        assert!(plan.note.unwrap().contains("no spare core"));
    }

    #[test]
    fn placements_the_machine_cannot_host_are_errors() {
        let one_core = CpuLayout::one_thread_per_core(&[0]);
        assert!(matches!(
            Placement::Cores.plan(&one_core),
            Err(LatencyError::NotEnoughCores {
                needed: 2,
                available: 1,
                ..
            })
        ));
        assert!(matches!(
            Placement::Cpus(vec![0, 9]).plan(&one_core),
            Err(LatencyError::UnknownCpu { cpu: 9, .. })
        ));
        assert!(matches!(
            Placement::Single.plan(&CpuLayout::new(vec![])),
            Err(LatencyError::NoCpus)
        ));
    }
}
