//! A deliberate data race, for scripts/test-tsan.sh to check that ThreadSanitizer is really
//! watching the pool's threads: the script runs this ignored test on its own and fails unless
//! TSan reports the race. A sanitizer that silently stopped instrumenting (a changed flag, an
//! optimization level, a toolchain update) would otherwise turn the whole TSan step into a test
//! that cannot fail. Never run by a plain `cargo test`: the race is undefined behaviour.

use std::cell::UnsafeCell;

use parbench_scheduler::ThreadPoolBuilder;

/// A counter that every thread may write without synchronization.
struct Unsynchronized(UnsafeCell<u64>);

// SAFETY: deliberately unsound (it lets threads race on the cell); it exists only for the
// canary below, which is run under ThreadSanitizer to be reported.
unsafe impl Sync for Unsynchronized {}

impl Unsynchronized {
    fn cell(&self) -> *mut u64 {
        self.0.get()
    }
}

#[test]
#[ignore = "a deliberate data race: run only by scripts/test-tsan.sh, which expects ThreadSanitizer to report it"]
fn two_workers_race_on_one_counter() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let counter = Unsynchronized(UnsafeCell::new(0));
    // `broadcast` runs the closure once on each of the two workers, with nothing ordering the
    // two runs against each other: their unsynchronized increments race.
    pool.broadcast(|_| {
        let cell = counter.cell();
        // SAFETY: none; this is the race the canary exists for.
        unsafe { cell.write_volatile(cell.read_volatile() + 1) };
    });
    // SAFETY: the broadcast has returned, so no worker touches the cell any more.
    let total = unsafe { *counter.cell() };
    assert!((1..=2).contains(&total));
}
