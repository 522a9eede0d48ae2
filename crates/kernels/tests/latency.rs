//! The latency harness end to end on a real kernel: every request is accounted for, the
//! bookkeeping is consistent, and saturation is found. Nothing here asserts on how long anything
//! took — only on structure that holds on any machine, however loaded.

use std::ops::ControlFlow;
use std::time::Duration;

use parbench_kernels::latency::{
    Bounds, CpuLayout, Curve, CurveConfig, KernelService, LatencyError, MonotonicClock, Placement,
    PlacementPlan, PointResult, QpsScaledRequests, Service, exponential_arrivals, run_curve,
    saturation_qps,
};
use parbench_kernels::{Params, find_kernel};

fn matmul_services(workers: usize) -> Vec<Box<dyn Service>> {
    let matmul = find_kernel("matmul").unwrap();
    (0..workers)
        .map(|_| {
            let prepared = matmul.prepare(&Params::new().with("n", "8"), 1).unwrap();
            Box::new(KernelService::new(prepared)) as Box<dyn Service>
        })
        .collect()
}

/// The curve of `config` in real time, unpinned (tests must not depend on the CPUs they get).
fn measure(
    config: &CurveConfig,
    plan: &PlacementPlan,
    services: &mut [Box<dyn Service>],
    mut on_point: impl FnMut(&PointResult),
) -> Result<Curve, LatencyError> {
    measure_until(config, plan, services, |point| {
        on_point(point);
        ControlFlow::Continue(())
    })
}

/// [`measure`], ending the curve after a point whose `on_point` breaks.
fn measure_until(
    config: &CurveConfig,
    plan: &PlacementPlan,
    services: &mut [Box<dyn Service>],
    on_point: impl FnMut(&PointResult) -> ControlFlow<()>,
) -> Result<Curve, LatencyError> {
    run_curve(
        &MonotonicClock::new(),
        config,
        plan,
        services,
        false,
        on_point,
    )
}

#[test]
fn every_measured_request_is_accounted_for_with_consistent_times() {
    let plan = Placement::Cores
        .plan(&CpuLayout::one_thread_per_core(&[0, 1]))
        .unwrap();
    let mut services = matmul_services(plan.worker_cpus.len());
    let config = CurveConfig {
        qps: vec![4000.0, 1000.0],
        requests: 200,
        warmup: 10,
        seed: 5,
        ..CurveConfig::default()
    };
    let mut reported = Vec::new();
    let curve = measure(&config, &plan, &mut services, |point| {
        reported.push(point.offered_qps)
    })
    .unwrap();
    assert_eq!(curve.placement, "cores");
    assert_eq!(reported[0], 1000.0, "loads run in ascending order");
    for point in &curve.points {
        if !point.saturated() {
            assert_eq!(point.samples.len(), config.requests);
            assert_eq!(point.dropped, 0);
        }
        for (position, sample) in point.samples.iter().enumerate() {
            assert_eq!(
                sample.index,
                config.warmup + position,
                "schedule order, no warm-up"
            );
            assert!(sample.start_ns >= sample.scheduled_ns);
            assert_eq!(sample.queue_ns() + sample.service_ns(), sample.sojourn_ns());
        }
        let sojourn = point.sojourn.unwrap();
        assert!(sojourn.p50_ns <= sojourn.p95_ns && sojourn.p95_ns <= sojourn.p99_ns);
        assert!(sojourn.p99_ns <= sojourn.max_ns);
        assert!(point.achieved_qps > 0.0);
    }
}

#[test]
fn qps_scaled_request_counts_grow_with_the_load() {
    let plan = Placement::Single
        .plan(&CpuLayout::one_thread_per_core(&[0]))
        .unwrap();
    let mut services = matmul_services(1);
    // 10 ms of warm-up arrivals, 3 × as many measured: 5 + 15 at 500 QPS, 10 + 30 at 1000.
    let per_qps = QpsScaledRequests {
        warmup_seconds: 0.01,
        measured_per_warmup: 3,
    };
    let config = CurveConfig {
        qps: vec![500.0, 1000.0],
        per_qps: Some(per_qps),
        ..CurveConfig::default()
    };
    let curve = measure(&config, &plan, &mut services, |_| {}).unwrap();
    for point in &curve.points {
        let (warmup, measured) = per_qps.counts(point.offered_qps);
        assert_eq!((warmup, measured), config.counts_at(point.offered_qps));
        if !point.saturated() {
            assert_eq!(point.samples.len(), measured);
            assert_eq!(point.samples[0].index, warmup, "warm-up left out");
        }
    }
    assert_eq!(per_qps.counts(1000.0), (10, 30));
}

#[test]
fn an_overloaded_server_saturates_within_the_bounds() {
    // A 2^20-element reduce takes far longer than the 10 µs between requests at 100 000 QPS, so
    // the 50-request backlog bound (or, failing that, the 3 s one) ends the point.
    let reduce = find_kernel("reduce").unwrap();
    let prepared = reduce.prepare(&Params::new().with("n", "2^20"), 1).unwrap();
    let mut services: Vec<Box<dyn Service>> = vec![Box::new(KernelService::new(prepared))];
    let plan = Placement::Single
        .plan(&CpuLayout::one_thread_per_core(&[0]))
        .unwrap();
    let config = CurveConfig {
        qps: vec![100_000.0, 200_000.0],
        requests: 100_000,
        warmup: 1,
        bounds: Bounds {
            max_backlog: 50,
            max_duration: Duration::from_secs(3),
        },
        ..CurveConfig::default()
    };
    let curve = measure(&config, &plan, &mut services, |_| {}).unwrap();
    assert_eq!(
        curve.points.len(),
        1,
        "loads above a saturated one are skipped"
    );
    assert!(curve.points[0].saturated());
    assert!(curve.points[0].dropped > 0);
    assert_eq!(curve.saturation_qps, Some(100_000.0));
    assert_eq!(saturation_qps(&curve.points, 5.0), Some(100_000.0));
}

