#!/usr/bin/env bash
# Runs every check and test of parbench: formatting, clippy, the workspace's unit, integration and
# doc tests, the loom models of the scheduler's completion, split-range, away-hand-off and exit protocols,
# ThreadSanitizer (test-tsan.sh), the release-mode stress tests (oversubscribed pools, pools
# calling into each other), the aarch64 emulation tests of the atomics crate, and a compile of all
# benchmarks. Installs what it needs (see deps.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The caller's target dir (default target/), made absolute before the cd below so a relative one
# means what it meant where the script was started, and exported so that cargo here and
# test-tsan.sh and test-aarch64.sh below all build under it.
target_root=${CARGO_TARGET_DIR:-$repo/target}
[[ $target_root == /* ]] || target_root=$PWD/$target_root
export CARGO_TARGET_DIR=$target_root
cd "$repo"

started=$(date +%s)
# Each step's header carries the seconds since the start, so a slow step shows in the log.
step() { printf '\n== [%ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }

step "dependencies"
scripts/deps.sh

step "disk space"
# A run from a fresh clone leaves about 4.8 GiB in the target dir (28 Nov: debug 2.8,
# ThreadSanitizer 1.1, release 0.4, aarch64 0.35, loom 0.15; 5.9 GiB on 25 Nov), and more is in
# use while it builds. A full disk fails late, in whichever build comes next, with compiler errors
# that do not say why. Checked here instead, counting what the target dir already holds.
need_gib=7
mkdir -p "$target_root"
avail_kib=$(df -Pk "$target_root" | awk 'NR == 2 { print $4 }')
held_kib=$(du -sk "$target_root" | cut -f1)
if (( avail_kib + held_kib < need_gib * 1024 * 1024 )); then
    printf 'error: the full test run needs about %s GiB for %s; %s GiB are free on %s (it holds %s GiB)\n' \
        "$need_gib" "$target_root" "$(( avail_kib / 1024 / 1024 ))" \
        "$(df -P "$target_root" | awk 'NR == 2 { print $6 }')" "$(( held_kib / 1024 / 1024 ))" >&2
    exit 1
fi
echo "$(( (avail_kib + held_kib) / 1024 / 1024 )) GiB available for $target_root (about $need_gib needed)"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test --workspace (unit, integration and doc tests)"
# --no-fail-fast: one failing test binary must not hide the others' results (cargo stops at the
# first by default); the step still fails at its end.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$target_root/test-output.txt"

step "loom models of the scheduler's completion, split-range, away-hand-off and exit protocols"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$target_root/loom \
    cargo test -p parbench-scheduler --release --lib --locked loom_

step "ThreadSanitizer over the scheduler, kernels and atomics test-suites (fails on any report)"
scripts/test-tsan.sh

# Both tests of the file at once: 10 000 rounds on pools of 64, 256 and 2 threads, and 5 000
# (half) on two or three pools calling into each other.
step "stress of the scheduler (release: oversubscribed pools, pools calling into each other)"
PARBENCH_STRESS_ROUNDS=10000 cargo test -p parbench-scheduler --release --locked --test stress \
    -- --nocapture 2>&1 | tee -a "$target_root/test-output.txt"

step "aarch64 emulation tests and instruction check of parbench-atomics"
scripts/test-aarch64.sh

step "publishable crates: cargo publish --dry-run (parbench-scheduler, parbench-atomics); cargo doc of the workspace (public and private items)"
# Packages each crate as crates.io would and builds the package on its own (no path dependencies,
# metadata complete); about 10 s. --allow-dirty: what is checked is the package, not git's state.
for crate in parbench-scheduler parbench-atomics; do
    cargo publish --dry-run --allow-dirty --locked -p "$crate"
done
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --workspace
# The internal docs too (a few seconds): their links must resolve as well.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --workspace --document-private-items

step "benchmarks compile (test profile: the same code as \`cargo bench\`, without its optimized build)"
cargo test --workspace --benches --no-run --locked

printf '\n== all checks passed in %ss\n' "$(( $(date +%s) - started ))"
# One closing line over every `cargo test` result above (unit, integration and doc tests).
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed\n", passed, failed }' \
    "$target_root/test-output.txt"
