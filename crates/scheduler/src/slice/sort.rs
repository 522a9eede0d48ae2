//! `sort_unstable_by`: a parallel quicksort whose partitioning step is itself parallel.
//!
//! A sort of n elements on P threads picks a pivot (the median of an evenly spaced sample of up
//! to 4095 elements, so both sides hold close to n/2 elements), then:
//!
//! 1. partitions the two halves of the slice in place, in parallel (`x < pivot` first);
//! 2. swaps the misplaced middle — the ≥ part of the first half with the < part of the second —
//!    in parallel, in blocks (the order inside each side does not matter);
//! 3. sorts the < side and the > side in parallel, each with half the threads, recursively, and
//!    with `slice::sort_unstable_by` once one thread is left or the side is small.
//!
//! Each parallel step is a loop of the pool with the caller's strategy. Unlike a sequential
//! top-level partition (rayon's `par_sort_unstable`), no step runs on one thread while the others
//! wait, which matters on two threads: the first partition pass touches all n elements. When the
//! pivot's value is very common, the elements equal to it are split off (they need no sorting),
//! so inputs with many duplicates still split evenly or finish early.
//!
//! Every element is only ever moved by `swap`, so a panicking comparison leaves the slice a
//! permutation of its input, and the panic propagates to the caller.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use super::SharedSlice;
use crate::registry::Registry;
use crate::strategy::{Body, Strategy, run_loop};

/// Below this many elements a side is sorted on one thread: parallel steps would cost more
/// (a few microseconds) than they save.
const SEQUENTIAL_BELOW: usize = 1 << 15;
/// Elements swapped per iteration of the parallel swap step, so that fine-grained strategies
/// (`Dynamic { chunk: 1 }`) do not pay a scheduling decision per element.
const SWAP_BLOCK: usize = 1 << 12;

pub(crate) fn sort_unstable_by<T, F>(
    registry: &Registry,
    strategy: &Strategy,
    data: &mut [T],
    compare: F,
) where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let sorter = Sorter {
        registry,
        strategy,
        compare: &compare,
    };
    sorter.sort(data, registry.num_threads());
}

struct Sorter<'a, F> {
    registry: &'a Registry,
    strategy: &'a Strategy,
    compare: &'a F,
}

