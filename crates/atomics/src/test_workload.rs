//! Sizes of the contention tests, shared by the unit tests of the locks and the counter.

/// Threads in every contention test: more than this machine's cores, so holders get preempted.
pub(crate) const THREADS: usize = 4;

/// Acquisitions per thread, the workload (about 1 s for the whole suite in a debug build on
/// the 2-core CI machine).
pub(crate) const PER_THREAD: u64 = 100_000;
