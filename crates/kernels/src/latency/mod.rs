//! Tail latency against load: an open-loop request generator, a FIFO server of worker threads
//! whose requests run a kernel, and the 95th-percentile knee per server placement.
//!
//! The design follows TailBench's "integrated" harness:
//!
//! - [`arrivals`](exponential_arrivals): request i is scheduled at `t_i = t_(i−1) + Exp(1/QPS)`
//!   from a seeded RNG, independent of completions (open loop), so a slow server meets the same
//!   requests as a fast one and its backlog shows as queueing, not as a lower load.
//! - [`server`](run_point): the generator enqueues requests at their scheduled times; `W` worker
//!   threads take them first-in first-out and serve each with a [`Service`] — in practice a
//!   [`KernelService`], one single-threaded run of a kernel from this crate. Each request yields
//!   queue, service and sojourn (response) time in nanoseconds ([`RequestSample`]); a point is
//!   bounded by backlog and duration ([`Bounds`]) and marked saturated when it hits either.
//! - [`placement`](Placement): which CPUs the workers and the generator get — one worker, two
//!   workers on two cores, two on SMT siblings of one core, or an explicit list.
//! - [`percentile()`]: p50/p95/p99/p99.9/max by linear interpolation, numpy's default.
//! - [`run_curve`] measures a list of loads for one placement and finds the saturation load
//!   ([`saturation_qps`]): the first load whose p95 exceeds `k ×` the p95 at the lowest load
//!   ([`DEFAULT_SATURATION_FACTOR`] = 5), or whose run hit a bound.
//!
//! Time comes from a [`Clock`]; tests substitute a simulated one so that the bookkeeping is
//! checked exactly, without ever asserting on real timing.
//!
//! ```
//! use parbench_kernels::latency::{
//!     run_curve, CpuLayout, CurveConfig, KernelService, MonotonicClock, Placement, Service,
//! };
//! use parbench_kernels::{find_kernel, Params};
//! use std::ops::ControlFlow;
//!
//! let plan = Placement::Single.plan(&CpuLayout::one_thread_per_core(&[0]))?;
//! let kernel = find_kernel("matmul")?;
//! let mut services: Vec<Box<dyn Service>> =
//!     vec![Box::new(KernelService::new(kernel.prepare(&Params::new().with("n", "8"), 1)?))];
//! let config = CurveConfig { qps: vec![2000.0, 4000.0], requests: 20, warmup: 2, ..Default::default() };
//! let curve = run_curve(&MonotonicClock::new(), &config, &plan, &mut services, false, |_| {
//!     ControlFlow::Continue(())
//! })?;
//! assert_eq!(curve.points.len(), 2);
//! assert!(curve.points.iter().all(|p| p.samples.len() <= 20));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arrivals;
mod clock;
mod percentile;
mod placement;
mod server;

use std::ops::ControlFlow;

use thiserror::Error;

use crate::kernel::KernelError;

use arrivals::arrival_times;
use server::duration_ns;

pub use arrivals::exponential_arrivals;
pub use clock::{Clock, MonotonicClock};
pub use percentile::{LatencySummary, percentile};
pub use placement::{CpuLayout, PLACEMENT_NAMES, Placement, PlacementPlan};
pub use server::{
    Bounds, KernelService, LoadPoint, PointResult, RequestSample, Service, StopReason, run_point,
};

/// The `k` of the saturation rule: a load saturates the server when its p95 exceeds `k` times the
/// p95 at the lowest load. 5 is past the gentle rise of a stable queue (an M/M/1 queue's p95 is
/// 5 × its empty-system value at 80 % utilisation) and well before the vertical wall of an
/// overloaded one, so the knee it finds does not move much with `k`.
pub const DEFAULT_SATURATION_FACTOR: f64 = 5.0;

