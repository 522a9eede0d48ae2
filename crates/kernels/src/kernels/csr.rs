//! Compressed sparse row matrices for the spmv kernels: generated with a seeded row-length profile
//! or converted from a MatrixMarket file, and multiplied row by row.
//!
//! The row kernel is the hot loop of the scheduler study and must match C++ at `-O3`: it walks the
//! row's values and column indices as zipped slices and reads `x` without a bounds check, which is
//! sound because every column index is checked against the column count when the matrix is built
//! (the fields are private, so no other code can break that invariant).

use std::ops::Range;

use crate::input::matrix_market::CooMatrix;
use crate::kernels::rng::SplitMix64;

/// How the number of non-zeros varies over the rows of a generated matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowProfile {
    /// Every row has `width · density` non-zeros.
    Balanced,
    /// Linearly decreasing from `2 · width · density` to about 0 (same total as balanced).
    Triangle,
    /// Proportional to `1 / (row + 1)` (same total as balanced, rows capped at `width`).
    Hyperbolic,
}

impl RowProfile {
    /// The number of non-zeros of each row.
    pub(crate) fn row_lengths(self, rows: usize, width: usize, density: f64) -> Vec<usize> {
        let per_row = width as f64 * density;
        let harmonic: f64 = (1..=rows).map(|r| 1.0 / r as f64).sum();
        (0..rows)
            .map(|r| {
                let len = match self {
                    RowProfile::Balanced => per_row,
                    RowProfile::Triangle => 2.0 * per_row * (rows - r) as f64 / rows as f64,
                    RowProfile::Hyperbolic => per_row * rows as f64 / (harmonic * (r + 1) as f64),
                };
                (len.round() as usize).clamp(1, width)
            })
            .collect()
    }
}

/// A CSR matrix whose column indices are all below `cols` (checked on construction).
#[derive(Debug, Clone)]
pub(crate) struct CsrMatrix {
    cols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    values: Vec<f64>,
}

impl CsrMatrix {
    /// A `lengths.len() × width` matrix, row `r` with `lengths[r]` non-zeros (at most `width`) at
    /// distinct sorted columns, one drawn in each of `lengths[r]` equal column strata; values are
    /// small integers so every product sum is exact.
    pub(crate) fn generate(lengths: &[usize], width: usize, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let nnz = lengths.iter().sum();
        let mut row_ptr = Vec::with_capacity(lengths.len() + 1);
        let mut col_idx = Vec::with_capacity(nnz);
        let mut values = Vec::with_capacity(nnz);
        row_ptr.push(0);
        for &len in lengths {
            let len = len.min(width);
            for k in 0..len {
                let (lo, hi) = (k * width / len, (k + 1) * width / len);
                col_idx.push((lo + rng.below(hi - lo)) as u32);
                values.push(rng.below(9) as f64 - 4.0);
            }
            row_ptr.push(col_idx.len());
        }
        CsrMatrix::from_parts(width, row_ptr, col_idx, values)
    }

    /// The CSR form of `coo`, entries of a row in file order.
    pub(crate) fn from_coo(coo: &CooMatrix) -> Result<Self, String> {
        let mut row_ptr = vec![0usize; coo.rows + 1];
        for &(row, col, _) in &coo.entries {
            if row >= coo.rows || col >= coo.cols || col > u32::MAX as usize {
                return Err(format!(
                    "entry ({row}, {col}) is outside the {} x {} matrix",
                    coo.rows, coo.cols
                ));
            }
            row_ptr[row + 1] += 1;
        }
        for r in 0..coo.rows {
            row_ptr[r + 1] += row_ptr[r];
        }
        let mut next = row_ptr.clone();
        let mut col_idx = vec![0u32; coo.entries.len()];
        let mut values = vec![0.0; coo.entries.len()];
        for &(row, col, value) in &coo.entries {
            col_idx[next[row]] = col as u32;
            values[next[row]] = value;
            next[row] += 1;
        }
        Ok(CsrMatrix::from_parts(coo.cols, row_ptr, col_idx, values))
    }

