//! Bad input across the commands: every value past its documented bound, every missing or
//! malformed argument, ends in exactly one `error:` line and exit code 2 — never a panic, an
//! abort, or an exit 0 with nothing measured. Nothing here measures for long: each command fails
//! before it starts, or runs the smallest possible workload.

mod support;
#[path = "support/tiny_runs.rs"]
mod tiny_runs;

use std::fs;

use support::{assert_bad_input, cli_ok, scratch};
use tiny_runs::{MATMUL, TINY_LATENCY, one_run_sweep, tiny_sweep};

/// `u64::MAX`, the largest number the audit fed to every option.
const HUGE: &str = "18446744073709551615";

/// Loads of a latency test that would finish in milliseconds if it got that far.
const FEW_REQUESTS: [&str; 6] = ["--qps", "100", "--requests", "3", "--warmup", "1"];

#[test]
fn numbers_past_their_documented_bound_are_one_line_errors() {
    let sweep_cases = [
        ["--rounds", HUGE],
        ["--rounds", "4294967295"],
        ["--runs", HUGE],
        ["--runs", "4294967296"],
        ["--warmup", HUGE],
        ["--interleave", HUGE],
    ];
    for [option, value] in sweep_cases {
        // The sweep's own `--warmup 0` comes first; clap keeps the last of a repeated option only
        // when it is allowed, so give the bad value instead of it.
        let mut args = tiny_sweep(&MATMUL, &[option, value]);
        if option == "--warmup" {
            let own = args.iter().position(|arg| *arg == "--warmup").unwrap();
            args.drain(own..own + 2);
        }
        assert_bad_input(&args, &[option, "at most"]);
    }
    let latency = TINY_LATENCY;
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "locks",
            "--runs",
            "4294967296",
            "--threads",
            "1",
            "--iterations",
            "1",
        ],
        vec!["locks", "--runs", HUGE, "--threads", "1"],
        vec!["locks", "--runs", "1", "--warmup", HUGE, "--threads", "1"],
        vec!["locks", "--iterations", HUGE, "--threads", "1"],
        vec!["locks", "--critical-section", HUGE, "--threads", "1"],
        [&latency[..], &["--qps", "100", "--requests", HUGE]].concat(),
        [&latency[..], &["--qps", "100", "--requests", "4294967296"]].concat(),
        [&latency[..], &["--qps", "100", "--warmup", HUGE]].concat(),
        [&latency[..], &["--qps", "100", "--scale-with-qps", "1e30"]].concat(),
        [&latency[..], &["--qps", "1e308", "--scale-with-qps", "1"]].concat(),
        [&latency[..], &["--qps", "1e12", "--scale-with-qps", "1"]].concat(),
        [&latency[..], &["--qps", "100", "--max-duration", "1e300"]].concat(),
        [&latency[..], &["--qps", "100", "--runs-per-request", HUGE]].concat(),
        [&latency[..], &["--qps-range", "1:1000000000:0.001"]].concat(),
        vec!["reproduce", "pthreads", "--scale", "tiny", "--runs", HUGE],
        vec![
            "reproduce",
            "far-atomics",
            "--scale",
            "tiny",
            "--runs",
            HUGE,
        ],
        vec!["reproduce", "scheduler", "--scale", "tiny", "--runs", HUGE],
        vec!["map", "--kernels", "fp-add", "--random-samples", HUGE],
        vec!["corun", "--repeat", HUGE, "--", "true"],
    ];
    for args in cases {
        assert_bad_input(&args, &["at most"]);
    }
}

#[test]
fn request_counts_a_scale_factor_asks_for_are_bounded_per_load() {
    assert_bad_input(
        &[
            "latency",
            "--service",
            "matmul",
            "--qps",
            "1e8",
            "--scale-with-qps",
            "1",
        ],
        &["--scale-with-qps", "at most 1000000"],
    );
}

#[test]
fn runs_times_rounds_past_the_samples_bound_is_a_one_line_error() {
    let args = tiny_sweep(&MATMUL, &["--runs", "1000000", "--rounds", "11"]);
    assert_bad_input(&args, &["--runs 1000000 × --rounds 11", "samples per cell"]);
}

