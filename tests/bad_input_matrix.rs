//! The bad-input matrix (docs/robustness.md), one test per row: every bad input tried, and what
//! happens.
//! Nothing panics; the tree, mesh or file state is unchanged after an error.

use glam::{Mat4, Vec2, Vec3, Vec3A};
use slabtree::d2::{
    DistanceInput, OrientedBox, Polygon, Rot, SimplexCache, Sweep, ToiInput, Transform, collide_boxes,
    collide_polygons, compute_hull, shape_distance, time_of_impact,
};
use slabtree::io::{parse_obj, parse_ply};
use slabtree::{
    Aabb, BatchError, BatchOptions, BuildOptions, Dbvt, DbvtError, Frustum, InputError, LeafControl, LoadErrorKind,
    MeshBvh, MeshError, QueryWorkspace, Ray, RayControl, RayLeaf, Scene, Threads, TriMesh, TriangleTest, load_mesh,
};

fn tree() -> (Dbvt<u32>, Vec<slabtree::ProxyId>) {
    Dbvt::build((0..50).map(|i| (Aabb::from_center_half_extents(Vec3A::splat(i as f32 * 2.0), Vec3A::splat(0.5)), i)))
        .unwrap()
}

fn square(test: TriangleTest) -> MeshBvh {
    let mesh =
        TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y], vec![[0, 1, 2], [0, 2, 3]]).unwrap();
    MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() })
}

const NAN: f32 = f32::NAN;
const INF: f32 = f32::INFINITY;

fn bad_boxes() -> Vec<Aabb> {
    vec![
        Aabb::new(Vec3A::new(NAN, 0.0, 0.0), Vec3A::ONE),
        Aabb::new(Vec3A::ZERO, Vec3A::new(1.0, NAN, 1.0)),
        Aabb::new(Vec3A::new(-INF, 0.0, 0.0), Vec3A::ONE),
        Aabb::new(Vec3A::ZERO, Vec3A::splat(INF)),
        Aabb::new(Vec3A::ONE, Vec3A::ZERO), // inverted
        Aabb::EMPTY,
    ]
}

fn snapshot(t: &Dbvt<u32>) -> Vec<(slabtree::ProxyId, u32, Aabb)> {
    t.iter().map(|(id, d)| (id, *d, t.fat_aabb(id).unwrap())).collect()
}

/// Row: NaN, infinite or inverted AABBs: insert, build, move, enlarge, update, overlap, box cast.
#[test]
fn nan_infinite_inverted_aabbs_are_typed_errors() {
    let (mut t, ids) = tree();
    let before = snapshot(&t);
    let mut ws = QueryWorkspace::new();
    for b in bad_boxes() {
        assert!(matches!(t.insert(b, 99), Err(DbvtError::Input(_))), "{b:?}");
        assert!(matches!(t.move_proxy(ids[0], b, Vec3A::ZERO), Err(DbvtError::Input(_))));
        assert!(matches!(t.enlarge_proxy(ids[0], b, Vec3A::ZERO), Err(DbvtError::Input(_))));
        assert!(matches!(t.update_proxies(&[(ids[1], b, Vec3A::ZERO)]), Err(DbvtError::Input(_))));
        assert!(matches!(t.overlap(&b, &mut ws, &mut |_, _: &u32| LeafControl::Continue), Err(DbvtError::Input(_))));
        assert!(matches!(t.cast_box(&b, Vec3A::X, &mut ws), Err(DbvtError::Input(_))));
        assert!(matches!(Dbvt::build([(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 0), (b, 1)]), Err(DbvtError::Input(_))));
        assert!(square(TriangleTest::Watertight).cast_box(&b, Vec3A::X).is_err());
    }
    for p in [Vec3A::new(NAN, 0.0, 0.0), Vec3A::splat(INF)] {
        assert!(matches!(t.point(p, &mut ws, &mut |_, _: &u32| LeafControl::Continue), Err(DbvtError::Input(_))));
    }
    assert_eq!(snapshot(&t), before);
    t.validate().unwrap();
}

/// Row: huge but finite boxes (±f32::MAX) are accepted, and queries still work.
#[test]
fn huge_finite_boxes_are_accepted_and_queried() {
    let (mut t, _) = tree();
    let huge = t.insert(Aabb::new(Vec3A::splat(-f32::MAX), Vec3A::splat(f32::MAX)), 1000).unwrap();
    let far = t.insert(Aabb::new(Vec3A::splat(3e38), Vec3A::splat(3.2e38)), 1001).unwrap();
    t.validate().unwrap();
    let mut ws = QueryWorkspace::new();
    let mut seen = Vec::new();
    t.visit_ray(&Ray::new(Vec3A::splat(-10.0), Vec3A::ONE), &mut ws, &mut |l: RayLeaf<'_, u32>| {
        seen.push(l.id);
        RayControl::Continue
    })
    .unwrap();
    assert!(seen.contains(&huge) && seen.contains(&far));
    t.rebuild();
    t.optimize_incremental(100);
    t.validate().unwrap();
    assert_eq!(t.len(), 52);
}

/// Row: NaN or infinite displacements.
#[test]
fn nan_infinite_displacements_are_refused() {
    let (mut t, ids) = tree();
    let before = snapshot(&t);
    let mut ws = QueryWorkspace::new();
    let b = Aabb::new(Vec3A::ZERO, Vec3A::ONE);
    for d in [Vec3A::new(NAN, 0.0, 0.0), Vec3A::new(0.0, INF, 0.0), Vec3A::splat(-INF)] {
        assert_eq!(t.move_proxy(ids[0], b, d), Err(DbvtError::Input(InputError::NonFiniteDisplacement)));
        assert!(t.enlarge_proxy(ids[0], b, d).is_err());
        assert!(t.update_proxies(&[(ids[0], b, d)]).is_err());
        assert!(t.cast_box(&b, d, &mut ws).is_err());
        assert_eq!(square(TriangleTest::MollerTrumbore).cast_box(&b, d), Err(InputError::NonFiniteDisplacement));
    }
    // Finite, but so large that the fat box overflows to infinity: refused too.
    assert!(t.move_proxy(ids[0], b, Vec3A::splat(3e38)).is_err());
    assert_eq!(snapshot(&t), before);
    t.validate().unwrap();
}

