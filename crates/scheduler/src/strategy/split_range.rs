//! `SplitRange`: the rest of a tree piece, run by its owner from the low end and split in place by
//! thieves.
//!
//! After its timespan a tree thread keeps what is left of its piece here instead of in a local
//! range. It takes its next grain with [`SplitRange::claim`]; the thief of one of its offers takes
//! the upper half of what is left *when it runs the offer* with [`SplitRange::split`]. So an offer
//! that nobody steals costs no work to take back, and one that is stolen late hands over half of
//! the current rest, not half of the rest when it was made.
//!
//! Both operations are a compare-and-swap of one word holding the start and end offsets, so a
//! claim and a split never hand out the same iteration: the word's modification order alone
//! makes the ranges they return disjoint, whatever the memory orderings. Offsets are 32 bits: a
//! rest of more than `u32::MAX` iterations is not kept here ([`SplitRange::new`] returns `None`).

use std::ops::Range;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

/// A range shared by its owner, which takes from the low end, and thieves, which halve it.
pub(crate) struct SplitRange {
    /// The first iteration of the range when it was made; the word holds offsets from it.
    base: usize,
    /// `start << 32 | end`, offsets from `base`; the range is empty once `start >= end`.
    bounds: AtomicU64,
}

impl SplitRange {
    /// The range `range`, or `None` if it is longer than `u32::MAX` iterations.
    pub(crate) fn new(range: Range<usize>) -> Option<Self> {
        let len = u32::try_from(range.len()).ok()?;
        Some(SplitRange {
            base: range.start,
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

    /// Takes the first `step` iterations left (fewer if fewer are left; `None` if none are).
    pub(crate) fn claim(&self, step: usize) -> Option<Range<usize>> {
        self.update(|start, end| {
            let taken = start + step.max(1).min(end - start);
            (start < end).then_some(((taken, end), start..taken))
        })
    }

    /// Takes the upper half of what is left, rounded down (`None` if fewer than two iterations
    /// are left: the owner keeps at least one).
    pub(crate) fn split(&self) -> Option<Range<usize>> {
        self.update(|start, end| {
            let mid = start + (end - start) / 2;
            (end >= start + 2).then_some(((start, mid), mid..end))
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
    fn claims_and_splits_hand_out_every_iteration_once() {
        for len in 0..40usize {
            for step in 1..6usize {
                for split_every in 1..4usize {
                    let range = SplitRange::new(100..100 + len).unwrap();
                    let mut seen = vec![0u8; len];
                    let mut pending = vec![range];
                    let mut round = 0;
                    while let Some(current) = pending.pop() {
                        while let Some(claimed) = current.claim(step) {
                            assert!(claimed.len() <= step && !claimed.is_empty());
                            claimed.for_each(|i| seen[i - 100] += 1);
                            round += 1;
                            if round % split_every == 0 {
                                if let Some(upper) = current.split() {
                                    assert!(current.len() >= 1, "the owner keeps one");
                                    pending.push(SplitRange::new(upper).unwrap());
                                }
                            }
                        }
                        assert_eq!(current.split(), None);
                    }
                    assert!(
                        seen.iter().all(|&n| n == 1),
                        "len {len} step {step}: {seen:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_split_takes_the_upper_half_and_leaves_at_least_one() {
        let range = SplitRange::new(10..15).unwrap();
        assert_eq!(range.split(), Some(12..15));
        assert_eq!(range.split(), Some(11..12));
        assert_eq!(range.split(), None);
        assert_eq!(range.len(), 1);
        assert_eq!(range.claim(8), Some(10..11));
        assert_eq!(range.claim(8), None);
        assert_eq!(range.len(), 0);
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

    /// The owner claims one iteration at a time while a thief splits twice (a second offer
    /// stolen by the same thread): every iteration of 0..4 is run exactly once, in every
    /// interleaving.
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
                        if let Some(stolen) = range.split() {
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
}
