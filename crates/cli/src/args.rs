//! Command-line syntax (clap derive) and the parsers of its values.
//!
//! Only syntax is checked here — numbers, lists, `key=value` pairs. Names of kernels and
//! schedulers are resolved by [`crate::sweep`] against the kernels crate's registry, so the error
//! for an unknown name lists exactly the names that exist.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::export::ExportFormat;

/// parbench-cli: measure parallel kernels on every scheduler, with statistics, exports and plots.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from(["parbench-cli", "sweep", "--threads", "1,2", "--runs", "3"]).unwrap();
/// let Command::Sweep(sweep) = cli.command else { panic!("not a sweep") };
/// assert_eq!(sweep.threads.unwrap().0, vec![1, 2]);
/// ```
#[derive(Debug, Parser)]
#[command(name = "parbench-cli", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run kernels × schedulers × thread counts and report statistics per cell.
    Sweep(Box<SweepArgs>),
    /// Draw box plots, speed-up curves and scheduler comparisons (SVG or PNG) from a sweep's JSON.
    Plot(PlotArgs),
    /// Tail latency (p95) against offered load of a kernel served by 1 or 2 pinned threads.
    Latency(Box<crate::latency::LatencyArgs>),
    /// List the kernels with their parameters and defaults, and the schedulers.
    List,
    /// Lock throughput and fairness: every spin lock × available backend, plus std::sync::Mutex.
    Locks(crate::locks::LocksArgs),
    /// Print the machine's (or a planned machine's) packages, cores and PUs.
    Topology(crate::topology::TopologyArgs),
    /// Per-thread perf counters of a kernel, the latency study's metrics and SMT classification.
    Profile(crate::profile::ProfileArgs),
    /// Map threads to PUs by instruction mix and compare every algorithm on the contention model.
    Map(Box<crate::map::MapArgs>),
    /// Run unmodified programs together, mapping and pinning every thread they start.
    Corun(Box<crate::corun::CorunArgs>),
    /// Rerun a study's own experiments and set the results beside the published ones.
    Reproduce(crate::reproduce::ReproduceArgs),
    /// Compare the cells of sweep reports (the first is the baseline): ratio, bootstrap CI, verdict.
    Compare(crate::compare::CompareArgs),
    /// How one scheduler stands against the others over several sweep reports (one per process).
    Standings(crate::standings::StandingsArgs),
    /// One round of `sweep --rounds`, run by `sweep` in a child process (not for direct use).
    #[command(hide = true)]
    SweepRound(SweepRoundArgs),
}

/// Options of the hidden `sweep-round` subcommand (see [`crate::rounds`]).
#[derive(Debug, Args)]
pub struct SweepRoundArgs {
    /// The round's [`crate::rounds::RoundRequest`] as JSON.
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    /// Where to write the round's JSON report (rewritten after every cell).
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
}