impl<F> Sorter<'_, F> {
    fn sort<T>(&self, data: &mut [T], threads: usize)
    where
        T: Send + Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        let len = data.len();
        if threads < 2 || len < SEQUENTIAL_BELOW {
            data.sort_unstable_by(self.compare);
            return;
        }
        let pivot_index = self.choose_pivot(data);
        data.swap(pivot_index, len - 1);
        let (rest, last) = data.split_at_mut(len - 1);
        let less = self.partition(rest, |x: &T| (self.compare)(x, &last[0]) == Ordering::Less);
        // rest[..less] < pivot ≤ rest[less..]: swapping the pivot with rest[less] puts it in
        // its final place and keeps everything after it ≥ pivot.
        data.swap(less, len - 1);
        let (lower, rest) = data.split_at_mut(less);
        let (pivot, upper) = rest.split_at_mut(1);
        let pivot = &pivot[0];
        // If the pivot's value is common (the < side is small), gather the elements equal to
        // it at the front of `upper`: they are in their final place already.
        let equal = if less < len / 8 {
            self.partition(upper, |x: &T| (self.compare)(pivot, x) != Ordering::Less)
        } else {
            0
        };
        let upper = &mut upper[equal..];
        let split = threads / 2;
        let side_threads = [split.max(1), (threads - split).max(1)];
        self.for_each_part(&mut [lower, upper], |side, part| {
            self.sort(part, side_threads[side])
        });
    }

    /// The index of the median of an evenly spaced sample of `data`.
    fn choose_pivot<T>(&self, data: &[T]) -> usize
    where
        F: Fn(&T, &T) -> Ordering,
    {
        let len = data.len();
        let samples = (len / 1024).clamp(255, 4095) | 1;
        let mut indices: Vec<usize> = (0..samples).map(|k| k * len / samples).collect();
        indices.sort_unstable_by(|&a, &b| (self.compare)(&data[a], &data[b]));
        indices[samples / 2]
    }

    /// Partitions `data` in place so that the elements satisfying `pred` come first; returns how
    /// many do. The two halves are partitioned in parallel, then the misplaced middle is swapped.
    fn partition<T, P>(&self, data: &mut [T], pred: P) -> usize
    where
        T: Send,
        P: Fn(&T) -> bool + Sync,
    {
        let len = data.len();
        let half = len / 2;
        let counts = [AtomicUsize::new(0), AtomicUsize::new(0)];
        {
            let (first, second) = data.split_at_mut(half);
            self.for_each_part(&mut [first, second], |index, part| {
                // Relaxed: read after the loop, whose completion orders it.
                counts[index].store(partition_sequential(part, &pred), AtomicOrdering::Relaxed);
            });
        }
        let first_true = counts[0].load(AtomicOrdering::Relaxed);
        let second_true = counts[1].load(AtomicOrdering::Relaxed);
        // data = [T₁ F₁ | T₂ F₂]: swap the head of F₁ with the tail of T₂ (k elements).
        let k = (half - first_true).min(second_true);
        let (first, second) = data.split_at_mut(half);
        let from = &mut first[first_true..first_true + k];
        let to = &mut second[second_true - k..second_true];
        self.swap_parallel(from, to);
        first_true + second_true
    }

    /// Swaps `a` and `b` (of equal length) element-wise, in parallel blocks.
    fn swap_parallel<T: Send>(&self, a: &mut [T], b: &mut [T]) {
        let len = a.len();
        if len < SWAP_BLOCK {
            a.swap_with_slice(b);
            return;
        }
        let (a, b) = (SharedSlice::new(a), SharedSlice::new(b));
        let swap_blocks = |blocks: Range<usize>| {
            let elements = blocks.start * SWAP_BLOCK..(blocks.end * SWAP_BLOCK).min(len);
            // SAFETY: the strategy hands every block index to exactly one call, so concurrent
            // calls take disjoint element ranges of `a` and of `b` (two distinct slices).
            let (x, y) = unsafe { (a.range_mut(elements.clone()), b.range_mut(elements)) };
            x.swap_with_slice(y);
        };
        run_loop(
            self.registry,
            self.strategy,
            0..len.div_ceil(SWAP_BLOCK),
            Body::Chunks(&swap_blocks),
        );
    }

    /// Runs `work(index, part)` for the two `parts`, in parallel, with the strategy.
    fn for_each_part<T: Send>(
        &self,
        parts: &mut [&mut [T]; 2],
        work: impl Fn(usize, &mut [T]) + Sync,
    ) {
        let shared = parts.each_mut().map(|part| PartPtr {
            ptr: part.as_mut_ptr(),
            len: part.len(),
        });
        let run = |indices: Range<usize>| {
            for index in indices {
                let PartPtr { ptr, len } = shared[index];
                // SAFETY: `parts` are two disjoint mutable borrows held by our caller for the
                // whole loop, and the strategy hands each index (each part) to exactly one call.
                let part = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
                work(index, part);
            }
        };
        run_loop(self.registry, self.strategy, 0..2, Body::Chunks(&run));
    }
}

/// A part of a slice, as raw parts, to hand to one iteration of a loop.
#[derive(Clone, Copy)]
struct PartPtr<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: only used to rebuild a `&mut [T]` from a disjoint `&mut [T]` on another thread, which
// needs `T: Send`.
unsafe impl<T: Send> Sync for PartPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for PartPtr<T> {}

/// Branch-free Lomuto partition: the elements satisfying `pred` end up first; returns how many.
fn partition_sequential<T>(data: &mut [T], pred: &impl Fn(&T) -> bool) -> usize {
    let mut first_false = 0;
    for i in 0..data.len() {
        let goes_first = pred(&data[i]);
        // Swapping unconditionally and advancing conditionally avoids a mispredicted branch per
        // element: when `goes_first` is false, data[first_false..=i] are all false already.
        data.swap(i, first_false);
        first_false += usize::from(goes_first);
    }
    first_false
}
