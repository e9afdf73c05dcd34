//! Property tests: random sequences of tree operations. After every step the tree validates, and
//! every query kind, with both node tests (SIMD and scalar), returns exactly what brute force over
//! an independent model of the live proxies returns.

use slabtree_testkit as common;

use common::*;
use glam::{Vec3, Vec3A};
use proptest::prelude::*;
use slabtree::dbvt::NodeTest;
use slabtree::{Aabb, Dbvt, DbvtConfig, Frustum, ProxyHit, QueryWorkspace, Ray, WideStorage};

#[derive(Clone, Debug)]
enum Op {
    Insert {
        c: [f32; 3],
        h: [f32; 3],
    },
    SmallMove {
        which: usize,
        d: [f32; 3],
        enlarge: bool,
    },
    Teleport {
        which: usize,
        c: [f32; 3],
        enlarge: bool,
    },
    Remove {
        which: usize,
    },
    /// `update_proxy`: O(1) leaf update; queries refuse until a refit.
    Update {
        which: usize,
        d: [f32; 3],
    },
    Optimize {
        budget: usize,
    },
    Rebuild,
    RebuildMorton,
    Refit,
}

fn v3(range: std::ops::Range<f32>) -> impl Strategy<Value = [f32; 3]> {
    [range.clone(), range.clone(), range]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (v3(-20.0..20.0), v3(0.0..3.0)).prop_map(|(c, h)| Op::Insert { c, h }),
        4 => (any::<usize>(), v3(-0.4..0.4), any::<bool>()).prop_map(|(which, d, enlarge)| Op::SmallMove { which, d, enlarge }),
        2 => (any::<usize>(), v3(-20.0..20.0), any::<bool>()).prop_map(|(which, c, enlarge)| Op::Teleport { which, c, enlarge }),
        3 => any::<usize>().prop_map(|which| Op::Remove { which }),
        3 => (any::<usize>(), v3(-0.8..0.8)).prop_map(|(which, d)| Op::Update { which, d }),
        // Budgets up to a few treelets, so that rounds run between other changes.
        1 => (0usize..48).prop_map(|budget| Op::Optimize { budget }),
        1 => Just(Op::Rebuild),
        1 => Just(Op::RebuildMorton),
        2 => Just(Op::Refit),
    ]
}

/// Inserts and teleports (`move_proxy`) of boxes in three cells on a line, and removals.
fn grid_op() -> impl Strategy<Value = Op> {
    // Few cells and sizes, so that equal boxes are common.
    let cell = || (0u8..3).prop_map(|x| [f32::from(x) * 3.0, 0.0, 0.0]);
    let half = || prop_oneof![3 => Just([1.0f32; 3]), 1 => Just([0.5f32; 3])];
    prop_oneof![
        2 => (cell(), half()).prop_map(|(c, h)| Op::Insert { c, h }),
        5 => (any::<usize>(), cell()).prop_map(|(which, c)| Op::Teleport { which, c, enlarge: false }),
        1 => any::<usize>().prop_map(|which| Op::Remove { which }),
    ]
}

/// A direction with a fair chance of exact zeros, negative zeros and tiny components, which
/// exercise the parallel-axis handling.
fn component() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -1.0f32..1.0,
        1 => Just(0.0f32),
        1 => Just(-0.0f32),
        1 => Just(1e-30f32),
        1 => Just(-1e-40f32),
    ]
}

#[derive(Clone, Debug)]
struct Probe {
    origin: [f32; 3],
    dir: [f32; 3],
    tmax: f32,
    /// Snap the origin onto a face plane of some proxy: rays lying in box faces.
    snap: Option<(usize, usize, bool)>,
    boxc: [f32; 3],
    boxh: [f32; 3],
}

fn probe() -> impl Strategy<Value = Probe> {
    (
        v3(-30.0..30.0),
        [component(), component(), component()],
        prop_oneof![Just(f32::INFINITY), 0.0f32..60.0],
        proptest::option::of((any::<usize>(), 0usize..3, any::<bool>())),
        v3(-25.0..25.0),
        v3(0.0..4.0),
    )
        .prop_map(|(origin, dir, tmax, snap, boxc, boxh)| Probe { origin, dir, tmax, snap, boxc, boxh })
}

