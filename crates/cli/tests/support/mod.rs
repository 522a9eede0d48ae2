//! What the `locks` and `mapper` test files share: running the binary, reading its output and
//! checking the one-line bad-input contract.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `parbench-cli` with `args`.
pub fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parbench-cli"))
        .args(args)
        .output()
        .expect("the parbench-cli binary runs")
}

/// Runs `parbench-cli` and asserts it succeeded; returns (stdout, stderr).
pub fn cli_ok(args: &[&str]) -> (String, String) {
    let output = cli(args);
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{args:?} failed: {err}");
    (out, err)
}

/// Bytes as (lossy) UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that `args` exits with code 2 and exactly one `error:` line on stderr containing
/// every one of `needles`.
pub fn assert_bad_input(args: &[&str], needles: &[&str]) {
    let output = cli(args);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line expected, got: {err}"
    );
    assert!(err.starts_with("error:"), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for needle in needles {
        assert!(
            err.contains(needle),
            "{args:?}: `{needle}` missing from: {err}"
        );
    }
}

/// A fresh path in the tests' scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parbench-cli-extra-tests");
    fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join(name);
    // Ignoring the error is right: the file usually does not exist yet.
    let _ = fs::remove_file(&path);
    path
}
