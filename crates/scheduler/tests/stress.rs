//! Oversubscribed stress: pools of 64 and 256 threads on however few cores the machine has, and
//! of 2 threads, fewer than the outside callers; and pools that call into each other.
//!
//! Every round, 4 outside threads at once run a random plan on one pool: loops of every strategy
//! (also in chunks), `join`, `scope`, and detached `spawn_on`, nested three deep, whose leaves
//! panic at random. Checked every round:
//! * a plan in which no panic fired ran every leaf exactly once, and returned normally;
//! * a plan in which a panic fired re-raised exactly one panic, one of those that fired;
//! * no leaf ever ran twice;
//! * when a pool is dropped (sometimes while idle, sometimes right after a round), every detached
//!   task that was spawned has run, exactly once.
//!
//! The cross-pool test runs the same plans, with broadcasts too, over two or three pools
//! (`[2, 3]`, `[1, 2, 2]`, `[2, 3, 16]`, `[1, 4, 32]`, `[2, 32]`; 3 outside callers), every
//! node on a pool picked at random: a loop of one pool whose bodies `install` into, loop, join or broadcast on
//! another, whose work comes back to the first; broadcasts inside installs. Its checks are the
//! same. Without 419ce56's fix (a worker waiting in another pool runs the broadcast jobs and
//! inbox shares handed to it in its own pool) it hangs within a few rounds.
//!
//! Since a worker waiting in another pool's operation runs all of its own pool's work (its
//! injector included, and it is unparked for work queued there), a call queued on a pool whose
//! guest slots are all taken is run even while every worker of that pool waits in another. The
//! `[2, 32]` pair exercises that: it has no *sink* (the one larger pool of `[2, 3, 16]` and
//! `[1, 4, 32]`, whose work calls into no other pool), so the 32-thread pool's loop bodies
//! `install` into, loop or broadcast on the 2-thread pool — more than 16 threads at once, so
//! that further calls are queued — whose work comes back to the 32-thread pool. (It does not
//! hang reliably without that fix; `install_broadcast.rs` has the deterministic test.)
//!
//! Leaves spawn their detached tasks with the free `spawn_on`, on the pool the enclosing node
//! runs its children in, also in a loop or `join` called while `MAX_NESTED_WAITS` (16) waits
//! are on the thread's stack, which runs there alone but still in its pool (before that, it ran
//! in whichever pool the thread was in, where an index of the intended pool failed with
//! `NoSuchThread`).
//!
//! Every leaf also checks that `current_num_threads()` is its node's pool's (a round fails if
//! one saw another pool).
//!
//! The away test (`pools_waiting_away_from_home_lose_nothing`, pools of 17 to 24 threads and of
//! 2 or 3, see [`away_plan`]) makes the paths of a worker waiting away from its pool busy: more
//! than 16 workers of A in `b.install` at once (some block on the call queued on B) while B's
//! broadcast jobs `a.spawn` and wait; chains of up to 23 waits on one worker of A, calling into
//! B from there (below 16 waits it runs all of A's work, deeper only what is handed to it);
//! loops and joins on the other pool from that deep (an inline context). Without 3025ed3's fix
//! (589f554's `src/`) it hung in 5 runs of 5, within 9 release rounds (A's spawns left queued).
//!
//! Each round is bounded by a watchdog: a round that does not finish within [`ROUND_LIMIT`]
//! prints a snapshot of every pool (which workers wait on what) and aborts the test process.
//!
//! Rounds: `PARBENCH_STRESS_ROUNDS` (default 24 here; `scripts/test.sh` runs 10 000 in release);
//! the cross-pool and away tests run half as many, or `PARBENCH_CROSS_POOL_ROUNDS` (the away
//! test's 5 000 took 31 s in release on 2 cores).

mod fixtures;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, Weak, mpsc};
use std::time::Duration;

use fixtures::{SplitMix, all_strategies};
use parbench_scheduler::{Strategy, ThreadPool, ThreadPoolBuilder, Timespan};

/// A round that takes longer than this is hung (a healthy one takes milliseconds to seconds).
const ROUND_LIMIT: Duration = Duration::from_secs(120);
/// Outside threads calling into the pool at once.
const CALLERS: usize = 4;
/// Rounds on one pool before it is dropped and rebuilt.
const ROUNDS_PER_POOL: usize = 8;

