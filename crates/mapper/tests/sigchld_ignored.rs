//! With SIGCHLD ignored (passed on by a parent) the kernel reaps children unseen: `corun` ran past
//! its own timeout waiting for a command that had long exited. Both entry points that watch a
//! child refuse to start instead. A test binary of its own: ignoring SIGCHLD is process-wide and
//! would break every other test that waits for a child.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use parbench_mapper::corun::{CommandSpec, CorunError, CorunOptions, corun};
use parbench_mapper::perf::{ProfileError, ProfileRequest, profile_command};
use parbench_mapper::tasks::ignores_sigchld;
use parbench_mapper::{Algorithm, Topology};

#[test]
fn a_process_ignoring_sigchld_is_refused_before_any_command_starts() {
    assert!(!ignores_sigchld());
    // SAFETY: `signal` with SIG_IGN installs no handler; nothing else in this binary runs.
    assert_ne!(
        unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) },
        libc::SIG_ERR
    );
    assert!(ignores_sigchld());
    let topology = Topology::this_system().expect("this machine's topology");
    let options = CorunOptions {
        algorithm: Algorithm::Os,
        timeout: Some(Duration::from_secs(5)),
        ..CorunOptions::default()
    };
    let command = CommandSpec::new(vec!["true".to_owned()]);
    let stop = AtomicBool::new(false);
    let result = corun(&topology, &[command], &options, &stop);
    assert!(
        matches!(result, Err(CorunError::SigchldIgnored)),
        "{result:?}"
    );
    let request = ProfileRequest::software_only("true", 1);
    let profiled = profile_command(&["true".to_owned()], &request, None);
    match profiled {
        Err(ProfileError::CommandFailed { source, .. }) => {
            assert!(source.to_string().contains("SIGCHLD"), "{source}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
