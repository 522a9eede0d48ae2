//! `reproduce tail-latency`: the TailBench-on-SMT study's experiment — p95 latency against offered
//! load for each service on one worker, two workers on two cores and two workers on the two PUs of
//! one core, with TailBench's request counts (warm-up = 4·QPS, measurement = 3 × warm-up, scaled
//! down in time here), per-worker counters recorded *during* the latency runs, the study's metric
//! definitions at each service's critical load, and its classification from the p95 curves.
//!
//! Services are this project's kernels at their small size (one request = one single-threaded
//! run), standing in for the TailBench applications, which are not part of parbench. Loads are
//! fractions of one worker's capacity, measured first (median service time of a few requests),
//! so every service gets a grid around its own knee.

use std::sync::Arc;
use std::time::Duration;

use parbench_kernels::latency::{
    Bounds, Curve, CurveConfig, DEFAULT_SATURATION_FACTOR, PlacementPlan, PointResult,
    QpsScaledRequests, saturation_qps, smt_verdict,
};
use parbench_kernels::{Kernel, Params, SeqExecutor, find_kernel};
use parbench_mapper::perf::{
    Profile, Quantity, SMT_FRIENDLY_RULE, StudyMetrics, nominal_frequency_mhz, tail_latency_events,
};
use parbench_mapper::plural;

use crate::error::CliError;
use crate::latency::{
    InterruptibleMeasurement, LatencySetup, MeasureStopped, MeasuredCurve, PlacementChoice,
    render_plot, this_machine_plans,
};
use crate::reproduce::report::{FigureFile, Measured, MeasuredFigure, Section, StudyReport};
use crate::reproduce::{RESULT_LABELS, Scale, Study, StudyRun, machine_conditions};
use crate::results::{Cell, Report};

/// The tail-latency study.
#[derive(Debug)]
pub struct TailLatencyStudy;

/// Services standing in for TailBench's applications: dense compute, sparse memory-bound,
/// branchy search, dependent loads.
const SERVICES: [&str; 4] = ["matmul", "spmv-balanced", "nqueens", "load-dep"];

/// Offered loads as fractions of one worker's capacity (1 / median service time): below, at and
/// beyond what one worker can serve, up to what two workers can.
const LOAD_FRACTIONS: [f64; 7] = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75];
const TINY_LOAD_FRACTIONS: [f64; 2] = [0.3, 0.9];

/// The study's placements; its classification compares the last two.
const STUDY_PLACEMENTS: &str = "single,cores,smt";

/// Seconds of arrivals per load relative to TailBench's 16 s (4 s warm-up + 12 s measured).
fn time_factor(scale: Scale) -> f64 {
    scale.pick(0.002, 0.1, 1.0)
}

/// Service time a request is made to take: well above the server's own per-request cost
/// (queue, wake-up; tens of µs), as TailBench's requests are.
fn target_service_s(scale: Scale) -> f64 {
    scale.pick(50e-6, 250e-6, 250e-6)
}

/// Measurements of every curve; the report shows the median run per load.
fn repetitions(scale: Scale) -> usize {
    scale.pick(1, 3, 3)
}

