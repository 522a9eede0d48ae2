//! MatrixMarket coordinate files (<https://math.nist.gov/MatrixMarket/formats.html>).
//!
//! Accepted: `%%MatrixMarket matrix coordinate (real|integer|pattern) (general|symmetric)`, then
//! `%` comment lines and blank lines, a size line `rows cols entries`, and exactly `entries` lines
//! `row col [value]` with 1-based indices. Pattern entries get the value 1; a symmetric file's
//! off-diagonal entries are mirrored. Sizes above [`MAX_DIMENSION`] are refused before anything is
//! allocated, so a hostile size line is an error, not an out-of-memory abort.

use std::path::Path;

use super::InputError;

/// The largest number of rows or columns accepted (2^28).
pub const MAX_DIMENSION: usize = 1 << 28;

/// A sparse matrix as a list of `(row, col, value)` entries with 0-based indices.
///
/// ```
/// use parbench_kernels::input::matrix_market::parse_matrix_market;
///
/// let text = "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n2 2 2\n1 1 4.0\n2 1 -1\n";
/// let m = parse_matrix_market("a.mtx".as_ref(), text)?;
/// assert_eq!((m.rows, m.cols), (2, 2));
/// assert_eq!(m.entries, vec![(0, 0, 4.0), (1, 0, -1.0), (0, 1, -1.0)]);
/// # Ok::<(), parbench_kernels::input::InputError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CooMatrix {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// The entries, in file order (mirrored symmetric entries follow their original).
    pub entries: Vec<(usize, usize, f64)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

/// Parses the text of a MatrixMarket coordinate file; `path` only names it in errors.
///
/// # Errors
/// An [`InputError`] with the line of the first problem.
pub fn parse_matrix_market(path: &Path, text: &str) -> Result<CooMatrix, InputError> {
    let error = |line: usize, message: String| InputError::new(path, line, message);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));

    let (_, header) = lines
        .next()
        .ok_or_else(|| error(1, "empty file, expected a %%MatrixMarket header".into()))?;
    let (field, symmetric) = parse_header(header).map_err(|m| error(1, m))?;

    let mut data = lines.filter(|(_, l)| {
        let l = l.trim();
        !l.is_empty() && !l.starts_with('%')
    });
    let last_line = text.lines().count();
    let (size_line, size) = data.next().ok_or_else(|| {
        error(
            last_line,
            "missing the size line `rows cols entries`".into(),
        )
    })?;
    let [rows, cols, count] = parse_counts(size).map_err(|m| error(size_line, m))?;
    if rows > MAX_DIMENSION || cols > MAX_DIMENSION {
        return Err(error(
            size_line,
            format!("{rows} x {cols} is larger than the supported {MAX_DIMENSION} rows or columns"),
        ));
    }

    let mut entries = Vec::new();
    for read in 0..count {
        let (line, text) = data.next().ok_or_else(|| {
            error(
                last_line,
                format!("file ends after {read} of {count} entries"),
            )
        })?;
        let (row, col, value) = parse_entry(text, field, rows, cols).map_err(|m| error(line, m))?;
        entries.push((row, col, value));
        if symmetric && row != col {
            entries.push((col, row, value));
        }
    }
    if let Some((line, _)) = data.next() {
        return Err(error(
            line,
            format!("more entries than the {count} the size line declares"),
        ));
    }
    Ok(CooMatrix {
        rows,
        cols,
        entries,
    })
}

fn parse_header(header: &str) -> Result<(Field, bool), String> {
    let words: Vec<String> = header
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["%%matrixmarket", "matrix", "coordinate", field, symmetry] => {
            let field = match *field {
                "real" | "double" => Field::Real,
                "integer" => Field::Integer,
                "pattern" => Field::Pattern,
                other => {
                    return Err(format!(
                        "unsupported field `{other}` (real, integer or pattern)"
                    ));
                }
            };
            let symmetric = match *symmetry {
                "general" => false,
                "symmetric" => true,
                other => {
                    return Err(format!(
                        "unsupported symmetry `{other}` (general or symmetric)"
                    ));
                }
            };
            Ok((field, symmetric))
        }
        ["%%matrixmarket", "matrix", "array", ..] => {
            Err("dense `array` files are not supported, only `coordinate`".into())
        }
        _ => Err("expected `%%MatrixMarket matrix coordinate <field> <symmetry>`".into()),
    }
}

