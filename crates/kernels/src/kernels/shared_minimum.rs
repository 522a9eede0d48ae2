//! The best solution found so far, shared by all tasks of a branch-and-bound
//! search (`qap`, `floorplan`).
//!
//! The bound is one shared word ([`SharedWord`]: `std` atomics or a parbench-atomics backend,
//! the kernel's `--backend`) that every task reads before expanding a node,
//! so an improvement found in one subtree prunes all others at once. It is
//! lowered with a retrying compare-exchange loop: a task that loses the race
//! to another improvement re-reads the bound and tries again only while its
//! own cost is still lower. The solution behind the bound is kept under a
//! mutex, taken only on (rare) improvements, where the cheaper of two racing
//! improvements wins whatever order they arrive in.

use std::sync::{Mutex, PoisonError};

use crate::kernels::shared_atomics::SharedWord;

/// The lowest cost offered so far and the solution that has it.
pub(crate) struct SharedMinimum<'w, T> {
    bound: &'w SharedWord,
    best: Mutex<Option<(u64, T)>>,
}

impl<'w, T> SharedMinimum<'w, T> {
    /// Nothing found yet; only costs below `initial_bound` are accepted. `word` holds the bound
    /// (it is reset to `initial_bound`, hence `&mut`).
    pub(crate) fn new(word: &'w mut SharedWord, initial_bound: u64) -> Self {
        word.set(initial_bound);
        Self {
            bound: word,
            best: Mutex::new(None),
        }
    }

    /// The cost to beat.
    pub(crate) fn bound(&self) -> u64 {
        // A stale bound is never below the true one, so it can only prune less, never cut off
        // an optimum (the std word loads it Relaxed).
        self.bound.load()
    }

    /// Records `solution()` if `cost` beats the bound.
    pub(crate) fn offer(&self, cost: u64, solution: impl FnOnce() -> T) {
        let mut current = self.bound();
        while cost < current {
            // The solution itself is published under the mutex; the bound is only compared.
            match self.bound.compare_exchange(current, cost) {
                Ok(_) => {
                    let mut best = self.best.lock().unwrap_or_else(PoisonError::into_inner);
                    if best.as_ref().is_none_or(|(kept, _)| cost < *kept) {
                        *best = Some((cost, solution()));
                    }
                    return;
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// The cheapest solution offered, with its cost.
    pub(crate) fn into_best(self) -> Option<(u64, T)> {
        self.best
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::kernels::shared_atomics::AtomicsBackend;

    fn std_word() -> SharedWord {
        SharedWord::new(AtomicsBackend::Std, 0).unwrap()
    }

    #[test]
    fn keeps_the_cheapest_offer_below_the_initial_bound() {
        let mut word = std_word();
        let minimum = SharedMinimum::new(&mut word, 100);
        minimum.offer(150, || "too dear");
        assert!(minimum.bound() == 100);
        minimum.offer(30, || "first");
        minimum.offer(40, || "worse");
        minimum.offer(20, || "best");
        assert_eq!(minimum.bound(), 20);
        assert_eq!(minimum.into_best(), Some((20, "best")));
    }

    #[test]
    fn concurrent_offers_leave_the_minimum() {
        for backend in std::iter::once(AtomicsBackend::Std).chain(
            parbench_atomics::Backend::available()
                .into_iter()
                .map(AtomicsBackend::Fixed),
        ) {
            concurrent_offers_on(backend);
        }
    }

    fn concurrent_offers_on(backend: AtomicsBackend) {
        let mut word = SharedWord::new(backend, 0).unwrap();
        let minimum = SharedMinimum::new(&mut word, u64::MAX);
        std::thread::scope(|scope| {
            for thread in 0..4u64 {
                let minimum = &minimum;
                scope.spawn(move || {
                    for cost in (1..500).rev() {
                        minimum.offer(cost * 4 + thread, || (cost, thread));
                    }
                });
            }
        });
        assert_eq!(minimum.into_best(), Some((4, (1, 0))));
    }
}
