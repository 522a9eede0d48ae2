//! `reproduce smt-mapping`: the instruction-aware SMT mapping study — its co-scheduling scenarios
//! A/B/C over the 8 SMT-bench kernels with repetitions and a geometric mean, the instruction-aware
//! mapping against round-robin and the Linux scheduler measured on real siblings, Algorithm 1 as
//! published beside the refined mapping, five instruction classes, and — because the mapping
//! itself needs no SMT to be computed — the mappings and their contention-model scores on
//! synthetic topologies (`pack:1 core:4 pu:2`, `pack:2 core:8 pu:2`).
//!
//! Everything that needs SMT siblings (scenarios, measured gains) is measured only on a machine
//! that has them and is otherwise reported unavailable with the reason; model scores are labelled
//! as the model's, never as measured speed-ups.

use std::time::Duration;

use parbench_mapper::perf::{MixSource, ProfileRequest, profile_threads};
use parbench_mapper::{
    Algorithm, InstrClass, InstructionMix, MappingOutcome, NamedMix, SuiteOutcome, Topology,
    Workload, compare_on_model, gain_percent, nas_like_mixes, plural, run_mappings,
    smt_bench_mixes, threads_in_blocks,
};

use crate::error::CliError;
use crate::map::{KernelWorkload, scenario_suite};
use crate::reproduce::figure::{Series, line_chart_svg};
use crate::reproduce::report::{FigureFile, Measured, MeasuredFigure, Section, StudyReport};
use crate::reproduce::{RESULT_LABELS, Scale, Study, StudyRun, machine_conditions};
use crate::results::{Cell, MetricSeries, Report};

/// The SMT-mapping study.
#[derive(Debug)]
pub struct SmtMappingStudy;

/// Synthetic machines the mappings are shown on: the study's kind of machine (two PUs per core)
/// at two sizes.
const SMALL: &str = "pack:1 core:4 pu:2";
const LARGE: &str = "pack:2 core:8 pu:2";

/// Algorithms compared, in report order.
const COMPARED: [Algorithm; 5] = [
    Algorithm::InstructionAware,
    Algorithm::Algorithm1 { class: None },
    Algorithm::RoundRobin,
    Algorithm::Scatter,
    Algorithm::Os,
];

