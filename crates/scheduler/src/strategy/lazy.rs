//! Lazy binary splitting: how the tree strategy runs calls nested inside the pool by default.
//!
//! The range is first halved into P stealable pieces (P threads), so that P iterations can always
//! run at the same time (a rendezvous of P iterations finishes, as under every other strategy).
//! The thread holding a piece runs it from its low end in batches. Before each batch it looks at
//! its own deque: if that is empty, no thief can find work on this thread, so it hands out the
//! upper half of what is left as one stealable task (and wakes a sleeping worker to take it).
//! If the deque still holds a task — an upper half of this call, or of an enclosing one, which
//! a thief would take first because it is the oldest and largest — splitting would only add
//! tasks nobody needs, so the thread goes on. Whoever runs a handed-out half does the same.
//!
//! So a nested call on a fully busy pool creates P − 1 tasks, plus a few while its thread's deque
//! is empty, instead of one per piece, while an idle thread still finds the largest unstarted
//! piece within one batch. Batches start at one iteration (task kernels: one iteration is one
//! search subtree) and double while no split is needed, up to `⌈n / (4·P)⌉` iterations, so a
//! long loop reads its deque only a few dozen times.
//!
//! The tree strategy also runs an outermost call this way when it has at most
//! `small_per_thread` iterations per thread (see [`TreeConfig`](crate::TreeConfig)).

use std::ops::Range;

use super::{LoopCall, NodeRef, counted_job};
use crate::registry::WorkerCtx;

/// Runs `range` — first split into `threads` stealable pieces, each of which then runs with
/// lazy binary splitting — and releases the caller's count of `root`.
pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    threads: usize,
) {
    let piece = range.len().div_ceil(threads.max(1));
    let max_batch = range.len().div_ceil(4 * threads.max(1)).max(1);
    split_then_run_lazily(ctx, call, root, range, piece, max_batch);
    // SAFETY: the caller's own count, released once.
    unsafe { root.complete() };
}

/// Halves `range` down to `piece` iterations, every upper half a stealable task, and runs the
/// lowest piece lazily.
fn split_then_run_lazily<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    count: NodeRef,
    range: Range<usize>,
    piece: usize,
    max_batch: usize,
) {
    let mut range = range;
    while range.len() > piece && !call.stopped() {
        let mid = range.start + range.len().div_ceil(2);
        let upper = mid..range.end;
        count.add(1);
        // SAFETY: the job holds the count just added; `call` lives until the root latch is set.
        let job = unsafe {
            counted_job(count, move |ctx| {
                split_then_run_lazily(ctx, call, count, upper, piece, max_batch);
            })
        };
        ctx.push_local_and_wake(job);
        range.end = mid;
    }
    run_lazily(ctx, call, count, range, max_batch);
}

fn run_lazily<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    count: NodeRef,
    range: Range<usize>,
    max_batch: usize,
) {
    let mut range = range;
    let mut batch = 1usize;
    while !range.is_empty() {
        if range.len() > 1 && ctx.deque_is_empty() {
            let mid = range.start + range.len().div_ceil(2);
            let upper = mid..range.end;
            count.add(1);
            // SAFETY: the job holds the count just added; `call` lives until the root latch is
            // set.
            let job = unsafe {
                counted_job(count, move |ctx| {
                    run_lazily(ctx, call, count, upper, max_batch);
                })
            };
            ctx.push_local_and_wake(job);
            range.end = mid;
            batch = 1;
        }
        let end = range.end.min(range.start.saturating_add(batch));
        if !call.run(range.start..end) {
            return;
        }
        range.start = end;
        batch = batch.saturating_mul(2).min(max_batch);
    }
}
