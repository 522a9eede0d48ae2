//! `parbench-cli corun`, `profile -- CMD` and `map --pid`: mapping the threads of unmodified
//! programs. The work happens in `parbench_mapper::corun` (launching, discovery, mapping,
//! pinning) and `parbench_mapper::perf::profile_command`; this module parses, matches profiles to
//! commands, repeats runs for `--compare` and prints.
//!
//! `--compare` runs the whole set of commands once per algorithm per repetition, the algorithms in
//! a freshly shuffled order each repetition (seeded), so that drift of a shared machine spreads
//! over all of them. Per algorithm it reports the median, mean and the 95 % Student-t interval of
//! the mean of the system time (first start to last exit), and the median normalised to `os`
//! (the Linux scheduler alone), as the SMT study reports it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use parbench_mapper::corun::{
    ChildOutput, CommandSpec, CommandStatus, CorunOptions, CorunReport, StopReason, corun,
    map_running, stop_on_termination_signals, stop_signal,
};
use parbench_mapper::perf::{CommandProfile, MixSource, ProfileRequest, profile_command};
use parbench_mapper::tasks::Pid;
use parbench_mapper::{Algorithm, InstrClass, InstructionMix, Topology, plural};
use serde::Serialize;

use crate::args::{parse_in_range, parse_seconds};
use crate::commands::write_stdout;
use crate::error::CliError;
use crate::results_file::ResultsFile;
use crate::stats::{SplitMix64, Summary, student_t95};

/// Separates the commands after `--`.
pub const COMMAND_SEPARATOR: &str = ":::";

/// Options of `parbench-cli corun`.
///
/// ```
/// use clap::Parser;
/// use parbench_cli::args::{Cli, Command};
/// let cli = Cli::try_parse_from([
///     "parbench-cli", "corun", "--algorithm", "compact", "--",
///     "sleep", "1", ":::", "sleep", "2",
/// ])?;
/// let Command::Corun(args) = cli.command else { unreachable!() };
/// assert_eq!(parbench_cli::corun::split_commands(&args.commands).unwrap().len(), 2);
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
pub struct CorunArgs {
    /// instruction-aware, algorithm1 (or algorithm1:CLASS), round-robin (= compact), os-index,
    /// scatter or os; not with --compare, which takes --algorithms [default: instruction-aware].
    #[arg(long, value_name = "NAME")]
    pub algorithm: Option<String>,
    /// A profile of one of the commands (`profile --output P.json -- CMD`), matched by its
    /// command line; repeatable. Commands without one have an unknown mix.
    #[arg(long, value_name = "P.json")]
    pub profile: Vec<PathBuf>,
    /// Run the commands under several algorithms in turn and compare their system times.
    ///
    /// SIGINT (Ctrl-C), SIGTERM or SIGHUP ends the comparison early: the run in progress is
    /// stopped and left out, the runs finished so far are printed and written to --output
    /// (marked `stopped`), one line says how many were kept, and the exit code is 128 + the
    /// signal. A run that fails with an error (none of the commands could be started) ends it
    /// the same way, the error in that line, with exit code 2.
    #[arg(long)]
    pub compare: bool,
    /// With --compare: the algorithms [default: every named one; `os` is always included].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub algorithms: Option<Vec<String>>,
    /// With --compare: runs per algorithm [default: 3; at most 1000].
    #[arg(long, value_name = "N", value_parser = parse_repeat)]
    pub repeat: Option<usize>,
    /// With --compare: seed of the shuffled run order [default: 1].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Stop every command (SIGTERM, then SIGKILL) after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// How often /proc is scanned for new and exited threads after a change, in milliseconds
    /// (the interval doubles up to 100 ms, or this value if larger, while nothing changes) [at
    /// most 60000].
    #[arg(long, value_name = "MS", default_value_t = 10, value_parser = parse_poll_ms)]
    pub poll_ms: usize,
    /// Also write the report(s) as JSON.
    ///
    /// FILE is checked before any command runs and written as sweep's --output is (atomically,
    /// a device or FIFO written through, a directory or socket refused); if it cannot be written,
    /// the report goes to $TMPDIR/parbench-rescued-PID-NAME, the error says where, and the exit
    /// code is 2.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The commands: `CMD1 ARGS ::: CMD2 ARGS [::: …]`.
    ///
    /// SIGINT (Ctrl-C), SIGTERM or SIGHUP stops every command (a signal corun was started with
    /// ignored stays ignored); a single run still prints its report and writes it to --output,
    /// the commands marked stopped, one line says where, and the exit code is 128 + the signal.
    #[arg(last = true, required = true, value_name = "COMMANDS")]
    pub commands: Vec<String>,
}

