//! Which perf events to open on which CPU family, and what each one measures.
//!
//! Software events (task clock, context switches, CPU migrations) exist on every Linux kernel.
//! Hardware events depend on the PMU. Generic `PERF_TYPE_HARDWARE` / `PERF_TYPE_HW_CACHE`
//! events cover cycles, instructions, L1D and last-level-cache reads and backend stalls where
//! the kernel maps them; instruction classes need raw (`PERF_TYPE_RAW`) codes, listed per family:
//!
//! | family | event | raw code | feeds |
//! |--------|-------|----------|-------|
//! | ARMv8 PMUv3 | INST_SPEC | 0x1B | speculative instructions |
//! | | LD_SPEC / ST_SPEC | 0x70 / 0x71 | load class / store class |
//! | | DP_SPEC | 0x73 | int class |
//! | | ASE_SPEC / VFP_SPEC | 0x74 / 0x75 | fp class (SIMD + scalar FP) |
//! | | BR_IMMED_SPEC / BR_INDIRECT_SPEC | 0x78 / 0x7A | branch class |
//! | | BR_RETIRED | 0x21 | retired branches |
//! | | STALL_BACKEND | 0x24 | backend (dispatch) stall cycles |
//! | | L1D_CACHE / L1D_CACHE_REFILL | 0x04 / 0x03 | L1 accesses / misses |
//! | | L2D_CACHE / L2D_CACHE_REFILL | 0x16 / 0x17 | L2 accesses / misses |
//! | | L3D_CACHE / L3D_CACHE_REFILL | 0x2B / 0x2A | L3 accesses / misses |
//! | Intel | BR_INST_RETIRED.ALL_BRANCHES | 0x00c4 | branch class |
//! | | MEM_INST_RETIRED.ALL_LOADS / ALL_STORES | 0x81d0 / 0x82d0 | load class / store class |
//! | | FP_ARITH_INST_RETIRED (all umasks) | 0xffc7 | fp class |
//! | AMD Zen | ex_ret_brn | 0xc2 | branch class |
//! | | ex_ret_mmx_fp_instr | 0x07cb | fp class |
//! | | ls_dispatch loads / stores | 0x0129 / 0x0229 | load class / store class |
//!
//! On Intel and AMD the int class is derived as instructions minus the other four classes
//! (every instruction that is not FP, load, store or branch), and L1/L3 come from the generic cache
//! events; there is no portable L2 event, so L2 MPKI is reported unavailable there. Raw codes
//! are `umask << 8 | event` as the kernel's `cpu/config=…/` syntax expects.

use perf_event::events::{CacheResult, Hardware, Software, WhichCache};
use serde::{Deserialize, Serialize};

use super::study_metrics::StallResource;
use crate::mix::InstrClass;

/// A CPU family with its own raw-event table.
///
/// ```
/// use parbench_mapper::perf::CpuFamily;
/// let family = CpuFamily::detect();
/// assert!(!parbench_mapper::perf::event_table(family).is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuFamily {
    /// AArch64 with the ARMv8 PMUv3 common events.
    ArmV8,
    /// Intel x86-64 (Skylake-era event codes).
    Intel,
    /// AMD Zen (family 17h and later).
    AmdZen,
    /// Anything else: generic events only.
    Other,
}

impl CpuFamily {
    /// The family of the running CPU (from the architecture and `/proc/cpuinfo`).
    ///
    /// ```
    /// let _ = parbench_mapper::perf::CpuFamily::detect();
    /// ```
    pub fn detect() -> CpuFamily {
        if cfg!(target_arch = "aarch64") {
            return CpuFamily::ArmV8;
        }
        if !cfg!(target_arch = "x86_64") {
            return CpuFamily::Other;
        }
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Self::from_cpuinfo(&cpuinfo)
    }

