"""slabtree.MeshBvh against embreex (Embree) on random meshes and rays: the same hits, except
at ties on shared edges, where both answers are hits at the same distance."""

import numpy as np
import pytest

import slabtree
from oracle import random_rays, random_soup, ray_triangle

rtcore_scene = pytest.importorskip("embreex.rtcore_scene")
mesh_construction = pytest.importorskip("embreex.mesh_construction")


def embree_scene(vertices, faces):
    scene = rtcore_scene.EmbreeScene()
    mesh_construction.TriangleMesh(scene=scene, vertices=vertices.astype(np.float32), indices=faces.astype(np.int32))
    return scene


def edge_rays(vertices, faces, n, seed):
    """Rays from above through shared vertices and edge points of the soup's fan (its last 9
    triangles but one), where two or more triangles tie."""
    r = np.random.default_rng(seed)
    fan = np.asarray(vertices, dtype=np.float32)[faces[-9:-1]].astype(np.float64)
    # Each fan triangle's first two corners are the centre and a ring vertex: points on that
    # edge, which two triangles share, and the centre, which all eight share. (The ring vertex
    # itself is on the fan's open boundary, where a ray may pass just outside.)
    s = r.choice([0.0, 0.25, 0.5, 0.75], size=n)
    k = r.integers(8, size=n)
    targets = fan[k, 0] + (fan[k, 1] - fan[k, 0]) * s[:, None]
    origins = targets + r.normal(size=(n, 3)) * 0.01 + [0, 0, 5]
    return origins, targets - origins


@pytest.mark.parametrize("watertight", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_hits_equal_embree(watertight, seed):
    vertices, faces = random_soup(2000, seed=seed)
    scene = embree_scene(vertices, faces)
    bvh = slabtree.MeshBvh(vertices, faces, watertight=watertight)
    o1, d1 = random_rays(50_000, seed=seed + 10)
    o2, d2 = edge_rays(vertices, faces, 2000, seed)
    origins = np.concatenate([o1, o2]).astype(np.float32)
    directions = np.concatenate([d1, d2]).astype(np.float32)
    want = scene.run(origins, directions, output=1)
    got = bvh.intersect(origins, directions)
    hit = want["primID"] >= 0
    assert hit.sum() > 40_000
    # Hit or miss: the same for every ray, edge rays included.
    np.testing.assert_array_equal(got.triangle >= 0, hit)
    # The distance: Embree's f32 t and ours, refined in f64, agree to f32 rounding, which for a
    # ray that grazes its triangle grows by the angle (1e-4 relative, as the Rust oracle test
    # allows against Embree's hits on the shared scenes).
    np.testing.assert_allclose(got.t[hit], want["tfar"][hit], rtol=1e-4)
    # The triangle: Embree's, or a tie: both triangles hit, in f64 and to within 1e-6 of their
    # edges (a ray through a shared edge is on both, up to rounding), at that distance.
    other = np.nonzero(hit & (got.triangle != want["primID"]))[0]
    tri = np.asarray(vertices, dtype=np.float32).astype(np.float64)[faces]
    for i in other:
        t, _, _ = ray_triangle(origins[i : i + 1], directions[i : i + 1], tri[[got.triangle[i], want["primID"][i]]], slack=1e-6)
        assert np.isfinite(t).all() and abs(t[0, 0] - t[0, 1]) <= 1e-5 * t[0, 1], f"ray {i}: not a tie"
    assert len(other) < 0.05 * len(o2), f"{len(other)} ties"
    # Any hit.
    occluded = np.asarray(scene.run(origins, directions, query="OCCLUDED")) != -1
    np.testing.assert_array_equal(bvh.occluded(origins, directions), occluded)
