//! `reproduce scheduler`: the tree-distribution study's experiments as they exist in the sweep —
//! spmv with constant, linearly decreasing and 1/(row+1) rows at widths 2^10 and 2^15 on tree, its
//! two ablations, static, dynamic, guided, simple, rayon and seq; the nested kernels (matmul,
//! transpose) for composability; reduce, scan and the scheduling-time probe; and the timespan tuner.
//!
//! Published side: the study's qualitative findings and the oneTBB/OpenMP speed-ups measured on this
//! project's VM (issue 3), each beside tree's speed-up here for the same matrix.

use std::time::Instant;

use parbench_kernels::{ExecutorKind, Params, PinPolicy, find_kernel};
use parbench_mapper::plural;
use parbench_scheduler::{DEFAULT_TUNING_ROUNDS, ThreadPoolBuilder, tune_timespan};

use crate::error::CliError;
use crate::reproduce::figure::{BoxItem, Series, box_plot_svg, line_chart_svg};
use crate::reproduce::published::format_number;
use crate::reproduce::report::{FigureFile, Measured, MeasuredFigure, Section, StudyReport};
use crate::reproduce::{RESULT_LABELS, Scale, Study, StudyRun, machine_conditions, summary_of};
use crate::results::{Cell, Report};
use crate::sweep::SweepPlan;

/// The scheduler study.
#[derive(Debug)]
pub struct SchedulerStudy;

/// The schedulers of the study's figures, `seq` last (the speed-up baseline).
const SCHEDULERS: [ExecutorKind; 9] = [
    ExecutorKind::Tree,
    ExecutorKind::TreeNoTimespan,
    ExecutorKind::TreeFixedGrain,
    ExecutorKind::Static,
    ExecutorKind::Dynamic,
    ExecutorKind::Guided,
    ExecutorKind::Simple,
    ExecutorKind::Rayon,
    ExecutorKind::Seq,
];

/// The spmv matrices: kernel and the published id stem.
const SPMV: [(&str, &str); 3] = [
    ("spmv-balanced", "balanced"),
    ("spmv-triangle", "triangle"),
    ("spmv-hyperbolic", "hyperbolic"),
];

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl SchedulerStudy {
    fn widths(scale: Scale) -> Vec<u32> {
        scale.pick(vec![10, 15], vec![10, 15], vec![10, 11, 12, 13, 14, 15])
    }

    fn threads(scale: Scale) -> Vec<usize> {
        match scale {
            Scale::Tiny => vec![cores().min(2)],
            _ => (1..=cores()).collect(),
        }
    }
}

