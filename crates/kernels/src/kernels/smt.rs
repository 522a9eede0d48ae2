//! SMT-bench execution-unit stressors: `fp-add`, `fp-mul`, `fp-div`, `int-add`, `int-mul`,
//! `int-div`, `branch`, `load-dep`.
//!
//! Each keeps one kind of execution unit busy so the mapper can measure which pairs of kernels
//! share a core well. One task per executor thread runs `iters` iterations of 32 operations: 4
//! rounds over 8 independent dependency chains, so the loop is limited by the unit's throughput
//! rather than one instruction's latency. The compiler must not fold or vectorise the chains
//! (`x + c + c + c + c` is `x + 4c` for integers): on x86-64 the operations are inline assembly,
//! one scalar instruction each; elsewhere every step goes through `std::hint::black_box`.
//! Floating-point values stay exact: addition chains add 1, multiplication and division chains
//! alternate the operands 2 and ½, which cancel.
//! `branch` steps a Galois LFSR per chain and branches on the bit shifted out (unpredictable);
//! `load-dep` chases pointers through one random cycle over a `--kb` KiB buffer.
//!
//! Every task's final chain values are checked against a plain-Rust simulation of the same
//! operations computed when the kernel is prepared, and every task must have run exactly once: a
//! second run ends with the same chains but does work the metric, operations per second, does not
//! count.

use std::hint::black_box;
use std::sync::{Mutex, PoisonError};

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::rng::SplitMix64;

const CHAINS: usize = 8;
const ROUNDS: usize = 4;
const OPS_PER_ITERATION: usize = CHAINS * ROUNDS;
/// Feedback taps of a maximal-length 64-bit Galois LFSR.
const LFSR_TAPS: u64 = 0xD800_0000_0000_0000;

type Chains = [u64; CHAINS];

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
    STRESSORS
        .iter()
        .find(|s| s.name == kernel_name)
        .map(|s| s.class)
}

/// One stressor kernel.
pub(crate) struct Stressor {
    name: &'static str,
    description: &'static str,
    class: InstrClass,
    params: &'static [ParamSpec],
}

const ITERS_HELP: &str = "iterations of 32 operations per thread";

macro_rules! stressor {
    ($static:ident, $name:literal, $class:ident, $iters:literal, $description:literal) => {
        pub(crate) static $static: Stressor = Stressor {
            name: $name,
            description: $description,
            class: InstrClass::$class,
            params: &[ParamSpec {
                name: "iters",
                default: $iters,
                help: ITERS_HELP,
            }],
        };
    };
}

stressor!(
    FP_ADD,
    "fp-add",
    FpAdd,
    "2^20",
    "SMT-bench stressor: scalar f64 additions"
);
stressor!(
    FP_MUL,
    "fp-mul",
    FpMul,
    "2^20",
    "SMT-bench stressor: scalar f64 multiplications"
);
stressor!(
    FP_DIV,
    "fp-div",
    FpDiv,
    "2^18",
    "SMT-bench stressor: scalar f64 divisions"
);
stressor!(
    INT_ADD,
    "int-add",
    IntAdd,
    "2^20",
    "SMT-bench stressor: 64-bit integer additions"
);
stressor!(
    INT_MUL,
    "int-mul",
    IntMul,
    "2^20",
    "SMT-bench stressor: 64-bit integer multiplications"
);
stressor!(
    INT_DIV,
    "int-div",
    IntDiv,
    "2^15",
    "SMT-bench stressor: 64-bit integer divisions"
);
stressor!(
    BRANCH,
    "branch",
    Branch,
    "2^17",
    "SMT-bench stressor: unpredictable branches on LFSR bits"
);

/// `load-dep`, the one stressor with a second parameter.
pub(crate) static LOAD_DEP: Stressor = Stressor {
    name: "load-dep",
    description: "SMT-bench stressor: dependent loads chasing a random ring",
    class: InstrClass::Load,
    params: &[
        ParamSpec {
            name: "iters",
            default: "2^20",
            help: ITERS_HELP,
        },
        ParamSpec {
            name: "kb",
            default: "32",
            help: "size of the pointer-chasing buffer in KiB",
        },
    ],
};

/// Every stressor, for [`declared_class`].
static STRESSORS: [&Stressor; 8] = [
    &FP_ADD, &FP_MUL, &FP_DIV, &INT_ADD, &INT_MUL, &INT_DIV, &BRANCH, &LOAD_DEP,
];

