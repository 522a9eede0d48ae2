//! The read-modify-write instructions of each backend, one file per architecture and backend.
//!
//! A backend is a type implementing [`AtomicOps`]: for the locks' 32-bit words acquire swap,
//! acquire compare-and-swap (general and against zero), acquire fetch-add and release store; for
//! the 64-bit counter and word acquire-release fetch-add, compare-and-swap and unsigned minimum.
//! The lock algorithms (`tas.rs`, `ttas.rs`, `ticket.rs`), the counter and the word are written
//! once, generic over `AtomicOps`, and each backend file instantiates all of them with
//! [`entry_points!`]. The instantiations are the crate's *entry points*:
//!
//! - `#[inline(never)]` with a stable symbol `parbench_atomics_<backend>_<operation>` (for example
//!   `parbench_atomics_lse_tas_lock`), so `scripts/test-aarch64.sh` can find each lock × backend
//!   function in `objdump -d` and count its instructions;
//! - the primitives and algorithms are `#[inline(always)]`, so each entry point contains its
//!   backend's instructions directly rather than calls to them;
//! - the LSE entry points carry `#[target_feature(enable = "lse")]` (the assembler rejects LSE
//!   mnemonics anywhere else) and are `unsafe`: they are reached only through [`dispatch!`] with a
//!   [`Detected::Lse`](crate::backend::Detected) value, which exists only after run-time detection.

use std::sync::atomic::{AtomicU32, AtomicU64};

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64_llsc;
#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64_lse;
pub(crate) mod portable;

/// The atomic primitives one backend provides; orderings are part of each method's contract.
///
/// # Safety
///
/// Implementations must perform each operation atomically with at least the stated ordering.
/// Callers of the methods must make sure the CPU supports the implementation's instructions.
pub(crate) unsafe trait AtomicOps {
    /// Stores `new`, returns the previous value; acquire ordering.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn swap_acquire(word: &AtomicU32, new: u32) -> u32;

    /// Stores `new` if the value equals `expected`; returns the previous value either way
    /// (success means the result equals `expected`); acquire ordering on success.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn compare_swap_acquire(word: &AtomicU32, expected: u32, new: u32) -> u32;

    /// [`compare_swap_acquire`](Self::compare_swap_acquire) with `expected == 0`: the TTAS
    /// lock's take. LL/SC overrides it to test with `CBNZ` as in the study's listing 2.1.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    #[inline(always)]
    unsafe fn compare_zero_swap_acquire(word: &AtomicU32, new: u32) -> u32 {
        // SAFETY: forwarded contract.
        unsafe { Self::compare_swap_acquire(word, 0, new) }
    }

    /// Adds `addend` (wrapping), returns the previous value; acquire ordering.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn fetch_add_acquire(word: &AtomicU32, addend: u32) -> u32;

    /// Stores `value` with release ordering.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn store_release(word: &AtomicU32, value: u32);

    /// Adds `addend` (wrapping), returns the previous value; acquire-release ordering.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn fetch_add_acq_rel(counter: &AtomicU64, addend: u64) -> u64;

    /// Stores `new` if the 64-bit value equals `expected`; returns the previous value either way
    /// (success means the result equals `expected`); acquire-release ordering on success, acquire
    /// on failure.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn compare_swap_acq_rel_u64(word: &AtomicU64, expected: u64, new: u64) -> u64;

    /// Stores the unsigned minimum of the value and `value`, returns the previous value;
    /// acquire-release ordering.
    ///
    /// # Safety
    /// The CPU supports the implementor's instructions.
    unsafe fn fetch_min_acq_rel_u64(word: &AtomicU64, value: u64) -> u64;
}

