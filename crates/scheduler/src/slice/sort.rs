//! `sort_unstable_by`: a parallel quicksort whose partitioning step is itself parallel.
//!
//! A sort of n elements on P threads picks a pivot — the median of a sample of up to 32768
//! elements taken as 128 evenly spaced runs of consecutive elements, so that a large sample costs
//! few cache misses and the two sides come out within about 0.15 % of n/2 on random input (their
//! sorts then end together) — and then:
//!
//! 1. partitions the slice in place with P *lanes* ([`partition_blocks`]): chunks of ~32 KiB are
//!    handed out from both ends of the slice; a lane scans a front and a back chunk in blocks,
//!    branch-free, notes the misplaced elements (≥ pivot in front, < pivot at the back) and swaps
//!    them pairwise, taking a new chunk whenever one is clean. One pass over the data, in which
//!    only misplaced elements are written; the at most P chunks left unfinished are swapped next
//!    to the middle and partitioned again, sequentially (≤ P + 1 chunks, whatever the input);
//! 2. sorts the < side and the ≥ side with P lanes that share *pieces* (`sort_pieces`): a lane
//!    takes the largest waiting piece and, while it is longer than max(n / 4P, 2^18) elements,
//!    splits it on its own (the same pivot sample; the partition with one lane, or for a piece of
//!    small elements that fits in the cache a branch-free Lomuto partition),
//!    leaving one half waiting each time; then it sorts what it kept with
//!    `slice::sort_unstable_by` and takes the next piece, until none is left. For 2 threads and
//!    10^7 elements that is 8 pieces of about 1.25 M, handed out dynamically, so a lane on a
//!    faster vCPU sorts more of them. Toward the end, a lane that takes a piece when no other is
//!    waiting splits it too (down to 2^15 elements, leaving one half waiting each time), so the
//!    pieces shrink as the work runs out and the lanes end within a small piece of each other.
//!
//! Each parallel step is a loop of the pool with the caller's strategy (the lanes are the
//! iterations of one loop; a lane that starts late simply finds fewer chunks left). Unlike a
//! sequential top-level partition (rayon's `par_sort_unstable`), no step runs on one thread while
//! the others wait, which matters on two threads: the first partition pass touches all n
//! elements. When the pivot's value is very common, the elements equal to it are split off (they
//! need no sorting), so inputs with many duplicates still split evenly or finish early.
//!
//! Why pieces: this VM's two vCPUs are often unevenly fast for long stretches (one side of a
//! two-way split took 108–117 ms while the other took 83–85 ms in 3 of 12 runs), and a two-way
//! split cannot hide that; sorting the two sides each on one thread, the sort's time was that of
//! the slower side. Splitting a piece on one lane costs a little more than letting std's sort do
//! that level (our one-lane partition ≈ 0.85 ns per u64 against ≈ 0.73 for a level of std's sort),
//! two levels per side here. On the second VM (26 Nov 2026, AMD EPYC) a one-lane block partition
//! took ≈ 2.0 ns per u64 on pieces of 5·10^6 (std's top level ≈ 2.2: memory-bound) but ≈ 2.2 on
//! pieces of 10^6 that fit in the cache, where a branch-free Lomuto partition takes ≈ 1.4; so
//! pieces up to 8 MiB are split with Lomuto. See the README's slice section for the measurements.
//!
//! Where the time goes (10^7 random u64, 2 threads, this repository's 2-core VM, quiet): pivot
//! 0.2 ms, partition 5.3–5.5 ms with 256 KiB chunks (6.1–6.2 ms with 32 KiB ones; one lane alone
//! takes 8.4–8.6 ms: two lanes contend for the memory system), then the two sides, about what two
//! concurrent `slice::sort_unstable` of n/2 take (80–85 ms). The sides are sorted through a
//! closure around the comparator: handing std's `sort_unstable_by` the `&F` itself made its sort
//! 5–7 % slower, which fits the 3–5 ms by which the sides used to exceed that floor. The earlier partition —
//! the two halves in parallel with a swapping Lomuto, then the misplaced middle (≈ n/4 pairs)
//! swapped — was as fast for u64 but writes every element and moves the middle twice; for 3·10^6
//! 32-byte elements the whole sort was 2–8 % slower with it. A partition that notes misplaced
//! elements in 64-bit masks instead of offset buffers was no faster on 10^7 u64 and 8–19 % slower
//! on 10^6 (its scan is not vectorized for u64 on the baseline x86_64 target either). An earlier
//! way to 8 pieces — the existing recursion told of 4·P threads, so every level was a parallel
//! partition of nested loops — was not clearly faster (median lower in 4 of 6 processes, higher
//! in 2, best rounds slower in all 6); the pieces here are split by one lane, without any loop.
//!
//! Pieces against the two sides (interleaved in the same processes, harness runs of 3 rounds at
//! 10^7 and 5–7 at 10^6; medians over processes): quiet, 10^7 89.6 ms against 88.2 (24
//! processes), 10^6 with four pieces 7.66 against 7.61 ms (16; eight pieces were 3–5 % slower,
//! hence the 2^18 floor); with a busy loop taking 30 % of one vCPU (5 processes), 10^7 114.9 against
//! 123.1 ms, 10^6 11.0 against 12.8 ms.
//!
//! The shrinking tail (splitting a piece taken when no other waits): on this project's second VM
//! (26 Nov 2026, AMD EPYC, 2 vCPUs) a trace of the pieces showed the two lanes of a 10^6 sort
//! ending 0.3–4 ms apart (of ≈ 13 ms) — four pieces of 250 K cannot balance vCPUs that ran 30 %
//! apart in 3 of 8 runs — and within 0.1–0.35 ms with the tail rule. In the slices benchmark,
//! interleaved with the previous rule (two sets of 20 pairs of processes, paired medians of
//! the time ratio), the 10^7 sort took 0.952 and 0.965 of its time (faster in 13 of 20 pairs in
//! each set), the 10^6 sort 1.004 and 0.975.
//!
//! Tried and dropped: a **sample sort** (measured in the same processes, 8 at 10^7, 8 at 10^6):
//! 127 splitters from a sorted sample of 16 per bucket, equality buckets when splitters repeat,
//! classification by a branch-free splitter tree (8 elements interleaved) in parallel blocks
//! with the block then copied into an n-element buffer (fallibly allocated), a parallel scatter
//! back into the slice, then the buckets sorted largest first from a shared cursor. It was
//! slower: 10^7 110.6 ms median [99.6, 124.4] (1.50× over `slice::sort_unstable`) against 88.9
//! for this sort; 10^6 8.37 against 7.90 ms. At 10^7 the classification and copy took 36–44 ms,
//! the scatter 11–12, the 128 buckets 61–64 ms (less than the two sides' ≈ 82: they fit in the
//! L2 cache), and freeing the 90 MB of scratch 6–8 ms (0.5 with transparent huge pages). On this
//! machine the tree descent costs about 1 ns per element and level, no less than a level of
//! std's quicksort (≈ 0.73 ns), and the two extra passes over the data are memory-bound, so
//! fewer comparison levels in the buckets do not pay for them.
//!
//! Every element is only ever moved by `swap`, so a panicking comparison leaves the slice a
//! permutation of its input, and the panic propagates to the caller (the other lanes then stop
//! taking pieces). The sort allocates only its pivot samples and the list of waiting pieces.
//! A piece whose splits keep going badly (a comparator that is not a total order, or an input
//! built against the pivot sample) is sorted on one thread after [`BAD_SPLITS`] of them, so the
//! sort takes O(n log n) comparisons whatever the comparator does.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};

