//! The slice algorithms of parbench-scheduler against rayon and the sequential loop, on the same
//! closures: `for_each_mut` on 10^6 f64 (`x = x.sqrt() * 1.5`), `map_collect` of 10^6 items,
//! `par_chunks_mut` with 4 KiB chunks, and the sort of 10^6 and 10^7 random u64.
//!
//! `cargo bench --bench slices` runs them under criterion. On a shared machine, where timings move
//! between processes, the interleaved mode is the one to quote:
//!
//! ```sh
//! PARBENCH_SLICES_ROUNDS=15 cargo bench --bench slices
//! ```
//!
//! runs every (case, implementation) pair once per round — the order rotating from round to
//! round, so slow phases of the machine hit all of them alike — takes the median of a few timed
//! repetitions as the round's value, and prints the median, minimum and maximum over the rounds
//! with the speed-up over the sequential loop and the ratio to rayon, then the sorts' CPU time per
//! run over all threads of the process (what a loaded machine cannot hide). `PARBENCH_SLICES_THREADS`
//! sets the pool size (default 2).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use rayon::prelude::*;

const ELEMENTS: usize = 1_000_000;
const SORT_ELEMENTS: usize = 10_000_000;
/// 4 KiB of f64.
const CHUNK_LEN: usize = 4096 / std::mem::size_of::<f64>();

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Implementation {
    Seq,
    Parbench,
    Rayon,
}

const IMPLEMENTATIONS: [Implementation; 3] = [
    Implementation::Seq,
    Implementation::Parbench,
    Implementation::Rayon,
];

impl Implementation {
    fn name(self) -> &'static str {
        match self {
            Implementation::Seq => "seq",
            Implementation::Parbench => "parbench",
            Implementation::Rayon => "rayon",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    ForEachMut,
    MapCollect,
    ParChunksMut,
    SortSmall,
    Sort,
}

const CASES: [Case; 5] = [
    Case::ForEachMut,
    Case::MapCollect,
    Case::ParChunksMut,
    Case::SortSmall,
    Case::Sort,
];

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::ForEachMut => "for_each_mut 10^6 f64",
            Case::MapCollect => "map_collect 10^6",
            Case::ParChunksMut => "par_chunks_mut 4 KiB",
            Case::SortSmall => "sort_unstable 10^6 u64",
            Case::Sort => "sort_unstable 10^7 u64",
        }
    }

    /// Timed repetitions per round in the interleaved mode.
    fn repetitions(self) -> usize {
        match self {
            Case::Sort => 3,
            Case::SortSmall => 9,
            _ => 21,
        }
    }
}

#[inline]
fn scale(x: &mut f64) {
    *x = x.sqrt() * 1.5;
}

#[inline]
fn item(i: usize) -> f64 {
    (i as f64).sqrt() * 1.5
}

