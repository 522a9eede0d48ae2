//! `Static`: one contiguous block per thread, sizes differing by at most one, no balancing.
//!
//! The caller hands every other thread its block directly (a flat hand-out, as OpenMP's static
//! schedule) and runs block 0 itself. A block waiting in the inbox of a thread that has not woken
//! up yet can still be taken by an idle thread — as a whole; blocks are never split.

use std::ops::Range;

use super::{LoopCall, NodeRef, block, on_every_slot};
use crate::registry::WorkerCtx;

pub(crate) fn run(ctx: &WorkerCtx<'_>, call: &LoopCall<'_>, root: NodeRef, range: Range<usize>) {
    let slots = call.slots;
    let participants = range.len().min(slots);
    on_every_slot(ctx, call, root, participants, move |call, slot| {
        call.run(block(&range, slots, slot));
    });
}
