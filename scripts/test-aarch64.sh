#!/usr/bin/env bash
# Verifies parbench-atomics on aarch64 by emulation (issue 4).
#
#  1. Gets the tools (as root, via apt): Debian's rustc 1.96 with an arm64 std, the aarch64 cross
#     gcc/libc/binutils, and qemu-user. If they cannot be installed it prints "SKIPPED: <reason>"
#     and exits 0; every other failure exits non-zero.
#  2. Runs `cargo test -p parbench-atomics --target aarch64-unknown-linux-gnu` (unit tests and
#     doc-tests) twice: under `qemu-aarch64 -cpu max` (ARMv8.1+, LSE present) and `-cpu cortex-a57`
#     (ARMv8.0, no LSE: an LSE instruction would die with SIGILL). PARBENCH_EXPECT_LSE=1/0 tells the
#     tests which CPU they run on, so they assert `Backend::best()` and the Lse error for real.
#  3. Disassembles the debug and release test binaries and checks, per lock x backend function,
#     that LSE code uses LSE instructions and LL/SC code exclusive pairs
#     (scripts/aarch64/check-disassembly.sh), after checking that the checker rejects a tampered
#     disassembly.
#  4. Builds the runtime (parbench-kernels with the scheduler and every kernel) twice, with LSE
#     forced on and off (scripts/aarch64/build-lse.sh, the far-atomics study's two builds),
#     checks each binary's atomics with scripts/aarch64/check-runtime-atomics.sh (and that the
#     checker rejects the other build), and runs the kernels' backend tests on each: the LSE build
#     under -cpu max, the LL/SC build under -cpu cortex-a57 (where any LSE instruction would die).
#
# Binaries are linked statically (dynamically linked ones hang under qemu-user on the CI machine).
# Emulated timings mean nothing; nothing here measures time.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The caller's target dir, made absolute before the cd below so a relative one means what it meant
# where the script was started (as it would to cargo there).
target_root=${CARGO_TARGET_DIR:-$repo/target}
[[ $target_root == /* ]] || target_root=$PWD/$target_root
cd "$repo"

target=aarch64-unknown-linux-gnu
packages=(rustc-web "libstd-rust-web-dev:arm64" gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    binutils-aarch64-linux-gnu qemu-user-static)
rustc_bin=${AARCH64_RUSTC:-/usr/bin/rustc}
rustdoc_bin=${AARCH64_RUSTDOC:-/usr/bin/rustdoc}

skip() {
    echo "SKIPPED: $*"
    exit 0
}

qemu_bin() {
    command -v qemu-aarch64-static || command -v qemu-aarch64 || true
}

tools_present() {
    [[ -x $rustc_bin && -x $rustdoc_bin ]] &&
        [[ -d $("$rustc_bin" --print sysroot)/lib/rustlib/$target/lib ]] &&
        command -v aarch64-linux-gnu-gcc >/dev/null &&
        command -v aarch64-linux-gnu-objdump >/dev/null &&
        [[ -n $(qemu_bin) ]]
}

install_tools() {
    [[ $(id -u) -eq 0 ]] || skip "aarch64 tools missing and not root, cannot apt-get install ${packages[*]}"
    command -v apt-get >/dev/null || skip "aarch64 tools missing and no apt-get to install ${packages[*]}"
    echo "== installing ${packages[*]}"
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
    dpkg --add-architecture arm64 || skip "dpkg --add-architecture arm64 failed"
    "${apt[@]}" update || skip "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "${packages[@]}" ||
        skip "apt-get install ${packages[*]} failed"
    tools_present || skip "packages installed but the aarch64 rustc/std, cross gcc, objdump or qemu is still missing"
}

tools_present || install_tools
qemu=$(qemu_bin)

echo "== toolchain: $(cargo --version) driving $("$rustc_bin" --version), runner $qemu"

export RUSTC=$rustc_bin
export RUSTDOC=$rustdoc_bin
# A separate target dir, aarch64/ under the caller's CARGO_TARGET_DIR (default target/): a different
# compiler would otherwise invalidate the host build.
export CARGO_TARGET_DIR=$target_root/aarch64
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export RUSTFLAGS="-C target-feature=+crt-static"
export RUSTDOCFLAGS="-C target-feature=+crt-static"
# The release builds here (the atomics test binary, the two whole-runtime builds) are read by the
# instruction checkers, which go by symbol names only: no debug info, which the workspace's release
# profile otherwise adds and which made up much of these builds' time.
export CARGO_PROFILE_RELEASE_DEBUG=0

run_tests_on() {
    local cpu=$1 expect_lse=$2
    echo "== cargo test on qemu -cpu $cpu (PARBENCH_EXPECT_LSE=$expect_lse)"
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="env PARBENCH_EXPECT_LSE=$expect_lse $qemu -cpu $cpu" \
        cargo test -p parbench-atomics --target "$target"
}

run_tests_on max 1
run_tests_on cortex-a57 0

# Path of the unit-test executable cargo builds for the given profile flags.
test_binary() {
    cargo test -p parbench-atomics --target "$target" --lib --no-run --message-format=json "$@" |
        grep -o '"executable":"[^"]*"' | tail -n 1 | sed 's/^"executable":"//; s/"$//'
}

checker=$repo/scripts/aarch64/check-disassembly.sh
debug_binary=$(test_binary)
release_binary=$(test_binary --release)
[[ -x $debug_binary && -x $release_binary ]] || {
    echo "could not find the aarch64 test binaries (got '$debug_binary', '$release_binary')" >&2
    exit 1
}

# The checker must reject code that uses the wrong instructions: swap SWPA for LDAXR in its input.
tampered_objdump=$(mktemp)
trap 'rm -f "$tampered_objdump"' EXIT
printf '#!/bin/sh\naarch64-linux-gnu-objdump "$@" | sed "s/\\tswpa\\t/\\tldaxr\\t/"\n' >"$tampered_objdump"
chmod +x "$tampered_objdump"
if "$checker" "$debug_binary" "$tampered_objdump" >/dev/null; then
    echo "disassembly checker accepted a tampered disassembly (swpa -> ldaxr)" >&2
    exit 1
fi
echo "== disassembly checker rejects a tampered disassembly, as it must"

echo "== instruction counts, debug build ($debug_binary)"
"$checker" "$debug_binary"
echo "== instruction counts, release build ($release_binary)"
"$checker" "$release_binary"
runtime_checker=$repo/scripts/aarch64/check-runtime-atomics.sh
declare -A runtime_binary
for mode in off on; do
    echo "== whole-runtime build with LSE forced $mode"
    binaries=$(scripts/aarch64/build-lse.sh "$mode" --release)
    runtime_binary[$mode]=$(grep '/parbench_kernels-' <<<"$binaries" | head -n 1)
    backends_test=$(grep '/atomics_backends-' <<<"$binaries" | head -n 1)
    [[ -x ${runtime_binary[$mode]} && -x $backends_test ]] || {
        echo "build-lse.sh $mode did not produce the kernels test binaries (got: $binaries)" >&2
        exit 1
    }
    "$runtime_checker" "${runtime_binary[$mode]}" "$mode"
    if [[ $mode == on ]]; then cpu=max expect_lse=1; else cpu=cortex-a57 expect_lse=0; fi
    echo "== kernels' atomics backends, LSE-$mode build, on qemu -cpu $cpu"
    env PARBENCH_EXPECT_LSE=$expect_lse "$qemu" -cpu "$cpu" "$backends_test"
done
if "$runtime_checker" "${runtime_binary[on]}" off >/dev/null; then
    echo "runtime atomics checker accepted the LSE build as an LL/SC build" >&2
    exit 1
fi
echo "== runtime atomics checker rejects the LSE build as LL/SC, as it must"
echo "aarch64 verification passed (qemu -cpu max and cortex-a57; emulated timings mean nothing)"
