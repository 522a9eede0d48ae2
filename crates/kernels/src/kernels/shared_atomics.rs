//! `--backend` of the search kernels (`qap`, `floorplan`, `nqueens`): which instructions their
//! shared atomics execute — the far-atomics study's question asked of the kernels themselves.
//!
//! - `std` (the default): `core::sync::atomic`, whatever this build compiles it to (on aarch64 that
//!   depends on the target features: see `scripts/test-aarch64.sh`'s whole-workspace LSE builds);
//! - `portable`, `lse`, `llsc`: parbench-atomics' [`AtomicWord`] and [`AtomicCounter`], whose
//!   instructions are fixed per backend (CASAL/LDUMINAL/LDADDAL vs LDAXR…STLXR loops).
//!
//! The word and the counter are built when the kernel is prepared (a backend this CPU lacks is a
//! parameter error then) and reused by every run.

use std::sync::atomic::{AtomicU64, Ordering};

use parbench_atomics::{AtomicCounter, AtomicWord, Backend};

use crate::kernel::{Kernel, KernelError, ParamSpec, Params, bad_param};

/// The `backend` parameter of the search kernels.
pub(crate) const ATOMICS_BACKEND_PARAM: ParamSpec = ParamSpec {
    name: "backend",
    default: "std",
    help: "instructions of the shared atomics: std (core::sync::atomic as compiled), portable, lse or llsc (parbench-atomics)",
};

/// Which implementation the shared atomics use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomicsBackend {
    /// `core::sync::atomic`.
    Std,
    /// parbench-atomics with this backend (available on this CPU).
    Fixed(Backend),
}

/// The backend `params` choose for `kernel` (parsed only).
fn atomics_backend(kernel: &dyn Kernel, params: &Params) -> Result<AtomicsBackend, KernelError> {
    match params.get_str(kernel, ATOMICS_BACKEND_PARAM.name)? {
        "" | "std" => Ok(AtomicsBackend::Std),
        name => name
            .parse()
            .map(AtomicsBackend::Fixed)
            .map_err(|error| invalid(kernel, name, error)),
    }
}

fn invalid(kernel: &dyn Kernel, name: &str, error: parbench_atomics::Error) -> KernelError {
    bad_param(
        kernel,
        ATOMICS_BACKEND_PARAM.name,
        name,
        &format!("{error} (or std)"),
    )
}

/// The shared word holding `initial` on the backend `params` choose for `kernel`.
///
/// # Errors
/// [`KernelError::BadParam`] for an unknown backend or one this CPU cannot run.
pub(crate) fn shared_word(
    kernel: &dyn Kernel,
    params: &Params,
    initial: u64,
) -> Result<SharedWord, KernelError> {
    let backend = atomics_backend(kernel, params)?;
    SharedWord::new(backend, initial).map_err(|error| {
        invalid(
            kernel,
            params
                .get_str(kernel, ATOMICS_BACKEND_PARAM.name)
                .unwrap_or(""),
            error,
        )
    })
}

/// The shared counter on the backend `params` choose for `kernel`.
///
/// # Errors
/// As [`shared_word`].
pub(crate) fn shared_counter(
    kernel: &dyn Kernel,
    params: &Params,
) -> Result<SharedCounter, KernelError> {
    let backend = atomics_backend(kernel, params)?;
    SharedCounter::new(backend).map_err(|error| {
        invalid(
            kernel,
            params
                .get_str(kernel, ATOMICS_BACKEND_PARAM.name)
                .unwrap_or(""),
            error,
        )
    })
}

/// A shared 64-bit word for a best bound: compare-exchange on the chosen backend.
#[derive(Debug)]
pub(crate) enum SharedWord {
    Std(AtomicU64),
    Fixed(AtomicWord),
}

impl SharedWord {
    /// A word holding `initial`.
    ///
    /// # Errors
    /// The backend is not available on this CPU.
    pub(crate) fn new(
        backend: AtomicsBackend,
        initial: u64,
    ) -> Result<Self, parbench_atomics::Error> {
        Ok(match backend {
            AtomicsBackend::Std => SharedWord::Std(AtomicU64::new(initial)),
            AtomicsBackend::Fixed(backend) => SharedWord::Fixed(AtomicWord::new(backend, initial)?),
        })
    }

    /// Sets the value between runs (`&mut`: no run is in progress).
    pub(crate) fn set(&mut self, value: u64) {
        match self {
            SharedWord::Std(word) => *word.get_mut() = value,
            SharedWord::Fixed(word) => word.set(value),
        }
    }

    /// The current value.
    pub(crate) fn load(&self) -> u64 {
        match self {
            // Relaxed: the bound is one value used only for comparisons (see `SharedMinimum`).
            SharedWord::Std(word) => word.load(Ordering::Relaxed),
            SharedWord::Fixed(word) => word.load(),
        }
    }

    /// Stores `new` if the value is `current`; `Err(actual)` otherwise.
    pub(crate) fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        match self {
            // Relaxed: as in `load`; the data behind the bound is published under a mutex.
            SharedWord::Std(word) => {
                word.compare_exchange(current, new, Ordering::Relaxed, Ordering::Relaxed)
            }
            SharedWord::Fixed(word) => word.compare_exchange(current, new),
        }
    }
}

/// A shared 64-bit counter: fetch-add on the chosen backend.
#[derive(Debug)]
pub(crate) enum SharedCounter {
    Std(AtomicU64),
    Fixed(AtomicCounter),
}

impl SharedCounter {
    /// A counter at 0.
    ///
    /// # Errors
    /// The backend is not available on this CPU.
    pub(crate) fn new(backend: AtomicsBackend) -> Result<Self, parbench_atomics::Error> {
        Ok(match backend {
            AtomicsBackend::Std => SharedCounter::Std(AtomicU64::new(0)),
            AtomicsBackend::Fixed(backend) => SharedCounter::Fixed(AtomicCounter::new(backend)?),
        })
    }

    /// Adds `value`.
    pub(crate) fn add(&self, value: u64) {
        match self {
            // Relaxed: only the sum matters; the executor's wait for all tasks orders the adds
            // before the final read.
            SharedCounter::Std(counter) => {
                counter.fetch_add(value, Ordering::Relaxed);
            }
            SharedCounter::Fixed(counter) => {
                counter.fetch_add(value);
            }
        }
    }

    /// The current value.
    pub(crate) fn load(&self) -> u64 {
        match self {
            // Relaxed: read after the executor joined every task that added.
            SharedCounter::Std(counter) => counter.load(Ordering::Relaxed),
            SharedCounter::Fixed(counter) => counter.load(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_compares_exchanges_and_counts() {
        let mut backends = vec![AtomicsBackend::Std];
        backends.extend(Backend::available().into_iter().map(AtomicsBackend::Fixed));
        for backend in backends {
            let mut word = SharedWord::new(backend, 9).unwrap();
            assert_eq!(word.compare_exchange(8, 1), Err(9), "{backend:?}");
            assert_eq!(word.compare_exchange(9, 1), Ok(9), "{backend:?}");
            word.set(5);
            assert_eq!(word.load(), 5, "{backend:?}");
            let counter = SharedCounter::new(backend).unwrap();
            counter.add(3);
            counter.add(4);
            assert_eq!(counter.load(), 7, "{backend:?}");
            let expected_fixed = !matches!(backend, AtomicsBackend::Std);
            assert_eq!(matches!(word, SharedWord::Fixed(_)), expected_fixed);
            assert_eq!(matches!(counter, SharedCounter::Fixed(_)), expected_fixed);
        }
    }
}
