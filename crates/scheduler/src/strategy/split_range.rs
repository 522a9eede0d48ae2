//! `SplitRange`: the rest of a tree piece, run by its owner from the low end and by thieves from
//! the high end.
//!
//! After its timespan a tree thread keeps what is left of its piece here instead of in a local
//! range. It takes its next grain with [`SplitRange::claim`]; the thief of one of its offers takes
//! chunks from the other end with [`SplitRange::take_top`], each sized by what is left *when it
//! takes it*, until the two meet. So an offer that nobody steals costs no work to take back, and
//! one that is stolen late shares out the current rest, not the rest when it was made.
//!
//! Both operations are a compare-and-swap of one word holding the start and end offsets, so a
//! claim and a chunk never hand out the same iteration: the word's modification order alone
//! makes the ranges they return disjoint, whatever the memory orderings. Offsets are 32 bits: a
//! rest of more than `u32::MAX` iterations is not kept here ([`SplitRange::new`] returns `None`).

use std::ops::Range;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

/// A range shared by its owner, which takes from the low end, and thieves, which take from the
/// high end.
pub(crate) struct SplitRange {
    /// The first iteration of the range when it was made; the word holds offsets from it.
    base: usize,
    /// The range's length when it was made: the end offset until a thief takes from the top.
    initial_len: usize,
    /// `start << 32 | end`, offsets from `base`; the range is empty once `start >= end`.
    bounds: AtomicU64,
}

impl SplitRange {
    /// The range `range`, or `None` if it is longer than `u32::MAX` iterations.
    pub(crate) fn new(range: Range<usize>) -> Option<Self> {
        let len = u32::try_from(range.len()).ok()?;
        Some(SplitRange {
            base: range.start,
            initial_len: len as usize,
            bounds: AtomicU64::new(u64::from(len)),
        })
    }

    fn unpack(word: u64) -> (usize, usize) {
        ((word >> 32) as usize, (word & 0xFFFF_FFFF) as usize)
    }

    fn pack(start: usize, end: usize) -> u64 {
        ((start as u64) << 32) | end as u64
    }

