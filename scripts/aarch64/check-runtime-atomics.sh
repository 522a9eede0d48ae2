#!/usr/bin/env bash
# Instruction check of a whole-runtime aarch64 build (scripts/aarch64/build-lse.sh): counts, in every
# function of parbench-scheduler and parbench-kernels (not parbench-atomics' fixed-backend entry
# points), the LSE instructions, the exclusive loads/stores of LL/SC loops, and calls to Rust's
# outline-atomics helpers (__aarch64_cas*, __aarch64_ldadd* …), and checks them against the mode:
#   on       LSE instructions > 0, exclusives = 0, outline calls = 0
#   off      LSE instructions = 0, exclusives > 0, outline calls = 0
#   default  outline calls > 0 (the instruction family is chosen at run time)
# Usage: scripts/aarch64/check-runtime-atomics.sh BINARY on|off|default [OBJDUMP]
# Prints the counts; exits 1 when they contradict the mode.
set -euo pipefail

binary=${1:?usage: $0 BINARY on|off|default [OBJDUMP]}
mode=${2:?usage: $0 BINARY on|off|default [OBJDUMP]}
objdump=${3:-aarch64-linux-gnu-objdump}

"$objdump" -d --no-show-raw-insn -C "$binary" | awk -v mode="$mode" '
BEGIN {
    exclusive = "^(ldxr|ldaxr|stxr|stlxr|ldxp|ldaxp|stxp|stlxp)(b|h)?$"
    lse_op = "^(cas|casp|swp|ld(add|clr|eor|set|smax|smin|umax|umin)|st(add|clr|eor|set|smax|smin|umax|umin))(a|l|al)?(b|h)?$"
}
/^[0-9a-f]+ <.*>:$/ {
    ours = ($0 ~ /parbench_(scheduler|kernels)/) && ($0 !~ /parbench_atomics_(lse|llsc|portable)_/)
    if (ours) functions++
    next
}
ours && /^ +[0-9a-f]+:\t/ {
    split($0, field, "\t")
    mnemonic = field[2]; sub(/ .*/, "", mnemonic)
    if (mnemonic ~ exclusive) excl++
    if (mnemonic ~ lse_op) lse++
    if (mnemonic == "bl" && field[3] ~ /__aarch64_(cas|swp|ldadd|ldclr|ldeor|ldset)/) outline++
}
END {
    printf "runtime atomics (%s build): %d functions of parbench-scheduler/kernels: %d LSE instructions, %d exclusive loads/stores, %d outline-atomics calls\n", mode, functions, lse, excl, outline
    bad = ""
    if (functions == 0) bad = "no parbench-scheduler/kernels functions found"
    else if (mode == "on" && !(lse > 0 && excl == 0 && outline == 0)) bad = "expected LSE only"
    else if (mode == "off" && !(lse == 0 && excl > 0 && outline == 0)) bad = "expected LL/SC only"
    else if (mode == "default" && !(outline > 0)) bad = "expected outline-atomics calls"
    else if (mode != "on" && mode != "off" && mode != "default") bad = "unknown mode " mode
    if (bad != "") { print "runtime atomics check FAILED: " bad; exit 1 }
    print "runtime atomics check passed"
}'