use super::SharedSlice;
use crate::registry::Registry;
use crate::strategy::{Body, Strategy, run_loop};

/// Below this many elements a side is sorted on one thread: parallel steps would cost more
/// (a few microseconds) than they save.
const SEQUENTIAL_BELOW: usize = 1 << 15;
/// The pivot is the median of this many evenly spaced runs of consecutive elements…
const PIVOT_RUNS: usize = 128;
/// …of up to this many elements each (a sample of up to 32768 elements, about 1/256 of the slice).
const PIVOT_RUN_MAX: usize = 256;
/// The pieces below the first split are split while longer than about 1/(this · threads) of
/// the slice: for 2 threads, 8 pieces of about n/8 (1.25 M elements at 10^7)…
const PIECES_PER_THREAD: usize = 4;
/// …but not below this many elements: at 10^6 u64 four pieces were as fast as two sides and
/// eight were 3–5 % slower (two sets of 8 interleaved processes).
const MIN_PIECE: usize = 1 << 18;
/// A lane splits a piece of at most this many bytes with the branch-free Lomuto partition
/// rather than one lane of the block partition: on 10^6 u64 (8 MB, in the last-level cache) it
/// takes ≈ 1.4 ns per element against ≈ 2.2, and the tail's splits are of such pieces. Larger
/// pieces keep the block partition, which writes only the misplaced elements: on 10^7 u64, Lomuto
/// for every one-lane split made the sort 3 % slower (two lanes compete for memory bandwidth).
const LOMUTO_MAX_BYTES: usize = 8 << 20;
/// …and only for elements of at most this many bytes (measured on `u64`): Lomuto writes every
/// element, the block partition only the misplaced ones, which matters more as elements grow.
const LOMUTO_MAX_ELEMENT: usize = 8;
/// A lane also splits the piece it holds while no other piece is waiting, down to this many
/// elements (about 0.4 ms of std's sort here), so that a lane running out of work finds one.
const TAIL_MIN_PIECE: usize = 1 << 15;
/// How many bad splits a piece and the pieces split from it may take before what is left of it
/// is sorted on one thread by `slice::sort_unstable_by`, which takes O(n log n) comparisons
/// whatever the input (as pdqsort falls back to heapsort). A split is bad when its larger side
/// keeps more than 15/16 of the piece ([`is_bad_split`]). With a total order the median of the
/// pivot sample makes that rare; with a comparator that is not one (`|_, _| Ordering::Less`, or
/// `partial_cmp(…).unwrap_or(Less)` on NaNs) every split can be bad, and each then removed only
/// its pivot: a sort of 3·10^5 `u64` with `|_, _| Ordering::Less` on 2 threads ran for minutes
/// (about n²/2 comparisons) instead of milliseconds.
const BAD_SPLITS: u32 = 4;