fn bad_rays() -> Vec<Ray> {
    vec![
        Ray::new(Vec3A::new(NAN, 0.0, 0.0), Vec3A::X),
        Ray::new(Vec3A::ZERO, Vec3A::new(0.0, NAN, 1.0)),
        Ray::new(Vec3A::splat(INF), Vec3A::X),
        Ray::new(Vec3A::ZERO, Vec3A::new(-INF, 1.0, 0.0)),
        Ray::new(Vec3A::ZERO, Vec3A::X).with_range(NAN, 1.0),
        Ray::new(Vec3A::ZERO, Vec3A::X).with_range(0.0, NAN),
        Ray::new(Vec3A::ZERO, Vec3A::X).with_range(-INF, 1.0),
        Ray::new(Vec3A::ZERO, Vec3A::X).with_range(2.0, 1.0), // tmin > tmax
        Ray::new(Vec3A::ZERO, Vec3A::X).with_range(INF, INF),
    ]
}

/// Row: NaN or infinite rays, NaN ranges, `tmin > tmax`: every query of the tree, the mesh and
/// the scene refuses them with the ray's own typed error; a batch or packet names the first bad
/// ray and returns no answers.
#[test]
fn nan_infinite_rays_and_bad_ranges() {
    let (t, _) = tree();
    let mut ws = QueryWorkspace::new();
    // Errors carry the ray's NaNs, which equal nothing: compare them as printed.
    fn same<T: std::fmt::Debug>(got: T, want: T) {
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
    let good = Ray::new(Vec3A::new(0.5, 0.5, 1.0), -Vec3A::Z);
    for bvh in [square(TriangleTest::MollerTrumbore), square(TriangleTest::Watertight)] {
        let bvh = std::sync::Arc::new(bvh);
        let mut scene = Scene::new();
        scene.add(bvh.clone(), glam::Affine3A::IDENTITY, 0, Scene::ALL).unwrap();
        for r in bad_rays() {
            let e = r.validate().expect_err("a bad ray");
            same(t.intersect(&r, &mut ws), Err(DbvtError::Input(e)));
            same(bvh.intersect(&r), Err(e));
            same(bvh.occluded(&r), Err(e));
            same(scene.intersect(&r, Scene::ALL), Err(e));
            same(scene.occluded(&r, Scene::ALL), Err(e));
            let batch = [good, good, r, good];
            // Every batch refuses it, naming it, and leaves no answers (a batch checks its rays
            // run by run as it traces them, so earlier runs' answers are dropped).
            let (mut hits, mut occ, mut scene_hits, mut scene_occ) =
                (vec![None; 3], vec![true; 3], vec![None; 3], vec![true; 3]);
            same(
                bvh.intersect_batch(&batch, &mut hits, BatchOptions::default()),
                Err(BatchError { index: 2, error: e }),
            );
            same(bvh.occluded_batch(&batch, &mut occ, BatchOptions::default()), Err(BatchError { index: 2, error: e }));
            same(
                scene.intersect_batch(&batch, Scene::ALL, &mut scene_hits, BatchOptions::default()),
                Err(BatchError { index: 2, error: e }),
            );
            same(
                scene.occluded_batch(&batch, Scene::ALL, &mut scene_occ, BatchOptions::default()),
                Err(BatchError { index: 2, error: e }),
            );
            assert!(hits.is_empty() && occ.is_empty() && scene_hits.is_empty() && scene_occ.is_empty());
            let (mut hits, mut occ) = (vec![None; 3], vec![true; 3]);
            same(
                bvh.intersect_batch(
                    &batch,
                    &mut hits,
                    BatchOptions { threads: Threads::Calling, packets: false, ..Default::default() },
                ),
                Err(BatchError { index: 2, error: e }),
            );
            same(
                bvh.occluded_batch(
                    &batch,
                    &mut occ,
                    BatchOptions { threads: Threads::Calling, packets: false, ..Default::default() },
                ),
                Err(BatchError { index: 2, error: e }),
            );
            assert!(hits.is_empty() && occ.is_empty());
            // As packets, the same.
            let mut stream = [good; 80];
            stream[55] = r;
            let (mut hits, mut occ, mut scene_hits, mut scene_occ) =
                (vec![None; 2], vec![true; 2], vec![None; 2], vec![true; 2]);
            same(
                bvh.intersect_batch(
                    &stream,
                    &mut hits,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                ),
                Err(BatchError { index: 55, error: e }),
            );
            same(
                bvh.occluded_batch(
                    &stream,
                    &mut occ,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                ),
                Err(BatchError { index: 55, error: e }),
            );
            same(
                scene.intersect_batch(
                    &stream,
                    Scene::ALL,
                    &mut scene_hits,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                ),
                Err(BatchError { index: 55, error: e }),
            );
            same(
                scene.occluded_batch(
                    &stream,
                    Scene::ALL,
                    &mut scene_occ,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                ),
                Err(BatchError { index: 55, error: e }),
            );
            assert!(hits.is_empty() && occ.is_empty() && scene_hits.is_empty() && scene_occ.is_empty());
        }
        // Large batches are checked in chunks on several threads: still the first bad ray is
        // named, wherever the chunks fall, when a later chunk holds another.
        for first in [0, 4095, 4096, 9000, 19_999] {
            let (bad, worse) = (bad_rays()[0], bad_rays()[1]);
            let (e, _) = (bad.validate().unwrap_err(), worse.validate().unwrap_err());
            let mut big = vec![good; 20_000];
            big[first] = bad;
            if first + 5000 < big.len() {
                big[first + 5000] = worse;
            }
            same(
                {
                    let mut out = Vec::new();
                    bvh.intersect_batch(&big, &mut out, BatchOptions::default()).map(|_| out)
                },
                Err(BatchError { index: first, error: e }),
            );
            same(
                {
                    let mut out = Vec::new();
                    bvh.occluded_batch(&big, &mut out, BatchOptions::default()).map(|_| out)
                },
                Err(BatchError { index: first, error: e }),
            );
            same(
                bvh.intersect_batch(
                    &big,
                    &mut Vec::new(),
                    BatchOptions { threads: Threads::Calling, ..Default::default() },
                ),
                Err(BatchError { index: first, error: e }),
            );
            same(
                {
                    let mut out = Vec::new();
                    scene.intersect_batch(&big, Scene::ALL, &mut out, BatchOptions::default()).map(|_| out)
                },
                Err(BatchError { index: first, error: e }),
            );
            same(
                {
                    let mut out = Vec::new();
                    scene.occluded_batch(&big, Scene::ALL, &mut out, BatchOptions::default()).map(|_| out)
                },
                Err(BatchError { index: first, error: e }),
            );
        }
        // The same batch without the bad ray is traced.
        assert_eq!(
            {
                let mut out = Vec::new();
                bvh.intersect_batch(&[good; 3], &mut out, BatchOptions::default()).map(|_| out)
            }
            .unwrap()
            .iter()
            .filter(|h| h.is_some())
            .count(),
            3
        );
        let big = {
            let mut out = Vec::new();
            bvh.intersect_batch(&vec![good; 20_000], &mut out, BatchOptions::default()).map(|_| out)
        }
        .unwrap();
        assert!(big.len() == 20_000 && big.iter().all(|h| *h == bvh.intersect(&good).unwrap()));
    }
}

/// Row: zero-length rays (direction 0) are point queries on the tree (boxes containing the
/// origin) and hit no triangle; `tmin == tmax` is a valid one-point range.
#[test]
fn zero_length_rays_and_empty_ranges() {
    let (t, _) = tree();
    let mut ws = QueryWorkspace::new();
    let inside = Ray::new(Vec3A::splat(2.0), Vec3A::ZERO);
    assert!(inside.validate().is_ok());
    let hit = t.intersect(&inside, &mut ws).unwrap().expect("the box around (2,2,2) contains the origin");
    assert_eq!(t.get(hit.id).unwrap(), &1);
    // Outside every box: nothing, whichever side the boxes are on (an unbounded zero ray beside a
    // box on the positive side once reported it at t = inf; see tests/regressions.rs).
    let outside = Ray::new(Vec3A::splat(200.0), Vec3A::ZERO);
    assert_eq!(t.intersect(&outside, &mut ws).unwrap(), None);
    let below = Ray::new(Vec3A::splat(-200.0), Vec3A::ZERO);
    assert_eq!(t.intersect(&below, &mut ws).unwrap(), None);
    let bounded = Ray::new(Vec3A::splat(1.0), Vec3A::ZERO).with_range(0.0, 1e30);
    assert_eq!(t.intersect(&bounded, &mut ws).unwrap(), None);
    for bvh in [square(TriangleTest::MollerTrumbore), square(TriangleTest::Watertight)] {
        // A zero ray sitting exactly on the square.
        let on = Ray::new(Vec3A::new(0.5, 0.25, 0.0), Vec3A::ZERO);
        assert!(bvh.intersect(&on).unwrap().is_none());
        assert!(!bvh.occluded(&on).unwrap());
        // tmin == tmax exactly at the hit: hit at t = 1.
        let exact = Ray::new(Vec3A::new(0.5, 0.25, 1.0), -Vec3A::Z).with_range(1.0, 1.0);
        assert_eq!(bvh.intersect(&exact).unwrap().map(|h| h.t), Some(1.0));
        // A segment ending short of the square: no hit.
        let short = Ray::segment(Vec3A::new(0.5, 0.25, 1.0), Vec3A::new(0.5, 0.25, 0.5));
        assert!(bvh.intersect(&short).unwrap().is_none());
        // Denormal direction components.
        let den = Ray::new(Vec3A::new(0.5, 0.25, 1.0), Vec3A::new(1e-40, -1e-42, -1.0));
        assert!(bvh.intersect(&den).unwrap().is_some());
    }
}

/// Row: NaN or infinite transforms: a NaN frustum plane is a typed error; a NaN view-projection
/// matrix gives such planes; non-finite mesh positions (a deforming mesh, a node transform) are
/// refused on refit.
#[test]
fn nan_infinite_transforms() {
    let (t, _) = tree();
    let mut ws = QueryWorkspace::new();
    for m in [Mat4::from_cols_array(&[NAN; 16]), Mat4::from_scale(Vec3::new(INF, 1.0, 1.0))] {
        let f = Frustum::from_view_projection(m);
        assert!(matches!(f.validate(), Err(InputError::NonFinitePlane { .. })));
        assert!(matches!(t.frustum(&f, &mut ws, &mut |_, _: &u32| LeafControl::Continue), Err(DbvtError::Input(_))));
    }
    let mut bvh = square(TriangleTest::Watertight);
    let bad = vec![Vec3::ZERO, Vec3::X, Vec3::new(NAN, 1.0, 0.0), Vec3::Y];
    assert_eq!(bvh.refit(&bad), Err(MeshError::NonFiniteVertex { vertex: 2 }));
    assert_eq!(bvh.refit(&[Vec3::ZERO]), Err(MeshError::VertexCountMismatch { expected: 4, got: 1 }));
    assert!(
        bvh.intersect(&Ray::new(Vec3A::new(0.5, 0.25, 1.0), -Vec3A::Z)).unwrap().is_some(),
        "a failed refit changed the mesh"
    );
    // The same positions refused on rebuild, and the BVH left as it was, tree and mesh.
    let before = bvh.to_bytes();
    assert_eq!(bvh.rebuild(&bad), Err(MeshError::NonFiniteVertex { vertex: 2 }));
    assert_eq!(bvh.rebuild(&[Vec3::ZERO]), Err(MeshError::VertexCountMismatch { expected: 4, got: 1 }));
    assert!(bvh.to_bytes() == before, "a failed rebuild changed the tree");
    assert!(bvh.mesh().positions().iter().all(|p| p.is_finite()), "a failed rebuild changed the mesh");
    let mut mesh = bvh.mesh().clone();
    assert!(mesh.set_positions(vec![Vec3::splat(INF); 4]).is_err());
    // Translating every vertex by a transform that overflows: refused by TriMesh::new.
    let moved: Vec<Vec3> = mesh.positions().iter().map(|p| *p * f32::MAX * 4.0).collect();
    assert!(matches!(TriMesh::new(moved, mesh.triangles().to_vec()), Err(MeshError::NonFiniteVertex { .. })));
}

/// Row: NaN transforms and shapes in 2D: no panic (the answer is unspecified, as in Box2D).
#[test]
fn nan_transforms_in_2d_do_not_panic() {
    let a = Polygon::make_box(1.0, 1.0);
    let nan_xf = Transform::new(Vec2::new(NAN, 0.0), Rot { c: NAN, s: 0.0 });
    let _ = collide_polygons(&a, &a, nan_xf);
    let mut cache = SimplexCache::default();
    let _ = shape_distance(
        &DistanceInput { proxy_a: a.proxy(), proxy_b: a.proxy(), transform: nan_xf, use_radii: true },
        &mut cache,
    );
    let _ = time_of_impact(&ToiInput {
        proxy_a: a.proxy(),
        proxy_b: a.proxy(),
        sweep_a: Sweep::fixed(Transform::IDENTITY),
        sweep_b: Sweep {
            local_center: Vec2::ZERO,
            c1: Vec2::splat(INF),
            c2: Vec2::new(NAN, 1.0),
            q1: Rot::IDENTITY,
            q2: Rot::from_angle(NAN),
        },
        max_fraction: 1.0,
    });
    let _ = collide_boxes(
        &OrientedBox::new(Vec2::ZERO, Vec2::ONE, NAN),
        &OrientedBox::new(Vec2::splat(INF), Vec2::ONE, 0.0),
    );
    // A hull of NaN or coincident points fails (count < 3) and makes no polygon.
    assert!(Polygon::from_hull(&compute_hull(&[Vec2::splat(NAN); 4]), 0.0).is_none());
    assert!(Polygon::from_hull(&compute_hull(&[Vec2::ONE; 5]), 0.0).is_none());
}

/// Row: empty trees answer every query with nothing, and every maintenance call is a no-op.
#[test]
fn empty_tree() {
    let mut t: Dbvt<u32> = Dbvt::new();
    let mut ws = QueryWorkspace::new();
    assert_eq!(t.intersect(&Ray::new(Vec3A::ZERO, Vec3A::X), &mut ws).unwrap(), None);
    assert_eq!(t.cast_box(&Aabb::new(Vec3A::ZERO, Vec3A::ONE), Vec3A::X, &mut ws).unwrap(), None);
    let mut n = 0;
    t.overlap(&Aabb::new(Vec3A::splat(-1e30), Vec3A::splat(1e30)), &mut ws, &mut |_, _: &u32| {
        n += 1;
        LeafControl::Continue
    })
    .unwrap();
    t.self_pairs(&mut ws, |_, _: &u32, _, _: &u32| {
        n += 1;
        slabtree::PairControl::Continue
    })
    .unwrap();
    assert_eq!(n, 0);
    t.refit();
    t.rebuild();
    assert_eq!(t.optimize_incremental(100), 0);
    assert_eq!(t.update_proxies(&[]).unwrap(), 0);
    t.validate().unwrap();
    assert_eq!(t.root_bounds(), None);
    let (b, ids) = Dbvt::<u32>::build(std::iter::empty()).unwrap();
    assert!(b.is_empty() && ids.is_empty());
    b.validate().unwrap();
    // Emptied by removals, then reused.
    let (mut t, ids) = tree();
    for id in ids {
        t.remove(id).unwrap();
    }
    t.validate().unwrap();
    assert_eq!(t.intersect(&Ray::new(Vec3A::splat(-1.0), Vec3A::ONE), &mut ws).unwrap(), None);
    t.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 7).unwrap();
    t.validate().unwrap();
}

