//! The inputs `parbench-cli topology|profile|map` pass straight through to this crate: bad ones
//! must come back as typed errors whose message is one line (the CLI prints it and exits 2).

use parbench_mapper::perf::Profile;
use parbench_mapper::{Algorithm, Topology, declared_kernel_mixes, map_report, parse_topology_arg};

fn assert_one_line(message: &str) {
    assert!(!message.is_empty());
    assert!(!message.contains('\n'), "multi-line error: {message:?}");
}

#[test]
fn malformed_synthetic_topology_is_a_one_line_error() {
    let error = parse_topology_arg("synthetic:pack:2 core:banana").unwrap_err();
    assert_one_line(&error.to_string());
    assert!(error.to_string().contains("pack:2 core:banana"));
}

#[test]
fn unknown_topology_form_lists_the_valid_forms() {
    let message = parse_topology_arg("my-laptop").unwrap_err().to_string();
    assert_one_line(&message);
    assert!(message.contains("synthetic:DESCRIPTION") && message.contains("xml:FILE"));
}

#[test]
fn unknown_algorithm_lists_the_valid_names() {
    let message = "fastest".parse::<Algorithm>().unwrap_err().to_string();
    assert_one_line(&message);
    assert!(message.contains("instruction-aware, algorithm1, round-robin, os-index, scatter, os"));
}

#[test]
fn unknown_kernel_lists_the_valid_names() {
    let message = declared_kernel_mixes(&["fp-add", "sqrt"])
        .unwrap_err()
        .to_string();
    assert_one_line(&message);
    assert!(message.contains("\"sqrt\"") && message.contains("int-div"));
}

#[test]
fn missing_profile_file_is_a_one_line_error() {
    let message = Profile::read_json("/nonexistent/parbench/profile.json")
        .unwrap_err()
        .to_string();
    assert_one_line(&message);
    assert!(message.contains("/nonexistent/parbench/profile.json"));
}

#[test]
fn zero_and_too_many_threads_are_one_line_errors() {
    let topology = Topology::synthetic("pack:1 core:4 pu:2").unwrap();
    let kernels = declared_kernel_mixes(&["fp-add", "int-add"]).unwrap();
    for threads in [0, 9] {
        let message = map_report(&topology, &kernels, threads, Algorithm::RoundRobin, 0, 0)
            .unwrap_err()
            .to_string();
        assert_one_line(&message);
    }
}

#[test]
fn mapping_feeds_the_scheduler_cpu_list() {
    let topology = parse_topology_arg("synthetic:pack:2 core:2 pu:2").unwrap();
    let kernels = declared_kernel_mixes(&["fp-add", "load-dep"]).unwrap();
    let report = map_report(&topology, &kernels, 4, Algorithm::Scatter, 0, 0).unwrap();
    assert_eq!(report.cpu_list, Some(vec![0, 4, 2, 6]));
    let unpinned = map_report(&topology, &kernels, 4, Algorithm::Os, 0, 0).unwrap();
    assert_eq!(unpinned.cpu_list, None);
}
