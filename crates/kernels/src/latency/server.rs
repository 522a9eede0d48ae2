//! One load point: an open-loop generator feeding a FIFO queue served by worker threads.
//!
//! The generator walks a precomputed arrival schedule ([`super::exponential_arrivals`]): it waits
//! until request i's scheduled time, then enqueues it stamped with that *scheduled* time, never
//! with the time it actually got there. A late generator (descheduled, or sharing a CPU with a
//! worker) therefore shows up as queue time of the late request, as in TailBench, instead of
//! silently lowering the offered load. How late it was is recorded too (the time it enqueued each
//! request, [`RequestSample::generator_lag_ns`], summarised in [`PointResult::generator_lag`]), so
//! that a point whose latencies are partly the generator's can be told apart.
//!
//! Workers take requests in arrival order and stamp start and completion. Per request:
//! queue = start − scheduled, service = completion − start, sojourn = completion − scheduled.
//!
//! A point never hangs. The run stops early — the point is then *saturated* — when more than
//! [`Bounds::max_backlog`] requests wait in the queue, or when [`Bounds::max_duration`] has passed
//! since the first scheduled arrival (checked at each arrival and each completion). Requests
//! being served when the run stops complete and are measured; those still waiting, or not yet
//! arrived, are counted as dropped. ([`super::run_curve`] refuses a schedule that outlasts the
//! duration bound, which would stop it whatever the server.)
//! Beyond saturation the queue grows without limit, so measuring on would only measure the bound.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::executor::SeqExecutor;
use crate::kernel::PreparedKernel;

use super::{Clock, LatencyError, LatencySummary, PlacementPlan};

/// One request's work: the server calls it once per request, on the worker thread that took it.
///
/// ```
/// use parbench_kernels::latency::{LatencyError, Service};
///
/// struct Count(u64);
/// impl Service for Count {
///     fn serve(&mut self) -> Result<(), LatencyError> {
///         self.0 += 1;
///         Ok(())
///     }
/// }
/// let mut service = Count(0);
/// service.serve()?;
/// assert_eq!(service.0, 1);
/// # Ok::<(), LatencyError>(())
/// ```
pub trait Service: Send {
    /// Handles one request.
    ///
    /// # Errors
    /// Whatever makes the request fail; the load point stops with that error.
    fn serve(&mut self) -> Result<(), LatencyError>;

    /// Called on the worker thread, once per load point, before it takes its first request (the
    /// first arrival is 2 ms after the threads start; a slower hook delays the warm-up requests).
    /// Set-up that must not be timed, such as opening per-thread perf counters, belongs here.
    /// The default does nothing.
    fn point_starts(&mut self) {}

    /// Called on the worker thread, once per load point, just before this worker serves its first
    /// measured (non-warm-up) request. A service that counts what happens *under load* — e.g.
    /// per-thread perf counters, which observe only the thread that opened them — starts here.
    /// The worker has already taken that request, so the hook's time is part of its queue time
    /// (and delays those queued behind it): keep it short, e.g. enable counters opened in
    /// [`point_starts`](Self::point_starts). The default does nothing.
    fn measurement_starts(&mut self) {}

    /// Called on the worker thread when it has served its last request of a load point (the
    /// schedule ran out, or the point stopped at a bound). Not called when the point fails.
    /// The default does nothing.
    fn point_ends(&mut self) {}
}

/// A kernel as a service: each request is one run of a prepared kernel on the `seq` executor, so a
/// request is single-threaded and the server's parallelism is its workers. The run includes the
/// kernel's validation of its result, which is part of answering the request.
///
/// ```
/// use parbench_kernels::latency::{KernelService, Service};
/// use parbench_kernels::{find_kernel, Params};
///
/// let matmul = find_kernel("matmul")?;
/// let mut service = KernelService::new(matmul.prepare(&Params::new().with("n", "16"), 1)?);
/// service.serve()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct KernelService {
    prepared: Box<dyn PreparedKernel>,
    runs_per_request: usize,
}

impl KernelService {
    /// Serves requests by running `prepared` (prepared for one thread) once per request.
    pub fn new(prepared: Box<dyn PreparedKernel>) -> Self {
        KernelService::repeated(prepared, 1)
    }

    /// Serves each request with `runs` back-to-back runs (at least one), to give a kernel whose
    /// small size runs in microseconds a service time well above the server's own per-request
    /// cost (queueing, wake-ups), as real request handlers have.
    ///
    /// ```
    /// use parbench_kernels::latency::{KernelService, Service};
    /// use parbench_kernels::{find_kernel, Params};
    /// let matmul = find_kernel("matmul")?;
    /// let mut service = KernelService::repeated(matmul.prepare(&Params::new().with("n", "8"), 1)?, 3);
    /// service.serve()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn repeated(prepared: Box<dyn PreparedKernel>, runs: usize) -> Self {
        KernelService {
            prepared,
            runs_per_request: runs.max(1),
        }
    }
}

