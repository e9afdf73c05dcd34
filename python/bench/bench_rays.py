"""Rays per second through Python, the binding included: slabtree against embreex (Embree, the
engine trimesh uses when it is installed) and trimesh's pure-numpy ``ray_triangle``, on the
shared scenes' ray sets, with the same numpy arrays.

    python python/bench/bench_rays.py [PASSES] [SCENES...]      (default: 7 passes; bunny dragon sponza)

``SLABTREE_SCENES`` names the scenes folder (default ``../shared/scenes``). The libraries run in
turn within each pass (interleaved, as this machine is noisy); the best pass of each is
reported, with the spread (worst / best). slabtree runs on one thread and then on all; embreex
traces on one (its ``run`` is a loop of single-ray calls); trimesh's ``ray_triangle`` gets the
first 2,000 rays of each set only, as it is orders of magnitude slower.

Closest hit: slabtree ``MeshBvh.intersect`` (t, triangle, u, v) against embreex ``run(...,
output=1)`` (t, triangle, u, v and the normal) and trimesh ``intersects_first``. Shadow rays: the
any-hit queries, with each ray's own tmax (embreex's ``dists``). Both slabtree triangle tests are
timed: Möller–Trumbore against Embree's default kernels, watertight against the same (embreex
offers no robust mode).
"""

import os
import pathlib
import sys
import time

import numpy as np

import slabtree

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests_shared"))
from test_embree_hits import load_scene  # noqa: E402

from embreex import rtcore_scene  # noqa: E402
from embreex.mesh_construction import TriangleMesh  # noqa: E402

SCENES = pathlib.Path(os.environ.get("SLABTREE_SCENES", pathlib.Path(__file__).resolve().parents[3] / "shared" / "scenes"))


def best_of(passes, runs):
    """Interleaved passes of every run; per run, (best seconds, worst / best)."""
    times = {name: [] for name in runs}
    for _ in range(passes):
        for name, run in runs.items():
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
    return {name: (min(ts), max(ts) / min(ts)) for name, ts in times.items()}


def main():
    passes = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    scenes = sys.argv[2:] or ["bunny", "dragon", "sponza"]
    ncpu = os.cpu_count()
    print(f"| scene | rays | slabtree MT, 1 thread | slabtree watertight, 1 thread | embreex | slabtree MT / embreex | watertight / embreex | slabtree MT, {ncpu} threads | trimesh ray_triangle |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for scene in scenes:
        vertices, faces = load_scene(scene)
        mt = slabtree.MeshBvh(vertices, faces, watertight=False)
        wt = slabtree.MeshBvh(vertices, faces, watertight=True)
        emb = rtcore_scene.EmbreeScene()
        TriangleMesh(scene=emb, vertices=vertices, indices=faces.astype(np.int32))
        import trimesh

        tm = trimesh.Trimesh(vertices, faces, process=False)
        tri = trimesh.ray.ray_triangle.RayMeshIntersector(tm)
        for kind in ["primary", "random", "diffuse", "shadow"]:
            rays = np.fromfile(SCENES / "rays" / f"{scene}.{kind}.rays", dtype="<f4").reshape(-1, 8)
            o = np.ascontiguousarray(rays[:, 0:3])
            d = np.ascontiguousarray(rays[:, 4:7])
            tmax = np.ascontiguousarray(rays[:, 7])
            n = len(rays)
            sub = slice(0, 2000)
            if kind == "shadow":
                runs = {
                    "mt1": lambda: mt.occluded(o, d, tmax=tmax, threads=1),
                    "wt1": lambda: wt.occluded(o, d, tmax=tmax, threads=1),
                    "emb": lambda: emb.run(o, d, dists=tmax.copy(), query="OCCLUDED"),
                    "mtn": lambda: mt.occluded(o, d, tmax=tmax),
                }
                tri_run = lambda: tri.intersects_any(o[sub], d[sub])  # noqa: E731
            else:
                runs = {
                    "mt1": lambda: mt.intersect(o, d, threads=1),
                    "wt1": lambda: wt.intersect(o, d, threads=1),
                    "emb": lambda: emb.run(o, d, output=1),
                    "mtn": lambda: mt.intersect(o, d),
                }
                tri_run = lambda: tri.intersects_first(o[sub], d[sub])  # noqa: E731
            r = best_of(passes, runs)
            tt = best_of(1, {"tri": tri_run})["tri"][0]
            mrays = {k: n / v[0] / 1e6 for k, v in r.items()}
            spread = max(v[1] for v in r.values())
            print(
                f"| {scene} | {kind} ({n}) | {mrays['mt1']:.2f} | {mrays['wt1']:.2f} | {mrays['emb']:.2f} | "
                f"{mrays['mt1'] / mrays['emb']:.2f} | {mrays['wt1'] / mrays['emb']:.2f} | {mrays['mtn']:.2f} | "
                f"{2000 / tt / 1e6:.4f} |",
                flush=True,
            )
    print(f"\nMrays/s, best of {passes} interleaved passes; worst pass within {spread:.2f}x of the best in the last set.")


if __name__ == "__main__":
    main()
