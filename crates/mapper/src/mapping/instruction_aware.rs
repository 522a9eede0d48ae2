//! Instruction-aware mapping: the SMT study's Algorithm 1 and its generalisation.
//!
//! **Algorithm 1** (two PUs per core, one instruction class): sort the threads by their count
//! of the class, then repeatedly place the thread with the highest and the thread with the
//! lowest remaining count on the same core. A heavy user of the unit always shares its core
//! with the lightest user, so no core gets two heavy users.
//!
//! **Generalisation** used by [`crate::Algorithm::InstructionAware`]:
//!
//! 1. *Which class.* With a multi-class mix the key class is the one whose share (count /
//!    thread total, so long and short threads compare) varies most across the threads —
//!    [`key_classes`] orders classes by that variance. Threads are sorted by their share of the
//!    first class, ties broken by the next classes in that order, then by thread id; this
//!    lexicographic order keeps threads with identical mixes adjacent.
//! 2. *How many threads per core.* Threads are spread as evenly as possible over cores
//!    (packages alternating): with fewer threads than PUs some cores keep a free sibling,
//!    and cores that must take more threads take them first.
//! 3. *More than two PUs per core.* A core of size `g` takes, alternately, the highest and the
//!    lowest remaining threads (`high, low, next high, next low, …`); for `g = 2` this is exactly
//!    Algorithm 1, and for larger `g` every core gets an equal blend of heavy and light users.
//! 4. *Refinement.* One sort key cannot see every class at once: with 12 FP, 12 integer,
//!    4 branch and 4 load threads on 16 two-PU cores, pairing by the FP key leaves four
//!    integer–integer pairs although a clash-free pairing exists. So the grouping is then
//!    improved by swapping two threads between cores whenever the swap lowers the
//!    [contention model](mod@crate::contention) (first improvement, cores and threads in order,
//!    until no swap helps; at most [`MAX_REFINEMENT_PASSES`] passes). The result is never worse
//!    under the model than step 3, and [`algorithm1`] remains available unrefined.

use super::placement::cores_alternating_packages;
use crate::contention::overlap;
use crate::mix::{CLASS_COUNT, InstrClass, InstructionMix};
use crate::topology::Topology;

/// Classes ordered by how much their share varies across the threads (largest variance first;
/// ties keep [`InstrClass::ALL`] order).
///
/// ```
/// use parbench_mapper::{InstrClass, InstructionMix};
/// use parbench_mapper::mapping::instruction_aware::key_classes;
/// let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
/// let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
/// let classes = key_classes(&[fp, fp, fp, int]);
/// assert_eq!(&classes[..2], &[InstrClass::Fp, InstrClass::Int]);
/// ```
pub fn key_classes(mixes: &[InstructionMix]) -> [InstrClass; CLASS_COUNT] {
    let shares: Vec<[f64; CLASS_COUNT]> = mixes.iter().map(InstructionMix::shares).collect();
    let count = shares.len().max(1) as f64;
    let variance = |slot: usize| {
        let mean = shares.iter().map(|s| s[slot]).sum::<f64>() / count;
        shares.iter().map(|s| (s[slot] - mean).powi(2)).sum::<f64>() / count
    };
    let mut slots: [usize; CLASS_COUNT] = std::array::from_fn(|slot| slot);
    // Stable sort: equal variances keep the declared class order, so the result is deterministic.
    slots.sort_by(|&a, &b| variance(b).total_cmp(&variance(a)));
    slots.map(|slot| InstrClass::ALL[slot])
}

