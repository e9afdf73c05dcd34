#!/usr/bin/env bash
# Builds and runs the slabtree-vs-parry3d comparison in release mode, one thread.
#
#   benches/peers/run.sh              # N = 1k, 10k and 100k
#   benches/peers/run.sh 10000 100000 # chosen sizes
#
# It runs from the repository root so that cargo picks up .cargo/config.toml
# (target-cpu=native), exactly as the main crate's own builds do.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export RAYON_NUM_THREADS=1
exec cargo run --release --manifest-path benches/peers/Cargo.toml --bin dbvt_vs_parry -- "$@"
