//! [`SchedulerSpec`]: an executor kind plus, for the kinds that take one, its chunk or grain
//! (`dynamic:64`, OpenMP's `schedule(dynamic, 64)`).

use std::fmt;
use std::num::NonZeroUsize;
use std::str::FromStr;

use super::{
    Executor, ExecutorError, ExecutorKind, PinPolicy, RayonExecutor, SchedulerExecutor,
    SeqExecutor, SpawnExecutor, check_thread_count,
};

/// A scheduler to run: an [`ExecutorKind`] and, for `dynamic`, `guided`, `simple` and
/// `tree-fixed-grain`, the chunk or grain (written `name:N`).
///
/// Without `:N` those four use 1, their runtimes' default (OpenMP's `schedule(dynamic)`, TBB's
/// `blocked_range` grainsize), so `dynamic` and `dynamic:1` are the same scheduler. What `N` is:
///
/// * `dynamic:N` — iterations per claim from the shared counter (`schedule(dynamic, N)`);
/// * `guided:N` — the smallest claim (`schedule(guided, N)`);
/// * `simple:N` — halving stops at N iterations (TBB's grainsize with `simple_partitioner`);
/// * `tree-fixed-grain:N` — the tree ablation's fixed grain.
///
/// The other kinds take no `:N`.
///
/// ```
/// use parbench_kernels::{ExecutorKind, SchedulerSpec};
///
/// let spec: SchedulerSpec = "dynamic:64".parse()?;
/// assert_eq!((spec.kind(), spec.grain()), (ExecutorKind::Dynamic, 64));
/// assert_eq!(spec.to_string(), "dynamic:64");
/// // The default grain is not written out, so labels stay the plain names.
/// assert_eq!("guided:1".parse::<SchedulerSpec>()?.to_string(), "guided");
/// assert_eq!(SchedulerSpec::from(ExecutorKind::Tree).to_string(), "tree");
/// assert!("tree:8".parse::<SchedulerSpec>().is_err());
/// assert!("dynamic:0".parse::<SchedulerSpec>().is_err());
/// # Ok::<(), parbench_kernels::ExecutorError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchedulerSpec {
    kind: ExecutorKind,
    grain: NonZeroUsize,
}

impl SchedulerSpec {
    /// The chunk or grain used when none is given.
    pub const DEFAULT_GRAIN: NonZeroUsize = NonZeroUsize::MIN;

    /// `kind` with chunk or grain `grain`.
    ///
    /// # Errors
    /// [`ExecutorError::BadGrain`] if `kind` takes no grain (and `grain` is not the default) or
    /// `grain` is 0.
    pub fn with_grain(kind: ExecutorKind, grain: usize) -> Result<SchedulerSpec, ExecutorError> {
        let bad = |reason: String| ExecutorError::BadGrain {
            spec: format!("{kind}:{grain}"),
            reason,
        };
        let grain = NonZeroUsize::new(grain)
            .ok_or_else(|| bad("the chunk or grain must be at least 1".to_owned()))?;
        if grain != Self::DEFAULT_GRAIN && !kind.takes_grain() {
            return Err(bad(format!(
                "`{kind}` takes no chunk or grain; `:N` applies to {}",
                grained_kinds()
            )));
        }
        Ok(SchedulerSpec { kind, grain })
    }

    /// The executor kind.
    pub fn kind(self) -> ExecutorKind {
        self.kind
    }

    /// The chunk or grain (1 for the kinds that take none).
    pub fn grain(self) -> usize {
        self.grain.get()
    }

