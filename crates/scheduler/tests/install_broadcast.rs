//! `install`, `broadcast`, `current_num_threads`, the builder's start/exit/panic handlers, and
//! detached `spawn`s from outside callers inside a call (they must reach the pool).

mod fixtures;

use std::collections::BTreeSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use fixtures::{all_strategies, pool};
use parbench_scheduler::ThreadPoolBuilder;

const PATIENCE: Duration = Duration::from_secs(30);

#[test]
fn install_makes_free_functions_use_the_pool() {
    let pool = pool(3);
    let (threads, broadcast_len, workers) = pool.install(|| {
        let workers = Mutex::new(BTreeSet::new());
        let mut v = vec![0u8; 100_000];
        parbench_scheduler::for_each_mut(&mut v, |_| {
            if let Some(i) = parbench_scheduler::current_thread_index() {
                workers.lock().unwrap().insert(i);
            }
        });
        (
            parbench_scheduler::current_num_threads(),
            parbench_scheduler::broadcast(|_| ()).len(),
            workers.into_inner().unwrap(),
        )
    });
    assert_eq!((threads, broadcast_len), (3, 3));
    assert!(workers.iter().all(|&i| i < 3), "{workers:?}");
    assert_eq!(pool.current_num_threads(), 3);
}

#[test]
fn install_returns_the_value_and_propagates_panics() {
    let pool = pool(2);
    assert_eq!(pool.install(|| 6 * 7), 42);
    let result = panic::catch_unwind(AssertUnwindSafe(|| pool.install(|| panic!("inside"))));
    assert!(result.is_err());
    // Nested installs of two pools: the inner one wins inside, the outer one after.
    let other = pool_of(4);
    let inner = pool.install(|| {
        let inner = other.install(parbench_scheduler::current_num_threads);
        (inner, parbench_scheduler::current_num_threads())
    });
    assert_eq!(inner, (4, 2));
}

fn pool_of(threads: usize) -> parbench_scheduler::ThreadPool {
    pool(threads)
}

#[test]
fn broadcast_runs_once_on_every_worker_in_order() {
    for threads in [1, 2, 3, 5] {
        let pool = pool(threads);
        let calls = AtomicUsize::new(0);
        let seen = pool.broadcast(|ctx| {
            calls.fetch_add(1, Ordering::Relaxed);
            assert_eq!(ctx.num_threads(), threads);
            (ctx.index(), parbench_scheduler::current_thread_index())
        });
        let expected: Vec<_> = (0..threads).map(|i| (i, Some(i))).collect();
        assert_eq!(seen, expected);
        assert_eq!(calls.into_inner(), threads);
    }
}

#[test]
fn broadcast_from_inside_the_pool_and_from_every_strategy_body() {
    let pool = pool(3);
    for strategy in all_strategies() {
        let total = AtomicUsize::new(0);
        pool.parallel_for_with(&strategy, 0..4, |_| {
            let ran = pool.broadcast(|ctx| ctx.index());
            assert_eq!(ran, [0, 1, 2]);
            total.fetch_add(ran.len(), Ordering::Relaxed);
        });
        assert_eq!(total.into_inner(), 12, "{strategy:?}");
    }
}

#[test]
fn broadcast_panic_propagates_after_every_worker_ran() {
    let pool = pool(3);
    let calls = AtomicUsize::new(0);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.broadcast(|ctx| {
            calls.fetch_add(1, Ordering::Relaxed);
            assert!(ctx.index() != 1, "worker one");
        })
    }));
    assert!(result.is_err());
    assert_eq!(calls.into_inner(), 3);
    assert_eq!(pool.broadcast(|ctx| ctx.index()), [0, 1, 2]);
}

#[test]
fn start_and_exit_handlers_run_once_per_worker() {
    let started = Arc::new(Mutex::new(Vec::new()));
    let exited = Arc::new(Mutex::new(Vec::new()));
    let (s, e) = (Arc::clone(&started), Arc::clone(&exited));
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .start_handler(move |i| s.lock().unwrap().push(i))
        .exit_handler(move |i| e.lock().unwrap().push(i))
        .build()
        .unwrap();
    let mut after_build = started.lock().unwrap().clone();
    after_build.sort_unstable();
    assert_eq!(after_build, [0, 1, 2]);
    assert!(exited.lock().unwrap().is_empty());
    drop(pool);
    let mut after_drop = exited.lock().unwrap().clone();
    after_drop.sort_unstable();
    assert_eq!(after_drop, [0, 1, 2]);
}