impl Service for KernelService {
    fn serve(&mut self) -> Result<(), LatencyError> {
        for _ in 0..self.runs_per_request {
            self.prepared.run(&SeqExecutor::new())?;
        }
        Ok(())
    }
}

/// Limits that keep a load point from running forever when the server cannot keep up.
///
/// ```
/// use parbench_kernels::latency::Bounds;
///
/// let bounds = Bounds::default();
/// assert_eq!(bounds.max_backlog, 1000);
/// assert_eq!(bounds.max_duration.as_secs(), 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Stop when more requests than this wait in the queue.
    pub max_backlog: usize,
    /// Stop when this much time has passed since the first scheduled arrival.
    pub max_duration: Duration,
}

impl Default for Bounds {
    /// 1000 waiting requests is far beyond any stable queue at the loads worth measuring (at 90 %
    /// utilisation an M/M/1 queue averages 9), and 20 s keeps a whole curve within minutes.
    fn default() -> Self {
        Bounds {
            max_backlog: 1000,
            max_duration: Duration::from_secs(20),
        }
    }
}

/// Why a load point stopped before every request completed.
///
/// ```
/// use parbench_kernels::latency::StopReason;
/// assert_eq!(StopReason::Backlog.to_string(), "backlog bound reached");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StopReason {
    /// More than [`Bounds::max_backlog`] requests were waiting.
    #[error("backlog bound reached")]
    Backlog,
    /// [`Bounds::max_duration`] passed.
    #[error("duration bound reached")]
    Duration,
}

/// Timestamps of one completed request, in nanoseconds relative to the first scheduled arrival.
///
/// ```
/// use parbench_kernels::latency::RequestSample;
///
/// let r =
///     RequestSample { index: 3, scheduled_ns: 100, enqueued_ns: 120, start_ns: 250, end_ns: 1250 };
/// assert_eq!((r.queue_ns(), r.service_ns(), r.sojourn_ns()), (150, 1000, 1150));
/// assert_eq!(r.generator_lag_ns(), 20); // 20 of the 150 ns of queueing are the generator's
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSample {
    /// Position in the arrival schedule (warm-up requests come first).
    pub index: usize,
    /// When the request was scheduled to arrive.
    pub scheduled_ns: u64,
    /// When the generator put it in the queue: the scheduled time plus the generator's lateness.
    pub enqueued_ns: u64,
    /// When a worker started serving it.
    pub start_ns: u64,
    /// When the worker finished it.
    pub end_ns: u64,
}

impl RequestSample {
    /// Time spent waiting: start − scheduled arrival (includes the generator's lateness).
    pub fn queue_ns(&self) -> u64 {
        self.start_ns.saturating_sub(self.scheduled_ns)
    }

    /// How late the generator enqueued the request: enqueued − scheduled. Part of
    /// [`queue_ns`](Self::queue_ns), but the load generator's delay, not the server's.
    pub fn generator_lag_ns(&self) -> u64 {
        self.enqueued_ns.saturating_sub(self.scheduled_ns)
    }

    /// Time spent being served: completion − start.
    pub fn service_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Response time: completion − scheduled arrival = queue + service.
    pub fn sojourn_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.scheduled_ns)
    }
}

/// The outcome of one load point.
///
/// ```
/// use parbench_kernels::latency::{PointResult, RequestSample};
///
/// let samples = vec![
///     RequestSample { index: 1, scheduled_ns: 0, enqueued_ns: 0, start_ns: 0, end_ns: 2_000_000 },
///     RequestSample {
///         index: 2, scheduled_ns: 1_000_000, enqueued_ns: 1_000_000, start_ns: 2_000_000,
///         end_ns: 4_000_000,
///     },
/// ];
/// let point = PointResult::from_samples(500.0, samples, 0, None);
/// assert_eq!(point.achieved_qps, 500.0); // 2 requests in 4 ms
/// assert_eq!(point.sojourn.unwrap().max_ns, 3_000_000.0);
/// assert!(!point.saturated());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PointResult {
    /// The offered load, requests per second: the mean rate of the arrival schedule.
    pub offered_qps: f64,
    /// The rate the schedule actually offered over the measured requests: their count less one
    /// over the time from the first to the last of their scheduled arrivals. A finite Poisson
    /// schedule scatters around `offered_qps` by about `1/√n` (seed 1's 2000 measured arrivals
    /// after 200 warm-up ones are 3.7 % fast), so this, not `offered_qps`, is what
    /// `achieved_qps` approaches when the server keeps up. From the whole measured schedule,
    /// dropped requests included, when [`run_point`] made the point; from the completed samples
    /// in [`PointResult::from_samples`]; `offered_qps` with fewer than two arrivals.
    pub scheduled_qps: f64,
    /// Measured (non-warm-up) requests completed, per second from the first measured scheduled
    /// arrival to the last measured completion: about [`scheduled_qps`](Self::scheduled_qps)
    /// while the server keeps up, less when it falls behind. The span includes the last request's
    /// sojourn time, so with few requests the two differ whatever the server (one request:
    /// 1 / its sojourn time).
    pub achieved_qps: f64,
    /// Sojourn-time statistics of the measured requests; `None` if none completed.
    pub sojourn: Option<LatencySummary>,
    /// Queue-time statistics of the measured requests.
    pub queue: Option<LatencySummary>,
    /// Service-time statistics of the measured requests.
    pub service: Option<LatencySummary>,
    /// How late the generator enqueued the measured requests
    /// ([`RequestSample::generator_lag_ns`]). Near zero when it kept the schedule; when it did
    /// not (descheduled, or sharing a CPU with a worker), that much of the queue and sojourn
    /// times is the generator's, and the server met bursts instead of the scheduled arrivals.
    pub generator_lag: Option<LatencySummary>,
    /// Every completed measured request, in schedule order.
    pub samples: Vec<RequestSample>,
    /// Requests of the schedule (warm-up included) that never completed because the run stopped.
    pub dropped: usize,
    /// Why the run stopped early, if it did.
    pub stopped: Option<StopReason>,
}

