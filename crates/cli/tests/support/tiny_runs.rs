//! The argument lists of the smallest runs that the bad-input and output-file tests start or have
//! refused: a sweep of one cell and a latency test of a tiny service.
//!
//! Only those two test files and cli.rs (for [`one_run_sweep`] alone) use them, so they include
//! this file by its path instead of it being part of `support/mod.rs`, which every test file
//! includes (an item a file does not use is dead code there).

/// A 16 × 16 matmul, the kernel of a sweep that finishes in milliseconds in a debug build.
pub const MATMUL: [&str; 4] = ["--kernels", "matmul", "--n", "16"];

/// One timed run in one round.
pub const ONE_RUN: [&str; 4] = ["--runs", "1", "--rounds", "1"];

/// The 8 × 8 matmul service of a latency test; the loads, counts and placements are the caller's.
pub const TINY_LATENCY: [&str; 5] = ["latency", "--service", "matmul", "--n", "8"];

/// `sweep` of the kernel that `kernel` selects (`--kernels K` and its settings) as one cell,
/// `seq` at one thread, no warm-up, no progress bar, then `extra`. `--runs` and `--rounds` are
/// the caller's (a test of their bounds gives its own); [`one_run_sweep`] gives one of each.
pub fn tiny_sweep<'a>(kernel: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let one_cell = [
        "--schedulers",
        "seq",
        "--threads",
        "1",
        "--warmup",
        "0",
        "-q",
    ];
    let mut args = vec!["sweep"];
    args.extend(kernel);
    args.extend(one_cell);
    args.extend(extra);
    args
}

/// [`tiny_sweep`] of one timed run in one round ([`ONE_RUN`]), then `extra`.
pub fn one_run_sweep<'a>(kernel: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = tiny_sweep(kernel, &ONE_RUN);
    args.extend(extra);
    args
}
