//! An executor wrapper for kernels whose result cannot show a lost or doubled task: it checks
//! that every `for_each_task` call ran each of its tasks exactly once, and that every
//! `for_chunks` call's chunks covered its range exactly once ([`ChunkMoments`]).
//!
//! A branch-and-bound search (`qap`, `floorplan`) finds its optimum without the subtrees it
//! prunes, so a task the executor never runs often leaves the optimum right, and a task it runs
//! twice always does; either way the run searched another tree than the one it is timed for. The
//! tasks below the top are spawned only where the bound at that moment allows, so no fixed list
//! of them exists to compare with afterwards; each call is checked on its own instead, against
//! the `n` it asked for.
//!
//! Each task adds a tag of its index ([`mix64`], a bijection, so no two indices share a tag) to a
//! sum in the call's frame, and the call compares the sum with the tags of `0..n` when it
//! returns. A task lost, run twice, or one run in place of another changes the sum; several
//! errors cancel out only as rarely as random 64-bit numbers collide. That is one atomic add per
//! task and no allocation: a branch-and-bound run makes hundreds of calls, each inside the timed
//! section, and a flag per task (a `Vec<AtomicBool>` per call) cost an allocation per call. The
//! sum sits on a line of its own in the caller's frame, so that tasks on other threads do not take
//! the caller's lines. Measured (one binary against the build without the check, 20–24
//! alternating processes): qap and floorplan at one thread within 0.5 % under every scheduler;
//! at two threads floorplan level and qap within its noise (tree 328 → 334 µs, dynamic 350 → 355,
//! static 413 → 410).
//!
//! The tags cannot leave the timed call: they are the only record of which tasks it ran. Timing
//! an unchecked search and checking a second, untimed one (as `trapezoid` checks its coverage)
//! misses every fault the kernels' fault test confines to the timed search and the optimum
//! survives: when tried (29 Nov 2026), all 7 faults of each of the timed search's task calls,
//! 7 of `qap`'s and 3 of `floorplan`'s (49 and 21 cases).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::executor::{Executor, ExecutorError, ExecutorKind};
use crate::kernels::rng::mix64;

/// `inner`, with every [`Executor::for_each_task`] call checked to run each task exactly once,
/// and every [`Executor::for_chunks`] call each index of its range.
pub(crate) struct CheckedTasks<'e> {
    inner: &'e dyn Executor,
    /// Calls that returned `Ok` without running each of their tasks exactly once.
    wrong_calls: AtomicU64,
}

impl<'e> CheckedTasks<'e> {
    pub(crate) fn new(inner: &'e dyn Executor) -> Self {
        CheckedTasks {
            inner,
            wrong_calls: AtomicU64::new(0),
        }
    }

    /// How many calls so far ran a task (or a chunk's index) twice or more, or never, or one in
    /// place of another.
    pub(crate) fn wrong_calls(&self) -> u64 {
        // Relaxed: read after the calls that counted have returned.
        self.wrong_calls.load(Relaxed)
    }
}

/// A value on a cache line (and the adjacent-line prefetch pair) of its own: the sum lives in the
/// calling thread's frame, and the tasks that add to it from other threads must not take the lines
/// the caller is using meanwhile.
#[repr(align(128))]
struct LineOfItsOwn<T>(T);

/// Task `index`'s tag: distinct for distinct indices, and never 0 (`mix64` maps only 0 to 0), so
/// that task 0 lost or doubled shows too.
fn tag(index: usize) -> u64 {
    mix64(index as u64 + 1)
}

/// The count, sum and sum of squares of `index + 1` over the indices a `for_chunks` call ran,
/// modulo 2^64: O(1) per chunk however long (a tag per index, as tasks get, would cost a hash per
/// trapezoid of a `trapezoid` run with blocks of one). An index run twice in place of another
/// changes the sum (by their difference, below 2^64), so one doubled, lost or swapped index always
/// shows; among several, only doubled and lost sets with equal sums and equal sums of squares
/// cancel out (three each at least, such as {1, 5, 6} and {2, 3, 7}).
#[derive(Default)]
struct ChunkMoments {
    count: AtomicU64,
    sum: AtomicU64,
    squares: AtomicU64,
}

