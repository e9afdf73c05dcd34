"""Ray queries against triangle meshes and AABB trees at native speed, on numpy arrays.

slabtree's mesh BVH (8-wide SIMD nodes, watertight when asked) and its dynamic AABB tree, from
Python. Batches release the GIL and run on all cores, or on ``threads`` of them.

>>> import numpy as np
>>> import slabtree
>>> vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float64)
>>> faces = np.array([[0, 1, 2]])
>>> bvh = slabtree.MeshBvh(vertices, faces)
>>> hits = bvh.intersect([[0.25, 0.25, 1.0], [5.0, 5.0, 1.0]], [0, 0, -1])
>>> hits.t.tolist(), hits.triangle.tolist()
([1.0, inf], [0, -1])
>>> bvh.occluded([[0.25, 0.25, 1.0]], [[0, 0, -1]], tmax=0.5).tolist()
[False]

``slabtree.trimesh.RayMeshIntersector`` gives a trimesh mesh this engine:
``mesh.ray = slabtree.trimesh.RayMeshIntersector(mesh)``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ._slabtree import BroadPhase as _BroadPhase
from ._slabtree import Dbvt as _Dbvt
from ._slabtree import MeshBvh as _MeshBvh
from ._slabtree import __version__

__all__ = [
    "MeshBvh",
    "Dbvt",
    "BroadPhase",
    "PairEvents",
    "STATIC",
    "KINEMATIC",
    "DYNAMIC",
    "RayHits",
    "AllHits",
    "ClosestPoints",
    "BoxHits",
    "Overlaps",
    "__version__",
]


class PairEvents(NamedTuple):
    """What ``BroadPhase.update_pairs`` found: ``(k, 2)`` int64 arrays of ids, each pair with the
    smaller id first, sorted."""

    began: np.ndarray
    ended: np.ndarray


class RayHits(NamedTuple):
    """The closest hit of each ray; a miss has ``t = inf`` and ``triangle = -1``."""

    t: np.ndarray
    """Distance along the ray, in units of its direction's length (float32)."""
    triangle: np.ndarray
    """Index of the triangle hit, or -1 (int64)."""
    u: np.ndarray
    """Barycentric weight of the triangle's second corner (float32)."""
    v: np.ndarray
    """Barycentric weight of the triangle's third corner (float32)."""


class AllHits(NamedTuple):
    """Every hit along every ray, by ray, then by distance."""

    ray: np.ndarray
    """Index of the ray (int64)."""
    triangle: np.ndarray
    """Index of the triangle (int64)."""
    t: np.ndarray
    """Distance along the ray (float32)."""


class ClosestPoints(NamedTuple):
    """The nearest point of a mesh to each query point. Where nothing lies within the maximum
    distance: a NaN point, ``triangle = -1`` and ``distance = inf``."""

    point: np.ndarray
    """The nearest point, ``(n, 3)`` float32."""
    triangle: np.ndarray
    """The triangle it lies on (int64)."""
    distance: np.ndarray
    """Its distance from the query point (float32)."""
    u: np.ndarray
    """Barycentric weight of the triangle's second corner (float32)."""
    v: np.ndarray
    """Barycentric weight of the triangle's third corner (float32)."""


class BoxHits(NamedTuple):
    """The box each ray enters first: its id (-1 on a miss) and the entry distance (inf)."""

    id: np.ndarray
    t: np.ndarray


class Overlaps(NamedTuple):
    """Pairs of a query box and a stored box that overlap, by query, then by id."""

    query: np.ndarray
    id: np.ndarray


