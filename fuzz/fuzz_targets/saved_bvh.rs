//! Saved BVHs (`MeshBvh::from_bytes`, `from_untrusted_bytes`) on arbitrary bytes: reading never
//! panics, the two reads refuse the same files, a BVH the untrusted read accepts answers every
//! probe ray as a fresh build over the same mesh does (hit or miss, and the distance), and the
//! fast read's queries never panic, whatever contents it kept. The corpus is seeded with saved BVHs of small meshes (`fuzz/run`), which the fuzzer
//! then cuts and damages. When the first byte is odd, the rest gets a correct checksum before it
//! is read (a forged file), so that mutations reach the checks behind the checksum: the tree's
//! walk, the references, the triangles.
#![no_main]
// `!(a < b)` is meant: a NaN on either side must count as a failure of the check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use glam::Vec3;
use glam::Vec3A;
use libfuzzer_sys::fuzz_target;
use slabtree::mesh::saved_checksum;
use slabtree::{Hit, MeshBvh, Ray, TriangleTest};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 && bytes.len() >= 8 {
        let n = bytes.len() - 8;
        let sum = saved_checksum(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
    }
    let fast = MeshBvh::from_bytes(&bytes);
    let checked = MeshBvh::from_untrusted_bytes(&bytes);
    assert_eq!(fast.as_ref().err(), checked.as_ref().err());
    let (Ok(fast), Ok(bvh)) = (fast, checked) else { return };
    let fresh = MeshBvh::build(bvh.mesh(), bvh.options());
    let Some(b) = bvh.bounds() else {
        assert!(bvh.mesh().is_empty());
        return;
    };
    // Rays from outside the bounds through a grid of points inside them, along each axis.
    let (lo, hi) = (b.min, b.max);
    let size = (hi - lo).max(Vec3A::splat(1e-3));
    for i in 0..64u32 {
        let f = Vec3A::new((i % 4) as f32 + 0.5, ((i / 4) % 4) as f32 + 0.5, (i / 16) as f32 + 0.5) / 4.0;
        let target = lo + size * f;
        let axis = [Vec3A::X, Vec3A::Y, Vec3A::Z][(i % 3) as usize];
        let ray = Ray::new(target - axis * size * 2.0, axis);
        if ray.validate().is_err() {
            continue;
        }
        let _ = (fast.intersect(&ray).unwrap(), fast.occluded(&ray).unwrap());
        let _ = fast.closest_point(target.into(), f32::INFINITY).unwrap();
        let (got, want) = (bvh.intersect(&ray).unwrap(), fresh.intersect(&ray).unwrap());
        // The cosine between the ray and the normal of a hit's triangle.
        let cosine = |h: Hit| {
            let [a, b, c] = bvh.mesh().triangle(h.triangle as usize).map(|v| v.as_dvec3());
            let n = (b - a).cross(c - a);
            n.dot(Vec3::from(axis).as_dvec3()).abs() / n.length()
        };
        // A ray in a triangle's plane to f32 precision may get Möller–Trumbore's hit anywhere
        // along it (a documented limit, `docs/robustness.md`), so which of two trees' orders
        // meets that triangle first decides the answer: such rays are not compared.
        let in_plane = |h: Option<Hit>| h.is_some_and(|h| !(cosine(h) > 1e-6));
        if bvh.options().triangle_test == TriangleTest::MollerTrumbore && (in_plane(got) || in_plane(want)) {
            continue;
        }
        assert_eq!(got.is_some(), want.is_some(), "{ray:?}");
        // Two trees may meet tied triangles in another order: triangles whose f32 distances tie,
        // on a shared edge or where one is met at a graze, are kept in the order met. Their
        // refined distances then differ by as much as f32 rounding at the scale of the
        // coordinates (a fuzzed mesh with a vertex at 2e29 puts that rounding at 1e22), divided
        // by the cosine of the graze (a ray 8.6e-5 off a triangle's plane gave 1.3751 against
        // 1.375 from the tied triangle beside it).
        let scale = ray.origin().abs().max_element() + size.max_element() + 1.0;
        if let (Some(g), Some(w)) = (got, want) {
            let graze = cosine(g).min(cosine(w)).min(1.0) as f32;
            let tolerance = 1e-5 * (w.t.abs() + scale) / graze;
            assert!(!(tolerance < (g.t - w.t).abs()), "{} vs {}", g.t, w.t);
        }
        assert_eq!(bvh.occluded(&ray).unwrap(), want.is_some());
    }
});
