//! Pinning the calling thread for a while: Linux `sched_{get,set}affinity`; elsewhere nothing is
//! pinned and no CPU is reported allowed.

/// The calling thread pinned to one CPU; dropping it restores the affinity it had before.
pub(crate) struct Pinned {
    #[cfg(target_os = "linux")]
    previous: libc::cpu_set_t,
}

/// The calling thread's affinity mask; `None` if the OS refuses to tell.
#[cfg(target_os = "linux")]
fn current_mask() -> Option<libc::cpu_set_t> {
    // SAFETY: all-zero is the valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of exactly the size passed; pid 0 is this thread.
    let result =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (result == 0).then_some(set)
}

/// Sets the calling thread's affinity mask; `false` if the OS refuses.
#[cfg(target_os = "linux")]
fn set_mask(set: &libc::cpu_set_t) -> bool {
    // SAFETY: `set` is a valid cpu_set_t of the size passed; the call only reads it.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) == 0 }
}

/// The CPUs the calling thread may run on, ascending.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        let Some(set) = current_mask() else {
            return Vec::new();
        };
        let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `cpu` is below the set's capacity.
        (0..capacity)
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

impl Pinned {
    /// Pins the calling thread to `cpu`; `None` (and nothing changed) if the OS refuses or
    /// `cpu` cannot be represented.
    pub(crate) fn to(cpu: usize) -> Option<Self> {
        #[cfg(target_os = "linux")]
        {
            if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
                return None;
            }
            let previous = current_mask()?;
            // SAFETY: all-zero is the valid empty cpu_set_t.
            let mut only: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: `cpu` is below the set's capacity (checked above).
            unsafe { libc::CPU_SET(cpu, &mut only) };
            set_mask(&only).then_some(Pinned { previous })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = cpu;
            None
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // A refused restore leaves the thread pinned; nothing better can be done here.
        #[cfg(target_os = "linux")]
        let _ = set_mask(&self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{PinPolicy, current_cpu};

    #[test]
    fn a_pin_lasts_until_its_guard_drops() {
        let before = allowed_cpus();
        let Some(&cpu) = before.last() else {
            println!("SKIPPED: needs Linux's sched_getaffinity");
            return;
        };
        {
            let _pinned = Pinned::to(cpu).expect("pinning to a CPU this thread may use");
            assert_eq!(allowed_cpus(), [cpu]);
            assert_eq!(current_cpu(), Some(cpu));
        }
        assert_eq!(allowed_cpus(), before);
        assert!(Pinned::to(usize::MAX).is_none());
    }

    #[test]
    fn compact_pins_the_caller_where_a_compact_pool_puts_worker_0() {
        let before = allowed_cpus();
        if before.len() < 2 {
            println!("SKIPPED: needs Linux and 2 CPUs this thread may run on");
            return;
        }
        assert!(PinPolicy::None.pin_caller().is_none());
        assert_eq!(allowed_cpus(), before);
        let pool = parbench_scheduler::ThreadPoolBuilder::new()
            .num_threads(2)
            .pin(parbench_scheduler::Pinning::Compact)
            .build()
            .unwrap();
        let workers = pool.broadcast(|ctx| (ctx.index(), allowed_cpus()));
        {
            let pinned = PinPolicy::Compact.pin_caller().expect("Linux pins");
            assert_eq!(workers[0], (0, vec![pinned.cpu()]));
            assert_eq!(workers[1], (1, vec![before[1]]));
            assert_eq!(allowed_cpus(), [before[0]]);
            assert_eq!(current_cpu(), Some(before[0]));
        }
        assert_eq!(allowed_cpus(), before);
    }
}
