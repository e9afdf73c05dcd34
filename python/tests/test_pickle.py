"""Pickling, and batches split over Dask workers in other processes: the BVHs that arrive answer as
brute force does, and as one local batch does."""

import pickle

import numpy as np
import pytest

import slabtree
from oracle import closest_hits, random_rays, random_soup
from test_dbvt import check, random_boxes


def test_a_pickled_mesh_bvh_answers_as_brute_force():
    vertices, faces = random_soup(300, seed=5)
    bvh = slabtree.MeshBvh(vertices, faces)
    copy = pickle.loads(pickle.dumps(bvh))
    assert isinstance(copy, slabtree.MeshBvh) and len(copy) == len(bvh) and copy.watertight
    origins, directions = random_rays(2000, seed=6)
    hits = copy.intersect(origins, directions)
    t, _, margin, _ = closest_hits(vertices, faces, origins, directions)
    clear = ~(np.isfinite(t) & (margin < 1e-6))
    hit = np.isfinite(t)
    assert hit[clear].sum() > 500
    assert (hit[clear] == (hits.triangle[clear] >= 0)).all()
    both = clear & hit
    np.testing.assert_allclose(hits.t[both], t[both], rtol=1e-5)
    # Bit for bit the original's answers: the same BVH, not a rebuild.
    np.testing.assert_array_equal(hits.triangle, bvh.intersect(origins, directions).triangle)


def test_a_pickled_dbvt_keeps_its_ids_boxes_and_margin():
    r = np.random.default_rng(3)
    tree = slabtree.Dbvt(random_boxes(r, 200), margin=0.25)
    tree.remove([3, 50, 199])
    tree.insert(random_boxes(r, 5))
    copy = pickle.loads(pickle.dumps(tree))
    ids = tree.ids
    assert copy.ids.tolist() == ids.tolist() and 3 not in copy and 200 in copy
    np.testing.assert_array_equal(copy.boxes(ids), tree.boxes(ids))
    # Brute force over the stored (grown) boxes.
    model = {int(i): b for i, b in zip(ids, tree.boxes(ids))}
    check(copy, model, r)
    # The margin came along: a small move keeps the grown box, a large one grows the new box.
    stored = copy.boxes([0])
    copy.update([0], stored + np.array([0.2, -0.2], dtype=np.float32)[None, :, None])
    np.testing.assert_array_equal(copy.boxes([0]), stored)
    far = np.array([[[100, 100, 100], [101, 101, 101]]], dtype=np.float32)
    copy.update([0], far)
    np.testing.assert_allclose(copy.boxes([0]), far + np.array([-0.25, 0.25])[None, :, None], rtol=1e-6)
    # Later ids continue the count.
    assert copy.insert(random_boxes(r, 1)).tolist() == [ids.max() + 1]


def test_bytes_that_are_no_dbvt_are_refused():
    tree = slabtree.Dbvt(random_boxes(np.random.default_rng(4), 3))
    data = tree.to_bytes()
    assert slabtree.Dbvt.from_bytes(data).ids.tolist() == [0, 1, 2]
    for bad, why in [
        (data[:-1], "end inside"),
        (b"SLABBVH\0" + data[8:], "SLABDBVT"),
        (data + b"\0", "after the last id"),
        (data[:24] + b"\x02" + data[25:], "flag"),
        (data[:8] + (9).to_bytes(4, "little") + data[12:], "version"),
    ]:
        with pytest.raises(ValueError, match=why):
            slabtree.Dbvt.from_bytes(bad)
    # A NaN corner is refused by name.
    nan = bytearray(data)
    nan[25:29] = np.float32(np.nan).tobytes()
    with pytest.raises(ValueError, match="box of id 0"):
        slabtree.Dbvt.from_bytes(bytes(nan))


def intersect_chunk(bvh, origins, directions):
    hits = bvh.intersect(origins, directions, threads=1)
    return hits.t, hits.triangle


def intersect_chunk_tree(tree, origins, directions):
    hits = tree.intersect(origins, directions, threads=1)
    return hits.id, hits.t


def test_a_batch_split_over_dask_workers_equals_one_local_batch():
    distributed = pytest.importorskip("dask.distributed")
    vertices, faces = random_soup(2000, seed=7)
    bvh = slabtree.MeshBvh(vertices, faces)
    r = np.random.default_rng(8)
    tree = slabtree.Dbvt(random_boxes(r, 500, spread=50.0))
    origins, directions = random_rays(4000, seed=9)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            # Each worker process receives the BVHs pickled once.
            [bvh_there, tree_there] = client.scatter([bvh, tree], broadcast=True)
            halves = np.array_split(np.arange(len(origins)), 2)
            mesh_parts = [client.submit(intersect_chunk, bvh_there, origins[h], directions[h]) for h in halves]
            tree_parts = [client.submit(intersect_chunk_tree, tree_there, origins[h], directions[h]) for h in halves]
            mesh_parts, tree_parts = client.gather(mesh_parts), client.gather(tree_parts)
            workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2, "two worker processes"
    local = bvh.intersect(origins, directions)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in mesh_parts]), local.t)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in mesh_parts]), local.triangle)
    assert (local.triangle >= 0).sum() > 500
    local_tree = tree.intersect(origins, directions)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in tree_parts]), local_tree.id)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in tree_parts]), local_tree.t)
