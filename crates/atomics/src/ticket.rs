//! Ticket lock: take a number, wait until it is served — first come, first served.
//!
//! `next` is the next ticket to hand out, `serving` the ticket that holds the lock. Acquiring is a
//! fetch-add on `next` (LSE `LDADDA`, LL/SC `LDAXR`/`ADD`/`STXR`) followed by waiting until
//! `serving` equals the ticket; releasing is a release store of `serving + 1` (`STLR`). Only the
//! holder writes `serving`, so the release needs no RMW. Both counters wrap, which is harmless
//! while fewer than 2^32 threads wait.
//!
//! The ticket lock is fair (FIFO) and every waiter reads the same `serving` line, but it hands the
//! lock to a specific waiter: if that thread is not running, nobody can take the lock. That is why
//! [`SpinWait`] starts yielding after a bounded spin.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::arch::{dispatch, AtomicOps};
use crate::backend::{Backend, Detected};
use crate::error::Error;
use crate::raw_lock::RawLock;
use crate::spin_wait::SpinWait;

/// FIFO ticket spin lock with a run-time chosen [`Backend`].
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, RawLock, TicketLock};
///
/// let lock = TicketLock::new(Backend::best())?;
/// lock.lock();
/// assert_eq!(lock.contenders(), 1);
/// // SAFETY: this thread holds the lock.
/// unsafe { lock.unlock() };
/// assert_eq!(lock.contenders(), 0);
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
#[derive(Debug)]
pub struct TicketLock {
    next: AtomicU32,
    serving: AtomicU32,
    backend: Detected,
}

impl TicketLock {
    /// A free lock using `backend`'s instructions, or an error if this CPU cannot run them.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TicketLock};
    /// assert!(TicketLock::new(Backend::Portable).is_ok());
    /// ```
    pub fn new(backend: Backend) -> Result<Self, Error> {
        Ok(TicketLock {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
            backend: backend.detect()?,
        })
    }

    /// The backend this lock was built with.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TicketLock};
    /// assert_eq!(TicketLock::new(Backend::Portable)?.backend(), Backend::Portable);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        self.backend.backend()
    }

    /// Threads holding or waiting for the lock (tickets handed out but not yet released).
    /// A snapshot for diagnostics and tests; it may be stale as soon as it is returned.
    ///
    /// ```
    /// use parbench_atomics::{Backend, TicketLock};
    /// assert_eq!(TicketLock::new(Backend::Portable)?.contenders(), 0);
    /// # Ok::<(), parbench_atomics::Error>(())
    /// ```
    pub fn contenders(&self) -> u32 {
        // Acquire: pairs with the release store of the unlock that wrote `serving`, whose holder
        // took its ticket from `next` before; so the load of `next` below sees at least that
        // ticket + 1 = `serving`, and the difference cannot wrap to about `u32::MAX`. With Relaxed,
        // a weakly ordered CPU may return an older `next` than the `serving` just read. (No test
        // here can show it: x86-64, and qemu-user on it, keep loads in order.)
        let serving = self.serving.load(Ordering::Acquire);
        // Relaxed: a snapshot; nothing is read through it.
        self.next.load(Ordering::Relaxed).wrapping_sub(serving)
    }
}

// SAFETY: tickets are unique (atomic fetch-add), and only the thread whose ticket equals `serving`
// proceeds until it stores `serving + 1`; acquire on reading `serving` pairs with the release store.
unsafe impl RawLock for TicketLock {
    fn lock(&self) {
        dispatch!(self.backend, ticket_lock(&self.next, &self.serving))
    }

    fn try_lock(&self) -> bool {
        dispatch!(self.backend, ticket_try_lock(&self.next, &self.serving))
    }

    unsafe fn unlock(&self) {
        dispatch!(self.backend, ticket_unlock(&self.serving))
    }
}

/// Take a ticket and wait for it, instantiated per backend by `arch::entry_points!`.
///
/// # Safety
/// The CPU supports `O`'s instructions.
#[inline(always)]
pub(crate) unsafe fn lock<O: AtomicOps>(next: &AtomicU32, serving: &AtomicU32) {
    // SAFETY: forwarded contract (the CPU supports `O`).
    let ticket = unsafe { O::fetch_add_acquire(next, 1) };
    let mut wait = SpinWait::default();
    // Acquire: pairs with the previous holder's release store of `serving`, so its critical
    // section happens before ours (the acquire of the ticket take synchronizes with nothing).
    while serving.load(Ordering::Acquire) != ticket {
        wait.wait();
    }
}

