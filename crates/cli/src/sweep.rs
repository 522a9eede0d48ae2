//! The measurement loop of `parbench-cli sweep`: kernels × thread counts × schedulers.
//!
//! Order matters for fairness and cost. A kernel's input is prepared once per thread count (some
//! default sizes scale with it) and then run on every scheduler, so every scheduler times the same
//! data; each cell builds its own executor (its own pool), does `warmup` untimed runs and then
//! `runs` timed ones, and drops the pool after its last run. Every executor's drop returns only
//! once its worker threads have exited (rayon's included), so no idle or spinning worker of one
//! cell competes with the next. `sweep --rounds` ([`crate::rounds`]) runs the cells of each round
//! in a shuffled order ([`run_cells`]) in a fresh process.
//!
//! Interleaving ([`SweepPlan::interleave`], `sweep --interleave B`, 5 by default): the schedulers
//! of one kernel and thread count take turns in blocks of a few runs, so a machine whose speed
//! drifts within a process slows all of them alike instead of whichever cell ran during the slow
//! spell. Their pools then live side by side, each parked (after a pause longer than any pool's
//! idle spin) while another one runs.
//!
//! A cell that fails — the executor cannot be built, the OS refuses a thread to `spawn`, the
//! kernel computes a wrong result, or even panics — is recorded as that cell's error and the sweep
//! goes on: one bad configuration must not cost the other measurements. After a panic the
//! kernel's prepared state is not trusted and is prepared afresh for the next cell. A kernel that
//! cannot be *prepared* (bad parameter, unreadable or malformed input file) is the user's input
//! error and stops the sweep; the cells measured so far stay in the report.
//!
//! Speed-up is relative to the `seq` cell of the same kernel and thread count (same input), or
//! failing that the `seq` cell with one thread; it is recomputed after every cell so that the
//! report is complete whenever an observer looks at it.

use std::collections::hash_map::{Entry, HashMap};
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use parbench_kernels::{
    Executor, ExecutorKind, Kernel, KernelError, Params, PinPolicy, PreparedKernel, RunReport,
    SchedulerSpec,
};
use thiserror::Error;

use crate::error::panic_message;
use crate::results::{Cell, MetricSeries, Report};
use crate::stats::{Relative, Summary};
use crate::usage::ProcessUsage;

/// The scheduler whose cells are the speed-up baseline.
pub const BASELINE_SCHEDULER: ExecutorKind = ExecutorKind::Seq;

/// Label names of a sweep's cells, in table order.
pub const LABELS: [&str; 3] = ["kernel", "scheduler", "threads"];

/// What to measure.
///
/// ```
/// use parbench_cli::sweep::SweepPlan;
/// use parbench_kernels::{registry, ExecutorKind, Params, PinPolicy};
/// let plan = SweepPlan {
///     kernels: registry().iter().take(2).copied().collect(),
///     schedulers: vec![ExecutorKind::Tree.into(), ExecutorKind::Seq.into()],
///     threads: vec![1, 2],
///     runs: 10,
///     warmup: 2,
///     pin: PinPolicy::None,
///     params: Params::new(),
///     interleave: 1,
/// };
/// assert_eq!(plan.cell_count(), 8);
/// assert_eq!(plan.total_runs(), 8 * 12);
/// ```
#[derive(Clone)]
pub struct SweepPlan {
    /// Kernels, in measurement order.
    pub kernels: Vec<&'static dyn Kernel>,
    /// Schedulers, in measurement order (`dynamic:64` and the like: [`SchedulerSpec`]).
    pub schedulers: Vec<SchedulerSpec>,
    /// Thread counts, each at least 1.
    pub threads: Vec<usize>,
    /// Timed runs per cell, at least 1.
    pub runs: usize,
    /// Untimed runs per cell before the timed ones.
    pub warmup: usize,
    /// Thread pinning of the executors.
    pub pin: PinPolicy,
    /// Kernel parameters (each kernel reads the ones it declares).
    pub params: Params,
    /// Blocks per cell; 1 measures each cell's runs back to back, on a pool built for the cell
    /// and dropped after it.
    ///
    /// With `B > 1` the schedulers of one kernel and thread count take turns: each cell's timed
    /// runs are split into `B` blocks of nearly equal size, and block by block every scheduler
    /// runs its share, in an order that rotates by one scheduler per block, pausing
    /// [`INTERLEAVE_PAUSE`] after each block. A cell's first block starts with its `warmup`
    /// runs, every later one with one untimed run that wakes its pool, repeated until the block's
    /// untimed runs have taken [`REWARM`] (none with `warmup` 0).
    /// The set's pools live until their last block. On a machine whose speed drifts within a
    /// process, every scheduler then samples the same stretches of time, so their ratios stop
    /// depending on which one happened to run during a slow spell. More blocks than runs
    /// count as one block per run.
    pub interleave: usize,
}

impl SweepPlan {
    /// Number of cells the plan measures.
    pub fn cell_count(&self) -> usize {
        self.kernels.len() * self.schedulers.len() * self.threads.len()
    }

