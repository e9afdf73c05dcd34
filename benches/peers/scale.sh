#!/usr/bin/env bash
# slabtree against Embree 3 at scale: a generated terrain of 1M, 4M and 16M triangles (or the sizes
# given), built on 1 and 2 threads, each library alone in its own process, the processes
# alternated. Prints, per size and thread count, each library's build time, its peak memory
# (the whole process: mesh, rays, BVH; `/usr/bin/time`) and, on the one-thread rows, its random
# rays per second.
#
#   benches/peers/scale.sh                 # 1M 4M 16M
#   benches/peers/scale.sh 16M             # one size
#
# slabtree is its command, `slabtree trace --threads T`, built as a dependent builds it (no
# target-cpu). Embree is `frontier trace embree` (the system libembree3, default quality), held
# to T cores with `taskset` (Embree's builder takes every core it may run on). The terrain comes
# from `examples/scale.rs --ply`; the rays (262,144, the shared README's `random` kind) from
# `frontier random`. Work files go to $SCALE_DIR (default target/scale). Needs an idle machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then sizes=(1M 4M 16M); fi
dir="${SCALE_DIR:-$root/target/scale}"
mkdir -p "$dir"

RUSTFLAGS="-C target-cpu=x86-64" cargo build -q --release -p slabtree-cli --target-dir target/portable
RUSTFLAGS="-C target-cpu=x86-64" cargo build -q --release --example scale --target-dir target/portable
(cd benches/peers && cargo build -q --release --bin frontier)
slabtree="$root/target/portable/release/slabtree"
frontier="$root/benches/peers/target/release/frontier"
grep -m1 'model name' /proc/cpuinfo

# Runs "$@" under /usr/bin/time; prints the command's output, then "peak-kb N".
measured() {
  /usr/bin/time -f 'peak-kb %M' "$@" 2>&1
}

printf '%-6s %-8s %-8s %10s %10s %12s\n' size threads library "build ms" "peak MB" "Mrays/s"
for size in "${sizes[@]}"; do
  ply="$dir/terrain-$size.ply"
  rays="$dir/terrain-$size.rays"
  [ -s "$ply" ] || target/portable/release/examples/scale "$size" --threads 1 --ply "$ply" >/dev/null
  [ -s "$rays" ] || "$frontier" random "$ply" 262144 "$rays" >/dev/null
  for threads in 1 2; do
    cores=0
    [ "$threads" = 2 ] && cores=0,1
    for library in slabtree embree; do
      if [ "$library" = slabtree ]; then
        out=$(measured "$slabtree" trace "$ply" --rays "$rays" --out "$dir/hits" --threads "$threads" --passes 3)
        build=$(grep -o 'built the BVH in [0-9.]* ms' <<<"$out" | grep -o '[0-9.]*' || true)
        rate=$(grep -o 'best [0-9.]* Mrays/s' <<<"$out" | grep -o '[0-9.]*' || true)
      else
        out=$(measured taskset -c "$cores" "$frontier" trace embree "$ply" "$rays" --passes 3)
        build=$(grep -o 'build [0-9.]* ms' <<<"$out" | grep -o '[0-9.]*' || true)
        rate=$(grep -o 'best [0-9.]* Mrays/s' <<<"$out" | grep -o '[0-9.]*' || true)
      fi
      peak=$(grep -o 'peak-kb [0-9]*' <<<"$out" | grep -o '[0-9]*$')
      # slabtree traces on the threads it built with; Embree's peer always on one: compare rays
      # on the one-thread rows only.
      [ "$threads" = 1 ] || rate=-
      printf '%-6s %-8s %-8s %10s %10.0f %12s\n' "$size" "$threads" "$library" "${build:-?}" "$((peak / 1024))" "${rate:-?}"
    done
  done
done
