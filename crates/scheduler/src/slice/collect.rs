//! `map_collect`: a `Vec` filled in parallel, element `i` being `map(range.start + i)`.
//!
//! The vector's spare capacity is written through the same disjoint parts as `for_each_mut`, so
//! `T` needs neither `Default` nor `Clone`. The length is set only after the loop returned
//! normally, which means every index ran (a strategy stops early only after a panic, and then the
//! loop unwinds); if it unwinds, the vector is dropped with length 0, leaking the elements
//! already written but never reading an unwritten one.

use std::mem::MaybeUninit;
use std::ops::Range;

use crate::registry::Registry;
use crate::strategy::Strategy;

pub(crate) fn map_collect<T, F>(
    registry: &Registry,
    strategy: &Strategy,
    range: Range<usize>,
    map: F,
) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    let len = range.len();
    let mut out: Vec<T> = Vec::with_capacity(len);
    let start = range.start;
    super::for_parts_mut(
        registry,
        strategy,
        &mut out.spare_capacity_mut()[..len],
        |offset, part: &mut [MaybeUninit<T>]| {
            for (i, slot) in part.iter_mut().enumerate() {
                slot.write(map(start + offset + i));
            }
        },
    );
    // SAFETY: the loop returned normally, so every slot of 0..len was written exactly once (see
    // the module docs), and the capacity is at least `len`.
    unsafe { out.set_len(len) };
    out
}