impl PointResult {
    /// Derives the statistics of a point from its completed measured requests.
    pub fn from_samples(
        offered_qps: f64,
        mut samples: Vec<RequestSample>,
        dropped: usize,
        stopped: Option<StopReason>,
    ) -> Self {
        samples.sort_by_key(|s| s.index);
        let summary = |field: fn(&RequestSample) -> u64| {
            LatencySummary::from_ns(&samples.iter().map(field).collect::<Vec<_>>())
        };
        let scheduled_qps = schedule_rate(samples.iter().map(|s| s.scheduled_ns), offered_qps);
        let first_arrival = samples.iter().map(|s| s.scheduled_ns).min();
        let last_completion = samples.iter().map(|s| s.end_ns).max();
        let achieved_qps = match (first_arrival, last_completion) {
            (Some(first), Some(last)) if last > first => {
                samples.len() as f64 / ((last - first) as f64 / 1e9)
            }
            _ => 0.0,
        };
        PointResult {
            offered_qps,
            scheduled_qps,
            achieved_qps,
            sojourn: summary(RequestSample::sojourn_ns),
            queue: summary(RequestSample::queue_ns),
            service: summary(RequestSample::service_ns),
            generator_lag: summary(RequestSample::generator_lag_ns),
            samples,
            dropped,
            stopped,
        }
    }

    /// Whether the run hit a bound: the server could not keep up with the offered load.
    pub fn saturated(&self) -> bool {
        self.stopped.is_some()
    }
}

/// A scheduled request as it waits in the queue.
#[derive(Debug, Clone, Copy)]
struct Request {
    index: usize,
    scheduled_ns: u64,
    enqueued_ns: u64,
}

/// The queue and the run's state, under one lock so that "stop" and "no more requests" are
/// seen together with the requests themselves.
#[derive(Debug, Default)]
struct QueueState {
    waiting: VecDeque<Request>,
    /// The generator has enqueued its whole schedule.
    closed: bool,
    stopped: Option<StopReason>,
    /// A thread failed (error or panic); the run's result is that failure, not a measurement.
    aborted: bool,
}

#[derive(Debug, Default)]
struct RequestQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