/// Distance from `p` to box `b` in f64 (0 inside).
fn box_distance(b: &Aabb, p: Vec3A) -> f64 {
    (0..3)
        .map(|a| {
            let (lo, hi, x) = (f64::from(b.min[a]), f64::from(b.max[a]), f64::from(p[a]));
            (lo - x).max(x - hi).max(0.0).powi(2)
        })
        .sum::<f64>()
        .sqrt()
}

/// `storage` is the 8-wide copy's memory, kept from step to step, so that copies are refitted
/// where the tree's links are unchanged and collapsed anew where not.
fn check_all(
    tree: &Dbvt<u32>,
    model: &[ModelProxy],
    probes: &[Probe],
    ws: &mut QueryWorkspace,
    storage: &mut WideStorage,
) {
    tree.validate().unwrap_or_else(|e| panic!("invalid tree: {e}"));
    if tree.is_refit_pending() {
        // Every query refuses rather than answer from stale ancestors.
        let pending = Err(slabtree::DbvtError::RefitPending);
        assert_eq!(tree.wide().map(|_| ()), pending);
        assert_eq!(tree.nearest(Vec3A::ZERO, 1.0, ws, |_, _, d| Some(d)).map(|_| ()), pending);
        let ray = Ray::new(Vec3A::ZERO, Vec3A::X);
        assert_eq!(tree.intersect(&ray, ws).map(|_| ()), pending);
        let b = Aabb::new(Vec3A::ZERO, Vec3A::ONE);
        assert_eq!(tree.cast_box(&b, Vec3A::X, ws).map(|_| ()), pending);
        assert_eq!(tree.overlap(&b, ws, &mut |_, _: &u32| slabtree::LeafControl::Continue).map(|_| ()), pending);
        assert_eq!(tree.self_pairs(ws, |_, _, _, _| slabtree::PairControl::Continue).map(|_| ()), pending);
        return;
    }
    assert_eq!(tree.len(), model.len());
    for m in model {
        assert_eq!(tree.fat_aabb(m.id).unwrap(), m.fat, "stored fat box differs from the model");
        assert_eq!(*tree.get(m.id).unwrap(), m.tag);
    }
    let wide = tree.wide_from(std::mem::take(storage)).unwrap();
    let mut stats = Vec::new();
    for mode in [NodeTest::Simd, NodeTest::Scalar] {
        ws.node_test = mode;
        let mut s = Vec::new();
        for p in probes {
            let mut origin = Vec3A::from(p.origin);
            if let (Some((which, axis, hi)), false) = (p.snap, model.is_empty()) {
                let f = model[which % model.len()].fat;
                origin[axis] = if hi { f.max[axis] } else { f.min[axis] };
            }
            let mut dir = Vec3A::from(p.dir);
            if let Some((_, axis, _)) = p.snap {
                dir[axis] = 0.0;
            }
            let ray = Ray::new(origin, dir).with_range(0.0, p.tmax);
            let expect = brute_ray(model, &ray);
            let got = tree_ray_all(tree, &ray, ws);
            assert_eq!(got, expect, "ray all-hits differ ({mode:?}) for {ray:?}");
            let hit: Option<ProxyHit> = tree.intersect(&ray, ws).unwrap();
            assert_eq!(hit.map(|h| (h.id, h.t)), closest_hit(&expect), "closest differs ({mode:?})");
            // The 8-wide copy: the same proxies, the same closest hit.
            assert_eq!(wide_ray_all(&wide, &ray, ws), expect, "wide ray all-hits differ for {ray:?}");
            let hit = wide.intersect(&ray, ws).unwrap();
            assert_eq!(hit.map(|h| (h.id, h.t)), closest_hit(&expect), "wide closest differs");

            // The nearest fat box to the ray's origin, against f64 brute force, with and
            // without a limit just under the answer.
            let near = tree.nearest(origin, f32::INFINITY, ws, |_, _, d| Some(d)).unwrap();
            let brute = model.iter().map(|m| (box_distance(&m.fat, origin), m.id)).min_by(|a, b| a.0.total_cmp(&b.0));
            match (near, brute) {
                (None, None) => {}
                (Some(n), Some((d, _))) => {
                    let m = model.iter().find(|m| m.id == n.id).expect("a live proxy");
                    let tol = 1e-5 * (1.0 + d + f64::from(origin.length()));
                    assert!((f64::from(n.distance) - d).abs() <= tol, "nearest {} vs brute force {d}", n.distance);
                    assert!((box_distance(&m.fat, origin) - d).abs() <= tol, "the proxy reported is not nearest");
                    if d > 1e-3 {
                        let below = (d * (1.0 - 1e-4)) as f32;
                        assert_eq!(tree.nearest(origin, below, ws, |_, _, d| Some(d)).unwrap(), None);
                    }
                }
                (n, b) => panic!("nearest {n:?} vs brute force {b:?}"),
            }

            let b = Aabb::from_center_half_extents(Vec3A::from(p.boxc), Vec3A::from(p.boxh));
            let d = dir * 20.0;
            let expect = brute_box_cast(model, &b, d);
            assert_eq!(tree_box_cast_all(tree, &b, d, ws), expect, "box cast differs ({mode:?})");
            let c = tree.cast_box(&b, d, ws).unwrap();
            assert_eq!(c.map(|h| h.t), closest(&expect));

            assert_eq!(tree_overlap(tree, &b, ws), brute_overlap(model, &b), "overlap differs ({mode:?})");
            let pt = Aabb::new(origin, origin);
            let mut got = Vec::new();
            tree.point(origin, ws, &mut |id, _: &u32| {
                got.push(id);
                slabtree::LeafControl::Continue
            })
            .unwrap();
            got.sort();
            assert_eq!(got, brute_overlap(model, &pt), "point differs");

            let eye = Vec3::from(p.origin);
            let look = Vec3::from(p.dir);
            let look = if look.length() > 1e-3 { look.normalize() } else { Vec3::Z };
            let up = if look.cross(Vec3::Y).length() > 1e-2 { Vec3::Y } else { Vec3::X };
            let target = eye + look;
            let f = Frustum::from_view_projection(
                glam::camera::rh::proj::directx::perspective(1.2, 1.3, 0.5, 40.0)
                    * glam::camera::rh::view::look_at_mat4(eye, target, up),
            );
            assert_eq!(tree_frustum(tree, &f, ws), brute_frustum(model, &f), "frustum differs ({mode:?})");
            assert_eq!(tree_frustum_scan(tree, &f), brute_frustum(model, &f), "frustum_scan differs");
            assert_eq!(wide_frustum(&wide, &f, ws), brute_frustum(model, &f), "wide frustum differs");
            s.push(
                tree.visit_ray(&ray, ws, &mut |_: slabtree::RayLeaf<'_, u32>| slabtree::RayControl::Continue).unwrap(),
            );
        }
        stats.push(s);
    }
    // The SIMD and scalar node tests visit exactly the same nodes.
    assert_eq!(stats[0], stats[1]);
    ws.node_test = NodeTest::Simd;
    assert_eq!(tree_pairs(tree, ws), brute_pairs(model));
    check_batch(tree, model, probes, ws);
    *storage = wide.into_storage();
}

/// The probes' rays as one batch ([`Dbvt::visit_ray_batch`], several rays in flight): every ray's
/// leaves, and its closest hit, as brute force gives them.
fn check_batch(tree: &Dbvt<u32>, model: &[ModelProxy], probes: &[Probe], ws: &mut QueryWorkspace) {
    // Repeated, so that more rays than are in flight share the batch.
    let rays: Vec<Ray> = (0..3)
        .flat_map(|k| probes.iter().map(move |p| (k, p)))
        .map(|(k, p)| {
            Ray::new(Vec3A::from(p.origin) + Vec3A::splat(k as f32), Vec3A::from(p.dir)).with_range(0.0, p.tmax)
        })
        .collect();
    let mut all = vec![Vec::new(); rays.len()];
    tree.visit_ray_batch(&rays, ws, &mut |i: usize, l: slabtree::RayLeaf<'_, u32>| {
        all[i].push((l.id, l.t));
        slabtree::RayControl::Continue
    })
    .unwrap();
    let mut hits = Vec::new();
    tree.intersect_batch(&rays, ws, &mut hits).unwrap();
    assert_eq!(hits.len(), rays.len());
    for ((ray, mut got), hit) in rays.iter().zip(all).zip(hits) {
        got.sort_by_key(|a| a.0);
        let expect = brute_ray(model, ray);
        assert_eq!(got, expect, "batch ray all-hits differ for {ray:?}");
        assert_eq!(hit.map(|h| (h.id, h.t)), closest_hit(&expect), "batch closest differs for {ray:?}");
    }
}

