//! What a task is: a type-erased pointer plus the function that runs it.
//!
//! Deques hold [`JobRef`]s, two words each, so pushing and stealing never allocate. A job's data
//! lives either on the heap ([`HeapJob`], freed when it runs) or on the stack of a thread that waits
//! for it ([`StackJob`], used by `join`). Either way the lifetime of what the closure borrows is
//! erased here; every creator of a `JobRef` guarantees (and says so at its `unsafe` block) that the
//! job runs before the borrowed data dies — in practice, that the creating call waits for the job's
//! completion before it returns or unwinds.

use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};

use crate::latch::Latch;

/// A type-erased reference to a job.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    pointer: *const (),
    execute_fn: unsafe fn(*const ()),
}

// SAFETY: a JobRef is only created for jobs whose data may be executed on another thread (their
// closures are `Send`), and it is executed exactly once.
unsafe impl Send for JobRef {}

/// Two references are the same job when they point to the same data (a live job's data has a
/// unique address; function pointers are not reliably comparable).
impl PartialEq for JobRef {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.pointer, other.pointer)
    }
}

impl Eq for JobRef {}

impl JobRef {
    /// A job whose data lives at `pointer`, run by `execute_fn(pointer)`.
    ///
    /// # Safety
    /// `execute_fn` must be sound to call once with `pointer`, from any thread, for as long as the
    /// job is queued: the data must stay alive until the job has run (its owner waits for that),
    /// and may be executed on another thread (everything it refers to is `Send`/`Sync`).
    pub(crate) unsafe fn from_raw(pointer: *const (), execute_fn: unsafe fn(*const ())) -> Self {
        JobRef {
            pointer,
            execute_fn,
        }
    }

    /// Runs the job.
    ///
    /// # Safety
    /// Must be called exactly once per created `JobRef`, while the job's data is alive.
    pub(crate) unsafe fn execute(self) {
        // SAFETY: forwarded from the caller.
        unsafe { (self.execute_fn)(self.pointer) }
    }
}

/// A boxed closure run once; the box is freed when it runs.
pub(crate) struct HeapJob<F> {
    func: F,
}

impl<F: FnOnce() + Send> HeapJob<F> {
    /// Leaks `func` into a job reference.
    ///
    /// # Safety
    /// Everything `func` borrows must outlive the job's execution, and the returned `JobRef` must be
    /// executed exactly once (otherwise the box leaks).
    pub(crate) unsafe fn into_job_ref(func: F) -> JobRef {
        unsafe fn execute<F: FnOnce() + Send>(pointer: *const ()) {
            // SAFETY: `pointer` came from `Box::into_raw` below and is executed once; the job owns
            // its box, so this thread — the one executing it — is the only one that frees it.
            let job = unsafe { Box::from_raw(pointer as *mut HeapJob<F>) };
            // A panic must not unwind into the worker loop; internal jobs catch their own panics
            // and report them to their call, so only a panic in a detached `spawn` lands here, where
            // the panic hook has already printed it.
            let _ = panic::catch_unwind(AssertUnwindSafe(job.func));
        }
        let pointer = Box::into_raw(Box::new(HeapJob { func })) as *const ();
        JobRef {
            pointer,
            execute_fn: execute::<F>,
        }
    }
}

/// How a job ended.
pub(crate) enum JobResult<R> {
    None,
    Ok(R),
    Panic(Box<dyn Any + Send>),
}

impl<R> JobResult<R> {
    /// Returns the value or re-raises the panic.
    pub(crate) fn into_value(self) -> R {
        match self {
            JobResult::Ok(value) => value,
            JobResult::Panic(payload) => panic::resume_unwind(payload),
            JobResult::None => unreachable!("a job's result was read before it ran"),
        }
    }
}

/// A job on the stack of the thread that waits for it (`join`'s second closure).
pub(crate) struct StackJob<F, R> {
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
    pub(crate) latch: Latch,
}

// SAFETY: `func` and `result` are accessed by one thread at a time: the executing thread before it
// sets the latch, the owner after it observed the latch (Acquire) or after it took the job back.
// The owner frees the job (leaves the frame it lives in) only after one of those two events.
unsafe impl<F: Send, R: Send> Sync for StackJob<F, R> {}

impl<F: FnOnce() -> R + Send, R: Send> StackJob<F, R> {
    pub(crate) fn new(func: F) -> Self {
        StackJob {
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(JobResult::None),
            latch: Latch::new(),
        }
    }

    /// # Safety
    /// `self` must stay alive (its owner waits on `latch`) until the job has executed.
    pub(crate) unsafe fn as_job_ref(&self) -> JobRef {
        unsafe fn execute<F: FnOnce() -> R + Send, R: Send>(pointer: *const ()) {
            // SAFETY: the owner (the thread that created the job and waits for it) frees it by
            // leaving its frame, which it does only after it saw the latch set; the latch is set
            // last below, and `this` is not touched after that.
            let this = unsafe { &*(pointer as *const StackJob<F, R>) };
            // SAFETY: only the executing thread touches `func`/`result` before the latch is set.
            let func = unsafe { (*this.func.get()).take() };
            if let Some(func) = func {
                let result = match panic::catch_unwind(AssertUnwindSafe(func)) {
                    Ok(value) => JobResult::Ok(value),
                    Err(payload) => JobResult::Panic(payload),
                };
                // SAFETY: as above.
                unsafe { *this.result.get() = result };
            }
            // From here on the owner may free `this`: nothing of it is used after this call,
            // and `Latch::set` itself touches the latch only up to the store that sets it.
            Latch::set(&this.latch);
        }
        JobRef {
            pointer: self as *const Self as *const (),
            execute_fn: execute::<F, R>,
        }
    }

    /// Runs the closure on the owner's thread (it was popped back before anyone stole it).
    pub(crate) fn run_inline(self) -> R {
        match self.func.into_inner() {
            Some(func) => func(),
            None => unreachable!("a stack job was run twice"),
        }
    }

    /// Takes the result after the latch was observed set.
    pub(crate) fn into_result(self) -> JobResult<R> {
        self.result.into_inner()
    }
}
