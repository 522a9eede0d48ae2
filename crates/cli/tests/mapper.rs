//! End-to-end tests of `parbench-cli topology`, `profile` and `map` on this machine (a VM without
//! SMT siblings or hardware counters, detected rather than assumed) and on synthetic topologies,
//! plus every bad-input path.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;

use parbench_mapper::Topology;
use parbench_mapper::perf::{Profile, Quantity};
use support::{assert_bad_input, cli_ok, scratch};

const SYNTHETIC: &str = "synthetic:pack:1 core:4 pu:2";
const SMT_KERNELS: &str = "fp-add,int-add,fp-mul,load-dep";

fn map(extra: &[&str]) -> String {
    let mut args = vec!["map", "--topology", SYNTHETIC, "--kernels", SMT_KERNELS];
    args.extend_from_slice(extra);
    cli_ok(&args).0
}

/// The `thread N KERNEL -> core C cpu P` lines of a map report, as (kernel, core, cpu).
fn placements(report: &str) -> Vec<(String, usize, usize)> {
    report
        .lines()
        .filter(|line| line.trim_start().starts_with("thread") && line.contains("->"))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let number = |i: usize| words[i].parse::<usize>().expect("a number");
            (words[2].to_owned(), number(5), number(7))
        })
        .collect()
}

