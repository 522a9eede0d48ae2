//! Detached tasks (`spawn`, `spawn_on`) and the end of a pool: every one runs, wherever it was
//! spawned from, and a pool may be dropped by one of its own workers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use parbench_scheduler::ThreadPoolBuilder;

/// Long enough for any healthy run on a loaded machine; a lost task fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn a_task_spawned_by_an_outside_caller_inside_a_call_runs_after_the_call() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for round in 0..50 {
        let (tx, rx) = mpsc::channel();
        // The body runs (at least partly) on this outside thread, which takes part in the call.
        pool.parallel_for(0..2, |i| {
            let tx = tx.clone();
            pool.spawn(move || tx.send(i).unwrap());
        });
        drop(tx);
        let mut got: Vec<usize> = (0..2)
            .map(|_| {
                rx.recv_timeout(PATIENCE)
                    .unwrap_or_else(|e| panic!("round {round}: a spawned task never ran ({e})"))
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1], "round {round}");
    }
}

#[test]
fn dropping_a_pool_runs_tasks_spawned_by_tasks_during_the_shutdown() {
    for round in 0..20 {
        let ran = Arc::new(AtomicUsize::new(0));
        {
            let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
            for _ in 0..4 {
                let ran = Arc::clone(&ran);
                pool.spawn(move || {
                    // Give the owner time to start dropping the pool, then spawn more work from
                    // inside, to every worker's inbox and to this worker's own deque.
                    std::thread::sleep(Duration::from_millis(2));
                    for index in 0..3 {
                        let ran = Arc::clone(&ran);
                        parbench_scheduler::spawn_on(index, move || {
                            let inner = Arc::clone(&ran);
                            parbench_scheduler::spawn(move || {
                                inner.fetch_add(1, Ordering::Relaxed);
                            });
                            ran.fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    }
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            }
        }
        assert_eq!(
            ran.load(Ordering::Relaxed),
            4 * (1 + 3 * 2),
            "round {round}: tasks spawned during the shutdown were lost"
        );
    }
}

#[test]
fn a_pool_dropped_by_its_own_worker_shuts_down() {
    for round in 0..20 {
        let pool = Arc::new(ThreadPoolBuilder::new().num_threads(2).build().unwrap());
        let ours = Arc::clone(&pool);
        let (dropped_tx, dropped) = mpsc::channel();
        let (late_tx, late) = mpsc::channel();
        pool.spawn(move || {
            // Wait until this task holds the last handle, so that its drop shuts the pool down.
            while Arc::strong_count(&ours) > 1 {
                std::thread::yield_now();
            }
            // Queued before the drop: must still run, after this task has finished.
            ours.spawn(move || late_tx.send(()).unwrap());
            drop(ours);
            dropped_tx.send(()).unwrap();
        });
        drop(pool);
        for (what, rx) in [
            ("the drop returned", &dropped),
            ("the queued task ran", &late),
        ] {
            rx.recv_timeout(PATIENCE).unwrap_or_else(|e| {
                panic!("round {round}: pool dropped by its own worker: never saw that {what} ({e})")
            });
        }
    }
}