fn apply(tree: &mut Dbvt<u32>, model: &mut Vec<ModelProxy>, op: &Op, next_tag: &mut u32) {
    let cfg = *tree.config();
    match *op {
        Op::Insert { c, h } => {
            let tight = Aabb::from_center_half_extents(Vec3A::from(c), Vec3A::from(h));
            let id = tree.insert(tight, *next_tag).unwrap();
            model.push(ModelProxy { id, tight, fat: fatten(&cfg, &tight, Vec3A::ZERO), tag: *next_tag });
            *next_tag += 1;
        }
        Op::SmallMove { which, d, enlarge } | Op::Teleport { which, c: d, enlarge } => {
            if model.is_empty() {
                return;
            }
            let i = which % model.len();
            let m = &mut model[i];
            let (tight, disp) = if matches!(op, Op::SmallMove { .. }) {
                let d = Vec3A::from(d);
                (Aabb::new(m.tight.min + d, m.tight.max + d), d)
            } else {
                let t = Aabb::from_center_half_extents(Vec3A::from(d), m.tight.half_extents());
                (t, Vec3A::ZERO)
            };
            let expect = model_move(&cfg, m, tight, disp);
            let got = if enlarge { tree.enlarge_proxy(m.id, tight, disp) } else { tree.move_proxy(m.id, tight, disp) };
            assert_eq!(got.unwrap(), expect, "move result differs from the documented rule");
        }
        Op::Remove { which } => {
            if model.is_empty() {
                return;
            }
            let m = model.swap_remove(which % model.len());
            assert_eq!(tree.remove(m.id).unwrap(), m.tag);
            assert!(tree.get(m.id).is_err());
        }
        Op::Update { which, d } => {
            if model.is_empty() {
                return;
            }
            let i = which % model.len();
            let m = &mut model[i];
            let d = Vec3A::from(d);
            let tight = Aabb::new(m.tight.min + d, m.tight.max + d);
            let expect = model_move(&cfg, m, tight, d);
            assert_eq!(tree.update_proxy(m.id, tight, d).unwrap(), expect);
        }
        Op::Optimize { budget } => {
            tree.optimize_incremental(budget);
        }
        Op::Rebuild => tree.rebuild(),
        Op::RebuildMorton => tree.rebuild_morton(),
        Op::Refit => tree.refit(),
    }
}

