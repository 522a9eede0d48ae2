//! How completion is signalled: a one-shot [`Latch`] and the completion tree of [`CountNode`]s.
//!
//! A parallel call ends when every task it created has finished. Counting that on one shared
//! counter would make every task of every thread write the same cache line; instead each thread
//! that hands work out in the tree distribution owns a node counting *its* outstanding pieces
//! (its own share, the shares it handed to children, its balancing tasks). When a node's count
//! reaches zero it frees itself and releases one count of its parent; the root's parent is the
//! caller's latch. So a task touches only its own node, and the caller learns of completion
//! through a chain of at most `⌈log_K P⌉` nodes.
//!
//! Memory ordering: every decrement is `AcqRel` — `Release` publishes the finished work of the
//! decrementing task, `Acquire` on the decrement that reaches zero makes all of it visible to the
//! thread that goes on to free the node and notify the parent. Increments are `Relaxed`: they are
//! made by a task that itself still holds a count of the same node, so the node cannot reach zero
//! concurrently, and read-modify-writes of one atomic are totally ordered anyway.
//!
//! The protocol is model-checked with loom: `RUSTFLAGS="--cfg loom" cargo test -p
//! parbench-scheduler --release --lib loom_`.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::thread::{self, Thread};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::thread::{self, Thread};

/// The latch is not set and its waiter is awake.
const UNSET: u8 = 0;
/// The waiter announced that it is about to park (or is parked).
const SLEEPY: u8 = 1;
/// The latch is set.
const SET: u8 = 2;

/// A one-shot flag that wakes the thread which created it.
///
/// Setting it costs one compare-and-swap unless its waiter announced that it sleeps: only then
/// is the waiter's thread handle touched (to unpark it). A sleepy waiter leaves only after it saw
/// the flag set, so the latch is alive until the setter's final store.
pub(crate) struct Latch {
    state: AtomicU8,
    waiter: Thread,
}

impl Latch {
    /// A latch whose waiter is the current thread.
    pub(crate) fn new() -> Self {
        Latch {
            state: AtomicU8::new(UNSET),
            waiter: thread::current(),
        }
    }

