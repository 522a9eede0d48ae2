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
    /// Lower end of a distribution-free 95 % confidence interval of the median (see
    /// [`median_ci95_sorted`]); `None` below 6 samples, where no such interval reaches 95 %.
    #[serde(default)]
    pub median_ci95_low: Option<f64>,
    /// Upper end of that interval of the median.
    #[serde(default)]
    pub median_ci95_high: Option<f64>,
    /// Samples beyond the Tukey fences (see [`Outliers`]); counted, never dropped.
    #[serde(default)]
    pub outliers: Outliers,
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
        let (p25, p75) = (
            percentile_sorted(&sorted, 25.0),
            percentile_sorted(&sorted, 75.0),
        );
        let median_ci = median_ci95_sorted(&sorted);
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
            p25,
            p75,
            p95: percentile_sorted(&sorted, 95.0),
            median_ci95_low: median_ci.map(|(low, _)| low),
            median_ci95_high: median_ci.map(|(_, high)| high),
            outliers: Outliers::classify(&sorted, p25, p75),
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

/// Samples outside Tukey's fences, classified as criterion does: with the quartiles Q1, Q3 and
/// IQR = Q3 − Q1, a sample below Q1 − 3·IQR is a *low severe* outlier, below Q1 − 1.5·IQR a *low
/// mild* one, and symmetrically above Q3. Outliers are reported, never removed: on a shared machine
/// they are part of what a user of the runtime will see.
///
/// ```
/// use parbench_cli::stats::Summary;
/// // Q1 = 2.75, Q3 = 6.25, IQR = 3.5: 100 is above the severe fence Q3 + 3·IQR = 16.75.
/// let s = Summary::from_samples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0]).unwrap();
/// assert_eq!((s.outliers.high_mild, s.outliers.high_severe), (0, 1));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    /// Below Q1 − 3·IQR.
    pub low_severe: usize,
    /// Between Q1 − 3·IQR and Q1 − 1.5·IQR.
    pub low_mild: usize,
    /// Between Q3 + 1.5·IQR and Q3 + 3·IQR.
    pub high_mild: usize,
    /// Above Q3 + 3·IQR.
    pub high_severe: usize,
}

impl Outliers {
    /// Classifies `samples` against the fences of the quartiles `q1` and `q3`.
    pub fn classify(samples: &[f64], q1: f64, q3: f64) -> Outliers {
        let iqr = q3 - q1;
        let mut counts = Outliers::default();
        for &x in samples {
            if x < q1 - 3.0 * iqr {
                counts.low_severe += 1;
            } else if x < q1 - 1.5 * iqr {
                counts.low_mild += 1;
            } else if x > q3 + 3.0 * iqr {
                counts.high_severe += 1;
            } else if x > q3 + 1.5 * iqr {
                counts.high_mild += 1;
            }
        }
        counts
    }

    /// All outliers, mild and severe.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }

    /// `mild/severe` counts as a short text, e.g. `2/1`.
    pub fn short_text(&self) -> String {
        format!(
            "{}/{}",
            self.low_mild + self.high_mild,
            self.low_severe + self.high_severe
        )
    }
}

/// A distribution-free 95 % confidence interval of the median of ascending `sorted`: the order
/// statistics `x(j)` and `x(n+1−j)` (1-based) for the largest `j` whose coverage
/// `1 − 2·P(B ≤ j − 1)`, with B ~ Binomial(n, ½), is still at least 95 %.
///
/// No assumption on the distribution of the samples (timings are skewed), which is why it is the
/// interval rounds are compared with. `None` below 6 samples: even `[min, max]` covers less.
///
/// ```
/// use parbench_cli::stats::median_ci95_sorted;
/// let ten: Vec<f64> = (1..=10).map(f64::from).collect();
/// assert_eq!(median_ci95_sorted(&ten), Some((2.0, 9.0)));
/// assert_eq!(median_ci95_sorted(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
/// ```
pub fn median_ci95_sorted(sorted: &[f64]) -> Option<(f64, f64)> {
    let n = sorted.len();
    // P(B ≤ k) accumulated in log space so that 2^-n cannot underflow for large n.
    let half_log = -(n as f64) * std::f64::consts::LN_2;
    let mut log_pmf = half_log; // P(B = 0)
    let mut cdf = 0.0;
    let mut best = None;
    for j in 1..=n / 2 {
        // Here cdf = P(B ≤ j − 2); add P(B = j − 1).
        cdf += log_pmf.exp();
        if 1.0 - 2.0 * cdf < 0.95 {
            break;
        }
        best = Some(j);
        let k = (j - 1) as f64;
        log_pmf += ((n as f64 - k) / (k + 1.0)).ln();
    }
    best.map(|j| (sorted[j - 1], sorted[n - j]))
}

