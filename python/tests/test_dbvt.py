"""slabtree.Dbvt against brute force over a model of its boxes, after every step of random
sequences of insertions, removals and moves."""

import numpy as np
import pytest

import slabtree
from oracle import box_overlaps, slab


def random_boxes(r, n, spread=20.0, size=2.0):
    lo = r.uniform(0, spread, (n, 3))
    return np.stack([lo, lo + r.uniform(0.01, size, (n, 3))], axis=1)


def check(tree, model, r):
    ids = np.array(sorted(model), dtype=np.int64)
    assert tree.ids.tolist() == ids.tolist() and len(tree) == len(ids)
    boxes = np.array([model[i] for i in ids]).reshape(-1, 2, 3)
    np.testing.assert_array_equal(tree.boxes(ids), boxes.astype(np.float32))
    # Self pairs.
    over = box_overlaps(boxes, boxes) if len(ids) else np.zeros((0, 0), bool)
    a, b = np.nonzero(np.triu(over, 1))
    want = np.stack([ids[a], ids[b]], axis=1) if len(a) else np.zeros((0, 2), np.int64)
    want = want[np.lexsort((want[:, 1], want[:, 0]))]
    np.testing.assert_array_equal(tree.self_pairs().reshape(-1, 2), want)
    # Overlap queries.
    queries = random_boxes(r, 20, size=6.0)
    got = tree.overlap(queries)
    q, k = np.nonzero(box_overlaps(queries, boxes)) if len(ids) else (np.zeros(0, int), np.zeros(0, int))
    assert got.query.tolist() == q.tolist() and got.id.tolist() == ids[k].tolist()
    # Ray casts: the distance of brute force's nearest entry, and a box entered there.
    origins = r.uniform(-10, 30, (50, 3))
    directions = r.normal(size=(50, 3))
    hit = tree.intersect(origins, directions)
    t = slab(origins, directions, boxes) if len(ids) else np.full((50, 0), np.inf)
    best = t.min(axis=1) if len(ids) else np.full(50, np.inf)
    assert (np.isfinite(best) == (hit.id >= 0)).all()
    found = hit.id >= 0
    np.testing.assert_allclose(hit.t[found], best[found], rtol=1e-5, atol=1e-5)
    col = np.searchsorted(ids, hit.id[found])
    rows = np.nonzero(found)[0]
    assert (np.abs(t[rows, col] - best[found]) <= 1e-5 * (1 + np.abs(best[found]))).all()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_against_a_model(seed):
    r = np.random.default_rng(seed)
    start = random_boxes(r, 40)
    tree = slabtree.Dbvt(start)
    model = {i: start[i].astype(np.float32) for i in range(40)}
    next_id = 40
    for step in range(60):
        op = r.integers(4)
        live = np.array(sorted(model), dtype=np.int64)
        if op == 0 or len(live) < 5:
            new = random_boxes(r, int(r.integers(1, 8)))
            ids = tree.insert(new)
            assert ids.tolist() == list(range(next_id, next_id + len(new)))
            next_id += len(new)
            model.update({int(i): b.astype(np.float32) for i, b in zip(ids, new)})
        elif op == 1:
            gone = r.choice(live, size=int(r.integers(1, 4)), replace=False)
            tree.remove(gone)
            for i in gone:
                del model[int(i)]
            with pytest.raises(KeyError):
                tree.remove(gone[:1])
        else:
            moved = r.choice(live, size=int(r.integers(1, 10)), replace=False)
            # Moves out of the old box, and moves that shrink inside it.
            if op == 2:
                new = random_boxes(r, len(moved))
            else:
                new = np.array([[model[int(i)][0] + 0.001, model[int(i)][1] - 0.001] for i in moved])
            tree.update(moved, new)
            model.update({int(i): b.astype(np.float32) for i, b in zip(moved, new)})
        check(tree, model, r)


def test_a_margin_keeps_grown_boxes():
    boxes = np.array([[[0, 0, 0], [1, 1, 1]], [[1.15, 0, 0], [2, 1, 1]]], dtype=np.float32)
    exact = slabtree.Dbvt(boxes)
    assert exact.self_pairs().shape == (0, 2)
    fat = slabtree.Dbvt(boxes, margin=0.1)
    # Grown by 0.1, the two boxes overlap.
    assert fat.self_pairs().tolist() == [[0, 1]]
    np.testing.assert_allclose(fat.boxes([0]), [[[-0.1, -0.1, -0.1], [1.1, 1.1, 1.1]]], rtol=1e-6)
    # A small move stays inside the grown box, which is kept.
    fat.update([0], [[[0.05, 0, 0], [1.05, 1, 1]]])
    np.testing.assert_allclose(fat.boxes([0]), [[[-0.1, -0.1, -0.1], [1.1, 1.1, 1.1]]], rtol=1e-6)


def test_threads_give_the_same_answers():
    r = np.random.default_rng(9)
    tree = slabtree.Dbvt(random_boxes(r, 2000, spread=100.0))
    origins, directions = r.uniform(-10, 110, (3000, 3)), r.normal(size=(3000, 3))
    one, many = tree.intersect(origins, directions, threads=1), tree.intersect(origins, directions)
    np.testing.assert_array_equal(one.id, many.id)
    np.testing.assert_array_equal(one.t, many.t)
    queries = random_boxes(r, 500, spread=100.0, size=5.0)
    a, b = tree.overlap(queries, threads=1), tree.overlap(queries, threads=2)
    np.testing.assert_array_equal(a.query, b.query)
    np.testing.assert_array_equal(a.id, b.id)


def test_ray_casts_over_several_chunks_match_brute_force():
    # More rays than one task takes (1024), so that every chunk's answers land in their rows.
    r = np.random.default_rng(11)
    boxes = random_boxes(r, 300, spread=60.0, size=8.0)
    tree = slabtree.Dbvt(boxes)
    ids = np.arange(300)
    origins, directions = r.uniform(-10, 70, (2500, 3)), r.normal(size=(2500, 3))
    hit = tree.intersect(origins, directions, threads=1)
    # Brute force on what the tree and the rays hold: float32 coordinates. (At coordinates up to
    # 70, the float64 boxes' rounding alone moves an entry by 2e-5 relative on a grazing ray.)
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    t = slab(f32(origins), f32(directions), f32(boxes))
    best = t.min(axis=1)
    assert (np.isfinite(best) == (hit.id >= 0)).all()
    found = hit.id >= 0
    assert found.sum() > 500
    np.testing.assert_allclose(hit.t[found], best[found], rtol=1e-5, atol=1e-5)
    rows = np.nonzero(found)[0]
    col = np.searchsorted(ids, hit.id[found])
    assert (np.abs(t[rows, col] - best[found]) <= 1e-5 * (1 + np.abs(best[found]))).all()