impl Study for SmtMappingStudy {
    fn name(&self) -> &'static str {
        "smt-mapping"
    }

    fn published_json(&self) -> &'static str {
        include_str!("../../data/published/smt-mapping.json")
    }

    fn scaling(&self, scale: Scale) -> String {
        let (ms, reps) = windows(scale);
        let reps = plural(reps, "repetition");
        format!(
            "the 8 SMT-bench kernels (declared or, with a PMU, measured five-class mixes) instead of \
             NAS; scenarios and mapping runs of {ms} ms × {reps} each (where SMT siblings \
             exist); NAS-like assumed mixes for the model only; mappings on synthetic {SMALL} and {LARGE}"
        )
    }

    fn run(&self, run: &mut StudyRun) -> Result<StudyReport, CliError> {
        let scale = run.scale;
        let (ms, repetitions) = windows(scale);
        let repetitions_text = plural(repetitions, "repetition");
        let window = Duration::from_millis(ms);
        let this = Topology::this_system()?;

        // Five-class mixes: measured where the class counters exist, declared otherwise.
        run.note("  instruction mixes of the 8 kernels");
        let (kernels, mix_source) = kernel_mixes()?;

        // Co-scheduling scenarios A/B/C on real siblings.
        run.note("  co-scheduling scenarios A/B/C");
        let suite = scenario_suite(&this, &kernels, window, repetitions)?;

        // Measured mappings: every PU busy, the kernels in blocks.
        run.note("  measured mappings");
        let mapping_outcome = measured_mappings(&this, &kernels, window, repetitions)?;

        // The mappings themselves, and the model, on synthetic topologies.
        let small = Topology::synthetic(SMALL)?;
        let large = Topology::synthetic(LARGE)?;
        let eight = threads_in_blocks(&kernels, 8)?;
        let nas32 = threads_in_blocks(&nas_like_mixes(), large.pus().len())?;
        let mut sections = vec![
            Section {
                heading: format!("Mappings of the 8 kernels on synthetic {SMALL}"),
                body: mapping_table(&small, &eight)?,
            },
            Section {
                heading: format!(
                    "Model scores (lower = less sibling contention) on {SMALL} and {LARGE}"
                ),
                body: model_table(
                    run,
                    &[
                        (SMALL, &small, &eight, "8 SMT-bench kernels"),
                        (LARGE, &large, &nas32, "NAS-like mixes, in blocks"),
                    ],
                )?,
            },
        ];
        let (algorithm1_finding, refined_differs) = algorithm1_vs_refined(&large)?;
        sections.push(Section {
            heading: "Algorithm 1 as published beside the refined instruction-aware mapping".into(),
            body: algorithm1_finding.clone(),
        });

        let mut measured = Vec::new();
        let suite_conditions = format!(
            "8 SMT-bench kernels, scenario C partner = nearest kernel of a different class; {ms} ms per run, {repetitions_text}, median per kernel, geometric mean over kernels"
        );
        match &suite {
            SuiteOutcome::Measured(result) => {
                measured.push(MeasuredFigure {
                    id: "scenario-a".into(),
                    value: Measured::number(100.0, "%"),
                    conditions: format!("the reference of B and C; {suite_conditions}"),
                });
                for (id, value) in [
                    ("scenario-b", result.geomean_b_percent),
                    ("scenario-c", result.geomean_c_percent),
                ] {
                    measured.push(MeasuredFigure {
                        id: id.into(),
                        value: value.map_or_else(
                            || Measured::Unavailable("no kernel produced a rate".into()),
                            |v| Measured::number(v, "%"),
                        ),
                        conditions: format!(
                            "siblings cpu {} and {}; {suite_conditions}",
                            result.cpus.0, result.cpus.1
                        ),
                    });
                }
                sections.push(Section {
                    heading: "Scenarios per kernel".into(),
                    body: format!("```text\n{suite}```\n"),
                });
            }
            SuiteOutcome::Skipped(reason) => {
                let reason = reason.to_string().trim().to_owned();
                for id in ["scenario-a", "scenario-b", "scenario-c"] {
                    measured.push(MeasuredFigure {
                        id: id.into(),
                        value: Measured::Unavailable(reason.clone()),
                        conditions: suite_conditions.clone(),
                    });
                }
            }
        }
        let mapping_conditions = format!(
            "every PU this process may use busy, the 8 kernels' threads in blocks; {ms} ms per run, {repetitions_text}; gain = geometric mean over threads of the ratio of median throughputs − 1"
        );
        match &mapping_outcome {
            MappingOutcome::Measured(runs) => {
                let find = |name: &str| runs.iter().find(|r| r.algorithm == name);
                let aware = find("instruction-aware");
                for (id, baseline) in [
                    ("gain-over-linux", "os"),
                    ("gain-over-round-robin", "round-robin"),
                ] {
                    let gain = aware
                        .zip(find(baseline))
                        .and_then(|(a, b)| gain_percent(a, b));
                    measured.push(MeasuredFigure {
                        id: id.into(),
                        value: gain.map_or_else(
                            || Measured::Unavailable("no comparable thread throughputs".into()),
                            |g| Measured::number(g, "%"),
                        ),
                        conditions: mapping_conditions.clone(),
                    });
                }
                sections.push(Section {
                    heading: "Measured mappings".into(),
                    body: format!("```text\n{mapping_outcome}```\n"),
                });
            }
            MappingOutcome::Skipped(reason) => {
                let reason = reason
                    .to_string()
                    .replace("co-scheduling scenarios", "measured mappings")
                    .trim()
                    .to_owned();
                for id in ["gain-over-linux", "gain-over-round-robin"] {
                    measured.push(MeasuredFigure {
                        id: id.into(),
                        value: Measured::Unavailable(reason.clone()),
                        conditions: mapping_conditions.clone(),
                    });
                }
            }
        }
        measured.push(MeasuredFigure {
            id: "instruction-classes".into(),
            value: Measured::Finding(format!(
                "{} classes: {} ({mix_source})",
                InstrClass::ALL.len(),
                InstrClass::ALL.map(InstrClass::name).join(", ")
            )),
            conditions: "mixes of the 8 SMT-bench kernels".into(),
        });
        measured.push(MeasuredFigure {
            id: "algorithm1".into(),
            value: Measured::Finding(if refined_differs {
                "implemented as `map --algorithm algorithm1[:CLASS]`; on the 12 fp / 12 int / 4 branch / 4 load threads below it leaves same-class pairs that the refined mapping removes".into()
            } else {
                "implemented as `map --algorithm algorithm1[:CLASS]`".into()
            }),
            conditions: format!("synthetic {LARGE}, contention model"),
        });
        let rr =
            Algorithm::RoundRobin.map(&small, &eight.iter().map(|t| t.mix).collect::<Vec<_>>())?;
        let same_core = (0..4)
            .filter(|pair| {
                let core = |thread: usize| rr.pus()[thread].map(|pu| small.pus()[pu].core);
                core(2 * pair) == core(2 * pair + 1)
            })
            .count();
        measured.push(MeasuredFigure {
            id: "round-robin".into(),
            value: Measured::Finding(format!(
                "threads in order onto a core's siblings first: {same_core} of 4 cores hold two consecutive threads (round-robin = compact; the OS-number order is `os-index`)"
            )),
            conditions: format!("synthetic {SMALL}, 8 threads"),
        });

        let mut figures = Vec::new();
        if let Ok(svg) = model_curve(&large) {
            figures.push(FigureFile {
                file: "model-scores.svg".into(),
                caption: format!("Contention-model score (lower = less sibling contention; a model, not a measurement) against the number of threads, NAS-like mixes in blocks on synthetic {LARGE}."),
                svg,
            });
        }
        Ok(StudyReport {
            scale,
            scaling: self.scaling(scale),
            conditions_here: format!(
                "{}; {}, {}{}",
                machine_conditions(),
                plural(this.cores().len(), "core"),
                plural(this.pus().len(), "PU"),
                if this.has_smt_siblings() {
                    " (SMT siblings present)"
                } else {
                    " (no SMT siblings)"
                }
            ),
            measured,
            sections,
            figures,
            results: std::mem::replace(&mut run.results, Report::new("reproduce", &RESULT_LABELS)),
        })
    }
}

