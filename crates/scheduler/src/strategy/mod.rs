//! Partitioning strategies: how a parallel loop's iterations are handed to threads.
//!
//! Every strategy runs a loop the same way from the outside: the calling context creates a
//! [`LoopCall`] (the body, the panic state and the shared cursor of the call) and the root of the
//! completion tree, lets the strategy hand out and execute work, releases its own count and then
//! helps executing tasks until the root's latch is set. Only then may the call's stack frame —
//! which every task of the call borrows — go away, and only then is a panic re-raised.
//!
//! One file per strategy: [`tree`] (the default), [`static_blocks`], [`dynamic`], [`guided`] and
//! [`simple`].

pub(crate) mod dynamic;
pub(crate) mod guided;
pub(crate) mod lazy;
pub(crate) mod simple;
pub(crate) mod split_range;
pub(crate) mod static_blocks;
pub(crate) mod tree;

use std::any::Any;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::job::{HeapJob, JobRef};
use crate::latch::{CountNode, Latch};
use crate::registry::{Registry, Slot, WorkerCtx, with_current_ctx};
use crate::unwind::{AbortOnDrop, abort_on_unwind};

pub use tree::{Handoff, tree_handoffs};

/// How a parallel loop distributes its iterations.
///
/// `Strategy::default()` is [`Strategy::Tree`] with [`TreeConfig::default()`].
///
/// ```
/// use parbench_scheduler::{Strategy, ThreadPoolBuilder};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let sum = AtomicUsize::new(0);
/// for strategy in [Strategy::default(), Strategy::Static, Strategy::Dynamic { chunk: 16 }] {
///     pool.parallel_for_with(&strategy, 0..100, |i| {
///         sum.fetch_add(i, Ordering::Relaxed);
///     });
/// }
/// assert_eq!(sum.into_inner(), 3 * 4950);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    /// Tree distribution with timespan-delayed, adaptively sized balancing tasks (the default).
    Tree(TreeConfig),
    /// One contiguous block per thread, sizes differing by at most one; no balancing
    /// (OpenMP `schedule(static)`).
    Static,
    /// Threads repeatedly take `chunk` iterations from a shared cursor (OpenMP
    /// `schedule(dynamic, chunk)`). A `chunk` of 0 is treated as 1.
    Dynamic {
        /// Iterations per grab.
        chunk: usize,
    },
    /// Threads take about `remaining / (2·P)` iterations per grab, never fewer than `min_chunk`
    /// (OpenMP `schedule(guided, min_chunk)`). A `min_chunk` of 0 is treated as 1.
    Guided {
        /// The smallest grab.
        min_chunk: usize,
    },
    /// Recursive halving down to `grain` iterations, every piece a stealable task (TBB's
    /// `simple_partitioner`). A `grain` of 0 is treated as 1.
    Simple {
        /// The largest piece that is not split further.
        grain: usize,
    },
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::Tree(TreeConfig::default())
    }
}

impl Strategy {
    /// The study's first ablation: Tree without the timespan delay (balancing starts before the
    /// first iteration; with an adaptive grain that means a grain of a single iteration).
    ///
    /// ```
    /// use parbench_scheduler::{Strategy, TreeTimespan};
    /// let Strategy::Tree(config) = Strategy::tree_no_timespan() else { unreachable!() };
    /// assert_eq!(config.timespan, TreeTimespan::Disabled);
    /// ```
    pub fn tree_no_timespan() -> Self {
        Strategy::Tree(TreeConfig {
            timespan: TreeTimespan::Disabled,
            ..TreeConfig::default()
        })
    }

    /// The study's second ablation: Tree with a fixed grain instead of the adaptive one.
    ///
    /// ```
    /// use parbench_scheduler::{Grain, Strategy};
    /// let Strategy::Tree(config) = Strategy::tree_fixed_grain(64) else { unreachable!() };
    /// assert_eq!(config.grain, Grain::Fixed(64));
    /// ```
    pub fn tree_fixed_grain(grain: usize) -> Self {
        Strategy::Tree(TreeConfig {
            grain: Grain::Fixed(grain),
            ..TreeConfig::default()
        })
    }
}

