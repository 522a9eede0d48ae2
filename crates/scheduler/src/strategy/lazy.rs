//! Lazy splitting: how the tree strategy runs calls nested inside the pool by default.
//!
//! Inside the pool the other threads are busy with enclosing calls, so a nested call should make
//! a stealable task only when an idle thread could use one, and an idle thread should find the
//! work a sequential run would do next. [`NestedCalls::Lazy`](crate::NestedCalls) does both:
//!
//! * **Claims in index order.** The call's iterations are claimed from its shared cursor (the one
//!   `Dynamic` uses), from the low end, by every thread that takes part. A claim starts at one
//!   iteration and doubles, up to `⌈n / (4·P)⌉`, while claims run shorter than the pool's
//!   timespan; a longer claim halves the next one. Long iterations (a task kernel's subtrees) are
//!   thus claimed one at a time, in order, and short ones in a few dozen claims per call. The
//!   cursor has a cache line of its own (`LoopCall::cursor`): sharing one with the call's other
//!   fields cost `floorplan` ≈ 6 % under tree.
//! * **Lazy offers.** A thread may join the call only through a *claim offer*: a stealable task on
//!   the deque of a thread working in the call, which runs the same claiming loop. P − 1 offers are
//!   made at the start, so P iterations can always run at once (a rendezvous of P iterations
//!   finishes, as under every other strategy); after that a thread makes a new offer before a
//!   claim only when its own deque is empty — nothing there for a thief, or a thief took it — and
//!   two iterations or more are left. On a busy pool a nested call thus makes P − 1 tasks (the
//!   creator pops its unused offer back when it waits for the call) plus one per claim made while
//!   its deque was empty; an idle thread steals the oldest offer on a victim's deque, which
//!   belongs to the outermost call with work left, and claims that call's next iteration.
//!
//! Why index order: in a branch and bound (`qap`) the work a search does can depend on how early
//! good bounds are found (`floorplan`'s default input barely does: 51 175 nodes sequentially and
//! under tree, dynamic, guided, simple and rayon); a sequential run visits subtrees in index
//! order, and a parallel run that keeps close to that order prunes as much. Handing a thief the upper half of
//! what is left ([`NestedCalls::LazyHalves`](crate::NestedCalls), the previous rule, kept as an
//! ablation) sends it to the subtrees a sequential run would visit last, with the bound of the
//! start: on `qap` (n = 10, 2 threads, lower-bound evaluations counted in a probe build) that
//! searched ≈ 4 000 nodes against ≈ 3 750 in index order and ≈ 3 830 under `Dynamic`
//! (sequential: 4 376).
//!
//! The tree strategy also runs an outermost call this way when it has at most
//! `small_per_thread` iterations per thread (see [`TreeConfig`](crate::TreeConfig)).

use std::cell::Cell;
use std::ops::Range;

use super::{LoopCall, NodeRef, counted_job, drain_cursor};
use crate::registry::WorkerCtx;
use crate::timer;

/// Runs `range` by claims in index order on `threads` threads (`P − 1` claim offers made at
/// once, more lazily) and releases the caller's count of `root`.
pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    threads: usize,
) {
    let claims = Claims {
        max: range.len().div_ceil(4 * threads.max(1)).max(1),
        long: ctx.registry.timespan_ticks(),
        range,
    };
    for _ in 1..threads.min(claims.range.len()) {
        offer(ctx, call, root, claims.clone());
    }
    claim_in_order(ctx, call, root, &claims);
    // SAFETY: the caller's own count, released once.
    unsafe { root.complete() };
}

/// How a call's iterations are claimed: the range, the largest claim, and the claim duration (in
/// timer ticks) from which the next claim shrinks instead of growing.
#[derive(Clone)]
struct Claims {
    range: Range<usize>,
    max: usize,
    long: u64,
}

/// Pushes a claim offer for the call on this thread's deque and wakes a thief for it.
fn offer<'a>(ctx: &WorkerCtx<'_>, call: &'a LoopCall<'a>, count: NodeRef, claims: Claims) {
    count.add(1);
    // SAFETY: the job holds the count just added; `call` lives until the root latch is set.
    let job = unsafe { counted_job(count, move |ctx| claim_in_order(ctx, call, count, &claims)) };
    ctx.push_local_and_wake(job);
}

/// Claims and runs iterations until the call's cursor is exhausted (or the call stopped), making a
/// claim offer before a claim whenever this thread's deque is empty.
fn claim_in_order<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    count: NodeRef,
    claims: &Claims,
) {
    let size = Cell::new(1usize);
    let offer_if_deque_empty = |remaining: usize| {
        if remaining > 1 && ctx.deque_is_empty() {
            offer(ctx, call, count, claims.clone());
            size.set(1);
        }
        size.get()
    };
    if claims.max == 1 {
        // Claims cannot grow: no clock reads (a nested task call of a few iterations).
        drain_cursor(call, &claims.range, offer_if_deque_empty, |iterations| {
            call.run(iterations)
        });
        return;
    }
    // One clock read per claim: a claim's duration runs from the end of the previous one, so it
    // includes its own offer and cursor update.
    let last = Cell::new(timer::now());
    drain_cursor(call, &claims.range, offer_if_deque_empty, |iterations| {
        let more = call.run(iterations);
        let now = timer::now();
        let grow = now.wrapping_sub(last.replace(now)) < claims.long;
        size.set(if grow {
            size.get().saturating_mul(2).min(claims.max)
        } else {
            (size.get() / 2).max(1)
        });
        more
    });
}

/// The [`NestedCalls::LazyHalves`](crate::NestedCalls) ablation: runs `range` — first split into
/// `threads` stealable pieces, each of which then runs with lazy binary splitting (the upper half
/// of what is left becomes a stealable task when the deque is empty) — and releases the caller's
/// count of `root`.
pub(crate) fn run_halves(
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