#[test]
fn synthetic_topologies_past_the_pu_bound_are_one_line_errors() {
    let (out, _) = cli_ok(&["topology", "--synthetic", "pack:2 core:4 pu:2"]);
    assert!(out.contains("16 PUs"), "{out}");
    let huge = "pack:100000 core:100000 pu:100000";
    assert_bad_input(&["topology", "--synthetic", huge], &["PUs", "at most 8192"]);
    let topology = format!("synthetic:{huge}");
    assert_bad_input(
        &["map", "--kernels", "fp-add", "--topology", &topology],
        &["at most 8192"],
    );
}

#[test]
fn thread_counts_the_process_cannot_start_are_refused_by_every_command() {
    // No Linux system hands out ten million threads (pid_max is at most 2^22).
    if parbench_scheduler::thread_capacity(None).is_none() {
        eprintln!("SKIPPED: the thread limits cannot be read here");
        return;
    }
    let many = "10000000";
    assert_bad_input(
        &["locks", "--threads", many, "--iterations", "1", "-q"],
        &["cannot run 10000000 threads", "can start about"],
    );
    assert_bad_input(
        &["profile", "--kernel", "fp-add", "--threads", many],
        &["cannot run 10000000 threads", "can start about"],
    );
}

#[test]
fn missing_arguments_are_named_on_the_one_line() {
    assert_bad_input(&["plot", "rep/a.json"], &["missing", "--output <FIG.svg>"]);
    assert_bad_input(
        &["latency", "--service", "matmul"],
        &["missing", "--qps <LIST>", "--qps-range"],
    );
    assert_bad_input(&["compare"], &["missing", "<RESULTS.json>"]);
    assert_bad_input(&["standings"], &["missing", "<RESULTS.json>"]);
    assert_bad_input(&["map"], &["missing", "--kernels <LIST>"]);
    assert_bad_input(&["profile"], &["missing", "--kernel <K>"]);
    assert_bad_input(&["profile", "--"], &["missing", "--kernel <K>"]);
    assert_bad_input(&["corun"], &["missing", "<COMMANDS>"]);
    assert_bad_input(&["reproduce"], &["missing", "<STUDY>"]);
}

#[test]
fn an_invalid_choice_lists_the_possible_values_on_the_one_line() {
    assert_bad_input(
        &["standings", "a.json", "--format", "xml"],
        &[
            "invalid value 'xml'",
            "possible values: text, markdown, csv, json",
        ],
    );
}

#[test]
fn latency_with_every_placement_skipped_is_an_error_not_an_empty_result() {
    let topology = parbench_mapper::Topology::this_system();
    if topology.as_ref().is_ok_and(|t| t.has_smt_siblings()) {
        eprintln!("SKIPPED: this machine has SMT siblings, so `smt` is measured, not skipped");
        return;
    }
    let args = [&TINY_LATENCY[..], &FEW_REQUESTS, &["--placement", "smt"]].concat();
    assert_bad_input(
        &args,
        &["no requested placement can run", "no SMT siblings"],
    );
}

#[test]
fn corun_where_no_command_can_start_is_a_one_line_error() {
    assert_bad_input(
        &["corun", "--", "/nonexistent/cmd"],
        &["no command could be started", "`/nonexistent/cmd`"],
    );
    assert_bad_input(
        &[
            "corun",
            "--",
            "/nonexistent/a",
            ":::",
            "/nonexistent/b",
            "x",
        ],
        &[
            "nothing was measured",
            "`/nonexistent/a`",
            "`/nonexistent/b x`",
        ],
    );
    assert_bad_input(
        &[
            "corun",
            "--compare",
            "--repeat",
            "1",
            "--",
            "/nonexistent/cmd",
        ],
        &["no command could be started"],
    );
}

#[test]
fn empty_input_paths_are_rejected_instead_of_generating_an_instance() {
    for flags in [
        &["--matrix", ""][..],
        &["--param", "matrix="],
        &["--input", ""],
        &["--param", "input="],
    ] {
        let kernel = if flags.iter().any(|f| f.contains("matrix")) {
            "spmv-balanced"
        } else {
            "qap"
        };
        let args = one_run_sweep(&["--kernels", kernel], flags);
        assert_bad_input(&args, &["empty path"]);
    }
}

