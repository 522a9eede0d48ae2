//! What hwloc makes of an interleaving `indexes=` attribute (`indexes=core:pack`,
//! `indexes=2*4:1*2`) of a synthetic description, computed the way hwloc 2's synthetic backend
//! does (`hwloc_synthetic_process_indexes`) so that it can be judged before hwloc sees it.
//!
//! Judging by hwloc's output alone cannot work: hwloc silently drops an interleaving it cannot
//! apply, and a valid interleaving that numbers the level in order (`indexes=1*2:2*2`) leaves
//! the same numbering as a dropped one. Worse, an interleaving naming a level below its own one
//! makes hwloc fail an assertion (`step` is 0) and abort the process, and one naming the PUs
//! makes it read uninitialised memory (dropped or applied, from one run to the next).
//! `the_interleaving_model_numbers_pus_as_hwloc_does` checks the model against hwloc 2.9.

use std::ffi::CString;
use std::mem::MaybeUninit;

use hwlocality_sys::{
    HWLOC_OBJ_GROUP, HWLOC_OBJ_MACHINE, HWLOC_OBJ_NUMANODE, HWLOC_OBJ_PU, hwloc_obj_attr_u,
    hwloc_obj_type_t,
};

/// One level of the description as the interleaving sees it.
pub(super) struct Level<'a> {
    /// The type as written (`pack`, `l2`), `None` for a level given by its arity alone or an
    /// attached object (`[numa]`), whose type hwloc chooses itself.
    pub(super) type_name: Option<&'a str>,
    /// Objects of this level in the whole machine.
    pub(super) objects: u64,
}

/// One loop of an interleaving: object `j` of the level gets digit `(j / step) % count`.
struct Loop {
    step: u64,
    count: u64,
}

/// The OS index hwloc gives each object of level `position` of `levels` (0 is the machine, then
/// the levels as written) for the interleaving `value`: `Ok(Some(indexes))` when hwloc applies
/// it, `Err(problem)` when hwloc would drop it, abort, give two objects one number, or act
/// unpredictably, and
/// `Ok(None)` for what this model does not cover (signed or huge numbers, groups, levels whose
/// type hwloc picks) — left for the caller to judge from hwloc's output.
pub(super) fn interleaving(
    value: &str,
    levels: &[Level<'_>],
    position: usize,
) -> Result<Option<Vec<u64>>, String> {
    let total = levels[position].objects;
    let loops = if value.starts_with(|c: char| c.is_ascii_digit()) {
        match numeric_loops(value)? {
            Some(loops) => loops,
            None => return Ok(None),
        }
    } else {
        match level_loops(value, levels, total)? {
            Some(loops) => loops,
            None => return Ok(None),
        }
    };
    indexes_from_loops(loops, total).map(Some)
}

/// `step*count:step*count…`, numbers read like `strtol(…, 0)` (`0x10`, `010`).
fn numeric_loops(value: &str) -> Result<Option<Vec<Loop>>, String> {
    let mut loops = Vec::new();
    for piece in value.split(':') {
        let Some((step, count)) = piece.split_once('*') else {
            return Err(format!("loop {piece:?} is not STEP*COUNT"));
        };
        let (step, count) = match (c_number(step), c_number(count)) {
            (CNumber::Invalid, _) | (_, CNumber::Invalid) => {
                return Err(format!("loop {piece:?} is not STEP*COUNT"));
            }
            (CNumber::Unmodeled, _) | (_, CNumber::Unmodeled) => return Ok(None),
            (CNumber::Value(step), CNumber::Value(count)) => (step, count),
        };
        if step == 0 || count == 0 {
            return Err(format!("loop {piece:?} has a zero step or count"));
        }
        loops.push(Loop { step, count });
    }
    Ok(Some(loops))
}

/// How C's `strtol(text, &end, 0)` reads all of `text` (`0x10`, `010`, `16`).
enum CNumber {
    /// A number within `u32` (hwloc keeps loop steps and counts as `unsigned`).
    Value(u64),
    /// Signed or beyond `u32`: hwloc casts it to `unsigned`, which this model does not follow.
    Unmodeled,
    /// Empty or not a number: hwloc drops the interleaving.
    Invalid,
}

fn c_number(text: &str) -> CNumber {
    if text.starts_with(['+', '-']) {
        return CNumber::Unmodeled;
    }
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None if text.len() > 1 && text.starts_with('0') => (&text[1..], 8),
        None => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return CNumber::Invalid;
    }
    match u64::from_str_radix(digits, radix) {
        Ok(n) if n <= u64::from(u32::MAX) => CNumber::Value(n),
        _ => CNumber::Unmodeled,
    }
}

