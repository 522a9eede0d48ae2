//! Scheduler overheads and speedups against rayon, on 2 threads (issue targets in comments).
//!
//! * `empty2`: an empty 2-iteration loop called back to back from the main thread
//!   (target: median ≤ 5 µs; rayon ≈ 25 µs here);
//! * `tiny`: a loop of ≈ 10 µs of sequential work (target ≤ 1.1× sequential; rayon ≈ 3.6×);
//! * `balanced` / `hyperbolic`: ≈ 300 µs of sequential work, uniform or with iteration i costing
//!   ∝ 1/(i+1) (targets ≥ 1.8× / ≥ 1.7× over sequential and ≤ 0.9× rayon's time).
//!
//! Work is a calibrated number of dependent multiply-add steps, so every variant does the same
//! work. Run: `cargo bench --bench scheduler`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use parbench_scheduler::{Strategy, ThreadPool, ThreadPoolBuilder};
use rayon::prelude::*;

const THREADS: usize = 2;

/// `units` dependent steps of a linear congruential generator: cannot be folded or vectorized.
#[inline(never)]
fn work(units: u64) -> u64 {
    let mut x = black_box(units | 1);
    for _ in 0..units {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    x
}

/// Work units per microsecond on this machine, measured once.
fn units_per_us() -> f64 {
    let units = 2_000_000;
    let start = Instant::now();
    black_box(work(units));
    units as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// A loop shape: per-iteration work units.
struct Shape {
    name: &'static str,
    units: Vec<u64>,
}

fn shapes(per_us: f64) -> Vec<Shape> {
    let uniform =
        |n: usize, total_us: f64| vec![((total_us * per_us) / n as f64).max(1.0) as u64; n];
    let hyperbolic = |n: usize, total_us: f64| {
        let harmonic: f64 = (1..=n).map(|i| 1.0 / i as f64).sum();
        (0..n)
            .map(|i| ((total_us * per_us) / harmonic / (i + 1) as f64).max(1.0) as u64)
            .collect()
    };
    vec![
        Shape {
            name: "tiny",
            units: uniform(64, 10.0),
        },
        Shape {
            name: "balanced",
            units: uniform(1024, 300.0),
        },
        Shape {
            name: "hyperbolic",
            units: hyperbolic(1024, 300.0),
        },
    ]
}

fn strategies() -> Vec<(&'static str, Strategy)> {
    vec![
        ("tree", Strategy::default()),
        ("static", Strategy::Static),
        ("dynamic", Strategy::Dynamic { chunk: 1 }),
        ("guided", Strategy::Guided { min_chunk: 1 }),
        ("simple", Strategy::Simple { grain: 1 }),
    ]
}

fn pools() -> (ThreadPool, rayon::ThreadPool) {
    let ours = ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("pool");
    let theirs = rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("rayon pool");
    (ours, theirs)
}

fn configure(c: &mut Criterion) -> &mut Criterion {
    c
}

fn empty_loop(c: &mut Criterion) {
    let (pool, rayon_pool) = pools();
    let mut group = configure(c).benchmark_group("empty2");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, strategy) in strategies() {
        group.bench_function(name, |b| {
            b.iter(|| {
                pool.parallel_for_with(&strategy, 0..2, |i| {
                    black_box(i);
                })
            })
        });
    }
    group.bench_function("rayon", |b| {
        b.iter(|| {
            rayon_pool.install(|| {
                (0..2usize).into_par_iter().for_each(|i| {
                    black_box(i);
                })
            })
        })
    });
    group.finish();
}

fn loops(c: &mut Criterion) {
    let (pool, rayon_pool) = pools();
    let per_us = units_per_us();
    for shape in shapes(per_us) {
        let units = &shape.units;
        let mut group = configure(c).benchmark_group(shape.name);
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        group.bench_function(BenchmarkId::new("seq", units.len()), |b| {
            b.iter(|| units.iter().map(|&u| work(u)).fold(0, u64::wrapping_add))
        });
        for (name, strategy) in strategies() {
            group.bench_function(BenchmarkId::new(name, units.len()), |b| {
                b.iter(|| {
                    pool.parallel_for_with(&strategy, 0..units.len(), |i| {
                        black_box(work(units[i]));
                    })
                })
            });
        }
        group.bench_function(BenchmarkId::new("rayon", units.len()), |b| {
            b.iter(|| {
                rayon_pool.install(|| {
                    units.par_iter().for_each(|&u| {
                        black_box(work(u));
                    })
                })
            })
        });
        group.finish();
    }
}

criterion_group!(benches, empty_loop, loops);
criterion_main!(benches);
