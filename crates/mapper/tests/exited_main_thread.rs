//! A process whose main thread ended with `pthread_exit` while its other threads run looks like
//! a zombie in `/proc/PID/stat` (state `Z`), but it is running: `corun` and `map --pid` must map
//! and pin its live threads, not take it for gone.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use parbench_mapper::corun::{ChildOutput, CommandSpec, CorunOptions, corun, map_running};
use parbench_mapper::tasks::{Pid, read_process_stat, threads_of};
use parbench_mapper::{Algorithm, Topology};

/// `tests/programs/main_thread_exits.rs` compiled with `rustc`, or why it could not be built.
fn main_thread_exits() -> Result<&'static str, String> {
    static BUILT: OnceLock<Result<String, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/programs/main_thread_exits.rs");
            let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("main_thread_exits");
            let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
            let output = Command::new(&rustc)
                .args(["--edition", "2021", "-o"])
                .arg(&binary)
                .arg(&source)
                .output()
                .map_err(|e| format!("cannot run {rustc}: {e}"))?;
            if !output.status.success() {
                return Err(format!(
                    "rustc failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            Ok(binary.to_str().ok_or("non-UTF-8 path")?.to_owned())
        })
        .as_deref()
        .map_err(Clone::clone)
}

#[test]
fn map_running_pins_the_threads_of_a_process_whose_main_thread_exited() {
    let program = match main_thread_exits() {
        Ok(program) => program,
        Err(reason) => {
            eprintln!("SKIPPED: cannot build tests/programs/main_thread_exits.rs: {reason}");
            return;
        }
    };
    // Its threads sleep a minute (it is killed below): with threads that ended after 2 s, a test
    // thread that came to look later never saw them and failed, saying the main thread had not
    // exited.
    let mut child = Command::new(program).arg("60000").spawn().unwrap();
    let pid = child.id() as Pid;
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_process_stat(pid).is_none_or(|stat| stat.state != 'Z') || threads_of(pid).len() < 3 {
        assert!(Instant::now() < deadline, "the main thread did not exit");
        std::thread::sleep(Duration::from_millis(5));
    }
    let topology = Topology::this_system().unwrap();
    let result = map_running(&topology, &[(pid, None)], Algorithm::RoundRobin, None);
    child.kill().unwrap();
    child.wait().unwrap();
    let threads = result.unwrap();
    let workers: Vec<_> = threads.iter().filter(|t| t.tid != pid).collect();
    assert_eq!(workers.len(), 2, "{threads:?}");
    assert!(workers.iter().all(|t| t.cpu.is_some()), "{threads:?}");
    // The exited main thread itself is not mapped.
    assert!(threads.iter().all(|t| t.tid != pid), "{threads:?}");
}

#[test]
fn corun_pins_the_threads_of_a_command_whose_main_thread_exited() {
    let program = match main_thread_exits() {
        Ok(program) => program,
        Err(reason) => {
            eprintln!("SKIPPED: cannot build tests/programs/main_thread_exits.rs: {reason}");
            return;
        }
    };
    let topology = Topology::this_system().unwrap();
    let options = CorunOptions {
        algorithm: Algorithm::RoundRobin,
        output: ChildOutput::Null,
        poll: Duration::from_millis(5),
        ..CorunOptions::default()
    };
    let stop = AtomicBool::new(false);
    let command = CommandSpec::new(vec![program.to_owned(), "600".to_owned()]);
    let report = corun(&topology, &[command], &options, &stop).unwrap();
    let pid = report.commands[0].pid.unwrap();
    let pinned_workers = report
        .threads
        .iter()
        .filter(|t| t.tid != pid && !t.pins.is_empty())
        .count();
    assert_eq!(pinned_workers, 2, "{report}");
}