/// Deterministic pseudo-random keys (splitmix64).
fn random_keys(len: usize) -> Vec<u64> {
    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

struct Bench {
    pool: parbench_scheduler::ThreadPool,
    rayon: rayon::ThreadPool,
    floats: Vec<f64>,
    keys: Vec<u64>,
    scratch: Vec<u64>,
}

impl Bench {
    fn new(threads: usize) -> Self {
        let pool = parbench_scheduler::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a parbench pool");
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool");
        let keys = random_keys(SORT_ELEMENTS);
        Bench {
            pool,
            rayon,
            floats: (0..ELEMENTS).map(|i| i as f64).collect(),
            scratch: keys.clone(),
            keys,
        }
    }

    /// Prepares the input of one run (not timed): the unsorted keys for a sort.
    fn prepare(&mut self, case: Case) {
        match case {
            Case::Sort => self.scratch.copy_from_slice(&self.keys),
            Case::SortSmall => self.scratch[..ELEMENTS].copy_from_slice(&self.keys[..ELEMENTS]),
            _ => {}
        }
    }

    /// One run of `case` with `implementation` (the timed part).
    fn run(&mut self, case: Case, implementation: Implementation) {
        let Bench {
            pool,
            rayon,
            floats,
            scratch,
            ..
        } = self;
        match (case, implementation) {
            (Case::ForEachMut, Implementation::Seq) => floats.iter_mut().for_each(scale),
            (Case::ForEachMut, Implementation::Parbench) => pool.for_each_mut(floats, scale),
            (Case::ForEachMut, Implementation::Rayon) => {
                rayon.install(|| floats.par_iter_mut().for_each(scale))
            }
            (Case::MapCollect, Implementation::Seq) => {
                black_box((0..ELEMENTS).map(item).collect::<Vec<f64>>());
            }
            (Case::MapCollect, Implementation::Parbench) => {
                black_box(pool.map_collect(0..ELEMENTS, item));
            }
            (Case::MapCollect, Implementation::Rayon) => {
                black_box(rayon.install(|| {
                    (0..ELEMENTS)
                        .into_par_iter()
                        .map(item)
                        .collect::<Vec<f64>>()
                }));
            }
            (Case::ParChunksMut, Implementation::Seq) => floats
                .chunks_mut(CHUNK_LEN)
                .for_each(|c| c.iter_mut().for_each(scale)),
            (Case::ParChunksMut, Implementation::Parbench) => {
                pool.par_chunks_mut(floats, CHUNK_LEN, |_, c| c.iter_mut().for_each(scale))
            }
            (Case::ParChunksMut, Implementation::Rayon) => rayon.install(|| {
                floats
                    .par_chunks_mut(CHUNK_LEN)
                    .for_each(|c| c.iter_mut().for_each(scale))
            }),
            (Case::SortSmall, Implementation::Seq) => scratch[..ELEMENTS].sort_unstable(),
            (Case::SortSmall, Implementation::Parbench) => {
                pool.sort_unstable(&mut scratch[..ELEMENTS])
            }
            (Case::SortSmall, Implementation::Rayon) => {
                rayon.install(|| scratch[..ELEMENTS].par_sort_unstable())
            }
            (Case::Sort, Implementation::Seq) => scratch.sort_unstable(),
            (Case::Sort, Implementation::Parbench) => pool.sort_unstable(scratch),
            (Case::Sort, Implementation::Rayon) => rayon.install(|| scratch.par_sort_unstable()),
        }
        black_box(&mut *floats);
    }
}

fn criterion_benches(c: &mut Criterion, bench: &mut Bench) {
    for case in CASES {
        let mut group = c.benchmark_group(case.name());
        if case == Case::SortSmall {
            group.sample_size(30);
        }
        if case == Case::Sort {
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(8));
        }
        for implementation in IMPLEMENTATIONS {
            group.bench_function(implementation.name(), |b| {
                // A sort's input is restored before every run, outside the timed part.
                b.iter_custom(|iterations| {
                    (0..iterations)
                        .map(|_| {
                            bench.prepare(case);
                            let start = Instant::now();
                            bench.run(case, implementation);
                            start.elapsed()
                        })
                        .sum()
                });
            });
        }
        group.finish();
    }
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn interleaved(bench: &mut Bench, rounds: usize, threads: usize) {
    let pairs: Vec<(Case, Implementation)> = CASES
        .iter()
        .flat_map(|&case| IMPLEMENTATIONS.iter().map(move |&imp| (case, imp)))
        .collect();
    let mut per_round: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); pairs.len()];
    let mut cpu_per_round: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); pairs.len()];
    for round in 0..rounds {
        for offset in 0..pairs.len() {
            let index = (round + offset) % pairs.len();
            let (case, implementation) = pairs[index];
            let mut cpu = Vec::with_capacity(case.repetitions());
            let mut times: Vec<Duration> = (0..case.repetitions())
                .map(|_| {
                    bench.prepare(case);
                    let cpu_start = process_cpu_time();
                    let start = Instant::now();
                    bench.run(case, implementation);
                    let elapsed = start.elapsed();
                    cpu.push(process_cpu_time().saturating_sub(cpu_start));
                    elapsed
                })
                .collect();
            per_round[index].push(median(&mut times));
            cpu_per_round[index].push(median(&mut cpu));
        }
        eprintln!("round {}/{rounds} done", round + 1);
    }
    let summary: Vec<(Duration, Duration, Duration)> = per_round
        .iter_mut()
        .map(|times| {
            let mut sorted = times.clone();
            sorted.sort_unstable();
            (median(times), sorted[0], sorted[sorted.len() - 1])
        })
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{threads} threads, {rounds} interleaved rounds; per round the median of a few runs; \
         median over rounds [min, max], in ms"
    );
    println!("| case | seq | parbench | rayon | parbench speed-up over seq | parbench / rayon |");
    println!("|---|---|---|---|---|---|");
    for (c, case) in CASES.iter().enumerate() {
        let cell = |i: usize| {
            let (med, min, max) = summary[c * IMPLEMENTATIONS.len() + i];
            format!("{:.2} [{:.2}, {:.2}]", ms(med), ms(min), ms(max))
        };
        let (seq, ours, theirs) = (summary[c * 3].0, summary[c * 3 + 1].0, summary[c * 3 + 2].0);
        println!(
            "| {} | {} | {} | {} | {:.2}× | {:.2} |",
            case.name(),
            cell(0),
            cell(1),
            cell(2),
            ms(seq) / ms(ours),
            ms(ours) / ms(theirs)
        );
    }
    // What a run costs in CPU, whatever the machine's load: with P free cores, the parallel wall
    // time cannot go below this divided by P (idle workers spinning for work are included).
    // Only for the sorts: Linux adds a thread's CPU time to the process's total at scheduler ticks
    // and context switches, so for millisecond runs the other workers' time is mostly missing.
    println!();
    println!("CPU time per run, all threads of the process (median over rounds, ms; sorts only)");
    println!("| case | seq | parbench | rayon |");
    println!("|---|---|---|---|");
    for (c, case) in CASES.iter().enumerate() {
        if !matches!(case, Case::Sort | Case::SortSmall) {
            continue;
        }
        let mut cpu = |i: usize| ms(median(&mut cpu_per_round[c * 3 + i]));
        println!(
            "| {} | {:.2} | {:.2} | {:.2} |",
            case.name(),
            cpu(0),
            cpu(1),
            cpu(2)
        );
    }
}

/// CPU time used so far by every thread of this process (user + system).
fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given; all-zero is a valid `rusage`.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse().ok()
}

fn main() {
    let threads = env_usize("PARBENCH_SLICES_THREADS").unwrap_or(2).max(1);
    let mut bench = Bench::new(threads);
    match env_usize("PARBENCH_SLICES_ROUNDS") {
        Some(rounds) if rounds > 0 => interleaved(&mut bench, rounds, threads),
        _ => {
            let mut criterion = Criterion::default().configure_from_args();
            criterion_benches(&mut criterion, &mut bench);
            criterion.final_summary();
        }
    }
}
