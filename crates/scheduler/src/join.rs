//! `join`: fork-join of two closures.
//!
//! The second closure is pushed as a stealable job on the caller's own deque (waking a sleeping
//! worker to steal it) and the first runs at once. Afterwards the caller pops its deque: if the
//! job is still there nobody stole it and it runs inline; otherwise the caller executes other
//! tasks until the thief has finished it. Either way, both closures have finished before `join`
//! returns or unwinds, since the second one borrows from this frame.
//!
//! Both closures always run, each exactly once, also when the first one panics (as in rayon):
//! its panic is caught, the second closure still runs (or is waited for, if stolen), and only
//! then is the first closure's panic re-raised. A panic of the second closure propagates only if
//! the first one returned; of two panics the first closure's wins.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use crate::job::StackJob;
use crate::registry::Registry;

pub(crate) fn join<A, B, RA, RB>(registry: &Registry, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if crate::registry::must_run_sequentially() {
        return registry.in_sequential_context(|| join_in_order(a, b));
    }
    if registry.num_threads() == 1 {
        // Nobody could steal `b`: run both here, in the pool's context.
        return registry.in_context(|_| join_in_order(a, b));
    }
    registry.in_context(|ctx| {
        let job_b = StackJob::new(b);
        // SAFETY: `job_b` outlives its execution: below we either take it back or wait for its
        // latch before leaving this frame.
        let job_b_ref = unsafe { job_b.as_job_ref() };
        ctx.push_local_and_wake(job_b_ref);
        let result_a = panic::catch_unwind(AssertUnwindSafe(a));
        loop {
            if job_b.latch.probe() {
                break;
            }
            match ctx.pop_local() {
                Some(job) if job == job_b_ref => {
                    // Not stolen: `b` runs here, also after a panic of `a`.
                    return match result_a {
                        Ok(ra) => (ra, job_b.run_inline()),
                        Err(payload) => {
                            let result_b =
                                panic::catch_unwind(AssertUnwindSafe(|| job_b.run_inline()));
                            resume_first(payload, result_b)
                        }
                    };
                }
                // SAFETY: every job in the queues is executed exactly once, by whoever takes it.
                Some(job) => unsafe { job.execute() },
                None => {
                    ctx.wait_for(&job_b.latch, crate::WaitKind::Join);
                    break;
                }
            }
        }
        // Stolen, and the thief has finished it (it caught any panic of `b` into the result).
        let rb = job_b.into_result();
        match result_a {
            Ok(ra) => (ra, rb.into_value()),
            Err(payload) => resume_first(payload, rb),
        }
    })
}

/// `join` on the calling thread alone: `a`, then `b` — which runs even if `a` panicked, as it
/// would under the parallel path.
fn join_in_order<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    match panic::catch_unwind(AssertUnwindSafe(a)) {
        Ok(ra) => (ra, b()),
        Err(payload) => resume_first(payload, panic::catch_unwind(AssertUnwindSafe(b))),
    }
}

/// Re-raises `a`'s panic after `b` has finished; `b`'s result, or its panic, is dropped first.
fn resume_first<T>(payload: Box<dyn Any + Send>, b: T) -> ! {
    drop(b);
    panic::resume_unwind(payload)
}

#[cfg(test)]
mod tests {
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::{ThreadPool, ThreadPoolBuilder, Timespan};

    fn pool(threads: usize) -> ThreadPool {
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .timespan(Timespan::Fixed(Duration::from_micros(5)))
            .build()
            .unwrap()
    }

