//! Profiling a workload on N threads, and the profile file.
//!
//! [`profile_threads`] first *probes* every requested event by opening it alone on the calling
//! thread, so unavailable events are known (with the kernel's reason) before any workload runs.
//! Then each of the N threads opens its own counters for the available events — counters
//! observe only the thread that opened them — enables them, runs `workload(thread_index)`,
//! disables and reads them. Counts are scaled for multiplexing (see [`Reading::scaled`](super::Reading::scaled)).
//!
//! The resulting [`Profile`] is plain data: it serialises to JSON (serde; [`Profile::read_json`]
//! reads a file of it) so a profile taken on a machine with a PMU can drive the mapper on one
//! without.
//!
//! This crate writes no profile files: the caller serialises the profile (e.g.
//! `serde_json::to_string_pretty`) and writes it as its files need — `parbench-cli profile -o`
//! replaces the file atomically and keeps the profile when it cannot. `Profile::write_json` and
//! `CommandProfile::write_json`, which overwrote the file in place (a failed write left half a
//! profile), were removed; nothing but their own tests used them.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ProfileError;
use super::descriptors;
use super::events::{
    CpuFamily, EventSpec, Quantity, SOFTWARE_EVENTS, event_table, int_class_is_derived,
};
use super::metrics::{Metrics, QuantityTotals, SMT_FRIENDLY_RULE};
use super::thread_counters::{ThreadCounters, probe_events};
use crate::mix::{InstrClass, InstructionMix, NamedMix};

/// Where the instruction mixes returned by [`Profile::mixes_or`] came from.
///
/// ```
/// assert_ne!(parbench_mapper::perf::MixSource::Measured, parbench_mapper::perf::MixSource::Declared);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MixSource {
    /// From this profile's class counters.
    Measured,
    /// Counters unavailable: the workload's declared mix was used.
    Declared,
    /// Counters unavailable and nothing declared: no mix.
    Unavailable,
}

/// One sentence for reports, e.g. what was used instead of unavailable counters.
///
/// ```
/// use parbench_mapper::perf::MixSource;
/// assert!(MixSource::Declared.to_string().contains("declared"));
/// ```
impl fmt::Display for MixSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MixSource::Measured => "instruction mix measured from this profile's class counters",
            MixSource::Declared => {
                "instruction-class counters unavailable here: using the workload's declared instruction mix instead"
            }
            MixSource::Unavailable => {
                "instruction-class counters unavailable here and the workload declares no mix: no instruction mix"
            }
        })
    }
}

/// What to profile: a label, the CPU family, the events and the thread count.
///
/// ```
/// use parbench_mapper::perf::ProfileRequest;
/// let request = ProfileRequest::for_this_machine("spin", 2);
/// assert!(request.events.len() > 3);
/// assert_eq!(ProfileRequest::software_only("spin", 2).events.len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRequest {
    /// Name of the workload, stored in the profile.
    pub label: String,
    /// CPU family (decides whether the int class is derived).
    pub family: CpuFamily,
    /// Events to open on every thread.
    pub events: Vec<EventSpec>,
    /// Number of threads.
    pub threads: usize,
}

impl ProfileRequest {
    /// Every event of this machine's family ([`event_table`] of [`CpuFamily::detect`]).
    ///
    /// ```
    /// let r = parbench_mapper::perf::ProfileRequest::for_this_machine("k", 1);
    /// assert_eq!(r.family, parbench_mapper::perf::CpuFamily::detect());
    /// ```
    pub fn for_this_machine(label: &str, threads: usize) -> ProfileRequest {
        let family = CpuFamily::detect();
        ProfileRequest {
            label: label.to_owned(),
            family,
            events: event_table(family),
            threads,
        }
    }

    /// Only the software events (task clock, context switches, migrations).
    ///
    /// ```
    /// let r = parbench_mapper::perf::ProfileRequest::software_only("k", 4);
    /// assert!(r.events.iter().all(|e| !e.source.is_hardware()));
    /// ```
    pub fn software_only(label: &str, threads: usize) -> ProfileRequest {
        ProfileRequest {
            label: label.to_owned(),
            family: CpuFamily::detect(),
            events: SOFTWARE_EVENTS.to_vec(),
            threads,
        }
    }
}

