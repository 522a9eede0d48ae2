//! The machine's shape: packages, NUMA nodes, cores and their processing units.
//!
//! hwloc (through `hwlocality`) discovers the hierarchy once; [`Topology`] then copies the few
//! facts the mapper needs into plain vectors. Copying decouples every algorithm in this crate
//! from hwloc's object graph and lifetimes, makes a topology cheap to clone, share between
//! threads and compare in tests, and lets a synthetic or XML topology (a machine you do not
//! have) flow through exactly the same code as the machine you run on.
//!
//! Indices: every [`Pu`], [`Core`], [`Package`] and [`NumaNode`] is addressed by its position in
//! the topology's vectors, which follows hwloc's *logical* order (depth-first through the
//! hierarchy, so the PUs of one core are adjacent). The operating system's numbering
//! (`os_index`, what `taskset` and `sched_setaffinity` take) is kept alongside; on many x86
//! machines it interleaves cores (CPU 0 and CPU N are siblings), which is why `RoundRobin` and
//! `Compact` mappings can differ.
//!
//! Binding a thread is only meaningful when the topology describes this machine
//! ([`Topology::is_this_system`]); for synthetic and XML topologies [`Topology::bind_current_thread`]
//! is a no-op that reports [`Binding::NotThisSystem`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use hwlocality::object::types::ObjectType;
use hwlocality::object::{TopologyObject, TopologyObjectID};
use hwlocality::topology::builder::BuildFlags;
use serde::{Deserialize, Serialize};

use crate::report::plural;

mod interleaving;

/// Errors while building or using a [`Topology`].
///
/// ```
/// let err = parbench_mapper::Topology::synthetic("pack:x").unwrap_err();
/// assert!(err.to_string().starts_with("invalid synthetic topology description"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// hwloc could not discover this machine.
    #[error("cannot discover this machine's topology: {reason}")]
    Discovery {
        /// hwloc's explanation.
        reason: String,
    },
    /// The synthetic description describes more PUs than [`MAX_SYNTHETIC_PUS`].
    #[error(
        "synthetic topology {description:?} has {pus} PUs; at most {max} are supported",
        max = MAX_SYNTHETIC_PUS
    )]
    SyntheticTooLarge {
        /// The description.
        description: String,
        /// Its PUs (the product of its levels' arities; saturated at `u64::MAX`).
        pus: u64,
    },
    /// An `indexes=` attribute of a synthetic description that hwloc would ignore or misapply
    /// (it accepts such descriptions silently, numbering the level its own way or merging PUs).
    #[error(
        "invalid indexes={indexes} of level {level:?} in synthetic topology {description:?}: {problem}"
    )]
    SyntheticIndexes {
        /// The description.
        description: String,
        /// The level the attribute belongs to, as written (e.g. `pu:2`).
        level: String,
        /// The attribute's value.
        indexes: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The synthetic description was rejected by hwloc.
    #[error(
        "invalid synthetic topology description {description:?} (expected e.g. \"pack:2 core:4 pu:2\")"
    )]
    Synthetic {
        /// The rejected description.
        description: String,
    },
    /// The XML file could not be read or is not an hwloc topology.
    #[error("cannot load topology XML file {}: {reason}", path.display())]
    Xml {
        /// The file that failed.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The topology has no processing unit at all.
    #[error("topology has no processing units")]
    NoProcessingUnits,
    /// A topology argument did not have one of the accepted forms.
    #[error(
        "invalid topology {argument:?}: expected \"this\", \"synthetic:DESCRIPTION\" or \"xml:FILE\""
    )]
    BadArgument {
        /// The argument as given.
        argument: String,
    },
    /// A PU index outside the topology.
    #[error("PU index {pu} is out of range (topology has {})", plural(*pus, "PU"))]
    PuOutOfRange {
        /// The index asked for.
        pu: usize,
        /// How many PUs exist.
        pus: usize,
    },
    /// The operating system refused to bind the thread.
    #[error("the operating system refused to bind the current thread to CPU {os_index}")]
    BindRefused {
        /// The OS index of the PU.
        os_index: usize,
    },
}

/// Where a topology came from; decides whether binding can have an effect.
///
/// ```
/// use parbench_mapper::{Topology, TopologySource};
/// let t = Topology::synthetic("core:2 pu:1")?;
/// assert!(matches!(t.source(), TopologySource::Synthetic(_)));
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopologySource {
    /// Discovered from the machine this process runs on.
    ThisSystem,
    /// Built from an hwloc synthetic description.
    Synthetic(String),
    /// Loaded from an hwloc XML export.
    Xml(PathBuf),
}

/// A processing unit (hardware thread): what a software thread is pinned to.
///
/// ```
/// let t = parbench_mapper::Topology::synthetic("core:2 pu:2")?;
/// assert_eq!(t.pus()[3].core, 1);
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pu {
    /// The operating system's CPU number (for `sched_setaffinity`, `taskset`).
    pub os_index: usize,
    /// Index into [`Topology::cores`] of the core this PU belongs to.
    pub core: usize,
    /// Index into [`Topology::packages`].
    pub package: usize,
    /// Index into [`Topology::numa_nodes`], when hwloc reports a node covering this PU.
    pub numa_node: Option<usize>,
}

/// A core: the PUs listed here are SMT siblings sharing execution units.
///
/// ```
/// let t = parbench_mapper::Topology::synthetic("core:2 pu:2")?;
/// assert_eq!(t.cores()[1].pus, vec![2, 3]);
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Core {
    /// hwloc's OS index of the core, when known.
    pub os_index: Option<usize>,
    /// Index into [`Topology::packages`].
    pub package: usize,
    /// Indices into [`Topology::pus`], in logical order.
    pub pus: Vec<usize>,
}

/// A package (socket).
///
/// ```
/// let t = parbench_mapper::Topology::synthetic("pack:2 core:3 pu:1")?;
/// assert_eq!(t.packages()[1].cores, vec![3, 4, 5]);
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    /// hwloc's OS index of the package, when known.
    pub os_index: Option<usize>,
    /// Indices into [`Topology::cores`].
    pub cores: Vec<usize>,
}

