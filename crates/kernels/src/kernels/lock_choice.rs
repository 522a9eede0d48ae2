//! `--lock` and `--backend`: the mutex a lock-based kernel (`round`, `trapezoid`) uses.
//!
//! The names are parbench-atomics' [`MutexKind`]s: its spin locks (`tas`, `ttas`, `ticket`) on an
//! atomics [`Backend`] (`lse`, `llsc`, `portable`; by default the best this CPU has), or `std`
//! for `std::sync::Mutex`. Kernels declare the two parameters with [`LOCK_PARAM`] and
//! [`BACKEND_PARAM`] and read them with [`lock_choice`], so every lock-based kernel accepts the
//! same names with the same defaults.

use parbench_atomics::{Backend, MutexKind};

use crate::kernel::{Kernel, KernelError, ParamSpec, Params, bad_param};

/// The `lock` parameter.
pub(crate) const LOCK_PARAM: ParamSpec = ParamSpec {
    name: "lock",
    default: "std",
    help: "lock: tas, ttas, ticket (parbench-atomics spin locks) or std (std::sync::Mutex)",
};

/// The `backend` parameter.
pub(crate) const BACKEND_PARAM: ParamSpec = ParamSpec {
    name: "backend",
    default: "",
    help: "atomics backend of the spin locks: lse, llsc or portable (default: the best available)",
};

/// The mutex kind and backend `params` choose for `kernel`.
///
/// The backend is only parsed here; whether this CPU can run it shows when a lock is built. A
/// backend given beside `std` (the default lock) is an error: `std::sync::Mutex` has none, and
/// the run would be recorded under a backend it never used.
pub(crate) fn lock_choice(
    kernel: &dyn Kernel,
    params: &Params,
) -> Result<(MutexKind, Backend), KernelError> {
    let lock = params.get_str(kernel, LOCK_PARAM.name)?;
    let kind = lock
        .parse::<MutexKind>()
        .map_err(|error| bad_param(kernel, LOCK_PARAM.name, lock, &error.to_string()))?;
    let backend = match params.get_str(kernel, BACKEND_PARAM.name)? {
        "" => Backend::best(),
        name => {
            let backend = name.parse().map_err(|error: parbench_atomics::Error| {
                bad_param(kernel, BACKEND_PARAM.name, name, &error.to_string())
            })?;
            if kind == MutexKind::Std {
                return Err(bad_param(
                    kernel,
                    BACKEND_PARAM.name,
                    name,
                    "only a spin lock (lock tas, ttas or ticket) has an atomics backend; lock std \
                     (the default) is std::sync::Mutex",
                ));
            }
            backend
        }
    };
    Ok((kind, backend))
}
