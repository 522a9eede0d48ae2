//! Safe data-parallel algorithms on slices: `for_each_mut`, `for_each_indexed_mut`,
//! `par_chunks_mut`, `map_collect` (`collect.rs`) and `sort_unstable_by` (`sort.rs`).
//!
//! Each of them is a parallel loop of the pool (`run_loop`) over an index space — elements,
//! chunks, or sort blocks — with the caller's [`Strategy`]. A strategy hands every index of the
//! space to exactly one body call (the contract every strategy is tested for), so the element
//! ranges the bodies receive are disjoint, and [`SharedSlice`] turns each of them into a `&mut`
//! sub-slice. That is the only `unsafe` step, and it is confined to this module: users get
//! `&mut T` / `&mut [T]` and never see a raw pointer.

mod collect;
mod sort;

use std::marker::PhantomData;
use std::ops::Range;

use std::cmp::Ordering;

use crate::global::current_registry;
use crate::pool::ThreadPool;
use crate::registry::Registry;
use crate::strategy::{Body, Strategy, run_loop};

/// A mutable slice shared by the bodies of one parallel loop, each of which takes the elements
/// of the (disjoint) ranges the loop's strategy handed it.
pub(crate) struct SharedSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: the elements are only reached through `range_mut`, whose callers guarantee that
// concurrent calls use disjoint ranges; sharing the slice is then like sending disjoint
// `&mut [T]` to other threads, which needs `T: Send`.
unsafe impl<T: Send> Sync for SharedSlice<'_, T> {}
// SAFETY: as above; it is a borrow of a `&mut [T]` and owns no `T`.
unsafe impl<T: Send> Send for SharedSlice<'_, T> {}

impl<'a, T> SharedSlice<'a, T> {
    /// Shares `slice` for the duration of its borrow.
    pub(crate) fn new(slice: &'a mut [T]) -> Self {
        SharedSlice {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }

    /// The elements in `range`.
    ///
    /// # Panics
    /// If `range` is out of bounds (a bug in this crate, not user input).
    ///
    /// # Safety
    /// No two live results of `range_mut` on this slice may overlap.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range_mut(&self, range: Range<usize>) -> &mut [T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "parbench-scheduler: slice range out of bounds"
        );
        // SAFETY: in bounds (checked above) of a slice borrowed mutably for 'a; no other live
        // reference overlaps it (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

/// Calls `body(offset, part)` for disjoint parts of `data` covering it exactly once, where
/// `offset` is the index of `part[0]` in `data`; the parts are the chunks the strategy hands out.
pub(crate) fn for_parts_mut<T, F>(registry: &Registry, strategy: &Strategy, data: &mut [T], body: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    let len = data.len();
    let shared = SharedSlice::new(data);
    let run = |range: Range<usize>| {
        let start = range.start;
        // SAFETY: the strategy hands every index of 0..len to exactly one chunk, so the ranges
        // of concurrent calls are disjoint.
        body(start, unsafe { shared.range_mut(range) });
    };
    run_loop(registry, strategy, 0..len, Body::Chunks(&run));
}

/// `body(&mut x)` for every element.
fn for_each_mut_impl<T, F>(registry: &Registry, strategy: &Strategy, data: &mut [T], body: F)
where
    T: Send,
    F: Fn(&mut T) + Sync,
{
    for_parts_mut(registry, strategy, data, |_, part| {
        part.iter_mut().for_each(&body)
    });
}

/// `body(i, &mut data[i])` for every index.
fn for_each_indexed_mut_impl<T, F>(
    registry: &Registry,
    strategy: &Strategy,
    data: &mut [T],
    body: F,
) where
    T: Send,
    F: Fn(usize, &mut T) + Sync,
{
    for_parts_mut(registry, strategy, data, |offset, part| {
        for (i, x) in part.iter_mut().enumerate() {
            body(offset + i, x);
        }
    });
}

/// `body(k, chunk)` for every `chunk_len`-element chunk of `data` (the last may be shorter);
/// the strategy schedules chunks, not elements. A `chunk_len` of 0 acts as 1.
fn par_chunks_mut_impl<T, F>(
    registry: &Registry,
    strategy: &Strategy,
    data: &mut [T],
    chunk_len: usize,
    body: F,
) where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    let chunk_len = chunk_len.max(1);
    let len = data.len();
    let chunks = len.div_ceil(chunk_len);
    let shared = SharedSlice::new(data);
    let run = |indices: Range<usize>| {
        let first = indices.start;
        // Saturating: with zero-sized elements `len` can be `usize::MAX`, and then the end of
        // the last chunk index times `chunk_len` can pass it; the product is capped at `len`.
        let element = |chunk: usize| chunk.saturating_mul(chunk_len).min(len);
        let elements = element(first)..element(indices.end);
        // SAFETY: the strategy hands every chunk index to exactly one call, and chunk index
        // ranges map to disjoint element ranges.
        let part = unsafe { shared.range_mut(elements) };
        for (k, chunk) in part.chunks_mut(chunk_len).enumerate() {
            body(first + k, chunk);
        }
    };
    run_loop(registry, strategy, 0..chunks, Body::Chunks(&run));
}