/// A NUMA node and the PUs closest to its memory.
///
/// ```
/// let t = parbench_mapper::Topology::synthetic("pack:2 numa:1 core:2 pu:1")?;
/// assert_eq!(t.numa_nodes().len(), 2);
/// assert_eq!(t.numa_nodes()[1].pus, vec![2, 3]);
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    /// The OS index of the node.
    pub os_index: Option<usize>,
    /// Indices into [`Topology::pus`].
    pub pus: Vec<usize>,
}

/// Result of [`Topology::bind_current_thread`].
///
/// ```
/// use parbench_mapper::{Binding, Topology};
/// let t = Topology::synthetic("core:2 pu:2")?;
/// assert_eq!(t.bind_current_thread(0)?, Binding::NotThisSystem);
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// The current thread now runs only on the requested PU.
    Bound,
    /// Nothing was done: the topology does not describe this machine.
    NotThisSystem,
}

/// Packages, NUMA nodes, cores and PUs of a machine (this one, a synthetic one or one read from XML).
///
/// It serialises to JSON for reports but is deliberately not deserialisable: every index inside
/// is consistent by construction, which a hand-edited file could break.
///
/// ```
/// use parbench_mapper::Topology;
/// let t = Topology::synthetic("pack:2 core:4 pu:2")?;
/// assert_eq!((t.packages().len(), t.cores().len(), t.pus().len()), (2, 8, 16));
/// assert!(t.has_smt_siblings());
/// assert!(!t.is_this_system());
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    source: TopologySource,
    packages: Vec<Package>,
    numa_nodes: Vec<NumaNode>,
    cores: Vec<Core>,
    pus: Vec<Pu>,
}

impl Topology {
    /// Discovers the machine this process runs on, as far as the process may use it: PUs outside
    /// its CPU affinity (`taskset -c 0`, a container runtime's `sched_setaffinity`) or its cgroup's
    /// cpuset are left out, with the cores and packages left empty by that. Every mapping and pin
    /// of this crate takes its CPUs from a topology, so this is the one place that keeps them on
    /// allowed CPUs; [`cpus`](Self::cpus) lists them and [`MapError::TooManyThreads`] names them
    /// when a request does not fit.
    ///
    /// The affinity is the process's (hwloc's `HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING`: the
    /// union of its threads' affinities when this is called), so discover before pinning the
    /// only thread of a process, or the topology shrinks to its pin.
    ///
    /// [`MapError::TooManyThreads`]: crate::MapError::TooManyThreads
    ///
    /// # Errors
    /// [`TopologyError::Discovery`] when hwloc fails, [`TopologyError::NoProcessingUnits`] when it
    /// reports no PU.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = parbench_mapper::Topology::this_system()?;
    /// assert!(t.pus().len() >= 1);
    /// assert!(t.is_this_system());
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn this_system() -> Result<Self, TopologyError> {
        let failed = |reason: String| TopologyError::Discovery { reason };
        // hwloc leaves out the CPUs of other cgroups by itself, but not those outside the
        // process's affinity (`taskset`, a container runtime's sched_setaffinity): restricting
        // here keeps every mapping, pin and report of this crate on CPUs the process may use.
        let hw = hwlocality::Topology::builder()
            .with_flags(BuildFlags::ASSUME_THIS_SYSTEM | BuildFlags::RESTRICT_CPU_TO_THIS_PROCESS)
            .map_err(|e| failed(e.to_string()))?
            .build()
            .map_err(|e| failed(e.to_string()))?;
        Self::from_hwloc(&hw, TopologySource::ThisSystem)
    }

    /// Builds a topology from an hwloc synthetic description such as `"pack:2 core:4 pu:2"`.
    /// Binding threads on it is a no-op ([`Binding::NotThisSystem`]).
    ///
    /// # Errors
    /// [`TopologyError::Synthetic`] when hwloc rejects the description,
    /// [`TopologyError::SyntheticTooLarge`] when it has more than [`MAX_SYNTHETIC_PUS`] PUs
    /// (hwloc would build every one of them first), [`TopologyError::SyntheticIndexes`] for an
    /// `indexes=` attribute hwloc would ignore or misapply: an explicit list must give each
    /// object of its level (all of them, over the whole machine) a distinct number up to
    /// [`MAX_SYNTHETIC_OS_INDEX`]; an interleaving (`indexes=pack:core`, `indexes=2*4:1*2`) must be
    /// one hwloc applies and must give each object its own number (hwloc drops one it cannot
    /// apply without a word, and aborts the process on one naming a level below its own). An
    /// interleaving that numbers the level in order (`indexes=1*2:2*2`) is valid.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = parbench_mapper::Topology::synthetic("pack:1 core:4 pu:2")?;
    /// assert_eq!(t.cores()[0].pus.len(), 2);
    /// assert!(parbench_mapper::Topology::synthetic("pack:two").is_err());
    /// let huge = parbench_mapper::Topology::synthetic("pack:100000 core:100000 pu:100000");
    /// assert!(matches!(huge, Err(parbench_mapper::TopologyError::SyntheticTooLarge { .. })));
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn synthetic(description: &str) -> Result<Self, TopologyError> {
        let rejected = || TopologyError::Synthetic {
            description: description.to_owned(),
        };
        let pus = synthetic_pus(description);
        if pus > MAX_SYNTHETIC_PUS as u64 {
            return Err(TopologyError::SyntheticTooLarge {
                description: description.to_owned(),
                pus,
            });
        }
        let levels = synthetic_levels(description);
        let build = |description: &str| {
            hwlocality::Topology::builder()
                .from_synthetic(description)
                .map_err(|_| rejected())?
                .build()
                .map_err(|_| rejected())
        };
        let invalid = |level: &SyntheticLevel, indexes: &str, problem: String| {
            TopologyError::SyntheticIndexes {
                description: description.to_owned(),
                level: level.text.clone(),
                indexes: indexes.to_owned(),
                problem,
            }
        };
        let is_list = |indexes: &str| indexes.bytes().all(|b| b.is_ascii_digit() || b == b',');
        // Lists before hwloc sees them: a repeated NUMA node number aborts the process inside
        // hwloc (an assertion), repeated PU numbers merge PUs.
        for level in &levels {
            if let Some(indexes) = level.indexes.as_deref().filter(|i| is_list(i)) {
                check_index_list(indexes, level.objects)
                    .map_err(|problem| invalid(level, indexes, problem))?;
            }
        }
        // Interleavings too: one naming a level below its own makes hwloc abort the process.
        let mut in_order = vec![false; levels.len()];
        if let Some(model) = interleaving_model(&levels) {
            // The root's attributes, if any, come first as a level of no text: the machine.
            let root = usize::from(levels.first().is_some_and(|l| l.text.is_empty()));
            for (position, level) in levels.iter().enumerate() {
                let Some(indexes) = level.indexes.as_deref().filter(|i| !is_list(i)) else {
                    continue;
                };
                if let Some(numbers) =
                    interleaving::interleaving(indexes, &model, position + 1 - root)
                        .map_err(|problem| invalid(level, indexes, problem))?
                {
                    in_order[position] = (0..).zip(&numbers).all(|(j, &number)| j == number);
                }
            }
        }
        let hw = build(description)?;
        for (level, in_order) in levels.iter().zip(in_order) {
            let Some(indexes) = level.indexes.as_deref().filter(|i| !is_list(i)) else {
                continue;
            };
            // A valid interleaving that numbers the level in order changes nothing, like one
            // hwloc drops; only the model tells them apart.
            if in_order {
                continue;
            }
            if os_indexes(&hw) == os_indexes(&build(&level.without_indexes(description))?) {
                return Err(invalid(
                    level,
                    indexes,
                    "as an interleaving it changes no object's number (hwloc ignores one that \
                     does not name levels above this one, or whose loops do not cover the level)"
                        .to_owned(),
                ));
            }
        }
        Self::from_hwloc(&hw, TopologySource::Synthetic(description.to_owned()))
    }