/// Options of `parbench-cli sweep`. Without any, the quick default suite runs.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Thread counts, e.g. `1,2,4` or `1-4` [default: 1, 2, 4, … below the available cores, then
    /// the available cores].
    ///
    /// A count past what this process can start (the OS's thread limits, as the pools check them)
    /// is refused before anything runs, for every scheduler: `seq`, which starts no thread, too.
    #[arg(long, value_name = "LIST", value_parser = parse_thread_counts)]
    pub threads: Option<ThreadCounts>,
    /// Kernels to run, comma-separated [default: the default suite; see `list`].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub kernels: Option<Vec<String>>,
    /// Schedulers to run, comma-separated [default: tree,static,dynamic,guided,simple,rayon,seq].
    ///
    /// `dynamic:N`, `guided:N`, `simple:N` and `tree-fixed-grain:N` set the chunk or grain (OpenMP's
    /// `schedule(dynamic, N)`; default 1); `dynamic,dynamic:64` measures both.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub schedulers: Option<Vec<String>>,
    /// Timed runs per cell in each round [at most 1000000; runs × rounds at most 10000000].
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RUNS, value_parser = parse_runs)]
    pub runs: usize,
    /// Rounds: the whole plan is measured this many times, each round in a fresh process with
    /// the cells in a new shuffled order [at most 1000].
    #[arg(long, value_name = "R", default_value_t = DEFAULT_ROUNDS, value_parser = parse_rounds)]
    pub rounds: usize,
    /// Seed of the rounds' cell orders [default: from the clock; recorded in the results].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Interleave the schedulers: each cell's timed runs are split into B blocks, and the cells of
    /// one kernel and thread count take turns block by block, so every scheduler samples the same
    /// stretches of a drifting machine (1: each cell's runs back to back) [at most 1000000].
    #[arg(long, value_name = "B", default_value_t = DEFAULT_INTERLEAVE, value_parser = parse_runs)]
    pub interleave: usize,
    /// Untimed warm-up runs per cell, before the timed ones [at most 1000000].
    #[arg(long, value_name = "W", default_value_t = DEFAULT_WARMUP, value_parser = parse_warmup)]
    pub warmup: usize,
    /// Kernel parameters, each passed only to the kernels that declare it (one that no selected
    /// kernel declares is an error).
    #[command(flatten)]
    pub params: KernelParamArgs,
    /// Output format of stdout, or of `--output` [default: table; for a file: from its extension].
    #[arg(long, value_enum)]
    pub format: Option<ExportFormat>,
    /// Also write the results to FILE, rewritten after every round; an interruption or a failed
    /// round keeps every finished cell.
    ///
    /// On Ctrl-C, SIGTERM or SIGHUP the running round's process is killed and every cell finished
    /// so far (the interrupted round's too) is written to FILE, or to stdout without it (JSON
    /// marks it unfinished: settings `rounds.done` and `stopped`); the sweep then exits with 130,
    /// 143 or 129. Cells still being measured are lost (with --interleave, those of the kernel and
    /// thread count in progress). A round whose process fails keeps the cells measured before it
    /// the same way (exit 2).
    ///
    /// A new or regular FILE is replaced through FILE.PID.partial and a rename (never half
    /// written); a symbolic link is followed and its target replaced, the link kept; a device or
    /// FIFO is opened before measuring, as a shell redirection would, and gets the final results
    /// once; a directory or socket is refused. FILE is checked before measuring without changing
    /// it, and is first written once there are results. If it cannot be written after
    /// measuring, the results go to $TMPDIR/parbench-rescued-PID-NAME (stdout if even that
    /// fails), the error on stderr says where, and the exit code is 2.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Thread pinning of the executors' workers.
    #[arg(long, value_enum, default_value_t = PinArg::None)]
    pub pin: PinArg,
    /// No plan and no progress bar on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

impl SweepArgs {
    /// Checks what the parsers cannot see one value at a time: the samples a cell collects over
    /// all rounds stay within [`MAX_SAMPLES_PER_CELL`].
    ///
    /// ```
    /// use clap::Parser;
    /// use parbench_cli::args::{Cli, Command};
    /// let cli = Cli::try_parse_from(["parbench-cli", "sweep", "--runs", "1000000", "--rounds", "1000"])?;
    /// let Command::Sweep(sweep) = cli.command else { unreachable!() };
    /// assert!(sweep.check_bounds().unwrap_err().contains("--runs 1000000 × --rounds 1000"));
    /// # Ok::<(), clap::Error>(())
    /// ```
    ///
    /// # Errors
    /// A one-line message naming the options and the bound.
    pub fn check_bounds(&self) -> Result<(), String> {
        match self.runs.checked_mul(self.rounds) {
            Some(samples) if samples <= MAX_SAMPLES_PER_CELL => Ok(()),
            _ => Err(format!(
                "--runs {} × --rounds {} is more than {MAX_SAMPLES_PER_CELL} samples per cell",
                self.runs, self.rounds
            )),
        }
    }
}

/// The most timed runs per cell (`--runs` of `sweep`, `locks` and `reproduce`; `--interleave`):
/// a million samples are 8 MB per cell and far more than any interval needs.
pub const MAX_RUNS: usize = 1_000_000;
/// The most untimed warm-up runs per cell (`--warmup` of `sweep` and `locks`).
pub const MAX_WARMUP: usize = 1_000_000;
/// The most rounds (child processes) of one sweep (`--rounds`).
pub const MAX_ROUNDS: usize = 1_000;
/// The most samples one sweep cell may collect over all its rounds (`--runs` × `--rounds`):
/// 80 MB of samples per cell, kept in memory and written to every report.
pub const MAX_SAMPLES_PER_CELL: usize = 10_000_000;

