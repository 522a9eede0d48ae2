//! `round`: dining philosophers around a round table (INNCABS `round`).
//!
//! `n` philosophers each eat `meals` times. Philosopher `i` needs fork `i`
//! (left) and fork `(i + 1) % n` (right), one lock per fork. Everyone takes the
//! left fork first; to avoid the classic deadlock when all hold their left
//! fork, the right one is only *tried*, and on failure the left one is put
//! back and the philosopher tries again (counted as a retry).
//!
//! The philosophers are spread round-robin over `p = min(n, threads)` tables
//! run as tasks of [`Executor::for_each_task`]; a table serves its
//! philosophers one meal at a time, so it never waits for a fork while
//! holding one of its own. All tables meet at a start barrier before the first
//! meal, so no table finishes before the last one starts. The barrier needs
//! the executor to run the `p` tasks at the same time; an executor that runs
//! them one after another would wait forever, so the barrier gives up after
//! [`BARRIER_PATIENCE`] and the run is reported as an error instead.
//!
//! The far-atomics study's variants of INNCABS `round` are parameters:
//!
//! - `mode=threads`: one task per philosopher (the study's one thread per philosopher: run it on
//!   the `spawn` executor, which gives every task its own OS thread), all meeting at the start
//!   barrier; `mode=tables` (the default) is the grouping above.
//! - `coin=true`: like INNCABS' `flip_coin`, every philosopher flips a seeded coin before each
//!   meal to choose which fork to take first (then only *tries* the other, as above).
//! - `eat-ns=N`: time-based eating — a meal holds both forks for N ns of busy waiting (INNCABS
//!   eats for a random 1–10 ms; 0, the default, makes a meal just the fork bookkeeping).
//! - `cpus=K`: philosopher `i`'s thread pins itself to the `(i mod K)`-th available CPU for the
//!   run, confining the philosophers to K CPUs (0, the default: see `spread`).
//! - `spread=false`: the OS places the tables' threads. By default (`spread=true`) each table's
//!   thread pins itself, before the start barrier, to a CPU no other table of the run holds — the
//!   one it runs on if that is free, else the first free one it may use — when there are no more
//!   tables than CPUs (Linux; elsewhere the OS decides). See *Placement* below. Under
//!   `sweep --pin compact` the executors' threads are pinned already, one per CPU, and so is the
//!   measuring thread that starts the run: it then sees one CPU, fewer than the tables, and
//!   `spread` leaves every table where the pinning put it.
//!
//! A thread pinned by `cpus` or `spread` gets its previous affinity back when its table is done,
//! so a pool's worker goes on to other kernels unpinned.
//! - `meals` is the study's bites per philosopher (96 philosophers × 1M bites in the study).
//!
//! The lock is a parameter (`--lock tas|ttas|ticket|std`, the names of
//! [`MutexKind`]): `std::sync::Mutex` or one of parbench-atomics' spin locks
//! on the backend given by `--param backend=…` (default: the best this CPU
//! has). Every lock implements [`ForkLock`], and the kernel is generic over
//! it, so the lock calls are direct, not dispatched per meal.
//!
//! Validation: every philosopher ate exactly `meals` times, and every fork was
//! used exactly `2 · meals` times (by its two neighbours). The totals alone would
//! not do: a table served twice while another is never served can eat all
//! `n · meals` meals and wear every fork `2 · meals` times (two tables of 8: the
//! even philosophers eat twice, the odd ones never), so each table adds its
//! philosophers' meals to their own counters when it is done. A fork's use counter is
//! bumped with a plain load and store *while holding the lock*, so a lock that
//! lets two philosophers in at once loses updates and fails the check; a flag
//! per fork also counts every time a philosopher found its fork already in use.
//!
//! Placement: the metric `table-cpus` is how many distinct CPUs the tables were seen on (each
//! table asks the OS for its CPU at its first and its last meal; Linux only). The tables contend
//! for shared forks, so a run whose tables share one CPU — the OS running them in turn, each for
//! a whole time slice — is nearly uncontended and faster than one whose tables really run at the
//! same time; such a run measures where the OS put the threads, not the contention this kernel
//! is about. Hence `spread`, the default since 26 Nov 2026. Before it, on this repository's
//! 2-vCPU VM, rayon's two tables shared one vCPU in 8–72 % of its runs (sets of 12–20 sweep
//! processes) and this pool's strategies' in 0–26 %, and a shared vCPU took ≈ 620–820 µs against
//! ≈ 830–950 on two, so `round` ranked the schedulers by how often the OS happened to put their
//! threads together (why it does so more often for rayon is not known; it is not the start
//! barrier's wake-up: a barrier that keeps early tables running changed nothing). In 12
//! processes of `sweep --kernels round --threads 2 --rounds 3` of each setting, alternating
//! (26 Nov, 08:47 UTC): with `spread` every scheduler's tables ran on two vCPUs in all 360
//! runs, tree / fastest other 1.003 (0.91–1.05), medians 858–865 µs for this pool's strategies
//! and 886 for rayon; with `spread=false`, rayon's tables shared a vCPU in 238 of 360 runs and the
//! others' in 51–89, tree / fastest other 1.07 (rayon's median 777 µs). Pinning costs ≈ 3 %
//! (this pool's runs on two vCPUs: 865–872 µs pinned against 834–844 unpinned): it is in the
//! timed run, the same for every scheduler. A third mode, 2.2–2.8 ms on two vCPUs, has struck every scheduler alike for
//! seconds at a time (presumably slower transfers of the forks' cache lines between the vCPUs;
//! not verified).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use parbench_atomics::{MutexKind, SpinMutex, SpinMutexGuard};

