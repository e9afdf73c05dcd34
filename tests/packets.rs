//! 8-ray packets (`MeshBvh::intersect8`, `occluded8`) against the single-ray path: every result
//! must be exactly equal (same triangle, same bits of t, u, v), on coherent tiles, incoherent
//! rays, clipped ranges, invalid rays, and rays aimed at shared edges and vertices (exact ties).

use glam::{Vec3, Vec3A};
use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh, TriangleTest};

use common::rays::primary_tiles;
use common::rng::{Rng, triangle_soup};
use slabtree_testkit as common;

/// A flat grid of unit squares in z = 0: rays through its vertices and edges meet exact ties.
fn grid(n: u32) -> TriMesh {
    let mut p = Vec::new();
    let mut t = Vec::new();
    for y in 0..=n {
        for x in 0..=n {
            p.push(Vec3::new(x as f32, y as f32, 0.0));
        }
    }
    for y in 0..n {
        for x in 0..n {
            let a = y * (n + 1) + x;
            t.push([a, a + 1, a + n + 2]);
            t.push([a, a + n + 2, a + n + 1]);
        }
    }
    TriMesh::new(p, t).unwrap()
}

fn bits(h: &Option<slabtree::Hit>) -> Option<(u32, u32, u32, u32)> {
    h.map(|h| (h.triangle, h.t.to_bits(), h.u.to_bits(), h.v.to_bits()))
}

fn check(bvh: &MeshBvh, rays: &[Ray]) -> (usize, usize) {
    let mut hits = 0;
    let mut occ = 0;
    for chunk in rays.chunks_exact(8) {
        let pk: [Ray; 8] = chunk.try_into().unwrap();
        // A packet with an invalid ray is refused whole, naming the first; each ray alone is
        // refused exactly when it is invalid.
        if let Some(bad) = pk.iter().position(|r| r.validate().is_err()) {
            assert_eq!(bvh.intersect8(&pk).map_err(|e| e.index), Err(bad));
            assert_eq!(bvh.occluded8(&pk).map_err(|e| e.index), Err(bad));
            for r in &pk {
                assert_eq!(bvh.intersect(r).is_err(), r.validate().is_err());
            }
            continue;
        }
        let h8 = bvh.intersect8(&pk).unwrap();
        let o8 = bvh.occluded8(&pk).unwrap();
        for r in 0..8 {
            let h1 = bvh.intersect(&pk[r]).unwrap();
            assert_eq!(bits(&h8[r]), bits(&h1), "ray {:?}", pk[r]);
            assert_eq!(h8[r].map(|h| h.normal), h1.map(|h| h.normal));
            assert_eq!(o8[r], bvh.occluded(&pk[r]).unwrap(), "ray {:?}", pk[r]);
            hits += h1.is_some() as usize;
            occ += o8[r] as usize;
        }
    }
    (hits, occ)
}

fn options(test: TriangleTest) -> BuildOptions {
    BuildOptions { triangle_test: test, ..Default::default() }
}

#[test]
fn coherent_tiles_equal_single_rays() {
    let mut rng = Rng(1);
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        for mesh in [TriMesh::uv_sphere(2.0, 80, 40), triangle_soup(&mut rng, 3000, 5.0, 0.6)] {
            let bvh = MeshBvh::build(&mesh, &options(test));
            let rays = primary_tiles(Vec3::new(0.3, 0.7, 9.0), Vec3::ZERO, 64, 48);
            let (hits, occ) = check(&bvh, &rays);
            assert!(hits > 100 && occ == hits, "{hits} {occ}");
        }
    }
}

#[test]
fn incoherent_and_clipped_rays_equal_single_rays() {
    let mut rng = Rng(2);
    let mesh = triangle_soup(&mut rng, 2000, 5.0, 0.6);
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &options(test));
        let mut rays = Vec::new();
        for i in 0..4000 {
            let o = rng.vec(-8.0, 8.0);
            let d = rng.vec(-1.0, 1.0);
            let mut ray = Ray::new(Vec3A::from(o), Vec3A::from(d));
            if i % 3 == 0 {
                ray = ray.with_range(rng.range(0.0, 2.0), rng.range(2.0, 10.0));
            }
            if i % 97 == 0 {
                ray = Ray::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::X);
            }
            if i % 89 == 0 {
                ray = ray.with_range(3.0, 1.0);
            }
            if i % 7 == 0 {
                // Axis-parallel directions (zero components, infinite inverse).
                ray = Ray::new(Vec3A::from(o), Vec3A::new(0.0, 0.0, -1.0));
            }
            rays.push(ray);
        }
        let (hits, _) = check(&bvh, &rays);
        assert!(hits > 500, "{hits}");
    }
}

#[test]
fn ties_on_shared_edges_and_vertices_equal_single_rays() {
    let mesh = grid(16);
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &options(test));
        let mut rays = Vec::new();
        for y in 0..32 {
            for x in 0..32 {
                // Every half-unit: vertices, edge midpoints and square centres (diagonals).
                let p = Vec3A::new(x as f32 * 0.5, y as f32 * 0.5, 0.0);
                rays.push(Ray::new(p + Vec3A::new(0.0, 0.0, 3.0), -Vec3A::Z));
                rays.push(Ray::new(p + Vec3A::new(0.25, -0.5, 2.0), Vec3A::new(-0.125, 0.25, -1.0)));
            }
        }
        let (hits, _) = check(&bvh, &rays);
        assert!(hits > 1500, "{hits}");
    }
}

#[test]
fn empty_mesh_and_all_dead_packets() {
    let empty = MeshBvh::build(&TriMesh::new(vec![], vec![]).unwrap(), &BuildOptions::default());
    let rays = [Ray::new(Vec3A::ZERO, Vec3A::X); 8];
    assert_eq!(empty.intersect8(&rays).unwrap(), [None; 8]);
    assert_eq!(empty.occluded8(&rays).unwrap(), [false; 8]);
    let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 16, 8), &BuildOptions::default());
    let away = [Ray::new(Vec3A::new(5.0, 5.0, 5.0), Vec3A::X); 8];
    assert_eq!(bvh.intersect8(&away).unwrap(), [None; 8]);
}