/// Thread ids sorted from the heaviest to the lightest user of the [`key_classes`].
///
/// ```
/// use parbench_mapper::{InstrClass, InstructionMix};
/// use parbench_mapper::mapping::instruction_aware::sorted_threads;
/// let mix = |fp| InstructionMix::new([(InstrClass::Fp, fp), (InstrClass::Int, 10.0 - fp)]);
/// assert_eq!(sorted_threads(&[mix(2.0), mix(9.0), mix(5.0)]), vec![1, 2, 0]);
/// ```
pub fn sorted_threads(mixes: &[InstructionMix]) -> Vec<usize> {
    let classes = key_classes(mixes);
    let slots: Vec<usize> = classes
        .iter()
        .map(|class| InstrClass::ALL.iter().position(|c| c == class).unwrap_or(0))
        .collect();
    let key = |thread: usize| -> Vec<f64> {
        let shares = mixes[thread].shares();
        slots.iter().map(|&slot| shares[slot]).collect()
    };
    let mut threads: Vec<usize> = (0..mixes.len()).collect();
    threads.sort_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        kb.iter()
            .zip(&ka)
            .map(|(x, y)| x.total_cmp(y))
            .find(|ordering| ordering.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    threads
}

/// Splits threads (sorted heaviest first) into groups of the given sizes, each group taking
/// alternately the highest and the lowest remaining thread. Groups are returned in the order of
/// `group_sizes`; larger groups are filled first so singletons get the middle of the order.
///
/// ```
/// use parbench_mapper::mapping::instruction_aware::pair_extremes;
/// assert_eq!(pair_extremes(&[10, 11, 12, 13], &[2, 2]), vec![vec![10, 13], vec![11, 12]]);
/// assert_eq!(pair_extremes(&[1, 2, 3], &[1, 2]), vec![vec![2], vec![1, 3]]);
/// ```
pub fn pair_extremes(sorted: &[usize], group_sizes: &[usize]) -> Vec<Vec<usize>> {
    let mut fill_order: Vec<usize> = (0..group_sizes.len()).collect();
    fill_order.sort_by_key(|&group| std::cmp::Reverse(group_sizes[group]));
    deal_extremes(sorted, group_sizes, fill_order)
}

/// Fills the groups in `fill_order`, each taking alternately the highest and the lowest
/// remaining thread of `sorted`; groups are returned in the order of `group_sizes`.
fn deal_extremes(
    sorted: &[usize],
    group_sizes: &[usize],
    fill_order: impl IntoIterator<Item = usize>,
) -> Vec<Vec<usize>> {
    let mut remaining = std::collections::VecDeque::from(sorted.to_vec());
    let mut groups = vec![Vec::new(); group_sizes.len()];
    for group in fill_order {
        for position in 0..group_sizes[group] {
            let next = if position % 2 == 0 {
                remaining.pop_front()
            } else {
                remaining.pop_back()
            };
            groups[group].extend(next);
        }
    }
    groups
}

/// The study's Algorithm 1 on one class: threads sorted by `counts` (descending), then the
/// groups *in the order given* each take the highest and the lowest remaining threads (high, low,
/// high, … up to the group's size) — as [`pair_extremes`], but without filling larger groups
/// first: on a hybrid machine whose smaller cores come first, those cores take the extremes, as
/// the published rule ("the maximum and the minimum on the next core") has it. Returns, per
/// group, the thread ids placed together.
///
/// ```
/// use parbench_mapper::mapping::instruction_aware::algorithm1;
/// // FP counts of four threads; the heaviest (1) shares with the lightest (3).
/// assert_eq!(algorithm1(&[50.0, 90.0, 70.0, 10.0], &[2, 2]), vec![vec![1, 3], vec![2, 0]]);
/// ```
pub fn algorithm1(counts: &[f64], group_sizes: &[usize]) -> Vec<Vec<usize>> {
    let mut sorted: Vec<usize> = (0..counts.len()).collect();
    sorted.sort_by(|&a, &b| counts[b].total_cmp(&counts[a]));
    deal_extremes(&sorted, group_sizes, 0..group_sizes.len())
}

/// Upper bound on refinement passes over all core pairs (each pass is `O(threads²)` swaps
/// tried); in practice a handful of passes reach a local optimum.
///
/// ```
/// assert!(parbench_mapper::mapping::instruction_aware::MAX_REFINEMENT_PASSES >= 1);
/// ```
pub const MAX_REFINEMENT_PASSES: usize = 32;

/// Swaps threads between groups while a swap lowers the summed pairwise [`overlap`] of the
/// groups (see step 4 of the module documentation). Group sizes never change;
/// thread ids without a mix contribute no overlap.
///
/// ```
/// use parbench_mapper::{InstrClass, InstructionMix};
/// use parbench_mapper::mapping::instruction_aware::refine;
/// let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
/// let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
/// let mut groups = vec![vec![0, 1], vec![2, 3]]; // fp+fp, int+int
/// refine(&mut groups, &[fp, fp, int, int]);
/// assert_eq!(groups, vec![vec![2, 1], vec![0, 3]]);
/// ```
pub fn refine(groups: &mut [Vec<usize>], mixes: &[InstructionMix]) {
    let cost = |group: &[usize]| -> f64 {
        group
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| {
                group[i + 1..]
                    .iter()
                    .filter_map(move |&b| Some(overlap(mixes.get(a)?, mixes.get(b)?)))
            })
            .sum()
    };
    for _ in 0..MAX_REFINEMENT_PASSES {
        let mut improved = false;
        for first in 0..groups.len() {
            for second in first + 1..groups.len() {
                for i in 0..groups[first].len() {
                    for j in 0..groups[second].len() {
                        let before = cost(&groups[first]) + cost(&groups[second]);
                        swap_members(groups, (first, i), (second, j));
                        let after = cost(&groups[first]) + cost(&groups[second]);
                        // A tolerance keeps float noise from swapping back and forth forever.
                        if after < before - 1e-9 {
                            improved = true;
                        } else {
                            swap_members(groups, (first, i), (second, j));
                        }
                    }
                }
            }
        }
        if !improved {
            break;
        }
    }
}

