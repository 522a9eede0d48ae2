//! `parbench-cli latency`: tail latency against offered load, per server placement.
//!
//! This module is wiring only: the generator, the server, the statistics and the placements live in
//! `parbench_kernels::latency`. Here the arguments become a [`CurveConfig`] and one
//! [`PlacementPlan`] per placement (the machine's cores and SMT siblings come from the mapper's
//! hwloc topology), each placement's curve is measured with one [`KernelService`] per worker, and
//! the results go out as
//!
//! - a table per placement (text or markdown), with the saturation load below it; beside each
//!   offered load the rate its seeded schedule actually offered (`scheduled`), which is what the
//!   achieved rate should match while the server keeps up, the sojourn time's p50, p95, p99,
//!   p99.9 and max, and the generator's largest lag (`gen lag ms`),
//! - CSV or JSON through the sweep's [`Exporter`](crate::export::Exporter)s: one cell per
//!   placement × load whose raw samples are the sojourn time of every measured request, with the
//!   queue time, service time and generator lag of every request as metric series (JSON keeps
//!   them all),
//! - an SVG or PNG of p95 against offered load, a line per placement.
//!
//! Default service size: the kernel's small parameters ([`Params::small`], a run well under a
//! millisecond), overridden by any parameter given on the command line as in `sweep`; with an
//! input file (`--matrix`, `--input`) the file is the instance and the small parameters are not
//! applied.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use clap::{ArgGroup, Args};
use parbench_kernels::latency::{
    Bounds, CpuLayout, Curve, CurveConfig, DEFAULT_SATURATION_FACTOR, KernelService, LatencyError,
    MonotonicClock, Placement, PlacementPlan, PointResult, QpsScaledRequests, RequestSample,
    Service, run_curve, saturation_qps,
};
use parbench_kernels::{Kernel, Params, find_kernel};
use parbench_mapper::perf::{Metrics, Profile, Quantity, StudyMetrics, nominal_frequency_mhz};
use plotters::prelude::*;

use crate::args::{FILE_PARAMETERS, FigureFormat, KernelParamArgs, parse_in_range, parse_positive};
use crate::commands::untaken_parameter;
use crate::error::CliError;
use crate::export::ExportFormat;
use crate::results::{Cell, Metadata, MetricSeries, Report};
use crate::results_file::{ResultsFile, print_results};
use crate::under_load::CounterSet;

/// Label names of a latency report's cells, in table order.
pub const LABELS: [&str; 8] = [
    "service",
    "placement",
    "qps",
    "achieved_qps",
    "p99_s",
    "dropped",
    "stopped",
    "scheduled_qps",
];

/// Options of `parbench-cli latency`.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from([
///     "parbench-cli", "latency", "--service", "matmul", "--qps-range", "100:300:100",
/// ])?;
/// let Command::Latency(args) = cli.command else { unreachable!() };
/// assert_eq!(args.loads(), vec![100.0, 200.0, 300.0]);
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("load").required(true).args(["qps", "qps_range"])))]
pub struct LatencyArgs {
    /// The kernel serving each request (see `list`; `spmv` means `spmv-balanced`).
    #[arg(long, value_name = "KERNEL")]
    pub service: String,
    /// Offered loads in requests per second, e.g. `100,200,400`, measured in ascending order, a
    /// load listed twice once [at most 1e9 each].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_qps)]
    pub qps: Vec<f64>,
    /// Offered loads from A to B (inclusive) in steps of STEP, e.g. `500:3000:500` [at most 1000
    /// loads].
    #[arg(long, value_name = "A:B:STEP", value_parser = parse_qps_range)]
    pub qps_range: Option<QpsRange>,
    /// Server placements: single, cores, smt, cpus:LIST (`;`-separated when a list has commas)
    /// [default: single,cores].
    ///
    /// `smt` on a machine without SMT siblings is skipped with a note. So is a default placement
    /// this machine (or this process's CPU set, e.g. under `taskset`) cannot host — `cores` on
    /// one core — while one named here is an error. None that can run is an error.
    #[arg(long, value_name = "LIST")]
    pub placement: Option<String>,
    /// Measured requests per load [at most 1000000].
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = parse_requests)]
    pub requests: usize,
    /// Requests sent first at each load and left out of the statistics (at least 1) [at most
    /// 1000000].
    #[arg(long, value_name = "W", default_value_t = 100, value_parser = parse_requests)]
    pub warmup: usize,
    /// Seed of the exponential arrival schedule: every load and placement replays the same
    /// pattern of arrivals, scaled to its QPS (common random numbers).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// k of the saturation rule: the first load whose p95 exceeds k × the lowest load's p95.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_SATURATION_FACTOR)]
    pub saturation_factor: f64,
    /// A load stops (saturated) when more requests than this wait.
    #[arg(long, value_name = "N", default_value_t = Bounds::default().max_backlog, value_parser = parse_positive)]
    pub max_backlog: usize,
    /// A load stops (saturated) after this many seconds [at most 86400, a day]. A load whose
    /// arrivals alone last longer (its requests over its QPS) is refused before measuring: the
    /// bound would mark it saturated whatever the server.
    #[arg(long, value_name = "SECONDS", default_value_t = Bounds::default().max_duration.as_secs_f64(), value_parser = parse_max_duration)]
    pub max_duration: f64,
    /// Scale the requests with the load as TailBench does — warm-up = 4·F·QPS requests,
    /// measurement = 3 × warm-up (F = 1 is the study's setting: 16 s of arrivals per load) —
    /// instead of `--requests`/`--warmup` [F at most 1000; each load's warm-up and measured
    /// requests at most 1000000].
    #[arg(long, value_name = "F", value_parser = parse_scale_factor, conflicts_with_all = ["requests", "warmup"])]
    pub scale_with_qps: Option<f64>,
    /// Kernel runs per request: serve each request with N back-to-back runs of the kernel, for a
    /// service time well above the server's own per-request cost [at most 1000000].
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_runs_per_request)]
    pub runs_per_request: usize,
    /// Record per-worker perf counters during each load's measured requests (software events
    /// always; hardware events where a PMU exists, otherwise listed as unavailable).
    #[arg(long)]
    pub counters: bool,
    /// Do not pin the workers and the generator to CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Kernel parameters of the service, as in `sweep`.
    #[command(flatten)]
    pub params: KernelParamArgs,
    /// Output format of stdout, or of `--output` [default: table; for a file: from its extension].
    #[arg(long, value_enum)]
    pub format: Option<ExportFormat>,
    /// Also write the results to FILE (rewritten after every load).
    ///
    /// A new or regular FILE is replaced through FILE.PID.partial and a rename (never half
    /// written); a symbolic link is followed and its target replaced, the link kept; a device or
    /// FIFO is opened before measuring, as a shell redirection would, and gets the final results
    /// once; a directory or socket is refused. FILE is checked before measuring without changing
    /// it, and is first written once there are results. If it cannot be written after
    /// measuring, the results go to $TMPDIR/parbench-rescued-PID-NAME (stdout if even that
    /// fails), the error on stderr says where, and the exit code is 2.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Draw p95 against offered load, a line per placement, to FIG.svg or FIG.png (the format
    /// follows the extension; any other is an error).
    ///
    /// FIG is checked before measuring and written as --output is (once, at the end); if it
    /// cannot be written, the figure goes to $TMPDIR/parbench-rescued-PID-NAME and the error
    /// says where.
    #[arg(long, value_name = "FIG.svg|FIG.png")]
    pub plot: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--qps-range A:B:STEP`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QpsRange {
    /// First load.
    pub from: f64,
    /// Last load (included when the steps reach it).
    pub to: f64,
    /// Increment.
    pub step: f64,
}

impl LatencyArgs {
    /// The offered loads the arguments ask for, in the order given.
    pub fn loads(&self) -> Vec<f64> {
        let mut loads = self.qps.clone();
        if let Some(range) = self.qps_range {
            loads.extend(range.loads());
        }
        loads
    }
}

impl QpsRange {
    /// `from`, `from + step`, … up to `to`.
    ///
    /// ```
    /// use parbench_cli::latency::parse_qps_range;
    /// assert_eq!(parse_qps_range("0.1:0.3:0.1")?.loads().len(), 3);
    /// # Ok::<(), String>(())
    /// ```
    pub fn loads(self) -> Vec<f64> {
        // Counting steps instead of accumulating keeps `0.1:0.3:0.1` from losing its end to
        // rounding; the tolerance absorbs the division's rounding the same way.
        let steps = ((self.to - self.from) / self.step + 1e-9).floor() as usize;
        (0..=steps)
            .map(|i| self.from + i as f64 * self.step)
            .collect()
    }
}

