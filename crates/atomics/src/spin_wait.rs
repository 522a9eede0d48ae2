//! How a thread waits for a lock it could not take: the same for every lock and every backend.
//!
//! Each failed attempt first executes [`core::hint::spin_loop`] (on aarch64 current Rust emits
//! `ISB`, which stalls the core for roughly the latency of a cache miss and so paces the retry; on
//! x86-64 it is `PAUSE`). Keeping this identical across backends means a comparison of backends
//! measures only their read-modify-write instructions.
//!
//! After [`SPINS_BEFORE_YIELD`] failed attempts the waiter also yields to the operating system.
//! Pure spinning is the right model for one thread per core, but when threads outnumber cores (this
//! project's CI runs on 2 shared cores, and FIFO ticket locks hand the lock to a waiter that may not
//! be running) a spinning waiter would burn its whole time slice while the holder cannot run.

/// Spin attempts before the waiter starts yielding its time slice.
pub(crate) const SPINS_BEFORE_YIELD: u32 = 128;

/// Per-acquisition wait state: counts failed attempts to decide between spinning and yielding.
#[derive(Debug, Default)]
pub(crate) struct SpinWait {
    attempts: u32,
}

impl SpinWait {
    /// Waits a little before the next attempt.
    #[inline(always)]
    pub(crate) fn wait(&mut self) {
        core::hint::spin_loop();
        if self.attempts < SPINS_BEFORE_YIELD {
            self.attempts += 1;
        } else {
            std::thread::yield_now();
        }
    }
}
