//! The open-loop arrival schedule: seeded exponential inter-arrival times (a Poisson process).
//!
//! TailBench's generator draws the gap to the next request from an exponential distribution with
//! mean `1 / QPS`, independently of when earlier requests complete. Drawing the whole schedule
//! before the run keeps the generator's hot loop down to "sleep until the next time, enqueue", and
//! makes a schedule reproducible from its seed alone.

use crate::kernels::rng::SplitMix64;

/// Arrival times, in nanoseconds after the start of the run, of `count` requests at `qps`
/// requests per second: `t_i = t_(i−1) + Exp(mean 1/qps)`, drawn from a SplitMix64 seeded with
/// `seed`.
///
/// The same seed gives the same unit-rate pattern at every rate, scaled by `1 / qps` (common
/// random numbers: two QPS points differ by their load, not by their luck).
///
/// ```
/// use parbench_kernels::latency::exponential_arrivals;
///
/// let arrivals = exponential_arrivals(1000.0, 10_000, 7);
/// assert!(arrivals.windows(2).all(|w| w[0] <= w[1]));
/// // 10 000 requests at 1000 QPS span about ten seconds.
/// let span_s = *arrivals.last().unwrap() as f64 / 1e9;
/// assert!((9.0..11.0).contains(&span_s));
/// ```
///
/// `qps` must be positive and finite (callers validate it: [`crate::latency::CurveConfig::validate`]).
pub fn exponential_arrivals(qps: f64, count: usize, seed: u64) -> Vec<u64> {
    arrival_times(qps, seed).take(count).collect()
}

/// The arrival times of [`exponential_arrivals`], one by one: its `count`-th element is the
/// schedule's last arrival, found without holding the schedule in memory.
pub(super) fn arrival_times(qps: f64, seed: u64) -> impl Iterator<Item = u64> {
    let mut rng = SplitMix64::new(seed);
    let mean_gap_ns = 1e9 / qps;
    let mut now_ns = 0.0_f64;
    std::iter::repeat_with(move || {
        now_ns += exponential(&mut rng) * mean_gap_ns;
        now_ns as u64
    })
}

/// A draw from the exponential distribution with mean 1 (inverse transform of a uniform).
fn exponential(rng: &mut SplitMix64) -> f64 {
    // 53 random bits give a uniform in [0, 1); `1 − u` is then in (0, 1], whose logarithm is finite.
    let uniform = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    -(1.0 - uniform).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_gaps_have_the_mean_and_variance_of_the_rate() {
        let qps = 2000.0;
        let arrivals = exponential_arrivals(qps, 200_000, 42);
        let gaps: Vec<f64> = std::iter::once(arrivals[0])
            .chain(arrivals.windows(2).map(|w| w[1] - w[0]))
            .map(|gap| gap as f64 / 1e9)
            .collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
        // Exp(λ): mean 1/λ, variance 1/λ². With 200 000 draws the standard errors are about
        // 0.2 % (mean) and 0.5 % (variance), so 2 % and 5 % leave a wide margin for the fixed seed.
        let expected_mean = 1.0 / qps;
        assert!((mean / expected_mean - 1.0).abs() < 0.02, "mean {mean}");
        assert!(
            (variance / expected_mean.powi(2) - 1.0).abs() < 0.05,
            "variance {variance}"
        );
    }

    #[test]
    fn seed_1_gives_the_schedule_of_an_independent_implementation() {
        // SplitMix64 (Steele et al.) and inverse-transform exponentials written afresh in Python
        // (53-bit uniform u, gap = −ln(1 − u) · 10⁹/QPS, accumulated in f64, truncated to ns).
        let arrivals = exponential_arrivals(1000.0, 2200, 1);
        assert_eq!(arrivals[..4], [836_005, 2_205_567, 5_746_122, 6_333_755]);
        assert_eq!(arrivals[2199], 2_122_514_744);
        // A shorter schedule is a prefix of a longer one: the warm-up requests do not shift the
        // measured ones, and `arrival_times` is the same sequence.
        assert_eq!(exponential_arrivals(1000.0, 200, 1), arrivals[..200]);
        assert!(
            arrival_times(1000.0, 1)
                .take(2200)
                .eq(arrivals.iter().copied())
        );
    }

    #[test]
    fn a_seed_reproduces_its_schedule_and_scales_with_the_rate() {
        assert_eq!(
            exponential_arrivals(100.0, 50, 3),
            exponential_arrivals(100.0, 50, 3)
        );
        assert_ne!(
            exponential_arrivals(100.0, 50, 3),
            exponential_arrivals(100.0, 50, 4)
        );
        let slow = exponential_arrivals(100.0, 50, 3);
        let fast = exponential_arrivals(200.0, 50, 3);
        for (s, f) in slow.iter().zip(&fast) {
            // Same pattern at twice the rate: half the time, up to the nanosecond truncation.
            assert!((*s as i64 - 2 * *f as i64).abs() <= 2, "{s} vs {f}");
        }
    }
}
