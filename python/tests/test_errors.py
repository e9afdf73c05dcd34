"""Bad input raises TypeError, ValueError or KeyError with a message that says what is wrong;
nothing crashes the interpreter."""

import numpy as np
import pytest

import slabtree

TRI = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float64)
FACE = np.array([[0, 1, 2]])


@pytest.mark.parametrize(
    "vertices, faces, error, message",
    [
        (TRI[:, :2], FACE, ValueError, r"vertices must have shape \(n, 3\)"),
        (TRI, FACE[:, :2], ValueError, r"faces must have shape \(m, 3\)"),
        (TRI.astype(str), FACE, TypeError, "vertices must hold real numbers"),
        (TRI.astype(complex), FACE, TypeError, "vertices must hold real numbers"),
        (TRI, FACE.astype(np.float64), TypeError, "faces must hold integers"),
        (TRI, [[0, 1, 3]], ValueError, "triangle 0 uses vertex 3, but there are only 3 vertices"),
        (TRI, [[0, -1, 2]], ValueError, "out of range"),
        (TRI, [[0, 1, 2**40]], ValueError, "out of range"),
        (np.where(np.eye(3, dtype=bool), np.nan, TRI), FACE, ValueError, "finite|NaN"),
        (TRI * 1e300, FACE, ValueError, "finite|inf"),
    ],
)
def test_bad_meshes(vertices, faces, error, message):
    with pytest.raises(error, match=message):
        slabtree.MeshBvh(vertices, faces)


def test_bad_rays_name_the_ray():
    bvh = slabtree.MeshBvh(TRI, FACE)
    o = np.zeros((4, 3))
    d = np.tile([0.0, 0.0, -1.0], (4, 1))
    d[2] = [np.nan, 0, 1]
    for query in (bvh.intersect, bvh.occluded, bvh.intersect_all):
        with pytest.raises(ValueError, match="ray 2"):
            query(o, d)
    # In a batch of several chunks, the first invalid ray is named, whichever thread meets it.
    many_o, many_d = np.zeros((5000, 3)), np.tile([0.0, 0.0, -1.0], (5000, 1))
    many_d[[1500, 3000, 4999]] = np.nan
    for query in (bvh.intersect, bvh.occluded, bvh.intersect_all):
        with pytest.raises(ValueError, match="ray 1500:"):
            query(many_o, many_d)
    # A zero direction is a valid ray that meets nothing.
    d[2] = [0, 0, 0]
    assert bvh.intersect(o + [0.25, 0.25, 1], d).triangle.tolist() == [0, 0, -1, 0]
    with pytest.raises(ValueError, match="ray 0"):
        bvh.intersect(o, np.tile([0.0, 0.0, -1.0], (4, 1)), tmin=2.0, tmax=1.0)
    with pytest.raises(ValueError, match="tmax must be one number or one per ray"):
        bvh.intersect(o, [0, 0, -1], tmax=[1.0, 2.0])
    with pytest.raises(ValueError, match="3 origins but 4 directions"):
        bvh.intersect(o[:3], np.tile([0.0, 0.0, -1.0], (4, 1)))
    with pytest.raises(ValueError, match=r"origins must have shape \(n, 3\)"):
        bvh.intersect(np.zeros((2, 4)), [0, 0, 1])
    with pytest.raises(TypeError, match="directions must hold real numbers"):
        bvh.intersect(o, [["a", "b", "c"]])
    with pytest.raises(ValueError, match="threads"):
        bvh.intersect(o, [0, 0, -1], threads=0)


def test_bad_points():
    bvh = slabtree.MeshBvh(TRI, FACE)
    with pytest.raises(ValueError, match="point 1"):
        bvh.closest_point([[0, 0, 0], [np.inf, 0, 0]])
    with pytest.raises(ValueError):
        bvh.closest_point([[0, 0, 0]], max_distance=-1.0)
    with pytest.raises(ValueError):
        bvh.closest_point([[0, 0, 0]], max_distance=np.nan)


def test_empty_inputs():
    bvh = slabtree.MeshBvh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int32))
    assert len(bvh) == 0
    hits = bvh.intersect([[0, 0, 0]], [[0, 0, 1]])
    assert hits.triangle.tolist() == [-1]
    mesh = slabtree.MeshBvh(TRI, FACE)
    none = mesh.intersect(np.zeros((0, 3)), np.zeros((0, 3)))
    assert all(len(a) == 0 for a in none)
    assert mesh.intersect_all(np.zeros((0, 3)), np.zeros((0, 3))).ray.shape == (0,)


def test_bad_trees():
    boxes = np.array([[[0, 0, 0], [1, 1, 1]], [[2, 2, 2], [3, 3, 3]]], dtype=np.float32)
    with pytest.raises(ValueError, match=r"boxes must have shape \(n, 2, 3\)"):
        slabtree.Dbvt(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="box 1"):
        slabtree.Dbvt(np.stack([boxes[0], [[0, 0, 0], [np.nan, 1, 1]]]))
    with pytest.raises(ValueError, match="box 0"):
        slabtree.Dbvt([[[1, 1, 1], [0, 0, 0]]])
    with pytest.raises(ValueError, match="margin"):
        slabtree.Dbvt(boxes, margin=-1)
    tree = slabtree.Dbvt(boxes)
    tree.remove([0])
    for ids in ([0], [7], [-1]):
        with pytest.raises(KeyError, match=f"id {ids[0]} is not in the tree"):
            tree.remove(ids)
        with pytest.raises(KeyError):
            tree.update(ids, boxes[:1])
        with pytest.raises(KeyError):
            tree.boxes(ids)
    with pytest.raises(ValueError, match="given twice"):
        tree.remove([1, 1])
    assert 1 in tree and len(tree) == 1
    with pytest.raises(TypeError, match="ids must be integers"):
        tree.remove([1.5])
    with pytest.raises(ValueError, match="1 ids but 2 boxes"):
        tree.update([1], boxes)
    # Ray casts name the first invalid ray, also past the first chunk of rays.
    many_o, many_d = np.zeros((5000, 3)), np.tile([1.0, 1.0, 1.0], (5000, 1))
    many_d[[1500, 3000]] = np.nan
    with pytest.raises(ValueError, match="ray 1500:"):
        tree.intersect(many_o, many_d)
    with pytest.raises(ValueError, match="ray 0"):
        tree.intersect(many_o[:2], many_d[:2], tmin=2.0, tmax=1.0)
    with pytest.raises(ValueError, match="box 0"):
        tree.update([1], [[[0, 0, 0], [np.inf, 1, 1]]])
    # A failed call changed nothing.
    assert tree.ids.tolist() == [1]
    np.testing.assert_array_equal(tree.boxes([1]), boxes[1:])


def test_unknown_build_quality_is_refused_by_name():
    with pytest.raises(ValueError, match="quality must be"):
        slabtree.MeshBvh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], quality="best")