impl Study for SchedulerStudy {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn published_json(&self) -> &'static str {
        include_str!("../../data/published/scheduler.json")
    }

    fn scaling(&self, scale: Scale) -> String {
        match scale {
            Scale::Tiny => {
                "spmv widths 2^10 and 2^15, small nested kernels, 2 runs per cell, tuner 200 calls"
                    .to_owned()
            }
            Scale::Default => format!(
                "threads 1..{} (the CPUs this process may use, not the study's server), spmv widths 2^10 and 2^15 with rows = threads × 2^9, 30 runs per cell (3 warm-up), tuner {DEFAULT_TUNING_ROUNDS} calls",
                cores()
            ),
            Scale::Full => format!(
                "threads 1..{}, spmv widths 2^10 … 2^15, 200 runs per cell (10 warm-up), tuner {DEFAULT_TUNING_ROUNDS} calls",
                cores()
            ),
        }
    }

    fn run(&self, run: &mut StudyRun) -> Result<StudyReport, CliError> {
        let scale = run.scale;
        let runs = run.runs(2, 30, 200);
        let warmup = scale.pick(0, 3, 10);
        let threads = Self::threads(scale);
        let top = *threads.iter().max().unwrap_or(&1);
        let top_threads = plural(top, "thread");
        let plan = |kernels: Vec<&'static str>, params: Params| -> Result<SweepPlan, CliError> {
            Ok(SweepPlan {
                kernels: kernels
                    .into_iter()
                    .map(find_kernel)
                    .collect::<Result<_, _>>()?,
                schedulers: SCHEDULERS.map(Into::into).to_vec(),
                threads: threads.clone(),
                runs,
                warmup,
                pin: PinPolicy::None,
                params,
                interleave: 1,
            })
        };
        let mut measured = Vec::new();
        let mut figures = Vec::new();
        let mut spmv_cells: Vec<(u32, Vec<Cell>)> = Vec::new();
        for width in Self::widths(scale) {
            let params = Params::new().with("width", format!("2^{width}"));
            let kernels = SPMV.iter().map(|(k, _)| *k).collect();
            let cells = run.measure(&format!("spmv width 2^{width}"), &plan(kernels, params)?)?;
            spmv_cells.push((width, cells));
        }
        let nested_params = match scale {
            Scale::Tiny => Params::new().with("n", "24"),
            _ => Params::new(),
        };
        let nested_kernels = match scale {
            Scale::Tiny => vec!["matmul"],
            _ => vec!["matmul", "transpose", "reduce", "scan", "sched-time"],
        };
        let nested = run.measure(
            "nested and other loops",
            &plan(nested_kernels, nested_params)?,
        )?;

        // Published C++ speed-ups beside tree's here, same matrix and width.
        for (width, cells) in &spmv_cells {
            for (kernel, stem) in SPMV {
                let id = format!("cpp-{stem}-2^{width}");
                let conditions = format!(
                    "{top_threads}, width 2^{width}, rows = {top} × 2^9, {runs} runs, median seq / median tree; {}",
                    best_other(cells, kernel, top)
                );
                measured.push(MeasuredFigure {
                    id,
                    value: speedup(cells, kernel, "tree", top).map_or_else(
                        || Measured::Unavailable("the tree or seq cell failed".into()),
                        |s| Measured::number(s, "x"),
                    ),
                    conditions,
                });
            }
        }
        let (largest, largest_cells) = spmv_cells
            .last()
            .map(|(w, c)| (*w, c.as_slice()))
            .unwrap_or((10, &[]));
        measured.push(MeasuredFigure {
            id: "balanced-claim".into(),
            value: Measured::Finding(faster_than_tree(
                largest_cells,
                "spmv-balanced",
                top,
                &["static"],
            )),
            conditions: format!(
                "spmv-balanced, width 2^{largest}, {top_threads}, medians of {runs} runs"
            ),
        });
        let unbalanced: Vec<String> = ["spmv-triangle", "spmv-hyperbolic"]
            .iter()
            .map(|k| format!("{k}: {}", faster_than_tree(largest_cells, k, top, &[])))
            .collect();
        measured.push(MeasuredFigure {
            id: "unbalanced-claim".into(),
            value: Measured::Finding(unbalanced.join("; ")),
            conditions: format!("width 2^{largest}, {top_threads}, medians of {runs} runs"),
        });
        let composable: Vec<String> = ["matmul", "transpose"]
            .iter()
            .filter_map(|k| {
                let s = speedup(&nested, k, "tree", top)?;
                Some(format!(
                    "{k} (nested loops) validated on tree at {}× seq",
                    format_number(s)
                ))
            })
            .collect();
        measured.push(MeasuredFigure {
            id: "composable-claim".into(),
            value: if composable.is_empty() {
                Measured::Unavailable("the nested kernels' tree or seq cells failed".into())
            } else {
                Measured::Finding(format!(
                    "{}; inner calls run on the pool's own threads (no new threads: see the scheduler's nesting tests)",
                    composable.join("; ")
                ))
            },
            conditions: format!("{top_threads}, {runs} runs"),
        });

        // The study's tuner on a pool of this machine's size.
        let rounds = scale.pick(200, DEFAULT_TUNING_ROUNDS, DEFAULT_TUNING_ROUNDS);
        run.note(&format!(
            "  timespan tuner: {rounds} calls on {top_threads}"
        ));
        let pool = ThreadPoolBuilder::new()
            .num_threads(top)
            .build()
            .map_err(|e| CliError::Usage(format!("cannot build a {top}-thread pool: {e}")))?;
        let started = Instant::now();
        let timespan = tune_timespan(&pool, rounds);
        let tuning = started.elapsed();
        drop(pool);
        measured.push(MeasuredFigure {
            id: "tuner-rounds".into(),
            value: Measured::number(rounds as f64, "calls"),
            conditions: format!(
                "{top_threads}; p99 start-up time (the timespan) {:.2} µs; the tuner took {:.0} ms",
                timespan.as_secs_f64() * 1e6,
                tuning.as_secs_f64() * 1e3
            ),
        });

        // Figures: box plots per spmv kernel at the largest width and top threads; speed-up lines.
        for (kernel, _) in SPMV {
            let items: Vec<BoxItem> = SCHEDULERS
                .iter()
                .filter_map(|kind| {
                    let threads = top.to_string();
                    summary_of(
                        largest_cells,
                        &[
                            ("kernel", kernel),
                            ("scheduler", kind.name()),
                            ("threads", &threads),
                        ],
                    )
                    .map(|s| BoxItem {
                        label: kind.name().to_owned(),
                        summary: s.clone(),
                    })
                })
                .collect();
            if let Ok(svg) = box_plot_svg(
                &format!("{kernel}, width 2^{largest}, {top_threads}"),
                "seconds per run",
                &items,
            ) {
                figures.push(FigureFile {
                    file: format!("{kernel}-boxes.svg"),
                    caption: format!("{kernel} at width 2^{largest} on {top_threads}: boxes p25–p75 with the median, whiskers p5/p95, red: mean with its 95 % CI; {runs} runs per scheduler."),
                    svg,
                });
            }
        }
        if threads.len() > 1 {
            let series: Vec<Series> = SCHEDULERS
                .iter()
                .filter(|k| **k != ExecutorKind::Seq)
                .map(|kind| Series {
                    name: kind.name().to_owned(),
                    points: threads
                        .iter()
                        .filter_map(|&t| {
                            speedup(largest_cells, "spmv-hyperbolic", kind.name(), t)
                                .map(|s| (t as f64, s))
                        })
                        .collect(),
                })
                .collect();
            if let Ok(svg) = line_chart_svg(
                &format!("spmv-hyperbolic 2^{largest}: speed-up over seq"),
                "threads",
                "speed-up",
                &series,
            ) {
                figures.push(FigureFile {
                    file: "hyperbolic-speedup.svg".into(),
                    caption:
                        "Speed-up over seq (ratio of medians) against threads, spmv-hyperbolic."
                            .into(),
                    svg,
                });
            }
        }
        let table = speedup_table(&spmv_cells, &nested, top);
        Ok(StudyReport {
            scale,
            scaling: self.scaling(scale),
            conditions_here: format!(
                "{}; each cell: {warmup} warm-up + {runs} timed runs, validated; speed-up = median seq / median",
                machine_conditions()
            ),
            measured,
            sections: vec![Section {
                heading: format!("Speed-up over seq on {top_threads} (median ratio)"),
                body: table,
            }],
            figures,
            results: std::mem::replace(&mut run.results, Report::new("reproduce", &RESULT_LABELS)),
        })
    }
}

