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
# `slabtree trace` runs as users run it: coherent runs of rays go as packets where its streams time
# them faster (`BatchOptions::packets`), while Embree 3 and tinybvh trace single rays here.
#
# FRONTIER_MODE=streams compares coherent rays instead (the streams issue's table): `slabtree trace`
# (Moller-Trumbore and watertight) against its single rays (`--single-rays`) and Embree 3's 8- and
# 16-ray packets (`rtcIntersect8/16`, `rtcOccluded8/16`; 16 only where the CPU has AVX-512; the
# default scene against Moller-Trumbore, the robust one against watertight), on the shared 256 x 256
# primary and shadow sets and on camera rays at FRONTIER_SIZE square with the shadow rays from
# their hits to the scene's light (`frontier shadow`). Embree's packets take the camera rays in
# 4 x 2 and 4 x 4 pixel blocks, as its tutorials fill them; the shadow rays in their order.
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
mode="${FRONTIER_MODE:-single}"
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

if [ "$mode" = streams ]; then
    echo "# slabtree trace (portable build) against its single rays and Embree 3's packets, one thread, each library alone in its process"
else
    echo "# slabtree trace (portable build) against Embree 3 and tinybvh, one thread, each library alone in its process"
fi
echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')); $(nproc) cores"
echo "slabtree: $("$slab" info --builtin cornell 2>/dev/null | grep 'SIMD kernels' | tr -s ' ')"
echo "build quality: $quality; best / median Mrays/s of $rounds processes per library, each the best of $passes passes"
echo
if [ "$mode" = streams ]; then
    echo "| scene | set | MT single | MT stream | Embree 8 | Embree 16 | stream / single | stream / best packet | WT single | WT stream | robust 8 | robust 16 | stream / single | stream / best packet |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
else
    echo "| scene | set | slabtree MT | Embree 3 | tinybvh | MT / better | slabtree WT | Embree 3 robust | WT / robust |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
fi

# Runs one library over one set in its own process and prints "best median positives".
# With `tiles`, Embree's packets take the rays as the pixels of a square image, in blocks.
run_one() {
    local lib="$1" mesh="$2" rays="$3" any="$4" tiles="${5:-}" line
    case "$lib" in
        slabtree*)
            local test=moller-trumbore single=""
            if [[ "$lib" == *-wt* ]]; then test=watertight; fi
            if [[ "$lib" == *-single ]]; then single=1; fi
            line="$("$slab" trace "$mesh" --rays "$rays" --out "$work/answers" --threads 1 --passes "$passes" \
                --triangle-test "$test" --build-quality "$quality" ${any:+--any} ${single:+--single-rays} | grep '^query:')"
            echo "$line" | sed -E 's/.*best ([0-9.]+) Mrays\/s, median ([0-9.]+) Mrays\/s.*; ([0-9.]+)% .*/\1 \2 \3/'
            ;;
        *)
            # The peer at the quality asked for: embree-hq, embree-hq-robust, tinybvh-hq.
            local peer_lib="${lib/embree/embree$hq}"
            peer_lib="${peer_lib/tinybvh/tinybvh$hq}"
            line="$("$peer" trace "$peer_lib" "$mesh" "$rays" --passes "$passes" ${any:+--any} ${tiles:+--tiles} | grep 'Mrays/s')"
            echo "$line" | sed -E 's/.*best ([0-9.]+) Mrays\/s, median ([0-9.]+) Mrays\/s.*; ([0-9]+) of ([0-9]+) rays.*/\1 \2 \3 \4/' |
                awk '{ printf "%s %s %.2f\n", $1, $2, 100 * $3 / $4 }'
            ;;
    esac
}

libs=(slabtree embree tinybvh slabtree-wt embree-robust)
if [ "$mode" = streams ]; then
    libs=(slabtree-single slabtree embree8 slabtree-wt-single slabtree-wt embree8-robust)
    if grep -q avx512f /proc/cpuinfo; then libs+=(embree16 embree16-robust); fi