/// The most loads one `--qps-range` may expand to (each load is a measurement of its own).
pub const MAX_LOADS: usize = 1_000;
/// The highest offered load (`--qps`, `--qps-range`): one request per nanosecond, the resolution
/// of the arrival schedule.
pub const MAX_QPS: f64 = 1e9;
/// The most warm-up or measured requests per load (`--requests`, `--warmup`, and what
/// `--scale-with-qps` asks for at each load): every request keeps its timestamps in memory.
pub const MAX_REQUESTS: usize = 1_000_000;
/// The longest a load point may last (`--max-duration`, seconds).
pub const MAX_DURATION_S: f64 = 86_400.0;
/// The largest `--scale-with-qps` factor (1 is the study's 16 s of arrivals per load).
pub const MAX_SCALE_FACTOR: f64 = 1_000.0;
/// The most kernel runs per request (`--runs-per-request`).
pub const MAX_RUNS_PER_REQUEST: usize = 1_000_000;

/// Parses one load: a positive, finite number of requests per second, at most [`MAX_QPS`].
///
/// ```
/// use parbench_cli::latency::parse_qps;
/// assert_eq!(parse_qps("250"), Ok(250.0));
/// assert!(parse_qps("0").unwrap_err().contains("positive"));
/// assert!(parse_qps("1e12").unwrap_err().contains("at most"));
/// ```
pub fn parse_qps(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(qps) if qps.is_finite() && qps > 0.0 && qps <= MAX_QPS => Ok(qps),
        Ok(qps) if qps > MAX_QPS => Err(format!(
            "QPS must be at most {MAX_QPS:e}, got '{}'",
            text.trim()
        )),
        _ => Err(format!(
            "QPS must be a positive number, got '{}'",
            text.trim()
        )),
    }
}

/// Parses `A:B:STEP` with `0 < A ≤ B` and `STEP > 0`.
///
/// ```
/// use parbench_cli::latency::parse_qps_range;
/// assert_eq!(parse_qps_range("100:500:200").unwrap().step, 200.0);
/// assert!(parse_qps_range("500:100:100").is_err());
/// ```
pub fn parse_qps_range(text: &str) -> Result<QpsRange, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let [from, to, step] = parts[..] else {
        return Err(format!("'{text}' is not of the form A:B:STEP"));
    };
    let range = QpsRange {
        from: parse_qps(from)?,
        to: parse_qps(to)?,
        step: parse_qps(step)?,
    };
    if range.from > range.to {
        return Err(format!("range '{text}' is empty (write it low:high:step)"));
    }
    if (range.to - range.from) / range.step >= MAX_LOADS as f64 {
        return Err(format!(
            "range '{text}' has too many loads: at most {MAX_LOADS}; use a larger step"
        ));
    }
    Ok(range)
}

/// A positive, finite number up to `max`; `what` names it in the message.
fn parse_positive_up_to(text: &str, max: f64, what: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 && value <= max => Ok(value),
        Ok(value) if value > max => Err(format!(
            "{what} must be at most {max}, got '{}'",
            text.trim()
        )),
        _ => Err(format!("'{}' is not a positive {what}", text.trim())),
    }
}

fn parse_max_duration(text: &str) -> Result<f64, String> {
    parse_positive_up_to(text, MAX_DURATION_S, "number of seconds")
}

fn parse_scale_factor(text: &str) -> Result<f64, String> {
    parse_positive_up_to(text, MAX_SCALE_FACTOR, "scale factor")
}

fn parse_requests(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, MAX_REQUESTS)
}

fn parse_runs_per_request(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, MAX_RUNS_PER_REQUEST)
}

/// Refuses a load at which `--scale-with-qps` asks for more than [`MAX_REQUESTS`] warm-up or
/// measured requests (the factor and the load are each within bounds, their product need not be).
fn check_request_counts(config: &CurveConfig) -> Result<(), CliError> {
    for &qps in &config.qps {
        let (warmup, measured) = config.counts_at(qps);
        if warmup.max(measured) > MAX_REQUESTS {
            return Err(CliError::Usage(format!(
                "--scale-with-qps at {qps} QPS asks for {warmup} warm-up and {measured} measured \
                 requests; at most {MAX_REQUESTS} each (lower the factor or the load)"
            )));
        }
    }
    Ok(())
}

/// The kernel serving requests: a registry name, or `spmv` for `spmv-balanced`.
///
/// ```
/// use parbench_cli::latency::service_kernel;
/// assert_eq!(service_kernel("spmv")?.name(), "spmv-balanced");
/// assert!(service_kernel("nope").is_err());
/// # Ok::<(), parbench_cli::error::CliError>(())
/// ```
///
/// # Errors
/// [`CliError::Kernel`] listing the valid names for an unknown kernel.
pub fn service_kernel(name: &str) -> Result<&'static dyn Kernel, CliError> {
    let name = name.trim();
    Ok(find_kernel(if name == "spmv" {
        "spmv-balanced"
    } else {
        name
    })?)
}

/// The service's parameters: its small size, overridden by those given.
fn service_params(kernel: &dyn Kernel, args: &KernelParamArgs) -> Result<Params, CliError> {
    let pairs = args.pairs().map_err(CliError::Usage)?;
    // An input file replaces the generated instance that the small parameters shape (and spmv
    // refuses a shape given beside its matrix file): then the kernel's own defaults stand.
    let from_file = pairs
        .iter()
        .any(|(name, _)| FILE_PARAMETERS.contains(&name.as_str()));
    let mut params = if from_file {
        Params::new()
    } else {
        Params::small(kernel)
    };
    for (name, value) in pairs {
        if !kernel.params().iter().any(|spec| spec.name == name) {
            return Err(untaken_parameter(
                &args.given_as(&name, &value),
                &format!("kernel {} takes no parameter `{name}`", kernel.name()),
                &name,
            ));
        }
        params.set(name, value);
    }
    Ok(params)
}

/// Splits `--placement`: on `;` when present (so that `cpus:0,1;single` works), else on `,`
/// except inside a `cpus:` list, which runs to the end.
fn placement_names(text: &str) -> Vec<&str> {
    if text.contains(';') {
        return text.split(';').map(str::trim).collect();
    }
    match text.find("cpus:") {
        Some(start) => {
            let mut names: Vec<&str> = text[..start]
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .collect();
            names.push(text[start..].trim());
            names
        }
        None => text.split(',').map(str::trim).collect(),
    }
}

