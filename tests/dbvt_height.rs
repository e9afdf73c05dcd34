//! Height bounds and large trees: sorted insertion must not degrade the tree into a list.

use slabtree_testkit as common;

use common::*;
use glam::Vec3A;
use slabtree::{Aabb, Dbvt, DbvtConfig, QueryWorkspace, Ray};

fn row(n: usize) -> Vec<Aabb> {
    (0..n).map(|i| Aabb::from_center_half_extents(Vec3A::new(i as f32 * 1.5, 0.0, 0.0), Vec3A::splat(0.5))).collect()
}

fn grid(side: usize) -> Vec<Aabb> {
    (0..side * side)
        .map(|i| {
            Aabb::from_center_half_extents(
                Vec3A::new((i % side) as f32 * 2.0, (i / side) as f32 * 2.0, 0.0),
                Vec3A::splat(0.5),
            )
        })
        .collect()
}

fn insert_all(boxes: &[Aabb]) -> (Dbvt<u32>, Vec<ModelProxy>) {
    let mut tree = Dbvt::new();
    let cfg = *tree.config();
    let model = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let id = tree.insert(*b, i as u32).unwrap();
            ModelProxy { id, tight: *b, fat: fatten(&cfg, b, Vec3A::ZERO), tag: i as u32 }
        })
        .collect();
    tree.validate().unwrap();
    (tree, model)
}

fn log2(n: usize) -> f32 {
    (n as f32).log2()
}

#[test]
fn boxes_in_a_row_stay_shallow() {
    let (tree, _) = insert_all(&row(200));
    let h = tree.stats().height as f32;
    assert!(h < 2.0 * log2(200), "height {h} for 200 boxes in a row");
}

#[test]
fn grid_stays_shallow() {
    let (tree, _) = insert_all(&grid(20));
    let h = tree.stats().height as f32;
    assert!(h < 2.0 * log2(400), "height {h} for a 20x20 grid");
}

#[test]
fn moving_every_proxy_keeps_height_bounded() {
    for boxes in [row(200), grid(20)] {
        let n = boxes.len();
        let (mut tree, mut model) = insert_all(&boxes);
        let cfg = *tree.config();
        // Every proxy moves far (out of its fat box), in a sweeping order, twice.
        for round in 0..2 {
            for (i, m) in model.iter_mut().enumerate() {
                let d = Vec3A::new(3.0 + round as f32, (i % 7) as f32 * 0.9, -2.0);
                let tight = Aabb::new(m.tight.min + d, m.tight.max + d);
                assert_eq!(tree.move_proxy(m.id, tight, d).unwrap(), model_move(&cfg, m, tight, d));
            }
            tree.validate().unwrap();
            let h = tree.stats().height as f32;
            assert!(h < 3.0 * log2(n), "height {h} after moving all {n} proxies");
        }
        let mut ws = QueryWorkspace::new();
        let ray = Ray::new(Vec3A::new(-10.0, 1.0, -2.0), Vec3A::new(1.0, 0.05, 0.001));
        assert_eq!(tree_ray_all(&tree, &ray, &mut ws), brute_ray(&model, &ray));
    }
}

#[test]
fn hundred_thousand_sorted_inserts_answer_every_query() {
    let n = 100_000;
    let boxes: Vec<Aabb> = (0..n)
        .map(|i| {
            // Sorted along a slowly winding line: the worst order for incremental insertion.
            let x = i as f32 * 0.7;
            Aabb::from_center_half_extents(
                Vec3A::new(x, (i % 50) as f32 * 0.3, (i % 17) as f32 * 0.2),
                Vec3A::splat(0.4),
            )
        })
        .collect();
    let (tree, model) = insert_all(&boxes);
    let h = tree.stats().height;
    assert!((h as f32) < 2.0 * log2(n), "height {h}");
    let mut ws = QueryWorkspace::new();
    for k in 0..40 {
        let x = k as f32 * 1700.0;
        let ray = Ray::new(Vec3A::new(x, -5.0, 1.0), Vec3A::new(0.3, 1.0, 0.05));
        assert_eq!(tree_ray_all(&tree, &ray, &mut ws), brute_ray(&model, &ray));
        let along = Ray::new(Vec3A::new(-10.0, (k % 50) as f32 * 0.3, 0.0), Vec3A::X);
        let got = tree.intersect(&along, &mut ws).unwrap().map(|h| h.t);
        assert_eq!(got, closest(&brute_ray(&model, &along)));
        let q = Aabb::from_center_half_extents(Vec3A::new(x, 7.0, 1.5), Vec3A::new(30.0, 3.0, 2.0));
        assert_eq!(tree_overlap(&tree, &q, &mut ws), brute_overlap(&model, &q));
    }
    // The whole tree's pairs, once.
    let pairs = tree_pairs(&tree, &mut ws);
    let mut expect = 0usize;
    // Brute force pairs on a sorted sweep along x (boxes are sorted by x), to stay O(n·k).
    for i in 0..n {
        for j in i + 1..n {
            if model[j].fat.min.x > model[i].fat.max.x {
                break;
            }
            if model[i].fat.overlaps(&model[j].fat) {
                expect += 1;
            }
        }
    }
    assert_eq!(pairs.len(), expect);
}

