//! The interface every lock of this crate implements, and that [`SpinMutex`](crate::SpinMutex)
//! builds on.

/// A lock without data: `lock`, `try_lock`, `unlock`.
///
/// # Safety
///
/// Implementations must provide mutual exclusion: between a successful `lock`/`try_lock` and the
/// matching `unlock`, no other `lock` returns and no other `try_lock` returns `true`. The acquiring
/// operation must have acquire ordering and `unlock` release ordering, so that the writes of one
/// critical section are visible in the next. [`SpinMutex`](crate::SpinMutex) relies on both.
///
/// # Example
///
/// ```
/// use parbench_atomics::{Backend, RawLock, TtasLock};
///
/// let lock = TtasLock::new(Backend::Portable)?;
/// lock.lock();
/// assert!(!lock.try_lock());
/// // SAFETY: this thread took the lock just above.
/// unsafe { lock.unlock() };
/// assert!(lock.try_lock());
/// // SAFETY: `try_lock` returned true, so this thread holds the lock.
/// unsafe { lock.unlock() };
/// # Ok::<(), parbench_atomics::Error>(())
/// ```
pub unsafe trait RawLock: Send + Sync {
    /// Blocks (spinning, then yielding) until this thread holds the lock.
    ///
    /// The locks do not know their holder: calling this again while this thread holds the lock
    /// never returns.
    fn lock(&self);

    /// Takes the lock if it is free right now; returns whether it did. Never waits.
    ///
    /// Ignoring the result is a warning: a `true` means this thread now holds the lock and must
    /// [`unlock`](Self::unlock) it.
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// use parbench_atomics::{Backend, RawLock, TasLock};
    /// let lock = TasLock::new(Backend::Portable).unwrap();
    /// lock.try_lock(); // held from now on, and nobody knows
    /// ```
    #[must_use = "a `true` means this thread holds the lock and must unlock it"]
    fn try_lock(&self) -> bool;

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The calling context must hold the lock (taken by `lock` or a successful `try_lock`, not yet
    /// released). Unlocking a lock one does not hold breaks mutual exclusion.
    unsafe fn unlock(&self);
}
