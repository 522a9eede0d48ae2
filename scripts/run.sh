#!/usr/bin/env bash
# The main job: builds parbench-cli in release mode and runs the default sweep (every cheap kernel
# on every default scheduler at 1, 2, 4, ... threads and the available cores, in 6 rounds of
# separate processes with shuffled cell order, with statistics, round spreads and unstable cells
# flagged). Extra arguments are passed to `parbench-cli sweep`, e.g.
# `scripts/run.sh --threads 1,2 --format csv --output results.csv`.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
scripts/deps.sh
cargo build --release --locked -p parbench-cli >&2
exec "${CARGO_TARGET_DIR:-target}/release/parbench-cli" sweep "$@"