use crate::affinity;
use crate::executor::{Executor, ExecutorError, current_cpu};
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, bad_param, timed,
    wrong_result,
};
use crate::kernels::lock_choice::{self, BACKEND_PARAM, LOCK_PARAM, lock_choice};
use crate::kernels::rng::SplitMix64;

/// Most philosophers at one table (each is a fork and a few counters).
const MAX_PHILOSOPHERS: usize = 4096;

/// How long the start barrier waits for the other tables.
pub(crate) const BARRIER_PATIENCE: Duration = Duration::from_secs(5);

/// A mutual-exclusion lock usable as a fork.
pub(crate) trait ForkLock: Send + Sync {
    /// Held fork; dropping it puts the fork back.
    type Guard<'a>
    where
        Self: 'a;
    /// Waits until the fork is free and takes it.
    fn lock(&self) -> Self::Guard<'_>;
    /// Takes the fork if it is free right now.
    fn try_lock(&self) -> Option<Self::Guard<'_>>;
}

/// `std::sync::Mutex` as a fork.
#[derive(Default)]
pub(crate) struct StdMutexLock(Mutex<()>);

impl ForkLock for StdMutexLock {
    type Guard<'a> = MutexGuard<'a, ()>;

    fn lock(&self) -> Self::Guard<'_> {
        // A poisoned fork only means another philosopher panicked; the
        // protected data is `()`, so the fork is still usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_lock(&self) -> Option<Self::Guard<'_>> {
        match self.0.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// A parbench-atomics spin lock (TAS, TTAS or ticket) as a fork.
impl ForkLock for SpinMutex<()> {
    type Guard<'a> = SpinMutexGuard<'a, ()>;

    fn lock(&self) -> Self::Guard<'_> {
        SpinMutex::lock(self)
    }

    fn try_lock(&self) -> Option<Self::Guard<'_>> {
        SpinMutex::try_lock(self)
    }
}

/// The `round` kernel.
pub(crate) struct Round;

