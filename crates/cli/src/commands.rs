//! Wiring of the subcommands: turn parsed arguments into a plan, run it, hand the results to the
//! exporters. Everything here is glue; the work happens in [`crate::sweep`], [`crate::export`]
//! and [`crate::plot`].
//!
//! Output discipline: stdout carries only results (a table by default), stderr the plan, the
//! progress bar and errors. With `--output FILE` the file is rewritten after every round (through a
//! temporary file and a rename, so it is never half-written), and once more with every finished
//! cell, the stopped round's included, when the sweep stops on an error or a signal
//! ([`crate::interruption`]); devices, FIFOs, links and failed writes are
//! [`crate::results_file`]'s to handle.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parbench_kernels::{
    ExecutorKind, Kernel, Params, PinPolicy, SchedulerSpec, find_kernel, registry,
};

use crate::args::{Command, PinArg, PlotArgs, SweepArgs, SweepRoundArgs, ThreadCounts};
use crate::args::{FILE_PARAMETERS, FigureFormat};
use crate::error::CliError;
use crate::export::ExportFormat;
use crate::plot::{png_bytes, render_png, render_svg};
use crate::progress::Progress;
use crate::results::{ROUNDS_DONE_SETTING, Report, SCHEMA_VERSION, STOPPED_SETTING};
use crate::results_file::{ResultsFile, print_results, replace};
use crate::rounds::{RoundEvent, RoundRequest, merge_rounds, round_orders, run_round_in_child};
use crate::sweep::{LABELS, SweepError, SweepObserver, SweepPlan, run_cells};

/// Schedulers of the default sweep: parbench-scheduler's strategies, rayon, and the `seq` baseline.
pub const DEFAULT_SCHEDULERS: [ExecutorKind; 7] = [
    ExecutorKind::Tree,
    ExecutorKind::Static,
    ExecutorKind::Dynamic,
    ExecutorKind::Guided,
    ExecutorKind::Simple,
    ExecutorKind::Rayon,
    ExecutorKind::Seq,
];

/// Runs one parsed command.
///
/// ```
/// use parbench_cli::args::Command;
/// parbench_cli::commands::run(Command::List)?; // prints kernels and schedulers
/// # Ok::<(), parbench_cli::error::CliError>(())
/// ```
///
/// # Errors
/// Any [`CliError`]; the caller prints it as one line and exits with code 2.
pub fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Sweep(args) => sweep(&args),
        Command::Plot(args) => plot(&args),
        Command::Latency(args) => crate::latency::run(&args),
        Command::List => list(),
        Command::Locks(args) => crate::locks::run(&args),
        Command::Topology(args) => crate::topology::run(&args),
        Command::Profile(args) => crate::profile::run(&args),
        Command::Map(args) => crate::map::run(&args),
        Command::Corun(args) => crate::corun::run(&args),
        Command::Reproduce(args) => crate::reproduce::run(&args),
        Command::Compare(args) => crate::compare::run(&args),
        Command::Standings(args) => crate::standings::run(&args),
        Command::SweepRound(args) => sweep_round(&args),
    }
}