/// One event's result on one thread; `count`/`scaled` are `None` when it was unavailable.
///
/// ```
/// use parbench_mapper::perf::{EventRecord, Quantity};
/// let r = EventRecord { event: "cycles".into(), quantity: Quantity::Cycles, count: None, time_enabled: 0, time_running: 0, scaled: None };
/// assert!(r.scaled.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Event name.
    pub event: String,
    /// What it measures.
    pub quantity: Quantity,
    /// Raw count.
    pub count: Option<u64>,
    /// Nanoseconds enabled.
    pub time_enabled: u64,
    /// Nanoseconds on the PMU.
    pub time_running: u64,
    /// Multiplexing-corrected count.
    pub scaled: Option<f64>,
}

/// All events of one thread.
///
/// ```
/// use parbench_mapper::perf::ThreadProfile;
/// let t = ThreadProfile { thread: 0, events: vec![] };
/// assert!(t.events.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadProfile {
    /// Thread index (the argument the workload received).
    pub thread: usize,
    /// One record per requested event.
    pub events: Vec<EventRecord>,
}

/// An event that could not be opened here, and why.
///
/// ```
/// let u = parbench_mapper::perf::UnavailableEvent { event: "cycles".into(), reason: "not supported".into() };
/// assert_eq!(u.event, "cycles");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnavailableEvent {
    /// Event name.
    pub event: String,
    /// The error that made it unavailable.
    pub reason: String,
}

/// A per-thread profile of one workload.
///
/// ```
/// use parbench_mapper::perf::{profile_threads, ProfileRequest};
/// let profile = profile_threads(&ProfileRequest::software_only("spin", 2), |_| {
///     std::hint::black_box((0..10_000u64).sum::<u64>());
/// })?;
/// assert_eq!(profile.threads.len(), 2);
/// # Ok::<(), parbench_mapper::perf::ProfileError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Workload label.
    pub workload: String,
    /// CPU family the events were chosen for.
    pub family: CpuFamily,
    /// Per-thread results, in thread order.
    pub threads: Vec<ThreadProfile>,
    /// Events that could not be opened here.
    pub unavailable: Vec<UnavailableEvent>,
}

/// Runs `workload(thread_index)` on `request.threads` threads, each counting its own events.
///
/// The counters of all threads are open at once, one descriptor per available event on each:
/// when they would not fit under the soft descriptor limit, it is raised to the hard one first
/// (as [`raise_descriptor_limit`](super::raise_descriptor_limit) does; commands started later
/// keep the soft limit they would have had).
///
/// # Errors
/// [`ProfileError::NoThreads`] for zero threads; [`ProfileError::DescriptorLimit`], before the
/// workload runs, when the counters do not fit under the hard limit either;
/// [`ProfileError::WorkloadPanicked`] when the workload panics; counter errors on a thread (rare
/// once the probe succeeded). Unavailable events are *not* errors: they are listed in
/// [`Profile::unavailable`].
///
/// # Examples
///
/// ```
/// use parbench_mapper::perf::{profile_threads, ProfileRequest, Quantity};
/// let profile = profile_threads(&ProfileRequest::for_this_machine("spin", 1), |_| {
///     std::hint::black_box((0..100_000u64).sum::<u64>());
/// })?;
/// let task_clock = profile.thread_totals(0).unwrap()[&Quantity::TaskClockNs];
/// assert!(task_clock.unwrap() > 0.0);
/// # Ok::<(), parbench_mapper::perf::ProfileError>(())
/// ```
pub fn profile_threads<F>(request: &ProfileRequest, workload: F) -> Result<Profile, ProfileError>
where
    F: Fn(usize) + Sync,
{
    if request.threads == 0 {
        return Err(ProfileError::NoThreads);
    }
    // The probe opens one counter at a time; then every thread holds its own at once.
    descriptors::make_room_for(1)?;
    let (available, unavailable) = probe_events(&request.events);
    let per_thread = available.len() as u64;
    descriptors::make_room_for((request.threads as u64).saturating_mul(per_thread))?;
    let workload = &workload;
    let available = &available;
    let requested = &request.events;
    let per_thread: Vec<Result<ThreadProfile, ProfileError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..request.threads)
            .map(|thread| {
                scope.spawn(move || {
                    let mut counters =
                        ThreadCounters::open_on_current_thread(requested, available)?;
                    counters.enable()?;
                    workload(thread);
                    counters.disable()?;
                    counters.read(thread)
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(thread, handle)| {
                handle
                    .join()
                    .unwrap_or(Err(ProfileError::WorkloadPanicked { thread }))
            })
            .collect()
    });
    let threads = per_thread.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(Profile {
        workload: request.label.clone(),
        family: request.family,
        threads,
        unavailable,
    })
}

