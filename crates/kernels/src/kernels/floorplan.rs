//! `floorplan`: the BOTS floorplan search (also in INNCABS).
//!
//! Cells are placed one after another in the input's `next` order on a
//! 64 × 64 board; each cell has alternative shapes, and each shape a set of
//! candidate north-west corners derived from the cells to its left and above
//! ([`candidate_corners`], the BOTS rules verbatim). A placement fails if it
//! overlaps a placed cell or leaves the board. The footprint is the bounding
//! box of everything placed from the origin; the search minimises its area and
//! stops extending a partial floorplan as soon as its area is no longer below
//! the best complete one (the pruning rule of BOTS, including its initial bound
//! of 64 · 64, so a floorplan filling the whole board is never recorded).
//!
//! Down to level `cutoff` (cells placed), every (shape, corner) candidate is
//! its own task, like BOTS's `#pragma omp task` per candidate; deeper levels
//! run sequentially. Tasks share the best area in an `AtomicU64` for pruning;
//! the floorplan behind it is kept under a mutex taken only on improvements.
//!
//! The board is a bit set (one `u64` per row), so copying it is 512 bytes and
//! an overlap test is one AND per row. Like BOTS, the search copies the board
//! for every candidate and, below the cutoff, shares one array of cell
//! positions written in place ([`place_sequential`]); it allocates nothing
//! there. A task copies the positions (a `Vec`, where BOTS copies its `cells`
//! array onto the stack), and a task-spawning node lists its candidates.
//! (Until 26 Nov 2026 every node cloned a `Vec` and collected its candidates
//! into `Vec`s: the kernel was 3.7× slower and spent about half its time in
//! `malloc`, `free` and `memmove`.)
//!
//! Validation: `prepare` solves the input once sequentially (untimed); every
//! run must find the same minimal area, and the floorplan it reports is
//! re-checked (every cell inside the board, no overlaps, area = footprint).
//! The area survives a lost or doubled task, so every task call is also
//! checked to run each of its tasks once ([`CheckedTasks`]).
//!
//! Each run also reports `nodes`: how many placements fitted the board (the
//! partial and complete floorplans the search built). The search is a
//! branch-and-bound, so this is its amount of work, and it is not fixed: it
//! depends on how soon some task finds a good floorplan whose area prunes the
//! others, i.e. on the order in which the scheduler runs the tasks. A scheduler
//! can be faster on floorplan by searching less, not only by costing less; the
//! metric tells the two apart (the sequential order's count is in `prepare`'s
//! search, which one thread runs in the order of the candidates).

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::executor::{Executor, ExecutorError, SeqExecutor};
use crate::input::floorplan::{BOARD_SIDE, FloorplanInput, Shape};
use crate::input::integer_tokens::read_input_file;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::checked_tasks::CheckedTasks;
use crate::kernels::shared_atomics::{ATOMICS_BACKEND_PARAM, SharedWord, shared_word};
use crate::kernels::shared_minimum::SharedMinimum;

/// The input used when `--input` is not given (generated, 10 cells).
const BUNDLED_INPUT: &str = include_str!("../../data/floorplan-10.txt");
/// Name shown for the bundled input in messages.
const BUNDLED_NAME: &str = "data/floorplan-10.txt";

/// BOTS starts with the whole board as the best area.
const INITIAL_BEST_AREA: u64 = (BOARD_SIDE * BOARD_SIDE) as u64;

/// The `floorplan` kernel.
pub(crate) struct Floorplan;