/// Runs per algorithm of `--compare` when `--repeat` is not given.
const DEFAULT_REPEAT: usize = 3;
/// Seed of `--compare`'s run order when `--seed` is not given.
const DEFAULT_SEED: u64 = 1;
/// The algorithm of a single run when `--algorithm` is not given.
const DEFAULT_ALGORITHM: &str = "instruction-aware";

/// `--repeat`, `--algorithms` and `--seed` shape a `--compare`; without it one run is made under
/// `--algorithm`, which `--compare` replaces by its list. Either way the other flags would be
/// silently ignored.
fn check_compare_flags(args: &CorunArgs) -> Result<(), CliError> {
    if args.compare {
        if let Some(algorithm) = &args.algorithm {
            return Err(CliError::Usage(format!(
                "--algorithm {algorithm} cannot be used with --compare, which runs the commands \
                 under every algorithm of --algorithms"
            )));
        }
        return Ok(());
    }
    if let Some(repeat) = args.repeat {
        return Err(CliError::Usage(format!(
            "--repeat {repeat} needs --compare (without it corun runs the commands once, under \
             --algorithm)"
        )));
    }
    if let Some(algorithms) = &args.algorithms {
        return Err(CliError::Usage(format!(
            "--algorithms {} needs --compare (without it corun runs the commands once, under \
             --algorithm)",
            algorithms.join(",")
        )));
    }
    if let Some(seed) = args.seed {
        return Err(CliError::Usage(format!(
            "--seed {seed} needs --compare (it seeds the shuffled run order; without --compare \
             corun runs the commands once, under --algorithm)"
        )));
    }
    Ok(())
}

fn parse_repeat(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, 1_000)
}

fn parse_poll_ms(text: &str) -> Result<usize, String> {
    parse_in_range(text, 1, 60_000)
}

/// Splits `CMD1 A ::: CMD2 B` into command lines.
///
/// # Errors
/// [`CliError::Usage`] for an empty command (a leading, trailing or doubled `:::`).
///
/// # Examples
///
/// ```
/// use parbench_cli::corun::split_commands;
/// let words: Vec<String> = ["a", "1", ":::", "b"].map(String::from).to_vec();
/// assert_eq!(split_commands(&words)?, vec![vec!["a".to_owned(), "1".to_owned()], vec!["b".to_owned()]]);
/// assert!(split_commands(&["a".into(), ":::".into()]).is_err());
/// # Ok::<(), parbench_cli::error::CliError>(())
/// ```
pub fn split_commands(words: &[String]) -> Result<Vec<Vec<String>>, CliError> {
    let commands: Vec<Vec<String>> = words
        .split(|word| word == COMMAND_SEPARATOR)
        .map(<[String]>::to_vec)
        .collect();
    if let Some(index) = commands.iter().position(Vec::is_empty) {
        return Err(CliError::Usage(format!(
            "command {} after `--` is empty (separate commands with ` {COMMAND_SEPARATOR} `)",
            index + 1
        )));
    }
    Ok(commands)
}

