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
//! It is published to the handler as a pidfd ([`ChildWatch`]; Linux 5.3 and later): a
//! descriptor of that very process, which stays valid after the child is reaped and then signals
//! nobody, so the handler can never signal a process that reused the pid, even when it read the
//! descriptor just before the child was reaped. (Closed and reused for another file, the number
//! names no process at all.) Where pidfds are missing, the pid is published instead, only while
//! the child is not reaped yet; a handler that read it just before could then still signal a
//! process that reused the pid within that instant. A signal that the sweep was started with
//! ignored (`nohup`'s SIGHUP) stays ignored.
//!
//! `latency` and `reproduce tail-latency` measure in their own process, with these handlers
//! (through `latency::InterruptibleMeasurement`): a signal ends them after the load under way
//! ([`received`] is checked after every load), and they write the loads they finished. A load
//! can last up to `--max-duration` (the study's bound for it), so a second signal ends them at
//! once, with the same output and exit status ([`watch_signals`] tells it). A sweep needs no
//! second signal: the first already stops its round at once, and what follows (merging and
//! writing the finished cells) is brief; a second changes nothing, so all these commands end with
//! 128 + the *first* signal and keep what they finished.
//!
//! `corun` stops through the mapper's own handlers instead
//! (`parbench_mapper::corun::stop_on_termination_signals`), which stop its commands' process
//! groups and likewise leave a signal ignored that corun was started with ignored; it keeps its
//! report (a single run) or its finished runs (`--compare`) the same way and names the signal
//! from `parbench_mapper::corun::stop_signal`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::process::Child;
use std::sync::atomic::{AtomicI32, Ordering};

/// The first of the signals [`stop_on_signals`] handles that arrived; 0 before one does.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// A pidfd of the running round's child while a [`ChildWatch`] publishes it; -1 when there is
/// none (or pidfds are missing: then `RUNNING_CHILD` holds its pid).
static RUNNING_CHILD_PIDFD: AtomicI32 = AtomicI32::new(-1);

/// The pid of the running round's child while it is not reaped, where no pidfd could be opened
/// for it; 0 when there is none.
static RUNNING_CHILD: AtomicI32 = AtomicI32::new(0);

/// The write end of the pipe [`watch_signals`] reads, on which the handler reports every signal
/// (a byte each); -1 while nobody watches.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    // SeqCst on both sides (here: store the signal, then load the child; in `ChildWatch::new`:
    // store the child, then load the signal), so that at least one side sees the other's store:
    // a signal arriving while a child is being published either finds it here or is found
    // there, and the child is killed either way.
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    // SeqCst, as every static shared with this handler (see above).
    let pipe = SIGNAL_PIPE.load(Ordering::SeqCst);
    if pipe >= 0 {
        // SAFETY: reads this thread's errno, restored below (the write may fail, e.g. with
        // EAGAIN on a full pipe, and the interrupted code may be about to read errno).
        let saved = unsafe { *libc::__errno_location() };
        let byte = 1u8;
        // SAFETY: `write` is async-signal-safe; it reads one byte of ours, `byte`, which lives
        // until it returns. The pipe is non-blocking, so the handler never waits on it; a
        // signal lost to a full pipe (thousands unread) would be one the watcher cannot tell
        // from those before.
        let _ = unsafe { libc::write(pipe, (&raw const byte).cast(), 1) };
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = saved };
    }
    let pidfd = RUNNING_CHILD_PIDFD.load(Ordering::SeqCst);
    if pidfd >= 0 {
        // SAFETY: reads this thread's errno, restored below (the syscall may fail, see
        // `kill_through_pidfd`, and the interrupted code may be about to read errno).
        let saved = unsafe { *libc::__errno_location() };
        let _ = kill_through_pidfd(pidfd);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = saved };
        return;
    }
    let child = RUNNING_CHILD.load(Ordering::SeqCst);
    if child > 0 {
        // SAFETY: `kill` is async-signal-safe and touches no memory of ours. `child` is a child
        // of this process that is not reaped yet (the pid is withdrawn before `wait`), so it
        // names that child and no other process; for such a pid `kill` does not fail, so the
        // interrupted code's `errno` is left as it was.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
}

/// Opens a pidfd of `pid` (close-on-exec), or `None` where the kernel has no pidfds.
fn open_pidfd(pid: libc::pid_t) -> Option<libc::c_int> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; it touches no
    // memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    libc::c_int::try_from(fd).ok().filter(|&fd| fd >= 0)
}