impl Profile {
    /// Totals per quantity of thread `thread`: the entry of [`threads`](Self::threads) labelled
    /// with it ([`ThreadProfile::thread`]), which is not always the one at that position — a
    /// profile gathered from several threads lacks those whose counters failed (and a profile
    /// written by hand may number its threads as it likes). `None` when no entry has that label.
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, ProfileRequest};
    /// let p = profile_threads(&ProfileRequest::software_only("idle", 1), |_| {})?;
    /// assert!(p.thread_totals(0).is_some() && p.thread_totals(1).is_none());
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn thread_totals(&self, thread: usize) -> Option<QuantityTotals> {
        let profile = self.threads.iter().find(|t| t.thread == thread)?;
        Some(self.totals(profile.events.iter()))
    }

    /// Totals per quantity summed over all threads.
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, ProfileRequest, Quantity};
    /// let p = profile_threads(&ProfileRequest::software_only("idle", 2), |_| {})?;
    /// assert!(p.all_threads_totals().contains_key(&Quantity::TaskClockNs));
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn all_threads_totals(&self) -> QuantityTotals {
        self.totals(self.threads.iter().flat_map(|t| t.events.iter()))
    }

    /// Sums records per quantity (a quantity is `None` if any of its events is), then derives
    /// the int class where the family has no direct counter for it.
    fn totals<'a>(&self, records: impl Iterator<Item = &'a EventRecord>) -> QuantityTotals {
        let mut totals = QuantityTotals::new();
        for record in records {
            let entry = totals.entry(record.quantity).or_insert(Some(0.0));
            *entry = entry.zip(record.scaled).map(|(sum, value)| sum + value);
        }
        if int_class_is_derived(self.family) && totals.contains_key(&Quantity::Instructions) {
            let part = |class| totals.get(&Quantity::Class(class)).copied().flatten();
            let derived = totals
                .get(&Quantity::Instructions)
                .copied()
                .flatten()
                .and_then(|instructions| {
                    let others = part(InstrClass::Fp)?
                        + part(InstrClass::Load)?
                        + part(InstrClass::Store)?
                        + part(InstrClass::Branch)?;
                    Some((instructions - others).max(0.0))
                });
            totals.insert(Quantity::Class(InstrClass::Int), derived);
        }
        totals
    }

    /// Metrics of one thread.
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, ProfileRequest};
    /// let p = profile_threads(&ProfileRequest::software_only("idle", 1), |_| {})?;
    /// assert!(p.thread_metrics(0).unwrap().ipc.is_none());
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn thread_metrics(&self, thread: usize) -> Option<Metrics> {
        self.thread_totals(thread)
            .map(|totals| Metrics::from_totals(&totals))
    }

    /// The instruction mix of every thread, in [`threads`](Self::threads) order, from the class
    /// counters.
    ///
    /// # Errors
    /// [`ProfileError::NoInstructionMix`] when a class count is unavailable (always the case
    /// without a PMU).
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, ProfileError, ProfileRequest};
    /// let p = profile_threads(&ProfileRequest::software_only("idle", 1), |_| {})?;
    /// assert!(matches!(p.thread_mixes(), Err(ProfileError::NoInstructionMix { .. })));
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn thread_mixes(&self) -> Result<Vec<InstructionMix>, ProfileError> {
        self.threads
            .iter()
            .map(|thread| {
                let totals = self.totals(thread.events.iter());
                let counts: Vec<(InstrClass, Option<f64>)> = InstrClass::ALL
                    .iter()
                    .map(|&class| {
                        (
                            class,
                            totals.get(&Quantity::Class(class)).copied().flatten(),
                        )
                    })
                    .collect();
                let missing: Vec<String> = counts
                    .iter()
                    .filter(|(_, count)| count.is_none())
                    .map(|(class, _)| Quantity::Class(*class).name())
                    .collect();
                if missing.is_empty() {
                    Ok(InstructionMix::new(
                        counts.into_iter().map(|(c, n)| (c, n.unwrap_or(0.0))),
                    ))
                } else {
                    Err(ProfileError::NoInstructionMix { missing })
                }
            })
            .collect()
    }

    /// Per-thread mixes named `WORKLOAD#THREAD`, ready for [`crate::map_report`] (one thread each).
    ///
    /// # Errors
    /// [`ProfileError::NoInstructionMix`] as for [`thread_mixes`](Self::thread_mixes).
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, ProfileRequest};
    /// let p = profile_threads(&ProfileRequest::software_only("idle", 1), |_| {})?;
    /// assert!(p.named_thread_mixes().is_err()); // software events carry no classes
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn named_thread_mixes(&self) -> Result<Vec<NamedMix>, ProfileError> {
        Ok(self
            .thread_mixes()?
            .into_iter()
            .enumerate()
            .map(|(thread, mix)| NamedMix {
                name: format!("{}#{thread}", self.workload),
                mix,
            })
            .collect())
    }

    /// The mixes to map with: measured ones when the class counters were available, otherwise
    /// `declared` (e.g. [`InstructionMix::declared_for_kernel`]) for every thread — and which of
    /// the two it is, so the caller can say what it did.
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, MixSource, ProfileRequest};
    /// use parbench_mapper::InstructionMix;
    /// let p = profile_threads(&ProfileRequest::software_only("fp-add", 2), |_| {})?;
    /// let declared = InstructionMix::declared_for_kernel("fp-add");
    /// let (mixes, source) = p.mixes_or(declared);
    /// assert_eq!(source, MixSource::Declared);
    /// assert_eq!(mixes.len(), 2);
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn mixes_or(&self, declared: Option<InstructionMix>) -> (Vec<InstructionMix>, MixSource) {
        match (self.thread_mixes(), declared) {
            (Ok(measured), _) => (measured, MixSource::Measured),
            (Err(_), Some(mix)) => (vec![mix; self.threads.len()], MixSource::Declared),
            (Err(_), None) => (Vec::new(), MixSource::Unavailable),
        }
    }

    /// Reads a profile from a JSON file: as serde writes it (`parbench-cli profile -o`), or by
    /// hand.
    ///
    /// # Errors
    /// [`ProfileError::File`] for a missing/unreadable file, [`ProfileError::Json`] for content
    /// that is not a profile.
    ///
    /// # Examples
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, Profile, ProfileError, ProfileRequest};
    /// let p = profile_threads(&ProfileRequest::software_only("idle", 1), |_| {})?;
    /// let path = std::env::temp_dir().join(format!("doc-profile-{}.json", std::process::id()));
    /// std::fs::write(&path, serde_json::to_string_pretty(&p)?)?;
    /// assert_eq!(Profile::read_json(&path)?, p);
    /// # std::fs::remove_file(&path).ok();
    /// assert!(matches!(Profile::read_json("/nonexistent.json"), Err(ProfileError::File { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_json(path: impl AsRef<Path>) -> Result<Profile, ProfileError> {
        read_json_file(path.as_ref())
    }
}