    /// Classifies an x86 `/proc/cpuinfo` text by its first `vendor_id` and `cpu family`.
    ///
    /// ```
    /// use parbench_mapper::perf::CpuFamily;
    /// let zen = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\n";
    /// assert_eq!(CpuFamily::from_cpuinfo(zen), CpuFamily::AmdZen);
    /// assert_eq!(CpuFamily::from_cpuinfo("vendor_id : GenuineIntel\n"), CpuFamily::Intel);
    /// ```
    pub fn from_cpuinfo(cpuinfo: &str) -> CpuFamily {
        let field = |name: &str| {
            cpuinfo
                .lines()
                .find(|line| line.split(':').next().map(str::trim) == Some(name))
                .and_then(|line| line.split(':').nth(1))
                .map(str::trim)
        };
        match field("vendor_id") {
            Some("GenuineIntel") => CpuFamily::Intel,
            Some("AuthenticAMD") => match field("cpu family").and_then(|f| f.parse::<u32>().ok()) {
                Some(family) if family >= 0x17 => CpuFamily::AmdZen,
                _ => CpuFamily::Other,
            },
            _ => CpuFamily::Other,
        }
    }
}

/// What an event's count contributes to.
///
/// ```
/// use parbench_mapper::perf::Quantity;
/// assert_eq!(Quantity::Cycles.name(), "cycles");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Quantity {
    /// Thread CPU time in nanoseconds.
    TaskClockNs,
    /// Context switches.
    ContextSwitches,
    /// Migrations to another CPU.
    CpuMigrations,
    /// Core cycles.
    Cycles,
    /// Retired instructions.
    Instructions,
    /// Speculatively executed instructions (ARM INST_SPEC).
    SpeculativeInstructions,
    /// Instructions of one class (several events may add up to one class).
    Class(InstrClass),
    /// Retired branches (ARM BR_RETIRED).
    BranchesRetired,
    /// Cycles the backend could not accept (dispatch) new operations.
    BackendStallCycles,
    /// L1 data-cache accesses.
    L1Accesses,
    /// L1 data-cache misses (refills).
    L1Misses,
    /// L2 accesses.
    L2Accesses,
    /// L2 misses.
    L2Misses,
    /// Last-level (L3) accesses.
    L3Accesses,
    /// Last-level (L3) misses.
    L3Misses,
    /// Retired loads that hit L1 (Intel MEM_LOAD_RETIRED.L1_HIT).
    LoadsHitL1,
    /// Retired loads that hit L2.
    LoadsHitL2,
    /// Retired loads that hit L3.
    LoadsHitL3,
    /// Retired loads that missed L1.
    LoadsMissL1,
    /// Retired loads that missed L2.
    LoadsMissL2,
    /// Cycles in which no uop executed (Intel UOPS_EXECUTED.STALL_CYCLES).
    ExecutionStallCycles,
    /// Cycles dispatch stalled on a full resource (Intel RESOURCE_STALLS.*).
    ResourceStallCycles(StallResource),
}

impl Quantity {
    /// Lower-case name for reports.
    ///
    /// ```
    /// use parbench_mapper::{perf::Quantity, InstrClass};
    /// assert_eq!(Quantity::Class(InstrClass::Fp).name(), "fp instructions");
    /// ```
    pub fn name(self) -> String {
        match self {
            Quantity::TaskClockNs => "task-clock ns".into(),
            Quantity::ContextSwitches => "context switches".into(),
            Quantity::CpuMigrations => "cpu migrations".into(),
            Quantity::Cycles => "cycles".into(),
            Quantity::Instructions => "instructions".into(),
            Quantity::SpeculativeInstructions => "speculative instructions".into(),
            Quantity::Class(class) => format!("{} instructions", class.name()),
            Quantity::BranchesRetired => "branches retired".into(),
            Quantity::BackendStallCycles => "backend stall cycles".into(),
            Quantity::L1Accesses => "L1D accesses".into(),
            Quantity::L1Misses => "L1D misses".into(),
            Quantity::L2Accesses => "L2 accesses".into(),
            Quantity::L2Misses => "L2 misses".into(),
            Quantity::L3Accesses => "L3 accesses".into(),
            Quantity::L3Misses => "L3 misses".into(),
            Quantity::LoadsHitL1 => "loads hitting L1".into(),
            Quantity::LoadsHitL2 => "loads hitting L2".into(),
            Quantity::LoadsHitL3 => "loads hitting L3".into(),
            Quantity::LoadsMissL1 => "loads missing L1".into(),
            Quantity::LoadsMissL2 => "loads missing L2".into(),
            Quantity::ExecutionStallCycles => "uops_executed.stall_cycles".into(),
            Quantity::ResourceStallCycles(resource) => {
                format!("{} stall cycles", resource.name())
            }
        }
    }
}

