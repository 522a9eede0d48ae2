//! The slice algorithms: every element visited exactly once with every strategy, on empty,
//! one-element and large slices; `map_collect` in order without `Default`/`Clone`; sorts sorted
//! and a permutation of their input (random, duplicate-heavy, sorted, reversed, all-equal and
//! other shapes); panics propagate (and a sort panicking in any of its phases leaves a
//! permutation).

mod fixtures;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use fixtures::{all_strategies, pool};

const LENGTHS: [usize; 6] = [0, 1, 2, 3, 1000, 100_003];

/// A deterministic pseudo-random sequence (splitmix64).
fn random_u64s(len: usize, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

#[test]
fn for_each_mut_visits_every_element_once() {
    for threads in [1, 2, 3] {
        let pool = pool(threads);
        for strategy in all_strategies() {
            for len in LENGTHS {
                let mut v = vec![0u32; len];
                pool.for_each_mut_with(&strategy, &mut v, |x| *x += 1);
                assert!(
                    v.iter().all(|&x| x == 1),
                    "{threads} threads, {strategy:?}, len {len}"
                );
            }
        }
    }
}

#[test]
fn for_each_indexed_mut_passes_each_index_with_its_element_once() {
    let pool = pool(2);
    for strategy in all_strategies() {
        for len in LENGTHS {
            let mut v: Vec<(usize, u32)> = (0..len).map(|i| (i, 0)).collect();
            pool.for_each_indexed_mut_with(&strategy, &mut v, |i, x| {
                assert_eq!(x.0, i, "{strategy:?}: index and element disagree");
                x.1 += 1;
            });
            assert!(v.iter().all(|x| x.1 == 1), "{strategy:?}, len {len}");
        }
    }
}

#[test]
fn par_chunks_mut_hands_out_every_chunk_once() {
    let pool = pool(2);
    for strategy in all_strategies() {
        for len in LENGTHS {
            for chunk_len in [0, 1, 3, 512] {
                let mut v = vec![usize::MAX; len];
                let calls = AtomicUsize::new(0);
                pool.par_chunks_mut_with(&strategy, &mut v, chunk_len, |k, chunk| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    let step = chunk_len.max(1);
                    assert!(!chunk.is_empty() && chunk.len() <= step);
                    for (j, x) in chunk.iter_mut().enumerate() {
                        assert_eq!(*x, usize::MAX, "{strategy:?}: element written twice");
                        *x = k * step + j;
                    }
                });
                let what = format!("{strategy:?}, len {len}, chunk {chunk_len}");
                assert_eq!(v, (0..len).collect::<Vec<_>>(), "{what}");
                assert_eq!(calls.into_inner(), len.div_ceil(chunk_len.max(1)), "{what}");
            }
        }
    }
}

#[test]
fn map_collect_returns_every_value_in_order() {
    let pool = pool(2);
    let calls = AtomicUsize::new(0);
    for strategy in all_strategies() {
        for len in LENGTHS {
            calls.store(0, Ordering::Relaxed);
            // String: neither Copy nor Default-initialized by the algorithm.
            let v = pool.map_collect_with(&strategy, 7..7 + len, |i| {
                calls.fetch_add(1, Ordering::Relaxed);
                i.to_string()
            });
            let expected: Vec<String> = (7..7 + len).map(|i| i.to_string()).collect();
            assert_eq!(v, expected, "{strategy:?}, len {len}");
            assert_eq!(
                calls.load(Ordering::Relaxed),
                len,
                "{strategy:?}, len {len}"
            );
        }
    }
}

#[test]
fn map_collect_needs_neither_default_nor_clone() {
    struct Token(usize);
    let tokens = pool(2).map_collect(0..100, Token);
    assert!(tokens.iter().enumerate().all(|(i, t)| t.0 == i));
}

/// When `map` panics, every value it returned before is dropped once, as rayon's `collect`
/// does (they used to be leaked), and none twice.
#[test]
fn a_panicking_map_collect_drops_every_value_made() {
    for threads in [1, 2, 3] {
        let pool = pool(threads);
        for strategy in all_strategies() {
            for (len, panic_at) in [(1000, 0), (1000, 999), (100_003, 77_777)] {
                let made = AtomicUsize::new(0);
                let drops = AtomicUsize::new(0);
                let result = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.map_collect_with(&strategy, 0..len, |i| {
                        assert!(i != panic_at, "map");
                        made.fetch_add(1, Ordering::Relaxed);
                        Counted {
                            key: i as u64,
                            drops: &drops,
                        }
                    })
                }));
                let what = format!("{threads} threads, {strategy:?}, panic at {panic_at}");
                assert!(result.is_err(), "{what}: no panic");
                drop(result);
                // Relaxed: read after the call returned, which waited for its tasks.
                let (made, drops) = (made.into_inner(), drops.into_inner());
                assert!(made < len, "{what}");
                assert_eq!(drops, made, "{what}: {made} values made, {drops} dropped");
            }
        }
    }
}

