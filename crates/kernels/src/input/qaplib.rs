//! QAPLIB quadratic assignment instances.
//!
//! A QAPLIB file holds `n`, then the `n × n` flow matrix `A`, then the `n × n`
//! distance matrix `B`, all as whitespace-separated integers with arbitrary
//! line breaks. The objective is the minimum over permutations `p` of
//! `Σ A[i][j] · B[p(i)][p(j)]` (facility `i` goes to location `p(i)`).
//!
//! The files shipped with the INNCABS suite carry one more integer at the end:
//! the optimum the authors expected. The reader keeps it as
//! [`QapInstance::expected_optimum`] so the kernel can *report* whether its
//! own answer agrees; it is never used to prune or to decide the answer.
//!
//! Entries must be non-negative (the branch and bound prunes on partial
//! costs, which is only sound when costs never decrease) and small enough
//! that no assignment's cost can overflow 64 bits; both are checked here so
//! the solver can use plain `u64` arithmetic.

use std::path::Path;

use super::InputError;
use super::integer_tokens::IntegerTokens;
use crate::kernels::rng::SplitMix64;

/// Largest instance the reader accepts (the largest QAPLIB instance, tai256c).
pub const MAX_QAP_SIZE: usize = 256;

/// A quadratic assignment problem: `n` facilities onto `n` locations.
///
/// ```
/// use parbench_kernels::input::qaplib::QapInstance;
/// let text = "2\n0 3\n1 0\n0 5\n7 0\n22\n";
/// let instance = QapInstance::parse(std::path::Path::new("tiny.dat"), text.as_bytes())?;
/// assert_eq!(instance.size(), 2);
/// // Facility 0 → location 1, facility 1 → location 0: 3·7 + 1·5.
/// assert_eq!(instance.cost(&[1, 0]), 26);
/// assert_eq!(instance.expected_optimum(), Some(22));
/// # Ok::<(), parbench_kernels::input::InputError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QapInstance {
    n: usize,
    /// Row-major `n × n` flow between facilities.
    flow: Vec<u64>,
    /// Row-major `n × n` distance between locations.
    distance: Vec<u64>,
    expected_optimum: Option<u64>,
}

impl QapInstance {
    /// Builds an instance from row-major matrices; `None` if the shapes do not
    /// match `n` or the costs could overflow 64 bits.
    ///
    /// ```
    /// use parbench_kernels::input::qaplib::QapInstance;
    /// let instance = QapInstance::from_matrices(1, vec![4], vec![5]).unwrap();
    /// assert_eq!(instance.cost(&[0]), 20);
    /// ```
    pub fn from_matrices(n: usize, flow: Vec<u64>, distance: Vec<u64>) -> Option<Self> {
        let cells = n.checked_mul(n)?;
        if n == 0 || n > MAX_QAP_SIZE || flow.len() != cells || distance.len() != cells {
            return None;
        }
        let instance = Self {
            n,
            flow,
            distance,
            expected_optimum: None,
        };
        instance.cost_fits_in_u64().then_some(instance)
    }

    /// Parses QAPLIB text read from `path` (the path only labels errors).
    ///
    /// ```
    /// use parbench_kernels::input::qaplib::QapInstance;
    /// let error = QapInstance::parse("bad.dat".as_ref(), b"2\n0 1\nx 0\n").unwrap_err();
    /// assert_eq!(error.to_string(), "bad.dat:3: expected an integer (flow matrix entry A[1][0]), found 'x'");
    /// ```
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, InputError> {
        let text = IntegerTokens::decode(path, bytes)?;
        let mut tokens = IntegerTokens::new(path, text);
        let size_limit = MAX_QAP_SIZE as i64;
        let n = tokens.expect_in_range("the instance size n", 1, size_limit)? as usize;
        let flow = read_matrix(&mut tokens, n, "flow matrix entry A")?;
        let distance = read_matrix(&mut tokens, n, "distance matrix entry B")?;
        let expected_optimum = match tokens.next_integer("the expected optimum")? {
            None => None,
            Some(value) => Some(u64::try_from(value).map_err(|_| {
                tokens.error(format!(
                    "the expected optimum must be non-negative, found {value}"
                ))
            })?),
        };
        if let Some(extra) = tokens.next_integer("nothing")? {
            return Err(tokens.error(format!(
                "unexpected value {extra} after the expected optimum (a QAPLIB file holds n, A, B and at most one optimum)"
            )));
        }
        let instance = Self {
            n,
            flow,
            distance,
            expected_optimum,
        };
        if !instance.cost_fits_in_u64() {
            return Err(
                tokens.error("entries too large: n² · max(A) · max(B) does not fit in 64 bits")
            );
        }
        Ok(instance)
    }

