//! `scan`: exclusive prefix sum by Blelloch's two-phase algorithm.
//!
//! The up-sweep builds partial sums in a balanced tree in place, the down-sweep pushes prefixes back
//! down; each tree level is one parallel loop, so a scan of N = 2^k elements is 2·k parallel loops of
//! shrinking size (N/2, N/4, …, 1 and back). That stresses a scheduler's per-loop overhead, not its
//! throughput. The array is `AtomicU64` accessed with `Relaxed` loads and stores (plain moves on
//! x86-64): within one level every iteration touches its own two elements, and the join at the end
//! of each loop orders one level before the next.
//!
//! Validation: every element against a sequential scan, and the up-sweep's total (the last element
//! before the down-sweep clears it) against the input's sum. The exclusive result never reads the
//! up-sweep's right spine (the last node of each level), so without the total a node there lost
//! or run twice would go unseen.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::executor::Executor;
use crate::kernel::{
    Kernel, KernelError, ParamSpec, Params, PreparedKernel, RunReport, bad_param, timed,
    wrong_result,
};
use crate::kernels::rng::SplitMix64;

/// The `scan` kernel.
pub(crate) struct Scan;

impl Kernel for Scan {
    fn name(&self) -> &'static str {
        "scan"
    }

    fn description(&self) -> &'static str {
        "exclusive prefix sum (Blelloch up-sweep/down-sweep, 2·log2 N parallel loops)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "n",
            default: "2^20",
            help: "number of elements, a power of two (2^10 … 2^24 in the study)",
        }]
    }

    fn is_default_suite(&self) -> bool {
        true
    }

    fn small_params(&self) -> &'static [(&'static str, &'static str)] {
        &[("n", "2^10")]
    }

    fn prepare(
        &self,
        params: &Params,
        _threads: usize,
    ) -> Result<Box<dyn PreparedKernel>, KernelError> {
        let n = params.get_usize_in(self, "n", 2..=1 << 30)?;
        if !n.is_power_of_two() {
            return Err(bad_param(
                self,
                "n",
                &n.to_string(),
                "must be a power of two",
            ));
        }
        let mut rng = SplitMix64::new(0x5EED_0003);
        let input: Vec<u64> = (0..n).map(|_| rng.next_u64() >> 8).collect();
        let total = input.iter().fold(0u64, |sum, &x| sum.wrapping_add(x));
        let expected = input
            .iter()
            .scan(0u64, |acc, &x| {
                let before = *acc;
                *acc = acc.wrapping_add(x);
                Some(before)
            })
            .collect();
        let data = input.iter().map(|&x| AtomicU64::new(x)).collect();
        Ok(Box::new(PreparedScan {
            input,
            expected,
            total,
            data,
        }))
    }
}

struct PreparedScan {
    input: Vec<u64>,
    expected: Vec<u64>,
    /// The sum of `input`, which the up-sweep leaves in the last element.
    total: u64,
    data: Vec<AtomicU64>,
}

impl PreparedKernel for PreparedScan {
    fn run(&mut self, exec: &dyn Executor) -> Result<RunReport, KernelError> {
        for (slot, &x) in self.data.iter().zip(&self.input) {
            slot.store(x, Relaxed);
        }
        let a = &self.data;
        let n = a.len();
        let (total, elapsed) = timed(exec, || {
            let mut stride = 2;
            while stride <= n {
                exec.for_chunks(0..n / stride, &|nodes| {
                    for node in nodes {
                        let right = (node + 1) * stride - 1;
                        let left = right - stride / 2;
                        a[right].store(
                            a[right].load(Relaxed).wrapping_add(a[left].load(Relaxed)),
                            Relaxed,
                        );
                    }
                });
                stride *= 2;
            }
            // The up-sweep's last element (the right spine of its tree) is overwritten here and
            // never read again: kept to be checked, or the last node of every up-sweep level
            // could be lost or doubled without changing the result.
            let total = a[n - 1].load(Relaxed);
            a[n - 1].store(0, Relaxed);
            while stride > 2 {
                stride /= 2;
                exec.for_chunks(0..n / stride, &|nodes| {
                    for node in nodes {
                        let right = (node + 1) * stride - 1;
                        let left = right - stride / 2;
                        let left_sum = a[left].load(Relaxed);
                        let prefix = a[right].load(Relaxed);
                        a[left].store(prefix, Relaxed);
                        a[right].store(prefix.wrapping_add(left_sum), Relaxed);
                    }
                });
            }
            total
        })?;
        if total != self.total {
            return Err(wrong_result(
                "scan",
                format!("up-sweep total {total} instead of {}", self.total),
            ));
        }
        if let Some(i) = (0..n).find(|&i| a[i].load(Relaxed) != self.expected[i]) {
            return Err(wrong_result(
                "scan",
                format!(
                    "element {i}: {} instead of {}",
                    a[i].load(Relaxed),
                    self.expected[i]
                ),
            ));
        }
        Ok(RunReport::timing(elapsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::checked_tasks::broken::{At, Entry, Fault, Faulty};

    /// The last up-sweep loop (one node, the root) is call log2 n − 1; its node lost or run
    /// twice changes only the total, which the exclusive result never reads.
    #[test]
    fn the_up_sweeps_root_lost_or_doubled_is_caught() {
        let mut scan = Scan.prepare(&Params::new().with("n", "2^6"), 1).unwrap();
        assert!(scan.run(&Faulty::right(1)).is_ok());
        for fault in [Fault::Skipped(At::First), Fault::Again] {
            let exec = Faulty::breaking(1, Entry::Chunks, 5, fault);
            let result = scan.run(&exec);
            assert!(exec.struck());
            assert!(
                matches!(&result, Err(KernelError::WrongResult { detail, .. })
                    if detail.starts_with("up-sweep total")),
                "{fault:?}: {:?}",
                result.map(|_| ())
            );
        }
    }
}
