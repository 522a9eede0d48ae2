//! `Simple { grain }`: recursive halving down to `grain` iterations, every upper half a stealable
//! task (TBB's `simple_partitioner`). Whoever runs a piece splits it further, so idle threads find
//! large pieces at the old end of busy threads' deques.

use std::ops::Range;

use super::{LoopCall, NodeRef, counted_job};
use crate::registry::WorkerCtx;

pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    grain: usize,
) {
    split(ctx, call, root, range, grain.max(1));
    // SAFETY: the caller's own count, released once.
    unsafe { root.complete() };
}

fn split<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    count: NodeRef,
    range: Range<usize>,
    grain: usize,
) {
    let mut range = range;
    while range.len() > grain && !call.stopped() {
        let mid = range.start + range.len() / 2;
        let upper = mid..range.end;
        count.add(1);
        // SAFETY: the job holds the count just added; `call` lives until the root latch is set.
        let job = unsafe { counted_job(count, move |ctx| split(ctx, call, count, upper, grain)) };
        // Nobody else is known to be looking for this task, so wake a sleeping worker.
        ctx.push_local_and_wake(job);
        range.end = mid;
    }
    call.run(range);
}
