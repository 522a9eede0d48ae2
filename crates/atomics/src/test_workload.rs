//! What the unit tests of the locks and the counter share: contention sizes, and the backends to
//! run on with every other one reported as skipped.

use std::io::Write;

use crate::backend::Backend;

/// Threads in every contention test: more than this machine's cores, so holders get preempted.
pub(crate) const THREADS: usize = 4;

/// Acquisitions per thread, the workload (about 1 s for the whole suite in a debug build on
/// the 2-core CI machine).
pub(crate) const PER_THREAD: u64 = 100_000;

/// The backends this CPU can run, for a test that loops over backends; every other backend is
/// reported as `SKIPPED <test>: <why>` on stderr, so a run that covered only some backends says so
/// instead of passing silently (on x86-64: `lse` and `llsc`; on an ARMv8.0 CPU: `lse`).
pub(crate) fn backends_under_test() -> Vec<Backend> {
    Backend::ALL
        .into_iter()
        .filter(|backend| match backend.require() {
            Ok(_) => true,
            Err(error) => {
                report_skipped(&error.to_string());
                false
            }
        })
        .collect()
}

/// Writes `SKIPPED <test>: <reason>` to the stderr handle. Not `eprintln!`: the test harness
/// captures that and shows it only for failing tests; libtest names each test's thread after it.
pub(crate) fn report_skipped(reason: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("(unnamed test)");
    // Ignored: a report that cannot be written must not fail the test it reports on.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_under_test_are_exactly_the_available_ones() {
        assert_eq!(backends_under_test(), Backend::available());
    }
}
