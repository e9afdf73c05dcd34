#!/usr/bin/env bash
# slabtree against the frontier (Embree 3, default and robust, and tinybvh's BVH8_CPU), measured
# as users meet it: the `slabtree trace` command built as a dependent builds it (no target-cpu),
# each library warm and alone in its own process, one thread, the processes alternated.
#
#   benches/peers/frontier.sh                        # scenes from $SLABTREE_SCENES, else ../shared/scenes
#   benches/peers/frontier.sh /path/to/scenes        # another scenes folder (meshes + rays/)
#   benches/peers/frontier.sh /path/to/scenes bunny  # only some of bunny, dragon, sponza, field
#
# `field` is the command's built-in scene (about 1.4M triangles: objects on a ground plane around a
# torus knot), exported to OBJ by `slabtree export`, with two generated sets: 65,536 random rays
# (the README's `random` kind, from `frontier random`) and camera rays at FRONTIER_SIZE square
# (`frontier camera-any`: the bunny's view of the scene's box). It is in the default list, after
# the shared scenes; there are no Embree hits for it, so only the counts are compared.
#
# Sets per scene: the four shared ray files (256 x 256 primary, random, diffuse; shadow as
# occlusion) and camera rays at FRONTIER_SIZE x FRONTIER_SIZE (default 1024), which
# `frontier camera` generates as the scenes' README defines the primary rays (checked first: at
# 256 x 256 they must equal the shared primary file byte for byte).
#
# Each process builds its BVH, traces the set once to warm up and then FRONTIER_PASSES times
# (default 7) and reports its best pass. Every library runs once per round, in an order rotated
# by the round, for FRONTIER_ROUNDS rounds (default 3); the table gives the best of those
# processes' best passes and, after the slash, their median. Ratios are of the bests:
# Moller-Trumbore against the better of Embree 3 default and tinybvh, watertight against
# Embree 3 robust. A WARNING marks a library whose hit count differs from slabtree's by more
# than 0.1% of the rays. Timings are only meaningful on an otherwise idle machine.
#
# FRONTIER_QUALITY=high compares the high-quality builds instead: `slabtree trace --build-quality
# high` against Embree 3 at RTC_BUILD_QUALITY_HIGH (default and robust) and tinybvh's `BuildHQ`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
scenes="${SLABTREE_SCENES:-$root/../shared/scenes}"
if [ $# -gt 0 ]; then scenes="$1"; shift; fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=(bunny dragon sponza field); fi
rounds="${FRONTIER_ROUNDS:-3}"
passes="${FRONTIER_PASSES:-7}"
size="${FRONTIER_SIZE:-1024}"
quality="${FRONTIER_QUALITY:-medium}"
hq=""
if [ "$quality" = high ]; then hq="-hq"; fi
work="$root/target/frontier"
mkdir -p "$work"

# shellcheck source=embree.sh
source "$root/benches/peers/embree.sh"

# The command as `cargo install slabtree-cli` builds it: no target-cpu, whatever the repository's
# .cargo/config.toml says (RUSTFLAGS takes precedence over it).
RUSTFLAGS="-C target-cpu=x86-64" cargo build -q --release -p slabtree-cli --target-dir "$root/target/portable"
cargo build -q --release --manifest-path benches/peers/Cargo.toml --bin frontier
slab="$root/target/portable/release/slabtree"
peer="$root/benches/peers/target/release/frontier"

echo "# slabtree trace (portable build) against Embree 3 and tinybvh, one thread, each library alone in its process"
echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')); $(nproc) cores"
echo "slabtree: $("$slab" info --builtin cornell 2>/dev/null | grep 'SIMD kernels' | tr -s ' ')"
echo "build quality: $quality; best / median Mrays/s of $rounds processes per library, each the best of $passes passes"
echo
echo "| scene | set | slabtree MT | Embree 3 | tinybvh | MT / better | slabtree WT | Embree 3 robust | WT / robust |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"

# Runs one library over one set in its own process and prints "best median positives".
run_one() {
    local lib="$1" mesh="$2" rays="$3" any="$4" line
    case "$lib" in
        slabtree | slabtree-wt)
            local test=moller-trumbore
            if [ "$lib" = slabtree-wt ]; then test=watertight; fi
            line="$("$slab" trace "$mesh" --rays "$rays" --out "$work/answers" --threads 1 --passes "$passes" \
                --triangle-test "$test" --build-quality "$quality" ${any:+--any} | grep '^query:')"
            echo "$line" | sed -E 's/.*best ([0-9.]+) Mrays\/s, median ([0-9.]+) Mrays\/s.*; ([0-9.]+)% .*/\1 \2 \3/'
            ;;
        *)
            # The peer at the quality asked for: embree-hq, embree-hq-robust, tinybvh-hq.
            local peer_lib="${lib/embree/embree$hq}"
            peer_lib="${peer_lib/tinybvh/tinybvh$hq}"
            line="$("$peer" trace "$peer_lib" "$mesh" "$rays" --passes "$passes" ${any:+--any} | grep 'Mrays/s')"
            echo "$line" | sed -E 's/.*best ([0-9.]+) Mrays\/s, median ([0-9.]+) Mrays\/s.*; ([0-9]+) of ([0-9]+) rays.*/\1 \2 \3 \4/' |
                awk '{ printf "%s %s %.2f\n", $1, $2, 100 * $3 / $4 }'
            ;;
    esac
}

