//! Every SIMD level gives the same answers: the closest hit (triangle, `t`, `u`, `v`, bit for bit)
//! and the any-hit verdict of each ray, at each level this CPU has, against the baseline's.
//!
//! The rays include ones aimed at shared corners and edges, where two or more triangles in
//! different leaves are hit at one distance and the order a level's walk meets them in would
//! decide the answer without the rule of `super::policy` (the lower triangle index).

use glam::{Vec3, Vec3A};
use slabtree_testkit::rng::Rng;

use super::TriMesh;
use super::bvh::{BuildOptions, MeshBvh, TriangleTest};
use super::query::TraceNearest;
use super::triangle::PackHit;
use crate::math::Ray;
use crate::wide::SimdLevel;
use crate::wide::lanes::dispatch_at;
use crate::wide::level::levels_on_this_cpu;

/// The pack hit's bits, and the triangle.
type Bits = Option<(u32, u32, u32, u32)>;

fn bits(found: Option<(u32, PackHit)>) -> Bits {
    found.map(|(prim, h)| (prim, h.t.to_bits(), h.u.to_bits(), h.v.to_bits()))
}

/// The closest hit and the any-hit verdict of `ray` at `level`.
fn answers(bvh: &MeshBvh, ray: &Ray, level: SimdLevel) -> (Bits, bool) {
    let closest = match bvh.options().triangle_test {
        TriangleTest::MollerTrumbore => dispatch_at(level, TraceNearest::<false, false, false> { bvh, ray }).0,
        TriangleTest::Watertight => dispatch_at(level, TraceNearest::<false, true, false> { bvh, ray }).0,
    };
    let any = match bvh.options().triangle_test {
        TriangleTest::MollerTrumbore => dispatch_at(level, TraceNearest::<true, false, true> { bvh, ray }).0,
        TriangleTest::Watertight => dispatch_at(level, TraceNearest::<true, true, true> { bvh, ray }).0,
    };
    (bits(closest), any.is_some())
}

/// Rays from outside at random points, at the mesh's corners and at its edges' midpoints.
fn rays(mesh: &TriMesh, rng: &mut Rng) -> Vec<Ray> {
    let (lo, hi) = mesh.positions().iter().fold((Vec3::MAX, Vec3::MIN), |(l, h), &p| (l.min(p), h.max(p)));
    let (c, r) = ((lo + hi) * 0.5, (hi - lo).length());
    let mut out = Vec::new();
    for i in 0..3000 {
        let from = c + (rng.unit3a() - Vec3A::splat(0.5)).normalize_or_zero().to_vec3() * r * 1.5;
        let tri = mesh.triangles()[rng.below(mesh.triangles().len())];
        let [a, b, cc] = tri.map(|k| mesh.positions()[k as usize]);
        let to = match i % 3 {
            0 => a,
            1 => (a + b) * 0.5,
            _ => (a + b + cc) / 3.0 + (rng.unit3a().to_vec3() - Vec3::splat(0.5)) * r * 0.1,
        };
        out.push(Ray::new(Vec3A::from(from), Vec3A::from(to - from)));
    }
    out
}

#[test]
fn every_level_gives_the_baselines_answers() {
    let mut rng = Rng(0x1e7e1);
    let mut soup = Vec::new();
    let mut tris = Vec::new();
    for i in 0..2000u32 {
        let p = rng.unit3a().to_vec3() * 10.0;
        for _ in 0..3 {
            soup.push(p + (rng.unit3a().to_vec3() - Vec3::splat(0.5)) * 1.5);
        }
        tris.push([3 * i, 3 * i + 1, 3 * i + 2]);
    }
    let meshes = [
        TriMesh::uv_sphere(2.0, 48, 24),
        TriMesh::torus(3.0, 1.0, 64, 32),
        TriMesh::new(soup, tris).expect("a valid soup"),
    ];
    let levels = levels_on_this_cpu();
    let (mut hits, mut compared) = (0, 0);
    for mesh in &meshes {
        let rays = rays(mesh, &mut rng);
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            let bvh = MeshBvh::build(mesh, &BuildOptions { triangle_test: test, ..Default::default() });
            for ray in &rays {
                let base = answers(&bvh, ray, levels[0]);
                hits += usize::from(base.0.is_some());
                for &level in &levels[1..] {
                    assert_eq!(answers(&bvh, ray, level), base, "{level} against {}: {test:?} {ray:?}", levels[0]);
                    compared += 1;
                }
            }
        }
    }
    assert!(hits > 10_000, "{hits}");
    eprintln!("{compared} answers compared across {levels:?}");
}