/// Timed runs per cell and round when `--runs` is not given: enough for a distribution-free
/// interval of each round's median, and over [`DEFAULT_ROUNDS`] rounds 60 samples per cell, past
/// the normal-approximation confidence interval's minimum (see [`crate::stats::CI_MIN_RUNS`]).
pub const DEFAULT_RUNS: usize = 10;
/// Rounds (processes) per sweep when `--rounds` is not given.
///
/// A comparison that picks the fastest of several schedulers picks the luckiest of their noisy
/// medians, so the default is set by how far that luck reaches. On the 2-vCPU VM of 27 Nov 2026
/// (64 sweeps of 3 rounds), the best scheduler other than tree, put in tree's place, came out at
/// 1.031, 1.038 and 1.042 × "the fastest other" on spmv-balanced, floorplan and round, although
/// it is level with the best there; pooling two consecutive sweeps' samples (6 rounds) brought
/// that to 1.019, 1.020 and 1.024. The default suite at 1 and 2 threads takes about 100 s there
/// with 6 rounds, against 52 s with 3.
pub const DEFAULT_ROUNDS: usize = 6;
/// Warm-up runs per cell when `--warmup` is not given: pools, caches and page mappings settle.
pub const DEFAULT_WARMUP: usize = 3;
/// Blocks per cell when `--interleave` is not given (see [`crate::sweep::SweepPlan::interleave`]):
/// with the default 10 runs, two timed runs per block. On a two-vCPU VM this cut how far
/// one-thread pools (which run every loop inline, like `seq`) stray from `seq` within a process
/// to a third (median |ln ratio| 0.079 → 0.024 over 20 processes each); it costs each later
/// block ≥ 2 ms of untimed runs ([`crate::sweep::REWARM`]) and a 2 ms pause.
pub const DEFAULT_INTERLEAVE: usize = 5;

/// The kernel parameters with their own flag, plus the generic `--param key=value`.
#[derive(Debug, Default, Args)]
pub struct KernelParamArgs {
    /// spmv: columns of the generated matrix (its row width), e.g. 1024 or 2^15.
    #[arg(long, value_name = "W")]
    pub width: Option<String>,
    /// spmv: read the matrix from a MatrixMarket coordinate file instead of generating it (then
    /// --width and --param density/rows, which shape only a generated matrix, are errors).
    #[arg(long, value_name = "FILE.mtx")]
    pub matrix: Option<String>,
    /// qap, floorplan: input instance file.
    #[arg(long, value_name = "FILE")]
    pub input: Option<String>,
    /// Task kernels (nqueens, qap, floorplan): depth below which the search runs sequentially.
    #[arg(long, value_name = "DEPTH")]
    pub cutoff: Option<String>,
    /// load-dep: buffer size in KiB.
    #[arg(long, value_name = "KIB")]
    pub kb: Option<String>,
    /// Problem size (nqueens board, trapezoids, philosophers, array length …; see `list`).
    #[arg(long, value_name = "N")]
    pub n: Option<String>,
    /// round, trapezoid: the lock type (tas, ttas, ticket, std; see `list`); trapezoid takes one
    /// only with --method mutex or local.
    #[arg(long, value_name = "LOCK")]
    pub lock: Option<String>,
    /// Atomics backend: of the spin locks for round and trapezoid (lse, llsc, portable; default:
    /// the best this CPU has; an error beside their default --lock std, which has none); of the
    /// shared bound/counter for qap, floorplan and nqueens (std, portable, lse, llsc; default
    /// std); an error when no selected kernel is one of these.
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<String>,
    /// trapezoid: how the sum is kept (spin, mutex, semaphore, atomic, local).
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,
    /// Any other kernel parameter, repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub extra: Vec<(String, String)>,
}

