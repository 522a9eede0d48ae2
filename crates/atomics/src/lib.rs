//! Spin locks and counters whose atomic instructions are fixed by construction.
//!
//! The question this crate answers is whether ARMv8.1 *far atomics* (LSE: `CAS`, `SWP`, `LDADD`,
//! executed in the cache hierarchy) beat ARMv8.0 load-linked/store-conditional loops
//! (`LDAXR`/`STXR`) for fine-grained synchronization. Comparing them through a C library or through
//! `core::sync::atomic` does not work: on aarch64 Linux both go through *outline atomics*, which pick
//! the instructions at run time, so two "different" builds run the same code. Here each
//! [`Backend`] has its own inline assembly:
//!
//! - [`Backend::Lse`]: `SWPA`, `CASA`, `LDADDA` for the locks, `LDADDAL`, `CASAL`, `LDUMINAL` for
//!   the counter and the word (only after run-time detection);
//! - [`Backend::LlSc`]: `LDAXR` … `STXR`/`STLXR` loops, one `asm!` block each, `CLREX` on a failed
//!   compare;
//! - [`Backend::Portable`]: `core::sync::atomic`, the only backend on x86-64.
//!
//! Unlock is a release store (`STLR`) for both aarch64 backends, and waiting is the same
//! [`core::hint::spin_loop`] (then yield) for all of them, so only the acquiring read-modify-write
//! differs. Locks: [`TasLock`] (swap), [`TtasLock`] (load, then compare-and-swap), [`TicketLock`]
//! (fetch-add tickets, FIFO), behind one [`RawLock`] trait, a data-owning [`SpinMutex`], and
//! run-time selection through [`LockKind`]/[`AnyLock`] and [`MutexKind`]/[`RuntimeMutex`] (which
//! adds `std::sync::Mutex`). [`AtomicCounter`] is the counter case and [`AtomicWord`] the compare-and-swap / minimum case;
//! [`lock_bench()`] measures
//! throughput and fairness.
//!
//! Each lock × backend operation is a non-inlined function with a stable symbol,
//! `parbench_atomics_<backend>_<operation>`, so `scripts/test-aarch64.sh` can check its
//! instructions in the disassembly.
//!
//! # Example
//!
//! ```
//! use parbench_atomics::{Backend, LockKind, SpinMutex};
//!
//! println!("backends on this CPU: {:?}", Backend::available());
//! let hits = SpinMutex::new(LockKind::Ttas, Backend::best(), 0_u64)?;
//! *hits.lock() += 1;
//! assert_eq!(hits.into_inner(), 1);
//! # Ok::<(), parbench_atomics::Error>(())
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

mod any_lock;
mod arch;
mod backend;
mod counter;
mod error;
mod lock_bench;
mod raw_lock;
mod runtime_mutex;
mod spin_mutex;
mod spin_wait;
mod tas;
#[cfg(test)]
mod test_workload;
mod ticket;
mod ttas;
mod word;

pub use any_lock::{AnyLock, LockKind};
pub use backend::Backend;
pub use counter::AtomicCounter;
pub use error::Error;
pub use lock_bench::{lock_bench, LockBenchRun};
pub use raw_lock::RawLock;
pub use runtime_mutex::{MutexKind, RuntimeMutex, RuntimeMutexGuard, NO_BACKEND};
pub use spin_mutex::{SpinMutex, SpinMutexGuard};
pub use tas::TasLock;
pub use ticket::TicketLock;
pub use ttas::TtasLock;
pub use word::AtomicWord;

/// The crate README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