#[test]
fn topology_synthetic_prints_packages_cores_and_pus() {
    let (out, _) = cli_ok(&["topology", "--synthetic", "pack:2 core:2 pu:2"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("2 packages") && lines[0].contains("4 cores"));
    assert!(lines[0].contains("8 PUs (SMT siblings present)"));
    assert_eq!(lines[1], "package 0: core 0 [cpu 0,1] | core 1 [cpu 2,3]");
    assert_eq!(lines[2], "package 1: core 2 [cpu 4,5] | core 3 [cpu 6,7]");
    assert!(lines[3].contains("binding threads to its PUs does nothing"));
}

#[test]
fn topology_of_this_machine_matches_the_library() {
    let (out, _) = cli_ok(&["topology"]);
    let here = Topology::this_system().expect("hwloc discovers this machine");
    assert_eq!(out, here.to_string());
}

#[test]
fn topology_bad_input_is_one_line_and_exit_2() {
    let not_xml = scratch("not-a-topology.xml");
    std::fs::write(&not_xml, "not xml at all").expect("scratch file");
    let not_xml = not_xml.to_str().expect("UTF-8 path");
    assert_bad_input(&["topology", "--xml", not_xml], &["not-a-topology.xml"]);
    let xml_arg = format!("xml:{not_xml}");
    assert_bad_input(
        &["map", "--topology", &xml_arg, "--kernels", "fp-add"],
        &["not-a-topology.xml"],
    );
    assert_bad_input(&["topology", "--synthetic", "pack:x"], &["pack:x"]);
    assert_bad_input(
        &["topology", "--xml", "/nonexistent/machine.xml"],
        &["machine.xml"],
    );
    assert_bad_input(
        &["topology", "--synthetic", "core:2", "--xml", "m.xml"],
        &["--xml"],
    );
}

#[test]
fn profile_on_one_thread_says_thread_in_the_singular() {
    let (out, _) = cli_ok(&[
        "profile",
        "--kernel",
        "fp-add",
        "--threads",
        "1",
        "--param",
        "iters=2^10",
    ]);
    assert!(
        out.starts_with("kernel fp-add on 1 thread: each thread"),
        "{out}"
    );
    assert!(
        out.contains("\nprofile of fp-add on 1 thread, CPU family"),
        "{out}"
    );
}

#[test]
fn profile_fp_add_attributes_task_clock_per_thread_and_names_what_is_unavailable() {
    let path = scratch("fp-add.json");
    let path_text = path.to_str().expect("UTF-8 path");
    let (out, _) = cli_ok(&[
        "profile",
        "--kernel",
        "fp-add",
        "--threads",
        "2",
        "--param",
        "iters=2^14",
        "--output",
        path_text,
    ]);
    for thread in ["thread 0: task-clock ns", "thread 1: task-clock ns"] {
        assert!(out.contains(thread), "{out}");
    }
    assert!(
        out.starts_with("kernel fp-add on 2 threads: each thread"),
        "{out}"
    );
    assert!(
        out.contains("\nprofile of fp-add on 2 threads, CPU family"),
        "{out}"
    );
    assert!(
        out.contains("classification rule: parbench's own rule, not the tail-latency study's"),
        "{out}"
    );
    assert!(out.contains("SMT-friendly when IPC < 1.0"), "{out}");
    let profile = Profile::read_json(&path).expect("profile JSON written");
    assert_eq!(profile.workload, "fp-add");
    for thread in 0..2 {
        let totals = profile.thread_totals(thread).expect("thread profiled");
        let task_clock = totals[&Quantity::TaskClockNs].expect("task-clock counted");
        assert!(task_clock > 0.0, "thread {thread} did work");
    }
    if profile.unavailable.is_empty() {
        eprintln!("SKIPPED: unavailable-counter report: this machine has every hardware counter");
        assert!(
            out.contains("all requested counters were available"),
            "{out}"
        );
        return;
    }
    let first = &profile.unavailable[0].event;
    assert!(
        out.contains("unavailable here (") && out.contains(first.as_str()),
        "{out}"
    );
    assert!(
        out.contains("IPC: not computed, needs instructions and cycles"),
        "{out}"
    );
    if profile.thread_mixes().is_err() {
        assert!(
            out.contains("using the workload's declared instruction mix"),
            "{out}"
        );
        assert!(out.contains("thread 0 mix: fp 100%"), "{out}");
    }
}

#[test]
fn profile_bad_input_is_one_line_and_exit_2() {
    assert_bad_input(
        &["profile", "--kernel", "nope"],
        &["unknown kernel", "fp-add"],
    );
    assert_bad_input(
        &["profile", "--kernel", "fp-add", "--threads", "0"],
        &["--threads"],
    );
    assert_bad_input(
        &["profile", "--kernel", "fp-add", "--param", "width=3"],
        &["width"],
    );
}

#[test]
fn map_on_the_synthetic_topology_places_every_thread_once_and_scores_every_algorithm() {
    let out = map(&[
        "--threads",
        "8",
        "--algorithm",
        "instruction-aware",
        "--seed",
        "3",
    ]);
    let placed = placements(&out);
    assert_eq!(placed.len(), 8, "{out}");
    let cpus: BTreeSet<usize> = placed.iter().map(|p| p.2).collect();
    assert_eq!(cpus, (0..8).collect(), "each PU used once: {out}");
    // Siblings of one core (2 PUs each) never run the same kernel under instruction-aware.
    for core in 0..4 {
        let on_core: Vec<&str> = placed
            .iter()
            .filter(|p| p.1 == core)
            .map(|p| p.0.as_str())
            .collect();
        assert_eq!(on_core.len(), 2, "{out}");
        assert_ne!(on_core[0], on_core[1], "{out}");
    }
    let score = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_owned)
    };
    assert_eq!(score("instruction-aware").as_deref(), Some("0.000"));
    assert_eq!(score("round-robin").as_deref(), Some("4.000"));
    for name in ["algorithm1", "os-index", "scatter", "os", "random"] {
        assert!(score(name).is_some(), "{name} scored: {out}");
    }
    assert!(out.contains("seed 3"), "{out}");
    assert!(out.contains("nothing is pinned"), "{out}");
}

#[test]
fn map_round_robin_puts_consecutive_threads_on_one_core() {
    let out = map(&["--threads", "8", "--algorithm", "round-robin"]);
    let cores: Vec<usize> = placements(&out).iter().map(|p| p.1).collect();
    assert_eq!(cores, [0, 0, 1, 1, 2, 2, 3, 3], "{out}");
    // `compact` is the same placement under another name.
    let compact = map(&["--threads", "8", "--algorithm", "compact"]);
    let cores: Vec<usize> = placements(&compact).iter().map(|p| p.1).collect();
    assert_eq!(cores, [0, 0, 1, 1, 2, 2, 3, 3], "{compact}");
}

