//! `map` and `corun` run by a process confined to one CPU (as under `taskset -c 0`, or a
//! container runtime's `sched_setaffinity`) map and pin only onto that CPU, and a request that
//! cannot fit there is one line naming it. The CLI is started with its affinity narrowed before
//! it runs, so all of its threads and the commands it starts inherit the restriction.
//!
//! Checked from outside, by what the kernel says each pinned thread may use.

use std::process::{Child, Command};

use parbench_mapper::tasks::{Pid, cpus_allowed};

#[path = "support/one_cpu.rs"]
mod one_cpu;
use one_cpu::{first_allowed_cpu, on_one_cpu};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn map_of_more_threads_than_allowed_cpus_is_one_line_naming_them() {
    let cpu = first_allowed_cpu();
    let output = on_one_cpu(&["map", "--kernels", "fp-add,int-add", "--threads", "2"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: 2 threads do not fit on 1 PU ("),
        "{err}"
    );
    assert!(err.contains(&format!("CPU {cpu})")), "{err}");
}

#[test]
fn map_of_more_kernels_than_allowed_cpus_without_threads_says_where_the_count_came_from() {
    let output = on_one_cpu(&["map", "--kernels", "fp-add,int-add"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "error: --threads defaults to the 1 PU this process may use, but 2 kernels need at least \
         2 threads (one each, at most one per PU): give fewer kernels or run on more CPUs\n"
    );
    // With --scenarios the same reason, and the scenarios are still measured.
    let output = on_one_cpu(&[
        "map",
        "--kernels",
        "fp-add,int-add",
        "--scenarios",
        "--scenario-ms",
        "1",
        "--scenario-repetitions",
        "1",
    ]);
    let err = text(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(
            "no mapping: --threads defaults to the 1 PU this process may use, but 2 kernels need \
             at least 2 threads (one each, at most one per PU); measuring the scenarios only\n"
        ),
        "{err}"
    );
}

#[test]
fn map_pid_from_one_allowed_cpu_pins_every_thread_to_it() {
    let cpu = first_allowed_cpu();
    // Three programs, so that any spreading mapping would reach a second CPU if it saw one.
    let mut sleepers: Vec<Child> = (0..3)
        .map(|_| Command::new("sleep").arg("60").spawn().unwrap())
        .collect();
    let pids: Vec<Pid> = sleepers.iter().map(|child| child.id() as Pid).collect();
    let list: Vec<String> = pids.iter().map(Pid::to_string).collect();
    let output = on_one_cpu(&["map", "--pid", &list.join(","), "--algorithm", "scatter"]);
    let seen: Vec<Vec<usize>> = pids
        .iter()
        .map(|&pid| cpus_allowed(pid, pid).unwrap())
        .collect();
    for sleeper in &mut sleepers {
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(out.matches(&format!("-> cpu {cpu}\n")).count(), 3, "{out}");
    assert_eq!(seen, vec![vec![cpu]; 3], "{out}");
}

#[test]
fn corun_from_one_allowed_cpu_pins_every_thread_to_it() {
    let cpu = first_allowed_cpu();
    // A shell and two sleeps: three threads, so that any spreading mapping would reach a second
    // CPU if it saw one.
    let script = "sleep 0.5 & sleep 0.5; wait";
    let output = on_one_cpu(&[
        "corun",
        "--algorithm",
        "round-robin",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{err}");
    assert!(
        out.contains("\nnote: this process may use 1 PU, without SMT siblings: threads that share"),
        "{out}"
    );
    let threads = out
        .lines()
        .find_map(|line| line.trim().strip_prefix("threads (tid→last cpu):"))
        .unwrap_or_else(|| panic!("no thread list: {out}"));
    // "TID→cpu C TID→cpu C …"
    let cpus: Vec<String> = threads
        .split('→')
        .skip(1)
        .map(|rest| {
            rest.split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert!(cpus.len() >= 3, "{out}");
    assert!(
        cpus.iter().all(|seen| *seen == format!("cpu {cpu}")),
        "{out}"
    );
}