impl Kernel for Round {
    fn name(&self) -> &'static str {
        "round"
    }

    fn description(&self) -> &'static str {
        "dining philosophers: n philosophers eat `meals` times, one lock per fork, left fork first"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "n",
                default: "16",
                help: "number of philosophers (2..=4096)",
            },
            ParamSpec {
                name: "meals",
                default: "2000",
                help: "meals (the study's bites) each philosopher eats",
            },
            ParamSpec {
                name: "mode",
                default: "tables",
                help: "tables (min(n, threads) tasks serving philosophers in turn) or threads (one task per philosopher)",
            },
            ParamSpec {
                name: "coin",
                default: "false",
                help: "true: flip a seeded coin before each meal for which fork to take first (INNCABS flip_coin)",
            },
            ParamSpec {
                name: "eat-ns",
                default: "0",
                help: "time-based eating: busy-wait this many ns holding both forks per meal",
            },
            ParamSpec {
                name: "spread",
                default: "true",
                help: "true: each table runs on a CPU of its own for the run (if there are no more tables than CPUs); false: the OS places them",
            },
            ParamSpec {
                name: "cpus",
                default: "0",
                help: "confine philosopher i to the (i mod K)-th available CPU for the run (0: see spread)",
            },
            LOCK_PARAM,
            BACKEND_PARAM,
        ]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "5"), ("meals", "50")]
    }

    fn param_value(&self, params: &Params, name: &str) -> Result<String, KernelError> {
        lock_choice::param_value(self, params, name)
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        // One philosopher would need the same fork twice.
        let philosophers = params.get_usize_in(self, "n", 2..=MAX_PHILOSOPHERS)?;
        let meals = params.get_usize(self, "meals")? as u64;
        let rules = TableRules::from_params(self, params)?;
        let (kind, backend) = lock_choice(self, params)?;
        let new_spin_lock = |lock| SpinMutex::new(lock, backend, ());
        match kind {
            MutexKind::Std => {
                PreparedRound::boxed(philosophers, meals, rules, || Ok(StdMutexLock::default()))
            }
            MutexKind::Spin(lock) => {
                PreparedRound::boxed(philosophers, meals, rules, || new_spin_lock(lock))
            }
        }
        // The only way to fail: the CPU cannot run the chosen backend.
        .map_err(|error| bad_param(self, "backend", backend.name(), &error.to_string()))
    }
}

/// How the philosophers sit and eat: the study's variants (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
struct TableRules {
    /// One task per philosopher instead of `min(n, threads)` tables.
    thread_per_philosopher: bool,
    /// Flip a coin for the first fork.
    coin: bool,
    /// Busy time per meal, holding both forks.
    eat: Duration,
    /// Where the tables' threads run.
    placement: Placement,
}

/// Where the tables' threads run during a run (see the module docs, *Placement*).
#[derive(Debug, Clone, Default, PartialEq)]
enum Placement {
    /// Wherever the OS puts them (`spread=false`).
    #[default]
    Os,
    /// Each table on a CPU of its own (`spread=true`, the default), if there are no more tables
    /// than CPUs the calling thread may run on.
    Spread,
    /// Philosopher `i`'s thread on CPU `cpus[i mod K]` (`cpus=K`).
    Confined(Vec<usize>),
}

impl TableRules {
    fn from_params(kernel: &dyn Kernel, params: &Params) -> Result<Self, KernelError> {
        let thread_per_philosopher =
            params.get_choice(kernel, "mode", &["tables", "threads"])? == "threads";
        let coin = params.get_choice(kernel, "coin", &["false", "true"])? == "true";
        let eat =
            Duration::from_nanos(params.get_usize_in(kernel, "eat-ns", 0..=1_000_000_000)? as u64);
        let spread = params.get_choice(kernel, "spread", &["true", "false"])? == "true";
        let k = params.get_usize(kernel, "cpus")?;
        let placement = if k == 0 {
            if spread {
                Placement::Spread
            } else {
                Placement::Os
            }
        } else {
            let available = core_affinity::get_core_ids().unwrap_or_default();
            if k > available.len() {
                return Err(bad_param(
                    kernel,
                    "cpus",
                    &k.to_string(),
                    &format!(
                        "only {} CPUs are available to this process",
                        available.len()
                    ),
                ));
            }
            Placement::Confined(available.into_iter().take(k).map(|core| core.id).collect())
        };
        Ok(TableRules {
            thread_per_philosopher,
            coin,
            eat,
            placement,
        })
    }
}

