#!/usr/bin/env bash
# Runs the test-suites of parbench-scheduler, parbench-kernels and parbench-atomics (unit and
# integration tests; doc-tests are not run) under ThreadSanitizer, and fails on any report.
#
#  1. Gets the tools (as root, via apt): Debian's rustc 1.96 (`rustc-web`) with its library sources
#     (`rust-web-src`, to rebuild std with TSan instrumentation), LLVM 19's TSan runtime
#     (`libclang-rt-19-dev`) and `llvm-symbolizer` (`llvm-19`, so reports have file:line). If they
#     cannot be installed it prints "SKIPPED: <reason>" and exits 0.
#  2. rustc links the TSan runtime from `<sysroot>/lib/rustlib/<target>/lib/librustc-stable_rt.tsan.a`,
#     which Debian does not ship; LLVM 19's `libclang_rt.tsan-x86_64.a` is that runtime. A private
#     sysroot in the target dir (links to /usr/lib/rustlib plus that one file) provides it without
#     touching the system.
#
# Builds under $CARGO_TARGET_DIR/tsan (default target/tsan), the sysroot in
# $CARGO_TARGET_DIR/tsan-sysroot.
#  3. A canary: a deliberate data race between two pool workers (tests/tsan_canary.rs of the
#     scheduler, an ignored test run on its own here) must be reported with file:line, or the step
#     fails — so a sanitizer that silently stopped watching cannot pass the suite below.
#  4. `cargo test -Zbuild-std` in debug mode (at opt-level 1) with `-Zsanitizer=thread` and
#     `--cfg crossbeam_sanitize_thread` (crossbeam then replaces the fences TSan cannot see by
#     equivalent release stores). TSAN_OPTIONS=halt_on_error=1: the first report fails the run.
#     scripts/tsan/suppressions.txt lists the only suppressed (third-party, proven benign) races.
#
# The stress test runs a reduced number of rounds here (PARBENCH_STRESS_ROUNDS below); the full
# 10 000-round run is the release-mode step of scripts/test.sh.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The caller's target dir, made absolute before the cd below so a relative one means what it meant
# where the script was started (as it would to cargo there).
target_root=${CARGO_TARGET_DIR:-$repo/target}
[[ $target_root == /* ]] || target_root=$PWD/$target_root
cd "$repo"

target=x86_64-unknown-linux-gnu
packages=(rustc-web rust-web-src libclang-rt-19-dev llvm-19)
rustc_bin=${TSAN_RUSTC:-/usr/bin/rustc}
tsan_runtime=/usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.tsan-x86_64.a
symbolizer=/usr/lib/llvm-19/bin/llvm-symbolizer

skip() {
    echo "SKIPPED: $*"
    exit 0
}

[[ $(uname -s) == Linux && $(uname -m) == x86_64 ]] || skip "ThreadSanitizer step is set up for x86-64 Linux only (this is $(uname -sm))"

tools_present() {
    [[ -x $rustc_bin ]] &&
        [[ -d $("$rustc_bin" --print sysroot)/lib/rustlib/src/rust/library/std ]] &&
        [[ -f $tsan_runtime && -x $symbolizer ]]
}

install_tools() {
    [[ $(id -u) -eq 0 ]] || skip "TSan tools missing and not root, cannot apt-get install ${packages[*]}"
    command -v apt-get >/dev/null || skip "TSan tools missing and no apt-get to install ${packages[*]}"
    echo "== installing ${packages[*]}"
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
    "${apt[@]}" update || skip "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "${packages[@]}" ||
        skip "apt-get install ${packages[*]} failed"
    tools_present || skip "packages installed but rustc, its library sources, the TSan runtime or llvm-symbolizer is still missing"
}

tools_present || install_tools

# The private sysroot: every entry of the real one, plus the TSan runtime under rustc's name.
real_sysroot=$("$rustc_bin" --print sysroot)
sysroot=$target_root/tsan-sysroot
rm -rf "$sysroot"
mkdir -p "$sysroot/lib/rustlib/$target/lib"
for entry in "$real_sysroot"/lib/rustlib/*; do
    [[ $(basename "$entry") == "$target" ]] || ln -s "$entry" "$sysroot/lib/rustlib/"
done
for entry in "$real_sysroot/lib/rustlib/$target"/*; do
    [[ $(basename "$entry") == lib ]] || ln -s "$entry" "$sysroot/lib/rustlib/$target/"
done
ln -s "$real_sysroot/lib/rustlib/$target/lib"/* "$sysroot/lib/rustlib/$target/lib/"
ln -sf "$tsan_runtime" "$sysroot/lib/rustlib/$target/lib/librustc-stable_rt.tsan.a"

echo "== toolchain: $(cargo --version) driving $("$rustc_bin" --version), sysroot $sysroot"

export RUSTC=$rustc_bin
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=thread --cfg crossbeam_sanitize_thread --sysroot $sysroot"
# A separate target dir, tsan/ under the caller's (default target/): a different compiler and std
# would otherwise invalidate the host build.
export CARGO_TARGET_DIR=$target_root/tsan
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$repo/scripts/tsan/suppressions.txt external_symbolizer_path=$symbolizer"
export PARBENCH_STRESS_ROUNDS=${PARBENCH_STRESS_ROUNDS:-60}
# Optimization level 1 (debug assertions stay on): the instrumented tests then run about 4×
# faster, which more than pays for the longer build (on the 25 Nov VM the step took 485 s against
# 688 s at level 0; the sorts of `tests/slices.rs` alone 39 against 228 s). TSan's own advice is
# -O1 or higher.
export CARGO_PROFILE_DEV_OPT_LEVEL=1 CARGO_PROFILE_TEST_OPT_LEVEL=1
# Line tables only: a report needs file:line (the canary check below insists on it), not variable
# and type information, whose generation and linking made up much of the step's build time.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only CARGO_PROFILE_TEST_DEBUG=line-tables-only

tsan_test() {
    cargo test -Zbuild-std --target "$target" --locked "$@"
}
suites=(-p parbench-scheduler -p parbench-kernels -p parbench-atomics)

# One build of every test binary (the canary's included), so the build runs in parallel.
tsan_test "${suites[@]}" --tests --no-run

# The canary first: a deliberate race between two workers of a pool
# (crates/scheduler/tests/tsan_canary.rs). TSan must report it, or this step would pass whatever
# the code did.
canary_log=$(mktemp)
trap 'rm -f "$canary_log"' EXIT
if tsan_test -p parbench-scheduler --test tsan_canary -- --ignored >"$canary_log" 2>&1; then
    cat "$canary_log"
    echo "ThreadSanitizer did not report the canary's deliberate data race: it is not watching" >&2
    exit 1
fi
if ! grep -q 'WARNING: ThreadSanitizer: data race' "$canary_log" ||
    ! grep -q 'tsan_canary.rs:[0-9]' "$canary_log"; then
    cat "$canary_log"
    echo "the canary failed, but not with a ThreadSanitizer data-race report naming tsan_canary.rs" >&2
    exit 1
fi
echo "== ThreadSanitizer reports the canary's deliberate data race (with file:line), as it must"

tsan_test "${suites[@]}" --tests
echo "== ThreadSanitizer: no reports"