/// Sends SIGKILL to the process `pidfd` refers to. Async-signal-safe (one system call). Fails
/// with ESRCH once that process has been reaped, and with EBADF or EINVAL for a descriptor that
/// is closed or is not a pidfd: it never reaches another process.
fn kill_through_pidfd(pidfd: libc::c_int) -> io::Result<()> {
    // SAFETY: pidfd_send_signal with a null siginfo and no flags reads nothing of ours.
    let sent = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd,
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if sent == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets SIGCHLD back to its default if the process was started with it ignored, so that the
/// children it starts (a sweep's rounds, the commands of `corun` and `profile`) leave an exit
/// status to wait for. A parent can pass SIGCHLD ignored on through `exec`; the kernel then reaps
/// every child at once, and waiting for one fails with ECHILD ("round 1 was lost: No child
/// processes"). A disposition that is not `SIG_IGN` (the default, or a handler) is left alone.
///
/// # Errors
/// The OS error of `sigaction`.
///
/// # Examples
///
/// ```
/// parbench_cli::interruption::wait_for_own_children()?;
/// let status = std::process::Command::new("true").status()?;
/// assert!(status.success());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn wait_for_own_children() -> io::Result<()> {
    // SAFETY: all-zero is a valid sigaction (empty mask, no flags, SIG_DFL), overwritten by the
    // query below.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries the current one into `current`, a valid sigaction
    // we own.
    if unsafe { libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if current.sa_sigaction != libc::SIG_IGN {
        return Ok(());
    }
    // SAFETY: `signal` with SIG_DFL installs no handler; SIGCHLD's default is to do nothing.
    if unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that record the signal (see [`received`])
/// and kill the running round's child ([`ChildWatch`]); the process itself then goes on, to save
/// what was measured. A signal that is ignored when this is called stays ignored.
///
/// # Errors
/// The OS error of `sigaction`.
///
/// # Examples
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

/// Calls `each(count)` on a thread of its own for every signal that the handlers of
/// [`stop_on_signals`] get, `count` numbering them from 1; call it before [`stop_on_signals`],
/// or the signals before it are not counted. `latency` and `reproduce tail-latency` stop at
/// once on the second ([`run`'s doc](crate::latency::run)), since the first lets the load under
/// way finish.
///
/// The handler cannot do more than write to a pipe (printing, or waking a channel's receiver,
/// is not async-signal-safe), so a thread of its own reads it and does the rest; it stays blocked
/// in that read until the process exits.
///
/// # Errors
/// The OS error of `pipe2`, or of starting the thread.
pub fn watch_signals(mut each: impl FnMut(u32) + Send + 'static) -> io::Result<()> {
    let mut ends = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into `ends`, an array of two we own. Close-on-exec:
    // the commands `latency` starts must not keep it; non-blocking: see `on_signal`.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors of ours, each owned by one OwnedFd alone from here on.
    let [read_end, write_end] = ends.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    // The reading end blocks: its thread has nothing else to do.
    // SAFETY: fcntl on a descriptor we own, setting only its status flags.
    if unsafe { libc::fcntl(read_end.as_raw_fd(), libc::F_SETFL, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut signals = std::fs::File::from(read_end);
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            let mut count = 0;
            let mut byte = [0u8; 1];
            // SA_RESTART resumes the read after our own handler; it ends only on an error.
            while let Ok(1) = io::Read::read(&mut signals, &mut byte) {
                count += 1;
                each(count);
            }
        })?;
    // SeqCst: see `on_signal`. Published only once its reader runs, and never withdrawn: the
    // pipe lives as long as the process.
    SIGNAL_PIPE.store(write_end.into_raw_fd(), Ordering::SeqCst);
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
/// waiting for the child (where no pidfd could be opened, the pid may name another process after
/// that).
#[derive(Debug)]
pub struct ChildWatch {
    /// The pidfd published to the handler, closed on drop.
    pidfd: Option<libc::c_int>,
}

impl ChildWatch {
    /// Publishes `child` to the signal handlers (as a pidfd where the kernel has them, else as
    /// its pid), and kills it at once if a signal came first.
    pub fn new(child: &Child) -> ChildWatch {
        let Ok(pid) = libc::pid_t::try_from(child.id()) else {
            return ChildWatch { pidfd: None };
        };
        // `child` is not reaped yet (the caller waits only after dropping the watch), so `pid`
        // names it here.
        let pidfd = open_pidfd(pid);
        match pidfd {
            // SeqCst: see `on_signal`.
            Some(fd) => RUNNING_CHILD_PIDFD.store(fd, Ordering::SeqCst),
            None => RUNNING_CHILD.store(pid, Ordering::SeqCst),
        }
        if received().is_some() {
            // SAFETY: `pid` is our child, not reaped yet; `kill` touches no memory.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        ChildWatch { pidfd }
    }
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        // SeqCst: see `on_signal`; the handler must not see the pid once the child may be reaped
        // (a pidfd it read just before is harmless: it signals no other process).
        RUNNING_CHILD.store(0, Ordering::SeqCst);
        RUNNING_CHILD_PIDFD.store(-1, Ordering::SeqCst);
        if let Some(fd) = self.pidfd {
            // SAFETY: `fd` is the pidfd this watch opened and nothing else closes.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// What the handler relies on: a pidfd kills its child while it runs, and once the child is
    /// reaped it signals nobody (ESRCH), whatever process has taken the pid since.
    #[test]
    fn a_pidfd_kills_its_child_and_nobody_once_the_child_was_reaped() {
        let mut child = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        let Some(fd) = open_pidfd(pid) else {
            let _ = child.kill();
            let _ = child.wait();
            println!("SKIPPED: this kernel has no pidfds (Linux 5.3 or later)");
            return;
        };
        kill_through_pidfd(fd).unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        let reaped = kill_through_pidfd(fd).unwrap_err();
        assert_eq!(reaped.raw_os_error(), Some(libc::ESRCH), "{reaped}");
        // SAFETY: `fd` is the pidfd opened above, closed once.
        unsafe { libc::close(fd) };
    }
}
