//! A `thread_name` closure that panics, or returns a name no thread can have, makes `build` fail
//! before any worker thread starts: the process's thread count does not change. (Its own test
//! binary: other tests' pools would change the count.)

use std::panic::{self, AssertUnwindSafe};

use parbench_scheduler::{BuildError, ThreadPoolBuilder};

fn live_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn a_failing_thread_name_closure_starts_no_thread() {
    if live_threads() == 0 {
        eprintln!("SKIPPED: /proc/self/task is not readable here; cannot count threads");
        return;
    }
    let before = live_threads();
    let panicked = panic::catch_unwind(AssertUnwindSafe(|| {
        ThreadPoolBuilder::new()
            .num_threads(4)
            .thread_name(|i| {
                assert!(i != 2, "no name for worker 2");
                format!("worker-{i}")
            })
            .build()
    }));
    let payload = panicked.expect_err("build did not re-raise the closure's panic");
    assert_eq!(
        payload.downcast_ref::<&str>().copied(),
        Some("no name for worker 2")
    );
    // Nothing was started, so nothing is exiting either: the count is exact at once (a worker
    // started before the panic would never exit, since nobody owns its pool).
    assert_eq!(
        live_threads(),
        before,
        "workers outlived the panicking build"
    );

    let nul = ThreadPoolBuilder::new()
        .num_threads(4)
        .thread_name(|i| format!("worker\0{i}"))
        .build();
    assert!(
        matches!(nul, Err(BuildError::InvalidThreadName { index: 0, .. })),
        "{nul:?}"
    );
    assert_eq!(live_threads(), before, "workers outlived the failed build");
}
