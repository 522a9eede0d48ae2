//! SMT-bench execution-unit stressors (work in progress).

/// The instruction class a stressor kernel keeps busy; the mapper pairs kernels by it.
///
/// ```
/// use parbench_kernels::{declared_class, InstrClass};
///
/// assert_eq!(declared_class("fp-div"), Some(InstrClass::FpDiv));
/// assert_eq!(declared_class("reduce"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstrClass {
    /// Floating-point addition.
    FpAdd,
    /// Floating-point multiplication.
    FpMul,
    /// Floating-point division.
    FpDiv,
    /// Integer addition.
    IntAdd,
    /// Integer multiplication.
    IntMul,
    /// Integer division.
    IntDiv,
    /// Conditional branches.
    Branch,
    /// Dependent loads.
    Load,
}

/// The dominant instruction class of the kernel named `kernel_name`, if it declares one.
pub fn declared_class(kernel_name: &str) -> Option<InstrClass> {
    match kernel_name {
        "fp-add" => Some(InstrClass::FpAdd),
        "fp-mul" => Some(InstrClass::FpMul),
        "fp-div" => Some(InstrClass::FpDiv),
        "int-add" => Some(InstrClass::IntAdd),
        "int-mul" => Some(InstrClass::IntMul),
        "int-div" => Some(InstrClass::IntDiv),
        "branch" => Some(InstrClass::Branch),
        "load-dep" => Some(InstrClass::Load),
        _ => None,
    }
}
