//! Instruction mixes: how much of each execution-unit class a thread uses.
//!
//! The SMT study attributes sibling slowdown to threads competing for the same execution
//! units. Portable hardware counters (see [`crate::perf`]) can tell floating-point, load, store
//! and branch instructions apart on ARMv8, Intel and AMD Zen, but not an FP add from an FP
//! multiply, so the mix uses the five coarse classes the SMT study profiles and every family can
//! measure: [`InstrClass`] — branch, floating point, integer, load and store. Loads and stores
//! are kept apart (not one memory class) because they use different units: load ports and the
//! load queue versus the store-address/store-data ports and the store buffer.
//! A mix is a vector of counts; algorithms that compare threads of different lengths use its
//! [`shares`](InstructionMix::shares) (counts divided by their sum).
//!
//! Three sources produce mixes: a profile measured on real hardware
//! ([`crate::perf::Profile::thread_mixes`]), the dominant class each SMT-bench kernel declares
//! ([`InstructionMix::declared_for_kernel`]) and the NAS-like mixes assumed for the model report
//! ([`nas_like_mixes`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A class of instructions that share execution units on an SMT core.
///
/// ```
/// use parbench_mapper::InstrClass;
/// assert_eq!(InstrClass::ALL.len(), 5);
/// assert_eq!(InstrClass::Load.name(), "load");
/// assert_eq!("store".parse::<InstrClass>(), Ok(InstrClass::Store));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum InstrClass {
    /// Floating-point and SIMD arithmetic (add, multiply, divide, FMA).
    Fp,
    /// Integer arithmetic and logic, and anything not counted in another class.
    Int,
    /// Memory loads (load ports, load queue).
    Load,
    /// Memory stores (store-address/store-data ports, store buffer).
    Store,
    /// Branches (conditional, unconditional, indirect).
    Branch,
}

impl InstrClass {
    /// Every class, in the order mixes store them.
    ///
    /// ```
    /// assert_eq!(parbench_mapper::InstrClass::ALL[0], parbench_mapper::InstrClass::Fp);
    /// ```
    pub const ALL: [InstrClass; CLASS_COUNT] = [
        InstrClass::Fp,
        InstrClass::Int,
        InstrClass::Load,
        InstrClass::Store,
        InstrClass::Branch,
    ];

    /// Short lower-case name used in reports and JSON.
    ///
    /// ```
    /// assert_eq!(parbench_mapper::InstrClass::Fp.name(), "fp");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            InstrClass::Fp => "fp",
            InstrClass::Int => "int",
            InstrClass::Load => "load",
            InstrClass::Store => "store",
            InstrClass::Branch => "branch",
        }
    }

    /// Names accepted by [`str::parse`], in [`ALL`](Self::ALL) order.
    ///
    /// ```
    /// assert_eq!(parbench_mapper::InstrClass::NAMES, ["fp", "int", "load", "store", "branch"]);
    /// ```
    pub const NAMES: [&'static str; CLASS_COUNT] = ["fp", "int", "load", "store", "branch"];

    fn slot(self) -> usize {
        match self {
            InstrClass::Fp => 0,
            InstrClass::Int => 1,
            InstrClass::Load => 2,
            InstrClass::Store => 3,
            InstrClass::Branch => 4,
        }
    }
}

/// A class name that is not one of [`InstrClass::NAMES`].
///
/// ```
/// let error = "simd".parse::<parbench_mapper::InstrClass>().unwrap_err();
/// assert!(error.to_string().contains("fp, int, load, store, branch"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown instruction class {name:?}; valid: {}", InstrClass::NAMES.join(", "))]
pub struct UnknownClass {
    /// The name given.
    pub name: String,
}

impl std::str::FromStr for InstrClass {
    type Err = UnknownClass;

    fn from_str(name: &str) -> Result<Self, UnknownClass> {
        InstrClass::ALL
            .into_iter()
            .find(|class| class.name() == name)
            .ok_or_else(|| UnknownClass {
                name: name.to_owned(),
            })
    }
}

/// How many instruction classes a mix counts.
///
/// ```
/// assert_eq!(parbench_mapper::mix::CLASS_COUNT, parbench_mapper::InstrClass::ALL.len());
/// ```
pub const CLASS_COUNT: usize = 5;

/// The SMT-bench kernel names and the class each one stresses (as declared by the kernels crate).
const DECLARED_KERNEL_CLASSES: [(&str, InstrClass); 8] = [
    ("fp-add", InstrClass::Fp),
    ("fp-mul", InstrClass::Fp),
    ("fp-div", InstrClass::Fp),
    ("int-add", InstrClass::Int),
    ("int-mul", InstrClass::Int),
    ("int-div", InstrClass::Int),
    ("branch", InstrClass::Branch),
    // A dependent pointer chase: loads only.
    ("load-dep", InstrClass::Load),
];

