//! Which instructions a lock or counter uses for its read-modify-write operations.
//!
//! A [`Backend`] is a name; a [`Detected`] backend is a proof that this CPU can execute it. Locks and
//! counters store only the proof, and the proof for [`Backend::Lse`] exists only after
//! `is_aarch64_feature_detected!("lse")` said yes. That is how no code path can reach an LSE
//! instruction on an ARMv8.0 CPU (where it would die with `SIGILL`): the functions containing LSE
//! instructions are called only through a `Detected::Lse` value.
//!
//! On architectures other than aarch64, `Detected` has only the `Portable` variant, so the match
//! statements that dispatch on it need no unreachable arms.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The instruction family a lock or counter uses for its atomic read-modify-write operations.
///
/// | backend    | where                         | locks: swap / CAS / fetch-add | 64-bit: fetch-add / CAS / min |
/// |------------|-------------------------------|-------------------------------|-------------------------------|
/// | `Lse`      | aarch64 CPUs with ARMv8.1 LSE | `SWPA` / `CASA` / `LDADDA`    | `LDADDAL` / `CASAL` / `LDUMINAL` |
/// | `LlSc`     | every aarch64 CPU (ARMv8.0)   | `LDAXR` … `STXR` loops        | `LDAXR` … `STLXR` loops       |
/// | `Portable` | everywhere                    | `core::sync::atomic` (compiler's choice) | the same           |
///
/// Release stores (unlock) are `STLR` on both aarch64 backends. `Portable` on x86-64 compiles to
/// `xchg` / `lock cmpxchg` / `lock xadd`; on aarch64 Linux it compiles to Rust's *outline atomics*,
/// which pick LSE or LL/SC at run time inside a library call — the very ambiguity the two explicit
/// backends remove.
///
/// # Example
///
/// ```
/// use parbench_atomics::Backend;
///
/// // `Portable` runs everywhere, so `best()` always returns an available backend.
/// assert!(Backend::Portable.is_available());
/// assert!(Backend::available().contains(&Backend::best()));
/// let backend: Backend = "llsc".parse().unwrap();
/// assert_eq!(backend, Backend::LlSc);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// ARMv8.1 Large System Extensions: single-instruction atomics executed in the cache hierarchy.
    Lse,
    /// ARMv8.0 load-linked / store-conditional (exclusive load, exclusive store, retry on failure).
    LlSc,
    /// `core::sync::atomic`, whatever the compiler emits for the target.
    Portable,
}

impl Backend {
    /// Every backend, best first (the order [`Backend::best`] prefers).
    ///
    /// ```
    /// use parbench_atomics::Backend;
    /// let names: Vec<_> = Backend::ALL.iter().map(|b| b.name()).collect();
    /// assert_eq!(names, ["lse", "llsc", "portable"]);
    /// ```
    pub const ALL: [Backend; 3] = [Backend::Lse, Backend::LlSc, Backend::Portable];

