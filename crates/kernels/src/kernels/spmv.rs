//! `spmv-balanced`, `spmv-triangle`, `spmv-hyperbolic`: `y = A · x` for a CSR matrix, one parallel
//! loop over the rows.
//!
//! The three kernels differ only in how non-zeros are spread over the rows (constant, linearly
//! decreasing, ∝ 1/(row+1)), which is what separates schedulers that balance load from those that
//! split by index. By default the matrix is generated (rows = threads · 2^9, `--width` columns,
//! `density · width` non-zeros per row on average, seeded); `--matrix FILE.mtx` reads a
//! MatrixMarket file instead. `y` is filled with NaN before each run, so a row the executor skips
//! shows up as a mismatch against the sequential reference.

use std::fs;

use crate::executor::{Executor, par_chunks_mut};
use crate::input::InputError;
use crate::input::matrix_market::parse_matrix_market;
use crate::kernel::{
    Kernel, KernelError, Metric, ParamSpec, Params, PreparedKernel, RunReport, bad_param, timed,
    wrong_result,
};
use crate::kernels::csr::{CsrMatrix, RowProfile};
use crate::kernels::rng::SplitMix64;

/// Upper bound on generated non-zeros, so a typo in a parameter is an error, not an OOM abort.
const MAX_GENERATED_NNZ: f64 = (1u64 << 31) as f64;

/// One of the three spmv kernels.
pub(crate) struct Spmv {
    name: &'static str,
    description: &'static str,
    profile: RowProfile,
}

/// `spmv-balanced`.
pub(crate) static SPMV_BALANCED: Spmv = Spmv {
    name: "spmv-balanced",
    description: "sparse matrix × vector, every row with the same number of non-zeros",
    profile: RowProfile::Balanced,
};

/// `spmv-triangle`.
pub(crate) static SPMV_TRIANGLE: Spmv = Spmv {
    name: "spmv-triangle",
    description: "sparse matrix × vector, row non-zeros decreasing linearly",
    profile: RowProfile::Triangle,
};

/// `spmv-hyperbolic`.
pub(crate) static SPMV_HYPERBOLIC: Spmv = Spmv {
    name: "spmv-hyperbolic",
    description: "sparse matrix × vector, row non-zeros proportional to 1/(row+1)",
    profile: RowProfile::Hyperbolic,
};

static PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "width",
        default: "2^15",
        help: "columns of the generated matrix (2^10 … 2^15 in the study)",
    },
    ParamSpec {
        name: "density",
        default: "2^-7",
        help: "average fraction of non-zeros per row",
    },
    ParamSpec {
        name: "rows",
        default: "",
        help: "rows of the generated matrix (default: threads × 2^9)",
    },
    ParamSpec {
        name: "seed",
        default: "1",
        help: "seed of the matrix generator",
    },
    ParamSpec {
        name: "matrix",
        default: "",
        help: "MatrixMarket coordinate file to use instead of a generated matrix (width, density and rows are then refused)",
    },
];

/// The parameters that shape only a generated matrix. `seed` is left out: other kernels of the
/// same sweep (qap) use it too.
const GENERATOR_PARAMS: [&str; 3] = ["width", "density", "rows"];

