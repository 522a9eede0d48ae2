//! A failed `build_global` leaves the global pool unbuilt, whatever made it fail, so a corrected
//! retry succeeds. (Its own test binary: the global pool is per process.)

use std::panic::{self, AssertUnwindSafe};

use parbench_scheduler::{BuildError, Pinning, ThreadPoolBuilder};

#[test]
fn a_failed_build_global_can_be_retried() {
    let no_cpu = ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(Pinning::Cpus(Vec::new()))
        .build_global();
    assert!(
        matches!(no_cpu, Err(BuildError::EmptyCpuList)),
        "{no_cpu:?}"
    );

    let missing_cpu = ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(Pinning::Cpus(vec![1 << 20]))
        .build_global();
    assert!(
        matches!(
            missing_cpu,
            Err(BuildError::NoSuchCpu { .. } | BuildError::PinningUnsupported)
        ),
        "{missing_cpu:?}"
    );

    let nul_name = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("worker\0{i}"))
        .build_global();
    assert!(
        matches!(nul_name, Err(BuildError::InvalidThreadName { .. })),
        "{nul_name:?}"
    );

    // A panic in the build unwinds through the global pool's initialisation.
    let panicked = panic::catch_unwind(AssertUnwindSafe(|| {
        ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|_| panic!("no names today"))
            .build_global()
    }));
    assert!(panicked.is_err());

    let retry = ThreadPoolBuilder::new().num_threads(2).build_global();
    assert!(retry.is_ok(), "the corrected retry failed: {retry:?}");
    assert_eq!(parbench_scheduler::current_num_threads(), 2);
    assert_eq!(parbench_scheduler::global_pool().num_threads(), 2);
    let again = ThreadPoolBuilder::new().num_threads(2).build_global();
    assert!(
        matches!(again, Err(BuildError::GlobalPoolAlreadyInitialized)),
        "{again:?}"
    );
}
