"""Runs trimesh's own ray tests with slabtree's intersector in place of both of trimesh's
(``ray_triangle`` and ``ray_pyembree``), so that every ``mesh.ray`` and every intersector a test
builds is slabtree's. Copy this file and ``generic.py`` beside ``test_ray.py`` and
``test_ray_upstream.py`` from trimesh's source distribution (``.ci/run`` does)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import trimesh.ray  # noqa: E402
import trimesh.ray.ray_pyembree  # noqa: E402
import trimesh.ray.ray_triangle  # noqa: E402

import slabtree.trimesh  # noqa: E402

trimesh.ray.ray_triangle.RayMeshIntersector = slabtree.trimesh.RayMeshIntersector
trimesh.ray.ray_pyembree.RayMeshIntersector = slabtree.trimesh.RayMeshIntersector
trimesh.ray.has_embree = True

# Why a test cannot apply here; each is skipped with its reason.
CANNOT_APPLY = {
    "test_rays": "needs models/ray_data.json and its meshes from trimesh's repository, which its "
    "source distribution does not ship",
}


def pytest_collection_modifyitems(items):
    for item in items:
        reason = CANNOT_APPLY.get(item.name)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
