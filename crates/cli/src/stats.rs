//! Descriptive statistics of one cell's raw samples.
//!
//! A *cell* is one measured configuration (for a sweep: kernel × scheduler × threads) and its
//! samples are the wall times of its timed runs. [`Summary::from_samples`] reduces them to the
//! numbers the studies reported: mean, median, sample standard deviation (n − 1), coefficient of
//! variation, standard error, a 95 % confidence interval of the mean, the extremes and the
//! 5/25/75/95th percentiles.
//!
//! Design choices, so that the numbers can be reproduced elsewhere:
//! - Percentiles use linear interpolation between closest ranks, numpy's default
//!   (`numpy.percentile(x, p)`): rank `p/100 · (n − 1)` in the sorted samples.
//! - The confidence interval is the normal approximation `mean ± 1.96 · SE`. With fewer than
//!   [`CI_MIN_RUNS`] runs that approximation is rough (a Student t quantile would be wider), so the
//!   summary carries [`Summary::ci_is_rough`] and every exporter shows it.
//! - Quantities that need two samples (SD, CV, SE, CI) are `None` for a single run instead of a
//!   made-up zero.
//! - Speed-up compares medians ([`Relative::against`]): the median is robust to the occasional
//!   descheduled run on a shared machine, where the mean is not.
//!
//! Nothing here knows what a sample measures; later commands (locks, latency, …) reuse it as is.

use serde::{Deserialize, Serialize};

/// Below this many runs the normal-approximation confidence interval is flagged as rough.
pub const CI_MIN_RUNS: usize = 30;

/// The z quantile of a two-sided 95 % interval of the normal distribution.
const Z_95: f64 = 1.96;

/// Summary statistics of a non-empty set of samples.
///
/// ```
/// use parbench_cli::stats::Summary;
/// let s = Summary::from_samples(&[1.0, 2.0, 3.0, 4.0]).unwrap();
/// assert_eq!(s.median, 2.5);
/// assert_eq!(s.runs, 4);
/// assert!(s.ci_is_rough);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub runs: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile.
    pub median: f64,
    /// Sample standard deviation (divides by n − 1); `None` for one sample.
    pub sd: Option<f64>,
    /// Coefficient of variation, `sd / mean` as a fraction; `None` without SD or for a zero mean.
    pub cv: Option<f64>,
    /// Standard error of the mean, `sd / √n`.
    pub se: Option<f64>,
    /// Lower end of the 95 % confidence interval of the mean, `mean − 1.96 · SE`.
    pub ci95_low: Option<f64>,
    /// Upper end of the 95 % confidence interval of the mean, `mean + 1.96 · SE`.
    pub ci95_high: Option<f64>,
    /// True when `runs < CI_MIN_RUNS`: the normal approximation behind the interval is rough.
    pub ci_is_rough: bool,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 25th percentile (first quartile).
    pub p25: f64,
    /// 75th percentile (third quartile).
    pub p75: f64,
    /// 95th percentile.
    pub p95: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none or one of them is not finite (a NaN would
    /// poison every statistic silently).
    ///
    /// ```
    /// use parbench_cli::stats::Summary;
    /// assert!(Summary::from_samples(&[]).is_none());
    /// let one = Summary::from_samples(&[5.0]).unwrap();
    /// assert_eq!((one.mean, one.sd), (5.0, None));
    /// ```
    pub fn from_samples(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let sd = (n > 1).then(|| {
            let squares: f64 = sorted.iter().map(|x| (x - mean).powi(2)).sum();
            (squares / (n - 1) as f64).sqrt()
        });
        let se = sd.map(|sd| sd / (n as f64).sqrt());
        Some(Summary {
            runs: n,
            mean,
            median: percentile_sorted(&sorted, 50.0),
            sd,
            cv: sd.filter(|_| mean != 0.0).map(|sd| sd / mean),
            se,
            ci95_low: se.map(|se| mean - Z_95 * se),
            ci95_high: se.map(|se| mean + Z_95 * se),
            ci_is_rough: n < CI_MIN_RUNS,
            min: sorted[0],
            max: sorted[n - 1],
            p5: percentile_sorted(&sorted, 5.0),
            p25: percentile_sorted(&sorted, 25.0),
            p75: percentile_sorted(&sorted, 75.0),
            p95: percentile_sorted(&sorted, 95.0),
        })
    }
}

