//! Readers for the input files kernels accept. Every reader reports a malformed file as an
//! [`InputError`] naming the file and line, and never panics, whatever the bytes.

pub mod floorplan;
pub(crate) mod integer_tokens;
pub mod matrix_market;
pub mod qaplib;

use std::fmt;
use std::path::PathBuf;

/// A malformed input file: `path:line: message`.
///
/// ```
/// use parbench_kernels::input::InputError;
///
/// let e = InputError::new("m.mtx", 3, "expected 3 numbers");
/// assert_eq!(e.to_string(), "m.mtx:3: expected 3 numbers");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number (0 when the problem is the file as a whole, e.g. it is empty).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error at `path:line`.
    pub fn new(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        InputError {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
    }
}

impl std::error::Error for InputError {}
