#!/usr/bin/env bash
# Instruction check for parbench-atomics (issue 4; the study's objdump counts, listings 3.3/3.4).
#
# Usage: scripts/aarch64/check-disassembly.sh BINARY [OBJDUMP]
#
# Disassembles an aarch64 binary that links parbench-atomics and, for every entry point
# `parbench_atomics_{lse,llsc}_<operation>` (one per lock operation × backend), counts the atomic
# instructions and checks:
#   - LSE functions contain the LSE instruction they are named for (swpa, casa, casal, ldadda, ldaddal, lduminal) or
#     stlr for unlocks, and no exclusive load/store (ldxr, ldaxr, stxr, stlxr);
#   - LL/SC functions contain ldaxr + stxr (stlxr for the counter), clrex where a compare can fail,
#     stlr for unlocks, and no LSE instruction at all;
#   - all 22 functions are present.
# Prints one row of counts per function; exits 1 on any violation.
set -euo pipefail

binary=${1:?usage: $0 BINARY [OBJDUMP]}
objdump=${2:-aarch64-linux-gnu-objdump}

"$objdump" -d --no-show-raw-insn "$binary" | awk '
BEGIN {
    # What each operation must contain, per backend (space-separated mnemonics, each >= 1).
    need["lse", "tas_lock"] = "swpa";            need["llsc", "tas_lock"] = "ldaxr stxr"
    need["lse", "tas_try_lock"] = "swpa";        need["llsc", "tas_try_lock"] = "ldaxr stxr"
    need["lse", "ttas_lock"] = "casa";           need["llsc", "ttas_lock"] = "ldaxr stxr clrex"
    need["lse", "ttas_try_lock"] = "casa";       need["llsc", "ttas_try_lock"] = "ldaxr stxr clrex"
    need["lse", "word_unlock"] = "stlr";         need["llsc", "word_unlock"] = "stlr"
    need["lse", "ticket_lock"] = "ldadda";       need["llsc", "ticket_lock"] = "ldaxr stxr"
    need["lse", "ticket_try_lock"] = "casa";     need["llsc", "ticket_try_lock"] = "ldaxr stxr clrex"
    need["lse", "ticket_unlock"] = "stlr";       need["llsc", "ticket_unlock"] = "stlr"
    need["lse", "counter_fetch_add"] = "ldaddal"; need["llsc", "counter_fetch_add"] = "ldaxr stlxr"
    need["lse", "word_compare_exchange"] = "casal"; need["llsc", "word_compare_exchange"] = "ldaxr stlxr clrex"
    need["lse", "word_fetch_min"] = "lduminal"; need["llsc", "word_fetch_min"] = "ldaxr stlxr"
    shown = "swpa casa casal ldadda ldaddal lduminal stlr ldaxr stxr stlxr clrex"
    ncols = split(shown, cols, " ")
    exclusive = "^(ldxr|ldaxr|stxr|stlxr|ldxp|ldaxp|stxp|stlxp)$"
    lse_op = "^(cas|casp|swp|ld(add|clr|eor|set|smax|smin|umax|umin)|st(add|clr|eor|set|smax|smin|umax|umin))(a|l|al)?(b|h)?$"
    current = ""
}
/^[0-9a-f]+ <parbench_atomics_(lse|llsc)_[a-z_]+>:$/ {
    name = $2; gsub(/[<>:]/, "", name)
    current = name
    present[current] = 1
    next
}
/^[0-9a-f]+ </ { current = ""; next }
current != "" && /^ +[0-9a-f]+:\t/ {
    split($0, field, "\t")
    mnemonic = field[2]; sub(/ .*/, "", mnemonic)
    count[current, mnemonic]++
    if (mnemonic ~ exclusive) exclusive_count[current]++
    if (mnemonic ~ lse_op) lse_count[current]++
}
END {
    failures = 0
    header = sprintf("%-44s", "function")
    for (c = 1; c <= ncols; c++) header = header sprintf(" %7s", cols[c])
    print header "  verdict"
    for (key in need) keys[++nkeys] = key
    # Stable order: sort the (backend, operation) keys.
    for (i = 1; i <= nkeys; i++) for (j = i + 1; j <= nkeys; j++)
        if (keys[j] < keys[i]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
    for (i = 1; i <= nkeys; i++) {
        split(keys[i], part, SUBSEP)
        backend = part[1]; operation = part[2]
        fn = "parbench_atomics_" backend "_" operation
        problems = ""
        if (!(fn in present)) {
            problems = "missing from the binary"
        } else {
            n = split(need[keys[i]], wanted, " ")
            for (w = 1; w <= n; w++)
                if (count[fn, wanted[w]] < 1) problems = problems " no " wanted[w] ";"
            if (backend == "lse" && exclusive_count[fn] > 0)
                problems = problems " has LL/SC exclusives;"
            if (backend == "llsc" && lse_count[fn] > 0)
                problems = problems " has LSE instructions;"
        }
        row = sprintf("%-44s", fn)
        for (c = 1; c <= ncols; c++) row = row sprintf(" %7d", count[fn, cols[c]])
        if (problems == "") print row "  ok"
        else { print row "  FAIL:" problems; failures++ }
    }
    if (failures > 0) {
        printf "disassembly check: %d of %d functions FAILED\n", failures, nkeys
        exit 1
    }
    printf "disassembly check: all %d lock x backend functions use the instructions they are named for\n", nkeys
}'
