//! Every kernel of the registry, run on an executor that breaks one call (a piece doubled in place
//! of its neighbour, skipped, or run again; one side of a `join` twice and the other never), in
//! the first call, in later ones and in nested ones: each run must fail its own check with
//! [`KernelError::WrongResult`]. A kernel whose result cannot show a fault is listed in
//! [`EXEMPT`] with the reason, and the test checks the list is exactly the faults it misses, so
//! a new kernel must be classified here.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::kernel::{KernelError, Params};
use crate::kernels::checked_tasks::broken::{At, Call, Entry, Fault, Faulty};
use crate::registry::registry;

/// How each kernel is run: with which threads and parameters (beyond its small ones), and the
/// calls it makes (checked against a right run, so the table cannot go stale).
struct Case {
    kernel: &'static str,
    /// What the executor says its thread count is (everything still runs on one thread).
    threads: usize,
    params: &'static [(&'static str, &'static str)],
    entries: &'static [Entry],
    /// Whether it makes calls from inside another call's pieces.
    nested: bool,
}

const fn case(kernel: &'static str, entries: &'static [Entry], nested: bool) -> Case {
    Case {
        kernel,
        threads: 1,
        params: &[],
        entries,
        nested,
    }
}

/// An SMT-bench stressor: one task per thread, so three, to have a neighbour in the middle.
const fn stressor(kernel: &'static str) -> Case {
    Case {
        threads: 3,
        ..case(kernel, TASKS, false)
    }
}

const CHUNKS: &[Entry] = &[Entry::Chunks];
const TASKS: &[Entry] = &[Entry::Tasks];

const CASES: &[Case] = &[
    case("spmv-balanced", CHUNKS, false),
    case("spmv-triangle", CHUNKS, false),
    case("spmv-hyperbolic", CHUNKS, false),
    case("reduce", CHUNKS, false),
    case("scan", CHUNKS, false),
    case("matmul", CHUNKS, true),
    case("transpose", CHUNKS, true),
    Case {
        params: &[("per-thread", "4")],
        threads: 3,
        ..case("sched-time", CHUNKS, false)
    },
    case("trapezoid", CHUNKS, false),
    Case {
        params: TRAPEZOID_BLOCKS_OF_ONE,
        ..case("trapezoid", CHUNKS, false)
    },
    case("spawn-cost", TASKS, false),
    stressor("fp-add"),
    stressor("fp-mul"),
    stressor("fp-div"),
    stressor("int-add"),
    stressor("int-mul"),
    stressor("int-div"),
    stressor("branch"),
    stressor("load-dep"),
    case("nqueens", TASKS, true),
    case("qap", TASKS, true),
    case("floorplan", TASKS, true),
    // One table per thread, and the tables meet at a barrier: on one thread, one table.
    case("round", TASKS, false),
];

/// A fault a kernel's check misses, and why that is right or accepted.
struct Exempt {
    kernel: &'static str,
    /// The parameters of the case it applies to, beyond the kernel's small ones.
    params: &'static [(&'static str, &'static str)],
    entry: Entry,
    /// The broken call, if only one.
    call: Option<usize>,
    faults: &'static [Fault],
    reason: &'static str,
}

/// `par_chunks_mut` on an executor other than this crate's hands each `&mut` chunk out once
/// (through a lock per chunk over the executor's `for_chunks`; the native slice APIs by
/// construction): a chunk run again finds its slot taken and does nothing, so the work and the
/// result are right. A chunk doubled in place of its neighbour leaves the neighbour unwritten
/// (NaN or `u32::MAX`), and that is caught.
const ONCE_PER_CHUNK: &str = "par_chunks_mut runs a chunk handed out twice only once";

const fn chunk_again(kernel: &'static str) -> Exempt {
    Exempt {
        kernel,
        params: &[],
        entry: Entry::Chunks,
        call: None,
        faults: &[Fault::Again],
        reason: ONCE_PER_CHUNK,
    }
}

/// Trapezoid at blocks of one (the pthreads study's setting), n = 2^18.
const TRAPEZOID_BLOCKS_OF_ONE: &[(&str, &str)] = &[("n", "2^18"), ("block", "1")];

const EXEMPT: &[Exempt] = &[
    chunk_again("spmv-balanced"),
    chunk_again("spmv-triangle"),
    chunk_again("spmv-hyperbolic"),
    chunk_again("matmul"),
    chunk_again("transpose"),
    // The timed call is checked only against the tolerance: the coverage check runs in the
    // second, untimed call (call 1, whose faults are all caught), to keep its atomics out of the
    // section that measures the methods' critical sections (trapezoid's module doc). A block of
    // one run in place of its neighbour changes the integral by about h²·|f'| ≤ 2.6/n² (8/n³ near
    // x = 0), below the tolerance's rounding bound 4·n·ε at n = 2^18; a lost block (≥ 2/n) is
    // caught. An executor that breaks only the timed call and never the check's goes unseen, and
    // no check of the timed call's total could see it: near x = 0 the fault leaves the total
    // unchanged bit for bit, elsewhere it moves it by less than a tolerance sound for every order
    // of the additions must allow for rounding (trapezoid's module doc).
    Exempt {
        kernel: "trapezoid",
        params: TRAPEZOID_BLOCKS_OF_ONE,
        entry: Entry::Chunks,
        call: Some(0),
        faults: &[
            Fault::Doubled(At::First),
            Fault::Doubled(At::Middle),
            Fault::Doubled(At::Last),
        ],
        reason: "the timed call's coverage is checked in an untimed second call",
    },
];