/// How to ask the kernel for an event.
///
/// ```
/// use parbench_mapper::perf::EventSource;
/// let intel_branches = EventSource::Raw(0x00c4);
/// assert!(intel_branches.is_hardware());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSource {
    /// `PERF_TYPE_SOFTWARE`.
    Software(Software),
    /// `PERF_TYPE_HARDWARE` (generic, kernel-mapped).
    Hardware(Hardware),
    /// `PERF_TYPE_HW_CACHE` read events (generic, kernel-mapped).
    CacheRead {
        /// Which cache.
        cache: WhichCache,
        /// Accesses or misses.
        result: CacheResult,
    },
    /// `PERF_TYPE_RAW` with a PMU-specific code.
    Raw(u64),
}

impl EventSource {
    /// Whether the event needs a PMU (everything except software events).
    ///
    /// ```
    /// use parbench_mapper::perf::EventSource;
    /// use perf_event::events::Software;
    /// assert!(!EventSource::Software(Software::TASK_CLOCK).is_hardware());
    /// ```
    pub fn is_hardware(&self) -> bool {
        !matches!(self, EventSource::Software(_))
    }
}

/// One event to open: its name, how to open it, and what it measures.
///
/// ```
/// let table = parbench_mapper::perf::event_table(parbench_mapper::perf::CpuFamily::Intel);
/// assert!(table.iter().any(|e| e.name == "MEM_INST_RETIRED.ALL_LOADS"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpec {
    /// Vendor (or perf) name of the event.
    pub name: &'static str,
    /// How to open it.
    pub source: EventSource,
    /// What its count adds to.
    pub quantity: Quantity,
}

const fn event(name: &'static str, source: EventSource, quantity: Quantity) -> EventSpec {
    EventSpec {
        name,
        source,
        quantity,
    }
}

const fn generic_cache(cache: WhichCache, result: CacheResult) -> EventSource {
    EventSource::CacheRead { cache, result }
}

/// Software events: available without a PMU.
///
/// ```
/// let names: Vec<&str> = parbench_mapper::perf::SOFTWARE_EVENTS.iter().map(|e| e.name).collect();
/// assert_eq!(names, ["task-clock", "context-switches", "cpu-migrations"]);
/// ```
pub const SOFTWARE_EVENTS: [EventSpec; 3] = [
    event(
        "task-clock",
        EventSource::Software(Software::TASK_CLOCK),
        Quantity::TaskClockNs,
    ),
    event(
        "context-switches",
        EventSource::Software(Software::CONTEXT_SWITCHES),
        Quantity::ContextSwitches,
    ),
    event(
        "cpu-migrations",
        EventSource::Software(Software::CPU_MIGRATIONS),
        Quantity::CpuMigrations,
    ),
];

const GENERIC_CORE_EVENTS: [EventSpec; 2] = [
    event(
        "cycles",
        EventSource::Hardware(Hardware::CPU_CYCLES),
        Quantity::Cycles,
    ),
    event(
        "instructions",
        EventSource::Hardware(Hardware::INSTRUCTIONS),
        Quantity::Instructions,
    ),
];