#[test]
fn rebuild_and_bulk_build_give_good_trees() {
    let boxes = grid(100);
    let (built, ids) = Dbvt::build(boxes.iter().copied().zip(0u32..)).unwrap();
    built.validate().unwrap();
    assert_eq!(ids.len(), 10_000);
    let h = built.stats().height as f32;
    assert!(h <= log2(10_000).ceil() + 3.0, "bulk-built height {h}");
    let cfg = DbvtConfig { parallel_threshold: 1000, ..Default::default() };
    let (par, _) = Dbvt::build_with_config(boxes.iter().copied().zip(0u32..), cfg).unwrap();
    assert_eq!(par.stats().sah_cost, built.stats().sah_cost, "parallel build differs");
}

/// Incremental insertion and moves must keep the tree close to a bulk build in SAH cost. A
/// forced AVL rotation once made inserted trees 3-12x worse than a bulk build at 100k boxes
/// (queries up to 20x slower than parry's); this guards against that class of regression.
#[test]
fn incremental_trees_stay_close_to_bulk_build_quality() {
    let mut f = common::rng::units(0x2545F4914F6CDD1Du64);
    let n = 20_000;
    let side = 4.0 * (n as f32).cbrt();
    let boxes: Vec<Aabb> = (0..n)
        .map(|_| Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * side, Vec3A::splat(0.1 + 0.9 * f())))
        .collect();
    let (bulk, _) = Dbvt::build(boxes.iter().map(|b| (*b, ()))).unwrap();
    let (mut tree, mut model) = insert_all(&boxes);
    let ratio = tree.stats().sah_cost / bulk.stats().sah_cost;
    assert!(ratio < 1.8, "inserted tree SAH cost is {ratio:.2}x the bulk build's");
    let cfg = *tree.config();
    for _ in 0..5 {
        for m in model.iter_mut().step_by(3) {
            let d = Vec3A::new(f() - 0.5, f() - 0.5, f() - 0.5) * 2.0;
            let tight = Aabb::new(m.tight.min + d, m.tight.max + d);
            tree.move_proxy(m.id, tight, d).unwrap();
            model_move(&cfg, m, tight, d);
        }
    }
    tree.validate().unwrap();
    let (bulk, _) = Dbvt::build(model.iter().map(|m| (m.tight, ()))).unwrap();
    let ratio = tree.stats().sah_cost / bulk.stats().sah_cost;
    assert!(ratio < 2.2, "after moves the SAH cost is {ratio:.2}x the bulk build's");
}

/// Teleporting every proxy to a random place leaves the structure meaningless (the SAH cost many
/// times a fresh build's). `optimize_incremental` at 5% of the leaves per call must bring it back
/// near a bulk build over the same fat boxes, which is the oracle here; without it the cost stays
/// high, so the test fails if the optimiser stops repairing. Both ways it can: treelet rounds
/// (`refresh_max: 0`) and, by default at this size, a refresh (a whole Morton rebuild).
#[test]
fn optimize_incremental_repairs_a_shuffled_tree() {
    for refresh_max in [0, DbvtConfig::default().refresh_max] {
        let mut f = common::rng::units(0x9E3779B97F4A7C15u64);
        let n = 20_000;
        let side = 4.0 * (n as f32).cbrt();
        let mut place = || Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * side, Vec3A::splat(0.5));
        let cfg = DbvtConfig { refresh_max, ..DbvtConfig::default() };
        let (mut tree, ids) = Dbvt::build_with_config((0..n).map(|i| (place(), i)), cfg).unwrap();
        let moves: Vec<_> = ids.iter().map(|&id| (id, place(), Vec3A::ZERO)).collect();
        tree.update_proxies(&moves).unwrap();
        tree.refit();
        let oracle = |t: &Dbvt<usize>| bulk_build_sah(t, &ids);
        let shuffled = tree.stats().sah_cost / oracle(&tree);
        assert!(shuffled > 4.0, "the shuffle should ruin the tree (ratio {shuffled:.2})");
        let mut ratios = Vec::new();
        for call in 1..=200 {
            tree.optimize_incremental(n / 20);
            if call % 40 == 0 {
                tree.validate().unwrap();
                ratios.push(tree.stats().sah_cost / oracle(&tree));
            }
        }
        eprintln!(
            "refresh_max {refresh_max}: SAH cost / bulk build: shuffled {shuffled:.2}, every 40 calls {ratios:.2?}"
        );
        let last = *ratios.last().unwrap();
        assert!(last < 1.5, "after 200 calls the SAH cost is still {last:.2}x a bulk build's ({ratios:.2?})");
    }
}