fi
for name in "${names[@]}"; do
    if [ "$name" = field ]; then
        mesh="$work/field.obj"
        "$slab" export field --out "$mesh" >/dev/null
        "$peer" camera-any "$mesh" "$size" "$work/field.camera$size.rays"
        if [ "$mode" = streams ]; then
            "$peer" camera-any "$mesh" 256 "$work/field.camera256.rays"
            "$peer" shadow field "$mesh" "$work/field.camera256.rays" "$work/field.shadow256.rays"
            "$peer" shadow field "$mesh" "$work/field.camera$size.rays" "$work/field.shadow$size.rays"
            sets=(camera256 shadow256 "camera$size" "shadow$size")
        else
            "$peer" random "$mesh" 65536 "$work/field.random.rays"
            sets=(random "camera$size")
        fi
    elif [ "$mode" = streams ]; then
        mesh="$scenes/$name.obj"
        if [ "$name" = dragon ]; then mesh="$scenes/dragon.ply"; fi
        "$peer" camera "$scenes" "$name" "$size" "$work/$name.camera$size.rays"
        "$peer" shadow "$name" "$mesh" "$work/$name.camera$size.rays" "$work/$name.shadow$size.rays"
        sets=(primary shadow "camera$size" "shadow$size")
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
        if [ "$name" = field ] || [ "$set" = "camera$size" ] || [ "$set" = "shadow$size" ]; then
            rays="$work/$name.$set.rays"
        fi
        any="" tiles=""
        if [[ "$set" == shadow* ]]; then any=1; fi
        if [ "$set" = primary ] || [[ "$set" == camera* ]]; then tiles=1; fi
        results="$work/results"
        : >"$results"
        for ((round = 0; round < rounds; round++)); do
            for ((k = 0; k < ${#libs[@]}; k++)); do
                lib="${libs[$(((round + k) % ${#libs[@]}))]}"
                echo "$lib $(run_one "$lib" "$mesh" "$rays" "$any" "$tiles")" >>"$results"
            done
        done
        # Per library: the best of the processes' bests, and their median.
        awk -v scene="$name" -v set="$set" -v mode="$mode" '
            { best[$1] = ($2 > best[$1]) ? $2 : best[$1]; n[$1]++; v[$1, n[$1]] = $2; pos[$1] = $4 }
            function median(lib,   i, j, t, m) {
                m = n[lib]
                for (i = 1; i <= m; i++) a[i] = v[lib, i]
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            }
            function cell(lib) { return sprintf("%.2f / %.2f", best[lib], median(lib)) }
            function ratio(a, b) { return (b > 0) ? sprintf("**%.2f**", a / b) : "" }
            END {
                if (mode == "streams") {
                    mt = (best["embree8"] > best["embree16"]) ? best["embree8"] : best["embree16"]
                    wt = (best["embree8-robust"] > best["embree16-robust"]) ? best["embree8-robust"] : best["embree16-robust"]
                    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", scene, set,
                        cell("slabtree-single"), cell("slabtree"), cell("embree8"), ("embree16" in n) ? cell("embree16") : "",
                        ratio(best["slabtree"], best["slabtree-single"]), ratio(best["slabtree"], mt),
                        cell("slabtree-wt-single"), cell("slabtree-wt"), cell("embree8-robust"),
                        ("embree16-robust" in n) ? cell("embree16-robust") : "",
                        ratio(best["slabtree-wt"], best["slabtree-wt-single"]), ratio(best["slabtree-wt"], wt)
                } else {
                better = (best["embree"] > best["tinybvh"]) ? best["embree"] : best["tinybvh"]
                printf "| %s | %s | %s | %s | %s | **%.2f** | %s | %s | **%.2f** |\n", scene, set,
                    cell("slabtree"), cell("embree"), cell("tinybvh"), best["slabtree"] / better,
                    cell("slabtree-wt"), cell("embree-robust"), best["slabtree-wt"] / best["embree-robust"]
                }
                for (lib in pos) if (pos[lib] - pos["slabtree"] > 0.1 || pos["slabtree"] - pos[lib] > 0.1)
                    printf "WARNING: %s %s: %s reports %.2f%% positive, slabtree %.2f%%\n", scene, set, lib, pos[lib], pos["slabtree"]
            }' "$results"
    done
done
