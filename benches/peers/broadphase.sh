#!/usr/bin/env bash
# The broad-phase table: slabtree's BroadPhase against rapier3d's BroadPhaseBvh and Bullet's
# btDbvtBroadphase on the three seeded worlds (a settled pile, a level with 10% of its objects
# moving, a swarm of fast movers), single thread. Each library runs alone in its own process,
# and the processes are alternated round by round; each process builds its broad phase, warms it
# with one pair update, and reports the mean time of the frames that follow; every run checks
# that each overlapping pair is tracked.
#
#   benches/peers/broadphase.sh                 # 10k and 100k objects, 3 rounds
#   ROUNDS=5 benches/peers/broadphase.sh 10000  # chosen sizes and rounds
#
# Bullet comes from Debian's libbullet-dev, installed here when missing. The program is built as
# the peers are (from the repository root, so .cargo/config.toml applies to every library alike).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
if [ ! -d /usr/include/bullet ]; then
  apt-get update -qq && apt-get install -y -qq libbullet-dev >/dev/null
fi
cargo build --release --manifest-path benches/peers/Cargo.toml --bin broadphase
bin=benches/peers/target/release/broadphase
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(10000 100000)
rounds=${ROUNDS:-3}
export RAYON_NUM_THREADS=1
grep -m1 "model name" /proc/cpuinfo
out=$(mktemp)
for n in "${sizes[@]}"; do
  # Enough frames to amortise the first ones; fewer at 100k, where a frame is long.
  frames=$(( n >= 100000 ? 20 : 200 ))
  for workload in pile level swarm; do
    for round in $(seq "$rounds"); do
      for lib in slabtree rapier bullet; do
        "$bin" "$lib" "$workload" "$n" "$frames" 1 >> "$out"
      done
    done
  done
done
# Per (workload, n, lib): best and median over the rounds of the mean frame time.
awk '
  { key = $2 " " $3; t[key, $1] = t[key, $1] " " $4; pairs[key, $1] = $6; over[key] = $7; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
  function stats(list,   a, m, i, j, x) {
    m = split(list, a, " ")
    for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
    best = a[1]; median = a[int((m + 1) / 2)]
  }
  END {
    printf "| world | objects | slabtree ms (best / median) | rapier3d ms | Bullet ms | rapier3d / slabtree | Bullet / slabtree | pairs tracked (slabtree / rapier3d / Bullet; overlapping) |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|---|\n"
    for (i = 1; i <= k; i++) {
      key = order[i]; split(key, f, " ")
      stats(t[key, "slabtree"]); sb = best; sm = median
      stats(t[key, "rapier"]); rb = best; rm = median
      stats(t[key, "bullet"]); bb = best; bm = median
      printf "| %s | %d | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %.2f | %.2f | %d / %d / %d; %d |\n", f[1], f[2], sb, sm, rb, rm, bb, bm, rb / sb, bb / sb, pairs[key, "slabtree"], pairs[key, "rapier"], pairs[key, "bullet"], over[key]
    }
  }' "$out"
rm -f "$out"