#[test]
fn percentages_with_a_doubled_sign_are_rejected() {
    assert_bad_input(
        &["compare", "a.json", "b.json", "--threshold", "5%%"],
        &["--threshold", "'5%%'"],
    );
    assert_bad_input(
        &["standings", "a.json", "--within", "5%%"],
        &["--within", "'5%%'"],
    );
}

#[test]
fn a_matrix_file_with_a_non_finite_value_is_rejected_with_its_line() {
    let path = scratch("nan.mtx");
    fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 nan\n",
    )
    .expect("matrix written");
    let path = path.to_str().expect("UTF-8 path");
    let args = one_run_sweep(&["--kernels", "spmv-balanced"], &["--matrix", path]);
    assert_bad_input(&args, &[":4:", "not a finite number"]);
}

#[test]
fn reproduce_refuses_an_unwritable_directory_before_printing_the_plan() {
    let file = scratch("reproduce-not-a-directory");
    fs::write(&file, "").expect("file written");
    let dir = file.join("out");
    let dir = dir.to_str().expect("UTF-8 path");
    assert_bad_input(
        &["reproduce", "pthreads", "--scale", "tiny", "-o", dir],
        &["cannot write", "reproduce-not-a-directory"],
    );
}

#[test]
fn topology_xml_errors_are_human() {
    let path = scratch("empty-topology.xml");
    fs::write(&path, "<topology></topology>\n").expect("file written");
    let text = path.to_str().expect("UTF-8 path");
    assert_bad_input(&["topology", "--xml", text], &["not a topology XML?"]);
    let dir = path.parent().expect("scratch directory");
    assert_bad_input(
        &["topology", "--xml", dir.to_str().expect("UTF-8 path")],
        &["is a directory"],
    );
}

/// A finished one-cell sweep report (`kernel=matmul scheduler=seq threads=1`) at a fresh path.
fn sweep_report(name: &str) -> std::path::PathBuf {
    let path = scratch(name);
    let extra = ["--runs", "2", "--rounds", "1", "-o", text_of(&path)];
    cli_ok(&tiny_sweep(&MATMUL, &extra));
    path
}

/// The report at `from`, changed by `edit`, written to a fresh path `name`.
fn edited_report(
    from: &std::path::Path,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> std::path::PathBuf {
    let mut report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(from).expect("report read")).expect("JSON");
    edit(&mut report);
    let path = scratch(name);
    fs::write(&path, report.to_string()).expect("report written");
    path
}

