//! Workloads for parbench: the kernels of the scheduler, INNCABS, pthreads and SMT-bench studies.
//!
//! The crate has two halves that meet in one trait each:
//!
//! - [`Executor`] is the only way a kernel expresses parallelism: a parallel loop over a range that
//!   hands out disjoint sub-ranges ([`Executor::for_chunks`]), fork-join ([`Executor::join`]) and
//!   "one task per item" ([`Executor::for_each_task`]). Every scheduler under study implements it
//!   ([`ExecutorKind`] lists them), so the same kernel code runs on all of them and the comparison is
//!   between schedulers, not between kernel implementations.
//! - [`Kernel`] describes a workload and its parameters; [`Kernel::prepare`] builds the input once
//!   and returns a [`PreparedKernel`] whose [`PreparedKernel::run`] times only the parallel section
//!   and then validates the result. A wrong result is [`KernelError::WrongResult`], never a timing.
//!
//! [`registry()`] lists every kernel; [`find_kernel`] looks one up by name.
//!
//! ```
//! use parbench_kernels::{find_kernel, ExecutorKind, Params, PinPolicy};
//!
//! let kernel = find_kernel("reduce")?;
//! let params = Params::new().with("n", "65536");
//! let mut prepared = kernel.prepare(&params, 2)?;
//! let executor = ExecutorKind::Rayon.build(2, PinPolicy::None)?;
//! let report = prepared.run(executor.as_ref())?;
//! assert!(report.elapsed.as_nanos() > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod affinity;
mod executor;
pub mod input;
mod kernel;
mod kernels;
pub mod latency;
mod registry;

pub use executor::{
    Executor, ExecutorError, ExecutorKind, PinPolicy, PinnedCaller, RayonExecutor,
    SchedulerExecutor, SchedulerSpec, SeqExecutor, SpawnExecutor, check_thread_count,
    par_chunks_mut, parallel_for, parallel_sum,
};
pub use kernel::{Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport};
pub use kernels::smt::{InstrClass, declared_class};
pub use registry::{find_kernel, registry};
