#!/usr/bin/env bash
# Runs every check and test of parbench: formatting, clippy, the workspace's unit, integration and
# doc tests, the loom model of the scheduler's completion protocol, ThreadSanitizer (test-tsan.sh),
# the release-mode oversubscribed stress test, the aarch64 emulation tests of
# the atomics crate, and a compile of all benchmarks. Installs what it needs (see deps.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

step() { printf '\n== %s\n' "$*"; }
started=$(date +%s)

step "dependencies"
scripts/deps.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test --workspace (unit, integration and doc tests)"
mkdir -p target
cargo test --workspace --locked 2>&1 | tee target/test-output.txt

step "loom model of the scheduler's completion protocol"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p parbench-scheduler --release --lib --locked loom_

step "ThreadSanitizer over the scheduler, kernels and atomics test-suites (fails on any report)"
scripts/test-tsan.sh

step "oversubscribed stress of the scheduler (release, 10 000 rounds, pools of 64 and 256 threads)"
PARBENCH_STRESS_ROUNDS=10000 cargo test -p parbench-scheduler --release --locked --test stress \
    -- --nocapture 2>&1 | tee -a target/test-output.txt

step "aarch64 emulation tests and instruction check of parbench-atomics"
scripts/test-aarch64.sh

step "publishable crates: cargo publish --dry-run (parbench-scheduler, parbench-atomics); cargo doc of the workspace"
# Packages each crate as crates.io would and builds the package on its own (no path dependencies,
# metadata complete); about 10 s. --allow-dirty: what is checked is the package, not git's state.
for crate in parbench-scheduler parbench-atomics; do
    cargo publish --dry-run --allow-dirty --locked -p "$crate"
done
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --workspace

step "benchmarks compile"
cargo bench --workspace --no-run --locked

printf '\n== all checks passed in %ss\n' "$(( $(date +%s) - started ))"
# One closing line over every `cargo test` result above (unit, integration and doc tests).
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed\n", passed, failed }' \
    target/test-output.txt
