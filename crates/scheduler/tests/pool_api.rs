//! The builder's options and errors, spawning, thread indices, join/scope, the global pool.

mod fixtures;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use fixtures::{Hits, pool};
use parbench_scheduler::{BuildError, Pinning, SpawnError, ThreadPoolBuilder, Timespan};

#[test]
fn zero_threads_chooses_the_count_as_rayon_does() {
    let chosen = ThreadPoolBuilder::new().num_threads(0).build().unwrap();
    let default = ThreadPoolBuilder::new().build().unwrap();
    assert!(chosen.num_threads() >= 1);
    assert_eq!(chosen.num_threads(), default.num_threads());
}

#[test]
#[cfg(target_os = "linux")]
fn more_threads_than_the_process_can_start_is_a_typed_error_not_an_abort() {
    let capacity = parbench_scheduler::thread_capacity(None).expect("limits readable on Linux");
    // pid_max is at most 2^22 on Linux, so this is refused wherever the tests run.
    let requested = 10_000_000;
    match ThreadPoolBuilder::new().num_threads(requested).build() {
        Err(BuildError::TooManyThreads {
            requested: r,
            available,
            limit,
        }) => {
            assert_eq!(r, requested);
            assert!(available < requested && available >= capacity.available() / 2);
            assert!(!limit.to_string().is_empty());
        }
        other => panic!("expected TooManyThreads, got {other:?}"),
    }
}

#[test]
fn pinning_to_a_missing_cpu_is_a_typed_error() {
    match ThreadPoolBuilder::new()
        .num_threads(1)
        .pin(Pinning::Cpus(vec![100_000]))
        .build()
    {
        Err(BuildError::NoSuchCpu { cpu, available }) => {
            assert_eq!(cpu, 100_000);
            assert!(!available.is_empty());
        }
        Err(BuildError::PinningUnsupported) => eprintln!("SKIPPED: CPU affinity unsupported here"),
        other => panic!("expected NoSuchCpu, got {other:?}"),
    }
    assert!(matches!(
        ThreadPoolBuilder::new()
            .num_threads(1)
            .pin(Pinning::Cpus(vec![]))
            .build(),
        Err(BuildError::EmptyCpuList)
    ));
}

#[test]
fn compact_and_explicit_pinning_place_workers_on_their_cpus() {
    let Some(cores) = core_affinity_available() else {
        eprintln!("SKIPPED: CPU affinity unsupported here");
        return;
    };
    let first = cores[0];
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .pin(Pinning::Cpus(vec![first]))
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    for index in 0..2 {
        let tx = tx.clone();
        pool.spawn_on(index, move || tx.send(allowed_cpus()).unwrap())
            .unwrap();
    }
    for _ in 0..2 {
        assert_eq!(rx.recv().unwrap(), vec![first]);
    }
    let compact = ThreadPoolBuilder::new()
        .num_threads(cores.len())
        .pin(Pinning::Compact)
        .build()
        .unwrap();
    assert_eq!(compact.num_threads(), cores.len());
}

fn core_affinity_available() -> Option<Vec<usize>> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("Cpus_allowed_list:"))?;
    parse_cpu_list(line.split(':').nth(1)?.trim())
}

fn allowed_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let line = text
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap_or("x: ");
    parse_cpu_list(line.split(':').nth(1).unwrap_or("").trim()).unwrap_or_default()
}

fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
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
fn thread_names_and_stack_size_are_applied() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("custom-{i}"))
        .stack_size(16 << 20)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    // Both tasks wait for each other, so they run on two different workers.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    for index in 0..2 {
        let tx = tx.clone();
        let barrier = barrier.clone();
        pool.spawn_on(index, move || {
            barrier.wait();
            // 4 MiB on the stack only fits in the requested 16 MiB, not in the 2 MiB default.
            let big = [1u8; 4 << 20];
            let sum: u64 = std::hint::black_box(&big).iter().map(|&b| b as u64).sum();
            tx.send((std::thread::current().name().map(str::to_owned), sum))
                .unwrap();
        })
        .unwrap();
    }
    let mut names: Vec<_> = (0..2).map(|_| rx.recv().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            (Some("custom-0".into()), 4 << 20),
            (Some("custom-1".into()), 4 << 20)
        ]
    );
}

#[test]
fn spawn_on_runs_on_that_worker_and_rejects_bad_indices() {
    let pool = pool(3);
    let (tx, rx) = mpsc::channel();
    for index in 0..3 {
        let tx = tx.clone();
        pool.spawn_on(index, move || {
            tx.send((index, parbench_scheduler::current_thread_index()))
                .unwrap()
        })
        .unwrap();
    }
    let mut seen: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
    seen.sort();
    // A task may be taken by another thread if its worker was asleep; it still runs exactly once
    // on some worker.
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert!(seen.iter().all(|s| s.1.is_some_and(|w| w < 3)));
    assert_eq!(
        pool.spawn_on(3, || ()),
        Err(SpawnError::NoSuchThread {
            index: 3,
            num_threads: 3
        })
    );
}

#[test]
fn current_thread_index_is_none_outside_and_distinct_inside() {
    let pool = pool(2);
    assert_eq!(pool.current_thread_index(), None);
    let seen = Mutex::new(HashSet::new());
    pool.parallel_for(0..10_000, |_| {
        seen.lock().unwrap().insert(pool.current_thread_index());
    });
    let seen = seen.into_inner().unwrap();
    assert!(seen.iter().all(|i| i.is_none_or(|i| i < 2)));
}

