//! Every strategy runs every index exactly once: sizes, offsets, repetition, concurrency, nesting,
//! and a randomized stress.

mod fixtures;

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fixtures::{Hits, SplitMix, all_strategies, pool};
use parbench_scheduler::Strategy;

fn sizes(threads: usize) -> Vec<Range<usize>> {
    vec![
        0..0,
        0..1,
        0..threads - 1,
        0..threads,
        0..1_000_000,
        17..17,
        1000..1001,
        12_345..12_345 + 3 * threads + 1,
        usize::MAX - 100..usize::MAX,
    ]
}

#[test]
fn each_index_runs_once_for_every_size_and_strategy() {
    for threads in [1, 2, 3] {
        let pool = pool(threads);
        for strategy in all_strategies() {
            for range in sizes(threads) {
                let hits = Hits::new(&range);
                pool.parallel_for_with(&strategy, range.clone(), |i| hits.hit(i));
                hits.check(&format!("{threads} threads, {strategy:?}, {range:?}"));
            }
        }
    }
}

#[test]
fn chunks_cover_the_range_exactly_once() {
    let pool = pool(2);
    for strategy in all_strategies() {
        for range in sizes(2) {
            let hits = Hits::new(&range);
            pool.parallel_for_chunks_with(&strategy, range.clone(), |chunk| {
                assert!(!chunk.is_empty(), "{strategy:?}: empty chunk");
                for i in chunk {
                    hits.hit(i);
                }
            });
            hits.check(&format!("chunks {strategy:?}, {range:?}"));
        }
    }
}

/// Grains, chunks and thresholds at the top of their range: none of the strategies' arithmetic
/// on them may overflow (with overflow checks, as in this debug build, the panic came from the
/// scheduler's own code while the call's shares were out, and the caller unwound out of a frame
/// the worker still used: it crashed or ran indices twice in the next call).
#[test]
fn extreme_grains_and_chunks_run_each_index_once() {
    let strategies = [
        Strategy::tree_fixed_grain(usize::MAX),
        Strategy::tree_fixed_grain(usize::MAX / 2 + 1),
        Strategy::Tree(parbench_scheduler::TreeConfig {
            small_per_thread: usize::MAX,
            ..Default::default()
        }),
        Strategy::Dynamic { chunk: usize::MAX },
        Strategy::Guided {
            min_chunk: usize::MAX,
        },
        Strategy::Simple { grain: usize::MAX },
    ];
    for threads in [2, 3] {
        let pool = pool(threads);
        for strategy in &strategies {
            for range in [0..100_000, usize::MAX - 1000..usize::MAX] {
                // Twice: a call left corrupted by the one before shows in the second.
                for call in 0..2 {
                    let hits = Hits::new(&range);
                    pool.parallel_for_with(strategy, range.clone(), |i| hits.hit(i));
                    hits.check(&format!(
                        "{threads} threads, {strategy:?}, {range:?}, call {call}"
                    ));
                }
            }
        }
    }
}

#[test]
fn repeated_calls_each_run_once() {
    let pool = pool(2);
    for strategy in all_strategies() {
        for round in 0..200 {
            let range = round..round + 37;
            let hits = Hits::new(&range);
            pool.parallel_for_with(&strategy, range, |i| hits.hit(i));
            hits.check(&format!("{strategy:?} round {round}"));
        }
    }
}

#[test]
fn concurrent_calls_from_four_outside_threads() {
    let pool = pool(2);
    std::thread::scope(|s| {
        for caller in 0..4 {
            let pool = &pool;
            s.spawn(move || {
                for (k, strategy) in all_strategies().into_iter().enumerate() {
                    for round in 0..20 {
                        let range = 0..(1000 + caller * 100 + k + round);
                        let hits = Hits::new(&range);
                        pool.parallel_for_with(&strategy, range, |i| hits.hit(i));
                        hits.check(&format!("caller {caller} {strategy:?} round {round}"));
                    }
                }
            });
        }
    });
}

/// More concurrent outside callers than guest slots: the extra callers block while a worker runs
/// their call, and every call still completes exactly once. Every other caller makes its calls at
/// the top of an `install`, so some of them are outermost calls made on a worker.
#[test]
fn more_outside_callers_than_guest_slots() {
    let pool = pool(2);
    let barrier = std::sync::Barrier::new(24);
    std::thread::scope(|s| {
        for caller in 0..24 {
            let (pool, barrier) = (&pool, &barrier);
            s.spawn(move || {
                barrier.wait();
                let rounds = || {
                    for round in 0..20 {
                        let range = 0..(500 + caller + round);
                        let hits = Hits::new(&range);
                        pool.parallel_for(range, |i| {
                            if i % 50 == 0 {
                                std::thread::sleep(Duration::from_micros(50));
                            }
                            hits.hit(i);
                        });
                        hits.check(&format!("caller {caller} round {round}"));
                    }
                };
                match caller % 2 {
                    0 => rounds(),
                    _ => pool.install(rounds),
                }
            });
        }
    });
}

#[test]
fn nesting_three_deep_runs_every_cell_once() {
    let pool = pool(3);
    for strategy in all_strategies() {
        let n = 12;
        let hits = Hits::new(&(0..n * n * n));
        pool.parallel_for_with(&strategy, 0..n, |i| {
            pool.parallel_for_with(&strategy, 0..n, |j| {
                pool.parallel_for_with(&strategy, 0..n, |k| hits.hit((i * n + j) * n + k));
            });
        });
        hits.check(&format!("nested {strategy:?}"));
    }
}

