//! `qap`: branch and bound for the quadratic assignment problem (INNCABS `qap`).
//!
//! Facilities are assigned in order `0, 1, …`; a search node is a partial
//! assignment and its cost so far. Because all QAPLIB entries are
//! non-negative, a partial cost never decreases as facilities are added, so a
//! node whose partial cost already reaches the best complete cost found so far
//! is pruned.
//!
//! Down to level `cutoff`, every free location for the next facility becomes
//! its own task ([`Executor::for_each_task`]); deeper levels are searched
//! sequentially. All tasks share the best cost in one `AtomicU64`, read for
//! pruning and lowered with a retrying compare-exchange loop, so a bound found
//! in one subtree immediately prunes the others. The permutation that reached
//! the best cost is kept next to it under a mutex (taken only on the rare
//! improvements).
//!
//! Validation: `prepare` solves the instance once sequentially (untimed); each
//! run must find the same optimum, and the permutation it reports must be a
//! permutation whose recomputed cost equals that optimum. An optimum written
//! in the input file is only compared and reported, never trusted.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::executor::{Executor, ExecutorError, SeqExecutor};
use crate::input::qaplib::QapInstance;
use crate::kernel::{
    bad_param, timed, wrong_result, Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel,
    RunReport,
};

/// The `qap` kernel.
pub(crate) struct Qap;

impl Kernel for Qap {
    fn name(&self) -> &'static str {
        "qap"
    }

    fn description(&self) -> &'static str {
        "quadratic assignment by branch and bound; one task per free location down to the cutoff"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "input",
                default: "",
                help: "QAPLIB instance file (default: a generated instance of size n)",
            },
            ParamSpec {
                name: "n",
                default: "10",
                help: "size of the generated instance (1..=16) when no input is given",
            },
            ParamSpec {
                name: "seed",
                default: "1",
                help: "seed of the generated instance",
            },
            ParamSpec {
                name: "cutoff",
                default: "4",
                help:
                    "levels whose free locations are separate tasks; deeper levels run sequentially",
            },
        ]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "6"), ("cutoff", "2")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let cutoff = params.get_usize(self, "cutoff")?;
        let instance = match params.get_path(self, "input")? {
            Some(path) => read_instance(&path)?,
            None => {
                let n = params.get_usize(self, "n")?;
                if !(1..=MAX_GENERATED_SIZE).contains(&n) {
                    let reason =
                        format!("the generated size must be between 1 and {MAX_GENERATED_SIZE}");
                    return Err(bad_param(self, "n", &n.to_string(), &reason));
                }
                let seed = params.get_usize(self, "seed")?;
                QapInstance::generate(n, seed as u64)
            }
        };
        let reference = solve(&SeqExecutor::new(), &instance, 0)?;
        if let Some(expected) = instance.expected_optimum() {
            report_expected_optimum(reference.cost, expected);
        }
        Ok(Box::new(PreparedQap {
            cutoff: cutoff.min(instance.size()),
            instance,
            reference_cost: reference.cost,
        }))
    }
}

/// Generated instances stay small enough that a default-suite run is cheap;
/// QAPLIB files may be larger (up to
/// [`MAX_QAP_SIZE`](crate::input::qaplib::MAX_QAP_SIZE)).
const MAX_GENERATED_SIZE: usize = 16;

fn read_instance(path: &Path) -> Result<QapInstance, KernelError> {
    let bytes = std::fs::read(path).map_err(|source| KernelError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(QapInstance::parse(path, &bytes)?)
}

/// The file's optimum is informational: say loudly when ours differs.
fn report_expected_optimum(found: u64, expected: u64) {
    if found == expected {
        eprintln!("qap: optimum {found} matches the optimum given in the input file");
    } else {
        eprintln!(
            "qap: WARNING: MISMATCH: the optimum found is {found}, the input file says {expected}"
        );
    }
}

struct PreparedQap {
    instance: QapInstance,
    cutoff: usize,
    reference_cost: u64,
}

impl PreparedKernel for PreparedQap {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let (solved, elapsed) = timed(exec, || solve(exec, &self.instance, self.cutoff))?;
        let solution = solved?;
        check_solution(&self.instance, &solution, self.reference_cost)?;
        let mut metrics = vec![Metric::new("optimum", solution.cost as f64, "")];
        if let Some(expected) = self.instance.expected_optimum() {
            let matches = f64::from(u8::from(expected == solution.cost));
            metrics.push(Metric::new("matches-file-optimum", matches, ""));
        }
        Ok(RunReport { elapsed, metrics })
    }
}

fn check_solution(
    instance: &QapInstance,
    solution: &Assignment,
    reference: u64,
) -> Result<(), KernelError> {
    if solution.cost != reference {
        return Err(wrong_result(
            "qap",
            format!(
                "optimum {}, the sequential search found {reference}",
                solution.cost
            ),
        ));
    }
    if !instance.is_permutation(&solution.locations) {
        return Err(wrong_result(
            "qap",
            format!("{:?} is not a permutation", solution.locations),
        ));
    }
    let recomputed = instance.cost(&solution.locations);
    if recomputed != solution.cost {
        return Err(wrong_result(
            "qap",
            format!(
                "the reported permutation costs {recomputed}, not the reported {}",
                solution.cost
            ),
        ));
    }
    Ok(())
}

