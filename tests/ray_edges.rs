//! Ray edge cases for the slab test and the tree: rays in faces, grazing edges and corners,
//! origins inside, zero length, `tmax` exactly at the hit, direction components of ±0, 1e-30 and
//! denormals, and NaN or infinite rays. Each case runs on the scalar `ray_aabb2` and on the tree
//! with both node tests, which must agree.

use glam::Vec3A;
use slabtree::dbvt::NodeTest;
use slabtree::{Aabb, Dbvt, DbvtConfig, DbvtError, InputError, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2};

fn unit() -> Aabb {
    Aabb::new(Vec3A::ZERO, Vec3A::ONE)
}

/// The scalar answer, checked against the tree (one proxy among decoys, margin 0) with both node
/// tests.
fn hit(ray: Ray) -> Option<f32> {
    let scalar = ray_aabb2(&ray, &unit());
    let cfg = DbvtConfig { margin: 0.0, ..Default::default() };
    let mut tree = Dbvt::with_config(cfg);
    let target = tree.insert(unit(), 0).unwrap();
    for i in 1..6 {
        let c = Vec3A::new(10.0 * i as f32, -7.0, 3.0 * i as f32);
        tree.insert(Aabb::from_center_half_extents(c, Vec3A::splat(0.5)), i).unwrap();
    }
    let mut ws = QueryWorkspace::new();
    for mode in [NodeTest::Simd, NodeTest::Scalar] {
        ws.node_test = mode;
        let mut got = None;
        tree.visit_ray(&ray, &mut ws, &mut |l: RayLeaf<'_, i32>| {
            if l.id == target {
                got = Some(l.t);
            }
            RayControl::Continue
        })
        .unwrap();
        assert_eq!(got.map(f32::to_bits), scalar.map(f32::to_bits), "{mode:?} disagrees with scalar for {ray:?}");
    }
    scalar
}

#[test]
fn rays_lying_in_each_face_plane_touch() {
    for axis in 0..3 {
        for plane in [0.0f32, 1.0] {
            for along in 0..3 {
                if along == axis {
                    continue;
                }
                let mut o = Vec3A::splat(0.5);
                o[axis] = plane;
                o[along] = -2.0;
                let mut d = Vec3A::ZERO;
                d[along] = 1.0;
                assert_eq!(hit(Ray::new(o, d)), Some(2.0), "face axis {axis} plane {plane} along {along}");
                // The same with -0.0 in the parallel components.
                let mut dn = d;
                for k in 0..3 {
                    if k != along {
                        dn[k] = -0.0;
                    }
                }
                assert_eq!(hit(Ray::new(o, dn)), Some(2.0));
                // Just outside the face: a miss.
                let mut out = o;
                out[axis] = if plane == 0.0 { -1e-6 } else { 1.0 + 1e-6 };
                assert_eq!(hit(Ray::new(out, d)), None);
            }
        }
    }
}

#[test]
fn grazing_edges_and_corners_touch() {
    // Along the edge y = 1, z = 1.
    assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 1.0, 1.0), Vec3A::X)), Some(1.0));
    // Through the corner (1, 1, 1) only, diagonally in the plane y = 1.
    assert_eq!(hit(Ray::new(Vec3A::new(2.0, 1.0, 0.0), Vec3A::new(-1.0, 0.0, 1.0))), Some(1.0));
    // Through the corner (0, 0, 0) from outside, touching nothing else.
    let t = hit(Ray::new(Vec3A::new(-1.0, 1.0, 0.0), Vec3A::new(1.0, -1.0, 0.0))).unwrap();
    assert_eq!(t, 1.0);
    // Corner-to-corner diagonal through the box.
    assert_eq!(hit(Ray::new(Vec3A::splat(-1.0), Vec3A::ONE)), Some(1.0));
    // Missing the corner by a hair.
    assert_eq!(hit(Ray::new(Vec3A::new(2.0, 1.0 + 1e-6, 0.0), Vec3A::new(-1.0, 0.0, 1.0))), None);
}

#[test]
fn origin_inside_reports_tmin() {
    assert_eq!(hit(Ray::new(Vec3A::splat(0.5), Vec3A::X)), Some(0.0));
    // With a negative tmin the line enters where it crosses the face y = 1, at t = -0.5.
    assert_eq!(hit(Ray::new(Vec3A::splat(0.5), -Vec3A::Y).with_range(-3.0, 3.0)), Some(-0.5));
    assert_eq!(hit(Ray::new(Vec3A::splat(0.5), -Vec3A::Y).with_range(-0.25, 3.0)), Some(-0.25));
    assert_eq!(hit(Ray::new(Vec3A::splat(0.5), Vec3A::new(0.3, -0.2, 0.9)).with_range(0.25, 0.5)), Some(0.25));
}