/// Starting values and the two alternating operands of a class's chains.
fn setup(class: InstrClass) -> (Chains, u64, u64) {
    let chains = |f: fn(u64) -> u64| std::array::from_fn(|k| f(k as u64));
    match class {
        InstrClass::FpAdd => (
            chains(|k| (k as f64).to_bits()),
            1f64.to_bits(),
            1f64.to_bits(),
        ),
        InstrClass::FpMul | InstrClass::FpDiv => (
            chains(|k| ((k + 1) as f64).to_bits()),
            2f64.to_bits(),
            0.5f64.to_bits(),
        ),
        InstrClass::IntAdd => (chains(|k| k << 40), 3, 5),
        InstrClass::IntMul => (chains(|k| 2 * k + 1), 3, 0x9E37_79B9_7F4A_7C15),
        InstrClass::IntDiv => (chains(|k| (k + 1) << 56), 1 << 62, 1 << 62),
        InstrClass::Branch => (
            chains(|k| 0x1234_5678_9ABC_DEF0 ^ (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)),
            LFSR_TAPS,
            LFSR_TAPS,
        ),
        InstrClass::Load => (chains(|k| k), 0, 0),
    }
}

/// One operation of a chain, in plain Rust: the reference the fast loops are checked against.
fn step(class: InstrClass, x: u64, operand: u64, ring: &[u32]) -> u64 {
    let f = f64::from_bits;
    match class {
        InstrClass::FpAdd => (f(x) + f(operand)).to_bits(),
        InstrClass::FpMul => (f(x) * f(operand)).to_bits(),
        InstrClass::FpDiv => (f(x) / f(operand)).to_bits(),
        InstrClass::IntAdd => x.wrapping_add(operand),
        InstrClass::IntMul => x.wrapping_mul(operand),
        // Division by 3, then adding 2^62 keeps the value large (the chain converges but never
        // reaches a trivially cheap operand).
        InstrClass::IntDiv => x / 3 + operand,
        InstrClass::Branch => {
            let bit = x & 1;
            if bit == 1 { (x >> 1) ^ operand } else { x >> 1 }
        }
        InstrClass::Load => u64::from(ring[x as usize]),
    }
}

fn reference(class: InstrClass, iters: usize, ring: &[u32]) -> Chains {
    let (mut x, a, b) = setup(class);
    for _ in 0..iters {
        for round in 0..ROUNDS {
            let operand = if round % 2 == 0 { a } else { b };
            for chain in &mut x {
                *chain = step(class, *chain, operand, ring);
            }
        }
    }
    x
}

#[cfg(target_arch = "x86_64")]
macro_rules! eight {
    ($insn:literal, $operand:literal) => {
        concat!(
            $insn, " {0}, ", $operand, "\n", $insn, " {1}, ", $operand, "\n", $insn, " {2}, ",
            $operand, "\n", $insn, " {3}, ", $operand, "\n", $insn, " {4}, ", $operand, "\n",
            $insn, " {5}, ", $operand, "\n", $insn, " {6}, ", $operand, "\n", $insn, " {7}, ",
            $operand, "\n",
        )
    };
}

/// `iters` iterations of 4 rounds of `insn` on the 8 chains, operands `a`, `b`, `a`, `b`.
#[cfg(target_arch = "x86_64")]
macro_rules! rounds {
    ($insn:literal, $class:ident, $ty:ty, $x:ident, $a:ident, $b:ident, $iters:ident) => {{
        let mut v: [$ty; CHAINS] = $x.map(|bits| <$ty>::from_bits_or_self(bits));
        let (a, b) = (<$ty>::from_bits_or_self($a), <$ty>::from_bits_or_self($b));
        for _ in 0..$iters {
            // SAFETY: the instructions only read and write the listed registers and the flags;
            // no memory, no stack.
            unsafe {
                std::arch::asm!(
                    eight!($insn, "{8}"), eight!($insn, "{9}"), eight!($insn, "{8}"), eight!($insn, "{9}"),
                    inout($class) v[0], inout($class) v[1], inout($class) v[2], inout($class) v[3],
                    inout($class) v[4], inout($class) v[5], inout($class) v[6], inout($class) v[7],
                    in($class) a, in($class) b,
                    options(nomem, nostack),
                );
            }
        }
        v.map(|value| value.to_bits_or_self())
    }};
}

/// Moves chain values between their `u64` bit form and the register type of the asm.
#[cfg(target_arch = "x86_64")]
trait RegisterValue: Copy {
    fn from_bits_or_self(bits: u64) -> Self;
    fn to_bits_or_self(self) -> u64;
}