#[test]
fn bad_configurations_are_refused_before_measuring() {
    let plan = Placement::Single
        .plan(&CpuLayout::one_thread_per_core(&[0]))
        .unwrap();
    let mut services = matmul_services(1);
    for config in [
        CurveConfig {
            qps: vec![100.0, -1.0],
            ..CurveConfig::default()
        },
        CurveConfig {
            qps: vec![f64::NAN],
            ..CurveConfig::default()
        },
        CurveConfig {
            qps: vec![],
            ..CurveConfig::default()
        },
        CurveConfig {
            warmup: 0,
            ..CurveConfig::default()
        },
        CurveConfig {
            requests: 0,
            ..CurveConfig::default()
        },
        CurveConfig {
            saturation_factor: 1.0,
            ..CurveConfig::default()
        },
        // 210 arrivals at 1000 QPS span about 0.2 s: a 10 ms bound would stop the point as
        // saturated whatever the server.
        CurveConfig {
            qps: vec![1000.0],
            requests: 200,
            warmup: 10,
            bounds: Bounds {
                max_backlog: 1000,
                max_duration: Duration::from_millis(10),
            },
            ..CurveConfig::default()
        },
    ] {
        let mut measured = false;
        let error = measure(&config, &plan, &mut services, |_| measured = true).unwrap_err();
        assert!(
            matches!(error, LatencyError::BadConfig(_)),
            "{config:?}: {error}"
        );
        assert!(!measured);
    }
}

#[test]
fn a_schedule_is_refused_exactly_when_its_last_arrival_is_past_the_duration_bound() {
    let (warmup, requests) = (5, 45);
    let last_ns = *exponential_arrivals(300.0, warmup + requests, 9)
        .last()
        .unwrap();
    let config = |bound_ns: u64| CurveConfig {
        qps: vec![300.0],
        requests,
        warmup,
        seed: 9,
        bounds: Bounds {
            max_backlog: 1000,
            max_duration: Duration::from_nanos(bound_ns),
        },
        ..CurveConfig::default()
    };
    // The generator stops at an arrival *after* the bound, so one exactly at it still runs.
    assert!(config(last_ns).check_schedules().is_ok());
    let error = config(last_ns - 1).check_schedules().unwrap_err();
    assert!(matches!(error, LatencyError::BadConfig(_)), "{error}");
    assert!(error.to_string().contains("300 QPS"), "{error}");
    // The default loads fit the default bound.
    CurveConfig::default().check_schedules().unwrap();
}

#[test]
fn every_load_and_placement_replays_the_seeds_schedule() {
    struct Nothing;
    impl Service for Nothing {
        fn serve(&mut self) -> Result<(), LatencyError> {
            Ok(())
        }
    }
    let config = CurveConfig {
        qps: vec![2000.0, 4000.0],
        requests: 50,
        warmup: 5,
        seed: 11,
        ..CurveConfig::default()
    };
    let layout = CpuLayout::one_thread_per_core(&[0, 1]);
    let scheduled = |placement: Placement| {
        let plan = placement.plan(&layout).unwrap();
        let mut services: Vec<Box<dyn Service>> = plan
            .worker_cpus
            .iter()
            .map(|_| Box::new(Nothing) as Box<dyn Service>)
            .collect();
        let curve = measure(&config, &plan, &mut services, |_| {}).unwrap();
        let times: Vec<Vec<u64>> = curve
            .points
            .iter()
            .map(|point| point.samples.iter().map(|s| s.scheduled_ns).collect())
            .collect();
        times
    };
    let single = scheduled(Placement::Single);
    assert_eq!(
        single,
        scheduled(Placement::Cores),
        "same schedule per placement"
    );
    let expected = exponential_arrivals(2000.0, 55, 11);
    assert_eq!(
        single[0],
        expected[5..],
        "warm-up first, then the measured requests"
    );
    for (slow, fast) in single[0].iter().zip(&single[1]) {
        // The same pattern at twice the rate, up to the nanosecond truncation.
        assert!(slow.abs_diff(2 * fast) <= 2, "{slow} vs {fast}");
    }
}

/// A caller that asks to stop (an interrupted CLI) gets the points measured so far, the one it
/// broke after included, and no further load is measured.
#[test]
fn a_break_from_on_point_ends_the_curve_after_that_point() {
    let plan = Placement::Single
        .plan(&CpuLayout::one_thread_per_core(&[0]))
        .unwrap();
    let mut services = matmul_services(1);
    let config = CurveConfig {
        qps: vec![1000.0, 2000.0, 4000.0],
        requests: 20,
        warmup: 2,
        ..CurveConfig::default()
    };
    let mut seen = Vec::new();
    let curve = measure_until(&config, &plan, &mut services, |point| {
        seen.push(point.offered_qps);
        if point.saturated() || seen.len() < 2 {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    })
    .unwrap();
    let measured: Vec<f64> = curve.points.iter().map(|p| p.offered_qps).collect();
    assert_eq!(measured, seen, "every reported point is in the curve");
    assert!(
        measured.len() <= 2,
        "nothing measured after the break: {measured:?}"
    );
}
