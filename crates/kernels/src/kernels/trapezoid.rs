//! `trapezoid`: ∫₀¹ 4/(1+x²) dx = π by the trapezoidal rule, the shared sum kept with one of the
//! pthreads study's methods (`--method`).
//!
//! The trapezoids are grouped in blocks of `--block`; every block's partial sum is added to one
//! shared total through the method's [`SharedSum`]:
//!
//! - `spin`: a busy-wait flag ([`SpinFlag`]) guarding the total,
//! - `mutex`: the mutex `--lock` names: `std` (`std::sync::Mutex`, the default) or one of
//!   parbench-atomics' spin locks `tas`, `ttas`, `ticket` on the atomics `--backend`,
//! - `semaphore`: a counting [`Semaphore`] (Mutex + Condvar) of one permit guarding the total,
//! - `atomic`: a compare-exchange loop on the f64's bits, no lock,
//! - `local`: each loop chunk sums its blocks privately and adds once, through the `--lock`
//!   mutex (one final reduction).
//!
//! The shared sum is built once when the kernel is prepared (so an atomics backend this CPU
//! cannot run is a parameter error) and reset before every run.
//!
//! Validation: the total must be within [`tolerance`] of π, which a correct run meets in any
//! order of additions and any split into chunks. A block lost or added twice by the executor
//! must fall outside it; the rounding bound grows with `n` while a block's share of π shrinks,
//! so `prepare` refuses blocks too small for the check to see ([`smallest_visible_block`]).
//! That still misses a block run twice *in place of* its neighbour where the integrand is flat:
//! near x = 0 two neighbouring blocks of L trapezoids differ by about 8·(L/n)³, inside the
//! tolerance of about 1/(3n²) whenever 24·L³ < n (blocks of one, as the pthreads study runs).
//! So every run also checks the executor to cover the blocks exactly once ([`CheckedTasks`], O(1)
//! per chunk, compared once the loop has returned), in a second, untimed call through the same
//! executor, whose integral must be within the tolerance too. Not in the timed call: the check
//! adds three atomic adds on shared counters per chunk (up to 625 chunks at the default suite's
//! n = 10000 and block = 16), contended RMWs inside exactly the section that measures what the
//! `--method`s' critical sections cost. The untimed call has the timed one's shape, so it checks
//! the executor the run measured, at a cost small next to a sweep cell's runs. What it cannot see
//! is an executor that breaks the timed call only: at blocks of one a block in place of its
//! neighbour moves the sum by about h²·|f'| ≤ 2.6/n², inside the tolerance near x = 0 at any n,
//! and anywhere on [0, 1] from about n = 2^17, where the tolerance's rounding term 4·n·ε
//! outgrows it (the kernels' fault test, at n = 2^18, lists it as exempt).
//!
//! No check of the timed call's result can close that hole, short of recording per block inside
//! the call: its total is all it leaves. Near x = 0 the fault does not change the total (at
//! n = 2^20 with blocks of one, block 0 run in place of block 1 gives the right run's total bit
//! for bit, under every method; at 2^18 within an ulp, where right runs split into chunks
//! differently spread over ±166 ulps of π). In the middle and at the end it moves the total by
//! 2.56·h² and 2·h² (83 846 and 65 536 ulps at 2^18): far beyond what ordinary orders of addition
//! move it, but not beyond what a tolerance must allow for every order. Each addition rounds by up
//! to half an ulp of its partial sum, and summed over the partial sums of the order that reaches
//! 1/2, 1, 2 soonest (the largest blocks first) that is about 0.32·n ulps, 84 150 at 2^18; an
//! order of one-block chunks picked greedily reached ±27 800. Comparing with the sum of the same
//! blocks (exact, or in some order) rather than with π removes the rule's error (h²/6) but not
//! that rounding bound. The shift falls as n⁻² while the bound grows as n, so at the study's
//! 2^20 to 2^24 trapezoids no tolerance sound for every order would see it either.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use parbench_atomics::{Backend, MutexKind, RuntimeMutex};

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, ParamSpec, Params, PreparedKernel, RunReport, bad_param, timed,
    wrong_result,
};
use crate::kernels::checked_tasks::CheckedTasks;
use crate::kernels::lock_choice::{self, BACKEND_PARAM, LOCK_PARAM, NO_LOCK, lock_choice};