def _real_array(a, name: str) -> np.ndarray:
    """``a`` as an array of real numbers, or a TypeError that names it."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, not {arr.dtype}")
    return arr


def _points(a, name: str) -> np.ndarray:
    """``(n, 3)`` float32, C-contiguous (a copy when needed); ``(3,)`` is one point."""
    arr = _real_array(a, name)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3), not {arr.shape}")
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


def _rays(origins, directions, tmin=0.0, tmax=np.inf):
    """Origins and directions as two ``(n, 3)`` float32 arrays (one of them may be a single
    row, which is repeated), and ``tmin`` and ``tmax`` as float32 arrays of one value per ray or
    one for all."""
    o, d = _points(origins, "origins"), _points(directions, "directions")
    if len(o) != len(d):
        if len(o) == 1:
            o = np.ascontiguousarray(np.broadcast_to(o, d.shape))
        elif len(d) == 1:
            d = np.ascontiguousarray(np.broadcast_to(d, o.shape))
        else:
            raise ValueError(f"{len(o)} origins but {len(d)} directions")
    n = len(o)
    ranges = []
    for name, value in (("tmin", tmin), ("tmax", tmax)):
        r = _real_array(value, name)
        if r.ndim > 1 or (r.ndim == 1 and len(r) not in (1, n)):
            raise ValueError(f"{name} must be one number or one per ray ({n}), not of shape {r.shape}")
        ranges.append(np.ascontiguousarray(r.reshape(-1), dtype=np.float32))
    return o, d, ranges[0], ranges[1]


def _boxes(a, name: str = "boxes") -> np.ndarray:
    """``(n, 2, 3)`` float32 boxes (minimum corner, maximum corner); ``(2, 3)`` is one box."""
    arr = _real_array(a, name)
    if arr.ndim == 2:
        arr = arr[None, :, :]
    if arr.ndim != 3 or arr.shape[1:] != (2, 3):
        raise ValueError(f"{name} must have shape (n, 2, 3), not {arr.shape}")
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


def _ids(a) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim == 0:
        arr = arr[None]
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise TypeError(f"ids must be integers, not {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"ids must be one-dimensional, not of shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


class MeshBvh:
    """The BVH of a triangle mesh, for ray and closest-point queries.

    ``vertices`` is ``(n, 3)`` float32 or float64 (read as float32), ``faces`` is ``(m, 3)`` of
    any integer type. ``watertight=True`` (the default) uses the watertight triangle test (Woop,
    Benthin and Wald 2013): no ray slips between two triangles that share an edge. ``False`` uses
    Möller–Trumbore, slightly faster. The build runs on ``threads`` threads (default: all).
    ``quality="low"`` builds several times faster, for a tree whose rays take longer (a mesh
    rebuilt every frame); ``"medium"`` (the default) is the binned SAH build.

    >>> import numpy as np, slabtree
    >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    >>> len(bvh), bvh.watertight
    (1, True)
    """

    def __init__(
        self, vertices, faces, watertight: bool = True, threads: Optional[int] = None, quality: str = "medium"
    ):
        v32 = MeshBvh._vertices(vertices)
        f = np.asarray(faces)
        if f.dtype.kind not in "iu" and not (f.size == 0 and f.dtype.kind == "f"):
            raise TypeError(f"faces must hold integers, not {f.dtype}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"faces must have shape (m, 3), not {f.shape}")
        if f.size and (f.min() < 0 or f.max() > np.iinfo(np.uint32).max):
            bad = f.min() if f.min() < 0 else f.max()
            raise ValueError(f"face index {bad} is out of range for {len(v32)} vertices")
        self._native = _MeshBvh(
            v32,
            np.ascontiguousarray(f, dtype=np.uint32),
            bool(watertight),
            threads,
            str(quality),
        )

    @classmethod
    def _wrap(cls, native: _MeshBvh) -> "MeshBvh":
        self = cls.__new__(cls)
        self._native = native
        return self

    def rebuild(self, vertices, threads: Optional[int] = None) -> None:
        """Moves the mesh's vertices to ``vertices`` (``(n, 3)``, as many as before; the faces
        stay) and builds the BVH again with its quality and triangle test, in the old tree's
        memory: for a mesh that deforms every frame, built with ``quality="low"``. The result is
        the BVH that ``MeshBvh(vertices, faces)`` builds. Bad vertices (another count, NaN or
        infinite coordinates) are a ValueError, and leave the BVH as it was.

        >>> import slabtree
        >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], quality="low")
        >>> bvh.rebuild([[0, 0, 1], [1, 0, 1], [0, 1, 1]])
        >>> float(bvh.intersect([0.25, 0.25, 3], [0, 0, -1]).t[0])
        2.0
        """
        self._native.rebuild(MeshBvh._vertices(vertices), threads)

    def refit(self, vertices, threads: Optional[int] = None) -> None:
        """Moves the mesh's vertices to ``vertices`` as ``rebuild`` does, but keeps the tree's
        shape and only recomputes its boxes: faster than a rebuild, and the rays slow down as the
        mesh moves away from the shape it was built for. A BVH built with ``quality="high"`` is
        refused (a ValueError): its spatial splits cut triangles at planes that moved.

        >>> import slabtree
        >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
        >>> bvh.refit([[0, 0, 1], [1, 0, 1], [0, 1, 1]])
        >>> float(bvh.intersect([0.25, 0.25, 3], [0, 0, -1]).t[0])
        2.0
        """
        self._native.refit(MeshBvh._vertices(vertices), threads)

    @staticmethod
    def _vertices(vertices) -> np.ndarray:
        """``vertices`` as a contiguous ``(n, 3)`` float32 array."""
        v = _real_array(vertices, "vertices")
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"vertices must have shape (n, 3), not {v.shape}")
        with np.errstate(over="ignore"):
            # A coordinate beyond float32 becomes inf, which the library refuses by name.
            return np.ascontiguousarray(v, dtype=np.float32)

    def intersect(
        self, origins, directions, tmin=0.0, tmax=np.inf, threads: Optional[int] = None
    ) -> RayHits:
        """The closest hit of each ray (``(n, 3)`` origins and directions; either may be one
        row, shared by all rays) within ``[tmin, tmax]`` (one number, or one per ray).

        >>> import slabtree
        >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
        >>> hit = bvh.intersect([0.25, 0.5, 2], [0, 0, -1])
        >>> float(hit.t[0]), int(hit.triangle[0]), float(hit.u[0]), float(hit.v[0])
        (2.0, 0, 0.25, 0.5)
        """
        return RayHits(*self._native.intersect(*_rays(origins, directions, tmin, tmax), threads))

    def occluded(
        self, origins, directions, tmin=0.0, tmax=np.inf, threads: Optional[int] = None
    ) -> np.ndarray:
        """Whether each ray hits anything within ``[tmin, tmax]`` (any hit: faster than
        ``intersect``), as a bool array.

        >>> import slabtree
        >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
        >>> bvh.occluded([[0.25, 0.25, 1], [2, 2, 1]], [0, 0, -1]).tolist()
        [True, False]
        """
        return self._native.occluded(*_rays(origins, directions, tmin, tmax), threads)

    def intersect_all(
        self, origins, directions, tmin=0.0, tmax=np.inf, threads: Optional[int] = None
    ) -> AllHits:
        """Every hit along every ray, by ray and then by distance (two triangles that share an
        edge the ray crosses are both hits, at the same ``t``).

        >>> import slabtree
        >>> square = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
        >>> layers = [[x, y, z + 1] for x, y, z in square]
        >>> bvh = slabtree.MeshBvh(square + layers, [[0, 1, 2], [4, 5, 6]])
        >>> hits = bvh.intersect_all([0.75, 0.25, 5], [0, 0, -1])
        >>> hits.ray.tolist(), hits.triangle.tolist(), hits.t.tolist()
        ([0, 0], [1, 0], [4.0, 5.0])
        """
        return AllHits(*self._native.intersect_all(*_rays(origins, directions, tmin, tmax), threads))

    def closest_point(self, points, max_distance: float = np.inf, threads: Optional[int] = None) -> ClosestPoints:
        """The nearest point of the mesh to each point (``(n, 3)``), within ``max_distance``.

        >>> import slabtree
        >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
        >>> near = bvh.closest_point([[2, 0, 0], [9, 9, 9]], max_distance=5)
        >>> near.point[0].tolist(), near.distance.tolist(), near.triangle.tolist()
        ([1.0, 0.0, 0.0], [1.0, inf], [0, -1])
        """
        return ClosestPoints(*self._native.closest_point(_points(points, "points"), float(max_distance), threads))

    def to_bytes(self) -> bytes:
        """The BVH and its mesh in slabtree's saved format: ``MeshBvh.from_bytes`` reads it back
        without a rebuild, in about a tenth of the build's time.

        >>> import slabtree
        >>> bvh = slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
        >>> slabtree.MeshBvh.from_bytes(bvh.to_bytes()).to_bytes() == bvh.to_bytes()
        True
        """
        return self._native.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, untrusted: bool = False) -> "MeshBvh":
        """Reads ``to_bytes``'s output. A damaged or truncated file is a ValueError. With
        ``untrusted=True`` every box is computed again from the mesh, so that even a file whose
        checksum was forged answers as a BVH over its mesh."""
        return cls._wrap(_MeshBvh.from_bytes(bytes(data), bool(untrusted)))

    def __reduce__(self):
        # Pickled as its saved bytes (``to_bytes``), so that Dask, Ray or multiprocessing
        # workers receive the BVH without building it again.
        return (MeshBvh.from_bytes, (self.to_bytes(),))

    @property
    def watertight(self) -> bool:
        """Whether the watertight triangle test is used."""
        return self._native.watertight

    @property
    def vertices(self) -> np.ndarray:
        """The mesh's vertices, ``(n, 3)`` float32 (a copy)."""
        return self._native.vertices

    @property
    def faces(self) -> np.ndarray:
        """The mesh's faces, ``(m, 3)`` int64 (a copy)."""
        return self._native.faces

    def __len__(self) -> int:
        return len(self._native)

    def __repr__(self) -> str:
        return repr(self._native)