/// The commands with the mixes their profiles give, and one note per command saying where its
/// mix came from.
///
/// # Errors
/// [`CliError::Profile`] for an unreadable profile, [`CliError::Usage`] for a profile of a
/// command that is not among `commands` or a second profile of one command.
pub fn command_specs(
    commands: Vec<Vec<String>>,
    profiles: &[PathBuf],
) -> Result<(Vec<CommandSpec>, Vec<String>), CliError> {
    let mut specs: Vec<CommandSpec> = commands.into_iter().map(CommandSpec::new).collect();
    let mut notes = vec![None; specs.len()];
    let mut profiled_by: Vec<Option<&PathBuf>> = vec![None; specs.len()];
    for path in profiles {
        let profile = CommandProfile::read_json(path)?;
        // Every copy of the command (`corun -- ./a ::: ./a`) runs the same code: each gets the
        // mix, not only the first.
        let matching: Vec<usize> = (0..specs.len())
            .filter(|&index| specs[index].argv == profile.command)
            .collect();
        let Some(&first) = matching.first() else {
            return Err(CliError::Usage(format!(
                "profile {} is of `{}`, which is not one of the commands",
                path.display(),
                profile.command.join(" ")
            )));
        };
        // A second profile would silently replace the first's mix.
        if let Some(earlier) = profiled_by[first] {
            return Err(CliError::Usage(format!(
                "profiles {} and {} are both of `{}`; give one profile per command",
                earlier.display(),
                path.display(),
                profile.command.join(" ")
            )));
        }
        let (mix, source) = profile.mix();
        let note = match (mix, source) {
            (Some(mix), MixSource::Measured) => format!("measured ({mix}), {}", path.display()),
            (Some(mix), _) => format!(
                "declared class {} ({mix}), {}: hardware counters were unavailable",
                profile.declared_class.map_or("?", InstrClass::name),
                path.display()
            ),
            (None, _) => format!(
                "unknown: {} has no class counts and no declared class",
                path.display()
            ),
        };
        for index in matching {
            specs[index].mix = mix;
            notes[index] = Some(note.clone());
            profiled_by[index] = Some(path);
        }
    }
    let notes = specs
        .iter()
        .zip(notes)
        .enumerate()
        .map(|(index, (spec, note))| {
            format!(
                "command {index} mix: {}",
                note.unwrap_or_else(|| format!(
                    "unknown (no --profile for `{}`)",
                    spec.argv.join(" ")
                ))
            )
        })
        .collect();
    Ok((specs, notes))
}

/// What this machine can show of the study's result. `topology` is this system's, which has
/// only the CPUs this process may use (`Topology::this_system`): under `taskset` the machine may
/// have more, and SMT siblings left out.
fn machine_note(topology: &Topology) -> String {
    if topology.has_smt_siblings() {
        "the CPUs this process may use have SMT siblings: instruction-aware placement can pair \
         unlike threads on one core"
            .to_owned()
    } else {
        format!(
            "note: this process may use {}, without SMT siblings: threads that share a PU here are \
             time-sliced, not co-issued, so the SMT study's gains (+29.1 % over the Linux \
             scheduler, +17.4 % over round-robin, on average) cannot show; discovery, pinning, \
             re-mapping and reporting work as on any machine",
            plural(topology.pus().len(), "PU")
        )
    }
}