fn text_of(path: &std::path::Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

#[test]
fn compare_of_reports_with_nothing_to_compare_is_a_one_line_error() {
    let sweep = sweep_report("compare-sweep.json");
    let locks = scratch("compare-locks.json");
    cli_ok(&[
        "locks",
        "--threads",
        "1",
        "--iterations",
        "100",
        "--runs",
        "1",
        "--warmup",
        "0",
        "-q",
        "-o",
        text_of(&locks),
    ]);
    assert_bad_input(
        &["compare", text_of(&sweep), text_of(&locks)],
        &[
            "compare-sweep.json is a sweep report",
            "compare-locks.json a locks report: compare sets reports of the same command",
        ],
    );
    let other = edited_report(&sweep, "compare-other-kernel.json", |report| {
        report["cells"][0]["labels"]["kernel"] = "reduce".into();
    });
    assert_bad_input(
        &["compare", text_of(&sweep), text_of(&other)],
        &[
            "compare-sweep.json and",
            "compare-other-kernel.json have no cell in common",
            "kernel=matmul scheduler=seq threads=1",
            "kernel=reduce scheduler=seq threads=1",
        ],
    );
    // A report that shares the cell still compares (exit 0).
    let copy = scratch("compare-sweep-copy.json");
    fs::copy(&sweep, &copy).expect("a copy of the report");
    cli_ok(&["compare", text_of(&sweep), text_of(&copy)]);
}

/// A file against itself compares nothing (every ratio 1): refused however it is named, as
/// `standings` refuses it.
#[test]
fn compare_refuses_a_file_given_twice() {
    let sweep = sweep_report("compare-twice.json");
    let dir = sweep.parent().expect("scratch directory");
    let same = dir.join(".").join("compare-twice.json");
    let linked = scratch("compare-twice-link.json");
    fs::hard_link(&sweep, &linked).expect("a hard link");
    for second in [&sweep, &same, &linked] {
        assert_bad_input(
            &["compare", text_of(&sweep), text_of(second)],
            &["compare-twice.json is given twice", "compares nothing"],
        );
    }
    let copy = scratch("compare-twice-copy.json");
    fs::copy(&sweep, &copy).expect("a copy of the report");
    assert_bad_input(
        &["compare", text_of(&sweep), text_of(&copy), text_of(&same)],
        &["is given twice"],
    );
}

#[test]
fn standings_refuses_a_file_given_twice() {
    let sweep = sweep_report("standings-twice.json");
    let dir = sweep.parent().expect("scratch directory");
    let same = dir.join(".").join("standings-twice.json");
    for second in [&sweep, &same] {
        assert_bad_input(
            &["standings", text_of(&sweep), text_of(second)],
            &["standings-twice.json is given twice", "counts once"],
        );
    }
}

#[test]
fn standings_refuses_an_other_listed_twice_or_an_empty_name() {
    let sweep = sweep_report("standings-versus.json");
    // Listed twice, an other is "the rest" in its own others' figure, which then reads 1.
    let cases = [
        ("tree,guided,tree", "' twice"),
        ("guided,guided", "--versus lists 'guided' twice"),
        ("", "has an empty scheduler name"),
        ("tree,,guided", "has an empty scheduler name"),
        ("tree, ", "has an empty scheduler name"),
    ];
    for (list, says) in cases {
        let args = [
            "standings",
            text_of(&sweep),
            "--scheduler",
            "seq",
            "--versus",
            list,
        ];
        assert_bad_input(&args, &[says]);
    }
}

#[test]
fn standings_refuses_a_report_that_is_not_a_sweep_report() {
    let sweep = sweep_report("standings-sweep.json");
    let locks = edited_report(&sweep, "standings-locks.json", |report| {
        report["command"] = "locks".into();
    });
    assert_bad_input(
        &["standings", text_of(&sweep), text_of(&locks)],
        &["standings-locks.json is a locks report, not a sweep report: standings ranks"],
    );
}

#[test]
fn reports_with_a_negative_sample_are_refused_with_file_and_cell() {
    let sweep = sweep_report("negative-base.json");
    let negative = edited_report(&sweep, "negative-sample.json", |report| {
        report["cells"][0]["samples_s"][1] = (-0.5).into();
    });
    let needles = [
        "negative-sample.json",
        "kernel=matmul scheduler=seq threads=1",
        "sample of -0.5 s",
    ];
    assert_bad_input(&["compare", text_of(&sweep), text_of(&negative)], &needles);
    assert_bad_input(&["standings", text_of(&negative)], &needles);
    let figure = scratch("negative.svg");
    assert_bad_input(
        &["plot", text_of(&negative), "-o", text_of(&figure)],
        &needles,
    );
    assert!(!figure.exists());
}

#[test]
fn reports_with_an_unreadable_round_count_are_refused_not_taken_as_finished() {
    let sweep = sweep_report("round-count-base.json");
    for (setting, value) in [("rounds.done", "x"), ("rounds", "-1"), ("rounds.done", "")] {
        let edited = edited_report(&sweep, "round-count-edited.json", |report| {
            report["metadata"]["settings"][setting] = value.into();
        });
        let needles = [
            "round-count-edited.json",
            &format!("setting `{setting}` is `{value}`, not a number of rounds"),
        ];
        assert_bad_input(&["compare", text_of(&sweep), text_of(&edited)], &needles);
        assert_bad_input(&["standings", text_of(&edited)], &needles);
    }
}

#[test]
fn sweep_refuses_a_generated_matrix_shape_given_with_a_matrix_file() {
    let path = scratch("shape-with-file.mtx");
    fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n",
    )
    .expect("matrix written");
    let args = one_run_sweep(
        &["--kernels", "spmv-balanced"],
        &["--matrix", text_of(&path)],
    );
    // Results a previous sweep left at -o survive the refusal.
    let output = scratch("shape-with-file.json");
    fs::write(&output, "earlier results").expect("file written");
    let mut with_shape = args.clone();
    with_shape.extend(["--width", "1024", "-o", text_of(&output)]);
    assert_bad_input(&with_shape, &["`width`", "--matrix", "replaces"]);
    assert_eq!(
        fs::read_to_string(&output).expect("file kept"),
        "earlier results"
    );
    let mut with_density = args.clone();
    with_density.extend(["--param", "density=0.5"]);
    assert_bad_input(&with_density, &["`density`", "--matrix"]);
    cli_ok(&args);
}