impl ChunkMoments {
    fn add(&self, chunk: Range<usize>) {
        // An empty or reversed chunk runs nothing.
        if chunk.end <= chunk.start {
            return;
        }
        let (sum_end, squares_end) = sums_up_to(chunk.end);
        let (sum_start, squares_start) = sums_up_to(chunk.start);
        // Relaxed: the totals are read after the call has joined every chunk.
        self.count
            .fetch_add((chunk.end - chunk.start) as u64, Relaxed);
        self.sum.fetch_add(sum_end.wrapping_sub(sum_start), Relaxed);
        self.squares
            .fetch_add(squares_end.wrapping_sub(squares_start), Relaxed);
    }

    fn same_as(&self, other: &ChunkMoments) -> bool {
        let read = |moments: &ChunkMoments| {
            [&moments.count, &moments.sum, &moments.squares].map(|value| value.load(Relaxed))
        };
        read(self) == read(other)
    }
}

/// Σ k and Σ k² for k = 1…m, modulo 2^64: the divisions by 2 and 3 are made on the factor they
/// divide before anything is multiplied, so the products may wrap without changing the result.
fn sums_up_to(m: usize) -> (u64, u64) {
    let m = m as u128;
    let (a, b) = if m % 2 == 0 {
        (m / 2, m + 1)
    } else {
        (m, m.div_ceil(2))
    };
    let c = 2 * m + 1;
    // One of m, m + 1, 2m + 1 is a multiple of 3 (halving m or m + 1 keeps that factor).
    let squares = match (a % 3, b % 3) {
        _ if c % 3 == 0 => a.wrapping_mul(b).wrapping_mul(c / 3),
        (0, _) => (a / 3).wrapping_mul(b).wrapping_mul(c),
        _ => a.wrapping_mul(b / 3).wrapping_mul(c),
    };
    // Truncation is the point: the totals are compared modulo 2^64.
    (a.wrapping_mul(b) as u64, squares as u64)
}