pub(crate) fn sort_unstable_by<T, F>(
    registry: &Registry,
    strategy: &Strategy,
    data: &mut [T],
    compare: F,
) where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if std::mem::size_of::<T>() == 0 {
        // Zero-sized elements are indistinguishable, so every order is sorted; std's sort
        // returns at once too, without a comparison. The parallel path would partition them
        // all, and a slice of them can be `usize::MAX` long.
        return;
    }
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
            // Through a closure, not `sort_unstable_by(self.compare)`: handed the `&F` itself,
            // std's sort of 10^7 u64 with `u64::cmp` took 177–179 ms against 166–172 ms for
            // `slice::sort_unstable` (three processes, 7 interleaved rounds each); wrapped in a
            // closure it took 167–173 ms, as fast as `sort_unstable`.
            data.sort_unstable_by(|a, b| (self.compare)(a, b));
            return;
        }
        let (lower, upper) = self.split(data, threads);
        let cutoff = (len / (threads * PIECES_PER_THREAD)).max(MIN_PIECE);
        let budget = BAD_SPLITS - u32::from(is_bad_split(len, lower.len(), upper.len()));
        self.sort_pieces([lower, upper], budget, threads, cutoff);
    }

    /// Partitions `data` around a pivot (see [`Self::choose_pivot`]) with `lanes` lanes; returns the elements below the pivot and those above it,
    /// without the pivot and, when its value is common, the elements equal to it (all of them in
    /// their final places).
    fn split<'d, T>(&self, data: &'d mut [T], lanes: usize) -> (&'d mut [T], &'d mut [T])
    where
        T: Send + Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        let len = data.len();
        let pivot_index = self.choose_pivot(data);
        data.swap(pivot_index, len - 1);
        let (rest, last) = data.split_at_mut(len - 1);
        let less = self.partition(rest, lanes, |x: &T| {
            (self.compare)(x, &last[0]) == Ordering::Less
        });
        // rest[..less] < pivot ≤ rest[less..]: swapping the pivot with rest[less] puts it in
        // its final place and keeps everything after it ≥ pivot.
        data.swap(less, len - 1);
        let (lower, rest) = data.split_at_mut(less);
        let (pivot, upper) = rest.split_at_mut(1);
        let pivot = &pivot[0];
        // If the pivot's value is common (the < side is small), gather the elements equal to
        // it at the front of `upper`: they are in their final place already.
        let equal = if less < len / 8 {
            self.partition(upper, lanes, |x: &T| {
                (self.compare)(pivot, x) != Ordering::Less
            })
        } else {
            0
        };
        (lower, &mut upper[equal..])
    }

    /// Sorts `parts` with `threads` lanes that share their pieces: a lane takes the largest
    /// waiting piece, splits it (on its own) while it is longer than `cutoff` — or longer than
    /// [`TAIL_MIN_PIECE`] with no other piece waiting — leaving one half waiting each time, then
    /// sorts the rest with `slice::sort_unstable_by`, and takes the next piece until none is
    /// waiting. A lane on a faster vCPU, or one that starts earlier, thus
    /// takes more of the work. A lane never waits for another: a lane that finds no piece
    /// waiting stops, which leaves at most the pieces other lanes are still splitting to them
    /// (and needs no care if the comparator itself runs pool work on a lane's thread).
    ///
    /// `budget`: the bad splits the two parts may still take (see [`BAD_SPLITS`]); a piece
    /// inherits what is left of its parent's.
    fn sort_pieces<T>(&self, parts: [&mut [T]; 2], budget: u32, threads: usize, cutoff: usize)
    where
        T: Send + Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        let waiting = Mutex::new(Vec::from(parts.map(|part| PartPtr {
            ptr: part.as_mut_ptr(),
            len: part.len(),
            budget,
        })));
        let failed = AtomicBool::new(false);
        let lock = || waiting.lock().unwrap_or_else(|e| e.into_inner());
        let work = || {
            // Relaxed: `failed` only stops the other lanes early after a panic (which then
            // propagates from the loop); the pieces themselves pass through the mutex.
            while !failed.load(AtomicOrdering::Relaxed) {
                let next = {
                    let mut waiting = lock();
                    let largest = (0..waiting.len()).max_by_key(|&i| waiting[i].len);
                    largest.map(|i| waiting.swap_remove(i))
                };
                let Some(PartPtr {
                    ptr,
                    len,
                    mut budget,
                }) = next
                else {
                    return;
                };
                // SAFETY: the waiting pieces are disjoint parts of the slice (the two parts we
                // were given, then the two sides of a partition of a piece, which the lane
                // splitting it no longer touches), and each is taken out of `waiting` by one
                // lane only, under the mutex, so no two live `&mut` overlap.
                let mut piece = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
                while budget > 0
                    && (piece.len() > cutoff || (piece.len() > TAIL_MIN_PIECE && lock().is_empty()))
                {
                    let len = piece.len();
                    let (lower, upper) = self.split(piece, 1);
                    budget -= u32::from(is_bad_split(len, lower.len(), upper.len()));
                    let (keep, give) = if lower.len() < upper.len() {
                        (lower, upper)
                    } else {
                        (upper, lower)
                    };
                    lock().push(PartPtr {
                        ptr: give.as_mut_ptr(),
                        len: give.len(),
                        budget,
                    });
                    piece = keep;
                }
                #[cfg(test)]
                tests::SORTED_PIECES.with(|sorted| sorted.borrow_mut().push(piece.len()));
                piece.sort_unstable_by(|a, b| (self.compare)(a, b));
            }
        };
        let run = |lanes: Range<usize>| {
            for _ in lanes {
                if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
                    failed.store(true, AtomicOrdering::Relaxed);
                    std::panic::resume_unwind(payload);
                }
            }
        };
        run_loop(self.registry, self.strategy, 0..threads, Body::Chunks(&run));
    }

    /// The index of the median of a sample of `data`: `PIVOT_RUNS` evenly spaced runs of
    /// consecutive elements, so that a large sample (an accurate median, hence sides of nearly
    /// equal size, whose sorts then end together) costs few cache misses.
    fn choose_pivot<T>(&self, data: &[T]) -> usize
    where
        F: Fn(&T, &T) -> Ordering,
    {
        let len = data.len();
        let run = (len / 256 / PIVOT_RUNS).clamp(1, PIVOT_RUN_MAX);
        let mut indices: Vec<usize> = sample_starts(len, run)
            .flat_map(|start| start..start + run)
            .collect();
        let middle = indices.len() / 2;
        let (_, median, _) =
            indices.select_nth_unstable_by(middle, |&a, &b| (self.compare)(&data[a], &data[b]));
        *median
    }

    /// Partitions `data` in place so that the elements satisfying `pred` come first; returns how
    /// many do. See [`partition_blocks`]; with `lanes > 1` the lanes are the iterations of a
    /// loop of the pool.
    fn partition<T, P>(&self, data: &mut [T], lanes: usize, pred: P) -> usize
    where
        T: Send,
        P: Fn(&T) -> bool + Sync,
    {
        if lanes == 1
            && std::mem::size_of::<T>() <= LOMUTO_MAX_ELEMENT
            && std::mem::size_of_val(data) <= LOMUTO_MAX_BYTES
        {
            // A piece split by one lane of `sort_pieces` that fits in the last-level cache:
            // see `LOMUTO_MAX_BYTES`.
            return partition_lomuto(data, &pred);
        }
        partition_blocks(data, lanes, &pred, &|lane_count, lane| {
            if lane_count == 1 {
                // One lane (a larger piece split by one lane of `sort_pieces`): no loop needed.
                lane(0);
                return;
            }
            let run = |indices: Range<usize>| indices.for_each(lane);
            run_loop(
                self.registry,
                self.strategy,
                0..lane_count,
                Body::Chunks(&run),
            );
        })
    }
}