/// The `p`-th percentile (0 ≤ p ≤ 100) of ascending, non-empty `sorted`, interpolating linearly
/// between the two closest ranks like `numpy.percentile`'s default.
///
/// Out-of-range `p` is clamped; an empty slice gives NaN.
///
/// ```
/// use parbench_cli::stats::percentile_sorted;
/// assert_eq!(percentile_sorted(&[10.0, 20.0, 30.0, 40.0], 25.0), 17.5);
/// ```
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let rank = p.clamp(0.0, 100.0) / 100.0 * last as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
}

/// Two-sided 95 % quantiles of Student's t distribution, `t(0.975, df)`, for df = 1..=30.
const T95_SMALL: [f64; 30] = [
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
    2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
    2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
];

/// `(df, t(0.975, df))` beyond the dense table; between rows the quantile is interpolated linearly
/// in `1/df`, which is how printed tables are meant to be read (error < 0.001 here).
const T95_LARGE: [(f64, f64); 6] = [
    (30.0, 2.0423),
    (40.0, 2.0211),
    (60.0, 2.0003),
    (120.0, 1.9799),
    (240.0, 1.9699),
    (f64::INFINITY, Z_95),
];

/// The two-sided 95 % quantile of Student's t distribution with `df` degrees of freedom: a 95 %
/// confidence interval of a mean of `n` samples is `mean ± student_t95(n − 1) · SE`.
///
/// The one Student-t table of the workspace; every command that needs a t interval calls this.
/// `df = 0` (a single sample) has no finite interval and gives infinity. For large `df` the value
/// tends to the normal quantile 1.96.
///
/// ```
/// use parbench_cli::stats::student_t95;
/// assert_eq!(student_t95(1), 12.7062);
/// assert_eq!(student_t95(9), 2.2622);
/// assert!((student_t95(1_000_000) - 1.96).abs() < 1e-3);
/// assert!(student_t95(0).is_infinite());
/// ```
pub fn student_t95(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T95_SMALL[df - 1],
        _ => {
            let inv = 1.0 / df as f64;
            let upper = T95_LARGE
                .iter()
                .position(|&(d, _)| d >= df as f64)
                .unwrap_or(T95_LARGE.len() - 1);
            let (d0, t0) = T95_LARGE[upper - 1];
            let (d1, t1) = T95_LARGE[upper];
            let (x0, x1) = (1.0 / d0, 1.0 / d1);
            t0 + (t1 - t0) * (inv - x0) / (x1 - x0)
        }
    }
}

/// How a cell compares with its baseline (for a sweep: the sequential run of the same kernel).
///
/// ```
/// use parbench_cli::stats::Relative;
/// let r = Relative::against(2.0e-3, 1.0e-3, 2);
/// assert_eq!((r.speedup, r.efficiency), (2.0, 1.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Relative {
    /// Baseline median time over this cell's median time.
    pub speedup: f64,
    /// Speed-up per thread, `speedup / threads`.
    pub efficiency: f64,
}