impl Study for TailLatencyStudy {
    fn name(&self) -> &'static str {
        "tail-latency"
    }

    fn published_json(&self) -> &'static str {
        include_str!("../../data/published/tail-latency.json")
    }

    fn scaling(&self, scale: Scale) -> String {
        let factor = time_factor(scale);
        let loads = match scale {
            Scale::Tiny => TINY_LOAD_FRACTIONS.len(),
            _ => LOAD_FRACTIONS.len(),
        };
        let services = match scale {
            Scale::Tiny => 1,
            _ => SERVICES.len(),
        };
        format!(
            "{} instead of TailBench's applications (a request = as many runs of \
             the kernel's small size as make ≈ {} µs of service); {loads} loads per placement \
             (fractions of one worker's measured capacity); warm-up = {}·QPS and measurement = 3 × warm-up \
             requests, i.e. TailBench's rule with {} s instead of 16 s of arrivals per load (factor {factor}); \
             placements single, cores and smt (cores only where two cores exist, smt only where SMT siblings \
             exist; one left out has no column in the p95 tables, the report says why, and without both cores \
             and smt the classification is unavailable); {} per curve, \
             the median run per load reported",
            plural(services, "kernel service"),
            target_service_s(scale) * 1e6,
            4.0 * factor,
            16.0 * factor,
            plural(repetitions(scale), "repetition")
        )
    }

    fn run(&self, run: &mut StudyRun) -> Result<StudyReport, CliError> {
        let scale = run.scale;
        let factor = time_factor(scale);
        let per_qps = QpsScaledRequests::TAILBENCH
            .scaled_down(factor)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        // The study's own placements, not the user's: those this machine cannot host are left
        // out and the report says which and why, as for a missing PMU.
        let (plans, notes) = this_machine_plans(STUDY_PLACEMENTS, PlacementChoice::Default)?;
        for note in &notes {
            run.note(note);
        }
        let services: &[&str] = match scale {
            Scale::Tiny => &SERVICES[..1],
            _ => &SERVICES,
        };
        let fractions: &[f64] = match scale {
            Scale::Tiny => &TINY_LOAD_FRACTIONS,
            _ => &LOAD_FRACTIONS,
        };
        let frequency = nominal_frequency_mhz();
        // A signal stops the study after the load under way, a second one at once; the loads
        // measured until then are kept (`reproduce` writes them to results.json).
        let measurement = InterruptibleMeasurement::install()?;
        let mut outcomes = Vec::new();
        for name in services {
            let kernel = find_kernel(name)?;
            let params = Params::small(kernel);
            let run_s = median_service_time(kernel, &params, scale.pick(5, 31, 101))?;
            // A request of several runs: a service time well above the server's per-request cost.
            let runs_per_request = ((target_service_s(scale) / run_s).ceil() as usize).max(1);
            let service_s = run_s * runs_per_request as f64;
            let capacity = 1.0 / service_s;
            let loads: Vec<f64> = fractions
                .iter()
                .map(|f| (f * capacity).round().max(1.0))
                .collect();
            run.note(&format!(
                "  {name}: {} of {:.1} µs per request (capacity of one worker ≈ {capacity:.0} QPS); loads {loads:?}",
                plural(runs_per_request, "run"),
                run_s * 1e6
            ));
            let setup = LatencySetup {
                kernel,
                params,
                config: CurveConfig {
                    qps: loads,
                    per_qps: Some(per_qps),
                    seed: 1,
                    // A point's arrivals last 16·factor s; twice that (and at least 2 s) ends an
                    // overloaded one without cutting a stable one short.
                    bounds: Bounds {
                        max_backlog: Bounds::default().max_backlog,
                        max_duration: Duration::from_secs_f64((32.0 * factor).max(2.0)),
                    },
                    saturation_factor: DEFAULT_SATURATION_FACTOR,
                    ..CurveConfig::default()
                },
                plans: plans.clone(),
                pin: true,
                counters: true,
                runs_per_request,
            };
            let setup = Arc::new(setup);
            let quiet = run.quiet;
            let repetitions = repetitions(scale);
            let mut repeated = Vec::new();
            for repetition in 0..repetitions {
                let measured = measurement.measure(&setup, |load, _| {
                    if !quiet {
                        let point = &load.point;
                        let p95 = point.sojourn.map_or_else(
                            || "-".to_owned(),
                            |s| format!("{:.3} ms", s.p95_ns / 1e6),
                        );
                        eprintln!(
                            "    [{}/{repetitions}] {} {} QPS: p95 {p95}{}",
                            repetition + 1,
                            load.placement,
                            point.offered_qps,
                            if point.saturated() {
                                " (saturated)"
                            } else {
                                ""
                            }
                        );
                    }
                });
                // Every repetition's loads are results, those of one cut short too.
                let (measured_curves, stopped) = match measured {
                    Ok(curves) => (curves, None),
                    Err(MeasureStopped { error, curves }) => (curves, Some(error)),
                };
                for measured in &measured_curves {
                    record_cells(&mut run.results, name, &plans, measured, repetition + 1);
                }
                if let Some(error) = stopped {
                    return Err(error);
                }
                repeated.push(measured_curves);
            }
            let curves: Vec<MeasuredCurve> = (0..plans.len())
                .map(|placement| {
                    let runs: Vec<&MeasuredCurve> =
                        repeated.iter().filter_map(|r| r.get(placement)).collect();
                    median_curve(&runs, DEFAULT_SATURATION_FACTOR)
                })
                .collect();
            outcomes.push(ServiceOutcome {
                name,
                service_s,
                runs_per_request,
                curves,
            });
        }
        let (_, not_on_this_cpu) =
            tail_latency_events(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
        Ok(report(
            self,
            run,
            &outcomes,
            &plans,
            &notes,
            per_qps,
            frequency,
            &not_on_this_cpu,
        ))
    }
}

