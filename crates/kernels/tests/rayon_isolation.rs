//! Cell isolation: dropping a rayon executor returns only after its worker threads have exited,
//! so none of them competes with the next benchmark cell.
//!
//! One test in its own binary, so that no other test starts or stops threads while it counts them.

use parbench_kernels::{Executor, PinPolicy, RayonExecutor, parallel_sum};

/// The number of threads of this process, from `/proc/self/task` (Linux).
fn live_threads() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

#[test]
fn dropping_a_rayon_executor_joins_every_worker() {
    let Some(before) = live_threads() else {
        eprintln!("SKIPPED: /proc/self/task is not readable here, threads cannot be counted");
        return;
    };
    for round in 0..20 {
        let exec = RayonExecutor::new(4, PinPolicy::None).expect("a 4-thread pool");
        let total = parallel_sum(&exec, 0..100_000, |r| r.map(|i| i as u64).sum());
        assert_eq!(total, 4_999_950_000);
        assert_eq!(exec.threads(), 4);
        assert!(live_threads().unwrap() >= before + 4, "the workers run");
        drop(exec);
        // `pthread_join` returns when the thread has finished running; the kernel may list the
        // exiting task in /proc for a moment longer while it releases it. Such a task runs no
        // code (it cannot compete with the next cell), so allow that moment — 5 ms, shorter than
        // the ~3 ms median (up to 8 ms) an unjoined rayon worker takes to exit, so that over 20
        // rounds a pool that does not join its workers still fails.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(5);
        let mut live = live_threads().unwrap();
        while live != before && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
            live = live_threads().unwrap();
        }
        assert_eq!(live, before, "round {round}: a worker outlived its pool");
    }
}
