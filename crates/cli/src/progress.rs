//! Progress display for people, on stderr only (stdout carries results).
//!
//! The bar counts timed and warm-up runs over the whole plan, so its rate and ETA are honest even
//! when cells differ in their number of runs. It is hidden when stderr is not a terminal (CI logs,
//! redirections) or when the user asked for `--quiet`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over a known number of runs.
///
/// ```
/// use parbench_cli::progress::Progress;
/// let progress = Progress::new(10, true); // quiet: draws nothing
/// progress.start_cell("reduce/tree/2");
/// progress.advance(1);
/// progress.finish();
/// ```
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total_runs` runs; hidden when `quiet` or when stderr is not a terminal.
    pub fn new(total_runs: u64, quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = if visible {
            ProgressBar::with_draw_target(Some(total_runs), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        // The template is a constant known to parse; fall back to the default style if a future
        // indicatif rejects it rather than failing the measurement.
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs (eta {eta}) {msg}",
        ) {
            bar.set_style(style);
        }
        Progress { bar }
    }

    /// Shows which cell is being measured.
    pub fn start_cell(&self, name: &str) {
        self.bar.set_message(name.to_owned());
    }

    /// Counts `runs` finished (warm-up or timed) runs, or runs that will not happen because their
    /// cell failed, which keeps the total and the ETA honest.
    pub fn advance(&self, runs: u64) {
        self.bar.inc(runs);
    }

    /// Prints `line` on stderr without tearing the bar.
    pub fn message(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
