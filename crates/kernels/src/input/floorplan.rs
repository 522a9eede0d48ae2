//! BOTS / INNCABS floorplan inputs.
//!
//! The file holds the number of cells `N`, then for each cell `1..=N`: the
//! number of alternative shapes `n`, `n` lines `rows cols`, a line
//! `left above` (the cell to its left / above: −1 none, 0 the sentinel origin
//! cell) and a line `next` (the next cell to place, 0 = this is the last).
//! Placement starts at cell 1 and follows `next`. An optional final integer is
//! the expected minimal area, kept for reporting only (never used to prune).
//!
//! Besides the syntax, the reader checks what the BOTS program silently
//! assumed (and read uninitialised memory when violated): the `next` chain
//! from cell 1 visits no cell twice, and a cell's left / above neighbour is
//! the sentinel or a cell placed *before* it. A cell with neither neighbour
//! has no candidate corner in BOTS (it indexes cell −1), so it is rejected
//! too. Cells not on the chain are read but never placed, as in BOTS.

use std::path::Path;

use super::InputError;
use super::integer_tokens::IntegerTokens;
use crate::kernels::rng::SplitMix64;

/// The board is `BOARD_SIDE × BOARD_SIDE` (64 × 64 in BOTS).
pub const BOARD_SIDE: usize = 64;
/// Most cells an input may have (the board has room for 4096 unit cells).
pub const MAX_CELLS: usize = BOARD_SIDE * BOARD_SIDE;
/// Most alternative shapes per cell.
pub const MAX_SHAPES: usize = 64;

/// One alternative shape of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Height, `1..=64`.
    pub rows: u32,
    /// Width, `1..=64`.
    pub cols: u32,
}

/// One cell to place (cell 0, the sentinel, is implicit and has no shapes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloorplanCell {
    /// The alternative shapes (at least one).
    pub shapes: Vec<Shape>,
    /// Cell to the left: `None` for none, `Some(0)` for the sentinel.
    pub left: Option<usize>,
    /// Cell above: `None` for none, `Some(0)` for the sentinel.
    pub above: Option<usize>,
    /// Next cell to place; 0 means this cell is the last.
    pub next: usize,
}

/// A floorplan problem: the cells and the order in which they are placed.
///
/// ```
/// use parbench_kernels::input::floorplan::FloorplanInput;
/// // Two cells side by side: cell 1 at the origin, cell 2 to its right.
/// let text = "2\n1\n2 3\n0 -1\n2\n1\n2 2\n1 -1\n0\n10\n";
/// let input = FloorplanInput::parse("two.dat".as_ref(), text.as_bytes())?;
/// assert_eq!(input.cell_count(), 2);
/// assert_eq!(input.placement_order(), &[1, 2]);
/// assert_eq!(input.expected_area(), Some(10));
/// # Ok::<(), parbench_kernels::input::InputError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloorplanInput {
    /// Index 0 is the sentinel (no shapes), cells `1..=N` follow.
    cells: Vec<FloorplanCell>,
    /// Cells in placement order: 1, next(1), … up to the one whose next is 0.
    order: Vec<usize>,
    expected_area: Option<u64>,
}

