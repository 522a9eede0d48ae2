//! Lazy splitting: how the tree strategy runs calls nested inside the pool, and small outermost
//! calls.
//!
//! Inside the pool the other threads are busy with enclosing calls, so a nested call should make
//! a stealable task only when an idle thread could use one. Two rules do that; they differ in
//! what the idle thread gets.
//!
//! * **Halves** ([`NestedCalls::LazyHalves`](crate::NestedCalls); [`run_halves`]). The default
//!   for nested calls, [`NestedCalls::LazyInline`](crate::NestedCalls), runs a call inline while
//!   its thread's deque holds a task and hands what is left to this rule once it is empty. The range is first halved into P pieces, the upper ones stealable; each
//!   piece runs from its low end in batches that double from one iteration up to `⌈n / (4·P)⌉`,
//!   and before each batch, if its thread's deque is empty, the upper half of what is left
//!   becomes a stealable task. A thief thus takes a part of the call for itself, and the two
//!   threads work apart until one of them runs dry.
//! * **Claims in index order** ([`NestedCalls::Lazy`](crate::NestedCalls); [`run`]). The call's
//!   iterations are claimed from its shared cursor (the one `Dynamic` uses), from the low end, by
//!   every thread that takes part. A claim starts at one iteration and doubles, up to
//!   `⌈n / (4·P)⌉`, while claims run shorter than the pool's timespan; a longer claim halves the
//!   next one. The cursor has a cache line of its own (`LoopCall::cursor`): sharing one with the
//!   call's other fields cost `floorplan` ≈ 6 % under tree. A thread may join the call only
//!   through a *claim offer*: a stealable task on the deque of a thread working in the call,
//!   which runs the same claiming loop. P − 1 offers are made at the start, so P iterations can
//!   always run at once (a rendezvous of P iterations finishes, as under every other strategy);
//!   after that a thread makes a new offer before a claim only when its own deque is empty —
//!   nothing there for a thief, or a thief took it — and two iterations or more are left. On a
//!   busy pool a nested call thus makes P − 1 tasks (the creator takes its unused offer back when
//!   its claims are done; see [`run`]) plus one per claim made while its deque was empty; an idle
//!   thread steals the oldest offer on a victim's deque, which belongs to the outermost call with
//!   work left, and claims that call's next iteration.
//!
//! An outermost call with at most `small_per_thread` iterations per thread (see
//! [`TreeConfig`](crate::TreeConfig)) always runs by claims in index order. In a branch and bound
//! (`qap`) the work a search does depends on how early good bounds are found; a sequential run
//! visits subtrees in index order, and a parallel run that keeps close to that order prunes as
//! much. Sending a thief to the upper half of the outermost call sends it to the subtrees a
//! sequential run would visit last, with the bound of the start: on `qap` (n = 10, 2 threads,
//! lower-bound evaluations counted in a probe build) halves everywhere searched ≈ 4 000 nodes
//! against ≈ 3 750 in index order and ≈ 3 830 under `Dynamic` (sequential: 4 376).
//!
//! In *nested* calls index order costs more than it saves: when both threads are in one call,
//! they claim from the same cursor one iteration at a time, and each claim is preceded by an
//! offer (the thread's previous one was taken). On a 2-vCPU AMD EPYC VM (27 Nov 2026, 20
//! alternating processes per rule, `--kernels floorplan,nqueens,qap --threads 2 --rounds 6`),
//! tree / fastest other was 1.075, 1.001 and 0.978 on floorplan, nqueens and qap with index
//! order in every call (the default until then), 0.961, 1.002 and 1.043 with halves in every
//! call, and 0.954, 0.995 and 0.951 with halves in nested calls and index order in the outermost
//! one — the rule kept. (On another AMD EPYC VM on 26 Nov, with the scheduler of fbbf60f, the
//! kept rule and index order were level: against the fastest of static, dynamic, guided and
//! simple, 0.994, 0.966 and 0.963 against 0.993, 0.988 and 0.968, 40 processes.)

use std::cell::Cell;
use std::ops::Range;

use super::{LoopCall, NodeRef, counted_job, drain_cursor};
use crate::WaitKind;
use crate::job::JobRef;
use crate::latch::Latch;
use crate::registry::{WorkerCtx, with_current_ctx};
use crate::timer;