fn inputs() -> Vec<(&'static str, Vec<u64>)> {
    // Above the sequential cut-off (2^15) on both sides of a first split on 4 threads.
    let n = 70_000;
    vec![
        ("empty", vec![]),
        ("one", vec![42]),
        ("two", vec![2, 1]),
        ("random", random_u64s(n, 1)),
        (
            "few distinct",
            random_u64s(n, 2).iter().map(|x| x % 4).collect(),
        ),
        ("all equal", vec![7; n]),
        ("sorted", (0..n as u64).collect()),
        ("reversed", (0..n as u64).rev().collect()),
        ("sawtooth", (0..n as u64).map(|i| i % 1000).collect()),
        (
            "organ pipe",
            (0..n as u64).map(|i| i.min(n as u64 - i)).collect(),
        ),
        (
            "mostly one value",
            random_u64s(n, 7)
                .iter()
                .map(|x| if x % 10 == 0 { *x } else { 5 })
                .collect(),
        ),
    ]
}

#[test]
fn sorts_sort_every_input_with_every_strategy() {
    let cases: Vec<_> = inputs()
        .into_iter()
        .map(|(name, input)| {
            let mut expected = input.clone();
            expected.sort_unstable();
            (name, input, expected)
        })
        .collect();
    for threads in [1, 2, 4] {
        let pool = pool(threads);
        for strategy in all_strategies() {
            for (name, input, expected) in &cases {
                let mut v = input.clone();
                pool.sort_unstable_by_with(&strategy, &mut v, u64::cmp);
                assert!(&v == expected, "{threads} threads, {strategy:?}, {name}");
            }
        }
    }
}

/// Above 2^20 u64 the partition takes chunks larger than its 32 KiB minimum (about 1/256 of the
/// slice); the inputs above are too small for that.
#[test]
fn a_large_sort_partitions_with_large_chunks() {
    let n = 1_100_000;
    let random = random_u64s(n, 11);
    let mostly_one: Vec<u64> = random
        .iter()
        .map(|x| if x % 10 == 0 { *x } else { 5 })
        .collect();
    for (name, input) in [("random", random), ("mostly one value", mostly_one)] {
        let mut expected = input.clone();
        expected.sort_unstable();
        for threads in [2, 3] {
            let mut v = input.clone();
            pool(threads).sort_unstable(&mut v);
            assert!(v == expected, "{threads} threads, {name}");
        }
    }
}

/// The shapes of input the lengths around the sort's thresholds are tried with.
fn shaped(len: usize, seed: u64) -> Vec<(&'static str, Vec<u64>)> {
    let random = random_u64s(len, seed);
    vec![
        ("few distinct", random.iter().map(|x| x % 5).collect()),
        ("all equal", vec![3; len]),
        ("sorted", (0..len as u64).collect()),
        ("reversed", (0..len as u64).rev().collect()),
        ("random", random),
    ]
}

/// Lengths around the sort's thresholds: one thread below 2^15 elements; above it a parallel
/// first split, then pieces split by one lane while longer than max(n / (4 · threads), 2^18),
/// so from about 2^19 elements (sides of 2^18) on. `a_large_sort_partitions_with_large_chunks`
/// splits pieces over two levels.
#[test]
fn sorts_around_every_threshold() {
    let lengths = [32_767, 32_768, 32_769, 65_537, 524_289];
    for threads in [2, 3] {
        let pool = pool(threads);
        for len in lengths {
            if threads == 3 && len > 100_000 {
                continue;
            }
            for (name, input) in shaped(len, len as u64) {
                let mut expected = input.clone();
                expected.sort_unstable();
                let mut v = input;
                pool.sort_unstable(&mut v);
                assert!(v == expected, "{threads} threads, len {len}, {name}");
            }
        }
    }
    // Strategies of each kind where the pieces are split (every strategy runs the lanes of the
    // first split and of the pieces in `sorts_sort_every_input_with_every_strategy`).
    let pool = pool(2);
    let input = random_u64s(524_289, 12);
    let mut expected = input.clone();
    expected.sort_unstable();
    let strategies = [
        parbench_scheduler::Strategy::Static,
        parbench_scheduler::Strategy::Dynamic { chunk: 1 },
        parbench_scheduler::Strategy::Simple { grain: 1 },
    ];
    for strategy in strategies {
        let mut v = input.clone();
        pool.sort_unstable_by_with(&strategy, &mut v, u64::cmp);
        assert!(v == expected, "{strategy:?}");
    }
}

