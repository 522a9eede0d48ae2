//! Tail-latency statistics of one load point.
//!
//! Percentiles interpolate linearly between the two closest ranks, as numpy's and scipy's
//! default (`numpy.percentile(x, p)`): the p-th percentile of `n` sorted samples sits at rank
//! `p / 100 · (n − 1)`. The same convention as the `parbench-cli` statistics, so numbers agree
//! between commands and with a notebook.
//!
//! The statistics are exact: every measured request's time is kept and sorted, with no histogram
//! or bucketing (unlike HdrHistogram there is no value-resolution error), and the nanosecond
//! integers convert to `f64` exactly below 2^53 ns (104 days). p0 is the smallest sample and p100
//! the largest; one sample is every percentile. What interpolation cannot give is tail data that
//! was not collected: with `n` samples a percentile above `100 · (n − 2)/(n − 1)` lies between
//! the two largest samples, so a p99 rests on only a few requests unless `n` is well above 100
//! (p99.9: well above 1000).

/// The `p`-th percentile (`0 ≤ p ≤ 100`) of `sorted` (ascending), by linear interpolation; `None`
/// for no samples or a `p` outside 0…100.
///
/// ```
/// use parbench_kernels::latency::percentile;
///
/// let sorted = [10.0, 20.0, 30.0, 40.0];
/// assert_eq!(percentile(&sorted, 50.0), Some(25.0));
/// assert_eq!(percentile(&sorted, 100.0), Some(40.0));
/// assert_eq!(percentile(&[], 50.0), None);
/// ```
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    let fraction = rank - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}

/// p50/p95/p99/p99.9/max of a set of latencies, in nanoseconds.
///
/// ```
/// use parbench_kernels::latency::LatencySummary;
///
/// let summary = LatencySummary::from_ns(&[4, 1, 3, 2]).unwrap();
/// assert_eq!((summary.count, summary.p50_ns, summary.max_ns), (4, 2.5, 4.0));
/// assert!(LatencySummary::from_ns(&[]).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: usize,
    /// Median.
    pub p50_ns: f64,
    /// 95th percentile.
    pub p95_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// 99.9th percentile: between the two largest samples unless there are well over 1000.
    pub p999_ns: f64,
    /// Largest sample.
    pub max_ns: f64,
}

impl LatencySummary {
    /// Summarises `samples_ns` (any order); `None` when empty.
    pub fn from_ns(samples_ns: &[u64]) -> Option<Self> {
        let mut sorted: Vec<f64> = samples_ns.iter().map(|&ns| ns as f64).collect();
        sorted.sort_by(f64::total_cmp);
        Some(LatencySummary {
            count: sorted.len(),
            p50_ns: percentile(&sorted, 50.0)?,
            p95_ns: percentile(&sorted, 95.0)?,
            p99_ns: percentile(&sorted, 99.0)?,
            p999_ns: percentile(&sorted, 99.9)?,
            max_ns: *sorted.last()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_hand_computed_interpolation() {
        // numpy.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], p):
        // p50 → rank 4.5 → 5.5; p95 → rank 8.55 → 9.55; p99 → rank 8.91 → 9.91; p0 → 1.
        let sorted: Vec<f64> = (1..=10).map(f64::from).collect();
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(percentile(&sorted, 50.0), 5.5));
        assert!(close(percentile(&sorted, 95.0), 9.55));
        assert!(close(percentile(&sorted, 99.0), 9.91));
        assert!(close(percentile(&sorted, 0.0), 1.0));
        assert!(close(percentile(&sorted, 100.0), 10.0));
        // Uneven gaps: [0, 10, 100], p75 → rank 1.5 → 55.
        assert!(close(percentile(&[0.0, 10.0, 100.0], 75.0), 55.0));
        assert!(close(percentile(&[7.0], 95.0), 7.0));
        assert_eq!(percentile(&sorted, 101.0), None);
        assert_eq!(percentile(&sorted, -1.0), None);
    }

    #[test]
    fn edges_ties_and_the_far_tail_match_exact_rational_answers() {
        // 1000 samples i² mod 997 (i = 1…1000): 499 distinct values, most of them twice. The
        // expected values were computed with Python's fractions.Fraction from the definition
        // (rank = p/100 · (n − 1), linear between the neighbouring order statistics), so only
        // the f64 rounding of this implementation separates them.
        let mut samples: Vec<f64> = (1..=1000_u32).map(|i| f64::from(i * i % 997)).collect();
        samples.sort_by(f64::total_cmp);
        let expected = [
            (0.0, 0.0),
            (50.0, 495.5),
            (95.0, 944.05),
            (99.0, 985.02),
            (99.9, 996.0), // rank 998.001, between two equal largest samples
            (100.0, 996.0),
        ];
        for (p, value) in expected {
            let got = percentile(&samples, p).unwrap();
            assert!((got - value).abs() < 1e-9, "p{p}: {got} vs {value}");
        }
        // One sample, or all equal: every percentile is that value.
        for p in [0.0, 50.0, 99.9, 100.0] {
            assert_eq!(percentile(&[42.0], p), Some(42.0));
            assert_eq!(percentile(&[5.0, 5.0, 5.0], p), Some(5.0));
        }
        assert_eq!(percentile(&samples, f64::NAN), None);
        let single = LatencySummary::from_ns(&[1_500]).unwrap();
        assert_eq!(
            (single.count, single.p50_ns, single.p99_ns, single.max_ns),
            (1, 1_500.0, 1_500.0, 1_500.0)
        );
    }

    #[test]
    fn summary_sorts_before_taking_percentiles() {
        let summary = LatencySummary::from_ns(&[100, 0, 10]).unwrap();
        assert_eq!(summary.p50_ns, 10.0);
        assert!((summary.p95_ns - 91.0).abs() < 1e-9); // rank 1.9 → 10 + 0.9·90
        assert_eq!(summary.max_ns, 100.0);
        // 1…1000 shuffled: p99.9 at rank 0.999 · 999 = 998.001, between 999 and 1000.
        let shuffled: Vec<u64> = (1..=1000_u64).map(|i| i * 389 % 1000 + 1).collect();
        let summary = LatencySummary::from_ns(&shuffled).unwrap();
        assert!((summary.p99_ns - 990.01).abs() < 1e-9, "{}", summary.p99_ns);
        assert!(
            (summary.p999_ns - 999.001).abs() < 1e-9,
            "{}",
            summary.p999_ns
        );
    }
}