/// Runs `parbench-cli corun`.
///
/// # Errors
/// [`CliError`] for bad arguments, an unreadable profile, or when the commands cannot be watched;
/// [`CliError::Interrupted`] after a signal stopped the commands, once what was measured is
/// printed and written.
pub fn run(args: &CorunArgs) -> Result<(), CliError> {
    check_compare_flags(args)?;
    let commands = split_commands(&args.commands)?;
    let (specs, notes) = command_specs(commands, &args.profile)?;
    let topology = Topology::this_system()?;
    let stop = stop_on_termination_signals()
        .map_err(|error| CliError::Usage(format!("cannot install the signal handlers: {error}")))?;
    let options = CorunOptions {
        algorithm: args
            .algorithm
            .as_deref()
            .unwrap_or(DEFAULT_ALGORITHM)
            .trim()
            .parse()?,
        poll: Duration::from_millis(args.poll_ms as u64),
        max_poll: Duration::from_millis(args.poll_ms.max(100) as u64),
        timeout: args.timeout,
        output: ChildOutput::Stderr,
        ..CorunOptions::default()
    };
    // An unwritable path fails now, before any command runs; nothing is written to it before the
    // report exists.
    let output = open_json(args.output.as_deref(), "report")?;
    if let Some(output) = &output {
        for profile in &args.profile {
            output.refuse_same_file(profile, "a --profile file corun reads")?;
        }
    }
    let mix_blind = specs.iter().all(|spec| spec.mix.is_none())
        && (args.compare
            || matches!(
                options.algorithm,
                Algorithm::InstructionAware | Algorithm::Algorithm1 { .. }
            ));
    let header = |out: &mut dyn std::io::Write| -> std::io::Result<()> {
        write!(out, "topology: {topology}")?;
        writeln!(out, "{}", machine_note(&topology))?;
        for note in &notes {
            writeln!(out, "{note}")?;
        }
        if mix_blind {
            writeln!(
                out,
                "note: no command has a known mix (--profile): the instruction-aware algorithms \
                 have nothing to pair threads by and only spread them evenly"
            )?;
        }
        Ok(())
    };
    if !args.compare {
        let report = corun(&topology, &specs, &options, stop)?;
        check_started(&report)?;
        // A signal stopped the commands: the report (which says so) is still printed and
        // written, and the signal is the news, in one line, as for sweep and --compare.
        let signal = (report.stopped == Some(StopReason::Interrupted))
            .then(stop_signal)
            .flatten();
        let printed = write_stdout(|out| {
            header(out)?;
            write!(out, "{report}")
        });
        let mut errors = Vec::new();
        let mut places = Vec::new();
        match printed {
            Ok(()) => places.push("on stdout".to_owned()),
            // After SIGHUP the terminal may be gone; a report in --output is still kept.
            Err(_) if signal.is_some() && output.is_some() => {}
            Err(error) => errors.push(error),
        }
        if let Some(file) = output {
            match finish_json(file, &report) {
                // The one line of the interruption says where the report is.
                Ok(path) if signal.is_some() => places.push(format!("in {}", path.display())),
                Ok(path) => eprintln!("report written to {}", path.display()),
                Err(error) => errors.push(error),
            }
        }
        if let Some(signal) = signal {
            let kept = if places.is_empty() {
                "every command was stopped".to_owned()
            } else {
                format!(
                    "every command was stopped, the report is {}",
                    places.join(" and ")
                )
            };
            errors.insert(0, CliError::interrupted(signal, Some(kept)));
        }
        return CliError::all(errors);
    }
    let algorithms = compared_algorithms(args.algorithms.as_deref())?;
    let repeat = args.repeat.unwrap_or(DEFAULT_REPEAT);
    let planned = repeat * algorithms.len();
    let seed = args.seed.unwrap_or(DEFAULT_SEED);
    let (runs, early_end) =
        compared_runs(&topology, &specs, options, stop, &algorithms, repeat, seed);
    let place = output.as_ref().map_or_else(
        || "on stdout".to_owned(),
        |file| format!("in {}", file.path().display()),
    );
    let stopped = match early_end {
        None => None,
        Some(EarlyEnd::Signal { run_cut_short }) => {
            let kept = if runs.is_empty() {
                "no run had finished, nothing was written".to_owned()
            } else {
                let left_out = if run_cut_short {
                    " (the run in progress was stopped and left out)"
                } else {
                    ""
                };
                format!("{} of {planned} runs kept {place}{left_out}", runs.len())
            };
            // A signal ended the runs, so the handlers recorded it.
            stop_signal().map(|signal| CliError::interrupted(signal, Some(kept)))
        }
        // Nothing was measured: the error alone, as without --compare.
        Some(EarlyEnd::Error(error)) if runs.is_empty() => return Err(error),
        Some(EarlyEnd::Error(error)) => Some(CliError::CompareStopped {
            error: Box::new(error),
            kept: format!("{} of {planned} runs kept {place}", runs.len()),
        }),
    };
    if runs.is_empty() {
        // Only after a signal: without one every planned run is made, or an error is returned.
        return CliError::all(stopped.into_iter().collect());
    }
    let table = Comparison::from_runs(&algorithms, &specs, &runs);
    let ended_early = stopped.is_some();
    let mut errors: Vec<CliError> = stopped.into_iter().collect();
    if let Some(file) = output {
        let compared = CompareOutput {
            planned_runs: planned,
            stopped: errors.first().map(ToString::to_string),
            comparison: &table,
            runs: &runs,
        };
        match finish_json(file, &compared) {
            // The one line of an early end already says where the runs are.
            Ok(path) if !ended_early => eprintln!("report written to {}", path.display()),
            Ok(_) => {}
            Err(error) => errors.push(error),
        }
    }
    let printed = write_stdout(|out| {
        header(out)?;
        write!(out, "{table}")
    });
    // After SIGHUP the terminal may be gone; the interruption is still the news.
    if !matches!(errors.first(), Some(CliError::Interrupted { .. })) {
        errors.extend(printed.err());
    }
    CliError::all(errors)
}