#[test]
fn zero_length_rays_are_point_tests() {
    assert_eq!(hit(Ray::new(Vec3A::splat(0.5), Vec3A::ZERO)), Some(0.0));
    assert_eq!(hit(Ray::new(Vec3A::new(1.0, 0.5, 0.5), Vec3A::ZERO)), Some(0.0)); // on a face
    assert_eq!(hit(Ray::new(Vec3A::ONE, -Vec3A::ZERO)), Some(0.0)); // on a corner
    assert_eq!(hit(Ray::new(Vec3A::new(1.5, 0.5, 0.5), Vec3A::ZERO)), None);
    // Beside the box on the positive side of every axis, with an unbounded range: the slab
    // interval is [inf, inf], which must not count (a fuzzing finding).
    assert_eq!(hit(Ray::new(Vec3A::splat(-1.0), Vec3A::ZERO)), None);
    // A segment of length zero (tmin = tmax) ending inside.
    assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X).with_range(1.0, 1.0)), Some(1.0));
    assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X).with_range(0.5, 0.5)), None);
}

#[test]
fn tmax_exactly_at_the_hit_counts() {
    let r = Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X);
    assert_eq!(hit(r.with_range(0.0, 1.0)), Some(1.0));
    assert_eq!(hit(r.with_range(0.0, 1.0f32.next_down())), None);
    assert_eq!(hit(Ray::segment(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(0.0, 0.5, 0.5))), Some(1.0));
    // Exit exactly at tmin: the ray starts on the far face going out.
    assert_eq!(hit(Ray::new(Vec3A::new(1.0, 0.5, 0.5), Vec3A::X)), Some(0.0));
}

#[test]
fn tiny_and_denormal_direction_components() {
    for tiny in [1e-30f32, -1e-30, 1e-40, -1e-40, f32::MIN_POSITIVE, 0.0, -0.0, f32::from_bits(1)] {
        assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(1.0, tiny, tiny))), Some(1.0), "tiny {tiny}");
        // Origin in the face plane y = 1, tiny component pointing into the box (or exactly
        // parallel): it must touch. Pointing out, the exact answer is a miss by |tiny|; the
        // conservative test may still report the touch (when 1/tiny overflows) but never a NaN.
        let into = Ray::new(Vec3A::new(-1.0, 1.0, 0.5), Vec3A::new(1.0, -tiny.abs(), 0.0));
        assert_eq!(hit(into), Some(1.0), "tiny {tiny}");
        let out = hit(Ray::new(Vec3A::new(-1.0, 1.0, 0.5), Vec3A::new(1.0, tiny.abs(), 0.0)));
        assert!(out.is_none_or(|t| t == 1.0), "tiny {tiny}: {out:?}");
        // Outside the slab with a tiny component towards it: the crossing is far beyond the box.
        assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 2.0, 0.5), Vec3A::new(1.0, -tiny.abs(), 0.0))), None, "tiny {tiny}");
    }
    // A direction made only of denormals points at the box, but the entry, t = 1e40, exceeds
    // f32's range: the computed entry is +inf, which is not a hit (never NaN either).
    assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(1e-40, 0.0, 0.0))), None);
    assert_eq!(hit(Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(1e-40, 0.0, 0.0)).with_range(0.0, f32::MAX)), None);
    // 1e-30 stays in range: entry at exactly 1e30 within rounding.
    let t = hit(Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(1e-30, 0.0, 0.0))).unwrap();
    assert!((t / 1e30 - 1.0).abs() < 1e-6, "t = {t}");
}

#[test]
fn nan_and_infinite_rays_are_refused_without_hits() {
    let (tree, _) = Dbvt::build([(unit(), 0)]).unwrap();
    let mut ws = QueryWorkspace::new();
    let bad = [
        Ray::new(Vec3A::new(f32::NAN, 0.5, 0.5), Vec3A::X),
        Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(f32::NAN, 0.0, 0.0)),
        Ray::new(Vec3A::new(f32::INFINITY, 0.5, 0.5), -Vec3A::X),
        Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::new(f32::INFINITY, 0.0, 0.0)),
        Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X).with_range(f32::NAN, 1.0),
        Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X).with_range(0.0, f32::NAN),
        Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X).with_range(2.0, 1.0),
        Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X).with_range(f32::NEG_INFINITY, 1.0),
    ];
    for ray in bad {
        let mut called = false;
        let r = tree.visit_ray(&ray, &mut ws, &mut |_: RayLeaf<'_, i32>| {
            called = true;
            RayControl::Continue
        });
        assert!(
            matches!(r, Err(DbvtError::Input(InputError::NonFiniteRay { .. } | InputError::InvalidRayRange { .. }))),
            "{ray:?}: {r:?}"
        );
        assert!(!called);
        assert!(tree.intersect(&ray, &mut ws).is_err());
        assert!(tree.cast_box(&unit(), ray.dir(), &mut ws).is_err() || ray.dir().is_finite());
    }
    tree.validate().unwrap();
}