/// The payload of an injected panic: the leaf that fired it.
struct Injected(usize);

/// What a plan node does. `pool` is an index into the pools of the round (always 0 in the
/// single-pool test).
enum Plan {
    /// Counts its hit; panics if `panics`. Run inside `pool` (the pool the enclosing node runs
    /// its children in): it records it if `current_num_threads()` is another pool's.
    Leaf {
        id: usize,
        panics: bool,
        pool: usize,
    },
    /// Spawns a detached task on worker `worker % num_threads` of `pool` (the pool the
    /// enclosing node runs its children in) that counts its run.
    Detached {
        id: usize,
        pool: usize,
        worker: usize,
    },
    /// A parallel loop with `children.len()` iterations, iteration `i` running `children[i]`.
    Loop {
        pool: usize,
        strategy: Strategy,
        chunks: bool,
        children: Vec<Plan>,
    },
    Join {
        pool: usize,
        a: Box<Plan>,
        b: Box<Plan>,
    },
    Scope {
        pool: usize,
        children: Vec<Plan>,
    },
    /// Runs the plan in `install`: at the top of the pool from an outside caller or from
    /// another pool's work (its calls are outermost), nested from inside the pool.
    Install {
        pool: usize,
        child: Box<Plan>,
    },
    /// A broadcast on `pool`: its worker `i` runs `children[i]`.
    Broadcast {
        pool: usize,
        children: Vec<Plan>,
    },
    /// `pool.spawn`s a task that runs `child`, and blocks (runs nothing) until the task has run,
    /// re-raising its panic: work queued on the pool as a whole, which the pool's threads must
    /// take from its injector (see [`away_plan`]).
    Spawn {
        pool: usize,
        child: Box<Plan>,
    },
}

/// The pools of a round as plans see them.
struct Shape {
    /// Threads of each pool.
    sizes: Vec<usize>,
    /// A pool whose work never calls into another pool (see `pools_calling_into_each_other`).
    sink: Option<usize>,
}

impl Shape {
    fn crosses(&self) -> bool {
        self.sizes.len() > 1
    }

    /// The pool a node run in the context of `here` (None: an outside caller) calls into.
    fn pick(&self, rng: &mut SplitMix, here: Option<usize>) -> usize {
        match here {
            _ if !self.crosses() => 0,
            Some(here) if Some(here) == self.sink => here,
            _ => rng.below(self.sizes.len()),
        }
    }
}

/// Numbers the leaves of the plans of one round.
struct Ids {
    next: usize,
}

impl Ids {
    fn take(&mut self) -> usize {
        self.next += 1;
        self.next - 1
    }
}