/// Builds the plan `args` describe, with the defaults of the quick suite for what they omit.
///
/// # Errors
/// [`CliError`] for an unknown kernel or scheduler (listing the valid names), a parameter given
/// twice, or one that no selected kernel takes.
///
/// # Examples
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// use parbench_cli::commands::plan_from_args;
/// let cli = Cli::try_parse_from(["parbench-cli", "sweep", "--kernels", "reduce", "--threads", "2"])?;
/// let Command::Sweep(args) = cli.command else { unreachable!() };
/// let plan = plan_from_args(&args)?;
/// assert_eq!((plan.kernels.len(), plan.threads.as_slice()), (1, &[2][..]));
/// let cli = Cli::try_parse_from(["parbench-cli", "sweep", "--schedulers", "seq,tree,seq"])?;
/// let Command::Sweep(args) = cli.command else { unreachable!() };
/// assert_eq!(plan_from_args(&args)?.schedulers.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan_from_args(args: &SweepArgs) -> Result<SweepPlan, CliError> {
    let mut kernels: Vec<&'static dyn Kernel> = match &args.kernels {
        Some(names) => names
            .iter()
            .map(|name| find_kernel(name.trim()))
            .collect::<Result<_, _>>()?,
        None => registry()
            .iter()
            .copied()
            .filter(|k| k.is_default_suite())
            .collect(),
    };
    let mut schedulers: Vec<SchedulerSpec> = match &args.schedulers {
        Some(names) => names
            .iter()
            .map(|name| name.trim().parse())
            .collect::<Result<_, _>>()?,
        None => DEFAULT_SCHEDULERS.map(SchedulerSpec::from).to_vec(),
    };
    // Repeated flags accumulate; a name listed twice is measured once, at its first position.
    dedup_in_order(&mut kernels, |a, b| a.name() == b.name());
    dedup_in_order(&mut schedulers, |a, b| a == b);
    let threads = match &args.threads {
        Some(counts) => counts.0.clone(),
        None => ThreadCounts::up_to_available_cores().0,
    };
    let pairs = args.params.pairs().map_err(CliError::Usage)?;
    let mut params = Params::new();
    for (name, value) in pairs {
        if !kernels
            .iter()
            .any(|k| k.params().iter().any(|p| p.name == name))
        {
            return Err(untaken_parameter(
                &args.params.given_as(&name, &value),
                &format!("no selected kernel takes parameter `{name}`"),
                &name,
            ));
        }
        params.set(name, value);
    }
    Ok(SweepPlan {
        kernels,
        schedulers,
        threads,
        runs: args.runs,
        warmup: args.warmup,
        pin: match args.pin {
            PinArg::None => PinPolicy::None,
            PinArg::Compact => PinPolicy::Compact,
        },
        params,
        interleave: args.interleave,
    })
}

/// The error for a parameter that would reach no kernel (a parameter only ever goes to the kernels
/// that declare it, so it would be recorded and measured as if it had an effect): `given` as the
/// user typed it, `refusal` saying which kernels do not take `name`, then the kernels that do.
pub(crate) fn untaken_parameter(given: &str, refusal: &str, name: &str) -> CliError {
    let takers: Vec<&str> = registry()
        .iter()
        .filter(|kernel| kernel.params().iter().any(|spec| spec.name == name))
        .map(|kernel| kernel.name())
        .collect();
    let takers = match takers.as_slice() {
        [] => "no kernel does".to_owned(),
        [only] => format!("only {only} does"),
        [rest @ .., last] => format!("{} and {last} do", rest.join(", ")),
    };
    CliError::Usage(format!(
        "{given}: {refusal}; {takers} (see `parbench-cli list`)"
    ))
}

fn dedup_in_order<T>(items: &mut Vec<T>, same: impl Fn(&T, &T) -> bool) {
    let mut index = 0;
    while index < items.len() {
        if items[..index]
            .iter()
            .any(|earlier| same(earlier, &items[index]))
        {
            items.remove(index);
        } else {
            index += 1;
        }
    }
}

/// Where results go besides stdout: the file `--output` names, in its format. How each kind of
/// path is written, and where results go when it cannot be, is [`crate::results_file`]'s.
pub(crate) struct OutputFile {
    file: ResultsFile,
    format: ExportFormat,
}

impl OutputFile {
    /// The file `--output` names (its format from `--format` or its extension) and the format of
    /// stdout: with a file, the terminal gets the table; without one, `--format` decides.
    /// An explicit `--format` that contradicts a known extension (`--format csv -o r.json`) is a
    /// usage error rather than a file whose name lies about its content. The path is checked now,
    /// changing nothing it holds ([`ResultsFile::open`]): an unwritable one fails before any
    /// measuring, and a command that stops on bad input later leaves an earlier file as it was.
    pub(crate) fn from_args(
        path: Option<&Path>,
        format: Option<ExportFormat>,
    ) -> Result<(Option<OutputFile>, ExportFormat), CliError> {
        let Some(path) = path else {
            return Ok((None, format.unwrap_or(ExportFormat::Table)));
        };
        let format = file_format(path, format)?;
        let file = OutputFile {
            file: ResultsFile::open(path, "results", format.extension())?,
            format,
        };
        Ok((Some(file), ExportFormat::Table))
    }

