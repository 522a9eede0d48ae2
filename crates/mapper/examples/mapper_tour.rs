//! A tour of the mapper library, printing what `parbench-cli topology`, `map` and `profile`
//! print: `cargo run -p parbench-mapper --example mapper_tour`.

use std::time::Duration;

use parbench_mapper::perf::{ProfileRequest, profile_threads};
use parbench_mapper::{
    Algorithm, InstructionMix, Topology, Workload, declared_kernel_mixes, map_report,
    parse_topology_arg, run_scenarios, study_report,
};

fn spin_batch() -> u64 {
    let mut x = 1u64;
    for i in 0..100_000u64 {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    std::hint::black_box(x);
    100_000
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let here = Topology::this_system()?;
    println!("{here}");
    let planned = parse_topology_arg("synthetic:pack:1 core:4 pu:2")?;
    println!("{planned}");

    let kernels = declared_kernel_mixes(&["fp-add", "int-add", "fp-mul", "load-dep"])?;
    println!(
        "{}",
        map_report(&planned, &kernels, 8, Algorithm::InstructionAware, 100, 1)?
    );
    for comparison in study_report(&Topology::synthetic("pack:2 core:8 pu:2")?, 100, 1)? {
        println!("{comparison}");
    }

    let profile = profile_threads(&ProfileRequest::for_this_machine("spin", 2), |_| {
        for _ in 0..20 {
            spin_batch();
        }
    })?;
    print!("{profile}");
    let (mixes, source) = profile.mixes_or(InstructionMix::declared_for_kernel("int-add"));
    println!("{source}");
    if let Some(first) = mixes.first() {
        println!("thread 0 mix: {first}\n");
    }

    let spin = Workload {
        name: "spin".into(),
        batch: &spin_batch,
    };
    print!(
        "{}",
        run_scenarios(&here, &spin, &spin, Duration::from_millis(50))?
    );
    Ok(())
}