/// Methods of keeping the shared sum, as accepted by `--method`.
const METHODS: [&str; 5] = ["spin", "mutex", "semaphore", "atomic", "local"];

/// Allowed distance from π for `n` trapezoids: twice the rule's error (h²/6 for this integrand,
/// from the Euler–Maclaurin term h²/12·(f'(0) − f'(1))) plus a worst-case bound on rounding in
/// `n` additions of partial sums below 4.
fn tolerance(n: usize) -> f64 {
    let n = n as f64;
    1.0 / (3.0 * n * n) + n * 4.0 * f64::EPSILON
}

/// Fewest trapezoids a block of `n` needs for the check to see it missing or counted twice.
///
/// A trapezoid adds at least 2h = 2/n (the integrand is at least 2 on [0, 1]), and a block
/// lost from a run whose own error already used up the tolerance must still leave it:
/// 2·L/n > 2·[`tolerance`]`(n)`. The rounding term grows with n, so large n need larger blocks:
/// at 2^24 trapezoids one is enough, at 2^26 a block of one is 3·10^-8 of π against a
/// tolerance of 6·10^-8.
fn smallest_visible_block(n: usize) -> usize {
    (n as f64 * tolerance(n)).floor() as usize + 1
}

/// A lock with explicit lock and unlock, for the study's own busy-wait flag and semaphore.
pub(crate) trait RawLock: Send + Sync {
    fn lock(&self);
    fn unlock(&self);
}

/// A test-and-set busy-wait flag.
#[derive(Default)]
pub(crate) struct SpinFlag(AtomicBool);

impl RawLock for SpinFlag {
    fn lock(&self) {
        // Acquire: the holder must see the total the previous holder wrote.
        while self
            .0
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    fn unlock(&self) {
        // Release: publishes the total written under the lock to the next holder.
        self.0.store(false, Ordering::Release);
    }
}

/// A counting semaphore built on a Mutex and a Condvar; one permit makes it a lock.
pub(crate) struct Semaphore {
    permits: Mutex<usize>,
    released: Condvar,
}

impl Semaphore {
    pub(crate) fn new(permits: usize) -> Self {
        Semaphore {
            permits: Mutex::new(permits),
            released: Condvar::new(),
        }
    }
}

impl RawLock for Semaphore {
    fn lock(&self) {
        let mut permits = self.permits.lock().unwrap_or_else(PoisonError::into_inner);
        while *permits == 0 {
            permits = self
                .released
                .wait(permits)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *permits -= 1;
    }

    fn unlock(&self) {
        *self.permits.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.released.notify_one();
    }
}

/// A total that loop bodies add to concurrently.
pub(crate) trait SharedSum: Send + Sync {
    fn add(&self, value: f64);
    fn total(&self) -> f64;
    /// Back to 0, between runs (no run is in progress).
    fn reset(&self);
}

/// An f64 guarded by a [`RawLock`]; stored as bits in an atomic only to share it without `unsafe`
/// (the lock orders the accesses, so `Relaxed` suffices).
pub(crate) struct LockedSum<L> {
    lock: L,
    bits: AtomicU64,
}

impl<L: RawLock> LockedSum<L> {
    pub(crate) fn new(lock: L) -> Self {
        LockedSum {
            lock,
            bits: AtomicU64::new(0f64.to_bits()),
        }
    }
}

impl<L: RawLock> SharedSum for LockedSum<L> {
    fn add(&self, value: f64) {
        self.lock.lock();
        let sum = f64::from_bits(self.bits.load(Ordering::Relaxed)) + value;
        self.bits.store(sum.to_bits(), Ordering::Relaxed);
        self.lock.unlock();
    }

    fn total(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }

    fn reset(&self) {
        self.bits.store(0f64.to_bits(), Ordering::Relaxed);
    }
}

impl SharedSum for RuntimeMutex<f64> {
    fn add(&self, value: f64) {
        *self.lock() += value;
    }