/// The slice algorithms. Each comes in two forms, like the loops: with the default strategy
/// (Tree) and `_with` an explicit [`Strategy`]; every strategy gives the same result.
impl ThreadPool {
    /// Calls `body(&mut x)` for every element of `data`, in parallel (rayon's
    /// `data.par_iter_mut().for_each(body)`).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v: Vec<f64> = (0..1000).map(f64::from).collect();
    /// pool.for_each_mut(&mut v, |x| *x = x.sqrt() * 1.5);
    /// assert_eq!(v[4], 3.0);
    /// ```
    pub fn for_each_mut<T: Send, F: Fn(&mut T) + Sync>(&self, data: &mut [T], body: F) {
        self.for_each_mut_with(&Strategy::default(), data, body);
    }

    /// [`for_each_mut`](Self::for_each_mut) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![1u32; 100];
    /// pool.for_each_mut_with(&Strategy::Dynamic { chunk: 8 }, &mut v, |x| *x += 1);
    /// assert!(v.iter().all(|&x| x == 2));
    /// ```
    pub fn for_each_mut_with<T: Send, F: Fn(&mut T) + Sync>(
        &self,
        strategy: &Strategy,
        data: &mut [T],
        body: F,
    ) {
        for_each_mut_impl(self.registry(), strategy, data, body);
    }

    /// Calls `body(i, &mut data[i])` for every index, in parallel (rayon's
    /// `data.par_iter_mut().enumerate().for_each(..)`).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![0usize; 100];
    /// pool.for_each_indexed_mut(&mut v, |i, x| *x = i * i);
    /// assert_eq!(v[9], 81);
    /// ```
    pub fn for_each_indexed_mut<T: Send, F: Fn(usize, &mut T) + Sync>(
        &self,
        data: &mut [T],
        body: F,
    ) {
        self.for_each_indexed_mut_with(&Strategy::default(), data, body);
    }

    /// [`for_each_indexed_mut`](Self::for_each_indexed_mut) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![0usize; 10];
    /// pool.for_each_indexed_mut_with(&Strategy::Static, &mut v, |i, x| *x = i);
    /// assert_eq!(v, (0..10).collect::<Vec<_>>());
    /// ```
    pub fn for_each_indexed_mut_with<T: Send, F: Fn(usize, &mut T) + Sync>(
        &self,
        strategy: &Strategy,
        data: &mut [T],
        body: F,
    ) {
        for_each_indexed_mut_impl(self.registry(), strategy, data, body);
    }

    /// Calls `body(k, chunk)` for every `chunk_len`-element chunk of `data` (the last one may be
    /// shorter; `k` is the chunk's index), in parallel; the strategy schedules whole chunks
    /// (rayon's `data.par_chunks_mut(chunk_len).enumerate().for_each(..)`). A `chunk_len` of 0
    /// acts as 1 (the strategies treat a 0 chunk the same way).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut image = vec![0u8; 4 * 3]; // 3 rows of 4 pixels
    /// pool.par_chunks_mut(&mut image, 4, |row, pixels| pixels.fill(row as u8));
    /// assert_eq!(image, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    /// ```
    pub fn par_chunks_mut<T: Send, F: Fn(usize, &mut [T]) + Sync>(
        &self,
        data: &mut [T],
        chunk_len: usize,
        body: F,
    ) {
        self.par_chunks_mut_with(&Strategy::default(), data, chunk_len, body);
    }