/// Take a ticket only if it would be served at once, instantiated per backend.
///
/// # Safety
/// The CPU supports `O`'s instructions.
#[inline(always)]
pub(crate) unsafe fn try_lock<O: AtomicOps>(next: &AtomicU32, serving: &AtomicU32) -> bool {
    // Acquire: if the CAS below succeeds, this read of `serving` is what synchronizes with the
    // previous holder's release store.
    let now_serving = serving.load(Ordering::Acquire);
    // The lock is free exactly when the next ticket is the one being served; taking that ticket
    // by CAS cannot skip anyone, and `serving` cannot move until we release (we hold it).
    // SAFETY: forwarded contract (the CPU supports `O`).
    unsafe {
        O::compare_swap_acquire(next, now_serving, now_serving.wrapping_add(1)) == now_serving
    }
}

/// Serve the next ticket, instantiated per backend by `arch::entry_points!`.
///
/// # Safety
/// The CPU supports `O`'s instructions and the caller holds the lock.
#[inline(always)]
pub(crate) unsafe fn unlock<O: AtomicOps>(serving: &AtomicU32) {
    // Relaxed: only the holder writes `serving`, and this thread already read its current value
    // (with acquire) while taking the lock.
    let served = serving.load(Ordering::Relaxed);
    // SAFETY: forwarded contract (the CPU supports `O`).
    unsafe { O::store_release(serving, served.wrapping_add(1)) }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::thread;

    use super::*;
    use crate::test_workload::backends_under_test;

    /// Waits until `count` threads hold or wait for `lock`; a waiter that has taken its ticket
    /// shows up in `contenders` before it starts spinning.
    fn wait_for_contenders(lock: &TicketLock, count: u32) {
        while lock.contenders() != count {
            thread::yield_now();
        }
    }

    #[test]
    fn waiters_are_served_in_ticket_order() {
        for backend in backends_under_test() {
            let lock = TicketLock::new(backend).unwrap();
            let order = Mutex::new(Vec::new());
            lock.lock();
            thread::scope(|scope| {
                for waiter in 0..3 {
                    let (lock, order) = (&lock, &order);
                    scope.spawn(move || {
                        lock.lock();
                        order.lock().unwrap().push(waiter);
                        // SAFETY: taken just above.
                        unsafe { lock.unlock() };
                    });
                    // The next waiter starts only after this one holds a ticket, so tickets are
                    // handed out in waiter order.
                    wait_for_contenders(lock, waiter + 2);
                }
                // SAFETY: taken before the waiters started.
                unsafe { lock.unlock() };
            });
            assert_eq!(order.into_inner().unwrap(), [0, 1, 2], "{backend}");
        }
    }

    #[test]
    fn try_lock_refuses_while_others_wait() {
        for backend in backends_under_test() {
            let lock = TicketLock::new(backend).unwrap();
            lock.lock();
            thread::scope(|scope| {
                scope.spawn(|| {
                    lock.lock();
                    // SAFETY: taken just above.
                    unsafe { lock.unlock() };
                });
                wait_for_contenders(&lock, 2);
                assert!(!lock.try_lock(), "{backend}: try_lock jumped the queue");
                // SAFETY: taken before the scope.
                unsafe { lock.unlock() };
            });
            assert_eq!(lock.contenders(), 0, "{backend}");
        }
    }

    #[test]
    fn tickets_wrap_around() {
        for backend in backends_under_test() {
            let lock = TicketLock::new(backend).unwrap();
            lock.next.store(u32::MAX, Ordering::Relaxed);
            lock.serving.store(u32::MAX, Ordering::Relaxed);
            for _ in 0..3 {
                assert!(lock.try_lock(), "{backend}");
                // SAFETY: just taken.
                unsafe { lock.unlock() };
                lock.lock();
                // SAFETY: just taken.
                unsafe { lock.unlock() };
            }
            assert_eq!(lock.serving.load(Ordering::Relaxed), 5, "{backend}");
        }
    }
}