/// An element that counts its drops.
struct Counted<'a> {
    key: u64,
    drops: &'a AtomicUsize,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sorting (or a panicking sort) neither drops an element nor duplicates one: after the sort,
/// dropping the vector drops every element exactly once.
#[test]
fn a_sort_drops_nothing_and_duplicates_nothing() {
    // Both sides of the first split (≈ 300 000 each) are longer than 2^18, so both are split.
    let len = 600_001;
    let keys: Vec<u64> = random_u64s(len, 13).iter().map(|x| x % 100_000).collect();
    let mut expected = keys.clone();
    expected.sort_unstable();
    let pool = pool(2);
    // No panic, then panics in the first split (about the first 300 000 comparisons), in the
    // pieces' splits on one lane, and in the pieces' sorts.
    for panic_at in [
        None,
        Some(150_000),
        Some(320_000),
        Some(600_000),
        Some(2_000_000),
    ] {
        let drops = AtomicUsize::new(0);
        let compared = AtomicUsize::new(0);
        let mut v: Vec<Counted<'_>> = keys
            .iter()
            .map(|&key| Counted { key, drops: &drops })
            .collect();
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.sort_unstable_by(&mut v, |a, b| {
                let call = compared.fetch_add(1, Ordering::Relaxed);
                assert!(Some(call) != panic_at, "sort");
                a.key.cmp(&b.key)
            })
        }));
        let what = format!("panic at {panic_at:?}");
        assert_eq!(r.is_err(), panic_at.is_some(), "{what}");
        assert_eq!(
            drops.load(Ordering::Relaxed),
            0,
            "{what}: dropped during the sort"
        );
        let mut sorted: Vec<u64> = v.iter().map(|x| x.key).collect();
        if panic_at.is_none() {
            assert!(sorted == expected, "{what}: not sorted");
        }
        sorted.sort_unstable();
        assert!(sorted == expected, "{what}: not a permutation");
        drop(v);
        assert_eq!(drops.load(Ordering::Relaxed), len, "{what}");
    }
}

/// The same for `u64`, whose pieces that fit in the cache are split with a Lomuto partition
/// rather than the block partition: a sort panicking in any phase leaves a permutation.
#[test]
fn a_panicking_sort_of_u64_leaves_a_permutation() {
    // Sides of ≈ 300 000 (2.4 MB, split on one lane by Lomuto): the first split takes about the
    // first 600 000 comparisons, the sides' splits the next 600 000, the pieces' sorts the rest.
    let len = 600_001;
    let keys = random_u64s(len, 17);
    let mut expected = keys.clone();
    expected.sort_unstable();
    let pool = pool(2);
    for panic_at in [150_000, 700_000, 1_000_000, 3_000_000] {
        let compared = AtomicUsize::new(0);
        let mut v = keys.clone();
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.sort_unstable_by(&mut v, |a, b| {
                let call = compared.fetch_add(1, Ordering::Relaxed);
                assert!(call != panic_at, "sort");
                a.cmp(b)
            })
        }));
        assert!(r.is_err(), "panic at {panic_at}: the sort returned");
        v.sort_unstable();
        assert!(v == expected, "panic at {panic_at}: not a permutation");
    }
}

static ZST_DROPS: AtomicUsize = AtomicUsize::new(0);

/// A zero-sized element with a destructor.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Nothing;

