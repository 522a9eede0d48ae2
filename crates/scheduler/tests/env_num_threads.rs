//! `PARBENCH_NUM_THREADS` sets the default thread count; invalid values are ignored. (Its own test
//! binary: it changes the process environment.)

use parbench_scheduler::{NUM_THREADS_ENV, ThreadPoolBuilder};

fn with_env(value: &str) -> usize {
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe { std::env::set_var(NUM_THREADS_ENV, value) };
    ThreadPoolBuilder::new().build().unwrap().num_threads()
}

#[test]
fn env_variable_sets_the_default_and_bad_values_are_ignored() {
    let fallback = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(with_env("3"), 3);
    assert_eq!(with_env(" 5 "), 5);
    assert_eq!(with_env("0"), fallback);
    assert_eq!(with_env("many"), fallback);
    // An explicit num_threads wins over the environment.
    // SAFETY: as above.
    unsafe { std::env::set_var(NUM_THREADS_ENV, "3") };
    assert_eq!(
        ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
            .num_threads(),
        2
    );
    // The global pool follows it too.
    assert_eq!(parbench_scheduler::current_num_threads(), 3);
}
