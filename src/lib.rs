//! parbench: a toolkit for people who build and measure parallel runtimes.
//!
//! This root crate re-exports the member crates, so one dependency gives the whole toolkit:
//!
//! * [`scheduler`] — a composable work-stealing pool whose `parallel_for` distributes through a
//!   K-ary tree of threads, with OpenMP/TBB-like baseline strategies;
//! * [`kernels`] — the studies' workloads on ten executors, each validating its own result;
//! * [`atomics`] — spin locks and counters with fixed ARMv8.1 LSE / ARMv8.0 LL-SC instructions;
//! * [`mapper`] — machine topology, per-thread instruction-mix profiles and SMT-aware mapping.
//!
//! ```
//! let pool = parbench::scheduler::ThreadPoolBuilder::new().num_threads(2).build()?;
//! let sum = pool.parallel_reduce(0..100, || 0, |i| i, |a, b| a + b);
//! assert_eq!(sum, 4950);
//! # Ok::<(), parbench::scheduler::BuildError>(())
//! ```

pub use parbench_atomics as atomics;
pub use parbench_kernels as kernels;
pub use parbench_mapper as mapper;
pub use parbench_scheduler as scheduler;

/// The README's code examples, compiled and run as doc-tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