    /// The path `--output` named.
    pub(crate) fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether `--output` is this process's stdout (`-o /dev/stdout`), which then gets these
    /// results alone, not the table beside them ([`ResultsFile::is_stdout`]).
    pub(crate) fn is_stdout(&self) -> bool {
        self.file.is_stdout()
    }

    /// Rewrites the file with `report` while measuring; see [`ResultsFile::snapshot`] (the line
    /// returned is for the progress display).
    pub(crate) fn snapshot(&mut self, report: &Report) -> Option<String> {
        let mut bytes = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.format.exporter().write(report, &mut bytes);
        self.file.snapshot(&bytes)
    }

    /// Writes the final `report`; see [`ResultsFile::finish`].
    pub(crate) fn finish(self, report: &Report) -> Result<(), CliError> {
        let mut bytes = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.format.exporter().write(report, &mut bytes);
        self.file.finish(&bytes)
    }
}

/// The format of output file `path`: `--format` if given, else the one its extension implies.
///
/// # Errors
/// [`CliError::Usage`] when neither says, or when an explicit `--format` contradicts a known
/// extension (`--format csv -o r.json`): a file whose name lies about its content is a surprise.
pub(crate) fn file_format(
    path: &Path,
    format: Option<ExportFormat>,
) -> Result<ExportFormat, CliError> {
    let implied = ExportFormat::from_extension(path);
    match (format, implied) {
        (Some(given), Some(implied)) if given != implied => Err(CliError::Usage(format!(
            "--format {} contradicts the extension of {} (which means {}); \
             rename the file or drop --format",
            given.name(),
            path.display(),
            implied.name()
        ))),
        (Some(given), _) => Ok(given),
        (None, Some(implied)) => Ok(implied),
        (None, None) => Err(CliError::Usage(format!(
            "cannot tell the format of {} from its extension (.csv, .json, .md); give --format",
            path.display()
        ))),
    }
}