    fn total(&self) -> f64 {
        *self.lock()
    }

    fn reset(&self) {
        *self.lock() = 0.0;
    }
}

/// A lock-free f64 sum: compare-exchange on the bits until no one else got in between.
pub(crate) struct AtomicSum(AtomicU64);

impl SharedSum for AtomicSum {
    fn add(&self, value: f64) {
        let mut current = self.0.load(Ordering::Relaxed);
        loop {
            let sum = (f64::from_bits(current) + value).to_bits();
            // Relaxed: only this word is shared, and the loop's join orders the final read.
            match self
                .0
                .compare_exchange_weak(current, sum, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    fn total(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    fn reset(&self) {
        self.0.store(0f64.to_bits(), Ordering::Relaxed);
    }
}

/// The `trapezoid` kernel.
pub(crate) struct Trapezoid;

impl Kernel for Trapezoid {
    fn name(&self) -> &'static str {
        "trapezoid"
    }

    fn description(&self) -> &'static str {
        "∫₀¹ 4/(1+x²) dx by n trapezoids, shared sum kept by --method"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "n",
                default: "2^21",
                help: "number of trapezoids",
            },
            ParamSpec {
                name: "method",
                default: "local",
                help: "spin, mutex, semaphore, atomic or local",
            },
            ParamSpec {
                name: "block",
                default: "256",
                help: "trapezoids per update of the shared sum",
            },
            LOCK_PARAM,
            BACKEND_PARAM,
        ]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "10000"), ("block", "16")]
    }

    fn param_value(&self, params: &Params, name: &str) -> Result<String, KernelError> {
        // A method that takes no lock ran without one: neither the default lock nor its
        // backend is what the run used.
        if (name == LOCK_PARAM.name || name == BACKEND_PARAM.name)
            && !uses_lock(params.get_choice(self, "method", &METHODS)?)
        {
            return Ok(NO_LOCK.to_owned());
        }
        lock_choice::param_value(self, params, name)
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let n = params.get_usize_in(self, "n", 1..=1 << 34)?;
        let block = params.get_usize_in(self, "block", 1..=1 << 34)?;
        let method = params.get_choice(self, "method", &METHODS)?;
        // The last block holds what is left when `block` does not divide `n`.
        let smallest = match n % block {
            0 => block,
            rest => rest,
        };
        let visible = smallest_visible_block(n);
        if smallest < visible {
            return Err(bad_param(
                self,
                "block",
                &block.to_string(),
                &format!(
                    "with n = {n} the check cannot see a missing block of fewer than {visible} \
                     trapezoids (its share of π is within the rounding tolerance); every block, \
                     the last one (n mod block when block does not divide n) included, needs at \
                     least {visible}"
                ),
            ));
        }
        // Given, not merely different from the default: `--lock std` with `--method spin` would
        // record a lock the run never took.
        if !uses_lock(method)
            && let Some((name, value)) = [LOCK_PARAM.name, BACKEND_PARAM.name]
                .into_iter()
                .find_map(|name| params.given(name).map(|value| (name, value)))
        {
            return Err(bad_param(
                self,
                name,
                value,
                &format!(
                    "method {method} takes no lock (lock and backend are for methods mutex and local)"
                ),
            ));
        }
        let (lock, backend) = lock_choice(self, params)?;
        let sum = shared_sum(method, lock, backend)
            .map_err(|error| bad_param(self, "backend", backend.name(), &error.to_string()))?;
        Ok(Box::new(PreparedTrapezoid {
            n,
            block,
            method,
            sum,
        }))
    }
}

struct PreparedTrapezoid {
    n: usize,
    block: usize,
    method: &'static str,
    sum: Box<dyn SharedSum>,
}

/// Whether `method` keeps the sum under the `lock` mutex (see [`shared_sum`]).
fn uses_lock(method: &str) -> bool {
    matches!(method, "mutex" | "local")
}