impl RequestQueue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // A worker that panicked inside a service leaves the state consistent (it holds the lock
        // only for queue operations), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the run (the first reason wins) and wakes every worker.
    fn stop(&self, reason: StopReason) {
        let mut state = self.lock();
        state.stopped.get_or_insert(reason);
        drop(state);
        self.changed.notify_all();
    }

    /// Ends the run because a thread failed; every other thread stops at its next request.
    fn abort(&self) {
        self.lock().aborted = true;
        self.changed.notify_all();
    }

    /// The next request, or `None` when the schedule is exhausted or the run stopped.
    fn next(&self) -> Option<Request> {
        let mut state = self.lock();
        loop {
            if state.stopped.is_some() || state.aborted {
                return None;
            }
            if let Some(request) = state.waiting.pop_front() {
                return Some(request);
            }
            if state.closed {
                return None;
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Everything a load point needs besides the services.
///
/// ```
/// use parbench_kernels::latency::{Bounds, LoadPoint, MonotonicClock};
///
/// let point = LoadPoint {
///     clock: &MonotonicClock::new(),
///     offered_qps: 1000.0,
///     arrivals_ns: &[0, 1_000_000],
///     warmup: 1,
///     bounds: Bounds::default(),
/// };
/// assert_eq!(point.arrivals_ns.len() - point.warmup, 1); // one measured request
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LoadPoint<'a, C: Clock> {
    /// The time source.
    pub clock: &'a C,
    /// The load the schedule represents, reported with the result.
    pub offered_qps: f64,
    /// Arrival times in ns after the start, ascending; the first `warmup` are not measured.
    pub arrivals_ns: &'a [u64],
    /// Leading requests excluded from the statistics.
    pub warmup: usize,
    /// When to give up on a server that cannot keep up.
    pub bounds: Bounds,
}

/// Delay between starting the threads and the first scheduled arrival, so that thread start-up
/// and pinning are not measured as queueing.
const START_LEAD_NS: u64 = 2_000_000;

/// Runs one load point: `services.len()` workers (worker i pinned to `plan.worker_cpus[i]`, when
/// `pin` is true) serve the schedule in `point`.
///
/// ```
/// use parbench_kernels::latency::{
///     run_point, Bounds, LatencyError, LoadPoint, MonotonicClock, PlacementPlan, Service,
/// };
///
/// struct Nothing;
/// impl Service for Nothing {
///     fn serve(&mut self) -> Result<(), LatencyError> { Ok(()) }
/// }
/// let plan = PlacementPlan {
///     name: "test".into(), worker_cpus: vec![0], generator_cpu: None, note: None,
/// };
/// let mut services: Vec<Box<dyn Service>> = vec![Box::new(Nothing)];
/// let arrivals = [0, 100_000, 200_000];
/// let point = LoadPoint {
///     clock: &MonotonicClock::new(), offered_qps: 10_000.0, arrivals_ns: &arrivals,
///     warmup: 1, bounds: Bounds::default(),
/// };
/// let result = run_point(&point, &mut services, &plan, false)?;
/// assert_eq!(result.samples.len(), 2);
/// # Ok::<(), LatencyError>(())
/// ```
///
/// # Errors
/// [`LatencyError::WorkerCount`] when the plan has a different number of workers than
/// `services`, [`LatencyError::Pin`] when the OS refuses a CPU, or the first error of a service.
pub fn run_point<C: Clock>(
    point: &LoadPoint<'_, C>,
    services: &mut [Box<dyn Service>],
    plan: &PlacementPlan,
    pin: bool,
) -> Result<PointResult, LatencyError> {
    if services.len() != plan.worker_cpus.len() {
        return Err(LatencyError::WorkerCount {
            placement: plan.name.clone(),
            workers: plan.worker_cpus.len(),
            services: services.len(),
        });
    }
    let queue = RequestQueue::default();
    let clock = point.clock;
    let origin_ns = clock.now_ns() + START_LEAD_NS;
    let outcomes: Vec<Result<Vec<RequestSample>, LatencyError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = services
            .iter_mut()
            .zip(&plan.worker_cpus)
            .map(|(service, &cpu)| {
                let queue = &queue;
                scope.spawn(move || {
                    let served = panic::catch_unwind(AssertUnwindSafe(|| {
                        pin_to(pin.then_some(cpu))
                            .and_then(|()| serve(point, origin_ns, queue, service.as_mut()))
                    }));
                    // A failed or panicking worker ends the run at once rather than leaving the
                    // generator to play out its whole schedule.
                    if !matches!(served, Ok(Ok(_))) {
                        queue.abort();
                    }
                    served.unwrap_or_else(|payload| panic::resume_unwind(payload))
                })
            })
            .collect();
        let generator = scope.spawn(|| {
            let pinned = pin_to(if pin { plan.generator_cpu } else { None });
            if pinned.is_err() {
                queue.abort();
            }
            pinned.map(|()| generate(point, origin_ns, &queue))
        });
        let generated = generator.join().unwrap_or_else(|payload| {
            queue.abort();
            panic::resume_unwind(payload)
        });
        let mut outcomes: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|payload| panic::resume_unwind(payload))
            })
            .collect();
        outcomes.push(generated.map(|()| Vec::new()));
        outcomes
    });
    let mut samples = Vec::new();
    for outcome in outcomes {
        samples.extend(outcome?);
    }
    let completed = samples.len();
    samples.retain(|s| s.index >= point.warmup);
    let dropped = point.arrivals_ns.len() - completed;
    let stopped = queue.lock().stopped;
    let measured_arrivals = point.arrivals_ns.get(point.warmup..).unwrap_or_default();
    Ok(PointResult {
        scheduled_qps: schedule_rate(measured_arrivals.iter().copied(), point.offered_qps),
        ..PointResult::from_samples(point.offered_qps, samples, dropped, stopped)
    })
}

/// Arrivals per second between the first and the last of `arrivals_ns` (any order): one fewer
/// than their count over their span, the maximum-likelihood rate of a Poisson process seen from
/// its first arrival; `fallback` for fewer than two arrivals or a zero span.
fn schedule_rate(arrivals_ns: impl Iterator<Item = u64>, fallback: f64) -> f64 {
    let (count, first, last) = arrivals_ns.fold((0_usize, u64::MAX, 0), |(n, lo, hi), t| {
        (n + 1, lo.min(t), hi.max(t))
    });
    if count < 2 || last <= first {
        return fallback;
    }
    (count - 1) as f64 / ((last - first) as f64 / 1e9)
}

