//! `scan_inclusive`: a parallel two-phase prefix scan over blocks.
//!
//! Up-sweep: the slice is cut into a few blocks per thread and every block's total is computed in
//! parallel. The block totals are then scanned sequentially (there are only a few). Down-sweep:
//! every block is scanned in parallel, starting from the total of all blocks before it. Each
//! element is read twice and written once; `op` must be associative.

use std::ops::Range;
use std::sync::Mutex;

use crate::registry::Registry;
use crate::strategy::{Body, Strategy, block, run_loop};

/// Blocks per thread: enough that a slow thread's block can be balanced, few enough that the
/// sequential middle step is negligible.
const BLOCKS_PER_THREAD: usize = 4;

pub(crate) fn scan_inclusive<T, F>(registry: &Registry, strategy: &Strategy, data: &mut [T], op: F)
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let len = data.len();
    if len == 0 {
        return;
    }
    let blocks = (registry.num_threads() * BLOCKS_PER_THREAD).min(len);
    let whole = 0..len;

    let totals: Vec<Mutex<Option<T>>> = (0..blocks).map(|_| Mutex::new(None)).collect();
    {
        let data: &[T] = data;
        let up_sweep = |indices: Range<usize>| {
            for b in indices {
                let items = &data[block(&whole, blocks, b)];
                let total = items[1..].iter().fold(items[0], |acc, &x| op(acc, x));
                *totals[b].lock().unwrap_or_else(|e| e.into_inner()) = Some(total);
            }
        };
        run_loop(registry, strategy, 0..blocks, Body::Chunks(&up_sweep));
    }

    let mut offsets: Vec<Option<T>> = Vec::with_capacity(blocks);
    let mut running: Option<T> = None;
    for total in totals {
        offsets.push(running);
        let total = total.into_inner().unwrap_or_else(|e| e.into_inner());
        running = match (running, total) {
            (Some(acc), Some(t)) => Some(op(acc, t)),
            (None, t) => t,
            (acc, None) => acc,
        };
    }

    let mut pieces: Vec<Mutex<&mut [T]>> = Vec::with_capacity(blocks);
    let mut rest = data;
    for b in 0..blocks {
        let (head, tail) = rest.split_at_mut(block(&whole, blocks, b).len());
        pieces.push(Mutex::new(head));
        rest = tail;
    }
    let down_sweep = |indices: Range<usize>| {
        for b in indices {
            let mut piece = pieces[b].lock().unwrap_or_else(|e| e.into_inner());
            let mut acc = offsets[b];
            for x in piece.iter_mut() {
                let value = match acc {
                    Some(a) => op(a, *x),
                    None => *x,
                };
                *x = value;
                acc = Some(value);
            }
        }
    };
    run_loop(registry, strategy, 0..blocks, Body::Chunks(&down_sweep));
}