#[test]
fn map_algorithm1_pairs_the_extremes_of_one_class_core_by_core() {
    // 4 threads on 4 cores × 2 PUs: the published algorithm fills cores 0 and 1 and leaves 2 and
    // 3 empty; the refined one spreads them over all four cores.
    let exact = map(&["--threads", "4", "--algorithm", "algorithm1:fp"]);
    assert!(exact.contains("mapping (algorithm1:fp)"), "{exact}");
    let mut cores: Vec<usize> = placements(&exact).iter().map(|p| p.1).collect();
    cores.sort_unstable();
    assert_eq!(cores, [0, 0, 1, 1], "{exact}");
    let refined = map(&["--threads", "4", "--algorithm", "instruction-aware"]);
    let mut cores: Vec<usize> = placements(&refined).iter().map(|p| p.1).collect();
    cores.sort_unstable();
    assert_eq!(cores, [0, 1, 2, 3], "{refined}");
}

/// A profile of `kernel` (a short one: `iters=2^12`) written to a fresh path `name`.
fn kernel_profile(kernel: &str, name: &str) -> PathBuf {
    let path = scratch(name);
    let path_text = path.to_str().expect("UTF-8 path");
    let args = [
        "profile",
        "--kernel",
        kernel,
        "--param",
        "iters=2^12",
        "-o",
        path_text,
    ];
    cli_ok(&args);
    path
}

#[test]
fn map_takes_a_kernel_mix_from_a_profile_and_says_where_it_came_from() {
    let path = kernel_profile("int-add", "map-profile.json");
    let path_text = path.to_str().expect("UTF-8 path");
    let out = map(&["--threads", "8", "--profile", path_text]);
    let note = out.lines().next().unwrap_or_default();
    assert!(
        note.starts_with(&format!("{path_text}: int-add: ")),
        "{out}"
    );
    assert!(
        note.contains("measured") || note.contains("declared instruction mix"),
        "{out}"
    );
    assert_eq!(placements(&out).len(), 8);
}

#[test]
fn map_scenarios_run_only_on_real_smt_siblings() {
    let out = map(&["--threads", "4", "--scenarios"]);
    assert!(
        out.contains("scenarios skipped: the topology is not this machine"),
        "{out}"
    );
    let here = Topology::this_system().expect("hwloc discovers this machine");
    // No --threads: on a process allowed one CPU two threads do not fit, and the scenarios are
    // measured without a mapping.
    let (out, _) = cli_ok(&[
        "map",
        "--topology",
        "this",
        "--kernels",
        "int-add,fp-add",
        "--scenarios",
        "--scenario-ms",
        "20",
    ]);
    if here.has_smt_siblings() {
        eprintln!("SKIPPED: the no-SMT message: this machine has SMT siblings");
        assert!(out.contains("geomean"), "{out}");
    } else {
        assert!(
            out.contains("scenarios skipped: no SMT siblings among the CPUs this process may use"),
            "{out}"
        );
    }
}

#[test]
fn map_scenarios_of_more_kernels_than_pus_measure_the_scenarios_without_a_mapping() {
    let here = Topology::this_system().expect("hwloc discovers this machine");
    if here.pus().len() >= 8 {
        return eprintln!("SKIPPED: this machine has 8 or more PUs, the 8 kernels fit a mapping");
    }
    let (out, err) = cli_ok(&[
        "map",
        "--kernels",
        "fp-add,fp-mul,fp-div,int-add,int-mul,int-div,branch,load-dep",
        "--scenarios",
        "--scenario-ms",
        "1",
        "--scenario-repetitions",
        "1",
    ]);
    assert!(
        err.contains("no mapping: ") && err.contains("scenarios only"),
        "{err}"
    );
    assert!(!out.contains("model scores"), "{out}");
    assert!(
        out.contains("scenarios skipped") || out.contains("geomean"),
        "{out}"
    );
}