/// This machine's cores and their SMT siblings, restricted to the CPUs this process may use (as
/// [`parbench_mapper::Topology::this_system`] is). Without a topology (hwloc failure) every
/// allowed CPU counts as its own core, and the returned note says so.
fn this_machine() -> (CpuLayout, Option<String>) {
    match parbench_mapper::Topology::this_system() {
        Ok(topology) => {
            let cores = topology
                .cores()
                .iter()
                .map(|core| {
                    core.pus
                        .iter()
                        .map(|&pu| topology.pus()[pu].os_index)
                        .collect()
                })
                .collect();
            (CpuLayout::new(cores), None)
        }
        Err(error) => (
            CpuLayout::one_thread_per_core(
                &core_affinity::get_core_ids()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|core| core.id)
                    .collect::<Vec<_>>(),
            ),
            Some(format!(
                "no topology ({error}): SMT siblings unknown, every CPU counted as a core"
            )),
        ),
    }
}

/// The placements `latency` measures when `--placement` is not given.
pub const DEFAULT_PLACEMENTS: &str = "single,cores";

/// Who chose the placements of a run, which decides what a placement the machine cannot host
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementChoice {
    /// Named by the user: one the machine cannot host is an error, since the comparison asked
    /// for cannot be made (except `smt`, skipped wherever there are no SMT siblings).
    User,
    /// The command's defaults: one the machine cannot host is skipped with a note and the run
    /// measures the others, as it does for `smt`.
    Default,
}

/// The plans of the requested placements on `layout`; `smt` without SMT siblings, and under
/// [`PlacementChoice::Default`] a placement needing more cores than there are, is skipped with a
/// message in `skipped` instead of failing, as the machine simply cannot host it.
fn plans(
    text: &str,
    layout: &CpuLayout,
    choice: PlacementChoice,
    skipped: &mut Vec<String>,
) -> Result<Vec<PlacementPlan>, CliError> {
    let mut plans: Vec<PlacementPlan> = Vec::new();
    for name in placement_names(text) {
        let placement: Placement = name.parse().map_err(latency_error)?;
        match placement.plan(layout) {
            Ok(plan) if plans.iter().any(|p| p.name == plan.name) => {}
            Ok(plan) => plans.push(plan),
            Err(LatencyError::NoSmtSiblings) => {
                skipped.push(format!("no SMT siblings: skipping placement {placement}"));
            }
            Err(error @ LatencyError::NotEnoughCores { .. })
                if choice == PlacementChoice::Default =>
            {
                skipped.push(format!("{error}: skipping placement {placement}"));
            }
            Err(error) => return Err(latency_error(error)),
        }
    }
    Ok(plans)
}

fn latency_error(error: LatencyError) -> CliError {
    match error {
        LatencyError::Service(kernel) => CliError::Kernel(kernel),
        other => CliError::Usage(other.to_string()),
    }
}

/// Everything one latency measurement needs, resolved and checked: shared by `latency` and
/// `reproduce tail-latency`.
#[derive(Debug)]
pub struct LatencySetup {
    /// The kernel serving each request.
    pub kernel: &'static dyn Kernel,
    /// Its parameters.
    pub params: Params,
    /// Loads, request counts, seed, bounds.
    pub config: CurveConfig,
    /// One plan per placement, in measuring order.
    pub plans: Vec<PlacementPlan>,
    /// Pin workers and generator.
    pub pin: bool,
    /// Record per-worker counters under load ([`crate::under_load`]).
    pub counters: bool,
    /// Kernel runs per request (see [`KernelService::repeated`]).
    pub runs_per_request: usize,
}

/// One placement's curve and, per measured load (same order as `curve.points`), the counters its
/// workers recorded during the measured requests (`None` without `counters`).
#[derive(Debug, Clone)]
pub struct MeasuredCurve {
    /// The latency curve.
    pub curve: Curve,
    /// Counters under load per point.
    pub counters: Vec<Option<Profile>>,
}

/// The placements of `text` (e.g. `single,cores,smt`) on this machine, with notes for the user
/// (placements skipped because the machine cannot host them, a missing topology).
///
/// # Errors
/// [`CliError::Usage`] for a placement that does not parse, or that needs CPUs the machine lacks
/// and is not skipped (see [`PlacementChoice`]).
pub fn this_machine_plans(
    text: &str,
    choice: PlacementChoice,
) -> Result<(Vec<PlacementPlan>, Vec<String>), CliError> {
    let (layout, layout_note) = this_machine();
    let mut notes: Vec<String> = layout_note.into_iter().collect();
    let plans = plans(text, &layout, choice, &mut notes)?;
    Ok((plans, notes))
}

/// One placement's worker services and the counters they record into.
type PlacementServices = (Vec<Box<dyn Service>>, Option<CounterSet>);

