//! Whitespace-separated integers with their line numbers.
//!
//! QAPLIB and BOTS floorplan files are both plain streams of integers in which
//! line breaks carry no meaning. Both readers still have to report *where* a
//! malformed value sits (`path:line: message`), so this module walks the text
//! line by line and hands out one integer at a time together with the line it
//! came from. Readers ask for a value with a description of what they expect
//! ("flow matrix entry A\[2\]\[3\]"), which turns every error into a sentence a
//! user can act on. [`read_input_file`] is the one place such a file is read
//! from disk.

use std::path::Path;
use std::str::SplitWhitespace;

use super::InputError;
use crate::kernel::KernelError;

/// Reads the file at `path` and parses it with `parse` (one of the readers'
/// `parse` functions): an unreadable file is [`KernelError::Io`], a malformed
/// one [`KernelError::Input`].
pub(crate) fn read_input_file<T>(
    path: &Path,
    parse: impl FnOnce(&Path, &[u8]) -> Result<T, InputError>,
) -> Result<T, KernelError> {
    let bytes = std::fs::read(path).map_err(|source| KernelError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(parse(path, &bytes)?)
}

/// A cursor over the integers of one input text.
pub(crate) struct IntegerTokens<'a> {
    path: &'a Path,
    lines: std::str::Lines<'a>,
    words: SplitWhitespace<'a>,
    /// 1-based number of the line `words` comes from (0 before the first line).
    line: usize,
}

impl<'a> IntegerTokens<'a> {
    /// Tokens of `text`, which was read from `path` (used in error messages).
    pub(crate) fn new(path: &'a Path, text: &'a str) -> Self {
        Self {
            path,
            lines: text.lines(),
            words: "".split_whitespace(),
            line: 0,
        }
    }

    /// Decodes `bytes` as UTF-8 first: a file that is not text is reported at
    /// the line where the first invalid byte sits.
    pub(crate) fn decode(path: &Path, bytes: &'a [u8]) -> Result<&'a str, InputError> {
        std::str::from_utf8(bytes).map_err(|error| {
            let valid = &bytes[..error.valid_up_to()];
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            InputError::new(path, line, "the file is not UTF-8 text")
        })
    }

    /// The next whitespace-separated word and its line, or `None` at the end.
    fn next_word(&mut self) -> Option<&'a str> {
        loop {
            if let Some(word) = self.words.next() {
                return Some(word);
            }
            let line = self.lines.next()?;
            self.line += 1;
            self.words = line.split_whitespace();
        }
    }

    /// The next integer, or `Ok(None)` when the text has no more words.
    pub(crate) fn next_integer(&mut self, what: &str) -> Result<Option<i64>, InputError> {
        match self.next_word() {
            None => Ok(None),
            Some(word) => word.parse::<i64>().map(Some).map_err(|_| {
                self.error(format!(
                    "expected an integer ({what}), found '{}'",
                    shorten(word)
                ))
            }),
        }
    }

    /// The next integer; the end of the text is an error naming `what`.
    pub(crate) fn expect_integer(&mut self, what: &str) -> Result<i64, InputError> {
        self.next_integer(what)?
            .ok_or_else(|| self.error(format!("unexpected end of input: expected {what}")))
    }

    /// The next integer, which must lie in `low..=high`.
    pub(crate) fn expect_in_range(
        &mut self,
        what: &str,
        low: i64,
        high: i64,
    ) -> Result<i64, InputError> {
        let value = self.expect_integer(what)?;
        if (low..=high).contains(&value) {
            Ok(value)
        } else {
            Err(self.error(format!(
                "{what} must be between {low} and {high}, found {value}"
            )))
        }
    }

    /// Line of the most recently read value (1 before anything was read).
    pub(crate) fn line(&self) -> usize {
        self.line.max(1)
    }

    /// An error at the line of the most recently read value.
    pub(crate) fn error(&self, message: impl Into<String>) -> InputError {
        InputError::new(self.path, self.line(), message)
    }
}

/// Keeps error messages one line long even when the offending word is huge.
fn shorten(word: &str) -> String {
    const LIMIT: usize = 32;
    match word.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &word[..end]),
        None => word.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_line_of_each_value() {
        let path = Path::new("x.dat");
        let mut tokens = IntegerTokens::new(path, "1 2\n\n  3\nfour");
        assert_eq!(tokens.expect_integer("a").unwrap(), 1);
        assert_eq!(tokens.expect_integer("b").unwrap(), 2);
        assert_eq!(tokens.expect_integer("c").unwrap(), 3);
        let error = tokens.expect_integer("d").unwrap_err();
        assert_eq!(error.line, 4);
        assert!(error.to_string().starts_with("x.dat:4: "), "{error}");
    }

    #[test]
    fn end_of_input_names_the_missing_value() {
        let mut tokens = IntegerTokens::new(Path::new("x"), "7\n");
        tokens.expect_integer("n").unwrap();
        let error = tokens.expect_integer("the flow matrix").unwrap_err();
        assert!(error.message.contains("the flow matrix"), "{error}");
        assert_eq!(error.line, 1);
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let mut tokens = IntegerTokens::new(Path::new("x"), "-3");
        let error = tokens.expect_in_range("n", 1, 10).unwrap_err();
        assert!(error.message.contains("between 1 and 10"), "{error}");
    }

    #[test]
    fn invalid_utf8_is_reported_at_its_line() {
        let error = IntegerTokens::decode(Path::new("x"), b"1\n2\n\xff").unwrap_err();
        assert_eq!(error.line, 3);
    }

    #[test]
    fn long_words_are_shortened_in_messages() {
        let word = "z".repeat(1000);
        let mut tokens = IntegerTokens::new(Path::new("x"), &word);
        let error = tokens.expect_integer("n").unwrap_err();
        assert!(error.message.len() < 100, "{error}");
    }
}