/// Instantiates every lock algorithm and the counter for one backend as non-inlined entry points
/// named `<prefix><operation>`; extra attributes (the LSE target feature) go on each of them.
macro_rules! entry_points {
    ($ops:ty, $prefix:literal $(, #[$feature:meta])*) => {
        /// Test-and-set acquire. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "tas_lock")]
        pub(crate) unsafe fn tas_lock(word: &std::sync::atomic::AtomicU32) {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { crate::tas::lock::<$ops>(word) }
        }

        /// Test-and-set try-acquire. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "tas_try_lock")]
        pub(crate) unsafe fn tas_try_lock(word: &std::sync::atomic::AtomicU32) -> bool {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { crate::tas::try_lock::<$ops>(word) }
        }

        /// Test-and-test-and-set acquire. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "ttas_lock")]
        pub(crate) unsafe fn ttas_lock(word: &std::sync::atomic::AtomicU32) {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { crate::ttas::lock::<$ops>(word) }
        }

        /// Test-and-test-and-set try-acquire. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "ttas_try_lock")]
        pub(crate) unsafe fn ttas_try_lock(word: &std::sync::atomic::AtomicU32) -> bool {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { crate::ttas::try_lock::<$ops>(word) }
        }

        /// Release of a TAS or TTAS lock word. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "word_unlock")]
        pub(crate) unsafe fn word_unlock(word: &std::sync::atomic::AtomicU32) {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { <$ops as crate::arch::AtomicOps>::store_release(word, 0) }
        }

        /// Ticket acquire. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "ticket_lock")]
        pub(crate) unsafe fn ticket_lock(
            next: &std::sync::atomic::AtomicU32,
            serving: &std::sync::atomic::AtomicU32,
        ) {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { crate::ticket::lock::<$ops>(next, serving) }
        }

        /// Ticket try-acquire. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "ticket_try_lock")]
        pub(crate) unsafe fn ticket_try_lock(
            next: &std::sync::atomic::AtomicU32,
            serving: &std::sync::atomic::AtomicU32,
        ) -> bool {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { crate::ticket::try_lock::<$ops>(next, serving) }
        }

        /// Ticket release. # Safety: the CPU supports this backend; the caller holds the lock.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "ticket_unlock")]
        pub(crate) unsafe fn ticket_unlock(serving: &std::sync::atomic::AtomicU32) {
            // SAFETY: the caller guarantees the CPU supports this backend and holds the lock.
            unsafe { crate::ticket::unlock::<$ops>(serving) }
        }

        /// Counter fetch-add. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "counter_fetch_add")]
        pub(crate) unsafe fn counter_fetch_add(
            counter: &std::sync::atomic::AtomicU64,
            addend: u64,
        ) -> u64 {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { <$ops as crate::arch::AtomicOps>::fetch_add_acq_rel(counter, addend) }
        }

        /// 64-bit compare-and-swap. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "word_compare_exchange")]
        pub(crate) unsafe fn word_compare_exchange(
            word: &std::sync::atomic::AtomicU64,
            expected: u64,
            new: u64,
        ) -> u64 {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe {
                <$ops as crate::arch::AtomicOps>::compare_swap_acq_rel_u64(word, expected, new)
            }
        }

        /// 64-bit unsigned fetch-min. # Safety: the CPU supports this backend.
        $(#[$feature])*
        #[inline(never)]
        #[export_name = concat!($prefix, "word_fetch_min")]
        pub(crate) unsafe fn word_fetch_min(word: &std::sync::atomic::AtomicU64, value: u64) -> u64 {
            // SAFETY: the caller guarantees the CPU supports this backend.
            unsafe { <$ops as crate::arch::AtomicOps>::fetch_min_acq_rel_u64(word, value) }
        }
    };
}
pub(crate) use entry_points;

/// Calls the entry point `$entry` of the backend a [`Detected`](crate::backend::Detected) value
/// names. Every arm is `unsafe` because every entry point requires CPU support for its backend; the
/// `Detected` value is the evidence of that support.
macro_rules! dispatch {
    ($detected:expr, $entry:ident($($arg:expr),* $(,)?)) => {
        match $detected {
            crate::backend::Detected::Portable => {
                // SAFETY: the portable backend uses only instructions of the compilation target.
                unsafe { crate::arch::portable::$entry($($arg),*) }
            }
            #[cfg(target_arch = "aarch64")]
            crate::backend::Detected::LlSc => {
                // SAFETY: LL/SC uses only ARMv8.0 instructions, which every aarch64 CPU has.
                unsafe { crate::arch::aarch64_llsc::$entry($($arg),*) }
            }
            #[cfg(target_arch = "aarch64")]
            crate::backend::Detected::Lse => {
                // SAFETY: `Detected::Lse` is created only after run-time detection found LSE.
                unsafe { crate::arch::aarch64_lse::$entry($($arg),*) }
            }
        }
    };
}
pub(crate) use dispatch;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use crate::test_workload::backends_under_test;

    /// Values that differ only in the upper 32 bits, or that carry into them: an instruction
    /// written with 32-bit (`w`) registers where the operation is 64-bit gets these wrong while
    /// the small values of the other tests still come out right.
    const LOW: u64 = 0x0000_0000_ffff_ffff;
    const HIGH: u64 = 0x0000_0001_0000_0000;

    /// The 64-bit entry points of every available backend on edge values, each checked against the
    /// result `core::sync::atomic` gives (the portable backend's contract) for the same inputs.
    #[test]
    fn every_backend_uses_all_64_bits() {
        for backend in backends_under_test() {
            let detected = backend.detect().unwrap();

            for (initial, expected, new) in [
                (LOW, LOW | HIGH, 7), // equal low halves, different high: must fail
                (HIGH, 0, 7),         // low halves both 0: must fail
                (LOW | HIGH, LOW | HIGH, u64::MAX), // equal: must succeed
                (u64::MAX, u64::MAX >> 1, 0), // differs in bit 63 only: must fail
            ] {
                let word = AtomicU64::new(initial);
                let previous = dispatch!(detected, word_compare_exchange(&word, expected, new));
                let reference = AtomicU64::new(initial);
                // Relaxed: one thread, the reference's ordering does not matter.
                let want = match reference.compare_exchange(
                    expected,
                    new,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(value) | Err(value) => value,
                };
                assert_eq!(
                    previous, want,
                    "{backend}: CAS {initial:#x} ?= {expected:#x}"
                );
                assert_eq!(
                    word.load(Ordering::Relaxed),
                    reference.load(Ordering::Relaxed),
                    "{backend}: CAS {initial:#x} ?= {expected:#x} -> {new:#x}"
                );
            }

            for (initial, value) in [
                (HIGH, LOW),
                (LOW, HIGH),
                (HIGH, HIGH | 1),
                (u64::MAX, 1 << 63),
            ] {
                let word = AtomicU64::new(initial);
                let previous = dispatch!(detected, word_fetch_min(&word, value));
                assert_eq!(
                    previous, initial,
                    "{backend}: min({initial:#x}, {value:#x})"
                );
                assert_eq!(
                    word.load(Ordering::Relaxed),
                    initial.min(value),
                    "{backend}: min({initial:#x}, {value:#x})"
                );
            }

            for (initial, addend) in [(LOW, 1), (LOW, LOW), (HIGH, HIGH), (u64::MAX, HIGH)] {
                let counter = AtomicU64::new(initial);
                let previous = dispatch!(detected, counter_fetch_add(&counter, addend));
                assert_eq!(previous, initial, "{backend}: {initial:#x} + {addend:#x}");
                assert_eq!(
                    counter.load(Ordering::Relaxed),
                    initial.wrapping_add(addend),
                    "{backend}: {initial:#x} + {addend:#x}"
                );
            }
        }
    }
}
