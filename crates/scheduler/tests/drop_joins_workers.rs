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
        // `pthread_join` returns when a thread has finished running; the kernel may list the
        // exiting task in /proc a moment longer (seen under ThreadSanitizer). Allow 5 ms for that,
        // far less than a worker that was never joined would take.
        let deadline = std::time::Instant::now() + Duration::from_millis(5);
        let mut live = live_threads();
        while live != before && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
            live = live_threads();
        }
        assert_eq!(
            live, before,
            "round {round}: worker threads outlived the pool"
        );
    }
}
