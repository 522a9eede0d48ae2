//! The list of kernels. Adding a kernel is one file under `kernels/` and one line here.

use crate::kernel::{Kernel, KernelError};
use crate::kernels;

static REGISTRY: &[&dyn Kernel] = &[
    &kernels::spmv::SPMV_BALANCED,
    &kernels::spmv::SPMV_TRIANGLE,
    &kernels::spmv::SPMV_HYPERBOLIC,
    &kernels::reduce::Reduce,
    &kernels::scan::Scan,
    &kernels::matmul::Matmul,
    &kernels::transpose::Transpose,
    &kernels::sched_time::SchedTime,
    &kernels::trapezoid::Trapezoid,
    &kernels::spawn_cost::SpawnCost,
    &kernels::smt::FP_ADD,
    &kernels::smt::FP_MUL,
    &kernels::smt::FP_DIV,
    &kernels::smt::INT_ADD,
    &kernels::smt::INT_MUL,
    &kernels::smt::INT_DIV,
    &kernels::smt::BRANCH,
    &kernels::smt::LOAD_DEP,
    &kernels::nqueens::NQueens,
    &kernels::qap::Qap,
    &kernels::floorplan::Floorplan,
    &kernels::round::Round,
];

/// Every kernel, in display order.
///
/// ```
/// assert!(parbench_kernels::registry().iter().any(|k| k.name() == "reduce"));
/// ```
pub fn registry() -> &'static [&'static dyn Kernel] {
    REGISTRY
}

/// The kernel called `name`.
///
/// ```
/// use parbench_kernels::find_kernel;
///
/// assert_eq!(find_kernel("reduce")?.name(), "reduce");
/// let error = find_kernel("reduse").unwrap_err().to_string();
/// assert!(error.contains("valid kernels: ") && error.contains("reduce"));
/// # Ok::<(), parbench_kernels::KernelError>(())
/// ```
///
/// # Errors
/// [`KernelError::UnknownKernel`], listing the valid names, if there is no such kernel.
pub fn find_kernel(name: &str) -> Result<&'static dyn Kernel, KernelError> {
    REGISTRY
        .iter()
        .copied()
        .find(|kernel| kernel.name() == name)
        .ok_or_else(|| KernelError::UnknownKernel {
            name: name.to_owned(),
            valid: REGISTRY
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}
