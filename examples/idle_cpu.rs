//! How much CPU an idle pool burns: builds a pool, runs one loop, lets the spin window pass, then
//! measures the process's CPU time (getrusage) over one idle second. Target: ≤ 1 % of one core.
//!
//! Run: `cargo run --release --example idle_cpu [-- THREADS]`

use std::time::{Duration, Instant};

use parbench::scheduler::{DEFAULT_SPIN_BEFORE_PARK, ThreadPoolBuilder};

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass and has no other effect.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn main() {
    let threads = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let pool = match ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(2);
        }
    };
    pool.parallel_for(0..100_000, |i| {
        std::hint::black_box(i);
    });
    // Let the spin window pass (with a wide margin) before measuring.
    std::thread::sleep(DEFAULT_SPIN_BEFORE_PARK * 10 + Duration::from_millis(10));
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    let percent = 100.0 * cpu.as_secs_f64() / wall.as_secs_f64();
    println!(
        "idle pool of {threads} threads: {:.3} ms CPU in {:.3} s = {percent:.3} % of one core (target <= 1 %)",
        cpu.as_secs_f64() * 1e3,
        wall.as_secs_f64()
    );
    drop(pool);
}