#[cfg(target_arch = "x86_64")]
impl RegisterValue for f64 {
    fn from_bits_or_self(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn to_bits_or_self(self) -> u64 {
        self.to_bits()
    }
}

#[cfg(target_arch = "x86_64")]
impl RegisterValue for u64 {
    fn from_bits_or_self(bits: u64) -> Self {
        bits
    }
    fn to_bits_or_self(self) -> u64 {
        self
    }
}

/// The Galois LFSR step with a real conditional jump on the bit shifted out.
#[cfg(target_arch = "x86_64")]
fn branch_loop(mut x: Chains, taps: u64, iters: usize) -> Chains {
    macro_rules! lfsr_step {
        ($reg:literal) => {
            concat!(
                "shr ", $reg, ", 1\n", "jnc 2f\n", "xor ", $reg, ", {8}\n", "2:\n"
            )
        };
    }
    macro_rules! lfsr_round {
        () => {
            concat!(
                lfsr_step!("{0}"),
                lfsr_step!("{1}"),
                lfsr_step!("{2}"),
                lfsr_step!("{3}"),
                lfsr_step!("{4}"),
                lfsr_step!("{5}"),
                lfsr_step!("{6}"),
                lfsr_step!("{7}"),
            )
        };
    }
    for _ in 0..iters {
        // SAFETY: only the listed registers and flags are touched; the jumps stay inside the block.
        unsafe {
            std::arch::asm!(
                lfsr_round!(), lfsr_round!(), lfsr_round!(), lfsr_round!(),
                inout(reg) x[0], inout(reg) x[1], inout(reg) x[2], inout(reg) x[3],
                inout(reg) x[4], inout(reg) x[5], inout(reg) x[6], inout(reg) x[7],
                in(reg) taps,
                options(nomem, nostack),
            );
        }
    }
    x
}

/// Portable fallback: every step through `black_box`, so nothing folds.
#[cfg(not(target_arch = "x86_64"))]
fn opaque_loop(class: InstrClass, mut x: Chains, a: u64, b: u64, iters: usize) -> Chains {
    for _ in 0..iters {
        for round in 0..ROUNDS {
            let operand = if round % 2 == 0 { a } else { b };
            for chain in &mut x {
                *chain = black_box(step(class, *chain, operand, &[]));
            }
        }
    }
    x
}

/// `x = x / d + k` on 8 chains; the divisor is opaque, and the `+ k` keeps divisions from
/// combining, so each is a real `div`.
fn int_div_loop(mut x: Chains, k: u64, iters: usize) -> Chains {
    let d = black_box(3u64);
    for _ in 0..iters {
        for _ in 0..ROUNDS {
            for chain in &mut x {
                *chain = *chain / d + k;
            }
        }
    }
    x
}

/// The pointer chase: 8 cursors, each load's address is the previous load's value.
fn load_loop(mut x: Chains, ring: &[u32], iters: usize) -> Chains {
    let mut cursors = x.map(|c| c as usize);
    for _ in 0..iters {
        for _ in 0..ROUNDS {
            for cursor in &mut cursors {
                // SAFETY: the ring was built as a permutation of `0..ring.len()`, and cursors
                // start below `ring.len()`, so every index is in bounds.
                *cursor = unsafe { *ring.get_unchecked(*cursor) } as usize;
            }
        }
    }
    for (slot, cursor) in x.iter_mut().zip(cursors) {
        *slot = cursor as u64;
    }
    x
}

/// The timed loop of one task.
fn fast(class: InstrClass, iters: usize, ring: &[u32]) -> Chains {
    let (x, a, b) = setup(class);
    match class {
        InstrClass::IntDiv => int_div_loop(x, a, iters),
        InstrClass::Load => load_loop(x, ring, iters),
        #[cfg(target_arch = "x86_64")]
        InstrClass::FpAdd => rounds!("addsd", xmm_reg, f64, x, a, b, iters),
        #[cfg(target_arch = "x86_64")]
        InstrClass::FpMul => rounds!("mulsd", xmm_reg, f64, x, a, b, iters),
        #[cfg(target_arch = "x86_64")]
        InstrClass::FpDiv => rounds!("divsd", xmm_reg, f64, x, a, b, iters),
        #[cfg(target_arch = "x86_64")]
        InstrClass::IntAdd => rounds!("add", reg, u64, x, a, b, iters),
        #[cfg(target_arch = "x86_64")]
        InstrClass::IntMul => rounds!("imul", reg, u64, x, a, b, iters),
        #[cfg(target_arch = "x86_64")]
        InstrClass::Branch => branch_loop(x, a, iters),
        #[cfg(not(target_arch = "x86_64"))]
        _ => opaque_loop(class, x, a, b, iters),
    }
}

/// A random single cycle over `len` slots (Sattolo's algorithm): following it visits every slot.
fn random_ring(len: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..len as u32).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..len).rev() {
        order.swap(i, rng.below(i));
    }
    let mut ring = vec![0u32; len];
    for i in 0..len {
        ring[order[i] as usize] = order[(i + 1) % len];
    }
    ring
}

