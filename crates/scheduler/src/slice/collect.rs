//! `map_collect`: a `Vec` filled in parallel, element `i` being `map(range.start + i)`.
//!
//! The vector's spare capacity is written through the same disjoint parts as `for_each_mut`, so
//! `T` needs neither `Default` nor `Clone`. The length is set only after the loop returned
//! normally, which means every index ran (a strategy stops early only after a panic, and then the
//! loop unwinds). If `map` panics, the values made before are dropped, as rayon's `collect` drops
//! them: a part that `map` left unfinished drops what it wrote of itself, and the finished parts
//! are noted (one uncontended lock per part, as `parallel_reduce` takes one per chunk, and
//! adjacent ones merged as its results are, so a few ranges are held, not one per part) and
//! dropped before the panic propagates. Until then they were leaked.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};

use crate::reduce::Segments;
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
    // The parts whose every slot was written, as offsets into the vector, adjacent ones merged.
    let finished = Segments::new();
    let filled = panic::catch_unwind(AssertUnwindSafe(|| {
        super::for_parts_mut(
            registry,
            strategy,
            &mut out.spare_capacity_mut()[..len],
            |offset, part: &mut [MaybeUninit<T>]| {
                let part_len = part.len();
                let mut written = WrittenPrefix { part, len: 0 };
                while written.len < part_len {
                    let value = map(start + offset + written.len);
                    written.part[written.len].write(value);
                    written.len += 1;
                }
                // Finished: from now on the list owns these values, not the guard.
                written.len = 0;
                finished.finish(offset..offset + part_len, (), &|(), ()| ());
            },
        );
    }));
    if let Err(payload) = filled {
        let slots = out.spare_capacity_mut();
        for (part, ()) in finished.into_segments() {
            for slot in &mut slots[part] {
                // SAFETY: every slot of a finished part was written exactly once, and the parts
                // are disjoint; the vector's length is still 0, so it never drops them itself.
                unsafe { slot.assume_init_drop() };
            }
        }
        panic::resume_unwind(payload);
    }
    // SAFETY: the loop returned normally, so every slot of 0..len was written exactly once (see
    // the module docs), and the capacity is at least `len`.
    unsafe { out.set_len(len) };
    out
}

/// The first `len` slots of `part` hold values; dropped with them unless `len` is reset, which
/// happens when the part is finished (a part left unfinished drops what it wrote when `map`'s
/// panic unwinds through it).
struct WrittenPrefix<'a, T> {
    part: &'a mut [MaybeUninit<T>],
    len: usize,
}

impl<T> Drop for WrittenPrefix<'_, T> {
    fn drop(&mut self) {
        for slot in &mut self.part[..self.len] {
            // SAFETY: the first `len` slots were written and are owned by this guard alone: an
            // unfinished part is never noted as finished.
            unsafe { slot.assume_init_drop() };
        }
    }
}