    /// The cell at `index` in the canonical order (kernels, then thread counts, then schedulers):
    /// its kernel's index in `kernels`, its thread count and its scheduler.
    ///
    /// ```
    /// use parbench_cli::sweep::SweepPlan;
    /// use parbench_kernels::{registry, ExecutorKind, Params, PinPolicy};
    /// let plan = SweepPlan {
    ///     kernels: registry().iter().take(2).copied().collect(),
    ///     schedulers: vec![ExecutorKind::Tree.into(), ExecutorKind::Seq.into()],
    ///     threads: vec![1, 2],
    ///     runs: 1, warmup: 0, pin: PinPolicy::None, params: Params::new(),
    ///     interleave: 1,
    /// };
    /// assert_eq!(plan.cell_at(0), Some((0, 1, ExecutorKind::Tree.into())));
    /// assert_eq!(plan.cell_at(3), Some((0, 2, ExecutorKind::Seq.into())));
    /// assert_eq!(plan.cell_at(4), Some((1, 1, ExecutorKind::Tree.into())));
    /// assert_eq!(plan.cell_at(8), None);
    /// ```
    pub fn cell_at(&self, index: usize) -> Option<(usize, usize, SchedulerSpec)> {
        if index >= self.cell_count() {
            return None;
        }
        let per_kernel = self.threads.len() * self.schedulers.len();
        let within = index % per_kernel;
        Some((
            index / per_kernel,
            self.threads[within / self.schedulers.len()],
            self.schedulers[within % self.schedulers.len()],
        ))
    }

    /// Number of kernel runs, warm-up included.
    pub fn total_runs(&self) -> u64 {
        self.cell_count() as u64 * self.runs_per_cell()
    }

    /// Blocks per cell: [`SweepPlan::interleave`], at least 1 and at most one per timed run.
    pub fn blocks(&self) -> usize {
        self.interleave.clamp(1, self.runs.max(1))
    }

    /// Runs of one cell, warm-up and the untimed run that starts each later block included (not
    /// its repeats until [`REWARM`]).
    ///
    /// ```
    /// use parbench_cli::sweep::SweepPlan;
    /// use parbench_kernels::{ExecutorKind, Params, PinPolicy};
    /// let plan = SweepPlan {
    ///     kernels: vec![], schedulers: vec![ExecutorKind::Seq.into()], threads: vec![1],
    ///     runs: 10, warmup: 3, pin: PinPolicy::None, params: Params::new(), interleave: 4,
    /// };
    /// assert_eq!(plan.runs_per_cell(), 3 + 10 + 3);
    /// assert_eq!(SweepPlan { interleave: 1, ..plan.clone() }.runs_per_cell(), 13);
    /// assert_eq!(SweepPlan { warmup: 0, ..plan }.runs_per_cell(), 10);
    /// ```
    pub fn runs_per_cell(&self) -> u64 {
        (0..self.blocks())
            .map(|block| {
                let (untimed, timed) = self.block_runs(block);
                (untimed + timed) as u64
            })
            .sum()
    }

    /// The untimed and the timed runs of block `block` of a cell.
    ///
    /// ```
    /// use parbench_cli::sweep::SweepPlan;
    /// use parbench_kernels::{ExecutorKind, Params, PinPolicy};
    /// let plan = SweepPlan {
    ///     kernels: vec![], schedulers: vec![ExecutorKind::Seq.into()], threads: vec![1],
    ///     runs: 10, warmup: 3, pin: PinPolicy::None, params: Params::new(), interleave: 4,
    /// };
    /// let blocks: Vec<_> = (0..4).map(|b| plan.block_runs(b)).collect();
    /// assert_eq!(blocks, [(3, 2), (1, 3), (1, 2), (1, 3)]);
    /// ```
    pub fn block_runs(&self, block: usize) -> (usize, usize) {
        let blocks = self.blocks();
        let timed = self.runs * (block + 1) / blocks - self.runs * block / blocks;
        let untimed = if block == 0 {
            self.warmup
        } else {
            self.warmup.min(1)
        };
        (untimed, timed)
    }
}

/// Receives the sweep's progress; the CLI draws a progress bar and rewrites the output file.
pub trait SweepObserver {
    /// A cell is about to be measured.
    fn cell_started(&mut self, name: &str);
    /// `count` runs of the current cell finished or will not happen (the cell failed).
    fn runs_done(&mut self, count: u64);
    /// A cell was added to `report` (and speed-ups were updated). An error stops the sweep.
    fn cell_finished(&mut self, report: &Report) -> Result<(), SweepError>;
}