/// The table, laid for one lock type.
struct PreparedRound<L> {
    forks: Vec<Fork<L>>,
    meals: u64,
    rules: TableRules,
}

impl<L: ForkLock + 'static> PreparedRound<L> {
    fn boxed(
        philosophers: usize,
        meals: u64,
        rules: TableRules,
        new_lock: impl Fn() -> Result<L, parbench_atomics::Error>,
    ) -> Result<Box<dyn PreparedKernel>, parbench_atomics::Error> {
        let forks = (0..philosophers)
            .map(|_| Ok(Fork::new(new_lock()?)))
            .collect::<Result<_, parbench_atomics::Error>>()?;
        Ok(Box::new(Self {
            forks,
            meals,
            rules,
        }))
    }
}

impl<L: ForkLock> PreparedKernel for PreparedRound<L> {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        self.forks.iter_mut().for_each(Fork::clear);
        let (dinner, elapsed) = timed(exec, || dine(exec, &self.forks, self.meals, &self.rules))?;
        let dinner = dinner?;
        dinner.check(self.forks.len(), self.meals)?;
        Ok(RunReport {
            elapsed,
            metrics: vec![
                Metric::new("meals", dinner.meals as f64, ""),
                Metric::new("right-fork-retries", dinner.retries as f64, ""),
            ]
            .into_iter()
            .chain(
                dinner
                    .table_cpus
                    .map(|cpus| Metric::new("table-cpus", cpus as f64, "")),
            )
            .collect(),
            untimed_threads_created: 0,
        })
    }
}

/// One fork, on its own cache line so neighbouring forks do not share one.
#[repr(align(64))]
struct Fork<L> {
    lock: L,
    /// Times this fork was picked up; only written while holding `lock`.
    uses: AtomicU64,
    /// Set while a philosopher holds the fork.
    in_use: AtomicBool,
}

impl<L: ForkLock> Fork<L> {
    fn new(lock: L) -> Self {
        Self {
            lock,
            uses: AtomicU64::new(0),
            in_use: AtomicBool::new(false),
        }
    }

    /// Forgets the previous run's uses.
    fn clear(&mut self) {
        *self.uses.get_mut() = 0;
        *self.in_use.get_mut() = false;
    }

    /// Marks the fork used by the holder of its lock. The counter is bumped
    /// with a separate load and store on purpose: under a correct lock no one
    /// else writes it meanwhile; under a broken one, updates get lost.
    fn take(&self, violations: &AtomicU64) {
        // Relaxed everywhere: the lock itself orders the holders; these
        // counters only *detect* a lock that fails to.
        if self.in_use.swap(true, Ordering::Relaxed) {
            violations.fetch_add(1, Ordering::Relaxed);
        }
        let uses = self.uses.load(Ordering::Relaxed);
        self.uses.store(uses + 1, Ordering::Relaxed);
    }

    fn put_back(&self) {
        self.in_use.store(false, Ordering::Relaxed);
    }
}

/// What happened at the table.
#[derive(Debug)]
struct Dinner {
    meals: u64,
    /// Meals eaten by each philosopher.
    meals_by_philosopher: Vec<u64>,
    retries: u64,
    fork_uses: Vec<u64>,
    violations: u64,
    /// Distinct CPUs the tables were seen on (see the module docs), if the OS tells.
    table_cpus: Option<usize>,
}