/// One service's curves on every placement measured.
struct ServiceOutcome {
    name: &'static str,
    service_s: f64,
    runs_per_request: usize,
    curves: Vec<MeasuredCurve>,
}

impl ServiceOutcome {
    fn curve(&self, placement: &str) -> Option<&MeasuredCurve> {
        self.curves.iter().find(|m| m.curve.placement == placement)
    }
}

/// A measured load point with the counters recorded during it.
type MeasuredPoint<'a> = (&'a PointResult, &'a Option<Profile>);

/// One curve from repeated measurements of the same placement: at each load the measured point
/// whose p95 is the median over the repetitions (a repetition that stopped before this load, at a
/// bound, counts as an infinite p95, as does a point without completed requests), with that
/// point's counters. The curve ends at the first load whose median is such a stop; its saturation
/// load follows the usual rule on the median points. A machine shared with other work disturbs
/// single runs; the median run per load is what the report shows.
fn median_curve(runs: &[&MeasuredCurve], factor: f64) -> MeasuredCurve {
    let placement = runs
        .first()
        .map_or_else(String::new, |r| r.curve.placement.clone());
    let mut loads: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.curve.points.iter().map(|p| p.offered_qps))
        .collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let mut points = Vec::new();
    let mut counters = Vec::new();
    for qps in loads {
        let mut candidates: Vec<(f64, Option<MeasuredPoint<'_>>)> = runs
            .iter()
            .map(|r| {
                let found = r
                    .curve
                    .points
                    .iter()
                    .zip(&r.counters)
                    .find(|(p, _)| p.offered_qps == qps);
                let p95 = found
                    .and_then(|(p, _)| p.sojourn.filter(|_| !p.saturated()).map(|s| s.p95_ns))
                    .unwrap_or(f64::INFINITY);
                (p95, found)
            })
            .collect();
        // Among stops, a measured saturated point sorts before a run that never reached this
        // load, so a curve whose median is a stop still shows where it saturated.
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.is_none().cmp(&b.1.is_none())));
        match candidates.get(candidates.len() / 2) {
            Some((_, Some((point, profile)))) => {
                points.push((*point).clone());
                counters.push((*profile).clone());
                if point.saturated() {
                    break;
                }
            }
            _ => break,
        }
    }
    MeasuredCurve {
        curve: Curve {
            placement,
            saturation_qps: saturation_qps(&points, factor),
            points,
        },
        counters,
    }
}

/// Median wall time of `runs` single-threaded runs of the kernel (after one warm-up run).
fn median_service_time(
    kernel: &'static dyn Kernel,
    params: &Params,
    runs: usize,
) -> Result<f64, CliError> {
    let mut prepared = kernel.prepare(params, 1)?;
    prepared.run(&SeqExecutor::new())?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        times.push(prepared.run(&SeqExecutor::new())?.elapsed.as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2].max(1e-7))
}

/// Every load point of one repetition as a results cell (sojourn times as samples).
fn record_cells(
    results: &mut Report,
    service: &str,
    plans: &[PlacementPlan],
    measured: &MeasuredCurve,
    repetition: usize,
) {
    let workers = plans
        .iter()
        .find(|p| p.name == measured.curve.placement)
        .map_or(0, |p| p.worker_cpus.len())
        .to_string();
    for point in &measured.curve.points {
        let condition = format!(
            "p95 vs load, {} QPS, repetition {repetition}",
            point.offered_qps
        );
        let samples = point
            .samples
            .iter()
            .map(|s| s.sojourn_ns() as f64 / 1e9)
            .collect();
        results.cells.push(Cell::measured(
            &[
                ("condition", condition.as_str()),
                ("kernel", service),
                ("scheduler", measured.curve.placement.as_str()),
                ("threads", workers.as_str()),
            ],
            samples,
        ));
    }
}

