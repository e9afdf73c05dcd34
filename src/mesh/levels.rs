//! Every SIMD level gives the same answers: the closest hit (triangle, `t`, `u`, `v`, bit for bit),
//! the any-hit verdict, alone and in streams, and a swept box's contact, at each level this CPU
//! has, against the baseline's.
//!
//! The rays include ones aimed at shared corners and edges, where two or more triangles in
//! different leaves are hit at one distance and the order a level's walk meets them in would
//! decide the answer without the rule of `super::policy` (the lower triangle index).

use glam::{Vec3, Vec3A};
use slabtree_testkit::rng::Rng;

use super::TriMesh;
use super::bvh::{BuildOptions, MeshBvh, TriangleTest};
use crate::math::{Aabb, BatchOptions, Ray, Threads};
use crate::wide::SimdLevel;
use crate::wide::level::{at_level, levels_on_this_cpu};

/// A hit's bits, normal included.
type Bits = Option<(u32, u32, u32, u32, [u32; 3])>;

fn bits(h: Option<crate::mesh::Hit>) -> Bits {
    h.map(|h| (h.triangle, h.t.to_bits(), h.u.to_bits(), h.v.to_bits(), h.normal.to_array().map(f32::to_bits)))
}

/// What a level answers for one ray: its closest hit and any-hit verdict alone, the same in a
/// stream, and the contact of a small box swept along it.
type Answer = (Bits, bool, Bits, bool, Option<(u32, u32)>);

/// Every ray's [`Answer`] at `level`.
fn answers(bvh: &MeshBvh, rays: &[Ray], level: SimdLevel) -> Vec<Answer> {
    at_level(level, || {
        let (mut stream_hits, mut stream_occluded) = (Vec::new(), Vec::new());
        bvh.intersect_batch(
            rays,
            &mut stream_hits,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .expect("valid rays");
        bvh.occluded_batch(
            rays,
            &mut stream_occluded,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .expect("valid rays");
        rays.iter()
            .enumerate()
            .map(|(i, ray)| {
                let half = Vec3A::splat(0.02);
                let start = Aabb::new(ray.origin() - half, ray.origin() + half);
                let swept = bvh.cast_box(&start, ray.dir()).expect("a valid box");
                (
                    bits(bvh.intersect(ray).expect("a valid ray")),
                    bvh.occluded(ray).expect("a valid ray"),
                    bits(stream_hits[i]),
                    stream_occluded[i],
                    swept.map(|h| (h.triangle, h.t.to_bits())),
                )
            })
            .collect()
    })
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
    let (mut hits, mut contacts, mut compared) = (0, 0, 0);
    for mesh in &meshes {
        let rays = rays(mesh, &mut rng);
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            let bvh = MeshBvh::build(mesh, &BuildOptions { triangle_test: test, ..Default::default() });
            let base = answers(&bvh, &rays, levels[0]);
            hits += base.iter().filter(|a| a.0.is_some()).count();
            contacts += base.iter().filter(|a| a.4.is_some()).count();
            for &level in &levels[1..] {
                for (i, (got, want)) in answers(&bvh, &rays, level).iter().zip(&base).enumerate() {
                    assert_eq!(got, want, "{level} against {}: {test:?} {:?}", levels[0], rays[i]);
                }
                compared += rays.len();
            }
        }
    }
    assert!(hits > 10_000 && contacts > 1000, "{hits} hits, {contacts} contacts");
    eprintln!("{compared} rays' answers compared across {levels:?}");
}