    /// [`par_chunks_mut`](Self::par_chunks_mut) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![1u64; 10];
    /// pool.par_chunks_mut_with(&Strategy::Simple { grain: 1 }, &mut v, 3, |_, c| {
    ///     let n = c.len() as u64;
    ///     c.iter_mut().for_each(|x| *x = n);
    /// });
    /// assert_eq!(v, [3, 3, 3, 3, 3, 3, 3, 3, 3, 1]);
    /// ```
    pub fn par_chunks_mut_with<T: Send, F: Fn(usize, &mut [T]) + Sync>(
        &self,
        strategy: &Strategy,
        data: &mut [T],
        chunk_len: usize,
        body: F,
    ) {
        par_chunks_mut_impl(self.registry(), strategy, data, chunk_len, body);
    }

    /// A vector of `map(i)` for every `i` in `range`, in order, computed in parallel (rayon's
    /// `range.into_par_iter().map(map).collect::<Vec<_>>()`). `T` needs neither `Default` nor
    /// `Clone`.
    ///
    /// # Panics
    ///
    /// If `map` panics: the panic propagates once every thread of the call has stopped, and every
    /// value `map` returned until then has been dropped, as rayon's `collect` does. Also if
    /// `range` is longer than a `Vec<T>` can hold, as `Vec::with_capacity` does.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let names = pool.map_collect(0..3, |i| format!("item-{i}"));
    /// assert_eq!(names, ["item-0", "item-1", "item-2"]);
    /// ```
    pub fn map_collect<T: Send, F: Fn(usize) -> T + Sync>(
        &self,
        range: Range<usize>,
        map: F,
    ) -> Vec<T> {
        self.map_collect_with(&Strategy::default(), range, map)
    }

    /// [`map_collect`](Self::map_collect) with an explicit strategy.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let squares = pool.map_collect_with(&Strategy::Guided { min_chunk: 4 }, 5..10, |i| i * i);
    /// assert_eq!(squares, [25, 36, 49, 64, 81]);
    /// ```
    pub fn map_collect_with<T: Send, F: Fn(usize) -> T + Sync>(
        &self,
        strategy: &Strategy,
        range: Range<usize>,
        map: F,
    ) -> Vec<T> {
        collect::map_collect(self.registry(), strategy, range, map)
    }

    /// Sorts `data` with the comparator `compare`, in parallel, not preserving the order of equal
    /// elements (rayon's `par_sort_unstable_by`). See the module docs of `slice/sort.rs` for the
    /// algorithm: a quicksort whose first partition is parallel, then pieces shared by the
    /// threads (a faster thread sorts more of them). It works in place: it allocates only a pivot
    /// sample and a list of pieces, never a copy of `data`. Unlike rayon, `T` must be `Sync` as
    /// well (the threads partitioning in parallel read the same pivot).
    ///
    /// # Panics
    ///
    /// If `compare` panics: the panic propagates once every thread of the sort has stopped, and
    /// `data` holds a permutation of its input. If `compare` is not a total order, the order
    /// `data` is left in is unspecified and the sort may panic, as `slice::sort_unstable_by` may;
    /// either way it takes O(n log n) comparisons and leaves a permutation.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v = vec![5, 3, 9, 1];
    /// pool.sort_unstable_by(&mut v, |a, b| b.cmp(a));
    /// assert_eq!(v, [9, 5, 3, 1]);
    /// ```
    pub fn sort_unstable_by<T, F>(&self, data: &mut [T], compare: F)
    where
        T: Send + Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        self.sort_unstable_by_with(&Strategy::default(), data, compare);
    }

    /// [`sort_unstable_by`](Self::sort_unstable_by) with an explicit strategy for its parallel
    /// steps.
    ///
    /// ```
    /// use parbench_scheduler::Strategy;
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v: Vec<u32> = (0..100_000).rev().collect();
    /// pool.sort_unstable_by_with(&Strategy::Static, &mut v, u32::cmp);
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    pub fn sort_unstable_by_with<T, F>(&self, strategy: &Strategy, data: &mut [T], compare: F)
    where
        T: Send + Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::sort_unstable_by(self.registry(), strategy, data, compare);
    }

    /// Sorts `data` by the key `key(x)`, in parallel, not preserving the order of equal elements
    /// (rayon's `par_sort_unstable_by_key`). The key is computed at every comparison.
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut words = vec!["ccc", "a", "bb"];
    /// pool.sort_unstable_by_key(&mut words, |w| w.len());
    /// assert_eq!(words, ["a", "bb", "ccc"]);
    /// ```
    pub fn sort_unstable_by_key<T, K, F>(&self, data: &mut [T], key: F)
    where
        T: Send + Sync,
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        self.sort_unstable_by_with(&Strategy::default(), data, |a, b| key(a).cmp(&key(b)));
    }

    /// Sorts `data` in ascending order, in parallel, not preserving the order of equal elements
    /// (rayon's `par_sort_unstable`).
    ///
    /// ```
    /// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let mut v: Vec<u64> = (0..200_000).map(|i| (i * 7919) % 200_003).collect();
    /// pool.sort_unstable(&mut v);
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    pub fn sort_unstable<T: Ord + Send + Sync>(&self, data: &mut [T]) {
        self.sort_unstable_by_with(&Strategy::default(), data, T::cmp);
    }
}