    /// Builds the executor with `threads` threads (its own pool, if it has one) and this chunk or
    /// grain; [`ExecutorKind::build`] is this with the default grain.
    ///
    /// # Errors
    /// As [`ExecutorKind::build`].
    pub fn build(self, threads: usize, pin: PinPolicy) -> Result<Box<dyn Executor>, ExecutorError> {
        if threads == 0 {
            return Err(ExecutorError::ZeroThreads);
        }
        if self.kind != ExecutorKind::Seq {
            check_thread_count(threads)?;
        }
        Ok(match self.kind {
            ExecutorKind::Seq => Box::new(SeqExecutor::new()),
            ExecutorKind::Spawn => Box::new(SpawnExecutor::new(threads).with_pinning(pin)),
            ExecutorKind::Rayon => Box::new(RayonExecutor::new(threads, pin)?),
            ExecutorKind::Tree
            | ExecutorKind::TreeNoTimespan
            | ExecutorKind::TreeFixedGrain
            | ExecutorKind::TreeNestedHalves
            | ExecutorKind::Static
            | ExecutorKind::Dynamic
            | ExecutorKind::Guided
            | ExecutorKind::Simple => Box::new(SchedulerExecutor::with_grain(
                self.kind,
                threads,
                pin,
                self.grain(),
            )?),
        })
    }
}

/// The kinds that take `:N`, for messages.
fn grained_kinds() -> String {
    ExecutorKind::ALL
        .into_iter()
        .filter(|kind| kind.takes_grain())
        .map(ExecutorKind::name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl From<ExecutorKind> for SchedulerSpec {
    fn from(kind: ExecutorKind) -> SchedulerSpec {
        SchedulerSpec {
            kind,
            grain: Self::DEFAULT_GRAIN,
        }
    }
}

impl fmt::Display for SchedulerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if self.grain != Self::DEFAULT_GRAIN {
            write!(f, ":{}", self.grain)?;
        }
        Ok(())
    }
}

impl FromStr for SchedulerSpec {
    type Err = ExecutorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some((name, grain)) = s.split_once(':') else {
            return Ok(s.parse::<ExecutorKind>()?.into());
        };
        let kind: ExecutorKind = name.parse()?;
        let grain = grain
            .parse::<usize>()
            .map_err(|_| ExecutorError::BadGrain {
                spec: s.to_owned(),
                reason: format!("`{grain}` is not a chunk or grain (a positive integer)"),
            })?;
        SchedulerSpec::with_grain(kind, grain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_default_grains_are_not_written() {
        for kind in ExecutorKind::ALL {
            let spec = SchedulerSpec::from(kind);
            assert_eq!(spec.to_string(), kind.name());
            assert_eq!(kind.name().parse::<SchedulerSpec>().unwrap(), spec);
            assert_eq!(format!("{kind}:1").parse::<SchedulerSpec>().unwrap(), spec);
            if kind.takes_grain() {
                let spec: SchedulerSpec = format!("{kind}:16").parse().unwrap();
                assert_eq!((spec.kind(), spec.grain()), (kind, 16));
                assert_eq!(spec.to_string().parse::<SchedulerSpec>().unwrap(), spec);
            }
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let message = |s: &str| s.parse::<SchedulerSpec>().unwrap_err().to_string();
        assert!(message("tree:8").contains("`tree` takes no chunk or grain"));
        assert!(message("tree:8").contains("dynamic, guided, simple"));
        assert!(message("dynamic:0").contains("at least 1"));
        assert!(message("dynamic:x").contains("`x` is not a chunk or grain"));
        assert!(message("dynamic:").contains("is not a chunk or grain"));
        assert!(message("dynamo:4").contains("unknown scheduler `dynamo`"));
    }

    #[test]
    fn the_grain_reaches_the_strategy() {
        let exec = "simple:8"
            .parse::<SchedulerSpec>()
            .unwrap()
            .build(2, PinPolicy::None);
        let exec = exec.unwrap();
        let pieces = std::sync::Mutex::new(Vec::new());
        exec.for_chunks(0..64, &|r| pieces.lock().unwrap().push(r.len()));
        let pieces = pieces.into_inner().unwrap();
        // Halving 64 stops at 8: eight pieces of 8, whichever thread ran them.
        assert_eq!((pieces.len(), pieces.iter().sum::<usize>()), (8, 64));
        assert!(pieces.iter().all(|&len| len == 8), "{pieces:?}");
        assert_eq!(exec.kind(), ExecutorKind::Simple);
    }
}
