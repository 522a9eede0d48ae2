//! `global_pool()` called in a start handler of `build_global` panics instead of waiting for the
//! build that waits for the handler; the build goes on and its pool becomes the global pool.
//! (Its own test binary: the global pool is per process.)

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use parbench_scheduler::{ThreadPoolBuilder, global_pool};

#[test]
fn global_pool_in_a_start_handler_of_build_global_panics_instead_of_hanging() {
    let messages = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&messages);
    let (done_tx, done_rx) = mpsc::channel();
    // On its own thread, so that a regressed deadlock fails this test after a minute instead of
    // hanging it.
    std::thread::spawn(move || {
        let built = ThreadPoolBuilder::new()
            .num_threads(2)
            .start_handler(move |_| {
                let asked = panic::catch_unwind(AssertUnwindSafe(|| global_pool().num_threads()));
                let message = match asked {
                    Ok(threads) => format!("returned a pool of {threads} threads"),
                    Err(payload) => match payload.downcast_ref::<&str>() {
                        Some(message) => (*message).to_owned(),
                        None => payload
                            .downcast_ref::<String>()
                            .cloned()
                            .unwrap_or_else(|| "a panic without a message".to_owned()),
                    },
                };
                record.lock().unwrap().push(message);
            })
            .build_global();
        let _ = done_tx.send(built);
    });
    let built = done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("build_global hung: a start handler waited for the global pool");
    assert!(built.is_ok(), "build_global failed: {built:?}");
    let messages = messages.lock().unwrap().clone();
    assert_eq!(messages.len(), 2, "{messages:?}");
    for message in &messages {
        assert!(
            message.contains("global_pool() called in a start handler of build_global"),
            "{message}"
        );
    }
    // The build's pool is the global pool, and asking for it outside the handlers works.
    assert_eq!(global_pool().num_threads(), 2);
    assert_eq!(parbench_scheduler::current_num_threads(), 2);
}
