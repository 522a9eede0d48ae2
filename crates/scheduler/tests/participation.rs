//! Who executes what: every thread takes part, stealing rebalances a slow share, and the tree's
//! initial distribution is uniform.

mod fixtures;

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fixtures::{all_strategies, pool, rendezvous};
use parbench_scheduler::{
    Grain, Strategy, ThreadPool, ThreadPoolBuilder, Timespan, TreeConfig, TreeTimespan,
};

/// A call of P iterations whose bodies wait until all P have started can only finish if P
/// different threads run them.
#[test]
fn all_threads_take_part_in_a_rendezvous() {
    for threads in [2, 4] {
        let pool = pool(threads);
        // Strategies that hand out single iterations when there are only P of them.
        for strategy in all_strategies().into_iter().filter(|s| {
            !matches!(
                s,
                Strategy::Dynamic { chunk: 2.. }
                    | Strategy::Guided { min_chunk: 2.. }
                    | Strategy::Simple { grain: 2.. }
            )
        }) {
            let started = AtomicUsize::new(0);
            let seen = Mutex::new(HashSet::new());
            pool.parallel_for_with(&strategy, 0..threads, |_| {
                seen.lock().unwrap().insert(std::thread::current().id());
                // Relaxed: an arrival for `rendezvous`; the set is behind its mutex.
                started.fetch_add(1, Ordering::Relaxed);
                rendezvous(
                    &started,
                    threads,
                    &format!("{threads} threads, {strategy:?}"),
                );
            });
            assert_eq!(seen.into_inner().unwrap().len(), threads, "{strategy:?}");
        }
    }
}

#[test]
fn all_workers_take_part_when_called_from_inside_the_pool() {
    let threads = 3;
    let pool = pool(threads);
    let (tx, rx) = std::sync::mpsc::channel();
    let pool_ref = std::sync::Arc::new(pool);
    let in_task = std::sync::Arc::clone(&pool_ref);
    // A task runs on a worker with nothing queued on its deque: the nested call hands its work
    // out at once (a nested call of the default tree runs inline only while the thread's deque
    // holds a task; see `nested_calls_run_inline_while_the_deque_holds_a_task`).
    pool_ref.spawn(move || {
        let started = AtomicUsize::new(0);
        let workers = Mutex::new(HashSet::new());
        in_task.parallel_for(0..threads, |_| {
            workers
                .lock()
                .unwrap()
                .insert(in_task.current_thread_index());
            // Relaxed: an arrival for `rendezvous`; the set is behind its mutex.
            started.fetch_add(1, Ordering::Relaxed);
            rendezvous(&started, threads, "from inside the pool");
        });
        tx.send(workers.into_inner().unwrap()).unwrap();
    });
    let seen = rx.recv().unwrap();
    assert_eq!(seen.len(), threads);
}