/// Why a sweep stopped before measuring every cell.
#[derive(Debug, Error)]
pub enum SweepError {
    /// A kernel could not be prepared: a bad parameter or input file.
    #[error(transparent)]
    Prepare(#[from] KernelError),
    /// The observer could not keep up (e.g. the output file became unwritable).
    #[error("{0}")]
    Observer(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Measures every cell of `plan`, appending to `report.cells`.
///
/// ```
/// use parbench_cli::results::Report;
/// use parbench_cli::sweep::{run_sweep, SweepError, SweepObserver, SweepPlan, LABELS};
/// use parbench_kernels::{find_kernel, ExecutorKind, Params, PinPolicy};
///
/// struct Silent;
/// impl SweepObserver for Silent {
///     fn cell_started(&mut self, _: &str) {}
///     fn runs_done(&mut self, _: u64) {}
///     fn cell_finished(&mut self, _: &Report) -> Result<(), SweepError> { Ok(()) }
/// }
///
/// let plan = SweepPlan {
///     kernels: vec![find_kernel("reduce")?],
///     schedulers: vec![ExecutorKind::Rayon.into(), ExecutorKind::Seq.into()],
///     threads: vec![2],
///     runs: 2,
///     warmup: 0,
///     pin: PinPolicy::None,
///     params: Params::new().with("n", "4096"),
///     interleave: 1,
/// };
/// let mut report = Report::new("sweep", &LABELS);
/// run_sweep(&plan, &mut report, &mut Silent)?;
/// assert_eq!(report.cells.len(), 2);
/// assert!(report.cells[0].relative.is_some()); // rayon compared with seq
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SweepError::Prepare`] when a kernel cannot be prepared, [`SweepError::Observer`] when the
/// observer fails; the cells measured before stay in `report`.
pub fn run_sweep(
    plan: &SweepPlan,
    report: &mut Report,
    observer: &mut dyn SweepObserver,
) -> Result<(), SweepError> {
    let order: Vec<usize> = (0..plan.cell_count()).collect();
    run_cells(plan, &order, report, observer)
}

/// Measures the cells of `plan` whose indices (see [`SweepPlan::cell_at`]) `order` lists, in
/// that order, appending to `report.cells`; a round of `sweep --rounds` runs the cells shuffled.
///
/// A kernel's input is prepared once per thread count, the first time a cell needs it, and kept
/// for the round, so every scheduler times the same data whatever the order. With
/// [`SweepPlan::interleave`] above 1 the cells of one kernel and thread count are measured
/// together, block by block (see [`SweepPlan::interleave`]), in the order in which `order` first
/// names each such group and, within it, each scheduler.
///
/// # Errors
/// As [`run_sweep`]; an index past the plan is skipped.
pub fn run_cells(
    plan: &SweepPlan,
    order: &[usize],
    report: &mut Report,
    observer: &mut dyn SweepObserver,
) -> Result<(), SweepError> {
    let mut inputs: HashMap<(usize, usize), Box<dyn PreparedKernel>> = HashMap::new();
    for (input, kinds) in turns(plan, order) {
        measure_together(plan, input, &kinds, &mut inputs, report, observer)?;
    }
    Ok(())
}

/// The cells of `order` as the sets that are measured together: one cell at a time without
/// interleaving, else each kernel and thread count's cells as one set. Each set is
/// `((kernel index, threads), schedulers)`.
fn turns(plan: &SweepPlan, order: &[usize]) -> Vec<((usize, usize), Vec<SchedulerSpec>)> {
    let mut sets: Vec<((usize, usize), Vec<SchedulerSpec>)> = Vec::new();
    for &index in order {
        let Some((kernel_index, threads, kind)) = plan.cell_at(index) else {
            continue;
        };
        let input = (kernel_index, threads);
        match sets
            .iter_mut()
            .find(|(key, _)| plan.interleave > 1 && *key == input)
        {
            Some((_, kinds)) => kinds.push(kind),
            None => sets.push((input, vec![kind])),
        }
    }
    sets
}

/// Measures the cells of `kinds` on the input `(kernel index, threads)` in blocks: in block `b`
/// every unfinished cell runs its share of the timed runs, starting with the `b`-th of them, so
/// the order rotates and no scheduler always follows the same neighbour.
fn measure_together(
    plan: &SweepPlan,
    (kernel_index, threads): (usize, usize),
    kinds: &[SchedulerSpec],
    inputs: &mut HashMap<(usize, usize), Box<dyn PreparedKernel>>,
    report: &mut Report,
    observer: &mut dyn SweepObserver,
) -> Result<(), SweepError> {
    let kernel = plan.kernels[kernel_index];
    let mut cells: Vec<CellRun> = kinds
        .iter()
        .map(|&kind| CellRun::new(plan, kernel.name(), kind, threads))
        .collect();
    let blocks = plan.blocks();
    for block in 0..blocks {
        for turn in 0..cells.len() {
            let cell = &mut cells[(turn + block) % kinds.len()];
            if cell.is_finished() {
                continue;
            }
            let prepared = match inputs.entry((kernel_index, threads)) {
                Entry::Occupied(entry) => entry.into_mut(),
                Entry::Vacant(entry) => entry.insert(kernel.prepare(&plan.params, threads)?),
            };
            let name = format!("{} / {} / {threads}", kernel.name(), cell.kind);
            if blocks > 1 {
                observer.cell_started(&format!("{name} (block {}/{blocks})", block + 1));
            } else {
                observer.cell_started(&name);
            }
            if cell.run_block(plan, prepared.as_mut(), block, observer) {
                // The next block on this input prepares it afresh.
                inputs.remove(&(kernel_index, threads));
            }
            if let Some(finished) = cell.take_finished() {
                report.cells.push(finished);
                assign_relatives(&mut report.cells);
                observer.cell_finished(report)?;
            }
            if blocks > 1 {
                // The pool just measured stops spinning and parks before the next one runs.
                std::thread::sleep(INTERLEAVE_PAUSE);
            }
        }
    }
    Ok(())
}

/// The pause after each block of an interleaved sweep: longer than the idle spin of this
/// crate's pools (200 µs by default) and of rayon's, so that the pool measured next competes
/// with no spinning neighbour.
pub const INTERLEAVE_PAUSE: Duration = Duration::from_millis(2);

/// How long the untimed start of each later block of an interleaved sweep lasts at least (each
/// run's kernel time as the kernel reports it, or its wall time if longer): its one untimed run
/// is repeated until then. One run of a short
/// kernel after [`INTERLEAVE_PAUSE`] did not bring this VM back: spmv (≈ 0.2 ms per run) then
/// timed 10–25 % slower than back to back, for every scheduler; with 2 ms of untimed runs it
/// timed as back to back.
pub const REWARM: Duration = Duration::from_millis(2);

/// One cell while it is being measured: its executor lives from the cell's first block to its
/// last, so an interleaved sweep keeps one pool per scheduler of the set (parked between its
/// blocks) and calibrates each only once.
struct CellRun {
    kind: SchedulerSpec,
    threads: usize,
    executor: Option<Box<dyn Executor>>,
    /// `None` once handed to the report.
    cell: Option<Cell>,
    /// Runs (warm-up included) not yet done or given up.
    runs_left: u64,
    finished: bool,
}

impl CellRun {
    fn new(plan: &SweepPlan, kernel: &str, kind: SchedulerSpec, threads: usize) -> CellRun {
        let threads_text = threads.to_string();
        let scheduler = kind.to_string();
        let labels = [
            ("kernel", kernel),
            ("scheduler", scheduler.as_str()),
            ("threads", threads_text.as_str()),
        ];
        CellRun {
            kind,
            threads,
            executor: None,
            cell: Some(Cell::measured(&labels, Vec::with_capacity(plan.runs))),
            runs_left: plan.runs_per_cell(),
            finished: false,
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    /// The measured (or failed) cell, once, after its last block.
    fn take_finished(&mut self) -> Option<Cell> {
        if self.finished {
            self.cell.take()
        } else {
            None
        }
    }

    /// Ends the cell with `error`; the runs it will not do count as done for the progress.
    fn fail(&mut self, error: String, observer: &mut dyn SweepObserver) {
        observer.runs_done(self.runs_left);
        self.runs_left = 0;
        self.executor = None;
        self.finished = true;
        if let Some(cell) = &mut self.cell {
            cell.error = Some(error);
            cell.summary = None;
        }
    }

    /// Block `block` of the cell: its untimed runs, then its share of the timed ones (see
    /// [`SweepPlan::interleave`]). Returns whether the kernel panicked.
    fn run_block(
        &mut self,
        plan: &SweepPlan,
        prepared: &mut dyn PreparedKernel,
        block: usize,
        observer: &mut dyn SweepObserver,
    ) -> bool {
        if self.executor.is_none() {
            match self.kind.build(self.threads, plan.pin) {
                Ok(executor) => self.executor = Some(executor),
                Err(error) => {
                    self.fail(error.to_string(), observer);
                    return false;
                }
            }
        }
        // Under `--pin compact` the measuring thread — slot 0 of a parbench-scheduler call,
        // standing in for worker 0 — runs the block pinned where worker 0 is, and is unpinned
        // after it: pools are built before, so they see every CPU. Left to the OS, it shared a
        // CPU with worker 1 in about a third of the blocks on a VM whose kernel packs threads.
        let _caller = plan.pin.pin_caller();
        let (untimed, timed) = plan.block_runs(block);
        // Time spent in this block's untimed runs: a later block repeats its one untimed run,
        // beyond the plan's count, until `REWARM` has passed.
        let mut warmed = Duration::ZERO;
        let mut run = 0;
        while run < untimed + timed {
            let executor = self.executor.as_deref().expect("built above");
            let (created_before, usage_before) = (executor.threads_created(), ProcessUsage::now());
            let counted = block == 0 || run >= untimed || warmed.is_zero();
            let started = std::time::Instant::now();
            match run_guarded(prepared, executor) {
                Ok(outcome) => {
                    if run >= untimed {
                        let cell = self.cell.as_mut().expect("not finished");
                        cell.samples_s.push(outcome.elapsed.as_secs_f64());
                        for metric in outcome.metrics {
                            record_metric(&mut cell.metrics, metric);
                        }
                        record_os_metrics(
                            &mut cell.metrics,
                            executor,
                            created_before + outcome.untimed_threads_created,
                            usage_before,
                        );
                    } else {
                        // The kernel's own time, or the run's wall time if longer (validation).
                        warmed += outcome.elapsed.max(started.elapsed());
                    }
                    if counted {
                        self.runs_left -= 1;
                        observer.runs_done(1);
                    }
                    if block == 0 || run >= untimed || warmed >= REWARM {
                        run += 1;
                    }
                }
                Err(failure) => {
                    self.fail(failure.message, observer);
                    return failure.panicked;
                }
            }
        }
        if block + 1 == plan.blocks() {
            self.executor = None;
            self.finished = true;
            if let Some(cell) = &mut self.cell {
                cell.summary = Summary::from_samples(&cell.samples_s);
            }
        }
        false
    }
}

/// The run's OS-level cost: the share of CPU time spent in the kernel (`sys-time-share`, from
/// getrusage over the run and its validation, whole process) and, for executors that create
/// threads while running (`spawn`), how many they created (`threads-created`, less those the run
/// reports it created outside its timed section, [`RunReport::untimed_threads_created`]); and the tree
/// strategy's timespan (`timespan`, µs: calibrated per pool, so per cell and round, and possibly
/// lowered by the pool's calls; read at the end of the run), which shapes how soon its threads
/// balance, and what the pool calibrated (`timespan-calibrated`, µs), which shows whether it was
/// lowered.
fn record_os_metrics(
    metrics: &mut Vec<MetricSeries>,
    executor: &dyn Executor,
    created_before: u64,
    usage_before: Option<ProcessUsage>,
) {
    let created = executor.threads_created().saturating_sub(created_before);
    if created > 0 {
        record_metric(
            metrics,
            parbench_kernels::Metric::new("threads-created", created as f64, ""),
        );
    }
    if let Some(timespan) = executor.timespan() {
        record_metric(
            metrics,
            parbench_kernels::Metric::new("timespan", timespan.as_secs_f64() * 1e6, "µs"),
        );
    }
    if let Some(calibrated) = executor.calibrated_timespan() {
        record_metric(
            metrics,
            parbench_kernels::Metric::new(
                "timespan-calibrated",
                calibrated.as_secs_f64() * 1e6,
                "µs",
            ),
        );
    }
    let share = usage_before
        .zip(ProcessUsage::now())
        .and_then(|(before, after)| after.system_share_since(&before));
    if let Some(share) = share {
        record_metric(
            metrics,
            parbench_kernels::Metric::new("sys-time-share", share, "%"),
        );
    }
}

/// Why a run produced no timing.
struct RunFailure {
    message: String,
    panicked: bool,
}

/// One run, with a panic (a bug in a kernel or scheduler) turned into a failure of this cell.
fn run_guarded(
    prepared: &mut dyn PreparedKernel,
    executor: &dyn Executor,
) -> Result<RunReport, RunFailure> {
    // Unwind safety: after a panic the prepared kernel is never run again (the sweep prepares
    // a new one), so no broken invariant inside it can be observed.
    match panic::catch_unwind(AssertUnwindSafe(|| prepared.run(executor))) {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(error)) => Err(RunFailure {
            message: error.to_string(),
            panicked: false,
        }),
        Err(payload) => Err(RunFailure {
            message: format!("the kernel panicked: {}", panic_message(payload.as_ref())),
            panicked: true,
        }),
    }
}

fn record_metric(series: &mut Vec<MetricSeries>, metric: parbench_kernels::Metric) {
    match series.iter_mut().find(|s| s.name == metric.name) {
        Some(existing) => existing.values.push(metric.value),
        None => series.push(MetricSeries {
            name: metric.name,
            unit: metric.unit.to_owned(),
            values: vec![metric.value],
        }),
    }
}

/// Sets every measured cell's speed-up over its baseline (see the module docs).
///
/// Efficiency divides by the thread count, except for the baseline itself, which runs on one
/// thread whatever its `threads` label (that label says which input size it ran).
///
/// ```
/// use parbench_cli::results::Cell;
/// use parbench_cli::sweep::assign_relatives;
/// let mut cells = vec![
///     Cell::measured(&[("kernel", "k"), ("scheduler", "seq"), ("threads", "2")], vec![4.0]),
///     Cell::measured(&[("kernel", "k"), ("scheduler", "tree"), ("threads", "2")], vec![2.0]),
/// ];
/// assign_relatives(&mut cells);
/// let tree = cells[1].relative.unwrap();
/// assert_eq!((tree.speedup, tree.efficiency), (2.0, 1.0));
/// ```
pub fn assign_relatives(cells: &mut [Cell]) {
    let baseline =
        |cells: &[Cell], kernel: &str, threads: &str| -> Option<(f64, Vec<(usize, f64)>)> {
            cells
                .iter()
                .find(|c| {
                    c.label("kernel") == Some(kernel)
                        && c.label("scheduler") == Some(BASELINE_SCHEDULER.name())
                        && c.label("threads") == Some(threads)
                })
                .and_then(|c| Some((c.summary.as_ref()?.median, round_medians(c))))
        };
    for index in 0..cells.len() {
        let cell = &cells[index];
        let (Some(kernel), Some(threads_text), Some(summary)) = (
            cell.label("kernel"),
            cell.label("threads"),
            cell.summary.as_ref(),
        ) else {
            continue;
        };
        let Ok(threads) = threads_text.parse::<usize>() else {
            continue;
        };
        // A median of 0 s (a run shorter than the clock's step) has no speed-up: the ratio would
        // be 0 or infinite, and JSON writes infinity as null, which no command can read back.
        let baseline = baseline(cells, kernel, threads_text)
            .or_else(|| baseline(cells, kernel, "1"))
            .filter(|(median, _)| *median > 0.0 && summary.median > 0.0);
        let workers = if cell.label("scheduler") == Some(BASELINE_SCHEDULER.name()) {
            1
        } else {
            threads
        };
        // Paired over the rounds both were measured in, else medians over all.
        let relative = baseline.map(|(median, rounds)| {
            let (baseline_rounds, own_rounds) = same_rounds(&rounds, &round_medians(cell));
            Relative::paired(&baseline_rounds, &own_rounds, workers)
                .unwrap_or_else(|| Relative::against(median, summary.median, workers))
        });
        cells[index].relative = relative;
    }
}

/// The cell's per-round medians with their round numbers (empty without rounds).
fn round_medians(cell: &Cell) -> Vec<(usize, f64)> {
    let Some(spread) = &cell.rounds else {
        return Vec::new();
    };
    if spread.rounds.len() == spread.medians.len() {
        spread
            .rounds
            .iter()
            .copied()
            .zip(spread.medians.clone())
            .collect()
    } else {
        // A report from before rounds were numbered: by position (only a sweep's last round can
        // be missing from a cell).
        spread.medians.iter().copied().enumerate().collect()
    }
}

/// The medians of `a` and of `b` of the rounds both have, in round order.
fn same_rounds(a: &[(usize, f64)], b: &[(usize, f64)]) -> (Vec<f64>, Vec<f64>) {
    a.iter()
        .filter_map(|&(round, x)| Some((x, b.iter().find(|&&(r, _)| r == round)?.1)))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(scheduler: &str, threads: &str, median: f64) -> Cell {
        let labels = [
            ("kernel", "k"),
            ("scheduler", scheduler),
            ("threads", threads),
        ];
        Cell::measured(&labels, vec![median])
    }

    #[test]
    fn speedup_uses_seq_of_the_same_thread_count_first() {
        let mut cells = vec![
            cell("tree", "2", 1.0),
            cell("seq", "1", 1.5),
            cell("seq", "2", 3.0),
            cell("tree", "1", 1.5),
        ];
        assign_relatives(&mut cells);
        let tree2 = cells[0].relative.unwrap();
        assert_eq!((tree2.speedup, tree2.efficiency), (3.0, 1.5));
        let seq2 = cells[2].relative.unwrap();
        assert_eq!(
            (seq2.speedup, seq2.efficiency),
            (1.0, 1.0),
            "seq runs on one thread"
        );
        assert_eq!(cells[3].relative.unwrap().speedup, 1.0);
    }

    #[test]
    fn speedup_falls_back_to_seq_on_one_thread() {
        let mut cells = vec![cell("seq", "1", 4.0), cell("rayon", "4", 2.0)];
        assign_relatives(&mut cells);
        let rayon = cells[1].relative.unwrap();
        assert_eq!((rayon.speedup, rayon.efficiency), (2.0, 0.5));
    }

    #[test]
    fn a_zero_median_has_no_speedup_and_the_report_reads_back() {
        let mut report = Report::new("sweep", &LABELS);
        report.cells = vec![
            cell("seq", "1", 1e-3),
            cell("tree", "1", 0.0),
            cell("seq", "2", 0.0),
            cell("tree", "2", 1e-3),
        ];
        assign_relatives(&mut report.cells);
        let speedups: Vec<Option<f64>> = report
            .cells
            .iter()
            .map(|c| c.relative.map(|r| r.speedup))
            .collect();
        assert_eq!(speedups, [Some(1.0), None, None, None]);
        let text = serde_json::to_string(&report).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&text).unwrap(), report);
    }

    #[test]
    fn no_baseline_or_failed_cell_means_no_speedup() {
        let mut cells = vec![cell("tree", "2", 1.0)];
        cells.push(Cell::failed(
            &[("kernel", "k"), ("scheduler", "seq"), ("threads", "2")],
            "x".into(),
        ));
        assign_relatives(&mut cells);
        assert!(cells.iter().all(|c| c.relative.is_none()));
    }

    /// A kernel for these tests: it counts how often it was prepared, and each preparation
    /// hands out `make()`.
    struct TestKernel {
        name: &'static str,
        make: fn() -> Box<dyn PreparedKernel>,
        prepared: std::sync::atomic::AtomicUsize,
    }

    impl TestKernel {
        const fn new(name: &'static str, make: fn() -> Box<dyn PreparedKernel>) -> TestKernel {
            TestKernel {
                name,
                make,
                prepared: std::sync::atomic::AtomicUsize::new(0),
            }
        }
    }

    impl Kernel for TestKernel {
        fn name(&self) -> &'static str {
            self.name
        }
        fn description(&self) -> &'static str {
            "a kernel of the sweep's tests"
        }
        fn params(&self) -> &'static [parbench_kernels::ParamSpec] {
            &[]
        }
        fn is_default_suite(&self) -> bool {
            false
        }
        fn prepare(&self, _: &Params, _: usize) -> Result<Box<dyn PreparedKernel>, KernelError> {
            self.prepared
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok((self.make)())
        }
    }

    /// Runs that fail on chosen executors: a wrong result on `rayon`, a panic on `spawn`; each
    /// other run reports 1 ms.
    struct FaultyRun;

    fn faulty() -> Box<dyn PreparedKernel> {
        Box::new(FaultyRun)
    }

    impl PreparedKernel for FaultyRun {
        fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
            match exec.kind() {
                ExecutorKind::Rayon => Err(KernelError::WrongResult {
                    kernel: "faulty",
                    detail: "sum is 41, expected 42".into(),
                }),
                ExecutorKind::Spawn => panic!("index out of bounds"),
                _ => Ok(RunReport {
                    elapsed: std::time::Duration::from_millis(1),
                    metrics: vec![parbench_kernels::Metric::new("ops", 2.0, "op/s")],
                    untimed_threads_created: 0,
                }),
            }
        }
    }

    struct Recorder {
        runs: u64,
        finished: usize,
    }

    impl SweepObserver for Recorder {
        fn cell_started(&mut self, _: &str) {}
        fn runs_done(&mut self, count: u64) {
            self.runs += count;
        }
        fn cell_finished(&mut self, report: &Report) -> Result<(), SweepError> {
            self.finished = report.cells.len();
            Ok(())
        }
    }

    /// Sweeps `kernel` on `schedulers` × `threads`, `runs` timed runs after `warmup` per cell in
    /// `interleave` blocks; returns the plan, the report and what the observer saw.
    fn sweep_of(
        kernel: &'static TestKernel,
        schedulers: Vec<ExecutorKind>,
        threads: Vec<usize>,
        (runs, warmup, interleave): (usize, usize, usize),
    ) -> (SweepPlan, Report, Recorder) {
        let plan = SweepPlan {
            kernels: vec![kernel],
            schedulers: schedulers.into_iter().map(Into::into).collect(),
            threads,
            runs,
            warmup,
            pin: PinPolicy::None,
            params: Params::new(),
            interleave,
        };
        let mut report = Report::new("sweep", &LABELS);
        let mut recorder = Recorder {
            runs: 0,
            finished: 0,
        };
        run_sweep(&plan, &mut report, &mut recorder).unwrap();
        (plan, report, recorder)
    }

    #[test]
    fn failing_cells_are_recorded_and_the_sweep_goes_on() {
        static FAULTY: TestKernel = TestKernel::new("faulty", faulty);
        let schedulers = vec![ExecutorKind::Spawn, ExecutorKind::Rayon, ExecutorKind::Seq];
        let (plan, report, recorder) = sweep_of(&FAULTY, schedulers, vec![2], (3, 1, 1));
        assert_eq!(recorder.finished, 3);
        assert_eq!(
            recorder.runs,
            plan.total_runs(),
            "failed runs still count as done"
        );
        let [spawn, rayon, seq] = &report.cells[..] else {
            panic!("three cells expected")
        };
        assert!(
            spawn
                .error
                .as_deref()
                .unwrap()
                .contains("panicked: index out of bounds")
        );
        assert!(rayon.error.as_deref().unwrap().contains("sum is 41"));
        assert!(spawn.summary.is_none() && rayon.summary.is_none());
        assert_eq!(seq.samples_s.len(), 3, "warm-up runs are not kept");
        assert_eq!(seq.metrics[0].values, [2.0, 2.0, 2.0]);
        assert!(seq.error.is_none() && seq.summary.is_some());
        // Once for the thread count, once more after the panic.
        assert_eq!(
            FAULTY.prepared.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
    }

    #[test]
    fn tree_cells_record_their_pools_timespan() {
        static FAULTY: TestKernel = TestKernel::new("faulty", faulty);
        let schedulers = vec![ExecutorKind::Tree, ExecutorKind::Guided];
        let (_, report, _) = sweep_of(&FAULTY, schedulers, vec![1, 2], (2, 0, 1));
        let timespans = |scheduler: &str, threads: &str, metric: &str| {
            let cell = report.cells.iter().find(|c| {
                c.labels
                    .iter()
                    .any(|(k, v)| k == "scheduler" && v == scheduler)
                    && c.labels.iter().any(|(k, v)| k == "threads" && v == threads)
            });
            let series = cell.unwrap().metrics.iter().find(|m| m.name == metric);
            series.map(|m| m.values.clone())
        };
        let tree =
            timespans("tree", "2", "timespan").expect("a 2-thread tree cell records its timespan");
        assert!(
            tree.len() == 2 && tree.iter().all(|&us| us >= 10.0),
            "{tree:?}"
        );
        let calibrated =
            timespans("tree", "2", "timespan-calibrated").expect("and what its pool calibrated");
        assert!(
            calibrated.len() == 2 && calibrated.iter().zip(&tree).all(|(c, t)| c >= t),
            "a pool only lowers its timespan: {calibrated:?} against {tree:?}"
        );
        for metric in ["timespan", "timespan-calibrated"] {
            assert_eq!(
                timespans("guided", "2", metric),
                None,
                "guided waits no timespan"
            );
            assert_eq!(
                timespans("tree", "1", metric),
                None,
                "a one-thread pool runs inline"
            );
        }
    }

    /// Runs of two loops of two blocks, the second one untimed (as a check after the timed
    /// section), reported as such.
    struct CheckedAfterRun;

    impl PreparedKernel for CheckedAfterRun {
        fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
            exec.for_chunks(0..2, &|_| {});
            let created_before = exec.threads_created();
            exec.for_chunks(0..2, &|_| {});
            Ok(RunReport {
                untimed_threads_created: exec.threads_created() - created_before,
                ..RunReport::timing(std::time::Duration::from_millis(1))
            })
        }
    }

    #[test]
    fn threads_created_leaves_out_those_of_untimed_calls() {
        static CHECKED: TestKernel = TestKernel::new("checked", || Box::new(CheckedAfterRun));
        let (_, report, _) = sweep_of(&CHECKED, vec![ExecutorKind::Spawn], vec![2], (3, 1, 1));
        let created = report.cells[0]
            .metrics
            .iter()
            .find(|m| m.name == "threads-created");
        assert_eq!(
            created.map(|m| m.values.clone()),
            Some(vec![1.0; 3]),
            "the timed loop's one thread beside the caller"
        );
    }

    /// Runs that record in [`RAN_ON`] which executor ran them; each reports 1 ms.
    struct RecordingRun;

    static RAN_ON: std::sync::Mutex<Vec<ExecutorKind>> = std::sync::Mutex::new(Vec::new());

    impl PreparedKernel for RecordingRun {
        fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
            RAN_ON.lock().unwrap().push(exec.kind());
            Ok(RunReport {
                elapsed: std::time::Duration::from_millis(1),
                metrics: Vec::new(),
                untimed_threads_created: 0,
            })
        }
    }

    #[test]
    fn interleaved_cells_take_turns_block_by_block() {
        static RECORDING: TestKernel = TestKernel::new("recording", || Box::new(RecordingRun));
        let schedulers = vec![ExecutorKind::Tree, ExecutorKind::Guided];
        let (plan, report, recorder) = sweep_of(&RECORDING, schedulers, vec![2], (5, 2, 2));
        use ExecutorKind::{Guided, Tree};
        // Block 1: 2 warm-up + 2 timed runs each; block 2, rotated: the untimed run twice (1 ms
        // each, until REWARM) + 3 timed.
        assert_eq!(REWARM, std::time::Duration::from_millis(2));
        let expected = [&[Tree; 4][..], &[Guided; 4], &[Guided; 5], &[Tree; 5]].concat();
        assert_eq!(*RAN_ON.lock().unwrap(), expected);
        assert_eq!(recorder.runs, plan.total_runs());
        assert_eq!(
            plan.total_runs() + 2,
            expected.len() as u64,
            "the repeats are not counted"
        );
        assert_eq!(recorder.finished, 2);
        for cell in &report.cells {
            assert_eq!(cell.samples_s.len(), 5, "every timed run is kept once");
            assert!(cell.summary.is_some() && cell.relative.is_none());
        }
    }

    /// Runs that record in [`CALLER_CPUS`] the CPUs the measuring thread may run on; each
    /// reports 1 ms.
    struct AffinityRun;

    static CALLER_CPUS: std::sync::Mutex<Vec<Vec<usize>>> = std::sync::Mutex::new(Vec::new());

    fn allowed_cpus() -> Vec<usize> {
        let ids = core_affinity::get_core_ids().unwrap_or_default();
        ids.into_iter().map(|core| core.id).collect()
    }

    impl PreparedKernel for AffinityRun {
        fn run(&mut self, _: &dyn Executor) -> Result<RunReport, KernelError> {
            CALLER_CPUS.lock().unwrap().push(allowed_cpus());
            Ok(RunReport {
                elapsed: std::time::Duration::from_millis(1),
                metrics: Vec::new(),
                untimed_threads_created: 0,
            })
        }
    }

    #[test]
    fn compact_pinning_runs_the_measuring_thread_where_worker_0_runs() {
        static AFFINITY: TestKernel = TestKernel::new("affinity", || Box::new(AffinityRun));
        let before = allowed_cpus();
        if !cfg!(target_os = "linux") || before.len() < 2 {
            println!("SKIPPED: needs Linux and 2 CPUs this thread may run on");
            return;
        }
        for pin in [PinPolicy::Compact, PinPolicy::None] {
            let plan = SweepPlan {
                kernels: vec![&AFFINITY],
                schedulers: [ExecutorKind::Tree, ExecutorKind::Rayon, ExecutorKind::Seq]
                    .map(Into::into)
                    .to_vec(),
                threads: vec![2],
                runs: 4,
                warmup: 1,
                pin,
                params: Params::new(),
                interleave: 2,
            };
            let mut report = Report::new("sweep", &LABELS);
            let mut recorder = Recorder {
                runs: 0,
                finished: 0,
            };
            run_sweep(&plan, &mut report, &mut recorder).unwrap();
            assert!(report.cells.iter().all(|cell| cell.error.is_none()));
            let seen = std::mem::take(&mut *CALLER_CPUS.lock().unwrap());
            assert!(seen.len() >= 15, "{seen:?}");
            let expected = match pin {
                // The lowest CPU: where `Pinning::Compact` puts worker 0.
                PinPolicy::Compact => vec![before[0]],
                PinPolicy::None => before.clone(),
            };
            assert!(
                seen.iter().all(|cpus| *cpus == expected),
                "{pin:?}: {seen:?}"
            );
            assert_eq!(allowed_cpus(), before, "unpinned after the sweep");
        }
    }

    #[test]
    fn interleaved_failures_end_only_their_own_cell() {
        static FAULTY: TestKernel = TestKernel::new("faulty", faulty);
        let schedulers = vec![ExecutorKind::Spawn, ExecutorKind::Rayon, ExecutorKind::Seq];
        let (plan, report, recorder) = sweep_of(&FAULTY, schedulers, vec![2], (6, 1, 3));
        assert_eq!(
            recorder.runs,
            plan.total_runs(),
            "given-up runs count as done"
        );
        let cell = |scheduler: &str| {
            let found = report
                .cells
                .iter()
                .find(|c| c.label("scheduler") == Some(scheduler));
            found.expect("every cell is reported")
        };
        assert!(cell("spawn").error.as_deref().unwrap().contains("panicked"));
        assert!(
            cell("rayon")
                .error
                .as_deref()
                .unwrap()
                .contains("sum is 41")
        );
        let seq = cell("seq");
        assert_eq!(seq.samples_s.len(), 6);
        assert!(seq.error.is_none() && seq.summary.is_some());
        // Prepared once, and once more after the panic; the failed cells get no later block.
        assert_eq!(
            FAULTY.prepared.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
    }

    #[test]
    fn plan_counts_cells_and_runs() {
        let plan = SweepPlan {
            kernels: vec![],
            schedulers: vec![ExecutorKind::Seq.into(), ExecutorKind::Rayon.into()],
            threads: vec![1, 2, 4],
            runs: 5,
            warmup: 1,
            pin: PinPolicy::None,
            params: Params::new(),
            interleave: 1,
        };
        assert_eq!((plan.cell_count(), plan.total_runs()), (0, 0));
        let plan = SweepPlan {
            kernels: parbench_kernels::registry()
                .iter()
                .take(1)
                .copied()
                .collect(),
            ..plan
        };
        assert_eq!((plan.cell_count(), plan.total_runs()), (6, 36));
    }
}
