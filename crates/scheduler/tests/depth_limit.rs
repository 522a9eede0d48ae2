//! Calls made with `MAX_NESTED_WAITS` (16) waits on the calling thread's stack run there alone,
//! in order — but still in the pool they were made on, as rayon's semantics require: inside
//! `x.join(..)`, a loop body of `x` or a task of `x.scope(..)`, `current_num_threads()` is x's,
//! `current_thread_index()` is the thread's index in x (or `None`), and the free functions act
//! on x — however deep the thread is, and whichever pool's work it is running.
//!
//! The depth is reached deterministically: 16 broadcasts nested on the worker of a one-thread
//! pool, each waiting for the next one's job, which only that worker may run.

mod fixtures;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{self, ThreadId};
use std::time::Duration;

use fixtures::{all_strategies, pool};
use parbench_scheduler::ThreadPool;

/// `MAX_NESTED_WAITS`: calls made with this many waits on the stack run sequentially.
const LIMIT: u32 = 16;

/// Runs `f` on the worker of `pool` (of one thread) with [`LIMIT`] waits on its stack, inside
/// that pool's context: 16 broadcasts nested on the worker, each waiting for the job of the next.
fn at_depth_limit<R: Send>(pool: &ThreadPool, f: impl FnOnce() -> R + Send) -> R {
    fn nest(pool: &ThreadPool, waits: u32, run: &(dyn Fn() + Sync)) {
        if waits == 0 {
            run();
        } else {
            pool.broadcast(|_| nest(pool, waits - 1, run));
        }
    }
    assert_eq!(
        pool.num_threads(),
        1,
        "the depth is built on a one-thread pool"
    );
    let (f, out) = (Mutex::new(Some(f)), Mutex::new(None));
    pool.broadcast(|_| {
        nest(pool, LIMIT, &|| {
            let f = f.lock().unwrap().take().expect("runs once");
            *out.lock().unwrap() = Some(f());
        });
    });
    out.into_inner().unwrap().expect("ran")
}

/// What code running in a call sees of the pool it runs in.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    num_threads: usize,
    index: Option<usize>,
    /// The free `broadcast`'s worker indices.
    broadcast: Vec<usize>,
    /// Whether a free `join` and loop called here ran on this thread alone (still that deep).
    nested_ran_here: bool,
}

fn look() -> Seen {
    let me = thread::current().id();
    let here = |ran_on: &Mutex<Vec<ThreadId>>| ran_on.lock().unwrap().iter().all(|&id| id == me);
    let ran_on = Mutex::new(Vec::new());
    let record = || ran_on.lock().unwrap().push(thread::current().id());
    parbench_scheduler::join(record, record);
    parbench_scheduler::parallel_for(0..64, |_| record());
    Seen {
        num_threads: parbench_scheduler::current_num_threads(),
        index: parbench_scheduler::current_thread_index(),
        broadcast: parbench_scheduler::broadcast(|ctx| ctx.index()),
        nested_ran_here: here(&ran_on),
    }
}

/// Asserts that every [`Seen`] recorded in `seen` is `expected`, naming the call that differed.
fn assert_all_seen(seen: Mutex<Vec<(String, Seen)>>, expected: &Seen) {
    let seen = seen.into_inner().unwrap();
    assert!(!seen.is_empty());
    for (call, seen) in &seen {
        assert_eq!(seen, expected, "in {call}");
    }
}

/// Makes `calls` on x, a pool of three threads, from the worker of another pool 16 waits deep;
/// the code they run calls `look_in(name)` to record what it sees ([`look`]), which must be x
/// as a thread that is not one of its workers sees it.
fn assert_deep_calls_see_x(calls: impl FnOnce(&ThreadPool, &(dyn Fn(String) + Sync)) + Send) {
    let (deep, x) = (pool(1), pool(3));
    let seen = Mutex::new(Vec::new());
    at_depth_limit(&deep, || {
        calls(&x, &|name| seen.lock().unwrap().push((name, look())));
    });
    let outsider = Seen {
        num_threads: 3,
        index: None,
        broadcast: vec![0, 1, 2],
        nested_ran_here: true,
    };
    assert_all_seen(seen, &outsider);
}

/// `x.join(a, b)` on a worker of another pool, 16 waits deep: `a` and `b` run in x.
#[test]
fn join_called_at_the_depth_limit_runs_in_its_pool() {
    assert_deep_calls_see_x(|x, look_in| {
        x.join(|| look_in("join's a".into()), || look_in("join's b".into()));
    });
}