#[test]
fn policy_stop_and_clip_semantics() {
    // Ten boxes along +x; a ray through all of them.
    let (tree, ids) = Dbvt::build_with_config(
        (0..10).map(|i| (Aabb::from_center_half_extents(Vec3A::new(3.0 * i as f32, 0.0, 0.0), Vec3A::splat(0.5)), i)),
        DbvtConfig { margin: 0.0, ..Default::default() },
    )
    .unwrap();
    let mut ws = QueryWorkspace::new();
    let ray = Ray::new(Vec3A::new(-5.0, 0.0, 0.0), Vec3A::X);
    // Stop: exactly one leaf is visited.
    let mut n = 0;
    let stats = tree.visit_ray(&ray, &mut ws, &mut |_: RayLeaf<'_, i32>| {
        n += 1;
        RayControl::Stop
    });
    assert_eq!(n, 1);
    assert_eq!(stats.unwrap().leaves, 1);
    // Clip: no leaf is reported beyond the clip, and closest-first means the first leaf is the nearest.
    let mut seen = Vec::new();
    tree.visit_ray(&ray, &mut ws, &mut |l: RayLeaf<'_, i32>| {
        assert!(l.t <= l.tmax);
        seen.push((*l.data, l.t));
        if *l.data == 4 { RayControl::Clip(l.t) } else { RayControl::Continue }
    })
    .unwrap();
    assert!(seen.iter().all(|&(_, t)| t <= 3.0 * 4.0 - 0.5 + 5.0));
    assert_eq!(seen[0].0, 0, "closest-first order");
    // Skip (Continue) on everything: every box is seen once.
    let mut all = Vec::new();
    tree.visit_ray(&ray, &mut ws, &mut |l: RayLeaf<'_, i32>| {
        all.push(l.id);
        RayControl::Continue
    })
    .unwrap();
    all.sort();
    let mut expect = ids.clone();
    expect.sort();
    assert_eq!(all, expect);
    // Clip with NaN is ignored, never trusted.
    let mut count = 0;
    tree.visit_ray(&ray, &mut ws, &mut |_: RayLeaf<'_, i32>| {
        count += 1;
        RayControl::Clip(f32::NAN)
    })
    .unwrap();
    assert_eq!(count, 10);
}

#[test]
fn box_cast_reports_exact_contact_time() {
    let (tree, ids) = Dbvt::build_with_config([(unit(), 0)], DbvtConfig { margin: 0.0, ..Default::default() }).unwrap();
    let mut ws = QueryWorkspace::new();
    // A unit box centred at (-3, .5, .5) moving +x by 10: its face x = -2.5 meets x = 0 at t = 0.25.
    let moving = Aabb::from_center_half_extents(Vec3A::new(-3.0, 0.5, 0.5), Vec3A::splat(0.5));
    let h = tree.cast_box(&moving, Vec3A::new(10.0, 0.0, 0.0), &mut ws).unwrap().unwrap();
    assert_eq!((h.id, h.t), (ids[0], 0.25));
    // Passing just beside it (gap 1e-3) misses; touching edges (gap 0) hits.
    let beside = Aabb::from_center_half_extents(Vec3A::new(-3.0, 1.501, 0.5), Vec3A::splat(0.5));
    assert!(tree.cast_box(&beside, Vec3A::new(10.0, 0.0, 0.0), &mut ws).unwrap().is_none());
    let touching = Aabb::from_center_half_extents(Vec3A::new(-3.0, 1.5, 0.5), Vec3A::splat(0.5));
    assert_eq!(tree.cast_box(&touching, Vec3A::new(10.0, 0.0, 0.0), &mut ws).unwrap().unwrap().t, 0.25);
    // Starting in contact: t = 0.
    let inside = Aabb::from_center_half_extents(Vec3A::splat(0.5), Vec3A::splat(0.1));
    assert_eq!(tree.cast_box(&inside, Vec3A::X, &mut ws).unwrap().unwrap().t, 0.0);
    // Not reaching it: displacement too short.
    assert!(tree.cast_box(&moving, Vec3A::new(2.4, 0.0, 0.0), &mut ws).unwrap().is_none());
}
