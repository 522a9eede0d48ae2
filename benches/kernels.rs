//! Every kernel at its default size on `tree` and `rayon`, plus `static` and `seq` for the loop
//! kernels. Each sample is the kernel's own timed section (input preparation and validation are
//! outside it), so the numbers match what `parbench-cli sweep` reports.
//!
//! Short warm-up and measurement windows keep `cargo bench --bench kernels` to a few minutes on a
//! 2-core machine; filter with e.g. `cargo bench --bench kernels -- spmv-balanced/seq`.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use parbench_kernels::{ExecutorKind, Params, PinPolicy, registry};

/// Kernels whose parallelism is a parallel loop, where the `static` baseline is meaningful.
const LOOP_KERNELS: [&str; 9] = [
    "spmv-balanced",
    "spmv-triangle",
    "spmv-hyperbolic",
    "reduce",
    "scan",
    "matmul",
    "transpose",
    "sched-time",
    "trapezoid",
];

fn executors_for(kernel: &str) -> &'static [ExecutorKind] {
    if LOOP_KERNELS.contains(&kernel) {
        &[
            ExecutorKind::Tree,
            ExecutorKind::Rayon,
            ExecutorKind::Static,
            ExecutorKind::Seq,
        ]
    } else {
        &[ExecutorKind::Tree, ExecutorKind::Rayon]
    }
}

fn kernels(c: &mut Criterion) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    for kernel in registry() {
        let mut group = c.benchmark_group(kernel.name());
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(600));
        for &kind in executors_for(kernel.name()) {
            let exec = match kind.build(threads, PinPolicy::None) {
                Ok(exec) => exec,
                Err(error) => {
                    eprintln!("SKIPPED: {}/{kind}: {error}", kernel.name());
                    continue;
                }
            };
            let mut prepared = match kernel.prepare(&Params::new(), threads) {
                Ok(prepared) => prepared,
                Err(error) => {
                    eprintln!("SKIPPED: {}: {error}", kernel.name());
                    break;
                }
            };
            group.bench_function(kind.name(), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| match prepared.run(exec.as_ref()) {
                            Ok(report) => report.elapsed,
                            Err(error) => panic!("{}/{kind}: {error}", kernel.name()),
                        })
                        .sum()
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);