/// Runs `range` by claims in index order on `threads` threads (`P − 1` claim offers made at
/// once, more lazily), releases the caller's count of `root` and returns when the call is
/// complete; `latch` is the root's.
///
/// On a busy pool a nested call's first offer is usually its only task, and the caller takes it
/// back when its own claims have exhausted the cursor. So that offer costs as little as it can:
/// - it lives in this frame rather than on the heap (an allocation and a free fewer), which is
///   why this function waits for the call itself: the offer's job holds a count of `root`, so
///   the call completes only after the job has run, and the frame is left only after that;
/// - the offers' counts are taken before any offer is published, by a plain store;
/// - taken back unrun (it would find nothing left to claim), its count is released together
///   with the caller's own, in one read-modify-write; when that is the last, the call is
///   complete without the latch being set or waited for.
///
/// That is three atomic read-modify-writes fewer per call (each of which waits for the store
/// buffer to drain on x86), of which nqueens makes ≈ 450 per run.
pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    threads: usize,
    latch: &Latch,
) {
    let claims = Claims {
        max: range.len().div_ceil(4 * threads.max(1)).max(1),
        long: ctx.registry.timespan_ticks(),
        range,
    };
    let offers = threads.min(claims.range.len()).saturating_sub(1);
    // SAFETY: no task of the call has been published yet, so nobody else can reach the root.
    unsafe { root.add_unshared(offers) };
    let first = FrameOffer {
        call,
        count: root,
        claims: &claims,
    };
    let first_job = (offers > 0).then(|| {
        // SAFETY: the job holds one of the counts just taken, and `first` lives until this frame
        // is left, which is after the call completed: that needs the job's count, released by
        // the job's last step (or below, if it is taken back unrun).
        let job = unsafe { first.as_job_ref() };
        ctx.push_local_and_wake(job);
        job
    });
    for _ in 1..offers {
        push_offer(ctx, call, root, claims.clone());
    }
    claim_in_order(ctx, call, root, &claims);
    let mut own = 1;
    if let Some(job) = first_job {
        match ctx.pop_local() {
            // Nobody took it, and our claims ended because the cursor is exhausted or the call
            // stopped: run, it would claim nothing.
            Some(popped) if popped == job => own = 2,
            // Something this thread pushed later (another offer of the call, when P > 2), or
            // older work if this thread itself ran the offer in a nested wait: back on top.
            Some(other) => ctx.push_local(other),
            None => {}
        }
    }
    // SAFETY: the caller's own count, and the first offer's if it was taken back, each released
    // once; this thread is the latch's waiter.
    if unsafe { root.release_as_waiter(own) } {
        return;
    }
    ctx.wait_for(latch, WaitKind::Loop);
}

/// A claim offer whose data lives in the frame of [`run`] (which waits for the call).
struct FrameOffer<'c, 'a> {
    call: &'c LoopCall<'a>,
    count: NodeRef,
    claims: &'c Claims,
}

impl FrameOffer<'_, '_> {
    /// # Safety
    /// A count of `self.count` must be held for the job, and `self` must stay alive until the
    /// job has run (its owner waits for the latch that count holds back).
    unsafe fn as_job_ref(&self) -> JobRef {
        unsafe fn execute(pointer: *const ()) {
            // SAFETY: `pointer` is a `FrameOffer` that stays alive until `count` is released
            // below (see `as_job_ref`); the lifetimes are the frame's, erased for the queue.
            let this = unsafe { &*(pointer as *const FrameOffer<'_, '_>) };
            let count = this.count;
            with_current_ctx(|ctx| claim_in_order(ctx, this.call, count, this.claims));
            // SAFETY: the job's count, released once; nothing of `this` is touched after it,
            // since the release may let the owner leave the frame that holds it.
            unsafe { count.complete() };
        }
        // SAFETY: the data outlives the job by the caller's contract; `LoopCall` and `Claims`
        // are `Sync`, and `NodeRef` is `Send`, so the job may run on any thread of the pool.
        unsafe { JobRef::from_raw(self as *const Self as *const (), execute) }
    }
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
    push_offer(ctx, call, count, claims);
}

/// [`offer`] for a count already taken for it.
fn push_offer<'a>(ctx: &WorkerCtx<'_>, call: &'a LoopCall<'a>, count: NodeRef, claims: Claims) {
    // SAFETY: the job holds a count taken for it; `call` lives until the call completes.
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

/// [`NestedCalls::LazyHalves`](crate::NestedCalls), and what a `LazyInline` call has left once its
/// thread's deque is empty: runs `range` — first split into
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