/// Why `--compare` made fewer runs than it planned.
enum EarlyEnd {
    /// A signal; `run_cut_short` when a run was in progress, which is left out (its commands
    /// were stopped, it measured nothing).
    Signal { run_cut_short: bool },
    /// A run failed with this error (it measured nothing either).
    Error(CliError),
}

/// The runs of `--compare`: the commands under every algorithm, `repeat` times, the algorithms in
/// an order shuffled anew each time (from `seed`), and why they ended early if they did. A signal
/// or a failed run ends them; the runs finished before are returned either way.
fn compared_runs(
    topology: &Topology,
    specs: &[CommandSpec],
    mut options: CorunOptions,
    stop: &AtomicBool,
    algorithms: &[Algorithm],
    repeat: usize,
    seed: u64,
) -> (Vec<CorunReport>, Option<EarlyEnd>) {
    let mut rng = SplitMix64::new(seed);
    let planned = repeat * algorithms.len();
    let mut runs = Vec::new();
    for _ in 0..repeat {
        let mut order = algorithms.to_vec();
        rng.shuffle(&mut order);
        for algorithm in order {
            if stop_signal().is_some() {
                return (
                    runs,
                    Some(EarlyEnd::Signal {
                        run_cut_short: false,
                    }),
                );
            }
            options.algorithm = algorithm;
            let report = match corun(topology, specs, &options, stop) {
                Ok(report) if report.stopped == Some(StopReason::Interrupted) => {
                    return (
                        runs,
                        Some(EarlyEnd::Signal {
                            run_cut_short: true,
                        }),
                    );
                }
                Ok(report) => check_started(&report).map(|()| report),
                Err(error) => Err(error.into()),
            };
            let report = match report {
                Ok(report) => report,
                // The first run's error is the whole story, as without --compare.
                Err(error) if runs.is_empty() => return (runs, Some(EarlyEnd::Error(error))),
                Err(error) => {
                    let error = CliError::Usage(format!(
                        "run {}/{planned} ({algorithm}) failed: {error}",
                        runs.len() + 1
                    ));
                    return (runs, Some(EarlyEnd::Error(error)));
                }
            };
            // After the run, so that a set of commands none of which can start gives only the
            // error line.
            eprintln!(
                "run {}/{planned}: {algorithm}, system time {:.3} s",
                runs.len() + 1,
                report.system_time_s
            );
            runs.push(report);
        }
    }
    (runs, None)
}

/// When no command could be started (no such program, not executable) nothing was measured:
/// that is bad input, one line and exit 2. When some started, a command that could not is part of
/// the result (`FailedToStart` in the report) and the others' measurements are kept.
fn check_started(report: &CorunReport) -> Result<(), CliError> {
    let mut failures = Vec::new();
    for command in &report.commands {
        match &command.status {
            CommandStatus::FailedToStart { reason } => {
                failures.push(format!("`{}`: {reason}", command.argv.join(" ")));
            }
            _ => return Ok(()),
        }
    }
    Err(CliError::Usage(format!(
        "no command could be started, nothing was measured: cannot start {}",
        failures.join("; ")
    )))
}

