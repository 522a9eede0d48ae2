//! Panics in bodies: propagated to the caller after the call's tasks stopped, no new iterations
//! after the panic is observed, other calls unaffected, pool reusable.

mod fixtures;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use fixtures::{Hits, all_strategies, pool};
use parbench_scheduler::{Strategy, TreeConfig, TreeTimespan};

fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn panic_is_propagated_and_pool_stays_usable() {
    let pool = pool(2);
    for strategy in all_strategies() {
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for_with(&strategy, 0..1000, |i| {
                if i == 777 {
                    panic!("boom at {i}");
                }
            });
        }));
        assert_eq!(message(result.unwrap_err()), "boom at 777", "{strategy:?}");
        let hits = Hits::new(&(0..1000));
        pool.parallel_for_with(&strategy, 0..1000, |i| hits.hit(i));
        hits.check(&format!("after panic, {strategy:?}"));
    }
}

struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        // SeqCst (here and in the test's counts and check): one total order over the mark and the
        // iterations' checks, so an iteration that reads the mark as set started after it.
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn no_iteration_starts_after_the_panic_is_observed() {
    let threads = 3;
    let pool = pool(threads);
    for strategy in all_strategies() {
        let panicked = AtomicBool::new(false);
        let started = AtomicUsize::new(0);
        let started_after = AtomicUsize::new(0);
        let n = 300;
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for_with(&strategy, 0..n, |i| {
                // SeqCst: one total order with the mark (see `SetOnDrop`).
                started.fetch_add(1, Ordering::SeqCst);
                if panicked.load(Ordering::SeqCst) {
                    started_after.fetch_add(1, Ordering::SeqCst);
                }
                if i == 0 {
                    // Dropped while unwinding, after the panic hook (which may take long to print
                    // a backtrace) and just before the scheduler catches the panic.
                    let _mark = SetOnDrop(&panicked);
                    panic!("first");
                }
                std::thread::sleep(Duration::from_millis(1));
            });
        }));
        assert!(result.is_err());
        // Each other thread can have passed the stop check just before the panic became
        // visible, so it may start one more iteration; nothing more.
        let after = started_after.into_inner();
        assert!(
            after < threads,
            "{strategy:?}: {after} iterations started after the panic"
        );
        assert!(
            started.into_inner() < n,
            "{strategy:?}: the whole loop ran despite the panic"
        );
    }
}

#[test]
fn panic_in_nested_call_reaches_the_outer_caller() {
    let pool = pool(2);
    for strategy in all_strategies() {
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for_with(&strategy, 0..8, |i| {
                pool.parallel_for_with(&strategy, 0..8, |j| {
                    if i == 5 && j == 3 {
                        panic!("inner");
                    }
                });
            });
        }));
        assert_eq!(message(result.unwrap_err()), "inner", "{strategy:?}");
    }
    let hits = Hits::new(&(0..64));
    pool.parallel_for(0..8, |i| pool.parallel_for(0..8, |j| hits.hit(i * 8 + j)));
    hits.check("nested after panic");
}

#[test]
fn reduce_scan_join_and_scope_propagate_panics() {
    let pool = pool(2);
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.parallel_reduce(
            0..100,
            || 0,
            |i| if i == 42 { panic!("reduce") } else { i },
            |a, b| a + b,
        )
    }));
    assert_eq!(message(r.unwrap_err()), "reduce");
    let mut data = vec![1u32; 1000];
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.scan_inclusive(
            &mut data,
            |a, b| if a > 500 { panic!("scan") } else { a + b },
        )
    }));
    assert_eq!(message(r.unwrap_err()), "scan");
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.join(|| 1, || -> i32 { panic!("join b") })
    }));
    assert_eq!(message(r.unwrap_err()), "join b");
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.join(|| -> i32 { panic!("join a") }, || 2)
    }));
    assert_eq!(message(r.unwrap_err()), "join a");
    let done = AtomicUsize::new(0);
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| {
            s.spawn(|_| panic!("scope task"));
            for _ in 0..10 {
                s.spawn(|_| {
                    done.fetch_add(1, Ordering::Relaxed);
                });
            }
        })
    }));
    assert_eq!(message(r.unwrap_err()), "scope task");
    assert_eq!(
        done.into_inner(),
        10,
        "the other scope tasks still ran before the panic was raised"
    );
    assert_eq!(pool.parallel_reduce(0..10, || 0, |i| i, |a, b| a + b), 45);
}

#[test]
fn a_panicking_call_does_not_disturb_a_concurrent_one() {
    let pool = pool(2);
    std::thread::scope(|s| {
        let p = &pool;
        let panicker = s.spawn(move || {
            for _ in 0..50 {
                let r = panic::catch_unwind(AssertUnwindSafe(|| {
                    p.parallel_for(0..500, |i| {
                        if i % 100 == 99 {
                            panic!("noise");
                        }
                    })
                }));
                assert!(r.is_err());
            }
        });
        let worker = s.spawn(move || {
            for round in 0..50 {
                let hits = Hits::new(&(0..2000));
                p.parallel_for(0..2000, |i| hits.hit(i));
                hits.check(&format!("concurrent round {round}"));
            }
        });
        panicker.join().unwrap();
        worker.join().unwrap();
    });
}

/// A panic stops a loop over (almost) the whole of `usize` with every strategy, including the
/// tree without a timespan: its pieces of more than `u32::MAX` iterations are halved into tasks,
/// and a piece taken after the call stopped used to be halved on without running anything, about
/// 2^31 tasks for `0..usize::MAX` (minutes), instead of ending.
#[test]
fn a_panic_stops_a_loop_over_usize_max_iterations_with_every_strategy() {
    const PATIENCE: Duration = Duration::from_secs(60);
    let mut strategies = all_strategies();
    strategies.push(Strategy::Tree(TreeConfig {
        timespan: TreeTimespan::Fixed(Duration::ZERO),
        ..TreeConfig::default()
    }));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let pool = pool(2);
        for strategy in strategies {
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                pool.parallel_for_with(&strategy, 0..usize::MAX, |i| {
                    assert!(i < 1000, "stop");
                });
            }));
            assert_eq!(message(result.unwrap_err()), "stop", "{strategy:?}");
            tx.send(strategy).unwrap();
        }
    });
    for _ in 0..all_strategies().len() + 1 {
        if let Err(e) = rx.recv_timeout(PATIENCE) {
            panic!("a loop did not stop after its panic ({e})");
        }
    }
}
