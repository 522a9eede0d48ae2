//! Dropping a pool joins every worker: the process's thread count returns to what it was, and
//! queued spawned tasks still ran. (Its own test binary: other tests' pools would change the
//! count.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parbench_scheduler::ThreadPoolBuilder;

fn live_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn dropping_a_pool_leaves_no_worker_alive() {
    if live_threads() == 0 {
        eprintln!("SKIPPED: /proc/self/task is not readable here; cannot count threads");
        return;
    }
    let before = live_threads();
    for round in 0..5 {
        let ran = Arc::new(AtomicUsize::new(0));
        {
            let pool = ThreadPoolBuilder::new().num_threads(4).build().unwrap();
            assert_eq!(
                live_threads(),
                before + 4,
                "round {round}: workers not started"
            );
            pool.parallel_for(0..10_000, |_| {});
            for _ in 0..50 {
                let ran = ran.clone();
                pool.spawn(move || {
                    std::thread::sleep(Duration::from_micros(100));
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            }
        }
        assert_eq!(
            ran.load(Ordering::Relaxed),
            50,
            "round {round}: queued tasks were dropped"
        );
        assert_eq!(
            live_threads(),
            before,
            "round {round}: worker threads outlived the pool"
        );
    }
}
