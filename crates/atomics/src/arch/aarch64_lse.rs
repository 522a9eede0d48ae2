//! ARMv8.1 LSE backend: single-instruction atomics (`SWPA`, `CASA`, `LDADDA`, `LDADDAL`, `CASAL`,
//! `LDUMINAL`).
//!
//! LSE instructions are executed where the cache line lives ("far atomics") instead of as an
//! exclusive-load / exclusive-store loop on the core. They are undefined on ARMv8.0 CPUs, so every
//! entry point of this file has `#[target_feature(enable = "lse")]` (without it the assembler rejects
//! the mnemonics) and is reachable only through a `Detected::Lse` value, which
//! `Backend::detect` creates after `is_aarch64_feature_detected!("lse")`. The `A`/`L` suffixes
//! carry the ordering: `A` = acquire, `AL` = acquire and release; `STLR` is a store-release.

use std::arch::asm;
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::AtomicOps;

/// Marker type selecting ARMv8.1 LSE instructions.
pub(crate) struct LseOps;

// SAFETY: each asm block is one single-copy-atomic LSE instruction (or STLR) with the ordering its
// comment states; callers guarantee the CPU has LSE (trait contract).
unsafe impl AtomicOps for LseOps {
    #[inline(always)]
    unsafe fn swap_acquire(word: &AtomicU32, new: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and aligned; the caller guarantees LSE.
        // Ordering: acquire (SWPA).
        unsafe {
            asm!(
                "swpa {new:w}, {previous:w}, [{addr}]",
                addr = in(reg) word.as_ptr(),
                new = in(reg) new,
                previous = out(reg) previous,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn compare_swap_acquire(word: &AtomicU32, expected: u32, new: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and aligned; the caller guarantees LSE. CASA compares
        // the register with memory and returns the old value in the same register.
        // Ordering: acquire (CASA); a failed compare takes nothing.
        unsafe {
            asm!(
                "casa {previous:w}, {new:w}, [{addr}]",
                addr = in(reg) word.as_ptr(),
                new = in(reg) new,
                previous = inout(reg) expected => previous,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn fetch_add_acquire(word: &AtomicU32, addend: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and aligned; the caller guarantees LSE.
        // Ordering: acquire (LDADDA).
        unsafe {
            asm!(
                "ldadda {addend:w}, {previous:w}, [{addr}]",
                addr = in(reg) word.as_ptr(),
                addend = in(reg) addend,
                previous = out(reg) previous,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn store_release(word: &AtomicU32, value: u32) {
        // SAFETY: forwarded contract. LSE adds no release store of its own: unlock is the ARMv8.0
        // STLR in both aarch64 backends, so only the acquiring RMW differs between them.
        unsafe { super::aarch64_llsc::LlScOps::store_release(word, value) }
    }

    #[inline(always)]
    unsafe fn fetch_add_acq_rel(counter: &AtomicU64, addend: u64) -> u64 {
        let previous: u64;
        // SAFETY: `counter.as_ptr()` is valid and 8-byte aligned; the caller guarantees LSE.
        // Ordering: acquire and release (LDADDAL), like `fetch_add(AcqRel)`.
        unsafe {
            asm!(
                "ldaddal {addend}, {previous}, [{addr}]",
                addr = in(reg) counter.as_ptr(),
                addend = in(reg) addend,
                previous = out(reg) previous,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn compare_swap_acq_rel_u64(word: &AtomicU64, expected: u64, new: u64) -> u64 {
        let previous: u64;
        // SAFETY: `word.as_ptr()` is valid and 8-byte aligned; the caller guarantees LSE. CASAL
        // compares the register with memory and returns the old value in the same register.
        // Ordering: acquire and release on success (CASAL), acquire on failure.
        unsafe {
            asm!(
                "casal {previous}, {new}, [{addr}]",
                addr = in(reg) word.as_ptr(),
                new = in(reg) new,
                previous = inout(reg) expected => previous,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn fetch_min_acq_rel_u64(word: &AtomicU64, value: u64) -> u64 {
        let previous: u64;
        // SAFETY: `word.as_ptr()` is valid and 8-byte aligned; the caller guarantees LSE.
        // Ordering: acquire and release (LDUMINAL: unsigned minimum, executed where the line lives).
        unsafe {
            asm!(
                "lduminal {value}, {previous}, [{addr}]",
                addr = in(reg) word.as_ptr(),
                value = in(reg) value,
                previous = out(reg) previous,
                options(nostack, preserves_flags),
            );
        }
        previous
    }
}

super::entry_points!(
    LseOps,
    "parbench_atomics_lse_",
    #[target_feature(enable = "lse")]
);