impl Spmv {
    fn matrix(&self, params: &Params, threads: usize) -> Result<CsrMatrix, KernelError> {
        if let Some(path) = params.get_path(self, "matrix")? {
            // A file replaces the generated matrix: a shape given with it would be recorded as
            // if it had been measured.
            if let Some((name, value)) = params
                .iter()
                .find(|(name, _)| GENERATOR_PARAMS.contains(name))
            {
                return Err(bad_param(
                    self,
                    name,
                    value,
                    &format!(
                        "not used with matrix={} (--matrix): the file replaces the generated \
                         matrix; drop `{name}` or the matrix file",
                        path.display()
                    ),
                ));
            }
            let text = fs::read_to_string(&path).map_err(|source| KernelError::Io {
                path: path.clone(),
                source,
            })?;
            let coo = parse_matrix_market(&path, &text)?;
            return CsrMatrix::from_coo(&coo).map_err(|m| InputError::new(&path, 0, m).into());
        }
        let width = params.get_usize_in(self, "width", 1..=u32::MAX as usize)?;
        let density = params.get_f64(self, "density")?;
        let rows = match params.get_str(self, "rows")? {
            "" => threads.max(1) << 9,
            _ => params.get_usize(self, "rows")?,
        };
        let seed = params.get_usize(self, "seed")? as u64;
        if !(density > 0.0 && density <= 1.0) {
            return Err(bad_param(
                self,
                "density",
                &density.to_string(),
                "must be in (0, 1]",
            ));
        }
        if rows == 0 || rows as f64 * (width as f64 * density).max(1.0) > MAX_GENERATED_NNZ {
            return Err(bad_param(
                self,
                "rows",
                &rows.to_string(),
                "must be ≥ 1 and give at most 2^31 non-zeros",
            ));
        }
        let lengths = self.profile.row_lengths(rows, width, density);
        Ok(CsrMatrix::generate(&lengths, width, seed))
    }
}

impl Kernel for Spmv {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("width", "512"), ("rows", "100"), ("density", "0.1")]
    }

    fn weak_scaling(&self, params: &Params) -> bool {
        // Generated matrices default to threads × 2^9 rows; a file or explicit rows are fixed.
        matches!(params.get_path(self, "matrix"), Ok(None))
            && matches!(params.get_str(self, "rows"), Ok(""))
    }

    fn prepare(
        &self,
        params: &Params,
        threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let matrix = self.matrix(params, threads)?;
        let mut rng = SplitMix64::new(0x5EED_0002);
        let x: Vec<f64> = (0..matrix.cols())
            .map(|_| rng.below(9) as f64 - 4.0)
            .collect();
        let expected = matrix.multiply_reference(&x);
        let y = vec![f64::NAN; matrix.rows()];
        Ok(Box::new(PreparedSpmv {
            name: self.name,
            matrix,
            x,
            y,
            expected,
        }))
    }
}

struct PreparedSpmv {
    name: &'static str,
    matrix: CsrMatrix,
    x: Vec<f64>,
    y: Vec<f64>,
    expected: Vec<f64>,
}

impl PreparedKernel for PreparedSpmv {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        self.y.fill(f64::NAN);
        let (matrix, x) = (&self.matrix, &self.x);
        let y = &mut self.y;
        let ((), elapsed) = timed(exec, || {
            par_chunks_mut(exec, y, 1, |row, out| {
                matrix.multiply_rows(x, row..row + 1, out);
            });
        })?;
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        if let Some(row) = (0..self.y.len()).find(|&r| !same(self.y[r], self.expected[r])) {
            return Err(wrong_result(
                self.name,
                format!(
                    "row {row}: {} instead of {}",
                    self.y[row], self.expected[row]
                ),
            ));
        }
        let flops = 2.0 * self.matrix.nnz() as f64 / elapsed.as_secs_f64().max(1e-12);
        Ok(RunReport {
            elapsed,
            metrics: vec![Metric::new("gflops", flops / 1e9, "GFLOP/s")],
            untimed_threads_created: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generator_shape_given_with_a_matrix_file_is_refused_naming_both() {
        let path = std::env::temp_dir().join("parbench-spmv-shape-with-file.mtx");
        fs::write(
            &path,
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n",
        )
        .unwrap();
        let file = Params::new().with("matrix", path.to_string_lossy());
        assert!(SPMV_BALANCED.prepare(&file, 1).is_ok());
        for name in GENERATOR_PARAMS {
            let error = SPMV_BALANCED
                .prepare(&file.clone().with(name, "1"), 1)
                .err()
                .unwrap();
            assert!(matches!(error, KernelError::BadParam { .. }), "{error}");
            let text = error.to_string();
            assert!(
                text.contains(&format!("parameter `{name}`")) && text.contains("--matrix"),
                "{text}"
            );
        }
        // The seed is shared with other kernels of a sweep, so it is not refused.
        assert!(SPMV_BALANCED.prepare(&file.with("seed", "3"), 1).is_ok());
        fs::remove_file(&path).unwrap();
    }
}
