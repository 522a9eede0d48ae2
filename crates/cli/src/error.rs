//! The CLI's error type: everything that ends a command, each printed as one line with exit code 2.

use std::any::Any;
use std::io;
use std::path::PathBuf;

use parbench_kernels::{ExecutorError, KernelError};
use thiserror::Error;

use crate::plot::PlotError;

/// Why a command failed. The `Display` form is a single line meant for the user.
///
/// ```
/// use parbench_cli::error::CliError;
/// let error = CliError::Usage("no selected kernel takes parameter `foo`".into());
/// assert_eq!(error.to_string(), "no selected kernel takes parameter `foo`");
/// ```
#[derive(Debug, Error)]
pub enum CliError {
    /// Arguments that parse but make no sense together.
    #[error("{0}")]
    Usage(String),
    /// A kernel could not be found or prepared (unknown name, bad parameter, unreadable input).
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// An unknown scheduler name.
    #[error(transparent)]
    Executor(#[from] ExecutorError),
    /// Reading a file failed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Writing a file or stdout failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file (`-` for stdout).
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Measured results that could not be written where asked, and where they went instead
    /// (see [`crate::results_file`]).
    #[error("cannot write {}: {source}; {}", path.display(), rescue.describe(what))]
    WrittenElsewhere {
        /// The file the user named.
        path: PathBuf,
        /// Why writing it failed.
        source: io::Error,
        /// What was written: `results`, `figure`.
        what: &'static str,
        /// Where it went instead.
        rescue: Rescue,
    },
    /// A directory for the command's own temporary files could not be made.
    #[error(
        "cannot create a directory in the temp directory {} (set TMPDIR to a writable \
         directory): {source}",
        path.display()
    )]
    TempDir {
        /// The temp directory (`$TMPDIR`, else `/tmp`).
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A results file that is not a parbench JSON report.
    #[error("malformed results file {}: {reason}", path.display())]
    MalformedResults {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The report of a sweep that holds fewer rounds than it planned (`standings`, `compare`
    /// without `--allow-partial`).
    #[error(
        "{} holds {held} of the {planned} rounds its sweep planned (the sweep is still running \
         or stopped early); wait for it, leave the file out, or pass --allow-partial",
        path.display()
    )]
    UnfinishedResults {
        /// The file.
        path: PathBuf,
        /// Complete rounds in it.
        held: usize,
        /// Rounds its sweep planned.
        planned: usize,
    },
    /// A round's child process of `sweep` failed in a way that is not an error of the input (it
    /// crashed, or was killed): the cells measured before are kept.
    #[error(
        "round {round}'s process failed ({status}){}; the cells measured before are kept{}",
        reason.as_ref().map_or_else(|| " without a message".to_owned(), |r| format!(": {r}")),
        stderr_log.as_ref().map_or_else(String::new, |p| format!(" (its whole stderr: {})", p.display()))
    )]
    RoundFailed {
        /// The round, 1-based.
        round: usize,
        /// How the process ended: `killed by signal 6 (SIGABRT)`, `exit status 101`.
        status: String,
        /// The line of its stderr that says why (a panic, a failed allocation), if any.
        reason: Option<String>,
        /// Where its whole stderr was saved, when it said more than `reason`.
        stderr_log: Option<PathBuf>,
    },
    /// A `reproduce` study that failed after measuring some cells, which were written first.
    #[error("{error}; the {cells} cells measured before are kept in {}", kept.display())]
    StudyStopped {
        /// Why the study failed.
        error: Box<CliError>,
        /// How many cells it had measured.
        cells: usize,
        /// The file they were written to (`results.json` in the output directory).
        kept: PathBuf,
    },
    /// A `corun --compare` whose run failed after earlier runs finished, which were written first.
    #[error("{error}; {kept}")]
    CompareStopped {
        /// Why the run failed.
        error: Box<CliError>,
        /// How many runs were kept and where: `1 of 6 runs kept in c.json`.
        kept: String,
    },
    /// `sweep`, `latency` or `corun` (a single run or `--compare`) was stopped by a signal
    /// (SIGINT, SIGTERM, SIGHUP) after saving what it measured; the process exits with 128 + the signal ([`CliError::signal`]).
    #[error(
        "interrupted by {signal_name}{}",
        kept.as_ref().map_or_else(String::new, |kept| format!(": {kept}"))
    )]
    Interrupted {
        /// The signal's number.
        signal: i32,
        /// Its name, `SIGINT`.
        signal_name: &'static str,
        /// What was kept and where, when known.
        kept: Option<String>,
    },
    /// The figure could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A lock or backend that does not exist or that this CPU cannot run (`locks`).
    #[error(transparent)]
    Atomics(#[from] parbench_atomics::Error),
    /// A topology that cannot be read or parsed (`topology`, `map`).
    #[error(transparent)]
    Topology(#[from] parbench_mapper::TopologyError),
    /// A mapping that cannot be made: unknown algorithm or kernel, too many threads (`map`).
    #[error(transparent)]
    Map(#[from] parbench_mapper::MapError),
    /// Counters or a profile file that failed (`profile`, `map --profile`).
    #[error(transparent)]
    Profile(#[from] parbench_mapper::perf::ProfileError),
    /// Commands could not be watched or mapped (`corun`, `map --pid`).
    #[error(transparent)]
    Corun(#[from] parbench_mapper::corun::CorunError),
    /// The co-scheduling scenarios could not run (`map --scenarios`).
    #[error(transparent)]
    Scenario(#[from] parbench_mapper::ScenarioError),
    /// Several failures of one command, e.g. a measurement that stopped on an error and results
    /// that then could not be written: one line naming each, in order.
    #[error("{}", join(.0))]
    Several(Vec<CliError>),
}

impl CliError {
    /// [`CliError::Interrupted`] by `signal`, named as `corun` names it.
    pub fn interrupted(signal: i32, kept: Option<String>) -> CliError {
        CliError::Interrupted {
            signal,
            signal_name: parbench_mapper::corun::signal_name(signal).unwrap_or("a signal"),
            kept,
        }
    }

    /// `Ok` without errors, the error itself for one, [`CliError::Several`] for more: a command
    /// that goes on after a failure to save what it can still reports every failure in one line.
    ///
    /// ```
    /// use parbench_cli::error::CliError;
    /// assert!(CliError::all(Vec::new()).is_ok());
    /// let both = CliError::all(vec![CliError::Usage("a".into()), CliError::Usage("b".into())]);
    /// assert_eq!(both.unwrap_err().to_string(), "a; b");
    /// ```
    ///
    /// # Errors
    /// The errors given, when there are any.
    pub fn all(errors: Vec<CliError>) -> Result<(), CliError> {
        let mut errors = errors;
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(CliError::Several(errors)),
        }
    }
}

fn join(errors: &[CliError]) -> String {
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    messages.join("; ")
}

/// Where results went that could not be written to the file the user named.
#[derive(Debug)]
pub enum Rescue {
    /// A file of ours (in the temp directory), in the same format.
    File(PathBuf),
    /// Stdout, in the file's format: no file could be written.
    Stdout,
    /// Nowhere: stdout failed too (its error).
    Lost(io::Error),
}

impl Rescue {
    /// The end of the error line: where `what` (`results`, `figure`) went.
    ///
    /// ```
    /// use parbench_cli::error::Rescue;
    /// let rescue = Rescue::File("/tmp/parbench-rescued-7-r.json".into());
    /// assert_eq!(
    ///     rescue.describe("results"),
    ///     "saved the results to /tmp/parbench-rescued-7-r.json instead"
    /// );
    /// ```
    pub fn describe(&self, what: &str) -> String {
        match self {
            Rescue::File(path) => format!("saved the {what} to {} instead", path.display()),
            Rescue::Stdout => format!("wrote the {what} to stdout instead"),
            Rescue::Lost(error) => format!("writing the {what} to stdout failed too ({error})"),
        }
    }
}

impl CliError {
    /// The signal that stopped the command ([`CliError::Interrupted`]), whose conventional exit
    /// status is 128 + the signal, instead of the 2 of every other error.
    ///
    /// ```
    /// use parbench_cli::error::CliError;
    /// let error = CliError::Interrupted { signal: 2, signal_name: "SIGINT", kept: None };
    /// assert_eq!((error.signal(), error.to_string().as_str()), (Some(2), "interrupted by SIGINT"));
    /// assert_eq!(CliError::Usage("bad".into()).signal(), None);
    /// ```
    pub fn signal(&self) -> Option<i32> {
        match self {
            CliError::Interrupted { signal, .. } => Some(*signal),
            // Interrupted, and the results then went elsewhere: still the signal's exit code.
            CliError::Several(errors) => errors.iter().find_map(CliError::signal),
            // Interrupted, its finished cells kept: likewise.
            CliError::StudyStopped { error, .. } => error.signal(),
            _ => None,
        }
    }
}

/// The message a panic carried (`panic!("…")` payloads are `&str` or `String`).
///
/// ```
/// use parbench_cli::error::panic_message;
/// let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
/// assert_eq!(panic_message(payload.as_ref()), "boom 1");
/// ```
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
