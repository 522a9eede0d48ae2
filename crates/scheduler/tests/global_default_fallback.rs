//! When `PARBENCH_NUM_THREADS` asks for more threads than the process can start, the default
//! global pool has the available parallelism instead (not one thread). (Its own test binary: it
//! changes the process environment, and the global pool is per process.)

use parbench_scheduler::{BuildError, NUM_THREADS_ENV, ThreadPoolBuilder};

#[test]
fn an_env_count_that_cannot_start_falls_back_to_the_available_parallelism() {
    if parbench_scheduler::thread_capacity(None).is_none() {
        eprintln!("SKIPPED: thread limits cannot be read here; a huge count would be attempted");
        return;
    }
    // Far beyond any thread limit, so `build` refuses it before starting a thread.
    let huge = usize::MAX.to_string();
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe { std::env::set_var(NUM_THREADS_ENV, &huge) };
    // An explicit build reports the error...
    assert!(
        matches!(
            ThreadPoolBuilder::new().build(),
            Err(BuildError::TooManyThreads { .. })
        ),
        "PARBENCH_NUM_THREADS={huge} did not fail the build"
    );
    // ...the default global pool falls back.
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(parbench_scheduler::current_num_threads(), parallelism);
}
