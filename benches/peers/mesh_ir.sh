#!/usr/bin/env bash
# Instructions per ray of slabtree's MeshBvh and of Embree 3 on the same shared rays, counted
# exactly by callgrind (this machine's timings are noisy; instruction counts are not).
#
#   benches/peers/mesh_ir.sh                          # bunny, all four ray kinds
#   benches/peers/mesh_ir.sh dragon primary shadow    # one scene, some kinds
#
# Each library runs alone through the peer program's profile mode (MESH_PROFILE, see the top of
# src/mesh_vs_embree/main.rs) once with 1 pass and once with 3 passes over the ray file; the
# difference over twice the ray count is the instructions of one traced ray, without the load and
# build. The binary is built with target-cpu=x86-64-v3 (AVX2, FMA) in its own target directory,
# since valgrind rejects some instructions of a target-cpu=native build. Needs valgrind and
# libembree-dev (installed with apt-get when missing). Scenes: $SLABTREE_SCENES, else
# ../shared/scenes beside the repository.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
scenes="${SLABTREE_SCENES:-$root/../shared/scenes}"
scene="${1:-bunny}"
shift || true
kinds=("$@")
if [ ${#kinds[@]} -eq 0 ]; then kinds=(primary random diffuse shadow); fi

for pkg in valgrind libembree-dev; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        sudo=""
        if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg"
    fi
done

target="$root/target/peers-x86-64-v3"
RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR="$target" \
    cargo build --release --quiet --manifest-path "$root/benches/peers/Cargo.toml" --bin mesh_vs_embree
bin="$target/release/mesh_vs_embree"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Instructions per ray of one library on one ray set.
per_ray() {
    local lib=$1 kind=$2 p
    for p in 1 3; do
        MESH_PROFILE="$lib:$scene:$kind:$p" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$p" \
            "$bin" "$scenes" >"$tmp/out.$p" 2>"$tmp/err.$p"
    done
    local a b n
    a=$(grep -o "Collected : [0-9]*" "$tmp/err.1" | awk '{print $3}')
    b=$(grep -o "Collected : [0-9]*" "$tmp/err.3" | awk '{print $3}')
    n=$(grep -o "[0-9]* rays" "$tmp/out.1" | awk '{print $1}')
    echo $(((b - a) / 2 / n))
}

echo "| $scene rays | slabtree | Embree | slabtree / Embree | slabtree WT | Embree robust | WT / robust |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for kind in "${kinds[@]}"; do
    s=$(per_ray slabtree "$kind")
    e=$(per_ray embree "$kind")
    w=$(per_ray slabtree-wt "$kind")
    r=$(per_ray embree-robust "$kind")
    awk -v k="$kind" -v s="$s" -v e="$e" -v w="$w" -v r="$r" \
        'BEGIN { printf "| %s | %d | %d | %.2f | %d | %d | %.2f |\n", k, s, e, s / e, w, r, w / r }'
done
