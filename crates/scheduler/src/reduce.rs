//! `parallel_reduce`: every chunk folds its iterations, partial results are combined in index
//! order, so `combine` only needs to be associative (not commutative).

use std::ops::Range;
use std::sync::Mutex;

use crate::registry::Registry;
use crate::strategy::{Body, Strategy, run_loop};

pub(crate) fn parallel_reduce<T, ID, M, C>(
    registry: &Registry,
    strategy: &Strategy,
    range: Range<usize>,
    identity: ID,
    map: M,
    combine: C,
) -> T
where
    T: Send,
    ID: Fn() -> T + Sync,
    M: Fn(usize) -> T + Sync,
    C: Fn(T, T) -> T + Sync,
{
    // One entry per executed chunk (a few per thread plus the balancing pieces), so the lock is
    // taken rarely and uncontended; sorting by start restores the order for `combine`.
    let partials: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    let fold = |chunk: Range<usize>| {
        let start = chunk.start;
        let mut acc = identity();
        for index in chunk {
            acc = combine(acc, map(index));
        }
        partials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((start, acc));
    };
    run_loop(registry, strategy, range, Body::Chunks(&fold));
    let mut partials = partials.into_inner().unwrap_or_else(|e| e.into_inner());
    partials.sort_unstable_by_key(|&(start, _)| start);
    partials
        .into_iter()
        .map(|(_, value)| value)
        .reduce(&combine)
        .unwrap_or_else(identity)
}
