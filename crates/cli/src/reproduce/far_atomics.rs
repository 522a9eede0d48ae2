//! `reproduce far-atomics`: the INNCABS far-atomics study's experiment on this machine — qap,
//! floorplan and nqueens with their shared atomics on every backend this CPU has (`std`,
//! `portable`, and on aarch64 `lse`/`llsc`), on one OS thread per task (`spawn`, the study's
//! `std::async(launch::async)`) and on a pool (`tree`); and its Round variant (one thread per
//! philosopher, start barrier, flip_coin, time-based eating) for every lock × backend, with the
//! philosophers free or confined to one CPU. 100 runs per cell at the default scale, mean with its
//! 95 % CI, box plots with whiskers at p5/p95 and the mean with its error bar, threads created and
//! the system-time share per run.

use parbench_atomics::{Backend, LockKind};
use parbench_kernels::{ExecutorKind, Params, PinPolicy, find_kernel};
use parbench_mapper::plural;

use crate::error::CliError;
use crate::reproduce::figure::{BoxItem, box_plot_svg};
use crate::reproduce::published::format_number;
use crate::reproduce::report::{FigureFile, Measured, MeasuredFigure, Section, StudyReport};
use crate::reproduce::{RESULT_LABELS, Scale, Study, StudyRun, machine_conditions};
use crate::results::{Cell, Report};
use crate::sweep::SweepPlan;

/// The far-atomics study.
#[derive(Debug)]
pub struct FarAtomics;

/// The INNCABS kernels with shared atomics.
const KERNELS: [&str; 3] = ["qap", "floorplan", "nqueens"];

/// The executors: the study's one thread per task, and a pool for contrast.
const EXECUTORS: [ExecutorKind; 2] = [ExecutorKind::Spawn, ExecutorKind::Tree];

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `std`, then every parbench-atomics backend this CPU runs.
fn backends() -> Vec<String> {
    let mut names = vec!["std".to_owned()];
    names.extend(Backend::available().iter().map(|b| b.name().to_owned()));
    names
}

/// Why LSE vs LL/SC cannot be measured here, if it cannot.
fn lse_llsc_unavailable() -> Option<String> {
    let available = Backend::available();
    if !cfg!(target_arch = "aarch64") {
        return Some(format!(
            "this CPU is {}: the LSE and LL/SC backends exist only on aarch64 (emulated timings would mean nothing)",
            std::env::consts::ARCH
        ));
    }
    (!available.contains(&Backend::Lse))
        .then(|| "this aarch64 CPU has no LSE (ARMv8.0): only LL/SC runs".to_owned())
}

/// The round parameters at a scale: philosophers, bites, eat time.
fn round_size(scale: Scale) -> (usize, usize, usize) {
    scale.pick((8, 20, 1000), (96, 300, 1000), (96, 1_000_000, 1000))
}

