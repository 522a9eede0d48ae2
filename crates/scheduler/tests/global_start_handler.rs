//! A start handler given to `build_global` may use the free functions: it runs as a worker of the
//! pool being built, so it neither waits for that build (which waits for it) nor builds another
//! global pool. (Its own test binary: the global pool is per process.)

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use parbench_scheduler::ThreadPoolBuilder;

#[test]
fn build_global_with_a_start_handler_that_asks_for_the_pool_returns_ok() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let (done_tx, done_rx) = mpsc::channel();
    // The scenario runs on its own thread so that a regressed deadlock fails this test after a
    // minute instead of hanging it.
    std::thread::spawn(move || {
        let built = ThreadPoolBuilder::new()
            .num_threads(2)
            .start_handler(move |index| {
                let size = parbench_scheduler::current_num_threads();
                let me = parbench_scheduler::current_thread_index();
                record.lock().unwrap().push((index, me, size));
            })
            .build_global();
        let _ = done_tx.send(built);
    });
    let built = done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("build_global hung: its start handlers waited for the global pool");
    assert!(built.is_ok(), "build_global failed: {built:?}");
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, [(0, Some(0), 2), (1, Some(1), 2)]);
    assert_eq!(parbench_scheduler::current_num_threads(), 2);
}