#[test]
fn spawn_and_spawn_on_panics_go_to_the_panic_handler() {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .start_handler(|i| assert!(i != 1, "start of one"))
        .panic_handler(move |payload| {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tx.lock().unwrap().send(message).unwrap();
        })
        .build()
        .unwrap();
    pool.spawn(|| panic!("spawned"));
    pool.spawn_on(1, || panic!("spawned on one")).unwrap();
    let mut got: Vec<String> = (0..3).map(|_| rx.recv_timeout(PATIENCE).unwrap()).collect();
    got.sort();
    assert_eq!(got, ["spawned", "spawned on one", "start of one"]);
    // Workers go on.
    assert_eq!(pool.broadcast(|ctx| ctx.index()), [0, 1]);
}

#[test]
fn without_a_panic_handler_a_spawn_panic_is_dropped_and_the_pool_goes_on() {
    let pool = pool(2);
    for _ in 0..4 {
        pool.spawn(|| panic!("nobody listens"));
    }
    let (tx, rx) = mpsc::channel();
    pool.spawn(move || tx.send(1).unwrap());
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), 1);
    assert_eq!(pool.broadcast(|ctx| ctx.index()), [0, 1]);
}

#[test]
fn spawn_from_an_outside_caller_inside_a_call_reaches_the_pool() {
    for strategy in all_strategies() {
        let pool = pool(2);
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        // The calling thread runs part of the loop on a guest deque; a detached task it spawns
        // there must still run after the call has returned.
        pool.parallel_for_with(&strategy, 0..64, |i| {
            let tx = tx.lock().unwrap().clone();
            pool.spawn(move || tx.send(i).unwrap());
        });
        let mut got: Vec<usize> = (0..64)
            .map(|_| rx.recv_timeout(PATIENCE).unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..64).collect::<Vec<_>>(), "{strategy:?}");
    }
    let pool = pool(2);
    let (tx, rx) = mpsc::channel();
    pool.install(|| parbench_scheduler::spawn(move || tx.send(7).unwrap()));
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), 7);
}

/// Runs `scenario` on a thread of its own and returns its result, failing the test if it has
/// not finished within [`PATIENCE`] (a hang fails instead of blocking the test run).
fn within_patience<R: Send + 'static>(scenario: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(scenario());
    });
    rx.recv_timeout(PATIENCE)
        .expect("the scenario hung (or panicked)")
}

