//! Writing disjoint parts of one output slice from parallel loop bodies.
//!
//! [`crate::Executor::for_chunks`] promises disjoint sub-ranges, but a `Fn` body can only capture
//! the output by shared reference. [`DisjointSlice`] bridges the two: it hands out `&mut` sub-slices
//! through an `unsafe` method whose contract is exactly the executor's promise.

use std::marker::PhantomData;
use std::ops::Range;

/// A mutable slice shared by loop bodies that each write their own disjoint ranges.
pub(crate) struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: the slice is only reached through `range_mut`, whose callers guarantee that concurrent
// calls use disjoint ranges; sharing it is then like sending disjoint `&mut [T]` to threads.
unsafe impl<T: Send> Sync for DisjointSlice<'_, T> {}
// SAFETY: as above; it owns no `T`, it is a borrow of a `&mut [T]`.
unsafe impl<T: Send> Send for DisjointSlice<'_, T> {}

impl<'a, T> DisjointSlice<'a, T> {
    /// Shares `slice` for disjoint writes for as long as the borrow lasts.
    pub(crate) fn new(slice: &'a mut [T]) -> Self {
        DisjointSlice {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }

    /// The elements in `range`.
    ///
    /// # Panics
    /// If `range` is out of bounds (a bug in the caller, not user input).
    ///
    /// # Safety
    /// No two live results of `range_mut` may overlap: callers pass ranges that an executor handed
    /// out for one loop (disjoint by the [`crate::Executor::for_chunks`] contract).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range_mut(&self, range: Range<usize>) -> &mut [T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "range out of bounds"
        );
        // SAFETY: in bounds (checked above) of a slice borrowed mutably for 'a; no other live
        // reference overlaps it (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}
