//! Saved BVHs (`MeshBvh::from_bytes`) on arbitrary bytes: reading never panics, and a BVH it
//! accepts answers every probe ray as a fresh build over the same mesh does (hit or miss, and the
//! distance). The corpus is seeded with saved BVHs of small meshes (`fuzz/run`), which the fuzzer
//! then cuts and damages. When the first byte is odd, the rest gets a correct checksum before it
//! is read (a forged file), so that mutations reach the checks behind the checksum: the tree's
//! walk, the references, the triangles.
#![no_main]

use glam::Vec3A;
use libfuzzer_sys::fuzz_target;
use slabtree::mesh::saved_checksum;
use slabtree::{MeshBvh, Ray};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 && bytes.len() >= 8 {
        let n = bytes.len() - 8;
        let sum = saved_checksum(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
    }
    let Ok(bvh) = MeshBvh::from_bytes(&bytes) else { return };
    let fresh = MeshBvh::build(bvh.mesh(), bvh.options());
    let Some(b) = bvh.bounds() else {
        assert!(bvh.mesh().is_empty());
        return;
    };
    // Rays from outside the bounds through a grid of points inside them, along each axis.
    let (lo, hi) = (Vec3A::from(b.min), Vec3A::from(b.max));
    let size = (hi - lo).max(Vec3A::splat(1e-3));
    for i in 0..64u32 {
        let f = Vec3A::new((i % 4) as f32 + 0.5, ((i / 4) % 4) as f32 + 0.5, (i / 16) as f32 + 0.5) / 4.0;
        let target = lo + size * f;
        let axis = [Vec3A::X, Vec3A::Y, Vec3A::Z][(i % 3) as usize];
        let ray = Ray::new(target - axis * size * 2.0, axis);
        if ray.validate().is_err() {
            continue;
        }
        let (got, want) = (bvh.intersect(&ray).unwrap(), fresh.intersect(&ray).unwrap());
        assert_eq!(got.is_some(), want.is_some(), "{ray:?}");
        // Two trees may meet tied triangles in another order, and on a shared edge the tied
        // triangles' distances agree only to f32 rounding at the scale of the coordinates (a
        // fuzzed mesh with a vertex at 2e29 puts that rounding at 1e22; a ray nearly in one
        // triangle's plane turns it into that much of t).
        let scale = ray.origin().abs().max_element() + size.max_element() + 1.0;
        if let (Some(g), Some(w)) = (got, want) {
            assert!((g.t - w.t).abs() <= 1e-5 * (w.t.abs() + scale), "{} vs {}", g.t, w.t);
        }
        assert_eq!(bvh.occluded(&ray).unwrap(), want.is_some());
    }
});