/// A random plan run in the context of pool `here` (None: by an outside caller).
fn random_plan(
    rng: &mut SplitMix,
    ids: &mut Ids,
    depth: usize,
    strategies: &[Strategy],
    shape: &Shape,
    here: Option<usize>,
) -> Plan {
    let choice = match depth {
        // A caller's plan: a loop, at times run in `install` (where its calls are outermost too).
        3 if rng.below(4) == 0 => 10,
        3 => 9,
        0 => rng.below(5),
        _ => rng.below(10),
    };
    // Crossing pools is the point of the multi-pool plans: installs and broadcasts are common.
    let crosses = shape.crosses();
    // A child plan, run in the context of `pool`.
    let sub = |rng: &mut SplitMix, ids: &mut Ids, depth: usize, pool: usize| {
        random_plan(rng, ids, depth, strategies, shape, Some(pool))
    };
    match choice {
        0..=3 => Plan::Leaf {
            id: ids.take(),
            panics: rng.below(2000) == 0,
            pool: here.unwrap_or(0),
        },
        // Leaves run in a pool's context: `here` is set below the top.
        4 => Plan::Detached {
            id: ids.take(),
            pool: here.unwrap_or(0),
            worker: rng.below(1 << 16),
        },
        10 => {
            let pool = shape.pick(rng, here);
            Plan::Install {
                pool,
                child: Box::new(sub(rng, ids, 3, pool)),
            }
        }
        5 if rng.below(if crosses { 2 } else { 4 }) == 0 => {
            let pool = shape.pick(rng, here);
            Plan::Install {
                pool,
                child: Box::new(sub(rng, ids, depth - 1, pool)),
            }
        }
        5 => {
            let pool = shape.pick(rng, here);
            Plan::Join {
                pool,
                a: Box::new(sub(rng, ids, depth - 1, pool)),
                b: Box::new(sub(rng, ids, depth - 1, pool)),
            }
        }
        6 => {
            let pool = shape.pick(rng, here);
            let n = 1 + rng.below(4);
            Plan::Scope {
                pool,
                children: (0..n).map(|_| sub(rng, ids, depth - 1, pool)).collect(),
            }
        }
        7 if crosses && rng.below(2) == 0 => {
            let pool = shape.pick(rng, here);
            Plan::Broadcast {
                pool,
                children: (0..shape.sizes[pool])
                    .map(|_| sub(rng, ids, depth - 1, pool))
                    .collect(),
            }
        }
        _ => {
            let pool = shape.pick(rng, here);
            let n = if depth == 3 {
                16 + rng.below(48)
            } else {
                rng.below(12)
            };
            Plan::Loop {
                pool,
                strategy: strategies[rng.below(strategies.len())].clone(),
                chunks: rng.below(2) == 0,
                children: (0..n)
                    .map(|_| sub(rng, ids, depth.saturating_sub(1), pool))
                    .collect(),
            }
        }
    }
}

/// An outside caller's plan of the single-pool and cross-pool tests.
fn caller_plan(rng: &mut SplitMix, ids: &mut Ids, strategies: &[Strategy], shape: &Shape) -> Plan {
    random_plan(rng, ids, 3, strategies, shape, None)
}

/// The pools of the away test: `A`, of more than 16 threads (more than a pool's guest slots),
/// and `B`, of 2 or 3.
const A: usize = 0;
const B: usize = 1;

/// A leaf run in `pool`; the away test's plans have hundreds per round, so it panics more
/// rarely than [`random_plan`]'s.
fn leaf(rng: &mut SplitMix, ids: &mut Ids, pool: usize) -> Plan {
    Plan::Leaf {
        id: ids.take(),
        panics: rng.below(4000) == 0,
        pool,
    }
}

/// An outside caller's plan in the away test (pools `A` and `B`, see [`A`]), one of:
/// * every worker of A calls `b.install` at once (a broadcast on A), so that 16 of them wait as
///   guests of B and the others block on the call queued on B; there, a broadcast on B whose
///   jobs `a.spawn` a leaf and wait for it (blocked, running nothing), or run a random plan
///   that calls back into A (installs included). Every worker of A waits away from A then, and
///   only they can run what is spawned there; the caller itself usually `spawn`s the broadcast
///   and blocks, so that it takes none of A's work as a guest of A would. (A leaf: a spawned
///   plan that waited could run, while it waits, a task that needs the blocked B worker.);
/// * a chain of `levels` (1 to 23) broadcasts on A nested on one of its workers (each level's
///   job on that worker makes the next broadcast, the other jobs are leaves), so that at the
///   bottom it has about that many waits on its stack, and there a random plan run in B
///   (`b.install`) or in A: from 16 waits deep its loops and joins on the other pool run
///   sequentially in that pool (`Slot::Inline`), its installs and broadcasts wait away in the
///   mode that runs only the work handed to the worker, while its calls back into A hand
///   work to it; shallower, the waits run all of A's work;
/// * a plan of the cross-pool test.
///
/// Only B's workers block on a spawn (broadcast jobs of B) and only A's spawns are waited for,
/// and only one worker of A per chain gets deep: A always has workers that wait away shallow,
/// or are free, to run what is spawned there, so the plans cannot deadlock.
fn away_plan(rng: &mut SplitMix, ids: &mut Ids, strategies: &[Strategy], shape: &Shape) -> Plan {
    let (a_threads, b_threads) = (shape.sizes[A], shape.sizes[B]);
    match rng.below(3) {
        0 => {
            let b_job = |rng: &mut SplitMix, ids: &mut Ids| match rng.below(3) {
                0 | 1 => Plan::Spawn {
                    pool: A,
                    child: Box::new(leaf(rng, ids, A)),
                },
                _ => random_plan(rng, ids, 1, strategies, shape, Some(B)),
            };
            let fan_out = Plan::Broadcast {
                pool: A,
                children: (0..a_threads)
                    .map(|_| Plan::Install {
                        pool: B,
                        child: Box::new(Plan::Broadcast {
                            pool: B,
                            children: (0..b_threads).map(|_| b_job(rng, ids)).collect(),
                        }),
                    })
                    .collect(),
            };
            if rng.below(4) == 0 {
                fan_out
            } else {
                Plan::Spawn {
                    pool: A,
                    child: Box::new(fan_out),
                }
            }
        }
        1 => {
            let (levels, deep) = (1 + rng.below(23), rng.below(a_threads));
            let mut chain = match rng.below(2) {
                0 => Plan::Install {
                    pool: B,
                    child: Box::new(random_plan(rng, ids, 2, strategies, shape, Some(B))),
                },
                _ => random_plan(rng, ids, 2, strategies, shape, Some(A)),
            };
            for _ in 0..levels {
                let mut next = Some(chain);
                chain = Plan::Broadcast {
                    pool: A,
                    children: (0..a_threads)
                        .map(|i| match i == deep {
                            true => next.take().expect("one deep job"),
                            false => leaf(rng, ids, A),
                        })
                        .collect(),
                };
            }
            chain
        }
        _ => random_plan(rng, ids, 3, strategies, shape, None),
    }
}