/// What to measure for one placement.
///
/// ```
/// use parbench_kernels::latency::CurveConfig;
///
/// let config = CurveConfig { qps: vec![100.0, 0.0], ..Default::default() };
/// assert!(config.validate().unwrap_err().to_string().contains("QPS"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CurveConfig {
    /// Offered loads in requests per second, measured in ascending order.
    pub qps: Vec<f64>,
    /// Measured requests per load.
    pub requests: usize,
    /// Requests sent before the measured ones at each load and left out of the statistics.
    pub warmup: usize,
    /// Seed of the arrival schedule, the same for every load and every placement measured with
    /// this config (common random numbers): each load replays one unit-rate pattern scaled by
    /// `1 / QPS`, warm-up first, so loads and placements differ by their load and their CPUs, not
    /// by the luck of their arrivals. With [`per_qps`](Self::per_qps) the warm-up grows with the
    /// load, so the measured requests of two loads are different stretches of that pattern. Two
    /// measurements with the same seed replay the same schedule: change it to sample another.
    pub seed: u64,
    /// When a load point gives up.
    pub bounds: Bounds,
    /// The `k` of the saturation rule.
    pub saturation_factor: f64,
    /// When set, the warm-up and measured request counts of each load follow its QPS
    /// (TailBench's rule, [`QpsScaledRequests`]) instead of `warmup` and `requests`.
    pub per_qps: Option<QpsScaledRequests>,
}

/// TailBench's request counts, which grow with the offered load so that every load point covers
/// the same *time*: warm-up = `warmup_seconds × QPS` requests (rounded up, at least 1) and
/// measurement = `measured_per_warmup ×` warm-up requests. The tail-latency study used
/// [`QpsScaledRequests::TAILBENCH`] (warm-up = 4·QPS, measurement = 3 × warm-up, so 16 s of
/// arrivals per load); [`scaled_down`](QpsScaledRequests::scaled_down) keeps the ratio and shrinks
/// the time.
///
/// ```
/// use parbench_kernels::latency::QpsScaledRequests;
/// assert_eq!(QpsScaledRequests::TAILBENCH.counts(500.0), (2000, 6000));
/// let quick = QpsScaledRequests::TAILBENCH.scaled_down(0.05)?;
/// assert_eq!(quick.counts(500.0), (100, 300));
/// assert_eq!(quick.counts(1.0), (1, 3)); // never zero requests
/// # Ok::<(), parbench_kernels::latency::LatencyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QpsScaledRequests {
    /// Seconds of arrivals in the warm-up (TailBench: 4).
    pub warmup_seconds: f64,
    /// Measured requests per warm-up request (TailBench: 3).
    pub measured_per_warmup: usize,
}

impl QpsScaledRequests {
    /// The study's setting: warm-up = 4·QPS requests, measurement = 3 × warm-up.
    pub const TAILBENCH: QpsScaledRequests = QpsScaledRequests {
        warmup_seconds: 4.0,
        measured_per_warmup: 3,
    };

    /// The same ratio with `factor ×` the time (e.g. 0.05: 0.2 s warm-up, 0.6 s measured).
    ///
    /// # Errors
    /// [`LatencyError::BadConfig`] unless `0 < factor` and finite.
    pub fn scaled_down(self, factor: f64) -> Result<QpsScaledRequests, LatencyError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(LatencyError::BadConfig(format!(
                "the request scale must be a positive number, got {factor}"
            )));
        }
        Ok(QpsScaledRequests {
            warmup_seconds: self.warmup_seconds * factor,
            ..self
        })
    }

    /// `(warm-up, measured)` requests at `qps`.
    pub fn counts(&self, qps: f64) -> (usize, usize) {
        // A float-to-int `as` saturates, so an absurd product cannot wrap.
        let warmup = ((self.warmup_seconds * qps).ceil() as usize).max(1);
        (
            warmup,
            warmup.saturating_mul(self.measured_per_warmup.max(1)),
        )
    }
}

impl Default for CurveConfig {
    fn default() -> Self {
        CurveConfig {
            // Loads whose 2100 arrivals end within the 20 s duration bound (at 100 QPS they
            // would not: `check_schedules`).
            qps: vec![200.0, 400.0, 800.0],
            requests: 2000,
            warmup: 100,
            seed: 1,
            bounds: Bounds::default(),
            saturation_factor: DEFAULT_SATURATION_FACTOR,
            per_qps: None,
        }
    }
}