/// No such process: every check below happens before a process is looked up.
const NO_PID: &str = "2147483646";

#[test]
fn map_flags_of_the_other_mode_are_refused_naming_both() {
    assert_bad_input(
        &[
            "map",
            "--kernels",
            "fp-add",
            "--class",
            "fp",
            "--threads",
            "1",
        ],
        &["--class needs --pid"],
    );
    assert_bad_input(
        &["map", "--kernels", "fp-add", "--follow", "--threads", "1"],
        &["--follow needs --pid"],
    );
    assert_bad_input(
        &[
            "map",
            "--pid",
            NO_PID,
            "--topology",
            "synthetic:pack:1 core:2 pu:2",
        ],
        &["--topology synthetic:pack:1 core:2 pu:2 cannot be used with --pid"],
    );
    assert_bad_input(
        &["map", "--pid", NO_PID, "--threads", "1"],
        &["--threads 1 cannot be used with --pid"],
    );
}

#[test]
fn map_refuses_the_random_baseline_and_scenario_settings_where_nothing_uses_them() {
    assert_bad_input(
        &["map", "--pid", NO_PID, "--seed", "3"],
        &["--seed 3 cannot be used with --pid", "random placements"],
    );
    assert_bad_input(
        &["map", "--pid", NO_PID, "--random-samples", "10"],
        &["--random-samples 10 cannot be used with --pid"],
    );
    for flag in ["--scenario-ms", "--scenario-repetitions"] {
        assert_bad_input(
            &["map", "--pid", NO_PID, flag, "2"],
            &[
                &format!("{flag} 2 cannot be used with --pid"),
                "--scenarios",
            ],
        );
        assert_bad_input(
            &["map", "--kernels", "fp-add,int-add", flag, "2"],
            &[&format!("{flag} 2 needs --scenarios")],
        );
    }
    assert_bad_input(
        &[
            "map",
            "--kernels",
            "fp-add",
            "--seed",
            "3",
            "--random-samples",
            "0",
        ],
        &["--seed 3 needs random placements", "--random-samples is 0"],
    );
    // A planned mapping takes both, and the report says so.
    let (out, _) = cli_ok(&[
        "map",
        "--topology",
        "synthetic:pack:1 core:2 pu:1",
        "--kernels",
        "fp-add,int-add",
        "--seed",
        "4",
        "--random-samples",
        "3",
    ]);
    assert!(
        out.contains("mean of 3 seeded placements from seed 4"),
        "{out}"
    );
}

#[test]
fn map_pid_takes_one_class_per_process_or_none() {
    let two = format!("{NO_PID},{}", NO_PID.replace('6', "5"));
    assert_bad_input(
        &["map", "--pid", &two, "--class", "fp"],
        &["1 --class values for 2 --pid processes"],
    );
    assert_bad_input(
        &["map", "--pid", NO_PID, "--class", "fp,int"],
        &["2 --class values for 1 --pid processes"],
    );
    // The right count gets as far as looking the process up.
    assert_bad_input(
        &["map", "--pid", NO_PID, "--class", "fp"],
        &["no process 2147483646"],
    );
}

#[test]
fn profile_of_a_command_refuses_kernel_options() {
    assert_bad_input(
        &["profile", "--threads", "2", "--", "/bin/true"],
        &["--threads 2 is for profiling a kernel (--kernel)", "-- CMD"],
    );
    assert_bad_input(
        &["profile", "--param", "iters=3", "--", "/bin/true"],
        &["--param iters=3 is for profiling a kernel (--kernel)"],
    );
}

