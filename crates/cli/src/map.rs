//! `parbench-cli map`: place threads on PUs by their kernels' instruction mixes and compare every
//! mapping algorithm on the contention model (`parbench_mapper::map_report`); with
//! `--scenarios`, also measure the study's co-scheduling scenarios on real SMT siblings.
//!
//! A kernel's mix comes from a profile given with `--profile` (its `workload` names the kernel;
//! the mean of its measured per-thread mixes, or the declared mix when the profile was taken
//! without instruction-class counters — the output says which), otherwise from the mix the
//! kernel declares. Threads are assigned to kernels in contiguous blocks, as the study did.
//!
//! The scenarios run real kernels, so this is the one place where `parbench-kernels` and
//! `parbench-mapper` meet: [`KernelWorkload`] turns a kernel into the batch function the
//! scenarios repeat on each pinned thread.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use parbench_kernels::{Kernel, KernelError, Params, PreparedKernel, SeqExecutor, find_kernel};
use parbench_mapper::perf::{MixSource, Profile};
use parbench_mapper::{
    Algorithm, InstructionMix, MapError, NamedMix, SuiteOutcome, Topology, Workload,
    declared_kernel_mixes, different_unit_partners, map_report, parse_topology_arg, plural,
    run_scenario_suite,
};

use crate::args::{parse_in_range, parse_positive};
use crate::commands::write_stdout;
use crate::error::CliError;

/// Options of `parbench-cli map`.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from([
///     "parbench-cli", "map", "--topology", "synthetic:pack:1 core:4 pu:2",
///     "--kernels", "fp-add,int-add", "--threads", "4", "--algorithm", "scatter",
/// ])?;
/// let Command::Map(args) = cli.command else { unreachable!() };
/// assert_eq!(args.kernels, ["fp-add", "int-add"]);
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
pub struct MapArgs {
    /// `this`, `synthetic:DESCRIPTION` (e.g. "synthetic:pack:1 core:4 pu:2"; at most 8192 PUs) or
    /// `xml:FILE`; only `this` with --pid.
    #[arg(long, value_name = "TOPOLOGY", default_value = "this")]
    pub topology: String,
    /// Kernels whose threads are mapped, comma-separated (threads go to them in blocks).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        required_unless_present = "pid"
    )]
    pub kernels: Vec<String>,
    /// Instead of planning kernels: map and pin, once, the threads of these running processes
    /// (and their descendants) on this machine.
    #[arg(long, value_name = "PID[,PID…]", value_delimiter = ',', conflicts_with_all = ["kernels", "profile", "scenarios"])]
    pub pid: Vec<i32>,
    /// With --pid: each process's instruction class (fp, int, load, store, branch), in order, one
    /// per process (or none: unknown mixes).
    #[arg(
        long,
        value_name = "CLASS[,CLASS…]",
        value_delimiter = ',',
        requires = "pid"
    )]
    pub class: Vec<String>,
    /// With --pid: keep watching and re-mapping as threads come and go until the processes exit.
    #[arg(long, requires = "pid")]
    pub follow: bool,
    /// Threads to map [default: every PU of the topology]; not with --pid, which maps every
    /// thread of the processes.
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub threads: Option<usize>,
    /// instruction-aware (refined Algorithm 1), algorithm1 (as published; `algorithm1:CLASS`
    /// sorts by CLASS = fp, int, load, store or branch), round-robin (the study's: a core's
    /// siblings first; also `compact`), os-index, scatter or os.
    #[arg(long, value_name = "NAME", default_value = "instruction-aware")]
    pub algorithm: String,
    /// A profile (`profile --output`) supplying the mix of the kernel it profiled; repeatable.
    #[arg(long, value_name = "P.json")]
    pub profile: Vec<PathBuf>,
    /// Seed of the random placements the model compares against; not with --pid [default: 1].
    #[arg(long, value_name = "S", value_parser = parse_count_u64)]
    pub seed: Option<u64>,
    /// Number of random placements the model compares against; not with --pid [default: 100; at
    /// most 100000].
    #[arg(long, value_name = "N", value_parser = parse_random_samples)]
    pub random_samples: Option<usize>,
    /// Also measure scenarios A (alone), B (two copies on sibling PUs), C (with a different-unit
    /// partner on the sibling) for every kernel of --kernels on a real SMT core of this machine,
    /// reported as time relative to A with the geometric mean over kernels.
    #[arg(long)]
    pub scenarios: bool,
    /// With --scenarios: length of each scenario measurement, in milliseconds [default: 200; at
    /// most 60000].
    #[arg(long, value_name = "MS", value_parser = parse_scenario_ms)]
    pub scenario_ms: Option<usize>,
    /// With --scenarios: repetitions of every kernel's scenarios (interleaved); the median is
    /// reported [default: 3; at most 1000].
    #[arg(long, value_name = "N", value_parser = parse_scenario_repetitions)]
    pub scenario_repetitions: Option<usize>,
}

