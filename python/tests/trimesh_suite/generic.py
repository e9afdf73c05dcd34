"""A stand-in for trimesh's ``tests/generic.py``, which trimesh's source distribution does not
ship, with the names its ray tests use. The meshes those tests load from trimesh's ``models/``
folder (not shipped either) are made here with the same shape and size; a test that needs a
model that cannot be made this way is skipped by ``conftest.py``, which says why."""

import logging
import time

import numpy as np
import trimesh

log = logging.getLogger("trimesh")
data = {}
_rng = np.random.default_rng(0)


def random(*args, **kwargs):
    """Uniform floats in [0, 1), as trimesh's ``g.random``."""
    return _rng.random(*args, **kwargs)


def _seven_eighths_cube():
    """A 10-unit cube about the origin with its +x +y +z octant cut away (the points of
    ``test_on_edge`` lie on its cut faces and edges)."""
    cube = trimesh.creation.box(extents=[10, 10, 10])
    corner = trimesh.creation.box(extents=[5, 5, 5])
    corner.apply_translation([2.5, 2.5, 2.5])
    return trimesh.boolean.difference([cube, corner], check_volume=False)


def _open_box():
    """A unit box with one face's two triangles removed: not watertight, as the teapot model."""
    box = trimesh.creation.box()
    keep = np.ones(len(box.faces), dtype=bool)
    keep[:2] = False
    return trimesh.Trimesh(box.vertices, box.faces[keep], process=False)


_MAKERS = {
    "unit_cube.STL": lambda: trimesh.creation.box(),
    "unit_sphere.STL": lambda: trimesh.creation.icosphere(subdivisions=3),
    "7_8ths_cube.stl": _seven_eighths_cube,
    "teapot.stl": _open_box,
    "featuretype.STL": None,
}


def get_mesh(name, **kwargs):
    """The mesh trimesh's tests load as ``name``, made here; kwargs go to ``trimesh.Trimesh``."""
    import pytest

    make = _MAKERS.get(name)
    if make is None:
        pytest.skip(f"{name} is a model of trimesh's repository that cannot be made here")
    mesh = make()
    return trimesh.Trimesh(vertices=mesh.vertices, faces=mesh.faces, **kwargs)