fn sweep(args: &SweepArgs) -> Result<(), CliError> {
    args.check_bounds().map_err(CliError::Usage)?;
    let plan = plan_from_args(args)?;
    check_thread_counts(&plan)?;
    // Before --output is opened: a bad input file must not touch the results a previous sweep
    // left there.
    check_input_files(&plan)?;
    // An unwritable path fails now, not after minutes of measuring; nothing is written to it
    // before the first round's results.
    let (mut output, stdout_format) = OutputFile::from_args(args.output.as_deref(), args.format)?;
    if let Some(output) = &output {
        // Every round's process reads them again after the file was rewritten.
        let params = args.params.pairs().map_err(CliError::Usage)?;
        output.file.refuse_kernel_inputs(&params)?;
    }
    let seed = args.seed.unwrap_or_else(clock_seed);
    let orders = round_orders(plan.cell_count(), args.rounds, seed);
    let mut report = Report::new("sweep", &LABELS);
    report.metadata = sweep_metadata(&plan, args.rounds, seed, &orders);
    if !args.quiet {
        eprintln!("{}", describe_plan(&plan, args.rounds, seed));
        let environment = report.metadata.environment.as_ref();
        if let Some(warning) = environment.and_then(|env| env.placement_warning()) {
            eprintln!("{warning}");
        }
    }
    // From here on a signal stops the running round and the sweep saves what it measured.
    crate::interruption::stop_on_signals()
        .map_err(|e| CliError::Usage(format!("cannot install the signal handlers: {e}")))?;
    let scratch = create_scratch_directory()?;
    let progress = Progress::new(plan.total_runs() * args.rounds as u64, args.quiet);
    let mut rounds = Vec::new();
    // Complete rounds: a failed round's cells are kept, but the report then says it stopped early.
    let mut complete = 0;
    let mut failure = None;
    for (round, order) in orders.into_iter().enumerate() {
        if crate::interruption::received().is_some() {
            break;
        }
        let request = RoundRequest::new(&plan, round, order);
        let mut on_event = |event: RoundEvent| match event {
            RoundEvent::Cell(name) => {
                progress.start_cell(&format!("round {}/{}: {name}", round + 1, args.rounds));
            }
            RoundEvent::Runs(count) => progress.advance(count),
            RoundEvent::Message(line) => progress.message(&line),
        };
        let mut partial = None;
        match run_round_in_child(&request, &scratch, &mut on_event, &mut partial) {
            Ok(round_report) => {
                rounds.push(round_report);
                complete += 1;
            }
            Err(error) => {
                rounds.extend(partial);
                failure = Some(error);
            }
        }
        if let Some(pid) = rounds
            .get(round)
            .and_then(|r| r.metadata.settings.get("pid"))
        {
            report
                .metadata
                .settings
                .insert(format!("pid.round{}", round + 1), pid.clone());
        }
        report.cells = merge_rounds(&plan, &rounds);
        report
            .metadata
            .settings
            .insert(ROUNDS_DONE_SETTING.to_owned(), complete.to_string());
        if failure.is_some() || crate::interruption::received().is_some() {
            break;
        }
        // A round that failed before measuring anything (a bad parameter) has nothing to save,
        // and an earlier results file at the path stays as it was.
        if let Some(output) = output.as_mut().filter(|_| !report.cells.is_empty()) {
            if let Some(line) = output.snapshot(&report).filter(|_| !args.quiet) {
                progress.message(&line);
            }
        }
    }
    progress.finish();
    // A signal outranks the failure it caused (its round's process killed).
    if let Some(signal) = crate::interruption::received() {
        let place = output.as_ref().map_or_else(
            || "on stdout".to_owned(),
            |output| format!("in {}", output.path().display()),
        );
        failure = Some(CliError::interrupted(
            signal,
            Some(format!(
                "{} of {} cells kept {place} ({complete} of {} rounds complete)",
                report.cells.len(),
                plan.cell_count(),
                args.rounds
            )),
        ));
    }
    // The last write: the report says why it stopped early, if it did.
    if let Some(failure) = &failure {
        report
            .metadata
            .settings
            .insert(STOPPED_SETTING.to_owned(), one_line(&failure.to_string()));
    }
    // Only our own scratch directory (a round's process killed while writing its report leaves
    // a temporary file there); nothing is lost if it stays.
    let _ = fs::remove_dir_all(&scratch);
    let interrupted = matches!(failure, Some(CliError::Interrupted { .. }));
    let mut errors: Vec<CliError> = failure.into_iter().collect();
    if !report.cells.is_empty() {
        let only_copy = output.is_none();
        let table = !output.as_ref().is_some_and(OutputFile::is_stdout);
        if let Some(output) = output {
            errors.extend(output.finish(&report).err());
        }
        let printed = if table {
            print_report(&report, stdout_format, only_copy)
        } else {
            Ok(())
        };
        // After SIGHUP the terminal may be gone; the interruption is still the news.
        if !interrupted {
            errors.extend(printed.err());
        }
    }
    CliError::all(errors)
}

fn one_line(text: &str) -> String {
    text.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

/// Makes the sweep's own directory for the rounds' requests and reports in the temp directory
/// (`$TMPDIR`), never the temp directory itself: a `TMPDIR` that does not exist is an error, not
/// a directory to create.
fn create_scratch_directory() -> Result<PathBuf, CliError> {
    let temp = std::env::temp_dir();
    let pid = std::process::id();
    let mut attempt = 0;
    loop {
        let scratch = temp.join(match attempt {
            0 => format!("parbench-sweep-{pid}"),
            n => format!("parbench-sweep-{pid}.{n}"),
        });
        match fs::create_dir(&scratch) {
            Ok(()) => return Ok(scratch),
            // Left by a killed sweep whose process id this one got: not ours to reuse.
            Err(taken) if taken.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(source) => return Err(CliError::TempDir { path: temp, source }),
        }
    }
}

/// A seed for the rounds' order when `--seed` is not given: different on every sweep.
fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
}