/// The median of `values` in any order; `None` when empty or not all finite.
///
/// ```
/// use parbench_cli::stats::median;
/// assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile_sorted(&sorted, 50.0))
}

/// The smallest difference between round medians, as a fraction, that can make a cell unstable.
pub const UNSTABLE_MIN_SPREAD: f64 = 0.05;

/// How a cell's rounds (each in its own process) agree with each other.
///
/// A sweep with `--rounds R` measures every cell in R child processes. The spread of the per-round
/// medians is the between-process variation a single process's confidence interval cannot show.
/// A cell is *unstable* when two rounds' distribution-free 95 % intervals of the median
/// ([`median_ci95_sorted`]) do not overlap — the rounds disagree by more than their own noise —
/// and the round medians differ by at least [`UNSTABLE_MIN_SPREAD`] (a nearly deterministic
/// cell can have disjoint intervals 0.3 % apart, which no reader needs to be warned about).
///
/// ```
/// use parbench_cli::stats::RoundSpread;
/// let steady: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
/// let shifted: Vec<f64> = steady.iter().map(|x| x * 1.5).collect();
/// let spread = RoundSpread::from_rounds(&[&steady, &shifted]).unwrap();
/// assert!(spread.unstable);
/// assert!((spread.spread.unwrap() - 0.5).abs() < 1e-12); // rounds differ by 50 %
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSpread {
    /// Median of each round's samples, in round order.
    pub medians: Vec<f64>,
    /// The round (1-based) each median is from: a cell can miss a round the sweep measured
    /// (one that stopped before reaching it), and speed-ups pair medians of the same round.
    /// Empty in reports written before it was recorded.
    #[serde(default)]
    pub rounds: Vec<usize>,
    /// Each round's own distribution-free 95 % interval of its median ([`median_ci95_sorted`]),
    /// in round order; `None` for a round of fewer than 6 runs. These decide `unstable`.
    #[serde(default)]
    pub median_ci95: Vec<Option<(f64, f64)>>,
    /// Smallest round median.
    pub min: f64,
    /// Largest round median.
    pub max: f64,
    /// `(max − min) / min`: how far the rounds differ, as a fraction; `None` when the smallest
    /// round median is 0 s, since no fraction of 0 says how far the others are from it (it used
    /// to read 0, "the rounds agree", for rounds of 0 s and 1 ms). `null` in JSON, an empty
    /// field in CSV.
    #[serde(default)]
    pub spread: Option<f64>,
    /// Lower end of the 95 % Student-t interval of the round medians' geometric mean (R − 1
    /// degrees of freedom), computed on the log scale and exponentiated (times are positive and
    /// vary by factors, so the interval is geometric and never negative); `None` with fewer than
    /// two rounds. With two rounds (t = 12.7) it is too wide to say anything, and the table's
    /// footnote leaves it out.
    pub ci95_low: Option<f64>,
    /// Upper end of that interval.
    pub ci95_high: Option<f64>,
    /// Two rounds' 95 % intervals of the median do not overlap, and `spread` is at least
    /// [`UNSTABLE_MIN_SPREAD`] or undefined (a round median of 0 s beside a larger one: disjoint
    /// intervals then differ by more than any fraction).
    pub unstable: bool,
}