    /// How many iterations are left (a snapshot: a thief may split them meanwhile).
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a hint for the owner's next step; the claim re-reads the word.
        let (start, end) = Self::unpack(self.bounds.load(Ordering::Relaxed));
        end.saturating_sub(start)
    }

    /// Whether a thief has taken a chunk from the high end yet (a snapshot, like `len`).
    pub(crate) fn taken_from_top(&self) -> bool {
        // Relaxed: a hint for the owner's next step, as in `len`.
        let (_, end) = Self::unpack(self.bounds.load(Ordering::Relaxed));
        end < self.initial_len
    }

    /// Takes the first `step` iterations left (fewer if fewer are left; `None` if none are).
    pub(crate) fn claim(&self, step: usize) -> Option<Range<usize>> {
        self.update(|start, end| {
            let taken = start + step.max(1).min(end - start);
            (start < end).then_some(((taken, end), start..taken))
        })
    }

    /// Takes a `divisor`-th of what is left, rounded down, from the high end — but at least
    /// `floor` iterations and at least one, and at most what is left (`None` if nothing is left).
    /// A `divisor` of 0 is treated as 1.
    pub(crate) fn take_top(&self, divisor: usize, floor: usize) -> Option<Range<usize>> {
        self.update(|start, end| {
            let left = end.checked_sub(start).filter(|&left| left > 0)?;
            let taken = (left / divisor.max(1)).max(floor).clamp(1, left);
            Some(((start, end - taken), end - taken..end))
        })
    }

    /// Replaces the bounds `(start, end)` by the first element of what `f` returns and returns
    /// its second element, offset by `base`; `None` (and no change) if `f` does.
    fn update(
        &self,
        f: impl Fn(usize, usize) -> Option<((usize, usize), Range<usize>)>,
    ) -> Option<Range<usize>> {
        // Relaxed throughout: every access is a read-modify-write of this one word, whose
        // modification order alone keeps the returned ranges disjoint. Nothing else is published
        // through it: the iterations' effects reach the caller of the loop through the
        // completion tree (`latch.rs`), and the range itself reaches a thief inside the job it
        // stole, whose queue synchronizes.
        let mut word = self.bounds.load(Ordering::Relaxed);
        loop {
            let (start, end) = Self::unpack(word);
            let ((new_start, new_end), taken) = f(start, end)?;
            match self.bounds.compare_exchange(
                word,
                Self::pack(new_start, new_end),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(self.base + taken.start..self.base + taken.end),
                Err(now) => word = now,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn claims_and_chunks_from_the_top_hand_out_every_iteration_once() {
        for len in 0..40usize {
            for step in 1..6usize {
                for (divisor, floor) in [(1, 0), (2, 1), (3, 2), (4, 0), (5, 3)] {
                    for take_every in 1..4usize {
                        let range = SplitRange::new(100..100 + len).unwrap();
                        let mut seen = vec![0u8; len];
                        let mut run = |taken: Range<usize>| taken.for_each(|i| seen[i - 100] += 1);
                        let mut round = 0;
                        while let Some(claimed) = range.claim(step) {
                            assert!(claimed.len() <= step && !claimed.is_empty());
                            run(claimed);
                            round += 1;
                            if round % take_every == 0
                                && let Some(chunk) = range.take_top(divisor, floor)
                            {
                                assert!(!chunk.is_empty());
                                run(chunk);
                            }
                        }
                        assert_eq!(range.take_top(divisor, floor), None);
                        assert!(
                            seen.iter().all(|&n| n == 1),
                            "len {len} step {step} divisor {divisor} floor {floor}: {seen:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_chunk_from_the_top_is_a_share_of_what_is_left_but_not_below_the_floor() {
        let range = SplitRange::new(10..30).unwrap();
        assert_eq!(range.take_top(4, 1), Some(25..30));
        assert_eq!(range.claim(3), Some(10..13));
        // 12 left: a quarter is 3, the floor 4.
        assert_eq!(range.take_top(4, 4), Some(21..25));
        assert_eq!(range.take_top(4, 0), Some(19..21));
        assert_eq!(
            range.take_top(0, 0),
            Some(13..19),
            "a divisor of 0 takes everything"
        );
        assert_eq!(range.take_top(4, 1), None);
        let last = SplitRange::new(0..3).unwrap();
        assert_eq!(last.take_top(8, 0), Some(2..3), "at least one");
        assert_eq!(last.take_top(8, 5), Some(0..2), "at most what is left");
        assert_eq!(last.claim(1), None);
        assert_eq!(last.len(), 0);
    }

    #[test]
    fn only_a_chunk_from_the_top_marks_the_range_as_taken_from() {
        let range = SplitRange::new(100..120).unwrap();
        assert!(!range.taken_from_top());
        range.claim(19);
        assert!(
            !range.taken_from_top(),
            "the owner's claims leave the end where it was"
        );
        assert_eq!(range.take_top(2, 1), Some(119..120));
        assert!(range.taken_from_top());
        assert!(!SplitRange::new(0..0).unwrap().taken_from_top());
    }

    /// Many thieves on one rest (a pool of more than two threads whose idle threads all joined
    /// one owner), started together and yielding after every chunk: with more threads than cores
    /// they are preempted mid-update, and every iteration is still handed out exactly once.
    #[test]
    fn many_thieves_and_the_owner_on_one_rest_hand_out_every_iteration_once() {
        use std::sync::Barrier;
        use std::sync::atomic::AtomicU8;
        const THIEVES: usize = 7;
        let len = 20_000;
        for round in 0..4 {
            let range = SplitRange::new(0..len).unwrap();
            let seen: Vec<AtomicU8> = (0..len).map(|_| AtomicU8::new(0)).collect();
            let start = Barrier::new(THIEVES + 1);
            let run = |taken: Range<usize>| {
                assert!(!taken.is_empty());
                taken.for_each(|i| {
                    seen[i].fetch_add(1, Ordering::Relaxed);
                });
                // Lets the other threads in between, so all of them take part on 2 cores.
                std::thread::yield_now();
            };
            std::thread::scope(|scope| {
                for _ in 0..THIEVES {
                    scope.spawn(|| {
                        start.wait();
                        while let Some(chunk) = range.take_top(2 * (THIEVES + 1), round) {
                            run(chunk);
                        }
                    });
                }
                start.wait();
                while let Some(claimed) = range.claim(1 + round) {
                    run(claimed);
                }
            });
            assert!(
                seen.iter().all(|n| n.load(Ordering::Relaxed) == 1),
                "round {round}"
            );
        }
    }

    #[test]
    fn a_range_longer_than_u32_max_is_refused() {
        assert!(SplitRange::new(0..u32::MAX as usize).is_some());
        assert!(SplitRange::new(0..u32::MAX as usize + 1).is_none());
        let last = usize::MAX - 3..usize::MAX;
        assert_eq!(SplitRange::new(last.clone()).unwrap().claim(10), Some(last));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;

    /// The owner claims one iteration at a time while a thief takes two chunks from the top:
    /// every iteration of 0..4 is run exactly once, in every interleaving.
    #[test]
    fn loom_split_range_hands_out_every_iteration_once() {
        loom::model(|| {
            let range = Arc::new(SplitRange::new(0..4).unwrap());
            let counts: Arc<Vec<AtomicUsize>> =
                Arc::new((0..4).map(|_| AtomicUsize::new(0)).collect());
            let thief = {
                let (range, counts) = (range.clone(), counts.clone());
                loom::thread::spawn(move || {
                    for _ in 0..2 {
                        if let Some(stolen) = range.take_top(2, 1) {
                            stolen.for_each(|i| {
                                counts[i].fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    }
                })
            };
            while let Some(claimed) = range.claim(1) {
                claimed.for_each(|i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                });
            }
            thief.join().unwrap();
            assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        });
    }

    /// More than two threads (P > 2): two thieves, joined through two offers of the same rest,
    /// take chunks from the top of the same word while the owner claims from the bottom; every
    /// iteration of 0..3 is still run exactly once. Interleavings with more than three
    /// preemptions are not explored (with three threads the full model takes minutes).
    #[test]
    fn loom_two_thieves_and_the_owner_hand_out_every_iteration_once() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let range = Arc::new(SplitRange::new(0..3).unwrap());
            let counts: Arc<Vec<AtomicUsize>> =
                Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect());
            let thieves: Vec<_> = (0..2)
                .map(|_| {
                    let (range, counts) = (range.clone(), counts.clone());
                    loom::thread::spawn(move || {
                        if let Some(stolen) = range.take_top(4, 1) {
                            stolen.for_each(|i| {
                                counts[i].fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    })
                })
                .collect();
            while let Some(claimed) = range.claim(1) {
                claimed.for_each(|i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                });
            }
            thieves.into_iter().for_each(|thief| thief.join().unwrap());
            assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        });
    }
}