impl FloorplanInput {
    /// Parses floorplan text read from `path` (the path only labels errors).
    ///
    /// ```
    /// use parbench_kernels::input::floorplan::FloorplanInput;
    /// let error = FloorplanInput::parse("f.dat".as_ref(), b"1\n1\n2 70\n0 -1\n0\n").unwrap_err();
    /// assert_eq!(error.to_string(), "f.dat:3: shape 1 of cell 1: cols must be between 1 and 64, found 70");
    /// ```
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, InputError> {
        let text = IntegerTokens::decode(path, bytes)?;
        let mut tokens = IntegerTokens::new(path, text);
        let count = tokens.expect_in_range("the number of cells", 1, MAX_CELLS as i64)? as usize;
        let mut cells = vec![FloorplanCell {
            shapes: Vec::new(),
            left: None,
            above: None,
            next: 0,
        }];
        // Line of each cell's `left above` pair, for errors found after reading.
        let mut neighbour_lines = vec![0];
        let mut next_lines = vec![0];
        for id in 1..=count {
            let shape_count = tokens.expect_in_range(
                &format!("the number of shapes of cell {id}"),
                1,
                MAX_SHAPES as i64,
            )? as usize;
            let mut shapes = Vec::with_capacity(shape_count);
            for shape in 1..=shape_count {
                let side = BOARD_SIDE as i64;
                let rows = tokens.expect_in_range(
                    &format!("shape {shape} of cell {id}: rows"),
                    1,
                    side,
                )?;
                let cols = tokens.expect_in_range(
                    &format!("shape {shape} of cell {id}: cols"),
                    1,
                    side,
                )?;
                shapes.push(Shape {
                    rows: rows as u32,
                    cols: cols as u32,
                });
            }
            let left = read_neighbour(&mut tokens, id, count, "left")?;
            let above = read_neighbour(&mut tokens, id, count, "above")?;
            neighbour_lines.push(tokens.line());
            if left.is_none() && above.is_none() {
                return Err(tokens.error(format!(
                    "cell {id} has neither a left nor an above neighbour (use 0, the origin, for the first cell)"
                )));
            }
            let next =
                tokens.expect_in_range(&format!("next cell after cell {id}"), 0, count as i64)?;
            next_lines.push(tokens.line());
            cells.push(FloorplanCell {
                shapes,
                left,
                above,
                next: next as usize,
            });
        }
        let expected_area = match tokens.next_integer("the expected minimal area")? {
            None => None,
            Some(area) if area > 0 => Some(area as u64),
            Some(area) => {
                return Err(tokens.error(format!(
                    "the expected minimal area must be positive, found {area}"
                )));
            }
        };
        if let Some(extra) = tokens.next_integer("nothing")? {
            return Err(tokens.error(format!(
                "unexpected value {extra} after the expected minimal area"
            )));
        }
        let order = placement_order(&cells, |id, message| {
            InputError::new(path, next_lines[id], message)
        })?;
        check_neighbours_come_first(&cells, &order, |id, message| {
            InputError::new(path, neighbour_lines[id], message)
        })?;
        Ok(Self {
            cells,
            order,
            expected_area,
        })
    }

    /// A random solvable chain of `count` cells (1..=3 shapes of 1..=4 × 1..=4
    /// each), the same for the same `(count, seed)`. Every cell after the first
    /// leans on earlier ones (left of it, above it, or both), so small inputs
    /// usually have many floorplans of different areas (and some have none:
    /// the solver reports that too).
    ///
    /// ```
    /// use parbench_kernels::input::floorplan::FloorplanInput;
    /// let input = FloorplanInput::generate(4, 7);
    /// assert_eq!(input.placement_order(), &[1, 2, 3, 4]);
    /// assert_eq!(input, FloorplanInput::generate(4, 7));
    /// ```
    ///
    /// # Panics
    /// If `count` is 0 or larger than [`MAX_CELLS`] (callers validate it).
    pub fn generate(count: usize, seed: u64) -> Self {
        assert!(
            (1..=MAX_CELLS).contains(&count),
            "generated cell count {count} out of range"
        );
        let mut rng = SplitMix64::new(seed);
        let mut cells = vec![FloorplanCell {
            shapes: Vec::new(),
            left: None,
            above: None,
            next: 0,
        }];
        for id in 1..=count {
            let shape_count = 1 + rng.below(3);
            let shapes = (0..shape_count)
                .map(|_| Shape {
                    rows: 1 + rng.below(4) as u32,
                    cols: 1 + rng.below(4) as u32,
                })
                .collect();
            let earlier = rng.below(id);
            // Mostly below or right of the previous cell, so the chain walks
            // away from what is already placed and most inputs are solvable;
            // both neighbours pin a cell to one corner that often does not
            // exist, so that case is rare.
            let (left, above) = match (id, rng.below(8)) {
                (1, _) => (Some(0), None),
                (_, 0..=3) => (None, Some(id - 1)),
                (_, 4..=6) => (Some(id - 1), None),
                _ => (Some(id - 1), Some(earlier.max(1))),
            };
            let next = if id == count { 0 } else { id + 1 };
            cells.push(FloorplanCell {
                shapes,
                left,
                above,
                next,
            });
        }
        Self {
            order: (1..=count).collect(),
            cells,
            expected_area: None,
        }
    }