/// The algorithms of `--algorithms` (all five by default), with `os` added when missing because
/// the table is normalised to it.
///
/// # Errors
/// [`CliError::Map`] for an unknown name.
///
/// # Examples
///
/// ```
/// use parbench_cli::corun::compared_algorithms;
/// let names: Vec<String> = compared_algorithms(Some(&["compact".into()]))?.iter().map(|a| a.to_string()).collect();
/// assert_eq!(names, ["round-robin", "os"]);
/// assert_eq!(compared_algorithms(None)?.len(), parbench_mapper::Algorithm::NAMED.len());
/// # Ok::<(), parbench_cli::error::CliError>(())
/// ```
pub fn compared_algorithms(names: Option<&[String]>) -> Result<Vec<Algorithm>, CliError> {
    let mut algorithms: Vec<Algorithm> = match names {
        Some(names) => names
            .iter()
            .map(|name| name.trim().parse())
            .collect::<Result<_, _>>()?,
        None => Algorithm::NAMED.to_vec(),
    };
    algorithms.dedup();
    if !algorithms.contains(&Algorithm::Os) {
        algorithms.push(Algorithm::Os);
    }
    Ok(algorithms)
}

/// The `--output` file of `corun` and `profile`, checked before anything runs
/// ([`ResultsFile::open`]); `what` (`report`, `profile`) names its JSON in messages.
pub(crate) fn open_json(
    path: Option<&Path>,
    what: &'static str,
) -> Result<Option<ResultsFile>, CliError> {
    path.map(|path| ResultsFile::open(path, what, "json"))
        .transpose()
}

/// Writes `value` into `file` as pretty JSON with a final newline (the mapper's format, which
/// `corun --profile` and `map --profile` read); a failure saves it elsewhere
/// ([`ResultsFile::finish`]). Returns the path written, for the caller's note on stderr.
pub(crate) fn finish_json(file: ResultsFile, value: &impl Serialize) -> Result<PathBuf, CliError> {
    let path = file.path().to_owned();
    let text = serde_json::to_string_pretty(value).map_err(|error| CliError::Write {
        path: path.clone(),
        source: error.into(),
    })?;
    file.finish((text + "\n").as_bytes())?;
    Ok(path)
}

/// The JSON of `--compare`. An interrupted comparison holds fewer runs than planned and says why
/// it stopped, as an interrupted sweep's report does.
#[derive(Serialize)]
struct CompareOutput<'a> {
    /// Runs the comparison was to make (`--repeat` × algorithms).
    planned_runs: usize,
    /// Why it stopped before its last run, in the one line the command printed; absent when it
    /// made them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<String>,
    comparison: &'a Comparison,
    /// The runs that finished, in the order they ran.
    runs: &'a [CorunReport],
}

/// One algorithm's row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonRow {
    /// The algorithm.
    pub algorithm: String,
    /// System times (seconds) of its runs where every command succeeded.
    pub system_times_s: Vec<f64>,
    /// Runs in which a command failed, was killed or did not start (left out of the statistics).
    pub failed_runs: usize,
    /// Median system time.
    pub median_s: Option<f64>,
    /// Mean system time.
    pub mean_s: Option<f64>,
    /// 95 % Student-t interval of the mean (n − 1 degrees of freedom).
    pub ci95_s: Option<(f64, f64)>,
    /// Median system time over the `os` median (below 1: faster than the Linux scheduler).
    pub vs_os: Option<f64>,
    /// Per command, the median wall time of its successful runs.
    pub command_medians_s: Vec<Option<f64>>,
}

/// `--compare`'s table.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Command labels.
    pub commands: Vec<String>,
    /// One row per algorithm, in the order given.
    pub rows: Vec<ComparisonRow>,
}