/// Row: empty meshes (no triangles; no vertices at all; only unused vertices).
#[test]
fn empty_meshes() {
    for mesh in [
        TriMesh::new(vec![], vec![]).unwrap(),
        TriMesh::new(vec![Vec3::ONE, Vec3::splat(NAN)], vec![]).unwrap(),
        parse_obj(b"", "empty.obj").unwrap(),
        parse_obj(b"# only a comment\nv 1 2 3\n", "v.obj").unwrap(),
    ] {
        assert!(mesh.is_empty());
        assert_eq!(mesh.bounds(), None);
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
            let r = Ray::new(Vec3A::ZERO, Vec3A::X);
            assert!(bvh.intersect(&r).unwrap().is_none() && !bvh.occluded(&r).unwrap());
            assert!(bvh.cast_box(&Aabb::new(Vec3A::ZERO, Vec3A::ONE), Vec3A::X).unwrap().is_none());
            assert_eq!(bvh.bounds(), None);
            assert_eq!(bvh.stats().triangles, 0);
        }
    }
}

/// Row: stale ids (removed, removed twice, slot reused) and ids from another tree.
#[test]
fn stale_and_foreign_ids() {
    let (mut t, ids) = tree();
    let (mut other, _) = tree();
    let b = Aabb::new(Vec3A::ZERO, Vec3A::ONE);
    t.remove(ids[3]).unwrap();
    let reused = t.insert(b, 500).unwrap();
    assert_eq!(reused.index(), ids[3].index(), "the slot is reused");
    for e in [
        t.remove(ids[3]).map(|_| ()),
        t.get(ids[3]).map(|_| ()),
        t.fat_aabb(ids[3]).map(|_| ()),
        t.move_proxy(ids[3], b, Vec3A::ZERO).map(|_| ()),
        t.enlarge_proxy(ids[3], b, Vec3A::ZERO).map(|_| ()),
        t.update_proxies(&[(ids[3], b, Vec3A::ZERO)]).map(|_| ()),
    ] {
        assert_eq!(e, Err(DbvtError::StaleProxy(ids[3])));
    }
    assert_eq!(t.get(reused), Ok(&500));
    assert_eq!(other.remove(ids[0]), Err(DbvtError::ForeignProxy(ids[0])));
    assert_eq!(other.get(reused), Err(DbvtError::ForeignProxy(reused)));
    t.validate().unwrap();
    other.validate().unwrap();
    assert_eq!(t.len(), 50);
}