impl Kernel for Floorplan {
    fn name(&self) -> &'static str {
        "floorplan"
    }

    fn description(&self) -> &'static str {
        "BOTS floorplan: minimal bounding area of cells with alternative shapes, one task per candidate"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[
            ParamSpec {
                name: "input",
                default: "",
                help: "BOTS floorplan input file (default: the bundled data/floorplan-10.txt)",
            },
            ParamSpec {
                name: "cutoff",
                default: "4",
                help: "cells whose candidates are separate tasks; later cells are placed sequentially",
            },
            ATOMICS_BACKEND_PARAM,
        ]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("cutoff", "2")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let cutoff = params.get_usize(self, "cutoff")?;
        let bound = shared_word(self, params, INITIAL_BEST_AREA)?;
        let input = match params.get_path(self, "input")? {
            Some(path) => read_input_file(&path, FloorplanInput::parse)?,
            None => FloorplanInput::parse(Path::new(BUNDLED_NAME), BUNDLED_INPUT.as_bytes())?,
        };
        let reference_plan = solve(&SeqExecutor::new(), &input, 0)?;
        if let Some(plan) = &reference_plan {
            check_plan(&input, plan)?;
        }
        let reference = reference_plan.map(|plan| plan.area);
        if let Some(expected) = input.expected_area() {
            report_expected_area(reference, expected);
        }
        Ok(Box::new(PreparedFloorplan {
            bound,
            input,
            cutoff,
            reference,
        }))
    }
}

/// The file's area is informational: say loudly when ours differs.
fn report_expected_area(found: Option<u64>, expected: u64) {
    match found {
        Some(found) if found == expected => {
            eprintln!("floorplan: minimal area {found} matches the area given in the input file");
        }
        Some(found) => eprintln!(
            "floorplan: WARNING: MISMATCH: the minimal area found is {found}, the input file says {expected}"
        ),
        None => eprintln!(
            "floorplan: WARNING: MISMATCH: no floorplan exists, the input file says the minimal area is {expected}"
        ),
    }
}

struct PreparedFloorplan {
    /// The shared best area, on the chosen atomics backend.
    bound: SharedWord,
    input: FloorplanInput,
    cutoff: usize,
    /// Minimal area found by the sequential search, `None` if no floorplan fits.
    reference: Option<u64>,
}

impl PreparedKernel for PreparedFloorplan {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let checked = CheckedTasks::new(exec);
        let (solved, elapsed) = timed(exec, || {
            solve_with(&checked, &self.input, self.cutoff, &mut self.bound)
        })?;
        let (plan, nodes) = solved?;
        if checked.wrong_calls() != 0 {
            return Err(wrong_result(
                "floorplan",
                format!(
                    "{} task calls ran a task twice or never (the minimal area cannot show it)",
                    checked.wrong_calls()
                ),
            ));
        }
        let area = plan.as_ref().map(|plan| plan.area);
        if area != self.reference {
            return Err(wrong_result(
                "floorplan",
                format!(
                    "minimal area {area:?}, the sequential search found {:?}",
                    self.reference
                ),
            ));
        }
        let mut metrics = Vec::new();
        if let Some(plan) = plan {
            check_plan(&self.input, &plan)?;
            metrics.push(Metric::new("min-area", plan.area as f64, ""));
        }
        metrics.push(Metric::new("nodes", nodes as f64, ""));
        Ok(RunReport {
            elapsed,
            metrics,
            untimed_threads_created: 0,
        })
    }
}

/// A placed cell: rows `top..=bot`, columns `lhs..=rhs` (signed: the sentinel
/// sits at columns `-1..=-1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rect {
    top: i64,
    bot: i64,
    lhs: i64,
    rhs: i64,
}

impl Rect {
    /// `shape` with its north-west corner at `(top, lhs)`.
    fn at(shape: Shape, top: i64, lhs: i64) -> Self {
        Self {
            top,
            bot: top + i64::from(shape.rows) - 1,
            lhs,
            rhs: lhs + i64::from(shape.cols) - 1,
        }
    }
}

/// Where BOTS puts the sentinel cell 0: the origin, zero columns wide.
const SENTINEL: Rect = Rect {
    top: 0,
    bot: 0,
    lhs: -1,
    rhs: -1,
};

/// Candidate north-west corners: every `(top, lhs)` with `top` in `tops` and
/// `lhs` in `lhss`. One of the two ranges holds at most one value, so the
/// corners run along one row or one column; BOTS's `starts` writes them into
/// an array on the stack, and this needs no storage at all.
#[derive(Clone, Debug)]
struct Corners {
    tops: Range<i64>,
    lhss: Range<i64>,
}