/// The hidden `sweep-round`: one round of `sweep --rounds`, in the order its request gives,
/// reporting progress on stderr for the parent and rewriting its JSON report after every cell.
fn sweep_round(args: &SweepRoundArgs) -> Result<(), CliError> {
    let text = fs::read_to_string(&args.request).map_err(|source| CliError::Read {
        path: args.request.clone(),
        source,
    })?;
    let request: RoundRequest =
        serde_json::from_str(&text).map_err(|e| CliError::MalformedResults {
            path: args.request.clone(),
            reason: e.to_string(),
        })?;
    let plan = request.plan()?;
    let mut report = Report::new("sweep", &LABELS);
    // The parent records which process measured which round.
    report
        .metadata
        .settings
        .insert("pid".to_owned(), std::process::id().to_string());
    write_round_report(&args.output, &report)?;
    let mut reporter = RoundReporter::new(&args.output, io::stderr(), RUNS_REPORT_INTERVAL);
    let result = run_cells(&plan, &request.order, &mut report, &mut reporter).map_err(sweep_error);
    reporter.report_runs();
    result
}

/// Replaces a round's JSON report in the sweep's scratch directory (which the parent reads).
fn write_round_report(path: &Path, report: &Report) -> Result<(), CliError> {
    let mut bytes = Vec::new();
    ExportFormat::Json
        .exporter()
        .write(report, &mut bytes)
        .and_then(|()| replace(path, &bytes))
        .map_err(|source| CliError::Write {
            path: path.to_owned(),
            source,
        })
}

/// The child reports finished runs at most this often (and at the end of every cell).
const RUNS_REPORT_INTERVAL: Duration = Duration::from_millis(100);

/// The child's side of the progress protocol (see [`crate::rounds`]).
///
/// Finished runs are reported in batches, at most every [`RUNS_REPORT_INTERVAL`]: each line wakes
/// the parent, which then runs on one of the cores while the next timed run starts. Reported
/// after every run, that was a line per run — 4.7 % of a spmv-triangle round's CPU samples were
/// the child writing it and waking the parent (perf, software clock), on a machine of 2 cores
/// that the pool's 2 threads need.
struct RoundReporter<'a, W: Write> {
    /// The round's report, rewritten after every cell.
    output: &'a Path,
    /// Where the progress lines go: stderr, which the parent reads.
    sink: W,
    /// Runs finished and not reported yet.
    unreported: u64,
    /// How often finished runs are reported at most ([`RUNS_REPORT_INTERVAL`]).
    interval: Duration,
    /// When runs were last reported (or the reporter made).
    reported_at: Instant,
}

impl<'a, W: Write> RoundReporter<'a, W> {
    fn new(output: &'a Path, sink: W, interval: Duration) -> Self {
        RoundReporter {
            output,
            sink,
            unreported: 0,
            interval,
            reported_at: Instant::now(),
        }
    }

    /// Reports the runs finished since the last report, if any.
    fn report_runs(&mut self) {
        if self.unreported > 0 {
            self.send(RoundEvent::Runs(self.unreported));
            self.unreported = 0;
        }
        self.reported_at = Instant::now();
    }

    /// Writes `event`'s line for the parent. A parent that stopped reading loses only progress.
    fn send(&mut self, event: RoundEvent) {
        if let Some(line) = event.line() {
            let _ = writeln!(self.sink, "{line}");
        }
    }
}

impl<W: Write> SweepObserver for RoundReporter<'_, W> {
    fn cell_started(&mut self, name: &str) {
        self.send(RoundEvent::Cell(name.to_owned()));
    }

    fn runs_done(&mut self, count: u64) {
        self.unreported += count;
        if self.reported_at.elapsed() >= self.interval {
            self.report_runs();
        }
    }

    fn cell_finished(&mut self, report: &Report) -> Result<(), SweepError> {
        self.report_runs();
        write_round_report(self.output, report)
            .map_err(|error| SweepError::Observer(Box::new(error)))
    }
}

fn sweep_error(error: SweepError) -> CliError {
    match error {
        SweepError::Prepare(error) => CliError::Kernel(error),
        SweepError::Observer(error) => match error.downcast::<CliError>() {
            Ok(cli_error) => *cli_error,
            Err(other) => CliError::Usage(other.to_string()),
        },
    }
}