/// What the plans of one pool generation observe.
struct Counters {
    /// Per leaf id of the current round: how often it ran.
    hits: Vec<AtomicUsize>,
    /// Leaf ids whose panic fired this round.
    fired: Mutex<Vec<usize>>,
    /// Detached tasks spawned and run on the current pool.
    spawned: AtomicUsize,
    ran: Arc<AtomicUsize>,
    /// Leaves that ran in another pool than their node's: what they saw.
    misplaced: Mutex<Vec<String>>,
}

fn execute(pools: &[&ThreadPool], plan: &Plan, counters: &Counters) {
    let each = |children: &[Plan], i: usize| execute(pools, &children[i], counters);
    match plan {
        Plan::Leaf { id, panics, pool } => {
            counters.hits[*id].fetch_add(1, Ordering::Relaxed);
            let (seen, expected) = (
                parbench_scheduler::current_num_threads(),
                pools[*pool].num_threads(),
            );
            if seen != expected {
                counters.misplaced.lock().unwrap().push(format!(
                    "leaf {id} of pool {pool} ({expected} threads) saw {seen} threads \
                     (current_thread_index {:?})",
                    parbench_scheduler::current_thread_index()
                ));
            }
            if *panics {
                counters.fired.lock().unwrap().push(*id);
                panic::panic_any(Injected(*id));
            }
        }
        Plan::Detached { id, pool, worker } => {
            counters.hits[*id].fetch_add(1, Ordering::Relaxed);
            counters.spawned.fetch_add(1, Ordering::Relaxed);
            let ran = Arc::clone(&counters.ran);
            let task = move || {
                ran.fetch_add(1, Ordering::Relaxed);
            };
            // The free function: the enclosing node runs this one inside `pools[*pool]`.
            let index = worker % pools[*pool].num_threads();
            parbench_scheduler::spawn_on(index, task).expect("worker index in range");
        }
        Plan::Loop {
            pool,
            strategy,
            chunks,
            children,
        } => {
            if *chunks {
                pools[*pool].parallel_for_chunks_with(strategy, 0..children.len(), |chunk| {
                    chunk.for_each(|i| each(children, i));
                });
            } else {
                pools[*pool].parallel_for_with(strategy, 0..children.len(), |i| each(children, i));
            }
        }
        Plan::Join { pool, a, b } => {
            pools[*pool].join(
                || execute(pools, a, counters),
                || execute(pools, b, counters),
            );
        }
        Plan::Scope { pool, children } => pools[*pool].scope(|s| {
            for child in children {
                s.spawn(move |_| execute(pools, child, counters));
            }
        }),
        Plan::Install { pool, child } => pools[*pool].install(|| execute(pools, child, counters)),
        Plan::Broadcast { pool, children } => {
            pools[*pool].broadcast(|ctx| each(children, ctx.index()));
        }
        Plan::Spawn { pool, child } => spawn_and_wait(pools[*pool], || {
            execute(pools, child, counters);
        }),
    }
}

