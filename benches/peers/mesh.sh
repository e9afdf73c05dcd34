#!/usr/bin/env bash
# Builds and runs the mesh ray-query comparison: slabtree's MeshBvh against Embree 3, obvhs,
# parry3d and the bvh crate, on the shared scenes and ray files, in release mode.
#
#   benches/peers/mesh.sh                        # scenes from $SLABTREE_SCENES, else ../shared/scenes beside the repository
#   benches/peers/mesh.sh /path/to/scenes        # another scenes folder (meshes + rays/)
#   benches/peers/mesh.sh /path/to/scenes bunny  # only some of bunny, dragon, sponza
#
# Environment: MESH_LIBS=embree (slabtree and Embree only), MESH_PASSES (interleaved timed rounds,
# default 7), MESH_BUDGET_S, MESH_FTZ, MESH_EMBREE_VERBOSE; see the top of src/mesh_vs_embree/main.rs.
# MESH_BUILD_ROUNDS (default 7; 0 skips it) sets the rounds of the 1- and 2-thread build table that
# follows the main run. MESH_IR=0 skips the closing instructions-per-ray table
# (benches/peers/mesh_ir.sh, callgrind).
#
# The `embree` crate links the system Embree 3 (Debian's libembree-dev); it is installed here when
# missing, since a fresh machine does not have it. The script runs from the repository root so that
# cargo picks up .cargo/config.toml (target-cpu=native), exactly as the main crate's builds do.
# Timings are only meaningful on an otherwise idle machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

# shellcheck source=embree.sh
source "$root/benches/peers/embree.sh"

cargo run --release --manifest-path benches/peers/Cargo.toml --bin mesh_vs_embree -- "$@"

# Then build times alone, slabtree against Embree with one and with two threads, interleaved
# (MESH_BUILD_ROUNDS rounds, default 7; 0 skips it).
if [ "${MESH_BUILD_ROUNDS:-7}" != "0" ]; then
    echo
    MESH_BUILD="${MESH_BUILD_ROUNDS:-7}" cargo run -q --release --manifest-path benches/peers/Cargo.toml \
        --bin mesh_vs_embree -- "$@"
fi

# Then the instructions per ray on the bunny (callgrind; about 4 minutes; MESH_IR=0 skips it).
if [ "${MESH_IR:-1}" != "0" ]; then
    echo
    echo "### Instructions per ray (callgrind, target-cpu=x86-64-v3; benches/peers/mesh_ir.sh)"
    echo
    scenes="${SLABTREE_SCENES:-$root/../shared/scenes}"
    if [ -d "${1:-}" ]; then scenes="$1"; fi
    SLABTREE_SCENES="$scenes" "$root/benches/peers/mesh_ir.sh" bunny
fi