impl Comparison {
    /// Builds the table from every run's report.
    pub fn from_runs(
        algorithms: &[Algorithm],
        specs: &[CommandSpec],
        runs: &[CorunReport],
    ) -> Comparison {
        let mut rows: Vec<ComparisonRow> = algorithms
            .iter()
            .map(|&algorithm| {
                let mine: Vec<&CorunReport> =
                    runs.iter().filter(|r| r.algorithm == algorithm).collect();
                let good: Vec<&&CorunReport> = mine.iter().filter(|r| r.all_succeeded()).collect();
                let times: Vec<f64> = good.iter().map(|r| r.system_time_s).collect();
                let summary = Summary::from_samples(&times);
                let ci95_s = summary.as_ref().and_then(|s| {
                    let half = student_t95(s.runs - 1) * s.se?;
                    Some((s.mean - half, s.mean + half))
                });
                let command_medians_s = (0..specs.len())
                    .map(|index| {
                        let walls: Vec<f64> = good
                            .iter()
                            .filter_map(|r| r.commands.get(index)?.wall_s)
                            .collect();
                        crate::stats::median(&walls)
                    })
                    .collect();
                ComparisonRow {
                    algorithm: algorithm.to_string(),
                    failed_runs: mine.len() - good.len(),
                    median_s: summary.as_ref().map(|s| s.median),
                    mean_s: summary.as_ref().map(|s| s.mean),
                    ci95_s,
                    vs_os: None,
                    command_medians_s,
                    system_times_s: times,
                }
            })
            .collect();
        let os_median = rows
            .iter()
            .find(|row| row.algorithm == Algorithm::Os.to_string())
            .and_then(|row| row.median_s);
        for row in &mut rows {
            row.vs_os = row.median_s.zip(os_median).map(|(m, os)| m / os);
        }
        Comparison {
            commands: specs.iter().map(|s| s.label.clone()).collect(),
            rows,
        }
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds =
            |value: Option<f64>| value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"));
        // Equal unless the comparison was interrupted.
        let counts = self
            .rows
            .iter()
            .map(|r| r.system_times_s.len() + r.failed_runs);
        let runs = match (counts.clone().min(), counts.max()) {
            (Some(fewest), Some(most)) if fewest < most => format!("{fewest}-{most} runs"),
            (_, most) => plural(most.unwrap_or(0), "run"),
        };
        writeln!(
            f,
            "system time (first start to last exit), {runs} per algorithm, shuffled order; \
             ci95 = mean ± t(0.975, n−1)·SE; vs os = median / os median (< 1 is faster)"
        )?;
        let command_headers: String = (0..self.commands.len())
            .map(|index| format!(" {:>14}", format!("cmd{index} med s")))
            .collect();
        writeln!(
            f,
            "{:<18} {:>4} {:>8} {:>8} {:>19} {:>7} {:>6}{command_headers}",
            "algorithm", "runs", "median s", "mean s", "ci95 s", "vs os", "failed"
        )?;
        for row in &self.rows {
            let ci = row.ci95_s.map_or_else(
                || "n/a".to_owned(),
                |(low, high)| format!("{low:.3}..{high:.3}"),
            );
            let vs_os = row
                .vs_os
                .map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"));
            let commands: String = row
                .command_medians_s
                .iter()
                .map(|m| format!(" {:>14}", seconds(*m)))
                .collect();
            writeln!(
                f,
                "{:<18} {:>4} {:>8} {:>8} {:>19} {:>7} {:>6}{commands}",
                row.algorithm,
                row.system_times_s.len(),
                seconds(row.median_s),
                seconds(row.mean_s),
                ci,
                vs_os,
                row.failed_runs
            )?;
        }
        for (index, label) in self.commands.iter().enumerate() {
            writeln!(f, "cmd{index}: {label}")?;
        }
        if self.rows.iter().any(|row| row.failed_runs > 0) {
            writeln!(
                f,
                "failed: runs in which a command did not exit with 0 (failed to start, exited \
                 with an error, was killed); they are left out of the statistics"
            )?;
        }
        Ok(())
    }
}

/// `profile -- CMD ARGS`: profiles the command, prints the profile and saves it with `--output`.
///
/// # Errors
/// [`CliError::Profile`] when the command cannot start or a counter fails, [`CliError::Usage`]
/// for an unknown `--class`.
pub fn profile(
    command: &[String],
    class: Option<&str>,
    output: Option<&Path>,
) -> Result<(), CliError> {
    let declared = class
        .map(|name| name.trim().parse::<InstrClass>())
        .transpose()
        .map_err(|error| CliError::Usage(error.to_string()))?;
    // Before the command runs: an unwritable path fails first.
    let file = open_json(output, "profile")?;
    let request = ProfileRequest::for_this_machine(&command.join(" "), 1);
    let profile = profile_command(command, &request, declared)?;
    write_stdout(|out| write!(out, "{profile}"))?;
    // Also on stderr: stdout may go to a file or a pipe that nobody reads to the end.
    if let Some(note) = profile.threads_not_listed_note() {
        eprintln!("warning: {note}");
    }
    if let Some(file) = file {
        let path = finish_json(file, &profile)?;
        eprintln!(
            "profile written to {} (use it with `corun --profile {}`)",
            path.display(),
            path.display()
        );
    }
    Ok(())
}

