//! The executor contract, checked on every executor: loops cover their range exactly once (also
//! when nested), join runs both sides, tasks run once each, and task errors come back.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use parbench_kernels::{Executor, ExecutorError, ExecutorKind, PinPolicy};

fn executors(threads: usize) -> Vec<Box<dyn Executor>> {
    ExecutorKind::ALL
        .into_iter()
        .map(|kind| {
            kind.build(threads, PinPolicy::None)
                .unwrap_or_else(|e| panic!("building {kind}: {e}"))
        })
        .collect()
}

fn counters(n: usize) -> Vec<AtomicUsize> {
    (0..n).map(|_| AtomicUsize::new(0)).collect()
}

fn assert_each_once(hits: &[AtomicUsize], what: &str) {
    if let Some(i) = hits.iter().position(|h| h.load(Relaxed) != 1) {
        panic!("{what}: index {i} ran {} times", hits[i].load(Relaxed));
    }
}

#[test]
fn loops_cover_their_range_exactly_once() {
    for threads in [1, 2, 3] {
        for exec in executors(threads) {
            for (start, len) in [(0, 0), (0, 1), (7, 2), (3, 1000), (0, 100_003)] {
                let hits = counters(start + len);
                exec.for_chunks(start..start + len, &|chunk| {
                    assert!(!chunk.is_empty(), "{}: empty chunk", exec.kind());
                    for i in chunk {
                        hits[i].fetch_add(1, Relaxed);
                    }
                });
                assert_each_once(
                    &hits[start..],
                    &format!("{} threads={threads} len={len}", exec.kind()),
                );
                assert!(hits[..start].iter().all(|h| h.load(Relaxed) == 0));
            }
        }
    }
}

#[test]
fn nested_loops_cover_every_pair_exactly_once() {
    for exec in executors(2) {
        let (rows, cols) = (37, 53);
        let hits = counters(rows * cols);
        exec.for_chunks(0..rows, &|outer| {
            for i in outer {
                exec.for_chunks(0..cols, &|inner| {
                    for j in inner {
                        hits[i * cols + j].fetch_add(1, Relaxed);
                    }
                });
            }
        });
        assert_each_once(&hits, &format!("{} nested", exec.kind()));
    }
}

fn fib(exec: &dyn Executor, n: u64) -> Result<u64, ExecutorError> {
    if n < 2 {
        return Ok(n);
    }
    let (mut a, mut b) = (Ok(0), Ok(0));
    exec.join(&mut || a = fib(exec, n - 1), &mut || b = fib(exec, n - 2))?;
    Ok(a? + b?)
}

#[test]
fn recursive_join_runs_both_sides() {
    for exec in executors(2) {
        assert_eq!(fib(exec.as_ref(), 12).unwrap(), 144, "{}", exec.kind());
    }
}

#[test]
fn tasks_run_once_each_and_nest() {
    for exec in executors(2) {
        let hits = counters(12 * 5);
        exec.for_each_task(12, &|i| {
            exec.for_each_task(5, &|j| {
                hits[i * 5 + j].fetch_add(1, Relaxed);
                Ok(())
            })
        })
        .unwrap();
        assert_each_once(&hits, &format!("{} tasks", exec.kind()));
    }
}

#[test]
fn a_task_error_is_returned() {
    for exec in executors(2) {
        let result = exec.for_each_task(8, &|i| {
            if i == 5 {
                Err(ExecutorError::ZeroThreads)
            } else {
                Ok(())
            }
        });
        assert!(
            matches!(result, Err(ExecutorError::ZeroThreads)),
            "{}",
            exec.kind()
        );
    }
}

#[test]
fn executors_report_their_kind_and_threads() {
    for kind in ExecutorKind::ALL {
        let exec = kind.build(3, PinPolicy::None).unwrap();
        assert_eq!(exec.kind(), kind);
        let expected = if kind == ExecutorKind::Seq { 1 } else { 3 };
        assert_eq!(exec.threads(), expected, "{kind}");
        assert_eq!(kind.name().parse::<ExecutorKind>().unwrap(), kind);
        assert!(matches!(
            kind.build(0, PinPolicy::None),
            Err(ExecutorError::ZeroThreads)
        ));
    }
}

#[test]
fn pinned_executors_still_compute() {
    for kind in ExecutorKind::ALL {
        let exec = kind.build(2, PinPolicy::Compact).unwrap();
        let total =
            parbench_kernels::parallel_sum(exec.as_ref(), 0..1000, |r| r.map(|i| i as u64).sum());
        assert_eq!(total, 499_500, "{kind}");
    }
}