/// Measures every placement of `setup` in turn; `on_point` sees each load as it completes (with
/// its counters and the curves so far, the last one that of the placement being measured, up to
/// and including this load). A signal handled by [`crate::interruption::stop_on_signals`] ends
/// the measurement after the load under way.
///
/// # Errors
/// [`MeasureStopped`], holding the curves measured so far: a kernel that cannot be prepared
/// (checked for every worker before anything is measured, so nothing is held then), a failing
/// load point, or an interruption ([`CliError::Interrupted`]).
pub fn measure_curves(
    setup: &LatencySetup,
    mut on_point: impl FnMut(&PlacementPlan, &PointResult, Option<&Profile>, &[MeasuredCurve]),
) -> Result<Vec<MeasuredCurve>, MeasureStopped> {
    let stopped = |error: CliError| MeasureStopped {
        error,
        curves: Vec::new(),
    };
    setup
        .config
        .validate()
        .map_err(|e| stopped(latency_error(e)))?;
    // Preparing also validates the parameters: a bad one fails here, before any measuring.
    let mut services: Vec<PlacementServices> = Vec::new();
    for plan in &setup.plans {
        let counters = setup
            .counters
            .then(|| CounterSet::for_this_machine(plan.worker_cpus.len()));
        let mut workers: Vec<Box<dyn Service>> = Vec::new();
        for worker in 0..plan.worker_cpus.len() {
            let prepared = setup
                .kernel
                .prepare(&setup.params, 1)
                .map_err(|e| stopped(e.into()))?;
            let service: Box<dyn Service> =
                Box::new(KernelService::repeated(prepared, setup.runs_per_request));
            workers.push(match &counters {
                Some(set) => set.wrap(worker, service),
                None => service,
            });
        }
        services.push((workers, counters));
    }
    let mut done: Vec<MeasuredCurve> = Vec::new();
    for (plan, (workers, counters)) in setup.plans.iter().zip(&mut services) {
        // The placement being measured, its finished loads so far: kept if a later load fails.
        done.push(MeasuredCurve {
            curve: Curve {
                placement: plan.name.clone(),
                points: Vec::new(),
                saturation_qps: None,
            },
            counters: Vec::new(),
        });
        let measured = run_curve(
            &MonotonicClock::new(),
            &setup.config,
            plan,
            workers,
            setup.pin,
            |point| {
                let profile = counters.as_ref().and_then(|set| {
                    set.take_point(&format!(
                        "{} {} {} QPS",
                        setup.kernel.name(),
                        plan.name,
                        point.offered_qps
                    ))
                });
                if let Some(current) = done.last_mut() {
                    current.curve.points.push(point.clone());
                    current.curve.saturation_qps =
                        saturation_qps(&current.curve.points, setup.config.saturation_factor);
                    current.counters.push(profile.clone());
                }
                on_point(plan, point, profile.as_ref(), &done);
                if crate::interruption::received().is_some() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        match (measured, done.last_mut()) {
            (Ok(curve), Some(current)) => current.curve = curve,
            (Ok(_), None) => {}
            (Err(error), _) => {
                return Err(MeasureStopped {
                    error: latency_error(error),
                    curves: done,
                });
            }
        }
        if let Some(signal) = crate::interruption::received() {
            return Err(MeasureStopped {
                error: CliError::interrupted(signal, None),
                curves: done,
            });
        }
    }
    Ok(done)
}

/// A finished load as the thread of an [`InterruptibleMeasurement`] reports it.
pub(crate) struct FinishedLoad {
    /// The placement it was measured on.
    pub(crate) placement: String,
    /// The load's result.
    pub(crate) point: PointResult,
    /// The counters recorded during it (`--counters`).
    pub(crate) counters: Option<Profile>,
    /// Its placement's curve so far, up to and including it.
    curve: Option<MeasuredCurve>,
}

/// What the thread measuring for an [`InterruptibleMeasurement`] tells it, and the second signal.
enum Measuring {
    /// A finished load, with its placement's curve so far (boxed: a channel's slot is as large
    /// as its largest message).
    Point(Box<FinishedLoad>),
    /// The measurement ended (all loads done, or stopped after one), or it panicked (the
    /// payload, to be resumed on the receiving thread).
    Ended(std::thread::Result<Result<Vec<MeasuredCurve>, MeasureStopped>>),
    /// A second signal: stop now, with the loads finished so far.
    StopNow,
}

/// Latency measurements that SIGINT, SIGTERM or SIGHUP stop after the load under way, and a
/// second such signal at once, both keeping the loads finished so far ([`MeasureStopped`]).
/// `latency` and `reproduce tail-latency` measure through it. Install it once per process
/// ([`crate::interruption::watch_signals`] is process-wide) and before anything is measured.
pub(crate) struct InterruptibleMeasurement {
    /// Where the second signal is sent: the channel of the measurement under way, if any.
    stop_now: Arc<Mutex<Option<mpsc::Sender<Measuring>>>>,
}

impl InterruptibleMeasurement {
    /// Installs the signal handlers ([`crate::interruption::stop_on_signals`]) and the watcher
    /// that says a first signal was seen and passes a second on to the measurement under way.
    ///
    /// # Errors
    /// [`CliError::Usage`] if the handlers or the watching thread cannot be installed.
    pub(crate) fn install() -> Result<InterruptibleMeasurement, CliError> {
        let stop_now: Arc<Mutex<Option<mpsc::Sender<Measuring>>>> = Arc::default();
        let on_signal = Arc::clone(&stop_now);
        crate::interruption::watch_signals(move |count| {
            if count == 1 {
                eprintln!("interrupted: stopping after the load under way (again to stop now)");
            } else if let Some(events) = lock(&on_signal).as_ref() {
                // Nobody receives once the measurement has ended: nothing is left to stop then
                // (a later one does not start: the first signal was received).
                let _ = events.send(Measuring::StopNow);
            }
        })
        .and_then(|()| crate::interruption::stop_on_signals())
        .map_err(|e| CliError::Usage(format!("cannot install the signal handlers: {e}")))?;
        Ok(InterruptibleMeasurement { stop_now })
    }

    /// Measures `setup` ([`measure_curves`]) on a thread of its own and calls `on_load` on this
    /// one with each finished load and the curves so far (the last one that of the load's
    /// placement). A signal received before it starts measures nothing.
    ///
    /// Measured on a thread of its own so that this one can stop at once with what it got: a
    /// load under way cannot be cut short from inside (its workers may be in a kernel run), and
    /// returning from `main` ends its threads.
    ///
    /// # Errors
    /// As [`measure_curves`]; after a second signal, [`CliError::Interrupted`] with the loads
    /// this thread had received.
    pub(crate) fn measure(
        &self,
        setup: &Arc<LatencySetup>,
        mut on_load: impl FnMut(&FinishedLoad, &[MeasuredCurve]),
    ) -> Result<Vec<MeasuredCurve>, MeasureStopped> {
        let stopped =
            |error: CliError, curves: Vec<MeasuredCurve>| MeasureStopped { error, curves };
        let (events, incoming) = mpsc::channel();
        *lock(&self.stop_now) = Some(events.clone());
        // After the channel is published: a signal either comes before this check or reaches
        // the channel.
        if let Some(signal) = crate::interruption::received() {
            return Err(stopped(CliError::interrupted(signal, None), Vec::new()));
        }
        {
            let setup = Arc::clone(setup);
            std::thread::Builder::new()
                .name("latency".to_owned())
                .spawn(move || {
                    // A panic is sent too: the channel never closes (the slot for the second
                    // signal holds a sender), so a receiver waiting for a word would wait
                    // forever. Unwind-safe: nothing it touched is used after the panic.
                    let measured = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        measure_curves(&setup, |plan, point, counters, done| {
                            let _ = events.send(Measuring::Point(Box::new(FinishedLoad {
                                placement: plan.name.clone(),
                                point: point.clone(),
                                counters: counters.cloned(),
                                curve: done.last().cloned(),
                            })));
                        })
                    }));
                    let _ = events.send(Measuring::Ended(measured));
                })
                .map_err(|e| {
                    stopped(
                        CliError::Usage(format!("cannot start measuring: {e}")),
                        Vec::new(),
                    )
                })?;
        }
        // The placements measured so far, each with its finished loads.
        let mut done: Vec<MeasuredCurve> = Vec::new();
        let measured = loop {
            let Ok(event) = incoming.recv() else {
                unreachable!("the slot for the second signal holds a sender while this receives")
            };
            let mut load = match event {
                Measuring::Ended(Ok(measured)) => break measured,
                // It panicked; so does this one, as it would have measuring itself.
                Measuring::Ended(Err(panic)) => std::panic::resume_unwind(panic),
                Measuring::StopNow => {
                    let signal = crate::interruption::received().unwrap_or(libc::SIGINT);
                    break Err(stopped(CliError::interrupted(signal, None), done));
                }
                Measuring::Point(load) => load,
            };
            if let Some(curve) = load.curve.take() {
                match done.last_mut() {
                    Some(last) if last.curve.placement == curve.curve.placement => *last = curve,
                    _ => done.push(curve),
                }
            }
            on_load(&load, &done);
        };
        *lock(&self.stop_now) = None;
        measured
    }
}