/// Seed of the random placements when `--seed` is not given.
const DEFAULT_SEED: u64 = 1;
/// Random placements when `--random-samples` is not given.
const DEFAULT_RANDOM_SAMPLES: usize = 100;
/// Length of a scenario measurement when `--scenario-ms` is not given.
const DEFAULT_SCENARIO_MS: u64 = 200;
/// Repetitions of the scenarios when `--scenario-repetitions` is not given.
const DEFAULT_SCENARIO_REPETITIONS: usize = 3;

fn parse_count_u64(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("'{}' is not a non-negative integer", text.trim()))
}

/// The most random placements `map` compares against (`--random-samples`): each is a whole
/// mapping evaluated on the model, and 100 000 already pin the baseline down.
pub const MAX_RANDOM_SAMPLES: usize = 100_000;

fn parse_random_samples(text: &str) -> Result<usize, String> {
    parse_in_range(text, 0, MAX_RANDOM_SAMPLES)
}

fn parse_scenario_ms(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, 60_000)
}

fn parse_scenario_repetitions(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, 1_000)
}

/// The mixes of `kernels`: from the profile naming a kernel, else its declared mix, with one line
/// per profile saying what it supplied.
///
/// ```
/// use parbench_cli::map::kernel_mixes;
/// let (mixes, notes) = kernel_mixes(&["fp-add".to_owned(), "load-dep".to_owned()], &[])?;
/// assert_eq!((mixes.len(), notes.len()), (2, 0));
/// assert!(kernel_mixes(&["nope".to_owned()], &[]).is_err());
/// # Ok::<(), parbench_cli::error::CliError>(())
/// ```
///
/// # Errors
/// [`CliError::Profile`] for a missing or malformed profile file, [`CliError::Usage`] for a
/// profile of a kernel not in `kernels`, a second profile of one kernel, or one without class
/// counts of a kernel that declares no mix, [`CliError::Map`] for a kernel with neither a profile
/// nor a declared mix (listing the kernels that declare one).
pub fn kernel_mixes(
    kernels: &[String],
    profiles: &[PathBuf],
) -> Result<(Vec<NamedMix>, Vec<String>), CliError> {
    let mut from_profiles: Vec<(&PathBuf, (String, InstructionMix))> = Vec::new();
    let mut notes = Vec::new();
    for path in profiles {
        let profile = Profile::read_json(path)?;
        let name = profile.workload.clone();
        if !kernels.contains(&name) {
            return Err(CliError::Usage(format!(
                "profile {} is of kernel {name}, which is not in --kernels",
                path.display()
            )));
        }
        // Only one mix per kernel is used: the second would be ignored while its note said it
        // supplied the mix.
        if let Some((first, _)) = from_profiles
            .iter()
            .find(|(_, (profiled, _))| *profiled == name)
        {
            return Err(CliError::Usage(format!(
                "profiles {} and {} are both of kernel {name}; give one profile per kernel",
                first.display(),
                path.display()
            )));
        }
        match profile.workload_mix(InstructionMix::declared_for_kernel(&name)) {
            (Some(mix), source) => {
                notes.push(profile_note(path, &name, source, &mix));
                from_profiles.push((path, (name, mix)));
            }
            (None, _) => {
                return Err(CliError::Usage(format!(
                    "profile {} has no instruction-class counts and kernel {name} declares no \
                     instruction mix: nothing to map it by",
                    path.display()
                )));
            }
        }
    }
    let mixes = kernels
        .iter()
        .map(|name| {
            match from_profiles
                .iter()
                .find(|(_, (profiled, _))| profiled == name)
            {
                Some((_, (_, mix))) => Ok(NamedMix {
                    name: name.clone(),
                    mix: *mix,
                }),
                None => declared_kernel_mixes(std::slice::from_ref(name))
                    .map(|mut one| one.remove(0))
                    .map_err(CliError::from),
            }
        })
        .collect::<Result<_, _>>()?;
    Ok((mixes, notes))
}

