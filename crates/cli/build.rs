//! Records the git commit and the rustc version the binary was built from, for the environment
//! block of every sweep report (`crate::environment`). Either is left unset when it cannot be
//! found (a source tarball without `.git`, an unusual toolchain); the report then says so.

use std::process::Command;

fn main() {
    if let Some(commit) = output("git", &["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=PARBENCH_GIT_COMMIT={commit}");
    }
    // Rebuild when HEAD moves (a commit, a checkout), wherever this worktree keeps its HEAD.
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(file) = output(
            "git",
            &["rev-parse", "--path-format=absolute", "--git-path", path],
        ) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    if let Some(version) = output(&rustc, &["--version"]) {
        println!("cargo:rustc-env=PARBENCH_RUSTC_VERSION={version}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// The trimmed stdout of a successful command, if it is not empty.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}
