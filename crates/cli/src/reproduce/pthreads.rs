//! `reproduce pthreads`: the pthreads study's trapezoid rule with one critical section per
//! trapezoid (`block = 1`, its condition) for every way of keeping the shared sum, on threads
//! created per run like pthreads (`spawn`), and its thread creation cost per thread with the SD.

use parbench_kernels::{ExecutorKind, Params, PinPolicy, find_kernel};
use parbench_mapper::plural;

use crate::error::CliError;
use crate::reproduce::figure::{BoxItem, Series, box_plot_svg, line_chart_svg};
use crate::reproduce::published::format_number;
use crate::reproduce::report::{FigureFile, Measured, MeasuredFigure, Section, StudyReport};
use crate::reproduce::{RESULT_LABELS, Scale, Study, StudyRun, machine_conditions, summary_of};
use crate::results::{Cell, Report};
use crate::stats::Summary;
use crate::sweep::SweepPlan;

/// The pthreads study.
#[derive(Debug)]
pub struct PthreadsStudy;

/// The ways of keeping the shared sum (`trapezoid --method`): the study's busy-wait, mutex and
/// semaphore, plus the lock-free and local-sum references.
const METHODS: [&str; 5] = ["spin", "mutex", "semaphore", "atomic", "local"];

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Study for PthreadsStudy {
    fn name(&self) -> &'static str {
        "pthreads"
    }

    fn published_json(&self) -> &'static str {
        include_str!("../../data/published/pthreads.json")
    }

    fn scaling(&self, scale: Scale) -> String {
        match scale {
            Scale::Tiny => "2^12 trapezoids, 2 runs, thread creation up to 8 threads".to_owned(),
            Scale::Default => format!(
                "threads 1..{} (the CPUs this process may use), 2^20 trapezoids at block = 1 (the study's n is not recorded here), 20 runs per cell; thread creation for 1 … 256 threads, 30 runs",
                cores()
            ),
            Scale::Full => format!(
                "threads 1..{}, 2^24 trapezoids at block = 1, 100 runs per cell; thread creation for 1 … 1024 threads, 100 runs",
                cores()
            ),
        }
    }

    fn run(&self, run: &mut StudyRun) -> Result<StudyReport, CliError> {
        let scale = run.scale;
        let runs = run.runs(2, 20, 100);
        let warmup = scale.pick(0, 2, 5);
        let threads: Vec<usize> = match scale {
            Scale::Tiny => vec![cores().min(2)],
            _ => (1..=cores()).collect(),
        };
        let top = *threads.iter().max().unwrap_or(&1);
        let top_threads = plural(top, "thread");
        let n = scale.pick("2^12", "2^20", "2^24");
        let trapezoid = find_kernel("trapezoid")?;
        let mut by_method: Vec<(&str, Vec<Cell>)> = Vec::new();
        for method in METHODS {
            let plan = SweepPlan {
                kernels: vec![trapezoid],
                schedulers: vec![ExecutorKind::Spawn.into(), ExecutorKind::Seq.into()],
                threads: threads.clone(),
                runs,
                warmup,
                pin: PinPolicy::None,
                params: Params::new()
                    .with("n", n)
                    .with("block", "1")
                    .with("method", method),
                interleave: 1,
            };
            by_method.push((
                method,
                run.measure(&format!("block=1 method={method}"), &plan)?,
            ));
        }
        let top_text = top.to_string();
        let median_of = |cells: &[Cell], scheduler: &str| {
            summary_of(cells, &[("scheduler", scheduler), ("threads", &top_text)]).cloned()
        };
        let mut ranking: Vec<(&str, Summary)> = by_method
            .iter()
            .filter_map(|(m, cells)| median_of(cells, "spawn").map(|s| (*m, s)))
            .collect();
        ranking.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
        let ranking_text = ranking
            .iter()
            .map(|(m, s)| format!("{m} {}", time_text(s.median)))
            .collect::<Vec<_>>()
            .join(" < ");

        // Thread creation: one batch of `count` threads created and joined per run (reps = 1), so
        // the per-thread cost of each run is one sample and the SD is over runs.
        let spawn_cost = find_kernel("spawn-cost")?;
        let max = scale.pick("8", "256", "1024");
        let creation_runs = run.runs(2, 30, 100);
        let plan = SweepPlan {
            kernels: vec![spawn_cost],
            schedulers: vec![ExecutorKind::Spawn.into(), ExecutorKind::Tree.into()],
            threads: vec![top],
            runs: creation_runs,
            warmup: scale.pick(0, 2, 5),
            pin: PinPolicy::None,
            params: Params::new().with("max", max).with("reps", "1"),
            interleave: 1,
        };
        let creation = run.measure("thread creation", &plan)?;
        let per_thread = |scheduler: &str| -> Vec<(usize, Summary)> {
            creation
                .iter()
                .filter(|c| c.label("scheduler") == Some(scheduler))
                .flat_map(|c| c.metrics.iter())
                .filter_map(|m| {
                    let count = m.name.strip_prefix("create-join-ns@")?.parse().ok()?;
                    Some((count, Summary::from_samples(&m.values)?))
                })
                .collect()
        };
        let spawned = per_thread("spawn");
        let creation_text = |count: usize| {
            spawned.iter().find(|(c, _)| *c == count).map(|(_, s)| {
                format!(
                    "{}: {} ± {} (SD) per thread",
                    plural(count, "thread"),
                    time_text(s.mean * 1e-9),
                    time_text(s.sd.unwrap_or(0.0) * 1e-9)
                )
            })
        };
        let largest = spawned.iter().map(|(c, _)| *c).max().unwrap_or(1);
        let creation_value = match (creation_text(1), creation_text(largest)) {
            (Some(one), Some(many)) if largest > 1 => Measured::Finding(format!("{one}; {many}")),
            (Some(one), _) => Measured::Finding(one),
            _ => Measured::Unavailable("the spawn-cost cell failed (see results.json)".into()),
        };
        let measured = vec![
            MeasuredFigure {
                id: "block".into(),
                value: Measured::number(1.0, "trapezoid"),
                conditions: format!("trapezoid --block 1, n = {n}"),
            },
            MeasuredFigure {
                id: "methods-ranking".into(),
                value: if ranking.is_empty() {
                    Measured::Unavailable("every trapezoid cell failed".into())
                } else {
                    Measured::Finding(ranking_text)
                },
                conditions: format!(
                    "{top_threads} created per run (spawn), n = {n}, block = 1, medians of {runs} runs"
                ),
            },
            MeasuredFigure {
                id: "creation-cost".into(),
                value: creation_value,
                conditions: format!(
                    "std::thread create + join of a batch, per thread, mean ± SD over {creation_runs} runs"
                ),
            },
        ];

        let mut figures = Vec::new();
        let items: Vec<BoxItem> = by_method
            .iter()
            .filter_map(|(m, cells)| {
                median_of(cells, "spawn").map(|summary| BoxItem {
                    label: (*m).to_owned(),
                    summary,
                })
            })
            .collect();
        if let Ok(svg) = box_plot_svg(
            &format!("trapezoid, block = 1, n = {n}, {top_threads}"),
            "seconds per run",
            &items,
        ) {
            figures.push(FigureFile {
                file: "trapezoid-block1.svg".into(),
                caption: format!("Run time per method at block = 1 on {top_threads} created per run: boxes p25–p75 with the median, whiskers p5/p95, red: mean with its 95 % CI; {runs} runs."),
                svg,
            });
        }
        let series: Vec<Series> = ["spawn", "tree"]
            .iter()
            .map(|s| Series {
                name: if *s == "spawn" {
                    "new OS thread per task".into()
                } else {
                    "tree pool task".into()
                },
                points: per_thread(s)
                    .into_iter()
                    .map(|(c, summary)| ((c as f64).log2(), summary.mean / 1e3))
                    .collect(),
            })
            .collect();
        if let Ok(svg) = line_chart_svg(
            "create + join cost per thread (mean)",
            "log2(threads created at once)",
            "µs per thread",
            &series,
        ) {
            figures.push(FigureFile {
                file: "creation-cost.svg".into(),
                caption: format!("Mean create + join time per thread against the number created at once; {creation_runs} runs each (the SD is in the table)."),
                svg,
            });
        }
        Ok(StudyReport {
            scale,
            scaling: self.scaling(scale),
            conditions_here: format!(
                "{}; every run validated (|sum − π| within the rule's error)",
                machine_conditions()
            ),
            measured,
            sections: vec![
                Section {
                    heading: "Trapezoid at block = 1: median time per method and thread count"
                        .into(),
                    body: method_table(&by_method, &threads),
                },
                Section {
                    heading: "Thread creation cost per thread (mean ± SD)".into(),
                    body: creation_table(&spawned, &per_thread("tree")),
                },
            ],
            figures,
            results: std::mem::replace(&mut run.results, Report::new("reproduce", &RESULT_LABELS)),
        })
    }
}