impl CurveConfig {
    /// `(warm-up, measured)` requests at `qps`: from [`per_qps`](Self::per_qps) when set,
    /// otherwise `warmup` and `requests` whatever the load.
    ///
    /// ```
    /// use parbench_kernels::latency::{CurveConfig, QpsScaledRequests};
    /// let fixed = CurveConfig { warmup: 10, requests: 50, ..Default::default() };
    /// assert_eq!(fixed.counts_at(1000.0), (10, 50));
    /// let scaled = CurveConfig { per_qps: Some(QpsScaledRequests::TAILBENCH), ..fixed };
    /// assert_eq!(scaled.counts_at(1000.0), (4000, 12000));
    /// ```
    pub fn counts_at(&self, qps: f64) -> (usize, usize) {
        match self.per_qps {
            Some(scaled) => scaled.counts(qps),
            None => (self.warmup, self.requests),
        }
    }

    /// Refuses a load whose arrival schedule lasts longer than [`Bounds::max_duration`]: its
    /// point would stop at the bound and be reported saturated however fast the server is, and
    /// the curve's saturation load would be that of the schedule's length, not of the server.
    /// The check draws each load's schedule once (the same schedule [`run_curve`] measures);
    /// [`run_curve`] makes it before measuring anything. A schedule that ends shortly before the
    /// bound passes, and can still be stopped by its last requests' service time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use parbench_kernels::latency::{Bounds, CurveConfig};
    ///
    /// // 2100 requests at 50 QPS arrive over about 42 s: the 20 s bound would cut every run.
    /// let slow = CurveConfig { qps: vec![50.0, 1000.0], ..Default::default() };
    /// assert!(slow.check_schedules().unwrap_err().to_string().contains("50 QPS"));
    /// let bounds = Bounds { max_duration: Duration::from_secs(60), ..Default::default() };
    /// assert!(CurveConfig { bounds, ..slow }.check_schedules().is_ok());
    /// ```
    ///
    /// # Errors
    /// [`LatencyError::BadConfig`] naming the first such load.
    pub fn check_schedules(&self) -> Result<(), LatencyError> {
        let bound_ns = duration_ns(self.bounds.max_duration);
        for &qps in &self.qps {
            let (warmup, requests) = self.counts_at(qps);
            let count = warmup.saturating_add(requests);
            let last_ns = arrival_times(qps, self.seed)
                .take(count)
                .last()
                .unwrap_or(0);
            if last_ns > bound_ns {
                return Err(LatencyError::BadConfig(format!(
                    "the {count} arrivals at {qps} QPS span {:.3} s, longer than the {} s \
                     duration bound, which would stop that load as saturated whatever the \
                     server; raise the bound or send fewer requests",
                    last_ns as f64 / 1e9,
                    self.bounds.max_duration.as_secs_f64()
                )));
            }
        }
        Ok(())
    }

    /// Checks what a user can get wrong.
    ///
    /// # Errors
    /// [`LatencyError::BadConfig`] for no loads, a load that is not a positive finite number,
    /// zero requests, zero warm-up requests, a zero backlog bound or a factor ≤ 1.
    pub fn validate(&self) -> Result<(), LatencyError> {
        let bad = |reason: String| Err(LatencyError::BadConfig(reason));
        if self.qps.is_empty() {
            return bad("no QPS given".into());
        }
        if let Some(qps) = self.qps.iter().find(|q| !(q.is_finite() && **q > 0.0)) {
            return bad(format!("QPS must be a positive number, got {qps}"));
        }
        if let Some(scaled) = self.per_qps {
            if !(scaled.warmup_seconds.is_finite() && scaled.warmup_seconds > 0.0) {
                return bad(format!(
                    "the warm-up must last a positive time, got {} s",
                    scaled.warmup_seconds
                ));
            }
            if scaled.measured_per_warmup == 0 {
                return bad("measured requests per warm-up request must be at least 1".into());
            }
        }
        if self.requests == 0 {
            return bad("requests must be at least 1".into());
        }
        if self.warmup == 0 {
            return bad("warmup must be at least 1 (the first requests meet cold caches)".into());
        }
        if self.bounds.max_backlog == 0 {
            return bad("the backlog bound must be at least 1".into());
        }
        if !(self.saturation_factor.is_finite() && self.saturation_factor > 1.0) {
            return bad(format!(
                "the saturation factor must be above 1, got {}",
                self.saturation_factor
            ));
        }
        Ok(())
    }
}

