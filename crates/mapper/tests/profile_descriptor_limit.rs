//! `profile -- CMD` opens one descriptor per event on each thread it finds. With a PMU's dozen
//! events the usual limit of 1024 runs out near 90 threads; the threads left without counters
//! must be counted as not listed, and the scans of `/proc` must go on finding them (with no
//! descriptor left they failed, and later threads went unseen). A test binary of its own: the
//! descriptor limit is process-wide.

use parbench_mapper::perf::{ProfileRequest, profile_command};

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[test]
fn threads_whose_counters_the_os_refuses_are_counted_as_not_listed() {
    let request = ProfileRequest::software_only("sh", 1);
    let events = request.events.len() as u64;
    // Room for the inherited counters, profile_command's 16 spare descriptors and about two
    // threads' counters.
    let mut saved = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid rlimit we own.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut saved) },
        0
    );
    let lowered = libc::rlimit {
        rlim_cur: open_descriptors() + 3 * events + 16,
        ..saved
    };
    // SAFETY: setrlimit reads a valid rlimit; only the soft limit is lowered, and nothing else
    // in this binary opens descriptors meanwhile.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
    // The shell and four sleeps, alive for a second (scans come every 50 ms at most).
    let script = "for i in 1 2 3 4; do sleep 1 & done; wait";
    let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
    let profile = profile_command(&argv, &request, None);
    // SAFETY: setrlimit reads a valid rlimit: the limit as it was.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &saved) }, 0);
    let profile = profile.unwrap();
    let listed = profile.thread_ids.len();
    assert!(listed >= 1, "{profile}");
    assert!(profile.threads_not_listed >= 1, "{profile}");
    assert_eq!(listed + profile.threads_not_listed, 5, "{profile}");
    assert!(
        profile.to_string().contains("not listed per thread"),
        "{profile}"
    );
}
