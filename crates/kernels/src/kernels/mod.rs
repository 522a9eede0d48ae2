//! The kernels, one file each (the SMT-bench stressors share one file: they differ only in the
//! operation their loop repeats).

pub(crate) mod csr;
pub(crate) mod reduce;
pub(crate) mod rng;
pub(crate) mod smt;
pub(crate) mod spmv;