    /// Loads a topology exported by `lstopo FILE.xml` (or `hwloc-gather-topology`).
    /// Binding threads on it is a no-op ([`Binding::NotThisSystem`]): the file may describe
    /// another machine.
    ///
    /// # Errors
    /// [`TopologyError::Xml`] when the file is missing or not an hwloc XML topology.
    ///
    /// # Examples
    ///
    /// ```
    /// let missing = parbench_mapper::Topology::from_xml_file("/nonexistent/topo.xml");
    /// assert!(matches!(missing, Err(parbench_mapper::TopologyError::Xml { .. })));
    /// ```
    pub fn from_xml_file(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        let path = path.as_ref();
        let failed = |reason: String| TopologyError::Xml {
            path: path.to_owned(),
            reason,
        };
        // hwloc's own message for a missing file is a bare "invalid input", so check first.
        if path.is_dir() {
            return Err(failed("it is a directory".to_owned()));
        }
        if !path.is_file() {
            return Err(failed("no such file".to_owned()));
        }
        // hwloc says only "invalid argument" (as a debug-printed errno) for any file it cannot
        // parse, so say what that means instead.
        let rejected = || failed("hwloc rejects it as invalid (not a topology XML?)".to_owned());
        let hw = hwlocality::Topology::builder()
            .from_xml_file(path)
            .map_err(|_| rejected())?
            .build()
            .map_err(|_| rejected())?;
        Self::from_hwloc(&hw, TopologySource::Xml(path.to_owned()))
    }

    /// Copies the hierarchy out of hwloc. PUs without a core ancestor (some virtual machines and
    /// ARM boards report none) become single-PU cores; cores without a package go to package 0.
    fn from_hwloc(
        hw: &hwlocality::Topology,
        source: TopologySource,
    ) -> Result<Self, TopologyError> {
        let mut topology = Topology {
            source,
            packages: Vec::new(),
            numa_nodes: Vec::new(),
            cores: Vec::new(),
            pus: Vec::new(),
        };
        // Keyed by hwloc's global persistent index so each object is created once.
        let mut package_of_object: BTreeMap<Option<TopologyObjectID>, usize> = BTreeMap::new();
        let mut core_of_object: BTreeMap<TopologyObjectID, usize> = BTreeMap::new();
        for hw_pu in hw.objects_with_type(ObjectType::PU) {
            let package = intern_package(&mut topology, &mut package_of_object, hw_pu);
            let pu_index = topology.pus.len();
            let core = match hw_pu.first_ancestor_with_type(ObjectType::Core) {
                Some(hw_core) => *core_of_object
                    .entry(hw_core.global_persistent_index())
                    .or_insert_with(|| {
                        push_core(
                            &mut topology.cores,
                            &mut topology.packages,
                            hw_core.os_index(),
                            package,
                        )
                    }),
                None => push_core(&mut topology.cores, &mut topology.packages, None, package),
            };
            topology.cores[core].pus.push(pu_index);
            topology.pus.push(Pu {
                os_index: hw_pu.os_index().unwrap_or(pu_index),
                core,
                package,
                numa_node: None,
            });
        }
        if topology.pus.is_empty() {
            return Err(TopologyError::NoProcessingUnits);
        }
        for hw_node in hw.objects_with_type(ObjectType::NUMANode) {
            let node_index = topology.numa_nodes.len();
            let Some(cpuset) = hw_node.cpuset() else {
                continue;
            };
            let mut pus = Vec::new();
            for (pu_index, pu) in topology.pus.iter_mut().enumerate() {
                if cpuset.is_set(pu.os_index) {
                    pu.numa_node.get_or_insert(node_index);
                    pus.push(pu_index);
                }
            }
            topology.numa_nodes.push(NumaNode {
                os_index: hw_node.os_index(),
                pus,
            });
        }
        Ok(topology)
    }