fn profile_note(path: &Path, kernel: &str, source: MixSource, mix: &InstructionMix) -> String {
    format!("{}: {kernel}: {source} ({mix})", path.display())
}

/// A kernel as a scenario workload: each call runs one copy of the kernel once on the calling
/// thread (sequential executor) and returns the operations it did.
///
/// Copies are kept in a pool, so the two threads of scenario B each run their own copy instead of
/// waiting for one another; a new copy is prepared only when none is idle. A kernel error is kept
/// for [`KernelWorkload::finish`] and the batch then counts nothing.
pub struct KernelWorkload {
    kernel: &'static dyn Kernel,
    idle: Mutex<Vec<Box<dyn PreparedKernel>>>,
    error: Mutex<Option<KernelError>>,
}

impl KernelWorkload {
    /// The kernel called `name`, with its default parameters.
    ///
    /// ```
    /// use parbench_cli::map::KernelWorkload;
    /// let workload = KernelWorkload::new("int-add")?;
    /// assert!(workload.batch() > 0);
    /// workload.finish()?;
    /// # Ok::<(), parbench_cli::error::CliError>(())
    /// ```
    ///
    /// # Errors
    /// [`CliError::Kernel`] for an unknown kernel.
    pub fn new(name: &str) -> Result<KernelWorkload, CliError> {
        Ok(KernelWorkload {
            kernel: find_kernel(name)?,
            idle: Mutex::new(Vec::new()),
            error: Mutex::new(None),
        })
    }

    /// One run: the operations the kernel reports (`ops-per-sec` × time), or 1 for a kernel that
    /// reports no operation count; 0 after an error.
    pub fn batch(&self) -> u64 {
        let copy = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let outcome = copy
            .map_or_else(|| self.kernel.prepare(&Params::new(), 1), Ok)
            .and_then(|mut copy| {
                let report = copy.run(&SeqExecutor::new())?;
                self.idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(copy);
                Ok(report)
            });
        match outcome {
            Ok(report) => report
                .metrics
                .iter()
                .find(|metric| metric.name == "ops-per-sec")
                .map_or(1, |rate| {
                    (rate.value * report.elapsed.as_secs_f64()).round() as u64
                }),
            Err(error) => {
                self.error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(error);
                0
            }
        }
    }

    /// The first error any batch met, if one did.
    ///
    /// # Errors
    /// [`CliError::Kernel`] with that error.
    pub fn finish(self) -> Result<(), CliError> {
        match self
            .error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }
}