    fn from_parts(cols: usize, row_ptr: Vec<usize>, col_idx: Vec<u32>, values: Vec<f64>) -> Self {
        assert!(
            row_ptr.windows(2).all(|w| w[0] <= w[1]),
            "row pointers decrease"
        );
        assert_eq!(
            row_ptr.last().copied(),
            Some(col_idx.len()),
            "row pointers do not end at nnz"
        );
        assert_eq!(col_idx.len(), values.len(), "one value per column index");
        assert!(
            col_idx.iter().all(|&c| (c as usize) < cols),
            "column index out of range"
        );
        CsrMatrix {
            cols,
            row_ptr,
            col_idx,
            values,
        }
    }

    pub(crate) fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    pub(crate) fn nnz(&self) -> usize {
        self.values.len()
    }

    /// `out[i] = (A · x)[rows.start + i]` for the rows in `rows`.
    ///
    /// # Panics
    /// If `x` does not have one entry per column or `out` one per row of `rows` (caller bugs).
    #[inline]
    pub(crate) fn multiply_rows(&self, x: &[f64], rows: Range<usize>, out: &mut [f64]) {
        assert_eq!(x.len(), self.cols, "x must have one entry per column");
        assert_eq!(out.len(), rows.len(), "out must have one entry per row");
        let ptrs = &self.row_ptr[rows.start..=rows.end];
        for (slot, bounds) in out.iter_mut().zip(ptrs.windows(2)) {
            let entries = bounds[0]..bounds[1];
            let mut sum = 0.0;
            for (&value, &col) in self.values[entries.clone()]
                .iter()
                .zip(&self.col_idx[entries])
            {
                // SAFETY: `from_parts` checked every column index is below `self.cols`, and
                // `x.len() == self.cols` was asserted above.
                sum += value * unsafe { *x.get_unchecked(col as usize) };
            }
            *slot = sum;
        }
    }

    /// `A · x` with plain indexed loops: the independent reference the fast kernel is checked
    /// against (same summation order, so the results are bit-identical).
    pub(crate) fn multiply_reference(&self, x: &[f64]) -> Vec<f64> {
        (0..self.rows())
            .map(|r| {
                let mut sum = 0.0;
                for k in self.row_ptr[r]..self.row_ptr[r + 1] {
                    sum += self.values[k] * x[self.col_idx[k] as usize];
                }
                sum
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_rows_have_the_profile_lengths_and_sorted_distinct_columns() {
        for profile in [
            RowProfile::Balanced,
            RowProfile::Triangle,
            RowProfile::Hyperbolic,
        ] {
            let lengths = profile.row_lengths(64, 256, 1.0 / 8.0);
            let m = CsrMatrix::generate(&lengths, 256, 3);
            assert_eq!(m.rows(), 64);
            for (r, &len) in lengths.iter().enumerate() {
                let cols = &m.col_idx[m.row_ptr[r]..m.row_ptr[r + 1]];
                assert_eq!(cols.len(), len);
                assert!(cols.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }

    #[test]
    fn profiles_keep_the_balanced_total_roughly() {
        let balanced: usize = RowProfile::Balanced
            .row_lengths(1024, 1 << 15, 1.0 / 128.0)
            .iter()
            .sum();
        for profile in [RowProfile::Triangle, RowProfile::Hyperbolic] {
            let total: usize = profile.row_lengths(1024, 1 << 15, 1.0 / 128.0).iter().sum();
            assert!(
                total.abs_diff(balanced) < balanced / 10,
                "{profile:?}: {total} vs {balanced}"
            );
        }
        let tri = RowProfile::Triangle.row_lengths(8, 100, 0.5);
        assert!(tri.windows(2).all(|w| w[0] >= w[1]));
    }

    #[test]
    fn fast_rows_match_the_reference_and_coo_conversion_keeps_entries() {
        let coo = CooMatrix {
            rows: 3,
            cols: 3,
            entries: vec![(2, 0, 1.5), (0, 2, -2.0), (2, 2, 4.0), (0, 0, 1.0)],
        };
        let m = CsrMatrix::from_coo(&coo).unwrap();
        let x = [1.0, 2.0, 3.0];
        let mut y = [0.0; 3];
        m.multiply_rows(&x, 0..3, &mut y);
        assert_eq!(y.to_vec(), vec![1.0 - 6.0, 0.0, 1.5 + 12.0]);
        assert_eq!(m.multiply_reference(&x), y.to_vec());
        let bad = CooMatrix {
            rows: 1,
            cols: 1,
            entries: vec![(0, 1, 1.0)],
        };
        assert!(CsrMatrix::from_coo(&bad).is_err());
    }
}
