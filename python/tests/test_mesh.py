"""slabtree.MeshBvh against float64 brute force over every triangle."""

import numpy as np
import pytest

import slabtree
from oracle import closest_hits, edge_margin, point_triangle_distance, random_rays, random_soup, ray_triangle


@pytest.fixture(scope="module")
def soup():
    return random_soup(300, seed=1)


@pytest.mark.parametrize(
    "watertight, quality",
    [(True, "medium"), (False, "medium"), (True, "low"), (False, "low"), (True, "high"), (False, "high")],
)
def test_closest_hits_equal_brute_force(soup, watertight, quality):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces, watertight=watertight, quality=quality)
    origins, directions = random_rays(3000, seed=2)
    hits = bvh.intersect(origins, directions)
    t, tri, margin, all_t = closest_hits(vertices, faces, origins, directions)
    # Rays within 1e-6 (barycentric) of an edge may round either way in f32: left out.
    clear = ~(np.isfinite(t) & (margin < 1e-6))
    assert clear.sum() > 2900
    hit = np.isfinite(t)
    assert (hit[clear] == (hits.triangle[clear] >= 0)).all()
    both = clear & hit
    assert both.sum() > 1000, "too few hits for the test to mean much"
    np.testing.assert_allclose(hits.t[both], t[both], rtol=1e-5)
    # The triangle is brute force's, or one tied with it at that distance.
    rows = np.nonzero(both)[0]
    tied = np.abs(all_t[rows, hits.triangle[rows]] - t[rows]) <= 1e-5 * t[rows]
    assert tied.all()
    # Barycentrics of the triangle reported.
    _, u, v = ray_triangle(origins[rows], directions[rows], np.asarray(vertices)[faces[hits.triangle[rows]]])
    diag = np.arange(len(rows))
    np.testing.assert_allclose(hits.u[rows], u[diag, diag], atol=1e-4)
    np.testing.assert_allclose(hits.v[rows], v[diag, diag], atol=1e-4)
    # Misses are inf and -1.
    miss = hits.triangle < 0
    assert np.isinf(hits.t[miss]).all() and miss.sum() > 100


def test_ranges_and_occlusion(soup):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces)
    origins, directions = random_rays(2000, seed=3)
    t, _, margin, _ = closest_hits(vertices, faces, origins, directions)
    tmax = np.where(np.isfinite(t), t, 10.0) * 0.999
    clear = ~(np.isfinite(t) & (margin < 1e-6))
    # A range that ends just before the nearest hit sees nothing; one just after sees it.
    assert not bvh.occluded(origins, directions, tmax=tmax)[clear].any()
    after = bvh.occluded(origins, directions, tmax=np.where(np.isfinite(t), t * 1.001, np.inf))
    assert (after[clear] == np.isfinite(t)[clear]).all()
    # tmin past the nearest hit: the next one, as brute force finds it.
    beyond = np.where(np.isfinite(t), t * 1.001, 0.0)
    t2, _, m2, _ = closest_hits(vertices, faces, origins, directions, tmin=beyond)
    hits = bvh.intersect(origins, directions, tmin=beyond)
    ok = clear & ~(np.isfinite(t2) & (m2 < 1e-6))
    assert (np.isfinite(t2)[ok] == (hits.triangle[ok] >= 0)).all()
    np.testing.assert_allclose(hits.t[ok & np.isfinite(t2)], t2[ok & np.isfinite(t2)], rtol=1e-5)