    /// A random instance in the style of QAPLIB's `chr` family: the flows form
    /// a random tree (weights `1..=99`, symmetric), the distances are
    /// symmetric and random in `1..=99`. The same `(n, seed)` always gives the
    /// same instance.
    ///
    /// ```
    /// use parbench_kernels::input::qaplib::QapInstance;
    /// assert_eq!(QapInstance::generate(5, 1), QapInstance::generate(5, 1));
    /// ```
    ///
    /// # Panics
    /// If `n` is 0 or larger than [`MAX_QAP_SIZE`] (callers validate `n`).
    pub fn generate(n: usize, seed: u64) -> Self {
        assert!(
            (1..=MAX_QAP_SIZE).contains(&n),
            "generated QAP size {n} out of range"
        );
        let mut rng = SplitMix64::new(seed);
        let mut flow = vec![0; n * n];
        for facility in 1..n {
            let parent = rng.below(facility);
            let weight = 1 + rng.below(99) as u64;
            flow[facility * n + parent] = weight;
            flow[parent * n + facility] = weight;
        }
        let mut distance = vec![0; n * n];
        for k in 0..n {
            for l in k + 1..n {
                let length = 1 + rng.below(99) as u64;
                distance[k * n + l] = length;
                distance[l * n + k] = length;
            }
        }
        Self {
            n,
            flow,
            distance,
            expected_optimum: None,
        }
    }

    /// Number of facilities (= number of locations).
    ///
    /// ```
    /// # use parbench_kernels::input::qaplib::QapInstance;
    /// assert_eq!(QapInstance::generate(4, 0).size(), 4);
    /// ```
    pub fn size(&self) -> usize {
        self.n
    }

    /// Flow between facilities `i` and `j`.
    ///
    /// ```
    /// # use parbench_kernels::input::qaplib::QapInstance;
    /// assert_eq!(QapInstance::generate(4, 0).flow(2, 2), 0);
    /// ```
    pub fn flow(&self, i: usize, j: usize) -> u64 {
        self.flow[i * self.n + j]
    }

    /// Distance between locations `k` and `l`.
    ///
    /// ```
    /// # use parbench_kernels::input::qaplib::QapInstance;
    /// assert!(QapInstance::generate(4, 0).distance(0, 1) >= 1);
    /// ```
    pub fn distance(&self, k: usize, l: usize) -> u64 {
        self.distance[k * self.n + l]
    }

    /// The optimum written at the end of the file, if any (reporting only).
    ///
    /// ```
    /// # use parbench_kernels::input::qaplib::QapInstance;
    /// assert_eq!(QapInstance::generate(4, 0).expected_optimum(), None);
    /// ```
    pub fn expected_optimum(&self) -> Option<u64> {
        self.expected_optimum
    }

    /// Cost `Σ A[i][j] · B[p(i)][p(j)]` of the assignment `permutation`
    /// (facility `i` at location `permutation[i]`).
    ///
    /// ```
    /// # use parbench_kernels::input::qaplib::QapInstance;
    /// let instance = QapInstance::from_matrices(2, vec![0, 2, 3, 0], vec![0, 5, 7, 0]).unwrap();
    /// assert_eq!(instance.cost(&[0, 1]), 2 * 5 + 3 * 7);
    /// ```
    ///
    /// # Panics
    /// If `permutation` is shorter than [`size`](Self::size) or holds a location
    /// `>= size`.
    pub fn cost(&self, permutation: &[usize]) -> u64 {
        let n = self.n;
        let mut total = 0;
        for i in 0..n {
            for j in 0..n {
                total += self.flow(i, j) * self.distance(permutation[i], permutation[j]);
            }
        }
        total
    }

    /// Whether `permutation` assigns every facility to a distinct location.
    ///
    /// ```
    /// # use parbench_kernels::input::qaplib::QapInstance;
    /// let instance = QapInstance::generate(3, 0);
    /// assert!(instance.is_permutation(&[2, 0, 1]));
    /// assert!(!instance.is_permutation(&[2, 2, 1]));
    /// ```
    pub fn is_permutation(&self, permutation: &[usize]) -> bool {
        let mut seen = vec![false; self.n];
        permutation.len() == self.n
            && permutation
                .iter()
                .all(|&location| location < self.n && !std::mem::replace(&mut seen[location], true))
    }