/// [`ThreadPool::for_each_mut`] on the current pool (the one the calling thread works for or
/// is installed into, else the global pool).
///
/// ```
/// let mut v = vec![1, 2, 3];
/// parbench_scheduler::for_each_mut(&mut v, |x| *x *= 10);
/// assert_eq!(v, [10, 20, 30]);
/// ```
pub fn for_each_mut<T: Send, F: Fn(&mut T) + Sync>(data: &mut [T], body: F) {
    for_each_mut_with(&Strategy::default(), data, body);
}

/// [`ThreadPool::for_each_mut_with`] on the current pool.
///
/// ```
/// let mut v = vec![1, 2, 3];
/// parbench_scheduler::for_each_mut_with(&parbench_scheduler::Strategy::Static, &mut v, |x| *x += 1);
/// assert_eq!(v, [2, 3, 4]);
/// ```
pub fn for_each_mut_with<T: Send, F: Fn(&mut T) + Sync>(
    strategy: &Strategy,
    data: &mut [T],
    body: F,
) {
    for_each_mut_impl(current_registry(), strategy, data, body);
}

/// [`ThreadPool::for_each_indexed_mut`] on the current pool.
///
/// ```
/// let mut v = vec![0; 4];
/// parbench_scheduler::for_each_indexed_mut(&mut v, |i, x| *x = i + 1);
/// assert_eq!(v, [1, 2, 3, 4]);
/// ```
pub fn for_each_indexed_mut<T: Send, F: Fn(usize, &mut T) + Sync>(data: &mut [T], body: F) {
    for_each_indexed_mut_with(&Strategy::default(), data, body);
}

/// [`ThreadPool::for_each_indexed_mut_with`] on the current pool.
///
/// ```
/// let mut v = vec![0; 4];
/// let strategy = parbench_scheduler::Strategy::Dynamic { chunk: 1 };
/// parbench_scheduler::for_each_indexed_mut_with(&strategy, &mut v, |i, x| *x = 2 * i);
/// assert_eq!(v, [0, 2, 4, 6]);
/// ```
pub fn for_each_indexed_mut_with<T: Send, F: Fn(usize, &mut T) + Sync>(
    strategy: &Strategy,
    data: &mut [T],
    body: F,
) {
    for_each_indexed_mut_impl(current_registry(), strategy, data, body);
}

/// [`ThreadPool::par_chunks_mut`] on the current pool.
///
/// ```
/// let mut v = vec![0; 5];
/// parbench_scheduler::par_chunks_mut(&mut v, 2, |k, chunk| chunk.fill(k));
/// assert_eq!(v, [0, 0, 1, 1, 2]);
/// ```
pub fn par_chunks_mut<T: Send, F: Fn(usize, &mut [T]) + Sync>(
    data: &mut [T],
    chunk_len: usize,
    body: F,
) {
    par_chunks_mut_with(&Strategy::default(), data, chunk_len, body);
}

/// [`ThreadPool::par_chunks_mut_with`] on the current pool.
///
/// ```
/// let mut v = vec![0; 5];
/// let strategy = parbench_scheduler::Strategy::Guided { min_chunk: 1 };
/// parbench_scheduler::par_chunks_mut_with(&strategy, &mut v, 3, |k, chunk| chunk.fill(k + 1));
/// assert_eq!(v, [1, 1, 1, 2, 2]);
/// ```
pub fn par_chunks_mut_with<T: Send, F: Fn(usize, &mut [T]) + Sync>(
    strategy: &Strategy,
    data: &mut [T],
    chunk_len: usize,
    body: F,
) {
    par_chunks_mut_impl(current_registry(), strategy, data, chunk_len, body);
}

