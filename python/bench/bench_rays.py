"""Rays per second through Python, the binding included: slabtree against embreex (Embree, the
engine trimesh uses when it is installed) and trimesh's pure-numpy ``ray_triangle``, on the
shared scenes' ray sets, with the same numpy arrays.

    python python/bench/bench_rays.py [PASSES] [SCENES...]      (default: 7 passes; bunny dragon sponza)

Besides the installed ``slabtree`` wheel it needs embreex, trimesh and rtree (which trimesh's
``ray_triangle`` builds its candidate tree with): ``pip install embreex trimesh rtree``.

``SLABTREE_SCENES`` names the scenes folder (default ``../shared/scenes``). The libraries run in
turn within each pass (interleaved, as this machine is noisy); the best pass of each is
reported, with the spread (worst / best). slabtree runs on one thread and then on all; embreex
traces on one (its ``run`` is a loop of single-ray calls); trimesh's ``ray_triangle`` gets the
first 500 rays of the primary and shadow sets only, as it is orders of magnitude slower.

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

# numpy's BLAS threads wait spinning after a numpy call, on the cores the timed calls use.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import slabtree  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests_shared"))
from test_embree_hits import load_scene  # noqa: E402

from embreex import rtcore_scene  # noqa: E402
from embreex.mesh_construction import TriangleMesh  # noqa: E402

TRIMESH_RAYS = 500
SCENES = pathlib.Path(os.environ.get("SLABTREE_SCENES", pathlib.Path(__file__).resolve().parents[3] / "shared" / "scenes"))


def best_of(passes, runs):
    """Interleaved passes of every run; per run, (best seconds, worst / best)."""
    times = {name: [] for name in runs}
    for run in runs.values():
        run()  # warm: caches, and the first use of a thread count starts its pool
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
    spread = 1.0
    print(f"| scene | rays | slabtree MT, 1 thread | slabtree watertight, 1 thread | embreex | slabtree MT / embreex | watertight / embreex | slabtree MT, {ncpu} threads | trimesh ray_triangle (krays/s) | slabtree MT / trimesh |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
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
            sub = slice(0, TRIMESH_RAYS)
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
            # trimesh's candidates per ray grow with the ray's length through the mesh: random and
            # diffuse rays took minutes and most of the memory for 500 rays on the dragon.
            tt = None
            if kind in ("primary", "shadow"):
                t0 = time.perf_counter()
                tri_run()
                tt = time.perf_counter() - t0
            mrays = {k: n / v[0] / 1e6 for k, v in r.items()}
            spread = max([spread] + [v[1] for v in r.values()])
            if tt:
                trimesh_rate = TRIMESH_RAYS / tt
                trimesh_cols = f"{trimesh_rate / 1e3:.2f} | {mrays['mt1'] * 1e6 / trimesh_rate:.0f}"
            else:
                trimesh_cols = "– | –"
            print(
                f"| {scene} | {kind} ({n}) | {mrays['mt1']:.2f} | {mrays['wt1']:.2f} | {mrays['emb']:.2f} | "
                f"{mrays['mt1'] / mrays['emb']:.2f} | {mrays['wt1'] / mrays['emb']:.2f} | {mrays['mtn']:.2f} | "
                f"{trimesh_cols} |",
                flush=True,
            )
    print(f"\nMrays/s, best of {passes} interleaved passes; every run's worst pass within {spread:.2f}x of its best.")


if __name__ == "__main__":
    main()