/// Refuses, before anything runs, a thread count this process cannot start: past the OS's limits
/// thread creation can abort the whole process instead of failing. An interleaved sweep needs the
/// threads of all of a set's pools at once.
///
/// `seq` starts no thread, but its cells are labelled with the count too: it is checked like a
/// pool's, so that no scheduler (seq alone included) runs, and no row is labelled, at a count
/// none of the others could run at.
fn check_thread_counts(plan: &SweepPlan) -> Result<(), CliError> {
    let most = plan.threads.iter().copied().max().unwrap_or(1);
    let pools = plan
        .schedulers
        .iter()
        .filter(|spec| spec.kind() != ExecutorKind::Seq)
        .count();
    // Interleaved, the pools of a kernel and thread count live side by side (`spawn`'s threads
    // during its runs, next to the others' parked ones).
    let interleaved = plan.blocks() > 1 && pools > 1;
    let together = if interleaved { most * pools } else { most };
    parbench_kernels::check_thread_count(together).map_err(|error| {
        CliError::Usage(if interleaved {
            format!(
                "--threads {most} with --interleave {} keeps {pools} pools of {most} threads \
                 alive at once: {error}; use --interleave 1 to build one pool at a time",
                plan.blocks()
            )
        } else {
            format!("--threads {most}: {error}")
        })
    })
}

/// Prepares once every kernel that reads an input file, so that a missing, unreadable or
/// malformed file is reported as one line before anything is printed or measured.
fn check_input_files(plan: &SweepPlan) -> Result<(), CliError> {
    let threads = plan.threads.iter().copied().min().unwrap_or(1);
    for kernel in &plan.kernels {
        if kernel
            .params()
            .iter()
            .any(|spec| FILE_PARAMETERS.contains(&spec.name))
        {
            kernel
                .prepare(&plan.params, threads)
                .map_err(CliError::Kernel)?;
        }
    }
    Ok(())
}

fn sweep_metadata(
    plan: &SweepPlan,
    rounds: usize,
    seed: u64,
    orders: &[Vec<usize>],
) -> crate::results::Metadata {
    let mut settings = std::collections::BTreeMap::new();
    settings.insert("runs".to_owned(), plan.runs.to_string());
    settings.insert("warmup".to_owned(), plan.warmup.to_string());
    settings.insert("rounds".to_owned(), rounds.to_string());
    settings.insert(ROUNDS_DONE_SETTING.to_owned(), "0".to_owned());
    settings.insert("interleave".to_owned(), plan.blocks().to_string());
    settings.insert("seed".to_owned(), seed.to_string());
    for (round, order) in orders.iter().enumerate() {
        // Cell indices in the plan's canonical order (kernels, threads, schedulers).
        let order: Vec<String> = order.iter().map(usize::to_string).collect();
        settings.insert(format!("order.round{}", round + 1), order.join(" "));
    }
    settings.insert("pin".to_owned(), format!("{:?}", plan.pin).to_lowercase());
    for kernel in &plan.kernels {
        if kernel.weak_scaling(&plan.params) {
            settings.insert(format!("{}.weak_scaling", kernel.name()), "true".to_owned());
        }
        for spec in kernel.params() {
            // Record the value each parameter had, given or default, so a figure can be labelled.
            if let Ok(value) = kernel.param_value(&plan.params, spec.name) {
                settings.insert(format!("{}.{}", kernel.name(), spec.name), value);
            }
        }
    }
    let mut metadata = crate::results::Metadata::now(settings);
    metadata.environment = Some(crate::environment::Environment::capture(
        crate::rounds::pin_name(plan.pin),
    ));
    metadata
}

