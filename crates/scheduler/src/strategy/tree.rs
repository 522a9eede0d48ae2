//! `Tree`: the study's tree distribution with timespan-delayed, adaptively sized balancing tasks.
//!
//! A call over P threads starts with the caller holding iterations `[l, r)` and the slot range
//! `[0, P)`. Each thread first *distributes*, then *runs*:
//!
//! 1. **Distribute.** While its slot range `[L, R)` has more than one slot, the thread splits it
//!    into `K` contiguous parts of near-equal size (larger first), hands every part but the first
//!    to that part's first thread — together with that part's iterations — by `spawn_on`, and keeps
//!    the first part, which it splits again. Each thread's iterations are fixed from the start: slot
//!    `s` owns block `s` of `[l, r)` split into P blocks differing by at most one, so the initial
//!    distribution is exactly uniform. A thread is reached after at most `⌈log_K P⌉` levels of
//!    hand-off ([`tree_handoffs`] computes the shape as a pure function).
//! 2. **Run for a timespan.** The thread runs its own block in growing batches (the next one aimed
//!    at the end of the timespan), reading the clock between batches, until the timespan has passed. It creates no stealable
//!    task meanwhile: on a balanced load every thread is then busy with its own block and no
//!    stealing or task overhead happens at all.
//! 3. **Balance.** The number of iterations it ran in the timespan is the *adaptive grain*. It then
//!    runs what is left from its low end, one grain at a time, and whenever its deque is empty
//!    (nothing there for an idle thread, or a thief took it) and at least two grains are left, it
//!    puts a balancing task on its own deque, where idle threads steal it. The task is an *offer
//!    to share*: the thief that runs it takes chunks from the high end of what is left, each a
//!    `2·P`-th of what is left at that moment but not below an eighth of the owner's grain
//!    (guided's rule, from the other end), and runs them until it meets the owner
//!    (`split_range.rs`). A new offer is made only once the previous one is gone, and only while
//!    fewer than `P − 1` of them have been stolen: a thief stays on the share until nothing is
//!    left, so after that every other thread of the call works on it and nobody could take
//!    another (with two threads, no offer after the first is stolen). On a balanced load a thread
//!    makes one task, finds it unstolen at the end and drops it. A thief makes nothing of what it takes: no timespan, no
//!    grain, no offers. It used to take the upper half of what was left as a piece of its own,
//!    with all three, and those were what tree paid over guided at every split (see
//!    `take_from_the_top`).
//! 4. **Finish together.** While some thread of the call is out of work — it finished its work of
//!    the call and has not taken any more since — a thread whose last work is the final two grains
//!    of its share offers them too (down to single iterations) and runs them in steps of an eighth
//!    of a grain, so the idle thread gets its chunks within a step: the threads' ends differ by
//!    about a step, not a grain. This matters when a participant starts late (a worker woken late
//!    runs its share past the caller's end).
//!    Once the idle thread has taken a chunk it is busy again and the small offers stop: on an
//!    irregular loop, whose first thread to finish its share steals early, they would otherwise
//!    go on for the rest of the call. In a harness of
//!    spmv-triangle's loop (300 calls per process, processes alternating with the sticky rule)
//!    tree / guided went from 1.030 to 1.019 and from 1.028 to 1.024 (10 and 12 pairs); in
//!    default sweeps the difference is inside the noise (paired new / old 0.977 and 1.049 in two
//!    sets of 16 and 12 processes).
//!    The owner's last two grains also run in those steps once a thief has taken a chunk from
//!    the top of its share (`SplitRange::taken_from_top`): the two meet in the middle, and a
//!    grain-sized last claim would leave the thief waiting for it. The deque test above misses
//!    this case with more than two threads: after a thief took the first offer, the owner's
//!    next one stays on its deque while no third thread is idle, so the deque is not empty again.
//!    (At P = 2 the owner's second offer did the same until the owner stopped making offers
//!    nobody can take.) In full default sweeps with `--pin compact` (two batches of 10 processes per build,
//!    alternating), tree / guided on spmv-triangle went from 1.030 to 0.996 and from 1.023 to
//!    1.009, with every other kernel level.
//!
//! This is how an *outermost* call of more than `small_per_thread · P` iterations runs. A call
//! made from inside the pool (a loop body, a task) runs inline while its thread's deque holds a
//! task and by lazy binary splitting once it is empty instead, and a
//! smaller outermost one by lazy claims in index order (`lazy.rs`;
//! [`NestedCalls`](crate::NestedCalls)), unless the config asks for the tree there too. A pool of
//! one thread runs every call inline.
//!
//! Completion is tracked by the completion tree of `latch.rs`: a thread that hands out work owns a
//! node counting its own share, its children's shares and its balancing tasks, so no counter is
//! touched per iteration and no single counter is shared by all threads.