fn parse_counts(line: &str) -> Result<[usize; 3], String> {
    let numbers: Vec<&str> = line.split_whitespace().collect();
    let [rows, cols, count] = numbers.as_slice() else {
        return Err(format!(
            "expected `rows cols entries`, found `{}`",
            line.trim()
        ));
    };
    let parse = |what: &str, text: &str| {
        text.parse::<usize>()
            .map_err(|_| format!("{what} `{text}` is not a non-negative integer"))
    };
    Ok([
        parse("rows", rows)?,
        parse("columns", cols)?,
        parse("entries", count)?,
    ])
}

fn parse_entry(
    line: &str,
    field: Field,
    rows: usize,
    cols: usize,
) -> Result<(usize, usize, f64), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let expected = if field == Field::Pattern { 2 } else { 3 };
    if words.len() != expected {
        return Err(format!(
            "expected {expected} numbers per entry, found `{}`",
            line.trim()
        ));
    }
    let index = |text: &str, limit: usize, what: &str| match text.parse::<usize>() {
        Ok(i) if (1..=limit).contains(&i) => Ok(i - 1),
        _ => Err(format!("{what} index `{text}` is not in 1..={limit}")),
    };
    let row = index(words[0], rows, "row")?;
    let col = index(words[1], cols, "column")?;
    let value = match field {
        Field::Pattern => 1.0,
        Field::Integer => words[2]
            .parse::<i64>()
            .map(|v| v as f64)
            .map_err(|_| format!("value `{}` is not an integer", words[2]))?,
        Field::Real => match words[2].parse::<f64>() {
            Ok(value) if value.is_finite() => value,
            Ok(_) => return Err(format!("value `{}` is not a finite number", words[2])),
            Err(_) => return Err(format!("value `{}` is not a number", words[2])),
        },
    };
    Ok((row, col, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<CooMatrix, InputError> {
        parse_matrix_market(Path::new("t.mtx"), text)
    }

    #[test]
    fn non_finite_values_are_refused_with_their_line() {
        for value in ["nan", "inf", "-inf", "1e400"] {
            let text = format!(
                "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 {value}\n"
            );
            let message = parse(&text).unwrap_err().to_string();
            assert!(message.contains("t.mtx:4:"), "{value}: {message}");
            assert!(
                message.contains("not a finite number"),
                "{value}: {message}"
            );
        }
    }

    #[test]
    fn reads_general_integer_and_pattern_files() {
        let m = parse("%%MatrixMarket matrix coordinate integer general\n3 4 2\n1 4 7\n3 1 -2\n")
            .unwrap();
        assert_eq!((m.rows, m.cols), (3, 4));
        assert_eq!(m.entries, vec![(0, 3, 7.0), (2, 0, -2.0)]);
        let m =
            parse("%%MatrixMarket matrix coordinate pattern symmetric\n\n2 2 1\n2 1\n").unwrap();
        assert_eq!(m.entries, vec![(1, 0, 1.0), (0, 1, 1.0)]);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let cases = [
            ("", 1, "empty file"),
            (
                "%%MatrixMarket matrix coordinate complex general\n",
                1,
                "complex",
            ),
            ("%%MatrixMarket matrix array real general\n", 1, "array"),
            (
                "%%MatrixMarket matrix coordinate real general\n% c\n2 x 1\n",
                3,
                "columns",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n",
                3,
                "row index",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 abc\n",
                3,
                "not a number",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n",
                3,
                "1 of 2",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n",
                4,
                "more entries",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n99999999999 1 0\n",
                2,
                "larger",
            ),
        ];
        for (text, line, fragment) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("t.mtx:{line}: ")), "{e}");
            assert!(e.message.contains(fragment), "{text:?}: {e}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let _ = parse(&text);
        }

        #[test]
        fn header_then_arbitrary_lines_never_panics(
            lines in proptest::collection::vec("[0-9 .eE+%x-]{0,20}", 0..8)
        ) {
            let text = format!("%%MatrixMarket matrix coordinate real symmetric\n{}", lines.join("\n"));
            if let Ok(m) = parse(&text) {
                prop_assert!(m.entries.iter().all(|&(r, c, _)| r < m.rows && c < m.cols));
            }
        }
    }
}
