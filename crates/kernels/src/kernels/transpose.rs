//! `transpose`: out-of-place transpose of an n × n `u32` matrix in 16 × 16 blocks, with nested
//! parallel loops (outer over block rows, inner over block columns).
//!
//! Element `(i, j)` holds its own index `i·n + j`, so validation needs no reference copy: the
//! output must hold `i·n + j` at `(j, i)`, and it is reset to `u32::MAX` (never an index, as
//! n ≤ 2^15) before each run so a skipped block is caught.

use std::ops::Range;

use crate::disjoint::DisjointSlice;
use crate::executor::Executor;
use crate::kernel::{
    timed, wrong_result, Kernel, KernelError, ParamSpec, Params, PreparedKernel, RunReport,
};

const BLOCK: usize = 16;

/// The `transpose` kernel.
pub(crate) struct Transpose;

impl Kernel for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }

    fn description(&self) -> &'static str {
        "n × n matrix transpose in 16 × 16 blocks, nested loops over block rows and columns"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "n",
            default: "1024",
            help: "matrix order",
        }]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "50")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let n = params.get_usize_in(self, "n", 1..=1 << 15)?;
        let input = (0..(n * n) as u32).collect();
        Ok(Box::new(PreparedTranspose {
            n,
            input,
            output: vec![u32::MAX; n * n],
        }))
    }
}

struct PreparedTranspose {
    n: usize,
    input: Vec<u32>,
    output: Vec<u32>,
}

/// Indices of block `b` along one dimension of size `n`.
fn block(b: usize, n: usize) -> Range<usize> {
    b * BLOCK..((b + 1) * BLOCK).min(n)
}

impl PreparedKernel for PreparedTranspose {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        self.output.fill(u32::MAX);
        let (n, input) = (self.n, &self.input);
        let blocks = n.div_ceil(BLOCK);
        let output = DisjointSlice::new(&mut self.output);
        let ((), elapsed) = timed(exec, || {
            exec.for_chunks(0..blocks, &|block_rows| {
                for bi in block_rows {
                    exec.for_chunks(0..blocks, &|block_cols| {
                        for bj in block_cols {
                            let rows = block(bi, n);
                            for j in block(bj, n) {
                                // SAFETY: block (bi, bj) is the only writer of output row j in the
                                // columns of block row bi; blocks come from disjoint loop chunks.
                                let out = unsafe {
                                    output.range_mut(j * n + rows.start..j * n + rows.end)
                                };
                                for (slot, i) in out.iter_mut().zip(rows.clone()) {
                                    *slot = input[i * n + j];
                                }
                            }
                        }
                    });
                }
            });
        })?;
        if let Some(k) = (0..n * n).find(|&k| self.output[k] as usize != (k % n) * n + k / n) {
            return Err(wrong_result(
                "transpose",
                format!("out[{}][{}] = {}", k / n, k % n, self.output[k]),
            ));
        }
        Ok(RunReport::timing(elapsed))
    }
}