/// `type:type…`: each names a level (not the last one) whose objects form one loop.
fn level_loops(value: &str, levels: &[Level<'_>], total: u64) -> Result<Option<Vec<Loop>>, String> {
    // hwloc's table of levels: each one's type and objects in the whole machine, the machine
    // first and the PUs last, with a NUMA level of one node inserted below the machine when the
    // description has none.
    let mut table = vec![(HWLOC_OBJ_MACHINE, 1)];
    for level in levels
        .get(1..levels.len().saturating_sub(1))
        .unwrap_or_default()
    {
        let Some((level_type, _)) = level.type_name.and_then(parse_type) else {
            return Ok(None);
        };
        table.push((level_type, level.objects));
    }
    if !table.iter().any(|&(t, _)| t == HWLOC_OBJ_NUMANODE) {
        table.insert(1, (HWLOC_OBJ_NUMANODE, 1));
    }
    let mut depths = Vec::new();
    for name in value.split(':') {
        let Some((loop_type, group_depth)) = parse_type(name) else {
            return Err(format!("{name:?} is not an object type"));
        };
        if loop_type == HWLOC_OBJ_GROUP || group_depth.is_some() {
            return Ok(None);
        }
        if loop_type == HWLOC_OBJ_PU {
            // hwloc looks among the levels with children, and the PUs' count of children is
            // not set yet when it does (uninitialised memory): it may drop the interleaving or
            // apply it, from one run to the next.
            return Err(format!(
                "{name:?} names the PUs, which hwloc may or may not take as a loop"
            ));
        }
        let Some(depth) = table.iter().position(|&(t, _)| t == loop_type) else {
            return Err(format!("{name:?} names no level of the description"));
        };
        if depths.iter().any(|&(d, _)| d == depth) {
            return Err(format!("{name:?} is named twice"));
        }
        depths.push((depth, name));
    }
    let mut loops = Vec::new();
    for &(depth, name) in &depths {
        let parent = depths
            .iter()
            .map(|&(d, _)| d)
            .filter(|&d| d < depth)
            .max()
            .unwrap_or(0);
        let step = total / table[depth].1;
        if step == 0 {
            // hwloc asserts here and aborts the whole process.
            return Err(format!("{name:?} names a level below this one"));
        }
        loops.push(Loop {
            step,
            count: table[depth].1 / table[parent].1,
        });
    }
    Ok(Some(loops))
}

/// hwloc's type name parser on `name` alone: the type, and a group's or cache's depth when the
/// name gives one (`group1`; `None` for other types or no depth).
fn parse_type(name: &str) -> Option<(hwloc_obj_type_t, Option<u32>)> {
    let name = CString::new(name).ok()?;
    let mut object_type: hwloc_obj_type_t = 0;
    let mut attributes = MaybeUninit::<hwloc_obj_attr_u>::zeroed();
    // SAFETY: `name` is a NUL-terminated string living across the call; `object_type` and
    // `attributes` are writable and `attrsize` is the size of the latter, which bounds what
    // hwloc writes (it fills the cache or group member only when the size allows).
    let status = unsafe {
        hwloc_type_sscanf(
            name.as_ptr(),
            &raw mut object_type,
            attributes.as_mut_ptr(),
            size_of::<hwloc_obj_attr_u>(),
        )
    };
    if status < 0 {
        return None;
    }
    let group_depth = (object_type == HWLOC_OBJ_GROUP).then(|| {
        // SAFETY: the union was zeroed and hwloc wrote the group member for a group type; every
        // bit pattern is a valid `c_uint`.
        unsafe { attributes.assume_init().group.depth }
    });
    Some((object_type, group_depth.filter(|&d| d != u32::MAX)))
}

unsafe extern "C" {
    // Part of hwloc's public API (hwloc.h) since 2.0; hwlocality links the library but does
    // not bind this function.
    fn hwloc_type_sscanf(
        string: *const std::ffi::c_char,
        typep: *mut hwloc_obj_type_t,
        attrp: *mut hwloc_obj_attr_u,
        attrsize: usize,
    ) -> std::ffi::c_int;
}

/// hwloc's numbering from the loops: loop `i` is digit `i` (the first the least significant);
/// when the loops cover fewer objects than the level, hwloc adds the missing loop as the most
/// significant one if its step of 1 fits.
fn indexes_from_loops(mut loops: Vec<Loop>, total: u64) -> Result<Vec<u64>, String> {
    let covered = loops
        .iter()
        .try_fold(1_u64, |product, l| product.checked_mul(l.count))
        .filter(|&product| product <= total)
        .ok_or_else(|| format!("its loops cover more than the level's {total} objects"))?;
    if covered != total {
        let smallest_step = loops
            .iter()
            .map(|l| l.step)
            .min()
            .unwrap_or(total)
            .min(total);
        if smallest_step != total / covered {
            return Err(format!(
                "its loops cover {covered} of the level's {total} objects"
            ));
        }
        loops.push(Loop {
            step: 1,
            count: total / covered,
        });
    }
    let mut indexes = vec![0_u64; usize::try_from(total).unwrap_or(usize::MAX)];
    let mut weight = 1;
    for l in &loops {
        for (j, index) in (0..).zip(indexes.iter_mut()) {
            *index += (j / l.step) % l.count * weight;
        }
        weight *= l.count;
    }
    let mut seen = vec![false; indexes.len()];
    for &index in &indexes {
        match seen.get_mut(usize::try_from(index).unwrap_or(usize::MAX)) {
            Some(slot) if !*slot => *slot = true,
            Some(_) => return Err(format!("it gives two objects number {index}")),
            None => {
                return Err(format!(
                    "it gives number {index}, beyond the {total} objects"
                ));
            }
        }
    }
    Ok(indexes)
}
