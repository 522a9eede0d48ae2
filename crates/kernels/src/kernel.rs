//! What a kernel is: a described, parameterised workload that prepares its input once and then
//! runs (timed) and validates itself any number of times on any executor.
//!
//! Parameters arrive as strings (from the command line) in [`Params`]; each kernel declares the ones
//! it understands with their defaults in [`Kernel::params`], and reads them with the typed getters,
//! which fall back to the declared default and turn a malformed value into
//! [`KernelError::BadParam`]. A parameter a kernel does not declare is ignored by it, so one set of
//! flags can drive a whole sweep.

use std::collections::BTreeMap;
use std::io;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::executor::{Executor, ExecutorError};
use crate::input::InputError;

/// A workload. Implementations are stateless descriptions; the data lives in the
/// [`PreparedKernel`] that [`Kernel::prepare`] returns.
///
/// ```
/// use parbench_kernels::{registry, Kernel};
///
/// let names: Vec<&str> = registry().iter().map(|k| k.name()).collect();
/// assert!(names.contains(&"spmv-balanced"));
/// ```
pub trait Kernel: Sync {
    /// The name used on the command line, e.g. `"spmv-balanced"`.
    fn name(&self) -> &'static str;
    /// One line saying what the kernel computes.
    fn description(&self) -> &'static str;
    /// The parameters the kernel understands, with their defaults.
    fn params(&self) -> &'static [ParamSpec];
    /// Whether the kernel is cheap enough for the quick default sweep.
    fn is_default_suite(&self) -> bool;
    /// Parameter values that make a run take well under a millisecond, for tests and smoke runs.
    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Whether, with `params`, the problem grows with the thread count (weak scaling), so that
    /// times at different thread counts are of different problem sizes. Default: no.
    ///
    /// ```
    /// use parbench_kernels::{find_kernel, Params};
    /// let spmv = find_kernel("spmv-balanced")?;
    /// assert!(spmv.weak_scaling(&Params::new())); // rows = threads × 2^9
    /// assert!(!spmv.weak_scaling(&Params::new().with("rows", "1000")));
    /// assert!(!find_kernel("reduce")?.weak_scaling(&Params::new()));
    /// # Ok::<(), parbench_kernels::KernelError>(())
    /// ```
    fn weak_scaling(&self, params: &Params) -> bool {
        let _ = params;
        false
    }
    /// The value parameter `name` has in a run with `params`, as results record it: the text
    /// given, else the declared default, except where the kernel settles a default only when it
    /// builds its input. `round` and `trapezoid` name the atomics backend their lock runs on (the
    /// best this CPU has unless given; `-` for `std::sync::Mutex`, which has none); a trapezoid
    /// method that takes no lock (`spin`, `semaphore`, `atomic`) records `-` as lock and backend.
    ///
    /// ```
    /// use parbench_atomics::{Backend, NO_BACKEND};
    /// use parbench_kernels::{find_kernel, Params};
    ///
    /// let round = find_kernel("round")?;
    /// assert_eq!(round.param_value(&Params::new(), "lock")?, "std");
    /// assert_eq!(round.param_value(&Params::new(), "backend")?, NO_BACKEND);
    /// let tas = Params::new().with("lock", "tas");
    /// assert_eq!(round.param_value(&tas, "backend")?, Backend::best().name());
    /// # Ok::<(), parbench_kernels::KernelError>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadParam`] if the kernel does not declare `name`, or for a malformed value
    /// the recorded one depends on.
    fn param_value(&self, params: &Params, name: &str) -> Result<String, KernelError> {
        params.get_str(self, name).map(str::to_owned)
    }
    /// Builds the input for a run on `threads` threads (some default sizes scale with it).
    ///
    /// # Errors
    /// [`KernelError::BadParam`] for a malformed parameter, [`KernelError::Input`] or
    /// [`KernelError::Io`] for an input file that cannot be read.
    fn prepare(
        &self,
        params: &Params,
        threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError>;
}

impl std::fmt::Debug for dyn Kernel + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name())
            .finish()
    }
}

impl std::fmt::Debug for dyn PreparedKernel + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreparedKernel")
    }
}