impl Corners {
    const NONE: Self = Self {
        tops: 0..0,
        lhss: 0..0,
    };

    /// The corners in BOTS's order (top to bottom, then left to right).
    fn iter(&self) -> impl Iterator<Item = (i64, i64)> + use<> {
        let lhss = self.lhss.clone();
        self.tops
            .clone()
            .flat_map(move |top| lhss.clone().map(move |lhs| (top, lhs)))
    }
}

/// The candidate north-west corners for `shape` of a cell whose left / above
/// neighbours are placed at `left` / `above` (BOTS `starts`).
fn candidate_corners(shape: Shape, left: Option<Rect>, above: Option<Rect>) -> Corners {
    let (rows, cols) = (i64::from(shape.rows), i64::from(shape.cols));
    let side = BOARD_SIDE as i64;
    match (left, above) {
        (Some(left), Some(above)) => {
            let (top, lhs) = (above.bot + 1, left.rhs + 1);
            let touches = top <= left.bot
                && top + rows >= left.top
                && lhs <= above.rhs
                && lhs + cols >= above.lhs;
            if touches {
                Corners {
                    tops: top..top + 1,
                    lhss: lhs..lhs + 1,
                }
            } else {
                Corners::NONE
            }
        }
        (Some(left), None) => Corners {
            tops: (left.top - rows + 1).max(0)..left.bot.min(side) + 1,
            lhss: left.rhs + 1..left.rhs + 2,
        },
        (None, Some(above)) => Corners {
            tops: above.bot + 1..above.bot + 2,
            lhss: (above.lhs - cols + 1).max(0)..above.rhs.min(side) + 1,
        },
        // The reader rejects cells without neighbours; BOTS has no rule for them.
        (None, None) => Corners::NONE,
    }
}

/// Which squares are taken, and the footprint `(rows, cols)` from the origin.
/// It is `Copy` (576 bytes): each candidate gets its own board, as BOTS
/// copies its board for every candidate (`memcpy(board, BOARD, …)`).
///
/// Aligned to a cache line: unaligned, a copy's place on the stack decided
/// how its rows fell on cache lines, and that place moved with the build and
/// even with the size of the environment, so floorplan's times moved by up to
/// 17 % under every scheduler between binaries of the same code (28 Nov 2026:
/// seq 884–907 µs unaligned, 755–768 µs aligned, whatever the environment).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Board {
    /// Bit `c` of `rows[r]`: square `(r, c)` is taken.
    rows: [u64; BOARD_SIDE],
    footprint: (i64, i64),
}

impl Board {
    const EMPTY: Self = Self {
        rows: [0; BOARD_SIDE],
        footprint: (0, 0),
    };

    fn area(&self) -> u64 {
        (self.footprint.0 * self.footprint.1) as u64
    }

    /// Whether `rect` stays on the board and overlaps no taken square (BOTS
    /// `lay_down`'s test, plus the board-edge check BOTS left to luck).
    fn fits(&self, rect: Rect) -> bool {
        let side = BOARD_SIDE as i64;
        rect.top >= 0
            && rect.lhs >= 0
            && rect.bot < side
            && rect.rhs < side
            && self.rows[rect.top as usize..=rect.bot as usize]
                .iter()
                .all(|row| row & Self::mask(rect) == 0)
    }

    /// Takes `rect`'s squares, which must [fit](Self::fits), and grows the
    /// footprint to cover it.
    fn take(&mut self, rect: Rect) {
        let mask = Self::mask(rect);
        self.rows[rect.top as usize..=rect.bot as usize]
            .iter_mut()
            .for_each(|row| *row |= mask);
        self.footprint = (
            self.footprint.0.max(rect.bot + 1),
            self.footprint.1.max(rect.rhs + 1),
        );
    }

