//! Running `parbench-cli` as on a one-CPU machine: under `taskset -c N`, N the first CPU this
//! process may use, so the binary sees a one-CPU set whatever this machine has.

use std::io::ErrorKind;
use std::process::{Command, Output};

/// Runs `parbench-cli` with `args` confined to one CPU; `None`, with the reason printed as
/// SKIPPED, when `taskset` is not installed or no CPU of this process is known.
pub fn on_one_cpu(args: &[&str]) -> Option<Output> {
    let Some(cpu) = core_affinity::get_core_ids().and_then(|ids| ids.first().map(|id| id.id))
    else {
        eprintln!("SKIPPED: the CPUs this process may use are unknown");
        return None;
    };
    let run = Command::new("taskset")
        .arg("-c")
        .arg(cpu.to_string())
        .arg(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(args)
        .output();
    match run {
        Ok(output) => Some(output),
        Err(error) if error.kind() == ErrorKind::NotFound => {
            eprintln!("SKIPPED: `taskset` is not installed ({error})");
            None
        }
        Err(error) => panic!("taskset parbench-cli {args:?} did not run: {error}"),
    }
}