impl Dinner {
    fn check(&self, philosophers: usize, meals: u64) -> Result<(), KernelError> {
        let expected = philosophers as u64 * meals;
        if self.meals != expected {
            return Err(wrong_result(
                "round",
                format!("{} meals eaten, expected {expected}", self.meals),
            ));
        }
        if let Some((philosopher, eaten)) = self
            .meals_by_philosopher
            .iter()
            .enumerate()
            .find(|&(_, &eaten)| eaten != meals)
        {
            return Err(wrong_result(
                "round",
                format!("philosopher {philosopher} ate {eaten} times, expected {meals}"),
            ));
        }
        if self.violations != 0 {
            return Err(wrong_result(
                "round",
                format!(
                    "{} times a fork was taken while already in use",
                    self.violations
                ),
            ));
        }
        if let Some((fork, uses)) = self
            .fork_uses
            .iter()
            .enumerate()
            .find(|&(_, &uses)| uses != 2 * meals)
        {
            return Err(wrong_result(
                "round",
                format!("fork {fork} was used {uses} times, expected {}", 2 * meals),
            ));
        }
        Ok(())
    }
}

/// A barrier for `parties` tasks that gives up after [`BARRIER_PATIENCE`].
struct StartBarrier {
    arrived: Mutex<usize>,
    all_here: Condvar,
    parties: usize,
}

impl StartBarrier {
    fn new(parties: usize) -> Self {
        Self {
            arrived: Mutex::new(0),
            all_here: Condvar::new(),
            parties,
        }
    }

    /// Waits until all parties arrived; `false` if that took too long.
    fn wait(&self) -> bool {
        let mut arrived = self.arrived.lock().unwrap_or_else(PoisonError::into_inner);
        *arrived += 1;
        if *arrived == self.parties {
            self.all_here.notify_all();
            return true;
        }
        let (arrived, _) = self
            .all_here
            .wait_timeout_while(arrived, BARRIER_PATIENCE, |arrived| *arrived < self.parties)
            .unwrap_or_else(PoisonError::into_inner);
        *arrived >= self.parties
    }
}

/// Runs the dinner on `exec` with forks of lock type `L`.
fn dine<L: ForkLock>(
    exec: &dyn Executor,
    forks: &[Fork<L>],
    meals: u64,
    rules: &TableRules,
) -> Result<Dinner, KernelError> {
    let philosophers = forks.len();
    let tables = if rules.thread_per_philosopher {
        philosophers
    } else {
        philosophers.min(exec.threads()).max(1)
    };
    let barrier = StartBarrier::new(tables);
    let eaten: Vec<AtomicU64> = (0..philosophers).map(|_| AtomicU64::new(0)).collect();
    let retries = AtomicU64::new(0);
    let violations = AtomicU64::new(0);
    let late_tables = AtomicUsize::new(0);
    let cpus_seen = Mutex::new(Vec::with_capacity(2 * tables));
    let spread = rules.placement == Placement::Spread && tables <= affinity::allowed_cpus().len();
    let seating = Seating::default();
    exec.for_each_task(tables, &|table| {
        // Pinned for this task only: dropping the guard at its end gives the thread back its
        // previous affinity (a pool's worker goes on to other kernels). A refused pin leaves the
        // thread where the OS put it; the run is still valid and `table-cpus` tells.
        let _seat = match &rules.placement {
            Placement::Confined(cpus) => affinity::Pinned::to(cpus[table % cpus.len()]),
            Placement::Spread if spread => seating.take(),
            _ => None,
        };
        // One coin per table, seeded by its index: runs are reproducible in what they flip.
        let mut coin = SplitMix64::new(0x5EED ^ table as u64);
        if !barrier.wait() {
            // Relaxed: read after the executor has joined every task.
            late_tables.fetch_add(1, Ordering::Relaxed);
        }
        let first_cpu = current_cpu();
        let seated = || (table..philosophers).step_by(tables);
        let mut my_retries = 0;
        for _ in 0..meals {
            for philosopher in seated() {
                let left = &forks[philosopher];
                let right = &forks[(philosopher + 1) % philosophers];
                let left_first = !rules.coin || coin.next_u64() & 1 == 0;
                my_retries += if left_first {
                    eat(left, right, &violations, rules.eat)
                } else {
                    eat(right, left, &violations, rules.eat)
                };
            }
        }
        cpus_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend([first_cpu, current_cpu()].into_iter().flatten());
        // Relaxed: totals are read after the executor has joined every task.
        for philosopher in seated() {
            eaten[philosopher].fetch_add(meals, Ordering::Relaxed);
        }
        retries.fetch_add(my_retries, Ordering::Relaxed);
        Ok::<(), ExecutorError>(())
    })?;
    if late_tables.into_inner() != 0 {
        return Err(wrong_result(
            "round",
            format!(
                "the executor did not run the {tables} tables at the same time (the start barrier timed out)"
            ),
        ));
    }
    let meals_by_philosopher: Vec<u64> = eaten.into_iter().map(AtomicU64::into_inner).collect();
    Ok(Dinner {
        meals: meals_by_philosopher.iter().sum(),
        meals_by_philosopher,
        retries: retries.into_inner(),
        // Relaxed: the executor has joined every task that wrote them.
        fork_uses: forks
            .iter()
            .map(|fork| fork.uses.load(Ordering::Relaxed))
            .collect(),
        violations: violations.into_inner(),
        table_cpus: distinct(
            cpus_seen
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        ),
    })
}