    /// The bits of `rect`'s columns (which lie on the board).
    fn mask(rect: Rect) -> u64 {
        let width = (rect.rhs - rect.lhs + 1) as u32;
        (u64::MAX >> (64 - width)) << rect.lhs
    }

    /// A copy of this board with `rect` taken, or `None` if it does not fit.
    fn with(&self, rect: Rect) -> Option<Self> {
        self.fits(rect).then(|| {
            let mut board = *self;
            board.take(rect);
            board
        })
    }
}

/// A partial floorplan owned by one task: where each placed cell is
/// (`placed[id]`, index 0 the sentinel) and its board.
#[derive(Clone, Debug)]
struct Layout {
    placed: Vec<Option<Rect>>,
    board: Board,
}

impl Layout {
    fn empty(cells: usize) -> Self {
        let mut placed = vec![None; cells + 1];
        placed[0] = Some(SENTINEL);
        Self {
            placed,
            board: Board::EMPTY,
        }
    }
}

/// A complete floorplan and its area.
#[derive(Clone, Debug)]
struct Plan {
    area: u64,
    placed: Vec<Option<Rect>>,
}

/// The best complete floorplan so far (the placed cells), shared by all tasks.
type BestPlan<'w> = SharedMinimum<'w, Vec<Option<Rect>>>;

/// Where cell `id`'s left and above neighbours are placed.
fn neighbours(input: &FloorplanInput, placed: &[Option<Rect>], id: usize) -> [Option<Rect>; 2] {
    let cell = input.cell(id);
    [cell.left, cell.above].map(|neighbour| neighbour.and_then(|n| placed[n]))
}

/// Every (shape, corner) candidate for cell `id` given the cells placed so
/// far, as the cell's rectangle (one list per task-spawning node).
fn candidates(input: &FloorplanInput, placed: &[Option<Rect>], id: usize) -> Vec<Rect> {
    let [left, above] = neighbours(input, placed, id);
    input
        .cell(id)
        .shapes
        .iter()
        .flat_map(|&shape| {
            candidate_corners(shape, left, above)
                .iter()
                .map(move |(top, lhs)| Rect::at(shape, top, lhs))
        })
        .collect()
}

/// Places the cell at position `level` of the order at `rect` on a copy of
/// `layout` (BOTS's task body, which copies the cells and the board): `None`
/// if the candidate does not fit; otherwise a complete floorplan is offered as
/// the new best (`Some(None)`), and a partial one is returned for the next
/// cell only while its area is below the best (`Some(Some(…))`, else
/// `Some(None)`).
fn extend(
    input: &FloorplanInput,
    layout: &Layout,
    level: usize,
    rect: Rect,
    best: &BestPlan<'_>,
) -> Option<Option<Layout>> {
    let order = input.placement_order();
    let board = layout.board.with(rect)?;
    let mut placed = layout.placed.clone();
    placed[order[level]] = Some(rect);
    if level + 1 == order.len() {
        best.offer(board.area(), || placed);
        Some(None)
    } else {
        Some((board.area() < best.bound()).then_some(Layout { placed, board }))
    }
}

/// The minimal-area floorplan of `input` (`None` if no floorplan has an area
/// below 64 · 64), with one task per candidate for the first `cutoff` cells.
fn solve(
    exec: &dyn Executor,
    input: &FloorplanInput,
    cutoff: usize,
) -> Result<Option<Plan>, ExecutorError> {
    let mut bound = SharedWord::Std(AtomicU64::new(INITIAL_BEST_AREA));
    Ok(solve_with(exec, input, cutoff, &mut bound)?.0)
}

/// [`solve`] with the best area kept in `bound` (the kernel's `--backend`); also returns how
/// many placements fitted the board (the search's nodes).
fn solve_with(
    exec: &dyn Executor,
    input: &FloorplanInput,
    cutoff: usize,
    bound: &mut SharedWord,
) -> Result<(Option<Plan>, u64), ExecutorError> {
    let best = BestPlan::new(bound, INITIAL_BEST_AREA);
    let nodes = AtomicU64::new(0);
    place_tasks(
        exec,
        input,
        Layout::empty(input.cell_count()),
        0,
        cutoff,
        &best,
        &nodes,
    )?;
    let plan = best.into_best().map(|(area, placed)| Plan { area, placed });
    Ok((plan, nodes.into_inner()))
}