#[test]
fn map_of_more_kernels_than_a_planned_machines_pus_without_threads_names_the_default() {
    assert_bad_input(
        &[
            "map",
            "--topology",
            "synthetic:core:1 pu:2",
            "--kernels",
            "fp-add,int-add,load-dep",
        ],
        &[
            "--threads defaults to the 2 PUs of the topology, but 3 kernels need at least 3 \
           threads (one each, at most one per PU): give fewer kernels or a topology with more PUs",
        ],
    );
}

#[test]
fn map_bad_input_is_one_line_and_exit_2() {
    const EIGHT: [&str; 4] = ["--kernels", SMT_KERNELS, "--threads", "8"];
    let cases: [(&[&str], [&str; 2], &[&str]); 8] = [
        (&EIGHT, ["--topology", "synthetic:pack:x"], &["pack:x"]),
        (&EIGHT, ["--topology", "laptop"], &["laptop"]),
        (&EIGHT, ["--algorithm", "best"], &["best", "round-robin"]),
        (&EIGHT, ["--profile", "/nonexistent/p.json"], &["p.json"]),
        (
            &EIGHT,
            ["--topology", "synthetic:core:2 pu:2"],
            &["8 threads", "4 PUs"],
        ),
        (&["--kernels", "fp-add"], ["--threads", "0"], &["--threads"]),
        (
            &["--kernels", "fp-add"],
            ["--scenarios", "--scenario-ms=1"],
            &["two kernels"],
        ),
        (
            &["--threads", "2"],
            ["--kernels", "fp-add,nope"],
            &["nope", "load-dep"],
        ),
    ];
    for (base, extra, needles) in cases {
        let mut args = vec!["map"];
        args.extend_from_slice(base);
        args.extend_from_slice(&extra);
        // The synthetic topology unless the case names another.
        if !extra.contains(&"--topology") {
            args.extend_from_slice(&["--topology", SYNTHETIC]);
        }
        assert_bad_input(&args, needles);
    }
}

#[test]
fn map_refuses_a_profile_without_class_counts_of_a_kernel_without_a_declared_mix() {
    let path = scratch("reduce-profile.json");
    let path_text = path.to_str().expect("UTF-8 path");
    cli_ok(&[
        "profile", "--kernel", "reduce", "--param", "n=4096", "-o", path_text,
    ]);
    let profile = Profile::read_json(&path).expect("profile JSON written");
    let args = [
        "map",
        "--topology",
        SYNTHETIC,
        "--kernels",
        "reduce,fp-add",
        "--profile",
        path_text,
    ];
    if profile.thread_mixes().is_ok() {
        eprintln!(
            "SKIPPED: refusal of a count-less profile: this machine counts instruction classes"
        );
        assert!(cli_ok(&args).0.contains("reduce: instruction mix measured"));
        return;
    }
    assert_bad_input(
        &args,
        &["reduce-profile.json", "declares no instruction mix"],
    );
}

#[test]
fn map_refuses_two_profiles_of_one_kernel_naming_both() {
    let first = kernel_profile("fp-add", "map-twice-first.json");
    let first_text = first.to_str().expect("UTF-8 path");
    let second = scratch("map-twice-second.json");
    std::fs::copy(&first, &second).expect("profile copied");
    let second_text = second.to_str().expect("UTF-8 path");
    // The second was ignored, while a note said it supplied fp-add's mix.
    assert_bad_input(
        &[
            "map",
            "--kernels",
            "fp-add",
            "--profile",
            first_text,
            "--profile",
            second_text,
        ],
        &[
            "map-twice-first.json and ",
            "map-twice-second.json are both of kernel fp-add",
        ],
    );
}
