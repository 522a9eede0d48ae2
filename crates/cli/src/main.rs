//! `parbench-cli`: parse, dispatch, and turn any failure into one line on stderr with exit code 2.

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use parbench_cli::args::Cli;

/// Exit code for bad input, as clap uses for usage errors.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    // A panic is a bug (in a kernel, a scheduler or here), never the user's fault: report it in
    // one line like every other error. The sweep catches panics in kernels and records them as
    // that cell's error, so this line then precedes an otherwise normal result.
    std::panic::set_hook(Box::new(|info| {
        let message = parbench_cli::error::panic_message(info.payload());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("error: internal error{place}: {}", one_line(message));
    }));
    // Before any child is started: with SIGCHLD ignored (passed on by the parent) none could be
    // waited for.
    if let Err(error) = parbench_cli::interruption::wait_for_own_children() {
        eprintln!("error: cannot set SIGCHLD to its default: {error}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return report_parse_error(&error),
    };
    match parbench_cli::commands::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error.to_string()));
            // A sweep stopped by a signal, its results saved: the shell's convention, 128 + it.
            let code = error
                .signal()
                .and_then(|signal| u8::try_from(128 + signal).ok())
                .unwrap_or(EXIT_BAD_INPUT);
            ExitCode::from(code)
        }
    }
}

/// Help and version go out as clap formats them; a usage error becomes one line naming what is
/// missing or allowed (clap adds usage and tips below it, which would make it several lines).
fn report_parse_error(error: &clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Nothing useful is left to do if even printing help fails (e.g. a closed pipe).
            let _ = error.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            ExitCode::from(EXIT_BAD_INPUT)
        }
        _ => {
            eprintln!("{}", parbench_cli::args::usage_error_line(error));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Joins the lines of a message so that the user always gets exactly one line.
fn one_line(message: &str) -> String {
    message.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}
