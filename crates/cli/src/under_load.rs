//! Per-thread perf counters recorded *under load*: the latency study read its counters during the
//! latency runs, at each load, not in a separate profiling run.
//!
//! Wiring between `parbench-kernels`' latency server and `parbench-mapper`'s counters: a
//! `CountingService` wraps a worker's service, opens the counters (disabled) on the worker thread
//! when the server calls [`Service::point_starts`] (before the first arrival: the dozen
//! `perf_event_open` calls stay out of every request's time), enables them at
//! [`Service::measurement_starts`] (before the worker's first measured request: the warm-up is
//! not counted; one ioctl per event within that request's queue time) and reads them at
//! [`Service::point_ends`]. A perf counter counts only
//! while its thread runs, so the time a worker sleeps waiting for requests adds nothing; the totals
//! are those of serving the measured requests (plus the worker's few queue operations).
//!
//! Software events (task clock, context switches, migrations) always count; hardware events count
//! where the machine has a PMU and are otherwise recorded as unavailable with the kernel's reason.

use std::sync::{Arc, Mutex, PoisonError};

use parbench_kernels::latency::{LatencyError, Service};
use parbench_mapper::perf::{
    CpuFamily, EventSpec, Profile, ThreadCounters, ThreadProfile, UnavailableEvent, probe_events,
    tail_latency_events,
};

/// What each worker of one load point recorded; `None` before the worker reached its first
/// measured request, `Err` when its counters could not be opened or read.
type Slots = Arc<Mutex<Vec<Option<Result<ThreadProfile, String>>>>>;

/// The events to record and where the workers leave their readings.
///
/// ```
/// use parbench_cli::under_load::CounterSet;
/// let set = CounterSet::for_this_machine(2);
/// assert!(set.requested_events() >= 3); // at least the software events
/// assert!(set.take_point("idle").is_none()); // nothing recorded yet
/// ```
#[derive(Debug, Clone)]
pub struct CounterSet {
    family: CpuFamily,
    requested: Arc<[EventSpec]>,
    available: Arc<[EventSpec]>,
    unavailable: Vec<UnavailableEvent>,
    slots: Slots,
}

impl CounterSet {
    /// Every event of this machine's CPU family (software ones always available) plus the
    /// tail-latency study's own events where the CPU has them ([`tail_latency_events`]), probed
    /// once, for `workers` workers. Study events this CPU does not define are listed as
    /// unavailable with the reason.
    pub fn for_this_machine(workers: usize) -> CounterSet {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let (events, not_on_this_cpu) = tail_latency_events(&cpuinfo);
        let mut set = CounterSet::new(CpuFamily::detect(), &events, workers);
        set.unavailable.extend(not_on_this_cpu);
        set
    }

    /// `events` of `family`, probed on the calling thread, for `workers` workers.
    pub fn new(family: CpuFamily, events: &[EventSpec], workers: usize) -> CounterSet {
        let (available, unavailable) = probe_events(events);
        CounterSet {
            family,
            requested: events.into(),
            available: available.into(),
            unavailable,
            slots: Arc::new(Mutex::new(vec![None; workers])),
        }
    }

    /// How many events are requested (available or not).
    pub fn requested_events(&self) -> usize {
        self.requested.len()
    }

    /// Wraps worker `worker`'s service so that it records into this set.
    pub fn wrap(&self, worker: usize, inner: Box<dyn Service>) -> Box<dyn Service> {
        Box::new(CountingService {
            inner,
            worker,
            set: self.clone(),
            opened: None,
            counters: None,
        })
    }

    /// The readings of the load point that just ended as a [`Profile`] named `label` (one thread
    /// per worker that reached a measured request), and clears them for the next point; `None`
    /// when no worker recorded anything.
    ///
    /// # Errors
    /// Not an error: a worker whose counters failed is left out and the failure is listed in
    /// the profile's `unavailable` entries under the event name `worker N`.
    pub fn take_point(&self, label: &str) -> Option<Profile> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut threads = Vec::new();
        let mut unavailable = self.unavailable.clone();
        for (worker, slot) in slots.iter_mut().enumerate() {
            match slot.take() {
                Some(Ok(profile)) => threads.push(profile),
                Some(Err(reason)) => unavailable.push(UnavailableEvent {
                    event: format!("worker {worker}"),
                    reason,
                }),
                None => {}
            }
        }
        (!threads.is_empty()).then(|| Profile {
            workload: label.to_owned(),
            family: self.family,
            threads,
            unavailable,
        })
    }

    fn store(&self, worker: usize, reading: Result<ThreadProfile, String>) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = slots.get_mut(worker) {
            *slot = Some(reading);
        }
    }
}