impl KernelParamArgs {
    /// Every given parameter as `(name, value)`, named flags first.
    ///
    /// Fails with a one-line message when a parameter is given twice (a flag and `--param`, or
    /// two `--param`s: silently picking one would measure something the user did not ask for), or
    /// when a file parameter (`matrix`, `input`) is empty: the kernels read an empty path as "not
    /// given" and would quietly measure the generated instance instead.
    ///
    /// ```
    /// use parbench_cli::args::KernelParamArgs;
    /// let args = KernelParamArgs { n: Some("10".into()), ..Default::default() };
    /// assert_eq!(args.pairs().unwrap(), vec![("n".to_owned(), "10".to_owned())]);
    /// let empty = KernelParamArgs { matrix: Some("".into()), ..Default::default() };
    /// assert!(empty.pairs().unwrap_err().contains("empty"));
    /// ```
    ///
    /// # Errors
    /// The message, naming the parameter.
    pub fn pairs(&self) -> Result<Vec<(String, String)>, String> {
        let mut pairs: Vec<(String, String)> = self
            .named()
            .into_iter()
            .filter_map(|(name, value)| value.as_ref().map(|v| (name.to_owned(), v.clone())))
            .collect();
        for (name, value) in &self.extra {
            if pairs.iter().any(|(existing, _)| existing == name) {
                return Err(format!("parameter `{name}` is given more than once"));
            }
            pairs.push((name.clone(), value.clone()));
        }
        if let Some((name, _)) = pairs.iter().find(|(name, value)| {
            FILE_PARAMETERS.contains(&name.as_str()) && value.trim().is_empty()
        }) {
            return Err(format!("parameter `{name}` is an empty path; name a file"));
        }
        Ok(pairs)
    }

    /// Parameter `name` with `value` as the user gave it, for an error message: `--backend lse`
    /// when its own flag was given, else `--param backend=lse`.
    ///
    /// ```
    /// use parbench_cli::args::KernelParamArgs;
    /// let args = KernelParamArgs { backend: Some("lse".into()), ..Default::default() };
    /// assert_eq!(args.given_as("backend", "lse"), "--backend lse");
    /// assert_eq!(args.given_as("iters", "3"), "--param iters=3");
    /// ```
    pub fn given_as(&self, name: &str, value: &str) -> String {
        let flagged = self
            .named()
            .iter()
            .any(|(flag, given)| *flag == name && given.is_some());
        if flagged {
            format!("--{name} {value}")
        } else {
            format!("--param {name}={value}")
        }
    }

    /// The parameters with a flag of their own, by the flag's (and parameter's) name.
    fn named(&self) -> [(&'static str, &Option<String>); 9] {
        [
            ("width", &self.width),
            ("matrix", &self.matrix),
            ("input", &self.input),
            ("cutoff", &self.cutoff),
            ("kb", &self.kb),
            ("n", &self.n),
            ("lock", &self.lock),
            ("backend", &self.backend),
            ("method", &self.method),
        ]
    }
}

/// Kernel parameters that name an input file.
pub const FILE_PARAMETERS: [&str; 2] = ["input", "matrix"];

/// Options of `parbench-cli plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// JSON results written by `sweep --output FILE.json`. The report of an unfinished sweep
    /// (still running, or stopped) is drawn from the rounds it holds, with a note on stderr.
    #[arg(value_name = "RESULTS.json")]
    pub results: PathBuf,
    /// The figure to write (.svg or .png).
    ///
    /// FIG is checked before the results are read and written as sweep's --output is: a new or
    /// regular file replaced atomically, a link followed, a device or FIFO written through, a
    /// directory or socket refused; if it cannot be written, the figure goes to
    /// $TMPDIR/parbench-rescued-PID-NAME, the error says where, and the exit code is 2.
    #[arg(long, short, value_name = "FIG.svg")]
    pub output: PathBuf,
    /// Image format [default: from the extension of --output; SVG for any other].
    #[arg(long, value_enum)]
    pub format: Option<FigureFormat>,
}

/// Image formats of `plot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FigureFormat {
    /// Scalable vector graphics: text stays text.
    Svg,
    /// A bitmap, for a quick look in any image viewer.
    Png,
}

