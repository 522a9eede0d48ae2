//! `join`: fork-join of two closures.
//!
//! The second closure is pushed as a stealable job on the caller's own deque (waking a sleeping
//! worker to steal it) and the first runs at once. Afterwards the caller pops its deque: if the
//! job is still there nobody stole it and it runs inline; otherwise the caller executes other
//! tasks until the thief has finished it. Either way, both closures have finished before `join`
//! returns or unwinds, since the second one borrows from this frame.

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
        return (a(), b());
    }
    if registry.num_threads() == 1 {
        // Nobody could steal `b`: run both here, in the pool's context, `b` only if `a` returned.
        return registry.in_context(|_| (a(), b()));
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
                    // Not stolen. If `a` panicked, `b` never starts.
                    return match result_a {
                        Ok(ra) => (ra, job_b.run_inline()),
                        Err(payload) => panic::resume_unwind(payload),
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
        let rb = job_b.into_result();
        match result_a {
            Ok(ra) => (ra, rb.into_value()),
            Err(payload) => panic::resume_unwind(payload),
        }
    })
}