    /// The backend's name as accepted by [`FromStr`]: `lse`, `llsc` or `portable`.
    ///
    /// ```
    /// assert_eq!(parbench_atomics::Backend::LlSc.name(), "llsc");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Backend::Lse => "lse",
            Backend::LlSc => "llsc",
            Backend::Portable => "portable",
        }
    }

    /// Whether this CPU can run the backend's instructions.
    ///
    /// ```
    /// use parbench_atomics::Backend;
    /// // LL/SC is available exactly on aarch64.
    /// assert_eq!(Backend::LlSc.is_available(), cfg!(target_arch = "aarch64"));
    /// ```
    pub fn is_available(self) -> bool {
        self.detect().is_ok()
    }

    /// The backends this CPU can run, best first.
    ///
    /// ```
    /// use parbench_atomics::Backend;
    /// assert_eq!(Backend::available().last(), Some(&Backend::Portable));
    /// ```
    pub fn available() -> Vec<Backend> {
        Backend::ALL
            .into_iter()
            .filter(|backend| backend.is_available())
            .collect()
    }

    /// The first available backend of [`Backend::ALL`]: `Lse` on ARMv8.1+, `LlSc` on ARMv8.0,
    /// `Portable` elsewhere.
    ///
    /// ```
    /// use parbench_atomics::Backend;
    /// assert!(Backend::best().is_available());
    /// ```
    pub fn best() -> Backend {
        Backend::available()
            .first()
            .copied()
            .unwrap_or(Backend::Portable)
    }

    /// Returns the backend itself if this CPU can run it, else the reason why not.
    ///
    /// ```
    /// use parbench_atomics::{Backend, Error};
    /// # #[cfg(not(target_arch = "aarch64"))]
    /// assert!(matches!(
    ///     Backend::Lse.require(),
    ///     Err(Error::BackendUnavailable { backend: Backend::Lse, .. })
    /// ));
    /// assert_eq!(Backend::Portable.require().unwrap(), Backend::Portable);
    /// ```
    pub fn require(self) -> Result<Backend, Error> {
        self.detect().map(Detected::backend)
    }

    /// Checks at run time whether this CPU can execute the backend's instructions.
    pub(crate) fn detect(self) -> Result<Detected, Error> {
        match self {
            Backend::Portable => Ok(Detected::Portable),
            #[cfg(target_arch = "aarch64")]
            Backend::LlSc => Ok(Detected::LlSc),
            #[cfg(target_arch = "aarch64")]
            Backend::Lse => {
                if std::arch::is_aarch64_feature_detected!("lse") {
                    Ok(Detected::Lse)
                } else {
                    Err(Error::BackendUnavailable {
                        backend: self,
                        reason: "the CPU lacks ARMv8.1 LSE atomics",
                    })
                }
            }
            #[cfg(not(target_arch = "aarch64"))]
            Backend::Lse | Backend::LlSc => Err(Error::BackendUnavailable {
                backend: self,
                reason: "it exists only on aarch64",
            }),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|backend| backend.name() == name)
            .ok_or_else(|| Error::UnknownBackend {
                name: name.to_owned(),
            })
    }
}

/// A backend this CPU was found able to run; only [`Backend::detect`] creates one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detected {
    #[cfg(target_arch = "aarch64")]
    Lse,
    #[cfg(target_arch = "aarch64")]
    LlSc,
    Portable,
}

impl Detected {
    pub(crate) fn backend(self) -> Backend {
        match self {
            #[cfg(target_arch = "aarch64")]
            Detected::Lse => Backend::Lse,
            #[cfg(target_arch = "aarch64")]
            Detected::LlSc => Backend::LlSc,
            Detected::Portable => Backend::Portable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_from_str() {
        for backend in Backend::ALL {
            assert_eq!(backend.name().parse::<Backend>().ok(), Some(backend));
        }
    }

    #[test]
    fn unknown_name_lists_valid_names() {
        let message = "x86".parse::<Backend>().unwrap_err().to_string();
        assert!(message.contains("lse, llsc, portable"), "{message}");
    }

    #[test]
    fn best_is_the_first_available_backend() {
        let available = Backend::available();
        assert_eq!(available.first(), Some(&Backend::best()));
        assert_eq!(available.last(), Some(&Backend::Portable));
    }

    #[cfg(not(target_arch = "aarch64"))]
    #[test]
    fn arm_backends_are_unavailable_off_aarch64() {
        assert_eq!(Backend::available(), vec![Backend::Portable]);
        for backend in [Backend::Lse, Backend::LlSc] {
            assert!(matches!(
                backend.require(),
                Err(Error::BackendUnavailable { backend: b, .. }) if b == backend
            ));
        }
    }

    /// Checks the CPU the aarch64 test runner promised via `PARBENCH_EXPECT_LSE` (1 = `-cpu max`,
    /// 0 = `-cpu cortex-a57`), so an emulator that silently ignored `-cpu` would fail here.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn detection_matches_the_emulated_cpu() {
        assert_eq!(Backend::LlSc.require().ok(), Some(Backend::LlSc));
        match std::env::var("PARBENCH_EXPECT_LSE").as_deref() {
            Ok("1") => {
                assert_eq!(Backend::best(), Backend::Lse);
                assert_eq!(Backend::Lse.require().ok(), Some(Backend::Lse));
            }
            Ok("0") => {
                assert_eq!(Backend::best(), Backend::LlSc);
                assert!(matches!(
                    Backend::Lse.require(),
                    Err(Error::BackendUnavailable {
                        backend: Backend::Lse,
                        ..
                    })
                ));
            }
            _ => crate::test_workload::report_skipped(
                "PARBENCH_EXPECT_LSE is not 0 or 1, so the expected CPU is unknown",
            ),
        }
    }
}
