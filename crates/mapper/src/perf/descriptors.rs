//! Room for counters under the descriptor limit (`RLIMIT_NOFILE`, `ulimit -n`).
//!
//! Every counter is a file descriptor, and the counters of a profile are open at once: one per
//! event on each profiled thread, and one per event for a command's totals. With a PMU's dozen
//! events the usual soft limit of 1024 runs out near 90 threads, while the hard limit is often far
//! higher. Before opening them, [`make_room_for`] raises the soft limit to the hard one when the
//! counters would not fit ([`raise_descriptor_limit`], which also keeps the commands started
//! afterwards at the soft limit they would have had), and says so with a typed error when even
//! the hard limit is too low — rather than failing part-way with `EMFILE`, or marking every event
//! unavailable because the probe that opens each one could not.
//!
//! The count is conservative: the limit bounds descriptor *numbers*, and descriptors open above
//! it (inherited from a shell, say) take none of the numbers below it, but are counted.

use super::ProfileError;
use crate::corun::launch::raise_descriptor_limit;

/// This process's soft and hard limits on open descriptors (`u64::MAX` when unlimited or
/// unknown).
pub(super) fn limits() -> (u64, u64) {
    let mut limit = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes into a valid rlimit we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return (u64::MAX, u64::MAX);
    }
    let value = |v| {
        if v == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            v
        }
    };
    (value(limit.rlim_cur), value(limit.rlim_max))
}

/// Descriptors this process has open now (one more while counting them); `None` when they cannot
/// be counted, e.g. because counting needs a descriptor and none is free.
fn open_now() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(entries.count() as u64)
}

/// Makes sure `more` descriptors can be opened beside those open now, raising the soft limit to
/// the hard one when they cannot; returns how many are open now.
///
/// # Errors
/// [`ProfileError::DescriptorLimit`] when they do not fit under the hard limit either.
pub(super) fn make_room_for(more: u64) -> Result<u64, ProfileError> {
    let counted = open_now();
    let fits = |open: u64, limit: u64| open.saturating_add(more) <= limit;
    if let Some(open) = counted.filter(|&open| fits(open, limits().0)) {
        return Ok(open);
    }
    raise_descriptor_limit();
    let (limit, hard) = limits();
    // Uncountable even now: take every number under the old limit as taken.
    let open = open_now().or(counted).unwrap_or(limit);
    if !fits(open, limit) {
        return Err(ProfileError::DescriptorLimit {
            needed: open.saturating_add(more),
            limit,
            hard,
            open,
        });
    }
    Ok(open)
}