/// Row: update_proxies without refit: queries refuse with RefitPending instead of missing.
#[test]
fn queries_while_a_refit_is_pending() {
    let (mut t, ids) = tree();
    let mut ws = QueryWorkspace::new();
    t.update_proxies(&[(ids[0], Aabb::new(Vec3A::splat(500.0), Vec3A::splat(501.0)), Vec3A::ZERO)]).unwrap();
    assert_eq!(t.intersect(&Ray::new(Vec3A::ZERO, Vec3A::ONE), &mut ws), Err(DbvtError::RefitPending));
    assert!(t.self_pairs(&mut ws, |_, _: &u32, _, _: &u32| slabtree::PairControl::Continue).is_err());
    t.validate().unwrap();
    t.refit();
    assert!(t.intersect(&Ray::new(Vec3A::ZERO, Vec3A::ONE), &mut ws).unwrap().is_some());
}

fn variant(bytes: &[u8], ply: bool) -> String {
    let r = if ply { parse_ply(bytes, "f.ply") } else { parse_obj(bytes, "f.obj") };
    let e = r.expect_err("should be refused");
    let s = format!("{:?}", e.kind());
    s.split([' ', '(', '{']).next().unwrap().to_string()
}

/// Row: malformed files (OBJ, PLY, unknown extension, missing file): a LoadError naming the file
/// and the line or record.
#[test]
fn malformed_files() {
    for (bytes, want) in [
        (&b"v 0 0\n"[..], "MissingValue"),
        (b"v 0 zero 0\n", "BadNumber"),
        (b"v 0 0 1e39\n", "NonFiniteCoordinate"),
        (b"v 0 0 nan\n", "NonFiniteCoordinate"),
        (b"v 0 0 0\nv 1 0 0\nf 1 2\n", "TooFewVertices"),
        (b"v 0 0 0\nf 1 x 1\n", "BadIndex"),
        (b"v 0 0 0\nf 1/2/3/4 1 1\n", "BadIndex"),
        (b"\xff\xfe\x00garbage\nf 1 2 3\n", "IndexOutOfRange"),
    ] {
        assert_eq!(variant(bytes, false), want, "{:?}", String::from_utf8_lossy(bytes));
    }
    let header = "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
    let mut truncated = header.as_bytes().to_vec();
    truncated.extend([0u8; 20]);
    let e = parse_ply(&truncated, "t.ply").unwrap_err();
    assert!(e.to_string().starts_with("t.ply"), "{e}");
    assert!(e.record().is_some(), "a binary error names the record: {e}");
    for bad in [
        &b"not a ply\n"[..],
        b"ply\nformat ascii 2.0\nend_header\n",
        b"ply\nformat ascii 1.0\nelement vertex -1\nend_header\n",
        b"ply\n",
    ] {
        let e = parse_ply(bad, "h.ply").unwrap_err();
        assert!(e.to_string().starts_with("h.ply"), "{e}");
    }
    assert!(matches!(load_mesh("scene.fbx").unwrap_err().kind(), LoadErrorKind::UnknownFormat { .. }));
    assert!(matches!(load_mesh("/nonexistent/x.obj").unwrap_err().kind(), LoadErrorKind::Io(_)));
    assert!(matches!(load_mesh(std::env::temp_dir()).unwrap_err().kind(), LoadErrorKind::UnknownFormat { .. }));
}