#[test]
fn join_and_scope_compute_recursive_results() {
    let pool = pool(2);
    fn count(pool: &parbench_scheduler::ThreadPool, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let (a, b) = pool.join(|| count(pool, depth - 1), || count(pool, depth - 1));
        a + b
    }
    assert_eq!(count(&pool, 14), 1 << 14);
    let hits = Hits::new(&(0..1000));
    pool.scope(|s| {
        for chunk in 0..10 {
            let hits = &hits;
            s.spawn(move |s| {
                for i in chunk * 100..chunk * 100 + 50 {
                    hits.hit(i);
                }
                s.spawn(move |_| {
                    for i in chunk * 100 + 50..chunk * 100 + 100 {
                        hits.hit(i);
                    }
                });
            });
        }
    });
    hits.check("scope");
}

#[test]
fn free_functions_use_the_pool_they_run_in() {
    let pool = pool(2);
    let inner_threads = AtomicUsize::new(0);
    pool.parallel_for(0..4, |_| {
        inner_threads.store(parbench_scheduler::current_num_threads(), Ordering::Relaxed);
        parbench_scheduler::parallel_for(0..4, |_| {
            assert!(parbench_scheduler::current_thread_index().is_none_or(|i| i < 2));
        });
    });
    assert_eq!(inner_threads.into_inner(), 2);
    let sum = parbench_scheduler::parallel_reduce(0..100, || 0, |i| i, |a, b| a + b);
    assert_eq!(sum, 4950);
}

#[test]
fn fixed_timespan_is_kept_and_calibration_is_clamped() {
    let fixed = ThreadPoolBuilder::new()
        .num_threads(2)
        .timespan(Timespan::Fixed(Duration::from_micros(123)))
        .build()
        .unwrap();
    assert_eq!(fixed.timespan(), Duration::from_micros(123));
    let calibrated = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (lo, hi) = parbench_scheduler::CALIBRATION_RANGE;
    let t = calibrated.timespan();
    // Tick conversions may round by a nanosecond.
    assert!(
        t + Duration::from_nanos(2) >= lo && t <= hi + Duration::from_nanos(2),
        "{t:?}"
    );
}

#[test]
fn spin_before_park_zero_still_completes_work() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .spin_before_park(Duration::ZERO)
        .build()
        .unwrap();
    for round in 0..200 {
        let hits = Hits::new(&(0..100));
        pool.parallel_for(0..100, |i| hits.hit(i));
        hits.check(&format!("round {round}"));
        if round % 50 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

#[test]
fn probe_and_tuner_report_plausible_shapes() {
    let pool = pool(2);
    for strategy in fixtures::all_strategies() {
        let times = parbench_scheduler::sched_time_probe(&pool, &strategy);
        assert!(
            !times.is_empty() && times.len() <= 3,
            "{strategy:?}: {times:?}"
        );
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }
    assert!(parbench_scheduler::tune_timespan(&pool, 50) > Duration::ZERO);
    assert_eq!(parbench_scheduler::tune_timespan(&pool, 0), Duration::ZERO);
}

#[test]
fn pool_and_strategy_have_the_promised_traits() {
    fn send_sync<T: Send + Sync>() {}
    fn clone_debug_default<T: Clone + std::fmt::Debug + Default>() {}
    send_sync::<parbench_scheduler::ThreadPool>();
    send_sync::<parbench_scheduler::Strategy>();
    clone_debug_default::<parbench_scheduler::Strategy>();
    clone_debug_default::<parbench_scheduler::TreeConfig>();
}

#[test]
fn a_one_thread_pool_runs_calls_inline_on_the_caller_and_keeps_nested_calls_in_the_pool() {
    let pool = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let caller = std::thread::current().id();
    for strategy in [
        parbench_scheduler::Strategy::default(),
        parbench_scheduler::Strategy::Static,
        parbench_scheduler::Strategy::Simple { grain: 1 },
    ] {
        let order = std::sync::Mutex::new(Vec::new());
        pool.parallel_for_with(&strategy, 0..100, |i| {
            assert_eq!(std::thread::current().id(), caller, "{strategy:?}");
            // A nested free-function call stays in this pool.
            assert_eq!(parbench_scheduler::current_num_threads(), 1);
            parbench_scheduler::parallel_for(0..3, |_| {});
            // A nested call of the pool's own runs inline too: one chunk, the whole range, on
            // this thread; an empty one never calls its body.
            let chunks = std::sync::Mutex::new(Vec::new());
            pool.parallel_for_chunks_with(&strategy, i..i + 7, |r| {
                assert_eq!(std::thread::current().id(), caller, "{strategy:?}");
                assert_eq!(parbench_scheduler::current_num_threads(), 1);
                chunks.lock().unwrap().push((r.start, r.end));
            });
            assert_eq!(chunks.into_inner().unwrap(), vec![(i, i + 7)]);
            pool.parallel_for_chunks_with(&strategy, i..i, |r| panic!("empty call ran {r:?}"));
            order.lock().unwrap().push(i);
        });
        // Inline, so in order: no hand-off, timespan or balancing task reordered anything.
        assert_eq!(order.into_inner().unwrap(), (0..100).collect::<Vec<_>>());
    }
    // A panic in a nested call's body propagates through the outer call.
    let nested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.parallel_for(0..4, |i| {
            pool.parallel_for(0..4, |j| assert!(i + j < 5, "nested {i} {j}"));
        })
    }));
    let message = nested.expect_err("the nested panic propagates");
    assert_eq!(
        message.downcast_ref::<String>().map(String::as_str),
        Some("nested 2 3")
    );
    let (a, b) = pool.join(
        || std::thread::current().id(),
        || std::thread::current().id(),
    );
    assert_eq!((a, b), (caller, caller));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.parallel_for(0..10, |i| {
            if i == 3 {
                panic!("three");
            }
        })
    }));
    assert!(result.is_err(), "the panic propagates");
}
