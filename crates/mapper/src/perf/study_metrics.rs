//! The tail-latency study's own metric definitions, next to the project's ([`super::Metrics`]).
//!
//! The study read Intel counters during its latency runs and defined:
//!
//! - **memory accesses per µs** = L3 misses × frequency (MHz) / cycles — L3 misses per µs of
//!   unhalted time at the nominal frequency (the project's own metric counts load and store
//!   instructions per µs of task clock instead);
//! - **hit rates from retired loads**: L1 = `MEM_LOAD_RETIRED.L1_HIT` / `MEM_INST_RETIRED.ALL_LOADS`,
//!   L2 = `L2_HIT` / `L1_MISS`, L3 = `L3_HIT` / `L2_MISS` (each level's hits over the loads that
//!   reached it);
//! - **dispatch stalls** = `UOPS_EXECUTED.STALL_CYCLES` / cycles, broken down by
//!   `RESOURCE_STALLS.ANY` (RES), `.ROB`, `.RS` and `.SB`, each / cycles.
//!
//! | event | raw code (`cmask << 24 \| inv << 23 \| umask << 8 \| event`) | generations |
//! |---|---|---|
//! | MEM_LOAD_RETIRED.L1_HIT / L2_HIT / L3_HIT | 0x01d1 / 0x02d1 / 0x04d1 | Haswell and later (Haswell calls them MEM_LOAD_UOPS_RETIRED) |
//! | MEM_LOAD_RETIRED.L1_MISS / L2_MISS | 0x08d1 / 0x10d1 | Haswell and later |
//! | UOPS_EXECUTED.STALL_CYCLES | 0x018001b1 (cmask 1, inv) | Haswell and later |
//! | RESOURCE_STALLS.ANY / .SB | 0x01a2 / 0x08a2 | Haswell and later |
//! | RESOURCE_STALLS.RS / .ROB | 0x04a2 / 0x10a2 | Haswell and Broadwell only |
//!
//! These are Intel events: on other families ([`tail_latency_events`]) and on Intel models
//! without `.RS`/`.ROB` the events are listed as not on this CPU, with the reason, and the
//! metrics that need them are `None` — never computed from a code that means something else.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::events::{CpuFamily, EventSource, EventSpec, Quantity, event_table};
use super::metrics::{QuantityTotals, derive_metric};
use super::profile::UnavailableEvent;
use crate::mix::InstrClass;

/// A resource whose full state stalls dispatch, in the study's breakdown order.
///
/// ```
/// use parbench_mapper::perf::StallResource;
/// assert_eq!(StallResource::ALL.map(|r| r.name()), ["RES", "ROB", "RS", "SB"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum StallResource {
    /// Any resource (RESOURCE_STALLS.ANY).
    Any,
    /// Re-order buffer full.
    Rob,
    /// Reservation station full.
    Rs,
    /// Store buffer full.
    Sb,
}

impl StallResource {
    /// The breakdown's order.
    pub const ALL: [StallResource; 4] = [
        StallResource::Any,
        StallResource::Rob,
        StallResource::Rs,
        StallResource::Sb,
    ];

    /// The study's abbreviation.
    pub fn name(self) -> &'static str {
        match self {
            StallResource::Any => "RES",
            StallResource::Rob => "ROB",
            StallResource::Rs => "RS",
            StallResource::Sb => "SB",
        }
    }
}

const fn intel(name: &'static str, code: u64, quantity: Quantity) -> EventSpec {
    EventSpec {
        name,
        source: EventSource::Raw(code),
        quantity,
    }
}

/// The study's Intel events available from Haswell on.
const INTEL_STUDY_EVENTS: [EventSpec; 8] = [
    intel("MEM_LOAD_RETIRED.L1_HIT", 0x01d1, Quantity::LoadsHitL1),
    intel("MEM_LOAD_RETIRED.L2_HIT", 0x02d1, Quantity::LoadsHitL2),
    intel("MEM_LOAD_RETIRED.L3_HIT", 0x04d1, Quantity::LoadsHitL3),
    intel("MEM_LOAD_RETIRED.L1_MISS", 0x08d1, Quantity::LoadsMissL1),
    intel("MEM_LOAD_RETIRED.L2_MISS", 0x10d1, Quantity::LoadsMissL2),
    intel(
        "UOPS_EXECUTED.STALL_CYCLES",
        0x0180_01b1,
        Quantity::ExecutionStallCycles,
    ),
    intel(
        "RESOURCE_STALLS.ANY",
        0x01a2,
        Quantity::ResourceStallCycles(StallResource::Any),
    ),
    intel(
        "RESOURCE_STALLS.SB",
        0x08a2,
        Quantity::ResourceStallCycles(StallResource::Sb),
    ),
];