/// Where the [`PIVOT_RUNS`] runs of `run` elements of the pivot sample start in a slice of `len`
/// (at least `run`) elements: run `k` at `k · (len − run) / (PIVOT_RUNS − 1)`, the first at 0
/// and the last ending the slice. Computed from the quotient and remainder of `len − run` so
/// that the product cannot overflow, however long the slice.
fn sample_starts(len: usize, run: usize) -> impl Iterator<Item = usize> {
    let steps = PIVOT_RUNS - 1;
    let span = len - run;
    let (quotient, remainder) = (span / steps, span % steps);
    (0..PIVOT_RUNS).map(move |k| k * quotient + k * remainder / steps)
}

/// A part of a slice, as raw parts, to hand to another thread.
struct PartPtr<T> {
    ptr: *mut T,
    len: usize,
    /// The bad splits it may still take ([`BAD_SPLITS`]).
    budget: u32,
}

/// Whether splitting `len` elements into sides of `lower` and `upper` (the pivot and the elements
/// equal to it placed between them) left the larger side with more than 15/16 of them.
fn is_bad_split(len: usize, lower: usize, upper: usize) -> bool {
    lower.max(upper) > len - len / 16
}

// SAFETY: only used to rebuild a `&mut [T]` from a disjoint `&mut [T]` on another thread, which
// needs `T: Send`.
unsafe impl<T: Send> Sync for PartPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for PartPtr<T> {}