impl FigureFormat {
    /// The format a file name's extension implies, if any.
    ///
    /// ```
    /// use parbench_cli::args::FigureFormat;
    /// assert_eq!(FigureFormat::from_extension("f.PNG".as_ref()), Some(FigureFormat::Png));
    /// assert_eq!(FigureFormat::from_extension("f.pdf".as_ref()), None);
    /// ```
    pub fn from_extension(path: &std::path::Path) -> Option<FigureFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(FigureFormat::Svg),
            "png" => Some(FigureFormat::Png),
            _ => None,
        }
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            FigureFormat::Svg => "svg",
            FigureFormat::Png => "png",
        }
    }
}

/// `--pin` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PinArg {
    /// Let the OS place the workers.
    None,
    /// Worker i on the i-th available CPU, and the measuring thread (which runs slot 0 of the
    /// parbench-scheduler pools' calls) on the first while it runs a cell.
    Compact,
}

/// A list of thread counts, each at least 1, without duplicates, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadCounts(pub Vec<usize>);

impl ThreadCounts {
    /// The thread counts measured when `--threads` is not given, for a machine of `cores`
    /// cores: the powers of two below `cores`, then `cores` itself (`1,2,4,8,12` for 12), like
    /// the scaling plots of the studies; one count per core would make a default sweep on a
    /// 64-core server 64 sweeps long.
    ///
    /// ```
    /// use parbench_cli::args::ThreadCounts;
    /// assert_eq!(ThreadCounts::up_to(2).0, vec![1, 2]);
    /// assert_eq!(ThreadCounts::up_to(12).0, vec![1, 2, 4, 8, 12]);
    /// ```
    #[must_use]
    pub fn up_to(cores: usize) -> ThreadCounts {
        let cores = cores.max(1);
        let mut counts: Vec<usize> = std::iter::successors(Some(1_usize), |&n| n.checked_mul(2))
            .take_while(|&n| n < cores)
            .collect();
        counts.push(cores);
        ThreadCounts(counts)
    }

    /// [`ThreadCounts::up_to`] the cores this process may use.
    #[must_use]
    pub fn up_to_available_cores() -> ThreadCounts {
        ThreadCounts::up_to(std::thread::available_parallelism().map_or(1, usize::from))
    }
}

/// Parses `1,2,4`, `1-4` or a mix (`1-2,8`) into thread counts.
///
/// ```
/// use parbench_cli::args::parse_thread_counts;
/// assert_eq!(parse_thread_counts("1-3,8").unwrap().0, vec![1, 2, 3, 8]);
/// assert!(parse_thread_counts("0").is_err());
/// ```
pub fn parse_thread_counts(text: &str) -> Result<ThreadCounts, String> {
    let mut counts = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for item in text.split(',').map(str::trim) {
        // Said of the whole entry: "'' is not a non-negative integer" named neither `1,,2`'s
        // empty entry nor the missing end of `-1` or `2-`.
        if item.is_empty() {
            return Err(format!(
                "'{text}' has an empty entry; list thread counts like 1,2,4 or 1-4"
            ));
        }
        let (first, last) = match item.split_once('-') {
            Some((first, last)) if first.trim().is_empty() || last.trim().is_empty() => {
                return Err(format!(
                    "'{item}' is not a thread count (at least 1) or a range LOW-HIGH"
                ));
            }
            Some((first, last)) => (parse_positive(first)?, parse_positive(last)?),
            None => {
                let single = parse_positive(item)?;
                (single, single)
            }
        };
        if first > last {
            return Err(format!("range '{item}' is empty (write it low-high)"));
        }
        if last - first >= MAX_THREAD_COUNTS {
            return Err(format!(
                "range '{item}' has more than {MAX_THREAD_COUNTS} thread counts; list the ones to measure"
            ));
        }
        for count in first..=last {
            if seen.insert(count) {
                counts.push(count);
            }
        }
    }
    Ok(ThreadCounts(counts))
}

/// The most thread counts one range may expand to (a sweep measures every one of them).
pub const MAX_THREAD_COUNTS: usize = 4096;