/// RESOURCE_STALLS umasks that Skylake and later no longer define.
const INTEL_HASWELL_BROADWELL_EVENTS: [EventSpec; 2] = [
    intel(
        "RESOURCE_STALLS.RS",
        0x04a2,
        Quantity::ResourceStallCycles(StallResource::Rs),
    ),
    intel(
        "RESOURCE_STALLS.ROB",
        0x10a2,
        Quantity::ResourceStallCycles(StallResource::Rob),
    ),
];

/// Intel family-6 models of Haswell and Broadwell (client and server).
const HASWELL_BROADWELL_MODELS: [u32; 8] = [60, 63, 69, 70, 61, 71, 79, 86];

/// Every event the study's metrics need on the CPU described by `cpuinfo` (`/proc/cpuinfo`
/// text): this family's [`event_table`] plus the study's Intel events where they exist, and the
/// study events this CPU does not have, each with the reason.
///
/// ```
/// use parbench_mapper::perf::tail_latency_events;
/// let haswell = "vendor_id : GenuineIntel\ncpu family : 6\nmodel : 63\n";
/// let (events, missing) = tail_latency_events(haswell);
/// assert!(events.iter().any(|e| e.name == "RESOURCE_STALLS.ROB") && missing.is_empty());
/// let skylake = "vendor_id : GenuineIntel\ncpu family : 6\nmodel : 85\n";
/// let (_, missing) = tail_latency_events(skylake);
/// assert_eq!(missing.len(), 2); // RS and ROB
/// let (_, missing) = tail_latency_events("vendor_id : AuthenticAMD\ncpu family : 23\n");
/// assert_eq!(missing.len(), 10);
/// ```
pub fn tail_latency_events(cpuinfo: &str) -> (Vec<EventSpec>, Vec<UnavailableEvent>) {
    let family = if cfg!(target_arch = "aarch64") {
        CpuFamily::ArmV8
    } else {
        CpuFamily::from_cpuinfo(cpuinfo)
    };
    let mut events = event_table(family);
    let mut missing = Vec::new();
    let absent = |specs: &[EventSpec], reason: &str| -> Vec<UnavailableEvent> {
        specs
            .iter()
            .map(|spec| UnavailableEvent {
                event: spec.name.to_owned(),
                reason: reason.to_owned(),
            })
            .collect()
    };
    if family == CpuFamily::Intel {
        events.extend(INTEL_STUDY_EVENTS);
        let model = cpuinfo
            .lines()
            .find(|line| line.split(':').next().map(str::trim) == Some("model"))
            .and_then(|line| line.split(':').nth(1))
            .and_then(|value| value.trim().parse::<u32>().ok());
        match model {
            Some(model) if HASWELL_BROADWELL_MODELS.contains(&model) => {
                events.extend(INTEL_HASWELL_BROADWELL_EVENTS);
            }
            _ => missing.extend(absent(
                &INTEL_HASWELL_BROADWELL_EVENTS,
                &format!(
                    "only Haswell and Broadwell define this umask (this CPU: model {})",
                    model.map_or_else(|| "unknown".to_owned(), |m| m.to_string())
                ),
            )),
        }
    } else {
        let reason = format!(
            "an Intel event of the study's definitions; this CPU family ({family:?}) has no such event here"
        );
        missing.extend(absent(&INTEL_STUDY_EVENTS, &reason));
        missing.extend(absent(&INTEL_HASWELL_BROADWELL_EVENTS, &reason));
    }
    (events, missing)
}