/// Partitions `data` so that the elements satisfying `pred` come first; returns how many do.
///
/// The slice is cut into chunks of [`chunk_len`] elements, handed out from both ends: "front"
/// chunks from the start upwards, "back" chunks from the end downwards, through one shared budget
/// so the two never meet. Each of `lanes` lanes holds one front and one back chunk, scans each in
/// blocks of [`BLOCK`] elements, branch-free, noting the offsets of the misplaced elements (false
/// in a front chunk, true in a back chunk), and swaps misplaced pairs until one chunk has none
/// left, then takes a new chunk for that side. A lane stops when the budget is spent, leaving at
/// most one chunk unfinished. The unfinished chunks are then swapped next to the unchunked middle
/// and that region — at most `lanes + 1` chunks — is partitioned again, sequentially.
///
/// `run_lanes(lanes, lane)` must call `lane(i)` once for every `i` in `0..lanes` (in any order,
/// on any threads); every element is read once and a misplaced one is written once, in a single
/// pass, and only `swap` moves elements, so a panicking `pred` leaves a permutation.
fn partition_blocks<T, P>(data: &mut [T], lanes: usize, pred: &P, run_lanes: RunLanes<'_>) -> usize
where
    T: Send,
    P: Fn(&T) -> bool + Sync,
{
    let len = data.len();
    let chunk = chunk_len::<T>(len);
    if len <= 4 * chunk {
        return partition_lomuto(data, pred);
    }
    let unfinished = Mutex::new(Vec::with_capacity(lanes));
    let taken = {
        let chunks = Chunks {
            data: SharedSlice::new(data),
            len,
            chunk,
            total: len / chunk,
            budget: AtomicUsize::new(0),
            taken: [AtomicUsize::new(0), AtomicUsize::new(0)],
        };
        run_lanes(lanes, &|_| {
            if let Some(side_and_index) = chunks.lane(pred) {
                unfinished
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(side_and_index);
            }
        });
        // Relaxed: read after the loop, whose completion orders every lane's updates before us.
        chunks
            .taken
            .each_ref()
            .map(|t| t.load(AtomicOrdering::Relaxed))
    };
    let mut unfinished = unfinished.into_inner().unwrap_or_else(|e| e.into_inner());
    unfinished.sort_unstable();
    // Swap each side's unfinished chunks to the innermost of its taken positions, so that the
    // finished chunks form a prefix (all true) and a suffix (all false) around the middle.
    let mut innermost = [0; 2];
    for side in [FRONT, BACK] {
        let stuck: Vec<usize> = unfinished
            .iter()
            .filter(|&&(s, _)| s == side)
            .map(|&(_, index)| index)
            .collect();
        innermost[side] = taken[side] - stuck.len();
        let outside = stuck
            .iter()
            .copied()
            .filter(|&index| index < innermost[side]);
        let free = (innermost[side]..taken[side]).filter(|index| !stuck.contains(index));
        for (from, to) in outside.zip(free) {
            let (a, b) = (
                chunk_range(len, chunk, side, from),
                chunk_range(len, chunk, side, to),
            );
            let (low, high) = if a.start < b.start { (a, b) } else { (b, a) };
            let (head, tail) = data.split_at_mut(high.start);
            head[low].swap_with_slice(&mut tail[..chunk]);
        }
    }
    let middle = innermost[FRONT] * chunk..len - innermost[BACK] * chunk;
    let start = middle.start;
    start + partition_blocks(&mut data[middle], 1, pred, &|_, lane| lane(0))
}

/// How [`partition_blocks`] runs its lanes: `run_lanes(lanes, lane)`.
type RunLanes<'a> = &'a dyn Fn(usize, &(dyn Fn(usize) + Sync));

/// The side a chunk is taken from: [`FRONT`] chunks should end up all true, [`BACK`] all false.
const FRONT: usize = 0;
/// See [`FRONT`].
const BACK: usize = 1;

/// Elements scanned at a time; their offsets fit in a `u8`.
const BLOCK: usize = 128;

/// Elements per chunk for a slice of `len`: about 1/256 of the slice, between 32 and 256 KiB (at
/// least one block, a multiple of it). Taking a chunk — one atomic increment — is then rare next
/// to the work on it, and the sequential fix-up (≤ lanes + 1 chunks) is about 1.2 % of a large
/// slice for two lanes. Larger chunks help large slices: a lane streams longer runs of memory (1 lane
/// on 10^7 u64: 8.4–8.6 ms with 256 KiB chunks against 9.2–9.6 ms with 32 KiB; 2 lanes 5.3–5.5
/// against 6.1–6.2 ms, three processes), while at 10^6 u64 they made no difference.
fn chunk_len<T>(len: usize) -> usize {
    let size = std::mem::size_of::<T>().max(1);
    let bytes = (len.saturating_mul(size) / 256).clamp(32 * 1024, 256 * 1024);
    (bytes / size).max(1).next_multiple_of(BLOCK)
}

/// The elements of chunk `index` of `side`, for chunks of `chunk` elements in a slice of `len`.
fn chunk_range(len: usize, chunk: usize, side: usize, index: usize) -> Range<usize> {
    let start = if side == FRONT {
        index * chunk
    } else {
        len - (index + 1) * chunk
    };
    start..start + chunk
}

/// The chunks of one [`partition_blocks`] call and the counters that hand them out.
struct Chunks<'a, T> {
    data: SharedSlice<'a, T>,
    len: usize,
    chunk: usize,
    /// `len / chunk`: front and back chunks together never exceed it, so they never overlap.
    total: usize,
    /// Chunks taken on either side so far (it may overshoot `total` by one per lane).
    budget: AtomicUsize,
    /// Chunks taken per side: the next front chunk is `taken[FRONT]`, and so on.
    taken: [AtomicUsize; 2],
}