use std::ops::Range;

use std::sync::Arc;

use super::split_range::SplitRange;
use super::{Grain, LoopCall, NodeRef, TreeConfig, TreeTimespan, block};
use crate::job::HeapJob;
use crate::latch::CountNode;
use crate::registry::{WorkerCtx, with_current_ctx};
use crate::timer;
use crate::unwind::abort_on_unwind;

/// One hand-off of the tree distribution: `from` gives the slot range `slots` to `slots.start`.
///
/// ```
/// use parbench_scheduler::{tree_handoffs, Handoff};
/// assert_eq!(tree_handoffs(2, 2), vec![Handoff { from: 0, slots: 1..2, level: 1 }]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The slot that hands the work out.
    pub from: usize,
    /// The slots the receiver becomes responsible for; the receiver is `slots.start`.
    pub slots: Range<usize>,
    /// The hand-off level (1 for the root's first split); the receiver is served at this depth.
    pub level: usize,
}

/// The hand-offs of a tree distribution over `threads` slots with fan-out `arity`, in the order a
/// sequential execution would perform them. Slot 0 is the caller.
///
/// Every slot except 0 is the receiver of exactly one hand-off, and the deepest level is
/// `⌈log_K P⌉`.
///
/// ```
/// use parbench_scheduler::tree_handoffs;
/// let handoffs = tree_handoffs(4, 2);
/// let shape: Vec<_> = handoffs.iter().map(|h| (h.from, h.slots.clone(), h.level)).collect();
/// assert_eq!(shape, vec![(0, 2..4, 1), (0, 1..2, 2), (2, 3..4, 2)]);
/// ```
pub fn tree_handoffs(threads: usize, arity: usize) -> Vec<Handoff> {
    let mut handoffs = Vec::new();
    let mut pending = vec![(0..threads, 0usize)];
    while let Some((slots, level)) = pending.pop() {
        let from = slots.start;
        for_each_split(slots, arity, level, |part, part_level| {
            handoffs.push(Handoff {
                from,
                slots: part.clone(),
                level: part_level,
            });
            pending.push((part, part_level));
        });
    }
    handoffs
}

/// Walks the splits of `slots` done by its first thread, calling `hand_off(part, level)` for every
/// part handed to another thread.
fn for_each_split(
    slots: Range<usize>,
    arity: usize,
    level: usize,
    mut hand_off: impl FnMut(Range<usize>, usize),
) {
    let arity = arity.max(2);
    let mut own = slots;
    let mut level = level;
    while own.len() > 1 {
        level += 1;
        let parts = arity.min(own.len());
        for index in 1..parts {
            hand_off(block(&own, parts, index), level);
        }
        own = block(&own, parts, 0);
    }
}

/// The iterations that `slots` own: the union of their blocks.
fn iterations_of(range: &Range<usize>, total_slots: usize, slots: &Range<usize>) -> Range<usize> {
    let first = block(range, total_slots, slots.start);
    let last = block(range, total_slots, slots.end - 1);
    first.start..last.end
}

