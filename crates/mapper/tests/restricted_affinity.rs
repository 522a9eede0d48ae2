//! A process confined to some CPUs (`taskset -c 0`, a container runtime's `sched_setaffinity`)
//! must map and pin only onto them. hwloc lists every CPU of the machine whatever the process's
//! affinity, so mappings used to reach CPUs the process may not use: a thread pool refused them
//! (`NoSuchCpu`), and threads of other processes were pinned there without a word (the kernel
//! lets a process pin another one anywhere in its cgroup).
//!
//! Each case runs in a child process, this test binary run again for one test with `CHILD_CASE`
//! set and its affinity narrowed to one CPU before it starts, so all of its threads (and the
//! programs it starts) inherit the restriction, as under `taskset`.

use std::process::{Child, Command};

use parbench_mapper::corun::map_running;
use parbench_mapper::tasks::{Pid, confine_command, cpus_allowed, thread_affinity};
use parbench_mapper::{Algorithm, InstructionMix, MapError, Topology};

/// Names the case a child process runs, and holds the one CPU it may use; unset in the parent.
const CHILD_CASE: &str = "PARBENCH_RESTRICTED_AFFINITY_CASE";

/// The CPUs the calling thread may use.
fn allowed_cpus() -> Vec<usize> {
    thread_affinity(0).expect("sched_getaffinity of this thread")
}

/// Runs `test` of this binary in a child process that may use only `cpu`, and checks it passed.
fn run_on_one_cpu(test: &str, cpu: usize) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_CASE, format!("{test}={cpu}"));
    let output = confine_command(&mut command, &[cpu])
        .unwrap()
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "child {test} failed:\n{log}");
    assert!(log.contains("1 passed"), "child {test} did not run:\n{log}");
}

/// In the parent: runs `test` in a child restricted to this process's first CPU and returns
/// `None`. In that child: the CPU. In a child run for another test: `None`, and nothing runs.
fn child_cpu(test: &str) -> Option<usize> {
    match std::env::var(CHILD_CASE) {
        Ok(case) => {
            let (name, cpu) = case.split_once('=').expect("CASE=CPU");
            (name == test).then(|| cpu.parse().expect("a CPU number"))
        }
        Err(_) => {
            run_on_one_cpu(test, allowed_cpus()[0]);
            None
        }
    }
}

#[test]
fn this_systems_topology_has_every_cpu_this_process_may_use_and_no_other() {
    let topology = Topology::this_system().unwrap();
    assert_eq!(topology.cpus(), allowed_cpus());
}

#[test]
fn mappings_on_one_allowed_cpu_use_it_or_name_it_in_the_error() {
    let Some(cpu) = child_cpu("mappings_on_one_allowed_cpu_use_it_or_name_it_in_the_error") else {
        return;
    };
    assert_eq!(allowed_cpus(), vec![cpu], "the child's affinity");
    let topology = Topology::this_system().unwrap();
    assert_eq!(topology.cpus(), vec![cpu], "{topology}");
    for algorithm in Algorithm::NAMED {
        let mapping = algorithm
            .map(&topology, &[InstructionMix::default()])
            .unwrap();
        for pu in mapping.pus().iter().flatten() {
            assert_eq!(topology.pus()[*pu].os_index, cpu, "{algorithm}");
        }
    }
    let two = vec![InstructionMix::default(); 2];
    let error = Algorithm::RoundRobin.map(&topology, &two).unwrap_err();
    assert_eq!(
        error,
        MapError::TooManyThreads {
            threads: 2,
            pus: 1,
            cpus: vec![cpu]
        }
    );
    assert_eq!(
        error.to_string(),
        format!("2 threads do not fit on 1 PU (one thread per PU; CPU {cpu})")
    );
}

#[test]
fn running_processes_mapped_from_one_allowed_cpu_are_pinned_only_to_it() {
    let Some(cpu) =
        child_cpu("running_processes_mapped_from_one_allowed_cpu_are_pinned_only_to_it")
    else {
        return;
    };
    let topology = Topology::this_system().unwrap();
    // Three programs, so that round-robin would reach a second CPU of any machine that has one.
    let mut sleepers: Vec<Child> = (0..3)
        .map(|_| Command::new("sleep").arg("60").spawn().unwrap())
        .collect();
    let targets: Vec<(Pid, Option<InstructionMix>)> = sleepers
        .iter()
        .map(|child| (child.id() as Pid, None))
        .collect();
    let pinned = map_running(&topology, &targets, Algorithm::RoundRobin, None);
    // Checked from outside, by what the kernel says each program may use.
    let seen: Vec<Vec<usize>> = targets
        .iter()
        .map(|&(pid, _)| cpus_allowed(pid, pid).unwrap())
        .collect();
    for sleeper in &mut sleepers {
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
    let pinned = pinned.unwrap();
    assert_eq!(pinned.len(), 3, "{pinned:?}");
    assert!(
        pinned.iter().all(|thread| thread.cpu == Some(cpu)),
        "{pinned:?}"
    );
    assert_eq!(seen, vec![vec![cpu]; 3]);
}