/// A worker's service that counts its measured requests (see the module documentation).
struct CountingService {
    inner: Box<dyn Service>,
    worker: usize,
    set: CounterSet,
    /// Opened at the point's start, not yet counting (or why they could not be opened).
    opened: Option<Result<ThreadCounters, String>>,
    /// Counting since the worker's first measured request.
    counters: Option<ThreadCounters>,
}

impl Service for CountingService {
    fn serve(&mut self) -> Result<(), LatencyError> {
        self.inner.serve()
    }

    fn point_starts(&mut self) {
        self.inner.point_starts();
        self.opened = Some(
            ThreadCounters::open_on_current_thread(&self.set.requested, &self.set.available)
                .map_err(|error| error.to_string()),
        );
    }

    fn measurement_starts(&mut self) {
        self.inner.measurement_starts();
        let enabled = match self.opened.take() {
            Some(opened) => opened.and_then(|mut counters| {
                counters
                    .enable()
                    .map(|()| counters)
                    .map_err(|error| error.to_string())
            }),
            None => Err("counters not opened at the start of the load".to_owned()),
        };
        match enabled {
            Ok(counters) => self.counters = Some(counters),
            Err(error) => self.set.store(self.worker, Err(error)),
        }
    }

    fn point_ends(&mut self) {
        // Counters of a worker that served only warm-up requests were never enabled: closed.
        self.opened = None;
        if let Some(mut counters) = self.counters.take() {
            let reading = counters
                .disable()
                .and_then(|()| counters.read(self.worker))
                .map_err(|error| error.to_string());
            self.set.store(self.worker, reading);
        }
        self.inner.point_ends();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parbench_kernels::latency::{CpuLayout, CurveConfig, MonotonicClock, Placement, run_curve};
    use parbench_mapper::perf::{Quantity, SOFTWARE_EVENTS};

    struct Spin;
    impl Service for Spin {
        fn serve(&mut self) -> Result<(), LatencyError> {
            std::hint::black_box((0..200_000u64).sum::<u64>());
            Ok(())
        }
    }

    #[test]
    fn workers_count_their_measured_requests_at_every_load() {
        let plan = Placement::Single
            .plan(&CpuLayout::one_thread_per_core(&[0]))
            .unwrap();
        let set = CounterSet::new(CpuFamily::detect(), &SOFTWARE_EVENTS, 1);
        let mut services = vec![set.wrap(0, Box::new(Spin))];
        let config = CurveConfig {
            qps: vec![200.0, 400.0],
            requests: 20,
            warmup: 2,
            ..CurveConfig::default()
        };
        let mut profiles = Vec::new();
        run_curve(
            &MonotonicClock::new(),
            &config,
            &plan,
            &mut services,
            false,
            |point| {
                profiles.push(set.take_point(&point.offered_qps.to_string()));
                std::ops::ControlFlow::Continue(())
            },
        )
        .unwrap();
        assert_eq!(profiles.len(), 2);
        for profile in profiles {
            let profile = profile.expect("the worker reached its measured requests");
            assert_eq!(profile.threads.len(), 1);
            let totals = profile.thread_totals(0).unwrap();
            assert!(totals[&Quantity::TaskClockNs].unwrap() > 0.0);
        }
        // Taken: the next point starts empty.
        assert!(set.take_point("again").is_none());
    }

    #[test]
    fn counters_are_opened_at_the_point_start_and_only_enabled_in_a_measured_request() {
        let set = CounterSet::new(CpuFamily::detect(), &SOFTWARE_EVENTS, 1);
        let mut service = CountingService {
            inner: Box::new(Spin),
            worker: 0,
            set: set.clone(),
            opened: None,
            counters: None,
        };
        service.point_starts();
        assert!(
            matches!(service.opened, Some(Ok(_))),
            "opened before the first arrival"
        );
        // The hook that runs within the first measured request's queue time only enables them.
        service.measurement_starts();
        assert!(service.opened.is_none() && service.counters.is_some());
        service.serve().unwrap();
        service.point_ends();
        let profile = set.take_point("one point").unwrap();
        let totals = profile.thread_totals(0).unwrap();
        assert!(totals[&Quantity::TaskClockNs].unwrap() > 0.0);
        // A worker that serves only warm-up requests records nothing and keeps nothing open.
        service.point_starts();
        service.serve().unwrap();
        service.point_ends();
        assert!(service.opened.is_none() && set.take_point("warm-up only").is_none());
    }
}