/// The calling thread's share is made slow; balancing strategies must let the other thread
/// execute part of it.
#[test]
fn stealing_rebalances_a_slow_share() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .timespan(Timespan::Fixed(Duration::from_micros(50)))
        .build()
        .unwrap();
    let n = 400;
    for strategy in [
        Strategy::default(),
        Strategy::tree_no_timespan(),
        Strategy::tree_fixed_grain(4),
        Strategy::Dynamic { chunk: 2 },
        Strategy::Guided { min_chunk: 2 },
        Strategy::Simple { grain: 4 },
    ] {
        let caller = std::thread::current().id();
        let helped = AtomicUsize::new(0);
        pool.parallel_for_with(&strategy, 0..n, |i| {
            if i < n / 2 {
                std::thread::sleep(Duration::from_micros(200));
                if std::thread::current().id() != caller {
                    helped.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        assert!(
            helped.into_inner() > 0,
            "{strategy:?}: nobody helped with the slow half"
        );
    }
}

/// Static never splits a block: the slow half stays with whoever took block 0.
#[test]
fn static_never_splits_a_block() {
    let pool = pool(2);
    let owners = Mutex::new(HashSet::new());
    pool.parallel_for_with(&Strategy::Static, 0..200, |i| {
        if i < 100 {
            std::thread::sleep(Duration::from_micros(100));
            owners.lock().unwrap().insert(std::thread::current().id());
        }
    });
    assert_eq!(owners.into_inner().unwrap().len(), 1);
}

/// On a balanced load each thread first executes its own contiguous share: the first index a
/// thread runs is the start of one of the P uniform blocks, and it runs its block's indices in
/// order until the timespan ends. A long timespan keeps all blocks intact.
#[test]
fn tree_initial_distribution_is_uniform() {
    for threads in [2, 3, 4] {
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads)
            .timespan(Timespan::Fixed(Duration::from_secs(5)))
            .build()
            .unwrap();
        let n = threads * 1000 + 1;
        let log: Mutex<Vec<(std::thread::ThreadId, usize)>> = Mutex::new(Vec::with_capacity(n));
        pool.parallel_for(0..n, |i| {
            log.lock().unwrap().push((std::thread::current().id(), i));
        });
        let log = log.into_inner().unwrap();
        let mut per_thread: std::collections::HashMap<_, Vec<usize>> = Default::default();
        for (thread, i) in log {
            per_thread.entry(thread).or_default().push(i);
        }
        // Expected: P blocks whose sizes differ by at most one, larger first.
        let (base, extra) = (n / threads, n % threads);
        let mut expected = Vec::new();
        let mut start = 0;
        for b in 0..threads {
            let len = base + usize::from(b < extra);
            expected.push(start..start + len);
            start += len;
        }
        // With a 5 s timespan nobody creates balancing tasks: each thread runs whole blocks (its
        // own, or one taken back whole from a thread that had not woken up), each in order.
        let mut runs = Vec::new();
        for indices in per_thread.values() {
            let mut run_start = indices[0];
            for w in indices.windows(2) {
                if w[1] != w[0] + 1 {
                    runs.push(run_start..w[0] + 1);
                    run_start = w[1];
                }
            }
            runs.push(run_start..indices[indices.len() - 1] + 1);
        }
        runs.sort_unstable_by_key(|r| r.start);
        let boundaries: HashSet<usize> = expected.iter().flat_map(|b| [b.start, b.end]).collect();
        for run in &runs {
            assert!(
                boundaries.contains(&run.start) && boundaries.contains(&run.end),
                "{threads} threads: run {run:?} is not made of whole blocks {expected:?}"
            );
        }
        assert_eq!(runs.first().map(|r| r.start), Some(0));
        assert!(
            runs.windows(2).all(|w| w[0].end == w[1].start),
            "runs {runs:?} overlap or leave gaps"
        );
    }
}

/// The outside caller stands in for a worker: a pool of P threads runs a call on at most P
/// threads, whatever the strategy (including stealable balancing pieces).
#[test]
fn a_call_from_outside_uses_at_most_num_threads_threads() {
    for threads in [1, 2] {
        let pool = pool(threads);
        for strategy in all_strategies() {
            for _ in 0..20 {
                let seen = Mutex::new(HashSet::new());
                pool.parallel_for_with(&strategy, 0..2000, |i| {
                    if i % 100 == 0 {
                        std::thread::sleep(Duration::from_micros(20));
                    }
                    seen.lock().unwrap().insert(std::thread::current().id());
                });
                let used = seen.into_inner().unwrap().len();
                assert!(
                    used <= threads,
                    "{threads} threads, {strategy:?}: {used} threads ran the loop"
                );
            }
        }
    }
}

/// Keeps every worker of `pool` busy (running a task that waits) until the returned guard is
/// dropped: an outside caller then runs its calls alone and queued work stays where the scheduler
/// put it, so snapshots taken from a body are deterministic.
struct BusyWorkers(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl BusyWorkers {
    fn hold(pool: &parbench_scheduler::ThreadPool) -> Self {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let release = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicUsize::new(0));
        for index in 0..pool.num_threads() {
            let (flag, count) = (release.clone(), started.clone());
            pool.spawn_on(index, move || {
                // Relaxed: an arrival count, read by `hold` only to wait for it.
                count.fetch_add(1, Ordering::Relaxed);
                // Acquire: pairs with the guard's Release store (nothing else is published).
                while !flag.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
            })
            .unwrap();
        }
        // A waiting task holds its thread, so all of them started means every worker holds one.
        rendezvous(&started, pool.num_threads(), "busy workers started");
        BusyWorkers(release)
    }
}

impl Drop for BusyWorkers {
    fn drop(&mut self) {
        // Release: pairs with the held workers' Acquire load.
        self.0.store(true, Ordering::Release);
    }
}

/// Tasks on the calling (outside) thread's deque and in worker 1's inbox, seen from a body.
fn queued(pool: &parbench_scheduler::ThreadPool) -> (usize, usize) {
    let snapshot = pool.snapshot();
    (
        snapshot.guests.iter().sum(),
        snapshot.workers[1].inbox + snapshot.workers[1].deque,
    )
}

/// A nested call under the default tree (`LazyInline`) runs inline while the caller's deque
/// holds a task: inside a `join` (whose second closure is queued) it queues nothing of its own.
/// Under the halving ablation the same call queues its upper half 32..64, taken back after the
/// lower half. The index-order ablation makes P − 1 claim offers and then offers lazily: while
/// the caller's deque holds a task no further task is made, and the unused offer stays there
/// until the call ends. The eager ablation makes one task per piece of `⌈n / (4·P)⌉`.
#[test]
fn nested_calls_run_inline_while_the_deque_holds_a_task() {
    use parbench_scheduler::{NestedCalls, TreeConfig};
    let pool = pool(2);
    let _busy = BusyWorkers::hold(&pool);
    let seen = |nested: NestedCalls| {
        let strategy = Strategy::Tree(TreeConfig {
            nested,
            ..TreeConfig::default()
        });
        let at = Mutex::new(Vec::new());
        pool.join(
            || {
                pool.parallel_for_with(&strategy, 0..64, |i| {
                    if i == 0 || i == 31 || i == 40 {
                        at.lock().unwrap().push((i, queued(&pool).0));
                    }
                });
            },
            || (),
        );
        at.into_inner().unwrap()
    };
    assert_eq!(TreeConfig::default().nested, NestedCalls::LazyInline);
    // Inline: only the join's second closure is queued, throughout.
    let inline = vec![(0, 1), (31, 1), (40, 1)];
    assert_eq!(seen(NestedCalls::LazyInline), inline);
    assert_eq!(seen(TreeConfig::default().nested), inline);
    // Halving: the join's second closure and the upper half 32..64, taken back after the lower
    // half.
    assert_eq!(
        seen(NestedCalls::LazyHalves),
        vec![(0, 2), (31, 2), (40, 1)]
    );
    // Index order: the call adds one claim offer, popped back (unused) only when the call waits
    // for its end (no further offer: the deque still held the join's).
    assert_eq!(seen(NestedCalls::Lazy), vec![(0, 2), (31, 2), (40, 2)]);
    // Halving down to 64 / 8 = 8 iterations: 32..64, 16..32, 8..16 queued at iteration 0.
    assert_eq!(seen(NestedCalls::Split)[0], (0, 4));
}

/// A nested call under the default tree whose thread has nothing queued hands out what is left
/// as the halving rule does: its upper half 32..64 is queued while the lower half runs; taken
/// back after it, it finds the deque empty and queues its own upper half 48..64.
#[test]
fn a_nested_call_with_an_empty_deque_halves_lazily() {
    let pool = pool(2);
    let _busy = BusyWorkers::hold(&pool);
    let at = Mutex::new(Vec::new());
    // Made in the first iteration of an outermost call, which this thread runs within its
    // timespan: nothing is on its deque yet (the outer call's other share waits in worker 1's
    // inbox).
    pool.parallel_for(0..100, |j| {
        if j == 0 {
            pool.parallel_for(0..64, |i| {
                if i == 0 || i == 31 || i == 40 {
                    at.lock().unwrap().push((i, queued(&pool).0));
                }
            });
        }
    });
    assert_eq!(at.into_inner().unwrap(), vec![(0, 1), (31, 1), (40, 1)]);
}

/// A call made directly in the closure of an `install` that entered the pool from outside is
/// outermost: the tree hands worker 1 its share, as for a call from outside. Calls made in its
/// work — a `join` closure, a loop body, an `install` from inside the pool — stay nested.
#[test]
fn calls_at_the_top_of_install_are_outermost() {
    let pool = pool(2);
    let _busy = BusyWorkers::hold(&pool);
    // (this thread's deque, worker 1's queues) during iteration 0 of a 1 000-iteration call.
    let at_first = || {
        let first = Mutex::new(None);
        pool.parallel_for(0..1000, |i| {
            if i == 0 {
                *first.lock().unwrap() = Some(queued(&pool));
            }
        });
        first.into_inner().unwrap().unwrap()
    };
    let from_a_body = |call: &(dyn Fn() -> (usize, usize) + Sync)| {
        let seen = Mutex::new(None);
        pool.parallel_for(0..100, |j| {
            if j == 0 {
                *seen.lock().unwrap() = Some(call());
            }
        });
        seen.into_inner().unwrap().unwrap()
    };
    // Handed out: worker 1's share waits in its inbox, nothing on this thread's deque.
    assert_eq!(at_first(), (0, 1));
    assert_eq!(pool.install(at_first), (0, 1));
    assert_eq!(pool.install(|| pool.install(at_first)), (0, 1));
    // In a `join` closure: inline while the second closure is queued.
    assert_eq!(pool.install(|| pool.join(at_first, || ()).0), (1, 0));
    // In a body of the outer call (its other share in worker 1's inbox): halves, the upper
    // half on this thread's deque; the same through an `install` made there.
    assert_eq!(pool.install(|| from_a_body(&at_first)), (1, 1));
    assert_eq!(
        pool.install(|| from_a_body(&|| pool.install(at_first))),
        (1, 1)
    );
    assert_eq!(from_a_body(&|| pool.install(at_first)), (1, 1));
}

/// The first iteration run by a thread other than the caller, while the caller runs iteration 0
/// of an 8-iteration call on 2 threads (iteration 0 waits until another iteration has started);
/// `nested`: the call is made from inside the pool (a `join` closure).
fn first_joined(nested_setting: parbench_scheduler::NestedCalls, nested: bool) -> Option<usize> {
    let pool = pool(2);
    let strategy = Strategy::Tree(TreeConfig {
        nested: nested_setting,
        ..TreeConfig::default()
    });
    let started = AtomicUsize::new(0);
    let first = Mutex::new(None);
    let call = || {
        pool.parallel_for_with(&strategy, 0..8, |i| {
            if i == 0 {
                rendezvous(&started, 1, "another iteration started");
            } else {
                first.lock().unwrap().get_or_insert(i);
                // Relaxed: an arrival for `rendezvous`; `first` is behind its mutex.
                started.fetch_add(1, Ordering::Relaxed);
            }
        });
    };
    if nested {
        pool.join(call, || ());
    } else {
        call();
    }
    first.into_inner().unwrap()
}

/// An outermost call under the small-call rule (8 iterations on 2 threads) runs by claims in
/// index order whatever `nested` says: a thread joining it claims the next iteration, 1.
#[test]
fn a_thread_joining_a_small_outermost_call_takes_the_next_iteration_in_index_order() {
    use parbench_scheduler::NestedCalls;
    for setting in [
        NestedCalls::LazyInline,
        NestedCalls::Lazy,
        NestedCalls::LazyHalves,
        NestedCalls::Split,
        NestedCalls::Tree,
    ] {
        assert_eq!(first_joined(setting, false), Some(1), "{setting:?}");
    }
}

/// A thread joining a nested call: under halving (what the default does once the caller's deque
/// is empty) it takes the upper half, whose first iteration is ⌈8 / 2⌉ = 4; under the
/// index-order ablation it claims the next one, 1. (The default itself runs this call inline,
/// since the join's second closure is queued: iteration 0 would wait for ever.)
#[test]
fn a_thread_joining_a_nested_call_takes_the_upper_half_under_halving() {
    use parbench_scheduler::NestedCalls;
    assert_eq!(first_joined(NestedCalls::LazyHalves, true), Some(4));
    assert_eq!(first_joined(NestedCalls::Lazy, true), Some(1));
}

/// Index-order claims grow while they run shorter than the pool's timespan and stay at one
/// iteration when each is longer: a nested call of 256 iterations on 2 threads under
/// `NestedCalls::Lazy`, every worker held busy so the caller claims alone.
#[test]
fn lazy_claims_grow_for_short_iterations_and_stay_single_for_long_ones() {
    let lazy = Strategy::Tree(TreeConfig {
        nested: parbench_scheduler::NestedCalls::Lazy,
        ..TreeConfig::default()
    });
    let claims_with = |timespan: Duration, spin: Duration| {
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .timespan(Timespan::Fixed(timespan))
            .build()
            .unwrap();
        let _busy = BusyWorkers::hold(&pool);
        let sizes = Mutex::new(Vec::new());
        pool.join(
            || {
                pool.parallel_for_chunks_with(&lazy, 0..256, |chunk| {
                    let start = std::time::Instant::now();
                    while start.elapsed() < spin {
                        std::hint::spin_loop();
                    }
                    sizes.lock().unwrap().push(chunk.len());
                });
            },
            || (),
        );
        sizes.into_inner().unwrap()
    };
    // Instant bodies, a 50 ms timespan: 1, 2, 4 … up to ⌈256 / (4·2)⌉ = 32.
    let short = claims_with(Duration::from_millis(50), Duration::ZERO);
    assert_eq!(short.iter().sum::<usize>(), 256);
    assert_eq!(&short[..3], &[1, 2, 4]);
    assert_eq!(short.iter().max(), Some(&32));
    // 20 µs per claim against a 1 µs timespan: every claim is one iteration.
    let long = claims_with(Duration::from_micros(1), Duration::from_micros(20));
    assert_eq!(long, vec![1; 256]);
}

/// An outermost call of at most 8 iterations per thread runs lazily (no hand-off: worker 1's
/// inbox stays empty, the caller's deque holds the upper half); a larger one is handed out.
#[test]
fn small_outermost_calls_split_lazily_and_large_ones_are_handed_out() {
    use parbench_scheduler::TreeConfig;
    let pool = pool(2);
    let _busy = BusyWorkers::hold(&pool);
    let at_first = |strategy: &Strategy, n: usize| {
        let first = Mutex::new(None);
        pool.parallel_for_with(strategy, 0..n, |i| {
            if i == 0 {
                *first.lock().unwrap() = Some(queued(&pool));
            }
        });
        first.into_inner().unwrap().unwrap()
    };
    let tree = Strategy::default();
    // (caller's deque, worker 1's queues) during iteration 0.
    assert_eq!(at_first(&tree, 16), (1, 0));
    assert_eq!(at_first(&tree, 17), (0, 1));
    assert_eq!(at_first(&tree, 1000), (0, 1));
    let no_rule = Strategy::Tree(TreeConfig {
        small_per_thread: 0,
        ..TreeConfig::default()
    });
    assert_eq!(at_first(&no_rule, 16), (0, 1));
}

/// After its timespan a tree thread offers balancing pieces lazily: a new one only when its deque
/// is empty, so with no thief around (every worker held busy) the caller's deque never holds more
/// than one task — eager halving down to the grain would queue `log₂(rest / grain)` of them at
/// once (here ≈ 5: a 20 µs timespan over 1 µs iterations, 1 000 iterations per share).
#[test]
fn tree_offers_one_balancing_piece_at_a_time_when_nothing_is_stolen() {
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .timespan(Timespan::Fixed(Duration::from_micros(20)))
        .build()
        .unwrap();
    let _busy = BusyWorkers::hold(&pool);
    let most = AtomicUsize::new(0);
    let offered = AtomicUsize::new(0);
    pool.parallel_for(0..2000, |_| {
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_micros(1) {
            std::hint::spin_loop();
        }
        let (caller, _) = queued(&pool);
        most.fetch_max(caller, Ordering::Relaxed);
        if caller > 0 {
            offered.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(most.into_inner(), 1, "more than one piece queued at once");
    assert!(offered.into_inner() > 0, "no balancing piece was offered");
}

/// The end of a tree call: once the caller has run out of work, a worker whose last work is less
/// than two grains of its share offers part of it. The grain is fixed at 32 and the timespan at
/// 1 µs, so after its timespan (its first iteration) the worker holds 49 iterations of its 50:
/// below two grains, which it never offered before (the caller then waited for the worker's
/// whole share, as when a worker is woken late). The caller waits for the worker to start (so it
/// cannot take the share back from the worker's inbox) and then finishes its own share at once,
/// while the worker's first iteration lasts 50 µs; the worker's later iterations wait (up to 5 ms
/// each) until the caller has run one of the worker's block. The caller spins while it waits
/// (a long spin window): a parked caller is woken only by the end of its call.
#[test]
fn tree_offers_the_last_iterations_to_a_thread_out_of_work() {
    let (pool, strategy) = spinning_pool_with_tree_grain(2, 32);
    let n = 100;
    let worker_started = AtomicBool::new(false);
    let caller_helped = AtomicBool::new(false);
    pool.parallel_for_with(&strategy, 0..n, |i| {
        if pool.current_thread_index().is_some() {
            if worker_started.swap(true, Ordering::Relaxed) {
                spin(Duration::from_millis(5), &|| {
                    caller_helped.load(Ordering::Relaxed)
                });
            } else {
                spin(Duration::from_micros(50), &|| false);
            }
        } else if i >= n / 2 {
            caller_helped.store(true, Ordering::Relaxed);
        } else if i == 0 {
            spin(Duration::from_secs(5), &|| {
                worker_started.load(Ordering::Relaxed)
            });
        }
    });
    if !worker_started.into_inner() {
        eprintln!("SKIPPED: the worker did not start within 5 s (machine overloaded)");
        return;
    }
    assert!(
        caller_helped.into_inner(),
        "the caller ran out of work but got none of the worker's last iterations"
    );
}

/// The thief's side of a tree offer: chunks from the top of the owner's rest, downwards, each a
/// `2·P`-th of what is left (not below the tail step), run as they are. The caller takes from
/// the worker's share by the script of `CallerTakesFromTheWorker`, its own iterations instant.
/// The caller's body calls in the worker's block must then start at its top, and each must end where
/// the previous one began and be no longer than it. A thief that made a piece of what it took
/// (the rule before) ran that piece from its low end in growing timespan batches: upwards.
#[test]
fn a_tree_thief_takes_chunks_downwards_from_the_top_of_the_owners_rest() {
    let (pool, strategy) = spinning_pool_with_tree_grain(2, 8);
    let n = 200;
    let script = CallerTakesFromTheWorker::new(n, Duration::ZERO);
    let runs = Mutex::new(Vec::new());
    pool.parallel_for_chunks_with(&strategy, 0..n, |chunk| {
        let by_caller = pool.current_thread_index().is_none();
        runs.lock().unwrap().push((chunk.clone(), by_caller));
        script.run(chunk, by_caller);
    });
    script.assert_every_iteration_ran_once();
    if !script.worker_started() {
        eprintln!("SKIPPED: the worker did not start within 5 s (machine overloaded)");
        return;
    }
    let taken: Vec<_> = runs
        .into_inner()
        .unwrap()
        .into_iter()
        .filter(|(chunk, by_caller)| *by_caller && chunk.start >= n / 2)
        .map(|(chunk, _)| chunk)
        .collect();
    assert!(
        !taken.is_empty(),
        "the caller ran out of work but took none of the worker's block"
    );
    assert_eq!(
        taken[0].end, n,
        "the first chunk is not the top of the block"
    );
    for pair in taken.windows(2) {
        assert!(
            pair[1].end == pair[0].start && pair[1].len() <= pair[0].len(),
            "not downwards in shrinking chunks: {taken:?}"
        );
    }
}

/// The owner's end of a share a thief works on: once the thief has taken a chunk from the top,
/// the owner claims its last two grains in tail steps (an eighth of a grain), so the two meet
/// within a step. Grain 32, so the tail step is 4. The caller steals the worker's first offer by
/// the script of `CallerTakesFromTheWorker` and takes chunks from the top of the worker's rest at
/// 40 µs per iteration while the worker claims from the bottom at 20 µs, so the worker's last
/// claim is made with fewer than two grains left. With two threads the worker used to make a
/// second offer, which stayed on its deque (nobody else could steal it), and under the rule
/// before 992cd66 (tail steps only when the owner's deque is empty) every worker claim was then a
/// whole grain: its last chunk was up to 32 iterations, with the caller waiting for it. Now the
/// worker makes no second offer, so its deque is empty and either rule ends it in tail steps;
/// the three-thread test below is the one in which only the rule of 992cd66 does.
#[test]
fn a_tree_owner_ends_in_tail_steps_once_a_thief_takes_from_its_share() {
    if let Some(chunks) = caller_takes_from_the_worker_with_grain_32(|_, _, _| {}) {
        assert_last_claim_at_most(&chunks, 4, Duration::from_micros(20));
    }
}

/// The owner's end in tail steps while a later offer of its waits on its deque: the case only
/// `SplitRange::taken_from_top` catches. Three threads, grain 32 (tail step 4). The worker of
/// slot 1 runs its block at 20 µs per iteration; the caller, its own block instant, steals the
/// worker's first offer and takes chunks from the top at 40 µs per iteration. The worker then
/// makes a second offer (a third thread could take it), but the worker of slot 2 is busy in its
/// first iteration until slot 1's block is done, so the offer stays on the deque and the deque
/// is never empty again. The worker's last claim must still be a tail step; ending only when its
/// deque is empty, it would be up to a grain, with the caller waiting for it. If the worker
/// stalls (the machine is overloaded), the caller can take the rest while the worker runs a
/// grain claimed with more than two grains left; the test then reports itself skipped.
#[test]
fn a_tree_owner_ends_in_tail_steps_while_a_later_offer_waits_on_its_deque() {
    let (pool, strategy) = spinning_pool_with_tree_grain(3, 32);
    let (n, slot_1, slot_2_first) = (900, 300..600, 600);
    let [slot_1_started, slot_2_started, caller_took] = [(); 3].map(|()| AtomicBool::new(false));
    let flag = |flag: &AtomicBool| flag.load(Ordering::Relaxed);
    let slot_1_done = AtomicUsize::new(0);
    let ran: Vec<_> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    let worker_chunks = TimedChunks::default();
    pool.parallel_for_chunks_with(&strategy, 0..n, |chunk| {
        let by_caller = pool.current_thread_index().is_none();
        let started = Instant::now();
        for i in chunk.clone() {
            ran[i].fetch_add(1, Ordering::Relaxed);
            if i == 0 {
                spin(Duration::from_secs(5), &|| {
                    flag(&slot_1_started) && flag(&slot_2_started)
                });
            } else if slot_1.contains(&i) {
                if by_caller {
                    caller_took.store(true, Ordering::Relaxed);
                    spin(Duration::from_micros(40), &|| false);
                } else {
                    spin(Duration::from_micros(20), &|| false);
                    if slot_1_started.swap(true, Ordering::Relaxed) {
                        spin(Duration::from_millis(5), &|| flag(&caller_took));
                    }
                }
                slot_1_done.fetch_add(1, Ordering::Relaxed);
            } else if i == slot_2_first {
                slot_2_started.store(true, Ordering::Relaxed);
                spin(Duration::from_secs(5), &|| {
                    slot_1_done.load(Ordering::Relaxed) == slot_1.len()
                });
            }
        }
        if !by_caller && slot_1.contains(&chunk.start) {
            worker_chunks.record(chunk, started);
        }
    });
    assert!(ran.iter().all(|count| count.load(Ordering::Relaxed) == 1));
    if !flag(&slot_2_started) || !flag(&caller_took) {
        eprintln!("SKIPPED: a worker did not start, or its share was not stolen, in time");
        return;
    }
    assert_last_claim_at_most(&worker_chunks.in_order(), 4, Duration::from_micros(20));
}

/// No offer nobody can take: with two threads, once the caller has stolen the worker's first
/// offer it takes chunks of the worker's rest until nothing is left, so there is no other thread
/// for a second offer. The worker must then make none: its deque stays empty for the rest of its
/// share. Under the rule before (a new offer whenever the deque was empty and two grains were
/// left) the worker's second offer sat on its deque until the end of the call, where the
/// worker popped it and found nothing.
#[test]
fn a_two_thread_tree_owner_makes_no_offer_after_its_first_was_stolen() {
    let deque_after_the_steal = Mutex::new(Vec::new());
    let ran = caller_takes_from_the_worker_with_grain_32(|pool, worker, script| {
        if let Some(index) = worker
            && script.caller_took()
        {
            let queued = pool.snapshot().workers[index].deque;
            deque_after_the_steal.lock().unwrap().push(queued);
        }
    });
    let queued = deque_after_the_steal.into_inner().unwrap();
    if ran.is_none() {
        return;
    }
    assert!(!queued.is_empty(), "no chunk of the worker after the steal");
    assert!(
        queued.iter().all(|&tasks| tasks == 0),
        "the worker queued tasks after the caller took its only offer: {queued:?}"
    );
}

/// More than two threads on one heavy share: the caller's block of a 4-thread tree call is slow,
/// the workers' blocks are instant. The first idle worker joins the caller through its first
/// offer and takes chunks from the top; the caller, its deque empty again, makes another offer,
/// through which a second idle worker joins, and so on. At least two different workers must run
/// iterations of the caller's block: one thief alone, or none, means the later offers are
/// missing.
///
/// Each iteration of the slow block lasts until two workers have run one (up to 20 ms): a fixed
/// 200 µs made the block 20 ms in all, and with four spinning threads on two loaded cores the
/// second thief was not always scheduled within it (a fresh-clone CI run beside three builds
/// failed so). Without later offers the block now takes about a second and the test fails.
#[test]
fn more_idle_threads_join_one_heavy_tree_share_through_later_offers() {
    let (pool, strategy) = spinning_pool_with_tree_grain(4, 4);
    let n = 400;
    // One bit per worker that ran an iteration of the slow block.
    let helpers = AtomicUsize::new(0);
    let ran = (0..n).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>();
    pool.parallel_for_with(&strategy, 0..n, |i| {
        ran[i].fetch_add(1, Ordering::Relaxed);
        if i < n / 4 {
            if let Some(worker) = pool.current_thread_index() {
                helpers.fetch_or(1 << worker, Ordering::Relaxed);
            }
            spin(Duration::from_millis(20), &|| {
                helpers.load(Ordering::Relaxed).count_ones() >= 2
            });
        }
    });
    assert!(ran.iter().all(|count| count.load(Ordering::Relaxed) == 1));
    let helpers = helpers.into_inner();
    assert!(
        helpers.count_ones() >= 2,
        "only workers {helpers:#b} (a bit each) of the 3 idle ones ran part of the caller's slow \
         block"
    );
}

/// The script of the tests above in which the caller takes from a 2-thread call's worker
/// share (slot 1's block, the upper half of `0..n`). The caller waits at its iteration 0 for the
/// worker to start, then runs its own share at once. The worker's iterations take 20 µs each,
/// and after its first one each also waits (up to 5 ms) until the caller has run one of the
/// worker's block, so that a caller kept off the CPU by other tests still gets there first. The
/// caller's iterations of the worker's block take `caller_iteration` each.
struct CallerTakesFromTheWorker {
    n: usize,
    caller_iteration: Duration,
    worker_started: AtomicBool,
    caller_took: AtomicBool,
    ran: Vec<AtomicUsize>,
}

impl CallerTakesFromTheWorker {
    fn new(n: usize, caller_iteration: Duration) -> Self {
        CallerTakesFromTheWorker {
            n,
            caller_iteration,
            worker_started: AtomicBool::new(false),
            caller_took: AtomicBool::new(false),
            ran: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// Runs the iterations of `chunk` by the script, on the caller or on the worker.
    fn run(&self, chunk: Range<usize>, by_caller: bool) {
        for i in chunk {
            self.ran[i].fetch_add(1, Ordering::Relaxed);
            if !by_caller {
                spin(Duration::from_micros(20), &|| false);
                if self.worker_started.swap(true, Ordering::Relaxed) {
                    spin(Duration::from_millis(5), &|| self.caller_took());
                }
            } else if i >= self.n / 2 {
                self.caller_took.store(true, Ordering::Relaxed);
                spin(self.caller_iteration, &|| false);
            } else if i == 0 {
                spin(Duration::from_secs(5), &|| self.worker_started());
            }
        }
    }

    fn worker_started(&self) -> bool {
        self.worker_started.load(Ordering::Relaxed)
    }

    fn caller_took(&self) -> bool {
        self.caller_took.load(Ordering::Relaxed)
    }

    fn assert_every_iteration_ran_once(&self) {
        assert!(
            self.ran
                .iter()
                .all(|count| count.load(Ordering::Relaxed) == 1)
        );
    }
}

/// A pool of `threads` threads whose idle threads spin for 30 s (a parked caller is woken only by
/// the end of its call), and a tree strategy with a 1 µs timespan and a fixed grain: the set-up of
/// the tests above that script who runs which iterations.
fn spinning_pool_with_tree_grain(threads: usize, grain: usize) -> (ThreadPool, Strategy) {
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .spin_before_park(Duration::from_secs(30))
        .build()
        .unwrap();
    let strategy = Strategy::Tree(TreeConfig {
        timespan: TreeTimespan::Fixed(Duration::from_micros(1)),
        grain: Grain::Fixed(grain),
        ..TreeConfig::default()
    });
    (pool, strategy)
}

/// Runs the script of `CallerTakesFromTheWorker` on 600 iterations (grain 32, tail step 4; the
/// caller's iterations of the worker's block take 40 µs), calling `observe(pool, worker index,
/// script)` as each chunk starts. Returns the worker's chunks, timed and in order, if the script
/// ran as meant (the worker started and the caller took from its share); if not, it says that
/// the test is skipped.
fn caller_takes_from_the_worker_with_grain_32(
    observe: impl Fn(&ThreadPool, Option<usize>, &CallerTakesFromTheWorker) + Sync,
) -> Option<Vec<(Range<usize>, Instant, Instant)>> {
    let (pool, strategy) = spinning_pool_with_tree_grain(2, 32);
    let script = CallerTakesFromTheWorker::new(600, Duration::from_micros(40));
    let worker_chunks = TimedChunks::default();
    pool.parallel_for_chunks_with(&strategy, 0..600, |chunk| {
        let worker = pool.current_thread_index();
        observe(&pool, worker, &script);
        let started = Instant::now();
        script.run(chunk.clone(), worker.is_none());
        if worker.is_some() {
            worker_chunks.record(chunk, started);
        }
    });
    script.assert_every_iteration_ran_once();
    if !script.worker_started() || !script.caller_took() {
        eprintln!("SKIPPED: the worker did not start, or its share was not stolen, in time");
        return None;
    }
    Some(worker_chunks.in_order())
}

/// The chunks one thread ran, each with when its first iteration started and its last ended.
#[derive(Default)]
struct TimedChunks(Mutex<Vec<(Range<usize>, Instant, Instant)>>);

impl TimedChunks {
    fn record(&self, chunk: Range<usize>, started: Instant) {
        self.0
            .lock()
            .unwrap()
            .push((chunk, started, Instant::now()));
    }

    /// The chunks by their first iteration.
    fn in_order(self) -> Vec<(Range<usize>, Instant, Instant)> {
        let mut chunks = self.0.into_inner().unwrap();
        chunks.sort_by_key(|(chunk, ..)| chunk.start);
        chunks
    }
}

/// The last claim of a share's owner (the last of its `chunks`, in order) is at most `tail_step`
/// iterations, unless the owner stalled in it: the chunk ran 500 µs longer than `per_iteration`
/// for each of its iterations, or began 500 µs after the one before ended. A thief at 40 µs per
/// iteration takes at most 16 iterations while the owner runs a 32-iteration grain at 20 µs, so a
/// grain claimed with two grains or more left is never the last unless the owner stalls in it
/// (the machine overloaded); the test then reports itself skipped.
fn assert_last_claim_at_most(
    chunks: &[(Range<usize>, Instant, Instant)],
    tail_step: usize,
    per_iteration: Duration,
) {
    let [.., before, (last, started, ended)] = chunks else {
        panic!("the owner made fewer than two claims: {chunks:?}");
    };
    if last.len() <= tail_step {
        return;
    }
    let slack = Duration::from_micros(500);
    let stalled = *ended - *started > per_iteration * last.len() as u32 + slack
        || started.saturating_duration_since(before.2) > slack;
    if stalled {
        eprintln!("SKIPPED: the owner stalled in its last claim {last:?} (machine overloaded)");
        return;
    }
    let claims: Vec<_> = chunks.iter().map(|(chunk, ..)| chunk.clone()).collect();
    panic!("the owner's last claim was {last:?}, more than a tail step: {claims:?}");
}

/// Spins until `done` holds or `limit` has passed.
fn spin(limit: Duration, done: &dyn Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < limit {
        std::hint::spin_loop();
    }
}
