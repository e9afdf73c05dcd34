"""Brute-force oracles in float64 numpy, sharing no code with slabtree."""

import numpy as np


def random_soup(n, seed, size=2.0, spread=10.0):
    """``n`` random triangles of about ``size`` in a cube of side ``spread``, as (vertices,
    faces), plus a few that share edges (a fan around one vertex) and a degenerate one."""
    r = np.random.default_rng(seed)
    centres = r.uniform(0, spread, (n, 1, 3))
    tris = centres + r.uniform(-size / 2, size / 2, (n, 3, 3))
    fan_centre = np.array([spread / 2, spread / 2, spread / 2])
    ring = [fan_centre + np.array([np.cos(a), np.sin(a), 0.3 * np.sin(3 * a)]) for a in np.linspace(0, 2 * np.pi, 9)[:-1]]
    fan = [[fan_centre, ring[i], ring[(i + 1) % 8]] for i in range(8)]
    degenerate = [[fan_centre + 3, fan_centre + 3, fan_centre + 4]]
    all_tris = np.concatenate([tris, np.array(fan), np.array(degenerate)])
    vertices = all_tris.reshape(-1, 3)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    return vertices, faces


def random_rays(n, seed, spread=10.0):
    """Rays from a shell around the cube towards random points inside it."""
    r = np.random.default_rng(seed)
    d = r.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    origins = spread / 2 + d * spread * 1.5
    targets = r.uniform(0, spread, (n, 3))
    directions = targets - origins
    return origins, directions


def ray_triangle(origins, directions, tri, slack=0.0):
    """Möller–Trumbore in float64 (with no epsilon unless ``slack``, which widens the triangle
    by that much in barycentric terms), for every ray against every triangle: ``(t, u, v)``,
    each ``(rays, triangles)``; t is NaN where the ray's line misses."""
    o = np.asarray(origins, dtype=np.float64)[:, None, :]
    d = np.asarray(directions, dtype=np.float64)[:, None, :]
    v0, v1, v2 = (np.asarray(tri, dtype=np.float64)[None, :, k, :] for k in range(3))
    e1, e2 = v1 - v0, v2 - v0
    p = np.cross(d, e2)
    det = np.sum(e1 * p, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        s = o - v0
        u = np.sum(s * p, axis=-1) * inv
        q = np.cross(s, e1)
        v = np.sum(d * q, axis=-1) * inv
        t = np.sum(e2 * q, axis=-1) * inv
    inside = (det != 0) & (u >= -slack) & (v >= -slack) & (u + v <= 1 + slack)
    return np.where(inside, t, np.nan), u, v


def edge_margin(u, v):
    """How far inside its triangle a hit is, in barycentric terms (negative outside)."""
    return np.minimum(np.minimum(u, v), 1 - u - v)


def closest_hits(vertices, faces, origins, directions, tmin=0.0, tmax=np.inf):
    """The nearest hit of each ray: (t, triangle, margin of the hit inside its triangle), with
    inf, -1 on a miss."""
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)]
    t, u, v = ray_triangle(origins, directions, tri)
    tmin, tmax = np.reshape(tmin, (-1, 1)), np.reshape(tmax, (-1, 1))
    t = np.where((t >= tmin) & (t <= tmax), t, np.inf)
    best = np.argmin(t, axis=1)
    rows = np.arange(len(t))
    bt = t[rows, best]
    margin = edge_margin(u[rows, best], v[rows, best])
    return bt, np.where(np.isfinite(bt), best, -1), margin, t


def point_triangle_distance(p, tri):
    """Distance from each point to each triangle, ``(points, triangles)``, by the minimum over
    the face (when the projection falls inside) and the three edges."""
    p = np.asarray(p, dtype=np.float64)[:, None, :]
    a, b, c = (np.asarray(tri, dtype=np.float64)[None, :, k, :] for k in range(3))

    def segment(a, b):
        ab = b - a
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.clip(np.sum((p - a) * ab, axis=-1) / np.sum(ab * ab, axis=-1), 0, 1)
        s = np.nan_to_num(s)
        return np.linalg.norm(p - (a + ab * s[..., None]), axis=-1)

    edges = np.minimum(np.minimum(segment(a, b), segment(b, c)), segment(c, a))
    n = np.cross(b - a, c - a)
    nn = np.linalg.norm(n, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = n / nn[..., None]
        h = np.sum((p - a) * n, axis=-1)
        q = p - n * h[..., None]
        inside = (
            (np.sum(np.cross(b - a, q - a) * n, axis=-1) >= 0)
            & (np.sum(np.cross(c - b, q - b) * n, axis=-1) >= 0)
            & (np.sum(np.cross(a - c, q - c) * n, axis=-1) >= 0)
            & (nn > 0)
        )
    return np.where(inside, np.minimum(np.abs(h), edges), edges)


def slab(origins, directions, boxes, tmin=0.0, tmax=np.inf):
    """Entry distance of every ray into every box, ``(rays, boxes)``, inf where it misses."""
    o = np.asarray(origins, dtype=np.float64)[:, None, :]
    d = np.asarray(directions, dtype=np.float64)[:, None, :]
    lo = np.asarray(boxes, dtype=np.float64)[None, :, 0, :]
    hi = np.asarray(boxes, dtype=np.float64)[None, :, 1, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = (lo - o) / d, (hi - o) / d
    # A zero direction component: inside the slab (all t) or outside (no t).
    zero = d == 0
    inside = (o >= lo) & (o <= hi)
    near = np.where(zero, np.where(inside, -np.inf, np.inf), np.minimum(a, b))
    far = np.where(zero, np.where(inside, np.inf, -np.inf), np.maximum(a, b))
    enter = np.maximum(near.max(axis=-1), tmin)
    leave = np.minimum(far.min(axis=-1), tmax)
    return np.where(enter <= leave, enter, np.inf)


def box_overlaps(a, b):
    """Whether each box of ``a`` overlaps each of ``b`` (touching counts), ``(len a, len b)``."""
    a = np.asarray(a, dtype=np.float64)[:, None]
    b = np.asarray(b, dtype=np.float64)[None, :]
    return np.all((a[..., 0, :] <= b[..., 1, :]) & (b[..., 0, :] <= a[..., 1, :]), axis=-1)
