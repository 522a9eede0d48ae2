//! Time as the harness sees it, behind a trait so that tests can replace it.
//!
//! The harness reads time (to stamp arrivals, starts and completions) and waits for it (the
//! generator until a request's scheduled time, a worker until a request exists). Both go through
//! [`Clock`]; [`MonotonicClock`] is the real one. A test clock can make every timestamp exact,
//! which is how the queue/service/sojourn bookkeeping is tested without asserting on timing.

use std::time::{Duration, Instant};

/// A source of nanosecond timestamps shared by the generator and the workers.
///
/// Implementations must be monotonic per thread. A worker calls [`Clock::wait_until_ns`] with the
/// time the generator enqueued a request (read from this clock) before stamping its start: with a
/// real clock that time is past, so this returns at once; a simulated clock uses it to move a
/// worker's time forward to the arrival.
///
/// ```
/// use parbench_kernels::latency::{Clock, MonotonicClock};
///
/// let clock = MonotonicClock::new();
/// let start = clock.now_ns();
/// clock.wait_until_ns(start + 100_000);
/// assert!(clock.now_ns() >= start + 100_000);
/// ```
pub trait Clock: Sync {
    /// Nanoseconds since an arbitrary fixed origin.
    fn now_ns(&self) -> u64;
    /// Returns once [`Clock::now_ns`] is at least `deadline_ns`.
    fn wait_until_ns(&self, deadline_ns: u64);
}

/// Below this much time to go, [`MonotonicClock`] stops sleeping and polls: a sleep can overshoot
/// by tens of microseconds (timer slack, scheduling), which would add to every queue time.
const POLL_WINDOW: Duration = Duration::from_micros(100);

/// The real clock: [`Instant`] since construction. Waits sleep until shortly before the
/// deadline, then poll while yielding the CPU (so that, when the generator shares a CPU with a
/// worker, the worker keeps running).
///
/// ```
/// use parbench_kernels::latency::{Clock, MonotonicClock};
///
/// let clock = MonotonicClock::new();
/// let a = clock.now_ns();
/// assert!(clock.now_ns() >= a);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        // u64 nanoseconds last 584 years: the truncation cannot happen in a run.
        self.origin.elapsed().as_nanos() as u64
    }

    fn wait_until_ns(&self, deadline_ns: u64) {
        loop {
            let now = self.now_ns();
            if now >= deadline_ns {
                return;
            }
            let remaining = Duration::from_nanos(deadline_ns - now);
            if remaining > POLL_WINDOW {
                std::thread::sleep(remaining - POLL_WINDOW);
            } else {
                std::thread::yield_now();
            }
        }
    }
}