/// Median seq time over median `scheduler` time for `kernel` on `threads`.
fn speedup(cells: &[Cell], kernel: &str, scheduler: &str, threads: usize) -> Option<f64> {
    let threads = threads.to_string();
    let of = |s: &str| {
        summary_of(
            cells,
            &[("kernel", kernel), ("scheduler", s), ("threads", &threads)],
        )
        .map(|s| s.median)
    };
    Some(of("seq")? / of(scheduler)?)
}

/// "best other: static 1.9×" — the fastest scheduler besides tree, for context.
fn best_other(cells: &[Cell], kernel: &str, threads: usize) -> String {
    SCHEDULERS
        .iter()
        .filter(|k| !matches!(k, ExecutorKind::Tree | ExecutorKind::Seq))
        .filter_map(|k| speedup(cells, kernel, k.name(), threads).map(|s| (k.name(), s)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or_else(String::new, |(name, s)| {
            format!("fastest other here: {name} {}×", format_number(s))
        })
}

/// Which schedulers beat tree's median, and whether that matches `allowed` (the study's claim).
fn faster_than_tree(cells: &[Cell], kernel: &str, threads: usize, allowed: &[&str]) -> String {
    let Some(tree) = speedup(cells, kernel, "tree", threads) else {
        return "tree or seq cell failed".to_owned();
    };
    let faster: Vec<String> = SCHEDULERS
        .iter()
        .filter(|k| !matches!(k, ExecutorKind::Tree | ExecutorKind::Seq))
        .filter_map(|k| speedup(cells, kernel, k.name(), threads).map(|s| (k.name(), s)))
        .filter(|(_, s)| *s > tree)
        .map(|(name, s)| format!("{name} {}×", format_number(s)))
        .collect();
    let agrees = faster
        .iter()
        .all(|f| allowed.iter().any(|a| f.split(' ').next() == Some(*a)));
    let verdict = if agrees { "agrees" } else { "differs" };
    if faster.is_empty() {
        format!(
            "tree {}× seq, no scheduler faster ({verdict})",
            format_number(tree)
        )
    } else {
        format!(
            "tree {}× seq; faster: {} ({verdict})",
            format_number(tree),
            faster.join(", ")
        )
    }
}

fn speedup_table(spmv: &[(u32, Vec<Cell>)], nested: &[Cell], threads: usize) -> String {
    let mut rows: Vec<(String, &[Cell], &str)> = Vec::new();
    for (width, cells) in spmv {
        for (kernel, _) in SPMV {
            rows.push((format!("{kernel} 2^{width}"), cells.as_slice(), kernel));
        }
    }
    for kernel in ["matmul", "transpose", "reduce", "scan", "sched-time"] {
        if nested.iter().any(|c| c.label("kernel") == Some(kernel)) {
            rows.push((kernel.to_owned(), nested, kernel));
        }
    }
    let schedulers: Vec<&str> = SCHEDULERS
        .iter()
        .filter(|k| **k != ExecutorKind::Seq)
        .map(|k| k.name())
        .collect();
    let mut md = format!(
        "| kernel | {} |\n|---|{}\n",
        schedulers.join(" | "),
        "---|".repeat(schedulers.len())
    );
    for (name, cells, kernel) in rows {
        let values: Vec<String> = schedulers
            .iter()
            .map(|s| {
                speedup(cells, kernel, s, threads)
                    .map_or("–".to_owned(), |v| format!("{}×", format_number(v)))
            })
            .collect();
        md.push_str(&format!("| {name} | {} |\n", values.join(" | ")));
    }
    md
}
