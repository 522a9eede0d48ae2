//! The latency study's derived metrics and its SMT-friendly classification.
//!
//! Every metric is computed only when all counters it needs were counted; otherwise it is
//! `None` and [`Metrics::missing`] names the quantities that were unavailable. (A metric whose
//! denominator counted zero is also `None`, without a `missing` entry.) Definitions:
//!
//! - IPC = instructions / cycles
//! - L1 hit rate = 1 − L1D misses / L1D accesses
//! - MPKI L1, L2, L3 = misses of that level × 1000 / instructions
//! - memory accesses per µs = (load class + store class instructions) / task-clock µs
//! - dispatch-stall fraction = backend stall cycles / cycles
//!
//! These are the project's definitions; the tail-latency study's own (L3 misses × frequency /
//! cycles, hit rates from retired loads, `uops_executed.stall_cycles` with its RES/ROB/RS/SB
//! breakdown) are in [`super::study_metrics`].
//!
//! **SMT-friendly rule** ([`SMT_FRIENDLY_RULE`]) — parbench's own heuristic, *not* the study's,
//! which classified services by comparing their p95-vs-load curves on SMT siblings and on separate
//! cores (see `parbench_kernels::latency::smt_verdict`): a thread is SMT-friendly when
//! IPC < 1.0 *and* dispatch-stall fraction ≥ 0.3 — it leaves most issue slots idle waiting on
//! the backend, so a sibling can use them. It is SMT-averse otherwise. Without IPC or the stall
//! fraction no classification is made.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::events::Quantity;
use crate::mix::InstrClass;

/// The classification rule, as printed in reports.
///
/// ```
/// assert!(parbench_mapper::perf::SMT_FRIENDLY_RULE.contains("IPC < 1.0"));
/// ```
pub const SMT_FRIENDLY_RULE: &str = "parbench's own rule, not the tail-latency study's (which classified services from their p95 curves on SMT siblings vs cores): SMT-friendly when IPC < 1.0 and dispatch-stall fraction >= 0.3";

const FRIENDLY_IPC_BELOW: f64 = 1.0;
const FRIENDLY_STALL_AT_LEAST: f64 = 0.3;

/// Counted totals per quantity; `None` when at least one event feeding it was unavailable.
///
/// ```
/// use parbench_mapper::perf::{Quantity, QuantityTotals};
/// let totals = QuantityTotals::from([(Quantity::Cycles, None)]);
/// assert_eq!(totals[&Quantity::Cycles], None);
/// ```
pub type QuantityTotals = BTreeMap<Quantity, Option<f64>>;

/// The study's classification of a thread.
///
/// ```
/// use parbench_mapper::perf::SmtClass;
/// assert_eq!(SmtClass::Friendly.to_string(), "SMT-friendly");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SmtClass {
    /// Low IPC and many dispatch stalls: co-running a sibling is cheap.
    Friendly,
    /// High IPC or few stalls: a sibling competes for busy units.
    Averse,
    /// IPC or the stall fraction could not be computed here.
    Unknown,
}

impl fmt::Display for SmtClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SmtClass::Friendly => "SMT-friendly",
            SmtClass::Averse => "SMT-averse",
            SmtClass::Unknown => "unknown (counters unavailable)",
        })
    }
}

