//! Orders of PUs for the mix-oblivious algorithms; a mapping takes the first `threads` of them.

use crate::topology::Topology;

/// All PUs sorted by OS index (`RoundRobin`).
pub(super) fn os_order(topology: &Topology) -> Vec<usize> {
    let mut order: Vec<usize> = (0..topology.pus().len()).collect();
    order.sort_by_key(|&pu| topology.pus()[pu].os_index);
    order
}

/// All PUs in logical order: siblings, then the next core, then the next package (`Compact`).
pub(super) fn logical_order(topology: &Topology) -> Vec<usize> {
    (0..topology.pus().len()).collect()
}

/// Takes the first element of every list, then the second of every list, and so on (lists
/// run out independently).
fn interleave(lists: &[&[usize]]) -> Vec<usize> {
    let longest = lists.iter().map(|list| list.len()).max().unwrap_or(0);
    (0..longest)
        .flat_map(|position| {
            lists
                .iter()
                .filter_map(move |list| list.get(position).copied())
        })
        .collect()
}

/// Cores ordered so consecutive cores sit on different packages: the first core of every
/// package, then the second of every package, and so on.
pub(super) fn cores_alternating_packages(topology: &Topology) -> Vec<usize> {
    let per_package: Vec<&[usize]> = topology
        .packages()
        .iter()
        .map(|p| p.cores.as_slice())
        .collect();
    interleave(&per_package)
}

/// First PU of every core (packages alternating), then every core's second PU, … (`Scatter`).
pub(super) fn scatter_order(topology: &Topology) -> Vec<usize> {
    let per_core: Vec<&[usize]> = cores_alternating_packages(topology)
        .into_iter()
        .map(|core| topology.cores()[core].pus.as_slice())
        .collect();
    interleave(&per_core)
}

/// A seeded uniform shuffle of all PUs (`Random`).
pub(super) fn random_order(topology: &Topology, seed: u64) -> Vec<usize> {
    let mut generator = SplitMix64(seed);
    let mut order: Vec<usize> = (0..topology.pus().len()).collect();
    // Fisher–Yates; the modulo bias is below 2^-40 for any realistic PU count.
    for last in (1..order.len()).rev() {
        let pick = (generator.next() % (last as u64 + 1)) as usize;
        order.swap(last, pick);
    }
    order
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-mixed generator so random placements are
/// reproducible from a seed without a dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