/// A tree of at most `whole_rebuild_max` proxies (2048 here; 0 by default, which refreshes
/// instead) is one treelet. After every proxy teleports
/// (the SAH cost several times a fresh build's), calls whose saved-up budget does not yet cover
/// the tree change nothing, and the call that covers it rebuilds every leaf and leaves exactly
/// the quality of a bulk build over the same fat boxes (the oracle). With treelets instead
/// (`whole_rebuild_max: 0`), the same calls leave the tree worse: the whole rebuild is what
/// gives that quality.
#[test]
fn small_trees_are_rebuilt_whole() {
    let n = 1000;
    let run = |whole_rebuild_max: usize| {
        // (Without whole rebuilds this size would be refreshed by Morton rebuilds instead, which
        // `moving_trees_are_refreshed` checks; here the other way is treelets.)
        let mut f = common::rng::units(0x5DEECE66Du64);
        let side = 4.0 * (n as f32).cbrt();
        let mut place = || Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * side, Vec3A::splat(0.5));
        let cfg = DbvtConfig { whole_rebuild_max, refresh_max: 0, ..DbvtConfig::default() };
        let (mut tree, ids) = Dbvt::build_with_config((0..n).map(|i| (place(), i)), cfg).unwrap();
        let moves: Vec<_> = ids.iter().map(|&id| (id, place(), Vec3A::ZERO)).collect();
        tree.update_proxies(&moves).unwrap();
        tree.refit();
        let oracle = bulk_build_sah(&tree, &ids);
        let shuffled = tree.stats().sah_cost / oracle;
        assert!(shuffled > 3.0, "the shuffle should ruin the tree (ratio {shuffled:.2})");
        // 1.25% of the leaves per call, as the scene frame loop: the credit covers the tree at
        // the 77th call.
        let budget = n / 80 + 1;
        let mut rebuilt = Vec::new();
        for call in 1..=80 {
            let before = tree.stats().sah_cost;
            let r = tree.optimize_incremental(budget);
            tree.validate().unwrap();
            if r == 0 {
                assert_eq!(tree.stats().sah_cost, before, "call {call} only saved credit");
            } else {
                rebuilt.push((call, r));
            }
        }
        (tree.stats().sah_cost / oracle, rebuilt)
    };
    let (whole, rebuilt) = run(2048);
    assert_eq!(rebuilt, vec![(77, n)], "one whole rebuild, once the credit covers every leaf");
    assert!((whole - 1.0).abs() < 1e-4, "a whole rebuild gives a bulk build's tree: ratio {whole}");
    let (treelets, _) = run(0);
    eprintln!("SAH cost / bulk build after 80 calls: whole {whole:.5}, treelets {treelets:.3}");
    assert!(treelets > 1.2, "treelet rounds alone should not reach a fresh build (ratio {treelets:.3})");
}

