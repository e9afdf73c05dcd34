//! `MeshBvh::triangles_in_box` and `triangles_in_sphere` against brute force over every triangle
//! by other methods: for boxes, clipping the triangle against the box's six planes in f64
//! (Sutherland–Hodgman) and asking whether anything is left; for spheres, the f64 distance to the
//! face or the nearest edge. Near-touching cases may round either way, so each triangle must be
//! reported if it meets the query shrunk by a small margin, and must not be if it misses the query
//! grown by it.

use glam::{Vec3, Vec3A};
use slabtree::{Aabb, BuildOptions, BuildQuality, MeshBvh, TriMesh};

use common::rng::Rng;
use common::triangle::{clip_meets, random_triangles, triangle_distance};
use slabtree_testkit as common;

fn soup(n: usize, seed: u64) -> TriMesh {
    let (mut p, mut t) = random_triangles(n, seed, |i| if i % 3 == 0 { 8.0 } else { 2.0 });
    // Degenerate triangles: a point and a segment.
    let k = p.len() as u32;
    p.extend([Vec3::splat(10.0), Vec3::new(2.0, 3.0, 4.0), Vec3::new(18.0, 15.0, 4.0)]);
    t.push([k, k, k]);
    t.push([k + 1, k + 2, k + 2]);
    TriMesh::new(p, t).unwrap()
}

/// The default build, and one with spatial splits (`BuildQuality::High`), which puts the soup's
/// large triangles in several leaves: each must still be reported once.
fn builds(mesh: &TriMesh) -> [MeshBvh; 2] {
    [BuildQuality::Medium, BuildQuality::High].map(|quality| {
        MeshBvh::build(mesh, &BuildOptions { parallel_threshold: 64, quality, ..BuildOptions::default() })
    })
}

#[test]
fn triangles_in_boxes_match_polygon_clipping() {
    let mesh = soup(400, 1);
    for bvh in builds(&mesh) {
        let mut r = Rng(2);
        let (mut reported, mut boxes) = (0, 0);
        for k in 0..400 {
            let c = r.unit3() * 24.0 - Vec3::splat(2.0);
            let h = (r.unit3() + Vec3::splat(0.05)) * if k % 4 == 0 { 6.0 } else { 1.5 };
            let b = Aabb::from_center_half_extents(Vec3A::from(c), Vec3A::from(h));
            let mut got = Vec::new();
            bvh.triangles_in_box(&b, &mut got).unwrap();
            got.sort_unstable();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "a triangle reported twice");
            let eps = 1e-4;
            let (lo, hi) = (b.min.as_dvec3(), b.max.as_dvec3());
            for i in 0..mesh.len() {
                let tri = mesh.triangle(i).map(Vec3::as_dvec3);
                let listed = got.binary_search(&(i as u32)).is_ok();
                if clip_meets(tri, lo + eps, hi - eps) {
                    assert!(listed, "box {k}: triangle {i} meets the box but was not reported");
                }
                if !clip_meets(tri, lo - eps, hi + eps) {
                    assert!(!listed, "box {k}: triangle {i} misses the box but was reported");
                }
            }
            reported += got.len();
            boxes += usize::from(!got.is_empty());
        }
        assert!(reported > 1000 && boxes > 200, "the queries found too little to test: {reported} in {boxes} boxes");
    }
}

#[test]
fn triangles_in_spheres_match_brute_force() {
    let mesh = soup(400, 3);
    for bvh in builds(&mesh) {
        let mut r = Rng(4);
        let mut reported = 0;
        for k in 0..300 {
            let c = r.unit3() * 24.0 - Vec3::splat(2.0);
            let radius = r.unit() * if k % 4 == 0 { 8.0 } else { 2.0 };
            let mut got = Vec::new();
            bvh.triangles_in_sphere(c, radius, &mut got).unwrap();
            got.sort_unstable();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "a triangle reported twice");
            for i in 0..mesh.len() {
                let d = triangle_distance(c.as_dvec3(), mesh.triangle(i).map(Vec3::as_dvec3));
                let listed = got.binary_search(&(i as u32)).is_ok();
                let eps = 1e-4 * (1.0 + f64::from(radius));
                if d < f64::from(radius) - eps {
                    assert!(listed, "sphere {k}: triangle {i} at {d} missed");
                }
                if d > f64::from(radius) + eps {
                    assert!(!listed, "sphere {k}: triangle {i} at {d} reported");
                }
            }
            reported += got.len();
        }
        assert!(reported > 1000);
        // Bad input is refused.
        assert!(bvh.triangles_in_sphere(Vec3::ZERO, -1.0, &mut Vec::new()).is_err());
        assert!(bvh.triangles_in_sphere(Vec3::NAN, 1.0, &mut Vec::new()).is_err());
        let bad = Aabb { min: Vec3A::ONE, max: Vec3A::ZERO };
        assert!(bvh.triangles_in_box(&bad, &mut Vec::new()).is_err());
    }
}