/// Seconds as µs or ms with four significant digits.
fn time_text(seconds: f64) -> String {
    if seconds >= 1e-3 {
        format!("{} ms", format_number(seconds * 1e3))
    } else {
        format!("{} µs", format_number(seconds * 1e6))
    }
}

fn method_table(by_method: &[(&str, Vec<Cell>)], threads: &[usize]) -> String {
    let mut md = String::from("| method |");
    for t in threads {
        md.push_str(&format!(" {} |", plural(*t, "thread")));
    }
    md.push_str(" seq |\n|---|");
    md.push_str(&"---|".repeat(threads.len() + 1));
    md.push('\n');
    for (method, cells) in by_method {
        md.push_str(&format!("| {method} |"));
        for t in threads {
            let t = t.to_string();
            let text = summary_of(cells, &[("scheduler", "spawn"), ("threads", &t)])
                .map_or("–".to_owned(), |s| time_text(s.median));
            md.push_str(&format!(" {text} |"));
        }
        let seq = summary_of(cells, &[("scheduler", "seq")])
            .map_or("–".to_owned(), |s| time_text(s.median));
        md.push_str(&format!(" {seq} |\n"));
    }
    md
}

fn creation_table(spawned: &[(usize, Summary)], pooled: &[(usize, Summary)]) -> String {
    let mut md = String::from(
        "| threads at once | new OS thread: mean ± SD per thread | pool task: mean ± SD per task |\n|---|---|---|\n",
    );
    for (count, s) in spawned {
        let pool = pooled
            .iter()
            .find(|(c, _)| c == count)
            .map_or("–".to_owned(), |(_, p)| {
                format!(
                    "{} ± {}",
                    time_text(p.mean * 1e-9),
                    time_text(p.sd.unwrap_or(0.0) * 1e-9)
                )
            });
        md.push_str(&format!(
            "| {count} | {} ± {} | {pool} |\n",
            time_text(s.mean * 1e-9),
            time_text(s.sd.unwrap_or(0.0) * 1e-9)
        ));
    }
    md
}