/// Generic events x86 families use for caches and stalls (no portable L2 event exists).
const GENERIC_X86_MEMORY_EVENTS: [EventSpec; 5] = [
    event(
        "L1-dcache-loads",
        generic_cache(WhichCache::L1D, CacheResult::ACCESS),
        Quantity::L1Accesses,
    ),
    event(
        "L1-dcache-load-misses",
        generic_cache(WhichCache::L1D, CacheResult::MISS),
        Quantity::L1Misses,
    ),
    event(
        "LLC-loads",
        generic_cache(WhichCache::LL, CacheResult::ACCESS),
        Quantity::L3Accesses,
    ),
    event(
        "LLC-load-misses",
        generic_cache(WhichCache::LL, CacheResult::MISS),
        Quantity::L3Misses,
    ),
    event(
        "stalled-cycles-backend",
        EventSource::Hardware(Hardware::STALLED_CYCLES_BACKEND),
        Quantity::BackendStallCycles,
    ),
];

const ARMV8_EVENTS: [EventSpec; 16] = [
    event(
        "INST_SPEC",
        EventSource::Raw(0x1B),
        Quantity::SpeculativeInstructions,
    ),
    event(
        "LD_SPEC",
        EventSource::Raw(0x70),
        Quantity::Class(InstrClass::Load),
    ),
    event(
        "ST_SPEC",
        EventSource::Raw(0x71),
        Quantity::Class(InstrClass::Store),
    ),
    event(
        "DP_SPEC",
        EventSource::Raw(0x73),
        Quantity::Class(InstrClass::Int),
    ),
    event(
        "ASE_SPEC",
        EventSource::Raw(0x74),
        Quantity::Class(InstrClass::Fp),
    ),
    event(
        "VFP_SPEC",
        EventSource::Raw(0x75),
        Quantity::Class(InstrClass::Fp),
    ),
    event(
        "BR_IMMED_SPEC",
        EventSource::Raw(0x78),
        Quantity::Class(InstrClass::Branch),
    ),
    event(
        "BR_INDIRECT_SPEC",
        EventSource::Raw(0x7A),
        Quantity::Class(InstrClass::Branch),
    ),
    event(
        "BR_RETIRED",
        EventSource::Raw(0x21),
        Quantity::BranchesRetired,
    ),
    event(
        "STALL_BACKEND",
        EventSource::Raw(0x24),
        Quantity::BackendStallCycles,
    ),
    event("L1D_CACHE", EventSource::Raw(0x04), Quantity::L1Accesses),
    event(
        "L1D_CACHE_REFILL",
        EventSource::Raw(0x03),
        Quantity::L1Misses,
    ),
    event("L2D_CACHE", EventSource::Raw(0x16), Quantity::L2Accesses),
    event(
        "L2D_CACHE_REFILL",
        EventSource::Raw(0x17),
        Quantity::L2Misses,
    ),
    event("L3D_CACHE", EventSource::Raw(0x2B), Quantity::L3Accesses),
    event(
        "L3D_CACHE_REFILL",
        EventSource::Raw(0x2A),
        Quantity::L3Misses,
    ),
];

const INTEL_EVENTS: [EventSpec; 4] = [
    event(
        "BR_INST_RETIRED.ALL_BRANCHES",
        EventSource::Raw(0x00c4),
        Quantity::Class(InstrClass::Branch),
    ),
    event(
        "MEM_INST_RETIRED.ALL_LOADS",
        EventSource::Raw(0x81d0),
        Quantity::Class(InstrClass::Load),
    ),
    event(
        "MEM_INST_RETIRED.ALL_STORES",
        EventSource::Raw(0x82d0),
        Quantity::Class(InstrClass::Store),
    ),
    event(
        "FP_ARITH_INST_RETIRED",
        EventSource::Raw(0xffc7),
        Quantity::Class(InstrClass::Fp),
    ),
];

const AMD_ZEN_EVENTS: [EventSpec; 4] = [
    event(
        "ex_ret_brn",
        EventSource::Raw(0xc2),
        Quantity::Class(InstrClass::Branch),
    ),
    event(
        "ex_ret_mmx_fp_instr",
        EventSource::Raw(0x07cb),
        Quantity::Class(InstrClass::Fp),
    ),
    event(
        "ls_dispatch.ld_dispatch",
        EventSource::Raw(0x0129),
        Quantity::Class(InstrClass::Load),
    ),
    event(
        "ls_dispatch.store_dispatch",
        EventSource::Raw(0x0229),
        Quantity::Class(InstrClass::Store),
    ),
];

