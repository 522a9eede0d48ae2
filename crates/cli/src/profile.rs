//! `parbench-cli profile`: per-thread perf counters of one kernel, the latency study's metrics and
//! the SMT-friendly classification, or exactly which counters this machine lacks and what was
//! used instead.
//!
//! Attribution per thread needs each thread to do its own, separate share of work: counters opened
//! by `parbench_mapper::perf::profile_threads` observe only the thread that opened them. So every
//! one of the N profiled threads runs its own copy of the kernel, prepared for one thread, on the
//! sequential executor (which runs all of the kernel's work on the calling thread). Preparation
//! (input generation) happens before any counter is enabled, so only the timed run is counted.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use clap::Args;
use parbench_kernels::{
    Kernel, KernelError, Params, PreparedKernel, RunReport, SeqExecutor, find_kernel,
};
use parbench_mapper::perf::{Profile, ProfileRequest, profile_threads, raise_descriptor_limit};
use parbench_mapper::{InstructionMix, plural};

use crate::args::{parse_key_value, parse_positive};
use crate::commands::{untaken_parameter, write_stdout};
use crate::error::CliError;

/// Options of `parbench-cli profile`.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from(["parbench-cli", "profile", "--kernel", "fp-add", "--threads", "2"])?;
/// let Command::Profile(args) = cli.command else { unreachable!() };
/// assert_eq!((args.kernel.as_deref(), args.threads), (Some("fp-add"), Some(2)));
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The kernel to profile (see `parbench-cli list`).
    #[arg(long, value_name = "K", required_unless_present = "command")]
    pub kernel: Option<String>,
    /// With --kernel: threads, each running its own copy of the kernel [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub threads: Option<usize>,
    /// With --kernel: a kernel parameter (default values otherwise), repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub params: Vec<(String, String)>,
    /// Write the profile as JSON (for `map --profile`, or `corun --profile` after `-- CMD`).
    ///
    /// P.json is checked before the kernel or command runs and written as sweep's --output is
    /// (atomically, a device or FIFO written through, a directory or socket refused); if it
    /// cannot be written, the profile goes to $TMPDIR/parbench-rescued-PID-NAME, the error says
    /// where, and the exit code is 2.
    #[arg(long, short, value_name = "P.json")]
    pub output: Option<PathBuf>,
    /// With `-- CMD`: the command's dominant instruction class (fp, int, load, store, branch),
    /// used where the counters cannot measure the mix.
    #[arg(long, value_name = "CLASS", requires = "command")]
    pub class: Option<String>,
    /// An unmodified command to profile instead of a kernel: `-- CMD ARGS`. Counters are
    /// inherited by all of its threads and child processes.
    #[arg(last = true, value_name = "CMD", conflicts_with = "kernel")]
    pub command: Vec<String>,
}

/// The kernel's parameters from `pairs`, refusing names it does not declare.
///
/// ```
/// use parbench_cli::profile::kernel_params;
/// let fp_add = parbench_kernels::find_kernel("fp-add")?;
/// assert!(kernel_params(fp_add, &[("iters".into(), "1000".into())]).is_ok());
/// assert!(kernel_params(fp_add, &[("width".into(), "8".into())]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`CliError::Usage`] naming the parameter and the kernel.
pub fn kernel_params(kernel: &dyn Kernel, pairs: &[(String, String)]) -> Result<Params, CliError> {
    let mut params = Params::new();
    for (name, value) in pairs {
        if !kernel.params().iter().any(|spec| spec.name == name) {
            return Err(untaken_parameter(
                &format!("--param {name}={value}"),
                &format!("kernel {} takes no parameter `{name}`", kernel.name()),
                name,
            ));
        }
        params.set(name.clone(), value.clone());
    }
    Ok(params)
}

/// One profiled thread's kernel copy and the outcome of its run.
type ThreadRun = Mutex<(
    Box<dyn PreparedKernel>,
    Option<Result<RunReport, KernelError>>,
)>;