impl Relative {
    /// Compares a cell's median time with the baseline's median time on `threads` threads.
    /// `threads` of 0 is treated as 1 so that the result stays finite.
    pub fn against(baseline_median: f64, median: f64, threads: usize) -> Relative {
        let speedup = baseline_median / median;
        Relative {
            speedup,
            efficiency: speedup / threads.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn student_t95_matches_printed_tables() {
        // t(0.975, df) from any statistics table.
        assert_eq!(student_t95(1), 12.7062);
        assert_eq!(student_t95(2), 4.3027);
        assert_eq!(student_t95(10), 2.2281);
        assert_eq!(student_t95(30), 2.0423);
        assert!(close(student_t95(40), 2.0211));
        assert!(close(student_t95(60), 2.0003));
        assert!(close(student_t95(120), 1.9799));
        // Interpolated rows against exact quantiles: t(0.975, 50) = 2.0086, t(0.975, 100) = 1.9840.
        assert!((student_t95(50) - 2.0086).abs() < 1e-3);
        assert!((student_t95(100) - 1.9840).abs() < 1e-3);
        assert!((student_t95(usize::MAX) - 1.96).abs() < 1e-6);
        assert!(student_t95(0).is_infinite());
        // Monotone: more degrees of freedom, a narrower interval.
        for df in 1..500 {
            assert!(student_t95(df + 1) <= student_t95(df), "df {df}");
        }
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // Samples 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum 32,
        // sample variance 32/7, SD √(32/7) ≈ 2.138, SE = SD/√8.
        let s = Summary::from_samples(&[9.0, 2.0, 4.0, 5.0, 4.0, 7.0, 4.0, 5.0]).unwrap();
        let sd = (32.0f64 / 7.0).sqrt();
        let se = sd / 8f64.sqrt();
        assert_eq!(s.runs, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        assert!(close(s.sd.unwrap(), sd));
        assert!(close(s.cv.unwrap(), sd / 5.0));
        assert!(close(s.se.unwrap(), se));
        assert!(close(s.ci95_low.unwrap(), 5.0 - 1.96 * se));
        assert!(close(s.ci95_high.unwrap(), 5.0 + 1.96 * se));
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // numpy.percentile([2,4,4,4,5,5,7,9], [5,25,75,95]) = [2.7, 4.0, 5.5, 8.3]
        assert!(close(s.p5, 2.7));
        assert!(close(s.p25, 4.0));
        assert!(close(s.p75, 5.5));
        assert!(close(s.p95, 8.3));
    }

    #[test]
    fn ci_is_flagged_rough_below_thirty_runs_only() {
        let few: Vec<f64> = (0..29).map(f64::from).collect();
        let enough: Vec<f64> = (0..30).map(f64::from).collect();
        assert!(Summary::from_samples(&few).unwrap().ci_is_rough);
        assert!(!Summary::from_samples(&enough).unwrap().ci_is_rough);
    }

    #[test]
    fn single_sample_has_no_spread_statistics() {
        let s = Summary::from_samples(&[3.0]).unwrap();
        assert_eq!(
            (s.median, s.min, s.max, s.p5, s.p95),
            (3.0, 3.0, 3.0, 3.0, 3.0)
        );
        assert_eq!(
            (s.sd, s.cv, s.se, s.ci95_low, s.ci95_high),
            (None, None, None, None, None)
        );
    }

    #[test]
    fn non_finite_or_empty_samples_give_no_summary() {
        assert!(Summary::from_samples(&[]).is_none());
        assert!(Summary::from_samples(&[1.0, f64::NAN]).is_none());
        assert!(Summary::from_samples(&[f64::INFINITY]).is_none());
    }

    #[test]
    fn zero_mean_has_no_coefficient_of_variation() {
        let s = Summary::from_samples(&[-1.0, 1.0]).unwrap();
        assert_eq!(s.cv, None);
        assert!(s.sd.is_some());
    }

    #[test]
    fn percentile_interpolates_linearly_like_numpy() {
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        // numpy.percentile([1,2,3,4,5], [0, 10, 50, 90, 100]) = [1.0, 1.4, 3.0, 4.6, 5.0]
        assert!(close(percentile_sorted(&sorted, 0.0), 1.0));
        assert!(close(percentile_sorted(&sorted, 10.0), 1.4));
        assert!(close(percentile_sorted(&sorted, 50.0), 3.0));
        assert!(close(percentile_sorted(&sorted, 90.0), 4.6));
        assert!(close(percentile_sorted(&sorted, 100.0), 5.0));
        assert!(percentile_sorted(&[], 50.0).is_nan());
    }

    #[test]
    fn relative_divides_baseline_by_cell_and_speedup_by_threads() {
        let r = Relative::against(9.0, 3.0, 4);
        assert!(close(r.speedup, 3.0));
        assert!(close(r.efficiency, 0.75));
        assert!(close(Relative::against(1.0, 2.0, 0).efficiency, 0.5));
    }
}