def test_all_hits_equal_the_brute_force_set(soup):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces)
    origins, directions = random_rays(800, seed=4)
    got = bvh.intersect_all(origins, directions)
    tri = np.asarray(vertices, dtype=np.float64)[faces]
    t, u, v = ray_triangle(origins, directions, tri)
    margin = edge_margin(u, v)
    hit = np.isfinite(t) & (t >= 0)
    # Sorted by ray, then by distance.
    order = np.lexsort((got.t, got.ray))
    assert (order == np.arange(len(order))).all()
    found = set(zip(got.ray.tolist(), got.triangle.tolist()))
    sure = set(zip(*np.nonzero(hit & (margin >= 1e-6))))
    maybe = set(zip(*np.nonzero(hit & (margin >= -1e-6))))
    assert len(sure) > 500
    assert sure <= found, f"missed {sorted(sure - found)[:5]}"
    assert found <= maybe, f"extra {sorted(found - maybe - sure)[:5]}"
    np.testing.assert_allclose(got.t, t[got.ray, got.triangle], rtol=1e-5)


def test_closest_points_equal_brute_force(soup):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces)
    r = np.random.default_rng(5)
    # Inside the cloud, around it, far away, and exactly on vertices and edge midpoints.
    tri = np.asarray(vertices, dtype=np.float32)[faces].astype(np.float64)
    points = np.concatenate(
        [
            r.uniform(0, 10, (300, 3)),
            r.uniform(-20, 30, (100, 3)),
            r.normal(size=(20, 3)) * 1e4,
            tri[:50, 0],
            (tri[50:100, 0] + tri[50:100, 1]) / 2,
        ]
    )
    got = bvh.closest_point(points)
    d = point_triangle_distance(points, tri)
    want = d.min(axis=1)
    scale = 1 + np.abs(points).max(axis=1)
    assert (np.abs(got.distance - want) <= 1e-5 * scale).all()
    # The triangle reported is at that distance, and so is the point reported.
    rows = np.arange(len(points))
    assert (np.abs(d[rows, got.triangle] - want) <= 1e-5 * scale).all()
    np.testing.assert_allclose(np.linalg.norm(got.point - points, axis=1), want, rtol=1e-4, atol=1e-5 * scale.max())
    # Within a radius: the nearest only when it is that near.
    near = bvh.closest_point(points, max_distance=1.0)
    within = want <= 1.0 - 1e-5
    assert (near.triangle[within] >= 0).all()
    assert (near.triangle[want > 1.0 + 1e-5] == -1).all()
    assert np.isinf(near.distance[near.triangle < 0]).all() and np.isnan(near.point[near.triangle < 0]).all()


def test_threads_give_the_same_answers(soup):
    vertices, faces = soup
    origins, directions = random_rays(5000, seed=6)
    one = slabtree.MeshBvh(vertices, faces, threads=1)
    many = slabtree.MeshBvh(vertices, faces, threads=2)
    a = one.intersect(origins, directions, threads=1)
    b = many.intersect(origins, directions)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(one.occluded(origins, directions, threads=1), many.occluded(origins, directions, threads=2))
    assert one.to_bytes() == many.to_bytes()


def test_saved_bvh_round_trip_and_damage(soup):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces)
    data = bvh.to_bytes()
    back = slabtree.MeshBvh.from_bytes(data)
    origins, directions = random_rays(500, seed=7)
    for x, y in zip(bvh.intersect(origins, directions), back.intersect(origins, directions)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(back.faces, faces)
    np.testing.assert_array_equal(back.vertices, np.asarray(vertices, dtype=np.float32))
    assert slabtree.MeshBvh.from_bytes(data, untrusted=True).to_bytes() == data
    damaged = bytearray(data)
    damaged[100] ^= 4
    with pytest.raises(ValueError, match="damaged"):
        slabtree.MeshBvh.from_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="truncated"):
        slabtree.MeshBvh.from_bytes(data[:-3])


