//! The search kernels against answers computed without them: the published
//! N-queens counts, brute force over all QAP permutations, the expected
//! area written in the bundled floorplan input, and the answers for the
//! default inputs (qap's generated instance, floorplan's bundled one), found
//! once by brute force and exhaustive search and kept as constants — the
//! kernels' own checks compare only with their sequential search.
//!
//! Runs go through the public kernel API on every executor, so a lost or
//! doubled task shows up as a wrong answer here, not only inside the kernel's
//! own validation.

use std::path::PathBuf;

use parbench_kernels::input::floorplan::FloorplanInput;
use parbench_kernels::input::qaplib::QapInstance;
use parbench_kernels::{Executor, ExecutorKind, Params, PinPolicy, RunReport, find_kernel};

/// OEIS A000170: solutions of the N-queens problem for N = 1 … 14.
const QUEENS: [u64; 14] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2_680, 14_200, 73_712, 365_596,
];

fn executors() -> Vec<Box<dyn Executor>> {
    ExecutorKind::ALL
        .iter()
        .map(|kind| {
            kind.build(2, PinPolicy::None)
                .unwrap_or_else(|error| panic!("building {kind}: {error}"))
        })
        .collect()
}

/// One run of `kernel` with `params` on `exec`; panics with the kernel's error.
fn run(kernel: &str, params: &Params, exec: &dyn Executor) -> RunReport {
    let kernel = find_kernel(kernel).unwrap();
    let mut prepared = kernel
        .prepare(params, exec.threads())
        .unwrap_or_else(|error| panic!("preparing {}: {error}", kernel.name()));
    prepared
        .run(exec)
        .unwrap_or_else(|error| panic!("{} on {}: {error}", kernel.name(), exec.kind()))
}

fn metric(report: &RunReport, name: &str) -> f64 {
    report
        .metrics
        .iter()
        .find(|metric| metric.name == name)
        .unwrap_or_else(|| panic!("no metric {name} in {report:?}"))
        .value
}

#[test]
fn nqueens_matches_the_published_counts_on_every_executor() {
    for exec in executors() {
        for n in 1..=12 {
            let params = Params::new().with("n", n.to_string()).with("cutoff", "2");
            let report = run("nqueens", &params, exec.as_ref());
            assert_eq!(
                metric(&report, "solutions"),
                QUEENS[n - 1] as f64,
                "N = {n} on {}",
                exec.kind()
            );
        }
    }
}

#[test]
fn nqueens_13_and_14_match_on_the_sequential_executor() {
    // Larger boards only sequentially (cutoff 0), to keep debug-mode tests fast.
    let exec = ExecutorKind::Seq.build(1, PinPolicy::None).unwrap();
    for n in [13, 14] {
        let params = Params::new().with("n", n.to_string()).with("cutoff", "0");
        let report = run("nqueens", &params, exec.as_ref());
        assert_eq!(
            metric(&report, "solutions"),
            QUEENS[n - 1] as f64,
            "N = {n}"
        );
    }
}

/// Minimum of `instance.cost` over every permutation.
fn brute_force(instance: &QapInstance) -> u64 {
    fn extend(instance: &QapInstance, prefix: &mut Vec<usize>, best: &mut u64) {
        let n = instance.size();
        if prefix.len() == n {
            *best = (*best).min(instance.cost(prefix));
            return;
        }
        for location in 0..n {
            if !prefix.contains(&location) {
                prefix.push(location);
                extend(instance, prefix, best);
                prefix.pop();
            }
        }
    }
    let mut best = u64::MAX;
    extend(instance, &mut Vec::new(), &mut best);
    best
}

#[test]
fn qap_matches_brute_force_on_generated_instances() {
    let executors = executors();
    for n in 1..=8 {
        for seed in [1, 2] {
            let optimum = brute_force(&QapInstance::generate(n, seed)) as f64;
            let params = Params::new()
                .with("n", n.to_string())
                .with("seed", seed.to_string())
                .with("cutoff", "2");
            // Every executor on the smaller sizes, two of them on the larger ones.
            let chosen = if n <= 6 {
                &executors[..]
            } else {
                &executors[..2]
            };
            for exec in chosen {
                let report = run("qap", &params, exec.as_ref());
                assert_eq!(
                    metric(&report, "optimum"),
                    optimum,
                    "n = {n}, seed {seed} on {}",
                    exec.kind()
                );
            }
        }
    }
}

