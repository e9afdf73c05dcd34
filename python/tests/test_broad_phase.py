"""slabtree.BroadPhase against brute force: after every update, the tracked pairs are exactly
the pairs of its stored boxes that overlap and that the kinds and filters allow, and the events
are exactly the difference from the previous update."""

import numpy as np
import pytest

import slabtree
from oracle import box_overlaps


def brute_pairs(world, model):
    ids = np.array(sorted(model), dtype=np.int64)
    if len(ids) < 2:
        return set()
    boxes = world.boxes(ids)
    over = np.triu(box_overlaps(boxes, boxes), 1)
    kinds = np.array([model[i]["kind"] for i in ids])
    cat = np.array([model[i]["category"] for i in ids], dtype=np.uint64)
    mask = np.array([model[i]["mask"] for i in ids], dtype=np.uint64)
    dynamic = kinds == slabtree.DYNAMIC
    kinds_ok = dynamic[:, None] | dynamic[None, :]
    filters_ok = ((cat[:, None] & mask[None, :]) != 0) & ((cat[None, :] & mask[:, None]) != 0)
    a, b = np.nonzero(over & kinds_ok & filters_ok)
    return {(int(ids[x]), int(ids[y])) for x, y in zip(a, b)}


@pytest.mark.parametrize("seed", range(6))
def test_events_match_brute_force(seed):
    r = np.random.default_rng(seed)
    world = slabtree.BroadPhase()
    model = {}
    tracked = set()

    def random_boxes(n):
        lo = r.uniform(0, 12, (n, 3))
        return np.stack([lo, lo + r.uniform(0.2, 2.0, (n, 3))], axis=1)

    for step in range(40):
        op = r.integers(0, 6)
        live = np.array(sorted(model), dtype=np.int64)
        if op == 0 or len(live) < 4:
            n = int(r.integers(1, 8))
            kinds = r.integers(0, 3, n)
            cats = r.integers(1, 4, n)
            masks = r.integers(0, 4, n)
            for i, k, c, m in zip(world.add(random_boxes(n), kinds=kinds, category=cats, mask=masks), kinds, cats, masks):
                model[int(i)] = {"kind": int(k), "category": int(c), "mask": int(m)}
        elif op == 1:
            gone = r.choice(live, size=max(1, len(live) // 5), replace=False)
            world.remove(gone)
            for i in gone:
                del model[int(i)]
            with pytest.raises(KeyError):
                world.remove(gone[:1])
        elif op == 2:
            ids = r.choice(live, size=len(live) // 2, replace=False)
            d = r.normal(0, 0.7, (len(ids), 3))
            b = world.boxes(ids) + d[:, None, :]
            world.move(ids, b, displacements=d)
        elif op == 3:
            ids = r.choice(live, size=2, replace=False)
            c, m = r.integers(1, 4, 2), r.integers(0, 4, 2)
            world.set_filter(ids, c, m)
            for i, ci, mi in zip(ids, c, m):
                model[int(i)].update(category=int(ci), mask=int(mi))
        elif op == 4:
            ids = r.choice(live, size=2, replace=False)
            k = r.integers(0, 3, 2)
            world.set_kind(ids, k)
            for i, ki in zip(ids, k):
                model[int(i)]["kind"] = int(ki)
        else:
            events = world.update_pairs()
            want = brute_pairs(world, model)
            began = sorted(want - tracked)
            ended = sorted(tracked - want)
            assert [tuple(p) for p in events.began.tolist()] == began
            assert [tuple(p) for p in events.ended.tolist()] == ended
            assert {tuple(p) for p in world.pairs().tolist()} == want
            tracked = want
        assert len(world) == len(model)


def test_bad_input_changes_nothing():
    world = slabtree.BroadPhase()
    ids = world.add([[[0, 0, 0], [1, 1, 1]], [[0.5, 0.5, 0.5], [2, 2, 2]]])
    world.update_pairs()
    before = world.boxes(ids)
    with pytest.raises(ValueError):
        world.move(ids, [[[5, 5, 5], [6, 6, 6]], [[np.nan, 0, 0], [1, 1, 1]]])
    np.testing.assert_array_equal(world.boxes(ids), before)
    with pytest.raises(ValueError):
        world.add([[[0, 0, 0], [1, 1, 1]]], kinds=[7])
    with pytest.raises(KeyError):
        world.move([99], [[[0, 0, 0], [1, 1, 1]]])
    assert world.pairs().tolist() == [[0, 1]]
