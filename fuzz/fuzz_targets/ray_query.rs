//! Ray queries with arbitrary floats (NaN, infinities, denormals, huge values, ±0) against a
//! small mesh BVH (both triangle tests) and a dynamic tree of the triangles' boxes.
//!
//! Checked: nothing panics; an invalid ray hits nothing (mesh) or is a typed error (tree); a hit
//! lies in `[tmin, tmax]` on a real triangle with finite barycentrics; closest hit, any hit and
//! all hits agree on whether there is a hit; the tree's closest box equals brute force; swept
//! boxes report `t` in `[0, 1]`.
#![no_main]

use glam::{Vec3, Vec3A};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::{Aabb, BuildOptions, Dbvt, MeshBvh, QueryWorkspace, Ray, TriMesh, TriangleTest, ray_aabb2};

fn f(u: &mut Unstructured) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=7)? {
        0 | 1 => f32::from_bits(u.arbitrary()?),
        2 => *u.choose(&[
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-40,
            -1e-45,
            0.0,
            -0.0,
            f32::MAX,
            f32::MIN,
            1e30,
            -1e30,
            1e6,
        ])?,
        _ => u.arbitrary::<i8>()? as f32 * 0.125,
    })
}

fn v(u: &mut Unstructured) -> Result<Vec3> {
    Ok(Vec3::new(f(u)?, f(u)?, f(u)?))
}

fn run(u: &mut Unstructured) -> Result<()> {
    let nv = u.int_in_range(3u8..=24)? as usize;
    let mut pos = Vec::with_capacity(nv);
    for _ in 0..nv {
        pos.push(v(u)?);
    }
    let nt = u.int_in_range(0u8..=32)? as usize;
    let mut tris = Vec::with_capacity(nt);
    for _ in 0..nt {
        tris.push([
            u.arbitrary::<u8>()? as u32 % (nv as u32 + 1),
            u.arbitrary::<u8>()? as u32 % nv as u32,
            u.arbitrary::<u8>()? as u32 % nv as u32,
        ]);
    }
    let mesh = match TriMesh::new(pos, tris) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    let mt = MeshBvh::build(&mesh, &BuildOptions::default());
    let wt = MeshBvh::build(&mesh, &BuildOptions { triangle_test: TriangleTest::Watertight, ..Default::default() });
    let boxes: Vec<(Aabb, u32)> = (0..mesh.len())
        .map(|i| (Aabb::from_points(mesh.triangle(i)), i as u32))
        .filter(|(b, _)| b.validate().is_ok())
        .collect();
    let (tree, _) = Dbvt::build(boxes.clone()).expect("valid boxes");
    let mut ws = QueryWorkspace::new();
    let mut all = Vec::new();
    for _ in 0..u.int_in_range(1u8..=16)? {
        let mut ray = Ray::new(v(u)?, v(u)?);
        if u.arbitrary::<bool>()? {
            ray = ray.with_range(f(u)?, f(u)?);
        }
        let ok = ray.validate().is_ok();
        for bvh in [&mt, &wt] {
            let (hit, any) = match (bvh.intersect(&ray), bvh.occluded(&ray)) {
                (Ok(hit), Ok(any)) => {
                    assert!(ok, "invalid ray {ray:?} was traced");
                    (hit, any)
                }
                (Err(e), Err(e2)) => {
                    // The errors carry the ray's NaNs, which equal nothing: compared as printed.
                    let same = |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") == format!("{b:?}");
                    assert!(
                        !ok && same(&e, &e2) && same(&Err::<(), _>(e), &ray.validate()),
                        "valid ray {ray:?} refused: {e}"
                    );
                    continue;
                }
                (h, a) => panic!("closest and any hit disagree on refusing {ray:?}: {h:?} {a:?}"),
            };
            bvh.intersect_all(&ray, &mut all).expect("a valid ray");
            assert_eq!(hit.is_some(), !all.is_empty(), "closest and all hits disagree on {ray:?}");
            assert_eq!(
                hit.is_some(),
                any,
                "closest and any hit disagree on {ray:?} ({:?})",
                bvh.options().triangle_test
            );
            if let Some(h) = hit {
                assert!((h.triangle as usize) < mesh.len());
                assert!(h.t >= ray.tmin && h.t <= ray.tmax, "t {} outside [{}, {}]", h.t, ray.tmin, ray.tmax);
                assert!(
                    h.u.is_finite() && h.v.is_finite(),
                    "barycentrics {} {} of {h:?}, ray {ray:?}, triangle {:?}",
                    h.u,
                    h.v,
                    mesh.triangle(h.triangle as usize)
                );
            }
        }
        match tree.intersect(&ray, &mut ws) {
            Ok(got) => {
                assert!(ok);
                let best = boxes
                    .iter()
                    .filter_map(|(b, _)| {
                        let fat = Aabb::new(b.min - Vec3A::splat(0.1), b.max + Vec3A::splat(0.1));
                        ray_aabb2(&ray, &fat)
                    })
                    .fold(None, |m: Option<f32>, t| Some(m.map_or(t, |m| m.min(t))));
                // Stored boxes are the tight box grown by the margin, computed the same way.
                assert_eq!(got.map(|h| h.t), best, "tree closest box for {ray:?}");
            }
            Err(_) => assert!(!ok),
        }
        let b = Aabb::new(v(u)?, v(u)?);
        let d = Vec3A::from(v(u)?);
        for bvh in [&mt, &wt] {
            if let Ok(Some(s)) = bvh.cast_box(&b, d) {
                assert!((0.0..=1.0).contains(&s.t), "sweep t {}", s.t);
            }
        }
        let _ = tree.cast_box(&b, d, &mut ws);
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