/// Applies `ops` in turn to a tree made with `cfg` and to the model, and checks everything
/// ([`check_all`]) after each.
fn apply_and_check_each(cfg: DbvtConfig, ops: &[Op], probes: &[Probe]) {
    let mut tree = Dbvt::with_config(cfg);
    let mut model = Vec::new();
    let mut ws = QueryWorkspace::new();
    let mut tag = 0;
    let mut storage = WideStorage::default();
    for op in ops {
        apply(&mut tree, &mut model, op, &mut tag);
        check_all(&tree, &model, probes, &mut ws, &mut storage);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_operation_sequences_match_brute_force(
        ops in proptest::collection::vec(op(), 1..70),
        probes in proptest::collection::vec(probe(), 3),
        margin in prop_oneof![Just(0.0f32), Just(0.1f32), 0.0f32..1.0],
        optimiser in 0..3u8,
    ) {
        // These trees are small: under a `whole_rebuild_max` of 2048 the optimiser rebuilds
        // them whole with binned SAH; by default it refreshes them (Morton rebuilds once the
        // SAH cost has grown by 25% here), or with both off it cuts treelets, whose paths
        // (the parent's stale mark, the top rebuild) are then checked too.
        let (whole_rebuild_max, refresh_max) = match optimiser {
            0 => (2048, 0),
            1 => (0, usize::MAX),
            _ => (0, 0),
        };
        let cfg = DbvtConfig {
            margin,
            parallel_threshold: 16,
            whole_rebuild_max,
            refresh_max,
            refresh_growth: 0.25,
            ..DbvtConfig::default()
        };
        apply_and_check_each(cfg, &ops, &probes);
    }

    /// Teleports (`move_proxy`, no margin) between three cells of equal boxes: reinsertions that
    /// search from an ancestor of the old place, among placements that tie. (The tie in which
    /// that ancestor itself becomes the sibling is checked by a unit test in `dbvt/insert.rs`;
    /// random sequences seldom reach it.)
    #[test]
    fn grid_reinsertions_match_brute_force(
        ops in proptest::collection::vec(grid_op(), 1..120),
        probes in proptest::collection::vec(probe(), 2),
    ) {
        apply_and_check_each(DbvtConfig { margin: 0.0, ..DbvtConfig::default() }, &ops, &probes);
    }

    /// The same operations give the same tree: the same callback order and visit counts.
    #[test]
    fn deterministic(ops in proptest::collection::vec(op(), 1..60), probes in proptest::collection::vec(probe(), 2)) {
        let run = || {
            let mut tree = Dbvt::with_config(DbvtConfig { parallel_threshold: 8, ..Default::default() });
            let mut model = Vec::new();
            let mut tag = 0;
            for op in &ops {
                apply(&mut tree, &mut model, op, &mut tag);
            }
            tree.refit();
            let mut ws = QueryWorkspace::new();
            let mut trace = Vec::new();
            for p in &probes {
                let ray = Ray::new(Vec3A::from(p.origin), Vec3A::from(p.dir));
                let stats = tree.visit_ray(&ray, &mut ws, &mut |l: slabtree::RayLeaf<'_, u32>| {
                    trace.push((l.id.index(), l.t.to_bits()));
                    slabtree::RayControl::Continue
                }).unwrap();
                trace.push((stats.nodes as u32, stats.leaves as u32));
            }
            tree.self_pairs(&mut ws, |a, _, b, _| { trace.push((a.index(), b.index())); slabtree::PairControl::Continue }).unwrap();
            (trace, tree.stats().height, tree.stats().sah_cost.to_bits())
        };
        prop_assert_eq!(run(), run());
    }
}