/// Settings of the tree strategy.
///
/// ```
/// use parbench_scheduler::{Grain, TreeConfig, TreeTimespan};
/// let config = TreeConfig::default();
/// assert_eq!((config.arity, config.timespan, config.grain), (2, TreeTimespan::Pool, Grain::Adaptive));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeConfig {
    /// K: each hand-off level splits a thread range into K parts (values below 2 act as 2).
    pub arity: usize,
    /// How long a thread runs its share before creating balancing tasks.
    pub timespan: TreeTimespan,
    /// The step in which a thread runs its share after the timespan, which decides when it offers
    /// work and how small a thief's chunks may get.
    pub grain: Grain,
    /// How a call made from inside the pool (a loop body, a task) is run (default
    /// [`NestedCalls::LazyInline`]).
    pub nested: NestedCalls,
    /// An outermost call of at most this many iterations per thread (`n ≤ small_per_thread · P`)
    /// is run by lazy claims in index order, as [`NestedCalls::Lazy`] runs a nested call, whatever
    /// `nested` says (default 8; 0 turns the rule off).
    ///
    /// Its blocks would hold only a few iterations each, typically long ones (tasks): the
    /// adaptive grain could not be smaller than one iteration anyway, and the caller would wait
    /// for the hand-off and a timespan before anything became stealable. Run lazily, the caller
    /// starts at once and claims the next iterations itself while no other thread has joined.
    pub small_per_thread: usize,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig {
            arity: 2,
            timespan: TreeTimespan::Pool,
            grain: Grain::Adaptive,
            nested: NestedCalls::LazyInline,
            small_per_thread: 8,
        }
    }
}