/// A zeroed shared sum kept the way `method` says (`mutex` and `local` both use the `lock`
/// mutex; `local` just touches it once per chunk).
///
/// # Errors
/// If `lock` is a spin lock and this CPU cannot run `backend`.
fn shared_sum(
    method: &str,
    lock: MutexKind,
    backend: Backend,
) -> Result<Box<dyn SharedSum>, parbench_atomics::Error> {
    Ok(match method {
        "spin" => Box::new(LockedSum::new(SpinFlag::default())),
        "semaphore" => Box::new(LockedSum::new(Semaphore::new(1))),
        "atomic" => Box::new(AtomicSum(AtomicU64::new(0f64.to_bits()))),
        _ => Box::new(RuntimeMutex::new(lock, backend, 0.0)?),
    })
}

fn integrand(x: f64) -> f64 {
    4.0 / (1.0 + x * x)
}

impl PreparedTrapezoid {
    /// The trapezoids of blocks `blocks`, summed.
    fn blocks_sum(&self, blocks: std::ops::Range<usize>) -> f64 {
        let h = 1.0 / self.n as f64;
        let first = blocks.start * self.block;
        let last = (blocks.end * self.block).min(self.n);
        let inner: f64 = (first + 1..last).map(|k| integrand(k as f64 * h)).sum();
        h * ((integrand(first as f64 * h) + integrand(last as f64 * h)) / 2.0 + inner)
    }

    fn integrate(&self, exec: &dyn Executor) -> f64 {
        let (sum, local) = (self.sum.as_ref(), self.method == "local");
        exec.for_chunks(0..self.n.div_ceil(self.block), &|blocks| {
            if local {
                sum.add(self.blocks_sum(blocks));
            } else {
                for b in blocks {
                    sum.add(self.blocks_sum(b..b + 1));
                }
            }
        });
        sum.total()
    }

    /// `Ok` if `integral` is within [`tolerance`] of π.
    fn check_near_pi(&self, integral: f64) -> Result<(), KernelError> {
        if (integral - std::f64::consts::PI).abs() > tolerance(self.n) {
            return Err(wrong_result(
                "trapezoid",
                format!("{} integral {integral}, expected π", self.method),
            ));
        }
        Ok(())
    }
}