/// A complete assignment: facility `i` at `locations[i]`, and its cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub(crate) locations: Vec<usize>,
    pub(crate) cost: u64,
}

/// The best assignment found so far, shared by all tasks.
struct Incumbent {
    /// Cost of the best complete assignment (`u64::MAX` before the first).
    cost: AtomicU64,
    /// The assignment behind `cost`; written only after lowering `cost`.
    best: Mutex<Option<Assignment>>,
}

impl Incumbent {
    fn bound(&self) -> u64 {
        // Relaxed: a stale bound is never lower than the true one, so it can
        // only prune less, never cut off an optimum.
        self.cost.load(Ordering::Relaxed)
    }

    /// Lowers the shared bound to `cost` if that improves it, retrying when
    /// another task changed the bound in between; keeps the assignment.
    fn offer(&self, locations: &[usize], cost: u64) {
        let mut current = self.bound();
        while cost < current {
            // Relaxed: the bound is a single value whose only use is the
            // comparison; the assignment itself is published under the mutex.
            match self.cost.compare_exchange_weak(
                current,
                cost,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let mut best = self.best.lock().unwrap_or_else(PoisonError::into_inner);
                    // Two improvements can take the mutex in either order: keep the cheaper.
                    if best.as_ref().is_none_or(|kept| cost < kept.cost) {
                        *best = Some(Assignment {
                            locations: locations.to_vec(),
                            cost,
                        });
                    }
                    return;
                }
                Err(actual) => current = actual,
            }
        }
    }
}

/// A partial assignment of facilities `0..locations.len()`.
///
/// `linear[u · n + l]` is what facility `u` would add if it went to location
/// `l` now: its flows with every facility already placed, and with itself.
/// Keeping that table up to date costs `O(n²)` per assignment and gives both
/// the cost of the next step (one lookup) and the lower bound
/// `cost + Σ_u min_l linear[u][l]` over unplaced `u` and free `l`, which is
/// valid because the flows among unplaced facilities only add cost.
#[derive(Clone)]
struct Node {
    n: usize,
    locations: Vec<usize>,
    /// `used[l]`: location `l` is taken.
    used: Vec<bool>,
    cost: u64,
    linear: Vec<u64>,
}

impl Node {
    fn root(instance: &QapInstance) -> Self {
        let n = instance.size();
        let linear = (0..n * n)
            .map(|cell| instance.flow(cell / n, cell / n) * instance.distance(cell % n, cell % n))
            .collect();
        Self {
            n,
            locations: Vec::with_capacity(n),
            used: vec![false; n],
            cost: 0,
            linear,
        }
    }

    fn is_complete(&self) -> bool {
        self.locations.len() == self.n
    }

    /// Cost added by putting the next facility at `location`.
    fn added_cost(&self, location: usize) -> u64 {
        self.linear[self.locations.len() * self.n + location]
    }

    /// Puts the next facility at `location` and charges the facilities after
    /// it for their flows with it ([`unassign`](Self::unassign) undoes it).
    fn assign(&mut self, instance: &QapInstance, location: usize) {
        let facility = self.locations.len();
        self.cost += self.added_cost(location);
        self.locations.push(location);
        self.used[location] = true;
        self.update_linear(instance, facility, location, u64::wrapping_add);
    }

    fn unassign(&mut self, instance: &QapInstance) {
        if let Some(location) = self.locations.pop() {
            let facility = self.locations.len();
            self.update_linear(instance, facility, location, u64::wrapping_sub);
            self.used[location] = false;
            self.cost -= self.added_cost(location);
        }
    }

    fn update_linear(
        &mut self,
        instance: &QapInstance,
        facility: usize,
        location: usize,
        apply: fn(u64, u64) -> u64,
    ) {
        let n = self.n;
        for other in facility + 1..n {
            let (to, from) = (
                instance.flow(facility, other),
                instance.flow(other, facility),
            );
            for free in 0..n {
                let added = to * instance.distance(location, free)
                    + from * instance.distance(free, location);
                let cell = &mut self.linear[other * n + free];
                *cell = apply(*cell, added);
            }
        }
    }

    /// No completion of this node costs less than this.
    fn lower_bound(&self) -> u64 {
        let n = self.n;
        let mut bound = self.cost;
        for other in self.locations.len()..n {
            let row = &self.linear[other * n..(other + 1) * n];
            let cheapest = (0..n).filter(|&l| !self.used[l]).map(|l| row[l]).min();
            bound += cheapest.unwrap_or(0);
        }
        bound
    }

