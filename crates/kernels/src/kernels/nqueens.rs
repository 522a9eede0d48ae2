//! `nqueens`: count every placement of N non-attacking queens (INNCABS `nqueens`).
//!
//! The search places one queen per row. Down to row `cutoff`, every *valid*
//! placement of the next queen becomes its own task ([`Executor::for_each_task`]),
//! exactly the task structure of the INNCABS version, so a scheduler pays one
//! task per search node there and the `spawn` executor one OS thread per node.
//! Below the cutoff a plain sequential bitmask search counts the subtree.
//!
//! Each subtree adds its count to one shared counter once, when the task
//! that searched it sequentially finishes, so the counter sees one update per
//! cutoff-level task, not one per solution.
//!
//! The count is checked against the published solution counts (OEIS
//! A000170). That alone misses a subtree searched twice while another is never
//! searched, when both hold as many solutions — as a board and its mirror image
//! do (an executor that runs the first task twice and never the last does just
//! that with the first queen's columns 0 and N − 1). So each cutoff-level task
//! also adds a tag of its board ([`Board::tag`]) to a checksum, which must
//! equal the sum over the boards a sequential walk down to the cutoff finds
//! (computed once when the kernel is prepared, untimed; at most as long as a
//! sequential search). A lost or doubled task, even one whose subtree
//! holds no solution, is then a wrong result, not a timing.
//!
//! The count and the checksum share the one counter, so a task still makes a
//! single atomic add: the count in the low [`COUNT_BITS`] bits (N ≤ 20 has fewer
//! than 2^36 solutions), the checksum (mod 2^28) above them.

use crate::executor::{Executor, ExecutorError};
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
#[cfg(test)]
use crate::kernels::shared_atomics::AtomicsBackend;
use crate::kernels::shared_atomics::{ATOMICS_BACKEND_PARAM, SharedCounter, shared_counter};

/// Number of solutions of the N-queens problem for N = 1, 2, … (OEIS A000170).
const SOLUTION_COUNTS: [u64; 20] = [
    1,
    0,
    0,
    2,
    10,
    4,
    40,
    92,
    352,
    724,
    2_680,
    14_200,
    73_712,
    365_596,
    2_279_184,
    14_772_512,
    95_815_104,
    666_090_624,
    4_968_057_848,
    39_029_188_884,
];

/// Bits of the shared counter that hold the solution count; the checksum of the cutoff-level
/// boards' tags takes the bits above (see the module docs).
const COUNT_BITS: u32 = 36;

/// The `nqueens` kernel.
pub(crate) struct NQueens;

impl Kernel for NQueens {
    fn name(&self) -> &'static str {
        "nqueens"
    }

    fn description(&self) -> &'static str {
        "count all N-queens solutions; one task per valid placement down to the cutoff row"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "n",
                default: "10",
                help: "board size N (1..=20)",
            },
            ParamSpec {
                name: "cutoff",
                default: "4",
                help: "rows placed as separate tasks; deeper rows are searched sequentially",
            },
            ATOMICS_BACKEND_PARAM,
        ]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "7"), ("cutoff", "3")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let n = params.get_usize_in(self, "n", 1..=SOLUTION_COUNTS.len())?;
        let cutoff = params.get_usize(self, "cutoff")?;
        let total = shared_counter(self, params)?;
        let cutoff = cutoff.min(n);
        Ok(Box::new(PreparedNQueens {
            n,
            cutoff,
            total,
            frontier_tags: frontier_tags(Board::empty(n), cutoff),
        }))
    }
}

struct PreparedNQueens {
    n: usize,
    cutoff: usize,
    /// The shared solution count and checksum ([`Search`]), on the chosen atomics backend;
    /// never reset (a run's is the difference).
    total: SharedCounter,
    /// What the checksum must be: the sum of the tags of the boards at the cutoff.
    frontier_tags: u64,
}

impl PreparedKernel for PreparedNQueens {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let (counted, elapsed) = timed(exec, || {
            count_solutions_into(exec, self.n, self.cutoff, &self.total)
        })?;
        let Search { solutions, tags } = counted?;
        let expected = SOLUTION_COUNTS[self.n - 1];
        if solutions != expected {
            return Err(wrong_result(
                "nqueens",
                format!(
                    "{solutions} solutions for N = {}, expected {expected}",
                    self.n
                ),
            ));
        }
        if tags != Search::checksum(self.frontier_tags) {
            return Err(wrong_result(
                "nqueens",
                format!(
                    "the right count ({solutions}) from the wrong subtrees: a task below row {} \
                     ran twice or never",
                    self.cutoff
                ),
            ));
        }
        Ok(RunReport {
            elapsed,
            metrics: vec![Metric::new("solutions", solutions as f64, "")],
            untimed_threads_created: 0,
        })
    }
}