/// Milliseconds per run and repetitions per scale.
fn windows(scale: Scale) -> (u64, usize) {
    scale.pick((5, 1), (200, 3), (1000, 10))
}

/// The 8 kernels with their mixes, measured from one profiled run each where the class counters
/// exist, declared otherwise; and a sentence saying which.
fn kernel_mixes() -> Result<(Vec<NamedMix>, String), CliError> {
    let mut kernels = Vec::new();
    let mut sources = Vec::new();
    for declared in smt_bench_mixes() {
        let workload = KernelWorkload::new(&declared.name)?;
        let profile =
            profile_threads(&ProfileRequest::for_this_machine(&declared.name, 1), |_| {
                workload.batch();
            })?;
        workload.finish()?;
        let (mixes, source) = profile.mixes_or(Some(declared.mix));
        sources.push(source);
        kernels.push(NamedMix {
            name: declared.name.clone(),
            mix: mixes.first().copied().unwrap_or(declared.mix),
        });
    }
    let source = if sources.iter().all(|s| *s == MixSource::Measured) {
        MixSource::Measured.to_string()
    } else {
        MixSource::Declared.to_string()
    };
    Ok((kernels, source))
}

/// One thread per PU of this machine (at most one per kernel block), run under every compared
/// algorithm.
fn measured_mappings(
    this: &Topology,
    kernels: &[NamedMix],
    window: Duration,
    repetitions: usize,
) -> Result<MappingOutcome, CliError> {
    let threads = this.pus().len().max(1);
    let used = &kernels[..kernels.len().min(threads)];
    let per_thread = threads_in_blocks(used, threads)?;
    let runners = used
        .iter()
        .map(|k| KernelWorkload::new(&k.name))
        .collect::<Result<Vec<_>, _>>()?;
    let batches: Vec<Box<dyn Fn() -> u64 + Sync + '_>> = runners
        .iter()
        .map(|runner| Box::new(move || runner.batch()) as Box<dyn Fn() -> u64 + Sync>)
        .collect();
    let workloads: Vec<Workload<'_>> = used
        .iter()
        .zip(&batches)
        .map(|(k, batch)| Workload {
            name: k.name.clone(),
            batch: batch.as_ref(),
        })
        .collect();
    let placed: Vec<(InstructionMix, &Workload<'_>)> = per_thread
        .iter()
        .filter_map(|t| {
            let index = used.iter().position(|k| k.name == t.name)?;
            Some((t.mix, &workloads[index]))
        })
        .collect();
    let algorithms = [
        Algorithm::InstructionAware,
        Algorithm::Algorithm1 { class: None },
        Algorithm::RoundRobin,
        Algorithm::Os,
    ];
    let outcome = run_mappings(this, &placed, &algorithms, window, repetitions)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    drop(placed);
    drop(workloads);
    drop(batches);
    for runner in runners {
        runner.finish()?;
    }
    Ok(outcome)
}

/// Per algorithm, which kernels share each core.
fn mapping_table(topology: &Topology, threads: &[NamedMix]) -> Result<String, CliError> {
    let mixes: Vec<InstructionMix> = threads.iter().map(|t| t.mix).collect();
    let mut md = String::from("| algorithm |");
    for core in 0..topology.cores().len() {
        md.push_str(&format!(" core {core} |"));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(topology.cores().len()));
    md.push('\n');
    for algorithm in COMPARED.iter().filter(|a| **a != Algorithm::Os) {
        let mapping = algorithm.map(topology, &mixes)?;
        md.push_str(&format!("| {algorithm} |"));
        for core in 0..topology.cores().len() {
            let names: Vec<&str> = mapping
                .pus()
                .iter()
                .enumerate()
                .filter(|(_, pu)| pu.is_some_and(|pu| topology.pus()[pu].core == core))
                .map(|(thread, _)| threads[thread].name.as_str())
                .collect();
            md.push_str(&format!(" {} |", names.join(" + ")));
        }
        md.push('\n');
    }
    Ok(md)
}

/// Model scores of every algorithm per case, also filed as results cells.
fn model_table(
    run: &mut StudyRun,
    cases: &[(&str, &Topology, &Vec<NamedMix>, &str)],
) -> Result<String, CliError> {
    let mut md = String::from(
        "| topology | threads | instruction-aware | algorithm1 | round-robin | os-index | scatter | random (mean of 100) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (name, topology, threads, what) in cases {
        let comparison = compare_on_model(topology, threads, 100, 1)?;
        let score = |algorithm: &str| {
            comparison
                .score_of(algorithm)
                .map_or_else(|| "n/a".to_owned(), |s| format!("{s:.3}"))
        };
        md.push_str(&format!(
            "| {name} | {} ({what}) | {} | {} | {} | {} | {} | {} |\n",
            threads.len(),
            score("instruction-aware"),
            score("algorithm1"),
            score("round-robin"),
            score("os-index"),
            score("scatter"),
            comparison
                .random
                .as_ref()
                .map_or_else(|| "n/a".to_owned(), |r| format!("{:.3}", r.mean))
        ));
        for entry in &comparison.scores {
            let Some(value) = entry.score else { continue };
            let mut cell = Cell::measured(
                &[
                    ("condition", &format!("model score on {name}")),
                    ("kernel", what),
                    ("scheduler", &entry.algorithm),
                    ("threads", &threads.len().to_string()),
                ],
                Vec::new(),
            );
            cell.metrics.push(MetricSeries {
                name: "model-score".into(),
                unit: String::new(),
                values: vec![value],
            });
            run.results.cells.push(cell);
        }
    }
    Ok(md)
}

/// The study's Algorithm 1 against the refined mapping on 12 fp, 12 int, 4 branch and 4 load
/// threads (one key class cannot see every clash): same-class pairs left by each.
fn algorithm1_vs_refined(topology: &Topology) -> Result<(String, bool), CliError> {
    let pure = |class: InstrClass| InstructionMix::new([(class, 1.0)]);
    let mixes: Vec<InstructionMix> = [
        (InstrClass::Fp, 12),
        (InstrClass::Int, 12),
        (InstrClass::Branch, 4),
        (InstrClass::Load, 4),
    ]
    .iter()
    .flat_map(|&(class, n)| std::iter::repeat_n(pure(class), n))
    .collect();
    let clashes = |algorithm: Algorithm| -> Result<usize, CliError> {
        let mapping = algorithm.map(topology, &mixes)?;
        let mut per_core: Vec<Vec<usize>> = vec![Vec::new(); topology.cores().len()];
        for (thread, pu) in mapping.pus().iter().enumerate() {
            if let Some(pu) = pu {
                per_core[topology.pus()[*pu].core].push(thread);
            }
        }
        Ok(per_core
            .iter()
            .filter(|threads| threads.len() == 2 && mixes[threads[0]] == mixes[threads[1]])
            .count())
    };
    let exact = clashes(Algorithm::Algorithm1 {
        class: Some(InstrClass::Fp),
    })?;
    let refined = clashes(Algorithm::InstructionAware)?;
    let rr = clashes(Algorithm::RoundRobin)?;
    Ok((
        format!(
            "12 fp, 12 int, 4 branch and 4 load threads on synthetic {LARGE} (16 cores × 2 PUs): cores whose two threads are of the same class — algorithm1:fp (sort by fp, max with min on the next core) {exact}, refined instruction-aware {refined}, round-robin {rr}. Sorting by one class cannot see the int–int pairs it forms; the refinement swaps them away.\n"
        ),
        exact > refined,
    ))
}

/// Model score against thread count for every pinned algorithm (NAS-like mixes in blocks).
fn model_curve(topology: &Topology) -> Result<String, CliError> {
    let nas = nas_like_mixes();
    let mut series: Vec<Series> = ["instruction-aware", "algorithm1", "round-robin", "scatter"]
        .iter()
        .map(|name| Series {
            name: (*name).to_owned(),
            points: Vec::new(),
        })
        .collect();
    for threads in (nas.len()..=topology.pus().len()).step_by(2) {
        let comparison = compare_on_model(topology, &threads_in_blocks(&nas, threads)?, 0, 0)?;
        for s in &mut series {
            if let Some(score) = comparison.score_of(&s.name) {
                s.points.push((threads as f64, score));
            }
        }
    }
    line_chart_svg(
        "contention model: NAS-like mixes",
        "threads",
        "model score",
        &series,
    )
    .map_err(CliError::Plot)
}
