//! The check every mesh-loader target makes of a loader's answer: never a panic; a mesh is well
//! formed (every index in range, every used vertex finite) and can be built into a BVH and
//! queried; an error names the file.

use glam::Vec3A;
use slabtree::{BuildOptions, LoadError, MeshBvh, Ray, TriMesh, TriangleTest};

pub fn check(result: Result<TriMesh, LoadError>, name: &str) {
    match result {
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
            assert!(s.starts_with(name), "error does not name the file: {s}");
        }
    }
}
