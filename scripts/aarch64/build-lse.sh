#!/usr/bin/env bash
# Builds parbench's runtime crates for aarch64 with LSE forced on or off, the far-atomics study's two
# builds of the same program (GCC -march=armv8.2-a vs -mno-outline-atomics), so that *every* atomic
# of the scheduler, the kernels and their `std` atomics uses one instruction family, not only
# parbench-atomics' fixed backends.
#
# Usage: scripts/aarch64/build-lse.sh on|off|default [cargo test options …]
#   on       RUSTFLAGS -C target-feature=+lse: atomics inline as LSE (CAS, SWP, LDADD …); the
#            binaries need an ARMv8.1+ CPU.
#   off      -C target-feature=-lse,-outline-atomics: atomics inline as LDAXR/STLXR loops (ARMv8.0).
#   default  Rust's default for aarch64 Linux: outline atomics (calls to __aarch64_* helpers that
#            pick LSE or LL/SC at run time) — the build the study could not interpret.
# It builds (`cargo test --no-run`) the unit-test binary of parbench-kernels, which links every
# crate whose atomics run in a sweep (atomics, scheduler, kernels, rayon, std's inlined atomics),
# and its `atomics_backends` test, and prints their paths, one per line, on stdout. parbench-mapper and parbench-cli are not built: hwloc is not
# installed for arm64 (and its static link needs libudev). The environment (RUSTC, linker, target
# dir) is the one scripts/test-aarch64.sh sets up.
set -euo pipefail

mode=${1:?usage: $0 on|off|default [cargo options]}
shift
case $mode in
on) features="+crt-static,+lse" ;;
off) features="+crt-static,-lse,-outline-atomics" ;;
default) features="+crt-static" ;;
*)
    echo "usage: $0 on|off|default" >&2
    exit 2
    ;;
esac

target=aarch64-unknown-linux-gnu
# A target dir per mode: different RUSTFLAGS would otherwise rebuild everything each time.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/aarch64}-lse-$mode
export RUSTFLAGS="-C target-feature=$features"
cargo test -p parbench-kernels --lib --test atomics_backends --target "$target" \
    --no-run --message-format=json "$@" |
    grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | sort -u