/// The plan in a few lines for stderr.
fn describe_plan(plan: &SweepPlan, rounds: usize, seed: u64) -> String {
    let join = |names: Vec<String>| names.join(", ");
    let blocks = match plan.blocks() {
        1 => String::new(),
        blocks => format!(", the schedulers of a kernel taking turns in {blocks} blocks"),
    };
    format!(
        "sweep: {} cells = {} kernels × {} schedulers × {} thread counts; {rounds} rounds \
         (processes, shuffled order, seed {seed}) of {} warm-up + {} timed runs each{blocks}\n  \
         kernels:    {}\n  schedulers: {}\n  threads:    {}",
        plan.cell_count(),
        plan.kernels.len(),
        plan.schedulers.len(),
        plan.threads.len(),
        plan.warmup,
        plan.runs,
        join(plan.kernels.iter().map(|k| k.name().to_owned()).collect()),
        join(
            plan.schedulers
                .iter()
                .map(SchedulerSpec::to_string)
                .collect()
        ),
        join(plan.threads.iter().map(usize::to_string).collect()),
    )
}

fn plot(args: &PlotArgs) -> Result<(), CliError> {
    let implied = FigureFormat::from_extension(&args.output);
    let format = match (args.format, implied) {
        (Some(given), Some(implied)) if given != implied => {
            return Err(CliError::Usage(format!(
                "--format {} contradicts the extension of {} (which means {}); \
                 rename the file or drop --format",
                given.name(),
                args.output.display(),
                implied.name()
            )));
        }
        (Some(given), _) => given,
        (None, Some(implied)) => implied,
        (None, None) => FigureFormat::Svg,
    };
    // Before the report is read: an unwritable path fails first, and a refused report leaves an
    // earlier figure as it was.
    let file = ResultsFile::open(&args.output, "figure", format.name())?;
    file.refuse_same_file(&args.results, "the results file plot reads")?;
    let report = read_report(&args.results)?;
    // A figure of a sweep still running (or stopped) is useful, unlike `standings` over one: it
    // is drawn, but said to be partial, as `standings --allow-partial` says so in its header.
    if let Some((held, planned)) = report.unfinished_rounds() {
        eprintln!(
            "note: {} holds {held} of the {planned} rounds its sweep planned (unfinished); the \
             figure shows those",
            args.results.display()
        );
    }
    let bytes = match format {
        FigureFormat::Svg => render_svg(&report)?.into_bytes(),
        FigureFormat::Png => png_bytes(|path| Ok(render_png(&report, path)?))?,
    };
    file.finish(&bytes)
}

/// Reads a JSON report written by `sweep`.
///
/// ```
/// use parbench_cli::commands::read_report;
/// use parbench_cli::error::CliError;
/// let path = std::env::temp_dir().join("parbench-doc-not-json.json");
/// std::fs::write(&path, "not json")?;
/// assert!(matches!(read_report(&path), Err(CliError::MalformedResults { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`CliError::Read`] if the file cannot be read, [`CliError::MalformedResults`] if it is not a
/// report of this schema version, holds a time that is negative or not finite
/// ([`Report::invalid_time`]), or a round count (`rounds`, `rounds.done`) that is not a number.
pub fn read_report(path: &Path) -> Result<Report, CliError> {
    let text = fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })?;
    let malformed = |reason: String| CliError::MalformedResults {
        path: path.to_owned(),
        reason,
    };
    let report: Report = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
    if report.schema != SCHEMA_VERSION {
        return Err(malformed(format!(
            "schema version {} (this parbench-cli reads {SCHEMA_VERSION})",
            report.schema
        )));
    }
    if let Some(reason) = report.invalid_time() {
        return Err(malformed(reason));
    }
    // An unreadable count would make an unfinished sweep pass for a finished one
    // (`Report::unfinished_rounds` cannot compare it).
    for name in ["rounds", ROUNDS_DONE_SETTING] {
        if let Some(value) = report.metadata.settings.get(name)
            && value.parse::<usize>().is_err()
        {
            return Err(malformed(format!(
                "its setting `{name}` is `{value}`, not a number of rounds"
            )));
        }
    }
    Ok(report)
}