#[test]
fn tree_pairs_match_brute_force() {
    let mut next = common::rng::units(0x9E3779B97F4A7C15u64);
    let mut boxes = |n: usize| -> Vec<(Aabb, u32)> {
        (0..n as u32)
            .map(|i| {
                let c = Vec3A::new(next(), next(), next()) * 30.0;
                (Aabb::from_center_half_extents(c, Vec3A::new(next(), next(), next()) * 2.0), i)
            })
            .collect()
    };
    let (a, b) = (boxes(700), boxes(500));
    let (ta, ia) = Dbvt::build(a.clone()).unwrap();
    let (tb, ib) = Dbvt::build(b.clone()).unwrap();
    let mut expect = Vec::new();
    for (i, (ba, _)) in a.iter().enumerate() {
        for (j, (bb, _)) in b.iter().enumerate() {
            if ta.fat_aabb(ia[i]).unwrap().overlaps(&tb.fat_aabb(ib[j]).unwrap()) {
                assert!(ba.expand(0.1).overlaps(&bb.expand(0.1)));
                expect.push((i as u32, j as u32));
            }
        }
    }
    let mut got = Vec::new();
    let mut ws = QueryWorkspace::new();
    ta.tree_pairs(&tb, &mut ws, |_, x, _, y| {
        got.push((*x, *y));
        slabtree::PairControl::Continue
    })
    .unwrap();
    got.sort();
    assert!(!expect.is_empty());
    assert_eq!(got, expect);
}

