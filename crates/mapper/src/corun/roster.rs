//! The threads of the watched programs, and keeping each one pinned where the mapping says.
//!
//! A [`Roster`] is told, after every scan, which threads exist now (per watched program). When
//! the set changed — a thread appeared or one is gone — it maps *all* current threads again with
//! [`Algorithm::map_sharing`] and re-pins only the threads whose CPU changed. Threads are
//! ordered by program, then by when they were first seen, so a program's team keeps
//! consecutive positions (what round-robin assumes) and a late thread goes last.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::mapping::{Algorithm, MapError};
use crate::mix::InstructionMix;
use crate::tasks::{Pid, TaskError, pin_thread};
use crate::topology::Topology;

/// One thread the roster has seen, and where it was last pinned.
///
/// ```
/// use parbench_mapper::corun::PinnedThread;
/// let t = PinnedThread {
///     command: 0, pid: 10, tid: 11, first_seen_s: 0.01, cpu: Some(1), alive: true,
///     pins: vec![(0.011, 1)], gone_s: None,
/// };
/// assert_eq!(t.cpu, Some(1));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinnedThread {
    /// Index of the program (command) it belongs to.
    pub command: usize,
    /// Its process.
    pub pid: Pid,
    /// The thread id.
    pub tid: Pid,
    /// Seconds from the start of the watch until it was first seen.
    pub first_seen_s: f64,
    /// The CPU (OS index) it was last pinned to successfully; `None` if never pinned (the `os`
    /// algorithm, or every attempt failed).
    pub cpu: Option<usize>,
    /// Whether it was still running at the last scan.
    pub alive: bool,
    /// Every successful pin: seconds from the start of the watch, and the CPU.
    pub pins: Vec<(f64, usize)>,
    /// Seconds from the start until the scan that found it gone; `None` while alive.
    pub gone_s: Option<f64>,
}

/// The watched threads, their order and their pins.
#[derive(Debug)]
pub struct Roster<'t> {
    topology: &'t Topology,
    algorithm: Algorithm,
    mixes: Vec<InstructionMix>,
    /// Every thread seen, by TID, with the order it was first seen in; the latest one when the
    /// kernel gave a TID to a new thread after the old one exited.
    seen: BTreeMap<Pid, (u64, PinnedThread)>,
    /// The start time of each thread in `seen`, by TID: with the process, what tells a thread
    /// from a later one that got its TID, in the same process too.
    started: BTreeMap<Pid, u64>,
    /// Exited threads whose TID a later thread got, kept for the report.
    reused: Vec<PinnedThread>,
    next_sequence: u64,
    remaps: usize,
    failures: Vec<String>,
    /// Time of the scan being processed, for the pin history.
    now_s: f64,
}

