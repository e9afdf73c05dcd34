"""slabtree as trimesh's ray engine.

``RayMeshIntersector`` has the interface of trimesh's intersectors (``trimesh.ray.ray_triangle``
and ``trimesh.ray.ray_pyembree``), so that one line switches a mesh to slabtree::

    import trimesh, slabtree.trimesh
    mesh = trimesh.creation.icosphere()
    mesh.ray = slabtree.trimesh.RayMeshIntersector(mesh)
    mesh.contains([[0, 0, 0], [2, 0, 0]])        # array([ True, False])

The BVH is built on first use and again whenever the mesh changes (trimesh's cache key). It
uses the watertight test by default: a ray through a shared edge or vertex hits, so that
containment by ray parity is exact. Multiple hits along a ray come from one traversal that
reports every triangle, not from casting the ray again from just past each hit.
"""

from __future__ import annotations

import numpy as np

from . import MeshBvh

__all__ = ["RayMeshIntersector"]


def _unit(directions: np.ndarray) -> np.ndarray:
    """Unit directions (zero rows stay zero, as trimesh's ``util.unitize`` leaves them)."""
    norm = np.linalg.norm(directions, axis=1)
    out = np.zeros_like(directions)
    ok = norm > 0
    out[ok] = directions[ok] / norm[ok, None]
    return out


class RayMeshIntersector:
    """Ray queries on a ``trimesh.Trimesh`` through slabtree.

    ``watertight`` chooses the triangle test (see ``slabtree.MeshBvh``); ``threads`` the threads
    of each batch (default: all). ``scale_to_box`` is accepted for trimesh's Embree intersector's
    sake and changes nothing: slabtree needs no rescaling of the mesh, as its hits are refined in
    float64.
    """

    def __init__(self, geometry, watertight: bool = True, threads=None, scale_to_box: bool = True):
        self.mesh = geometry
        self._scale_to_box = scale_to_box
        self.watertight = bool(watertight)
        self.threads = threads
        self._bvh = None
        self._key = None

    @property
    def bvh(self) -> MeshBvh:
        """The mesh's BVH, built again when the mesh has changed since the last query."""
        key = self.mesh.__hash__()
        if self._bvh is None or key != self._key:
            self._bvh = MeshBvh(self.mesh.vertices, self.mesh.faces, watertight=self.watertight, threads=self.threads)
            self._key = key
        return self._bvh

    def _rays(self, ray_origins, ray_directions):
        """Origins and unit directions as ``(n, 3)`` float64, and which rays can be traced (finite,
        with a direction): trimesh's intersectors skip the others rather than fail."""
        o = np.asarray(ray_origins, dtype=np.float64)
        d = np.asarray(ray_directions, dtype=np.float64)
        if o.shape != d.shape:
            raise ValueError("Ray origin and direction don't match!")
        o, d = o.reshape(-1, 3), d.reshape(-1, 3)
        valid = np.isfinite(o).all(axis=1) & np.isfinite(d).all(axis=1) & (d != 0).any(axis=1)
        return o, _unit(d), valid

    def intersects_id(
        self,
        ray_origins,
        ray_directions,
        multiple_hits: bool = True,
        max_hits: int = 100,
        return_locations: bool = False,
    ):
        """The triangles the rays hit: ``(index_tri, index_ray)``, and the hit points when
        ``return_locations``. With ``multiple_hits``, every hit of each ray (at most
        ``max_hits``), nearest first; otherwise the first hit of each ray that hits."""
        o, d, valid = self._rays(ray_origins, ray_directions)
        if len(o) == 0:
            empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
            return (*empty, np.zeros((0, 3))) if return_locations else empty
        live = np.nonzero(valid)[0]
        if multiple_hits:
            hits = self.bvh.intersect_all(o[live], d[live], threads=self.threads)
            index_ray, index_tri, t = live[hits.ray], hits.triangle, hits.t.astype(np.float64)
            if len(index_ray) > 1:
                # A ray through an edge or a vertex hits every triangle there, at one point: that
                # is one crossing of the surface. Hits of one ray at the same distance (to
                # rounding) on triangles that share a vertex are one hit, as trimesh's own
                # intersectors report them (and as containment by parity needs).
                faces = np.asarray(self.mesh.faces)
                a, b = faces[index_tri[:-1]], faces[index_tri[1:]]
                adjacent = (a[:, :, None] == b[:, None, :]).any(axis=(1, 2))
                close = np.abs(t[1:] - t[:-1]) <= 1e-6 * (np.abs(t[1:]) + self.mesh.scale)
                keep = np.r_[True, ~((index_ray[1:] == index_ray[:-1]) & close & adjacent)]
                index_ray, index_tri, t = index_ray[keep], index_tri[keep], t[keep]
            if len(index_ray):
                # The rank of each hit along its ray, to keep at most max_hits of each.
                first = np.r_[True, index_ray[1:] != index_ray[:-1]]
                start = np.maximum.accumulate(np.where(first, np.arange(len(index_ray)), 0))
                keep = np.arange(len(index_ray)) - start < max_hits
                index_ray, index_tri, t = index_ray[keep], index_tri[keep], t[keep]
        else:
            hits = self.bvh.intersect(o[live], d[live], threads=self.threads)
            hit = hits.triangle >= 0
            index_ray, index_tri, t = live[hit], hits.triangle[hit], hits.t[hit].astype(np.float64)
        if return_locations:
            return index_tri, index_ray, o[index_ray] + d[index_ray] * t[:, None]
        return index_tri, index_ray

    def intersects_location(self, ray_origins, ray_directions, multiple_hits: bool = True):
        """Where the rays hit: ``(locations, index_ray, index_tri)``."""
        index_tri, index_ray, locations = self.intersects_id(
            ray_origins, ray_directions, multiple_hits=multiple_hits, return_locations=True
        )
        return locations, index_ray, index_tri

    def intersects_first(self, ray_origins, ray_directions) -> np.ndarray:
        """The first triangle each ray hits, or -1."""
        o, d, valid = self._rays(ray_origins, ray_directions)
        out = np.full(len(o), -1, dtype=np.int64)
        if valid.any():
            out[valid] = self.bvh.intersect(o[valid], d[valid], threads=self.threads).triangle
        return out

    def intersects_any(self, ray_origins, ray_directions) -> np.ndarray:
        """Whether each ray hits the mesh."""
        o, d, valid = self._rays(ray_origins, ray_directions)
        out = np.zeros(len(o), dtype=bool)
        if valid.any():
            out[valid] = self.bvh.occluded(o[valid], d[valid], threads=self.threads)
        return out

    def contains_points(self, points) -> np.ndarray:
        """Whether each point is inside the (closed) mesh, by the parity of the hits of a ray
        from it (trimesh's ``ray_util.contains_points``)."""
        from trimesh.ray.ray_util import contains_points

        return contains_points(self, points)

    def __copy__(self, *args):
        return RayMeshIntersector(
            self.mesh, watertight=self.watertight, threads=self.threads, scale_to_box=self._scale_to_box
        )

    def __deepcopy__(self, *args):
        return self.__copy__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_bvh"], state["_key"] = None, None
        return state