def test_arrays_of_any_layout_and_dtype(soup):
    vertices, faces = soup
    reference = slabtree.MeshBvh(vertices, faces)
    origins, directions = random_rays(300, seed=8)
    want = reference.intersect(origins, directions)
    # float32 vertices, uint16 faces; Fortran-ordered and strided rays.
    other = slabtree.MeshBvh(np.asarray(vertices, dtype=np.float32), faces.astype(np.uint16))
    assert other.to_bytes() == reference.to_bytes()
    wide = np.zeros((300, 6))
    wide[:, ::2] = origins
    got = other.intersect(wide[:, ::2], np.asfortranarray(directions))
    for x, y in zip(want, got):
        np.testing.assert_array_equal(x, y)
    # Lists, and one direction for every ray.
    down = reference.intersect([[5, 5, 50], [5, 5, 60]], [0, 0, -1])
    assert down.t.shape == (2,)
    assert down.triangle[0] == down.triangle[1]


@pytest.mark.parametrize(
    "quality, how",
    [("low", "rebuild"), ("medium", "rebuild"), ("high", "rebuild"), ("low", "refit"), ("medium", "refit")],
)
def test_moved_vertices_are_hit_where_brute_force_hits_them(soup, quality, how):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces, quality=quality)
    r = np.random.default_rng(5)
    moved = (np.asarray(vertices) * 0.8 + r.normal(0, 0.3, np.shape(vertices))).astype(np.float32)
    getattr(bvh, how)(moved)
    np.testing.assert_array_equal(bvh.vertices, moved)
    origins, directions = random_rays(2000, seed=6)
    hits = bvh.intersect(origins, directions)
    t, _, margin, all_t = closest_hits(moved, faces, origins, directions)
    clear = ~(np.isfinite(t) & (margin < 1e-6))
    hit = np.isfinite(t)
    assert (hit[clear] == (hits.triangle[clear] >= 0)).all()
    both = clear & hit
    assert both.sum() > 500, "too few hits for the test to mean much"
    np.testing.assert_allclose(hits.t[both], t[both], rtol=1e-5)
    rows = np.nonzero(both)[0]
    assert (np.abs(all_t[rows, hits.triangle[rows]] - t[rows]) <= 1e-5 * t[rows]).all()
    if how == "rebuild":
        # The BVH that a build of the moved mesh gives, byte for byte.
        assert bvh.to_bytes() == slabtree.MeshBvh(moved, faces, quality=quality).to_bytes()


def test_bad_vertices_for_a_move_are_refused_and_change_nothing(soup):
    vertices, faces = soup
    bvh = slabtree.MeshBvh(vertices, faces, quality="low")
    before = bvh.to_bytes()
    v = np.asarray(vertices, dtype=np.float32)
    nan, inf = v.copy(), v.copy()
    nan[3, 1], inf[7, 2] = np.nan, np.inf
    refusals = [
        (v[:-1], "expected 927 vertex positions, got 926"),
        (nan, "vertex 3 has a NaN"),
        (inf, "vertex 7 has a NaN or inf"),
        (v[:, :2], "shape"),
    ]
    for bad, message in refusals:
        for how in (bvh.rebuild, bvh.refit):
            with pytest.raises(ValueError, match=message):
                how(bad)
            assert bvh.to_bytes() == before


def test_a_high_build_with_spatial_splits_refuses_a_refit_and_rebuilds(soup):
    # A room: six walls of two triangles each, far larger than the triangles inside, which
    # spatial splits cut at planes.
    vertices, faces = soup
    corners = np.array([[x, y, z] for x in (-1, 11) for y in (-1, 11) for z in (-1, 11)], dtype=np.float32)
    quads = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
    walls = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]) + len(vertices)
    room_v = np.vstack([np.asarray(vertices, dtype=np.float32), corners])
    room_f = np.vstack([faces, walls])
    bvh = slabtree.MeshBvh(room_v, room_f, quality="high")
    before = bvh.to_bytes()
    with pytest.raises(ValueError, match="spatial"):
        bvh.refit(room_v)
    assert bvh.to_bytes() == before
    # A rebuild builds it again, spatial splits and all.
    moved = room_v * np.float32(1.5)
    bvh.rebuild(moved)
    assert bvh.to_bytes() == slabtree.MeshBvh(moved, room_f, quality="high").to_bytes()