    fn free_locations(&self) -> Vec<usize> {
        (0..self.n).filter(|&l| !self.used[l]).collect()
    }
}

/// The optimal assignment of `instance`, with one task per free location on
/// levels `0..cutoff`.
pub(crate) fn solve(
    exec: &dyn Executor,
    instance: &QapInstance,
    cutoff: usize,
) -> Result<Assignment, ExecutorError> {
    let incumbent = Incumbent {
        cost: AtomicU64::new(u64::MAX),
        best: Mutex::new(None),
    };
    let mut root = Node::root(instance);
    if cutoff == 0 {
        search_sequential(instance, &mut root, &incumbent);
    } else {
        search_tasks(exec, instance, &root, cutoff, &incumbent)?;
    }
    let best = incumbent
        .best
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    // Every instance has a permutation, and the first complete assignment
    // beats `u64::MAX` (the reader keeps costs below it); should that ever
    // fail, the empty assignment is caught by validation as "not a permutation".
    Ok(best.unwrap_or(Assignment {
        locations: Vec::new(),
        cost: u64::MAX,
    }))
}

fn search_tasks(
    exec: &dyn Executor,
    instance: &QapInstance,
    node: &Node,
    cutoff: usize,
    incumbent: &Incumbent,
) -> Result<(), ExecutorError> {
    let free = node.free_locations();
    exec.for_each_task(free.len(), &|index| {
        if node.cost + node.added_cost(free[index]) >= incumbent.bound() {
            return Ok(());
        }
        let mut child = node.clone();
        child.assign(instance, free[index]);
        if child.is_complete() {
            incumbent.offer(&child.locations, child.cost);
        } else if child.lower_bound() < incumbent.bound() {
            if child.locations.len() < cutoff {
                search_tasks(exec, instance, &child, cutoff, incumbent)?;
            } else {
                search_sequential(instance, &mut child, incumbent);
            }
        }
        Ok(())
    })
}

fn search_sequential(instance: &QapInstance, node: &mut Node, incumbent: &Incumbent) {
    for location in 0..node.n {
        if node.used[location] || node.cost + node.added_cost(location) >= incumbent.bound() {
            continue;
        }
        node.assign(instance, location);
        if node.is_complete() {
            incumbent.offer(&node.locations, node.cost);
        } else if node.lower_bound() < incumbent.bound() {
            search_sequential(instance, node, incumbent);
        }
        node.unassign(instance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minimum cost over all permutations, by Heap's algorithm.
    fn brute_force(instance: &QapInstance) -> u64 {
        let mut permutation: Vec<usize> = (0..instance.size()).collect();
        let mut counters = vec![0; permutation.len()];
        let mut best = instance.cost(&permutation);
        let mut i = 1;
        while i < permutation.len() {
            if counters[i] < i {
                let swap_with = if i % 2 == 0 { 0 } else { counters[i] };
                permutation.swap(swap_with, i);
                best = best.min(instance.cost(&permutation));
                counters[i] += 1;
                i = 1;
            } else {
                counters[i] = 0;
                i += 1;
            }
        }
        best
    }

    #[test]
    fn branch_and_bound_matches_brute_force_on_small_instances() {
        for n in 1..=6 {
            for seed in 0..3 {
                let instance = QapInstance::generate(n, seed);
                let solution = solve(&SeqExecutor::new(), &instance, 2).unwrap();
                assert_eq!(
                    solution.cost,
                    brute_force(&instance),
                    "n = {n}, seed = {seed}"
                );
                assert_eq!(instance.cost(&solution.locations), solution.cost);
            }
        }
    }

    #[test]
    fn a_wrong_cost_is_reported() {
        let instance = QapInstance::generate(4, 0);
        let solution = solve(&SeqExecutor::new(), &instance, 0).unwrap();
        let error = check_solution(&instance, &solution, solution.cost + 1).unwrap_err();
        assert!(matches!(error, KernelError::WrongResult { .. }));
        let forged = Assignment {
            locations: vec![0, 0, 1, 2],
            cost: solution.cost,
        };
        assert!(check_solution(&instance, &forged, solution.cost).is_err());
    }

    #[test]
    fn offer_keeps_the_cheapest_assignment() {
        let incumbent = Incumbent {
            cost: AtomicU64::new(u64::MAX),
            best: Mutex::new(None),
        };
        incumbent.offer(&[1, 0], 30);
        incumbent.offer(&[0, 1], 40);
        incumbent.offer(&[0, 1], 20);
        assert_eq!(incumbent.bound(), 20);
        let best = incumbent.best.into_inner().unwrap().unwrap();
        assert_eq!((best.locations, best.cost), (vec![0, 1], 20));
    }

    #[test]
    fn generated_size_out_of_range_is_a_bad_param() {
        for n in ["0", "17"] {
            let params = Params::new().with("n", n);
            assert!(matches!(
                Qap.prepare(&params, 1),
                Err(KernelError::BadParam { .. })
            ));
        }
    }
}
