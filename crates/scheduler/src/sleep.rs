//! How idle threads park and are woken.
//!
//! A thread that finds no work spins (stealing) for the pool's `spin_before_park` window and then
//! parks. Work can arrive in three ways, each with its own wake-up rule:
//!
//! * `spawn_on(i, …)` puts a task in worker `i`'s inbox and wakes worker `i` if it sleeps — this is
//!   how the tree distribution hands a share to a child;
//! * `spawn`, `join` and the `Simple` strategy push a stealable task and wake *one* sleeping worker,
//!   because nobody else is known to be looking for it;
//! * the tree strategy's balancing tasks wake one sleeping *participant* of the call per piece
//!   offered (a thread offers one at a time, when its deque is empty): participants normally are awake, but one that finished its share early may already
//!   have parked. Workers that are not part of the call (worker 0 when an outside thread calls)
//!   are left asleep: on a fully used machine they would only add a runnable thread.
//!
//! A worker that is running a task does not look at its inbox, so a share handed to it would wait
//! while other workers sleep; in that case the pusher (or, if the worker became busy just after the
//! push, the worker itself) wakes one other worker to steal it (`Sleep::set_busy`).
//!
//! A worker that waits *away* from its worker loop — a guest of another pool's operation, or
//! blocked on a call queued in another pool (`in_worker_blocking`) — parks outside this protocol,
//! marked away (`Sleep::set_away`), but keeps running its own pool's work (`serve_home` in
//! `registry.rs`). A hand-off to it (a share, a broadcast job) unparks it; work queued on the
//! pool as a whole (`spawn` from outside, an `install` queued because the guest slots were
//! taken) wakes a sleeping worker or, if none was asleep, unparks the first worker away that
//! runs such work (`Sleep::wake_one`): when all of them wait away, nobody else would run it. A
//! worker away with `MAX_NESTED_WAITS` waits on its stack runs only what is handed to it
//! ([`Away`]), and one that goes that deep just after being picked passes the work on
//! (`Sleep::enter_away`). These are the
//! away paths only: a worker waiting in its own pool sleeps through the protocol, and the
//! pushes of `join`, loops and `spawn` from a worker (`wake_one_of`) read no away mark (their
//! pusher runs the task itself if nobody takes it).
//!
//! No wake-up is lost: a sleeper first announces itself (`asleep = true`, then the `sleeping`
//! count, both `SeqCst`) and only then re-checks every queue; a waker first pushes, then issues a
//! `SeqCst` fence and reads the announcement. Whichever comes second sees the other (the classic
//! store-buffer pattern, which needs sequential consistency on both sides). Parking uses the
//! thread's park token, so an unpark that arrives between the re-check and `park` is not lost
//! either. Latches unpark their waiter directly (see `latch.rs`); a worker waiting on a latch
//! sleeps through this same protocol, so work handed to it still wakes it.
//!
//! The exit of a dropped pool's workers (`Registry::worker_main`: the last worker past its exit
//! hook wakes all, the others sleep until the count of such workers is zero) is model-checked
//! with loom on this code: `RUSTFLAGS="--cfg loom" cargo test -p parbench-scheduler --release
//! --lib loom_`. A version whose last worker does not wake the others deadlocks in the model
//! (`loom_exit_without_the_last_wake_up_is_caught`). So is the hand-off to a worker waiting away
//! from its pool (`Sleep::set_away`; a share or a broadcast job, whose pusher reads the away mark
//! after `wake`'s fence): a pusher that does not read it leaves the worker parked for good in the
//! model (`loom_a_hand_off_without_the_away_unpark_is_caught`), and so does an away mark set
//! without `SeqCst`. And so is work injected while every worker is away or asleep
//! (`injected_job_reaches_a_worker`): a `wake_one` that wakes only sleepers leaves the worker
//! away parked for good (`loom_injected_work_without_the_away_unpark_is_caught`); and so is a
//! worker picked for it that goes deeper (`injected_job_passed_on_by_a_worker_going_deeper`:
//! without passing it on, or if `wake_one` picked a worker too deep to run it, the job waits
//! for good).
//!
//! Lifetimes: the per-worker state and thread handles here belong to the registry, which every
//! worker and every calling context keeps alive (workers hold an `Arc` until they exit; callers
//! borrow the pool), so a waker never touches freed memory. Unparking a thread that has exited
//! is harmless (the handle keeps the thread's record alive).