/// The nominal core frequency in MHz: `base_frequency` (or `cpuinfo_max_freq`) of cpufreq, else
/// the first `cpu MHz` of `/proc/cpuinfo`; `None` when neither exists.
///
/// ```
/// if let Some(mhz) = parbench_mapper::perf::nominal_frequency_mhz() {
///     assert!(mhz > 0.0);
/// }
/// ```
pub fn nominal_frequency_mhz() -> Option<f64> {
    let cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq";
    for file in ["base_frequency", "cpuinfo_max_freq"] {
        let khz = std::fs::read_to_string(format!("{cpufreq}/{file}"))
            .ok()
            .and_then(|text| text.trim().parse::<f64>().ok());
        if let Some(khz) = khz.filter(|k| *k > 0.0) {
            return Some(khz / 1000.0);
        }
    }
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()?
        .lines()
        .find(|line| line.split(':').next().map(str::trim) == Some("cpu MHz"))
        .and_then(|line| line.split(':').nth(1))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .filter(|mhz| *mhz > 0.0)
}

/// The study's metrics of one thread; `None` where a needed counter (or the frequency) was
/// unavailable, named in [`missing`](Self::missing).
///
/// ```
/// use parbench_mapper::perf::{Quantity, QuantityTotals, StallResource, StudyMetrics};
/// let totals = QuantityTotals::from([
///     (Quantity::Cycles, Some(2_000_000.0)),
///     (Quantity::L3Misses, Some(1_000.0)),
///     (Quantity::ExecutionStallCycles, Some(500_000.0)),
///     (Quantity::ResourceStallCycles(StallResource::Sb), Some(100_000.0)),
/// ]);
/// let m = StudyMetrics::from_totals(&totals, Some(2000.0));
/// // 2 000 000 cycles at 2000 MHz = 1000 µs: one L3 miss per µs.
/// assert_eq!(m.memory_accesses_per_us, Some(1.0));
/// assert_eq!(m.dispatch_stall_fraction, Some(0.25));
/// assert_eq!(m.stall_breakdown[3], Some(0.05));
/// assert!(m.l1_hit_rate.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyMetrics {
    /// L3 misses × frequency (MHz) / cycles.
    pub memory_accesses_per_us: Option<f64>,
    /// Retired loads that hit L1, over all retired loads.
    pub l1_hit_rate: Option<f64>,
    /// Retired loads that hit L2, over those that missed L1.
    pub l2_hit_rate: Option<f64>,
    /// Retired loads that hit L3, over those that missed L2.
    pub l3_hit_rate: Option<f64>,
    /// UOPS_EXECUTED.STALL_CYCLES / cycles.
    pub dispatch_stall_fraction: Option<f64>,
    /// RESOURCE_STALLS RES, ROB, RS, SB / cycles ([`StallResource::ALL`] order).
    pub stall_breakdown: [Option<f64>; 4],
    /// For each metric that is `None`: its name and the missing inputs.
    pub missing: Vec<(String, Vec<String>)>,
}

impl StudyMetrics {
    /// Computes every metric whose inputs are present; `frequency_mhz` is the nominal frequency
    /// ([`nominal_frequency_mhz`]).
    pub fn from_totals(totals: &QuantityTotals, frequency_mhz: Option<f64>) -> StudyMetrics {
        let mut missing = Vec::new();
        let mut metric = |name: &str, inputs: &[Quantity], formula: &dyn Fn(&[f64]) -> f64| {
            derive_metric(totals, &mut missing, name, inputs, formula)
        };
        let ratio = |v: &[f64]| v[0] / v[1];
        let l1_hit_rate = metric(
            "L1 hit rate (retired loads)",
            &[Quantity::LoadsHitL1, Quantity::Class(InstrClass::Load)],
            &ratio,
        );
        let l2_hit_rate = metric(
            "L2 hit rate (retired loads)",
            &[Quantity::LoadsHitL2, Quantity::LoadsMissL1],
            &ratio,
        );
        let l3_hit_rate = metric(
            "L3 hit rate (retired loads)",
            &[Quantity::LoadsHitL3, Quantity::LoadsMissL2],
            &ratio,
        );
        let dispatch_stall_fraction = metric(
            "dispatch stalls (uops_executed.stall_cycles)",
            &[Quantity::ExecutionStallCycles, Quantity::Cycles],
            &ratio,
        );
        let stall_breakdown = StallResource::ALL.map(|resource| {
            metric(
                &format!("{} stalls", resource.name()),
                &[Quantity::ResourceStallCycles(resource), Quantity::Cycles],
                &ratio,
            )
        });
        let memory_accesses_per_us = match frequency_mhz.filter(|f| f.is_finite() && *f > 0.0) {
            Some(mhz) => metric(
                "memory accesses per us (L3 misses x MHz / cycles)",
                &[Quantity::L3Misses, Quantity::Cycles],
                &|v: &[f64]| v[0] * mhz / v[1],
            ),
            None => {
                missing.push((
                    "memory accesses per us (L3 misses x MHz / cycles)".to_owned(),
                    vec!["the nominal frequency".to_owned()],
                ));
                None
            }
        };
        StudyMetrics {
            memory_accesses_per_us,
            l1_hit_rate,
            l2_hit_rate,
            l3_hit_rate,
            dispatch_stall_fraction,
            stall_breakdown,
            missing,
        }
    }
}