/// A kernel with its input built, ready to be run many times.
///
/// ```
/// use parbench_kernels::{find_kernel, ExecutorKind, Params, PinPolicy};
///
/// let exec = ExecutorKind::Seq.build(1, PinPolicy::None)?;
/// let mut scan = find_kernel("scan")?.prepare(&Params::new().with("n", "1024"), 1)?;
/// for _ in 0..3 {
///     scan.run(exec.as_ref())?; // each run is timed and validated
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait PreparedKernel: Send {
    /// One timed run: times only the parallel section, then validates the result.
    ///
    /// # Errors
    /// [`KernelError::WrongResult`] if validation fails, [`KernelError::Executor`] if the executor
    /// could not run a task.
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError>;
}

/// A declared kernel parameter.
///
/// ```
/// use parbench_kernels::find_kernel;
///
/// let width = find_kernel("spmv-triangle")?.params().iter().find(|p| p.name == "width").unwrap();
/// assert_eq!(width.default, "2^15");
/// # Ok::<(), parbench_kernels::KernelError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Name, as in `--param name=value` (and `--name value` for the common ones).
    pub name: &'static str,
    /// Default value as text; empty means "not set".
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// The outcome of one timed run.
///
/// ```
/// use parbench_kernels::{find_kernel, Params, SeqExecutor};
///
/// let mut fp_add = find_kernel("fp-add")?.prepare(&Params::new().with("iters", "1000"), 1)?;
/// let report = fp_add.run(&SeqExecutor::new())?;
/// let rate = report.metrics.iter().find(|m| m.name == "ops-per-sec").unwrap();
/// assert!(rate.value > 0.0 && rate.unit == "ops/s");
/// # Ok::<(), parbench_kernels::KernelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Wall time of the parallel section only.
    pub elapsed: Duration,
    /// Kernel-specific measurements (operations per second, per-thread start times, …).
    pub metrics: Vec<Metric>,
    /// Threads the executor created outside the timed section, in calls the run makes only to
    /// check its executor (`trapezoid`'s coverage check): a sweep's `threads-created` leaves them
    /// out, so that it counts what the timed section cost.
    pub untimed_threads_created: u64,
}

impl RunReport {
    /// A report with no extra metrics.
    ///
    /// ```
    /// use std::time::Duration;
    /// let report = parbench_kernels::RunReport::timing(Duration::from_micros(5));
    /// assert!(report.metrics.is_empty());
    /// ```
    pub fn timing(elapsed: Duration) -> Self {
        RunReport {
            elapsed,
            metrics: Vec::new(),
            untimed_threads_created: 0,
        }
    }
}

/// One named measurement of a run.
///
/// ```
/// let m = parbench_kernels::Metric::new("gflops", 1.5, "GFLOP/s");
/// assert_eq!((m.name.as_str(), m.value, m.unit), ("gflops", 1.5, "GFLOP/s"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// What was measured, e.g. `"ops-per-sec"`.
    pub name: String,
    /// The value.
    pub value: f64,
    /// Its unit, e.g. `"ops/s"` or `"ns"`.
    pub unit: &'static str,
}

impl Metric {
    /// A metric named `name`.
    pub fn new(name: impl Into<String>, value: f64, unit: &'static str) -> Self {
        Metric {
            name: name.into(),
            value,
            unit,
        }
    }
}

/// Kernel parameters as given by the user: name → text.
///
/// ```
/// use parbench_kernels::{find_kernel, Params};
///
/// let spmv = find_kernel("spmv-balanced")?;
/// let params = Params::new().with("width", "4096");
/// assert_eq!(params.get_usize(spmv, "width")?, 4096);
/// assert_eq!(params.get_f64(spmv, "density")?, 1.0 / 128.0); // the declared default
/// assert!(Params::new().with("width", "many").get_usize(spmv, "width").is_err());
/// # Ok::<(), parbench_kernels::KernelError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    values: BTreeMap<String, String>,
}

impl Params {
    /// No parameters set: every kernel uses its defaults.
    pub fn new() -> Self {
        Params::default()
    }

