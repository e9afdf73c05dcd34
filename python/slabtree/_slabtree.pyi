"""Type stubs of the native module (``tmin`` and ``tmax``: one value per ray, or one for all). The package ``slabtree`` wraps it; use that instead: it
checks and converts arrays, which this module takes only as C-contiguous float32 (points, rays,
boxes), uint32 (faces) and int64 (ids)."""

from typing import Optional

import numpy as np
import numpy.typing as npt

__version__: str

class MeshBvh:
    def __init__(
        self,
        vertices: npt.NDArray[np.float32],
        faces: npt.NDArray[np.uint32],
        watertight: bool = True,
        threads: Optional[int] = None,
        quality: str = "medium",
    ) -> None: ...
    def intersect(
        self,
        origins: npt.NDArray[np.float32],
        directions: npt.NDArray[np.float32],
        tmin: npt.NDArray[np.float32],
        tmax: npt.NDArray[np.float32],
        threads: Optional[int] = None,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def occluded(
        self,
        origins: npt.NDArray[np.float32],
        directions: npt.NDArray[np.float32],
        tmin: npt.NDArray[np.float32],
        tmax: npt.NDArray[np.float32],
        threads: Optional[int] = None,
    ) -> npt.NDArray[np.bool_]: ...
    def intersect_all(
        self,
        origins: npt.NDArray[np.float32],
        directions: npt.NDArray[np.float32],
        tmin: npt.NDArray[np.float32],
        tmax: npt.NDArray[np.float32],
        threads: Optional[int] = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...
    def closest_point(
        self, points: npt.NDArray[np.float32], max_distance: float = ..., threads: Optional[int] = None
    ) -> tuple[
        npt.NDArray[np.float32],
        npt.NDArray[np.int64],
        npt.NDArray[np.float32],
        npt.NDArray[np.float32],
        npt.NDArray[np.float32],
    ]: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes, untrusted: bool = False) -> MeshBvh: ...
    @property
    def watertight(self) -> bool: ...
    @property
    def vertices(self) -> npt.NDArray[np.float32]: ...
    @property
    def faces(self) -> npt.NDArray[np.int64]: ...
    def __len__(self) -> int: ...

class Dbvt:
    def __init__(self, boxes: npt.NDArray[np.float32], margin: float = 0.0) -> None: ...
    def insert(self, boxes: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]: ...
    def remove(self, ids: npt.NDArray[np.int64]) -> None: ...
    def update(self, ids: npt.NDArray[np.int64], boxes: npt.NDArray[np.float32]) -> None: ...
    def boxes(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]: ...
    def ids(self) -> npt.NDArray[np.int64]: ...
    def intersect(
        self,
        origins: npt.NDArray[np.float32],
        directions: npt.NDArray[np.float32],
        tmin: npt.NDArray[np.float32],
        tmax: npt.NDArray[np.float32],
        threads: Optional[int] = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...
    def overlap(
        self, boxes: npt.NDArray[np.float32], threads: Optional[int] = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    def self_pairs(self) -> npt.NDArray[np.int64]: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> Dbvt: ...
    def __len__(self) -> int: ...
    def __contains__(self, id: int) -> bool: ...
