//! What a panic in the scheduler's own bookkeeping does: it aborts the process.
//!
//! A user's code never panics through the scheduler's frames: loop bodies run inside
//! `LoopCall::run`, tasks and `join`'s closures inside their jobs, each of which catches the
//! panic and hands it to the call that waits for it. Every other panic is a bug of the scheduler
//! (an arithmetic overflow, a failed assertion) and must not unwind while a call's work is out:
//! the shares and balancing tasks other threads run point into the frame of the thread that made
//! the call, so unwinding out of it would free memory those threads still use, and a job that
//! swallowed such a panic would leave its call's count held forever. rayon-core aborts in these
//! places for the same reason.

use std::mem;
use std::process;

/// Runs `f`; if it unwinds, prints what was interrupted and aborts the process.
///
/// `during` completes the sentence "a panic inside the scheduler while …" (the panic hook has
/// already printed the panic itself).
#[inline]
pub(crate) fn abort_on_unwind<R>(during: &'static str, f: impl FnOnce() -> R) -> R {
    let guard = AbortOnDrop::new(during);
    let result = f();
    guard.disarm();
    result
}

/// Aborts the process if dropped by unwinding: [`disarm`](Self::disarm) it when the guarded
/// code returned. The form for hot paths whose code should not move into a closure (a nested
/// loop call's whole bookkeeping, `run_loop_entered`).
pub(crate) struct AbortOnDrop {
    during: &'static str,
}

impl AbortOnDrop {
    /// Guards until [`disarm`](Self::disarm); `during` as for [`abort_on_unwind`].
    #[inline]
    pub(crate) fn new(during: &'static str) -> Self {
        AbortOnDrop { during }
    }

    /// The guarded code returned: nothing to abort.
    #[inline]
    pub(crate) fn disarm(self) {
        mem::forget(self);
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        eprintln!(
            "parbench-scheduler: a panic inside the scheduler while {}; aborting, because \
             unwinding would free memory that other threads still use",
            self.during
        );
        process::abort();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::Command;

    /// Set in the child process that the test below starts.
    const CHILD: &str = "PARBENCH_UNWIND_TEST_CHILD";

    #[test]
    fn returns_the_value_when_nothing_panics() {
        assert_eq!(abort_on_unwind("testing", || 41 + 1), 42);
    }

    /// Runs the test named `name` of this test binary in a child process with `CHILD` set, and
    /// returns its exit status and stderr.
    pub(crate) fn run_child(name: &str) -> (std::process::ExitStatus, String) {
        let exe = std::env::current_exe().expect("the test binary's path");
        let output = Command::new(exe)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs");
        (
            output.status,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Whether this process is the child of `run_child`.
    pub(crate) fn is_child() -> bool {
        std::env::var_os(CHILD).is_some()
    }

    /// Whether `status` is that of a process killed by SIGABRT.
    pub(crate) fn aborted(status: &std::process::ExitStatus) -> bool {
        use std::os::unix::process::ExitStatusExt;
        status.signal() == Some(6)
    }

    #[test]
    fn a_panic_inside_aborts_the_process_with_the_reason() {
        if is_child() {
            // If the guard let the panic through, the child fails (exit status 101), not aborts.
            abort_on_unwind("testing the guard", || panic!("an injected panic"));
        }
        let (status, stderr) =
            run_child("unwind::tests::a_panic_inside_aborts_the_process_with_the_reason");
        assert!(aborted(&status), "status {status:?}, stderr:\n{stderr}");
        assert!(
            stderr.contains("a panic inside the scheduler while testing the guard; aborting"),
            "stderr:\n{stderr}"
        );
    }
}