/// The loops of `x` (every strategy, in chunks, reductions) on a worker of another pool, 16
/// waits deep: their bodies run in x.
#[test]
fn loops_called_at_the_depth_limit_run_in_their_pool() {
    assert_deep_calls_see_x(|x, look_in| {
        for strategy in all_strategies() {
            x.parallel_for_with(&strategy, 0..3, |i| {
                look_in(format!("{strategy:?} body {i}"));
            });
            x.parallel_for_chunks_with(&strategy, 0..3, |chunk| {
                look_in(format!("{strategy:?} chunk {chunk:?}"));
            });
        }
        let sum = x.parallel_reduce(
            0..3,
            || 0,
            |i| {
                look_in(format!("parallel_reduce's map of {i}"));
                i
            },
            |a, b| a + b,
        );
        assert_eq!(sum, 3);
    });
}

/// `x.scope(..)` and `x.install(..)` on a worker of another pool, 16 waits deep: they enter x
/// (they do not run sequentially themselves), so their closures and tasks run in x.
#[test]
fn scope_and_install_called_at_the_depth_limit_run_in_their_pool() {
    assert_deep_calls_see_x(|x, look_in| {
        x.scope(|s| {
            look_in("scope".into());
            s.spawn(|_| look_in("scope's task".into()));
        });
        x.install(|| look_in("install".into()));
    });
}

/// A worker of x, 16 waits deep, that entered another pool (a guest of it, through
/// `other.install`) and calls on x again: rayon's `current_thread_index()` there is its index in
/// x, and `current_num_threads()` x's.
#[test]
fn a_worker_calling_on_its_pool_at_the_depth_limit_keeps_its_index() {
    let (x, other) = (pool(1), pool(3));
    let expected = Seen {
        num_threads: 1,
        index: Some(0),
        broadcast: vec![0],
        nested_ran_here: true,
    };
    let seen = Mutex::new(Vec::new());
    at_depth_limit(&x, || {
        other.install(|| {
            let look_in = |name: &str| seen.lock().unwrap().push((name.to_owned(), look()));
            x.join(|| look_in("join's a"), || look_in("join's b"));
            x.parallel_for(0..2, |_| look_in("loop body"));
            x.install(|| look_in("install"));
        });
    });
    assert_all_seen(seen, &expected);
}

/// A call at the depth limit that must wait all the same — a `broadcast` on x in the body of
/// `x.join` on a thread that is no worker of x, which entered x only for that sequential call —
/// waits without running x's work: it is no participant of x, and what x's work would push on
/// the deque of that context nobody else could take. Here x's only worker is held in a task,
/// so that the broadcast waits, while a probe task is queued on x: the probe must run on x's
/// worker once it is released (100 ms after the `join` body started), not on the waiting thread.
/// (A waiting thread that did not look for x's work within those 100 ms would let this pass
/// without the fix; with it, the probe never runs there.)
#[test]
fn a_wait_at_the_depth_limit_in_a_pool_entered_for_a_sequential_call_runs_none_of_its_work() {
    let (deep, x) = (pool(1), pool(1));
    let deep_worker = deep.broadcast(|_| thread::current().id())[0];
    let release = Arc::new(AtomicBool::new(false));
    let (held_tx, held) = mpsc::channel();
    let hold = Arc::clone(&release);
    x.spawn(move || {
        held_tx.send(()).unwrap();
        // Relaxed: only holds the worker back; nothing is published through it.
        while !hold.load(Ordering::Relaxed) {
            thread::yield_now();
        }
    });
    held.recv().unwrap();
    let probe = Arc::new(Mutex::new(None));
    let ran_on = Arc::clone(&probe);
    x.spawn(move || *ran_on.lock().unwrap() = Some(thread::current().id()));
    let (entered_tx, entered) = mpsc::channel();
    let releaser = thread::spawn(move || {
        entered.recv().unwrap();
        thread::sleep(Duration::from_millis(100));
        // Relaxed: see above.
        release.store(true, Ordering::Relaxed);
    });
    let workers = at_depth_limit(&deep, || {
        x.join(
            || {
                entered_tx.send(()).unwrap();
                parbench_scheduler::broadcast(|ctx| ctx.index())
            },
            || (),
        )
        .0
    });
    assert_eq!(workers, [0]);
    releaser.join().unwrap();
    // Dropping x runs every spawned task before its worker exits.
    drop(x);
    let ran_on = probe.lock().unwrap().expect("the probe ran");
    assert_ne!(
        ran_on, deep_worker,
        "x's task ran on the thread waiting in x's broadcast"
    );
}