/// Derived metrics of one thread (or of all threads summed).
///
/// ```
/// use parbench_mapper::perf::{Metrics, Quantity, QuantityTotals, SmtClass};
/// let totals = QuantityTotals::from([
///     (Quantity::Cycles, Some(2000.0)),
///     (Quantity::Instructions, Some(1000.0)),
///     (Quantity::BackendStallCycles, Some(1000.0)),
/// ]);
/// let m = Metrics::from_totals(&totals);
/// assert_eq!(m.ipc, Some(0.5));
/// assert_eq!(m.classification(), SmtClass::Friendly);
/// assert!(m.l1_hit_rate.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Instructions per cycle.
    pub ipc: Option<f64>,
    /// Fraction of L1D accesses that hit.
    pub l1_hit_rate: Option<f64>,
    /// L1D misses per 1000 instructions.
    pub mpki_l1: Option<f64>,
    /// L2 misses per 1000 instructions.
    pub mpki_l2: Option<f64>,
    /// L3 misses per 1000 instructions.
    pub mpki_l3: Option<f64>,
    /// Load and store instructions per microsecond of thread CPU time.
    pub memory_accesses_per_us: Option<f64>,
    /// Fraction of cycles the backend stalled dispatch.
    pub dispatch_stall_fraction: Option<f64>,
    /// For each metric that is `None`: its name and the quantities that were unavailable.
    pub missing: Vec<(String, Vec<String>)>,
}

impl Metrics {
    /// Computes every metric whose inputs are all present in `totals`.
    ///
    /// ```
    /// use parbench_mapper::perf::{Metrics, QuantityTotals};
    /// let m = Metrics::from_totals(&QuantityTotals::new());
    /// assert_eq!(m.missing.len(), 7);
    /// ```
    pub fn from_totals(totals: &QuantityTotals) -> Metrics {
        let mut missing = Vec::new();
        let mut metric = |name: &str, inputs: &[Quantity], formula: &dyn Fn(&[f64]) -> f64| {
            derive_metric(totals, &mut missing, name, inputs, formula)
        };
        let ratio = |v: &[f64]| v[0] / v[1];
        let per_kilo_instruction = |v: &[f64]| v[0] * 1000.0 / v[1];
        let ipc = metric("IPC", &[Quantity::Instructions, Quantity::Cycles], &ratio);
        let l1_hit_rate = metric(
            "L1 hit rate",
            &[Quantity::L1Misses, Quantity::L1Accesses],
            &|v: &[f64]| 1.0 - v[0] / v[1],
        );
        let mpki_l1 = metric(
            "MPKI L1",
            &[Quantity::L1Misses, Quantity::Instructions],
            &per_kilo_instruction,
        );
        let mpki_l2 = metric(
            "MPKI L2",
            &[Quantity::L2Misses, Quantity::Instructions],
            &per_kilo_instruction,
        );
        let mpki_l3 = metric(
            "MPKI L3",
            &[Quantity::L3Misses, Quantity::Instructions],
            &per_kilo_instruction,
        );
        let memory_accesses_per_us = metric(
            "memory accesses per us",
            &[
                Quantity::Class(InstrClass::Load),
                Quantity::Class(InstrClass::Store),
                Quantity::TaskClockNs,
            ],
            &|v: &[f64]| (v[0] + v[1]) / (v[2] / 1000.0),
        );
        let dispatch_stall_fraction = metric(
            "dispatch-stall fraction",
            &[Quantity::BackendStallCycles, Quantity::Cycles],
            &ratio,
        );
        Metrics {
            ipc,
            l1_hit_rate,
            mpki_l1,
            mpki_l2,
            mpki_l3,
            memory_accesses_per_us,
            dispatch_stall_fraction,
            missing,
        }
    }

    /// Applies [`SMT_FRIENDLY_RULE`].
    ///
    /// ```
    /// use parbench_mapper::perf::{Metrics, QuantityTotals, SmtClass};
    /// assert_eq!(Metrics::from_totals(&QuantityTotals::new()).classification(), SmtClass::Unknown);
    /// ```
    pub fn classification(&self) -> SmtClass {
        match (self.ipc, self.dispatch_stall_fraction) {
            (Some(ipc), Some(stalls))
                if ipc < FRIENDLY_IPC_BELOW && stalls >= FRIENDLY_STALL_AT_LEAST =>
            {
                SmtClass::Friendly
            }
            (Some(_), Some(_)) => SmtClass::Averse,
            _ => SmtClass::Unknown,
        }
    }
}