impl Drop for Nothing {
    fn drop(&mut self) {
        ZST_DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The payload with which the counting comparator below gives up.
struct TooManyComparisons;

/// A comparator that is not a total order leaves the slice in some order and may panic (as
/// std's `sort_unstable_by` may), but the slice stays a permutation of its input and the sort
/// takes O(n log n) comparisons. With `|_, _| Less` every split of a piece removed only its
/// pivot: before the bad-split budget (`BAD_SPLITS` in `slice/sort.rs`) this sort made about
/// n²/2 comparisons and ran for minutes; here it gives up after 8·n·log₂ n.
#[test]
fn a_comparator_that_is_not_a_total_order_takes_n_log_n_comparisons() {
    use std::cmp::Ordering::{Greater, Less};
    let pool = pool(2);
    let n: usize = 300_000; // above the pieces' size floor (2^18), so pieces are split
    let bound = 8 * n * (usize::BITS - n.leading_zeros()) as usize;
    type Compare = fn(&u64, &u64) -> std::cmp::Ordering;
    let comparators: [(&str, Compare); 3] = [
        ("always less", |_, _| Less),
        ("always greater", |_, _| Greater),
        ("every 7th below everything", |a, b| {
            if a % 7 == 0 || b % 7 == 0 {
                Less
            } else {
                a.cmp(b)
            }
        }),
    ];
    for (name, compare) in comparators {
        let input = random_u64s(n, 3);
        let mut v = input.clone();
        let calls = AtomicUsize::new(0);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.sort_unstable_by(&mut v, |a, b| {
                // Relaxed: a count, read after the sort.
                if calls.fetch_add(1, Ordering::Relaxed) > bound {
                    panic::panic_any(TooManyComparisons);
                }
                compare(a, b)
            });
        }));
        if let Err(payload) = result {
            assert!(
                !payload.is::<TooManyComparisons>(),
                "{name}: more than {bound} comparisons for {n} elements"
            );
        }
        let (mut sorted, mut expected) = (v, input);
        sorted.sort_unstable();
        expected.sort_unstable();
        assert!(sorted == expected, "{name}: not a permutation of the input");
    }
}

#[test]
fn zero_sized_elements_sort_with_every_strategy() {
    let pool = pool(2);
    let len = 100_000;
    for strategy in all_strategies() {
        ZST_DROPS.store(0, Ordering::Relaxed);
        let mut v: Vec<Nothing> = (0..len).map(|_| Nothing).collect();
        pool.sort_unstable_by_with(&strategy, &mut v, Nothing::cmp);
        assert_eq!(v.len(), len);
        assert_eq!(ZST_DROPS.load(Ordering::Relaxed), 0, "{strategy:?}");
        drop(v);
        assert_eq!(ZST_DROPS.load(Ordering::Relaxed), len, "{strategy:?}");
    }
}

/// A comparator that itself runs work on the pool (nested in the sort's lanes) neither deadlocks
/// the sort nor disturbs it.
#[test]
fn a_comparator_running_pool_work_does_not_deadlock_the_sort() {
    let pool = pool(2);
    let input = random_u64s(524_289, 14);
    let mut expected = input.clone();
    expected.sort_unstable();
    let compared = AtomicUsize::new(0);
    let mut v = input;
    pool.install(|| {
        pool.sort_unstable_by(&mut v, |a, b| {
            if compared.fetch_add(1, Ordering::Relaxed) % 20_000 == 0 {
                let mut scratch = [0_u8; 256];
                parbench_scheduler::for_each_mut(&mut scratch, |x| *x += 1);
                assert!(scratch.iter().all(|&x| x == 1));
            }
            a.cmp(b)
        })
    });
    assert!(v == expected);
}