impl RoundSpread {
    /// The spread of `rounds`, each one round's samples, numbered 1, 2, …; `None` without any
    /// round or with a round that has no (finite) samples.
    pub fn from_rounds(rounds: &[&[f64]]) -> Option<RoundSpread> {
        let summaries: Vec<Summary> = rounds
            .iter()
            .map(|samples| Summary::from_samples(samples))
            .collect::<Option<_>>()?;
        let medians: Vec<f64> = summaries.iter().map(|s| s.median).collect();
        let whole = Summary::from_samples(&medians)?;
        let logs: Vec<f64> = medians.iter().map(|m| m.ln()).collect();
        let (ci95_low, ci95_high) = match Summary::from_samples(&logs) {
            Some(Summary {
                mean, se: Some(se), ..
            }) => {
                let half = student_t95(medians.len() - 1) * se;
                (Some((mean - half).exp()), Some((mean + half).exp()))
            }
            _ => (None, None),
        };
        let highest_low = summaries
            .iter()
            .filter_map(|s| s.median_ci95_low)
            .fold(f64::NEG_INFINITY, f64::max);
        let lowest_high = summaries
            .iter()
            .filter_map(|s| s.median_ci95_high)
            .fold(f64::INFINITY, f64::min);
        let spread = (whole.min > 0.0).then(|| (whole.max - whole.min) / whole.min);
        Some(RoundSpread {
            min: whole.min,
            max: whole.max,
            spread,
            ci95_low,
            ci95_high,
            unstable: highest_low > lowest_high
                && spread.is_none_or(|spread| spread >= UNSTABLE_MIN_SPREAD),
            median_ci95: summaries
                .iter()
                .map(|s| s.median_ci95_low.zip(s.median_ci95_high))
                .collect(),
            rounds: (1..=medians.len()).collect(),
            medians,
        })
    }
}

/// A small seeded pseudo-random generator (SplitMix64): the same seed gives the same sequence on
/// every machine, which is what a recorded shuffle or a reproducible bootstrap needs.
///
/// ```
/// use parbench_cli::stats::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` ≥ 1), by multiply-shift (bias below 2^-32 for any bound
    /// a sweep uses).
    pub fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next_u64()) * bound as u128) >> 64) as usize
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// Why [`bootstrap_ratio_ci`] has no interval.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum RatioCiError {
    /// One side has no samples, or a sample that is not finite.
    #[error("no usable samples")]
    NoSamples,
    /// The baseline's median is 0 s: there is no ratio to bracket.
    #[error("the baseline's median is 0 s")]
    ZeroBaselineMedian,
    /// The baseline has a median above 0 s, but so many samples of 0 s that some resamples
    /// have a median of 0 s, whose ratio is infinite or undefined. Leaving those resamples out
    /// would narrow the interval towards the ratios of the resamples with fewer zeros, so the
    /// ratio stands without an interval.
    #[error(
        "{zero} of {resamples} bootstrap resamples of the baseline have a median of 0 s, so \
         their ratio is undefined"
    )]
    ZeroResampledMedian {
        /// The ratio of the medians themselves, which is defined.
        ratio: f64,
        /// How many resamples of the baseline had a median of 0 s.
        zero: usize,
        /// How many resamples were drawn.
        resamples: usize,
    },
}

