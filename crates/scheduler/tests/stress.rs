//! Oversubscribed stress: pools of 64 and 256 threads on however few cores the machine has, and
//! of 2 threads, fewer than the outside callers.
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
//! Each round is bounded by a watchdog: a round that does not finish within [`ROUND_LIMIT`]
//! prints a snapshot of the pool (which workers wait on what) and aborts the test process.
//!
//! Rounds: `PARBENCH_STRESS_ROUNDS` (default 24 here; `scripts/test.sh` runs 10 000 in release).

mod fixtures;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak, mpsc};
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

/// What a plan node does.
enum Plan {
    /// Counts its hit; panics if `panics`.
    Leaf {
        id: usize,
        panics: bool,
    },
    /// Spawns a detached task on worker `worker % num_threads` that counts its run.
    Detached {
        id: usize,
        worker: usize,
    },
    /// A parallel loop with `children.len()` iterations, iteration `i` running `children[i]`.
    Loop {
        strategy: Strategy,
        chunks: bool,
        children: Vec<Plan>,
    },
    Join(Box<Plan>, Box<Plan>),
    Scope(Vec<Plan>),
    /// Runs the plan in `install`: at the top of the pool from an outside caller (its calls are
    /// outermost), nested from inside.
    Install(Box<Plan>),
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

fn random_plan(rng: &mut SplitMix, ids: &mut Ids, depth: usize, strategies: &[Strategy]) -> Plan {
    let choice = match depth {
        // A caller's plan: a loop, at times run in `install` (where its calls are outermost too).
        3 if rng.below(4) == 0 => 10,
        3 => 9,
        0 => rng.below(5),
        _ => rng.below(10),
    };
    match choice {
        0..=3 => Plan::Leaf {
            id: ids.take(),
            panics: rng.below(2000) == 0,
        },
        4 => Plan::Detached {
            id: ids.take(),
            worker: rng.below(1 << 16),
        },
        10 => Plan::Install(Box::new(random_plan(rng, ids, 3, strategies))),
        5 if rng.below(4) == 0 => {
            Plan::Install(Box::new(random_plan(rng, ids, depth - 1, strategies)))
        }
        5 => Plan::Join(
            Box::new(random_plan(rng, ids, depth - 1, strategies)),
            Box::new(random_plan(rng, ids, depth - 1, strategies)),
        ),
        6 => {
            let n = 1 + rng.below(4);
            Plan::Scope(
                (0..n)
                    .map(|_| random_plan(rng, ids, depth - 1, strategies))
                    .collect(),
            )
        }
        _ => {
            let n = if depth == 3 {
                16 + rng.below(48)
            } else {
                rng.below(12)
            };
            Plan::Loop {
                strategy: strategies[rng.below(strategies.len())].clone(),
                chunks: rng.below(2) == 0,
                children: (0..n)
                    .map(|_| random_plan(rng, ids, depth.saturating_sub(1), strategies))
                    .collect(),
            }
        }
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
}

fn execute(pool: &ThreadPool, plan: &Plan, counters: &Counters) {
    match plan {
        Plan::Leaf { id, panics } => {
            counters.hits[*id].fetch_add(1, Ordering::Relaxed);
            if *panics {
                counters.fired.lock().unwrap().push(*id);
                panic::panic_any(Injected(*id));
            }
        }
        Plan::Detached { id, worker } => {
            counters.hits[*id].fetch_add(1, Ordering::Relaxed);
            counters.spawned.fetch_add(1, Ordering::Relaxed);
            let ran = Arc::clone(&counters.ran);
            // The free function: the plan runs inside the pool, so it targets this pool.
            parbench_scheduler::spawn_on(worker % pool.num_threads(), move || {
                ran.fetch_add(1, Ordering::Relaxed);
            })
            .expect("worker index in range");
        }
        Plan::Loop {
            strategy,
            chunks,
            children,
        } => {
            if *chunks {
                pool.parallel_for_chunks_with(strategy, 0..children.len(), |chunk| {
                    for i in chunk {
                        execute(pool, &children[i], counters);
                    }
                });
            } else {
                pool.parallel_for_with(strategy, 0..children.len(), |i| {
                    execute(pool, &children[i], counters);
                });
            }
        }
        Plan::Join(a, b) => {
            pool.join(|| execute(pool, a, counters), || execute(pool, b, counters));
        }
        Plan::Scope(children) => pool.scope(|s| {
            for child in children {
                s.spawn(move |_| execute(pool, child, counters));
            }
        }),
        Plan::Install(child) => pool.install(|| execute(pool, child, counters)),
    }
}

/// The leaf ids of `plan`.
fn leaves(plan: &Plan, out: &mut Vec<usize>) {
    match plan {
        Plan::Leaf { id, .. } | Plan::Detached { id, .. } => out.push(*id),
        Plan::Loop { children, .. } | Plan::Scope(children) => {
            children.iter().for_each(|child| leaves(child, out));
        }
        Plan::Join(a, b) => {
            leaves(a, out);
            leaves(b, out);
        }
        Plan::Install(child) => leaves(child, out),
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

/// Aborts the process with a snapshot of the pool if a round does not report within the limit.
struct Watchdog {
    done: mpsc::Sender<Weak<ThreadPool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start() -> Self {
        let (done, rx) = mpsc::channel::<Weak<ThreadPool>>();
        let thread = std::thread::spawn(move || {
            // Weak: the watchdog must not keep a pool alive past its drop.
            let mut watched = Weak::new();
            loop {
                match rx.recv_timeout(ROUND_LIMIT) {
                    Ok(next) => watched = next,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        eprintln!("stress: a round has not finished in {ROUND_LIMIT:?}: hung");
                        match watched.upgrade() {
                            Some(pool) => eprintln!("{}", pool.snapshot()),
                            None => eprintln!("(no pool at the time)"),
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

    /// A round (or pool change) finished; `pool` is what the next one runs on.
    fn progress(&self, pool: Option<&Arc<ThreadPool>>) {
        let watched = pool.map_or_else(Weak::new, Arc::downgrade);
        self.done.send(watched).expect("watchdog alive");
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
fn silence_injected_panics() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if !info.payload().is::<Injected>() {
            default(info);
        }
    }));
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

#[test]
fn oversubscribed_pools_of_64_and_256_threads_lose_nothing() {
    silence_injected_panics();
    let rounds = rounds();
    let strategies = all_strategies();
    let mut rng = SplitMix(0x5EED_2026);
    let watchdog = Watchdog::start();
    let ran = Arc::new(AtomicUsize::new(0));
    let mut spawned_before_pool = 0usize;
    let mut pool: Option<Arc<ThreadPool>> = None;
    let mut counters_spawned = 0usize;
    let mut panicking_rounds = 0usize;

    for round in 0..rounds {
        if round % ROUNDS_PER_POOL == 0 {
            if let Some(old) = pool.take() {
                // Dropped right after a round, or after idling long enough for workers to park.
                if rng.below(2) == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                drop(old);
                watchdog.progress(None);
                assert_eq!(
                    ran.load(Ordering::Relaxed),
                    spawned_before_pool + counters_spawned,
                    "round {round}: detached tasks spawned on the dropped pool did not all run"
                );
            }
            spawned_before_pool = ran.load(Ordering::Relaxed);
            counters_spawned = 0;
            // 64 and 256: oversubscribed; 2: fewer workers than outside callers, so every worker
            // stands aside for a guest at times (a lost task there hangs a parked guest).
            let threads = [64, 256, 2][(round / ROUNDS_PER_POOL) % 3];
            pool = Some(Arc::new(build_pool(threads, &mut rng)));
            watchdog.progress(pool.as_ref());
        }
        let current = pool.as_ref().expect("pool");

        let mut ids = Ids { next: 0 };
        let plans: Vec<Plan> = (0..CALLERS)
            .map(|_| random_plan(&mut rng, &mut ids, 3, &strategies))
            .collect();
        let counters = Counters {
            hits: (0..ids.next).map(|_| AtomicUsize::new(0)).collect(),
            fired: Mutex::new(Vec::new()),
            spawned: AtomicUsize::new(0),
            ran: Arc::clone(&ran),
        };
        let outcomes: Vec<Result<(), Box<dyn Any + Send>>> = std::thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|plan| {
                    let counters = &counters;
                    let pool = &**current;
                    s.spawn(move || {
                        panic::catch_unwind(AssertUnwindSafe(|| execute(pool, plan, counters)))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("caller thread"))
                .collect()
        });
        watchdog.progress(pool.as_ref());
        if !counters.fired.lock().unwrap().is_empty() {
            panicking_rounds += 1;
        }
        for (caller, (outcome, plan)) in outcomes.into_iter().zip(&plans).enumerate() {
            if let Err(failure) = check_caller(caller, outcome, plan, &counters) {
                panic!(
                    "round {round} ({} threads): {failure}",
                    current.num_threads()
                );
            }
        }
        counters_spawned += counters.spawned.load(Ordering::Relaxed);
    }
    if let Some(last) = pool.take() {
        drop(last);
        assert_eq!(
            ran.load(Ordering::Relaxed),
            spawned_before_pool + counters_spawned,
            "detached tasks spawned on the last pool did not all run"
        );
    }
    drop(watchdog);
    eprintln!("stress: {rounds} rounds, {panicking_rounds} with injected panics");
}