/// Runs `parbench-cli map`.
///
/// # Errors
/// [`CliError`] for a malformed topology, an unknown algorithm or kernel, a missing profile, too
/// many threads for the topology, or a failing scenario.
pub fn run(args: &MapArgs) -> Result<(), CliError> {
    check_mode_flags(args)?;
    if !args.pid.is_empty() {
        return crate::corun::map_pids(&args.pid, &args.class, &args.algorithm, args.follow);
    }
    let topology = parse_topology_arg(&args.topology)?;
    let algorithm: Algorithm = args.algorithm.trim().parse()?;
    let kernels: Vec<String> = args.kernels.iter().map(|k| k.trim().to_owned()).collect();
    let (mixes, notes) = kernel_mixes(&kernels, &args.profile)?;
    if args.scenarios && kernels.len() < 2 {
        return Err(CliError::Usage(
            "--scenarios needs at least two kernels (scenario C pairs each with another)".into(),
        ));
    }
    let threads = args.threads.unwrap_or(topology.pus().len());
    let report = match map_report(
        &topology,
        &mixes,
        threads,
        algorithm,
        args.random_samples.unwrap_or(DEFAULT_RANDOM_SAMPLES),
        args.seed.unwrap_or(DEFAULT_SEED),
    ) {
        Ok(report) => Some(report),
        // The scenarios need no mapping: with more kernels than this machine has PUs (and no
        // --threads asked for), say why there is no mapping and measure the scenarios anyway.
        Err(
            error @ (MapError::FewerThreadsThanWorkloads { .. } | MapError::TooManyThreads { .. }),
        ) if args.scenarios && args.threads.is_none() => {
            let why = too_few_default_threads(&error, &topology).unwrap_or(error.to_string());
            eprintln!("no mapping: {why}; measuring the scenarios only");
            None
        }
        Err(error) if args.threads.is_none() => {
            return Err(match too_few_default_threads(&error, &topology) {
                Some(why) => CliError::Usage(format!(
                    "{why}: give fewer kernels or {}",
                    more_pus(&topology)
                )),
                None => error.into(),
            });
        }
        Err(error) => return Err(error.into()),
    };
    write_stdout(|out| {
        for note in &notes {
            writeln!(out, "{note}")?;
        }
        if let Some(report) = &report {
            write!(out, "{report}")?;
        }
        if !topology.is_this_system() {
            writeln!(
                out,
                "note: a planned machine, not this one: the mapping is a plan, nothing is pinned"
            )?;
        }
        Ok(())
    })?;
    if args.scenarios {
        let suite = scenario_suite(
            &topology,
            &mixes,
            Duration::from_millis(args.scenario_ms.map_or(DEFAULT_SCENARIO_MS, |ms| ms as u64)),
            args.scenario_repetitions
                .unwrap_or(DEFAULT_SCENARIO_REPETITIONS),
        )?;
        write_stdout(|out| write!(out, "{suite}"))?;
    }
    Ok(())
}

/// Says where the thread count of `error` came from when it is the default (one thread per PU of
/// `topology`) and too small for the kernels — a count the user never gave. No other count can
/// help: a mapping has at most one thread per PU. `None` for any other error.
fn too_few_default_threads(error: &MapError, topology: &Topology) -> Option<String> {
    let MapError::FewerThreadsThanWorkloads { threads, workloads } = *error else {
        return None;
    };
    let pus = plural(threads, "PU");
    let whose = if topology.is_this_system() {
        format!("the {pus} this process may use")
    } else {
        format!("the {pus} of the topology")
    };
    Some(format!(
        "--threads defaults to {whose}, but {} need at least {} (one each, at most one per PU)",
        plural(workloads, "kernel"),
        plural(workloads, "thread")
    ))
}

/// Where more PUs can be had for `topology`.
fn more_pus(topology: &Topology) -> &'static str {
    if topology.is_this_system() {
        "run on more CPUs"
    } else {
        "a topology with more PUs"
    }
}