/// `pool.spawn(task)`, then blocks until `task` has run; re-raises its panic.
fn spawn_and_wait(pool: &ThreadPool, task: impl FnOnce() + Send) {
    let (done, outcome) = mpsc::channel();
    let task: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        // The send is the task's last use of what it borrows.
        let _ = done.send(panic::catch_unwind(AssertUnwindSafe(task)));
    });
    // SAFETY: only the lifetime changes. This frame outlives every use of what `task` borrows:
    // it returns (or unwinds) only after `recv` below returned, that is after the task sent its
    // outcome (its last use of those borrows) or was dropped without running (its sender gone).
    let task: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(task) };
    pool.spawn(task);
    match outcome.recv() {
        Ok(Ok(())) => {}
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(mpsc::RecvError) => panic!("a spawned task was dropped without running"),
    }
}

/// The leaf ids of `plan`.
fn leaves(plan: &Plan, out: &mut Vec<usize>) {
    match plan {
        Plan::Leaf { id, .. } | Plan::Detached { id, .. } => out.push(*id),
        Plan::Loop { children, .. }
        | Plan::Scope { children, .. }
        | Plan::Broadcast { children, .. } => {
            children.iter().for_each(|child| leaves(child, out));
        }
        Plan::Join { a, b, .. } => {
            leaves(a, out);
            leaves(b, out);
        }
        Plan::Install { child, .. } | Plan::Spawn { child, .. } => leaves(child, out),
    }
}

fn build_pool(threads: usize, rng: &mut SplitMix) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .timespan(Timespan::Fixed(Duration::from_micros(
            1 + rng.below(20) as u64,
        )))
        .spin_before_park(Duration::from_micros(rng.below(50) as u64))
        .build()
        .expect("pool")
}

/// Aborts the process with a snapshot of every pool if a round does not report within the limit.
struct Watchdog {
    done: mpsc::Sender<(usize, Vec<Weak<ThreadPool>>)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start() -> Self {
        let (done, rx) = mpsc::channel::<(usize, Vec<Weak<ThreadPool>>)>();
        let thread = std::thread::spawn(move || {
            // Weak: the watchdog must not keep a pool alive past its drop.
            let (mut round, mut watched) = (0, Vec::new());
            loop {
                match rx.recv_timeout(ROUND_LIMIT) {
                    Ok(next) => (round, watched) = next,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        eprintln!(
                            "stress: round {round} has not finished in {ROUND_LIMIT:?}: hung"
                        );
                        if watched.is_empty() {
                            eprintln!("(no pool at the time)");
                        }
                        for (index, pool) in watched.iter().enumerate() {
                            match pool.upgrade() {
                                Some(pool) => eprintln!("pool {index}: {}", pool.snapshot()),
                                None => eprintln!("pool {index}: dropped"),
                            }
                        }
                        std::process::abort();
                    }
                }
            }
        });
        Watchdog {
            done,
            thread: Some(thread),
        }
    }

    /// A round (or pool change) finished; `pools` are what round `next` runs on.
    fn progress(&self, next: usize, pools: &[Arc<ThreadPool>]) {
        let watched = pools.iter().map(Arc::downgrade).collect();
        self.done.send((next, watched)).expect("watchdog alive");
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (closed, _) = mpsc::channel();
        self.done = closed;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn rounds() -> usize {
    std::env::var("PARBENCH_STRESS_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(24)
}

/// Silences injected panics (hundreds would fill the log); any other panic is printed as usual.
/// Rounds of the cross-pool test: `PARBENCH_CROSS_POOL_ROUNDS`, else half of [`rounds`], which
/// keeps `scripts/test.sh`'s release step about as long as before (28 Nov, 2 cores: 10 000 rounds
/// of it alone took 61 s; the single-pool test's 10 000 108 s alone, both together 119 s).
fn cross_pool_rounds() -> usize {
    std::env::var("PARBENCH_CROSS_POOL_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| rounds().div_ceil(2))
}

/// Once per process: the tests of this file run at the same time.
fn silence_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Injected>() {
                default(info);
            }
        }));
    });
}

