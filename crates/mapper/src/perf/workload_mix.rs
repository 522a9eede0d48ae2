//! One instruction mix for a whole profiled workload, for mapping it as one application.
//!
//! `map --profile P.json` places threads of a *workload*, not of the profiled threads, so it
//! needs the workload's mix: the mean of the measured per-thread mixes (each thread's counts
//! divided by the thread count, summed), or — when the profile lacks the class counters, as every
//! profile taken without a PMU does — the mix the workload declares, and which of the two it is.

use super::profile::{MixSource, Profile};
use crate::mix::{InstrClass, InstructionMix};

impl Profile {
    /// The workload's mean measured mix, else `declared`, and where it came from
    /// ([`MixSource::Unavailable`] with `None` when there is neither).
    ///
    /// ```
    /// use parbench_mapper::perf::{profile_threads, MixSource, ProfileRequest};
    /// use parbench_mapper::InstructionMix;
    /// let p = profile_threads(&ProfileRequest::software_only("fp-add", 2), |_| {})?;
    /// let (mix, source) = p.workload_mix(InstructionMix::declared_for_kernel("fp-add"));
    /// assert_eq!((mix, source), (InstructionMix::declared_for_kernel("fp-add"), MixSource::Declared));
    /// assert_eq!(p.workload_mix(None), (None, MixSource::Unavailable));
    /// # Ok::<(), parbench_mapper::perf::ProfileError>(())
    /// ```
    pub fn workload_mix(
        &self,
        declared: Option<InstructionMix>,
    ) -> (Option<InstructionMix>, MixSource) {
        match self.thread_mixes() {
            Ok(measured) if !measured.is_empty() => {
                (Some(mean_mix(&measured)), MixSource::Measured)
            }
            _ => match declared {
                Some(mix) => (Some(mix), MixSource::Declared),
                None => (None, MixSource::Unavailable),
            },
        }
    }
}

/// The class-wise mean of non-empty `mixes`.
fn mean_mix(mixes: &[InstructionMix]) -> InstructionMix {
    let threads = mixes.len() as f64;
    InstructionMix::new(mixes.iter().flat_map(|mix| {
        InstrClass::ALL
            .iter()
            .map(move |&class| (class, mix.count(class) / threads))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::{CpuFamily, EventRecord, Quantity, ThreadProfile};

    fn thread(index: usize, fp: u64, int: u64) -> ThreadProfile {
        let record = |class, count| EventRecord {
            event: format!("{class:?}"),
            quantity: Quantity::Class(class),
            count: Some(count),
            time_enabled: 1,
            time_running: 1,
            scaled: Some(count as f64),
        };
        ThreadProfile {
            thread: index,
            events: vec![
                record(InstrClass::Fp, fp),
                record(InstrClass::Int, int),
                record(InstrClass::Load, 0),
                record(InstrClass::Store, 0),
                record(InstrClass::Branch, 0),
            ],
        }
    }

    #[test]
    fn measured_mix_is_the_mean_of_the_threads() {
        let profile = Profile {
            workload: "mixed".into(),
            family: CpuFamily::Other,
            threads: vec![thread(0, 100, 0), thread(1, 300, 200)],
            unavailable: Vec::new(),
        };
        let (mix, source) = profile.workload_mix(None);
        let mix = mix.unwrap();
        assert_eq!(source, MixSource::Measured);
        assert_eq!(mix.count(InstrClass::Fp), 200.0);
        assert_eq!(mix.count(InstrClass::Int), 100.0);
    }
}
