//! `--lock` and `--backend`: the mutex a lock-based kernel (`round`, `trapezoid`) uses.
//!
//! The names are parbench-atomics' [`MutexKind`]s: its spin locks (`tas`, `ttas`, `ticket`) on an
//! atomics [`Backend`] (`lse`, `llsc`, `portable`; by default the best this CPU has), or `std`
//! for `std::sync::Mutex`. Kernels declare the two parameters with [`LOCK_PARAM`] and
//! [`BACKEND_PARAM`] and read them with [`lock_choice`], so every lock-based kernel accepts the
//! same names with the same defaults, and record the backend they ran on with [`param_value`].

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

/// What a lock-based kernel records as its `lock` and `backend` when a run takes no lock
/// (trapezoid's lock-less methods): `-`, the label `locks` gives a lock without a backend of
/// ours ([`parbench_atomics::NO_BACKEND`]).
pub(crate) const NO_LOCK: &str = parbench_atomics::NO_BACKEND;

/// The mutex kind and backend `params` choose for `kernel`.
///
/// The backend is only parsed here; whether this CPU can run it shows when a lock is built. A
/// backend given beside `std` (the default lock) is an error: `std::sync::Mutex` has none, and
/// the run would be recorded under a backend it never used. Only a backend not given defaults to
/// the best available; an empty one given is refused as any unknown name.
pub(crate) fn lock_choice(
    kernel: &dyn Kernel,
    params: &Params,
) -> Result<(MutexKind, Backend), KernelError> {
    let lock = params.get_str(kernel, LOCK_PARAM.name)?;
    let kind = lock
        .parse::<MutexKind>()
        .map_err(|error| bad_param(kernel, LOCK_PARAM.name, lock, &error.to_string()))?;
    // Whether the backend was given, not whether it is empty: an empty `--backend ""` is a
    // backend given, and no backend's name.
    let backend = match params.given(BACKEND_PARAM.name) {
        None => Backend::best(),
        Some(name) => {
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

/// [`Kernel::param_value`] of a lock-based kernel: `backend` is the one its lock runs on
/// ([`MutexKind::backend_label`]: the best available unless given, none for `std`), not the
/// empty default; every other parameter as given or declared.
pub(crate) fn param_value(
    kernel: &dyn Kernel,
    params: &Params,
    name: &str,
) -> Result<String, KernelError> {
    if name == BACKEND_PARAM.name {
        let (kind, backend) = lock_choice(kernel, params)?;
        return Ok(kind.backend_label(backend).to_owned());
    }
    params.get_str(kernel, name).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use parbench_atomics::NO_BACKEND;

    use super::*;
    use crate::find_kernel;

    #[test]
    fn the_recorded_backend_is_the_one_the_lock_runs_on() {
        for name in ["round", "trapezoid"] {
            let kernel = find_kernel(name).unwrap();
            let backend = |params: &Params| kernel.param_value(params, "backend").unwrap();
            // The default lock is std::sync::Mutex: no backend of ours, as `locks` labels it.
            assert_eq!(backend(&Params::new()), NO_BACKEND, "{name}");
            assert_eq!(backend(&Params::new().with("lock", "std")), NO_BACKEND);
            let tas = Params::new().with("lock", "tas");
            assert_eq!(backend(&tas), Backend::best().name(), "{name}");
            let portable = tas.with("backend", "portable");
            assert_eq!(backend(&portable), "portable", "{name}");
            // The other parameters are recorded as given or declared.
            assert_eq!(kernel.param_value(&portable, "lock").unwrap(), "tas");
            assert_eq!(kernel.param_value(&Params::new(), "lock").unwrap(), "std");
        }
    }

    #[test]
    fn an_empty_backend_given_is_refused_not_taken_for_the_default() {
        for name in ["round", "trapezoid"] {
            let kernel = find_kernel(name).unwrap();
            for lock in ["tas", "std"] {
                let params = Params::new().with("lock", lock).with("backend", "");
                match lock_choice(kernel, &params) {
                    Err(KernelError::BadParam {
                        name: refused,
                        reason,
                        ..
                    }) => {
                        assert_eq!(refused, "backend", "{name} {lock}");
                        assert!(
                            reason.contains("unknown backend"),
                            "{name} {lock}: {reason}"
                        );
                    }
                    other => panic!("{name} with lock {lock} and backend \"\": {other:?}"),
                }
            }
        }
    }
}
