//! Topology, per-thread profiles and instruction-aware SMT thread mapping.
//!
//! Two threads on one SMT core slow each other down when they stress the same execution units
//! and barely at all when their instruction mixes differ. This crate has the pieces to act on
//! that, each in its own module:
//!
//! - [`topology`] — packages, NUMA nodes, cores and their PUs, from hwloc: this machine,
//!   a synthetic description (`"pack:2 core:4 pu:2"`) or an XML export. Binding is a no-op on
//!   the latter two ([`Topology::is_this_system`]). This machine's topology has only the CPUs
//!   the process may use (its affinity and cpuset, e.g. under `taskset`), so whatever maps or
//!   pins from it stays on them ([`Topology::this_system`]).
//! - [`mix`] — an [`InstructionMix`]: counts per [`InstrClass`] (fp, int, load, store, branch),
//!   declared per SMT-bench kernel or assumed for NAS-like applications.
//! - [`perf`] — per-thread perf-event counters: software events always, hardware events from a
//!   per-family table, typed [`perf::ProfileError::Unsupported`] without a PMU; the latency study's
//!   metrics and SMT-friendly rule; profile JSON.
//! - [`mapping`] — thread → PU algorithms: instruction-aware (the study's Algorithm 1,
//!   generalised), round-robin, compact, scatter, random, OS.
//! - [`contention`](mod@contention) — a model scoring how much co-located threads' mixes overlap.
//! - [`report`] — printable/serialisable results for the CLI (`map`).
//! - [`scenarios`] — the study's co-scheduling scenarios A/B/C measured on real siblings, per
//!   kernel with repetitions and a geometric mean.
//! - [`mapping_runs`] — whole mappings measured on real siblings (gain of one algorithm over
//!   another).
//! - [`tasks`] — processes and threads of running programs through `/proc`, and their affinity.
//! - [`corun`](mod@corun) — runs unmodified programs together, finds every thread they start and
//!   keeps all of them mapped and pinned; also maps an already running process.
//!
//! ```
//! use parbench_mapper::{declared_kernel_mixes, map_report, Algorithm, Topology};
//! let topology = Topology::synthetic("pack:1 core:4 pu:2")?;
//! let kernels = declared_kernel_mixes(&["fp-add", "int-add", "fp-mul", "load-dep"])?;
//! let report = map_report(&topology, &kernels, 8, Algorithm::InstructionAware, 100, 1)?;
//! assert_eq!(report.comparison.score_of("instruction-aware"), Some(0.0));
//! assert_eq!(report.comparison.score_of("round-robin"), Some(4.0));
//! println!("{report}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod contention;
pub mod corun;
pub mod mapping;
pub mod mapping_runs;
pub mod mix;
pub mod perf;
pub mod report;
pub mod scenarios;
pub mod tasks;
pub mod topology;

pub use contention::{ContentionScore, contention, overlap};
pub use mapping::{Algorithm, MapError, Mapping, declared_kernel_mixes, threads_in_blocks};
pub use mapping_runs::{MappingOutcome, MappingRun, MappingRunError, gain_percent, run_mappings};
pub use mix::{InstrClass, InstructionMix, NamedMix, nas_like_mixes, smt_bench_mixes};
pub use report::{
    AlgorithmScore, MapReport, ModelComparison, RandomPlacements, ThreadPlacement,
    compare_on_model, map_report, plural, study_report,
};
pub use scenarios::{
    ScenarioError, ScenarioOutcome, ScenarioReport, ScenarioRow, ScenarioSuite, SuiteOutcome,
    SuiteRow, Workload, different_unit_partners, run_scenario_suite, run_scenarios,
};
pub use topology::{
    Binding, Core, MAX_SYNTHETIC_OS_INDEX, MAX_SYNTHETIC_PUS, NumaNode, Package, Pu, Topology,
    TopologyError, TopologySource, parse_topology_arg,
};