impl Kernel for Stressor {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.params
    }

    fn is_default_suite(&self) -> bool {
        false
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("iters", "64"), ("kb", "4")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let iters = params.get_usize_in(self, "iters", 1..=1 << 32)?;
        let ring = if self.class == InstrClass::Load {
            let kb = params.get_usize_in(self, "kb", 1..=1 << 20)?;
            random_ring(kb * 1024 / std::mem::size_of::<u32>(), 0x5EED_0005)
        } else {
            Vec::new()
        };
        let expected = reference(self.class, iters, &ring);
        Ok(Box::new(PreparedStressor {
            name: self.name,
            class: self.class,
            iters,
            ring,
            expected,
        }))
    }
}

struct PreparedStressor {
    name: &'static str,
    class: InstrClass,
    iters: usize,
    ring: Vec<u32>,
    expected: Chains,
}

impl PreparedKernel for PreparedStressor {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let tasks = exec.threads();
        let results: Mutex<Vec<Option<Chains>>> = Mutex::new(vec![None; tasks]);
        let runs_again: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let (outcome, elapsed) = timed(exec, || {
            exec.for_each_task(tasks, &|t| {
                let chains = fast(self.class, self.iters, &self.ring);
                let earlier =
                    results.lock().unwrap_or_else(PoisonError::into_inner)[t].replace(chains);
                if earlier.is_some() {
                    runs_again
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(t);
                }
                Ok(())
            })
        })?;
        outcome?;
        let runs_again = runs_again
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = runs_again.first() {
            return Err(wrong_result(
                self.name,
                format!("task {t} ran more than once"),
            ));
        }
        let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = results.iter().position(|r| *r != Some(self.expected)) {
            return Err(wrong_result(
                self.name,
                format!(
                    "task {t} ended with {:x?}, expected {:x?}",
                    results[t], self.expected
                ),
            ));
        }
        let ops = (tasks * self.iters * OPS_PER_ITERATION) as f64;
        let rate = ops / elapsed.as_secs_f64().max(1e-12);
        Ok(RunReport {
            elapsed,
            metrics: vec![Metric::new("ops-per-sec", rate, "ops/s")],
            untimed_threads_created: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_loops_match_the_plain_simulation() {
        let ring = random_ring(1000, 9);
        for stressor in STRESSORS {
            assert_eq!(
                fast(stressor.class, 100, &ring),
                reference(stressor.class, 100, &ring),
                "{}",
                stressor.name
            );
        }
    }

    #[test]
    fn closed_forms_hold() {
        let chains = fast(InstrClass::FpAdd, 10, &[]);
        assert_eq!(f64::from_bits(chains[3]), 3.0 + 40.0);
        let chains = fast(InstrClass::FpMul, 10, &[]);
        assert_eq!(f64::from_bits(chains[3]), 4.0);
        let chains = fast(InstrClass::IntAdd, 10, &[]);
        assert_eq!(chains[1], (1 << 40) + 10 * 2 * (3 + 5));
    }

    #[test]
    fn ring_is_one_cycle_through_every_slot() {
        let ring = random_ring(500, 1);
        let mut at = 0usize;
        let mut seen = vec![false; 500];
        for _ in 0..500 {
            assert!(!seen[at]);
            seen[at] = true;
            at = ring[at] as usize;
        }
        assert_eq!(at, 0);
    }

    #[test]
    fn every_stressor_declares_its_class() {
        assert_eq!(declared_class("branch"), Some(InstrClass::Branch));
        assert_eq!(declared_class("load-dep"), Some(InstrClass::Load));
        assert_eq!(
            STRESSORS
                .iter()
                .filter_map(|s| declared_class(s.name))
                .count(),
            8
        );
    }
}
