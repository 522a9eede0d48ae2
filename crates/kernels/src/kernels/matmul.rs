//! `matmul`: dense `C = A · B` with nested parallel loops (outer over rows, inner over columns).
//!
//! The nesting is the point: a scheduler must handle a parallel loop started from inside another
//! one. `B` is stored transposed so each `C[i][j]` is a dot product of two contiguous rows; entries
//! are small integers, so the result is exact and compared bit for bit with a sequential reference.

use crate::executor::{Executor, par_chunks_mut};
use crate::kernel::{
    Kernel, KernelError, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::rng::SplitMix64;

/// The `matmul` kernel.
pub(crate) struct Matmul;

impl Kernel for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }

    fn description(&self) -> &'static str {
        "dense n × n matrix product, nested loops over rows and columns"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "n",
            default: "192",
            help: "matrix order",
        }]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "24")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let n = params.get_usize_in(self, "n", 1..=1 << 13)?;
        let mut rng = SplitMix64::new(0x5EED_0004);
        let mut entries = || {
            (0..n * n)
                .map(|_| rng.below(9) as f64 - 4.0)
                .collect::<Vec<f64>>()
        };
        let (a, b) = (entries(), entries());
        let mut expected = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                expected[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            }
        }
        let b_transposed = (0..n * n).map(|idx| b[(idx % n) * n + idx / n]).collect();
        Ok(Box::new(PreparedMatmul {
            n,
            a,
            b_transposed,
            c: vec![f64::NAN; n * n],
            expected,
        }))
    }
}

struct PreparedMatmul {
    n: usize,
    a: Vec<f64>,
    b_transposed: Vec<f64>,
    c: Vec<f64>,
    expected: Vec<f64>,
}

impl PreparedKernel for PreparedMatmul {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        self.c.fill(f64::NAN);
        let (n, a, bt) = (self.n, &self.a, &self.b_transposed);
        let c = &mut self.c;
        let ((), elapsed) = timed(exec, || {
            // Rows of C in parallel, and inside each row its elements in parallel.
            par_chunks_mut(exec, c, n, |i, c_row| {
                let a_row = &a[i * n..(i + 1) * n];
                par_chunks_mut(exec, c_row, 1, |j, slot| {
                    let b_col = &bt[j * n..(j + 1) * n];
                    slot[0] = a_row.iter().zip(b_col).map(|(x, y)| x * y).sum();
                });
            });
        })?;
        if let Some(k) = (0..n * n).find(|&k| self.c[k] != self.expected[k]) {
            return Err(wrong_result(
                "matmul",
                format!(
                    "C[{}][{}] = {} instead of {}",
                    k / n,
                    k % n,
                    self.c[k],
                    self.expected[k]
                ),
            ));
        }
        Ok(RunReport::timing(elapsed))
    }
}