/// Queens placed so far, as bit masks of the attacked columns and diagonals
/// of the next row (bit `c` = column `c`).
#[derive(Clone, Copy, Debug)]
struct Board {
    /// Bits `0..n` set.
    full: u32,
    /// Rows placed so far (the next queen goes in this row).
    row: usize,
    columns: u32,
    /// Diagonals going down-left, shifted to the next row.
    down_left: u32,
    /// Diagonals going down-right, shifted to the next row.
    down_right: u32,
}

impl Board {
    fn empty(n: usize) -> Self {
        Self {
            full: if n >= 32 { u32::MAX } else { (1 << n) - 1 },
            row: 0,
            columns: 0,
            down_left: 0,
            down_right: 0,
        }
    }

    fn is_complete(&self) -> bool {
        self.columns == self.full
    }

    /// Columns where the next queen is not attacked.
    fn free_columns(&self) -> u32 {
        self.full & !(self.columns | self.down_left | self.down_right)
    }

    /// The board after placing the next queen on column bit `bit`.
    fn place(&self, bit: u32) -> Self {
        Self {
            full: self.full,
            row: self.row + 1,
            columns: self.columns | bit,
            down_left: ((self.down_left | bit) << 1) & self.full,
            down_right: (self.down_right | bit) >> 1,
        }
    }

    /// A hash of the placement (its attacked columns and diagonals), summed by the checksum of
    /// the cutoff-level boards: the top bits of the placement's product with an odd constant
    /// (Fibonacci hashing), which depend on every bit of it, so a board and its mirror image get
    /// different tags. Only the bits the checksum keeps are returned. One multiply: a task
    /// computes it inside the timed section (SplitMix64's finaliser there cost nqueens 2 %).
    fn tag(&self) -> u64 {
        // N ≤ 20: the three masks do not overlap; the top bit keeps the empty board's tag from 0.
        let placement = u64::from(self.columns)
            | u64::from(self.down_left) << 20
            | u64::from(self.down_right) << 40
            | 1 << 63;
        placement.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> COUNT_BITS
    }

    /// Every valid placement of the next queen.
    fn children(&self) -> Vec<Board> {
        let mut free = self.free_columns();
        let mut children = Vec::with_capacity(free.count_ones() as usize);
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            children.push(self.place(bit));
        }
        children
    }
}

/// Solutions below `board`, searched on the calling thread.
fn count_sequential(board: Board) -> u64 {
    if board.is_complete() {
        return 1;
    }
    let mut free = board.free_columns();
    let mut count = 0;
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        count += count_sequential(board.place(bit));
    }
    count
}

/// Sum (wrapping) of the tags of the boards the search hands to [`count_sequential`] with
/// `cutoff`: those in row `cutoff`, and complete ones above it. Found by walking the valid
/// placements down to the cutoff on the calling thread.
fn frontier_tags(board: Board, cutoff: usize) -> u64 {
    if board.row >= cutoff || board.is_complete() {
        return board.tag();
    }
    board.children().into_iter().fold(0, |sum, child| {
        sum.wrapping_add(frontier_tags(child, cutoff))
    })
}

/// What one search added to the shared counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Search {
    /// Solutions counted.
    solutions: u64,
    /// Checksum of the tags of the cutoff-level boards searched, mod 2^(64 − [`COUNT_BITS`]).
    tags: u64,
}

impl Search {
    /// What a cutoff-level task adds to the shared counter: its `solutions` and `tag`.
    fn packed(solutions: u64, tag: u64) -> u64 {
        solutions.wrapping_add(tag << COUNT_BITS)
    }

    /// The counter's increase over a search, split into count and checksum.
    fn unpack(added: u64) -> Self {
        Search {
            solutions: added & ((1 << COUNT_BITS) - 1),
            tags: added >> COUNT_BITS,
        }
    }

    /// A sum of tags as [`Search::tags`] holds it.
    fn checksum(tags: u64) -> u64 {
        (tags << COUNT_BITS) >> COUNT_BITS
    }
}