/// Runs a tree-distributed loop from the root (the calling context, slot 0); `outermost` if it
/// was not called from inside the pool.
pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    config: &TreeConfig,
    outermost: bool,
) {
    // While the pool checks its calibrated timespan (`retune.rs`), an outermost call notes when
    // it began and slot 1 — handed its share last, at the deepest level — records when its share
    // started. A nested call's shares wait for threads busy with the outer call instead.
    let began = (outermost && ctx.registry.timespan.watching()).then(timer::now);
    // The caller's own count of the root is released by `run_piece` when its share is done.
    let held = distribute(
        ctx,
        call,
        root,
        true,
        0..call.slots,
        0,
        &range,
        *config,
        began,
    );
    run_piece(ctx, call, held, block(&range, call.slots, 0), *config);
}

/// Hands out all parts of `slots` but the first slot's own share; returns the node whose count
/// the caller now holds for that share. `began`: the timer reading at the start of a call whose
/// slot 1 records its share start (the root's hand-offs only).
#[allow(clippy::too_many_arguments)]
fn distribute<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    held: NodeRef,
    held_is_root: bool,
    slots: Range<usize>,
    level: usize,
    range: &Range<usize>,
    config: TreeConfig,
    began: Option<u64>,
) -> NodeRef {
    let mut node = held;
    let mut own_node = held_is_root;
    let total = call.slots;
    for_each_split(slots, config.arity, level, |part, part_level| {
        let iterations = iterations_of(range, total, &part);
        if iterations.is_empty() || call.stopped() {
            return;
        }
        if !own_node {
            // This thread hands out work: from now on its share and its children count in a node
            // of their own, which takes over the count held in the parent.
            node = NodeRef(CountNode::child(held.0));
            own_node = true;
        }
        node.add(1);
        let parent = node;
        let range = range.clone();
        let receiver = call.worker_of(part.start);
        let share = block(&range, total, part.start);
        let began = began.filter(|_| part.start == 1);
        // SAFETY: the job owns the count just added and releases it through the node
        // `distribute` returns (either `parent` itself or a node that took that count over);
        // `call` lives until the root latch is set.
        let job = unsafe {
            HeapJob::into_job_ref(move || {
                // `HeapJob` would swallow a panic of the scheduler's own and leave the share's
                // count held (see `crate::unwind`).
                abort_on_unwind("a tree share ran", || {
                    with_current_ctx(|ctx| {
                        let held = distribute(
                            ctx, call, parent, false, part, part_level, &range, config, None,
                        );
                        if let Some(began) = began {
                            ctx.registry
                                .timespan
                                .record(timer::now().wrapping_sub(began));
                        }
                        run_piece(ctx, call, held, share, config);
                    })
                })
            })
        };
        ctx.registry.push_to(receiver, job);
    });
    node
}

/// The last two grains of a thread's work run in steps of `grain / TAIL_STEPS_PER_GRAIN`
/// iterations (at least one), so a thread that runs out of work meanwhile waits at most about an
/// eighth of a grain for its share of them (see `run_piece`).
const TAIL_STEPS_PER_GRAIN: usize = 8;

