//! `Dynamic { chunk }`: every thread repeatedly takes `chunk` iterations from a shared cursor.

use std::ops::Range;

use super::{LoopCall, NodeRef, drain_cursor, on_every_slot};
use crate::registry::WorkerCtx;

pub(crate) fn run(
    ctx: &WorkerCtx<'_>,
    call: &LoopCall<'_>,
    root: NodeRef,
    range: Range<usize>,
    chunk: usize,
) {
    let chunk = chunk.max(1);
    let participants = range.len().div_ceil(chunk);
    on_every_slot(ctx, call, root, participants, move |call, _| {
        drain_cursor(call, &range, |_| chunk, |iterations| call.run(iterations));
    });
}