/// Refuses a flag of one mode given in the other, which would be silently ignored: `--class` and
/// `--follow` describe running processes (`--pid`); `--topology` and `--threads` a planned mapping
/// of kernels, while `--pid` maps every thread of the processes on this machine; `--seed` and
/// `--random-samples` shape the random baseline of a planned mapping, which `--pid` has none of;
/// `--scenario-ms` and `--scenario-repetitions` shape `--scenarios`.
///
/// # Errors
/// [`CliError::Usage`] naming both flags.
fn check_mode_flags(args: &MapArgs) -> Result<(), CliError> {
    check_scenario_flags(args)?;
    if args.pid.is_empty() {
        if !args.class.is_empty() {
            return Err(CliError::Usage(
                "--class needs --pid (it gives the class of each running process); the mixes of \
                 --kernels come from --profile or the kernels themselves"
                    .into(),
            ));
        }
        if args.follow {
            return Err(CliError::Usage(
                "--follow needs --pid (it keeps re-mapping running processes); a mapping of \
                 --kernels is a plan"
                    .into(),
            ));
        }
        return Ok(());
    }
    if args.topology.trim() != "this" {
        return Err(CliError::Usage(format!(
            "--topology {} cannot be used with --pid: running processes are mapped on this \
             machine's topology",
            args.topology
        )));
    }
    if let Some(threads) = args.threads {
        return Err(CliError::Usage(format!(
            "--threads {threads} cannot be used with --pid: every thread of the processes is \
             mapped"
        )));
    }
    if let Some(seed) = args.seed {
        return Err(CliError::Usage(format!(
            "--seed {seed} cannot be used with --pid: it seeds the random placements a planned \
             mapping of --kernels is compared against"
        )));
    }
    if let Some(samples) = args.random_samples {
        return Err(CliError::Usage(format!(
            "--random-samples {samples} cannot be used with --pid: the random placements are \
             what a planned mapping of --kernels is compared against"
        )));
    }
    Ok(())
}

/// `--scenario-ms` and `--scenario-repetitions` without `--scenarios` (which `--pid` cannot
/// take), and `--seed` beside `--random-samples 0`, would change nothing.
fn check_scenario_flags(args: &MapArgs) -> Result<(), CliError> {
    if !args.scenarios {
        let given = [
            ("--scenario-ms", args.scenario_ms),
            ("--scenario-repetitions", args.scenario_repetitions),
        ];
        if let Some((flag, value)) = given
            .into_iter()
            .find_map(|(flag, value)| value.map(|value| (flag, value)))
        {
            let beside = if args.pid.is_empty() {
                "needs --scenarios (it shapes the scenario measurements)".to_owned()
            } else {
                "cannot be used with --pid: it shapes the scenario measurements of --kernels \
                 (--scenarios)"
                    .to_owned()
            };
            return Err(CliError::Usage(format!("{flag} {value} {beside}")));
        }
    }
    if let (Some(seed), Some(0)) = (args.seed, args.random_samples) {
        return Err(CliError::Usage(format!(
            "--seed {seed} needs random placements to seed (--random-samples is 0)"
        )));
    }
    Ok(())
}

/// Scenarios A/B/C for every kernel of `kernels` (scenario C with its
/// [`different_unit_partners`] partner), `repetitions` times each.
///
/// # Errors
/// [`CliError::Kernel`] for a kernel that fails, [`CliError::Scenario`] when pinning fails.
pub fn scenario_suite(
    topology: &Topology,
    kernels: &[NamedMix],
    window: Duration,
    repetitions: usize,
) -> Result<SuiteOutcome, CliError> {
    let runners = kernels
        .iter()
        .map(|kernel| KernelWorkload::new(&kernel.name))
        .collect::<Result<Vec<_>, _>>()?;
    let batches: Vec<Box<dyn Fn() -> u64 + Sync + '_>> = runners
        .iter()
        .map(|runner| Box::new(move || runner.batch()) as Box<dyn Fn() -> u64 + Sync>)
        .collect();
    let workloads: Vec<Workload<'_>> = kernels
        .iter()
        .zip(&batches)
        .map(|(kernel, batch)| Workload {
            name: kernel.name.clone(),
            batch: batch.as_ref(),
        })
        .collect();
    let mixes: Vec<InstructionMix> = kernels.iter().map(|k| k.mix).collect();
    let outcome = run_scenario_suite(
        topology,
        &workloads,
        &different_unit_partners(&mixes),
        window,
        repetitions,
    )?;
    drop(workloads);
    drop(batches);
    for runner in runners {
        runner.finish()?;
    }
    Ok(outcome)
}