/// Runs `range` on this thread — a share, or a half of a share too long for a [`SplitRange`] —
/// and then releases `held`.
///
/// It first runs for the timespan without creating any stealable task, counting the iterations
/// it manages: the adaptive grain.
///
/// Then it runs what is left from its low end, one grain at a time, and offers work lazily:
/// whenever its deque is empty — nothing there for an idle thread, or a thief took it — and at
/// least two grains are left, it pushes an offer on its own deque (where idle threads steal it).
/// What is left lives in a [`SplitRange`]: this thread claims its grains from the low end, and the
/// thief of an offer takes chunks from the high end (`take_from_the_top`). An offer is made only
/// when the previous one is gone and while fewer than `P − 1` have been stolen (each thief stays
/// until nothing is left, so the other threads would all be here already), and one that nobody
/// steals costs nothing to take back: on a
/// balanced loop a thread makes one task and drops it unused at the end (its own wait pops it; it
/// finds nothing left). The balancing tasks count in a node of their own, so completing them
/// touches no counter that other threads' shares use.
///
/// The end of a call: a thread whose deque is empty when it finishes its work of the call
/// records that in the call (`LoopCall::note_out_of_work`), until it takes more of the call's
/// work (`LoopCall::note_working`). Meanwhile a thread whose last work is the final two grains
/// of its share — its deque empty — offers them too, down to single iterations, and runs them in
/// steps of an eighth of a grain, so the idle thread gets its chunks within a step. Without this
/// the threads' ends could differ by up to about a grain (one timespan of work): when one
/// participant starts its share late (a worker woken late), the caller would finish its share
/// and wait while the late one runs the rest of its own, as under `Static`. Until a thread runs
/// out of work nothing changes: nothing below two grains is offered, so a balanced loop makes no
/// extra tasks.
///
/// The owner's last two grains run in those steps too once a thief takes chunks from the top of
/// the share, even while its deque holds an offer (a later offer, which waits there while no
/// other thread is idle): the two meet within a step.
fn run_piece<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    held: NodeRef,
    range: Range<usize>,
    config: TreeConfig,
) {
    call.note_working(ctx);
    let Some((mut rest, measured)) = run_for_timespan(ctx, call, range, config) else {
        if ctx.deque_is_empty() {
            call.note_out_of_work(ctx);
        }
        // SAFETY: the count this piece was run for.
        unsafe { held.complete() };
        return;
    };
    let grain = match config.grain {
        Grain::Adaptive => measured,
        Grain::Fixed(grain) => grain,
    }
    .max(1);
    #[cfg(test)]
    if grain == tests::INJECTED_BUG_GRAIN {
        panic!("an injected bug of the scheduler");
    }
    let tail_step = (grain / TAIL_STEPS_PER_GRAIN).max(1);
    // The node counting this piece's balancing tasks, made with the first one; it takes over
    // `held`'s count.
    let mut node: Option<NodeRef> = None;
    // The offers of this rest made so far (see `make_offer` below).
    let mut offers = 0usize;
    let node_of =
        |node: &mut Option<NodeRef>| *node.get_or_insert_with(|| NodeRef(CountNode::child(held.0)));
    // A rest too long for a `SplitRange` (more than `u32::MAX` iterations): its upper halves
    // become pieces of their own until it fits.
    let shared = loop {
        match SplitRange::new(rest.clone()) {
            Some(shared) => break Arc::new(shared),
            None => {
                let mid = rest.start + rest.len() / 2;
                let upper = mid..rest.end;
                offer(ctx, call, node_of(&mut node), move |ctx, count| {
                    run_piece(ctx, call, count, upper, config);
                });
                rest.end = mid;
            }
        }
    };
    loop {
        let left = shared.len();
        if left == 0 {
            break;
        }
        // Nothing on the deque: this thread's last work of the call is its rest (an offer it
        // made before was stolen).
        let last_work = ctx.deque_is_empty();
        // Every offer made so far was stolen, and each thief takes chunks of this rest until
        // nothing is left: once `slots - 1` have been, every other thread of the call works
        // here, and a new offer could only wait on the deque until the end (with two threads,
        // any offer after the first).
        let make_offer = last_work
            && offers < call.slots - 1
            && !call.stopped()
            && (left / 2 >= grain || (left >= 2 && call.someone_is_out_of_work()));
        if make_offer {
            offers += 1;
            let shared = Arc::clone(&shared);
            offer(ctx, call, node_of(&mut node), move |ctx, count| {
                take_from_the_top(ctx, call, &shared, tail_step);
                // SAFETY: the count this offer was made with.
                unsafe { count.complete() };
            });
        }
        // The last two grains run in smaller steps when another thread will want them or
        // already works on them, so that the two finish within a step of each other, not a grain:
        // when this is this thread's last work of the call (a thread running out of work
        // meanwhile gets its chunks within a step), or when a thief already takes chunks from the
        // top. The second case needs its own test: with more than two threads, the thief's offer
        // is gone but the next one this thread made stays on its deque while no other thread is
        // idle, so the deque is not empty again.
        let step = if (last_work || shared.taken_from_top()) && left / 2 < grain {
            tail_step
        } else {
            grain
        };
        let Some(claimed) = shared.claim(step) else {
            break;
        };
        if !call.run(claimed) {
            break;
        }
    }
    if ctx.deque_is_empty() {
        call.note_out_of_work(ctx);
    }
    // SAFETY: the piece's own count — in `node` if it made one (which took `held`'s over).
    unsafe { node.unwrap_or(held).complete() };
}

