//! Cross-crate: a mapping computed by parbench-mapper on this machine's topology applies to a
//! parbench-scheduler pool through `Pinning::Cpus`, and each worker then runs on its mapped CPU.

use parbench::mapper::{Algorithm, InstructionMix, Topology};
use parbench::scheduler::{Pinning, ThreadPoolBuilder};

/// The CPUs the calling thread may run on, from /proc (None where that is unavailable).
fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[test]
fn instruction_aware_mapping_pins_pool_workers() {
    let Some(allowed) = allowed_cpus() else {
        eprintln!("SKIPPED: /proc/thread-self/status is not readable; cannot check affinity");
        return;
    };
    let topology = Topology::this_system().expect("hwloc reads this machine's topology");
    // The topology has only the CPUs this process may use (under `taskset -c 0`, CPU 0), so
    // every worker's CPU is one the pool accepts.
    assert_eq!(topology.cpus(), allowed, "{topology}");
    let kernels = ["fp-add", "int-add", "load-dep", "branch"];
    let threads = topology.pus().len().min(kernels.len());
    let mixes: Vec<InstructionMix> = kernels[..threads]
        .iter()
        .map(|k| InstructionMix::declared_for_kernel(k).expect("declared mix"))
        .collect();
    for algorithm in [
        Algorithm::InstructionAware,
        Algorithm::RoundRobin,
        Algorithm::Scatter,
    ] {
        let mapping = algorithm.map(&topology, &mixes).expect("a mapping");
        let cpus = mapping.cpu_list(&topology).expect("a pinned mapping");
        assert_eq!(cpus.len(), threads);
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads)
            .pin(Pinning::Cpus(cpus.clone()))
            .build()
            .expect("a pool pinned to the mapped CPUs");
        let (tx, rx) = std::sync::mpsc::channel();
        for index in 0..threads {
            let tx = tx.clone();
            // A task handed to a worker that has not woken up may be run by another worker, so
            // each task reports which worker ran it.
            pool.spawn_on(index, move || {
                let worker = parbench::scheduler::current_thread_index();
                tx.send((worker, allowed_cpus())).unwrap();
            })
            .unwrap();
        }
        for _ in 0..threads {
            let (worker, allowed) = rx.recv().unwrap();
            let worker = worker.expect("spawned tasks run on workers");
            assert_eq!(
                allowed,
                Some(vec![cpus[worker]]),
                "{algorithm}: worker {worker}"
            );
        }
    }
}