/// A pair callback that says stop gets no pair after that one: the pairs handed over are the
/// first k of the full query's, in its order, for every k (the pair queries hand pairs over a few
/// behind their walk, so a stop must drop the ones found ahead).
#[test]
fn pair_queries_stop_where_told() {
    let mut next = common::rng::units(0x5EED_0001);
    let mut boxes = |n: usize| -> Vec<(Aabb, u32)> {
        (0..n as u32)
            .map(|i| (Aabb::from_center_half_extents(Vec3A::new(next(), next(), next()) * 20.0, Vec3A::splat(1.5)), i))
            .collect()
    };
    let (ta, _) = Dbvt::build(boxes(400)).unwrap();
    let (tb, _) = Dbvt::build(boxes(300)).unwrap();
    let mut ws = QueryWorkspace::new();
    let run = |stop_after: usize, both: bool, ws: &mut QueryWorkspace| {
        let mut got = Vec::new();
        let mut take = |x: u32, y: u32| {
            got.push((x, y));
            if got.len() == stop_after { slabtree::PairControl::Stop } else { slabtree::PairControl::Continue }
        };
        if both {
            ta.tree_pairs(&tb, ws, |_, x, _, y| take(*x, *y)).unwrap();
        } else {
            ta.self_pairs(ws, |_, x, _, y| take(*x, *y)).unwrap();
        }
        got
    };
    for both in [false, true] {
        let all = run(usize::MAX, both, &mut ws);
        assert!(all.len() > 40, "{} pairs", all.len());
        for k in [1, 2, 7, 8, 9, 31, all.len() - 1, all.len()] {
            assert_eq!(run(k, both, &mut ws), all[..k], "stop after {k} (tree_pairs: {both})");
        }
    }
}

/// `refit` with no structural change is one backwards sweep of the pre-ordered arena; after a few
/// structural changes it takes the post-order path (no relayout); after many it lays the arena
/// out again. All must leave exact bounds: checked with validate() and brute force.
#[test]
fn refit_after_few_and_many_structural_changes() {
    let cfg = DbvtConfig::default();
    let mut f = common::rng::units(7u64);
    let boxes: Vec<Aabb> = (0..2000)
        .map(|_| Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * 60.0, Vec3A::splat(0.2 + f())))
        .collect();
    let (mut tree, ids) = Dbvt::build_with_config(boxes.iter().copied().zip(0u32..), cfg).unwrap();
    let mut model: Vec<ModelProxy> = ids
        .iter()
        .zip(&boxes)
        .enumerate()
        .map(|(i, (&id, b))| ModelProxy { id, tight: *b, fat: fatten(&cfg, b, Vec3A::ZERO), tag: i as u32 })
        .collect();
    let mut ws = QueryWorkspace::new();
    // No reinsertions first and last: the arena is in pre-order and the refit is the sweep.
    for reinserts in [0usize, 3, 5, 400, 0] {
        // A few (or many) reinsertions disturb the depth-first layout...
        for m in model.iter_mut().take(reinserts) {
            let d = Vec3A::new(30.0, -20.0, 10.0);
            let tight = Aabb::new(m.tight.min + d, m.tight.max + d);
            model_move(&cfg, m, tight, d);
            tree.move_proxy(m.id, tight, d).unwrap();
        }
        // ...then a batch of in-place updates needs a refit.
        let moves: Vec<_> = model
            .iter_mut()
            .skip(500)
            .step_by(7)
            .map(|m| {
                let d = Vec3A::new(f() - 0.5, f() - 0.5, f() - 0.5) * 3.0;
                let tight = Aabb::new(m.tight.min + d, m.tight.max + d);
                model_move(&cfg, m, tight, d);
                (m.id, tight, d)
            })
            .collect();
        tree.update_proxies(&moves).unwrap();
        tree.refit();
        tree.validate().unwrap();
        for k in 0..30 {
            let ray = Ray::new(Vec3A::new(-10.0, k as f32 * 2.0, 30.0), Vec3A::new(1.0, 0.1, -0.05));
            assert_eq!(tree_ray_all(&tree, &ray, &mut ws), brute_ray(&model, &ray));
            let q = Aabb::from_center_half_extents(Vec3A::new(k as f32 * 2.0, 30.0, 30.0), Vec3A::splat(6.0));
            assert_eq!(tree_overlap(&tree, &q, &mut ws), brute_overlap(&model, &q));
        }
    }
}