/// `formula` of the `inputs` when every input was counted (and the result is finite); otherwise
/// `None`, and `missing` gets `name` with the inputs that were unavailable.
pub(crate) fn derive_metric(
    totals: &QuantityTotals,
    missing: &mut Vec<(String, Vec<String>)>,
    name: &str,
    inputs: &[Quantity],
    formula: &dyn Fn(&[f64]) -> f64,
) -> Option<f64> {
    let values: Vec<Option<f64>> = inputs
        .iter()
        .map(|q| totals.get(q).copied().flatten())
        .collect();
    let absent: Vec<String> = inputs
        .iter()
        .zip(&values)
        .filter(|(_, v)| v.is_none())
        .map(|(q, _)| q.name())
        .collect();
    if absent.is_empty() {
        let present: Vec<f64> = values.into_iter().flatten().collect();
        let value = formula(&present);
        value.is_finite().then_some(value)
    } else {
        missing.push((name.to_owned(), absent));
        None
    }
}

impl fmt::Display for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |value: Option<f64>, digits: usize| match value {
            Some(v) => format!("{v:.digits$}"),
            None => "n/a".to_owned(),
        };
        write!(
            f,
            "IPC {} | L1 hit {} | MPKI L1 {} L2 {} L3 {} | mem acc/us {} | dispatch stalls {} | {}",
            show(self.ipc, 2),
            show(self.l1_hit_rate, 3),
            show(self.mpki_l1, 2),
            show(self.mpki_l2, 2),
            show(self.mpki_l3, 2),
            show(self.memory_accesses_per_us, 1),
            show(self.dispatch_stall_fraction, 3),
            self.classification()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(pairs: &[(Quantity, f64)]) -> QuantityTotals {
        pairs.iter().map(|&(q, v)| (q, Some(v))).collect()
    }

    #[test]
    fn metrics_follow_their_definitions() {
        let m = Metrics::from_totals(&totals(&[
            (Quantity::Instructions, 4000.0),
            (Quantity::Cycles, 2000.0),
            (Quantity::L1Accesses, 1000.0),
            (Quantity::L1Misses, 100.0),
            (Quantity::L2Misses, 20.0),
            (Quantity::L3Misses, 4.0),
            (Quantity::Class(InstrClass::Load), 700.0),
            (Quantity::Class(InstrClass::Store), 300.0),
            (Quantity::TaskClockNs, 2000.0),
            (Quantity::BackendStallCycles, 200.0),
        ]));
        assert_eq!(m.ipc, Some(2.0));
        assert_eq!(m.l1_hit_rate, Some(0.9));
        assert_eq!(
            (m.mpki_l1, m.mpki_l2, m.mpki_l3),
            (Some(25.0), Some(5.0), Some(1.0))
        );
        assert_eq!(m.memory_accesses_per_us, Some(500.0));
        assert_eq!(m.dispatch_stall_fraction, Some(0.1));
        assert!(m.missing.is_empty());
        assert_eq!(m.classification(), SmtClass::Averse);
    }

    #[test]
    fn missing_counters_are_named_per_metric() {
        let mut t = totals(&[(Quantity::Instructions, 10.0), (Quantity::TaskClockNs, 5.0)]);
        t.insert(Quantity::Cycles, None);
        let m = Metrics::from_totals(&t);
        assert_eq!(m.ipc, None);
        let ipc_missing = m.missing.iter().find(|(name, _)| name == "IPC").unwrap();
        assert_eq!(ipc_missing.1, vec!["cycles".to_owned()]);
        assert_eq!(m.classification(), SmtClass::Unknown);
    }

    #[test]
    fn zero_denominators_give_no_value_instead_of_infinity() {
        let m = Metrics::from_totals(&totals(&[
            (Quantity::Instructions, 10.0),
            (Quantity::Cycles, 0.0),
        ]));
        assert_eq!(m.ipc, None);
    }
}