impl<T> Chunks<'_, T> {
    /// The next chunk of `side` and its index, if the budget allows.
    // A `&mut` from `&self`, like `SharedSlice::range_mut`: the counters make the chunks disjoint.
    #[allow(clippy::mut_from_ref)]
    fn take(&self, side: usize) -> Option<(usize, &mut [T])> {
        // Relaxed: the counters only need to hand out distinct values; the elements themselves
        // reach the lanes through the loop's start and return through its completion.
        if self.budget.fetch_add(1, AtomicOrdering::Relaxed) >= self.total {
            return None;
        }
        let index = self.taken[side].fetch_add(1, AtomicOrdering::Relaxed);
        // SAFETY: each index of a side is taken once, and at most `total` chunks are taken in
        // all (the budget), so front chunks 0..a and back chunks 0..b satisfy a + b <= total and
        // their ranges, [0, a·chunk) and [len - b·chunk, len), are disjoint: no two lanes ever
        // hold overlapping chunks.
        Some((index, unsafe {
            self.data
                .range_mut(chunk_range(self.len, self.chunk, side, index))
        }))
    }

    /// One lane (see [`partition_blocks`]); returns the side and index of the chunk it leaves
    /// unfinished, if any.
    fn lane<P: Fn(&T) -> bool>(&self, pred: &P) -> Option<(usize, usize)> {
        let mut front = LaneSide::new(FRONT);
        let mut back = LaneSide::new(BACK);
        loop {
            if !front.refill(self, pred) {
                return back.unfinished();
            }
            if !back.refill(self, pred) {
                return front.unfinished();
            }
            let pairs = front.pending().min(back.pending());
            for k in 0..pairs {
                let i = front.block + usize::from(front.offsets[front.first + k]);
                let j = back.block + usize::from(back.offsets[back.first + k]);
                std::mem::swap(&mut front.chunk[i], &mut back.chunk[j]);
            }
            front.first += pairs;
            back.first += pairs;
        }
    }
}

/// The chunk a lane holds on one side and the misplaced elements found in it.
struct LaneSide<'a, T> {
    side: usize,
    index: usize,
    chunk: &'a mut [T],
    /// Elements of `chunk` scanned so far.
    scanned: usize,
    /// Where the last scanned block starts in `chunk`.
    block: usize,
    /// `offsets[first..count]`: offsets in that block of the misplaced elements not yet swapped.
    offsets: [u8; BLOCK],
    first: usize,
    count: usize,
}

impl<'a, T> LaneSide<'a, T> {
    fn new(side: usize) -> Self {
        LaneSide {
            side,
            index: 0,
            chunk: &mut [],
            scanned: 0,
            block: 0,
            offsets: [0; BLOCK],
            first: 0,
            count: 0,
        }
    }

    fn pending(&self) -> usize {
        self.count - self.first
    }

    /// The side and index of the chunk held, unless it is empty or finished.
    fn unfinished(&self) -> Option<(usize, usize)> {
        let finished = self.scanned == self.chunk.len() && self.pending() == 0;
        (!finished).then_some((self.side, self.index))
    }

    /// Makes sure misplaced elements are pending, scanning on and taking new chunks as needed;
    /// false if the side needs a chunk and none is left (the held chunk is then finished).
    fn refill(&mut self, chunks: &'a Chunks<'_, T>, pred: &impl Fn(&T) -> bool) -> bool {
        while self.pending() == 0 {
            if self.scanned == self.chunk.len() {
                let Some((index, chunk)) = chunks.take(self.side) else {
                    return false;
                };
                self.index = index;
                self.chunk = chunk;
                self.scanned = 0;
            }
            self.scan(pred);
        }
        true
    }

    /// Scans the next block of the chunk, noting the offsets of its misplaced elements.
    fn scan(&mut self, pred: &impl Fn(&T) -> bool) {
        let end = (self.scanned + BLOCK).min(self.chunk.len());
        let block = &self.chunk[self.scanned..end];
        // Misplaced are the false elements of a front chunk, the true ones of a back chunk.
        let count = if self.side == BACK {
            scan_block::<T, true>(block, &mut self.offsets, pred)
        } else {
            scan_block::<T, false>(block, &mut self.offsets, pred)
        };
        self.block = self.scanned;
        self.scanned = end;
        self.first = 0;
        self.count = count;
    }
}

/// Notes in `offsets[..count]` the offsets of the elements of `block` (at most [`BLOCK`]) for
/// which `pred` is `MISPLACED`; returns `count`.
///
/// `MISPLACED` is a constant rather than an argument because comparing with a run-time value
/// made the loop twice as slow (measured: 11.6 vs 5.8 ms for a 2-lane partition of 10^7 u64).
#[inline(always)]
fn scan_block<T, const MISPLACED: bool>(
    block: &[T],
    offsets: &mut [u8; BLOCK],
    pred: &impl Fn(&T) -> bool,
) -> usize {
    prefetch_beyond(block);
    let mut count = 0;
    for (offset, x) in block.iter().enumerate() {
        // Branch-free: write the offset unconditionally, keep it by advancing `count`.
        // `count <= offset < BLOCK`, which the mask tells the compiler (no bounds check).
        offsets[count % BLOCK] = offset as u8;
        count += usize::from(pred(x) == MISPLACED);
    }
    count
}