/// The measured loads of one placement.
///
/// ```
/// use parbench_kernels::latency::Curve;
/// let curve = Curve { placement: "single".into(), points: vec![], saturation_qps: None };
/// assert!(curve.points.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The placement's name.
    pub placement: String,
    /// One result per measured load, ascending. Loads above the first one whose run hit a bound
    /// are not measured: they would only measure the bound.
    pub points: Vec<PointResult>,
    /// The first saturated load ([`saturation_qps`]), if any.
    pub saturation_qps: Option<f64>,
}

/// Measures every load of `config` in ascending order on the workers of `plan` (pinned when
/// `pin`), calling `on_point` after each; stops after the first point that hit a bound, or after
/// a point whose `on_point` breaks (the caller was asked to stop: an interrupt), returning the
/// points measured so far either way.
///
/// # Errors
/// [`LatencyError::BadConfig`] for an invalid config or a schedule longer than the duration bound
/// ([`CurveConfig::check_schedules`]), both before anything is measured, and whatever
/// [`run_point`] fails with.
pub fn run_curve<C: Clock>(
    clock: &C,
    config: &CurveConfig,
    plan: &PlacementPlan,
    services: &mut [Box<dyn Service>],
    pin: bool,
    mut on_point: impl FnMut(&PointResult) -> ControlFlow<()>,
) -> Result<Curve, LatencyError> {
    config.validate()?;
    config.check_schedules()?;
    let mut loads = config.qps.clone();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let mut points = Vec::new();
    for qps in loads {
        let (warmup, requests) = config.counts_at(qps);
        let arrivals = exponential_arrivals(qps, warmup.saturating_add(requests), config.seed);
        let point = LoadPoint {
            clock,
            offered_qps: qps,
            arrivals_ns: &arrivals,
            warmup,
            bounds: config.bounds,
        };
        let result = run_point(&point, services, plan, pin)?;
        let flow = on_point(&result);
        let saturated = result.saturated();
        points.push(result);
        if saturated || flow.is_break() {
            break;
        }
    }
    Ok(Curve {
        placement: plan.name.clone(),
        saturation_qps: saturation_qps(&points, config.saturation_factor),
        points,
    })
}

/// The first offered load (in `points`' order, which should be ascending) whose run hit a bound
/// or whose sojourn p95 exceeds `factor ×` the p95 of the first point; `None` if there is none.
///
/// ```
/// use parbench_kernels::latency::{saturation_qps, PointResult, RequestSample};
///
/// let point = |qps: f64, sojourn_ns: u64| {
///     let sample =
///         RequestSample { index: 0, scheduled_ns: 0, enqueued_ns: 0, start_ns: 0, end_ns: sojourn_ns };
///     PointResult::from_samples(qps, vec![sample], 0, None)
/// };
/// let points = [point(100.0, 1000), point(200.0, 4000), point(400.0, 6000)];
/// assert_eq!(saturation_qps(&points, 5.0), Some(400.0));
/// assert_eq!(saturation_qps(&points[..2], 5.0), None);
/// ```
pub fn saturation_qps(points: &[PointResult], factor: f64) -> Option<f64> {
    let baseline = points.first()?.sojourn.map(|s| s.p95_ns);
    points
        .iter()
        .find(|point| {
            point.saturated()
                || match (point.sojourn, baseline) {
                    (Some(sojourn), Some(base)) => sojourn.p95_ns > factor * base,
                    _ => false,
                }
        })
        .map(|point| point.offered_qps)
}

/// How a service fares on two SMT siblings compared with two separate cores, read from the two
/// p95-vs-load curves as the tail-latency study classified its services (it found that half of
/// them lose nothing on SMT while the others saturate much earlier).
///
/// ```
/// use parbench_kernels::latency::{Curve, SmtVerdict, smt_verdict};
/// let curve = |placement: &str, saturation_qps| Curve {
///     placement: placement.into(), points: vec![], saturation_qps,
/// };
/// assert_eq!(smt_verdict(&curve("cores", Some(800.0)), &curve("smt", Some(800.0))), SmtVerdict::LosesNothing);
/// assert_eq!(smt_verdict(&curve("cores", None), &curve("smt", None)), SmtVerdict::LosesNothing);
/// assert_eq!(
///     smt_verdict(&curve("cores", None), &curve("smt", Some(400.0))),
///     SmtVerdict::SaturatesEarlier { smt_qps: 400.0, cores_qps: None },
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SmtVerdict {
    /// SMT saturates at the same load as two cores, or not at all on the measured loads.
    LosesNothing,
    /// SMT saturates at a lower load than two cores (`None`: the cores never saturated).
    SaturatesEarlier {
        /// SMT's saturation load.
        smt_qps: f64,
        /// The cores' saturation load, if reached.
        cores_qps: Option<f64>,
    },
}

