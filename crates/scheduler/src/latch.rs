//! How completion is signalled: a one-shot [`Latch`] and the completion tree of [`CountNode`]s.
//!
//! A parallel call ends when every task it created has finished. Counting that on one shared
//! counter would make every task of every thread write the same cache line; instead each thread
//! that hands work out in the tree distribution owns a node counting *its* outstanding pieces
//! (its own share, the shares it handed to children, its balancing tasks). When a node's count
//! reaches zero it frees itself and releases one count of its parent; the root's parent is the
//! caller's latch. So a task touches only its own node, and the caller learns of completion
//! through a chain of at most `⌈log_K P⌉` nodes. One shortcut: a caller that holds counts of its
//! root itself (the lazy claims' offer it took back unrun) releases them together with its own,
//! in one step, and when that step is the last the call is complete without its latch being set
//! or waited for ([`CountNode::release_as_waiter`]).
//!
//! Memory ordering: every decrement is `AcqRel` — `Release` publishes the finished work of the
//! decrementing task, `Acquire` on the decrement that reaches zero makes all of it visible to the
//! thread that goes on to free the node and notify the parent. Increments are `Relaxed`: they are
//! made by a task that itself still holds a count of the same node, so the node cannot reach zero
//! concurrently, and read-modify-writes of one atomic are totally ordered anyway.
//!
//! # Lifetimes: nothing is touched after the release that may free it
//!
//! A node, a latch and everything the waiter owns (its stack frame, the call's state) may be freed
//! by another thread *the instant* a count is released or a latch is set — the thread that
//! releases the last count frees a heap node, and a waiter that sees its latch set returns and
//! reuses its frame. So every operation reads what it needs *before* its releasing step and
//! touches nothing of the object afterwards: [`CountNode::complete`] reads the node's parent link
//! before its decrement (a decrement that is not the last leaves the node to others), and
//! [`Latch::set`] clones the waiter's handle before the store that sets the latch. rayon-core's
//! `latch.rs` documents the same hazard.
//!
//! The protocol is model-checked with loom: `RUSTFLAGS="--cfg loom" cargo test -p
//! parbench-scheduler --release --lib loom_`. Under loom, dropping a node or a latch counts as a
//! write of all its fields ([`Freed`]), so an access not ordered before the free is reported as a
//! causality violation — the model fails on a `complete` that reads the node after its decrement
//! (`loom_reading_a_node_after_its_release_is_caught` keeps that version as a negative control),
//! and on a caller that skips its latch after a last release without Acquire
//! (`loom_a_waiter_release_without_acquire_is_caught`).

#[cfg(loom)]
use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::thread::{self, Thread};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::thread::{self, Thread};

/// A value that other threads read while its owner may free it.
///
/// Without loom it is the value itself. Under loom it is a loom `UnsafeCell` whose drop is a
/// write, so the model reports any read that is not ordered before the free (a use-after-free or
/// use-after-return) as a causality violation.
#[cfg(not(loom))]
pub(crate) struct Freed<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> Freed<T> {
    pub(crate) fn new(value: T) -> Self {
        Freed(std::cell::UnsafeCell::new(value))
    }

    /// Reads the value; the caller must know that its owner has not freed it yet.
    #[inline]
    pub(crate) fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        // SAFETY: writes (`write`) are ordered before every read of another thread by the
        // protocol of the value's owner, and the owner itself reads only between its writes.
        f(unsafe { &*self.0.get() })
    }

    /// Replaces the value.
    ///
    /// # Safety
    /// No other thread may read the value concurrently: the write must be ordered before every
    /// read of another thread (by a release the reader acquires).
    #[inline]
    pub(crate) unsafe fn write(&self, value: T) {
        // SAFETY: exclusive by the caller's contract.
        unsafe { *self.0.get() = value };
    }
}

#[cfg(loom)]
pub(crate) struct Freed<T>(loom::cell::UnsafeCell<T>);

#[cfg(loom)]
impl<T> Freed<T> {
    pub(crate) fn new(value: T) -> Self {
        Freed(loom::cell::UnsafeCell::new(value))
    }

    pub(crate) fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        // SAFETY: only shared reads happen before the drop below, and loom checks that each of
        // them is ordered before it.
        self.0.with(|value| f(unsafe { &*value }))
    }

    /// Replaces the value (loom checks that no read races with it).
    ///
    /// # Safety
    /// As without loom: no other thread may read the value concurrently.
    pub(crate) unsafe fn write(&self, value: T) {
        // SAFETY: exclusive by the caller's contract, which loom checks.
        self.0.with_mut(|slot| unsafe { *slot = value });
    }
}

