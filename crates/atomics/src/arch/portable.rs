//! Portable backend: `core::sync::atomic`, whatever instructions the compiler picks.
//!
//! On x86-64 that is `xchg`, `lock cmpxchg` and `lock xadd` (every locked RMW is a full barrier
//! there, so the orderings below cost nothing extra). On aarch64 Linux, Rust's default *outline
//! atomics* turn each RMW into a call that chooses LSE or LL/SC at run time; use the explicit
//! `lse`/`llsc` backends to know which one runs.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::AtomicOps;

/// Marker type selecting `core::sync::atomic` operations.
pub(crate) struct PortableOps;

// SAFETY: each method is one `core::sync::atomic` operation with the ordering the trait states.
unsafe impl AtomicOps for PortableOps {
    #[inline(always)]
    unsafe fn swap_acquire(word: &AtomicU32, new: u32) -> u32 {
        // Acquire: taking a lock must order the critical section after the previous holder's
        // release store.
        word.swap(new, Ordering::Acquire)
    }

    #[inline(always)]
    unsafe fn compare_swap_acquire(word: &AtomicU32, expected: u32, new: u32) -> u32 {
        // Acquire on success, for the same reason as `swap_acquire`; a failed compare takes
        // nothing, so Relaxed suffices there.
        match word.compare_exchange(expected, new, Ordering::Acquire, Ordering::Relaxed) {
            Ok(previous) | Err(previous) => previous,
        }
    }

    #[inline(always)]
    unsafe fn fetch_add_acquire(word: &AtomicU32, addend: u32) -> u32 {
        // Acquire: the trait promises it (the ticket lock's take mirrors LSE's LDADDA).
        word.fetch_add(addend, Ordering::Acquire)
    }

    #[inline(always)]
    unsafe fn store_release(word: &AtomicU32, value: u32) {
        // Release: publishes the critical section's writes to the next acquirer.
        word.store(value, Ordering::Release);
    }

    #[inline(always)]
    unsafe fn fetch_add_acq_rel(counter: &AtomicU64, addend: u64) -> u64 {
        // AcqRel: a counter used as a completion count must publish the caller's earlier writes
        // (release) and let the caller see writes of those who counted before (acquire).
        counter.fetch_add(addend, Ordering::AcqRel)
    }

    #[inline(always)]
    unsafe fn compare_swap_acq_rel_u64(word: &AtomicU64, expected: u64, new: u64) -> u64 {
        // AcqRel on success / Acquire on failure: the trait's ordering, the same on every backend
        // (CASAL on LSE, LDAXR + STLXR on LL/SC), so only the instructions differ between them.
        match word.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(previous) | Err(previous) => previous,
        }
    }

    #[inline(always)]
    unsafe fn fetch_min_acq_rel_u64(word: &AtomicU64, value: u64) -> u64 {
        // AcqRel: the trait's ordering (LDUMINAL on LSE), see `compare_swap_acq_rel_u64`.
        word.fetch_min(value, Ordering::AcqRel)
    }
}

super::entry_points!(PortableOps, "parbench_atomics_portable_");
