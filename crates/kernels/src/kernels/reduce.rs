//! `reduce`: the sum of a large integer array, in blocks of 1024 elements.
//!
//! The parallel loop runs over blocks, not elements, so every scheduler sees the same grain as the
//! scheduler study; each chunk of blocks sums into a local and adds it to the total once.

use crate::executor::{Executor, parallel_sum};
use crate::kernel::{
    Kernel, KernelError, ParamSpec, Params, PreparedKernel, RunReport, timed, wrong_result,
};
use crate::kernels::rng::SplitMix64;

const BLOCK: usize = 1024;

/// The `reduce` kernel.
pub(crate) struct Reduce;

impl Kernel for Reduce {
    fn name(&self) -> &'static str {
        "reduce"
    }

    fn description(&self) -> &'static str {
        "sum of a large u32 array in blocks of 1024 elements"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "n",
            default: "2^22",
            help: "number of array elements",
        }]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "5000")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let n = params.get_usize_in(self, "n", 1..=1 << 32)?;
        let mut rng = SplitMix64::new(0x5EED_0001);
        let data: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        let expected = data.iter().map(|&x| u64::from(x)).sum();
        Ok(Box::new(PreparedReduce { data, expected }))
    }
}

struct PreparedReduce {
    data: Vec<u32>,
    expected: u64,
}

impl PreparedKernel for PreparedReduce {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        let data = &self.data;
        let blocks = data.len().div_ceil(BLOCK);
        let (sum, elapsed) = timed(exec, || {
            parallel_sum(exec, 0..blocks, |chunk| {
                let elements = chunk.start * BLOCK..(chunk.end * BLOCK).min(data.len());
                data[elements].iter().map(|&x| u64::from(x)).sum()
            })
        })?;
        if sum != self.expected {
            return Err(wrong_result(
                "reduce",
                format!("sum {sum}, expected {}", self.expected),
            ));
        }
        Ok(RunReport::timing(elapsed))
    }
}