/// Parses an integer of at least 1.
///
/// ```
/// use parbench_cli::args::parse_positive;
/// assert_eq!(parse_positive("7"), Ok(7));
/// assert!(parse_positive("0").unwrap_err().contains("at least 1"));
/// ```
pub fn parse_positive(text: &str) -> Result<usize, String> {
    match parse_count(text)? {
        0 => Err("must be at least 1, got 0".to_owned()),
        n => Ok(n),
    }
}

/// Parses an integer in `min..=max`, naming the bound that is exceeded.
///
/// ```
/// use parbench_cli::args::parse_in_range;
/// assert_eq!(parse_in_range("7", 1, 10), Ok(7));
/// assert!(parse_in_range("0", 1, 10).unwrap_err().contains("at least 1"));
/// assert!(parse_in_range("11", 1, 10).unwrap_err().contains("at most 10"));
/// ```
///
/// # Errors
/// A message for clap when the text is not an integer or lies outside the range.
pub fn parse_in_range(text: &str, min: usize, max: usize) -> Result<usize, String> {
    let value = parse_count(text)?;
    if value < min {
        Err(format!("must be at least {min}, got {value}"))
    } else if value > max {
        Err(format!("must be at most {max}, got {value}"))
    } else {
        Ok(value)
    }
}

/// Parses a number of timed runs: 1 to [`MAX_RUNS`].
///
/// ```
/// use parbench_cli::args::parse_runs;
/// assert_eq!(parse_runs("10"), Ok(10));
/// assert!(parse_runs("0").is_err() && parse_runs("18446744073709551615").is_err());
/// ```
///
/// # Errors
/// A message for clap naming the bound.
pub fn parse_runs(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, MAX_RUNS)
}

/// Parses a number of warm-up runs: 0 to [`MAX_WARMUP`].
///
/// # Errors
/// A message for clap naming the bound.
pub fn parse_warmup(text: &str) -> Result<usize, String> {
    parse_in_range(text, 0, MAX_WARMUP)
}

/// Parses a number of rounds: 1 to [`MAX_ROUNDS`].
///
/// # Errors
/// A message for clap naming the bound.
pub fn parse_rounds(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, MAX_ROUNDS)
}

/// Parses a positive number of seconds (fractions allowed), e.g. `2.5`.
///
/// ```
/// use parbench_cli::args::parse_seconds;
/// assert_eq!(parse_seconds("0.5"), Ok(std::time::Duration::from_millis(500)));
/// assert!(parse_seconds("0").is_err() && parse_seconds("-1").is_err() && parse_seconds("x").is_err());
/// ```
///
/// # Errors
/// A message for clap when the text is not a positive, finite number.
pub fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds > 0.0 && seconds.is_finite() && seconds < 1e9 => {
            Ok(std::time::Duration::from_secs_f64(seconds))
        }
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// Parses a non-negative integer.
///
/// ```
/// use parbench_cli::args::parse_count;
/// assert_eq!(parse_count(" 0 "), Ok(0));
/// assert!(parse_count("two").is_err());
/// ```
pub fn parse_count(text: &str) -> Result<usize, String> {
    let text = text.trim();
    text.parse()
        .map_err(|_| format!("'{text}' is not a non-negative integer"))
}

/// Parses `key=value` (the value may contain `=`; the key may not be empty).
///
/// ```
/// use parbench_cli::args::parse_key_value;
/// assert_eq!(parse_key_value("seed=42"), Ok(("seed".to_owned(), "42".to_owned())));
/// assert!(parse_key_value("seed").is_err());
/// ```
pub fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!("'{text}' is not of the form key=value")),
    }
}