    /// Sets `name` to `value`, replacing an earlier value.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.values.insert(name.into(), value.into());
        self
    }

    /// Every parameter that was set, `(name, value)` in name order (defaults not included).
    ///
    /// ```
    /// use parbench_kernels::Params;
    /// let params = Params::new().with("n", "8").with("cutoff", "3");
    /// assert_eq!(params.iter().collect::<Vec<_>>(), [("cutoff", "3"), ("n", "8")]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The text given for `name`, or `None` when it was not given and the kernel's default
    /// applies: an explicit value, even the default's text or an empty one, is `Some`.
    ///
    /// ```
    /// use parbench_kernels::Params;
    /// let params = Params::new().with("lock", "std");
    /// assert_eq!(params.given("lock"), Some("std"));
    /// assert_eq!(params.given("backend"), None);
    /// ```
    pub fn given(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// [`Params::set`] by value, for building parameters in one expression.
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set(name, value);
        self
    }

    /// The text given for `name`, or the kernel's declared default.
    ///
    /// # Errors
    /// [`KernelError::BadParam`] if the kernel does not declare `name` (a bug in the kernel).
    pub fn get_str<'a>(
        &'a self,
        kernel: &(impl Kernel + ?Sized),
        name: &str,
    ) -> Result<&'a str, KernelError> {
        if let Some(value) = self.given(name) {
            return Ok(value);
        }
        kernel
            .params()
            .iter()
            .find(|spec| spec.name == name)
            .map(|spec| spec.default)
            .ok_or_else(|| bad_param(kernel, name, "", "the kernel does not declare it"))
    }

    /// `name` as a non-negative integer (`_` separators and `2^k` are accepted).
    ///
    /// # Errors
    /// [`KernelError::BadParam`] if the value is not such an integer.
    pub fn get_usize(&self, kernel: &dyn Kernel, name: &str) -> Result<usize, KernelError> {
        let text = self.get_str(kernel, name)?;
        parse_usize(text)
            .ok_or_else(|| bad_param(kernel, name, text, "expected a non-negative integer"))
    }

    /// `name` as an integer in `range`.
    ///
    /// ```
    /// use parbench_kernels::{find_kernel, Params};
    ///
    /// let matmul = find_kernel("matmul")?;
    /// assert_eq!(Params::new().with("n", "64").get_usize_in(matmul, "n", 1..=100)?, 64);
    /// let error = Params::new().with("n", "0").get_usize_in(matmul, "n", 1..=100).err().unwrap();
    /// assert!(error.to_string().contains("must be in 1 … 100"));
    /// # Ok::<(), parbench_kernels::KernelError>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadParam`] if the value is not an integer or lies outside `range`.
    pub fn get_usize_in(
        &self,
        kernel: &dyn Kernel,
        name: &str,
        range: RangeInclusive<usize>,
    ) -> Result<usize, KernelError> {
        let value = self.get_usize(kernel, name)?;
        if range.contains(&value) {
            Ok(value)
        } else {
            let reason = format!("must be in {} … {}", range.start(), range.end());
            Err(bad_param(kernel, name, &value.to_string(), &reason))
        }
    }

    /// The kernel's [`Kernel::small_params`]: a run that takes well under a millisecond.
    ///
    /// ```
    /// use parbench_kernels::{find_kernel, Params};
    ///
    /// let scan = find_kernel("scan")?;
    /// assert_eq!(Params::small(scan).get_usize(scan, "n")?, 1024);
    /// # Ok::<(), parbench_kernels::KernelError>(())
    /// ```
    pub fn small(kernel: &dyn Kernel) -> Self {
        let mut params = Params::new();
        for (name, value) in kernel.small_params() {
            params.set(*name, *value);
        }
        params
    }

    /// `name` as a finite number (`2^-7` is accepted).
    ///
    /// # Errors
    /// [`KernelError::BadParam`] if the value is not a finite number.
    pub fn get_f64(&self, kernel: &dyn Kernel, name: &str) -> Result<f64, KernelError> {
        let text = self.get_str(kernel, name)?;
        parse_f64(text)
            .filter(|v| v.is_finite())
            .ok_or_else(|| bad_param(kernel, name, text, "expected a finite number"))
    }

    /// `name` as a path, `None` when neither given nor defaulted.
    ///
    /// # Errors
    /// [`KernelError::BadParam`] if the kernel does not declare `name`.
    pub fn get_path(
        &self,
        kernel: &dyn Kernel,
        name: &str,
    ) -> Result<Option<PathBuf>, KernelError> {
        let text = self.get_str(kernel, name)?;
        Ok((!text.is_empty()).then(|| PathBuf::from(text)))
    }

    /// `name`, which must be one of `choices`.
    ///
    /// # Errors
    /// [`KernelError::BadParam`] listing the valid choices otherwise.
    pub fn get_choice<'c>(
        &self,
        kernel: &dyn Kernel,
        name: &str,
        choices: &[&'c str],
    ) -> Result<&'c str, KernelError> {
        let text = self.get_str(kernel, name)?;
        choices
            .iter()
            .find(|c| **c == text)
            .copied()
            .ok_or_else(|| {
                bad_param(
                    kernel,
                    name,
                    text,
                    &format!("expected one of: {}", choices.join(", ")),
                )
            })
    }
}