libs=(slabtree embree tinybvh slabtree-wt embree-robust)
for name in "${names[@]}"; do
    if [ "$name" = field ]; then
        mesh="$work/field.obj"
        "$slab" export field --out "$mesh" >/dev/null
        "$peer" random "$mesh" 65536 "$work/field.random.rays"
        "$peer" camera-any "$mesh" "$size" "$work/field.camera$size.rays"
        sets=(random "camera$size")
    else
        mesh="$scenes/$name.obj"
        if [ "$name" = dragon ]; then mesh="$scenes/dragon.ply"; fi
        "$peer" camera "$scenes" "$name" 256 "$work/$name.camera256.rays"
        if ! cmp -s "$work/$name.camera256.rays" "$scenes/rays/$name.primary.rays"; then
            echo "frontier.sh: the camera rays generated for $name differ from $scenes/rays/$name.primary.rays" >&2
            exit 1
        fi
        "$peer" camera "$scenes" "$name" "$size" "$work/$name.camera$size.rays"
        sets=(primary random diffuse shadow "camera$size")
    fi
    for set in "${sets[@]}"; do
        rays="$scenes/rays/$name.$set.rays"
        if [ "$name" = field ] || [ "$set" = "camera$size" ]; then rays="$work/$name.$set.rays"; fi
        any=""
        if [ "$set" = shadow ]; then any=1; fi
        results="$work/results"
        : >"$results"
        for ((round = 0; round < rounds; round++)); do
            for ((k = 0; k < ${#libs[@]}; k++)); do
                lib="${libs[$(((round + k) % ${#libs[@]}))]}"
                echo "$lib $(run_one "$lib" "$mesh" "$rays" "$any")" >>"$results"
            done
        done
        # Per library: the best of the processes' bests, and their median.
        awk -v scene="$name" -v set="$set" '
            { best[$1] = ($2 > best[$1]) ? $2 : best[$1]; n[$1]++; v[$1, n[$1]] = $2; pos[$1] = $4 }
            function median(lib,   i, j, t, m) {
                m = n[lib]
                for (i = 1; i <= m; i++) a[i] = v[lib, i]
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            }
            function cell(lib) { return sprintf("%.2f / %.2f", best[lib], median(lib)) }
            END {
                better = (best["embree"] > best["tinybvh"]) ? best["embree"] : best["tinybvh"]
                printf "| %s | %s | %s | %s | %s | **%.2f** | %s | %s | **%.2f** |\n", scene, set,
                    cell("slabtree"), cell("embree"), cell("tinybvh"), best["slabtree"] / better,
                    cell("slabtree-wt"), cell("embree-robust"), best["slabtree-wt"] / best["embree-robust"]
                for (lib in pos) if (pos[lib] - pos["slabtree"] > 0.1 || pos["slabtree"] - pos[lib] > 0.1)
                    printf "WARNING: %s %s: %s reports %.2f%% positive, slabtree %.2f%%\n", scene, set, lib, pos[lib], pos["slabtree"]
            }' "$results"
    done
done