/// A usage error as one complete line: clap's first line names the problem but puts what is
/// missing or allowed on the lines below it, so those are joined in (usage and the `--help` tip
/// are left out).
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, usage_error_line};
/// let error = Cli::try_parse_from(["parbench-cli", "plot", "r.json"]).unwrap_err();
/// assert_eq!(usage_error_line(&error), "error: missing required argument: --output <FIG.svg>");
/// ```
#[must_use]
pub fn usage_error_line(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() == ErrorKind::MissingRequiredArgument {
        if let Some(ContextValue::Strings(missing)) = error.get(ContextKind::InvalidArg) {
            let plural = if missing.len() == 1 { "" } else { "s" };
            return format!(
                "error: missing required argument{plural}: {}",
                missing.join(", ")
            );
        }
    }
    let rendered = error.render().to_string();
    let parts: Vec<String> = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .filter(|line| !line.is_empty())
        .map(
            |line| match line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                // `[possible values: a, b]` reads as an aside once it shares the error's line.
                Some(inner) => format!("({inner})"),
                None => line.to_owned(),
            },
        )
        .collect();
    if parts.is_empty() {
        "error: invalid arguments".to_owned()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("parbench-cli").chain(args.iter().copied()))
    }

    fn sweep(args: &[&str]) -> SweepArgs {
        let mut all = vec!["sweep"];
        all.extend_from_slice(args);
        match parse(&all).unwrap().command {
            Command::Sweep(sweep) => *sweep,
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn sweep_without_flags_uses_the_defaults() {
        let s = sweep(&[]);
        assert_eq!(
            (s.runs, s.warmup, s.interleave),
            (DEFAULT_RUNS, DEFAULT_WARMUP, DEFAULT_INTERLEAVE)
        );
        assert_eq!((s.rounds, s.seed), (DEFAULT_ROUNDS, None));
        const { assert!(DEFAULT_ROUNDS >= 3) };
        assert_eq!((s.threads, s.kernels, s.schedulers), (None, None, None));
        assert_eq!(
            (s.format, s.output, s.pin, s.quiet),
            (None, None, PinArg::None, false)
        );
    }

    #[test]
    fn default_thread_counts_double_up_to_the_cores() {
        let up_to = |cores| ThreadCounts::up_to(cores).0;
        assert_eq!(up_to(0), [1]);
        assert_eq!(up_to(1), [1]);
        assert_eq!(up_to(2), [1, 2]);
        assert_eq!(up_to(3), [1, 2, 3]);
        assert_eq!(up_to(4), [1, 2, 4]);
        assert_eq!(up_to(6), [1, 2, 4, 6]);
        assert_eq!(up_to(64), [1, 2, 4, 8, 16, 32, 64]);
        let huge = up_to(usize::MAX);
        assert_eq!((huge.len(), huge.last()), (65, Some(&usize::MAX)));
        assert!(huge.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn sweep_lists_split_on_commas() {
        let s = sweep(&[
            "--kernels",
            "reduce,scan",
            "--schedulers",
            "tree,seq",
            "--threads",
            "2,1",
        ]);
        assert_eq!(s.kernels.unwrap(), ["reduce", "scan"]);
        assert_eq!(s.schedulers.unwrap(), ["tree", "seq"]);
        assert_eq!(s.threads.unwrap().0, [2, 1]);
    }

    #[test]
    fn thread_counts_reject_zero_garbage_and_empty_ranges() {
        assert!(parse_thread_counts("0").is_err());
        assert!(parse_thread_counts("1,x").is_err());
        assert!(parse_thread_counts("4-2").is_err());
        assert!(parse_thread_counts("").is_err());
        assert_eq!(parse_thread_counts("2,2,1-2").unwrap().0, [2, 1]);
        // Each error names the entry at fault, not an empty part of it.
        for (text, says) in [
            ("1,,2", "'1,,2' has an empty entry"),
            ("", "'' has an empty entry"),
            (" ", "' ' has an empty entry"),
            ("-1", "'-1' is not a thread count"),
            ("2-", "'2-' is not a thread count"),
        ] {
            let error = parse_thread_counts(text).unwrap_err();
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }

    #[test]
    fn zero_runs_and_zero_threads_are_usage_errors() {
        assert!(parse(&["sweep", "--runs", "0"]).is_err());
        assert!(parse(&["sweep", "--threads", "0"]).is_err());
        assert_eq!(sweep(&["--warmup", "0"]).warmup, 0);
    }

    #[test]
    fn counts_past_their_bound_are_usage_errors() {
        for (option, past) in [
            ("--runs", MAX_RUNS + 1),
            ("--rounds", MAX_ROUNDS + 1),
            ("--warmup", MAX_WARMUP + 1),
            ("--interleave", MAX_RUNS + 1),
        ] {
            let error = parse(&["sweep", option, &past.to_string()]).unwrap_err();
            assert!(
                error.to_string().contains("must be at most"),
                "{option}: {error}"
            );
            let error = parse(&["sweep", option, "18446744073709551615"]).unwrap_err();
            assert!(
                error.to_string().contains("must be at most"),
                "{option}: {error}"
            );
        }
        assert_eq!(sweep(&["--runs", &MAX_RUNS.to_string()]).runs, MAX_RUNS);
        assert_eq!(
            sweep(&["--warmup", &MAX_WARMUP.to_string()]).warmup,
            MAX_WARMUP
        );
    }

    #[test]
    fn samples_per_cell_past_their_bound_are_usage_errors() {
        let s = sweep(&["--runs", &MAX_RUNS.to_string(), "--rounds", "11"]);
        assert!(s.check_bounds().is_err());
        let s = sweep(&["--runs", &MAX_RUNS.to_string(), "--rounds", "10"]);
        assert!(s.check_bounds().is_ok());
    }

    #[test]
    fn kernel_params_collect_flags_and_generic_pairs() {
        let s = sweep(&["--width", "1024", "--param", "seed=7", "--method", "local"]);
        let pairs = s.params.pairs().unwrap();
        let expected = [("width", "1024"), ("method", "local"), ("seed", "7")];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(pairs, expected);
    }

    #[test]
    fn a_parameter_given_twice_is_rejected_by_name() {
        let twice = |name: &str| Err(format!("parameter `{name}` is given more than once"));
        let s = sweep(&["--n", "8", "--param", "n=9"]);
        assert_eq!(s.params.pairs(), twice("n"));
        let s = sweep(&["--param", "a=1", "--param", "a=2"]);
        assert_eq!(s.params.pairs(), twice("a"));
    }

    #[test]
    fn empty_file_parameters_are_rejected() {
        for args in [
            &["--matrix", ""][..],
            &["--input", " "],
            &["--param", "matrix="],
            &["--param", "input="],
        ] {
            let error = sweep(args).params.pairs().unwrap_err();
            assert!(error.contains("empty path"), "{args:?}: {error}");
        }
    }

    #[test]
    fn format_and_output_parse() {
        let s = sweep(&[
            "--format", "markdown", "-o", "r.json", "--pin", "compact", "-q",
        ]);
        assert_eq!(s.format, Some(ExportFormat::Markdown));
        assert_eq!(s.output, Some(PathBuf::from("r.json")));
        assert_eq!((s.pin, s.quiet), (PinArg::Compact, true));
        assert!(parse(&["sweep", "--format", "xml"]).is_err());
    }

    #[test]
    fn plot_requires_an_output_file() {
        assert!(parse(&["plot", "r.json"]).is_err());
        let cli = parse(&["plot", "r.json", "-o", "f.svg"]).unwrap();
        let Command::Plot(plot) = cli.command else {
            panic!("not plot")
        };
        assert_eq!(plot.output, PathBuf::from("f.svg"));
    }

    #[test]
    fn usage_errors_name_what_is_missing_and_what_is_allowed() {
        let line = |args: &[&str]| usage_error_line(&parse(args).unwrap_err());
        assert_eq!(
            line(&["latency", "--service", "matmul"]),
            "error: missing required argument: <--qps <LIST>|--qps-range <A:B:STEP>>"
        );
        let missing = line(&["latency"]);
        assert!(missing.starts_with("error: missing required arguments: --service <KERNEL>, "));
        for args in [
            &["compare"][..],
            &["standings"],
            &["map"],
            &["profile"],
            &["profile", "--"],
            &["corun"],
            &["reproduce"],
        ] {
            let missing = line(args);
            assert!(
                missing.starts_with("error: missing required argument"),
                "{args:?}: {missing}"
            );
            assert!(!missing.ends_with(':'), "{args:?} names nothing: {missing}");
        }
        let invalid = line(&["sweep", "--format", "xml"]);
        assert!(invalid.starts_with("error: invalid value 'xml' for '--format <FORMAT>'"));
        assert!(invalid.contains("(possible values: "), "{invalid}");
        assert!(!invalid.contains('\n') && !invalid.contains("Usage"));
    }

    #[test]
    fn command_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