impl<'t> Roster<'t> {
    /// A roster for programs with the given mixes (one per program; a program without a known
    /// mix gets the empty mix, which the instruction-aware algorithm treats as neutral).
    ///
    /// ```
    /// use parbench_mapper::corun::Roster;
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:2 pu:2")?;
    /// let roster = Roster::new(&t, Algorithm::Scatter, vec![InstructionMix::default()]);
    /// assert_eq!(roster.remaps(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(topology: &'t Topology, algorithm: Algorithm, mixes: Vec<InstructionMix>) -> Self {
        Roster {
            topology,
            algorithm,
            mixes,
            seen: BTreeMap::new(),
            started: BTreeMap::new(),
            reused: Vec::new(),
            next_sequence: 0,
            remaps: 0,
            failures: Vec::new(),
            now_s: 0.0,
        }
    }

    /// Records the threads alive now — `(program, pid, tid, start)`, `start` the thread's start
    /// time ([`thread_start_time`](crate::tasks::thread_start_time)) — and, when the set changed, maps
    /// every one of them again and pins those whose CPU changed (only when the topology is this
    /// machine). Returns whether a re-map happened.
    ///
    /// # Errors
    /// [`MapError`] from the algorithm (not expected: `map_sharing` fits any thread count).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use parbench_mapper::corun::Roster;
    /// use parbench_mapper::{Algorithm, InstructionMix, Topology};
    /// let t = Topology::synthetic("core:2 pu:2")?;
    /// let mut roster = Roster::new(&t, Algorithm::Scatter, vec![InstructionMix::default(); 2]);
    /// assert!(roster.update(&[(0, 100, 100, 1), (1, 200, 200, 1)], Duration::ZERO)?);
    /// assert!(!roster.update(&[(0, 100, 100, 1), (1, 200, 200, 1)], Duration::ZERO)?);
    /// let planned: Vec<_> = roster.plan().into_iter().map(|(tid, cpu)| (tid, cpu)).collect();
    /// assert_eq!(planned, vec![(100, Some(0)), (200, Some(2))]); // scatter: one per core
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update(
        &mut self,
        alive: &[(usize, Pid, Pid, u64)],
        elapsed: Duration,
    ) -> Result<bool, MapError> {
        let mut changed = false;
        self.now_s = elapsed.as_secs_f64();
        for &(command, pid, tid, start) in alive {
            // A thread that exited and whose TID the kernel gave to a new thread of the same
            // process between two scans differs only in its start time; taken for the old one,
            // the new thread would keep the affinity it inherited, never pinned.
            let fresh = match self.seen.get(&tid) {
                Some((_, known)) => {
                    known.pid != pid || !known.alive || self.started.get(&tid) != Some(&start)
                }
                None => true,
            };
            if fresh {
                changed = true;
                self.started.insert(tid, start);
                let earlier = self.seen.insert(
                    tid,
                    (
                        self.next_sequence,
                        PinnedThread {
                            command,
                            pid,
                            tid,
                            first_seen_s: elapsed.as_secs_f64(),
                            cpu: None,
                            alive: true,
                            pins: Vec::new(),
                            gone_s: None,
                        },
                    ),
                );
                if let Some((_, mut earlier)) = earlier {
                    if earlier.alive {
                        // It was alive at the last scan and exited in between.
                        earlier.alive = false;
                        earlier.gone_s = Some(self.now_s);
                    }
                    self.reused.push(earlier);
                }
                self.next_sequence += 1;
            }
        }
        for (_, thread) in self.seen.values_mut() {
            let still = alive.iter().any(|&(_, _, tid, _)| tid == thread.tid);
            if thread.alive && !still {
                thread.alive = false;
                thread.gone_s = Some(elapsed.as_secs_f64());
                changed = true;
            }
        }
        if !changed || self.live_order().is_empty() {
            return Ok(false);
        }
        self.remaps += 1;
        let pins = self.plan_checked()?;
        if self.topology.is_this_system() {
            for (tid, cpu) in pins {
                self.pin(tid, cpu);
            }
        } else {
            for (tid, cpu) in pins {
                if let Some((_, thread)) = self.seen.get_mut(&tid) {
                    thread.cpu = cpu;
                }
            }
        }
        Ok(true)
    }

    /// The live threads' TIDs in mapping order (program, then first seen).
    fn live_order(&self) -> Vec<Pid> {
        let mut live: Vec<(usize, u64, Pid)> = self
            .seen
            .values()
            .filter(|(_, t)| t.alive)
            .map(|(sequence, t)| (t.command, *sequence, t.tid))
            .collect();
        live.sort_unstable();
        live.into_iter().map(|(_, _, tid)| tid).collect()
    }

    fn plan_checked(&self) -> Result<Vec<(Pid, Option<usize>)>, MapError> {
        let order = self.live_order();
        let mixes: Vec<InstructionMix> = order
            .iter()
            .map(|tid| {
                let command = self.seen[tid].1.command;
                self.mixes.get(command).copied().unwrap_or_default()
            })
            .collect();
        let mapping = self.algorithm.map_sharing(self.topology, &mixes)?;
        let cpus: Vec<Option<usize>> = match mapping.cpu_list(self.topology) {
            Some(cpus) => cpus.into_iter().map(Some).collect(),
            None => vec![None; order.len()],
        };
        Ok(order.into_iter().zip(cpus).collect())
    }

    /// Where the mapping puts each live thread now: `(tid, cpu)` in mapping order (`None` for
    /// the `os` algorithm). Empty when no thread is alive.
    pub fn plan(&self) -> Vec<(Pid, Option<usize>)> {
        self.plan_checked().unwrap_or_default()
    }

    fn pin(&mut self, tid: Pid, cpu: Option<usize>) {
        let Some((_, thread)) = self.seen.get_mut(&tid) else {
            return;
        };
        let Some(cpu) = cpu else {
            return; // `os`: leave the thread where the scheduler puts it
        };
        if thread.cpu == Some(cpu) {
            return;
        }
        match pin_thread(tid, cpu) {
            Ok(()) => {
                thread.cpu = Some(cpu);
                thread.pins.push((self.now_s, cpu));
            }
            // Exited between the scan and the pin: the next scan drops it.
            Err(TaskError::Gone { .. }) => {}
            Err(error) => {
                // One line per distinct failure: a refused CPU would otherwise repeat at every
                // re-map.
                let message = error.to_string();
                if !self.failures.contains(&message) {
                    self.failures.push(message);
                }
            }
        }
    }

    /// How many times the threads were mapped (the first mapping counts).
    pub fn remaps(&self) -> usize {
        self.remaps
    }

    /// Every thread seen, in TID order (threads that had the same TID in the order they ran).
    pub fn threads(&self) -> Vec<PinnedThread> {
        let mut threads: Vec<PinnedThread> = self
            .reused
            .iter()
            .chain(self.seen.values().map(|(_, t)| t))
            .cloned()
            .collect();
        // Stable: a reused TID's earlier threads come first, as they were pushed.
        threads.sort_by_key(|t| t.tid);
        threads
    }

    /// Pins that failed for a reason other than the thread having exited.
    pub fn failures(&self) -> &[String] {
        &self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::InstrClass;

    #[test]
    fn late_threads_and_exits_trigger_a_remap_in_program_then_arrival_order() {
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        let mut roster = Roster::new(
            &t,
            Algorithm::RoundRobin,
            vec![InstructionMix::default(); 2],
        );
        roster
            .update(&[(1, 50, 50, 1), (0, 60, 60, 1)], Duration::ZERO)
            .unwrap();
        // program 0 first, although its thread has the larger TID.
        assert_eq!(roster.plan(), vec![(60, Some(0)), (50, Some(1))]);
        let later = Duration::from_millis(5);
        assert!(
            roster
                .update(&[(1, 50, 50, 1), (0, 60, 60, 1), (0, 60, 61, 1)], later)
                .unwrap()
        );
        assert_eq!(
            roster.plan(),
            vec![(60, Some(0)), (61, Some(1)), (50, Some(2))]
        );
        assert!(roster.update(&[(1, 50, 50, 1)], later).unwrap());
        assert_eq!(roster.plan(), vec![(50, Some(0))]);
        assert_eq!(roster.remaps(), 3);
        let gone: Vec<Pid> = roster
            .threads()
            .iter()
            .filter(|t| !t.alive)
            .map(|t| t.tid)
            .collect();
        assert_eq!(gone, vec![60, 61]);
    }

    #[test]
    fn a_reused_tid_keeps_the_exited_threads_record() {
        // Thread 11 of program 0 exits; the kernel later gives TID 11 to a thread of program 1.
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        let mut roster = Roster::new(
            &t,
            Algorithm::RoundRobin,
            vec![InstructionMix::default(); 2],
        );
        let at = Duration::from_millis;
        roster
            .update(&[(0, 10, 10, 1), (0, 10, 11, 1)], at(0))
            .unwrap();
        roster.update(&[(0, 10, 10, 1)], at(5)).unwrap();
        roster
            .update(&[(0, 10, 10, 1), (1, 20, 11, 1)], at(9))
            .unwrap();
        let threads = roster.threads();
        let summary: Vec<(usize, Pid, bool, Option<f64>)> = threads
            .iter()
            .map(|t| (t.command, t.tid, t.alive, t.gone_s))
            .collect();
        assert_eq!(
            summary,
            vec![
                (0, 10, true, None),
                (0, 11, false, Some(0.005)),
                (1, 11, true, None)
            ]
        );
        assert_eq!(roster.plan(), vec![(10, Some(0)), (11, Some(1))]);
    }

    #[test]
    fn a_tid_reused_in_the_same_process_between_scans_is_a_new_thread() {
        // Thread 11 of process 10 exits and, before the next scan, a new thread of process 10
        // gets TID 11: only the start time differs.
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        let mut roster = Roster::new(&t, Algorithm::RoundRobin, vec![InstructionMix::default()]);
        let at = Duration::from_millis;
        roster
            .update(&[(0, 10, 10, 1), (0, 10, 11, 1)], at(0))
            .unwrap();
        assert!(
            roster
                .update(&[(0, 10, 10, 1), (0, 10, 11, 7)], at(5))
                .unwrap(),
            "the new thread must be mapped (and pinned) afresh"
        );
        let summary: Vec<(Pid, bool, f64, Option<f64>)> = roster
            .threads()
            .iter()
            .map(|t| (t.tid, t.alive, t.first_seen_s, t.gone_s))
            .collect();
        assert_eq!(
            summary,
            vec![
                (10, true, 0.0, None),
                (11, false, 0.0, Some(0.005)),
                (11, true, 0.005, None)
            ]
        );
        // The same thread again is no change.
        assert!(
            !roster
                .update(&[(0, 10, 10, 1), (0, 10, 11, 7)], at(9))
                .unwrap()
        );
    }

    #[test]
    fn instruction_aware_pairs_two_programs_on_each_smt_core() {
        // Two programs of two threads each, fp and int: each core must get one of each.
        let t = Topology::synthetic("core:2 pu:2").unwrap();
        let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
        let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
        let mut roster = Roster::new(&t, Algorithm::InstructionAware, vec![fp, int]);
        let threads = [
            (0, 10, 10, 1),
            (0, 10, 11, 1),
            (1, 20, 20, 1),
            (1, 20, 21, 1),
        ];
        roster.update(&threads, Duration::ZERO).unwrap();
        let plan = roster.plan();
        for core in t.cores() {
            let cpus: Vec<usize> = core.pus.iter().map(|&pu| t.pus()[pu].os_index).collect();
            let programs: Vec<usize> = plan
                .iter()
                .filter(|(_, cpu)| cpus.contains(&cpu.unwrap()))
                .map(|(tid, _)| usize::from(*tid >= 20))
                .collect();
            assert_eq!(programs.len(), 2);
            assert_ne!(programs[0], programs[1], "core {cpus:?}: {plan:?}");
        }
        // Round-robin instead keeps each program on one core.
        let mut compact = Roster::new(&t, Algorithm::RoundRobin, vec![fp, int]);
        compact.update(&threads, Duration::ZERO).unwrap();
        assert_eq!(
            compact.plan(),
            vec![(10, Some(0)), (11, Some(1)), (20, Some(2)), (21, Some(3))]
        );
    }

    #[test]
    fn oversubscribed_smt_cores_each_get_both_programs() {
        // Two programs of four threads on 2 cores × 2 PUs (8 threads, 4 PUs): every PU takes two
        // threads and each core holds two fp and two int threads, never one program alone.
        let t = Topology::synthetic("pack:1 core:2 pu:2").unwrap();
        let fp = InstructionMix::new([(InstrClass::Fp, 1.0)]);
        let int = InstructionMix::new([(InstrClass::Int, 1.0)]);
        let mut roster = Roster::new(&t, Algorithm::InstructionAware, vec![fp, int]);
        let threads: Vec<(usize, Pid, Pid, u64)> = (0..8)
            .map(|i| (i / 4, 100 * (1 + i as Pid / 4), 1000 + i as Pid, 1))
            .collect();
        roster.update(&threads, Duration::ZERO).unwrap();
        let plan = roster.plan();
        for core in t.cores() {
            let cpus: Vec<usize> = core.pus.iter().map(|&pu| t.pus()[pu].os_index).collect();
            let on_core: Vec<Pid> = plan
                .iter()
                .filter(|(_, cpu)| cpus.contains(&cpu.unwrap()))
                .map(|(tid, _)| *tid)
                .collect();
            let fps = on_core.iter().filter(|&&tid| tid < 1004).count();
            assert_eq!((on_core.len(), fps), (4, 2), "core {cpus:?}: {plan:?}");
        }
        for cpu in 0..4 {
            assert_eq!(plan.iter().filter(|(_, c)| *c == Some(cpu)).count(), 2);
        }
    }

    #[test]
    fn os_plans_no_pins_and_synthetic_topologies_pin_nothing() {
        let t = Topology::synthetic("core:2 pu:1").unwrap();
        let mut roster = Roster::new(&t, Algorithm::Os, vec![InstructionMix::default()]);
        roster
            .update(&[(0, std::process::id() as Pid, 1, 1)], Duration::ZERO)
            .unwrap();
        assert_eq!(roster.plan(), vec![(1, None)]);
        assert!(roster.failures().is_empty());
    }
}