/// [`ThreadPool::map_collect`] on the current pool.
///
/// ```
/// let v = parbench_scheduler::map_collect(0..4, |i| i as f64 / 2.0);
/// assert_eq!(v, [0.0, 0.5, 1.0, 1.5]);
/// ```
pub fn map_collect<T: Send, F: Fn(usize) -> T + Sync>(range: Range<usize>, map: F) -> Vec<T> {
    map_collect_with(&Strategy::default(), range, map)
}

/// [`ThreadPool::map_collect_with`] on the current pool.
///
/// ```
/// let v = parbench_scheduler::map_collect_with(&parbench_scheduler::Strategy::Static, 0..3, |i| vec![i; i]);
/// assert_eq!(v, [vec![], vec![1], vec![2, 2]]);
/// ```
pub fn map_collect_with<T: Send, F: Fn(usize) -> T + Sync>(
    strategy: &Strategy,
    range: Range<usize>,
    map: F,
) -> Vec<T> {
    collect::map_collect(current_registry(), strategy, range, map)
}

/// [`ThreadPool::sort_unstable_by`] on the current pool.
///
/// ```
/// let mut v = vec![(2, 'b'), (1, 'a'), (3, 'c')];
/// parbench_scheduler::sort_unstable_by(&mut v, |x, y| x.0.cmp(&y.0));
/// assert_eq!(v, [(1, 'a'), (2, 'b'), (3, 'c')]);
/// ```
pub fn sort_unstable_by<T, F>(data: &mut [T], compare: F)
where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    sort_unstable_by_with(&Strategy::default(), data, compare);
}

/// [`ThreadPool::sort_unstable_by_with`] on the current pool.
///
/// ```
/// let mut v = vec![3, 1, 2];
/// let strategy = parbench_scheduler::Strategy::Simple { grain: 1 };
/// parbench_scheduler::sort_unstable_by_with(&strategy, &mut v, |a, b| a.cmp(b));
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn sort_unstable_by_with<T, F>(strategy: &Strategy, data: &mut [T], compare: F)
where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    sort::sort_unstable_by(current_registry(), strategy, data, compare);
}

/// [`ThreadPool::sort_unstable_by_key`] on the current pool.
///
/// ```
/// let mut v = vec![-3i32, 1, -2];
/// parbench_scheduler::sort_unstable_by_key(&mut v, |x| x.abs());
/// assert_eq!(v, [1, -2, -3]);
/// ```
pub fn sort_unstable_by_key<T, K, F>(data: &mut [T], key: F)
where
    T: Send + Sync,
    K: Ord,
    F: Fn(&T) -> K + Sync,
{
    sort_unstable_by_with(&Strategy::default(), data, |a, b| key(a).cmp(&key(b)));
}

/// [`ThreadPool::sort_unstable`] on the current pool.
///
/// ```
/// let mut v = vec![3, 1, 2];
/// parbench_scheduler::sort_unstable(&mut v);
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn sort_unstable<T: Ord + Send + Sync>(data: &mut [T]) {
    sort_unstable_by_with(&Strategy::default(), data, T::cmp);
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::{ThreadPoolBuilder, Timespan};

    /// Chunks longer than half of `usize::MAX` (possible with zero-sized elements): the element
    /// range of the second chunk index would end at twice the chunk length, past `usize::MAX`.
    #[test]
    fn par_chunks_mut_hands_out_chunks_longer_than_half_the_address_space() {
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .timespan(Timespan::Fixed(Duration::from_micros(5)))
            .build()
            .unwrap();
        let mut data = [(); usize::MAX];
        let strategies = [
            Strategy::default(),
            Strategy::tree_no_timespan(),
            Strategy::Static,
            Strategy::Dynamic { chunk: 1 },
            Strategy::Guided { min_chunk: 1 },
            Strategy::Simple { grain: 1 },
        ];
        for chunk_len in [usize::MAX / 2 + 1, usize::MAX - 1, usize::MAX] {
            let expected: Vec<(usize, usize)> = data
                .chunks_mut(chunk_len)
                .map(|chunk| chunk.len())
                .enumerate()
                .collect();
            for strategy in &strategies {
                let seen = Mutex::new(Vec::new());
                pool.par_chunks_mut_with(strategy, &mut data, chunk_len, |k, chunk| {
                    seen.lock().unwrap().push((k, chunk.len()));
                });
                let mut seen = seen.into_inner().unwrap();
                seen.sort_unstable();
                assert_eq!(seen, expected, "chunk_len {chunk_len}, {strategy:?}");
            }
        }
    }
}