/// `map --pid PID[,PID…]`: maps and pins the threads of running processes (and their
/// descendants) once — or, with `follow`, until they exit, re-mapping as threads come and go —
/// `classes` giving each process's declared class in order.
///
/// # Errors
/// [`CliError::Usage`] for classes that are not one per process or an unknown class,
/// [`CliError::Corun`] for a process that does not exist.
pub fn map_pids(
    pids: &[Pid],
    classes: &[String],
    algorithm: &str,
    follow: bool,
) -> Result<(), CliError> {
    if !classes.is_empty() && classes.len() != pids.len() {
        return Err(CliError::Usage(format!(
            "{} --class values for {} --pid processes: give one class per process, in order, or \
             none",
            classes.len(),
            pids.len()
        )));
    }
    let mixes: Vec<Option<InstructionMix>> = classes
        .iter()
        .map(|name| {
            name.trim()
                .parse::<InstrClass>()
                .map(|class| Some(InstructionMix::new([(class, 1.0)])))
                .map_err(|error| CliError::Usage(error.to_string()))
        })
        .chain(std::iter::repeat_with(|| Ok(None)))
        .take(pids.len())
        .collect::<Result<_, _>>()?;
    let algorithm: Algorithm = algorithm.trim().parse()?;
    let topology = Topology::this_system()?;
    let targets: Vec<(Pid, Option<InstructionMix>)> = pids.iter().copied().zip(mixes).collect();
    let stop = if follow {
        let stop = stop_on_termination_signals().map_err(|error| {
            CliError::Usage(format!("cannot install the signal handlers: {error}"))
        })?;
        eprintln!(
            "following until {} (Ctrl-C stops following)",
            if pids.len() == 1 {
                "the process exits".to_owned()
            } else {
                format!("the {} processes exit", pids.len())
            }
        );
        Some(stop)
    } else {
        None
    };
    let threads = map_running(&topology, &targets, algorithm, stop)?;
    write_stdout(|out| {
        write!(out, "topology: {topology}")?;
        writeln!(out, "{}", machine_note(&topology))?;
        if follow {
            writeln!(
                out,
                "mapping ({algorithm}), followed until exit: every thread seen, last CPU"
            )?;
        } else {
            writeln!(out, "mapping ({algorithm}), applied once:")?;
        }
        for thread in &threads {
            let cpu = thread
                .cpu
                .map_or_else(|| "not pinned (os)".to_owned(), |cpu| format!("cpu {cpu}"));
            writeln!(
                out,
                "  process {} thread {} -> {cpu}",
                thread.pid, thread.tid
            )?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(algorithm: &str, system_times_s: Vec<f64>) -> ComparisonRow {
        ComparisonRow {
            algorithm: algorithm.to_owned(),
            system_times_s,
            failed_runs: 0,
            median_s: None,
            mean_s: None,
            ci95_s: None,
            vs_os: None,
            command_medians_s: vec![None],
        }
    }

    #[test]
    fn the_table_of_an_interrupted_comparison_says_how_many_runs_each_algorithm_got() {
        let table = |rows| {
            Comparison {
                commands: vec!["sleep 1".to_owned()],
                rows,
            }
            .to_string()
        };
        let interrupted = table(vec![row("scatter", vec![1.0, 1.1]), row("os", vec![1.2])]);
        assert!(
            interrupted.starts_with("system time (first start to last exit), 1-2 runs per"),
            "{interrupted}"
        );
        let complete = table(vec![row("scatter", vec![1.0]), row("os", vec![1.2])]);
        assert!(complete.contains(", 1 run per algorithm"), "{complete}");
        let two = table(vec![
            row("scatter", vec![1.0, 1.1]),
            row("os", vec![1.2, 1.3]),
        ]);
        assert!(two.contains(", 2 runs per algorithm"), "{two}");
    }
}
