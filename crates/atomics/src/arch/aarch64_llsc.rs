//! ARMv8.0 backend: load-linked / store-conditional loops (`LDAXR` … `STXR`/`STLXR`) in inline asm.
//!
//! Every retry loop is one `asm!` block, so no compiler-generated load or store can land between
//! the exclusive load and the exclusive store (which could clear the monitor and make the loop spin
//! forever). The `A`/`L` in the mnemonics carry the ordering: `LDAXR` is a load-acquire, `STLXR` a
//! store-release, `STLR` a plain store-release. A compare that fails executes `CLREX` so the
//! exclusive monitor is not left armed. Local labels are numeric (`2:`), as `asm!` requires.

use std::arch::asm;
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::AtomicOps;

/// Marker type selecting ARMv8.0 exclusive-access loops.
pub(crate) struct LlScOps;

// SAFETY: each asm block below is an atomic RMW (an exclusive pair retried until the store-exclusive
// succeeds) or a single store, with the ordering its comment states; every aarch64 CPU has them.
unsafe impl AtomicOps for LlScOps {
    #[inline(always)]
    unsafe fn swap_acquire(word: &AtomicU32, new: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and 4-byte aligned for the lifetime of the borrow;
        // the exclusive pair is retried until STXR reports success (status 0).
        // Ordering: acquire (LDAXR); taking a lock needs no release, the unlock's STLR publishes.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous:w}, [{addr}]",
                "stxr {status:w}, {new:w}, [{addr}]",
                "cbnz {status:w}, 2b",
                addr = in(reg) word.as_ptr(),
                new = in(reg) new,
                previous = out(reg) previous,
                status = out(reg) _,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn compare_swap_acquire(word: &AtomicU32, expected: u32, new: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and aligned; a mismatch leaves through CLREX without
        // storing, a lost reservation retries from LDAXR.
        // Ordering: acquire (LDAXR) on success; a failed compare takes nothing.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous:w}, [{addr}]",
                "cmp {previous:w}, {expected:w}",
                "b.ne 3f",
                "stxr {status:w}, {new:w}, [{addr}]",
                "cbnz {status:w}, 2b",
                "b 4f",
                "3:",
                "clrex",
                "4:",
                addr = in(reg) word.as_ptr(),
                expected = in(reg) expected,
                new = in(reg) new,
                previous = out(reg) previous,
                status = out(reg) _,
                options(nostack),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn compare_zero_swap_acquire(word: &AtomicU32, new: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and aligned; a non-zero value leaves through CLREX
        // without storing, a lost reservation retries from LDAXR. This is the study's listing 2.1
        // (LDAXR, CBNZ, STXR, CBNZ).
        // Ordering: acquire (LDAXR) on success; a failed compare takes nothing.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous:w}, [{addr}]",
                "cbnz {previous:w}, 3f",
                "stxr {status:w}, {new:w}, [{addr}]",
                "cbnz {status:w}, 2b",
                "b 4f",
                "3:",
                "clrex",
                "4:",
                addr = in(reg) word.as_ptr(),
                new = in(reg) new,
                previous = out(reg) previous,
                status = out(reg) _,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn fetch_add_acquire(word: &AtomicU32, addend: u32) -> u32 {
        let previous: u32;
        // SAFETY: `word.as_ptr()` is valid and aligned; retried until STXR succeeds.
        // Ordering: acquire (LDAXR), matching LSE's LDADDA.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous:w}, [{addr}]",
                "add {sum:w}, {previous:w}, {addend:w}",
                "stxr {status:w}, {sum:w}, [{addr}]",
                "cbnz {status:w}, 2b",
                addr = in(reg) word.as_ptr(),
                addend = in(reg) addend,
                previous = out(reg) previous,
                sum = out(reg) _,
                status = out(reg) _,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn store_release(word: &AtomicU32, value: u32) {
        // SAFETY: `word.as_ptr()` is valid and aligned; a single aligned store is atomic.
        // Ordering: release (STLR) publishes the critical section to the next acquirer.
        unsafe {
            asm!(
                "stlr {value:w}, [{addr}]",
                addr = in(reg) word.as_ptr(),
                value = in(reg) value,
                options(nostack, preserves_flags),
            );
        }
    }

    #[inline(always)]
    unsafe fn fetch_add_acq_rel(counter: &AtomicU64, addend: u64) -> u64 {
        let previous: u64;
        // SAFETY: `counter.as_ptr()` is valid and 8-byte aligned; retried until STLXR succeeds.
        // Ordering: acquire (LDAXR) + release (STLXR), what LLVM emits for an ARMv8.0 AcqRel RMW
        // and the LL/SC counterpart of LDADDAL.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous}, [{addr}]",
                "add {sum}, {previous}, {addend}",
                "stlxr {status:w}, {sum}, [{addr}]",
                "cbnz {status:w}, 2b",
                addr = in(reg) counter.as_ptr(),
                addend = in(reg) addend,
                previous = out(reg) previous,
                sum = out(reg) _,
                status = out(reg) _,
                options(nostack, preserves_flags),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn compare_swap_acq_rel_u64(word: &AtomicU64, expected: u64, new: u64) -> u64 {
        let previous: u64;
        // SAFETY: `word.as_ptr()` is valid and 8-byte aligned; LL and SC stay in this one block
        // with nothing but the compare between them; a failed compare clears the monitor (CLREX).
        // Ordering: acquire (LDAXR) + release (STLXR) on success, acquire on failure — CASAL's.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous}, [{addr}]",
                "cmp {previous}, {expected}",
                "b.ne 3f",
                "stlxr {status:w}, {new}, [{addr}]",
                "cbnz {status:w}, 2b",
                "b 4f",
                "3:",
                "clrex",
                "4:",
                addr = in(reg) word.as_ptr(),
                expected = in(reg) expected,
                new = in(reg) new,
                previous = out(reg) previous,
                status = out(reg) _,
                options(nostack),
            );
        }
        previous
    }

    #[inline(always)]
    unsafe fn fetch_min_acq_rel_u64(word: &AtomicU64, value: u64) -> u64 {
        let previous: u64;
        // SAFETY: `word.as_ptr()` is valid and 8-byte aligned; retried until STLXR succeeds; the
        // minimum is chosen with CMP/CSEL between LL and SC (no memory access in between).
        // Ordering: acquire (LDAXR) + release (STLXR), LDUMINAL's.
        unsafe {
            asm!(
                "2:",
                "ldaxr {previous}, [{addr}]",
                "cmp {previous}, {value}",
                "csel {min}, {previous}, {value}, ls",
                "stlxr {status:w}, {min}, [{addr}]",
                "cbnz {status:w}, 2b",
                addr = in(reg) word.as_ptr(),
                value = in(reg) value,
                previous = out(reg) previous,
                min = out(reg) _,
                status = out(reg) _,
                options(nostack),
            );
        }
        previous
    }
}

super::entry_points!(LlScOps, "parbench_atomics_llsc_");