/// The CPUs held by the tables of one run under [`Placement::Spread`].
#[derive(Default)]
struct Seating(Mutex<Vec<usize>>);

impl Seating {
    /// Pins the calling table's thread to a CPU no other table of the run holds: the one it runs
    /// on if that is free, else the first free one it may run on. `None` (nothing changed) if no
    /// CPU is free or the OS refuses.
    fn take(&self) -> Option<affinity::Pinned> {
        let allowed = affinity::allowed_cpus();
        let mut taken = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let cpu = free_seat(current_cpu(), &allowed, &taken)?;
        let pinned = affinity::Pinned::to(cpu)?;
        taken.push(cpu);
        Some(pinned)
    }
}

/// The CPU a table takes: `current` if it is allowed and free, else the first free allowed one.
fn free_seat(current: Option<usize>, allowed: &[usize], taken: &[usize]) -> Option<usize> {
    let free = |cpu: &usize| allowed.contains(cpu) && !taken.contains(cpu);
    current
        .filter(free)
        .or_else(|| allowed.iter().copied().find(free))
}

/// How many distinct values `cpus` holds; `None` if it is empty (the OS did not tell).
fn distinct(mut cpus: Vec<usize>) -> Option<usize> {
    cpus.sort_unstable();
    cpus.dedup();
    (!cpus.is_empty()).then_some(cpus.len())
}