/// Tries every candidate for the cell at position `level` of the order, one
/// task each, and goes on to the next cell (BOTS `add_cell`). Adds the
/// placements that fitted to `nodes`.
fn place_tasks(
    exec: &dyn Executor,
    input: &FloorplanInput,
    mut layout: Layout,
    level: usize,
    cutoff: usize,
    best: &BestPlan<'_>,
    nodes: &AtomicU64,
) -> Result<(), ExecutorError> {
    if level >= cutoff {
        let searched = place_sequential(input, &mut layout.placed, &layout.board, level, best);
        // Relaxed: a count read after the search, which every task has finished by then.
        nodes.fetch_add(searched, Ordering::Relaxed);
        return Ok(());
    }
    let candidates = candidates(input, &layout.placed, input.placement_order()[level]);
    exec.for_each_task(candidates.len(), &|index| {
        let Some(extended) = extend(input, &layout, level, candidates[index], best) else {
            return Ok(());
        };
        // Relaxed: as above.
        nodes.fetch_add(1, Ordering::Relaxed);
        if let Some(child) = extended {
            place_tasks(exec, input, child, level + 1, cutoff, best, nodes)?;
        }
        Ok(())
    })
}

/// The search below the cutoff (BOTS `add_cell_ser`), allocating nothing but
/// a new best floorplan's copy: like BOTS, one `placed` array serves the whole
/// recursion and is written in place (a cell's entry is overwritten for each
/// of its candidates and read only by cells placed after it), and each
/// candidate gets its own copy of the board. Returns how many placements
/// fitted (the nodes it searched).
fn place_sequential(
    input: &FloorplanInput,
    placed: &mut [Option<Rect>],
    board: &Board,
    level: usize,
    best: &BestPlan<'_>,
) -> u64 {
    let order = input.placement_order();
    let id = order[level];
    let [left, above] = neighbours(input, placed, id);
    let mut nodes = 0;
    for &shape in &input.cell(id).shapes {
        for (top, lhs) in candidate_corners(shape, left, above).iter() {
            let rect = Rect::at(shape, top, lhs);
            if !board.fits(rect) {
                continue;
            }
            nodes += 1;
            // The one copy of the board per candidate.
            let mut child = *board;
            child.take(rect);
            placed[id] = Some(rect);
            if level + 1 == order.len() {
                best.offer(child.area(), || placed.to_vec());
            } else if child.area() < best.bound() {
                nodes += place_sequential(input, placed, &child, level + 1, best);
            }
        }
    }
    nodes
}

