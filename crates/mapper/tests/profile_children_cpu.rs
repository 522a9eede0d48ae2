//! `profile_command`'s inherited task clock covers every child process of the command. The
//! reference is the kernel's own account of the CPU time of this process's reaped descendants
//! (`getrusage(RUSAGE_CHILDREN)`), which is process-wide: a test binary of its own, since in the
//! library's test binary the other tests' children (busy orphaned grandchildren among them) were
//! counted too, and the test failed under load (task clock 39 ms against 340 ms "used").

use parbench_mapper::InstrClass;
use parbench_mapper::perf::{CommandProfile, ProfileRequest, Quantity, profile_command};

#[test]
fn counters_follow_late_threads_and_child_processes() {
    // The shell forks two busy children one after the other; the task clock must include
    // both (inherited by processes created after the start), not only the shell's own.
    let script = "busy() { i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; }; \
                  busy & wait; busy & wait";
    let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
    let request = ProfileRequest::software_only("sh", 1);
    let before = children_cpu_ns();
    let profile = profile_command(&argv, &request, Some(InstrClass::Int)).unwrap();
    // Every waited-for descendant's CPU time must be covered by the inherited task clock,
    // whatever the load.
    let used = children_cpu_ns() - before;
    let clock = profile.profile.thread_totals(0).unwrap()[&Quantity::TaskClockNs].unwrap();
    assert!(used > 0.0);
    assert!(
        clock > 0.8 * used,
        "task clock {clock} ns, descendants used {used} ns"
    );
    let path = std::env::temp_dir().join(format!("cmd-profile-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
    assert_eq!(CommandProfile::read_json(&path).unwrap(), profile);
    std::fs::remove_file(&path).unwrap();
}

/// CPU time (user + system) of all reaped descendants of this process, in nanoseconds.
fn children_cpu_ns() -> f64 {
    // SAFETY: all-zero is a valid rusage; getrusage fills it and reads nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}