fn pin_to(cpu: Option<usize>) -> Result<(), LatencyError> {
    match cpu {
        // A CPU beyond what a cpu_set_t holds is no CPU this process can have; `core_affinity`
        // would index past its set there, a panic that aborts (it is inside an `extern "C"` call).
        Some(id) if id >= libc::CPU_SETSIZE as usize => Err(LatencyError::Pin { cpu: id }),
        Some(id) if !core_affinity::set_for_current(core_affinity::CoreId { id }) => {
            Err(LatencyError::Pin { cpu: id })
        }
        _ => Ok(()),
    }
}

/// The generator: enqueue each request at its scheduled time, stamped with that time.
fn generate<C: Clock>(point: &LoadPoint<'_, C>, origin_ns: u64, queue: &RequestQueue) {
    let deadline_ns = origin_ns.saturating_add(duration_ns(point.bounds.max_duration));
    for (index, &arrival_ns) in point.arrivals_ns.iter().enumerate() {
        // Saturating: at a vanishing load the schedule saturates at u64::MAX ns, and a wrapped
        // sum would put that arrival before the deadline, served at once.
        let scheduled_ns = origin_ns.saturating_add(arrival_ns);
        if scheduled_ns > deadline_ns {
            queue.stop(StopReason::Duration);
            return;
        }
        point.clock.wait_until_ns(scheduled_ns);
        // Read before the lock: how late the generator is, not how contended the queue.
        let enqueued_ns = point.clock.now_ns().max(scheduled_ns);
        let mut state = queue.lock();
        if state.stopped.is_some() || state.aborted {
            return;
        }
        if state.waiting.len() >= point.bounds.max_backlog {
            state.stopped = Some(StopReason::Backlog);
            drop(state);
            queue.changed.notify_all();
            return;
        }
        state.waiting.push_back(Request {
            index,
            scheduled_ns,
            enqueued_ns,
        });
        drop(state);
        queue.changed.notify_one();
    }
    queue.lock().closed = true;
    queue.changed.notify_all();
}

/// A worker: serve requests in FIFO order until the schedule is exhausted or the run stops.
fn serve<C: Clock>(
    point: &LoadPoint<'_, C>,
    origin_ns: u64,
    queue: &RequestQueue,
    service: &mut dyn Service,
) -> Result<Vec<RequestSample>, LatencyError> {
    let deadline_ns = origin_ns.saturating_add(duration_ns(point.bounds.max_duration));
    let mut samples = Vec::new();
    let mut measuring = false;
    service.point_starts();
    while let Some(request) = queue.next() {
        // Returns at once with a real clock (the request was enqueued in the past); a simulated
        // clock moves this worker's time to the request's arrival in the queue here.
        point.clock.wait_until_ns(request.enqueued_ns);
        if !measuring && request.index >= point.warmup {
            measuring = true;
            service.measurement_starts();
        }
        let start_ns = point.clock.now_ns();
        service.serve()?;
        let end_ns = point.clock.now_ns();
        samples.push(RequestSample {
            index: request.index,
            scheduled_ns: request.scheduled_ns - origin_ns,
            enqueued_ns: request.enqueued_ns - origin_ns,
            start_ns: start_ns.saturating_sub(origin_ns),
            end_ns: end_ns.saturating_sub(origin_ns),
        });
        if end_ns > deadline_ns {
            queue.stop(StopReason::Duration);
        }
    }
    service.point_ends();
    Ok(samples)
}