fn params_of(case: &Case) -> Params {
    let kernel = crate::find_kernel(case.kernel).unwrap();
    kernel
        .small_params()
        .iter()
        .chain(case.params)
        .fold(Params::new(), |params, &(name, value)| {
            params.with(name, value)
        })
}

/// What [`run_on`] returns for [`KernelError::WrongResult`].
const WRONG_RESULT: &str = "wrong result";

/// Runs `case` once on `exec` (prepared anew: a broken run may leave a kernel's state wrong);
/// `Err` says how it failed.
fn run_on(case: &Case, exec: &Faulty) -> Result<(), String> {
    let kernel = crate::find_kernel(case.kernel).unwrap();
    let mut prepared = kernel
        .prepare(&params_of(case), case.threads)
        .map_err(|e| e.to_string())?;
    match catch_unwind(AssertUnwindSafe(|| prepared.run(exec))) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(KernelError::WrongResult { .. })) => Err(WRONG_RESULT.into()),
        Ok(Err(other)) => Err(format!("{other}")),
        Err(_) => Err("panicked".into()),
    }
}

/// The calls of each entry point to break: all of them when there are few, else the first two,
/// the last, the first and last nested ones and some in between.
fn targets(calls: &[Call], entry: Entry) -> BTreeSet<usize> {
    let of_entry: Vec<&Call> = calls.iter().filter(|c| c.entry == entry).collect();
    let n = of_entry.len();
    if n <= 48 {
        return (0..n).collect();
    }
    let mut picked: BTreeSet<usize> = [0, 1, n - 1].into();
    picked.extend((1..16).map(|k| k * n / 16));
    picked.extend(of_entry.iter().position(|c| c.nested));
    picked.extend(of_entry.iter().rposition(|c| c.nested));
    picked
}

#[test]
fn every_kernel_fails_its_check_on_a_broken_executor() {
    let names: BTreeSet<&str> = registry().iter().map(|k| k.name()).collect();
    let cased: BTreeSet<&str> = CASES.iter().map(|c| c.kernel).collect();
    assert_eq!(names, cased, "every kernel of the registry needs a case");
    let mut unexplained = Vec::new();
    let mut exemptions_used = BTreeSet::new();
    for case in CASES {
        let right = Faulty::right(case.threads);
        assert_eq!(
            run_on(case, &right),
            Ok(()),
            "{} on a right executor",
            case.kernel
        );
        let calls = right.calls();
        let entries: BTreeSet<Entry> = calls.iter().map(|c| c.entry).collect();
        assert_eq!(
            entries,
            case.entries.iter().copied().collect(),
            "{}'s entry points",
            case.kernel
        );
        assert_eq!(
            calls.iter().any(|c| c.nested),
            case.nested,
            "{}: nested calls",
            case.kernel
        );
        for entry in [Entry::Chunks, Entry::Tasks, Entry::Join] {
            let faults: &[Fault] = if entry == Entry::Join {
                &Fault::OF_JOIN
            } else {
                &Fault::OF_PIECES
            };
            for call in targets(&calls, entry) {
                for &fault in faults {
                    let exec = Faulty::breaking(case.threads, entry, call, fault);
                    let result = run_on(case, &exec);
                    let outcome = match (exec.struck(), result) {
                        (true, Err(e)) if e == WRONG_RESULT => continue,
                        (false, Ok(())) => continue,
                        (true, Ok(())) => "missed".to_owned(),
                        (_, Err(e)) => e,
                    };
                    let exemption = EXEMPT.iter().position(|x| {
                        (x.kernel, x.params, x.entry) == (case.kernel, case.params, entry)
                            && x.faults.contains(&fault)
                            && x.call.is_none_or(|c| c == call)
                    });
                    match exemption {
                        Some(x) if outcome == "missed" => {
                            exemptions_used.insert((x, format!("{fault:?}")));
                        }
                        _ => unexplained.push(format!(
                            "{} {:?} {entry:?} call {call} of {} (nested: {}) {fault:?}: {outcome}",
                            case.kernel,
                            case.params,
                            calls.iter().filter(|c| c.entry == entry).count(),
                            calls
                                .iter()
                                .filter(|c| c.entry == entry)
                                .nth(call)
                                .unwrap()
                                .nested,
                        )),
                    }
                }
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "faults missed or failing otherwise than as a wrong result:\n{}",
        unexplained.join("\n")
    );
    // Each exempt fault must be missed somewhere, or it belongs off the list.
    let unused: Vec<_> = EXEMPT
        .iter()
        .enumerate()
        .flat_map(|(x, exempt)| exempt.faults.iter().map(move |fault| (x, exempt, fault)))
        .filter(|(x, _, fault)| !exemptions_used.contains(&(*x, format!("{fault:?}"))))
        .map(|(_, exempt, fault)| (exempt.kernel, fault, exempt.reason))
        .collect();
    assert!(unused.is_empty(), "exempt, but caught: {unused:?}");
}