/// Profiles `kernel` on `threads` threads, each running its own copy once on the sequential
/// executor; returns the profile and each thread's run report.
///
/// ```
/// use parbench_cli::profile::profile_kernel;
/// use parbench_kernels::{find_kernel, Params};
/// let kernel = find_kernel("int-add")?;
/// let (profile, runs) = profile_kernel(kernel, &Params::new().with("iters", "1000"), 2)?;
/// assert_eq!((profile.threads.len(), runs.len()), (2, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`CliError::Kernel`] when the kernel cannot be prepared or its result is wrong,
/// [`CliError::Profile`] when counting fails.
pub fn profile_kernel(
    kernel: &dyn Kernel,
    params: &Params,
    threads: usize,
) -> Result<(Profile, Vec<RunReport>), CliError> {
    let runs: Vec<ThreadRun> = (0..threads)
        .map(|_| Ok(Mutex::new((kernel.prepare(params, 1)?, None))))
        .collect::<Result<_, KernelError>>()?;
    let request = ProfileRequest::for_this_machine(kernel.name(), threads);
    let profile = profile_threads(&request, |thread| {
        // Each thread locks only its own entry: no contention, and no poisoning to expect.
        let mut run = runs[thread].lock().unwrap_or_else(PoisonError::into_inner);
        let outcome = run.0.run(&SeqExecutor::new());
        run.1 = Some(outcome);
    })?;
    let reports = runs
        .into_iter()
        .enumerate()
        .map(|(thread, run)| {
            match run.into_inner().unwrap_or_else(PoisonError::into_inner).1 {
                Some(outcome) => outcome.map_err(CliError::from),
                // profile_threads runs the workload on every thread or fails, so this is a bug.
                None => Err(CliError::Usage(format!(
                    "profiled thread {thread} did not run the kernel"
                ))),
            }
        })
        .collect::<Result<_, _>>()?;
    Ok((profile, reports))
}

/// Runs `parbench-cli profile`.
///
/// # Errors
/// [`CliError::Kernel`] for an unknown kernel (listing the valid names) or a bad parameter, and
/// the errors of [`profile_kernel`] and of writing the JSON file.
pub fn run(args: &ProfileArgs) -> Result<(), CliError> {
    // Every profiled thread takes a descriptor per event: the hard limit, not the usual soft
    // 1024, bounds how many get counters. Best effort; a profiled command gets the old limit.
    let _ = raise_descriptor_limit();
    if args.class.is_some() && args.kernel.is_some() {
        return Err(CliError::Usage(
            "--class is for profiling a command (`-- CMD ARGS`); a kernel declares its own class"
                .into(),
        ));
    }
    let Some(kernel) = args.kernel.as_deref() else {
        // A command runs as it is: kernel options would be silently ignored.
        if let Some(threads) = args.threads {
            return Err(CliError::Usage(format!(
                "--threads {threads} is for profiling a kernel (--kernel); a command (`-- CMD \
                 ARGS`) starts its own threads"
            )));
        }
        if let Some((name, value)) = args.params.first() {
            return Err(CliError::Usage(format!(
                "--param {name}={value} is for profiling a kernel (--kernel); pass a command's \
                 options after `--`"
            )));
        }
        return crate::corun::profile(&args.command, args.class.as_deref(), args.output.as_deref());
    };
    let kernel = find_kernel(kernel.trim())?;
    let params = kernel_params(kernel, &args.params)?;
    // Past the OS's limits, starting the threads would abort the process instead of failing.
    let threads = args.threads.unwrap_or(1);
    parbench_kernels::check_thread_count(threads)?;
    // Before the kernel runs: an unwritable path fails first.
    let file = crate::corun::open_json(args.output.as_deref(), "profile")?;
    if let Some(file) = &file {
        file.refuse_kernel_inputs(&args.params)?;
    }
    let (profile, reports) = profile_kernel(kernel, &params, threads)?;
    let declared = InstructionMix::declared_for_kernel(kernel.name());
    let (mixes, source) = profile.mixes_or(declared);
    write_stdout(|out| {
        writeln!(
            out,
            "kernel {} on {}: each thread runs its own copy once on the seq executor",
            kernel.name(),
            plural(threads, "thread")
        )?;
        for (thread, report) in reports.iter().enumerate() {
            writeln!(
                out,
                "thread {thread}: kernel time {:.3} ms",
                report.elapsed.as_secs_f64() * 1e3
            )?;
        }
        write!(out, "{profile}")?;
        writeln!(out, "mapping input: {source}")?;
        if let Some(mix) = mixes.first() {
            writeln!(out, "  thread 0 mix: {mix}")?;
        }
        Ok(())
    })?;
    if let Some(file) = file {
        let path = crate::corun::finish_json(file, &profile)?;
        eprintln!("profile written to {}", path.display());
    }
    Ok(())
}
