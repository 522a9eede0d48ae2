//! Kernels check their own results: an executor that silently skips work must be caught as a wrong
//! result, and a kernel computes the same on every executor as sequentially.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use parbench_kernels::{
    Executor, ExecutorError, ExecutorKind, KernelError, Params, PinPolicy, SpawnExecutor,
    find_kernel,
};

/// The kernels whose work is parallel loops (trapezoid and sched-time last).
const LOOP_KERNELS: [&str; 9] = [
    "spmv-balanced",
    "spmv-triangle",
    "spmv-hyperbolic",
    "reduce",
    "scan",
    "matmul",
    "transpose",
    "trapezoid",
    "sched-time",
];

type Loop = fn(Range<usize>, &(dyn Fn(Range<usize>) + Sync));
type Task<'a> = &'a (dyn Fn(usize) -> Result<(), ExecutorError> + Sync);
type Tasks = fn(&Rewired, usize, Task<'_>) -> Result<(), ExecutorError>;

/// A test executor whose loops and task calls are rewired: broken ones that lose or repeat work,
/// or correct ones in an unusual order. `join` runs its closures in order, or `b` first.
struct Rewired {
    kind: ExecutorKind,
    loops: Loop,
    tasks: Tasks,
    b_first: bool,
    /// `for_each_task` calls in progress, for rewirings of the outermost call only.
    depth: AtomicUsize,
}

impl Rewired {
    fn new(loops: Loop, tasks: Tasks) -> Self {
        Rewired {
            kind: ExecutorKind::Seq,
            loops,
            tasks,
            b_first: false,
            depth: AtomicUsize::new(0),
        }
    }
}

impl Executor for Rewired {
    fn kind(&self) -> ExecutorKind {
        self.kind
    }
    fn threads(&self) -> usize {
        2
    }
    fn for_chunks(&self, range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
        if !range.is_empty() {
            (self.loops)(range, body);
        }
    }
    fn join(
        &self,
        a: &mut (dyn FnMut() + Send),
        b: &mut (dyn FnMut() + Send),
    ) -> Result<(), ExecutorError> {
        if self.b_first {
            b();
            a();
        } else {
            a();
            b();
        }
        Ok(())
    }
    fn for_each_task(&self, n: usize, task: Task<'_>) -> Result<(), ExecutorError> {
        // SeqCst: a test double; only nesting depth, not performance, matters here.
        self.depth.fetch_add(1, Ordering::SeqCst);
        let result = (self.tasks)(self, n, task);
        self.depth.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

/// The whole range in one chunk, as `seq` runs it.
fn whole(range: Range<usize>, body: &(dyn Fn(Range<usize>) + Sync)) {
    body(range);
}

/// Runs `task(i)` for every `i` of `indices`, each on a thread of its own, all at the same time
/// (so tasks that wait for each other still meet).
fn on_threads(indices: impl Iterator<Item = usize>, task: Task<'_>) -> Result<(), ExecutorError> {
    std::thread::scope(|scope| {
        let tasks: Vec<_> = indices.map(|i| scope.spawn(move || task(i))).collect();
        tasks
            .into_iter()
            .try_for_each(|task| task.join().expect("a task panicked"))
    })
}

/// A broken executor: every loop runs only the first half of its range, and every task call the
/// first half of its tasks.
fn half_loops() -> Rewired {
    Rewired::new(
        |range, body| body(range.start..range.start + range.len().div_ceil(2)),
        |_, n, task| (0..n.div_ceil(2)).try_for_each(task),
    )
}

/// A broken executor: its outermost `for_each_task` hands out task indices off by one — task 0
/// runs twice and the last task never — each on a thread of its own, all at the same time.
/// Nested calls and loops run correctly.
fn first_task_twice_last_never() -> Rewired {
    Rewired {
        kind: ExecutorKind::Spawn,
        ..Rewired::new(whole, |exec, n, task| {
            // SeqCst: as in `for_each_task`.
            let outermost = exec.depth.load(Ordering::SeqCst) == 1;
            on_threads(
                (0..n).map(|i| if outermost { i.saturating_sub(1) } else { i }),
                task,
            )
        })
    }
}

/// A broken executor: `for_each_task` runs every task twice, one run after the other. Loops and
/// joins run correctly.
fn every_task_twice() -> Rewired {
    Rewired::new(whole, |_, n, task| {
        (0..n).try_for_each(|i| task(i).and_then(|()| task(i)))
    })
}

/// A broken executor: every loop runs the first half of its range twice and the second half
/// never (a chunk handed out twice, its neighbour lost: the loop still does as many iterations).
fn first_half_twice() -> Rewired {
    Rewired::new(
        |range, body| {
            let half = range.len() / 2;
            if half > 0 {
                body(range.start..range.start + half);
                body(range.start..range.start + half);
            }
            if range.len() % 2 == 1 {
                body(range.end - 1..range.end);
            }
        },
        |_, n, task| (0..n).try_for_each(task),
    )
}

/// A correct executor with unusual habits: loops run one iteration per chunk, last iteration
/// first; `join` runs its second closure first; `for_each_task` starts its tasks last first, each
/// on a thread of its own, all at the same time.
fn backwards() -> Rewired {
    Rewired {
        kind: ExecutorKind::Spawn,
        b_first: true,
        ..Rewired::new(
            |range, body| range.rev().for_each(|i| body(i..i + 1)),
            |_, n, task| on_threads((0..n).rev(), task),
        )
    }
}

/// Runs `name` with `params` (prepared for 2 threads) on each of `executors`; panics unless the
/// kernel reports a wrong result on every one.
fn assert_wrong_result(name: &str, params: &Params, executors: &[Rewired]) {
    let kernel = find_kernel(name).unwrap();
    let mut prepared = kernel.prepare(params, 2).unwrap();
    for exec in executors {
        match prepared.run(exec) {
            Err(KernelError::WrongResult { kernel, .. }) => assert_eq!(kernel, name),
            other => panic!("{name} {params:?}: expected a wrong result, got {other:?}"),
        }
    }
}

/// [`assert_wrong_result`] for each kernel of `names`, with its small parameters.
fn assert_wrong_results(names: &[&str], exec: Rewired) {
    let executors = [exec];
    for name in names {
        assert_wrong_result(name, &Params::small(find_kernel(name).unwrap()), &executors);
    }
}

/// Runs `name` with `params` on [`first_task_twice_last_never`]; panics unless the kernel reports a
/// wrong result.
fn assert_off_by_one_tasks_are_a_wrong_result(name: &str, params: &Params) {
    assert_wrong_result(name, params, &[first_task_twice_last_never()]);
}

#[test]
fn round_notices_a_table_served_twice_and_one_never() {
    // Two tables of 8 philosophers: table 0 twice instead of tables 0 and 1 eats all 16 · meals
    // meals and uses every fork 2 · meals times (the even philosophers eat twice as often).
    let params = Params::new()
        .with("n", "16")
        .with("meals", "50")
        .with("spread", "false");
    assert_off_by_one_tasks_are_a_wrong_result("round", &params);
}

#[test]
fn nqueens_notices_a_subtree_searched_twice_and_its_mirror_image_never() {
    // One task per column of the first queen: column 0 twice instead of columns 0 and 7 counts
    // the 92 solutions all the same (a board's mirror image has as many).
    let params = Params::new().with("n", "8").with("cutoff", "1");
    assert_off_by_one_tasks_are_a_wrong_result("nqueens", &params);
}

#[test]
fn spawn_cost_notices_a_task_run_twice_and_one_never() {
    // Every call still runs as many tasks as it asked for.
    let params = Params::new().with("max", "8").with("reps", "2");
    assert_off_by_one_tasks_are_a_wrong_result("spawn-cost", &params);
}

#[test]
fn stressors_notice_a_task_run_twice() {
    // A second run of a task leaves its chains as right as the first, but does work the
    // operations-per-second metric does not count.
    assert_wrong_results(&["fp-add", "int-div", "load-dep"], every_task_twice());
}

#[test]
fn a_chunk_run_in_place_of_another_is_a_wrong_result() {
    assert_wrong_results(&LOOP_KERNELS, first_half_twice());
}

#[test]
fn every_kernel_validates_whatever_order_and_chunks_a_correct_executor_picks() {
    // A check too exact for a legitimate reordering (a floating-point sum compared bit for bit,
    // a result that depends on chunk boundaries) fails here.
    for kernel in parbench_kernels::registry() {
        let params = Params::small(*kernel);
        let mut prepared = kernel.prepare(&params, 2).unwrap();
        for _ in 0..2 {
            prepared
                .run(&backwards())
                .unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
        }
    }
    // trapezoid's methods differ in how chunks add to the total.
    for method in ["spin", "mutex", "semaphore", "atomic", "local"] {
        let params = Params::new()
            .with("n", "3000")
            .with("block", "7")
            .with("method", method);
        let mut prepared = find_kernel("trapezoid")
            .unwrap()
            .prepare(&params, 2)
            .unwrap();
        prepared
            .run(&backwards())
            .unwrap_or_else(|e| panic!("trapezoid {method}: {e}"));
    }
}

#[test]
fn branch_and_bound_kernels_notice_a_task_lost_or_run_twice() {
    // The optimum alone can survive either: here half of every call's tasks never run (the
    // optimum lies in the other half) or every task runs twice, and the run searched a different
    // tree from the one it is timed for.
    for (name, params) in [
        ("qap", Params::new().with("n", "6").with("cutoff", "2")),
        ("floorplan", Params::new().with("cutoff", "2")),
    ] {
        assert_wrong_result(name, &params, &[half_loops(), every_task_twice()]);
    }
}

fn small(name: &str) -> (Params, &'static dyn parbench_kernels::Kernel) {
    let kernel = find_kernel(name).unwrap();
    (Params::small(kernel), kernel)
}

#[test]
fn skipped_work_is_a_wrong_result() {
    let others = ["spawn-cost", "fp-add", "load-dep"];
    assert_wrong_results(&[&LOOP_KERNELS[..], &others].concat(), half_loops());
}

#[test]
fn loop_kernels_agree_with_sequential_runs_on_parallel_executors() {
    // Each kernel compares against its own sequential reference; running the same prepared input
    // on seq and on the parallel executors in turn also checks that runs do not disturb each other.
    // trapezoid has a test of its own below; sched-time's result is its timing.
    for name in &LOOP_KERNELS[..7] {
        let (params, kernel) = small(name);
        let mut prepared = kernel.prepare(&params, 3).unwrap();
        for kind in [
            ExecutorKind::Seq,
            ExecutorKind::Rayon,
            ExecutorKind::Spawn,
            ExecutorKind::Tree,
            ExecutorKind::Seq,
        ] {
            let exec = kind.build(3, PinPolicy::None).unwrap();
            prepared
                .run(exec.as_ref())
                .unwrap_or_else(|e| panic!("{name} on {kind}: {e}"));
        }
    }
}

#[test]
fn trapezoid_matches_the_integral_for_every_method_and_lock_on_every_executor() {
    // The lock is left at its default (std) for the methods that take none.
    let methods = ["spin", "mutex", "semaphore", "atomic", "local"].map(|m| (m, None));
    let locks = ["tas", "ttas", "ticket"].map(|lock| ("mutex", Some(lock)));
    for (method, lock) in methods.into_iter().chain(locks) {
        let kernel = find_kernel("trapezoid").unwrap();
        let mut params = Params::new()
            .with("n", "20000")
            .with("block", "8")
            .with("method", method);
        if let Some(lock) = lock {
            params.set("lock", lock);
        }
        let lock = lock.unwrap_or("std");
        let mut prepared = kernel.prepare(&params, 2).unwrap();
        for kind in ExecutorKind::ALL {
            let exec = kind.build(2, PinPolicy::None).unwrap();
            prepared
                .run(exec.as_ref())
                .unwrap_or_else(|e| panic!("{method}/{lock} on {kind}: {e}"));
        }
    }
    let bad = Params::new().with("method", "lock-free-ish");
    let error = find_kernel("trapezoid")
        .unwrap()
        .prepare(&bad, 2)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("spin, mutex, semaphore, atomic, local"),
        "{error}"
    );
}

#[test]
fn spmv_reads_a_matrix_market_file_and_reports_bad_files() {
    let dir = std::env::temp_dir().join(format!("parbench-kernels-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.mtx");
    std::fs::write(
        &good,
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2.5\n3 1 -1\n2 2 1e3\n",
    )
    .unwrap();
    let bad = dir.join("bad.mtx");
    std::fs::write(
        &bad,
        "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 9 2.5\n",
    )
    .unwrap();
    let kernel = find_kernel("spmv-hyperbolic").unwrap();
    let exec = ExecutorKind::Rayon.build(2, PinPolicy::None).unwrap();

    let mut prepared = kernel
        .prepare(&Params::new().with("matrix", good.to_string_lossy()), 2)
        .unwrap();
    prepared.run(exec.as_ref()).unwrap();

    let error = kernel
        .prepare(&Params::new().with("matrix", bad.to_string_lossy()), 2)
        .err()
        .unwrap();
    assert!(
        matches!(error, KernelError::Input(ref e) if e.line == 3),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}:3: ", bad.display())),
        "{error}"
    );

    let missing = dir.join("missing.mtx");
    let error = kernel
        .prepare(&Params::new().with("matrix", missing.to_string_lossy()), 2)
        .err()
        .unwrap();
    assert!(matches!(error, KernelError::Io { .. }), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let cases = [
        ("spmv-balanced", "width", "0"),
        ("spmv-balanced", "density", "2"),
        ("spmv-balanced", "rows", "99999999999"),
        ("scan", "n", "1000"),
        ("matmul", "n", "0"),
        ("transpose", "n", "x"),
        ("reduce", "n", "-3"),
        ("trapezoid", "n", "0"),
        ("trapezoid", "lock", "mcs"),
        ("trapezoid", "backend", "z80"),
        ("spawn-cost", "reps", "0"),
        ("load-dep", "kb", "0"),
        ("fp-add", "iters", "0"),
    ];
    for (name, param, value) in cases {
        let kernel = find_kernel(name).unwrap();
        match kernel.prepare(&Params::new().with(param, value), 2) {
            Err(KernelError::BadParam {
                kernel, name: p, ..
            }) => assert_eq!((kernel, p.as_str()), (name, param)),
            Err(other) => panic!("{name} {param}={value}: unexpected error {other}"),
            Ok(_) => panic!("{name} {param}={value}: accepted"),
        }
    }
}

#[test]
fn a_refused_thread_is_a_kernel_error_not_a_timing() {
    // A stack the OS cannot provide makes every thread creation fail for real.
    let refusing = SpawnExecutor::new(2).with_stack_size(1 << 60);
    for name in ["spmv-balanced", "matmul", "fp-add", "spawn-cost"] {
        let (params, kernel) = small(name);
        let mut prepared = kernel.prepare(&params, 2).unwrap();
        match prepared.run(&refusing) {
            Err(KernelError::Executor(ExecutorError::Spawn(_))) => {}
            other => panic!("{name}: expected a spawn error, got {other:?}"),
        }
    }
}
