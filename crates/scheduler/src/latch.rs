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
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::thread::{self, Thread};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::thread::{self, Thread};

/// A one-shot flag that wakes the thread which created it.
pub(crate) struct Latch {
    set: AtomicBool,
    waiter: Thread,
}

impl Latch {
    /// A latch whose waiter is the current thread.
    pub(crate) fn new() -> Self {
        Latch {
            set: AtomicBool::new(false),
            waiter: thread::current(),
        }
    }

    /// Whether the latch is set; when it is, everything done before `set` is visible.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the Release store in `set`.
        self.set.load(Ordering::Acquire)
    }

    /// Sets the latch and wakes its waiter.
    ///
    /// Takes a raw pointer because the waiter may return, and free the latch, the moment the flag
    /// is stored; nothing of `*this` is touched after that store.
    pub(crate) fn set(this: *const Latch) {
        // SAFETY: the latch is alive until the store below is observed by its waiter.
        let waiter = unsafe { (*this).waiter.clone() };
        // Release: publishes the work of the tasks that completed into this latch.
        unsafe { (*this).set.store(true, Ordering::Release) };
        // Unparking a thread that is not parked only leaves it a token, so a waiter that checks
        // the flag and then parks cannot miss this wake-up.
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
    use loom::sync::Arc;

    struct SendPtr(*const CountNode);
    // SAFETY: test-only wrapper; the protocol keeps the node alive while the count is held.
    unsafe impl Send for SendPtr {}

    /// Two children under a root, one child with an extra piece completed on a third thread:
    /// the latch is set exactly after every piece completed, and work is visible to the waiter.
    #[test]
    fn loom_completion_tree_sets_latch_after_all_work() {
        loom::model(|| {
            let latch = Latch::new();
            let work = Arc::new(AtomicUsize::new(0));
            let root = CountNode::root(&latch);
            root.add(2);
            let root_ptr = &root as *const CountNode;
            let mut handles = Vec::new();
            for extra in [false, true] {
                let parent = SendPtr(root_ptr);
                let work = work.clone();
                handles.push(thread::spawn(move || {
                    let parent = parent;
                    let node = CountNode::child(parent.0);
                    let mut inner = None;
                    if extra {
                        // SAFETY: we hold the node's initial count.
                        unsafe { (*node).add(1) };
                        let ptr = SendPtr(node);
                        let work = work.clone();
                        inner = Some(thread::spawn(move || {
                            let ptr = ptr;
                            work.fetch_add(1, Ordering::Relaxed);
                            // SAFETY: this thread holds the extra count.
                            unsafe { CountNode::complete(ptr.0) };
                        }));
                    }
                    work.fetch_add(1, Ordering::Relaxed);
                    // SAFETY: we hold the initial count.
                    unsafe { CountNode::complete(node) };
                    if let Some(h) = inner {
                        h.join().unwrap();
                    }
                }));
            }
            // The caller's own piece.
            work.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the caller holds the root's initial count.
            unsafe { CountNode::complete(root_ptr) };
            while !latch.probe() {
                thread::park();
            }
            assert_eq!(work.load(Ordering::Relaxed), 4);
            for h in handles {
                h.join().unwrap();
            }
        });
    }
}