/// The ratio `median(b) / median(a)` with a 95 % percentile-bootstrap confidence interval:
/// `resamples` times, both sample sets are resampled with replacement and the ratio of the
/// resampled medians recorded; the interval is the 2.5th–97.5th percentile of those ratios.
///
/// Returns `(ratio, low, high)`.
///
/// ```
/// use parbench_cli::stats::{bootstrap_ratio_ci, RatioCiError};
/// let a: Vec<f64> = (0..20).map(|i| 1.0 + 0.01 * f64::from(i)).collect();
/// let b: Vec<f64> = a.iter().map(|x| 2.0 * x).collect();
/// let (ratio, low, high) = bootstrap_ratio_ci(&a, &b, 1000, 1).unwrap();
/// assert!((ratio - 2.0).abs() < 1e-12 && low <= 2.0 && high >= 2.0);
/// assert_eq!(bootstrap_ratio_ci(&[0.0], &b, 1000, 1), Err(RatioCiError::ZeroBaselineMedian));
/// ```
///
/// # Errors
/// [`RatioCiError`]: a side without (finite) samples, a baseline median of 0 s, or a baseline
/// whose resamples can have a median of 0 s (samples of 0 s: every ratio is finite otherwise,
/// since times are finite and non-negative).
pub fn bootstrap_ratio_ci(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
) -> Result<(f64, f64, f64), RatioCiError> {
    let (median_a, median_b) = median(a).zip(median(b)).ok_or(RatioCiError::NoSamples)?;
    if median_a == 0.0 {
        return Err(RatioCiError::ZeroBaselineMedian);
    }
    let ratio = median_b / median_a;
    let mut rng = SplitMix64::new(seed);
    let mut resample = |values: &[f64], buffer: &mut Vec<f64>| {
        buffer.clear();
        buffer.extend((0..values.len()).map(|_| values[rng.below(values.len())]));
        buffer.sort_by(f64::total_cmp);
        percentile_sorted(buffer, 50.0)
    };
    let (mut buffer_a, mut buffer_b) = (Vec::new(), Vec::new());
    let resamples = resamples.max(1);
    let mut ratios: Vec<f64> = (0..resamples)
        .map(|_| resample(b, &mut buffer_b) / resample(a, &mut buffer_a))
        .collect();
    let zero = ratios.iter().filter(|r| !r.is_finite()).count();
    if zero > 0 {
        return Err(RatioCiError::ZeroResampledMedian {
            ratio,
            zero,
            resamples,
        });
    }
    ratios.sort_by(f64::total_cmp);
    Ok((
        ratio,
        percentile_sorted(&ratios, 2.5),
        percentile_sorted(&ratios, 97.5),
    ))
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
    /// Baseline median time over this cell's median time; with rounds, the median of the
    /// per-round ratios (see [`Relative::paired`]).
    pub speedup: f64,
    /// Speed-up per thread, `speedup / threads`.
    pub efficiency: f64,
    /// Smallest per-round speed-up, when the speed-up was paired by round.
    #[serde(default)]
    pub speedup_min: Option<f64>,
    /// Largest per-round speed-up, when the speed-up was paired by round.
    #[serde(default)]
    pub speedup_max: Option<f64>,
}

impl Relative {
    /// Compares a cell's median time with the baseline's median time on `threads` threads.
    /// `threads` of 0 is treated as 1 so that the result stays finite.
    pub fn against(baseline_median: f64, median: f64, threads: usize) -> Relative {
        let speedup = baseline_median / median;
        Relative {
            speedup,
            efficiency: speedup / threads.max(1) as f64,
            speedup_min: None,
            speedup_max: None,
        }
    }