    /// The maximal cost of any assignment stays below `u64::MAX`, which the
    /// solver reserves for "no assignment found yet".
    fn cost_fits_in_u64(&self) -> bool {
        let largest = |matrix: &[u64]| u128::from(matrix.iter().copied().max().unwrap_or(0));
        let cells = (self.n * self.n) as u128;
        cells
            .checked_mul(largest(&self.flow))
            .and_then(|partial| partial.checked_mul(largest(&self.distance)))
            .is_some_and(|bound| bound < u128::from(u64::MAX))
    }
}

/// Reads `n²` non-negative entries of one matrix, row by row.
fn read_matrix(
    tokens: &mut IntegerTokens<'_>,
    n: usize,
    name: &str,
) -> Result<Vec<u64>, InputError> {
    let mut matrix = Vec::with_capacity(n * n);
    for row in 0..n {
        for column in 0..n {
            let what = format!("{name}[{row}][{column}]");
            let value = tokens.expect_in_range(&what, 0, i64::from(u32::MAX))?;
            matrix.push(value as u64);
        }
    }
    Ok(matrix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<QapInstance, InputError> {
        QapInstance::parse(Path::new("t.dat"), text.as_bytes())
    }

    #[test]
    fn line_breaks_carry_no_meaning() {
        let one_line = parse("2 0 1 2 0 0 3 4 0").unwrap();
        let scattered = parse("2\n\n0\n1 2\n0 0 3\n  4\n0\n").unwrap();
        assert_eq!(one_line, scattered);
        assert_eq!(one_line.flow(1, 0), 2);
        assert_eq!(one_line.distance(1, 0), 4);
    }

    #[test]
    fn trailing_optimum_is_kept_for_reporting() {
        assert_eq!(parse("1 5 6 30").unwrap().expected_optimum(), Some(30));
        assert_eq!(parse("1 5 6").unwrap().expected_optimum(), None);
    }

    #[test]
    fn too_few_values_name_the_missing_entry() {
        let error = parse("2\n0 1\n2 0\n0 3\n").unwrap_err();
        assert!(error.message.contains("B[1][0]"), "{error}");
        assert_eq!(error.line, 4);
    }

    #[test]
    fn second_trailing_value_is_rejected() {
        let error = parse("1 5 6 30\n31").unwrap_err();
        assert!(error.message.contains("unexpected value 31"), "{error}");
        assert_eq!(error.line, 2);
    }

    #[test]
    fn negative_or_oversized_n_is_rejected() {
        assert!(parse("-1").unwrap_err().message.contains("instance size"));
        assert!(parse("0").unwrap_err().message.contains("instance size"));
        assert!(
            parse("100000")
                .unwrap_err()
                .message
                .contains("instance size")
        );
    }

    #[test]
    fn negative_entries_are_rejected() {
        let error = parse("1\n-5\n6").unwrap_err();
        assert!(error.message.contains("A[0][0]"), "{error}");
        assert_eq!(error.line, 2);
    }

    #[test]
    fn overflowing_costs_are_rejected() {
        let big = u32::MAX;
        let error = parse(&format!(
            "2 {big} {big} {big} {big} {big} {big} {big} {big}"
        ))
        .unwrap_err();
        assert!(error.message.contains("64 bits"), "{error}");
    }

    #[test]
    fn generated_instances_have_zero_diagonals_and_depend_on_the_seed() {
        let instance = QapInstance::generate(6, 3);
        assert!((0..6).all(|i| instance.flow(i, i) == 0 && instance.distance(i, i) == 0));
        assert_ne!(instance, QapInstance::generate(6, 4));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = QapInstance::parse(Path::new("p"), &bytes);
        }

        #[test]
        fn arbitrary_integer_text_never_panics(
            values in proptest::collection::vec(-3i64..40, 0..40),
            separators in proptest::collection::vec(prop_oneof![Just(" "), Just("\n"), Just("\t"), Just(" x ")], 40),
        ) {
            let text: String = values
                .iter()
                .zip(separators.iter().cycle())
                .map(|(value, separator)| format!("{value}{separator}"))
                .collect();
            if let Ok(instance) = QapInstance::parse(Path::new("p"), text.as_bytes()) {
                let identity: Vec<usize> = (0..instance.size()).collect();
                let _ = instance.cost(&identity);
            }
        }

        #[test]
        fn written_instances_read_back(n in 1usize..6, seed in any::<u64>()) {
            let instance = QapInstance::generate(n, seed);
            let mut text = format!("{n}\n");
            for matrix in [&instance.flow, &instance.distance] {
                for row in matrix.chunks(n) {
                    let row: Vec<String> = row.iter().map(u64::to_string).collect();
                    text.push_str(&row.join(" "));
                    text.push('\n');
                }
            }
            prop_assert_eq!(parse(&text).unwrap(), instance);
        }
    }
}