    /// Where this topology came from.
    ///
    /// ```
    /// let t = parbench_mapper::Topology::synthetic("core:1 pu:1")?;
    /// assert_eq!(t.source(), &parbench_mapper::TopologySource::Synthetic("core:1 pu:1".into()));
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn source(&self) -> &TopologySource {
        &self.source
    }

    /// Whether this topology describes the running machine, i.e. whether binding has an effect.
    /// Synthetic and XML topologies answer `false`.
    ///
    /// ```
    /// assert!(!parbench_mapper::Topology::synthetic("core:2 pu:1")?.is_this_system());
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn is_this_system(&self) -> bool {
        self.source == TopologySource::ThisSystem
    }

    /// Packages in logical order.
    ///
    /// ```
    /// assert_eq!(parbench_mapper::Topology::synthetic("pack:3 core:1 pu:1")?.packages().len(), 3);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn packages(&self) -> &[Package] {
        &self.packages
    }

    /// NUMA nodes in logical order (may be empty for odd XML files).
    ///
    /// ```
    /// assert_eq!(parbench_mapper::Topology::synthetic("core:2 pu:1")?.numa_nodes().len(), 1);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn numa_nodes(&self) -> &[NumaNode] {
        &self.numa_nodes
    }

    /// Cores in logical order.
    ///
    /// ```
    /// assert_eq!(parbench_mapper::Topology::synthetic("pack:2 core:3 pu:2")?.cores().len(), 6);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// Processing units in logical order (siblings adjacent).
    ///
    /// ```
    /// assert_eq!(parbench_mapper::Topology::synthetic("pack:2 core:3 pu:2")?.pus().len(), 12);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn pus(&self) -> &[Pu] {
        &self.pus
    }

    /// The SMT siblings of a PU, including the PU itself (its core's PUs).
    ///
    /// # Errors
    /// [`TopologyError::PuOutOfRange`] for an index past the last PU.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = parbench_mapper::Topology::synthetic("core:2 pu:2")?;
    /// assert_eq!(t.siblings(3)?, &[2, 3]);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn siblings(&self, pu: usize) -> Result<&[usize], TopologyError> {
        let found = self.pu(pu)?;
        Ok(&self.cores[found.core].pus)
    }

    /// The OS CPU numbers of the PUs, ascending: on [`this_system`](Self::this_system), the CPUs
    /// this process may use.
    ///
    /// ```
    /// let t = parbench_mapper::Topology::synthetic("core:2 pu:2(indexes=0,2,1,3)")?;
    /// assert_eq!(t.cpus(), vec![0, 1, 2, 3]);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self.pus.iter().map(|pu| pu.os_index).collect();
        cpus.sort_unstable();
        cpus
    }

    /// Whether any core has more than one PU.
    ///
    /// ```
    /// assert!(!parbench_mapper::Topology::synthetic("core:4 pu:1")?.has_smt_siblings());
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn has_smt_siblings(&self) -> bool {
        self.cores.iter().any(|core| core.pus.len() > 1)
    }

    /// Pins the calling thread to PU `pu` (a logical index) when the topology is this machine;
    /// otherwise does nothing and says so.
    ///
    /// # Errors
    /// [`TopologyError::PuOutOfRange`] for a bad index, [`TopologyError::BindRefused`] when the
    /// OS refuses (e.g. the CPU is outside this process's allowed set).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = parbench_mapper::Topology::synthetic("core:2 pu:1")?;
    /// assert_eq!(t.bind_current_thread(1)?, parbench_mapper::Binding::NotThisSystem);
    /// # Ok::<(), parbench_mapper::TopologyError>(())
    /// ```
    pub fn bind_current_thread(&self, pu: usize) -> Result<Binding, TopologyError> {
        let os_index = self.pu(pu)?.os_index;
        if !self.is_this_system() {
            return Ok(Binding::NotThisSystem);
        }
        if pin_current_thread(os_index) {
            Ok(Binding::Bound)
        } else {
            Err(TopologyError::BindRefused { os_index })
        }
    }

    fn pu(&self, pu: usize) -> Result<&Pu, TopologyError> {
        self.pus.get(pu).ok_or(TopologyError::PuOutOfRange {
            pu,
            pus: self.pus.len(),
        })
    }
}

/// Pins the calling thread to OS CPU `cpu`; `false` when the OS refuses or the number cannot
/// be expressed in a `cpu_set_t` (libc's `CPU_SET` panics past `CPU_SETSIZE`).
pub(crate) fn pin_current_thread(cpu: usize) -> bool {
    let representable = usize::try_from(libc::CPU_SETSIZE).is_ok_and(|size| cpu < size);
    representable && core_affinity::set_for_current(core_affinity::CoreId { id: cpu })
}

fn intern_package(
    topology: &mut Topology,
    package_of_object: &mut BTreeMap<Option<TopologyObjectID>, usize>,
    hw_pu: &TopologyObject,
) -> usize {
    let hw_package = hw_pu.first_ancestor_with_type(ObjectType::Package);
    let key = hw_package.map(TopologyObject::global_persistent_index);
    *package_of_object.entry(key).or_insert_with(|| {
        topology.packages.push(Package {
            os_index: hw_package.and_then(TopologyObject::os_index),
            cores: Vec::new(),
        });
        topology.packages.len() - 1
    })
}

fn push_core(
    cores: &mut Vec<Core>,
    packages: &mut [Package],
    os_index: Option<usize>,
    package: usize,
) -> usize {
    cores.push(Core {
        os_index,
        package,
        pus: Vec::new(),
    });
    let core = cores.len() - 1;
    packages[package].cores.push(core);
    core
}

