//! The PLY loader (ASCII and binary) on arbitrary bytes: never panics; a mesh it returns is well formed (every index
//! in range, every used vertex finite) and can be built into a BVH and queried.
#![no_main]

use glam::Vec3A;
use libfuzzer_sys::fuzz_target;
use slabtree::io::parse_ply;
use slabtree::{BuildOptions, MeshBvh, Ray, TriangleTest};

fuzz_target!(|data: &[u8]| {
    match parse_ply(data, "fuzz.ply") {
        Ok(mesh) => {
            let n = mesh.positions().len();
            for t in mesh.triangles() {
                for &i in t {
                    assert!((i as usize) < n);
                    assert!(mesh.positions()[i as usize].is_finite());
                }
            }
            if mesh.len() <= 4096 {
                let bvh = MeshBvh::build(
                    &mesh,
                    &BuildOptions { triangle_test: TriangleTest::Watertight, ..Default::default() },
                );
                if let Some(b) = mesh.bounds() {
                    let c = b.center();
                    let _ = bvh.intersect(&Ray::new(c + Vec3A::Z * 10.0, -Vec3A::Z));
                }
            }
        }
        Err(e) => {
            let s = e.to_string();
            assert!(s.starts_with("fuzz.ply"), "error does not name the file: {s}");
        }
    }
});
