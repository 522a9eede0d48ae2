//! The search kernels' `--backend` switch: qap, floorplan and nqueens validate on every atomics
//! backend this CPU has (and `std`), on a parallel executor; a backend the CPU lacks, or an unknown
//! name, is a parameter error before anything runs.

use parbench_atomics::Backend;
use parbench_kernels::{ExecutorKind, KernelError, Params, PinPolicy, find_kernel};

const SEARCH_KERNELS: [&str; 3] = ["qap", "floorplan", "nqueens"];

fn small(kernel: &str) -> Params {
    let mut params = Params::new();
    for (name, value) in find_kernel(kernel).unwrap().small_params() {
        params.set(*name, *value);
    }
    params
}

#[test]
fn search_kernels_validate_on_every_available_backend() {
    let exec = ExecutorKind::Tree.build(2, PinPolicy::None).unwrap();
    let mut backends = vec!["std".to_owned()];
    backends.extend(Backend::available().iter().map(|b| b.name().to_owned()));
    for kernel in SEARCH_KERNELS {
        for backend in &backends {
            let params = small(kernel).with("backend", backend.as_str());
            let mut prepared = find_kernel(kernel).unwrap().prepare(&params, 2).unwrap();
            for _ in 0..3 {
                prepared
                    .run(exec.as_ref())
                    .unwrap_or_else(|e| panic!("{kernel} on {backend}: {e}"));
            }
        }
    }
}

#[test]
fn unknown_or_unavailable_backends_are_parameter_errors() {
    let unavailable: Vec<&str> = ["lse", "llsc"]
        .into_iter()
        .filter(|name| !Backend::available().iter().any(|b| b.name() == *name))
        .collect();
    for kernel in SEARCH_KERNELS {
        for backend in unavailable.iter().copied().chain(["z80"]) {
            let params = small(kernel).with("backend", backend);
            let error = find_kernel(kernel).unwrap().prepare(&params, 1).err();
            assert!(
                matches!(error, Some(KernelError::BadParam { .. })),
                "{kernel} with backend {backend}: {error:?}"
            );
        }
    }
}