/// Row: indices out of range: TriMesh::new, OBJ (0, beyond the end, too negative) and PLY.
#[test]
fn indices_out_of_range() {
    assert_eq!(
        TriMesh::new(vec![Vec3::ZERO; 3], vec![[0, 1, 3]]),
        Err(MeshError::IndexOutOfRange { triangle: 0, index: 3, vertices: 3 })
    );
    assert!(TriMesh::new(vec![], vec![[0, 0, 0]]).is_err());
    assert!(TriMesh::new(vec![Vec3::ZERO; 3], vec![[u32::MAX, 0, 1]]).is_err());
    assert_eq!(variant(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", false), "IndexOutOfRange");
    assert_eq!(variant(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", false), "BadIndex");
    assert_eq!(variant(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -4\n", false), "IndexOutOfRange");
    assert_eq!(variant(b"v 0 0 0\nf 1 1 99999999999999999999\n", false), "BadIndex");
    let ply = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n";
    assert_eq!(variant(ply, true), "IndexOutOfRange");
    let neg = String::from_utf8_lossy(ply).replace("3 0 1 3", "3 0 1 -1");
    assert_eq!(variant(neg.as_bytes(), true), "IndexOutOfRange");
}

/// Row: zero-area triangles (a point, a segment, collinear) are kept, never hit, and give no NaN.
#[test]
fn zero_area_triangles() {
    let p = vec![Vec3::ZERO, Vec3::ONE, Vec3::splat(2.0), Vec3::X, Vec3::Y];
    let t = vec![[0, 0, 0], [0, 1, 1], [0, 1, 2], [0, 3, 4]];
    let mesh = TriMesh::new(p, t).unwrap();
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
        // Rays straight through the degenerate ones (along the diagonal, through the point).
        for r in [
            Ray::new(Vec3A::splat(-1.0), Vec3A::ONE),
            Ray::new(Vec3A::new(0.5, 0.5, -1.0), Vec3A::Z),
            Ray::new(Vec3A::new(1.0, 1.0, 5.0), -Vec3A::Z),
            Ray::new(Vec3A::new(1.0, 0.0, 1.0), Vec3A::new(0.0, 1.0, -1.0)),
        ] {
            if let Some(h) = bvh.intersect(&r).unwrap() {
                assert_eq!(h.triangle, 3, "hit a degenerate triangle with {r:?}: {h:?}");
                assert!(h.t.is_finite() && h.u.is_finite() && h.v.is_finite() && h.normal.is_finite());
            }
        }
        let h = bvh.intersect(&Ray::new(Vec3A::new(0.25, 0.25, 1.0), -Vec3A::Z)).unwrap().unwrap();
        assert_eq!(h.triangle, 3);
        let _ = bvh.cast_box(&Aabb::from_center_half_extents(Vec3A::splat(1.0), Vec3A::splat(0.1)), Vec3A::X);
    }
}

/// The dynamic tree operation by operation: each bad input is refused with a typed error, and the
/// tree stays valid and loses nothing.
mod tree_operations {
    use glam::Vec3A;
    use slabtree::{
        Aabb, Dbvt, DbvtError, Frustum, InputError, LeafControl, Plane, QueryWorkspace, Ray, RayControl, RayLeaf,
    };

    fn sample_tree() -> (Dbvt<u32>, Vec<slabtree::ProxyId>) {
        let mut tree = Dbvt::new();
        let ids = (0..50u32)
            .map(|i| tree.insert(Aabb::from_center_half_extents(Vec3A::splat(i as f32), Vec3A::splat(0.4)), i).unwrap())
            .collect();
        (tree, ids)
    }

    fn bad_boxes() -> Vec<Aabb> {
        let n = f32::NAN;
        let i = f32::INFINITY;
        vec![
            Aabb::new(Vec3A::new(n, 0.0, 0.0), Vec3A::ONE),
            Aabb::new(Vec3A::ZERO, Vec3A::new(1.0, n, 1.0)),
            Aabb::new(Vec3A::new(-i, 0.0, 0.0), Vec3A::ONE),
            Aabb::new(Vec3A::ZERO, Vec3A::new(1.0, 1.0, i)),
            Aabb::new(Vec3A::ONE, Vec3A::ZERO),
            Aabb::EMPTY,
        ]
    }

    #[test]
    fn nan_infinite_and_inverted_boxes_are_refused() {
        let (mut tree, ids) = sample_tree();
        for b in bad_boxes() {
            let e = tree.insert(b, 99).unwrap_err();
            assert!(
                matches!(e, DbvtError::Input(InputError::NonFiniteAabb { .. } | InputError::InvertedAabb { .. })),
                "{e}"
            );
            tree.validate().unwrap();
            assert!(tree.move_proxy(ids[3], b, Vec3A::ZERO).is_err());
            assert!(tree.enlarge_proxy(ids[3], b, Vec3A::ZERO).is_err());
            tree.validate().unwrap();
            let mut ws = QueryWorkspace::new();
            assert!(tree.overlap(&b, &mut ws, &mut |_, _: &u32| LeafControl::Continue).is_err());
            assert!(
                tree.visit_swept_box(&b, Vec3A::X, &mut ws, &mut |_: RayLeaf<'_, u32>| RayControl::Continue).is_err()
            );
            assert!(Dbvt::build([(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 0u32), (b, 1)]).is_err());
        }
        assert_eq!(tree.len(), 50);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(*tree.get(*id).unwrap(), i as u32, "a proxy was lost");
        }
    }

    #[test]
    fn bad_displacements_are_refused() {
        let (mut tree, ids) = sample_tree();
        let good = Aabb::new(Vec3A::splat(100.0), Vec3A::splat(101.0));
        for d in [Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::new(0.0, f32::INFINITY, 0.0)] {
            assert_eq!(tree.move_proxy(ids[0], good, d), Err(DbvtError::Input(InputError::NonFiniteDisplacement)));
            assert_eq!(tree.enlarge_proxy(ids[0], good, d), Err(DbvtError::Input(InputError::NonFiniteDisplacement)));
        }
        // The proxy did not move.
        assert!(tree.fat_aabb(ids[0]).unwrap().contains_point(Vec3A::ZERO));
        tree.validate().unwrap();
    }

    #[test]
    fn stale_and_foreign_ids_are_errors() {
        let (mut tree, ids) = sample_tree();
        let (other, other_ids) = sample_tree();
        let victim = ids[7];
        assert_eq!(tree.remove(victim).unwrap(), 7);
        // The slot is reused by the next insert; the old id must not reach the new proxy.
        let fresh = tree.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 1000).unwrap();
        assert_eq!(fresh.index(), victim.index());
        let b = Aabb::new(Vec3A::ZERO, Vec3A::ONE);
        assert_eq!(tree.get(victim), Err(DbvtError::StaleProxy(victim)));
        assert_eq!(tree.remove(victim), Err(DbvtError::StaleProxy(victim)));
        assert_eq!(tree.move_proxy(victim, b, Vec3A::ZERO), Err(DbvtError::StaleProxy(victim)));
        assert_eq!(tree.enlarge_proxy(victim, b, Vec3A::ZERO), Err(DbvtError::StaleProxy(victim)));
        assert_eq!(tree.fat_aabb(victim), Err(DbvtError::StaleProxy(victim)));
        assert_eq!(*tree.get(fresh).unwrap(), 1000);
        // Foreign ids, even with a matching index and generation.
        let foreign = other_ids[3];
        assert_eq!(tree.get(foreign), Err(DbvtError::ForeignProxy(foreign)));
        assert_eq!(tree.remove(foreign), Err(DbvtError::ForeignProxy(foreign)));
        assert_eq!(tree.move_proxy(foreign, b, Vec3A::ZERO), Err(DbvtError::ForeignProxy(foreign)));
        tree.validate().unwrap();
        other.validate().unwrap();
        assert_eq!(tree.len(), 50);
        assert_eq!(other.len(), 50);
    }

    #[test]
    fn bad_frustum_is_refused() {
        let (tree, _) = sample_tree();
        let mut f = Frustum { planes: [Plane::new(Vec3A::X, 0.0); 6] };
        f.planes[4].d = f32::NAN;
        let mut ws = QueryWorkspace::new();
        let r = tree.frustum(&f, &mut ws, &mut |_, _: &u32| LeafControl::Continue);
        assert_eq!(r, Err(DbvtError::Input(InputError::NonFinitePlane { index: 4 })));
    }

    #[test]
    fn empty_tree_answers_every_query() {
        let mut tree: Dbvt<u32> = Dbvt::new();
        let mut ws = QueryWorkspace::new();
        let ray = Ray::new(Vec3A::ZERO, Vec3A::X);
        assert_eq!(tree.intersect(&ray, &mut ws).unwrap(), None);
        assert_eq!(tree.cast_box(&Aabb::new(Vec3A::ZERO, Vec3A::ONE), Vec3A::X, &mut ws).unwrap(), None);
        assert_eq!(tree.self_pairs(&mut ws, |_, _, _, _| slabtree::PairControl::Continue).unwrap().leaves, 0);
        tree.rebuild();
        tree.refit();
        assert_eq!(tree.optimize_incremental(10), 0);
        tree.validate().unwrap();
        assert_eq!(tree.root_bounds(), None);
        let (built, ids) = Dbvt::<u32>::build(std::iter::empty()).unwrap();
        assert!(built.is_empty() && ids.is_empty());
        built.validate().unwrap();
    }

    #[test]
    fn a_bad_entry_leaves_a_batch_update_unapplied() {
        let (mut tree, ids) = sample_tree();
        let (_, foreign) = sample_tree();
        let before: Vec<Aabb> = ids.iter().map(|id| tree.fat_aabb(*id).unwrap()).collect();
        let far = |i: usize| Aabb::from_center_half_extents(Vec3A::splat(100.0 + i as f32), Vec3A::splat(0.4));
        let mut moves: Vec<_> = ids.iter().enumerate().map(|(i, id)| (*id, far(i), Vec3A::X)).collect();
        for bad in [
            (ids[3], Aabb::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::ONE), Vec3A::X),
            (ids[3], far(3), Vec3A::new(0.0, f32::INFINITY, 0.0)),
            (foreign[3], far(3), Vec3A::X),
        ] {
            moves[40] = bad;
            assert!(tree.update_proxies(&moves).is_err());
            assert!(!tree.is_refit_pending());
            let after: Vec<Aabb> = ids.iter().map(|id| tree.fat_aabb(*id).unwrap()).collect();
            assert_eq!(before, after, "a refused batch changed the tree");
            tree.validate().unwrap();
        }
        moves[40] = (ids[40], far(40), Vec3A::X);
        assert_eq!(tree.update_proxies(&moves).unwrap(), 50);
        tree.refit();
        tree.validate().unwrap();
        assert!(tree.fat_aabb(ids[7]).unwrap().contains(&far(7)));
    }
}

/// The rows of the newer entry points: build qualities, the broad phase and the SIMD override.
mod qualities_broad_phase_and_simd_override {
    use glam::{Vec3, Vec3A};
    use slabtree::{
        Aabb, BodyKind, BroadPhase, BuildOptions, BuildQuality, MeshBvh, MeshError, ObjectId, Ray, SimdLevel, TriMesh,
        set_simd_level, simd_level,
    };

    use super::{INF, NAN, bad_boxes, bad_rays};

    /// Every quality refuses what the others refuse, and stays as it was: bad rays, bad refits
    /// (a High build with spatial splits refuses every refit, `MeshError::RefitSpatialSplits`),
    /// on a sphere and on an interior where High splits; out-of-range build options
    /// (0 or 1 bins, threshold 0, many rotation passes) still build a BVH that answers as the
    /// default one does.
    #[test]
    fn every_build_quality_refuses_bad_input_and_stays_unchanged() {
        let (p, t) = slabtree_testkit::triangle::room(400, 3);
        let room = TriMesh::new(p, t).unwrap();
        let high = MeshBvh::build(&room, &BuildOptions { quality: BuildQuality::High, ..Default::default() });
        assert!(high.stats().references > room.len(), "the interior gets spatial splits");
        for mesh in [TriMesh::uv_sphere(1.0, 24, 12), room] {
            qualities_on(&mesh);
        }
    }

    fn qualities_on(mesh: &TriMesh) {
        let reference = MeshBvh::build(mesh, &BuildOptions::default());
        let probes: Vec<Ray> =
            (0..64).map(|i| Ray::new(Vec3::new(0.1 * i as f32 - 3.0, 0.05, 5.0), Vec3::new(0.0, 0.0, -1.0))).collect();
        for quality in [BuildQuality::Low, BuildQuality::Medium, BuildQuality::High] {
            let mut bvh = MeshBvh::build(mesh, &BuildOptions { quality, ..Default::default() });
            let bytes = bvh.to_bytes();
            for r in bad_rays() {
                let e = r.validate().expect_err("a bad ray");
                assert_eq!(format!("{:?}", bvh.intersect(&r)), format!("{:?}", Err::<(), _>(e)), "{quality:?}");
                assert_eq!(format!("{:?}", bvh.occluded(&r)), format!("{:?}", Err::<(), _>(e)), "{quality:?}");
            }
            let mut nan = mesh.positions().to_vec();
            nan[7].y = NAN;
            let short = &mesh.positions()[1..];
            let (refit_nan, refit_short) = (bvh.refit(&nan), bvh.refit(short));
            // A High build whose splits put a triangle in several leaves refuses every refit.
            if bvh.stats().references > mesh.len() {
                assert_eq!(refit_nan, Err(MeshError::RefitSpatialSplits));
                assert_eq!(refit_short, Err(MeshError::RefitSpatialSplits));
            } else {
                assert_eq!(refit_nan, Err(MeshError::NonFiniteVertex { vertex: 7 }), "{quality:?}");
                assert!(matches!(refit_short, Err(MeshError::VertexCountMismatch { .. })), "{quality:?}");
            }
            // A rebuild refuses the same positions at every quality, spatial splits or not.
            assert_eq!(bvh.rebuild(&nan), Err(MeshError::NonFiniteVertex { vertex: 7 }), "{quality:?}");
            assert!(matches!(bvh.rebuild(short), Err(MeshError::VertexCountMismatch { .. })), "{quality:?}");
            assert!(bvh.to_bytes() == bytes, "{quality:?}: an error changed the BVH");
            for (bins, parallel_threshold, rotation_passes) in [(0, 16_384, 3), (1, 0, 3), (usize::MAX, 1, 1000)] {
                let options = BuildOptions { quality, bins, parallel_threshold, rotation_passes, ..Default::default() };
                let odd = MeshBvh::build(mesh, &options);
                for r in &probes {
                    let (got, want) = (odd.intersect(r).unwrap(), reference.intersect(r).unwrap());
                    assert_eq!(got.map(|h| (h.t, h.triangle)), want.map(|h| (h.t, h.triangle)), "{options:?}");
                }
            }
        }
    }

    /// The broad phase: NaN, infinite and inverted boxes, bad displacements, stale ids and a
    /// batch with one bad entry are typed errors, and nothing changes.
    #[test]
    fn broad_phase_refuses_bad_input_and_stays_unchanged() {
        let mut phase: BroadPhase<u32> = BroadPhase::new();
        let unit = |x: f32| Aabb::from_center_half_extents(Vec3A::new(x, 0.0, 0.0), Vec3A::splat(0.5));
        let ids: Vec<ObjectId> =
            (0..6).map(|i| phase.add(unit(i as f32 * 0.8), BodyKind::Dynamic, i).unwrap()).collect();
        phase.update_pairs();
        let gone = phase.add(unit(9.0), BodyKind::Static, 99).unwrap();
        phase.remove(gone).unwrap();
        let state = |p: &BroadPhase<u32>| {
            let mut pairs: Vec<_> = p.pairs().collect();
            pairs.sort_unstable();
            let boxes: Vec<_> = ids.iter().map(|&id| p.fat_aabb(id).unwrap()).collect();
            (p.len(), pairs, format!("{boxes:?}"))
        };
        let before = state(&phase);
        for b in bad_boxes() {
            assert!(matches!(phase.add(b, BodyKind::Dynamic, 7), Err(slabtree::BroadPhaseError::Input(_))), "{b:?}");
            assert!(matches!(phase.move_object(ids[0], b, Vec3A::ZERO), Err(slabtree::BroadPhaseError::Input(_))));
            let batch = [(ids[1], unit(3.0), Vec3A::ZERO), (ids[2], b, Vec3A::ZERO)];
            assert!(phase.move_objects(batch).is_err(), "a batch with {b:?} was applied");
        }
        for d in [Vec3A::new(NAN, 0.0, 0.0), Vec3A::new(0.0, INF, 0.0)] {
            assert!(phase.move_object(ids[0], unit(5.0), d).is_err(), "displacement {d}");
        }
        assert_eq!(phase.move_object(gone, unit(1.0), Vec3A::ZERO), Err(slabtree::BroadPhaseError::StaleObject(gone)));
        assert_eq!(phase.remove(gone), Err(slabtree::BroadPhaseError::StaleObject(gone)));
        assert!(phase.set_kind(gone, BodyKind::Static).is_err() && phase.get(gone).is_err());
        let events = phase.update_pairs();
        assert!(events.began().is_empty() && events.ended().is_empty(), "{events:?}");
        assert_eq!(state(&phase), before, "an error changed the broad phase");
    }

    /// The SIMD override: a level the CPU lacks gives the CPU's best, a name that is no level is
    /// none, and the answers are the same at every level.
    #[test]
    fn the_simd_override_never_goes_above_the_cpu() {
        assert_eq!(SimdLevel::from_name("avx1024"), None);
        assert_eq!(SimdLevel::from_name(""), None);
        let chosen = simd_level();
        let best = set_simd_level(SimdLevel::Avx512);
        #[cfg(target_arch = "x86_64")]
        {
            let cpu_has_512 = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl");
            let cpu_has_avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            assert!(best <= SimdLevel::Avx2 || cpu_has_512, "{best} on a CPU without AVX-512");
            assert!(best <= SimdLevel::Sse2 || cpu_has_avx2, "{best} on a CPU without AVX2");
            assert_eq!(set_simd_level(SimdLevel::Scalar), SimdLevel::Sse2);
        }
        let mesh = TriMesh::torus(1.0, 0.3, 32, 16);
        let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
        let ray = Ray::new(Vec3::new(1.0, 0.05, 3.0), Vec3::new(0.01, 0.0, -1.0));
        set_simd_level(SimdLevel::Sse2);
        let low = bvh.intersect(&ray).unwrap();
        set_simd_level(best);
        assert_eq!(bvh.intersect(&ray).unwrap(), low);
        set_simd_level(chosen);
    }
}