/// Generic branch event for families without a raw table.
const GENERIC_BRANCH_EVENT: EventSpec = event(
    "branch-instructions",
    EventSource::Hardware(Hardware::BRANCH_INSTRUCTIONS),
    Quantity::Class(InstrClass::Branch),
);

/// Every event to open on `family`: software events, cycles and instructions, then the
/// family's table (see the module documentation).
///
/// ```
/// use parbench_mapper::perf::{event_table, CpuFamily, Quantity};
/// let arm = event_table(CpuFamily::ArmV8);
/// assert!(arm.iter().any(|e| e.name == "STALL_BACKEND" && e.quantity == Quantity::BackendStallCycles));
/// ```
pub fn event_table(family: CpuFamily) -> Vec<EventSpec> {
    let specific: Vec<EventSpec> = match family {
        CpuFamily::ArmV8 => ARMV8_EVENTS.to_vec(),
        CpuFamily::Intel => [INTEL_EVENTS.as_slice(), &GENERIC_X86_MEMORY_EVENTS].concat(),
        CpuFamily::AmdZen => [AMD_ZEN_EVENTS.as_slice(), &GENERIC_X86_MEMORY_EVENTS].concat(),
        CpuFamily::Other => [
            [GENERIC_BRANCH_EVENT].as_slice(),
            &GENERIC_X86_MEMORY_EVENTS,
        ]
        .concat(),
    };
    [SOFTWARE_EVENTS.as_slice(), &GENERIC_CORE_EVENTS, &specific].concat()
}

/// Whether the int class is derived (instructions minus fp, load, store and branch) rather than
/// counted, which is the case on every family except ARMv8 (DP_SPEC).
///
/// ```
/// use parbench_mapper::perf::{int_class_is_derived, CpuFamily};
/// assert!(int_class_is_derived(CpuFamily::Intel));
/// assert!(!int_class_is_derived(CpuFamily::ArmV8));
/// ```
pub fn int_class_is_derived(family: CpuFamily) -> bool {
    family != CpuFamily::ArmV8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_codes_are_in_the_tables() {
        let code = |family, name| {
            event_table(family)
                .into_iter()
                .find(|e| e.name == name)
                .map(|e| e.source)
        };
        assert_eq!(
            code(CpuFamily::ArmV8, "INST_SPEC"),
            Some(EventSource::Raw(0x1B))
        );
        assert_eq!(
            code(CpuFamily::ArmV8, "BR_INDIRECT_SPEC"),
            Some(EventSource::Raw(0x7A))
        );
        assert_eq!(
            code(CpuFamily::Intel, "FP_ARITH_INST_RETIRED"),
            Some(EventSource::Raw(0xffc7))
        );
        assert_eq!(
            code(CpuFamily::Intel, "MEM_INST_RETIRED.ALL_STORES"),
            Some(EventSource::Raw(0x82d0))
        );
        assert_eq!(
            code(CpuFamily::AmdZen, "ex_ret_mmx_fp_instr"),
            Some(EventSource::Raw(0x07cb))
        );
        assert_eq!(
            code(CpuFamily::AmdZen, "ls_dispatch.store_dispatch"),
            Some(EventSource::Raw(0x0229))
        );
    }

    #[test]
    fn every_table_starts_with_the_software_events() {
        for family in [
            CpuFamily::ArmV8,
            CpuFamily::Intel,
            CpuFamily::AmdZen,
            CpuFamily::Other,
        ] {
            let table = event_table(family);
            assert_eq!(&table[..3], &SOFTWARE_EVENTS);
            assert!(table[3..].iter().all(|e| e.source.is_hardware()));
        }
    }

    #[test]
    fn old_amd_is_not_zen() {
        assert_eq!(
            CpuFamily::from_cpuinfo("vendor_id : AuthenticAMD\ncpu family : 16\n"),
            CpuFamily::Other
        );
        assert_eq!(CpuFamily::from_cpuinfo(""), CpuFamily::Other);
    }
}