/// Reads the JSON reports `paths` for a command that sets them side by side (`standings`,
/// `compare`), refusing the report of an unfinished sweep unless `allow_partial`: a file read
/// while its sweep still runs holds fewer rounds than the others, and nothing else would show it.
///
/// # Errors
/// What [`read_report`] returns, and [`CliError::UnfinishedResults`] for the first report that
/// holds fewer rounds than its sweep planned ([`Report::unfinished_rounds`]).
pub fn read_reports(paths: &[PathBuf], allow_partial: bool) -> Result<Vec<Report>, CliError> {
    paths
        .iter()
        .map(|path| {
            let report = read_report(path)?;
            match report.unfinished_rounds() {
                Some((held, planned)) if !allow_partial => Err(CliError::UnfinishedResults {
                    path: path.clone(),
                    held,
                    planned,
                }),
                _ => Ok(report),
            }
        })
        .collect()
}

fn list() -> Result<(), CliError> {
    write_stdout(|out| {
        writeln!(out, "Kernels (* = in the default suite):")?;
        for kernel in registry() {
            let mark = if kernel.is_default_suite() { "*" } else { " " };
            writeln!(out, "{mark} {:<18} {}", kernel.name(), kernel.description())?;
            for spec in kernel.params() {
                let default = if spec.default.is_empty() {
                    "(none)"
                } else {
                    spec.default
                };
                let setting = format!("{}={default}", spec.name);
                writeln!(out, "      --param {setting:<24} {}", spec.help)?;
            }
        }
        writeln!(out)?;
        writeln!(
            out,
            "Schedulers (* = in the default sweep; NAME:N sets the chunk or grain, default 1):"
        )?;
        for kind in ExecutorKind::ALL {
            let mark = if DEFAULT_SCHEDULERS.contains(&kind) {
                "*"
            } else {
                " "
            };
            let grain = if kind.takes_grain() { ":N" } else { "" };
            writeln!(out, "{mark} {}{grain}", kind.name())?;
        }
        Ok(())
    })
}

/// Prints `report` in `format` to stdout ([`print_results`]: saved to a rescue file when stdout
/// fails and it is the `only_copy`).
pub(crate) fn print_report(
    report: &Report,
    format: ExportFormat,
    only_copy: bool,
) -> Result<(), CliError> {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = format.exporter().write(report, &mut bytes);
    print_results(&bytes, format.extension(), only_copy)
}

/// Writes to stdout; a closed pipe (`parbench-cli … | head`) ends the output quietly.
pub(crate) fn write_stdout(
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), CliError> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => Err(CliError::Write {
            path: PathBuf::from("-"),
            source: error,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::PROGRESS_PREFIX;

    /// The events a reporter has sent so far.
    fn sent(reporter: &RoundReporter<'_, Vec<u8>>) -> Vec<RoundEvent> {
        String::from_utf8(reporter.sink.clone())
            .unwrap()
            .lines()
            .map(|line| {
                RoundEvent::parse(line.strip_prefix(PROGRESS_PREFIX).unwrap().trim()).unwrap()
            })
            .collect()
    }

    fn output() -> PathBuf {
        PathBuf::from("unused.json")
    }

    #[test]
    fn runs_within_the_interval_are_reported_together_when_the_cell_ends() {
        let output = output();
        let mut reporter = RoundReporter::new(&output, Vec::new(), Duration::from_secs(3600));
        reporter.cell_started("spmv-triangle/tree/2");
        for _ in 0..13 {
            reporter.runs_done(1);
        }
        assert_eq!(
            sent(&reporter),
            [RoundEvent::Cell("spmv-triangle/tree/2".into())]
        );
        reporter.report_runs();
        reporter.report_runs();
        assert_eq!(
            sent(&reporter),
            [
                RoundEvent::Cell("spmv-triangle/tree/2".into()),
                RoundEvent::Runs(13)
            ],
            "one line for the batch, none for an empty one"
        );
    }

    #[test]
    fn runs_past_the_interval_are_reported_at_once() {
        let output = output();
        let mut reporter = RoundReporter::new(&output, Vec::new(), Duration::ZERO);
        reporter.runs_done(1);
        reporter.runs_done(2);
        assert_eq!(sent(&reporter), [RoundEvent::Runs(1), RoundEvent::Runs(2)]);
    }
}