/// The counters of the critical load: the highest load measured before the curve's saturation
/// load (the highest measured load when it never saturated).
fn critical_point(measured: &MeasuredCurve) -> Option<(f64, &Profile)> {
    let curve = &measured.curve;
    let index = match curve.saturation_qps {
        Some(knee) => curve
            .points
            .iter()
            .position(|p| p.offered_qps >= knee)?
            .checked_sub(1)?,
        None => curve.points.len().checked_sub(1)?,
    };
    let profile = measured.counters.get(index)?.as_ref()?;
    Some((curve.points[index].offered_qps, profile))
}

#[allow(clippy::too_many_arguments)]
fn report(
    study: &TailLatencyStudy,
    run: &mut StudyRun,
    outcomes: &[ServiceOutcome],
    plans: &[PlacementPlan],
    notes: &[String],
    per_qps: QpsScaledRequests,
    frequency: Option<f64>,
    not_on_this_cpu: &[parbench_mapper::perf::UnavailableEvent],
) -> StudyReport {
    let scale = run.scale;
    let placements: Vec<&str> = plans.iter().map(|p| p.name.as_str()).collect();
    let mut measured = vec![
        MeasuredFigure {
            id: "warmup-requests".into(),
            value: Measured::Finding(format!(
                "{} · QPS (TailBench's 4 · QPS scaled by {})",
                per_qps.warmup_seconds,
                per_qps.warmup_seconds / 4.0
            )),
            conditions: "every load of every service and placement".into(),
        },
        MeasuredFigure {
            id: "measured-requests".into(),
            value: Measured::Finding(format!("{} × the warm-up", per_qps.measured_per_warmup)),
            conditions:
                "every load; requests beyond a backlog/duration bound are counted as dropped".into(),
        },
    ];

    // The study's classification: SMT siblings vs two cores, from the p95 curves.
    let verdicts: Vec<(&str, String)> = outcomes
        .iter()
        .filter_map(|o| {
            let (cores, smt) = (o.curve("cores")?, o.curve("smt")?);
            Some((o.name, smt_verdict(&cores.curve, &smt.curve).to_string()))
        })
        .collect();
    // The placements the classification compares that this machine could not host.
    let missing: Vec<&str> = ["cores", "smt"]
        .into_iter()
        .filter(|name| !placements.contains(name))
        .collect();
    let named = format!(
        "the {} placement{}",
        missing.join(" and "),
        if missing.len() > 1 { "s" } else { "" }
    );
    let not_hosted = if notes.is_empty() {
        format!("{named} not measured")
    } else {
        format!("this machine cannot host {named} ({})", notes.join("; "))
    };
    let no_comparison_reason = format!("the classification compares smt with cores; {not_hosted}");
    measured.push(MeasuredFigure {
        id: "smt-finding".into(),
        value: if verdicts.is_empty() {
            Measured::Unavailable(no_comparison_reason)
        } else {
            let friendly = verdicts
                .iter()
                .filter(|(_, v)| v.starts_with("SMT-friendly"))
                .count();
            Measured::Finding(format!(
                "{friendly} of {} services lose nothing on SMT: {}",
                verdicts.len(),
                verdicts
                    .iter()
                    .map(|(s, v)| format!("{s}: {v}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        },
        conditions: "saturation = first load whose p95 exceeds 5 × the lowest load's p95 (or that hit a bound); SMT loses nothing when it saturates at the same load step as two cores".into(),
    });

    // Counters under load and the study's metrics at each service's critical load.
    let mut metric_rows = Vec::new();
    let mut study_metrics: Vec<(String, StudyMetrics)> = Vec::new();
    let mut project_rule: Vec<String> = Vec::new();
    for outcome in outcomes {
        for measured_curve in &outcome.curves {
            let Some((qps, profile)) = critical_point(measured_curve) else {
                continue;
            };
            let label = format!(
                "{} {} @ {qps} QPS",
                outcome.name, measured_curve.curve.placement
            );
            let totals = profile.all_threads_totals();
            let requests = measured_curve
                .curve
                .points
                .iter()
                .find(|p| p.offered_qps == qps)
                .map_or(0, |p| p.samples.len());
            let per_request = |quantity: Quantity, scale: f64| {
                totals
                    .get(&quantity)
                    .copied()
                    .flatten()
                    .filter(|_| requests > 0)
                    .map_or_else(
                        || "n/a".to_owned(),
                        |v| format!("{:.2}", v / scale / requests as f64),
                    )
            };
            let metrics = StudyMetrics::from_totals(&totals, frequency);
            // The metrics' own separators would split the Markdown cell.
            let metrics_text = metrics.to_string().replace(" | ", "; ");
            metric_rows.push(format!(
                "| {label} | {} | {} | {} | {metrics_text} |",
                profile.threads.len(),
                per_request(Quantity::TaskClockNs, 1e3),
                per_request(Quantity::ContextSwitches, 1.0),
            ));
            project_rule.push(format!(
                "{label}: {}",
                parbench_mapper::perf::Metrics::from_totals(&totals).classification()
            ));
            study_metrics.push((label, metrics));
        }
    }
    let unavailable: Vec<&parbench_mapper::perf::UnavailableEvent> = outcomes
        .iter()
        .flat_map(|o| &o.curves)
        .flat_map(|m| m.counters.iter().flatten())
        .flat_map(|p| p.unavailable.iter())
        .chain(not_on_this_cpu)
        .collect();
    let reason_of = |event: &str| {
        unavailable
            .iter()
            .find(|u| u.event == event)
            .or(unavailable.first())
            .map(|u| format!("{}: {}", u.event, u.reason))
            .unwrap_or_default()
    };
    let first_reason = reason_of("cycles");
    let metric_figure = |id: &str,
                         pick: &dyn Fn(&StudyMetrics) -> Option<f64>,
                         metric: &str,
                         key_event: &str,
                         unit: &str| {
        let first_reason = reason_of(key_event);
        let values: Vec<String> = study_metrics
            .iter()
            .filter_map(|(label, m)| pick(m).map(|v| format!("{label}: {v:.3}{unit}")))
            .collect();
        let missing: Vec<String> = study_metrics
            .first()
            .and_then(|(_, m)| m.missing.iter().find(|(name, _)| name.starts_with(metric)))
            .map(|(_, inputs)| inputs.clone())
            .unwrap_or_default();
        MeasuredFigure {
            id: id.to_owned(),
            value: if values.is_empty() {
                Measured::Unavailable(format!(
                    "needs {} — unavailable here ({first_reason})",
                    if missing.is_empty() { "hardware counters".to_owned() } else { missing.join(", ") }
                ))
            } else {
                Measured::Finding(values.join("; "))
            },
            conditions: "all workers of a placement summed, measured requests at the critical load (the last load before saturation)".into(),
        }
    };
    measured.push(metric_figure(
        "metric-memory-accesses",
        &|m| m.memory_accesses_per_us,
        "memory accesses",
        "LLC-load-misses",
        " /µs",
    ));
    measured.push(metric_figure(
        "metric-hit-rate",
        &|m| m.l1_hit_rate,
        "L1 hit rate",
        "MEM_LOAD_RETIRED.L1_HIT",
        "",
    ));
    measured.push(metric_figure(
        "metric-dispatch-stalls",
        &|m| m.dispatch_stall_fraction,
        "dispatch stalls",
        "UOPS_EXECUTED.STALL_CYCLES",
        "",
    ));
    measured.push(MeasuredFigure {
        id: "counters-under-load".into(),
        value: if metric_rows.is_empty() {
            Measured::Unavailable("no load point reached its measured requests".into())
        } else {
            Measured::Finding(format!(
                "recorded per worker during the measured requests of every load ({} placement × service curves); software events counted, hardware events: {}",
                metric_rows.len(),
                if first_reason.is_empty() { "counted".to_owned() } else { format!("unavailable ({first_reason})") }
            ))
        },
        conditions: "perf_event counters opened on each worker thread at its first measured request, read at the end of the load".into(),
    });
    measured.push(MeasuredFigure {
        id: "project-smt-rule".into(),
        value: Measured::Finding(if project_rule.is_empty() {
            "no counters".to_owned()
        } else {
            project_rule.join("; ")
        }),
        conditions: format!("{SMT_FRIENDLY_RULE} — shown for comparison only"),
    });

    let mut sections = Vec::new();
    for outcome in outcomes {
        let mut body = format!(
            "A request = {} of the kernel at its small size, median service time {:.1} µs. p95 sojourn time (ms) per offered load; `sat` marks a load that hit a bound.\n\n| QPS |",
            plural(outcome.runs_per_request, "run"),
            outcome.service_s * 1e6
        );
        for placement in &placements {
            body.push_str(&format!(" {placement} |"));
        }
        body.push_str("\n|---|");
        body.push_str(&"---|".repeat(placements.len()));
        body.push('\n');
        let mut loads: Vec<f64> = outcome
            .curves
            .iter()
            .flat_map(|m| m.curve.points.iter().map(|p| p.offered_qps))
            .collect();
        loads.sort_by(f64::total_cmp);
        loads.dedup();
        for qps in loads {
            body.push_str(&format!("| {qps} |"));
            for placement in &placements {
                let cell = outcome
                    .curve(placement)
                    .and_then(|m| m.curve.points.iter().find(|p| p.offered_qps == qps))
                    .map_or_else(
                        || "–".to_owned(),
                        |p| {
                            let p95 = p.sojourn.map_or_else(
                                || "–".to_owned(),
                                |s| format!("{:.3}", s.p95_ns / 1e6),
                            );
                            if p.saturated() {
                                format!("{p95} sat")
                            } else {
                                p95
                            }
                        },
                    );
                body.push_str(&format!(" {cell} |"));
            }
            body.push('\n');
        }
        body.push_str("\nSaturation load: ");
        let knees: Vec<String> = outcome
            .curves
            .iter()
            .map(|m| {
                format!(
                    "{} {}",
                    m.curve.placement,
                    m.curve
                        .saturation_qps
                        .map_or_else(|| "not reached".to_owned(), |q| format!("{q} QPS"))
                )
            })
            .collect();
        body.push_str(&knees.join(", "));
        body.push('\n');
        sections.push(Section {
            heading: format!("p95 vs load: {}", outcome.name),
            body,
        });
    }
    let mut counters_body = String::from(
        "The study's metric definitions (L3 misses × frequency / cycles; hit rates from retired loads; \
         `uops_executed.stall_cycles` / cycles with the RES/ROB/RS/SB breakdown), computed where the counters exist.\n\n\
         | service, placement, critical load | workers | task clock µs / request | context switches / request | study metrics |\n|---|---|---|---|---|\n",
    );
    for row in &metric_rows {
        counters_body.push_str(row);
        counters_body.push('\n');
    }
    if !first_reason.is_empty() {
        counters_body.push_str(&format!("\nUnavailable here: {first_reason}.\n"));
    }
    counters_body.push_str(&format!(
        "\nClassification rule shown for comparison: {SMT_FRIENDLY_RULE}.\n"
    ));
    sections.push(Section {
        heading: "Counters under load at each critical load".into(),
        body: counters_body,
    });
    if !missing.is_empty() {
        let needs: Vec<&str> = missing
            .iter()
            .map(|name| match *name {
                "cores" => "two cores",
                _ => "SMT siblings",
            })
            .collect();
        sections.push(Section {
            heading: "Placements not measured".into(),
            body: format!(
                "Not measured: {not_hosted}. The p95 tables have no {} column and the classification (smt against cores) is unavailable. On a machine with {} the same command adds the {} curves and the classification.",
                missing.join(" or "),
                needs.join(" and "),
                missing.join(" and "),
            ),
        });
    }

    let mut figures = Vec::new();
    for outcome in outcomes {
        let curves: Vec<_> = outcome.curves.iter().map(|m| m.curve.clone()).collect();
        if let Ok(svg) = render_plot(&curves, outcome.name) {
            figures.push(FigureFile {
                file: format!("p95-{}.svg", outcome.name),
                caption: format!(
                    "{}: p95 sojourn time against offered load, one line per placement; crosses mark saturated loads.",
                    outcome.name
                ),
                svg,
            });
        }
    }
    StudyReport {
        scale,
        scaling: study.scaling(scale),
        conditions_here: format!(
            "{}; open-loop exponential arrivals (seed 1), FIFO workers pinned per placement; nominal frequency {}",
            machine_conditions(),
            frequency.map_or_else(|| "unknown".to_owned(), |f| format!("{f:.0} MHz"))
        ),
        measured,
        sections,
        figures,
        results: std::mem::replace(&mut run.results, Report::new("reproduce", &RESULT_LABELS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parbench_kernels::latency::RequestSample;
    use parbench_mapper::perf::CpuFamily;

    fn curve(saturation_qps: Option<f64>) -> MeasuredCurve {
        let point = |qps: f64| {
            let sample = RequestSample {
                index: 0,
                scheduled_ns: 0,
                enqueued_ns: 0,
                start_ns: 0,
                end_ns: 1000,
            };
            PointResult::from_samples(qps, vec![sample], 0, None)
        };
        let profile = |qps: f64| Profile {
            workload: qps.to_string(),
            family: CpuFamily::Other,
            threads: Vec::new(),
            unavailable: Vec::new(),
        };
        MeasuredCurve {
            curve: Curve {
                placement: "single".into(),
                points: vec![point(100.0), point(200.0), point(300.0)],
                saturation_qps,
            },
            counters: vec![
                Some(profile(100.0)),
                Some(profile(200.0)),
                Some(profile(300.0)),
            ],
        }
    }

    #[test]
    fn the_median_curve_takes_the_median_run_per_load_and_stops_where_most_runs_stopped() {
        let point = |qps: f64, p95_ns: u64, stopped: bool| {
            let sample = RequestSample {
                index: 0,
                scheduled_ns: 0,
                enqueued_ns: 0,
                start_ns: 0,
                end_ns: p95_ns,
            };
            let reason = stopped.then_some(parbench_kernels::latency::StopReason::Backlog);
            PointResult::from_samples(qps, vec![sample], 0, reason)
        };
        let run = |points: Vec<PointResult>| MeasuredCurve {
            counters: vec![None; points.len()],
            curve: Curve {
                placement: "cores".into(),
                saturation_qps: None,
                points,
            },
        };
        // Load 200: p95 1, 5 (median), 9 ms. Load 300: one run stopped before it, one saturated
        // there, one measured 2 ms: the median is a stop, so the curve ends at 300.
        let a = run(vec![
            point(100.0, 1_000, false),
            point(200.0, 1_000_000, false),
        ]);
        let b = run(vec![
            point(100.0, 2_000, false),
            point(200.0, 5_000_000, false),
            point(300.0, 2_000_000, false),
        ]);
        let c = run(vec![
            point(100.0, 3_000, false),
            point(200.0, 9_000_000, false),
            point(300.0, 1_000, true),
        ]);
        let median = median_curve(&[&a, &b, &c], 5.0);
        let p95s: Vec<f64> = median
            .curve
            .points
            .iter()
            .map(|p| p.sojourn.unwrap().p95_ns)
            .collect();
        assert_eq!(p95s, [2_000.0, 5_000_000.0, 1_000.0]);
        assert!(median.curve.points[2].saturated());
        assert_eq!(median.counters.len(), 3);
        assert_eq!(median.curve.saturation_qps, Some(200.0));
    }

    #[test]
    fn the_critical_load_is_the_last_one_before_saturation() {
        let saturated = curve(Some(300.0));
        assert_eq!(
            critical_point(&saturated).map(|(qps, p)| (qps, p.workload.clone())),
            Some((200.0, "200".into()))
        );
        let never = curve(None);
        assert_eq!(critical_point(&never).map(|(qps, _)| qps), Some(300.0));
        // Saturated from the first load: no load before the knee.
        assert!(critical_point(&curve(Some(100.0))).is_none());
    }
}
