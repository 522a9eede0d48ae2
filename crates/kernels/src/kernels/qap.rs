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
//! permutation whose recomputed cost equals that optimum. The optimum survives
//! a lost or doubled task, so every task call is also checked to run each of
//! its tasks once ([`CheckedTasks`]). An optimum written
//! in the input file is only compared and reported, never trusted.
//!
//! Each run also reports `nodes`, the partial and complete assignments the
//! search made: its amount of work, which depends on how soon a task finds a
//! good bound, i.e. on the order in which the scheduler runs the tasks (as
//! `floorplan`'s does).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::executor::{Executor, ExecutorError, SeqExecutor};
use crate::input::integer_tokens::read_input_file;
use crate::input::qaplib::QapInstance;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::checked_tasks::CheckedTasks;
use crate::kernels::shared_atomics::{ATOMICS_BACKEND_PARAM, SharedWord, shared_word};
use crate::kernels::shared_minimum::SharedMinimum;

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
                help: "levels whose free locations are separate tasks; deeper levels run sequentially",
            },
            ATOMICS_BACKEND_PARAM,
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
        let bound = shared_word(self, params, u64::MAX)?;
        let path = params.get_path(self, "input")?;
        let instance = match &path {
            Some(path) => read_input_file(path, QapInstance::parse)?,
            None => {
                let n = params.get_usize_in(self, "n", 1..=MAX_GENERATED_SIZE)?;
                let seed = params.get_usize(self, "seed")?;
                QapInstance::generate(n, seed as u64)
            }
        };
        let reference = solve(&SeqExecutor::new(), &instance, 0)?;
        check_solution(&instance, &reference, reference.cost)?;
        if let Some(path) = path {
            report_file_solution(&path, &instance, &reference);
        }
        Ok(Box::new(PreparedQap {
            bound,
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

/// A user-given instance gets its answer printed (once per prepare, on
/// stderr, so tables on stdout stay clean).
fn report_file_solution(path: &Path, instance: &QapInstance, solution: &Assignment) {
    let (found, file) = (solution.cost, path.display());
    eprintln!(
        "qap: {file}: optimum {found}, facility i at location p[i] with p = {:?}",
        solution.locations
    );
    match instance.expected_optimum() {
        Some(expected) if expected == found => {
            eprintln!("qap: {file}: the optimum matches the one given in the file");
        }
        Some(expected) => eprintln!(
            "qap: {file}: WARNING: MISMATCH: the optimum found is {found}, the file says {expected}"
        ),
        None => {}
    }
}

struct PreparedQap {
    /// The shared best bound, on the chosen atomics backend.
    bound: SharedWord,
    instance: QapInstance,
    cutoff: usize,
    reference_cost: u64,
}

impl PreparedKernel for PreparedQap {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let checked = CheckedTasks::new(exec);
        let (solved, elapsed) = timed(exec, || {
            solve_with(&checked, &self.instance, self.cutoff, &mut self.bound)
        })?;
        let (solution, nodes) = solved?;
        if checked.wrong_calls() != 0 {
            return Err(wrong_result(
                "qap",
                format!(
                    "{} task calls ran a task twice or never (the optimum cannot show it)",
                    checked.wrong_calls()
                ),
            ));
        }
        check_solution(&self.instance, &solution, self.reference_cost)?;
        let mut metrics = vec![Metric::new("optimum", solution.cost as f64, "")];
        if let Some(expected) = self.instance.expected_optimum() {
            let matches = f64::from(u8::from(expected == solution.cost));
            metrics.push(Metric::new("matches-file-optimum", matches, ""));
        }
        metrics.push(Metric::new("nodes", nodes as f64, ""));
        Ok(RunReport {
            elapsed,
            metrics,
            untimed_threads_created: 0,
        })
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
type Incumbent<'w> = SharedMinimum<'w, Vec<usize>>;

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
    let mut bound = SharedWord::Std(AtomicU64::new(u64::MAX));
    Ok(solve_with(exec, instance, cutoff, &mut bound)?.0)
}

/// [`solve`] with the best bound kept in `bound` (the kernel's `--backend`); also returns how
/// many assignments the search made (its nodes).
fn solve_with(
    exec: &dyn Executor,
    instance: &QapInstance,
    cutoff: usize,
    bound: &mut SharedWord,
) -> Result<(Assignment, u64), ExecutorError> {
    let incumbent = Incumbent::new(bound, u64::MAX);
    let mut root = Node::root(instance);
    let nodes = AtomicU64::new(0);
    if cutoff == 0 {
        // Relaxed: this thread alone.
        nodes.store(
            search_sequential(instance, &mut root, &incumbent),
            Ordering::Relaxed,
        );
    } else {
        search_tasks(exec, instance, &root, cutoff, &incumbent, &nodes)?;
    }
    // Every instance has a permutation, and the first complete assignment
    // beats `u64::MAX` (the reader keeps costs below it); should that ever
    // fail, the empty assignment is caught by validation as "not a permutation".
    let (cost, locations) = incumbent.into_best().unwrap_or((u64::MAX, Vec::new()));
    Ok((Assignment { locations, cost }, nodes.into_inner()))
}

/// One task per free location for the next facility, down to level `cutoff`; adds the
/// assignments made to `nodes`.
fn search_tasks(
    exec: &dyn Executor,
    instance: &QapInstance,
    node: &Node,
    cutoff: usize,
    incumbent: &Incumbent<'_>,
    nodes: &AtomicU64,
) -> Result<(), ExecutorError> {
    let free = node.free_locations();
    exec.for_each_task(free.len(), &|index| {
        if node.cost + node.added_cost(free[index]) >= incumbent.bound() {
            return Ok(());
        }
        let mut child = node.clone();
        child.assign(instance, free[index]);
        let mut searched = 1;
        if child.is_complete() {
            incumbent.offer(child.cost, || child.locations.clone());
        } else if child.lower_bound() < incumbent.bound() {
            if child.locations.len() < cutoff {
                search_tasks(exec, instance, &child, cutoff, incumbent, nodes)?;
            } else {
                searched += search_sequential(instance, &mut child, incumbent);
            }
        }
        // Relaxed: a count read after the search, which every task has finished by then.
        nodes.fetch_add(searched, Ordering::Relaxed);
        Ok(())
    })
}

/// The search below the cutoff; returns the assignments it made.
fn search_sequential(instance: &QapInstance, node: &mut Node, incumbent: &Incumbent<'_>) -> u64 {
    let mut nodes = 0;
    for location in 0..node.n {
        if node.used[location] || node.cost + node.added_cost(location) >= incumbent.bound() {
            continue;
        }
        node.assign(instance, location);
        nodes += 1;
        if node.is_complete() {
            incumbent.offer(node.cost, || node.locations.clone());
        } else if node.lower_bound() < incumbent.bound() {
            nodes += search_sequential(instance, node, incumbent);
        }
        node.unassign(instance);
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_facilities_take_the_cheaper_of_the_two_assignments() {
        // Identity: 2·5 + 3·7 = 31; swapped: 2·7 + 3·5 = 29.
        let instance = QapInstance::from_matrices(2, vec![0, 2, 3, 0], vec![0, 5, 7, 0]).unwrap();
        let solution = solve(&SeqExecutor::new(), &instance, 1).unwrap();
        assert_eq!((solution.locations, solution.cost), (vec![1, 0], 29));
    }

    /// The search's nodes as a run counts them.
    fn nodes(instance: &QapInstance, cutoff: usize) -> u64 {
        let mut bound = SharedWord::Std(AtomicU64::new(u64::MAX));
        solve_with(&SeqExecutor::new(), instance, cutoff, &mut bound)
            .unwrap()
            .1
    }

    /// On one thread the tasks run in the locations' order, so every cutoff makes the same
    /// assignments as the sequential search; pruning makes fewer than the n! complete and
    /// partial assignments of an exhaustive search once n > 2.
    #[test]
    fn nodes_are_the_same_for_every_cutoff_and_pruning_makes_fewer() {
        for n in 1..=7 {
            let instance = QapInstance::generate(n, n as u64);
            let sequential = nodes(&instance, 0);
            for cutoff in 1..=n {
                assert_eq!(
                    nodes(&instance, cutoff),
                    sequential,
                    "n = {n}, cutoff {cutoff}"
                );
            }
            // Partial and complete assignments of the unpruned search: n + n(n-1) + … + n!.
            let exhaustive: u64 = (1..=n as u64)
                .scan(1, |product, k| {
                    *product *= n as u64 + 1 - k;
                    Some(*product)
                })
                .sum();
            assert!(
                sequential >= n as u64 && sequential <= exhaustive,
                "n = {n}"
            );
            if n > 4 {
                assert!(sequential < exhaustive, "n = {n}: nothing pruned");
            }
        }
    }

    #[test]
    fn every_cutoff_finds_the_same_optimum() {
        // Against brute force: tests/known_answers.rs.
        for n in 1..=7 {
            let instance = QapInstance::generate(n, n as u64);
            let reference = solve(&SeqExecutor::new(), &instance, 0).unwrap();
            for cutoff in 1..=n {
                let solution = solve(&SeqExecutor::new(), &instance, cutoff).unwrap();
                assert_eq!(solution.cost, reference.cost, "n = {n}, cutoff {cutoff}");
                check_solution(&instance, &solution, reference.cost).unwrap();
            }
        }
    }

    #[test]
    fn lower_bound_never_exceeds_the_best_completion() {
        let instance = QapInstance::generate(6, 9);
        let optimum = solve(&SeqExecutor::new(), &instance, 0).unwrap().cost;
        let mut root = Node::root(&instance);
        assert!(root.lower_bound() <= optimum);
        root.assign(&instance, 3);
        let before = root.linear.clone();
        root.assign(&instance, 1);
        root.unassign(&instance);
        assert_eq!(root.linear, before, "unassign undoes assign");
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