/// Checks one caller's outcome; returns a description of the failure, if any.
fn check_caller(
    caller: usize,
    outcome: Result<(), Box<dyn Any + Send>>,
    plan: &Plan,
    counters: &Counters,
) -> Result<(), String> {
    let mut ids = Vec::new();
    leaves(plan, &mut ids);
    let fired: Vec<usize> = {
        let fired = counters.fired.lock().unwrap();
        ids.iter()
            .copied()
            .filter(|id| fired.contains(id))
            .collect()
    };
    for &id in &ids {
        let n = counters.hits[id].load(Ordering::Relaxed);
        if n > 1 {
            return Err(format!("caller {caller}: leaf {id} ran {n} times"));
        }
        if fired.is_empty() && n != 1 {
            return Err(format!(
                "caller {caller}: leaf {id} ran {n} times without any panic"
            ));
        }
    }
    match (outcome, fired.is_empty()) {
        (Ok(()), true) => Ok(()),
        (Ok(()), false) => Err(format!(
            "caller {caller}: panics {fired:?} fired but the call returned normally"
        )),
        (Err(payload), _) => match payload.downcast_ref::<Injected>() {
            Some(Injected(id)) if fired.contains(id) => Ok(()),
            Some(Injected(id)) => Err(format!(
                "caller {caller}: re-raised panic of leaf {id}, which is not one of its own {fired:?}"
            )),
            None => Err(format!("caller {caller}: a panic that was not injected")),
        },
    }
}

/// What one stress test runs: its pools, callers and rounds.
struct Setup {
    /// The pools of each generation (threads, and the sink if any: see [`Shape`]); generation
    /// `g` uses `generations[g % generations.len()]`.
    generations: Vec<Shape>,
    /// Outside threads running a plan at once each round.
    callers: usize,
    /// A caller's plan for a round on pools of `shape`.
    plan: fn(&mut SplitMix, &mut Ids, &[Strategy], &Shape) -> Plan,
    rounds: usize,
    seed: u64,
}

/// Runs `setup`'s rounds: every round `callers` outside threads run a random plan each; every
/// [`ROUNDS_PER_POOL`] rounds the pools are dropped (checking their detached tasks) and rebuilt.
fn run(setup: &Setup) {
    silence_injected_panics();
    let strategies = all_strategies();
    let mut rng = SplitMix(setup.seed);
    let watchdog = Watchdog::start();
    let ran = Arc::new(AtomicUsize::new(0));
    let mut spawned_before_pools = 0usize;
    let mut pools: Vec<Arc<ThreadPool>> = Vec::new();
    let mut counters_spawned = 0usize;
    let mut panicking_rounds = 0usize;
    let mut shape = &setup.generations[0];
    let drop_pools = |pools: &mut Vec<Arc<ThreadPool>>, expected: usize, round: usize| {
        pools.clear();
        watchdog.progress(round, &[]);
        assert_eq!(
            ran.load(Ordering::Relaxed),
            expected,
            "round {round}: detached tasks spawned on the dropped pools did not all run"
        );
    };

    for round in 0..setup.rounds {
        if round % ROUNDS_PER_POOL == 0 {
            if !pools.is_empty() {
                // Dropped right after a round, or after idling long enough for workers to park.
                if rng.below(2) == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let expected = spawned_before_pools + counters_spawned;
                drop_pools(&mut pools, expected, round);
            }
            spawned_before_pools = ran.load(Ordering::Relaxed);
            counters_spawned = 0;
            let generations = &setup.generations;
            shape = &generations[(round / ROUNDS_PER_POOL) % generations.len()];
            pools = shape
                .sizes
                .iter()
                .map(|&threads| Arc::new(build_pool(threads, &mut rng)))
                .collect();
            watchdog.progress(round, &pools);
        }
        let current: Vec<&ThreadPool> = pools.iter().map(|pool| &**pool).collect();

        let mut ids = Ids { next: 0 };
        let plans: Vec<Plan> = (0..setup.callers)
            .map(|_| (setup.plan)(&mut rng, &mut ids, &strategies, shape))
            .collect();
        let counters = Counters {
            hits: (0..ids.next).map(|_| AtomicUsize::new(0)).collect(),
            fired: Mutex::new(Vec::new()),
            spawned: AtomicUsize::new(0),
            ran: Arc::clone(&ran),
            misplaced: Mutex::new(Vec::new()),
        };
        let outcomes: Vec<Result<(), Box<dyn Any + Send>>> = std::thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|plan| {
                    let counters = &counters;
                    let current = &current;
                    s.spawn(move || {
                        panic::catch_unwind(AssertUnwindSafe(|| {
                            execute(current, plan, counters);
                        }))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("caller thread"))
                .collect()
        });
        watchdog.progress(round + 1, &pools);
        if !counters.fired.lock().unwrap().is_empty() {
            panicking_rounds += 1;
        }
        let misplaced = std::mem::take(&mut *counters.misplaced.lock().unwrap());
        assert!(
            misplaced.is_empty(),
            "round {round} (pools of {:?} threads): {} leaves ran in another pool, e.g. {:?}",
            shape.sizes,
            misplaced.len(),
            &misplaced[..misplaced.len().min(3)]
        );
        for (caller, (outcome, plan)) in outcomes.into_iter().zip(&plans).enumerate() {
            if let Err(failure) = check_caller(caller, outcome, plan, &counters) {
                panic!(
                    "round {round} (pools of {:?} threads): {failure}",
                    shape.sizes
                );
            }
        }
        counters_spawned += counters.spawned.load(Ordering::Relaxed);
    }
    if !pools.is_empty() {
        let expected = spawned_before_pools + counters_spawned;
        drop_pools(&mut pools, expected, setup.rounds);
    }
    drop(watchdog);
    eprintln!(
        "stress: {} rounds, {panicking_rounds} with injected panics",
        setup.rounds
    );
}