/// Instruction counts per [`InstrClass`] for one thread.
///
/// ```
/// use parbench_mapper::{InstrClass, InstructionMix};
/// let mix = InstructionMix::new([(InstrClass::Fp, 600.0), (InstrClass::Store, 400.0)]);
/// assert_eq!(mix.count(InstrClass::Fp), 600.0);
/// assert_eq!(mix.shares()[3], 0.4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct InstructionMix {
    counts: [f64; CLASS_COUNT],
}

impl InstructionMix {
    /// Builds a mix from `(class, count)` pairs; repeated classes add up, negative or
    /// non-finite counts are treated as zero (a counter cannot count below nothing).
    ///
    /// ```
    /// use parbench_mapper::{InstrClass, InstructionMix};
    /// let mix = InstructionMix::new([(InstrClass::Int, 2.0), (InstrClass::Int, 3.0)]);
    /// assert_eq!(mix.count(InstrClass::Int), 5.0);
    /// ```
    pub fn new(counts: impl IntoIterator<Item = (InstrClass, f64)>) -> Self {
        let mut mix = InstructionMix::default();
        for (class, count) in counts {
            if count.is_finite() && count > 0.0 {
                mix.counts[class.slot()] += count;
            }
        }
        mix
    }

    /// The count of one class.
    ///
    /// ```
    /// use parbench_mapper::{InstrClass, InstructionMix};
    /// assert_eq!(InstructionMix::default().count(InstrClass::Branch), 0.0);
    /// ```
    pub fn count(&self, class: InstrClass) -> f64 {
        self.counts[class.slot()]
    }

    /// Sum of all class counts.
    ///
    /// ```
    /// use parbench_mapper::{InstrClass, InstructionMix};
    /// let mix = InstructionMix::new([(InstrClass::Int, 2.0), (InstrClass::Fp, 3.0)]);
    /// assert_eq!(mix.total(), 5.0);
    /// ```
    pub fn total(&self) -> f64 {
        self.counts.iter().sum()
    }

    /// Fraction of the total per class, in [`InstrClass::ALL`] order; all zero for an empty mix.
    ///
    /// ```
    /// use parbench_mapper::{InstrClass, InstructionMix};
    /// let mix = InstructionMix::new([(InstrClass::Branch, 5.0)]);
    /// assert_eq!(mix.shares(), [0.0, 0.0, 0.0, 0.0, 1.0]);
    /// ```
    pub fn shares(&self) -> [f64; CLASS_COUNT] {
        let total = self.total();
        if total > 0.0 {
            self.counts.map(|count| count / total)
        } else {
            [0.0; CLASS_COUNT]
        }
    }

    /// The mix an SMT-bench kernel declares: all of its instructions in its dominant class
    /// (`fp-add`, `fp-mul`, `fp-div` → FP; `int-add`, `int-mul`, `int-div` → integer; `branch`;
    /// `load-dep` → load). `None` for any other name.
    ///
    /// ```
    /// use parbench_mapper::{InstrClass, InstructionMix};
    /// let mix = InstructionMix::declared_for_kernel("fp-mul").unwrap();
    /// assert_eq!(mix.shares()[0], 1.0);
    /// assert!(InstructionMix::declared_for_kernel("fp-sqrt").is_none());
    /// ```
    pub fn declared_for_kernel(name: &str) -> Option<InstructionMix> {
        DECLARED_KERNEL_CLASSES
            .iter()
            .find(|(kernel, _)| *kernel == name)
            .map(|&(_, class)| InstructionMix::new([(class, 1.0)]))
    }

    /// Names accepted by [`declared_for_kernel`](Self::declared_for_kernel), for error messages.
    ///
    /// ```
    /// assert!(parbench_mapper::InstructionMix::declared_kernel_names().contains(&"load-dep"));
    /// ```
    pub fn declared_kernel_names() -> Vec<&'static str> {
        DECLARED_KERNEL_CLASSES
            .iter()
            .map(|(kernel, _)| *kernel)
            .collect()
    }
}

/// Percentages per class, e.g. `fp 45% int 10% load 28% store 12% branch 5%`.
///
/// ```
/// use parbench_mapper::{InstrClass, InstructionMix};
/// let mix = InstructionMix::new([(InstrClass::Fp, 1.0), (InstrClass::Int, 1.0)]);
/// assert_eq!(mix.to_string(), "fp 50% int 50% load 0% store 0% branch 0%");
/// ```
impl fmt::Display for InstructionMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = InstrClass::ALL
            .iter()
            .zip(self.shares())
            .map(|(class, share)| format!("{} {:.0}%", class.name(), share * 100.0))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// A named mix: one application's (or kernel's) per-thread instruction mix.
