//! A small multi-threaded program for the `corun` tests, compiled by them with `rustc`:
//! `late_threads EARLY LATE_AFTER_MS HOLD_MS` starts EARLY threads at once and one more thread
//! LATE_AFTER_MS later; every thread does light work (short spins between sleeps) until HOLD_MS
//! after the start, then the whole process exits with code 0.

use std::time::{Duration, Instant};

fn work_until(end: Instant) {
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: late_threads EARLY LATE_AFTER_MS HOLD_MS"))
        .collect();
    let [early, late_after, hold] = args[..] else {
        panic!("usage: late_threads EARLY LATE_AFTER_MS HOLD_MS");
    };
    let start = Instant::now();
    let end = start + Duration::from_millis(hold);
    for _ in 0..early {
        std::thread::spawn(move || work_until(end));
    }
    std::thread::sleep(Duration::from_millis(late_after));
    std::thread::spawn(move || work_until(end));
    work_until(end);
    std::process::exit(0);
}