pub(super) fn duration_ns(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use super::*;
    use crate::latency::MonotonicClock;

    /// A CPU number past a cpu_set_t is refused as unpinnable; it aborted the process before.
    #[test]
    fn pinning_past_a_cpu_set_is_an_error_not_an_abort() {
        let cpu = libc::CPU_SETSIZE as usize + 538;
        // On a thread of its own: a pin that succeeded would stay with the thread.
        let pinned = std::thread::spawn(move || pin_to(Some(cpu)))
            .join()
            .unwrap();
        assert!(
            matches!(pinned, Err(LatencyError::Pin { cpu: refused }) if refused == cpu),
            "{pinned:?}"
        );
    }

    thread_local! {
        static SIMULATED_NOW_NS: Cell<u64> = const { Cell::new(0) };
    }

    /// Simulated time, one timeline per thread: waiting jumps the thread's time forward, and
    /// [`FixedService`] advances it by its service time. With one worker every timestamp is then
    /// exactly what a FIFO queue predicts, however the real threads interleave.
    struct ThreadTimeline;

    impl Clock for ThreadTimeline {
        fn now_ns(&self) -> u64 {
            SIMULATED_NOW_NS.get()
        }

        fn wait_until_ns(&self, deadline_ns: u64) {
            SIMULATED_NOW_NS.set(SIMULATED_NOW_NS.get().max(deadline_ns));
        }
    }

    /// Takes exactly its value in simulated nanoseconds per request.
    struct FixedService(u64);

    impl Service for FixedService {
        fn serve(&mut self) -> Result<(), LatencyError> {
            SIMULATED_NOW_NS.set(SIMULATED_NOW_NS.get() + self.0);
            Ok(())
        }
    }

    /// Really sleeps for its duration.
    struct SleepingService(Duration);

    impl Service for SleepingService {
        fn serve(&mut self) -> Result<(), LatencyError> {
            std::thread::sleep(self.0);
            Ok(())
        }
    }

    fn one_worker() -> PlacementPlan {
        PlacementPlan {
            name: "test".into(),
            worker_cpus: vec![0],
            generator_cpu: None,
            note: None,
        }
    }

    fn simulated(
        arrivals_ns: &[u64],
        warmup: usize,
        service_ns: u64,
        bounds: Bounds,
    ) -> PointResult {
        simulated_on(&ThreadTimeline, arrivals_ns, warmup, service_ns, bounds)
    }

    /// One [`FixedService`] worker serving `arrivals_ns` in `clock`'s simulated time.
    fn simulated_on(
        clock: &impl Clock,
        arrivals_ns: &[u64],
        warmup: usize,
        service_ns: u64,
        bounds: Bounds,
    ) -> PointResult {
        SIMULATED_NOW_NS.set(0);
        let point = LoadPoint {
            clock,
            offered_qps: 1.0,
            arrivals_ns,
            warmup,
            bounds,
        };
        let mut services: Vec<Box<dyn Service>> = vec![Box::new(FixedService(service_ns))];
        run_point(&point, &mut services, &one_worker(), false).unwrap()
    }

    fn one_per_microsecond(count: u64) -> Vec<u64> {
        (0..count).map(|i| i * 1_000).collect()
    }

    fn bounds(max_backlog: usize, max_duration: Duration) -> Bounds {
        Bounds {
            max_backlog,
            max_duration,
        }
    }

    /// One worker serving `arrivals_ns` (the first a warm-up) in real time.
    fn real_time(
        arrivals_ns: &[u64],
        bounds: Bounds,
        service: Box<dyn Service>,
    ) -> Result<PointResult, LatencyError> {
        let point = LoadPoint {
            clock: &MonotonicClock::new(),
            offered_qps: 1e6,
            arrivals_ns,
            warmup: 1,
            bounds,
        };
        run_point(&point, &mut [service], &one_worker(), false)
    }

    #[test]
    fn queue_service_and_sojourn_follow_the_fifo_schedule() {
        let result = simulated(&[0, 1_000, 2_000, 30_000], 1, 5_000, Bounds::default());
        // Request 0 (warm-up) runs 0–5000; 1 waits for it, 2 for 1; 3 arrives to an idle server.
        let times: Vec<(usize, u64, u64, u64)> = result
            .samples
            .iter()
            .map(|s| (s.index, s.queue_ns(), s.service_ns(), s.sojourn_ns()))
            .collect();
        assert_eq!(
            times,
            [
                (1, 4_000, 5_000, 9_000),
                (2, 8_000, 5_000, 13_000),
                (3, 0, 5_000, 5_000)
            ]
        );
        assert_eq!(result.samples[1].scheduled_ns, 2_000);
        assert_eq!((result.dropped, result.stopped), (0, None));
        // 3 measured requests from the first measured arrival (1 µs) to the last completion (35 µs).
        assert!((result.achieved_qps - 3.0 / 34e-6).abs() < 1e-6 * result.achieved_qps);
        // The schedule offered 2 gaps in 29 µs over the measured requests (1, 2 and 30 µs).
        assert!((result.scheduled_qps - 2.0 / 29e-6).abs() < 1e-6 * result.scheduled_qps);
        let sojourn = result.sojourn.unwrap();
        assert_eq!((sojourn.p50_ns, sojourn.max_ns), (9_000.0, 13_000.0));
    }

    /// [`ThreadTimeline`] with a generator that wakes its value in ns late: a wait for a whole
    /// microsecond (the test schedules' arrivals, after the whole-millisecond start lead) ends
    /// that much after it, as a descheduled generator's would; other waits (a worker's for an
    /// enqueued request) are exact.
    struct LateGenerator(u64);

    impl Clock for LateGenerator {
        fn now_ns(&self) -> u64 {
            SIMULATED_NOW_NS.get()
        }

        fn wait_until_ns(&self, deadline_ns: u64) {
            let late = if deadline_ns % 1_000 == 0 { self.0 } else { 0 };
            SIMULATED_NOW_NS.set(SIMULATED_NOW_NS.get().max(deadline_ns + late));
        }
    }

    #[test]
    fn a_late_generator_is_measured_as_queueing_and_reported_as_lag() {
        let arrivals = [0, 1_000, 2_000, 30_000];
        let result = simulated_on(&LateGenerator(700), &arrivals, 1, 5_000, Bounds::default());
        // Each request enters the queue 700 ns after its arrival: request 0 (warm-up) runs
        // 700–5700, 1 and 2 wait behind it, 3 finds the server idle and waits only for the
        // generator. Latencies still count from the scheduled arrivals.
        let times: Vec<(usize, u64, u64, u64)> = result
            .samples
            .iter()
            .map(|s| (s.index, s.generator_lag_ns(), s.queue_ns(), s.sojourn_ns()))
            .collect();
        assert_eq!(
            times,
            [
                (1, 700, 4_700, 9_700),
                (2, 700, 8_700, 13_700),
                (3, 700, 700, 5_700)
            ]
        );
        let lag = result.generator_lag.unwrap();
        assert_eq!((lag.count, lag.p50_ns, lag.max_ns), (3, 700.0, 700.0));
        // A punctual generator: no lag, and the FIFO times of the test above.
        let on_time = simulated(&arrivals, 1, 5_000, Bounds::default());
        assert_eq!(on_time.generator_lag.unwrap().max_ns, 0.0);
    }

    #[test]
    fn an_arrival_past_the_end_of_the_clock_stops_at_the_duration_bound() {
        // At 1e-20 QPS the schedule's second arrival saturates at u64::MAX ns.
        let result = simulated(
            &[0, u64::MAX],
            1,
            1_000,
            bounds(100, Duration::from_secs(1)),
        );
        assert_eq!(result.stopped, Some(StopReason::Duration));
        // The measured request is never served (the warm-up one may be dropped by the stop too).
        assert!(
            result.samples.is_empty() && result.dropped >= 1,
            "{result:?}"
        );
    }

    #[test]
    fn a_server_that_falls_behind_stops_at_the_duration_bound() {
        // 100 requests arrive within 100 µs; each takes 1 ms; the bound is 10 ms. The request
        // completing at 11 ms is the first past the bound, so requests 0…10 complete.
        let arrivals = one_per_microsecond(100);
        let result = simulated(
            &arrivals,
            1,
            1_000_000,
            bounds(1_000, Duration::from_millis(10)),
        );
        assert_eq!(result.stopped, Some(StopReason::Duration));
        assert!(result.saturated());
        assert_eq!(result.samples.len(), 10);
        assert_eq!(result.dropped, 89);
    }

    #[test]
    fn two_workers_serve_every_request_once_even_when_the_run_stops() {
        // Simulated time runs the generator far ahead of the workers, so a small backlog bound
        // stops the run at a point that depends on the threads' interleaving; whatever it is,
        // each request is served at most once, in-flight ones complete, and the rest are counted
        // as dropped. With a large bound every request is served exactly once.
        let two_workers = PlacementPlan {
            worker_cpus: vec![0, 1],
            ..one_worker()
        };
        let arrivals = one_per_microsecond(2_000);
        for (max_backlog, round) in [(5, 0), (5, 1), (5, 2), (10_000, 3), (10_000, 4)] {
            SIMULATED_NOW_NS.set(0);
            let point = LoadPoint {
                clock: &ThreadTimeline,
                offered_qps: 1.0,
                arrivals_ns: &arrivals,
                warmup: 0,
                bounds: bounds(max_backlog, Duration::from_secs(1)),
            };
            let mut services: Vec<Box<dyn Service>> =
                vec![Box::new(FixedService(3_000)), Box::new(FixedService(3_000))];
            let result = run_point(&point, &mut services, &two_workers, false).unwrap();
            let indices: Vec<usize> = result.samples.iter().map(|s| s.index).collect();
            let mut distinct = indices.clone();
            distinct.dedup();
            assert_eq!(distinct, indices, "round {round}: a request served twice");
            assert_eq!(
                indices.len() + result.dropped,
                arrivals.len(),
                "round {round}"
            );
            if result.stopped.is_none() {
                assert_eq!(indices, (0..arrivals.len()).collect::<Vec<_>>());
            }
            if max_backlog == 10_000 {
                assert_eq!((result.stopped, result.dropped), (None, 0), "round {round}");
            }
        }
    }

    #[test]
    fn the_scheduled_rate_covers_the_dropped_requests_too() {
        // Requests of 1 ms arriving at 0, 1, 2, 3 µs and 2 ms with a 2.5 ms bound: the third
        // completes at 3 ms and stops the point; 3 µs and 2 ms are dropped. The schedule offered
        // 3 gaps in 1.999 ms over the measured requests, whatever was served.
        let result = simulated(
            &[0, 1_000, 2_000, 3_000, 2_000_000],
            1,
            1_000_000,
            bounds(1_000, Duration::from_micros(2_500)),
        );
        assert_eq!((result.samples.len(), result.dropped), (2, 2));
        assert!((result.scheduled_qps - 3.0 / 1.999e-3).abs() < 1e-9 * result.scheduled_qps);
        // From the completed samples alone (1 and 2 µs) the rate would be 10⁶.
        let from_samples = PointResult::from_samples(1.0, result.samples.clone(), 2, None);
        assert!((from_samples.scheduled_qps - 1e6).abs() < 1e-3);
    }

    #[test]
    fn a_growing_backlog_ends_the_point_instead_of_hanging() {
        // 5000 requests of 1 ms each cannot complete within the 2 s bound, whatever the
        // scheduling; normally the 20-request backlog bound ends the run after a few ms.
        let arrivals = one_per_microsecond(5_000);
        let service = SleepingService(Duration::from_millis(1));
        let bounds = bounds(20, Duration::from_secs(2));
        let result = real_time(&arrivals, bounds, Box::new(service)).unwrap();
        assert!(result.saturated());
        assert!(result.dropped > 0);
        // Every request is either measured, the (possibly completed) warm-up one, or dropped.
        let accounted = result.samples.len() + result.dropped;
        assert!(accounted == arrivals.len() || accounted == arrivals.len() - 1);
    }

    #[test]
    fn a_failing_service_fails_the_point() {
        struct Failing;
        impl Service for Failing {
            fn serve(&mut self) -> Result<(), LatencyError> {
                Err(LatencyError::BadConfig("broken service".into()))
            }
        }
        let arrivals = one_per_microsecond(1_000);
        let error = real_time(&arrivals, Bounds::default(), Box::new(Failing)).unwrap_err();
        assert_eq!(error.to_string(), "broken service");
    }

    #[test]
    fn a_panicking_service_ends_the_point_and_propagates_the_panic() {
        struct Panicking;
        impl Service for Panicking {
            fn serve(&mut self) -> Result<(), LatencyError> {
                panic!("service bug")
            }
        }
        // A schedule of 100 s: only the abort ends this point quickly (the generator notices it
        // at its next arrival, 0.1 s after the panic).
        let arrivals: Vec<u64> = (0..1_000).map(|i| i * 100_000_000).collect();
        let bounds = bounds(1_000, Duration::from_secs(2_000));
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            real_time(&arrivals, bounds, Box::new(Panicking))
        }));
        let payload = outcome.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"service bug"));
    }

    #[test]
    fn measurement_hooks_bracket_the_measured_requests_on_the_worker_thread() {
        type Log = std::sync::Arc<Mutex<Vec<(&'static str, usize, std::thread::ThreadId)>>>;
        /// Logs, per hook and request, the thread it ran on and how many requests it had
        /// served by then.
        struct Recording {
            served: usize,
            log: Log,
        }
        impl Recording {
            fn note(&self, what: &'static str) {
                self.log
                    .lock()
                    .unwrap()
                    .push((what, self.served, std::thread::current().id()));
            }
        }
        impl Service for Recording {
            fn serve(&mut self) -> Result<(), LatencyError> {
                self.served += 1;
                self.note("serve");
                Ok(())
            }
            fn point_starts(&mut self) {
                self.note("point");
            }
            fn measurement_starts(&mut self) {
                self.note("start");
            }
            fn point_ends(&mut self) {
                self.note("end");
            }
        }
        SIMULATED_NOW_NS.set(0);
        let arrivals = one_per_microsecond(5);
        let point = LoadPoint {
            clock: &ThreadTimeline,
            offered_qps: 1.0,
            arrivals_ns: &arrivals,
            warmup: 2,
            bounds: Bounds::default(),
        };
        let log = Log::default();
        let mut services: Vec<Box<dyn Service>> = vec![Box::new(Recording {
            served: 0,
            log: log.clone(),
        })];
        run_point(&point, &mut services, &one_worker(), false).unwrap();
        let events = log.lock().unwrap().clone();
        let kinds: Vec<(&str, usize)> = events.iter().map(|e| (e.0, e.1)).collect();
        // The point's hook before any request, two warm-up requests, then the measurement's
        // hook, then three measured ones, then the end hook.
        assert_eq!(
            kinds,
            [
                ("point", 0),
                ("serve", 1),
                ("serve", 2),
                ("start", 2),
                ("serve", 3),
                ("serve", 4),
                ("serve", 5),
                ("end", 5)
            ]
        );
        let worker = events[0].2;
        assert_ne!(worker, std::thread::current().id());
        assert!(events.iter().all(|e| e.2 == worker));
    }

    #[test]
    fn plan_and_services_must_agree_on_the_worker_count() {
        let point = LoadPoint {
            clock: &MonotonicClock::new(),
            offered_qps: 1.0,
            arrivals_ns: &[0],
            warmup: 0,
            bounds: Bounds::default(),
        };
        let error = run_point(&point, &mut [], &one_worker(), false).unwrap_err();
        assert!(matches!(
            error,
            LatencyError::WorkerCount {
                workers: 1,
                services: 0,
                ..
            }
        ));
    }
}