    /// Whether the latch is set; when it is, everything done before `set` is visible.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the Release of `set`.
        self.state.load(Ordering::Acquire) == SET
    }

    /// Announces that the waiter is about to park; `false` if the latch is already set (then it
    /// must not park for it).
    pub(crate) fn prepare_sleep(&self) -> bool {
        // Acquire on failure: the waiter then reads the completed work.
        self.state
            .compare_exchange(UNSET, SLEEPY, Ordering::Acquire, Ordering::Acquire)
            .is_ok()
    }

    /// Withdraws the announcement after waking up (the latch may have been set meanwhile).
    pub(crate) fn cancel_sleep(&self) {
        let _ = self
            .state
            .compare_exchange(SLEEPY, UNSET, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Sets the latch and, if its waiter sleeps, wakes it.
    ///
    /// Takes a raw pointer because the waiter may return, and free the latch, the moment it sees
    /// the flag; nothing of `*this` is touched after the store that sets it.
    pub(crate) fn set(this: *const Latch) {
        // SAFETY: the latch is alive until its waiter has seen it set, which happens no earlier
        // than the successful exchange or the store below.
        let latch = unsafe { &*this };
        // Release: publishes the work of the tasks that completed into this latch.
        if latch
            .state
            .compare_exchange(UNSET, SET, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        // The waiter announced sleep and waits for SET before leaving, so the latch is alive
        // until the store; the handle is cloned first because it is not after.
        let waiter = latch.waiter.clone();
        latch.state.store(SET, Ordering::Release);
        // Unparking a thread that is not parked only leaves it a token, so a waiter that
        // announced sleep and then parks cannot miss this wake-up.
        waiter.unpark();
    }
}

/// Where a node reports when its count reaches zero.
#[derive(Clone, Copy)]
enum Parent {
    Node(*const CountNode),
    Latch(*const Latch),
}

/// One node of the completion tree: a count of outstanding pieces of work.
pub(crate) struct CountNode {
    pending: AtomicUsize,
    parent: Parent,
    /// Heap nodes free themselves when they complete; the root lives in the caller's frame.
    on_heap: bool,
}

// SAFETY: the raw parent pointers are only dereferenced under the completion protocol, which
// keeps every parent alive while a child still holds one of its counts.
unsafe impl Send for CountNode {}
// SAFETY: as above; all shared mutation goes through the atomic count.
unsafe impl Sync for CountNode {}

impl CountNode {
    /// The root of a call: one count held by the caller, completion sets `latch`.
    pub(crate) fn root(latch: &Latch) -> Self {
        CountNode {
            pending: AtomicUsize::new(1),
            parent: Parent::Latch(latch),
            on_heap: false,
        }
    }

    /// A heap node under `parent` holding one count (its creator's own work). It takes over the
    /// count its creator held in `parent`.
    pub(crate) fn child(parent: *const CountNode) -> *const CountNode {
        Box::into_raw(Box::new(CountNode {
            pending: AtomicUsize::new(1),
            parent: Parent::Node(parent),
            on_heap: true,
        }))
    }

    /// Adds `n` outstanding pieces; the caller must hold a count of this node.
    #[inline]
    pub(crate) fn add(&self, n: usize) {
        self.pending.fetch_add(n, Ordering::Relaxed);
    }

    /// Releases one count; on zero frees the node (if on the heap) and releases its parent.
    ///
    /// # Safety
    /// The caller must hold a count of `*this` and must not use `this` afterwards.
    pub(crate) unsafe fn complete(this: *const CountNode) {
        let mut node = this;
        loop {
            // SAFETY: we hold a count, so the node is alive.
            let (previous, parent, on_heap) = unsafe {
                let n = &*node;
                // AcqRel: see the module documentation.
                (
                    n.pending.fetch_sub(1, Ordering::AcqRel),
                    n.parent,
                    n.on_heap,
                )
            };
            if previous != 1 {
                return;
            }
            if on_heap {
                // SAFETY: the count reached zero, nobody else holds or will take a count; the
                // node came from `Box::into_raw` in `child`.
                drop(unsafe { Box::from_raw(node as *mut CountNode) });
            }
            match parent {
                Parent::Node(p) => node = p,
                Parent::Latch(latch) => {
                    Latch::set(latch);
                    return;
                }
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// One plain (non-atomic) result slot per piece: loom reports a data race if the waiter's
    /// reads are not ordered after every piece's write by the completion protocol.
    struct Results([UnsafeCell<usize>; 3]);
    // SAFETY: test-only; loom checks every access for races.
    unsafe impl Sync for Results {}

    struct SendPtr(*const CountNode);
    // SAFETY: test-only wrapper; the protocol keeps the node alive while the count is held.
    unsafe impl Send for SendPtr {}

    /// A child node under the root whose own piece and one extra piece (its balancing task)
    /// complete on two other threads while the caller completes its own piece: the latch is set
    /// only after every piece, the child node is freed exactly once (no double complete), and the
    /// work of all pieces is visible to the waiter.
    #[test]
    fn loom_completion_tree_sets_latch_after_all_work() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| {
            let latch = Latch::new();
            let work = Arc::new(Results([
                UnsafeCell::new(0),
                UnsafeCell::new(0),
                UnsafeCell::new(0),
            ]));
            let root = CountNode::root(&latch);
            root.add(1);
            let child = CountNode::child(&root);
            // SAFETY: the child's initial count is held until handed to the first thread.
            unsafe { (*child).add(1) };
            let mut handles = Vec::new();
            for piece in 0..2 {
                let node = SendPtr(child);
                let work = work.clone();
                handles.push(thread::spawn(move || {
                    let node = node;
                    // SAFETY: each piece writes only its own slot.
                    work.0[piece].with_mut(|slot| unsafe { *slot = piece + 1 });
                    // SAFETY: each thread holds one of the child's two counts.
                    unsafe { CountNode::complete(node.0) };
                }));
            }
            // SAFETY: the caller's piece writes only its own slot.
            work.0[2].with_mut(|slot| unsafe { *slot = 3 });
            // SAFETY: the caller holds the root's initial count.
            unsafe { CountNode::complete(&root) };
            while !latch.probe() {
                if latch.prepare_sleep() {
                    thread::park();
                    latch.cancel_sleep();
                }
            }
            // SAFETY: after the latch, all writers are done (loom checks exactly this).
            let total: usize = work
                .0
                .iter()
                .map(|cell| cell.with(|slot| unsafe { *slot }))
                .sum();
            assert_eq!(total, 6);
            for handle in handles {
                handle.join().unwrap();
            }
        });
    }
}