class Dbvt:
    """A dynamic AABB tree of boxes named by integer ids: batched ray casts, overlap queries,
    self pairs (a broad phase), insertion, removal and moves.

    ``boxes`` is ``(n, 2, 3)``: each box's minimum corner, then its maximum corner. The boxes get
    the ids ``0..n``; later insertions continue the count, and ids are never reused, so an id
    kept after its box was removed is a ``KeyError``. With ``margin > 0`` each box is stored
    grown by it on every side, and a move that stays inside the grown box costs nothing (queries
    then answer for the grown boxes); with the default ``0``, boxes are stored exactly.

    >>> import numpy as np, slabtree
    >>> boxes = np.array([[[0, 0, 0], [1, 1, 1]], [[0.5, 0.5, 0.5], [2, 2, 2]], [[5, 5, 5], [6, 6, 6]]])
    >>> tree = slabtree.Dbvt(boxes)
    >>> tree.self_pairs().tolist()
    [[0, 1]]
    >>> hit = tree.intersect([[-1, 0.25, 0.25]], [[1, 0, 0]])
    >>> hit.id.tolist(), hit.t.tolist()
    ([0], [1.0])
    >>> tree.remove([0])
    >>> 0 in tree, len(tree)
    (False, 2)
    """

    def __init__(self, boxes, margin: float = 0.0):
        self._native = _Dbvt(_boxes(boxes), float(margin))

    def to_bytes(self) -> bytes:
        """The tree as bytes: its margin and every id's stored box. ``Dbvt.from_bytes`` builds a
        tree that stores the same boxes under the same ids, so every query answers the same (the
        order of its answers may differ: the tree is built afresh). Pickling uses it.

        >>> import pickle, slabtree
        >>> tree = slabtree.Dbvt([[[0, 0, 0], [1, 1, 1]], [[0.5, 0.5, 0.5], [2, 2, 2]]], margin=0.1)
        >>> tree.remove([0])
        >>> copy = pickle.loads(pickle.dumps(tree))
        >>> copy.ids.tolist(), bool((copy.boxes([1]) == tree.boxes([1])).all()), 0 in copy
        ([1], True, False)
        """
        return self._native.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Dbvt":
        """Reads ``to_bytes``'s output; anything else is a ValueError."""
        self = cls.__new__(cls)
        self._native = _Dbvt.from_bytes(bytes(data))
        return self

    def __reduce__(self):
        return (Dbvt.from_bytes, (self.to_bytes(),))

    def insert(self, boxes) -> np.ndarray:
        """Adds ``(k, 2, 3)`` boxes; returns their new ids."""
        return self._native.insert(_boxes(boxes))

    def remove(self, ids) -> None:
        """Removes the boxes of ``ids``. An unknown or removed id is a KeyError, and then nothing
        is removed."""
        self._native.remove(_ids(ids))

    def update(self, ids, boxes) -> None:
        """Moves the boxes of ``ids`` to ``boxes`` (``(k, 2, 3)``).

        >>> import slabtree
        >>> tree = slabtree.Dbvt([[[0, 0, 0], [1, 1, 1]], [[3, 3, 3], [4, 4, 4]]])
        >>> tree.update([1], [[[0.5, 0.5, 0.5], [1.5, 1.5, 1.5]]])
        >>> tree.self_pairs().tolist()
        [[0, 1]]
        """
        self._native.update(_ids(ids), _boxes(boxes))

    def boxes(self, ids) -> np.ndarray:
        """The stored boxes of ``ids``, ``(k, 2, 3)`` float32 (grown by the margin)."""
        return self._native.boxes(_ids(ids))

    @property
    def ids(self) -> np.ndarray:
        """The ids in the tree, ascending."""
        return self._native.ids()

    def intersect(
        self, origins, directions, tmin=0.0, tmax=np.inf, threads: Optional[int] = None
    ) -> BoxHits:
        """For each ray, the box it enters first and the distance there (``-1`` and ``inf`` on a
        miss; a ray that starts inside a box enters it at ``tmin``; of boxes entered at the same
        distance, one of them)."""
        return BoxHits(*self._native.intersect(*_rays(origins, directions, tmin, tmax), threads))

    def overlap(self, boxes, threads: Optional[int] = None) -> Overlaps:
        """Every pair of a query box and a stored box that overlap (touching counts).

        >>> import slabtree
        >>> tree = slabtree.Dbvt([[[0, 0, 0], [1, 1, 1]], [[3, 3, 3], [4, 4, 4]]])
        >>> found = tree.overlap([[[0.5, 0.5, 0.5], [3.5, 3.5, 3.5]], [[9, 9, 9], [10, 10, 10]]])
        >>> found.query.tolist(), found.id.tolist()
        ([0, 0], [0, 1])
        """
        return Overlaps(*self._native.overlap(_boxes(boxes), threads))

    def self_pairs(self) -> np.ndarray:
        """Every pair of stored boxes that overlap, as a ``(k, 2)`` array of ids, the smaller
        first, sorted."""
        return self._native.self_pairs()

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, id) -> bool:
        try:
            return int(id) in self._native
        except (TypeError, ValueError, OverflowError):
            return False

    def __repr__(self) -> str:
        return repr(self._native)