fn swap_members(groups: &mut [Vec<usize>], (g1, i): (usize, usize), (g2, j): (usize, usize)) {
    let held = groups[g1][i];
    groups[g1][i] = groups[g2][j];
    groups[g2][j] = held;
}

/// How many threads each core takes: spread evenly, cores in package-alternating order, at most
/// `rounds` threads per PU. Returns `(core, size)` for every core that takes at least one thread.
fn core_group_sizes(topology: &Topology, threads: usize, rounds: usize) -> Vec<(usize, usize)> {
    let cores = cores_alternating_packages(topology);
    let mut sizes = vec![0usize; cores.len()];
    let mut placed = 0;
    while placed < threads {
        let before = placed;
        for (slot, &core) in cores.iter().enumerate() {
            if placed < threads && sizes[slot] < rounds * topology.cores()[core].pus.len() {
                sizes[slot] += 1;
                placed += 1;
            }
        }
        if placed == before {
            break; // every core is full; the caller checked threads <= PUs
        }
    }
    cores
        .into_iter()
        .zip(sizes)
        .filter(|&(_, size)| size > 0)
        .collect()
}

/// PU (logical index) per thread under the study's Algorithm 1 as published: threads sorted by
/// their count of one instruction class (`class`; `None`: the class whose share varies most
/// across the threads, [`key_classes`]), then cores in topology order each take the highest and
/// the lowest remaining threads (high, low, high, … up to the core's size) until no thread is
/// left. Unlike [`map`] it neither spreads threads over cores (with fewer threads than PUs the
/// last cores stay empty) nor refines the pairing. With `rounds > 1` (more threads than PUs,
/// which the study does not cover) cores take evenly spread groups dealt to their PUs in turn.
pub(super) fn map_algorithm1(
    topology: &Topology,
    mixes: &[InstructionMix],
    class: Option<InstrClass>,
    rounds: usize,
) -> Vec<usize> {
    let class = class.unwrap_or_else(|| key_classes(mixes)[0]);
    let counts: Vec<f64> = mixes.iter().map(|mix| mix.count(class)).collect();
    let (cores, sizes): (Vec<usize>, Vec<usize>) = if rounds > 1 {
        // Sharing PUs (`map_sharing`): the published algorithm has no rule for it, so spread
        // evenly as the refined mapping does, keeping PU loads within one thread of each other.
        core_group_sizes(topology, mixes.len(), rounds)
            .into_iter()
            .unzip()
    } else {
        let mut cores = Vec::new();
        let mut sizes = Vec::new();
        let mut left = mixes.len();
        for (core, found) in topology.cores().iter().enumerate() {
            let take = found.pus.len().min(left);
            if take > 0 {
                cores.push(core);
                sizes.push(take);
                left -= take;
            }
        }
        (cores, sizes)
    };
    let mut pu_of_thread = vec![0; mixes.len()];
    for (core, group) in cores.iter().zip(algorithm1(&counts, &sizes)) {
        for (&thread, &pu) in group.iter().zip(topology.cores()[*core].pus.iter().cycle()) {
            pu_of_thread[thread] = pu;
        }
    }
    pu_of_thread
}