/// How the tree strategy runs a call made from inside the pool — from a loop body, a `join` or
/// `scope` closure, or a spawned task — as opposed to an outermost call, made from outside it or
/// at the top of [`ThreadPool::install`](crate::ThreadPool::install)'s closure.
///
/// An outermost loop is where the tree distribution pays: all threads are idle, the hand-off
/// reaches them in `⌈log_K P⌉` steps, and the timespan keeps a balanced loop free of tasks. Inside
/// the pool the other threads are busy with the outer call's work; a nested hand-off would queue
/// shares in their inboxes and every level would wait out a timespan before anything became
/// stealable — which made the nested task kernels (nqueens, qap, floorplan) slowest on tree.
/// Splitting every nested call at once into many pieces ([`NestedCalls::Split`]) removed the
/// waits but made a task per piece: nqueens' default search makes 447 calls of about four
/// iterations each, ≈ 1 400 tasks under `Split` against 447 under static (one block handed to
/// the other thread per call), and that overhead left tree behind static. Lazy splitting makes a
/// task only when this thread's deque offers a thief nothing.
///
/// What a thief gets is the choice between the lazy rules. Handing it the upper half of what
/// is left ([`NestedCalls::LazyHalves`]) keeps the threads apart: each then works on
/// its own part of the call and takes a new task only when its deque is empty again. Letting it
/// claim the next iterations in index order ([`NestedCalls::Lazy`]) keeps a branch and bound close
/// to the sequential search order, but two threads in one call then claim from the same cursor
/// one iteration at a time, each claim preceded by an offer. On a 2-vCPU AMD EPYC VM that cost
/// `floorplan` 7–11 %, and where the order matters — qap, a search whose work depends on how
/// early good bounds are found — it matters in the *outermost* call, which keeps index-order claims
/// under the small-call rule ([`TreeConfig::small_per_thread`]). Tree / fastest other over 20
/// alternating processes per rule there: index order everywhere (the default until 27 Nov 2026)
/// 1.075, 1.001 and 0.978 on floorplan, nqueens and qap; halves everywhere 0.961, 1.002 and
/// 1.043; halves in nested calls with index order in the outermost one 0.954, 0.995 and 0.951
/// (the measurements are in the repository's docs/tree-measurements.md).
///
/// Halves still made a task and a call's bookkeeping (its state, a completion count, a latch
/// to wait for) for every nested call, even one whose thread had work on its deque for a thief
/// already. The default, [`NestedCalls::LazyInline`], runs such a call inline and halves only
/// what is left once the deque is empty. On nqueens (447 calls of about four tasks per run) that
/// took tree from about 98 to 89 µs at 2 threads; tree / fastest other went from 0.953 to 0.883
/// on nqueens and from 0.947 to 0.932 on qap, every other kernel within the noise (12 alternating
/// default sweeps per rule, one binary; docs/tree-measurements.md, 28 Nov 2026).
///
/// ```
/// use parbench_scheduler::{NestedCalls, Strategy, TreeConfig};
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let as_outermost = Strategy::Tree(TreeConfig { nested: NestedCalls::Tree, ..TreeConfig::default() });
/// let total = pool.parallel_reduce_with(&as_outermost, 0..10, || 0, |i| {
///     pool.parallel_reduce_with(&as_outermost, 0..10, || 0, |j| i * j, |a, b| a + b)
/// }, |a, b| a + b);
/// assert_eq!(total, 45 * 45);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NestedCalls {
    /// Lazy claims in index order (an ablation for nested calls; how an outermost call runs under
    /// the small-call rule): the call's iterations are claimed from a shared cursor, from the low
    /// end, by the threads taking part; a claim starts at one iteration and doubles (up to
    /// `⌈n / (4·P)⌉`, n iterations, P threads) while claims run shorter than the pool's timespan,
    /// and halves after a longer one. A thread joins the call by stealing a *claim offer*: P − 1
    /// are made at the start (so P iterations can always run at the same time), further ones only
    /// when the offering thread's deque is empty. On a busy pool that is about one task per call;
    /// an idle thread joins within one claim and takes the next iterations in index order — the
    /// subtrees a sequential search would visit next.
    Lazy,
    /// Inline while this thread is busy (the default for nested calls): the call runs on the
    /// calling thread, like a sequential loop, for as long as the thread's deque holds a task —
    /// an idle thread has something to steal from this thread already, an enclosing call's
    /// work, larger than any part of this call. The deque is checked before each batch (batches
    /// double from one iteration up to `⌈n / (4·P)⌉`); once it is found empty with two or more
    /// iterations left, the rest becomes a call of its own, run as [`NestedCalls::LazyHalves`]
    /// runs one. A nested call on a busy pool thus costs about what a loop costs, as every call
    /// of a one-thread pool does. Its iterations then run one after another: like rayon, the
    /// pool does not promise that two iterations of a call run at the same time (see the crate
    /// docs).
    #[default]
    LazyInline,
    /// Lazy binary splitting (an ablation; the default until 28 Nov 2026): the range is first halved into P
    /// stealable pieces, then each piece runs from its low end and hands out the upper half of
    /// what is left as a stealable task only when its thread's deque is empty, checked before each
    /// batch of iterations (batches double from one iteration up to `⌈n / (4·P)⌉`). A thief takes
    /// the largest unstarted piece — the upper end of a call.
    LazyHalves,
    /// Eager splitting (an ablation): recursive halving into stealable tasks down to
    /// `⌈n / (4·P)⌉` iterations (n iterations, P threads); no hand-off, no timespan.
    Split,
    /// Exactly like an outermost call: tree hand-off, timespan, adaptive grain (an ablation).
    Tree,
}

/// The timespan a tree-distributed thread runs before it creates balancing tasks.
///
/// ```
/// use parbench_scheduler::{Strategy, TreeConfig, TreeTimespan};
/// use std::time::Duration;
/// let strategy = Strategy::Tree(TreeConfig {
///     timespan: TreeTimespan::Fixed(Duration::from_micros(30)),
///     ..TreeConfig::default()
/// });
/// let pool = parbench_scheduler::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// assert_eq!(pool.parallel_reduce_with(&strategy, 0..100, || 0, |i| i, |a, b| a + b), 4950);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreeTimespan {
    /// The pool's timespan (calibrated at build time, or fixed by the builder).
    #[default]
    Pool,
    /// This duration.
    Fixed(Duration),
    /// No delay: the first balancing task is offered before the first iteration.
    Disabled,
}