#[test]
fn nested_calls_use_no_extra_threads() {
    let pool = pool(2);
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    pool.parallel_for(0..8, |_| {
        pool.parallel_for(0..8, |_| {
            seen.lock().unwrap().insert(std::thread::current().id());
        });
    });
    // The two workers and the calling thread, nothing else.
    assert!(seen.into_inner().unwrap().len() <= 3);
}

fn random_delay(seed: usize) {
    if seed % 97 == 0 {
        std::thread::sleep(Duration::from_micros(20));
    } else if seed % 13 == 0 {
        for _ in 0..(seed % 500) {
            std::hint::spin_loop();
        }
    }
}

#[test]
fn stress_randomized_rounds_each_index_once() {
    let pool = pool(3);
    let strategies = all_strategies();
    let rounds = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for caller in 0..2u64 {
            let (pool, strategies, rounds) = (&pool, &strategies, &rounds);
            s.spawn(move || {
                let mut rng = SplitMix(caller * 7919 + 1);
                for round in 0..500 {
                    let strategy: &Strategy = &strategies[rng.below(strategies.len())];
                    let start = rng.below(1000);
                    let len = match rng.below(4) {
                        0 => rng.below(4),
                        1 => rng.below(64),
                        2 => rng.below(2000),
                        _ => rng.below(20_000),
                    };
                    let nested = rng.below(3);
                    let inner = 1 + rng.below(20);
                    let range = start..start + len;
                    let hits = Hits::new(&(0..len * inner));
                    pool.parallel_for_with(strategy, range.clone(), |i| {
                        random_delay(i);
                        if nested == 0 {
                            for j in 0..inner {
                                hits.hit((i - start) * inner + j);
                            }
                        } else {
                            pool.parallel_for_with(strategy, 0..inner, |j| {
                                random_delay(j + i);
                                hits.hit((i - start) * inner + j);
                            });
                        }
                    });
                    hits.check(&format!(
                        "caller {caller} round {round}: {strategy:?} {range:?} nested {nested}"
                    ));
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(rounds.into_inner(), 1000);
}

#[test]
fn reduce_and_scan_match_sequential_for_every_strategy() {
    let pool = pool(3);
    for strategy in all_strategies() {
        for n in [0usize, 1, 2, 5, 1000, 100_003] {
            let sum =
                pool.parallel_reduce_with(&strategy, 0..n, || 0u64, |i| i as u64 * 3, |a, b| a + b);
            assert_eq!(
                sum,
                (0..n as u64).map(|i| i * 3).sum::<u64>(),
                "{strategy:?} {n}"
            );
            let text = pool.parallel_reduce_with(
                &strategy,
                0..n.min(300),
                String::new,
                |i| format!("{i},"),
                |a, b| a + &b,
            );
            let expected: String = (0..n.min(300)).map(|i| format!("{i},")).collect();
            assert_eq!(text, expected, "{strategy:?} {n}: reduce must keep order");
            let mut data: Vec<u64> = (0..n as u64).map(|i| i % 7).collect();
            let mut expected = data.clone();
            for i in 1..expected.len() {
                expected[i] += expected[i - 1];
            }
            pool.scan_inclusive_with(&strategy, &mut data, |a, b| a + b);
            assert_eq!(data, expected, "{strategy:?} {n}");
        }
    }
}

/// A call nested so deep that it runs on its thread alone (more than 16 latch waits on the
/// stack) still hands a body over chunks at most `chunk` iterations per call under
/// `Dynamic { chunk }`, as `parallel_for_chunks` promises for every pool of more than one
/// thread; it passed the whole range at once.
#[test]
fn a_deeply_nested_dynamic_call_keeps_its_chunk_bound() {
    let pool = pool(2);
    // Worker 1 spins in a task until the end, so the outside caller takes every share handed to
    // it back while it waits for its call (worker 0 stands aside for the caller): each level of
    // the recursion below runs inside the wait of the level above, one latch wait deeper.
    let release = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    pool.spawn_on(1, {
        let release = std::sync::Arc::clone(&release);
        move || {
            started_tx.send(()).unwrap();
            // Relaxed: only holds the worker back; nothing is published through it.
            while !release.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
        }
    })
    .unwrap();
    started_rx.recv().unwrap();
    let largest = AtomicUsize::new(0);
    let covered = AtomicUsize::new(0);
    fn descend(
        pool: &parbench_scheduler::ThreadPool,
        level: usize,
        largest: &AtomicUsize,
        covered: &AtomicUsize,
    ) {
        if level == 24 {
            pool.parallel_for_chunks_with(&Strategy::Dynamic { chunk: 3 }, 0..100, |chunk| {
                // Relaxed: read after the calls returned.
                largest.fetch_max(chunk.len(), Ordering::Relaxed);
                covered.fetch_add(chunk.len(), Ordering::Relaxed);
            });
            return;
        }
        pool.parallel_for_with(&Strategy::Static, 0..2, |i| {
            if i == 1 {
                descend(pool, level + 1, largest, covered);
            }
        });
    }
    descend(&pool, 0, &largest, &covered);
    // Relaxed: see above.
    release.store(true, Ordering::Relaxed);
    assert_eq!(covered.into_inner(), 100);
    assert!(largest.into_inner() <= 3, "a chunk above the bound of 3");
}