#[test]
fn sort_variants_agree() {
    let pool = pool(2);
    let input = random_u64s(150_000, 3);
    let mut expected = input.clone();
    expected.sort_unstable_by_key(|x| x % 1_000_003);
    let mut by_key = input.clone();
    pool.sort_unstable_by_key(&mut by_key, |x| x % 1_000_003);
    assert!(
        by_key
            .iter()
            .map(|x| x % 1_000_003)
            .eq(expected.iter().map(|x| x % 1_000_003))
    );
    let mut plain = input.clone();
    pool.sort_unstable(&mut plain);
    let mut reverse = input;
    pool.sort_unstable_by(&mut reverse, |a, b| b.cmp(a));
    reverse.reverse();
    assert!(plain == reverse && plain.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn sort_moves_owned_elements_without_losing_or_duplicating_any() {
    let pool = pool(2);
    let input: Vec<String> = random_u64s(100_000, 4)
        .iter()
        .map(|x| (x % 5000).to_string())
        .collect();
    let mut expected = input.clone();
    expected.sort_unstable();
    let mut v = input;
    pool.sort_unstable(&mut v);
    assert!(v == expected);
}

fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn panics_propagate_from_every_algorithm() {
    let pool = pool(2);
    for strategy in all_strategies() {
        let mut v = vec![0usize; 10_000];
        let caught =
            |result: Result<(), Box<dyn std::any::Any + Send>>| message(result.unwrap_err());
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.for_each_mut_with(&strategy, &mut v, |x| {
                if *x == 0 {
                    panic!("for_each_mut");
                }
            })
        }));
        assert_eq!(caught(r), "for_each_mut", "{strategy:?}");
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.for_each_indexed_mut_with(&strategy, &mut v, |i, _| {
                assert!(i != 4321, "indexed");
            })
        }));
        assert_eq!(caught(r), "indexed", "{strategy:?}");
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.par_chunks_mut_with(&strategy, &mut v, 64, |k, _| assert!(k != 100, "chunks"))
        }));
        assert_eq!(caught(r), "chunks", "{strategy:?}");
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            let _: Vec<String> = pool.map_collect_with(&strategy, 0..10_000, |i| {
                assert!(i != 9999, "collect");
                i.to_string()
            });
        }));
        assert_eq!(caught(r), "collect", "{strategy:?}");

        let input: Vec<String> = random_u64s(40_000, 5).iter().map(u64::to_string).collect();
        let mut strings = input.clone();
        let compared = AtomicUsize::new(0);
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.sort_unstable_by_with(&strategy, &mut strings, |a, b| {
                assert!(compared.fetch_add(1, Ordering::Relaxed) != 60_000, "sort");
                a.cmp(b)
            })
        }));
        assert_eq!(caught(r), "sort", "{strategy:?}");
        // Still a permutation of the input: nothing lost, nothing duplicated.
        let (mut left, mut right) = (input, strings);
        left.sort_unstable();
        right.sort_unstable();
        assert!(
            left == right,
            "{strategy:?}: a panicking sort lost or duplicated elements"
        );

        // The pool is still usable.
        let mut ok = vec![1u8; 100];
        pool.for_each_mut_with(&strategy, &mut ok, |x| *x = 2);
        assert!(ok.iter().all(|&x| x == 2));
    }
}

/// A comparator that panics at its `panic_at`-th call lands, depending on that number, in the
/// pivot choice, the parallel partition (its lanes or its fix-up) or the sides' sorts: wherever it
/// lands, the panic propagates and the slice stays a permutation of its input (`String`s, so a
/// lost or duplicated element would also be a double free or a leak).
#[test]
fn a_sort_panicking_in_any_phase_leaves_a_permutation() {
    let input: Vec<String> = random_u64s(70_000, 8).iter().map(u64::to_string).collect();
    let mut expected = input.clone();
    expected.sort_unstable();
    let default = [parbench_scheduler::Strategy::default()];
    for threads in [2, 4] {
        let pool = pool(threads);
        for panic_at in [10, 1_000, 30_000, 69_000, 120_000, 400_000] {
            // Every strategy for a panic inside the first partition on 2 threads, the default for
            // the rest.
            let strategies = if panic_at == 30_000 && threads == 2 {
                all_strategies()
            } else {
                default.to_vec()
            };
            for strategy in strategies {
                let compared = AtomicUsize::new(0);
                let mut v = input.clone();
                let r = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.sort_unstable_by_with(&strategy, &mut v, |a, b| {
                        assert!(compared.fetch_add(1, Ordering::Relaxed) != panic_at, "sort");
                        a.cmp(b)
                    })
                }));
                let what = format!("{threads} threads, {strategy:?}, panic at {panic_at}");
                assert_eq!(message(r.unwrap_err()), "sort", "{what}");
                v.sort_unstable();
                assert!(v == expected, "{what}: lost or duplicated elements");
            }
        }
    }
}

#[test]
fn free_functions_use_the_global_pool_and_nest() {
    let mut rows = vec![vec![0u32; 100]; 50];
    parbench_scheduler::for_each_indexed_mut(&mut rows, |i, row| {
        parbench_scheduler::for_each_indexed_mut(row, |j, x| *x = (i * 100 + j) as u32);
    });
    let flat: Vec<u32> = rows.concat();
    assert_eq!(flat, (0..5000).collect::<Vec<u32>>());
    let mut v = random_u64s(70_000, 6);
    parbench_scheduler::sort_unstable(&mut v);
    assert!(v.windows(2).all(|w| w[0] <= w[1]));
}