#[test]
fn corun_compare_options_without_compare_are_refused() {
    assert_bad_input(
        &["corun", "--repeat", "3", "--", "true"],
        &["--repeat 3 needs --compare"],
    );
    assert_bad_input(
        &["corun", "--algorithms", "os", "--", "true"],
        &["--algorithms os needs --compare"],
    );
    assert_bad_input(
        &["corun", "--seed", "3", "--", "true"],
        &["--seed 3 needs --compare (it seeds the shuffled run order"],
    );
    assert_bad_input(
        &["corun", "--compare", "--algorithm", "scatter", "--", "true"],
        &[
            "--algorithm scatter cannot be used with --compare",
            "--algorithms",
        ],
    );
    let (out, _) = cli_ok(&[
        "corun",
        "--compare",
        "--repeat",
        "1",
        "--algorithms",
        "os",
        "--seed",
        "3",
        "--",
        "true",
    ]);
    assert!(out.lines().any(|l| l.starts_with("os ")), "{out}");
}

#[test]
fn latency_plot_names_other_than_svg_or_png_are_refused_before_measuring() {
    let figure = scratch("latency-plot.jpg");
    assert_bad_input(
        &[
            &TINY_LATENCY[..],
            &FEW_REQUESTS,
            &["--plot", text_of(&figure)],
        ]
        .concat(),
        &["--plot", "latency-plot.jpg", ".svg or .png"],
    );
    assert!(!figure.exists());
}

#[test]
fn kernel_parameters_no_selected_kernel_takes_are_refused_naming_the_kernels_that_do() {
    let takers = ["round", "trapezoid", "qap", "floorplan", "nqueens"];
    let mut backend = one_run_sweep(&MATMUL, &["--backend", "lse"]);
    let mut needles = vec!["--backend lse: no selected kernel takes parameter `backend`"];
    needles.extend(takers);
    assert_bad_input(&backend, &needles);
    backend.truncate(backend.len() - 2);
    backend.extend(["--param", "backend=portable"]);
    assert_bad_input(
        &backend,
        &["--param backend=portable: no selected kernel takes parameter `backend`"],
    );
    assert_bad_input(
        &[
            &TINY_LATENCY[..],
            &["--qps", "100", "--backend", "portable"],
        ]
        .concat(),
        &[
            "--backend portable: kernel matmul takes no parameter `backend`",
            "nqueens",
        ],
    );
    assert_bad_input(
        &[
            "profile",
            "--kernel",
            "fp-add",
            "--param",
            "backend=portable",
        ],
        &["--param backend=portable: kernel fp-add takes no parameter `backend`"],
    );
    assert_bad_input(
        &tiny_sweep(&MATMUL, &["--lock", "tas"]),
        &["--lock tas", "trapezoid and round do"],
    );
    // round and trapezoid take a backend only for a spin lock (their default lock is std).
    let round = one_run_sweep(
        &["--kernels", "round", "--n", "2", "--param", "meals=10"],
        &[],
    );
    assert_bad_input(
        &[&round[..], &["--backend", "portable"]].concat(),
        &[
            "parameter `backend`",
            "only a spin lock (lock tas, ttas or ticket)",
        ],
    );
    assert_bad_input(
        &[
            "sweep",
            "--kernels",
            "trapezoid",
            "--method",
            "atomic",
            "--lock",
            "tas",
            "-q",
        ],
        &["parameter `lock`", "method atomic takes no lock"],
    );
    // A kernel that takes it gets it, and the report records it.
    let (out, _) = cli_ok(
        &[
            &round[..],
            &["--lock", "tas", "--backend", "portable", "--format", "json"],
        ]
        .concat(),
    );
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    assert_eq!(
        report["metadata"]["settings"]["round.backend"], "portable",
        "{out}"
    );
}