/// Asks the CPU to fetch the block after the next one into the cache: a lane alternates between
/// two chunks block by block, which the hardware prefetcher follows less well than one stream
/// (measured: a 2-lane partition of 10^7 u64 0.3–0.4 ms faster, 7 of 7 runs).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_beyond<T>(block: &[T]) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    let bytes = std::mem::size_of_val(block);
    let ahead = block.as_ptr().cast::<i8>().wrapping_add(2 * bytes);
    for offset in (0..bytes).step_by(64) {
        // SAFETY: a prefetch is only a hint: it never faults and never changes memory, so any
        // address, even past the end of the slice, is allowed (`wrapping_add` makes no claim
        // about it either); SSE, which it needs, is part of every x86_64 target.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(offset)) };
    }
}

/// No prefetch hint on other targets.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch_beyond<T>(_block: &[T]) {}

/// Branch-free Lomuto partition: the elements satisfying `pred` end up first; returns how many.
fn partition_lomuto<T>(data: &mut [T], pred: &impl Fn(&T) -> bool) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// The lengths of the pieces `sort_pieces` handed to std's sort on this thread, in order.
        pub(super) static SORTED_PIECES: std::cell::RefCell<Vec<usize>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }

    /// With nothing else waiting, the last piece is split in halves down to `TAIL_MIN_PIECE`,
    /// so that a lane out of work would find a piece; a piece with another waiting is not.
    #[test]
    fn the_last_piece_is_split_while_no_other_piece_waits() {
        // One thread: the pool runs the single lane inline, on this thread.
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let strategy = Strategy::default();
        let compare = u64::cmp;
        let sorter = Sorter {
            registry: pool.registry(),
            strategy: &strategy,
            compare: &compare,
        };
        let half = 1 << 17;
        let mut data = splitmix(2 * half, 7);
        let (a, b) = data.split_at_mut(half);
        SORTED_PIECES.with(|sorted| sorted.borrow_mut().clear());
        // No cutoff: only the tail rule splits.
        sorter.sort_pieces([a, b], BAD_SPLITS, 1, usize::MAX);
        let sorted = SORTED_PIECES.with(|sorted| sorted.take());
        assert!(data[..half].is_sorted() && data[half..].is_sorted());
        // The first part is sorted whole (the second waits meanwhile); the second, taken with
        // nothing waiting, is halved again and again (each split also puts its pivot in place).
        assert_eq!(sorted[0], half, "pieces sorted: {sorted:?}");
        assert!(sorted.len() >= 4, "pieces sorted: {sorted:?}");
        assert!(
            sorted[1..].iter().all(|&len| len < half * 3 / 4),
            "pieces sorted: {sorted:?}"
        );
        assert!(
            sorted.iter().any(|&len| len <= TAIL_MIN_PIECE),
            "pieces sorted: {sorted:?}"
        );
        assert!(sorted.iter().sum::<usize>() <= 2 * half);
    }

    /// Runs the lanes on scoped threads, so that they really interleave.
    fn threaded(lanes: usize, lane: &(dyn Fn(usize) + Sync)) {
        std::thread::scope(|scope| {
            for index in 1..lanes {
                scope.spawn(move || lane(index));
            }
            lane(0);
        });
    }

    fn splitmix(len: usize, seed: u64) -> Vec<u64> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            })
            .collect()
    }

    #[test]
    fn partition_blocks_partitions_a_permutation_for_every_lane_count_and_length() {
        let chunk = chunk_len::<u64>(0);
        let lengths = [
            0,
            1,
            4 * chunk,
            4 * chunk + 1,
            5 * chunk - 1,
            7 * chunk + 13,
            20 * chunk,
            100_003,
        ];
        for len in lengths {
            let values = splitmix(len, len as u64 + 1);
            let inputs = [
                (
                    "random",
                    values.iter().map(|x| x % 1000).collect::<Vec<u64>>(),
                ),
                (
                    "sorted",
                    (0..len as u64)
                        .map(|x| x * 1000 / len.max(1) as u64)
                        .collect(),
                ),
                (
                    "reversed",
                    (0..len as u64)
                        .rev()
                        .map(|x| x * 1000 / len.max(1) as u64)
                        .collect(),
                ),
                // Front and back chunks alternate between all-true and all-false.
                (
                    "striped",
                    (0..len).map(|i| (i / chunk % 2) as u64 * 999).collect(),
                ),
            ];
            for (name, input) in &inputs {
                let mut expected = input.clone();
                expected.sort_unstable();
                for threshold in [0, 500, 1000] {
                    let pred = |x: &u64| *x < threshold;
                    let trues = input.iter().filter(|x| pred(x)).count();
                    for lanes in [1, 2, 5] {
                        let mut data = input.clone();
                        let count = partition_blocks(&mut data, lanes, &pred, &threaded);
                        let what = format!("{name}, len {len}, < {threshold}, {lanes} lanes");
                        assert_eq!(count, trues, "{what}");
                        assert!(data[..count].iter().all(pred), "{what}");
                        assert!(!data[count..].iter().any(pred), "{what}");
                        data.sort_unstable();
                        assert!(data == expected, "{what}: not a permutation");
                    }
                }
            }
        }
    }

    #[test]
    fn partition_blocks_partitions_a_large_slice_with_large_chunks() {
        let len = 1_500_000 + 13;
        let chunk = chunk_len::<u64>(len);
        assert!(chunk > chunk_len::<u64>(0), "chunks of {chunk} elements");
        let histogram = |data: &[u64]| {
            let mut counts = vec![0_usize; 1000];
            for &x in data {
                counts[x as usize] += 1;
            }
            counts
        };
        let inputs = [
            splitmix(len, 5)
                .iter()
                .map(|x| x % 1000)
                .collect::<Vec<u64>>(),
            (0..len).map(|i| (i / chunk % 2) as u64 * 999).collect(),
        ];
        for (name, input) in ["random", "striped"].iter().zip(&inputs) {
            let expected = histogram(input);
            let pred = |x: &u64| *x < 500;
            let trues = input.iter().filter(|x| pred(x)).count();
            for lanes in [2, 5] {
                let mut data = input.clone();
                let count = partition_blocks(&mut data, lanes, &pred, &threaded);
                assert_eq!(count, trues, "{name}, {lanes} lanes");
                assert!(data[..count].iter().all(pred), "{name}, {lanes} lanes");
                assert!(!data[count..].iter().any(pred), "{name}, {lanes} lanes");
                assert!(
                    histogram(&data) == expected,
                    "{name}, {lanes} lanes: not a permutation"
                );
            }
        }
    }

    /// As std's sort does, a sort of zero-sized elements (all equal) changes nothing and calls no
    /// comparison; a parallel one used to partition all of them, up to `usize::MAX`.
    #[test]
    fn a_slice_of_zero_sized_elements_is_sorted_without_a_comparison() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut data = [(); usize::MAX];
        for len in [SEQUENTIAL_BELOW, 1 << 20, usize::MAX] {
            let calls = AtomicUsize::new(0);
            pool.sort_unstable_by(&mut data[..len], |a, b| {
                calls.fetch_add(1, AtomicOrdering::Relaxed);
                a.cmp(b)
            });
            // Relaxed: read after the sort returned, which waited for its lanes.
            assert_eq!(calls.into_inner(), 0, "{len} elements");
        }
    }

    /// The pivot sample's runs are evenly spaced over the slice without overflowing, however
    /// long it is (its offsets are `k · (len − run) / 127` for the 128 runs `k`).
    #[test]
    fn the_pivot_sample_spans_a_slice_of_usize_max_elements() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let strategy = Strategy::default();
        let compare = |a: &(), b: &()| a.cmp(b);
        let sorter = Sorter {
            registry: pool.registry(),
            strategy: &strategy,
            compare: &compare,
        };
        let data = [(); usize::MAX];
        assert!(sorter.choose_pivot(&data) < usize::MAX);
        // The offsets themselves, against the product computed in 128 bits.
        for len in [
            SEQUENTIAL_BELOW,
            10_000_007,
            usize::MAX / 127 + 1,
            usize::MAX,
        ] {
            let run = (len / 256 / PIVOT_RUNS).clamp(1, PIVOT_RUN_MAX);
            let span = (len - run) as u128;
            let expected: Vec<usize> = (0..PIVOT_RUNS as u128)
                .map(|k| (k * span / (PIVOT_RUNS as u128 - 1)) as usize)
                .collect();
            let starts: Vec<usize> = sample_starts(len, run).collect();
            assert_eq!(starts, expected, "{len} elements");
            assert_eq!(starts.last(), Some(&(len - run)), "{len} elements");
        }
    }

    #[test]
    fn chunks_hold_whole_blocks_for_every_element_size() {
        for len in [0, 1, 1 << 20, usize::MAX] {
            assert_eq!(chunk_len::<[u8; 100_000]>(len), BLOCK);
        }
        assert_eq!(chunk_len::<[u8; 1000]>(0), BLOCK);
        assert_eq!(chunk_len::<u64>(0), 4096);
        assert_eq!(chunk_len::<u64>(1_000_000), 4096);
        // 16 MB / 256 = 62500 bytes = 7812.5 u64, rounded up to whole blocks.
        assert_eq!(chunk_len::<u64>(2_000_000), 62 * BLOCK);
        assert_eq!(chunk_len::<u64>(10_000_000), 32 * 1024);
        assert_eq!(chunk_len::<u64>(usize::MAX), 32 * 1024);
        assert_eq!(chunk_len::<()>(0), 32 * 1024);
        assert_eq!(chunk_len::<()>(usize::MAX), 256 * 1024);
    }

    #[test]
    fn partition_blocks_leaves_a_permutation_when_pred_panics() {
        let len = 30 * chunk_len::<u64>(0) + 7;
        let input = splitmix(len, 9);
        let mut expected = input.clone();
        expected.sort_unstable();
        for panic_at in [0, 100, len / 3, len - 10] {
            for lanes in [1, 2, 4] {
                let calls = AtomicUsize::new(0);
                let pred = |x: &u64| {
                    let call = calls.fetch_add(1, AtomicOrdering::Relaxed);
                    assert!(call != panic_at, "pred panics");
                    *x < u64::MAX / 2
                };
                let mut data = input.clone();
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    partition_blocks(&mut data, lanes, &pred, &threaded)
                }));
                assert!(
                    result.is_err(),
                    "panic at {panic_at}, {lanes} lanes: no panic"
                );
                data.sort_unstable();
                assert!(
                    data == expected,
                    "panic at {panic_at}, {lanes} lanes: not a permutation"
                );
            }
        }
    }
}
