#!/usr/bin/env bash
# The main job: builds parbench-cli in release mode and runs the default sweep (every cheap kernel
# on every default scheduler at 1..available cores, with statistics). Extra arguments are passed to
# `parbench-cli sweep`, e.g. `scripts/run.sh --threads 1,2 --format csv --output results.csv`.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
scripts/deps.sh
cargo build --release --locked -p parbench-cli >&2
exec target/release/parbench-cli sweep "$@"