impl Study for FarAtomics {
    fn name(&self) -> &'static str {
        "far-atomics"
    }

    fn published_json(&self) -> &'static str {
        include_str!("../../data/published/far-atomics.json")
    }

    fn scaling(&self, scale: Scale) -> String {
        let (philosophers, bites, eat) = round_size(scale);
        let common = format!(
            "{} (one per CPU this process may use); round: {philosophers} philosophers × {bites} bites of {eat} ns",
            plural(cores(), "thread")
        );
        match scale {
            Scale::Tiny => format!("{common}; small search inputs, 2 runs per cell"),
            Scale::Default => format!(
                "{common} (the study: 96 × 1M bites); search kernels at their default sizes (qap n = 10, floorplan-10, nqueens 10); the study's 100 runs per cell"
            ),
            Scale::Full => format!("{common}, 100 runs per cell, nqueens 12"),
        }
    }

    fn run(&self, run: &mut StudyRun) -> Result<StudyReport, CliError> {
        let scale = run.scale;
        let runs = run.runs(2, 100, 100);
        let round_runs = run.runs(2, 100, 100);
        let warmup = scale.pick(0, 3, 5);
        let threads = cores();
        let backends = backends();
        let mut search: Vec<(String, String, Vec<Cell>)> = Vec::new();
        for kernel_name in KERNELS {
            let kernel = find_kernel(kernel_name)?;
            for backend in &backends {
                let mut params = Params::new().with("backend", backend.as_str());
                match scale {
                    Scale::Tiny => {
                        for (name, value) in kernel.small_params() {
                            params.set(*name, *value);
                        }
                    }
                    Scale::Full if kernel_name == "nqueens" => {
                        params.set("n", "12");
                    }
                    _ => {}
                }
                let plan = SweepPlan {
                    kernels: vec![kernel],
                    schedulers: EXECUTORS.map(Into::into).to_vec(),
                    threads: vec![threads],
                    runs,
                    warmup,
                    pin: PinPolicy::None,
                    params,
                    interleave: 1,
                };
                let cells = run.measure(&format!("{kernel_name} backend={backend}"), &plan)?;
                search.push((kernel_name.to_owned(), backend.clone(), cells));
            }
        }

        // Round: the study's variant on one thread per philosopher, every lock × backend, free or
        // confined to one CPU.
        let (philosophers, bites, eat) = round_size(scale);
        let round = find_kernel("round")?;
        let mut locks: Vec<(String, String)> = Vec::new();
        for lock in LockKind::ALL {
            for backend in Backend::available() {
                locks.push((lock.name().to_owned(), backend.name().to_owned()));
            }
        }
        locks.push(("std".to_owned(), String::new()));
        let confinements: Vec<usize> = if threads > 1 {
            vec![threads, 1]
        } else {
            vec![1]
        };
        let mut rounds: Vec<(String, usize, Vec<Cell>)> = Vec::new();
        for (lock, backend) in &locks {
            for &cpus in &confinements {
                let mut params = Params::new()
                    .with("n", philosophers.to_string())
                    .with("meals", bites.to_string())
                    .with("mode", "threads")
                    .with("coin", "true")
                    .with("eat-ns", eat.to_string())
                    .with("cpus", cpus.to_string())
                    .with("lock", lock.as_str());
                if !backend.is_empty() {
                    params.set("backend", backend.as_str());
                }
                let plan = SweepPlan {
                    kernels: vec![round],
                    schedulers: vec![ExecutorKind::Spawn.into()],
                    threads: vec![threads],
                    runs: round_runs,
                    warmup: scale.pick(0, 2, 5),
                    pin: PinPolicy::None,
                    params,
                    interleave: 1,
                };
                let label = lock_label(lock, backend);
                let cells =
                    run.measure(&format!("round {label} on {}", plural(cpus, "CPU")), &plan)?;
                rounds.push((label, cpus, cells));
            }
        }

        let measured = self.measured(&search, &rounds, runs, round_runs, threads, scale);
        let figures = figures(&search, &rounds, runs, round_runs);
        Ok(StudyReport {
            scale,
            scaling: self.scaling(scale),
            conditions_here: format!(
                "{}; backends here: {}; each cell {warmup} warm-up + timed runs, every run validated; CI95 = mean ± 1.96·SE",
                machine_conditions(),
                backends.join(", ")
            ),
            measured,
            sections: vec![
                Section {
                    heading: "Search kernels: mean time with CI95, threads created and system-time share per run (getrusage, whole process, tick-sampled: meaningful for runs of many ms)".into(),
                    body: search_table(&search),
                },
                Section {
                    heading: format!("Round ({philosophers} philosophers × {bites} bites, one thread each, flip_coin, {eat} ns per bite)"),
                    body: round_table(&rounds),
                },
                Section {
                    heading: "The two builds".into(),
                    body: BUILDS.to_owned(),
                },
            ],
            figures,
            results: std::mem::replace(&mut run.results, Report::new("reproduce", &RESULT_LABELS)),
        })
    }
}

/// How this project makes the study's two builds, verified by disassembly.
const BUILDS: &str = "The study built each program twice with GCC and checked the atomic \
instructions with objdump. Here the choice is made two ways, both checked by \
`scripts/test-aarch64.sh` on aarch64 (under qemu):\n\n\
- at run time, per kernel: `--backend lse|llsc|portable` selects parbench-atomics' fixed-instruction \
entry points (CASAL/LDUMINAL/LDADDAL/SWPA/CASA vs LDAXR…STXR/STLXR loops), each checked function by \
function by `scripts/aarch64/check-disassembly.sh`;\n\
- at build time, for the whole runtime (scheduler, kernels, `std` atomics inlined into them): \
`scripts/aarch64/build-lse.sh on|off` (`-C target-feature=+lse` vs `-lse,-outline-atomics`), checked by \
`scripts/aarch64/check-runtime-atomics.sh` (LSE build: LSE instructions and no exclusive pairs; LL/SC \
build: the reverse; neither calls the outline-atomics helpers that made the study's builds identical). \
Run `parbench-cli reproduce far-atomics` from each build on an ARM server to compare them.\n";

fn lock_label(lock: &str, backend: &str) -> String {
    if backend.is_empty() {
        format!("{lock} mutex")
    } else {
        format!("{lock}/{backend}")
    }
}

fn cell_of<'a>(cells: &'a [Cell], executor: &str) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| c.label("scheduler") == Some(executor))
}

