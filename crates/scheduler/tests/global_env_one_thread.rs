//! `PARBENCH_NUM_THREADS=1` gives the default global pool one thread, as any other positive
//! count gives it that many. (Its own test binary: it changes the process environment, and the
//! global pool is per process.)

use parbench_scheduler::NUM_THREADS_ENV;

#[test]
fn an_env_count_of_one_sizes_the_global_pool() {
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe { std::env::set_var(NUM_THREADS_ENV, "1") };
    assert_eq!(parbench_scheduler::current_num_threads(), 1);
}