/// One meal: the `left` fork (the one taken first), then the other one if free (else put the
/// first back and try again); holding both, eat for `eat` of busy time. Returns how many times
/// the second fork was busy.
fn eat<L: ForkLock>(left: &Fork<L>, right: &Fork<L>, violations: &AtomicU64, eat: Duration) -> u64 {
    let mut retries = 0;
    loop {
        let left_guard = left.lock.lock();
        if let Some(right_guard) = right.lock.try_lock() {
            left.take(violations);
            right.take(violations);
            if !eat.is_zero() {
                // Time-based eating, busy like INNCABS' `while (now() < end);`.
                let end = Instant::now() + eat;
                while Instant::now() < end {
                    std::hint::spin_loop();
                }
            }
            std::hint::black_box((left, right));
            right.put_back();
            left.put_back();
            drop(right_guard);
            drop(left_guard);
            return retries;
        }
        drop(left_guard);
        retries += 1;
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{ExecutorKind, PinPolicy, SeqExecutor, SpawnExecutor};

    #[test]
    fn sequential_dinner_validates() {
        let forks: Vec<_> = (0..5).map(|_| Fork::new(StdMutexLock::default())).collect();
        let dinner = dine(&SeqExecutor::new(), &forks, 7, &TableRules::default()).unwrap();
        dinner.check(5, 7).unwrap();
        assert_eq!(dinner.retries, 0);
    }

    #[test]
    fn lost_meals_and_fork_uses_are_reported() {
        let dinner = |meals: u64, meals_by_philosopher: Vec<u64>, fork_uses: Vec<u64>| Dinner {
            meals,
            meals_by_philosopher,
            retries: 0,
            fork_uses,
            violations: 0,
            table_cpus: None,
        };
        assert!(dinner(9, vec![5, 4], vec![4, 4]).check(2, 5).is_err());
        assert!(dinner(10, vec![5, 5], vec![10, 9]).check(2, 5).is_err());
        // Philosopher 0 ate for both: the total and every fork's uses are right.
        assert!(dinner(10, vec![10, 0], vec![10, 10]).check(2, 5).is_err());
        assert!(dinner(10, vec![5, 5], vec![10, 10]).check(2, 5).is_ok());
    }

    #[test]
    fn every_lock_serves_every_meal_on_concurrent_tables() {
        let exec = SpawnExecutor::new(3);
        for lock in MutexKind::ALL {
            let params = Params::new()
                .with("n", "7")
                .with("meals", "300")
                .with("lock", lock.name());
            let mut prepared = Round.prepare(&params, 3).unwrap();
            for _ in 0..2 {
                let report = prepared
                    .run(&exec)
                    .unwrap_or_else(|e| panic!("{lock}: {e}"));
                assert_eq!(report.metrics[0].value, 7.0 * 300.0, "{lock}");
            }
        }
    }

    #[test]
    fn study_variants_serve_every_meal() {
        let exec = SpawnExecutor::new(2);
        for (mode, coin, eat, cpus) in [
            ("threads", "true", "0", "1"),
            ("threads", "false", "2000", "0"),
            ("tables", "true", "1000", "2"),
        ] {
            let available = core_affinity::get_core_ids().map_or(0, |c| c.len());
            let cpus = if cpus.parse::<usize>().unwrap() > available {
                "0"
            } else {
                cpus
            };
            let params = Params::new()
                .with("n", "9")
                .with("meals", "40")
                .with("mode", mode)
                .with("coin", coin)
                .with("eat-ns", eat)
                .with("cpus", cpus)
                .with("lock", "ttas");
            let mut prepared = Round.prepare(&params, 2).unwrap();
            let report = prepared
                .run(&exec)
                .unwrap_or_else(|e| panic!("{mode} {coin} {eat} {cpus}: {e}"));
            assert_eq!(report.metrics[0].value, 9.0 * 40.0);
        }
    }

    #[test]
    fn one_thread_per_philosopher_on_spawn_and_cpus_are_checked() {
        // `spawn` gives each of the 5 philosophers its own thread, even when loops get one.
        let params = Params::new()
            .with("n", "5")
            .with("meals", "3")
            .with("mode", "threads");
        let report = Round
            .prepare(&params, 1)
            .unwrap()
            .run(&SpawnExecutor::new(1));
        assert_eq!(report.unwrap().metrics[0].value, 15.0);
        let too_many = Params::new().with("cpus", "100000");
        assert!(matches!(
            Round.prepare(&too_many, 1),
            Err(KernelError::BadParam { .. })
        ));
        let bad_mode = Params::new().with("mode", "seats");
        assert!(matches!(
            Round.prepare(&bad_mode, 1),
            Err(KernelError::BadParam { .. })
        ));
    }

    #[test]
    fn table_cpus_counts_the_cpus_the_tables_ran_on() {
        let available = core_affinity::get_core_ids().unwrap_or_default();
        if !cfg!(target_os = "linux") || available.len() < 2 {
            println!("SKIPPED: needs Linux and 2 CPUs this process may run on");
            return;
        }
        let table_cpus = |cpus: &str| {
            let params = Params::new()
                .with("n", "4")
                .with("meals", "20")
                .with("mode", "threads")
                .with("cpus", cpus);
            let report = Round
                .prepare(&params, 4)
                .unwrap()
                .run(&SpawnExecutor::new(4))
                .unwrap();
            let metric = report.metrics.iter().find(|m| m.name == "table-cpus");
            metric.expect("Linux reports the CPUs").value
        };
        // Four philosophers pinned to one CPU, then alternately to two.
        assert_eq!(table_cpus("1"), 1.0);
        assert_eq!(table_cpus("2"), 2.0);
        assert_eq!(distinct(vec![3, 1, 3, 1, 0]), Some(3));
        assert_eq!(distinct(Vec::new()), None);
    }

    #[test]
    fn a_table_keeps_its_cpu_if_free_else_takes_the_first_free_one() {
        assert_eq!(free_seat(Some(1), &[0, 1], &[]), Some(1));
        assert_eq!(free_seat(Some(1), &[0, 1, 2], &[1]), Some(0));
        assert_eq!(free_seat(Some(1), &[0, 1, 2], &[0, 1]), Some(2));
        assert_eq!(free_seat(Some(5), &[0, 1], &[]), Some(0));
        assert_eq!(free_seat(None, &[0, 1], &[0]), Some(1));
        assert_eq!(free_seat(Some(0), &[0, 1], &[0, 1]), None);
        assert_eq!(free_seat(Some(0), &[], &[]), None);
    }

    #[test]
    fn spread_seats_every_table_on_a_cpu_of_its_own_and_unpins_the_pool() {
        let before = affinity::allowed_cpus();
        if before.len() < 2 {
            println!("SKIPPED: needs Linux and 2 CPUs this thread may run on");
            return;
        }
        let exec = ExecutorKind::Tree.build(2, PinPolicy::None).unwrap();
        let run = |params: Params| {
            let report = Round
                .prepare(&params.with("n", "4").with("meals", "50"), 2)
                .unwrap()
                .run(exec.as_ref())
                .unwrap();
            let metric = report.metrics.iter().find(|m| m.name == "table-cpus");
            metric.expect("Linux reports the CPUs").value
        };
        for _ in 0..5 {
            // Each table is pinned before its first meal, so it is seen on its own CPU only.
            assert_eq!(run(Params::new()), 2.0);
            // The calling thread ran a table (two tables need both threads) and is unpinned.
            assert_eq!(affinity::allowed_cpus(), before);
        }
        assert_eq!(run(Params::new().with("cpus", "1")), 1.0);
        assert_eq!(affinity::allowed_cpus(), before);
        assert!(run(Params::new().with("spread", "false")) >= 1.0);
        let bad = Params::new().with("spread", "maybe");
        assert!(matches!(
            Round.prepare(&bad, 2),
            Err(KernelError::BadParam { .. })
        ));
    }

    #[test]
    fn taking_a_fork_in_use_is_a_violation() {
        let fork = Fork::new(StdMutexLock::default());
        let violations = AtomicU64::new(0);
        fork.take(&violations);
        fork.take(&violations);
        assert_eq!(violations.load(Ordering::Relaxed), 1);
        fork.put_back();
        fork.take(&violations);
        assert_eq!((violations.into_inner(), fork.uses.into_inner()), (1, 3));
    }

    #[test]
    fn a_single_philosopher_is_a_bad_param() {
        let params = Params::new().with("n", "1");
        assert!(matches!(
            Round.prepare(&params, 1),
            Err(KernelError::BadParam { .. })
        ));
        let params = Params::new().with("lock", "mcs");
        let error = Round.prepare(&params, 1).err().unwrap().to_string();
        assert!(error.contains("tas, ttas, ticket, std"), "{error}");
        let params = Params::new().with("backend", "z80");
        assert!(matches!(
            Round.prepare(&params, 1),
            Err(KernelError::BadParam { .. })
        ));
    }

    #[test]
    fn a_backend_beside_the_std_lock_is_a_bad_param() {
        // std::sync::Mutex has no atomics backend: the run would be recorded under one it never
        // used. The portable backend exists on every CPU, so only the lock can refuse it.
        let params = Params::new().with("backend", "portable");
        let error = Round.prepare(&params, 1).err().unwrap().to_string();
        assert!(error.contains("only a spin lock"), "{error}");
        let spin = params.with("lock", "tas");
        assert!(Round.prepare(&spin, 1).is_ok());
    }
}