fn metric_median(cell: &Cell, name: &str) -> Option<f64> {
    cell.metrics
        .iter()
        .find(|m| m.name == name)
        .and_then(|m| m.median())
}

fn mean_ci(cell: &Cell) -> String {
    match &cell.summary {
        Some(s) => match (s.ci95_low, s.ci95_high) {
            (Some(low), Some(high)) => format!("{} (CI95 {}–{})", ms(s.mean), ms(low), ms(high)),
            _ => ms(s.mean),
        },
        None => format!("failed: {}", cell.error.as_deref().unwrap_or("no samples")),
    }
}

fn ms(seconds: f64) -> String {
    format!("{} ms", format_number(seconds * 1e3))
}

fn os_columns(cell: &Cell) -> String {
    let threads = metric_median(cell, "threads-created").map_or("0".to_owned(), format_number);
    let sys = metric_median(cell, "sys-time-share")
        .map_or("–".to_owned(), |v| format!("{} %", format_number(v)));
    format!("{threads} | {sys}")
}

fn search_table(search: &[(String, String, Vec<Cell>)]) -> String {
    let mut md = String::from(
        "| kernel | backend | executor | mean time (CI95) | median | threads created per run | system-time share |\n|---|---|---|---|---|---|---|\n",
    );
    for (kernel, backend, cells) in search {
        for executor in EXECUTORS {
            if let Some(cell) = cell_of(cells, executor.name()) {
                let median = cell
                    .summary
                    .as_ref()
                    .map_or("–".to_owned(), |s| ms(s.median));
                md.push_str(&format!(
                    "| {kernel} | {backend} | {} | {} | {median} | {} |\n",
                    executor.name(),
                    mean_ci(cell),
                    os_columns(cell)
                ));
            }
        }
    }
    md
}

fn round_table(rounds: &[(String, usize, Vec<Cell>)]) -> String {
    let mut md = String::from(
        "| lock/backend | CPUs | mean time (CI95) | median | right-fork retries (median) | threads created per run | system-time share |\n|---|---|---|---|---|---|---|\n",
    );
    for (label, cpus, cells) in rounds {
        if let Some(cell) = cell_of(cells, "spawn") {
            let median = cell
                .summary
                .as_ref()
                .map_or("–".to_owned(), |s| ms(s.median));
            let retries =
                metric_median(cell, "right-fork-retries").map_or("–".to_owned(), format_number);
            md.push_str(&format!(
                "| {label} | {cpus} | {} | {median} | {retries} | {} |\n",
                mean_ci(cell),
                os_columns(cell)
            ));
        }
    }
    md
}

fn median_of(cells: &[Cell], executor: &str) -> Option<f64> {
    cell_of(cells, executor)?.summary.as_ref().map(|s| s.median)
}

