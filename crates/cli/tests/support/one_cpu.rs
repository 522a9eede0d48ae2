//! Running `parbench-cli` as on a one-CPU machine: confined, before it starts, to the first CPU
//! this test process may use (as `taskset -c N` does), so the binary, its threads and the
//! commands it starts see a one-CPU set whatever this machine has.

use std::process::{Command, Output};

use parbench_mapper::tasks::{confine_command, thread_affinity};

/// The first CPU this test process may use: the one [`on_one_cpu`] confines the binary to.
pub fn first_allowed_cpu() -> usize {
    thread_affinity(0).expect("sched_getaffinity of this thread")[0]
}

/// Runs `parbench-cli` with `args`, allowed to run only on [`first_allowed_cpu`].
pub fn on_one_cpu(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_parbench-cli"));
    command.args(args);
    confine_command(&mut command, &[first_allowed_cpu()])
        .expect("a CPU of this process")
        .output()
        .expect("the parbench-cli binary runs")
}