/// The channel slot of an [`InterruptibleMeasurement`]; a panic while it was held left nothing
/// half-written (a whole `Option` is stored), so a poisoned lock is used as it is.
fn lock<T>(slot: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A latency measurement that stopped before its end: why, and the curves it measured until then
/// (the last one possibly cut short; empty when it stopped before measuring).
#[derive(Debug)]
pub struct MeasureStopped {
    /// Why it stopped.
    pub error: CliError,
    /// The finished loads, per placement.
    pub curves: Vec<MeasuredCurve>,
}

impl From<MeasureStopped> for CliError {
    fn from(stopped: MeasureStopped) -> CliError {
        stopped.error
    }
}

/// Runs `parbench-cli latency`.
///
/// # Errors
/// [`CliError`] for bad input (unknown service or placement, no placement this machine can host,
/// bad parameters, an output format that cannot be inferred, an unwritable `--output` or
/// `--plot`) before anything is measured, or a failing load (after the loads finished before it
/// were written, as a finished run's are); [`CliError::Interrupted`] likewise after a signal,
/// which lets the load under way finish, or a second one, which does not (128 + the first);
/// [`CliError::WrittenElsewhere`] when a file could not be written after measuring (its content
/// went to a rescue file or stdout).
pub fn run(args: &LatencyArgs) -> Result<(), CliError> {
    let plot_format = plot_format(args.plot.as_deref())?;
    let kernel = service_kernel(&args.service)?;
    let params = service_params(kernel, &args.params)?;
    let per_qps = args
        .scale_with_qps
        .map(|factor| QpsScaledRequests::TAILBENCH.scaled_down(factor))
        .transpose()
        .map_err(latency_error)?;
    let config = CurveConfig {
        qps: args.loads(),
        requests: args.requests,
        warmup: args.warmup,
        seed: args.seed,
        bounds: Bounds {
            max_backlog: args.max_backlog,
            max_duration: Duration::from_secs_f64(args.max_duration),
        },
        saturation_factor: args.saturation_factor,
        per_qps,
    };
    config.validate().map_err(latency_error)?;
    check_request_counts(&config)?;
    let (placements, choice) = match &args.placement {
        Some(text) => (text.as_str(), PlacementChoice::User),
        None => (DEFAULT_PLACEMENTS, PlacementChoice::Default),
    };
    let (plans, notes) = this_machine_plans(placements, choice)?;
    if plans.is_empty() {
        // Measuring nothing and exiting 0 would look like a result (and an empty report would
        // replace an earlier file).
        let which = match choice {
            PlacementChoice::User => "requested",
            PlacementChoice::Default => "default",
        };
        return Err(CliError::Usage(format!(
            "no {which} placement can run on this machine (`{placements}`: {})",
            notes.join("; ")
        )));
    }
    // Unwritable paths fail now, not after minutes of measuring; nothing is written to them
    // before the first load's results.
    let mut output = match &args.output {
        Some(path) => {
            let format = crate::commands::file_format(path, args.format)?;
            Some((
                ResultsFile::open(path, "results", format.extension())?,
                format,
            ))
        }
        None => None,
    };
    let plot = match (&args.plot, plot_format) {
        (Some(path), Some(format)) => {
            Some((ResultsFile::open(path, "figure", format.name())?, format))
        }
        _ => None,
    };
    let pairs = args.params.pairs().map_err(CliError::Usage)?;
    for file in output
        .iter()
        .map(|(file, _)| file)
        .chain(plot.iter().map(|(file, _)| file))
    {
        file.refuse_kernel_inputs(&pairs)?;
    }
    if let (Some((output, _)), Some((plot, _))) = (&output, &plot) {
        plot.refuse_same_file(output.path(), "the --output file")?;
    }
    // A schedule that outlasts --max-duration would be cut there and reported as a saturation.
    config.check_schedules().map_err(latency_error)?;
    let setup = LatencySetup {
        kernel,
        params,
        config,
        plans,
        pin: !args.no_pin,
        counters: args.counters,
        runs_per_request: args.runs_per_request,
    };
    for note in &notes {
        eprintln!("{note}");
    }
    let mut report = Report::new("latency", &LABELS);
    report.metadata = metadata(kernel, &setup.params, &setup.config, setup.pin);
    report.metadata.settings.insert(
        "runs_per_request".to_owned(),
        setup.runs_per_request.to_string(),
    );
    for plan in &setup.plans {
        // The figure and the numbers mean something different when the generator shared CPUs.
        report.metadata.settings.insert(
            format!("placement.{}", plan.name),
            describe_plan(plan, setup.pin),
        );
    }
    // From here on a signal ends the measurement after the load under way, a second one at once,
    // and the loads measured until then are written as a finished run's are.
    let measurement = InterruptibleMeasurement::install()?;
    let setup = Arc::new(setup);
    let mut current: Option<String> = None;
    let measured = measurement.measure(&setup, |load, done| {
        if !args.quiet && current.as_deref() != Some(load.placement.as_str()) {
            if let Some(plan) = setup.plans.iter().find(|plan| plan.name == load.placement) {
                eprintln!("{}", describe_plan(plan, setup.pin));
            }
            current = Some(load.placement.clone());
        }
        if !args.quiet {
            eprintln!("  {}", describe_point(&load.point));
        }
        let mut cell = point_cell(kernel.name(), &load.placement, &load.point);
        if let Some(profile) = &load.counters {
            cell.metrics.extend(counter_series(profile));
        }
        report.cells.push(cell);
        if let Some((file, format)) = &mut output {
            if let Some(line) = file.snapshot(&render(*format, &report, done)) {
                if !args.quiet {
                    eprintln!("{line}");
                }
            }
        }
    });
    let (curves, failure) = match measured {
        Ok(curves) => (curves, None),
        Err(MeasureStopped { error, curves }) => (curves, Some(error)),
    };
    // Loads measured before a failure or an interruption are results like any others: they go
    // where a finished run's go, and the error after them.
    let failure = failure.map(|error| match error {
        CliError::Interrupted {
            signal,
            signal_name,
            kept: None,
        } => CliError::Interrupted {
            signal,
            signal_name,
            kept: Some(format!(
                "{} loads kept {}",
                report.cells.len(),
                output.as_ref().map_or_else(
                    || "on stdout".to_owned(),
                    |(file, _)| format!("in {}", file.path().display())
                )
            )),
        },
        other => other,
    });
    let interrupted = matches!(failure, Some(CliError::Interrupted { .. }));
    let mut errors: Vec<CliError> = Vec::new();
    if let Some(failure) = failure {
        report.metadata.settings.insert(
            crate::results::STOPPED_SETTING.to_owned(),
            failure.to_string(),
        );
        errors.push(failure);
    }
    if report.cells.is_empty() {
        // Nothing measured: an earlier file at --output or --plot stays as it was.
        return CliError::all(errors);
    }
    for measured in &curves {
        report.metadata.settings.insert(
            format!("saturation_qps.{}", measured.curve.placement),
            measured
                .curve
                .saturation_qps
                .map_or_else(|| "none".to_owned(), |qps| qps.to_string()),
        );
    }
    let only_copy = output.is_none();
    let table = !output.as_ref().is_some_and(|(file, _)| file.is_stdout());
    let stdout_format = match output {
        Some((file, format)) => {
            errors.extend(file.finish(&render(format, &report, &curves)).err());
            ExportFormat::Table
        }
        None => args.format.unwrap_or(ExportFormat::Table),
    };
    if let Some((file, format)) = plot {
        let plain: Vec<Curve> = curves.iter().map(|m| m.curve.clone()).collect();
        let figure = match format {
            FigureFormat::Png => render_plot_png(&plain, kernel.name()),
            FigureFormat::Svg => render_plot(&plain, kernel.name()).map(String::into_bytes),
        };
        match figure {
            Ok(bytes) => errors.extend(file.finish(&bytes).err()),
            Err(error) => errors.push(error),
        }
    }
    if table {
        let text = render(stdout_format, &report, &curves);
        let printed = print_results(&text, stdout_format.extension(), only_copy);
        // After SIGHUP the terminal may be gone; the interruption is still the news.
        if !interrupted {
            errors.extend(printed.err());
        }
    }
    CliError::all(errors)
}

/// Every counted quantity of every worker as a one-value metric series
/// (`counter.worker0.task-clock ns`), so JSON and CSV keep the counters under load.
fn counter_series(profile: &Profile) -> Vec<MetricSeries> {
    profile
        .threads
        .iter()
        .flat_map(|thread| {
            let totals = profile.thread_totals(thread.thread).unwrap_or_default();
            totals
                .into_iter()
                .filter_map(|(quantity, value)| {
                    Some(MetricSeries {
                        name: format!("counter.worker{}.{}", thread.thread, quantity.name()),
                        unit: String::new(),
                        values: vec![value?],
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The format of the `--plot` figure, from its extension: `.svg` or `.png`, as `plot` writes them.
/// Any other is refused before anything is measured, instead of SVG text in a file whose name
/// promises something else.
fn plot_format(path: Option<&Path>) -> Result<Option<FigureFormat>, CliError> {
    let Some(path) = path else {
        return Ok(None);
    };
    match FigureFormat::from_extension(path) {
        Some(format) => Ok(Some(format)),
        None => Err(CliError::Usage(format!(
            "--plot {}: name the figure .svg or .png (the format follows the extension)",
            path.display()
        ))),
    }
}

fn metadata(kernel: &dyn Kernel, params: &Params, config: &CurveConfig, pin: bool) -> Metadata {
    let mut settings = BTreeMap::new();
    settings.insert("service".to_owned(), kernel.name().to_owned());
    for spec in kernel.params() {
        if let Ok(value) = kernel.param_value(params, spec.name) {
            settings.insert(format!("{}.{}", kernel.name(), spec.name), value);
        }
    }
    let numbers = [
        ("requests", config.requests.to_string()),
        ("warmup", config.warmup.to_string()),
        ("seed", config.seed.to_string()),
        ("saturation_factor", config.saturation_factor.to_string()),
        ("max_backlog", config.bounds.max_backlog.to_string()),
        (
            "max_duration_s",
            config.bounds.max_duration.as_secs_f64().to_string(),
        ),
        ("pin", pin.to_string()),
        (
            "requests_per_qps",
            config.per_qps.map_or_else(
                || "fixed".to_owned(),
                |scaled| {
                    format!(
                        "warm-up = {} s x QPS, measured = {} x warm-up",
                        scaled.warmup_seconds, scaled.measured_per_warmup
                    )
                },
            ),
        ),
    ];
    for (name, value) in numbers {
        settings.insert(name.to_owned(), value);
    }
    Metadata::now(settings)
}

/// One load point as a report cell: sojourn times are the samples, queue and service times the
/// metric series, in seconds.
fn point_cell(service: &str, placement: &str, point: &PointResult) -> Cell {
    let seconds = |ns: u64| ns as f64 / 1e9;
    let qps = point.offered_qps.to_string();
    let achieved = format!("{:.1}", point.achieved_qps);
    let scheduled = format!("{:.1}", point.scheduled_qps);
    let p99 = point
        .sojourn
        .map_or_else(String::new, |s| (s.p99_ns / 1e9).to_string());
    let dropped = point.dropped.to_string();
    let stopped = point.stopped.map_or_else(String::new, |r| r.to_string());
    let labels = [
        ("service", service),
        ("placement", placement),
        ("qps", qps.as_str()),
        ("achieved_qps", achieved.as_str()),
        ("p99_s", p99.as_str()),
        ("dropped", dropped.as_str()),
        ("stopped", stopped.as_str()),
        ("scheduled_qps", scheduled.as_str()),
    ];
    let sojourn = point.samples.iter().map(|s| seconds(s.sojourn_ns()));
    let mut cell = Cell::measured(&labels, sojourn.collect());
    let series = |name: &str, values: Vec<f64>| MetricSeries {
        name: name.to_owned(),
        unit: "s".to_owned(),
        values,
    };
    let per_request = |name: &str, time: fn(&RequestSample) -> u64| {
        series(
            name,
            point.samples.iter().map(|s| seconds(time(s))).collect(),
        )
    };
    cell.metrics = vec![
        per_request("queue", RequestSample::queue_ns),
        per_request("service", RequestSample::service_ns),
        per_request("generator_lag", RequestSample::generator_lag_ns),
    ];
    cell
}

fn describe_plan(plan: &PlacementPlan, pin: bool) -> String {
    let cpus: Vec<String> = plan.worker_cpus.iter().map(usize::to_string).collect();
    let mut text = match (pin, plan.generator_cpu) {
        (false, _) => format!(
            "placement {}: {} workers, not pinned",
            plan.name,
            cpus.len()
        ),
        (true, Some(cpu)) => format!(
            "placement {}: workers on CPU {}, generator on CPU {cpu}",
            plan.name,
            cpus.join(",")
        ),
        (true, None) => format!(
            "placement {}: workers on CPU {}, generator unpinned",
            plan.name,
            cpus.join(",")
        ),
    };
    if let (true, Some(note)) = (pin, &plan.note) {
        text.push_str(&format!(" ({note})"));
    }
    text
}

fn describe_point(point: &PointResult) -> String {
    let p95 = point
        .sojourn
        .map_or_else(|| "-".to_owned(), |s| millis(s.p95_ns));
    let state = point
        .stopped
        .map_or_else(String::new, |reason| format!(", saturated: {reason}"));
    let lag = point.generator_lag.map_or_else(String::new, |lag| {
        format!(", generator late by up to {} ms", millis(lag.max_ns))
    });
    format!(
        "{:>9} QPS offered ({:.0} scheduled): p95 {p95} ms, achieved {:.0} QPS{lag}{state}",
        point.offered_qps, point.scheduled_qps, point.achieved_qps
    )
}

fn millis(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// `report` in `format`: the per-placement tables for people, the sweep exporters for programs.
fn render(format: ExportFormat, report: &Report, curves: &[MeasuredCurve]) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = match format {
        ExportFormat::Table | ExportFormat::Markdown => {
            write_tables(&mut out, curves, format == ExportFormat::Markdown)
        }
        ExportFormat::Csv | ExportFormat::Json => format.exporter().write(report, &mut out),
    };
    out
}

/// The table's columns; `gen lag ms` is the most the generator was late enqueuing a measured
/// request (0 when it kept the schedule; see `RequestSample::generator_lag_ns`).
const TABLE_HEADER: [&str; 12] = [
    "QPS",
    "scheduled",
    "achieved",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "gen lag ms",
    "requests",
    "dropped",
    "state",
];

fn write_tables(out: &mut dyn Write, curves: &[MeasuredCurve], markdown: bool) -> io::Result<()> {
    for (index, measured) in curves.iter().enumerate() {
        let curve = &measured.curve;
        if index > 0 {
            writeln!(out)?;
        }
        let heading = format!("placement {}", curve.placement);
        if markdown {
            writeln!(out, "### {heading}\n")?;
        } else {
            writeln!(out, "{heading}")?;
        }
        let rows: Vec<Vec<String>> = curve.points.iter().map(table_row).collect();
        write_grid(out, &rows, markdown)?;
        let saturation = match curve.saturation_qps {
            Some(qps) => format!("saturation: {qps} QPS"),
            None => "saturation: not reached".to_owned(),
        };
        writeln!(out, "{}{saturation}", if markdown { "\n" } else { "" })?;
        let lines = counter_lines(measured);
        if !lines.is_empty() {
            writeln!(out)?;
            for line in lines {
                writeln!(out, "{}{line}", if markdown { "    " } else { "" })?;
            }
        }
    }
    Ok(())
}

/// The counters each worker recorded under load, one line per load and worker, then what was
/// unavailable; nothing when no counters were recorded.
pub fn counter_lines(measured: &MeasuredCurve) -> Vec<String> {
    let mut lines = Vec::new();
    let mut unavailable: Option<&[parbench_mapper::perf::UnavailableEvent]> = None;
    let frequency = nominal_frequency_mhz();
    for (point, profile) in measured.curve.points.iter().zip(&measured.counters) {
        let Some(profile) = profile else { continue };
        if lines.is_empty() {
            lines.push("counters under load (measured requests only, per worker):".to_owned());
        }
        for thread in &profile.threads {
            let totals = profile.thread_totals(thread.thread).unwrap_or_default();
            let get = |quantity| totals.get(&quantity).copied().flatten();
            let show = |value: Option<f64>, scale: f64| {
                value.map_or_else(|| "n/a".to_owned(), |v| format!("{:.1}", v / scale))
            };
            lines.push(format!(
                "  {:>8} QPS worker {}: task-clock {} ms, context switches {}, migrations {} | study: {} | project rule: {}",
                point.offered_qps,
                thread.thread,
                show(get(Quantity::TaskClockNs), 1e6),
                show(get(Quantity::ContextSwitches), 1.0),
                show(get(Quantity::CpuMigrations), 1.0),
                StudyMetrics::from_totals(&totals, frequency),
                Metrics::from_totals(&totals).classification(),
            ));
        }
        unavailable = Some(&profile.unavailable);
    }
    if let Some(missing) = unavailable.filter(|missing| !missing.is_empty()) {
        let names: Vec<&str> = missing.iter().map(|u| u.event.as_str()).collect();
        lines.push(format!(
            "  unavailable here ({}): {}; first reason: {}",
            names.len(),
            names.join(", "),
            missing[0].reason
        ));
    }
    lines
}

fn table_row(point: &PointResult) -> Vec<String> {
    let stat = |pick: fn(&parbench_kernels::latency::LatencySummary) -> f64| {
        point
            .sojourn
            .as_ref()
            .map_or_else(|| "-".to_owned(), |s| millis(pick(s)))
    };
    vec![
        point.offered_qps.to_string(),
        format!("{:.0}", point.scheduled_qps),
        format!("{:.0}", point.achieved_qps),
        stat(|s| s.p50_ns),
        stat(|s| s.p95_ns),
        stat(|s| s.p99_ns),
        stat(|s| s.p999_ns),
        stat(|s| s.max_ns),
        point
            .generator_lag
            .map_or_else(|| "-".to_owned(), |lag| millis(lag.max_ns)),
        point.samples.len().to_string(),
        point.dropped.to_string(),
        point
            .stopped
            .map_or_else(|| "ok".to_owned(), |_| "saturated".to_owned()),
    ]
}

/// Columns padded to their widest entry (numbers right-aligned, the state left-aligned), or a
/// markdown table.
fn write_grid(out: &mut dyn Write, rows: &[Vec<String>], markdown: bool) -> io::Result<()> {
    let header: Vec<String> = TABLE_HEADER.iter().map(|h| (*h).to_owned()).collect();
    let last = TABLE_HEADER.len() - 1;
    if markdown {
        writeln!(out, "| {} |", header.join(" | "))?;
        let rule: Vec<&str> = (0..=last)
            .map(|c| if c == last { ":---" } else { "---:" })
            .collect();
        writeln!(out, "| {} |", rule.join(" | "))?;
        for row in rows {
            writeln!(out, "| {} |", row.join(" | "))?;
        }
        return Ok(());
    }
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for row in rows {
        for (width, entry) in widths.iter_mut().zip(row) {
            *width = (*width).max(entry.len());
        }
    }
    for row in std::iter::once(&header).chain(rows) {
        let entries: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(column, entry)| match column {
                c if c == last => entry.clone(),
                _ => format!("{entry:>width$}", width = widths[column]),
            })
            .collect();
        writeln!(out, "{}", entries.join("  ").trim_end())?;
    }
    Ok(())
}

/// p95 sojourn time against offered load, a line per placement; saturated points are crossed and
/// each legend entry names the placement's saturation load.
///
/// # Errors
/// [`CliError::Plot`] when no point has a p95 or drawing fails.
pub fn render_plot(curves: &[Curve], service: &str) -> Result<String, CliError> {
    check_plottable(curves)?;
    let mut svg = String::new();
    draw_plot(
        SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area(),
        curves,
        service,
    )?;
    Ok(svg)
}

/// [`render_plot`] as the bytes of a PNG image (`plot::png_bytes`); the caller writes
/// them as it writes `--output` (a device, a link, a rescue on failure: `ResultsFile`).
///
/// # Errors
/// [`CliError::Plot`] as for [`render_plot`], [`CliError::Write`] when the temporary image cannot
/// be written or read.
pub fn render_plot_png(curves: &[Curve], service: &str) -> Result<Vec<u8>, CliError> {
    check_plottable(curves)?;
    crate::plot::png_bytes(|path| {
        draw_plot(
            BitMapBackend::new(path, PLOT_SIZE).into_drawing_area(),
            curves,
            service,
        )
    })
}

/// Size of the latency figure in pixels.
const PLOT_SIZE: (u32, u32) = (900, 560);

/// [`crate::plot::PlotError::NothingToPlot`] when no point has a p95.
fn check_plottable(curves: &[Curve]) -> Result<(), CliError> {
    let any = curves
        .iter()
        .flat_map(|c| &c.points)
        .any(|p| p.sojourn.is_some());
    if any {
        Ok(())
    } else {
        Err(CliError::Plot(crate::plot::PlotError::NothingToPlot))
    }
}

fn draw_plot<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    curves: &[Curve],
    service: &str,
) -> Result<(), CliError> {
    let draw_error = |error: &dyn std::fmt::Display| {
        CliError::Plot(crate::plot::PlotError::Draw(error.to_string()))
    };
    let p95s = curves
        .iter()
        .flat_map(|c| &c.points)
        .filter_map(|p| p.sojourn.map(|s| s.p95_ns / 1e6));
    let (low, high) = p95s.fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let max_qps = curves
        .iter()
        .flat_map(|c| &c.points)
        .map(|p| p.offered_qps)
        .fold(0.0, f64::max);
    if !low.is_finite() {
        return Err(CliError::Plot(crate::plot::PlotError::NothingToPlot));
    }
    let (low, high) = ((low * 0.8).max(1e-6), (high * 1.25).max(low * 2.0));
    {
        crate::plot::ensure_font();
        root.fill(&WHITE).map_err(|e| draw_error(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{service}: p95 sojourn time vs offered load"),
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..max_qps * 1.05, (low..high).log_scale())
            .map_err(|e| draw_error(&e))?;
        chart
            .configure_mesh()
            .x_desc("offered load (requests/s)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc("p95 sojourn (ms, log)")
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .map_err(|e| draw_error(&e))?;
        for (index, curve) in curves.iter().enumerate() {
            let colour = Palette99::pick(index).to_rgba();
            let line: Vec<(f64, f64)> = curve
                .points
                .iter()
                .filter_map(|p| p.sojourn.map(|s| (p.offered_qps, s.p95_ns / 1e6)))
                .collect();
            let label = match curve.saturation_qps {
                Some(qps) => format!("{} (saturates at {qps} QPS)", curve.placement),
                None => format!("{} (no saturation)", curve.placement),
            };
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                .map_err(|e| draw_error(&e))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
            let saturated: Vec<bool> = curve.points.iter().map(PointResult::saturated).collect();
            chart
                .draw_series(line.iter().zip(saturated).map(|(&p, sat)| {
                    let marker: DynElement<'static, DB, (f64, f64)> = if sat {
                        Cross::new(p, 6, colour.stroke_width(2)).into_dyn()
                    } else {
                        Circle::new(p, 4, colour.filled()).into_dyn()
                    };
                    marker
                }))
                .map_err(|e| draw_error(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_error(&e))?;
        root.present().map_err(|e| draw_error(&e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service whose preparation panics, on the measuring thread: a bug, not bad input.
    struct PanickingKernel;

    impl Kernel for PanickingKernel {
        fn name(&self) -> &'static str {
            "panicking"
        }
        fn description(&self) -> &'static str {
            "panics when prepared"
        }
        fn params(&self) -> &'static [parbench_kernels::ParamSpec] {
            &[]
        }
        fn is_default_suite(&self) -> bool {
            false
        }
        fn prepare(
            &self,
            _: &Params,
            _: usize,
        ) -> Result<Box<dyn parbench_kernels::PreparedKernel>, parbench_kernels::KernelError>
        {
            panic!("preparing the service panicked")
        }
    }

    static PANICKING: PanickingKernel = PanickingKernel;

    /// A panic on the measuring thread reaches the caller of `measure` (whose thread then
    /// panics, as it would have measuring itself) instead of leaving it waiting for a word.
    #[test]
    fn a_panic_while_measuring_reaches_the_caller_instead_of_hanging() {
        let layout = CpuLayout::one_thread_per_core(&[0]);
        let setup = Arc::new(LatencySetup {
            kernel: &PANICKING,
            params: Params::new(),
            config: CurveConfig {
                qps: vec![1000.0],
                requests: 20,
                warmup: 2,
                ..CurveConfig::default()
            },
            plans: vec![Placement::Single.plan(&layout).unwrap()],
            pin: false,
            counters: false,
            runs_per_request: 1,
        });
        // Not installed: the test process keeps its own signal handling.
        let measurement = InterruptibleMeasurement {
            stop_now: Arc::default(),
        };
        let (result, outcome) = mpsc::channel();
        std::thread::spawn(move || {
            let measured = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                measurement.measure(&setup, |_, _| {})
            }));
            let _ = result.send(
                measured
                    .err()
                    .map(|panic| crate::error::panic_message(&*panic).to_owned()),
            );
        });
        let panicked = outcome
            .recv_timeout(Duration::from_secs(60))
            .expect("measure panics within a minute instead of waiting forever");
        assert_eq!(panicked.as_deref(), Some("preparing the service panicked"));
    }

    /// A placement that fails after another was measured (here: a worker CPU the OS cannot pin
    /// to) leaves the finished curve with the error, for the caller to write.
    #[test]
    fn a_failing_placement_keeps_the_curves_measured_before_it() {
        // A CPU this process may run on, so that pinning the first placement succeeds, and one
        // that is absent (the tests skip a machine that has it).
        let allowed = core_affinity::get_core_ids().expect("this process's CPUs");
        if allowed.iter().any(|core| core.id == 1023) {
            println!("SKIPPED: this machine has a CPU 1023");
            return;
        }
        let layout = CpuLayout::one_thread_per_core(&[allowed[0].id]);
        let unpinnable = PlacementPlan {
            name: "cpus:1023".into(),
            worker_cpus: vec![1023],
            generator_cpu: None,
            note: None,
        };
        let setup = LatencySetup {
            kernel: service_kernel("matmul").unwrap(),
            params: Params::new().with("n", "8"),
            config: CurveConfig {
                qps: vec![2000.0, 1000.0],
                requests: 20,
                warmup: 2,
                ..CurveConfig::default()
            },
            plans: vec![Placement::Single.plan(&layout).unwrap(), unpinnable],
            pin: true,
            counters: false,
            runs_per_request: 1,
        };
        let mut seen = Vec::new();
        let stopped = measure_curves(&setup, |plan, point, _, done| {
            seen.push((plan.name.clone(), point.offered_qps));
            let current = done.last().expect("the placement being measured");
            assert_eq!(current.curve.points.last(), Some(point), "up to this load");
        })
        .expect_err("CPU 1023 cannot be pinned to");
        assert!(
            matches!(stopped.error, CliError::Usage(ref m) if m.contains("CPU 1023")),
            "{}",
            stopped.error
        );
        let kept: Vec<(String, f64)> = stopped
            .curves
            .iter()
            .flat_map(|m| {
                m.curve
                    .points
                    .iter()
                    .map(|p| (m.curve.placement.clone(), p.offered_qps))
            })
            .collect();
        assert_eq!(kept, seen, "every reported load is kept");
        assert_eq!(seen.len(), 2, "both loads of the first placement: {seen:?}");
    }

    #[test]
    fn placement_lists_split_around_cpu_lists() {
        assert_eq!(placement_names("single,cores"), ["single", "cores"]);
        assert_eq!(placement_names("single,cpus:0,1"), ["single", "cpus:0,1"]);
        assert_eq!(placement_names("cpus:0,1;smt"), ["cpus:0,1", "smt"]);
    }

    #[test]
    fn qps_range_includes_its_end_despite_rounding() {
        let loads = parse_qps_range("0.1:0.3:0.1").unwrap().loads();
        assert_eq!(loads.len(), 3);
        assert!((loads[2] - 0.3).abs() < 1e-12);
        assert_eq!(
            parse_qps_range("100:350:100").unwrap().loads(),
            [100.0, 200.0, 300.0]
        );
        assert!(parse_qps_range("1:2").is_err());
        assert!(parse_qps_range("0:2:1").is_err());
        assert!(parse_qps_range("1:2:-1").is_err());
    }

    #[test]
    fn smt_is_skipped_with_a_message_on_a_machine_without_siblings() {
        let layout = CpuLayout::one_thread_per_core(&[0, 1]);
        let mut skipped = Vec::new();
        for choice in [PlacementChoice::User, PlacementChoice::Default] {
            skipped.clear();
            let measured = plans("single,smt,single", &layout, choice, &mut skipped).unwrap();
            assert_eq!(measured.len(), 1, "smt skipped, single measured once");
            assert_eq!(skipped, ["no SMT siblings: skipping placement smt"]);
            assert!(plans("numa", &layout, choice, &mut skipped).is_err());
        }
    }

    #[test]
    fn cores_on_one_core_is_skipped_as_a_default_and_refused_when_named() {
        let layout = CpuLayout::one_thread_per_core(&[0]);
        let mut skipped = Vec::new();
        let measured = plans(
            DEFAULT_PLACEMENTS,
            &layout,
            PlacementChoice::Default,
            &mut skipped,
        )
        .unwrap();
        let names: Vec<&str> = measured.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["single"]);
        assert_eq!(
            skipped,
            [
                "placement cores needs 2 cores, this process may use 1 core: skipping placement cores"
            ]
        );
        skipped.clear();
        let error = plans("single,cores", &layout, PlacementChoice::User, &mut skipped)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "placement cores needs 2 cores, this process may use 1 core"
        );
        // A CPU list the machine lacks is never a default: refused either way.
        for choice in [PlacementChoice::User, PlacementChoice::Default] {
            assert!(plans("cpus:0,7", &layout, choice, &mut skipped).is_err());
        }
        let two_cores = CpuLayout::one_thread_per_core(&[0, 1]);
        let both = plans(
            DEFAULT_PLACEMENTS,
            &two_cores,
            PlacementChoice::Default,
            &mut skipped,
        )
        .unwrap();
        assert_eq!(both.len(), 2, "nothing skipped on two cores: {skipped:?}");
        assert!(skipped.is_empty());
    }

    #[test]
    fn tables_show_every_load_and_the_saturation() {
        // Enqueued 2 ms after its scheduled time: the generator's lag.
        let sample = |index, end_ns| RequestSample {
            index,
            scheduled_ns: 0,
            enqueued_ns: 2_000_000,
            start_ns: 2_000_000,
            end_ns,
        };
        let points = vec![
            PointResult::from_samples(100.0, vec![sample(1, 3_000_000)], 0, None),
            // Sojourn times 3…1002 ms: p99.9 at rank 998.001, 1001.001 ms.
            PointResult::from_samples(
                200.0,
                (1..=1000)
                    .map(|i| sample(i, 2_000_000 + i as u64 * 1_000_000))
                    .collect(),
                0,
                None,
            ),
        ];
        let curve = Curve {
            placement: "single".into(),
            saturation_qps: parbench_kernels::latency::saturation_qps(&points, 5.0),
            points,
        };
        let curve = MeasuredCurve {
            curve,
            counters: vec![None, None],
        };
        let text = String::from_utf8(render(
            ExportFormat::Table,
            &Report::new("latency", &LABELS),
            std::slice::from_ref(&curve),
        ))
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "placement single");
        assert!(lines[1].starts_with("QPS  scheduled  achieved"), "{text}");
        let header: Vec<&str> = lines[1]
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let row: Vec<&str> = lines[3].split_whitespace().collect();
        let column = |name: &str| {
            let at = header.iter().position(|h| *h == name).expect(name);
            row[at]
        };
        assert_eq!(
            (column("p99.9 ms"), column("max ms"), column("gen lag ms")),
            ("1001.001", "1002.000", "2.000"),
            "{text}"
        );
        assert_eq!(lines[4], "saturation: 200 QPS");
        let markdown = String::from_utf8(render(
            ExportFormat::Markdown,
            &Report::new("latency", &LABELS),
            &[curve],
        ))
        .unwrap();
        assert!(
            markdown.contains("| QPS | scheduled | achieved |"),
            "{markdown}"
        );
        assert!(render_plot(&[], "x").is_err());
    }
}
