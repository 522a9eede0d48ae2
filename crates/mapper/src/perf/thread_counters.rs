//! A set of counters on one thread, for callers that decide themselves when to count.
//!
//! [`profile_threads`](super::profile_threads) runs a closure between enabling and reading; a
//! server thread measured *under load* (the latency study recorded its counters during the
//! latency runs) instead starts counting at its first measured request and stops at its last,
//! on a thread someone else created. [`ThreadCounters`] is that: open on the calling thread,
//! [`enable`](ThreadCounters::enable), [`disable`](ThreadCounters::disable),
//! [`read`](ThreadCounters::read) into a [`ThreadProfile`] with one record per requested event
//! (unavailable ones without a count). [`probe_events`] finds the unavailable events first, once,
//! with the kernel's reason.

use super::ProfileError;
use super::counter::EventCounter;
use super::events::EventSpec;
use super::profile::{EventRecord, ThreadProfile, UnavailableEvent};

/// Splits `events` into those this machine can count and those it cannot (with the reason), by
/// opening each one alone on the calling thread.
///
/// ```
/// use parbench_mapper::perf::{probe_events, SOFTWARE_EVENTS};
/// let (available, unavailable) = probe_events(&SOFTWARE_EVENTS);
/// assert_eq!(available.len(), 3);
/// assert!(unavailable.is_empty());
/// ```
pub fn probe_events(events: &[EventSpec]) -> (Vec<EventSpec>, Vec<UnavailableEvent>) {
    let mut available = Vec::new();
    let mut unavailable = Vec::new();
    for spec in events {
        match EventCounter::open_on_current_thread(spec) {
            Ok(_probe) => available.push(*spec),
            Err(error) => unavailable.push(UnavailableEvent {
                event: spec.name.to_owned(),
                reason: error.to_string(),
            }),
        }
    }
    (available, unavailable)
}

/// Counters of the calling thread: every requested event, open when it is available.
///
/// ```
/// use parbench_mapper::perf::{probe_events, Quantity, ThreadCounters, SOFTWARE_EVENTS};
/// let (available, _) = probe_events(&SOFTWARE_EVENTS);
/// let mut counters = ThreadCounters::open_on_current_thread(&SOFTWARE_EVENTS, &available)?;
/// counters.enable()?;
/// std::hint::black_box((0..100_000u64).sum::<u64>());
/// counters.disable()?;
/// let profile = counters.read(0)?;
/// let task_clock = profile.events.iter().find(|e| e.quantity == Quantity::TaskClockNs).unwrap();
/// assert!(task_clock.count.unwrap() > 0);
/// # Ok::<(), parbench_mapper::perf::ProfileError>(())
/// ```
#[derive(Debug)]
pub struct ThreadCounters {
    requested: Vec<EventSpec>,
    counters: Vec<EventCounter>,
}

impl ThreadCounters {
    /// Opens (disabled) every event of `requested` that is in `available` on the calling thread;
    /// the others are reported without a count by [`read`](Self::read).
    ///
    /// # Errors
    /// The first counter that fails to open (rare once [`probe_events`] accepted it).
    pub fn open_on_current_thread(
        requested: &[EventSpec],
        available: &[EventSpec],
    ) -> Result<ThreadCounters, ProfileError> {
        Self::open_each(requested, available, EventCounter::open_on_current_thread)
    }

    /// Opens every available event of `requested` for the command the calling thread starts
    /// next, inherited by all of its threads and child processes and enabled when it calls
    /// `exec` ([`EventCounter::open_for_next_exec`]); [`read`](Self::read) after it exited gives
    /// the command's totals.
    ///
    /// # Errors
    /// The first counter that fails to open.
    pub fn open_for_next_exec(
        requested: &[EventSpec],
        available: &[EventSpec],
    ) -> Result<ThreadCounters, ProfileError> {
        Self::open_each(requested, available, EventCounter::open_for_next_exec)
    }