STATIC, KINEMATIC, DYNAMIC = 0, 1, 2


def _per_object(a, n: int, name: str, dtype) -> np.ndarray:
    """One value per object: a scalar for all, or ``(n,)``."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, not {arr.dtype}")
    if arr.ndim == 0:
        arr = np.full(n, arr)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be one value or ({n},), not {arr.shape}")
    if (arr < 0).any() or (arr > np.iinfo(dtype).max).any():
        raise ValueError(f"{name} must be between 0 and {np.iinfo(dtype).max}")
    return np.ascontiguousarray(arr, dtype=dtype)


class BroadPhase:
    """A physics engine's broad phase: boxes named by integer ids, each static (``0``),
    kinematic (``1``) or dynamic (``2``) with a layer filter, and after each frame's moves the
    pairs of them that began and ended to overlap.

    A pair needs a dynamic object (static and kinematic objects do not pair with each other),
    and each object's ``category`` must meet the other's ``mask``. Boxes are stored grown by
    ``margin`` (and stretched by ``prediction`` times their displacement), so that small moves
    change nothing; pairs are of these grown boxes. Ids are never reused: a removed id is a
    ``KeyError``.

    >>> import slabtree
    >>> world = slabtree.BroadPhase()
    >>> ground, ball = world.add([[[-9, -1, -9], [9, 0, 9]], [[0, 3, 0], [1, 4, 1]]], kinds=[slabtree.STATIC, slabtree.DYNAMIC])
    >>> world.update_pairs().began.tolist()
    []
    >>> world.move([ball], [[[0, -0.5, 0], [1, 0.5, 1]]], displacements=[[0, -3.5, 0]])
    1
    >>> events = world.update_pairs()
    >>> events.began.tolist(), events.ended.tolist()
    ([[0, 1]], [])
    >>> world.remove([ball])
    >>> world.update_pairs().ended.tolist()
    [[0, 1]]
    """

    def __init__(self, margin: float = 0.05, prediction: float = 0.0):
        self._native = _BroadPhase(float(margin), float(prediction))

    def add(self, boxes, kinds=DYNAMIC, category=1, mask=0xFFFFFFFF) -> np.ndarray:
        """Adds ``(k, 2, 3)`` boxes of ``kinds`` with layer filters ``category`` and ``mask``
        (each one value for all or ``(k,)``); returns their new ids. Their pairs begin at the
        next ``update_pairs``."""
        b = _boxes(boxes)
        n = len(b)
        return self._native.add(
            b,
            _per_object(kinds, n, "kinds", np.uint8),
            _per_object(category, n, "category", np.uint32),
            _per_object(mask, n, "mask", np.uint32),
        )

    def remove(self, ids) -> None:
        """Removes the objects of ``ids``; their pairs end at the next ``update_pairs``. An
        unknown or removed id is a KeyError, and then nothing is removed."""
        self._native.remove(_ids(ids))

    def move(self, ids, boxes, displacements=None) -> int:
        """Moves the objects of ``ids`` to ``boxes`` (``(k, 2, 3)``), each having moved by its row
        of ``displacements`` (``(k, 3)``, zero by default) since its last move. Returns how many
        stored boxes changed; a bad id or box changes nothing."""
        i, b = _ids(ids), _boxes(boxes)
        d = np.zeros((len(b), 3), np.float32) if displacements is None else _points(displacements, "displacements")
        return self._native.move_objects(i, b, d)

    def set_filter(self, ids, category, mask) -> None:
        """Sets the layer filters of ``ids``; pairs they no longer pass end at the next
        ``update_pairs``."""
        i = _ids(ids)
        self._native.set_filter(
            i, _per_object(category, len(i), "category", np.uint32), _per_object(mask, len(i), "mask", np.uint32)
        )

    def set_kind(self, ids, kinds) -> None:
        """Sets the kinds of ``ids`` (0 static, 1 kinematic, 2 dynamic)."""
        i = _ids(ids)
        self._native.set_kind(i, _per_object(kinds, len(i), "kinds", np.uint8))

    def update_pairs(self) -> PairEvents:
        """The pairs that began and those that ended since the last call."""
        return PairEvents(*self._native.update_pairs())

    def pairs(self) -> np.ndarray:
        """Every pair tracked, ``(k, 2)`` ids, the smaller first, sorted."""
        return self._native.pairs()

    def boxes(self, ids) -> np.ndarray:
        """The stored (grown) boxes of ``ids``, ``(k, 2, 3)`` float32."""
        return self._native.boxes(_ids(ids))

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, id) -> bool:
        try:
            return int(id) in self._native
        except (TypeError, ValueError, OverflowError):
            return False

    def __repr__(self) -> str:
        return repr(self._native)