use std::sync::OnceLock;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering, fence};
#[cfg(loom)]
use loom::thread::{self, Thread};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
use std::thread::{self, Thread};

use crate::snapshot::{WaitKind, WorkerState};

use crossbeam_utils::CachePadded;

/// Whether a worker waits away from its worker loop, and which of its pool's work it runs there
/// (`serve_home` in `registry.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Away {
    /// In its worker loop, or in a wait of its own pool's operation (the protocol above).
    No = 0,
    /// Away with `MAX_NESTED_WAITS` waits on its stack: runs only the work handed to it (a
    /// hand-off unparks it).
    Handed = 1,
    /// Away: runs all of its pool's work (a hand-off, or work injected while no worker sleeps,
    /// unparks it).
    All = 2,
}

impl Away {
    fn from_u8(value: u8) -> Away {
        match value {
            1 => Away::Handed,
            2 => Away::All,
            _ => Away::No,
        }
    }
}

/// Per-worker sleep state.
struct WorkerSleep {
    asleep: AtomicBool,
    /// Running a task (not looking for work): work handed to this worker would wait.
    busy: AtomicBool,
    /// Waiting inside another operation's context (a guest of another pool, or of this one
    /// through another pool's work), where it parks outside this protocol but still runs work
    /// of this pool (`serve_home` in `registry.rs`): an [`Away`] as `u8`.
    away: AtomicU8,
    thread: OnceLock<Thread>,
    /// Diagnostics only (`ThreadPool::snapshot`): latch waits on the worker's stack and the kind
    /// of the innermost one (`WaitKind` as `1 + index`, 0 for none).
    waits: AtomicU32,
    innermost_wait: AtomicU8,
}

/// The sleep state of all workers of a pool.
pub(crate) struct Sleep {
    workers: Vec<CachePadded<WorkerSleep>>,
    sleeping: AtomicUsize,
}

impl Sleep {
    pub(crate) fn new(num_threads: usize) -> Self {
        Sleep {
            workers: (0..num_threads)
                .map(|_| {
                    CachePadded::new(WorkerSleep {
                        asleep: AtomicBool::new(false),
                        busy: AtomicBool::new(false),
                        away: AtomicU8::new(Away::No as u8),
                        thread: OnceLock::new(),
                        waits: AtomicU32::new(0),
                        innermost_wait: AtomicU8::new(0),
                    })
                })
                .collect(),
            sleeping: AtomicUsize::new(0),
        }
    }

    /// Registers the calling thread as worker `index` (called once, by the worker itself).
    pub(crate) fn register_current(&self, index: usize) {
        let _ = self.workers[index].thread.set(thread::current());
    }

    /// Parks worker `index` unless `should_wake` already holds after announcing the sleep.
    pub(crate) fn sleep(&self, index: usize, should_wake: impl Fn() -> bool) {
        let me = &self.workers[index];
        // SeqCst: the announcement must be ordered before the re-check below (see module docs).
        me.asleep.store(true, Ordering::SeqCst);
        self.sleeping.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        while !should_wake() && me.asleep.load(Ordering::SeqCst) {
            thread::park();
        }
        me.asleep.store(false, Ordering::Relaxed);
        self.sleeping.fetch_sub(1, Ordering::Relaxed);
    }

    /// Wakes worker `index` if it sleeps. Call after publishing the work. Returns `true` if the
    /// worker is running a task instead (so the work may wait unless somebody else takes it).
    pub(crate) fn wake(&self, index: usize) -> bool {
        // SeqCst fence: orders the caller's push before reading the announcements (the `asleep`
        // pattern above, and `busy` below).
        fence(Ordering::SeqCst);
        !self.wake_if_asleep(index) && self.workers[index].busy.load(Ordering::SeqCst)
    }

    /// Marks worker `index` as running a task (`true`) or looking for work (`false`); returns the
    /// previous mark.
    ///
    /// A task handed to a busy worker would wait in its inbox while other workers sleep. Both
    /// sides check the other: the pusher reads `busy` after pushing (and then wakes another
    /// worker), the worker re-checks its inbox after marking itself busy (and then does so
    /// itself). With `SeqCst` on both sides one of them sees the other.
    pub(crate) fn set_busy(&self, index: usize, busy: bool) -> bool {
        let previous = self.workers[index].busy.swap(busy, Ordering::SeqCst);
        if busy {
            fence(Ordering::SeqCst);
        }
        previous
    }