    /// Writes the input in the file format [`parse`](Self::parse) reads.
    ///
    /// ```
    /// use parbench_kernels::input::floorplan::FloorplanInput;
    /// let input = FloorplanInput::generate(3, 1);
    /// let text = input.to_text();
    /// assert_eq!(FloorplanInput::parse("g".as_ref(), text.as_bytes())?, input);
    /// # Ok::<(), parbench_kernels::input::InputError>(())
    /// ```
    pub fn to_text(&self) -> String {
        let index = |neighbour: Option<usize>| neighbour.map_or(-1, |id| id as i64);
        let mut text = format!("{}\n", self.cell_count());
        for cell in &self.cells[1..] {
            text.push_str(&format!("{}\n", cell.shapes.len()));
            for shape in &cell.shapes {
                text.push_str(&format!("{} {}\n", shape.rows, shape.cols));
            }
            text.push_str(&format!(
                "{} {}\n{}\n",
                index(cell.left),
                index(cell.above),
                cell.next
            ));
        }
        if let Some(area) = self.expected_area {
            text.push_str(&format!("{area}\n"));
        }
        text
    }

    /// Number of cells, the sentinel not counted.
    ///
    /// ```
    /// # use parbench_kernels::input::floorplan::FloorplanInput;
    /// assert_eq!(FloorplanInput::generate(5, 0).cell_count(), 5);
    /// ```
    pub fn cell_count(&self) -> usize {
        self.cells.len() - 1
    }

    /// Cell `id` (`1..=cell_count()`; 0 is the shapeless sentinel).
    ///
    /// ```
    /// # use parbench_kernels::input::floorplan::FloorplanInput;
    /// assert!(FloorplanInput::generate(2, 0).cell(0).shapes.is_empty());
    /// ```
    ///
    /// # Panics
    /// If `id > cell_count()`.
    pub fn cell(&self, id: usize) -> &FloorplanCell {
        &self.cells[id]
    }

    /// The cells in the order they are placed.
    ///
    /// ```
    /// # use parbench_kernels::input::floorplan::FloorplanInput;
    /// assert_eq!(FloorplanInput::generate(2, 0).placement_order(), &[1, 2]);
    /// ```
    pub fn placement_order(&self) -> &[usize] {
        &self.order
    }

    /// The minimal area written at the end of the file, if any (reporting only).
    ///
    /// ```
    /// # use parbench_kernels::input::floorplan::FloorplanInput;
    /// assert_eq!(FloorplanInput::generate(2, 0).expected_area(), None);
    /// ```
    pub fn expected_area(&self) -> Option<u64> {
        self.expected_area
    }
}

/// Reads a neighbour index: −1 → `None`, `0..=count` → `Some`.
fn read_neighbour(
    tokens: &mut IntegerTokens<'_>,
    id: usize,
    count: usize,
    side: &str,
) -> Result<Option<usize>, InputError> {
    let value =
        tokens.expect_in_range(&format!("{side} neighbour of cell {id}"), -1, count as i64)?;
    Ok(usize::try_from(value).ok())
}

/// Follows `next` from cell 1; a cell reached twice is an error at the line of
/// the `next` that reached it (`error_at(id)` gives that line's location).
fn placement_order(
    cells: &[FloorplanCell],
    error_at: impl Fn(usize, String) -> InputError,
) -> Result<Vec<usize>, InputError> {
    let mut placed = vec![false; cells.len()];
    let mut order = Vec::new();
    let mut id = 1;
    loop {
        placed[id] = true;
        order.push(id);
        let next = cells[id].next;
        if next == 0 {
            return Ok(order);
        }
        if placed[next] {
            return Err(error_at(
                id,
                format!(
                    "next of cell {id} is cell {next}, which is already placed (the order must not loop)"
                ),
            ));
        }
        id = next;
    }
}