///
/// ```
/// let bt = &parbench_mapper::nas_like_mixes()[0];
/// assert_eq!(bt.name, "BT");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedMix {
    /// Application or kernel name.
    pub name: String,
    /// Its instruction mix.
    pub mix: InstructionMix,
}

/// NAS-Parallel-Benchmark-like mixes, in percent of instructions (fp, int, load, store, branch).
/// They are assumptions shaped after the SMT study's figure 1b, not measurements: BT, LU and
/// SP are FP-heavy, IS, EP and CG integer-heavy, MG and UA load-heavy; memory instructions are
/// split about two loads per store, as in typical compiled loops, except IS (a bucket sort,
/// scatter-heavy: as many stores as loads).
///
/// | app | fp | int | load | store | branch |
/// |-----|----|-----|------|-------|--------|
/// | BT  | 55 | 10  | 20   | 10    | 5      |
/// | LU  | 50 | 12  | 22   | 10    | 6      |
/// | SP  | 52 | 10  | 22   | 11    | 5      |
/// | IS  | 0  | 55  | 15   | 15    | 15     |
/// | EP  | 15 | 55  | 13   | 7     | 10     |
/// | CG  | 10 | 50  | 22   | 8     | 10     |
/// | MG  | 15 | 10  | 45   | 20    | 10     |
/// | UA  | 15 | 15  | 40   | 20    | 10     |
///
/// ```
/// let mixes = parbench_mapper::nas_like_mixes();
/// let names: Vec<&str> = mixes.iter().map(|m| m.name.as_str()).collect();
/// assert_eq!(names, ["BT", "LU", "SP", "IS", "EP", "CG", "MG", "UA"]);
/// ```
pub fn nas_like_mixes() -> Vec<NamedMix> {
    const TABLE: [(&str, [f64; CLASS_COUNT]); 8] = [
        ("BT", [55.0, 10.0, 20.0, 10.0, 5.0]),
        ("LU", [50.0, 12.0, 22.0, 10.0, 6.0]),
        ("SP", [52.0, 10.0, 22.0, 11.0, 5.0]),
        ("IS", [0.0, 55.0, 15.0, 15.0, 15.0]),
        ("EP", [15.0, 55.0, 13.0, 7.0, 10.0]),
        ("CG", [10.0, 50.0, 22.0, 8.0, 10.0]),
        ("MG", [15.0, 10.0, 45.0, 20.0, 10.0]),
        ("UA", [15.0, 15.0, 40.0, 20.0, 10.0]),
    ];
    TABLE
        .iter()
        .map(|(name, percent)| NamedMix {
            name: (*name).to_owned(),
            mix: InstructionMix::new(InstrClass::ALL.into_iter().zip(*percent)),
        })
        .collect()
}

/// The SMT-bench kernels' declared mixes, one per kernel name.
///
/// ```
/// assert_eq!(parbench_mapper::smt_bench_mixes().len(), 8);
/// ```
pub fn smt_bench_mixes() -> Vec<NamedMix> {
    DECLARED_KERNEL_CLASSES
        .iter()
        .map(|&(name, class)| NamedMix {
            name: name.to_owned(),
            mix: InstructionMix::new([(class, 1.0)]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_kernels_map_to_their_dominant_class() {
        let dominant = |name| {
            let shares = InstructionMix::declared_for_kernel(name).unwrap().shares();
            InstrClass::ALL[shares.iter().position(|&s| s == 1.0).unwrap()]
        };
        assert_eq!(dominant("fp-div"), InstrClass::Fp);
        assert_eq!(dominant("int-mul"), InstrClass::Int);
        assert_eq!(dominant("branch"), InstrClass::Branch);
        assert_eq!(dominant("load-dep"), InstrClass::Load);
    }

    #[test]
    fn invalid_counts_are_ignored() {
        let mix = InstructionMix::new([
            (InstrClass::Fp, f64::NAN),
            (InstrClass::Int, -3.0),
            (InstrClass::Branch, 2.0),
        ]);
        assert_eq!(mix.shares(), [0.0, 0.0, 0.0, 0.0, 1.0]);
        assert_eq!(InstructionMix::default().shares(), [0.0; CLASS_COUNT]);
    }

    #[test]
    fn class_names_round_trip() {
        for class in InstrClass::ALL {
            assert_eq!(class.name().parse::<InstrClass>(), Ok(class));
            assert_eq!(InstrClass::ALL[class.slot()], class);
        }
        assert!("load-store".parse::<InstrClass>().is_err());
    }

    #[test]
    fn nas_like_mixes_sum_to_one_hundred_percent() {
        for named in nas_like_mixes() {
            assert!((named.mix.total() - 100.0).abs() < 1e-9, "{}", named.name);
        }
    }
}