#[cfg(loom)]
impl<T> Drop for Freed<T> {
    fn drop(&mut self) {
        self.0.with_mut(|_| ());
    }
}

/// The latch is not set and its waiter is awake.
const UNSET: u8 = 0;
/// The waiter announced that it is about to park (or is parked).
const SLEEPY: u8 = 1;
/// The latch is set.
const SET: u8 = 2;

/// A one-shot flag that wakes the thread which waits for it.
///
/// Setting it costs one compare-and-swap unless its waiter announced that it sleeps: only then
/// is the waiter's thread handle touched (to unpark it). A sleepy waiter leaves only after it saw
/// the flag set, so the latch is alive until the setter's final store.
///
/// The waiter's handle is recorded by its first [`prepare_sleep`](Latch::prepare_sleep), not when
/// the latch is made: most latches (a nested loop's, a `join` whose second half was not stolen)
/// are set before their waiter would sleep, and getting the current thread's handle costs an
/// atomic increment and decrement. On nqueens, whose 2-thread runs make ≈ 450 loop calls each,
/// `thread::current` was ≈ 0.8 % of the samples (`perf record -e cpu-clock`); a nested call of
/// the tree strategy on a busy 2-thread pool went from 60 to 45 ns of overhead for one
/// iteration and from 155 to 141 ns for four (medians of 10 alternating processes).
pub(crate) struct Latch {
    state: AtomicU8,
    /// Written once, by the waiter, before its first announcement of sleep (`SLEEPY`); read by
    /// a setter only after it saw that announcement.
    waiter: Freed<Option<Thread>>,
}

// SAFETY: `state` is atomic; `waiter` is written only by the waiter before the Release exchange
// that announces its sleep and read by a setter only after an Acquire read of that announcement
// (see `prepare_sleep` and `set`), so the accesses never race.
unsafe impl Sync for Latch {}

#[cfg(loom)]
impl Drop for Latch {
    /// The waiter frees the latch as soon as it saw it set: a setter's access to `state` that is
    /// not ordered before this point is a use-after-free.
    fn drop(&mut self) {
        self.state.with_mut(|_| ());
    }
}