    /// Wakes one sleeping worker for work queued on the pool as a whole (its injector); if none
    /// sleeps, unparks one that waits away from its worker loop. Call after publishing the work.
    ///
    /// A worker away (a guest of another pool, or blocked in `in_worker_blocking`) parks outside
    /// this protocol but still runs its pool's work, the injector included (`serve_home` in
    /// `registry.rs`). When every worker is away, nobody else would ever take the work — and the
    /// operations they wait in may need it (two pools calling into each other). One is enough:
    /// it looks at the injector whenever it finds nothing else to do, away or back in its pool.
    pub(crate) fn wake_one(&self) {
        if !self.wake_one_asleep() {
            self.unpark_one_away();
        }
    }

    /// Wakes one sleeping worker, if any; returns whether it woke one. Call after publishing the
    /// work.
    fn wake_one_asleep(&self) -> bool {
        // SeqCst fence: orders the caller's push before reading the announcements (`asleep`
        // here, `away` in `unpark_one_away`).
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) == 0 {
            return false;
        }
        (0..self.workers.len()).any(|index| self.wake_if_asleep(index))
    }

    /// Unparks the first worker away that runs work injected into its pool ([`Away::All`]), if
    /// any (see `set_away`). Call after a `SeqCst` fence that follows the push
    /// (`wake_one_asleep`'s).
    fn unpark_one_away(&self) {
        // SeqCst: part of the store-buffer pattern of `set_away`.
        if let Some(index) = (0..self.workers.len())
            .find(|&index| self.workers[index].away.load(Ordering::SeqCst) == Away::All as u8)
        {
            self.unpark(index);
        }
    }

    /// Wakes one sleeping worker among `candidates`, if any. Call after publishing the work.
    pub(crate) fn wake_one_of(&self, candidates: impl Iterator<Item = usize>) {
        // SeqCst fence: orders the caller's push before reading the announcements.
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) == 0 {
            return;
        }
        for index in candidates {
            if self.wake_if_asleep(index) {
                return;
            }
        }
    }

    /// Records that worker `index` starts (`Some`) or ends (`None`, restoring `outer`) a wait on a
    /// latch. Diagnostics only, so Relaxed.
    pub(crate) fn note_wait(&self, index: usize, kind: Option<WaitKind>, outer: Option<WaitKind>) {
        let worker = &self.workers[index];
        let encode = |kind: Option<WaitKind>| kind.map_or(0, |kind| 1 + kind as u8);
        match kind {
            Some(kind) => {
                worker.waits.fetch_add(1, Ordering::Relaxed);
                worker
                    .innermost_wait
                    .store(encode(Some(kind)), Ordering::Relaxed);
            }
            None => {
                worker.waits.fetch_sub(1, Ordering::Relaxed);
                worker
                    .innermost_wait
                    .store(encode(outer), Ordering::Relaxed);
            }
        }
    }

    /// The kind of worker `index`'s innermost wait, if any.
    pub(crate) fn innermost_wait(&self, index: usize) -> Option<WaitKind> {
        match self.workers[index].innermost_wait.load(Ordering::Relaxed) {
            1 => Some(WaitKind::Loop),
            2 => Some(WaitKind::Join),
            3 => Some(WaitKind::Scope),
            4 => Some(WaitKind::Broadcast),
            _ => None,
        }
    }

    /// What worker `index` does, and how many latch waits are on its stack (diagnostics).
    pub(crate) fn state(&self, index: usize) -> (WorkerState, u32) {
        let worker = &self.workers[index];
        let state = if worker.asleep.load(Ordering::Relaxed) {
            WorkerState::Parked
        } else if worker.busy.load(Ordering::Relaxed) {
            WorkerState::RunningTask
        } else {
            WorkerState::LookingForWork
        };
        (state, worker.waits.load(Ordering::Relaxed))
    }

    /// Wakes every worker (pool shutdown).
    pub(crate) fn wake_all(&self) {
        // SeqCst fence: orders what the caller published (`terminate`, or the last detached
        // task's decrement) before the stores below, as the fence in `wake` orders a push.
        fence(Ordering::SeqCst);
        for worker in &self.workers {
            // SeqCst: part of the store-buffer pattern with `sleep`, like `wake_if_asleep`.
            worker.asleep.store(false, Ordering::SeqCst);
            if let Some(thread) = worker.thread.get() {
                thread.unpark();
            }
        }
    }

    /// Marks worker `index` (the calling thread) as waiting away from its worker loop, and
    /// running which work there (see [`Away`]); returns the previous mark.
    ///
    /// The store-buffer pattern of `sleep`: the thread marks itself away, then looks at its
    /// queues, then parks; a pusher pushes, issues a `SeqCst` fence (`wake`, `wake_one`) and
    /// then reads the mark (`unpark_if_away`, `unpark_one_away`). Whichever comes second sees
    /// the other, and an unpark that comes before the park leaves a token. See `enter_away` for a
    /// worker that goes from [`Away::All`] to [`Away::Handed`].
    pub(crate) fn set_away(&self, index: usize, away: Away) -> Away {
        let previous = self.workers[index].away.swap(away as u8, Ordering::SeqCst);
        if away != Away::No {
            fence(Ordering::SeqCst);
        }
        Away::from_u8(previous)
    }

    /// [`set_away`](Self::set_away) on entering a wait away, where `injected` says whether
    /// work is queued on the pool as a whole.
    ///
    /// A worker whose wait around this one runs such work ([`Away::All`]) but which is too deep
    /// here to run it ([`Away::Handed`]) may have been the one a `wake_one` unparked for work
    /// injected just before: it passes that on. Its mark's store and fence come before the check,
    /// a pusher's push and fence before its read of the mark: either the pusher picks another
    /// worker or this check sees the work.
    pub(crate) fn enter_away(&self, index: usize, away: Away, injected: impl Fn() -> bool) -> Away {
        let previous = self.set_away(index, away);
        if previous == Away::All && away == Away::Handed && injected() {
            self.wake_one();
        }
        previous
    }

    /// Unparks worker `index` if it waits away from its worker loop (see `set_away`). Call
    /// after `wake`, whose fence orders the caller's push before the read.
    pub(crate) fn unpark_if_away(&self, index: usize) {
        // SeqCst: part of the store-buffer pattern of `set_away`.
        if self.workers[index].away.load(Ordering::SeqCst) != Away::No as u8 {
            self.unpark(index);
        }
    }

    fn unpark(&self, index: usize) {
        if let Some(thread) = self.workers[index].thread.get() {
            thread.unpark();
        }
    }

    fn wake_if_asleep(&self, index: usize) -> bool {
        let worker = &self.workers[index];
        // SeqCst: part of the store-buffer pattern with `sleep`.
        if worker.asleep.load(Ordering::SeqCst)
            && worker
                .asleep
                .compare_exchange(true, false, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        {
            self.unpark(index);
            return true;
        }
        false
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// The exit of `Registry::worker_main` on `workers` workers: each, past its exit hook,
    /// decrements the count of workers not past theirs, the last wakes every worker
    /// (`wake_last`), and each sleeps until the count is zero. Loom reports a deadlock if a
    /// worker can sleep through the last decrement.
    fn exit_together(workers: usize, wake_last: bool) {
        let mut model = loom::model::Builder::new();
        if workers > 2 {
            // Three workers with unbounded preemptions run for hours; a lost wake-up of this
            // protocol needs two preemptions (a sleeper between its check and its park, the last
            // worker between its decrement and its wake-up).
            model.preemption_bound = Some(3);
        }
        model.check(move || {
            let sleep = Arc::new(Sleep::new(workers));
            let in_exit = Arc::new(AtomicUsize::new(workers));
            let handles: Vec<_> = (0..workers)
                .map(|index| {
                    let (sleep, in_exit) = (Arc::clone(&sleep), Arc::clone(&in_exit));
                    thread::spawn(move || {
                        sleep.register_current(index);
                        // SeqCst: as in `worker_main`.
                        if in_exit.fetch_sub(1, Ordering::SeqCst) == 1 && wake_last {
                            sleep.wake_all();
                        }
                        // `WorkerCtx::wait_until` without spinning or work to find: check,
                        // then sleep through the protocol, until the count is zero.
                        while in_exit.load(Ordering::SeqCst) != 0 {
                            sleep.sleep(index, || in_exit.load(Ordering::SeqCst) == 0);
                        }
                    })
                })
                .collect();
            for handle in handles {
                handle.join().unwrap();
            }
        });
    }

    #[test]
    fn loom_workers_exit_together() {
        exit_together(2, true);
    }

    #[test]
    fn loom_three_workers_exit_together() {
        exit_together(3, true);
    }

    /// Negative control: the model finds the lost wake-up.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn loom_exit_without_the_last_wake_up_is_caught() {
        exit_together(2, false);
    }

    /// How a hand-off reaches a worker waiting away from its pool (`serve_home` in
    /// `registry.rs`).
    #[derive(Clone, Copy)]
    enum HandOff {
        /// `Registry::push_to`: the away mark is read only when `wake` finds the worker busy.
        Share,
        /// `Registry::push_broadcast`: the away mark is read after every `wake`.
        Broadcast,
        /// Negative control: the pusher never reads the away mark.
        WithoutUnpark,
    }

    /// A worker that went away from its worker loop inside a task (busy, then marked away)
    /// checks its queue and parks until it finds the job, as the guest wait and
    /// `in_worker_blocking` do with `serve_home`; another thread pushes the job (a release
    /// store, as the queues' push is) and then hands it off as `hand_off` says. Loom reports a
    /// deadlock if the worker can park for good with the job queued.
    fn away_worker_gets_its_job(hand_off: HandOff) {
        loom::model(move || {
            // Leaked, not in an `Arc`: when the negative control's deadlock unwinds this
            // closure, dropping a loom `Arc` panics again and aborts the test process.
            let sleep: &'static Sleep = Box::leak(Box::new(Sleep::new(1)));
            let queued: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
            let worker = {
                thread::spawn(move || {
                    sleep.register_current(0);
                    sleep.set_busy(0, true);
                    sleep.set_away(0, Away::All);
                    // Acquire: pairs with the push's release store, as a queue's steal does.
                    while !queued.load(Ordering::Acquire) {
                        thread::park();
                    }
                    sleep.set_away(0, Away::No);
                })
            };
            // Release: the queue's push publishes the job.
            queued.store(true, Ordering::Release);
            match hand_off {
                HandOff::Share => {
                    if sleep.wake(0) {
                        sleep.unpark_if_away(0);
                    }
                }
                HandOff::Broadcast => {
                    sleep.wake(0);
                    sleep.unpark_if_away(0);
                }
                HandOff::WithoutUnpark => {
                    sleep.wake(0);
                }
            }
            worker.join().unwrap();
        });
    }

    #[test]
    fn loom_a_share_reaches_a_worker_waiting_away() {
        away_worker_gets_its_job(HandOff::Share);
    }

    #[test]
    fn loom_a_broadcast_job_reaches_a_worker_waiting_away() {
        away_worker_gets_its_job(HandOff::Broadcast);
    }

    /// Negative control: without reading the away mark the worker can park for good.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn loom_a_hand_off_without_the_away_unpark_is_caught() {
        away_worker_gets_its_job(HandOff::WithoutUnpark);
    }
    /// The job injected in the models below.
    struct Injected {
        queued: AtomicBool,
        done: AtomicBool,
    }

    impl Injected {
        /// Leaked: see `away_worker_gets_its_job`.
        fn leak() -> &'static Injected {
            Box::leak(Box::new(Injected {
                queued: AtomicBool::new(false),
                done: AtomicBool::new(false),
            }))
        }

        /// The injector's push (Release: publishes the job).
        fn push(&self) {
            self.queued.store(true, Ordering::Release);
        }

        /// Takes the job if it is queued and runs it, which ends every worker's wait (as setting
        /// the latches of the operations they wait in would: `wake_all` unparks them all);
        /// returns whether it did.
        fn take_and_run(&self, sleep: &Sleep) -> bool {
            // Acquire, Release: pair with the push and with `has_run`.
            let taken = self
                .queued
                .compare_exchange(true, false, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
            if taken {
                self.done.store(true, Ordering::Release);
                sleep.wake_all();
            }
            taken
        }

        fn has_run(&self) -> bool {
            // Acquire: pairs with the Release store in `take_and_run`.
            self.done.load(Ordering::Acquire)
        }
    }

    /// Work injected into the pool as a whole (`Registry::inject`, `in_worker_blocking`: a push,
    /// then `wake_one`, or with `wake_away` false only its part that wakes sleepers) while no
    /// worker is looking for work. Worker `i` either waits away from its worker loop (`away[i]`:
    /// marked away, it checks the injector and parks outside the protocol, as the guest wait and
    /// `in_worker_blocking` do with `serve_home`) or sleeps through the protocol (its worker
    /// loop). Loom reports a deadlock if the job can stay queued with every worker parked.
    fn injected_job_reaches_a_worker(away: &'static [bool], wake_away: bool) {
        let mut model = loom::model::Builder::new();
        if away.len() > 1 {
            // Like `exit_together`: a lost wake-up here needs two preemptions (a worker between
            // its check and its park, the pusher between its push and its read of the marks).
            model.preemption_bound = Some(3);
        }
        model.check(move || {
            // Leaked: see `away_worker_gets_its_job`.
            let sleep: &'static Sleep = Box::leak(Box::new(Sleep::new(away.len())));
            let job = Injected::leak();
            let workers: Vec<_> = away
                .iter()
                .enumerate()
                .map(|(index, &is_away)| {
                    thread::spawn(move || {
                        sleep.register_current(index);
                        if is_away {
                            sleep.set_away(index, Away::All);
                        }
                        while !job.has_run() && !job.take_and_run(sleep) {
                            if is_away {
                                thread::park();
                            } else {
                                // SeqCst: the re-check of `sleep`'s protocol.
                                sleep.sleep(index, || {
                                    job.queued.load(Ordering::SeqCst)
                                        || job.done.load(Ordering::SeqCst)
                                });
                            }
                        }
                        if is_away {
                            sleep.set_away(index, Away::No);
                        }
                    })
                })
                .collect();
            job.push();
            if wake_away {
                sleep.wake_one();
            } else {
                sleep.wake_one_asleep();
            }
            for worker in workers {
                worker.join().unwrap();
            }
        });
    }

    #[test]
    fn loom_injected_work_reaches_a_worker_waiting_away() {
        injected_job_reaches_a_worker(&[true], true);
    }

    #[test]
    fn loom_injected_work_reaches_one_of_two_workers_waiting_away() {
        injected_job_reaches_a_worker(&[true, true], true);
    }

    #[test]
    fn loom_injected_work_reaches_a_sleeping_or_an_away_worker() {
        injected_job_reaches_a_worker(&[false, true], true);
    }

    /// Negative control: waking only sleepers (the old `wake_one`) leaves the job queued with
    /// the worker away parked for good.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn loom_injected_work_without_the_away_unpark_is_caught() {
        injected_job_reaches_a_worker(&[true], false);
    }
    /// Work injected while worker 0, marked [`Away::All`], enters a deeper wait away where it
    /// runs only work handed to it ([`Away::Handed`]; it never takes the job), and worker 1 waits
    /// away marked `All`. The pusher's `wake_one` may pick worker 0 just before it goes deeper:
    /// `enter_away` (`pass_on`) then passes the job on to worker 1; a plain `set_away` does not.
    fn injected_job_passed_on_by_a_worker_going_deeper(pass_on: bool) {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(move || {
            // Leaked: see `away_worker_gets_its_job`.
            let sleep: &'static Sleep = Box::leak(Box::new(Sleep::new(2)));
            let job = Injected::leak();
            let deeper = thread::spawn(move || {
                sleep.register_current(0);
                sleep.set_away(0, Away::All);
                if pass_on {
                    // SeqCst: like the injector's `is_empty`.
                    sleep.enter_away(0, Away::Handed, || job.queued.load(Ordering::SeqCst));
                } else {
                    sleep.set_away(0, Away::Handed);
                }
                while !job.has_run() {
                    thread::park();
                }
                sleep.set_away(0, Away::No);
            });
            let runner = thread::spawn(move || {
                sleep.register_current(1);
                sleep.set_away(1, Away::All);
                while !job.has_run() && !job.take_and_run(sleep) {
                    thread::park();
                }
                sleep.set_away(1, Away::No);
            });
            job.push();
            sleep.wake_one();
            deeper.join().unwrap();
            runner.join().unwrap();
        });
    }

    #[test]
    fn loom_injected_work_is_passed_on_by_a_worker_going_deeper() {
        injected_job_passed_on_by_a_worker_going_deeper(true);
    }

    /// Negative control: without passing it on, the job can wait for good.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn loom_injected_work_not_passed_on_is_caught() {
        injected_job_passed_on_by_a_worker_going_deeper(false);
    }
}