impl FarAtomics {
    fn measured(
        &self,
        search: &[(String, String, Vec<Cell>)],
        rounds: &[(String, usize, Vec<Cell>)],
        runs: usize,
        round_runs: usize,
        threads: usize,
        scale: Scale,
    ) -> Vec<MeasuredFigure> {
        let (philosophers, bites, eat) = round_size(scale);
        let threads_text = plural(threads, "thread");
        let find = |kernel: &str, backend: &str| {
            search
                .iter()
                .find(|(k, b, _)| k == kernel && b == backend)
                .map(|(_, _, cells)| cells.as_slice())
        };
        let spawn_ratios: Vec<String> = KERNELS
            .iter()
            .filter_map(|k| {
                let cells = find(k, "std")?;
                let ratio = median_of(cells, "spawn")? / median_of(cells, "tree")?;
                Some(format!("{k} {}×", format_number(ratio)))
            })
            .collect();
        let lse_vs_llsc = match lse_llsc_unavailable() {
            Some(reason) => Measured::Unavailable(reason),
            None => Measured::Finding(
                KERNELS
                    .iter()
                    .filter_map(|k| {
                        let ratio = median_of(find(k, "lse")?, "spawn")?
                            / median_of(find(k, "llsc")?, "spawn")?;
                        Some(format!("{k} {}", format_number(ratio)))
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        };
        let portable_vs_std: Vec<String> = KERNELS
            .iter()
            .filter_map(|k| {
                let ratio = median_of(find(k, "portable")?, "spawn")?
                    / median_of(find(k, "std")?, "spawn")?;
                Some(format!("{k} {}", format_number(ratio)))
            })
            .collect();
        let confinement: Vec<String> = rounds
            .iter()
            .filter(|(_, cpus, _)| *cpus == 1)
            .filter_map(|(label, _, one)| {
                let free = rounds
                    .iter()
                    .find(|(l, c, _)| l == label && *c != 1)
                    .map(|(_, _, cells)| cells)?;
                let ratio = median_of(one, "spawn")? / median_of(free, "spawn")?;
                Some(format!("{label} {}", format_number(ratio)))
            })
            .collect();
        vec![
            MeasuredFigure {
                id: "runs".into(),
                value: Measured::number(runs as f64, "runs"),
                conditions: format!("search kernels; round cells {round_runs} runs"),
            },
            MeasuredFigure {
                id: "round-philosophers".into(),
                value: Measured::number(philosophers as f64, "philosophers"),
                conditions: "one OS thread each (spawn), start barrier, flip_coin, time-based eating".into(),
            },
            MeasuredFigure {
                id: "round-bites".into(),
                value: Measured::number(bites as f64, "bites"),
                conditions: format!("scaled down at this scale; {eat} ns of busy eating per bite"),
            },
            MeasuredFigure {
                id: "objdump-same-instructions".into(),
                value: Measured::Finding(
                    "here the two builds differ by construction: fixed-instruction backends checked per function, and whole-runtime LSE-on/LSE-off builds checked by disassembly (see \"The two builds\")".into(),
                ),
                conditions: "scripts/test-aarch64.sh on aarch64 (qemu -cpu max / cortex-a57)".into(),
            },
            MeasuredFigure {
                id: "kernel-lse-vs-llsc".into(),
                value: lse_vs_llsc,
                conditions: format!("median LSE / median LL/SC on spawn, {threads_text}, {runs} runs"),
            },
            MeasuredFigure {
                id: "spawn-overhead".into(),
                value: if spawn_ratios.is_empty() {
                    Measured::Unavailable("the spawn or tree cells failed".into())
                } else {
                    Measured::Finding(format!("spawn / tree median time: {}", spawn_ratios.join(", ")))
                },
                conditions: format!("std atomics, {threads_text}, {runs} runs"),
            },
            MeasuredFigure {
                id: "platform-results".into(),
                value: Measured::Unavailable(
                    "needs the Graviton, Kunpeng 920 and A64FX machines the results come from".into(),
                ),
                conditions: format!("this machine: {}", std::env::consts::ARCH),
            },
            MeasuredFigure {
                id: "portable-vs-std".into(),
                value: Measured::Finding(format!(
                    "median portable / median std on spawn: {}",
                    portable_vs_std.join(", ")
                )),
                conditions: format!("{threads_text}, {runs} runs"),
            },
            MeasuredFigure {
                id: "round-confined-vs-free".into(),
                value: if confinement.is_empty() {
                    Measured::Unavailable("one CPU only: nothing to confine to".into())
                } else {
                    Measured::Finding(format!(
                        "median time on 1 CPU / on {threads} CPUs: {}",
                        confinement.join(", ")
                    ))
                },
                conditions: format!("{philosophers} philosophers × {bites} bites, {round_runs} runs"),
            },
        ]
    }
}

fn figures(
    search: &[(String, String, Vec<Cell>)],
    rounds: &[(String, usize, Vec<Cell>)],
    runs: usize,
    round_runs: usize,
) -> Vec<FigureFile> {
    let mut figures = Vec::new();
    for kernel in KERNELS {
        let items: Vec<BoxItem> = search
            .iter()
            .filter(|(k, _, _)| k == kernel)
            .flat_map(|(_, backend, cells)| {
                EXECUTORS.iter().filter_map(move |e| {
                    let summary = cell_of(cells, e.name())?.summary.clone()?;
                    Some(BoxItem {
                        label: format!("{backend} {}", e.name()),
                        summary,
                    })
                })
            })
            .collect();
        if let Ok(svg) = box_plot_svg(&format!("{kernel}: time per run"), "seconds", &items) {
            figures.push(FigureFile {
                file: format!("{kernel}.svg"),
                caption: format!("{kernel} per backend and executor: boxes p25–p75 with the median, whiskers p5/p95, red: the mean with its 95 % CI; {runs} runs each."),
                svg,
            });
        }
    }
    let items: Vec<BoxItem> = rounds
        .iter()
        .filter_map(|(label, cpus, cells)| {
            Some(BoxItem {
                label: format!("{label} {cpus}cpu"),
                summary: cell_of(cells, "spawn")?.summary.clone()?,
            })
        })
        .collect();
    if let Ok(svg) = box_plot_svg("round: time per run", "seconds", &items) {
        figures.push(FigureFile {
            file: "round.svg".into(),
            caption: format!("Round per lock/backend and CPU confinement: boxes p25–p75 with the median, whiskers p5/p95, red: the mean with its 95 % CI; {round_runs} runs each."),
            svg,
        });
    }
    figures
}