/// Parses the CLI's topology argument: `this`, `synthetic:DESCRIPTION` or `xml:FILE`.
///
/// # Errors
/// [`TopologyError::BadArgument`] for any other form, plus the errors of the chosen constructor.
///
/// # Examples
///
/// ```
/// use parbench_mapper::parse_topology_arg;
/// let t = parse_topology_arg("synthetic:pack:1 core:4 pu:2")?;
/// assert_eq!(t.pus().len(), 8);
/// assert!(parse_topology_arg("laptop").is_err());
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
pub fn parse_topology_arg(argument: &str) -> Result<Topology, TopologyError> {
    if argument == "this" {
        Topology::this_system()
    } else if let Some(description) = argument.strip_prefix("synthetic:") {
        Topology::synthetic(description)
    } else if let Some(path) = argument.strip_prefix("xml:") {
        Topology::from_xml_file(path)
    } else {
        Err(TopologyError::BadArgument {
            argument: argument.to_owned(),
        })
    }
}

/// The most PUs a synthetic topology may have: twice the largest machines built so far, and
/// small enough for hwloc to build in well under a second (8192 PUs: 0.3 s, 33 MB; 65 536 PUs
/// took 12 s and 1 GB).
pub const MAX_SYNTHETIC_PUS: usize = 8_192;

/// The largest OS index an explicit synthetic `indexes=` list may give: CPU numbers beyond it do
/// not exist on Linux (at most 8192 CPUs), and hwloc sizes its bitmaps by the largest index.
pub const MAX_SYNTHETIC_OS_INDEX: u32 = 65_535;

/// One level of a synthetic description (or its root attributes, `objects` 1).
#[derive(Debug)]
struct SyntheticLevel {
    /// As written, attributes left out (`pu:2`).
    text: String,
    /// Objects of this level in the whole machine: the product of the arities down to it.
    objects: u64,
    /// The value of its `indexes=` attribute, if it has one.
    indexes: Option<String>,
    /// Byte range of the `indexes=…` attribute in the description.
    attribute: Option<std::ops::Range<usize>>,
}

impl SyntheticLevel {
    /// The description with this level's `indexes=` attribute removed.
    fn without_indexes(&self, description: &str) -> String {
        let mut rest = description.to_owned();
        if let Some(range) = &self.attribute {
            rest.replace_range(range.clone(), "");
        }
        rest.replace("( ", "(").replace(" )", ")").replace("()", "")
    }
}

/// The levels of a synthetic description with their attributes (`type:N(attr attr)`; attributes
/// are separated by spaces inside the parentheses). Only what the `indexes=` checks need:
/// anything malformed is left for hwloc to reject.
fn synthetic_levels(description: &str) -> Vec<SyntheticLevel> {
    let mut levels = Vec::new();
    let mut objects: u64 = 1;
    let mut position = 0;
    let bytes = description.as_bytes();
    while position < bytes.len() {
        if bytes[position] == b' ' {
            position += 1;
            continue;
        }
        let start = position;
        while position < bytes.len() && bytes[position] != b' ' && bytes[position] != b'(' {
            position += 1;
        }
        let text = description[start..position].to_owned();
        if !text.is_empty() {
            let arity = text.rsplit(':').next().unwrap_or_default();
            objects = objects.saturating_mul(arity.parse().unwrap_or(1));
        }
        let mut level = SyntheticLevel {
            text,
            objects,
            indexes: None,
            attribute: None,
        };
        if position < bytes.len() && bytes[position] == b'(' {
            let open = position + 1;
            let close = description[open..]
                .find(')')
                .map_or(description.len(), |offset| open + offset);
            let mut offset = open;
            for attribute in description[open..close].split(' ') {
                if let Some(value) = attribute.strip_prefix("indexes=") {
                    level.indexes = Some(value.to_owned());
                    level.attribute = Some(offset..offset + attribute.len());
                }
                offset += attribute.len() + 1;
            }
            position = (close + 1).min(description.len());
        }
        levels.push(level);
    }
    levels
}

/// The levels as [`interleaving::interleaving`] sees them (the machine first), or `None` when
/// the description attaches objects (`[numa]`), which the model does not place.
fn interleaving_model(levels: &[SyntheticLevel]) -> Option<Vec<interleaving::Level<'_>>> {
    let mut model = vec![interleaving::Level {
        type_name: Some("machine"),
        objects: 1,
    }];
    for level in levels.iter().filter(|l| !l.text.is_empty()) {
        if level.text.starts_with('[') {
            return None;
        }
        model.push(interleaving::Level {
            type_name: level.text.split_once(':').map(|(name, _)| name),
            objects: level.objects,
        });
    }
    Some(model)
}