fn parse_usize(text: &str) -> Option<usize> {
    let text = text.trim().replace('_', "");
    match text.split_once('^') {
        Some((base, exp)) => usize::from_str(base)
            .ok()?
            .checked_pow(u32::from_str(exp).ok()?),
        None => usize::from_str(&text).ok(),
    }
}

fn parse_f64(text: &str) -> Option<f64> {
    let text = text.trim();
    match text.split_once('^') {
        Some((base, exp)) => Some(f64::from_str(base).ok()?.powi(i32::from_str(exp).ok()?)),
        None => f64::from_str(text).ok(),
    }
}

/// A [`KernelError::BadParam`] for `kernel`'s parameter `name`.
pub(crate) fn bad_param(
    kernel: &(impl Kernel + ?Sized),
    name: &str,
    value: &str,
    reason: &str,
) -> KernelError {
    KernelError::BadParam {
        kernel: kernel.name(),
        name: name.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

/// A [`KernelError::WrongResult`] for `kernel`.
pub(crate) fn wrong_result(kernel: &'static str, detail: impl Into<String>) -> KernelError {
    KernelError::WrongResult {
        kernel,
        detail: detail.into(),
    }
}

/// Times `section` on `exec`; a thread the executor was refused during it turns into an error.
pub(crate) fn timed<T>(
    exec: &dyn Executor,
    section: impl FnOnce() -> T,
) -> Result<(T, Duration), KernelError> {
    let start = Instant::now();
    let value = section();
    let elapsed = start.elapsed();
    match exec.take_error() {
        Some(error) => Err(error.into()),
        None => Ok((value, elapsed)),
    }
}

/// Everything that can go wrong preparing or running a kernel.
///
/// ```
/// use parbench_kernels::{find_kernel, KernelError, Params};
///
/// let spmv = find_kernel("spmv-balanced")?;
/// let error = spmv.prepare(&Params::new().with("matrix", "/no/such.mtx"), 2).err().unwrap();
/// assert!(matches!(error, KernelError::Io { .. }));
/// assert!(error.to_string().starts_with("/no/such.mtx: "));
/// # Ok::<(), KernelError>(())
/// ```
#[derive(Debug, Error)]
pub enum KernelError {
    /// A name that is not a kernel.
    #[error("unknown kernel `{name}`; valid kernels: {valid}")]
    UnknownKernel {
        /// The name given.
        name: String,
        /// Every valid name, comma-separated.
        valid: String,
    },
    /// A parameter value the kernel cannot use.
    #[error("kernel {kernel}: bad value `{value}` for parameter `{name}`: {reason}")]
    BadParam {
        /// The kernel.
        kernel: &'static str,
        /// The parameter.
        name: String,
        /// The value given.
        value: String,
        /// Why it is unusable.
        reason: String,
    },
    /// A malformed input file.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The kernel's result failed validation.
    #[error("kernel {kernel} computed a wrong result: {detail}")]
    WrongResult {
        /// The kernel.
        kernel: &'static str,
        /// What differed.
        detail: String,
    },
    /// The executor could not run a task.
    #[error(transparent)]
    Executor(#[from] ExecutorError),
    /// An input file that cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_accept_powers_and_separators() {
        assert_eq!(parse_usize("2^15"), Some(32768));
        assert_eq!(parse_usize("1_024"), Some(1024));
        assert_eq!(parse_usize("-1"), None);
        assert_eq!(parse_usize("2^99"), None);
        assert_eq!(parse_f64("2^-7"), Some(1.0 / 128.0));
        assert_eq!(parse_f64("0.5"), Some(0.5));
        assert_eq!(parse_f64("x"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(text in "\\PC{0,12}") {
            let _ = parse_usize(&text);
            let _ = parse_f64(&text);
        }

        #[test]
        fn plain_integers_round_trip(n in 0usize..usize::MAX) {
            proptest::prop_assert_eq!(parse_usize(&n.to_string()), Some(n));
        }
    }
}
