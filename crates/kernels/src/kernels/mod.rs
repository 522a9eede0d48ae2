//! The kernels, one file each (the SMT-bench stressors share one file: they differ only in the
//! operation their loop repeats).

pub(crate) mod checked_tasks;
pub(crate) mod csr;
pub(crate) mod floorplan;
pub(crate) mod lock_choice;
pub(crate) mod matmul;
pub(crate) mod nqueens;
pub(crate) mod qap;
pub(crate) mod reduce;
pub(crate) mod rng;
pub(crate) mod round;
pub(crate) mod scan;
pub(crate) mod sched_time;
#[cfg(test)]
mod self_checks;
pub(crate) mod shared_atomics;
pub(crate) mod shared_minimum;
pub(crate) mod smt;
pub(crate) mod spawn_cost;
pub(crate) mod spmv;
pub(crate) mod transpose;
pub(crate) mod trapezoid;