    fn message(payload: Box<dyn Any + Send>) -> &'static str {
        payload.downcast_ref::<&str>().copied().unwrap_or("?")
    }

    /// How a `join` whose `a` panics with "a" ended: how many times `b` ran, and the message
    /// `join` panicked with.
    #[derive(Debug, PartialEq)]
    struct Outcome {
        b_runs: usize,
        panic: &'static str,
    }

    /// `join(a, b)` on `registry`, where `a` panics with "a" — once `before_panic` returned, given
    /// the number of times `b` has started — and `b` panics with "b" if `b_panics`.
    fn join_with_panicking_a(
        registry: &Registry,
        b_panics: bool,
        before_panic: impl Fn(&AtomicUsize) + Sync,
    ) -> Outcome {
        let b_runs = AtomicUsize::new(0);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            join(
                registry,
                || -> u8 {
                    before_panic(&b_runs);
                    panic!("a")
                },
                || -> u8 {
                    // Relaxed: a count read after `join` ended, which waited for `b`.
                    b_runs.fetch_add(1, Ordering::Relaxed);
                    if b_panics {
                        panic!("b");
                    }
                    2
                },
            )
        }));
        Outcome {
            b_runs: b_runs.into_inner(),
            panic: result.map_or_else(message, |_| "no panic"),
        }
    }

    const A_PANICKED: Outcome = Outcome {
        b_runs: 1,
        panic: "a",
    };

    #[test]
    fn one_thread_pool_runs_b_once_when_a_panics_and_raises_a_panic() {
        let pool = pool(1);
        for b_panics in [false, true] {
            // From outside the pool (a guest) and from its worker.
            let outside = join_with_panicking_a(pool.registry(), b_panics, |_| {});
            assert_eq!(outside, A_PANICKED, "outside, b panics: {b_panics}");
            let on_worker =
                pool.broadcast(|_| join_with_panicking_a(pool.registry(), b_panics, |_| {}));
            assert_eq!(
                on_worker,
                [A_PANICKED],
                "on the worker, b panics: {b_panics}"
            );
        }
    }

    /// `b` cannot be stolen here: `join` runs on one worker of a two-thread pool once the other
    /// worker spins in a task, which it leaves only after `join` has returned, and no thread
    /// outside the pool takes part (the broadcast is made from a detached task); so `join` takes
    /// `b` back from its deque.
    #[test]
    fn two_thread_pool_runs_an_unstolen_b_once_when_a_panics_and_raises_a_panic() {
        let pool = pool(2);
        for b_panics in [false, true] {
            let (sender, receiver) = mpsc::channel();
            pool.spawn(move || {
                let (spinning, joined) = (AtomicBool::new(false), AtomicBool::new(false));
                // Relaxed throughout: the two flags only hold the workers back; nothing is
                // published through them (the outcome is returned by the broadcast).
                let outcomes = crate::broadcast(|ctx| {
                    if ctx.index() == 0 {
                        while !spinning.load(Ordering::Relaxed) {
                            std::thread::yield_now();
                        }
                        let registry = Registry::current().unwrap();
                        let outcome = join_with_panicking_a(registry, b_panics, |_| {});
                        joined.store(true, Ordering::Relaxed);
                        Some(outcome)
                    } else {
                        spinning.store(true, Ordering::Relaxed);
                        while !joined.load(Ordering::Relaxed) {
                            std::thread::yield_now();
                        }
                        None
                    }
                });
                sender.send(outcomes).unwrap();
            });
            let outcomes = receiver.recv().unwrap();
            assert_eq!(outcomes, [Some(A_PANICKED), None], "b panics: {b_panics}");
        }
    }

    /// Here `a` panics only after `b` has started, on the other worker (or, should no thief come
    /// within 30 s on a loaded machine, once `b` runs after `a`'s panic): `join` waits for it.
    #[test]
    fn two_thread_pool_waits_for_a_stolen_b_when_a_panics_and_raises_a_panic() {
        let pool = pool(2);
        for b_panics in [false, true] {
            let outcome = join_with_panicking_a(pool.registry(), b_panics, |b_runs| {
                let start = Instant::now();
                // Relaxed: only waits for `b` to start; its count is read after `join`.
                while b_runs.load(Ordering::Relaxed) == 0
                    && start.elapsed() < Duration::from_secs(30)
                {
                    std::thread::yield_now();
                }
            });
            assert_eq!(outcome, A_PANICKED, "b panics: {b_panics}");
        }
    }

    /// From outside a two-thread pool, `b` is stolen or not depending on the race with the
    /// woken worker; either way it runs once and `a`'s panic propagates.
    #[test]
    fn two_thread_pool_runs_b_once_when_a_panics_whether_stolen_or_not() {
        let pool = pool(2);
        for round in 0..100 {
            let b_panics = round % 2 == 1;
            let outcome = join_with_panicking_a(pool.registry(), b_panics, |_| {});
            assert_eq!(outcome, A_PANICKED, "round {round}, b panics: {b_panics}");
        }
    }

    /// The sequential path (a one-thread pool, or a call nested deeper than `MAX_NESTED_WAITS`).
    #[test]
    fn join_in_order_runs_b_once_when_a_panics_and_raises_a_panic() {
        for b_panics in [false, true] {
            let b_runs = AtomicUsize::new(0);
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                join_in_order(
                    || -> u8 { panic!("a") },
                    || {
                        // Relaxed: one thread.
                        b_runs.fetch_add(1, Ordering::Relaxed);
                        if b_panics {
                            panic!("b");
                        }
                    },
                )
            }));
            let outcome = Outcome {
                b_runs: b_runs.into_inner(),
                panic: result.map_or_else(message, |_| "no panic"),
            };
            assert_eq!(outcome, A_PANICKED, "b panics: {b_panics}");
        }
        assert_eq!(join_in_order(|| 1, || 2), (1, 2));
    }
}