impl std::fmt::Display for SmtVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmtVerdict::LosesNothing => f.write_str(
                "SMT-friendly: loses nothing on SMT siblings (saturates with two cores)",
            ),
            SmtVerdict::SaturatesEarlier { smt_qps, cores_qps } => {
                let cores = cores_qps.map_or_else(
                    || "not within the measured loads".to_owned(),
                    |qps| format!("at {qps} QPS"),
                );
                write!(
                    f,
                    "SMT-averse: saturates earlier on SMT siblings ({smt_qps} QPS; two cores {cores})"
                )
            }
        }
    }
}

/// The study's classification from the curves of one service measured at the same loads with
/// two workers on two cores (`cores`) and on the two PUs of one core (`smt`): SMT loses nothing
/// when it saturates at the same load step as the cores or not at all, otherwise it saturates
/// earlier. The resolution is that of the load grid: a difference smaller than one step is not
/// seen.
pub fn smt_verdict(cores: &Curve, smt: &Curve) -> SmtVerdict {
    match (smt.saturation_qps, cores.saturation_qps) {
        (None, _) => SmtVerdict::LosesNothing,
        (Some(smt_qps), Some(cores_qps)) if smt_qps >= cores_qps => SmtVerdict::LosesNothing,
        (Some(smt_qps), cores_qps) => SmtVerdict::SaturatesEarlier { smt_qps, cores_qps },
    }
}

/// Everything that can go wrong setting up or running a latency measurement.
///
/// ```
/// use parbench_kernels::latency::LatencyError;
/// assert_eq!(LatencyError::NoSmtSiblings.to_string(), "no SMT siblings");
/// ```
#[derive(Debug, Error)]
pub enum LatencyError {
    /// A placement name that does not parse.
    #[error("unknown placement `{name}`; valid placements: {valid}")]
    UnknownPlacement {
        /// The name given.
        name: String,
        /// The valid forms.
        valid: &'static str,
    },
    /// `smt` on a machine whose cores have one hardware thread each.
    #[error("no SMT siblings")]
    NoSmtSiblings,
    /// A placement needs more cores than the machine has — the cores of the CPUs this process
    /// may use (a `taskset` or a container's CPU set leaves fewer than the machine's).
    #[error(
        "placement {placement} needs {needed} cores, this process may use {available} core{}",
        if *available == 1 { "" } else { "s" }
    )]
    NotEnoughCores {
        /// The placement.
        placement: String,
        /// Cores it needs.
        needed: usize,
        /// Cores available.
        available: usize,
    },
    /// A listed CPU the machine does not have (or this process may not use).
    #[error("CPU {cpu} is not available; available CPUs: {available}")]
    UnknownCpu {
        /// The CPU given.
        cpu: usize,
        /// The available CPUs, comma-separated.
        available: String,
    },
    /// The CPU layout is empty.
    #[error("no CPUs to run on")]
    NoCpus,
    /// The OS refused to pin a thread.
    #[error("cannot pin a thread to CPU {cpu}")]
    Pin {
        /// The CPU.
        cpu: usize,
    },
    /// The plan and the services disagree on the number of workers.
    #[error("placement {placement} has {workers} workers but {services} services were given")]
    WorkerCount {
        /// The placement.
        placement: String,
        /// Workers in the plan.
        workers: usize,
        /// Services given.
        services: usize,
    },
    /// A setting that makes no sense.
    #[error("{0}")]
    BadConfig(String),
    /// The service failed (a kernel's wrong result, a refused thread …).
    #[error(transparent)]
    Service(#[from] KernelError),
}
