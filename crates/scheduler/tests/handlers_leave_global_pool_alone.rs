//! The start and exit handlers of a pool ask their own pool, never the global one: building,
//! using and dropping a pool whose handlers call the free functions leaves the global pool
//! unbuilt. (Its own test binary: the global pool is per process.)

use std::sync::{Arc, Mutex};

use parbench_scheduler::ThreadPoolBuilder;

#[test]
fn handlers_of_a_pool_do_not_build_the_global_pool() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (start, exit) = (Arc::clone(&seen), Arc::clone(&seen));
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .start_handler(move |_| {
            start
                .lock()
                .unwrap()
                .push(parbench_scheduler::current_num_threads())
        })
        .exit_handler(move |_| {
            exit.lock()
                .unwrap()
                .push(parbench_scheduler::current_num_threads())
        })
        .build()
        .unwrap();
    drop(pool);
    assert_eq!(*seen.lock().unwrap(), [3; 6]);
    // Succeeds only if nothing built the global pool yet.
    let global = ThreadPoolBuilder::new().num_threads(1).build_global();
    assert!(
        global.is_ok(),
        "the handlers built the global pool: {global:?}"
    );
}
