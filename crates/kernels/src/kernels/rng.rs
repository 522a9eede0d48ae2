//! The seeded generator kernels build their inputs with: SplitMix64, small, fast and good enough
//! for test data, and the same on every platform so inputs (and results) are reproducible.

/// SplitMix64's finaliser: a bijective mix of `z`'s bits, for the tags whose sums the task
/// kernels' checks compare (equal sums from different sets of tags are as rare as collisions of
/// random numbers).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.state)
    }

    /// Uniform in `0..bound` (`bound > 0`); the multiply-shift bias is irrelevant for test data.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next_u64()) * bound as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_below_the_bound_and_is_reproducible() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for bound in 1..200 {
            let x = a.below(bound);
            assert!(x < bound);
            assert_eq!(x, b.below(bound));
        }
    }
}