/// The tree strategy's grain: the step in which a thread runs its share after the timespan. A
/// share offers work to idle threads only while two grains or more are left (less only to a
/// thread out of work), and a thief's chunks are never below an eighth of a grain.
///
/// ```
/// use parbench_scheduler::{Grain, Strategy, TreeConfig};
/// let coarse = Strategy::Tree(TreeConfig { grain: Grain::Fixed(1024), ..TreeConfig::default() });
/// assert_eq!(coarse, Strategy::tree_fixed_grain(1024));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Grain {
    /// As many iterations as the thread ran during its timespan (at least one).
    #[default]
    Adaptive,
    /// This many iterations (0 acts as 1).
    Fixed(usize),
}

/// The loop body of a call, per index or per chunk.
#[derive(Clone, Copy)]
pub(crate) enum Body<'a> {
    Index(&'a (dyn Fn(usize) + Sync)),
    Chunks(&'a (dyn Fn(Range<usize>) + Sync)),
}

impl Body<'_> {
    /// Runs the whole range on the calling thread, in order.
    ///
    /// Inline, as [`run_loop`]'s one-thread path around it: without the attribute it was a call
    /// of its own in every nested call of a one-thread pool (the loop entries are instantiated in
    /// the caller's crate, which cannot inline it otherwise).
    #[inline]
    fn run_all(self, range: Range<usize>) {
        match self {
            Body::Index(body) => range.for_each(body),
            Body::Chunks(body) => body(range),
        }
    }
}

/// The shared state of one parallel loop call; lives in the caller's frame.
pub(crate) struct LoopCall<'a> {
    body: Body<'a>,
    stop: AtomicBool,
    /// The threads of the call that ran out of work of its own and have not taken more of it
    /// since, one bit per thread ([`idle_bit`]; tree: while any is set, the last iterations of a
    /// share are offered below the grain; see `tree::run_piece`).
    out_of_work: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// How many threads take part (slot 0 is the caller).
    pub(crate) slots: usize,
    participants: Participants,
    /// Next unclaimed offset (Dynamic, Guided, the tree's lazy calls).
    ///
    /// On a cache line of its own: every claiming thread writes it, while the fields above are
    /// read at every claim and every `run`, and the call's latch and root count, written by the
    /// call's tasks, may sit beside the call in the caller's frame. On `floorplan` (nested lazy
    /// calls, 2 threads) tree took 5.7–7.0 % less time padded than unpadded, in three
    /// alternating batches of 30–40 processes (tree / simple 1.02 → 0.96–0.98); aligning the
    /// whole call to 128 bytes without separating the cursor gave about half of that, and
    /// padding the root count as well took it back (tree 630 → 651 µs): the layout matters in
    /// ways false sharing alone does not explain. Dynamic and guided, whose claims contend
    /// anyway, did not move.
    pub(crate) cursor: CachePadded<AtomicUsize>,
}

