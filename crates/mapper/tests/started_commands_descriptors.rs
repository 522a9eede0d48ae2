//! A command that `corun` or `profile_command` starts gets its stdio and nothing else of the
//! mapper: every descriptor the mapper holds when it starts one (perf counters, among them
//! `profile_command`'s inherited totals; the pidfds of commands started before; directory
//! handles of `/proc`) must be close-on-exec. perf-event 0.4.9 opened counters without
//! `PERF_FLAG_FD_CLOEXEC`, and a shell started under a low descriptor limit could not load libc.
//!
//! Each command execs `ls -l /proc/self/fd` and writes what it sees to a file. Descriptors this
//! test process inherited without close-on-exec (a shell's or CI runner's: they differ between
//! machines) are made close-on-exec first, so that every descriptor the command sees beyond its
//! stdio and `ls`'s own handle of the listed directory came from the mapper. A binary of its own:
//! that sweep touches every descriptor of the process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use parbench_mapper::corun::{ChildOutput, CommandSpec, CommandStatus, CorunOptions, corun};
use parbench_mapper::perf::{ProfileRequest, profile_command};
use parbench_mapper::{Algorithm, Topology};

/// One test at a time: a sweep while another test's mapper call holds a leaking descriptor would
/// make that descriptor close-on-exec and hide the leak.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Makes every descriptor above stderr close-on-exec: those this process inherited are not the
/// mapper's.
fn close_inherited_descriptors_on_exec() {
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: F_GETFD/F_SETFD only read and set the descriptor flags of `fd`; one that was
        // the listing's own handle and is closed by now fails with EBADF, which is ignored.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// A command that writes its pid, then `ls -l` of its own descriptors, to `file`.
fn list_descriptors_into(file: &Path) -> Vec<String> {
    let file = file.display();
    let script = format!("echo $$ > {file}; exec ls -l /proc/self/fd >> {file}");
    ["sh", "-c", &script].map(String::from).to_vec()
}

/// The descriptors the command of [`list_descriptors_into`] had, by number, with their targets,
/// leaving out `ls`'s handle of the directory it lists.
fn descriptors_listed_in(file: &Path) -> BTreeMap<i32, String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines = text.lines();
    let pid: u32 = lines.next().unwrap().trim().parse().unwrap();
    let own_listing = format!("/proc/{pid}/fd");
    lines
        .filter_map(|line| {
            let (name, target) = line.split_once(" -> ")?;
            let fd = name.rsplit(' ').next()?.parse().ok()?;
            Some((fd, target.to_owned()))
        })
        .filter(|(_, target)| *target != own_listing)
        .collect()
}

fn assert_only_stdio(file: &Path) {
    let seen = descriptors_listed_in(file);
    let beyond_stdio: BTreeMap<_, _> = seen.iter().filter(|(fd, _)| **fd > 2).collect();
    assert!(
        beyond_stdio.is_empty(),
        "the command inherited {beyond_stdio:?} (all: {seen:?})"
    );
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
}

fn listing_file(name: &str) -> PathBuf {
    let file = std::env::temp_dir().join(format!("fds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    file
}

#[test]
fn commands_started_by_corun_see_only_their_stdio() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    close_inherited_descriptors_on_exec();
    let topology = Topology::this_system().unwrap();
    let options = CorunOptions {
        algorithm: Algorithm::RoundRobin,
        output: ChildOutput::Null,
        ..CorunOptions::default()
    };
    // The second command starts while corun holds the first one's pidfd.
    let files = [listing_file("corun-0"), listing_file("corun-1")];
    let commands = files
        .each_ref()
        .map(|file| CommandSpec::new(list_descriptors_into(file)));
    let report = corun(&topology, &commands, &options, &AtomicBool::new(false)).unwrap();
    for (file, outcome) in files.iter().zip(&report.commands) {
        assert_eq!(
            outcome.status,
            CommandStatus::Exited { code: 0 },
            "{report}"
        );
        assert_only_stdio(file);
        let _ = std::fs::remove_file(file);
    }
}

#[test]
fn a_command_started_by_profile_command_sees_only_its_stdio() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    close_inherited_descriptors_on_exec();
    let file = listing_file("profile");
    // The totals counters are open, inherited by the command, while it starts.
    let request = ProfileRequest::for_this_machine("ls", 1);
    let profile = profile_command(&list_descriptors_into(&file), &request, None).unwrap();
    assert_eq!(profile.exit_code, Some(0), "{profile}");
    assert_only_stdio(&file);
    let _ = std::fs::remove_file(&file);
}