/// A cell's neighbours must already be on the board when it is placed.
fn check_neighbours_come_first(
    cells: &[FloorplanCell],
    order: &[usize],
    error_at: impl Fn(usize, String) -> InputError,
) -> Result<(), InputError> {
    let mut placed = vec![false; cells.len()];
    placed[0] = true;
    for &id in order {
        let cell = &cells[id];
        for (side, neighbour) in [("left", cell.left), ("above", cell.above)] {
            if let Some(neighbour) = neighbour.filter(|&n| !placed[n]) {
                return Err(error_at(
                    id,
                    format!(
                        "the {side} neighbour of cell {id} is cell {neighbour}, which is not placed before it"
                    ),
                ));
            }
        }
        placed[id] = true;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<FloorplanInput, InputError> {
        FloorplanInput::parse(Path::new("f"), text.as_bytes())
    }

    #[test]
    fn reads_shapes_neighbours_and_order() {
        let input = parse("2\n2\n1 4\n4 1\n0 -1\n2\n1\n3 3\n-1 1\n0\n").unwrap();
        assert_eq!(
            input.cell(1).shapes,
            vec![Shape { rows: 1, cols: 4 }, Shape { rows: 4, cols: 1 }]
        );
        assert_eq!((input.cell(1).left, input.cell(1).above), (Some(0), None));
        assert_eq!((input.cell(2).left, input.cell(2).above), (None, Some(1)));
        assert_eq!(input.placement_order(), &[1, 2]);
        assert_eq!(input.expected_area(), None);
    }

    #[test]
    fn order_follows_next_not_numbering() {
        let input = parse("3\n1\n1 1\n0 -1\n3\n1\n1 1\n3 -1\n0\n1\n1 1\n1 -1\n2\n").unwrap();
        assert_eq!(input.placement_order(), &[1, 3, 2]);
    }

    #[test]
    fn loops_in_the_order_are_rejected() {
        let error = parse("2\n1\n1 1\n0 -1\n2\n1\n1 1\n1 -1\n1\n").unwrap_err();
        assert!(error.message.contains("already placed"), "{error}");
        assert_eq!(error.line, 9);
    }

    #[test]
    fn neighbours_placed_later_are_rejected() {
        let error = parse("2\n1\n1 1\n2 -1\n2\n1\n1 1\n0 -1\n0\n").unwrap_err();
        assert!(error.message.contains("not placed before"), "{error}");
        assert_eq!(error.line, 4);
    }

    #[test]
    fn a_cell_without_neighbours_is_rejected() {
        let error = parse("1\n1\n1 1\n-1 -1\n0\n").unwrap_err();
        assert!(error.message.contains("neither"), "{error}");
    }

    #[test]
    fn bad_counts_and_indices_are_rejected() {
        assert!(parse("0").unwrap_err().message.contains("number of cells"));
        assert!(
            parse("1\n0\n")
                .unwrap_err()
                .message
                .contains("number of shapes")
        );
        assert!(
            parse("1\n-2\n")
                .unwrap_err()
                .message
                .contains("number of shapes")
        );
        assert!(
            parse("1\n1\n1 1\n5 -1\n0\n")
                .unwrap_err()
                .message
                .contains("left neighbour")
        );
        assert!(
            parse("1\n1\n1 1\n0 -1\n7\n")
                .unwrap_err()
                .message
                .contains("next cell")
        );
        assert!(
            parse("1\n1\n0 1\n0 -1\n0\n")
                .unwrap_err()
                .message
                .contains("rows")
        );
    }

    #[test]
    fn trailing_area_is_optional_but_single() {
        assert_eq!(
            parse("1\n1\n2 2\n0 -1\n0\n4\n").unwrap().expected_area(),
            Some(4)
        );
        let error = parse("1\n1\n2 2\n0 -1\n0\n4 5\n").unwrap_err();
        assert!(error.message.contains("unexpected value 5"), "{error}");
        assert!(parse("1\n1\n2 2\n0 -1\n0\n-4\n").is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = FloorplanInput::parse(Path::new("p"), &bytes);
        }

        #[test]
        fn arbitrary_small_integers_never_panic(values in proptest::collection::vec(-2i64..6, 0..40)) {
            let text: Vec<String> = values.iter().map(i64::to_string).collect();
            let _ = parse(&text.join("\n"));
        }

        #[test]
        fn generated_inputs_round_trip_through_text(count in 1usize..12, seed in any::<u64>()) {
            let input = FloorplanInput::generate(count, seed);
            prop_assert_eq!(parse(&input.to_text()).unwrap(), input);
        }
    }
}