    /// Speed-up paired by round: round r's baseline median over round r's median of this cell,
    /// for every round, summarised by their median (with min and max). Both cells ran in the same
    /// process, close in time, in each round, so drift of the machine between rounds cancels.
    /// `None` unless both have the same number (≥ 1) of round medians, all positive.
    ///
    /// ```
    /// use parbench_cli::stats::Relative;
    /// // The machine slowed down by half in round 2; the paired speed-up does not notice.
    /// let r = Relative::paired(&[4.0, 6.0, 4.0], &[2.0, 3.0, 1.6], 2).unwrap();
    /// assert_eq!((r.speedup, r.speedup_min, r.speedup_max), (2.0, Some(2.0), Some(2.5)));
    /// ```
    pub fn paired(baseline_rounds: &[f64], rounds: &[f64], threads: usize) -> Option<Relative> {
        if rounds.is_empty()
            || baseline_rounds.len() != rounds.len()
            || rounds.iter().chain(baseline_rounds).any(|&x| x <= 0.0)
        {
            return None;
        }
        let ratios: Vec<f64> = baseline_rounds
            .iter()
            .zip(rounds)
            .map(|(b, c)| b / c)
            .collect();
        let speedup = median(&ratios)?;
        Some(Relative {
            speedup,
            efficiency: speedup / threads.max(1) as f64,
            speedup_min: ratios.iter().copied().reduce(f64::min),
            speedup_max: ratios.iter().copied().reduce(f64::max),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn outliers_follow_tukeys_fences() {
        // Q1 = 10, Q3 = 20 on these quartiles: mild fences -5 / 35, severe fences -20 / 50.
        let samples = [-30.0, -10.0, -5.0, 10.0, 20.0, 35.0, 36.0, 50.0, 51.0];
        let o = Outliers::classify(&samples, 10.0, 20.0);
        // -5 and 35 sit exactly on a fence: not outliers; 50 is on the severe fence: mild.
        assert_eq!(
            o,
            Outliers {
                low_severe: 1,
                low_mild: 1,
                high_mild: 2,
                high_severe: 1
            }
        );
        assert_eq!((o.total(), o.short_text().as_str()), (5, "3/2"));
        // numpy.percentile([1,2,3,4,5,6,7,100], [25, 75]) = [2.75, 6.25]; IQR 3.5: 100 > 16.75.
        let s = Summary::from_samples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0]).unwrap();
        assert_eq!(s.outliers.high_severe, 1);
        assert_eq!(s.outliers.total(), 1);
    }

    #[test]
    fn median_interval_uses_binomial_order_statistics() {
        let values = |n: u32| -> Vec<f64> { (1..=n).map(f64::from).collect() };
        // n = 6: [x1, x6] covers 1 − 2/64 = 96.9 %; [x2, x5] only 78 %.
        assert_eq!(median_ci95_sorted(&values(6)), Some((1.0, 6.0)));
        // n = 10: [x2, x9] covers 1 − 2·11/1024 = 97.9 %; [x3, x8] 89 %.
        assert_eq!(median_ci95_sorted(&values(10)), Some((2.0, 9.0)));
        // n = 30: ranks 10 and 21 (P(B ≤ 9) = 0.0214, coverage 95.7 %; P(B ≤ 10) = 0.0494).
        assert_eq!(median_ci95_sorted(&values(30)), Some((10.0, 21.0)));
        assert_eq!(median_ci95_sorted(&values(5)), None);
        // Large n does not underflow: the interval narrows around the middle.
        let (low, high) = median_ci95_sorted(&values(5000)).unwrap();
        assert!(low > 2400.0 && high < 2600.0 && low < 2500.5 && high > 2500.5);
    }

    #[test]
    fn round_spread_reports_medians_interval_and_instability() {
        let round = |offset: f64| -> Vec<f64> { (0..10).map(|i| offset + f64::from(i)).collect() };
        let (a, b, c) = (round(100.0), round(101.0), round(102.0));
        let spread = RoundSpread::from_rounds(&[&a, &b, &c]).unwrap();
        assert_eq!(spread.medians, [104.5, 105.5, 106.5]);
        assert_eq!((spread.min, spread.max), (104.5, 106.5));
        assert!(close(spread.spread.unwrap(), 2.0 / 104.5));
        // Medians 1, e, e² (rounds of identical samples): logs 0, 1, 2, mean 1, SD 1, SE 1/√3,
        // t(0.975, 2) = 4.3027, so the interval is e^(1 ± 4.3027/√3).
        let e = std::f64::consts::E;
        let geometric = RoundSpread::from_rounds(&[&[1.0; 3], &[e; 3], &[e * e; 3]]).unwrap();
        let half = 4.3027 / 3f64.sqrt();
        assert!(close(geometric.ci95_low.unwrap(), (1.0 - half).exp()));
        assert!(close(geometric.ci95_high.unwrap(), (1.0 + half).exp()));
        assert!(
            geometric.ci95_low.unwrap() > 0.0,
            "a geometric interval is positive"
        );
        // Round intervals [101, 108], [102, 109], [103, 110] overlap: stable.
        assert_eq!(
            spread.median_ci95,
            [
                Some((101.0, 108.0)),
                Some((102.0, 109.0)),
                Some((103.0, 110.0))
            ]
        );
        assert!(!spread.unstable);
        // A round whose interval [112, 119] lies above [101, 108], 10.5 % apart: unstable.
        let far = round(111.0);
        assert!(RoundSpread::from_rounds(&[&a, &far]).unwrap().unstable);
        // Disjoint but only 1 % apart (almost no noise within a round): not worth a warning.
        let tight = |m: f64| -> Vec<f64> { (0..10).map(|i| m + 1e-4 * f64::from(i)).collect() };
        let near = RoundSpread::from_rounds(&[&tight(100.0), &tight(101.0)]).unwrap();
        assert!(!near.unstable && near.spread.unwrap() < UNSTABLE_MIN_SPREAD);
        assert!(RoundSpread::from_rounds(&[&a, &[]]).is_none());
        let one = RoundSpread::from_rounds(&[&a]).unwrap();
        assert_eq!((one.ci95_low, one.unstable), (None, false));
    }

    #[test]
    fn round_spread_from_a_zero_round_median_is_undefined_not_zero() {
        let zero = [0.0; 10];
        let slow: Vec<f64> = (0..10).map(|i| 1e-3 + 1e-6 * f64::from(i)).collect();
        let spread = RoundSpread::from_rounds(&[&zero, &slow]).unwrap();
        assert_eq!(spread.min, 0.0);
        assert_eq!(spread.spread, None, "{spread:?}");
        // Intervals [0, 0] and [1.001 ms, 1.008 ms] are disjoint, far more than 5 % apart.
        assert!(spread.unstable, "{spread:?}");
        // Rounds of 0 s only still have no fraction to report.
        assert_eq!(
            RoundSpread::from_rounds(&[&zero, &zero]).unwrap().spread,
            None
        );
    }

    #[test]
    fn paired_speedup_is_the_median_of_per_round_ratios() {
        let r = Relative::paired(&[10.0, 20.0, 12.0], &[5.0, 5.0, 4.0], 4).unwrap();
        // Ratios 2, 4, 3.
        assert_eq!(r.speedup, 3.0);
        assert_eq!((r.speedup_min, r.speedup_max), (Some(2.0), Some(4.0)));
        assert!(close(r.efficiency, 0.75));
        assert!(Relative::paired(&[1.0], &[1.0, 2.0], 1).is_none());
        assert!(Relative::paired(&[], &[], 1).is_none());
        assert!(Relative::paired(&[1.0], &[0.0], 1).is_none());
    }

    #[test]
    fn bootstrap_ratio_brackets_a_known_factor_and_is_reproducible() {
        let a: Vec<f64> = (0..40).map(|i| 1.0 + 0.05 * f64::from(i % 7)).collect();
        let b: Vec<f64> = a.iter().map(|x| 2.0 * x).collect();
        let first = bootstrap_ratio_ci(&a, &b, 2000, 42).unwrap();
        assert!(close(first.0, 2.0));
        assert!(first.1 <= 2.0 && first.2 >= 2.0 && first.1 > 1.7 && first.2 < 2.3);
        assert_eq!(bootstrap_ratio_ci(&a, &b, 2000, 42), Ok(first));
        // Identical sets: the interval contains 1.
        let same = bootstrap_ratio_ci(&a, &a, 2000, 1).unwrap();
        assert!(same.1 <= 1.0 && same.2 >= 1.0);
        assert_eq!(
            bootstrap_ratio_ci(&[], &a, 10, 1),
            Err(RatioCiError::NoSamples)
        );
        assert_eq!(
            bootstrap_ratio_ci(&[0.0], &a, 10, 1),
            Err(RatioCiError::ZeroBaselineMedian)
        );
    }

    #[test]
    fn bootstrap_resamples_with_a_zero_median_are_an_error_not_dropped() {
        // Median 1 s, but 4 of 9 samples are 0 s: a resample draws 5 or more zeros often.
        let a = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let b = [2.0; 9];
        match bootstrap_ratio_ci(&a, &b, 2000, 7) {
            Err(RatioCiError::ZeroResampledMedian {
                ratio,
                zero,
                resamples,
            }) => {
                assert_eq!((ratio, resamples), (2.0, 2000));
                assert!(zero > 100 && zero < 2000, "{zero}");
            }
            other => panic!("expected ZeroResampledMedian, got {other:?}"),
        }
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<usize> = (0..50).collect();
        let mut b = a.clone();
        SplitMix64::new(9).shuffle(&mut a);
        SplitMix64::new(9).shuffle(&mut b);
        assert_eq!(a, b, "same seed, same order");
        let mut c: Vec<usize> = (0..50).collect();
        SplitMix64::new(10).shuffle(&mut c);
        assert_ne!(a, c, "another seed, another order");
        a.sort_unstable();
        assert_eq!(a, (0..50).collect::<Vec<_>>(), "a permutation");
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