impl Latch {
    /// An unset latch. Its waiter is the thread that calls `prepare_sleep`; only that thread
    /// may call it (and `cancel_sleep`).
    pub(crate) fn new() -> Self {
        Latch {
            state: AtomicU8::new(UNSET),
            waiter: Freed::new(None),
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
        if self.waiter.read(Option::is_none) {
            // SAFETY: no setter reads the handle before it saw `SLEEPY`, which is stored below,
            // after this write, for the first time; later calls only read it.
            unsafe { self.waiter.write(Some(thread::current())) };
        }
        // Release on success: publishes the handle to a setter that sees `SLEEPY`. Acquire on
        // failure: the waiter then reads the completed work.
        self.state
            .compare_exchange(UNSET, SLEEPY, Ordering::AcqRel, Ordering::Acquire)
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
    /// the flag; nothing of `*this` is touched after the exchange or store that sets it.
    pub(crate) fn set(this: *const Latch) {
        // SAFETY: the latch's owner (its waiter) frees it only after it has seen the latch set,
        // which happens no earlier than the successful exchange or the store below; until then
        // it is alive, and after them this function does not touch it.
        let latch = unsafe { &*this };
        // Release: publishes the work of the tasks that completed into this latch. Acquire on
        // failure: the failure saw `SLEEPY`, whose exchange published the waiter's handle.
        if latch
            .state
            .compare_exchange(UNSET, SET, Ordering::Release, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        // The waiter announced sleep and leaves only after it saw SET, so the latch is alive until
        // the store; the handle is cloned before it because the latch may be gone after it.
        let waiter = latch
            .waiter
            .read(|waiter| waiter.clone())
            .expect("a waiter that announced sleep recorded its handle");
        // Release: as above.
        latch.state.store(SET, Ordering::Release);
        // Unparking a thread that is not parked only leaves it a token, so a waiter that
        // announced sleep and then parks cannot miss this wake-up. `waiter` is our own handle.
        waiter.unpark();
    }
}

/// Where a node reports when its count reaches zero.
#[derive(Clone, Copy)]
enum Parent {
    Node(*const CountNode),
    Latch(*const Latch),
}

/// Where a node reports, and who frees it: fixed when the node is created.
#[derive(Clone, Copy)]
struct Links {
    parent: Parent,
    /// Heap nodes free themselves when they complete; the root lives in the caller's frame.
    on_heap: bool,
}

/// One node of the completion tree: a count of outstanding pieces of work.
pub(crate) struct CountNode {
    pending: AtomicUsize,
    links: Freed<Links>,
}

#[cfg(loom)]
impl Drop for CountNode {
    /// The node is freed (heap) or its frame is left (root): an access to its count that is not
    /// ordered before this point is a use-after-free.
    fn drop(&mut self) {
        self.pending.with_mut(|_| ());
    }
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
            links: Freed::new(Links {
                parent: Parent::Latch(latch),
                on_heap: false,
            }),
        }
    }

    /// A heap node under `parent` holding one count (its creator's own work). It takes over the
    /// count its creator held in `parent`.
    pub(crate) fn child(parent: *const CountNode) -> *const CountNode {
        Box::into_raw(Box::new(CountNode {
            pending: AtomicUsize::new(1),
            links: Freed::new(Links {
                parent: Parent::Node(parent),
                on_heap: true,
            }),
        }))
    }

    /// Adds `n` outstanding pieces; the caller must hold a count of this node.
    #[inline]
    pub(crate) fn add(&self, n: usize) {
        self.pending.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes `n` more counts while no other thread can reach the node: before any task holding
    /// one of its counts is published. A plain load and store instead of a read-modify-write,
    /// which on x86 would wait for the thread's store buffer to drain.
    ///
    /// # Safety
    /// No other thread may access the node until a later Release (a task's publication) orders
    /// this write before its accesses.
    #[inline]
    pub(crate) unsafe fn add_unshared(&self, n: usize) {
        self.pending
            .store(self.pending.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// Releases `n` counts of a root held by the waiter of its latch. Returns `true` if they were
    /// the last: the call is complete, everything its tasks did is visible to the caller, and
    /// the latch is left unset — its only waiter is the caller, who need not wait for it.
    /// Otherwise whoever releases the last count sets the latch, as usual. The root lives in the
    /// caller's frame, so nothing is freed here.
    ///
    /// # Safety
    /// `self` must be a root (made by [`CountNode::root`]), the caller its latch's waiter and
    /// holding `n` of its counts; the caller must not wait for the latch if this returns `true`.
    #[inline]
    pub(crate) unsafe fn release_as_waiter(&self, n: usize) -> bool {
        // AcqRel, as in `complete`: Release publishes the caller's work to the thread that
        // releases the last count; Acquire, when this release is the last, makes the work of
        // every task of the call visible here.
        self.pending.fetch_sub(n, Ordering::AcqRel) == n
    }

    /// Releases one count; on zero frees the node (if on the heap) and releases its parent.
    ///
    /// # Safety
    /// The caller must hold a count of `*this` and must not use `this` afterwards.
    pub(crate) unsafe fn complete(this: *const CountNode) {
        let mut node = this;
        loop {
            // SAFETY: we hold a count of `node`, so nobody frees it before our decrement: a heap
            // node is freed by whoever takes its count to zero, the root's frame is left only
            // after the latch its last count sets. The links are read *before* the decrement —
            // once it is done, and it was not the last, another thread may free the node at once.
            let n = unsafe { &*node };
            let links = n.links.read(|links| *links);
            // AcqRel: see the module documentation.
            if n.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            // The count reached zero: nobody else holds or will take a count of this node, so it
            // is ours alone until we release its parent below.
            if links.on_heap {
                // SAFETY: the node came from `Box::into_raw` in `child` and is freed once, here,
                // by the one thread whose decrement reached zero.
                drop(unsafe { Box::from_raw(node as *mut CountNode) });
            }
            match links.parent {
                // The node held one count of its parent, which we now release.
                Parent::Node(parent) => node = parent,
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

    impl Results {
        fn new() -> Arc<Results> {
            Arc::new(Results([
                UnsafeCell::new(0),
                UnsafeCell::new(0),
                UnsafeCell::new(0),
            ]))
        }

        /// Slot `piece` written by that piece alone.
        fn write(&self, piece: usize, value: usize) {
            // SAFETY: each piece writes only its own slot (loom checks the rest).
            self.0[piece].with_mut(|slot| unsafe { *slot = value });
        }

        /// The sum of all slots, read by the waiter once the call has completed.
        fn total(&self) -> usize {
            self.0
                .iter()
                // SAFETY: loom reports a read not ordered after a slot's write.
                .map(|cell| cell.with(|slot| unsafe { *slot }))
                .sum()
        }
    }

    struct SendPtr<T>(*const T);
    // SAFETY: test-only wrapper; the protocol keeps the pointee alive while a count is held.
    unsafe impl<T> Send for SendPtr<T> {}

    /// The order of `complete` before the fix: it decrements first and reads the node's links
    /// afterwards, when another thread may already have freed the node. Kept as the negative
    /// control that shows the model catches a use-after-free.
    unsafe fn complete_reading_after_release(this: *const CountNode) {
        let mut node = this;
        loop {
            // SAFETY: deliberately wrong (see above); loom reports the bad access.
            let n = unsafe { &*node };
            // AcqRel: as in `complete`; only the order of the accesses is wrong here.
            let previous = n.pending.fetch_sub(1, Ordering::AcqRel);
            let links = n.links.read(|links| *links);
            if previous != 1 {
                return;
            }
            if links.on_heap {
                // SAFETY: as in `CountNode::complete`.
                drop(unsafe { Box::from_raw(node as *mut CountNode) });
            }
            match links.parent {
                Parent::Node(parent) => node = parent,
                Parent::Latch(latch) => {
                    Latch::set(latch);
                    return;
                }
            }
        }
    }

    /// Waits like a pool thread: check the latch, announce sleep, check again, park. As in the
    /// pool's sleep (`Sleep::sleep`, the guest wait), the re-check lets the waiter leave without
    /// ever being unparked, so a setter must not rely on the unpark to keep the latch alive.
    fn wait(latch: &Latch) {
        while !latch.probe() {
            if latch.prepare_sleep() {
                if !latch.probe() {
                    thread::park();
                }
                latch.cancel_sleep();
            }
        }
    }

    /// A child node under the root whose own piece and one extra piece (its balancing task)
    /// complete on two other threads while the caller completes its own piece. The caller leaves
    /// its frame — dropping the root and the latch — the moment it sees the latch set, and the
    /// last completer of the child frees the child, as in the pool.
    fn completion_tree(complete: unsafe fn(*const CountNode)) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(move || {
            let work = Results::new();
            let mut handles = Vec::new();
            {
                let latch = Latch::new();
                let root = CountNode::root(&latch);
                root.add(1);
                let child = CountNode::child(&root);
                // SAFETY: the child's initial count is held until handed to the first thread.
                unsafe { (*child).add(1) };
                for piece in 0..2 {
                    let node = SendPtr(child);
                    let work = work.clone();
                    handles.push(thread::spawn(move || {
                        let node = node;
                        work.write(piece, piece + 1);
                        // SAFETY: each thread holds one of the child's two counts.
                        unsafe { complete(node.0) };
                    }));
                }
                work.write(2, 3);
                // SAFETY: the caller holds the root's initial count.
                unsafe { complete(&root) };
                wait(&latch);
                // After the latch, all writers are done (loom checks exactly this).
                assert_eq!(work.total(), 6);
                // `root` and `latch` are dropped here, before the other threads are joined.
            }
            for handle in handles {
                handle.join().unwrap();
            }
        });
    }

    /// The latch is set only after every piece, each node is freed exactly once, the work of all
    /// pieces is visible to the waiter, and no thread touches a node or the latch after its owner
    /// may have freed it.
    #[test]
    fn loom_completion_tree_sets_latch_after_all_work() {
        completion_tree(CountNode::complete);
    }

    /// Negative control: the model fails on the old `complete`, which read the node's links after
    /// its decrement.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn loom_reading_a_node_after_its_release_is_caught() {
        completion_tree(complete_reading_after_release);
    }

    /// `release_as_waiter` with a Release-only decrement: a waiter whose last release does not
    /// acquire the thief's. Kept as the negative control that shows the model catches a caller
    /// that skips the latch without synchronizing with the call's tasks.
    ///
    /// # Safety
    /// As [`CountNode::release_as_waiter`] (its signature is what the model takes).
    unsafe fn release_as_waiter_without_acquire(root: &CountNode, n: usize) -> bool {
        root.pending.fetch_sub(n, Ordering::Release) == n
    }

    /// The lazy claims' ending (`strategy::lazy::run`): the root holds the caller's count and
    /// one for an offer on the caller's deque, which a thief may steal (then it runs a piece
    /// and completes the offer's count) or the caller takes back unrun (then it releases both
    /// counts at once). The deque's pop-or-steal is modelled by one swap of a flag. A caller
    /// whose release is the last leaves at once, without the latch; otherwise it waits for the
    /// latch, which the thief's completion sets. Either way it must see the thief's work, and
    /// nobody may touch the root or the latch after the caller left its frame.
    fn waiter_takes_back_its_offer(release: unsafe fn(&CountNode, usize) -> bool) {
        loom::model(move || {
            let work = Results::new();
            let taken = Arc::new(loom::sync::atomic::AtomicBool::new(false));
            // Dropped by hand below, after the checks: a violation found in a check must not
            // run the destructors (which loom checks too) while unwinding.
            let mut latch = std::mem::ManuallyDrop::new(Latch::new());
            let mut root = std::mem::ManuallyDrop::new(CountNode::root(&latch));
            // SAFETY: the thief below is not started yet.
            unsafe { root.add_unshared(1) };
            let node = SendPtr(&*root as *const CountNode);
            let (thief_work, thief_taken) = (work.clone(), taken.clone());
            let handle = thread::spawn(move || {
                let node = node;
                // AcqRel: models the deque's steal, which synchronizes with the push and the pop.
                if !thief_taken.swap(true, Ordering::AcqRel) {
                    thief_work.write(1, 2);
                    // SAFETY: the stolen offer holds one count of the root.
                    unsafe { CountNode::complete(node.0) };
                }
            });
            work.write(0, 1);
            // AcqRel: models the deque's pop, as the thief's swap models its steal.
            let stolen = taken.swap(true, Ordering::AcqRel);
            // SAFETY: the caller holds its own count, and the offer's if it took it back.
            if !unsafe { release(&root, if stolen { 1 } else { 2 }) } {
                wait(&latch);
            }
            // After the call completed, the thief's write (if any) is visible.
            assert_eq!(work.total(), if stolen { 3 } else { 1 });
            // The caller leaves its frame: nothing of the root or the latch may be touched
            // by the thief after this.
            // SAFETY: each is dropped once, and not used afterwards.
            unsafe {
                std::mem::ManuallyDrop::drop(&mut root);
                std::mem::ManuallyDrop::drop(&mut latch);
            }
            handle.join().unwrap();
        });
    }

    #[test]
    fn loom_waiter_that_takes_back_its_offer_sees_all_work() {
        waiter_takes_back_its_offer(CountNode::release_as_waiter);
    }

    /// Negative control: the model fails when the caller's last release only releases.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn loom_a_waiter_release_without_acquire_is_caught() {
        waiter_takes_back_its_offer(release_as_waiter_without_acquire);
    }

    /// `Latch::set` with a Relaxed failure ordering: a setter that saw `SLEEPY` without
    /// acquiring the exchange that published the waiter's handle. Kept as the negative control
    /// that shows the model catches an unordered read of the lazily recorded handle.
    fn set_without_acquiring_the_handle(this: *const Latch) {
        // SAFETY: as in `Latch::set`.
        let latch = unsafe { &*this };
        if latch
            .state
            .compare_exchange(UNSET, SET, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        let waiter = latch.waiter.read(|waiter| waiter.clone());
        // Release: as in `Latch::set` (publishes the call's work to the waiter).
        latch.state.store(SET, Ordering::Release);
        if let Some(waiter) = waiter {
            waiter.unpark();
        }
    }

    /// A waiter that returns (and frees its latch) the moment it sees the latch set, against a
    /// setter on another thread, with the waiter possibly asleep (then the setter reads the
    /// handle the waiter recorded when it announced its sleep).
    ///
    /// There is no negative control for the latch's lifetime: loom's clocks do not advance
    /// between a store and plain accesses that follow it without a scheduling point, so a setter
    /// touching the latch right after its store looks ordered to loom. ThreadSanitizer
    /// (`scripts/test.sh`) covers that case on real memory.
    fn latch_wakes_a_waiter(set: fn(*const Latch)) {
        loom::model(move || {
            let data = Arc::new(UnsafeCell::new(0usize));
            let handle;
            {
                let latch = Latch::new();
                let target = SendPtr(&latch as *const Latch);
                let written = data.clone();
                handle = thread::spawn(move || {
                    let target = target;
                    // SAFETY: only this thread writes before the latch is set.
                    written.with_mut(|value| unsafe { *value = 7 });
                    set(target.0);
                });
                wait(&latch);
                // SAFETY: ordered after the write by the latch.
                assert_eq!(data.with(|value| unsafe { *value }), 7);
            }
            handle.join().unwrap();
        });
    }

    #[test]
    fn loom_latch_wakes_a_waiter_that_returns_at_once() {
        latch_wakes_a_waiter(Latch::set);
    }

    /// Negative control: the model fails on a setter that reads the waiter's handle without
    /// acquiring its announcement of sleep.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn loom_reading_the_handle_without_acquire_is_caught() {
        latch_wakes_a_waiter(set_without_acquiring_the_handle);
    }
}