/// Runs the thief's side of an offer: chunks from the high end of the owner's rest, each a
/// `2·P`-th of what is left when it is taken but at least `floor` iterations (the owner's tail
/// step, an eighth of its grain), until nothing is left.
/// Nothing may be left already: the owner ran the rest (this is its own offer, popped after its
/// share ended, or one stolen too late).
///
/// A thief used to take the upper half of the rest as a piece of its own, which ran a timespan,
/// measured a grain and made offers in turn; with P = 2 the two threads then passed halves back
/// and forth, each a new piece. Here the chunks shrink as guided's do, run as they are, and only
/// the owner's share keeps a timespan, a grain and offers. Another idle thread joins through the
/// owner's next offer (made once this one is gone) and takes chunks from the same end.
fn take_from_the_top(ctx: &WorkerCtx<'_>, call: &LoopCall<'_>, rest: &SplitRange, floor: usize) {
    let divisor = 2 * call.slots;
    let mut took_some = false;
    while let Some(chunk) = rest.take_top(divisor, floor) {
        if !took_some {
            call.note_working(ctx);
            took_some = true;
        }
        if !call.run(chunk) {
            break;
        }
    }
    if took_some && ctx.deque_is_empty() {
        call.note_out_of_work(ctx);
    }
}

/// Pushes a balancing task on this thread's deque: `work` runs on the thread that takes it, with
/// one count of `node` (added here) that it must release. Wakes a participant of the call that
/// may have parked.
fn offer<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    node: NodeRef,
    work: impl FnOnce(&WorkerCtx<'_>, NodeRef) + Send + 'a,
) {
    node.add(1);
    // SAFETY: the job owns the count just added and `work` releases it; `call` lives until the
    // root latch is set, which needs that count.
    let job = unsafe {
        HeapJob::into_job_ref(move || {
            // `HeapJob` would swallow a panic of the scheduler's own and leave the count held.
            abort_on_unwind("a balancing task ran", || {
                with_current_ctx(|ctx| work(ctx, node))
            })
        })
    };
    ctx.push_local(job);
    // A participant that finished its share early may have parked already (its spin window can
    // be shorter than this thread's timespan plus one slow iteration).
    ctx.registry
        .sleep
        .wake_one_of((1..call.slots).map(|slot| call.worker_of(slot)));
}

