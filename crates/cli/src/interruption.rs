//! Stopping `sweep` on SIGINT, SIGTERM or SIGHUP without losing what it measured.
//!
//! A sweep's rounds run in child processes ([`crate::rounds`]) and the parent sleeps in a
//! blocking read of the running child's stderr. The handlers that [`stop_on_signals`] installs
//! do only two async-signal-safe things: record the first signal in an atomic, and `kill` the
//! running round's child. The child's stderr then closes, the parent's read ends, it reaps the
//! child and, seeing [`received`], merges every finished cell (the child rewrites its round
//! report after every cell), writes them, removes its scratch directory and exits with 128 + the
//! signal. Nothing polls: while a round measures, the parent wakes only for the child's progress
//! lines, as before.
//!
//! The child gets SIGKILL rather than the signal itself: it must stop even where that signal is
//! ignored (a child inherits ignored signals, e.g. SIGINT in a shell's background job), and
//! dying anywhere costs it nothing, since its report is replaced by a rename, never half-written.
//! Its pid is published only while it is a child not yet reaped ([`ChildWatch`]), so the handler
//! can never signal a process that reused the pid. A signal that the sweep was started with
//! ignored (`nohup`'s SIGHUP) stays ignored.
//!
//! `corun --compare` stops through the mapper's own handlers instead
//! (`parbench_mapper::corun::stop_on_termination_signals`), which stop its commands' process
//! groups; it keeps its finished runs the same way and names the signal from
//! `parbench_mapper::corun::stop_signal`.

use std::io;
use std::process::Child;
use std::sync::atomic::{AtomicI32, Ordering};

/// The first of the signals [`stop_on_signals`] handles that arrived; 0 before one does.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The pid of the running round's child while it is not reaped; 0 when there is none.
static RUNNING_CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // SeqCst on both sides (here: store the signal, then load the pid; in `ChildWatch::new`:
    // store the pid, then load the signal), so that at least one side sees the other's store:
    // a signal arriving while a child is being published either finds its pid here or is found
    // there, and the child is killed either way.
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let child = RUNNING_CHILD.load(Ordering::SeqCst);
    if child > 0 {
        // SAFETY: `kill` is async-signal-safe and touches no memory of ours. `child` is a child
        // of this process that is not reaped yet (the pid is withdrawn before `wait`), so it
        // names that child and no other process; for such a pid `kill` does not fail, so the
        // interrupted code's `errno` is left as it was.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that record the signal (see [`received`])
/// and kill the running round's child ([`ChildWatch`]); the process itself then goes on, to save
/// what was measured. A signal that is ignored when this is called stays ignored.
///
/// # Errors
/// The OS error of `sigaction`.
///
/// ```no_run
/// parbench_cli::interruption::stop_on_signals()?;
/// assert_eq!(parbench_cli::interruption::received(), None);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn stop_on_signals() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: all-zero is a valid sigaction (empty mask, no flags, SIG_DFL), overwritten by
        // the query below.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only queries the current one into `previous`, a valid
        // sigaction we own.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut previous) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if previous.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: as above, all-zero is a valid sigaction before its fields are set.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Interrupted reads and writes resume instead of failing with EINTR.
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a sigset_t we own; sigemptyset only initialises it.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is a valid sigaction whose handler does only async-signal-safe work
        // (atomics and `kill`); the previous action is not needed (null).
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first SIGINT, SIGTERM or SIGHUP that arrived since [`stop_on_signals`], if any.
pub fn received() -> Option<i32> {
    // SeqCst: see `on_signal`.
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// While it lives, a signal handled by [`stop_on_signals`] kills `child`; drop it before
/// waiting for the child (after that its pid may name another process).
#[derive(Debug)]
pub struct ChildWatch {
    _private: (),
}

impl ChildWatch {
    /// Publishes `child` to the signal handlers, and kills it at once if a signal came first.
    pub fn new(child: &Child) -> ChildWatch {
        let Ok(pid) = libc::pid_t::try_from(child.id()) else {
            return ChildWatch { _private: () };
        };
        // SeqCst: see `on_signal`.
        RUNNING_CHILD.store(pid, Ordering::SeqCst);
        if received().is_some() {
            // SAFETY: `pid` is our child, not reaped yet; `kill` touches no memory.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        ChildWatch { _private: () }
    }
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        // SeqCst: see `on_signal`; the handler must not see the pid once the child may be reaped.
        RUNNING_CHILD.store(0, Ordering::SeqCst);
    }
}