/// Re-checks a reported floorplan from scratch: every cell of the order is
/// placed in one of its shapes, inside the board, without overlaps, and the
/// footprint of the placed cells has the reported area.
fn check_plan(input: &FloorplanInput, plan: &Plan) -> Result<(), KernelError> {
    let mut board = Board::EMPTY;
    for &id in input.placement_order() {
        let rect = plan.placed[id]
            .ok_or_else(|| wrong_result("floorplan", format!("cell {id} is not placed")))?;
        let shape = Shape {
            rows: (rect.bot - rect.top + 1) as u32,
            cols: (rect.rhs - rect.lhs + 1) as u32,
        };
        if !input.cell(id).shapes.contains(&shape) {
            return Err(wrong_result(
                "floorplan",
                format!("cell {id} has no {shape:?} shape"),
            ));
        }
        board = board.with(rect).ok_or_else(|| {
            wrong_result(
                "floorplan",
                format!("cell {id} at {rect:?} overlaps or leaves the board"),
            )
        })?;
    }
    if board.area() != plan.area {
        return Err(wrong_result(
            "floorplan",
            format!(
                "the reported floorplan covers area {}, not the reported {}",
                board.area(),
                plan.area
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minimal area by visiting every complete floorplan, no pruning: a
    /// fresh bound per candidate (the initial one) lets `extend` go
    /// everywhere, and every complete floorplan's area is collected. Also
    /// returns the placements that fitted (the nodes of the unpruned search).
    fn exhaustive_search(input: &FloorplanInput) -> (Option<u64>, u64) {
        fn visit(
            input: &FloorplanInput,
            layout: &Layout,
            level: usize,
            areas: &mut Vec<u64>,
        ) -> u64 {
            let id = input.placement_order()[level];
            let mut nodes = 0;
            for rect in candidates(input, &layout.placed, id) {
                let mut word = SharedWord::Std(AtomicU64::new(0));
                let never_prunes = BestPlan::new(&mut word, INITIAL_BEST_AREA);
                match extend(input, layout, level, rect, &never_prunes) {
                    None => continue,
                    Some(Some(child)) => nodes += visit(input, &child, level + 1, areas),
                    Some(None) => areas.extend(never_prunes.into_best().map(|(area, _)| area)),
                }
                nodes += 1;
            }
            nodes
        }
        let mut areas = Vec::new();
        let nodes = visit(input, &Layout::empty(input.cell_count()), 0, &mut areas);
        (areas.into_iter().min(), nodes)
    }

    fn exhaustive_min_area(input: &FloorplanInput) -> Option<u64> {
        exhaustive_search(input).0
    }

    /// The search's nodes with the initial bound, as a run counts them.
    fn nodes(input: &FloorplanInput, cutoff: usize) -> u64 {
        let mut bound = SharedWord::Std(AtomicU64::new(INITIAL_BEST_AREA));
        solve_with(&SeqExecutor::new(), input, cutoff, &mut bound)
            .unwrap()
            .1
    }

    /// On one thread the tasks run in the candidates' order, so the search
    /// visits the same nodes whether its top levels are tasks or all of it is
    /// sequential; pruning visits fewer nodes than the exhaustive search (on
    /// an input where it can prune), never more.
    #[test]
    fn nodes_are_the_same_with_and_without_tasks_and_pruning_visits_fewer() {
        let mut pruned_somewhere = false;
        for seed in 0..40 {
            let input = FloorplanInput::generate(1 + (seed as usize % 6), seed);
            let sequential = nodes(&input, 0);
            for cutoff in [2, 6] {
                assert_eq!(
                    nodes(&input, cutoff),
                    sequential,
                    "seed {seed}, cutoff {cutoff}"
                );
            }
            let (_, exhaustive) = exhaustive_search(&input);
            assert!(
                sequential <= exhaustive,
                "seed {seed}: {sequential} > {exhaustive}"
            );
            assert!(sequential > 0 || exhaustive == 0, "seed {seed}");
            pruned_somewhere |= sequential < exhaustive;
        }
        assert!(pruned_somewhere, "no input let the search prune");
    }

    fn shape(rows: u32, cols: u32) -> Shape {
        Shape { rows, cols }
    }

    #[test]
    fn left_neighbour_gives_one_column_and_a_range_of_rows() {
        let left = Rect {
            top: 3,
            bot: 5,
            lhs: 0,
            rhs: 1,
        };
        let corners: Vec<_> = candidate_corners(shape(2, 1), Some(left), None)
            .iter()
            .collect();
        // Rows max(3 - 2 + 1, 0) = 2 through 5, column 2.
        assert_eq!(corners, vec![(2, 2), (3, 2), (4, 2), (5, 2)]);
    }

    #[test]
    fn above_neighbour_gives_one_row_and_a_range_of_columns() {
        let above = Rect {
            top: 0,
            bot: 1,
            lhs: 1,
            rhs: 2,
        };
        let corners: Vec<_> = candidate_corners(shape(1, 3), None, Some(above))
            .iter()
            .collect();
        // Row 2, columns max(1 - 3 + 1, 0) = 0 through 2.
        assert_eq!(corners, vec![(2, 0), (2, 1), (2, 2)]);
    }

    #[test]
    fn both_neighbours_give_at_most_the_touching_corner() {
        let left = Rect {
            top: 0,
            bot: 3,
            lhs: 0,
            rhs: 0,
        };
        let above = Rect {
            top: 0,
            bot: 0,
            lhs: 1,
            rhs: 4,
        };
        let corners = |left| {
            candidate_corners(shape(2, 2), Some(left), Some(above))
                .iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(corners(left), vec![(1, 1)]);
        // A left neighbour ending above the corner row does not touch.
        let short_left = Rect {
            top: 0,
            bot: 0,
            lhs: 0,
            rhs: 0,
        };
        assert!(corners(short_left).is_empty());
    }

    #[test]
    fn the_sentinel_as_left_neighbour_puts_a_cell_at_the_origin() {
        let corners: Vec<_> = candidate_corners(shape(3, 2), Some(SENTINEL), None)
            .iter()
            .collect();
        assert_eq!(corners, vec![(0, 0)]);
    }

    /// Every copy of a board starts on a cache line (see [`Board`]).
    #[test]
    fn a_board_is_cache_line_aligned() {
        assert_eq!(std::mem::align_of::<Board>(), 64);
        assert_eq!(std::mem::size_of::<Board>() % 64, 0);
    }

    #[test]
    fn a_board_rejects_overlaps_and_its_edge_and_keeps_the_footprint() {
        let rect = |top, bot, lhs, rhs| Rect { top, bot, lhs, rhs };
        let board = Board::EMPTY.with(rect(0, 1, 0, 63)).unwrap();
        assert!(board.with(rect(1, 2, 5, 5)).is_none());
        assert!(board.with(rect(60, 64, 0, 0)).is_none());
        assert!(board.with(rect(2, 2, -1, 0)).is_none());
        let board = board.with(rect(2, 2, 0, 0)).unwrap();
        assert_eq!(board.footprint, (3, 64));
        assert_eq!(board.area(), 3 * 64);
    }

    #[test]
    fn pruned_parallel_search_matches_exhaustive_search() {
        for seed in 0..40 {
            let input = FloorplanInput::generate(1 + (seed as usize % 6), seed);
            let expected = exhaustive_min_area(&input);
            for cutoff in [0, 2, 6] {
                let plan = solve(&SeqExecutor::new(), &input, cutoff).unwrap();
                assert_eq!(
                    plan.as_ref().map(|p| p.area),
                    expected,
                    "seed {seed}, cutoff {cutoff}"
                );
                if let Some(plan) = plan {
                    check_plan(&input, &plan).unwrap();
                }
            }
        }
    }

    #[test]
    fn bundled_input_has_a_floorplan() {
        let input =
            FloorplanInput::parse(Path::new(BUNDLED_NAME), BUNDLED_INPUT.as_bytes()).unwrap();
        assert!(solve(&SeqExecutor::new(), &input, 0).unwrap().is_some());
    }

    #[test]
    fn exhaustive_search_confirms_the_area_written_in_the_small_bundled_input() {
        let text = include_str!("../../data/floorplan-5.txt");
        let input = FloorplanInput::parse(Path::new("floorplan-5.txt"), text.as_bytes()).unwrap();
        assert_eq!(exhaustive_min_area(&input), input.expected_area());
    }

    #[test]
    fn a_forged_plan_is_rejected() {
        let input = FloorplanInput::parse(Path::new("t"), b"2\n1\n1 2\n0 -1\n2\n1\n1 1\n1 -1\n0\n")
            .unwrap();
        let plan = solve(&SeqExecutor::new(), &input, 0).unwrap().unwrap();
        assert_eq!(plan.area, 3);
        let mut forged = plan.clone();
        forged.area = 2;
        assert!(check_plan(&input, &forged).is_err());
        let mut overlapping = plan;
        overlapping.placed[2] = Some(Rect {
            top: 0,
            bot: 0,
            lhs: 1,
            rhs: 1,
        });
        assert!(check_plan(&input, &overlapping).is_err());
    }
}