/// Above `whole_rebuild_max`, trees of moving proxies are refreshed: once the SAH cost has grown
/// by `refresh_growth` since the last whole rebuild, one call rebuilds every leaf along a Morton
/// curve, and the budgets of the following calls pay for it (an eighth of a leaf per proxy)
/// before the next. A tree that does not move is left exactly as it is. The oracle for quality
/// is a binned-SAH bulk build over the same fat boxes.
#[test]
fn moving_trees_are_refreshed() {
    let n = 10_000;
    let mut f = common::rng::units(0x2545F4914F6CDD1Du64);
    let side = 4.0 * (n as f32).cbrt();
    let mut place = || Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * side, Vec3A::splat(0.5));
    let cfg = DbvtConfig::default();
    assert!(cfg.whole_rebuild_max < n && n <= cfg.refresh_max, "this size is in the refresh range");
    let (mut tree, ids) = Dbvt::build_with_config((0..n).map(|i| (place(), i)), cfg).unwrap();
    let budget = n / 80 + 1;

    // Nothing moves: no call rebuilds anything.
    let built = tree.stats().sah_cost;
    for call in 0..50 {
        assert_eq!(tree.optimize_incremental(budget), 0, "static call {call}");
    }
    assert_eq!(tree.stats().sah_cost, built);

    let mut shuffle = |tree: &mut Dbvt<usize>| {
        let moves: Vec<_> = ids.iter().map(|&id| (id, place(), Vec3A::ZERO)).collect();
        tree.update_proxies(&moves).unwrap();
        tree.refit();
    };
    let oracle = |t: &Dbvt<usize>| bulk_build_sah(t, &ids);
    // The number of calls until one rebuilds (it must rebuild every leaf), if one does.
    let until_refresh = |tree: &mut Dbvt<usize>, max_calls: usize| {
        for call in 1..=max_calls {
            match tree.optimize_incremental(budget) {
                0 => {}
                r => {
                    assert_eq!(r, n, "a refresh rebuilds every leaf");
                    return Some(call);
                }
            }
        }
        None
    };

    shuffle(&mut tree);
    let shuffled = tree.stats().sah_cost / oracle(&tree);
    assert!(shuffled > 4.0, "the shuffle should ruin the tree (ratio {shuffled:.2})");
    let first = until_refresh(&mut tree, 8).expect("the SAH cost is checked every 8 calls");
    tree.validate().unwrap();
    let refreshed = tree.stats().sah_cost / oracle(&tree);
    eprintln!("SAH cost / bulk build: shuffled {shuffled:.2}, refreshed at call {first} {refreshed:.3}");
    assert!(refreshed < 1.15, "a Morton rebuild of random boxes is within 15% of binned SAH ({refreshed:.3})");

    // Ruined again at once: the next refresh waits until n/8 leaves of budget have come in (the
    // refreshing call's own budget counts), then for the next check.
    shuffle(&mut tree);
    let owed = (n / 8).div_ceil(budget) - 1;
    let second = until_refresh(&mut tree, owed + 8).expect("a refresh once the debt is paid");
    eprintln!("refreshed again after {second} calls ({owed} to pay for the last)");
    assert!(second >= owed, "refreshed again after {second} calls, before {owed} calls paid for the last");
    tree.validate().unwrap();
}

/// The optimiser tests' oracle: the SAH cost of the best binned bulk build (every axis tried)
/// over the fat boxes of `ids` in `t`, as they are now.
fn bulk_build_sah<T>(t: &Dbvt<T>, ids: &[slabtree::ProxyId]) -> f32 {
    let fat: Vec<_> = ids.iter().map(|&id| (t.fat_aabb(id).unwrap(), ())).collect();
    let cfg = DbvtConfig { margin: 0.0, prediction: 0.0, fast_build: false, ..*t.config() };
    Dbvt::build_with_config(fat, cfg).unwrap().0.stats().sah_cost
}

/// `DbvtConfig::fast_build` splits along the widest spread of the boxes' centres only. Two
/// slabs of boxes far apart in y, each spread twice that far along x: the full build separates
/// the slabs at the root, the fast one cuts both across (x spreads wider), so each of its top
/// children spans the gap between the slabs and its tree costs more. Both trees are valid.
#[test]
fn fast_builds_split_the_widest_spread_only() {
    let slabs: Vec<(Aabb, u32)> = (0..400)
        .map(|i| {
            let (x, y) = ((i / 2) as f32 * 0.1, if i % 2 == 0 { 0.0 } else { 10.0 });
            (Aabb::from_center_half_extents(Vec3A::new(x, y, 0.0), Vec3A::splat(0.05)), i)
        })
        .collect();
    let sah = |fast_build: bool| {
        let cfg = DbvtConfig { margin: 0.0, prediction: 0.0, fast_build, ..DbvtConfig::default() };
        let (tree, _) = Dbvt::build_with_config(slabs.iter().copied(), cfg).unwrap();
        tree.validate().unwrap();
        tree.stats().sah_cost
    };
    let (full, fast) = (sah(false), sah(true));
    eprintln!("SAH cost: full build {full:.2}, fast build {fast:.2}");
    assert!(fast > 1.5 * full, "the fast build should cut across the slabs: {fast} against {full}");
}