#[test]
fn oversubscribed_pools_of_64_and_256_threads_lose_nothing() {
    // 64 and 256: oversubscribed; 2: fewer workers than outside callers, so every worker stands
    // aside for a guest at times (a lost task there hangs a parked guest).
    let single = |threads| Shape {
        sizes: vec![threads],
        sink: None,
    };
    run(&Setup {
        generations: vec![single(64), single(256), single(2)],
        callers: CALLERS,
        plan: caller_plan,
        rounds: rounds(),
        seed: 0x5EED_2026,
    });
}

/// Outside threads calling into the pools at once in the cross-pool test.
const CROSS_CALLERS: usize = 3;

/// Two or three pools whose work calls into each other: a plan node picks its pool at random, so
/// a loop of one pool runs bodies that `install`, broadcast, join or loop on another, whose work
/// comes back to the first, and broadcasts run inside installs. See the module docs for the
/// sets of pools.
#[test]
fn pools_calling_into_each_other_lose_nothing() {
    let cross = |sizes: &[usize], sink| Shape {
        sizes: sizes.to_vec(),
        sink,
    };
    run(&Setup {
        generations: vec![
            cross(&[2, 3], None),
            cross(&[2, 3, 16], Some(2)),
            cross(&[1, 2, 2], None),
            cross(&[1, 4, 32], Some(2)),
            cross(&[2, 32], None),
        ],
        callers: CROSS_CALLERS,
        plan: caller_plan,
        rounds: cross_pool_rounds(),
        seed: 0xC055_2026,
    });
}

/// Workers waiting away from their pool: more than 16 workers of A in `b.install` at once
/// while B's work spawns into A and waits; chains of waits nested past `MAX_NESTED_WAITS` (16)
/// on a worker of A mixed with shallow ones, calling into B and back from there; loops and
/// joins on the other pool made from that deep. See [`away_plan`].
#[test]
fn pools_waiting_away_from_home_lose_nothing() {
    let pair = |a: usize, b: usize| Shape {
        sizes: vec![a, b],
        sink: None,
    };
    run(&Setup {
        generations: vec![pair(20, 2), pair(24, 3), pair(17, 2)],
        callers: CROSS_CALLERS,
        plan: away_plan,
        rounds: cross_pool_rounds(),
        seed: 0xA3A1_2026,
    });
}
