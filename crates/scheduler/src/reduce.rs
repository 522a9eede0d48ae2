//! `parallel_reduce`: every chunk folds its iterations, partial results are combined in index
//! order, so `combine` only needs to be associative (not commutative).
//!
//! A chunk's result is merged with the results of the chunks next to it as soon as both are
//! done ([`Segments`]), on the thread that finished last and outside the lock, so the partial
//! results held at any time are about as many as the gaps between finished chunks (a few per
//! thread), and the combines run in parallel. Keeping one result per chunk and combining them on
//! the caller at the end, as this did before, held n results and made n combines on one thread
//! under a strategy of one-iteration chunks (`Dynamic { chunk: 1 }`, `Simple { grain: 1 }`):
//! about 160 MB for 10^7 `u64` results, where rayon's reduction holds O(threads · log n).
//! The price is a second lock per chunk that merges: a sum of 10^6 `u64` under
//! `Dynamic { chunk: 1 }` on two threads took 97–145 ms against 80–113 ms before (interleaved
//! processes, medians of 31 calls); under the default strategy, with its few chunks, nothing
//! measurable.

use std::collections::BTreeMap;
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
    let segments = Segments::new();
    let fold = |chunk: Range<usize>| {
        let mut acc = identity();
        for index in chunk.clone() {
            acc = combine(acc, map(index));
        }
        segments.finish(chunk, acc, &combine);
    };
    run_loop(registry, strategy, range, Body::Chunks(&fold));
    segments.into_total().unwrap_or_else(identity)
}

/// The results of the finished parts of a reduction, by the index range each covers; no two
/// of them adjacent once every [`Segments::finish`] has returned. `map_collect` keeps its
/// finished parts here too, with `()` results, so that it holds a few ranges, not one per part.
pub(crate) struct Segments<T> {
    /// Start → (end, result).
    done: Mutex<BTreeMap<usize, (usize, T)>>,
}

impl<T> Segments<T> {
    pub(crate) fn new() -> Self {
        Segments {
            done: Mutex::new(BTreeMap::new()),
        }
    }

    /// Records `value`, the result of `range`, merged with every finished neighbour: a neighbour
    /// is taken out under the lock and combined outside it (left operand first), and the merged
    /// segment looks for neighbours again; one without any is stored under the same lock as the
    /// look that found none. So two adjacent segments never both stay stored: whichever is
    /// stored second finds the other.
    pub(crate) fn finish(&self, range: Range<usize>, value: T, combine: &impl Fn(T, T) -> T) {
        let (mut start, mut end, mut value) = (range.start, range.end, value);
        loop {
            let (left, right) = {
                let mut done = self.lock();
                match ending_at(&done, start) {
                    Some(left_start) => (done.remove(&left_start).map(|l| (left_start, l)), None),
                    None => match done.remove(&end) {
                        Some(right) => (None, Some(right)),
                        None => {
                            done.insert(start, (end, value));
                            #[cfg(test)]
                            tests::note_held(done.len());
                            return;
                        }
                    },
                }
            };
            if let Some((left_start, (_, left))) = left {
                value = combine(left, value);
                start = left_start;
            }
            if let Some((right_end, right)) = right {
                value = combine(value, right);
                end = right_end;
            }
        }
    }

    /// Records `range` merged with its finished neighbours, all under one lock: for results
    /// whose combine costs nothing (`map_collect`'s `()`), where [`finish`](Self::finish)'s
    /// second lock per merge is pure cost. A `map_collect` of 10^5 `String`s under
    /// `Dynamic { chunk: 1 }` on two threads took 17–19 ms with `finish`, 13–16 ms with this, and
    /// 4 ms with no bookkeeping at all (leaking on a panic): under one-element parts the
    /// contended lock per part is the price of dropping what a panic left behind.
    pub(crate) fn finish_range(&self, range: Range<usize>)
    where
        T: Default,
    {
        let (mut start, mut end) = (range.start, range.end);
        let mut done = self.lock();
        if let Some(left_start) = ending_at(&done, start) {
            done.remove(&left_start);
            start = left_start;
        }
        if let Some((right_end, _)) = done.remove(&end) {
            end = right_end;
        }
        done.insert(start, (end, T::default()));
        #[cfg(test)]
        tests::note_held(done.len());
    }

    /// The stored segments, each its range and result.
    pub(crate) fn into_segments(self) -> impl Iterator<Item = (Range<usize>, T)> {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        done.into_iter()
            .map(|(start, (end, value))| (start..end, value))
    }

    /// The result of everything, if anything finished.
    fn into_total(self) -> Option<T> {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        debug_assert!(done.len() <= 1, "{} segments left unmerged", done.len());
        done.into_values().next().map(|(_, value)| value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, (usize, T)>> {
        self.done.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The start of the stored segment that ends at `index`, if there is one.
fn ending_at<T>(done: &BTreeMap<usize, (usize, T)>, index: usize) -> Option<usize> {
    done.range(..index)
        .next_back()
        .filter(|(_, (end, _))| *end == index)
        .map(|(&start, _)| start)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The most segments stored at once in this process's reductions.
    static MOST_HELD: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn note_held(held: usize) {
        // Relaxed: a statistic read after the reduction returned.
        MOST_HELD.fetch_max(held, Ordering::Relaxed);
    }

    /// One-iteration chunks on two threads: the partial results held stay a handful (the
    /// unmerged gaps between finished chunks), not one per iteration, and the result keeps
    /// the index order of a combine that does not commute; `map_collect`'s finished parts too.
    #[test]
    fn one_iteration_chunks_hold_few_partial_results_and_keep_the_order() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for strategy in [
            crate::Strategy::Dynamic { chunk: 1 },
            crate::Strategy::Simple { grain: 1 },
            crate::Strategy::Guided { min_chunk: 1 },
            crate::Strategy::default(),
        ] {
            MOST_HELD.store(0, Ordering::Relaxed);
            let n = 20_000;
            let digits = pool.parallel_reduce_with(
                &strategy,
                0..n,
                String::new,
                |i| char::from(b'a' + (i % 26) as u8).to_string(),
                |a, b| a + &b,
            );
            let expected: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(digits == expected, "{strategy:?}: order lost");
            let most = MOST_HELD.load(Ordering::Relaxed);
            assert!(
                most <= 64,
                "{strategy:?}: {most} partial results held at once"
            );

            // `map_collect` notes its finished parts the same way (for a type that needs
            // dropping: see `slice/collect.rs`).
            MOST_HELD.store(0, Ordering::Relaxed);
            let collected = pool.map_collect_with(&strategy, 0..n, |i| i.to_string());
            assert!(
                collected
                    .iter()
                    .map(|s| s.parse::<usize>().unwrap())
                    .eq(0..n),
                "{strategy:?}"
            );
            let most = MOST_HELD.load(Ordering::Relaxed);
            assert!(
                most <= 64,
                "{strategy:?}: map_collect held {most} ranges at once"
            );
        }
    }
}