/// Enlarged proxies leave loose ancestors, marked for the next refit. An optimisation round that
/// rebuilds a treelet holding one replaces the marked nodes, so it must mark the treelet's parent
/// wherever the treelet's box shrank; `validate` checks that every unmarked node stores exactly
/// its children's union, and after a refit the root box must be the union of the fat boxes.
#[test]
fn enlarged_boxes_stay_marked_through_optimisation() {
    let mut rng = common::rng::Rng(77);
    // Treelets, not whole rebuilds: a treelet whose box shrank must mark its parent.
    let mut tree = Dbvt::with_config(DbvtConfig { whole_rebuild_max: 0, refresh_max: 0, ..DbvtConfig::default() });
    let ids: Vec<_> = (0..300)
        .map(|i| {
            tree.insert(Aabb::from_center_half_extents(Vec3A::from(rng.vec(0.0, 100.0)), Vec3A::splat(0.5)), i).unwrap()
        })
        .collect();
    tree.rebuild();
    // Far jumps, so that the old places the loose boxes still cover lie outside the new ones.
    for id in ids.iter().step_by(5) {
        let moved = Aabb::from_center_half_extents(Vec3A::from(rng.vec(0.0, 100.0)), Vec3A::splat(0.5));
        assert!(tree.enlarge_proxy(*id, moved, Vec3A::ZERO).unwrap());
        tree.validate().unwrap();
    }
    for _ in 0..30 {
        tree.optimize_incremental(120);
        tree.validate().unwrap();
    }
    tree.refit();
    tree.validate().unwrap();
    let union = ids.iter().fold(Aabb::EMPTY, |u, id| u.union(&tree.fat_aabb(*id).unwrap()));
    assert_eq!(tree.root_bounds(), Some(union));
}

/// Boxes entered at the same distance: both the binary tree's closest hit and the 8-wide
/// copy's go to the lowest proxy index, whatever order their traversals meet the boxes in.
#[test]
fn closest_hit_ties_go_to_the_lowest_index() {
    for (build, stride) in [(true, 1), (false, 1), (false, 7), (false, 97), (false, 121)] {
        // 40 boxes the ray enters at the same distance (one entry plane, x = 5, and different
        // extents otherwise, so they land in different places) among 200 others.
        let items: Vec<(Aabb, usize)> = (0..240)
            .map(|i| {
                let b = if i % 6 == 0 {
                    let k = (i / 6) as f32;
                    let grow = Vec3A::new((k * 0.37) % 3.0, (k * 0.61) % 2.0, (k * 0.83) % 2.5);
                    Aabb::new(Vec3A::new(5.0, -1.0 - grow.y, -1.0 - grow.z), Vec3A::new(6.0, 1.0, 1.0) + grow)
                } else {
                    let c = Vec3A::new((i * 37 % 101) as f32, (i * 13 % 17) as f32 + 3.0, (i * 7 % 11) as f32);
                    Aabb::from_center_half_extents(c, Vec3A::splat(0.4))
                };
                (b, i)
            })
            .collect();
        let (tree, ids) = if build {
            Dbvt::build(items.iter().copied()).unwrap()
        } else {
            // Inserted in the order k * stride (mod 240), so that slot order and item order differ.
            let mut tree = Dbvt::new();
            let mut ids = vec![None; items.len()];
            for k in 0..items.len() {
                let (b, i) = items[k * stride % items.len()];
                ids[i] = Some(tree.insert(b, i).unwrap());
            }
            (tree, ids.into_iter().map(Option::unwrap).collect())
        };
        let lowest = ids.iter().enumerate().filter(|(i, _)| i % 6 == 0).map(|(_, id)| *id).min_by_key(|id| id.index());
        let mut ws = QueryWorkspace::new();
        let ray = Ray::new(Vec3A::new(-10.0, 0.0, 0.0), Vec3A::X);
        let wide = tree.wide().unwrap();
        assert_eq!(tree.intersect(&ray, &mut ws).unwrap().map(|h| h.id), lowest, "binary, {build} {stride}");
        assert_eq!(wide.intersect(&ray, &mut ws).unwrap().map(|h| h.id), lowest, "wide, {build} {stride}");
    }
}