#[test]
fn a_lock_or_backend_given_is_refused_where_it_is_unused_even_with_the_default_value() {
    // Were they accepted, one short sweep would run (and the test fail quickly).
    // trapezoid's lock-less methods refuse a lock given as the default `std` just as `tas`: the
    // run would be recorded under a lock it never took.
    let trapezoid = ["--kernels", "trapezoid", "--method", "spin", "--n", "5"];
    for lock in [&["--lock", "std"][..], &["--param", "lock=std"]] {
        assert_bad_input(
            &one_run_sweep(&trapezoid, lock),
            &[
                "bad value `std` for parameter `lock`",
                "method spin takes no lock",
            ],
        );
    }
    // An empty backend is one given, not the default (the best available): it names none.
    for (kernel, lock) in [("round", "tas"), ("round", "std"), ("trapezoid", "tas")] {
        assert_bad_input(
            &one_run_sweep(
                &["--kernels", kernel, "--n", "5"],
                &["--lock", lock, "--backend", ""],
            ),
            &["parameter `backend`", "unknown backend ``"],
        );
    }
}

#[test]
fn an_output_that_is_a_file_the_command_reads_or_writes_besides_is_refused_and_left_as_it_was() {
    let matrix = scratch("input-and-output.mtx");
    let content = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n";
    fs::write(&matrix, content).expect("matrix written");
    let link = scratch("input-and-output-link.mtx");
    std::os::unix::fs::symlink(&matrix, &link).expect("link made");
    // Each round's process reads the matrix again after the file was rewritten with results.
    for (given, output) in [("--matrix", &matrix), ("--matrix", &link)] {
        let args = one_run_sweep(
            &["--kernels", "spmv-balanced"],
            &[
                given,
                text_of(&matrix),
                "--format",
                "csv",
                "-o",
                text_of(output),
            ],
        );
        assert_bad_input(&args, &["input-and-output", "the kernel's matrix file"]);
    }
    let as_param = format!("matrix={}", text_of(&matrix));
    let mut args = vec!["latency", "--service", "spmv", "--qps", "100"];
    args.extend([
        "--param",
        &as_param,
        "--format",
        "csv",
        "-o",
        text_of(&matrix),
    ]);
    assert_bad_input(&args, &["the kernel's matrix file"]);
    assert_eq!(fs::read_to_string(&matrix).expect("matrix kept"), content);
    // plot's figure over the results it reads, here through a hard link.
    let results = sweep_report("plot-over-its-results.json");
    let before = fs::read_to_string(&results).expect("report read");
    let alias = scratch("plot-over-its-results-alias.svg");
    fs::hard_link(&results, &alias).expect("hard link made");
    for output in [&results, &alias] {
        assert_bad_input(
            &["plot", text_of(&results), "-o", text_of(output)],
            &["the results file plot reads"],
        );
    }
    assert_eq!(fs::read_to_string(&results).expect("report kept"), before);
    // latency's figure over its results.
    let both = scratch("latency-results-and-figure.svg");
    let mut args = TINY_LATENCY.to_vec();
    args.extend(FEW_REQUESTS);
    args.extend([
        "--format",
        "csv",
        "-o",
        text_of(&both),
        "--plot",
        text_of(&both),
    ]);
    assert_bad_input(&args, &["is also the --output file"]);
    assert!(!both.exists());
}

#[test]
fn reproduce_list_with_a_study_or_its_settings_is_refused() {
    for extra in [
        &["pthreads"][..],
        &["--scale", "tiny"],
        &["--runs", "2"],
        &["-o", "somewhere"],
    ] {
        let mut args = vec!["reproduce", "--list"];
        args.extend(extra);
        assert_bad_input(&args, &["cannot be used with"]);
    }
    cli_ok(&["reproduce", "--list"]);
}

#[test]
fn a_malformed_thread_list_is_refused_naming_the_entry_at_fault() {
    for (list, says) in [
        ("1,,2", "'1,,2' has an empty entry"),
        (" ", "' ' has an empty entry"),
        ("-1", "'-1' is not a thread count"),
        ("1-", "'1-' is not a thread count"),
    ] {
        let threads = format!("--threads={list}");
        let args = [
            "sweep",
            "--kernels",
            "matmul",
            "--schedulers",
            "seq",
            &threads,
        ];
        assert_bad_input(&args, &[says]);
        assert_bad_input(&["locks", &threads], &[says]);
    }
}