/// Number of solutions for an `n × n` board, with one task per valid
/// placement in rows `0..cutoff`.
#[cfg(test)]
fn count_solutions(exec: &dyn Executor, n: usize, cutoff: usize) -> Result<u64, ExecutorError> {
    let total = SharedCounter::new(AtomicsBackend::Std)
        .map_err(|error| ExecutorError::Spawn(std::io::Error::other(error.to_string())))?;
    Ok(count_solutions_into(exec, n, cutoff, &total)?.solutions)
}

/// Solutions for an `n × n` board, with one task per valid placement in rows `0..cutoff`, added
/// into `total`; returns what this search added.
fn count_solutions_into(
    exec: &dyn Executor,
    n: usize,
    cutoff: usize,
    total: &SharedCounter,
) -> Result<Search, ExecutorError> {
    let before = total.load();
    count_below(exec, Board::empty(n), cutoff, total)?;
    Ok(Search::unpack(total.load().wrapping_sub(before)))
}

fn count_below(
    exec: &dyn Executor,
    board: Board,
    cutoff: usize,
    total: &SharedCounter,
) -> Result<(), ExecutorError> {
    if board.row >= cutoff || board.is_complete() {
        total.add(Search::packed(count_sequential(board), board.tag()));
        return Ok(());
    }
    let children = board.children();
    exec.for_each_task(children.len(), &|index| {
        count_below(exec, children[index], cutoff, total)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::SeqExecutor;

    #[test]
    fn sequential_search_matches_the_published_counts() {
        for (index, &expected) in SOLUTION_COUNTS.iter().take(10).enumerate() {
            assert_eq!(
                count_sequential(Board::empty(index + 1)),
                expected,
                "N = {}",
                index + 1
            );
        }
    }

    #[test]
    fn every_cutoff_gives_the_same_count() {
        for cutoff in 0..=8 {
            assert_eq!(count_solutions(&SeqExecutor::new(), 8, cutoff).unwrap(), 92);
        }
    }

    #[test]
    fn a_search_adds_the_tags_of_the_boards_at_its_cutoff() {
        for (n, cutoff) in [(1, 0), (4, 2), (8, 0), (8, 3), (8, 8), (10, 4), (20, 2)] {
            let total = SharedCounter::new(AtomicsBackend::Std).unwrap();
            // A count whose search would be too long for a test is left out: the tags are the
            // point here.
            if n <= 10 {
                let search = count_solutions_into(&SeqExecutor::new(), n, cutoff, &total).unwrap();
                assert_eq!(search.solutions, SOLUTION_COUNTS[n - 1], "N = {n}");
                let expected = Search::checksum(frontier_tags(Board::empty(n), cutoff));
                assert_eq!(search.tags, expected, "N = {n}, cutoff {cutoff}");
            }
            // Boards in the row below the cutoff are not in the checksum.
            let deeper = frontier_tags(Board::empty(n), cutoff + 1);
            if n > cutoff + 1 {
                assert_ne!(frontier_tags(Board::empty(n), cutoff), deeper, "N = {n}");
            }
        }
    }

    #[test]
    fn a_board_and_its_mirror_image_have_different_tags() {
        let board = Board::empty(8);
        assert_ne!(board.place(1).tag(), board.place(1 << 7).tag());
        let second = |first: u32, second: u32| board.place(first).place(second).tag();
        assert_ne!(second(1, 1 << 2), second(1 << 7, 1 << 5));
    }

    #[test]
    fn the_count_and_the_checksum_share_the_counter_without_mixing() {
        let (solutions, tag) = (SOLUTION_COUNTS[19], u64::MAX);
        let added = Search::packed(solutions, tag).wrapping_add(Search::packed(5, 3));
        assert_eq!(
            Search::unpack(added),
            Search {
                solutions: solutions + 5,
                tags: Search::checksum(tag.wrapping_add(3)),
            }
        );
        assert!(SOLUTION_COUNTS.iter().all(|&count| count < 1 << COUNT_BITS));
    }

    #[test]
    fn children_are_exactly_the_valid_placements() {
        let board = Board::empty(4).place(1 << 1);
        let columns: Vec<u32> = board
            .children()
            .iter()
            .map(|c| c.columns & !board.columns)
            .collect();
        // A queen on column 1 of row 0 attacks columns 0, 1 and 2 of row 1.
        assert_eq!(columns, vec![1 << 3]);
    }

    #[test]
    fn out_of_range_n_is_a_bad_param() {
        for n in ["0", "21", "x"] {
            let params = Params::new().with("n", n);
            assert!(matches!(
                NQueens.prepare(&params, 1),
                Err(KernelError::BadParam { .. })
            ));
        }
    }
}