/// Checks an explicit `indexes=` list (digits and commas only) for a level of `objects` objects.
fn check_index_list(list: &str, objects: u64) -> Result<(), String> {
    if list.is_empty() {
        return Err(format!(
            "no numbers for {}",
            plural(objects as usize, "object")
        ));
    }
    let entries: Vec<&str> = list.split(',').collect();
    if entries.len() as u64 != objects {
        return Err(format!(
            "{} for {}; give one per object of the level in the whole machine",
            plural(entries.len(), "number"),
            plural(objects as usize, "object")
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (position, entry) in entries.iter().enumerate() {
        let index: u32 = entry
            .parse()
            .ok()
            .filter(|&index| index <= MAX_SYNTHETIC_OS_INDEX)
            .ok_or_else(|| match entry.is_empty() {
                true => format!("number {} is empty", position + 1),
                false => format!("{entry} is above {MAX_SYNTHETIC_OS_INDEX}"),
            })?;
        if !seen.insert(index) {
            return Err(format!("{index} is given twice"));
        }
    }
    Ok(())
}

/// Every object's OS index, in hwloc's order: what an `indexes=` attribute changes.
fn os_indexes(hw: &hwlocality::Topology) -> Vec<Option<usize>> {
    hw.objects().map(TopologyObject::os_index).collect()
}

/// The PUs a synthetic description asks for: the product of the arities of its levels
/// (`type:N`, attributes in parentheses ignored), saturating. A level whose arity does not parse
/// counts as 1 and is left for hwloc to reject.
fn synthetic_pus(description: &str) -> u64 {
    description
        .split_whitespace()
        .filter_map(|level| {
            let (_, arity) = level.split_once(':')?;
            let digits: &str = &arity[..arity
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(arity.len())];
            // Longer than u64: saturate like the product does.
            Some(
                digits
                    .parse::<u64>()
                    .unwrap_or(if digits.is_empty() { 1 } else { u64::MAX }),
            )
        })
        .fold(1_u64, u64::saturating_mul)
}

/// Compact rendering, one package per line block:
///
/// ```text
/// this system: 1 package, 1 NUMA node, 2 cores, 2 PUs (no SMT siblings)
/// package 0: core 0 [cpu 0] | core 1 [cpu 1]
/// ```
///
/// ```
/// let t = parbench_mapper::Topology::synthetic("core:2 pu:2")?;
/// assert!(t.to_string().contains("core 1 [cpu 2,3]"));
/// # Ok::<(), parbench_mapper::TopologyError>(())
/// ```
impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            TopologySource::ThisSystem => "this system".to_owned(),
            TopologySource::Synthetic(description) => format!("synthetic \"{description}\""),
            TopologySource::Xml(path) => format!("xml {}", path.display()),
        };
        let smt = if self.has_smt_siblings() {
            "SMT siblings present"
        } else {
            "no SMT siblings"
        };
        writeln!(
            f,
            "{source}: {}, {}, {}, {} ({smt})",
            plural(self.packages.len(), "package"),
            plural(self.numa_nodes.len(), "NUMA node"),
            plural(self.cores.len(), "core"),
            plural(self.pus.len(), "PU"),
        )?;
        for (package_index, package) in self.packages.iter().enumerate() {
            let cores: Vec<String> = package
                .cores
                .iter()
                .map(|&core| {
                    let cpus: Vec<String> = self.cores[core]
                        .pus
                        .iter()
                        .map(|&pu| self.pus[pu].os_index.to_string())
                        .collect();
                    format!("core {core} [cpu {}]", cpus.join(","))
                })
                .collect();
            writeln!(f, "package {package_index}: {}", cores.join(" | "))?;
        }
        Ok(())
    }
}

