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
//! # What each kernel checks
//!
//! A check must catch an executor that loses work, runs it twice, or runs one piece in place of
//! another, not only a wrong total. A unit test (`kernels/self_checks.rs`) runs every kernel on an
//! executor that breaks one call (the first, later ones, nested ones) of `for_chunks` or
//! `for_each_task` by each of: a piece (an index of the range, a task) run twice in place of its
//! neighbour at the start, middle or end; a piece skipped there; every piece run and then the
//! first again. Every such run must be a [`KernelError::WrongResult`], except the faults listed
//! below as not caught, which the test asserts are exactly the ones missed. No kernel calls
//! [`Executor::join`]; the test breaks its calls too (one side twice, the other never), should one.
//!
//! | kernel | checks | not caught |
//! |---|---|---|
//! | `spmv-*`, `matmul`, `transpose` | every output element against a sequential result; the output is reset (NaN, `u32::MAX`) before each run | a chunk run again: [`par_chunks_mut`] runs a chunk at most once, so no work is doubled |
//! | `reduce` | the sum against a sequential sum | — |
//! | `scan` | every element against a sequential scan, and the up-sweep's total against the input's sum (the result never reads the up-sweep's last node of each level) | — |
//! | `sched-time` | a count and checksum of the loop's iterations (a scheduler's own probe reports none) | — |
//! | `trapezoid` | π within a tolerance; each block run once, checked in a second, untimed call | in the timed call, at blocks of one, a block in place of its neighbour (it moves the total by less than a sound tolerance must allow for rounding; near x = 0 not at all), unless the check's call is broken too |
//! | `spawn-cost` | a count and checksum of the tasks run | — |
//! | `fp-add` … `load-dep` | each task's result, and no task run twice | — |
//! | `nqueens` | the solution count, and a checksum of the boards the cutoff-level tasks searched | — |
//! | `qap`, `floorplan` | every task call ran each of its tasks once (in the timed call), the optimum | — |
//! | `round` | each philosopher's meals and each fork's uses | — |
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
