//! `Guided { min_chunk }`: each grab is about `remaining / (2·P)` iterations, never fewer than
//! `min_chunk`, so grabs shrink as the loop drains.

use std::ops::Range;

use super::{LoopCall, NodeRef, drain_cursor, on_every_slot};
use crate::registry::WorkerCtx;

pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    min_chunk: usize,
) {
    let min_chunk = min_chunk.max(1);
    let divisor = 2 * call.slots;
    let participants = range.len().div_ceil(min_chunk);
    on_every_slot(ctx, call, root, participants, move |call, _| {
        drain_cursor(
            call,
            &range,
            |remaining| (remaining / divisor).max(min_chunk),
            |iterations| call.run(iterations),
        );
    });
}