/// Ascending CPU numbers as `taskset -c` writes them (`0-3,8`), short however many there are.
pub(crate) fn cpu_ranges(cpus: &[usize]) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &cpu in cpus {
        match ranges.last_mut() {
            Some((_, last)) if cpu == *last + 1 => *last = cpu,
            _ => ranges.push((cpu, cpu)),
        }
    }
    let ranges: Vec<String> = ranges
        .into_iter()
        .map(|(first, last)| match last - first {
            0 => first.to_string(),
            _ => format!("{first}-{last}"),
        })
        .collect();
    ranges.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ranges_join_consecutive_cpus() {
        assert_eq!(cpu_ranges(&[]), "");
        assert_eq!(cpu_ranges(&[0]), "0");
        assert_eq!(cpu_ranges(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn synthetic_topologies_past_the_pu_bound_are_refused_before_hwloc() {
        assert_eq!(synthetic_pus("pack:2 core:4 pu:2"), 16);
        assert_eq!(synthetic_pus("pack:2 core:4(memory=1GB) pu:2"), 16);
        assert_eq!(synthetic_pus("pack:99999999999999999999 pu:2"), u64::MAX);
        let huge = Topology::synthetic("pack:100000 core:100000 pu:100000");
        assert!(
            matches!(huge, Err(TopologyError::SyntheticTooLarge { pus, .. }) if pus == 1_000_000_000_000_000)
        );
        let at_bound = format!("pack:2 core:{} pu:2", MAX_SYNTHETIC_PUS / 4);
        assert_eq!(synthetic_pus(&at_bound), MAX_SYNTHETIC_PUS as u64);
        let past = format!("pack:2 core:{} pu:2", MAX_SYNTHETIC_PUS / 4 + 1);
        assert!(matches!(
            Topology::synthetic(&past),
            Err(TopologyError::SyntheticTooLarge { .. })
        ));
    }

    #[test]
    fn synthetic_counts_match_description() {
        let t = Topology::synthetic("pack:2 core:4 pu:2").unwrap();
        assert_eq!(t.packages().len(), 2);
        assert_eq!(t.cores().len(), 8);
        assert_eq!(t.pus().len(), 16);
        assert!(t.cores().iter().all(|core| core.pus.len() == 2));
        assert!(t.packages().iter().all(|package| package.cores.len() == 4));
    }

    #[test]
    fn synthetic_sibling_sets_are_the_cores_pus() {
        let t = Topology::synthetic("pack:1 core:3 pu:2").unwrap();
        let sibling_sets: Vec<Vec<usize>> = (0..t.pus().len())
            .map(|pu| t.siblings(pu).unwrap().to_vec())
            .collect();
        assert_eq!(
            sibling_sets,
            vec![
                vec![0, 1],
                vec![0, 1],
                vec![2, 3],
                vec![2, 3],
                vec![4, 5],
                vec![4, 5]
            ]
        );
        assert!(t.siblings(6).is_err());
    }

    #[test]
    fn synthetic_without_smt_has_no_siblings() {
        let t = Topology::synthetic("pack:1 core:4 pu:1").unwrap();
        assert!(!t.has_smt_siblings());
        assert_eq!(t.siblings(2).unwrap(), &[2]);
    }

    #[test]
    fn synthetic_numa_nodes_cover_their_packages() {
        let t = Topology::synthetic("pack:2 numa:1 core:2 pu:2").unwrap();
        assert_eq!(t.numa_nodes().len(), 2);
        assert_eq!(t.numa_nodes()[0].pus, vec![0, 1, 2, 3]);
        assert!(t.pus()[5].numa_node == Some(1));
    }

    #[test]
    fn explicit_os_indices_are_kept() {
        // hwloc lets a synthetic description interleave OS numbers like many x86 BIOSes do.
        let t = Topology::synthetic("core:2 pu:2(indexes=0,2,1,3)").unwrap();
        let os: Vec<usize> = t.pus().iter().map(|pu| pu.os_index).collect();
        assert_eq!(os, vec![0, 2, 1, 3]);
    }

    #[test]
    fn malformed_synthetic_indexes_are_typed_errors_naming_the_problem() {
        for (bad, problem) in [
            ("core:2 pu:2(indexes=0,1,2)", "3 numbers for 4 objects;"),
            ("core:2(indexes=5) pu:2", "1 number for 2 objects;"),
            ("core:1 pu:1(indexes=)", "no numbers for 1 object"),
            ("core:2 pu:2(indexes=0,1,2,3,4)", "5 numbers for 4 objects;"),
            ("core:2 pu:2(indexes=0,1,2,3,)", "5 numbers for 4 objects;"),
            ("core:2 pu:2(indexes=)", "no numbers"),
            ("core:2 pu:2(indexes=0,1,,3)", "number 3 is empty"),
            ("core:2 pu:2(indexes=0,0,1,1)", "0 is given twice"),
            ("core:2(indexes=5,5) pu:2", "5 is given twice"),
            (
                "core:2 pu:2(indexes=99999999999,1,2,3)",
                "99999999999 is above 65535",
            ),
            (
                "core:2 pu:2(indexes=a,b,c,d)",
                "\"a,b,c,d\" is not an object type",
            ),
            ("core:2 pu:2(indexes=-1,1,2,3)", "is not an object type"),
            (
                "core:2 pu:2(indexes=foo:bar)",
                "\"foo\" is not an object type",
            ),
            (
                "core:2 pu:2(indexes=pu:core)",
                "\"pu\" names the PUs, which hwloc may or may not take",
            ),
            ("numa:2(memory=1GB indexes=0,0) pu:2", "0 is given twice"),
        ] {
            assert_bad_indexes(bad, problem);
        }
        // Well-formed ones still work: a list, an interleaving by level names and by loops,
        // and a list beside another attribute.
        for (good, pus) in [
            ("core:2 pu:2(indexes=0,2,1,3)", vec![0, 2, 1, 3]),
            ("pack:2 core:2 pu:1(indexes=pack:core)", vec![0, 2, 1, 3]),
            ("core:2 pu:2(indexes=2*2:1*2)", vec![0, 2, 1, 3]),
            ("numa:2(memory=1GB indexes=1,0) pu:2", vec![0, 1, 2, 3]),
            ("core:2 pu:2(indexes=core)", vec![0, 2, 1, 3]),
            ("core:2 pu:2(indexes=numa:core)", vec![0, 2, 1, 3]),
            ("core:2 pu:2(indexes=0x2*2:1*2)", vec![0, 2, 1, 3]),
        ] {
            let t = Topology::synthetic(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
            let os: Vec<usize> = t.pus().iter().map(|pu| pu.os_index).collect();
            assert_eq!(os, pus, "{good:?}");
        }
    }

    /// Rejects `bad` with a [`TopologyError::SyntheticIndexes`] naming `problem`.
    fn assert_bad_indexes(bad: &str, problem: &str) {
        match Topology::synthetic(bad) {
            Err(error @ TopologyError::SyntheticIndexes { .. }) => {
                let message = error.to_string();
                assert!(message.contains(problem), "{bad:?}: {message}");
            }
            other => panic!("{bad:?} should be rejected: {other:?}"),
        }
    }

    #[test]
    fn interleavings_that_number_the_level_in_order_are_accepted() {
        // The same numbering as no attribute, and as an interleaving hwloc drops.
        for (good, pus) in [
            ("core:2 pu:2(indexes=1*2:2*2)", vec![0, 1, 2, 3]),
            ("core:2 pu:2(indexes=1*4)", vec![0, 1, 2, 3]),
            ("pack:2 core:2 pu:1(indexes=core:pack)", vec![0, 1, 2, 3]),
            (
                "pack:2 l2:2 pu:1(indexes=L2Cache:package)",
                vec![0, 1, 2, 3],
            ),
            ("core:4(indexes=core) pu:1", vec![0, 1, 2, 3]),
        ] {
            let t = Topology::synthetic(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
            let os: Vec<usize> = t.pus().iter().map(|pu| pu.os_index).collect();
            assert_eq!(os, pus, "{good:?}");
        }
    }

    #[test]
    fn interleavings_hwloc_drops_or_misapplies_are_typed_errors() {
        for (bad, problem) in [
            // hwloc drops these interleavings.
            (
                "core:2 pu:2(indexes=3*2)",
                "cover 2 of the level's 4 objects",
            ),
            ("core:2 pu:2(indexes=2*2:)", "loop \"\" is not STEP*COUNT"),
            ("core:2 pu:2(indexes=2*0)", "zero step or count"),
            (
                "core:2 pu:2(indexes=08*2)",
                "loop \"08*2\" is not STEP*COUNT",
            ),
            ("core:2 pu:2(indexes=1*2:1*2)", "two objects number 0"),
            (
                "pack:2 core:2 pu:1(indexes=core:core)",
                "\"core\" is named twice",
            ),
            // hwloc applies this one and merges PUs 1 and 4 (it checks only for a repeated 0).
            ("core:3 pu:2(indexes=1*3:2*2)", "two objects number 1"),
        ] {
            assert_bad_indexes(bad, problem);
        }
    }

    #[test]
    fn the_interleaving_model_numbers_pus_as_hwloc_does() {
        // Every loop interleaving of one or two loops (steps and counts 1 to 7) of the 6 PUs of
        // `core:3 pu:2`, and every level-name one: where the model accepts one, hwloc gives each
        // core the same PU numbers (it sorts siblings by number, so compared as sets); where it
        // says hwloc drops one, hwloc numbers them in order. (Those it refuses for giving two PUs
        // one number are not built: hwloc would merge PUs.)
        let cores = |numbers: &[u64]| {
            let mut cores: Vec<Vec<u64>> = numbers
                .chunks(2)
                .map(|core| {
                    let mut core = core.to_vec();
                    core.sort_unstable();
                    core
                })
                .collect();
            cores.sort_unstable();
            cores
        };
        let loops: Vec<String> = (1..=7)
            .flat_map(|step| (1..=7).map(move |count| format!("{step}*{count}")))
            .collect();
        let numeric = loops.iter().cloned().chain(
            loops
                .iter()
                .flat_map(|a| loops.iter().map(move |b| format!("{a}:{b}"))),
        );
        let names = ["machine", "numa", "pack", "core", "pu", "l2"];
        let named = names.iter().map(|a| (*a).to_owned()).chain(
            names
                .iter()
                .flat_map(|a| names.iter().map(move |b| format!("{a}:{b}"))),
        );
        let mut applied = 0;
        for value in numeric.chain(named) {
            let description = format!("pack:1 core:3 pu:2(indexes={value})");
            let levels = synthetic_levels(&description);
            let model = interleaving_model(&levels).unwrap();
            let outcome = interleaving::interleaving(&value, &model, 3);
            let undefined = ["two objects", "beyond", "may or may not"];
            if outcome
                .as_ref()
                .is_err_and(|problem| undefined.iter().any(|u| problem.contains(u)))
            {
                continue;
            }
            let hw = hwlocality::Topology::builder()
                .from_synthetic(&description)
                .unwrap()
                .build()
                .unwrap();
            let numbers: Vec<u64> = hw
                .objects_with_type(ObjectType::PU)
                .map(|pu| pu.os_index().unwrap() as u64)
                .collect();
            match outcome {
                Ok(Some(model)) => {
                    assert_eq!(cores(&numbers), cores(&model), "{description}");
                    applied += 1;
                }
                Ok(None) => panic!("{description}: not modelled"),
                Err(problem) => {
                    assert_eq!(
                        numbers,
                        (0..6).collect::<Vec<_>>(),
                        "{description}: {problem}"
                    )
                }
            }
        }
        assert!(applied > 20, "{applied}");
    }

    #[test]
    fn an_interleaving_naming_a_lower_level_is_refused_before_hwloc_aborts() {
        // hwloc 2.9 fails an assertion (`step`) on this one and aborts the process.
        assert_bad_indexes(
            "pack:2(indexes=core) core:2 pu:1",
            "\"core\" names a level below this one",
        );
    }

    #[test]
    fn malformed_synthetic_descriptions_are_typed_errors() {
        for bad in [
            "",
            "pack:",
            "pack:two",
            "core:0",
            "banana:3",
            "pack:2 core:4 pu:2 extra",
        ] {
            assert!(
                matches!(
                    Topology::synthetic(bad),
                    Err(TopologyError::Synthetic { .. })
                ),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn binding_on_synthetic_is_a_no_op() {
        let t = Topology::synthetic("core:2 pu:1").unwrap();
        assert_eq!(t.bind_current_thread(0).unwrap(), Binding::NotThisSystem);
        assert!(matches!(
            t.bind_current_thread(9),
            Err(TopologyError::PuOutOfRange { pu: 9, pus: 2 })
        ));
        let one = Topology::synthetic("core:1 pu:1").unwrap();
        assert_eq!(
            one.bind_current_thread(3).unwrap_err().to_string(),
            "PU index 3 is out of range (topology has 1 PU)"
        );
    }

    #[test]
    fn this_system_is_sane() {
        let t = Topology::this_system().unwrap();
        assert!(!t.pus().is_empty());
        assert!(t.is_this_system());
        assert_eq!(
            t.cores().iter().map(|c| c.pus.len()).sum::<usize>(),
            t.pus().len()
        );
    }

    #[test]
    fn xml_round_trip_through_lstopo_format() {
        let dir = std::env::temp_dir().join(format!("parbench-mapper-xml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("topo.xml");
        let hw = hwlocality::Topology::builder()
            .from_synthetic("pack:2 core:2 pu:2")
            .unwrap()
            .build()
            .unwrap();
        let xml = hw
            .export_xml(hwlocality::topology::export::xml::XMLExportFlags::empty())
            .unwrap();
        std::fs::write(&path, &xml).unwrap();
        let t = Topology::from_xml_file(&path).unwrap();
        assert_eq!(t.pus().len(), 8);
        assert!(!t.is_this_system());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_xml_is_a_typed_error() {
        let dir =
            std::env::temp_dir().join(format!("parbench-mapper-badxml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.xml");
        std::fs::write(&path, "not xml at all").unwrap();
        assert!(matches!(
            Topology::from_xml_file(&path),
            Err(TopologyError::Xml { .. })
        ));
        // Human messages: no debug-printed errno, and a directory is not "no such file".
        std::fs::write(&path, "<topology></topology>").unwrap();
        let message = Topology::from_xml_file(&path).unwrap_err().to_string();
        assert!(
            message.ends_with("hwloc rejects it as invalid (not a topology XML?)"),
            "{message}"
        );
        assert!(!message.contains("Errno"), "{message}");
        let message = Topology::from_xml_file(&dir).unwrap_err().to_string();
        assert!(message.ends_with("it is a directory"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn topology_argument_forms() {
        assert_eq!(
            parse_topology_arg("synthetic:core:3 pu:1")
                .unwrap()
                .cores()
                .len(),
            3
        );
        assert!(parse_topology_arg("this").unwrap().is_this_system());
        assert!(matches!(
            parse_topology_arg("xml:/nonexistent.xml"),
            Err(TopologyError::Xml { .. })
        ));
        assert!(matches!(
            parse_topology_arg("synth:core:2"),
            Err(TopologyError::BadArgument { .. })
        ));
    }

    #[test]
    fn display_lists_packages_cores_and_cpus() {
        let t = Topology::synthetic("pack:2 core:2 pu:2").unwrap();
        let text = t.to_string();
        assert!(text.starts_with("synthetic \"pack:2 core:2 pu:2\": 2 packages, 1 NUMA node, 4 cores, 8 PUs (SMT siblings present)"), "{text}");
        assert!(
            text.contains("package 1: core 2 [cpu 4,5] | core 3 [cpu 6,7]"),
            "{text}"
        );
    }
}