/// Outside threads parked inside `install` of a pool, each holding one of its guest slots (so
/// that as many of its workers stand aside) until [`release`](Self::release).
struct GuestSlotHolders {
    release: Vec<mpsc::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl GuestSlotHolders {
    fn hold(pool: &Arc<parbench_scheduler::ThreadPool>, count: usize) -> Self {
        let parked = Arc::new(AtomicUsize::new(0));
        let (release, threads) = (0..count)
            .map(|_| {
                let (tx, rx) = mpsc::channel::<()>();
                let (pool, parked) = (Arc::clone(pool), Arc::clone(&parked));
                let thread = std::thread::spawn(move || {
                    pool.install(move || {
                        // Relaxed: a count the test polls; nothing is published through it.
                        parked.fetch_add(1, Ordering::Relaxed);
                        // Returns once the sender is dropped.
                        let _ = rx.recv();
                    })
                });
                (tx, thread)
            })
            .unzip();
        // Relaxed: see above.
        while parked.load(Ordering::Relaxed) < count {
            std::thread::yield_now();
        }
        GuestSlotHolders { release, threads }
    }

    fn release(self) {
        drop(self.release);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

/// A worker of pool A that waits inside pool B — in `b.install`, as a guest of B — still runs
/// the broadcast jobs of A, which no other thread may run: a broadcast on A made meanwhile by B's
/// workers (on whose work it waits) or by itself through B used to wait for it forever.
#[test]
fn a_worker_waiting_in_another_pool_still_runs_its_own_pools_broadcasts() {
    let (a, b) = (Arc::new(pool(2)), Arc::new(pool(3)));
    let expected = vec![vec![0, 1]; 3];
    // A's broadcast made by B's workers while every worker of A waits in B.
    let (pools, want) = ((Arc::clone(&a), Arc::clone(&b)), expected.clone());
    let by_b = within_patience(move || {
        let (a, b) = pools;
        a.broadcast(|_| b.install(|| b.broadcast(|_| a.broadcast(|ctx| ctx.index()))))
    });
    assert_eq!(by_b, [want.clone(), want]);
    // A's broadcast made by A's own workers through B (they enter A as guests there).
    let pools = (Arc::clone(&a), Arc::clone(&b));
    let through_b = within_patience(move || {
        let (a, b) = pools;
        a.broadcast(|_| b.install(|| a.broadcast(|ctx| ctx.index())))
    });
    assert_eq!(through_b, [[0, 1], [0, 1]]);
    // A's worker blocked in `in_worker_blocking`: every guest slot of B is held by an outside
    // thread parked in `b.install`, so A's workers queue their `install` to B's workers and
    // block until it has run there.
    let holders = GuestSlotHolders::hold(&b, 16);
    let pools = (Arc::clone(&a), Arc::clone(&b));
    let blocked = within_patience(move || {
        let (a, b) = pools;
        a.broadcast(|_| b.install(|| b.broadcast(|_| a.broadcast(|ctx| ctx.index()))))
    });
    holders.release();
    assert_eq!(blocked, [expected.clone(), expected]);
}

/// A worker of pool B that waits inside pool A still runs the shares handed to it in B: while
/// outside callers stand in for B's workers 0 and 1, those do not steal, so worker 2 is the
/// only one that may run the share a loop of worker 1 hands it. Before, that loop waited for
/// worker 2, which waited in A (for a broadcast that waits for the loop here).
#[test]
fn a_worker_waiting_in_another_pool_still_runs_the_shares_handed_to_it() {
    let (a, b) = (Arc::new(pool(2)), Arc::new(pool(3)));
    // Workers 0 and 1 of B stand aside from here on.
    let holders = GuestSlotHolders::hold(&b, 2);
    let (entered_tx, entered_rx) = mpsc::channel();
    let (finish_tx, finish_rx) = mpsc::channel::<()>();
    let finish_rx = Mutex::new(finish_rx);
    // Worker 2 of B goes into A and waits there for a broadcast whose job on A's worker 1 waits
    // for the end of the test.
    b.spawn_on(2, {
        let a = Arc::clone(&a);
        move || {
            a.broadcast(|ctx| match ctx.index() {
                0 => entered_tx.send(()).unwrap(),
                _ => {
                    let _ = finish_rx.lock().unwrap().recv_timeout(2 * PATIENCE);
                }
            });
        }
    })
    .unwrap();
    entered_rx.recv_timeout(PATIENCE).unwrap();
    // Worker 1 of B makes a loop call; its other participant is worker 2.
    let (done_tx, done_rx) = mpsc::channel();
    let ran = Arc::new(AtomicUsize::new(0));
    b.spawn_on(1, {
        let (b, ran) = (Arc::clone(&b), Arc::clone(&ran));
        move || {
            b.parallel_for_with(&parbench_scheduler::Strategy::Static, 0..2, |_| {
                // Relaxed: read after the call returned.
                ran.fetch_add(1, Ordering::Relaxed);
            });
            done_tx.send(()).unwrap();
        }
    })
    .unwrap();
    let done = done_rx.recv_timeout(PATIENCE);
    // Lets everything end, also when the loop hung.
    finish_tx.send(()).unwrap();
    holders.release();
    assert!(
        done.is_ok(),
        "worker 1's loop waited for the share of worker 2, away in pool A"
    );
    // Relaxed: the loop returned.
    assert_eq!(ran.load(Ordering::Relaxed), 2);
}

/// Every worker of pool A (3 threads) waits inside pool B (2 threads) — in a broadcast on B made
/// inside `b.install` — while B's workers, in the jobs of those broadcasts, wait for a task
/// spawned into A from outside (by them), which only A's workers may run. With
/// `hold_b_slots`, outside threads hold every guest slot of B, so A's workers queue their
/// `install` to B's workers and block in it (`in_worker_blocking`); else they wait as guests of
/// B. Before, a worker waiting away from its pool ran only the broadcast jobs and shares handed
/// to it there, never the injector, and the spawn woke only sleeping workers: it hung.
fn every_worker_waits_in_another_pool_for_a_spawn_into_its_own(hold_b_slots: bool) {
    let (a, b) = (Arc::new(pool(3)), Arc::new(pool(2)));
    let holders = hold_b_slots.then(|| GuestSlotHolders::hold(&b, 16));
    let entered = Arc::new(AtomicUsize::new(0));
    let spawned = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    // A job of B's broadcast: once every worker of A is inside B, spawns the task into A (once)
    // and waits until it has run.
    let wait_for_a_spawn = {
        let (a, entered, spawned, ran) = (
            Arc::clone(&a),
            Arc::clone(&entered),
            Arc::clone(&spawned),
            Arc::clone(&ran),
        );
        move || {
            // Relaxed: counts the test polls; the task's effect is only this count.
            while ran.load(Ordering::Relaxed) == 0 {
                if entered.load(Ordering::Relaxed) == a.num_threads()
                    && spawned.fetch_add(1, Ordering::Relaxed) == 0
                {
                    let ran = Arc::clone(&ran);
                    a.spawn(move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    let (done_tx, done_rx) = mpsc::channel();
    // Spawned, not called from here: an outside caller waiting for A's broadcast would run the
    // task from A's injector itself.
    a.spawn({
        let (a, b, entered) = (Arc::clone(&a), Arc::clone(&b), Arc::clone(&entered));
        move || {
            let per_worker = a.broadcast(|_| {
                // Relaxed: see above.
                entered.fetch_add(1, Ordering::Relaxed);
                b.install(|| b.broadcast(|_| wait_for_a_spawn()).len())
            });
            done_tx.send(per_worker).unwrap();
        }
    });
    let done = done_rx.recv_timeout(PATIENCE);
    assert!(
        done.is_ok(),
        "deadlock: every worker of A waited in B for a task queued on A, and none ran it"
    );
    if let Some(holders) = holders {
        holders.release();
    }
    assert_eq!(done.unwrap(), [2, 2, 2]);
    // Relaxed: the task ran before the broadcasts returned.
    assert_eq!(ran.load(Ordering::Relaxed), 1);
}

#[test]
fn workers_waiting_as_guests_of_another_pool_run_their_pools_injected_work() {
    every_worker_waits_in_another_pool_for_a_spawn_into_its_own(false);
}

#[test]
fn workers_blocked_on_a_call_queued_in_another_pool_run_their_pools_injected_work() {
    every_worker_waits_in_another_pool_for_a_spawn_into_its_own(true);
}

/// A worker of pool A that enters A again through pool B (`b.install(|| a.install(..))`) takes a
/// guest slot of A there, but is still worker `i` of A: `current_thread_index` is `Some(i)`, as
/// in rayon, not `None` as for an outside caller; B does not count it as one of its workers.
#[test]
fn a_worker_reentering_its_pool_through_another_keeps_its_index() {
    let (a, b) = (pool(2), pool(3));
    let seen = a.broadcast(|ctx| {
        b.install(|| {
            a.install(|| {
                (
                    ctx.index(),
                    parbench_scheduler::current_thread_index(),
                    a.current_thread_index(),
                    b.current_thread_index(),
                )
            })
        })
    });
    assert_eq!(
        seen,
        [(0, Some(0), Some(0), None), (1, Some(1), Some(1), None)]
    );
}

/// A worker blocked on a call queued in another pool runs its own pool's work (see above), but
/// not at any depth: each loop body here `install`s into a pool whose guest slots are all held,
/// so a body run while blocked blocks again, and with any task taken at any depth one thread
/// piled up the pending bodies on its stack (thousands deep: 2 499 of 5 000 once). Beyond
/// `MAX_NESTED_WAITS` (16) waits it runs only what is handed to it, so at most 16 bodies nest on
/// a thread above the one its worker loop runs.
#[test]
fn work_run_while_blocked_in_another_pool_nests_at_most_max_nested_waits_deep() {
    thread_local! {
        static BODIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    let (a, b) = (pool(8), Arc::new(pool(2)));
    let holders = GuestSlotHolders::hold(&b, 16);
    let deepest = AtomicUsize::new(0);
    for strategy in [
        parbench_scheduler::Strategy::Simple { grain: 1 },
        parbench_scheduler::Strategy::default(),
    ] {
        a.parallel_for_with(&strategy, 0..2000, |_| {
            let depth = BODIES.with(|bodies| {
                bodies.set(bodies.get() + 1);
                bodies.get()
            });
            // Relaxed: a maximum read after the loop returned.
            deepest.fetch_max(depth, Ordering::Relaxed);
            b.install(|| std::thread::sleep(Duration::from_micros(20)));
            BODIES.with(|bodies| bodies.set(bodies.get() - 1));
        });
    }
    holders.release();
    // Relaxed: see above.
    let deepest = deepest.load(Ordering::Relaxed);
    assert!(
        deepest <= 17,
        "{deepest} loop bodies nested on one thread (at most 1 + MAX_NESTED_WAITS)"
    );
}