#[test]
fn qap_bundled_instance_has_the_optimum_its_file_states_on_every_executor() {
    let path = bundled("qap-8.dat");
    let instance = QapInstance::parse(&path, &std::fs::read(&path).unwrap()).unwrap();
    let optimum = brute_force(&instance);
    assert_eq!(instance.expected_optimum(), Some(optimum));
    let params = Params::new()
        .with("input", path.display().to_string())
        .with("cutoff", "2");
    for exec in executors() {
        let report = run("qap", &params, exec.as_ref());
        assert_eq!(
            metric(&report, "optimum"),
            optimum as f64,
            "on {}",
            exec.kind()
        );
        assert_eq!(metric(&report, "matches-file-optimum"), 1.0);
        // The search made at least the one complete assignment it reports, facility by facility.
        let nodes = metric(&report, "nodes");
        assert!(
            nodes >= instance.size() as f64,
            "{nodes} nodes on {}",
            exec.kind()
        );
    }
}

#[test]
fn qap_reads_a_file_and_compares_its_optimum() {
    let dir = std::env::temp_dir().join(format!("parbench-qap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tiny.dat");
    // Identity costs 2·5 + 3·7 = 31, the swap 2·7 + 3·5 = 29.
    std::fs::write(&path, "2\n0 2\n3 0\n\n0 5\n7 0\n29\n").unwrap();
    let params = Params::new().with("input", path.display().to_string());
    let exec = ExecutorKind::Seq.build(1, PinPolicy::None).unwrap();
    let report = run("qap", &params, exec.as_ref());
    assert_eq!(metric(&report, "optimum"), 29.0);
    assert_eq!(metric(&report, "matches-file-optimum"), 1.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn bundled(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

#[test]
fn floorplan_finds_the_area_written_in_the_bundled_input_on_every_executor() {
    let path = bundled("floorplan-5.txt");
    let text = std::fs::read(&path).unwrap();
    let expected = FloorplanInput::parse(&path, &text)
        .unwrap()
        .expected_area()
        .unwrap();
    let cells = FloorplanInput::parse(&path, &text).unwrap().cell_count();
    let params = Params::new().with("input", path.display().to_string());
    for exec in executors() {
        let report = run("floorplan", &params, exec.as_ref());
        assert_eq!(
            metric(&report, "min-area"),
            expected as f64,
            "on {}",
            exec.kind()
        );
        // The search placed at least the cells of the floorplan it reports, one by one.
        let nodes = metric(&report, "nodes");
        assert!(nodes >= cells as f64, "{nodes} nodes on {}", exec.kind());
    }
}

/// The minimal area of the default input (`data/floorplan-10.txt`), found by an exhaustive search
/// without pruning (floorplan.rs's `exhaustive_search`: 21 571 231 placements, 11 s unoptimised),
/// not by the kernel's search, which the kernel's own check compares against.
const FLOORPLAN_DEFAULT_AREA: f64 = 64.0;

/// The optimum of the default instance (generated, n = 10, seed 1), found by brute force over all
/// 10! permutations (`brute_force`, 16 s unoptimised), not by the kernel's branch and bound.
const QAP_DEFAULT_OPTIMUM: f64 = 11_704.0;

#[test]
fn floorplan_default_input_has_the_exhaustively_searched_area_on_every_executor() {
    for exec in executors() {
        let report = run("floorplan", &Params::new(), exec.as_ref());
        assert_eq!(
            metric(&report, "min-area"),
            FLOORPLAN_DEFAULT_AREA,
            "on {}",
            exec.kind()
        );
    }
}

#[test]
fn qap_default_instance_has_the_brute_force_optimum_on_every_executor() {
    for exec in executors() {
        let report = run("qap", &Params::new(), exec.as_ref());
        assert_eq!(
            metric(&report, "optimum"),
            QAP_DEFAULT_OPTIMUM,
            "on {}",
            exec.kind()
        );
    }
}

#[test]
fn round_serves_every_meal_with_default_parameters() {
    let exec = ExecutorKind::Tree.build(2, PinPolicy::None).unwrap();
    let report = run("round", &Params::new(), exec.as_ref());
    assert_eq!(metric(&report, "meals"), 16.0 * 2000.0);
}

#[test]
fn malformed_input_files_are_input_errors_naming_the_line() {
    let dir = std::env::temp_dir().join(format!("parbench-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (kernel, text, line) in [
        ("qap", "2\n0 1\n1 zero\n", 3),
        ("floorplan", "1\n1\n2 2\n9 -1\n0\n", 4),
    ] {
        let path = dir.join(format!("{kernel}.txt"));
        std::fs::write(&path, text).unwrap();
        let params = Params::new().with("input", path.display().to_string());
        let error = find_kernel(kernel)
            .unwrap()
            .prepare(&params, 1)
            .unwrap_err()
            .to_string();
        let location = format!("{}:{line}: ", path.display());
        assert!(error.starts_with(&location), "{kernel}: {error}");
    }
    let missing = Params::new().with("input", dir.join("missing.dat").display().to_string());
    let error = find_kernel("qap")
        .unwrap()
        .prepare(&missing, 1)
        .unwrap_err();
    assert!(error.to_string().contains("missing.dat"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}
