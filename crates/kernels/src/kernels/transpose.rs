//! `transpose`: out-of-place transpose of an n × n `u32` matrix in 16 × 16 blocks, with nested
//! parallel loops (outer over block rows, inner over block columns).
//!
//! Element `(i, j)` holds its own index `i·n + j`, so validation needs no reference copy: the
//! output must hold `i·n + j` at `(j, i)`, and it is reset to `u32::MAX` (never an index, as
//! n ≤ 2^15) before each run so a skipped block is caught.

use std::ops::Range;

use crate::executor::{Executor, par_chunks_mut};
use crate::kernel::{
    Kernel, KernelError, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};

const BLOCK: usize = 16;

/// The `transpose` kernel.
pub(crate) struct Transpose;

impl Kernel for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }

    fn description(&self) -> &'static str {
        "n × n matrix transpose in 16 × 16 blocks, nested loops over the output's block rows and their tiles"
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
        let output = &mut self.output;
        let ((), elapsed) = timed(exec, || {
            // Output block row `bj` (rows j of block bj, contiguous) in parallel; inside it, its
            // tiles (bj, bi) in parallel. Tile bi of the block row is the `bi`-th BLOCK-wide
            // piece of each of its rows: gathered into `tiles`, grouped by tile.
            par_chunks_mut(exec, output, BLOCK * n, |bj, block_row| {
                let rows = block_row.len() / n;
                let mut pieces: Vec<_> = block_row
                    .chunks_mut(n)
                    .map(|r| r.chunks_mut(BLOCK))
                    .collect();
                let mut tiles: Vec<&mut [u32]> = Vec::with_capacity(blocks * rows);
                for _ in 0..blocks {
                    tiles.extend(pieces.iter_mut().filter_map(Iterator::next));
                }
                par_chunks_mut(exec, &mut tiles, rows, |bi, tile| {
                    let columns = block(bi, n);
                    for (j, out) in block(bj, n).zip(tile.iter_mut()) {
                        for (slot, i) in out.iter_mut().zip(columns.clone()) {
                            *slot = input[i * n + j];
                        }
                    }
                });
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