impl PreparedKernel for PreparedTrapezoid {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        self.sum.reset();
        let (integral, elapsed) = timed(exec, || self.integrate(exec))?;
        self.check_near_pi(integral)?;
        // The coverage check, in a call of its own after the timed one (see the module doc).
        self.sum.reset();
        let (checked, created_before) = (CheckedTasks::new(exec), exec.threads_created());
        let integral = self.integrate(&checked);
        let untimed_threads_created = exec.threads_created() - created_before;
        if let Some(error) = exec.take_error() {
            return Err(error.into());
        }
        if checked.wrong_calls() != 0 {
            return Err(wrong_result(
                "trapezoid",
                format!(
                    "{} integral {integral}: the executor ran a block twice or skipped one",
                    self.method
                ),
            ));
        }
        self.check_near_pi(integral)?;
        Ok(RunReport {
            untimed_threads_created,
            ..RunReport::timing(elapsed)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{PinPolicy, RayonExecutor, SeqExecutor};

    fn integral(method: &'static str, lock: MutexKind, exec: &dyn Executor) -> f64 {
        let prepared = PreparedTrapezoid {
            n: 100_000,
            block: 7,
            method,
            sum: shared_sum(method, lock, Backend::best()).unwrap(),
        };
        prepared.integrate(exec)
    }

    #[test]
    fn every_method_and_lock_matches_the_analytic_integral() {
        let rayon = RayonExecutor::new(2, PinPolicy::None).unwrap();
        let with_std = METHODS.map(|method| (method, MutexKind::Std));
        let with_spin_locks = MutexKind::ALL.map(|lock| ("mutex", lock));
        for (method, lock) in with_std.into_iter().chain(with_spin_locks) {
            for exec in [&SeqExecutor::new() as &dyn Executor, &rayon] {
                let value = integral(method, lock, exec);
                assert!(
                    (value - std::f64::consts::PI).abs() < tolerance(100_000),
                    "{method}/{lock} on {}: {value}",
                    exec.kind()
                );
            }
        }
    }

    #[test]
    fn a_method_without_a_lock_records_neither_lock_nor_backend() {
        let value = |params: &Params, name| Trapezoid.param_value(params, name).unwrap();
        for method in ["spin", "semaphore", "atomic"] {
            let params = Params::new().with("method", method);
            assert_eq!(value(&params, "lock"), NO_LOCK, "{method}");
            assert_eq!(value(&params, "backend"), NO_LOCK, "{method}");
            // The other parameters are recorded as given or declared.
            assert_eq!(value(&params, "method"), method);
        }
        // The methods that take the lock record it, as round does.
        for method in ["mutex", "local"] {
            let params = Params::new().with("method", method);
            assert_eq!(value(&params, "lock"), "std", "{method}");
            assert_eq!(
                value(&params, "backend"),
                parbench_atomics::NO_BACKEND,
                "{method}"
            );
        }
        assert_eq!(
            value(&Params::new(), "lock"),
            "std",
            "the default method, local"
        );
    }

    #[test]
    fn a_lock_or_backend_given_to_a_method_without_a_lock_is_a_bad_param() {
        for method in METHODS.into_iter().filter(|method| !uses_lock(method)) {
            for (name, value) in [("lock", "tas"), ("lock", "std"), ("backend", "portable")] {
                let params = Params::new().with("method", method).with(name, value);
                match Trapezoid.prepare(&params, 1) {
                    Err(KernelError::BadParam {
                        name: refused,
                        reason,
                        ..
                    }) => {
                        assert_eq!(refused, name, "{method}");
                        assert!(reason.contains("takes no lock"), "{method}: {reason}");
                    }
                    other => panic!("{method} with {name}={value}: {:?}", other.err()),
                }
            }
        }
        let spin = Params::new()
            .with("method", "mutex")
            .with("lock", "tas")
            .with("backend", "portable");
        assert!(Trapezoid.prepare(&spin, 1).is_ok());
    }

    #[test]
    fn a_block_too_small_for_the_check_to_see_is_refused() {
        let prepare = |n: &str, block: &str| {
            Trapezoid.prepare(&Params::new().with("n", n).with("block", block), 2)
        };
        // The pthreads study's sizes (block 1 up to 2^24) and the default are checked.
        for (n, block) in [("2^20", "1"), ("2^24", "1"), ("2^21", "256"), ("7", "3")] {
            assert!(prepare(n, block).is_ok(), "n = {n}, block {block}");
        }
        // At 2^26 one trapezoid is 2^-25 ≈ 3·10^-8 of π, inside the tolerance of 6·10^-8; the
        // last case's last block holds one trapezoid.
        for (n, block) in [
            (1usize << 26, 1usize),
            (1 << 34, 1 << 10),
            ((1 << 26) + 1, 64),
        ] {
            match prepare(&n.to_string(), &block.to_string()) {
                Err(KernelError::BadParam { name, reason, .. }) => {
                    assert_eq!(name, "block");
                    assert!(reason.contains("cannot see a missing block"), "{reason}");
                }
                other => panic!("n = {n}, block {block}: {:?}", other.map(|_| ())),
            }
        }
        assert!(prepare("2^26", "64").is_ok());
        for n in [1, 1000, 1 << 20, 1 << 26, 1 << 34] {
            let visible = smallest_visible_block(n);
            let share = |trapezoids: usize| 2.0 * trapezoids as f64 / n as f64;
            assert!(share(visible) > 2.0 * tolerance(n), "n = {n}");
            assert!(share(visible - 1) <= 2.0 * tolerance(n), "n = {n}");
        }
    }

    use crate::kernels::checked_tasks::broken::Order;

    /// Block 0 run twice in place of block 1 (on a range starting at 0).
    const DOUBLED: Order = Order {
        chunks: |range| vec![0..1, 0..1, 2..range.end],
        ..Order::RIGHT
    };

    /// A trapezoid of 2^20 in blocks of one, where [`DOUBLED`] stays within the tolerance.
    fn blocks_of_one() -> Box<dyn PreparedKernel> {
        Trapezoid
            .prepare(&Params::new().with("n", "2^20").with("block", "1"), 1)
            .unwrap()
    }

    fn assert_coverage_failure(result: Result<RunReport, KernelError>) {
        match result {
            Err(KernelError::WrongResult { detail, .. }) => {
                assert!(
                    detail.contains("ran a block twice or skipped one"),
                    "{detail}"
                );
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    /// Block 0 run twice in place of block 1: at x = 0 the integrand is flat, so with blocks of
    /// one the integral stays within the tolerance, and only the coverage check sees it.
    #[test]
    fn a_block_run_twice_in_place_of_its_neighbour_fails_the_check() {
        let mut prepared = blocks_of_one();
        assert!(prepared.run(&Order::RIGHT).is_ok());
        assert_coverage_failure(prepared.run(&DOUBLED));
    }

    /// Why the timed call's coverage cannot be checked through its total (the module doc): near
    /// x = 0, block 0 run in place of block 1 leaves the total as a right run's, bit for bit.
    #[test]
    fn a_block_in_place_of_its_neighbour_near_zero_leaves_the_total_unchanged() {
        for method in METHODS {
            let prepared = PreparedTrapezoid {
                n: 1 << 20,
                block: 1,
                method,
                sum: shared_sum(method, MutexKind::Std, Backend::best()).unwrap(),
            };
            let right = prepared.integrate(&Order::RIGHT);
            prepared.sum.reset();
            let doubled = prepared.integrate(&DOUBLED);
            assert_eq!(doubled.to_bits(), right.to_bits(), "{method}");
        }
    }

    /// The threads `spawn` starts for the coverage check are reported as untimed, so that a sweep
    /// counts only the timed call's.
    #[test]
    fn the_threads_the_check_starts_are_reported_untimed() {
        let spawn = crate::executor::SpawnExecutor::new(2);
        let report = blocks_of_one().run(&spawn).unwrap();
        assert_eq!(
            spawn.threads_created(),
            2,
            "one per call, beside the caller"
        );
        assert_eq!(report.untimed_threads_created, 1);
    }

    /// Runs its loops as `Order::RIGHT` until a timed section ends (`timed` takes the executor's
    /// error there), and as [`DOUBLED`] after.
    struct DoubledAfterTiming(AtomicBool);

    impl DoubledAfterTiming {
        fn order(&self) -> &'static Order {
            // Relaxed: set and read on the test's thread.
            if self.0.load(Ordering::Relaxed) {
                &DOUBLED
            } else {
                &Order::RIGHT
            }
        }
    }

    impl Executor for DoubledAfterTiming {
        fn kind(&self) -> crate::executor::ExecutorKind {
            self.order().kind()
        }
        fn threads(&self) -> usize {
            self.order().threads()
        }
        fn for_chunks(
            &self,
            range: std::ops::Range<usize>,
            body: &(dyn Fn(std::ops::Range<usize>) + Sync),
        ) {
            self.order().for_chunks(range, body);
        }
        fn join(
            &self,
            a: &mut (dyn FnMut() + Send),
            b: &mut (dyn FnMut() + Send),
        ) -> Result<(), crate::executor::ExecutorError> {
            self.order().join(a, b)
        }
        fn for_each_task(
            &self,
            n: usize,
            task: &(dyn Fn(usize) -> Result<(), crate::executor::ExecutorError> + Sync),
        ) -> Result<(), crate::executor::ExecutorError> {
            self.order().for_each_task(n, task)
        }
        fn take_error(&self) -> Option<crate::executor::ExecutorError> {
            self.0.store(true, Ordering::Relaxed);
            None
        }
    }

    /// The coverage check runs in a call after the timed section, which it must keep free of
    /// its shared counters: a block doubled only there is still caught.
    #[test]
    fn the_coverage_check_runs_after_the_timed_call() {
        let mut prepared = blocks_of_one();
        assert_coverage_failure(prepared.run(&DoubledAfterTiming(AtomicBool::new(false))));
    }

    #[test]
    fn semaphore_counts_permits() {
        let s = Semaphore::new(2);
        s.lock();
        s.lock();
        assert_eq!(*s.permits.lock().unwrap(), 0);
        s.unlock();
        assert_eq!(*s.permits.lock().unwrap(), 1);
    }
}