impl<'a> LoopCall<'a> {
    fn new(ctx: &WorkerCtx<'_>, body: Body<'a>) -> Self {
        let participants = Participants::of(ctx);
        LoopCall {
            body,
            stop: AtomicBool::new(false),
            out_of_work: AtomicUsize::new(0),
            panic: Mutex::new(None),
            slots: participants.slots,
            participants,
            cursor: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    /// The worker that stands for `slot` of this call.
    pub(crate) fn worker_of(&self, slot: usize) -> usize {
        self.participants.worker_of(slot)
    }

    /// Whether a panic stopped the call (no new iterations may start).
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Records that the calling thread has no work of this call left (it is about to look for
    /// some elsewhere).
    #[inline]
    pub(crate) fn note_out_of_work(&self, ctx: &WorkerCtx<'_>) {
        let bit = idle_bit(ctx);
        // Relaxed: a hint for the other threads' splitting decisions; nothing is published
        // through it. Checked first so that the line is written only when the bit changes.
        if self.out_of_work.load(Ordering::Relaxed) & bit == 0 {
            self.out_of_work.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Records that the calling thread starts work of this call: if it had run out of work, it
    /// has found some (chunks of another thread's share).
    #[inline]
    pub(crate) fn note_working(&self, ctx: &WorkerCtx<'_>) {
        let bit = idle_bit(ctx);
        // Relaxed: a hint only (see `note_out_of_work`).
        if self.out_of_work.load(Ordering::Relaxed) & bit != 0 {
            self.out_of_work.fetch_and(!bit, Ordering::Relaxed);
        }
    }

    /// Whether a thread of the call has run out of its work and not found more of it yet (see
    /// `note_out_of_work`).
    #[inline]
    pub(crate) fn someone_is_out_of_work(&self) -> bool {
        // Relaxed: a hint only (see `note_out_of_work`).
        self.out_of_work.load(Ordering::Relaxed) != 0
    }

    /// Runs iterations `range`; returns `false` if the call is stopped.
    pub(crate) fn run(&self, range: Range<usize>) -> bool {
        if range.is_empty() {
            return !self.stopped();
        }
        if self.stopped() {
            return false;
        }
        let result = panic::catch_unwind(AssertUnwindSafe(|| match self.body {
            Body::Index(body) => {
                for index in range {
                    if self.stopped() {
                        return;
                    }
                    body(index);
                }
            }
            Body::Chunks(body) => body(range),
        }));
        match result {
            Ok(()) => !self.stopped(),
            Err(payload) => {
                self.stop.store(true, Ordering::Relaxed);
                let mut first = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(payload);
                false
            }
        }
    }

    /// The first panic of the call's tasks, if any; called only after the call completed: the
    /// root latch was observed set, or the caller's own release of the root was its last
    /// (`CountNode::release_as_waiter`).
    ///
    /// Either Acquire orders every task of the call before this, and with it the `stop`
    /// store that precedes each recorded panic. A call that was not stopped recorded no panic,
    /// and its caller skips the lock (two read-modify-writes per call).
    fn take_panic(&self) -> Option<Box<dyn Any + Send>> {
        if !self.stopped() {
            return None;
        }
        self.panic.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The threads of a call and the worker behind each slot.
///
/// An outside caller is slot 0 and stands in for worker 0; slots 1.. are workers 1… A worker that
/// calls is slot 0 and the other slots are the workers that are not standing aside for outside
/// callers (see `Registry::is_standing_aside`), in ring order after it: their threads are already
/// represented by those callers, and handing them shares would put more threads to work than
/// the pool has.
#[derive(Clone, Copy, Debug)]
struct Participants {
    slots: usize,
    root: usize,
    /// Workers `first_active..num_threads` are not standing aside.
    first_active: usize,
    num_threads: usize,
    guest_root: bool,
}

impl Participants {
    fn of(ctx: &WorkerCtx<'_>) -> Self {
        let num_threads = ctx.registry.num_threads();
        match ctx.slot {
            // An inline context makes no parallel call (see `Slot::Inline`).
            Slot::Guest(_) | Slot::Inline => Participants {
                slots: num_threads,
                root: 0,
                first_active: 0,
                num_threads,
                guest_root: true,
            },
            Slot::Worker(root) => {
                let first_active = ctx.registry.standing_aside().min(num_threads);
                let active = num_threads - first_active;
                let root_is_active = root >= first_active;
                Participants {
                    slots: 1 + active - usize::from(root_is_active),
                    root,
                    first_active,
                    num_threads,
                    guest_root: false,
                }
            }
        }
    }

    fn worker_of(&self, slot: usize) -> usize {
        if self.guest_root {
            return slot % self.num_threads;
        }
        if slot == 0 {
            return self.root;
        }
        let active = self.num_threads - self.first_active;
        let offset = if self.root >= self.first_active {
            // The ring of active workers starting after the root (which is slot 0).
            (self.root - self.first_active + slot) % active
        } else {
            (slot - 1) % active
        };
        self.first_active + offset
    }
}

/// The calling thread's bit in [`LoopCall`]'s out-of-work mask: worker `i` has bit `i mod B`,
/// every outside caller bit `B`, where `B = usize::BITS - 1`. In pools of more than `B` workers
/// two threads can share a bit, so one that finds work can clear the mark of another that is
/// still idle; the mark is only a hint (that thread then gets pieces of at least two grains, as
/// before anyone ran out of work).
fn idle_bit(ctx: &WorkerCtx<'_>) -> usize {
    let guest_bit = usize::BITS as usize - 1;
    match ctx.slot {
        Slot::Worker(index) => 1 << (index % guest_bit),
        Slot::Guest(_) | Slot::Inline => 1 << guest_bit,
    }
}

/// Splits `range` into `parts` contiguous blocks whose sizes differ by at most one, larger first,
/// and returns block `index`.
pub(crate) fn block(range: &Range<usize>, parts: usize, index: usize) -> Range<usize> {
    let len = range.len();
    let base = len / parts;
    let extra = len % parts;
    let start = range.start + index * base + index.min(extra);
    let size = base + usize::from(index < extra);
    start..start + size
}

/// A count held on a completion node, movable into a job.
#[derive(Clone, Copy)]
pub(crate) struct NodeRef(pub(crate) *const CountNode);

// SAFETY: the node is alive while the count this reference stands for is held, and CountNode is
// Sync.
unsafe impl Send for NodeRef {}

impl NodeRef {
    /// Releases the count.
    ///
    /// # Safety
    /// The count must be held and is gone afterwards.
    pub(crate) unsafe fn complete(self) {
        // SAFETY: forwarded.
        unsafe { CountNode::complete(self.0) }
    }

    /// Takes one more count of the node for a task about to be queued.
    pub(crate) fn add(self, n: usize) {
        // SAFETY: the caller holds a count, so the node is alive.
        unsafe { (*self.0).add(n) }
    }

    /// [`CountNode::add_unshared`].
    ///
    /// # Safety
    /// As there: no task holding a count of the node has been published yet.
    pub(crate) unsafe fn add_unshared(self, n: usize) {
        // SAFETY: the caller holds a count, so the node is alive; exclusive by the contract.
        unsafe { (*self.0).add_unshared(n) }
    }

    /// [`CountNode::release_as_waiter`].
    ///
    /// # Safety
    /// As there.
    pub(crate) unsafe fn release_as_waiter(self, n: usize) -> bool {
        // SAFETY: the caller holds `n` counts, so the node is alive; forwarded.
        unsafe { (*self.0).release_as_waiter(n) }
    }
}

/// Makes a job that runs `work` in the executing thread's context, then releases `count`.
///
/// Who frees what: the call's state (`LoopCall`), its root node and latch live in the frame of
/// the thread that made the call (`run_loop`), which it leaves only after the call completed
/// (the root latch is set, or the caller's own release of the root was the last); that needs
/// this job's count, which is released last — `work` and everything it captured are consumed
/// before, and nothing is touched after `complete`.
///
/// # Safety
/// `count` must be held for the job, and everything `work` borrows must outlive the call (the call
/// waits until the root's counts are all released, this one included).
pub(crate) unsafe fn counted_job<'a>(
    count: NodeRef,
    work: impl FnOnce(&WorkerCtx<'_>) + Send + 'a,
) -> JobRef {
    // SAFETY: forwarded from the caller.
    unsafe {
        HeapJob::into_job_ref(move || {
            let count = count;
            // `HeapJob` would swallow a panic of the scheduler's own here and leave the count
            // held, so the call would never end (see `crate::unwind`).
            abort_on_unwind("a balancing task ran", || {
                crate::registry::with_current_ctx(work);
                count.complete();
            });
        })
    }
}

/// Runs a parallel loop on `registry` with `strategy`.
///
/// Inlined into every loop entry so that the commonest call of a one-thread pool — one nested in
/// a body or task of the same pool — costs a check and the body's call: nqueens makes hundreds
/// of such calls per run with a few iterations each, and the frames of the general path were
/// about 2 % of its time on one thread (`perf record`, 1-thread sweep).
#[inline]
pub(crate) fn run_loop(
    registry: &Registry,
    strategy: &Strategy,
    range: Range<usize>,
    body: Body<'_>,
) {
    if range.is_empty() {
        return;
    }
    if registry.num_threads() == 1 && registry.current_context_is_this() {
        // What the general path does for one thread, minus its frames: the body runs inline,
        // already inside the pool's context.
        body.run_all(range);
        return;
    }
    run_loop_entered(registry, strategy, range, body);
}

/// [`run_loop`] for every call but a one-thread pool's nested ones.
#[inline(never)]
fn run_loop_entered(registry: &Registry, strategy: &Strategy, range: Range<usize>, body: Body<'_>) {
    if crate::registry::must_run_sequentially() {
        registry.in_sequential_context(|| run_sequentially(strategy, range, body));
        return;
    }
    if registry.num_threads() == 1 {
        // One thread: nothing to hand out or balance, so no hand-off, timespan or tasks — the
        // body runs inline, inside the pool's context (so calls nested in it stay in this pool)
        // and with the same panic behaviour (the first panic stops the loop and propagates).
        registry.in_context(|_| body.run_all(range));
        return;
    }
    // Decided before entering: inside this pool already means called from a body or a task.
    let nested = registry.call_is_nested();
    let mut range = range;
    if nested
        && matches!(strategy, Strategy::Tree(config) if config.nested == NestedCalls::LazyInline)
    {
        match run_inline_while_busy(range, body, registry.num_threads()) {
            Some(rest) => range = rest,
            None => return,
        }
    }
    let panic = registry.in_context(|ctx| {
        let call = LoopCall::new(ctx, body);
        let latch = Latch::new();
        let root = CountNode::root(&latch);
        let root_ref = NodeRef(&root);
        // From the first share handed out until the call completed, other threads use `call`,
        // `latch` and `root` in this frame: a panic of the scheduler's own (a body's is caught
        // in `LoopCall::run`) must not unwind out of it (see `crate::unwind`). Declared after
        // them, so that unwinding reaches the guard before it drops any of them.
        let guard = AbortOnDrop::new("a parallel loop's work was out");
        // Every strategy releases the caller's own count of the root (held since
        // `CountNode::root`) when the caller's part is done. Lazy claims also wait for the
        // call themselves (`true`): they may complete it without setting the latch.
        let complete = match strategy {
            Strategy::Tree(config) if nested && config.nested == NestedCalls::Split => {
                let grain = range.len().div_ceil(4 * registry.num_threads());
                simple::run(ctx, &call, root_ref, range, grain);
                false
            }
            Strategy::Tree(config)
                if nested
                    && matches!(
                        config.nested,
                        NestedCalls::LazyHalves | NestedCalls::LazyInline
                    ) =>
            {
                lazy::run_halves(ctx, &call, root_ref, range, call.slots);
                false
            }
            Strategy::Tree(config)
                if (nested && config.nested == NestedCalls::Lazy)
                    || (!nested
                        && range.len() <= config.small_per_thread.saturating_mul(call.slots)) =>
            {
                lazy::run(ctx, &call, root_ref, range, call.slots, &latch);
                true
            }
            Strategy::Tree(config) => {
                tree::run(ctx, &call, root_ref, range, config, !nested);
                false
            }
            Strategy::Static => {
                static_blocks::run(ctx, &call, root_ref, range);
                false
            }
            Strategy::Dynamic { chunk } => {
                dynamic::run(ctx, &call, root_ref, range, *chunk);
                false
            }
            Strategy::Guided { min_chunk } => {
                guided::run(ctx, &call, root_ref, range, *min_chunk);
                false
            }
            Strategy::Simple { grain } => {
                simple::run(ctx, &call, root_ref, range, *grain);
                false
            }
        };
        if !complete {
            ctx.wait_for(&latch, crate::WaitKind::Loop);
        }
        guard.disarm();
        call.take_panic()
    });
    if let Some(payload) = panic {
        panic::resume_unwind(payload);
    }
}

/// A call nested too deeply to wait for anybody (see `MAX_NESTED_WAITS`), run on the calling
/// thread in order. Under [`Strategy::Dynamic`] a body over chunks still gets at most `chunk`
/// iterations per call, as
/// [`ThreadPool::parallel_for_chunks`](crate::ThreadPool::parallel_for_chunks) promises for
/// pools of more than one thread (code may size a buffer by it); every other body gets the
/// whole range at once.
fn run_sequentially(strategy: &Strategy, range: Range<usize>, body: Body<'_>) {
    match (strategy, body) {
        (Strategy::Dynamic { chunk }, Body::Chunks(body)) => {
            let chunk = (*chunk).max(1);
            let mut start = range.start;
            while start < range.end {
                let end = range.end.min(start.saturating_add(chunk));
                body(start..end);
                start = end;
            }
        }
        _ => body.run_all(range),
    }
}

/// [`NestedCalls::LazyInline`]: runs `range` on the calling thread, which is inside the pool, while
/// its deque holds a task; returns what is left once the deque is found empty before a batch with
/// two or more iterations left (`None` when all ran). Batches double from one iteration up to
/// `⌈n / (4·P)⌉`, as [`NestedCalls::LazyHalves`] runs its pieces: a body over chunks gets chunks
/// of some length, and the deque is checked a few times per call. A panic of the body unwinds
/// from here as from a sequential loop: nothing of the call was shared yet.
fn run_inline_while_busy(
    range: Range<usize>,
    body: Body<'_>,
    threads: usize,
) -> Option<Range<usize>> {
    let max_batch = range.len().div_ceil(4 * threads.max(1)).max(1);
    with_current_ctx(|ctx| {
        let mut next = range.start;
        let mut batch = 1usize;
        while next < range.end {
            if range.end - next >= 2 && ctx.deque_is_empty() {
                return Some(next..range.end);
            }
            let end = range.end.min(next.saturating_add(batch));
            body.run_all(next..end);
            next = end;
            batch = batch.saturating_mul(2).min(max_batch);
        }
        None
    })
}

/// Repeatedly claims pieces from `call.cursor` (offsets into `range`) and runs them with `run`
/// (which returns `false` once the call is stopped); `size` maps the remaining iteration count to
/// the size of the next claim. Shared by Dynamic, Guided and the tree's lazy calls.
pub(crate) fn drain_cursor(
    call: &LoopCall<'_>,
    range: &Range<usize>,
    mut size: impl FnMut(usize) -> usize,
    mut run: impl FnMut(Range<usize>) -> bool,
) {
    let len = range.len();
    let mut offset = call.cursor.load(Ordering::Relaxed);
    loop {
        if offset >= len || call.stopped() {
            return;
        }
        let take = size(len - offset).clamp(1, len - offset);
        // Relaxed: the cursor only partitions the index space; iteration data is published by
        // the completion tree.
        match call.cursor.compare_exchange_weak(
            offset,
            offset + take,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                let start = range.start + offset;
                if !run(start..start + take) {
                    return;
                }
                offset = call.cursor.load(Ordering::Relaxed);
            }
            Err(current) => offset = current,
        }
    }
}

/// Hands `work` to every other slot of the call (one task each, via its worker's inbox), runs it
/// on the calling context too, and releases the caller's count of `root`. Shared by Static,
/// Dynamic and Guided.
/// Only the first `participants` slots take part (no more than there are iterations).
pub(crate) fn on_every_slot<'a>(
    ctx: &WorkerCtx<'_>,
    call: &'a LoopCall<'a>,
    root: NodeRef,
    participants: usize,
    work: impl Fn(&LoopCall<'a>, usize) + Send + Sync + Clone + 'a,
) {
    for slot in 1..participants.min(call.slots) {
        root.add(1);
        let work = work.clone();
        // SAFETY: the job holds the count just added; `call` lives until the root latch is set.
        let job = unsafe { counted_job(root, move |_| work(call, slot)) };
        ctx.registry.push_to(call.worker_of(slot), job);
    }
    work(call, 0);
    // SAFETY: the caller's own count, released once.
    unsafe { root.complete() };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::with_current_ctx;

    /// The out-of-work mark is per thread: a thread that starts another piece clears its own
    /// mark only, and a call has someone out of work while any thread's mark is set.
    #[test]
    fn out_of_work_marks_are_per_thread_and_cleared_by_new_work() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let body = |_: usize| {};
        pool.registry().in_context(|guest| {
            let call = LoopCall::new(guest, Body::Index(&body));
            assert!(!call.someone_is_out_of_work());
            call.note_out_of_work(guest);
            assert!(call.someone_is_out_of_work());
            // Each worker in turn: worker 0 runs out of work, then worker 1 starts a piece.
            let on_worker = |index: usize, out: bool| {
                pool.broadcast(|worker| {
                    if worker.index() == index {
                        with_current_ctx(|ctx| match out {
                            true => call.note_out_of_work(ctx),
                            false => call.note_working(ctx),
                        });
                    }
                });
            };
            on_worker(0, true);
            call.note_working(guest);
            on_worker(1, false);
            assert!(
                call.someone_is_out_of_work(),
                "worker 0 is still out of work"
            );
            on_worker(0, false);
            assert!(!call.someone_is_out_of_work());
        });
    }
}