/// The counted quantities of `totals`, e.g. `task-clock ns 1200, context switches 3`.
pub(crate) fn counted_quantities(totals: &QuantityTotals) -> String {
    let counted: Vec<String> = totals
        .iter()
        .filter_map(|(quantity, value)| value.map(|v| format!("{} {v:.0}", quantity.name())))
        .collect();
    counted.join(", ")
}

/// Reads the JSON of a profile (of a kernel or of a command) from `path`.
pub(crate) fn read_json_file<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<T, ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::File {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ProfileError::Json {
        path: path.to_owned(),
        source,
    })
}

/// Human-readable report: per thread the counted quantities and metrics, then what was
/// unavailable and why.
impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "profile of {} on {}, CPU family {:?}",
            self.workload,
            crate::report::plural(self.threads.len(), "thread"),
            self.family
        )?;
        for thread in &self.threads {
            let totals = self.thread_totals(thread.thread).unwrap_or_default();
            writeln!(
                f,
                "thread {}: {}",
                thread.thread,
                counted_quantities(&totals)
            )?;
            if let Some(metrics) = self.thread_metrics(thread.thread) {
                writeln!(f, "  {metrics}")?;
            }
        }
        writeln!(f, "classification rule: {SMT_FRIENDLY_RULE}")?;
        if self.unavailable.is_empty() {
            writeln!(f, "all requested counters were available")?;
        } else {
            let names: Vec<&str> = self.unavailable.iter().map(|u| u.event.as_str()).collect();
            writeln!(
                f,
                "unavailable here ({}): {}",
                names.len(),
                names.join(", ")
            )?;
            if let Some(first) = self.unavailable.first() {
                writeln!(f, "  first reason: {}", first.reason)?;
            }
            let metrics = Metrics::from_totals(&self.all_threads_totals());
            for (metric, inputs) in &metrics.missing {
                writeln!(
                    f,
                    "  {metric}: not computed, needs {}",
                    inputs.join(" and ")
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::EventCounter;

    fn spin(iterations: u64) {
        let mut x = 1u64;
        for i in 0..iterations {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        std::hint::black_box(x);
    }

    #[test]
    fn busy_thread_has_more_task_clock_than_idle_thread() {
        let request = ProfileRequest::software_only("busy-vs-idle", 2);
        let profile = profile_threads(&request, |thread| {
            if thread == 0 {
                spin(20_000_000);
            } else {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
        .unwrap();
        let clock =
            |thread| profile.thread_totals(thread).unwrap()[&Quantity::TaskClockNs].unwrap();
        assert!(
            clock(0) > clock(1),
            "busy {} vs idle {}",
            clock(0),
            clock(1)
        );
    }

    #[test]
    fn counts_are_attributed_to_the_thread_that_ran_the_work() {
        // Thread i spins i+1 units; CPU time must grow with the thread index, which only holds
        // if every counter observed its own thread rather than the process.
        let request = ProfileRequest::software_only("attribution", 3);
        let profile =
            profile_threads(&request, |thread| spin(8_000_000 * (thread as u64 * 3 + 1))).unwrap();
        let clocks: Vec<f64> = (0..3)
            .map(|t| profile.thread_totals(t).unwrap()[&Quantity::TaskClockNs].unwrap())
            .collect();
        assert!(clocks[0] < clocks[2], "{clocks:?}");
        assert_eq!(
            profile.threads.iter().map(|t| t.thread).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn opening_a_hardware_counter_without_pmu_is_a_typed_error() {
        let cycles = event_table(CpuFamily::Other)
            .into_iter()
            .find(|e| e.quantity == Quantity::Cycles)
            .unwrap();
        match EventCounter::open_on_current_thread(&cycles) {
            Ok(_) => eprintln!(
                "SKIPPED: this machine has a PMU, the Unsupported path cannot be exercised"
            ),
            Err(error) => assert!(
                matches!(&error, ProfileError::Unsupported { event } if event == "cycles"),
                "unexpected error: {error}"
            ),
        }
    }

    #[test]
    fn full_table_profile_lists_unavailable_hardware_events_and_missing_metrics() {
        let profile = profile_threads(&ProfileRequest::for_this_machine("spin", 2), |_| {
            spin(100_000)
        })
        .unwrap();
        let hardware_available = profile.threads[0]
            .events
            .iter()
            .any(|r| r.quantity == Quantity::Cycles && r.count.is_some());
        if hardware_available {
            eprintln!(
                "SKIPPED: this machine has a PMU, the unavailable-counter report cannot be exercised"
            );
            return;
        }
        assert!(profile.unavailable.iter().any(|u| u.event == "cycles"));
        assert!(profile.unavailable.iter().all(|u| !u.reason.is_empty()));
        let metrics = profile.thread_metrics(0).unwrap();
        assert_eq!(metrics.ipc, None);
        assert!(
            metrics
                .missing
                .iter()
                .any(|(name, inputs)| name == "IPC" && inputs.contains(&"cycles".to_owned()))
        );
        let text = profile.to_string();
        assert!(text.contains("unavailable here"), "{text}");
        assert!(text.contains(SMT_FRIENDLY_RULE));
        assert!(matches!(
            profile.thread_mixes(),
            Err(ProfileError::NoInstructionMix { .. })
        ));
    }

    #[test]
    fn workload_panic_is_an_error_not_a_crash() {
        let result = profile_threads(&ProfileRequest::software_only("boom", 2), |thread| {
            if thread == 1 {
                panic!("deliberate test panic");
            }
        });
        assert!(matches!(
            result,
            Err(ProfileError::WorkloadPanicked { thread: 1 })
        ));
    }

    #[test]
    fn zero_threads_is_an_error() {
        assert!(matches!(
            profile_threads(&ProfileRequest::software_only("none", 0), |_| {}),
            Err(ProfileError::NoThreads)
        ));
    }

    fn record(event: &str, quantity: Quantity, count: Option<u64>) -> EventRecord {
        EventRecord {
            event: event.into(),
            quantity,
            count,
            time_enabled: 10,
            time_running: 10,
            scaled: count.map(|c| c as f64),
        }
    }

    fn hand_made_intel_profile() -> Profile {
        Profile {
            workload: "hand-made".into(),
            family: CpuFamily::Intel,
            threads: vec![ThreadProfile {
                thread: 0,
                events: vec![
                    record("instructions", Quantity::Instructions, Some(1000)),
                    record("cycles", Quantity::Cycles, Some(2000)),
                    record(
                        "FP_ARITH_INST_RETIRED",
                        Quantity::Class(InstrClass::Fp),
                        Some(500),
                    ),
                    record(
                        "MEM_INST_RETIRED.ALL_LOADS",
                        Quantity::Class(InstrClass::Load),
                        Some(200),
                    ),
                    record(
                        "MEM_INST_RETIRED.ALL_STORES",
                        Quantity::Class(InstrClass::Store),
                        Some(100),
                    ),
                    record(
                        "BR_INST_RETIRED.ALL_BRANCHES",
                        Quantity::Class(InstrClass::Branch),
                        Some(50),
                    ),
                ],
            }],
            unavailable: vec![],
        }
    }

    #[test]
    fn json_round_trip_preserves_the_profile() {
        let profile = hand_made_intel_profile();
        let path = std::env::temp_dir().join(format!(
            "parbench-mapper-profile-{}.json",
            std::process::id()
        ));
        std::fs::write(&path, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
        let back = Profile::read_json(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, profile);
    }

    #[test]
    fn malformed_profile_json_is_a_typed_error() {
        let path = std::env::temp_dir().join(format!(
            "parbench-mapper-bad-profile-{}.json",
            std::process::id()
        ));
        std::fs::write(&path, "{\"workload\": 3}").unwrap();
        let result = Profile::read_json(&path);
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(result, Err(ProfileError::Json { .. })));
    }

    #[test]
    fn mix_from_counters_derives_int_on_x86() {
        let mixes = hand_made_intel_profile().thread_mixes().unwrap();
        // int = 1000 - 500 - 300 - 50
        assert_eq!(mixes[0].count(InstrClass::Int), 150.0);
        assert_eq!(mixes[0].count(InstrClass::Load), 200.0);
        assert_eq!(mixes[0].count(InstrClass::Store), 100.0);
        assert_eq!(
            hand_made_intel_profile().thread_metrics(0).unwrap().ipc,
            Some(0.5)
        );
    }

    #[test]
    fn threads_are_found_by_their_label_not_their_position() {
        // Thread 0's counters failed, so the profile holds threads 1 and 2 only (as the latency
        // command's per-worker profiles do): each must get its own counts.
        let mut profile = hand_made_intel_profile();
        let one = profile.to_string();
        assert!(
            one.starts_with("profile of hand-made on 1 thread, "),
            "{one}"
        );
        let mut second = profile.threads[0].clone();
        second.thread = 2;
        second.events[0] = record("instructions", Quantity::Instructions, Some(4000));
        profile.threads[0].thread = 1;
        profile.threads.push(second);
        let instructions = |thread| profile.thread_totals(thread).unwrap()[&Quantity::Instructions];
        assert_eq!(instructions(1), Some(1000.0));
        assert_eq!(instructions(2), Some(4000.0));
        assert!(profile.thread_totals(0).is_none());
        assert_eq!(profile.thread_metrics(2).unwrap().ipc, Some(2.0));
        let text = profile.to_string();
        assert!(
            text.starts_with("profile of hand-made on 2 threads, "),
            "{text}"
        );
        assert!(
            text.contains("thread 1: cycles 2000, instructions 1000"),
            "{text}"
        );
        assert!(
            text.contains("thread 2: cycles 2000, instructions 4000"),
            "{text}"
        );
        // Mixes stay in the order of the threads.
        let mixes = profile.thread_mixes().unwrap();
        assert_eq!(mixes[0].count(InstrClass::Int), 150.0);
        assert_eq!(mixes[1].count(InstrClass::Int), 3150.0);
    }

    #[test]
    fn a_missing_part_of_a_class_makes_the_class_unavailable() {
        let mut profile = hand_made_intel_profile();
        profile.threads[0].events[4] = record(
            "MEM_INST_RETIRED.ALL_STORES",
            Quantity::Class(InstrClass::Store),
            None,
        );
        let totals = profile.thread_totals(0).unwrap();
        assert_eq!(totals[&Quantity::Class(InstrClass::Store)], None);
        assert_eq!(totals[&Quantity::Class(InstrClass::Load)], Some(200.0));
        assert_eq!(totals[&Quantity::Class(InstrClass::Int)], None);
    }
}