impl fmt::Display for StudyMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |value: Option<f64>, digits: usize| match value {
            Some(v) => format!("{v:.digits$}"),
            None => "n/a".to_owned(),
        };
        let breakdown: Vec<String> = StallResource::ALL
            .iter()
            .zip(&self.stall_breakdown)
            .map(|(resource, value)| format!("{} {}", resource.name(), show(*value, 3)))
            .collect();
        write!(
            f,
            "mem acc/us {} | hit L1 {} L2 {} L3 {} | dispatch stalls {} ({})",
            show(self.memory_accesses_per_us, 2),
            show(self.l1_hit_rate, 3),
            show(self.l2_hit_rate, 3),
            show(self.l3_hit_rate, 3),
            show(self.dispatch_stall_fraction, 3),
            breakdown.join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_rates_divide_by_the_loads_that_reached_the_level() {
        let totals = QuantityTotals::from([
            (Quantity::Class(InstrClass::Load), Some(1000.0)),
            (Quantity::LoadsHitL1, Some(900.0)),
            (Quantity::LoadsMissL1, Some(100.0)),
            (Quantity::LoadsHitL2, Some(60.0)),
            (Quantity::LoadsMissL2, Some(40.0)),
            (Quantity::LoadsHitL3, Some(30.0)),
        ]);
        let m = StudyMetrics::from_totals(&totals, None);
        assert_eq!(m.l1_hit_rate, Some(0.9));
        assert_eq!(m.l2_hit_rate, Some(0.6));
        assert_eq!(m.l3_hit_rate, Some(0.75));
        let frequency = m
            .missing
            .iter()
            .find(|(name, _)| name.starts_with("memory accesses"))
            .unwrap();
        assert_eq!(frequency.1, ["the nominal frequency"]);
    }

    #[test]
    fn without_a_pmu_every_metric_is_missing_with_its_counters() {
        let m = StudyMetrics::from_totals(&QuantityTotals::new(), Some(1000.0));
        assert!(m.dispatch_stall_fraction.is_none());
        assert_eq!(m.missing.len(), 9);
        let stalls = m
            .missing
            .iter()
            .find(|(name, _)| name.starts_with("dispatch stalls"))
            .unwrap();
        assert_eq!(stalls.1, ["uops_executed.stall_cycles", "cycles"]);
        assert!(m.to_string().contains("RES n/a ROB n/a RS n/a SB n/a"));
    }

    #[test]
    fn intel_codes_follow_the_event_select_layout() {
        let (events, _) = tail_latency_events("vendor_id : GenuineIntel\nmodel : 63\n");
        let code = |name: &str| {
            events
                .iter()
                .find(|e| e.name == name)
                .map(|e| e.source)
                .unwrap()
        };
        // event 0xB1, umask 0x01, inv (bit 23), cmask 1 (bits 24-31)
        assert_eq!(
            code("UOPS_EXECUTED.STALL_CYCLES"),
            EventSource::Raw(0xb1 | 0x01 << 8 | 1 << 23 | 1 << 24)
        );
        assert_eq!(
            code("RESOURCE_STALLS.ROB"),
            EventSource::Raw(0x10 << 8 | 0xa2)
        );
    }
}
