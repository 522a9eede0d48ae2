//! Starts two threads that sleep for the time given in milliseconds (default 1500), then ends
//! its main thread alone (the `exit` system call, which `pthread_exit` makes; calling
//! `pthread_exit` itself would unwind through Rust's `main` and abort): the process keeps running
//! on the two threads while `/proc/PID/stat` shows its main thread's state, `Z`.

use std::time::Duration;

extern "C" {
    fn syscall(number: std::ffi::c_long, ...) -> std::ffi::c_long;
}

/// `SYS_exit`: ends the calling thread only (`exit_group` ends the process).
#[cfg(target_arch = "x86_64")]
const SYS_EXIT: std::ffi::c_long = 60;
#[cfg(target_arch = "aarch64")]
const SYS_EXIT: std::ffi::c_long = 93;

fn main() {
    let millis: u64 = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1500);
    for _ in 0..2 {
        std::thread::spawn(move || std::thread::sleep(Duration::from_millis(millis)));
    }
    // SAFETY: ends only the main thread, which owns nothing the sleeping threads use; the
    // process ends with the last of them.
    unsafe { syscall(SYS_EXIT, 0) };
    unreachable!("SYS_exit returned");
}