/// Runs iterations of `range` in growing batches until the timespan has passed. Returns
/// what is left and how many iterations ran, or `None` if nothing is left or the call stopped.
fn run_for_timespan(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    range: Range<usize>,
    config: TreeConfig,
) -> Option<(Range<usize>, usize)> {
    let timespan = match config.timespan {
        TreeTimespan::Pool => ctx.registry.timespan_ticks(),
        TreeTimespan::Fixed(duration) => timer::duration_to_ticks(duration),
        TreeTimespan::Disabled => 0,
    };
    if timespan == 0 && call.stopped() {
        // Without a timespan nothing below runs an iteration, which is what tells a piece that
        // the call stopped; `run_piece` would then halve a rest of more than `u32::MAX`
        // iterations into tasks that each do the same (about 2^31 of them for `0..usize::MAX`).
        return None;
    }
    let mut position = range.start;
    if timespan > 0 {
        let start = timer::now();
        let mut batch = 1usize;
        while position < range.end {
            let end = range.end.min(position.saturating_add(batch));
            if !call.run(position..end) {
                return None;
            }
            position = end;
            let elapsed = timer::now().wrapping_sub(start);
            if elapsed >= timespan {
                break;
            }
            // Aim the next batch at the end of the timespan, extrapolating from the iterations
            // done so far, but grow at most eightfold: a few clock reads and body calls per
            // share, and little overshoot if iterations get slower.
            let done = position - range.start;
            let fitting = (done as u64).saturating_mul(timespan - elapsed) / elapsed.max(1);
            batch = usize::try_from(fitting)
                .unwrap_or(usize::MAX)
                .clamp(1, done.saturating_mul(8));
        }
    }
    (position < range.end).then(|| (position..range.end, position - range.start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::tests::{aborted, is_child, run_child};

    /// A fixed grain with which `run_piece` panics as a bug of the scheduler would, once a
    /// thread has run its timespan: while the call's other shares are out.
    pub(super) const INJECTED_BUG_GRAIN: usize = 7_777_777;

    #[test]
    fn a_bug_of_the_scheduler_inside_a_call_aborts_instead_of_unwinding() {
        if is_child() {
            let pool = crate::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .expect("a pool of two threads");
            let strategy = crate::Strategy::tree_fixed_grain(INJECTED_BUG_GRAIN);
            // Long enough that every thread's timespan ends before its share does.
            let sum = std::sync::atomic::AtomicUsize::new(0);
            for _ in 0..100 {
                pool.parallel_for_with(&strategy, 0..4_000_000, |i| {
                    sum.fetch_add(i & 1, std::sync::atomic::Ordering::Relaxed);
                });
            }
            // Reached only if no share ran past its timespan: the child then exits 0, which
            // the parent rejects.
            return;
        }
        let (status, stderr) = run_child(
            "strategy::tree::tests::a_bug_of_the_scheduler_inside_a_call_aborts_instead_of_unwinding",
        );
        assert!(aborted(&status), "status {status:?}, stderr:\n{stderr}");
        assert!(
            stderr.contains("an injected bug of the scheduler")
                && stderr.contains("a panic inside the scheduler while"),
            "stderr:\n{stderr}"
        );
    }

    fn ceil_log(p: usize, k: usize) -> usize {
        let mut depth = 0;
        let mut reach = 1usize;
        while reach < p {
            reach = reach.saturating_mul(k);
            depth += 1;
        }
        depth
    }

    #[test]
    fn every_slot_is_served_once_at_depth_ceil_log_k_p() {
        for p in 1..=1024usize {
            for k in 2..=8usize {
                let handoffs = tree_handoffs(p, k);
                let mut served = vec![0usize; p];
                served[0] = 1;
                for h in &handoffs {
                    served[h.slots.start] += 1;
                    assert!(h.from < h.slots.start, "P={p} K={k}: {h:?} hands backwards");
                }
                assert!(served.iter().all(|&n| n == 1), "P={p} K={k}: {served:?}");
                let depth = handoffs.iter().map(|h| h.level).max().unwrap_or(0);
                assert_eq!(depth, ceil_log(p, k), "P={p} K={k}");
            }
        }
    }

    #[test]
    fn each_node_hands_out_at_most_k_minus_one_parts_per_level() {
        for p in 1..=200usize {
            for k in 2..=8usize {
                let handoffs = tree_handoffs(p, k);
                let mut per_level = std::collections::HashMap::new();
                for h in &handoffs {
                    *per_level.entry((h.from, h.level)).or_insert(0usize) += 1;
                }
                assert!(per_level.values().all(|&n| n < k), "P={p} K={k}");
            }
        }
    }

    #[test]
    fn shares_of_slot_ranges_are_unions_of_uniform_blocks() {
        let range = 7..107;
        for p in 1..=16 {
            let mut next = range.start;
            for s in 0..p {
                let b = block(&range, p, s);
                assert_eq!(b.start, next);
                assert!(b.len() == 100 / p || b.len() == 100 / p + 1);
                next = b.end;
            }
            assert_eq!(next, range.end);
            for h in tree_handoffs(p, 3) {
                let its = iterations_of(&range, p, &h.slots);
                assert_eq!(its.start, block(&range, p, h.slots.start).start);
                assert_eq!(its.end, block(&range, p, h.slots.end - 1).end);
            }
        }
    }
}