impl Executor for CheckedTasks<'_> {
    fn kind(&self) -> ExecutorKind {
        self.inner.kind()
    }

    fn threads(&self) -> usize {
        self.inner.threads()
    }

    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        let moments = LineOfItsOwn(ChunkMoments::default());
        self.inner.for_chunks(range.clone(), &|chunk| {
            moments.0.add(chunk.clone());
            body(chunk);
        });
        let expected = ChunkMoments::default();
        expected.add(range);
        if !moments.0.same_as(&expected) {
            self.wrong_calls.fetch_add(1, Relaxed);
        }
    }

    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        self.inner.join(a, b)
    }

    fn for_each_task(
        &self,
        n: usize,
        task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
    ) -> Result<(), ExecutorError> {
        let tags = LineOfItsOwn(AtomicU64::new(0));
        self.inner.for_each_task(n, &|index| {
            // Relaxed: the sum is read after the call has joined every task.
            tags.0.fetch_add(tag(index), Relaxed);
            task(index)
        })?;
        let expected = (0..n).fold(0u64, |sum, index| sum.wrapping_add(tag(index)));
        if tags.0.into_inner() != expected {
            self.wrong_calls.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    fn threads_created(&self) -> u64 {
        self.inner.threads_created()
    }

    fn take_error(&self) -> Option<ExecutorError> {
        self.inner.take_error()
    }
}

/// Executors that run the wrong tasks or chunks, for the tests of the checks that must catch them.
#[cfg(test)]
pub(crate) mod broken {
    use super::*;
    use crate::executor::SeqExecutor;

    /// Runs `for_each_task(n, …)` as the task indices `tasks(n)` and `for_chunks(range, …)` as
    /// the chunks `chunks(range)`, one after the other (a broken executor unless they are `0..n`,
    /// and chunks that cover `range` once, in some order).
    pub(crate) struct Order {
        pub(crate) tasks: fn(usize) -> Vec<usize>,
        pub(crate) chunks: fn(Range<usize>) -> Vec<Range<usize>>,
    }

    impl Order {
        /// Every task and chunk right, in order; change one field to break the other.
        pub(crate) const RIGHT: Order = Order {
            tasks: |n| (0..n).collect(),
            chunks: |range| vec![range],
        };
    }

    impl Executor for Order {
        fn kind(&self) -> ExecutorKind {
            ExecutorKind::Seq
        }
        fn threads(&self) -> usize {
            1
        }
        fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
            (self.chunks)(range).into_iter().for_each(body);
        }
        fn join(
            &self,
            a: &mut (dyn FnMut() + Send),
            b: &mut (dyn FnMut() + Send),
        ) -> Result<(), ExecutorError> {
            SeqExecutor::new().join(a, b)
        }
        fn for_each_task(
            &self,
            n: usize,
            task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
        ) -> Result<(), ExecutorError> {
            (self.tasks)(n).into_iter().try_for_each(task)
        }
    }

    /// The executor entry points a kernel can call (through [`crate::par_chunks_mut`],
    /// [`crate::parallel_sum`] and [`crate::parallel_for`] too, which a [`Faulty`] executor runs
    /// through [`Executor::for_chunks`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub(crate) enum Entry {
        Chunks,
        Tasks,
        Join,
    }

    /// Where in a call's pieces (the indices of a `for_chunks` range, the tasks of a
    /// `for_each_task` call) a fault strikes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum At {
        First,
        Middle,
        Last,
    }

    /// What a [`Faulty`] executor does wrong in the call it breaks.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Fault {
        /// One piece runs twice in place of its neighbour: the first in place of the second,
        /// the last in place of the one before it, the one before the middle in place of the
        /// middle one. A call of one piece runs it twice.
        Doubled(At),
        /// One piece never runs.
        Skipped(At),
        /// Every piece runs once, then the first once more.
        Again,
        /// `join` runs its first closure twice and its second never.
        JoinFirstTwice,
        /// `join` runs its second closure twice and its first never.
        JoinSecondTwice,
    }

    impl Fault {
        /// Every fault of `for_chunks` and `for_each_task` calls.
        pub(crate) const OF_PIECES: [Fault; 7] = [
            Fault::Doubled(At::First),
            Fault::Doubled(At::Middle),
            Fault::Doubled(At::Last),
            Fault::Skipped(At::First),
            Fault::Skipped(At::Middle),
            Fault::Skipped(At::Last),
            Fault::Again,
        ];
        /// Every fault of `join` calls.
        pub(crate) const OF_JOIN: [Fault; 2] = [Fault::JoinFirstTwice, Fault::JoinSecondTwice];

        /// The pieces `0..n` as this fault runs them; `None` if it cannot apply to `n` pieces.
        pub(crate) fn pieces(self, n: usize) -> Option<Vec<usize>> {
            if n == 0 {
                return None;
            }
            let mut pieces: Vec<usize> = (0..n).collect();
            let position = |at| match at {
                At::First => 0,
                At::Middle => n / 2,
                At::Last => n - 1,
            };
            match self {
                Fault::Doubled(_) if n == 1 => pieces.push(0),
                Fault::Doubled(at) => {
                    let (victim, twice) = match at {
                        At::First => (1, 0),
                        At::Middle => (n / 2, n / 2 - 1),
                        At::Last => (n - 2, n - 1),
                    };
                    pieces[victim] = twice;
                }
                Fault::Skipped(at) => {
                    pieces.remove(position(at));
                }
                Fault::Again => pieces.push(0),
                Fault::JoinFirstTwice | Fault::JoinSecondTwice => return None,
            }
            Some(pieces)
        }
    }

    /// One call a [`Faulty`] executor saw: its entry point, and whether it was made from inside
    /// another call's piece.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Call {
        pub(crate) entry: Entry,
        pub(crate) nested: bool,
    }

    /// Runs everything on the calling thread, right except for the `call`-th call (counting from
    /// 0) of `entry`, which it breaks by `fault`; it logs every call it sees. With `fault: None`
    /// it is a correct executor, run to learn the calls a kernel makes.
    pub(crate) struct Faulty {
        threads: usize,
        fault: Option<(Entry, usize, Fault)>,
        /// Calls of each entry point so far, by `Entry as usize`.
        seen: [AtomicU64; 3],
        /// Pieces now running (a call made while it is above 0 is nested).
        depth: AtomicU64,
        /// Whether the fault has struck (it cannot in a call of no pieces).
        struck: std::sync::atomic::AtomicBool,
        log: std::sync::Mutex<Vec<Call>>,
    }

    impl Faulty {
        /// A correct executor that says it has `threads` threads.
        pub(crate) fn right(threads: usize) -> Self {
            Faulty {
                threads,
                fault: None,
                seen: Default::default(),
                depth: AtomicU64::new(0),
                struck: Default::default(),
                log: Default::default(),
            }
        }

        /// Breaks the `call`-th call of `entry` by `fault`.
        pub(crate) fn breaking(threads: usize, entry: Entry, call: usize, fault: Fault) -> Self {
            Faulty {
                fault: Some((entry, call, fault)),
                ..Faulty::right(threads)
            }
        }

        /// Whether the fault struck: some call ran the wrong pieces.
        pub(crate) fn struck(&self) -> bool {
            self.struck.load(Relaxed)
        }

        /// Every call so far, in the order they were made.
        pub(crate) fn calls(&self) -> Vec<Call> {
            self.log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        }

        /// Logs a call of `entry` and returns the fault to break it by, if any.
        fn enter(&self, entry: Entry) -> Option<Fault> {
            let nested = self.depth.load(Relaxed) > 0;
            self.log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Call { entry, nested });
            // Relaxed: everything runs on one thread.
            let index = self.seen[entry as usize].fetch_add(1, Relaxed) as usize;
            match self.fault {
                Some((e, call, fault)) if e == entry && call == index => Some(fault),
                _ => None,
            }
        }

        /// The pieces `0..n` of a call broken by `fault`, if any, as they run.
        fn pieces(&self, n: usize, fault: Option<Fault>) -> Vec<usize> {
            match fault.and_then(|fault| fault.pieces(n)) {
                Some(pieces) => {
                    self.struck.store(true, Relaxed);
                    pieces
                }
                None => (0..n).collect(),
            }
        }

        fn inside<T>(&self, piece: impl FnOnce() -> T) -> T {
            self.depth.fetch_add(1, Relaxed);
            let value = piece();
            self.depth.fetch_sub(1, Relaxed);
            value
        }
    }

    impl Executor for Faulty {
        fn kind(&self) -> ExecutorKind {
            ExecutorKind::Seq
        }
        fn threads(&self) -> usize {
            self.threads
        }
        fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
            let fault = self.enter(Entry::Chunks);
            let indices = self.pieces(range.len(), fault);
            // Consecutive indices run as one chunk, so a right call is one chunk, and a broken
            // one as few as its fault allows.
            let mut k = 0;
            while k < indices.len() {
                let start = indices[k];
                let mut end = start + 1;
                k += 1;
                while k < indices.len() && indices[k] == end {
                    end += 1;
                    k += 1;
                }
                self.inside(|| body(range.start + start..range.start + end));
            }
        }
        fn join(
            &self,
            a: &mut (dyn FnMut() + Send),
            b: &mut (dyn FnMut() + Send),
        ) -> Result<(), ExecutorError> {
            let fault = self.enter(Entry::Join);
            let (first_runs, second_runs) = match fault {
                Some(Fault::JoinFirstTwice) => (2, 0),
                Some(Fault::JoinSecondTwice) => (0, 2),
                _ => (1, 1),
            };
            if (first_runs, second_runs) != (1, 1) {
                self.struck.store(true, Relaxed);
            }
            (0..first_runs).for_each(|_| self.inside(&mut *a));
            (0..second_runs).for_each(|_| self.inside(&mut *b));
            Ok(())
        }
        fn for_each_task(
            &self,
            n: usize,
            task: &(dyn Fn(usize) -> Result<(), ExecutorError> + Sync),
        ) -> Result<(), ExecutorError> {
            let fault = self.enter(Entry::Tasks);
            self.pieces(n, fault)
                .into_iter()
                .try_for_each(|index| self.inside(|| task(index)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::broken::Order;
    use super::*;
    use crate::executor::SeqExecutor;

    /// How many calls of 3 tasks `checked` finds wrong on an executor running `order`.
    fn wrong_calls_of(order: fn(usize) -> Vec<usize>) -> u64 {
        let exec = Order {
            tasks: order,
            ..Order::RIGHT
        };
        let checked = CheckedTasks::new(&exec);
        checked.for_each_task(3, &|_| Ok(())).unwrap();
        checked.wrong_calls()
    }

    /// How many calls over `10..20` `checked` finds wrong on an executor running `chunks`.
    fn wrong_chunk_calls_of(chunks: fn(Range<usize>) -> Vec<Range<usize>>) -> u64 {
        let exec = Order {
            chunks,
            ..Order::RIGHT
        };
        let checked = CheckedTasks::new(&exec);
        checked.for_chunks(10..20, &|_| {});
        checked.wrong_calls()
    }

    #[test]
    fn counts_chunk_calls_that_ran_an_index_twice_or_never() {
        assert_eq!(wrong_chunk_calls_of(|range| vec![range]), 0);
        assert_eq!(
            wrong_chunk_calls_of(|_| vec![15..20, 10..12, 12..12, 12..15]),
            0,
            "any split, any order, empty chunks"
        );
        // Chunk 10..11 run twice in place of its neighbour 11..12, and other swaps.
        assert_eq!(wrong_chunk_calls_of(|_| vec![10..11, 10..11, 12..20]), 1);
        assert_eq!(wrong_chunk_calls_of(|_| vec![10..12, 11..20]), 1, "overlap");
        assert_eq!(wrong_chunk_calls_of(|_| vec![10..15, 16..20]), 1, "a gap");
        assert_eq!(wrong_chunk_calls_of(|_| vec![11..15, 15..21]), 1, "shifted");
        // Two doubled and two lost with equal sums (10 + 13 = 11 + 12): the squares differ.
        assert_eq!(
            wrong_chunk_calls_of(|_| vec![10..11, 10..11, 13..14, 13..20]),
            1
        );
    }

    #[test]
    fn faults_run_the_pieces_they_say() {
        use super::broken::{At, Fault};
        let of_five = |fault: Fault| fault.pieces(5).unwrap();
        assert_eq!(of_five(Fault::Doubled(At::First)), [0, 0, 2, 3, 4]);
        assert_eq!(of_five(Fault::Doubled(At::Middle)), [0, 1, 1, 3, 4]);
        assert_eq!(of_five(Fault::Doubled(At::Last)), [0, 1, 2, 4, 4]);
        assert_eq!(of_five(Fault::Skipped(At::First)), [1, 2, 3, 4]);
        assert_eq!(of_five(Fault::Skipped(At::Middle)), [0, 1, 3, 4]);
        assert_eq!(of_five(Fault::Skipped(At::Last)), [0, 1, 2, 3]);
        assert_eq!(of_five(Fault::Again), [0, 1, 2, 3, 4, 0]);
        assert_eq!(Fault::Doubled(At::Last).pieces(1), Some(vec![0, 0]));
        assert_eq!(Fault::Skipped(At::Middle).pieces(1), Some(vec![]));
        assert_eq!(Fault::Again.pieces(0), None, "nothing to break");
        for fault in Fault::OF_PIECES {
            assert_ne!(fault.pieces(3), Some(vec![0, 1, 2]), "{fault:?}");
        }
        for fault in Fault::OF_JOIN {
            assert_eq!(fault.pieces(5), None, "{fault:?} only breaks join");
        }
    }

    #[test]
    fn a_faulty_executor_breaks_only_the_call_it_is_told_to() {
        use super::broken::{At, Entry, Fault, Faulty};
        let exec = Faulty::breaking(1, Entry::Chunks, 1, Fault::Doubled(At::First));
        let chunks = std::sync::Mutex::new(Vec::new());
        for _ in 0..3 {
            exec.for_chunks(10..14, &|chunk| {
                chunks.lock().unwrap().push(chunk.clone());
                exec.for_each_task(1, &|_| Ok(())).unwrap();
            });
        }
        assert!(exec.struck());
        assert_eq!(
            chunks.into_inner().unwrap(),
            [10..14, 10..11, 10..11, 12..14, 10..14]
        );
        let calls = exec.calls();
        assert_eq!(calls.len(), 3 + 5);
        assert!(calls.iter().all(|c| c.nested == (c.entry == Entry::Tasks)));
        let (mut first, mut second) = (0, 0);
        let exec = Faulty::breaking(1, Entry::Join, 0, Fault::JoinSecondTwice);
        exec.join(&mut || first += 1, &mut || second += 1).unwrap();
        assert_eq!((first, second), (0, 2));
    }

    #[test]
    fn sums_up_to_agree_with_adding_one_term_at_a_time() {
        let (mut sum, mut squares) = (0u64, 0u64);
        for m in 0..2000_usize {
            assert_eq!(sums_up_to(m), (sum, squares), "m = {m}");
            let k = m as u64 + 1;
            sum = sum.wrapping_add(k);
            squares = squares.wrapping_add(k.wrapping_mul(k));
        }
        // Near the top, where the products wrap: each step adds k and k² modulo 2^64.
        for m in [usize::MAX - 3, 1 << 40, (1 << 34) + 5] {
            let ((sum_before, squares_before), (sum_after, squares_after)) =
                (sums_up_to(m - 1), sums_up_to(m));
            let k = m as u64;
            assert_eq!(sum_after.wrapping_sub(sum_before), k, "m = {m}");
            assert_eq!(
                squares_after.wrapping_sub(squares_before),
                k.wrapping_mul(k),
                "m = {m}"
            );
        }
    }

    #[test]
    fn counts_calls_that_ran_a_task_twice_or_never() {
        let seq = SeqExecutor::new();
        let checked = CheckedTasks::new(&seq);
        checked.for_each_task(5, &|_| Ok(())).unwrap();
        assert_eq!(checked.wrong_calls(), 0);
        // A call from inside a task is checked on its own, against its own count.
        checked
            .for_each_task(2, &|_| checked.for_each_task(3, &|_| Ok(())))
            .unwrap();
        assert_eq!(checked.wrong_calls(), 0);
        assert_eq!(wrong_calls_of(|n| (0..n).rev().collect()), 0, "any order");
        assert_eq!(wrong_calls_of(|n| (0..n).map(|i| i.min(1)).collect()), 1);
        assert_eq!(wrong_calls_of(|n| (1..n).collect()), 1, "task 0 never");
        // A task run again after every task ran once shows, task 0 too (its tag is not 0).
        assert_eq!(wrong_calls_of(|n| (0..n).chain([0]).collect()), 1);
        assert_eq!(wrong_calls_of(|n| (0..n).chain([1]).collect()), 1);
    }
}
