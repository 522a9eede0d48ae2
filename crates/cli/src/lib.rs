//! parbench-cli: the command-line front end of parbench.
//!
//! The binary is a thin layer (hyperfine's design): [`args`] parses, [`sweep`] measures (the
//! schedulers of a kernel interleaved in blocks), [`rounds`] repeats a sweep in fresh child
//! processes with shuffled cell orders and merges the rounds, [`stats`] analyses (the workspace's
//! one Student-t table, Tukey outliers, median intervals, round spreads, paired speed-ups,
//! bootstrap ratios), [`environment`] records the machine beside the numbers, [`export`] writes one
//! format per [`export::Exporter`], [`results_file`] writes results to the path a user names
//! (devices, FIFOs and symbolic links included) without losing them to a failed write, [`compare`] sets reports side by side with a verdict per cell,
//! [`standings`] ranks one scheduler against the others over many reports (one per process),
//! [`plot`] draws SVG or PNG figures from a JSON report, and [`progress`] shows people what is
//! going on, on stderr only, so that stdout carries nothing but results. No algorithm lives here:
//! workloads and executors come from `parbench-kernels`.
//!
//! Beyond sweeps, each further command is one module of wiring around a library crate:
//! [`reproduce`] (rerun a study's experiments and report them beside the published figures),
//! [`locks`] (lock throughput and fairness, `parbench-atomics`, reported through the same
//! statistics and exporters), [`topology`], [`profile`] and [`map`] (`parbench-mapper`), and
//! [`corun`] (unmodified programs run together, their threads mapped and pinned from outside).
//!
//! The data model in [`results`] is generic — a cell is labels, raw samples, metrics and derived
//! statistics — so that further commands reuse statistics and exports unchanged.

#![warn(missing_docs)]

pub mod args;
pub mod commands;
pub mod compare;
pub mod corun;
pub mod environment;
pub mod error;
pub mod export;
pub mod interruption;
pub mod latency;
pub mod locks;
pub mod map;
pub mod plot;
pub mod profile;
pub mod progress;
pub mod reproduce;
pub mod results;
pub mod results_file;
pub mod rounds;
pub mod standings;
pub mod stats;
pub mod sweep;
pub mod topology;
pub mod under_load;
pub mod usage;