    /// Opens, enabled, every available event of `requested` on thread `tid` of any process
    /// ([`EventCounter::open_on_thread`]); the counts stay readable after it exited.
    ///
    /// # Errors
    /// The first counter that fails to open (`ESRCH` when the thread is gone).
    pub fn open_on_thread(
        requested: &[EventSpec],
        available: &[EventSpec],
        tid: libc::pid_t,
    ) -> Result<ThreadCounters, ProfileError> {
        Self::open_each(requested, available, |spec| {
            EventCounter::open_on_thread(spec, tid)
        })
    }

    fn open_each(
        requested: &[EventSpec],
        available: &[EventSpec],
        open: impl Fn(&EventSpec) -> Result<EventCounter, ProfileError>,
    ) -> Result<ThreadCounters, ProfileError> {
        let counters = requested
            .iter()
            .filter(|spec| available.contains(spec))
            .map(open)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ThreadCounters {
            requested: requested.to_vec(),
            counters,
        })
    }

    /// Starts every counter.
    ///
    /// # Errors
    /// [`ProfileError::Os`] when an ioctl fails.
    pub fn enable(&mut self) -> Result<(), ProfileError> {
        self.counters.iter_mut().try_for_each(EventCounter::enable)
    }

    /// Stops every counter (they keep their counts).
    ///
    /// # Errors
    /// [`ProfileError::Os`] when an ioctl fails.
    pub fn disable(&mut self) -> Result<(), ProfileError> {
        self.counters.iter_mut().try_for_each(EventCounter::disable)
    }

    /// One record per requested event, in request order, labelled as thread `thread`; events
    /// that were not opened have no count.
    ///
    /// # Errors
    /// [`ProfileError::Os`] when a read fails.
    pub fn read(&mut self, thread: usize) -> Result<ThreadProfile, ProfileError> {
        let mut readings = Vec::with_capacity(self.counters.len());
        for counter in &mut self.counters {
            readings.push((*counter.spec(), counter.read()?));
        }
        let events = self
            .requested
            .iter()
            .map(|spec| {
                let reading = readings
                    .iter()
                    .find(|(opened, _)| opened == spec)
                    .map(|(_, r)| *r);
                EventRecord {
                    event: spec.name.to_owned(),
                    quantity: spec.quantity,
                    count: reading.map(|r| r.count),
                    time_enabled: reading.map_or(0, |r| r.time_enabled),
                    time_running: reading.map_or(0, |r| r.time_running),
                    scaled: reading.and_then(|r| r.scaled()),
                }
            })
            .collect();
        Ok(ThreadProfile { thread, events })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::{CpuFamily, Quantity, SOFTWARE_EVENTS, event_table};

    #[test]
    fn unavailable_events_are_reported_without_a_count() {
        let requested = event_table(CpuFamily::detect());
        let (available, unavailable) = probe_events(&requested);
        assert_eq!(available.len() + unavailable.len(), requested.len());
        let mut counters = ThreadCounters::open_on_current_thread(&requested, &available).unwrap();
        counters.enable().unwrap();
        std::hint::black_box((0..10_000u64).sum::<u64>());
        counters.disable().unwrap();
        let profile = counters.read(3).unwrap();
        assert_eq!(profile.thread, 3);
        assert_eq!(profile.events.len(), requested.len());
        for record in &profile.events {
            let missing = unavailable.iter().any(|u| u.event == record.event);
            assert_eq!(record.count.is_none(), missing, "{}", record.event);
        }
    }

    #[test]
    fn counting_stops_when_disabled() {
        let mut counters =
            ThreadCounters::open_on_current_thread(&SOFTWARE_EVENTS, &SOFTWARE_EVENTS).unwrap();
        counters.enable().unwrap();
        std::hint::black_box((0..100_000u64).sum::<u64>());
        counters.disable().unwrap();
        let clock = |profile: &ThreadProfile| {
            profile
                .events
                .iter()
                .find(|e| e.quantity == Quantity::TaskClockNs)
                .and_then(|e| e.count)
                .unwrap()
        };
        let first = clock(&counters.read(0).unwrap());
        std::hint::black_box((0..1_000_000u64).sum::<u64>());
        assert_eq!(clock(&counters.read(0).unwrap()), first);
    }
}
