//! A cheap monotonic tick counter, converted to nanoseconds.
//!
//! The timespan phase of the tree strategy reads the clock after every batch of iterations and the
//! timespan tuner reads it once per thread per round, so the clock must cost a few cycles, not a
//! system call: `rdtsc` on x86-64, the virtual counter `cntvct_el0` on aarch64, and
//! [`std::time::Instant`] elsewhere. Ticks are only compared and subtracted; conversion to
//! nanoseconds uses a rate measured once (x86-64) or read from `cntfrq_el0` (aarch64).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Reads the tick counter.
#[inline]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions; every x86-64 CPU implements it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ticks: u64;
        // SAFETY: reading the virtual counter register is allowed at EL0 on Linux and has no
        // side effects; it touches no memory.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) ticks, options(nomem, nostack)) };
        ticks
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        epoch().elapsed().as_nanos() as u64
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Ticks per nanosecond, measured or read once.
fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(measure_rate)
}

#[cfg(target_arch = "aarch64")]
fn measure_rate() -> f64 {
    let freq: u64;
    // SAFETY: reading the counter frequency register is allowed at EL0 and touches no memory.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) freq, options(nomem, nostack)) };
    if freq == 0 {
        return measure_against_instant();
    }
    freq as f64 / 1e9
}

#[cfg(not(target_arch = "aarch64"))]
fn measure_rate() -> f64 {
    measure_against_instant()
}

/// Compares the tick counter with `Instant` over a few milliseconds (the calibration cost).
fn measure_against_instant() -> f64 {
    let window = Duration::from_millis(4);
    let start = Instant::now();
    let t0 = now();
    while start.elapsed() < window {
        std::hint::spin_loop();
    }
    let elapsed = start.elapsed();
    let ticks = now().wrapping_sub(t0);
    (ticks as f64 / elapsed.as_nanos() as f64).max(f64::MIN_POSITIVE)
}

/// Converts a tick difference to a duration.
pub(crate) fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_nanos((ticks as f64 / ticks_per_ns()) as u64)
}

/// Converts a duration to ticks (saturating).
pub(crate) fn duration_to_ticks(duration: Duration) -> u64 {
    let ticks = duration.as_nanos() as f64 * ticks_per_ns();
    if ticks >= u64::MAX as f64 {
        u64::MAX
    } else {
        ticks as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_monotonic_and_convert_back() {
        let a = now();
        let b = now();
        assert!(b >= a);
        let d = Duration::from_micros(250);
        let back = ticks_to_duration(duration_to_ticks(d));
        let diff = back.as_nanos().abs_diff(d.as_nanos());
        assert!(diff <= 2, "round trip changed {d:?} into {back:?}");
    }
}