/// PU (logical index) per thread under the generalised algorithm, each PU taking at most
/// `rounds` threads (a core's group is dealt to its PUs in turn); the caller has checked that
/// `mixes.len()` is between 1 and `rounds ×` the PU count.
pub(super) fn map(topology: &Topology, mixes: &[InstructionMix], rounds: usize) -> Vec<usize> {
    let groups_of_cores = core_group_sizes(topology, mixes.len(), rounds);
    let sizes: Vec<usize> = groups_of_cores.iter().map(|&(_, size)| size).collect();
    let mut groups = pair_extremes(&sorted_threads(mixes), &sizes);
    refine(&mut groups, mixes);
    let mut pu_of_thread = vec![0; mixes.len()];
    for ((core, _), group) in groups_of_cores.iter().zip(groups) {
        for (&thread, &pu) in group.iter().zip(topology.cores()[*core].pus.iter().cycle()) {
            pu_of_thread[thread] = pu;
        }
    }
    pu_of_thread
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Algorithm;

    fn pure(class: InstrClass) -> InstructionMix {
        InstructionMix::new([(class, 1.0)])
    }

    #[test]
    fn algorithm1_pairs_max_with_min_on_hand_computed_cases() {
        // counts 40, 10, 80, 60, 20, 70: sorted 2(80) 5(70) 3(60) 0(40) 4(20) 1(10)
        let groups = algorithm1(&[40.0, 10.0, 80.0, 60.0, 20.0, 70.0], &[2, 2, 2]);
        assert_eq!(groups, vec![vec![2, 1], vec![5, 4], vec![3, 0]]);
        // ties keep thread order: 5, 5, 1, 1 → (0,3), (1,2)
        assert_eq!(
            algorithm1(&[5.0, 5.0, 1.0, 1.0], &[2, 2]),
            vec![vec![0, 3], vec![1, 2]]
        );
    }

    /// "core:4 pu:2" restricted to `keep` (OS indices), through an hwloc XML file as a machine
    /// of another shape would come.
    fn restricted_xml(keep: &[usize], name: &str) -> Topology {
        let mut hw = hwlocality::Topology::builder()
            .from_synthetic("core:4 pu:2")
            .unwrap()
            .build()
            .unwrap();
        let mut set = hwlocality::cpu::cpuset::CpuSet::new();
        for &pu in keep {
            set.set(pu);
        }
        hw.edit(|editor| {
            editor
                .restrict(&set, hwlocality::topology::editor::RestrictFlags::empty())
                .unwrap()
        });
        let path = std::env::temp_dir().join(format!("{name}-{}.xml", std::process::id()));
        hw.export_xml_file(
            Some(&path),
            hwlocality::topology::export::xml::XMLExportFlags::empty(),
        )
        .unwrap();
        let topology = Topology::from_xml_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        topology
    }

    #[test]
    fn published_algorithm1_gives_the_extremes_to_cores_in_topology_order_on_hybrid_machines() {
        // Two one-PU cores first, then two SMT cores.
        let t = restricted_xml(&[0, 2, 4, 5, 6, 7], "hybrid-small-first");
        let sizes: Vec<usize> = t.cores().iter().map(|core| core.pus.len()).collect();
        assert_eq!(sizes, vec![1, 1, 2, 2]);
        // Sorted 2 5 3 0 4 1 (see six_fp_threads): core 0 takes the maximum alone, core 1 the
        // next; core 2 then pairs the next with the minimum, core 3 the middle two.
        assert_eq!(six_fp_threads_by_algorithm1(&t).1, vec![3, 2, 0, 2, 3, 1]);
    }

    /// The PU and the core of each of six threads with fp counts 40 10 80 60 20 70 (sorted:
    /// threads 2 5 3 0 4 1) under the published Algorithm 1 by fp.
    fn six_fp_threads_by_algorithm1(t: &Topology) -> (Vec<usize>, Vec<usize>) {
        let fp =
            |count: f64| InstructionMix::new([(InstrClass::Fp, count), (InstrClass::Int, 1.0)]);
        let mixes: Vec<InstructionMix> = [40.0, 10.0, 80.0, 60.0, 20.0, 70.0].map(fp).to_vec();
        let pus = map_algorithm1(t, &mixes, Some(InstrClass::Fp), 1);
        let cores = pus.iter().map(|&pu| t.pus()[pu].core).collect();
        (pus, cores)
    }

    #[test]
    fn published_algorithm1_fills_cores_in_order_with_max_and_min() {
        let t = Topology::synthetic("core:4 pu:2").unwrap();
        // Sorted 2 5 3 0 4 1 → core 0 {2, 1}, core 1 {5, 4}, core 2 {3, 0}.
        let (pus, cores) = six_fp_threads_by_algorithm1(&t);
        assert_eq!(cores, vec![2, 0, 0, 2, 1, 1]);
        // The fourth core stays empty (the refined mapping would spread instead).
        assert!(cores.iter().all(|&core| core != 3));
        let mut used = pus.clone();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), 6);
    }

    #[test]
    fn algorithm1_sorts_by_the_requested_class_only() {
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        let mix =
            |fp: f64, int: f64| InstructionMix::new([(InstrClass::Fp, fp), (InstrClass::Int, int)]);
        let mixes = [mix(4.0, 1.0), mix(3.0, 9.0), mix(2.0, 8.0), mix(1.0, 2.0)];
        let together =
            |pus: &[usize], a: usize, b: usize| t.pus()[pus[a]].core == t.pus()[pus[b]].core;
        // By fp: 0 (4) with 3 (1); by int: 1 (9) with 0 (1).
        let by_fp = map_algorithm1(&t, &mixes, Some(InstrClass::Fp), 1);
        assert!(together(&by_fp, 0, 3) && together(&by_fp, 1, 2));
        let by_int = map_algorithm1(&t, &mixes, Some(InstrClass::Int), 1);
        assert!(together(&by_int, 1, 0) && together(&by_int, 2, 3));
    }

    #[test]
    fn four_pu_cores_blend_heavy_and_light() {
        // sorted 0..8 heaviest first; a 4-PU core takes high, low, high, low.
        let sorted: Vec<usize> = (0..8).collect();
        assert_eq!(
            pair_extremes(&sorted, &[4, 4]),
            vec![vec![0, 7, 1, 6], vec![2, 5, 3, 4]]
        );
    }

    #[test]
    fn uneven_groups_give_singletons_the_middle() {
        let t = Topology::synthetic("core:4 pu:2").unwrap();
        assert_eq!(
            core_group_sizes(&t, 6, 1),
            vec![(0, 2), (1, 2), (2, 1), (3, 1)]
        );
        assert_eq!(core_group_sizes(&t, 3, 1), vec![(0, 1), (1, 1), (2, 1)]);
    }

    #[test]
    fn adversarial_blocks_are_separated() {
        // Round-robin puts each block on one core; the aware mapping must not.
        let t = Topology::synthetic("core:5 pu:2").unwrap();
        let mixes: Vec<InstructionMix> = InstrClass::ALL
            .iter()
            .flat_map(|&c| [pure(c), pure(c)])
            .collect();
        let mapping = Algorithm::InstructionAware.map(&t, &mixes).unwrap();
        for core in t.cores() {
            let on_core: Vec<usize> = (0..mixes.len())
                .filter(|&thread| core.pus.contains(&mapping.pus()[thread].unwrap()))
                .collect();
            assert_eq!(on_core.len(), 2);
            assert_ne!(
                mixes[on_core[0]], mixes[on_core[1]],
                "core {:?} pairs equal mixes",
                core.pus
            );
        }
    }

    #[test]
    fn refinement_removes_clashes_a_single_key_cannot_see() {
        // 12 fp, 12 int, 4 branch, 4 load on 16 two-PU cores: a clash-free pairing exists
        // (8 fp+int, 4 fp+other, 4 int+other) but sorting by the fp key alone leaves int+int pairs.
        let t = Topology::synthetic("core:16 pu:2").unwrap();
        let counts = [
            (InstrClass::Fp, 12),
            (InstrClass::Int, 12),
            (InstrClass::Branch, 4),
            (InstrClass::Load, 4),
        ];
        let mixes: Vec<InstructionMix> = counts
            .iter()
            .flat_map(|&(class, n)| std::iter::repeat_n(pure(class), n))
            .collect();
        let sizes = vec![2; 16];
        let unrefined = pair_extremes(&sorted_threads(&mixes), &sizes);
        let clashes =
            |groups: &[Vec<usize>]| groups.iter().filter(|g| mixes[g[0]] == mixes[g[1]]).count();
        assert_eq!(clashes(&unrefined), 4);
        let mapping = Algorithm::InstructionAware.map(&t, &mixes).unwrap();
        let score = crate::contention(&t, &mapping, &mixes).unwrap().total;
        assert_eq!(score, 0.0);
    }

    #[test]
    fn refinement_never_worsens_the_grouping() {
        let total = |groups: &[Vec<usize>], mixes: &[InstructionMix]| -> f64 {
            groups
                .iter()
                .flat_map(|g| {
                    g.iter()
                        .enumerate()
                        .flat_map(move |(i, &a)| g[i + 1..].iter().map(move |&b| (a, b)))
                })
                .map(|(a, b)| overlap(&mixes[a], &mixes[b]))
                .sum()
        };
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 100) as f64
        };
        for group_size in [2, 3, 4] {
            let mixes: Vec<InstructionMix> = (0..group_size * 6)
                .map(|_| InstructionMix::new(InstrClass::ALL.map(|class| (class, next()))))
                .collect();
            let sizes = vec![group_size; 6];
            let mut groups = pair_extremes(&sorted_threads(&mixes), &sizes);
            let before = total(&groups, &mixes);
            refine(&mut groups, &mixes);
            assert!(total(&groups, &mixes) <= before + 1e-9);
            let mut ids: Vec<usize> = groups.concat();
            ids.sort_unstable();
            assert_eq!(ids, (0..mixes.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn key_class_is_the_one_with_largest_spread() {
        let mixes = [
            InstructionMix::new([(InstrClass::Fp, 50.0), (InstrClass::Load, 50.0)]),
            InstructionMix::new([
                (InstrClass::Fp, 10.0),
                (InstrClass::Load, 45.0),
                (InstrClass::Int, 45.0),
            ]),
        ];
        // fp shares 0.5 vs 0.1 (spread 0.4), int 0 vs 0.45 (0.45), load 0.5 vs 0.45.
        assert_eq!(key_classes(&mixes)[0], InstrClass::Int);
    }
}
