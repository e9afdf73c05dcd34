//! Far from the origin: the same scenes translated by 0, 1e3, 1e5 and 1e6 on every axis.
//!
//! Oracle: f64 Möller–Trumbore without epsilon over every triangle, on the f32 vertices and rays
//! exactly as stored (so the geometry is the same; only the arithmetic differs). For every
//! triangle the f64 test hits, the f32 triangle test is also run on that triangle alone (a
//! one-triangle `MeshBvh`: one conservative box test, then the mesh's own triangle test), with no
//! traversal. Then:
//!
//! * traversal misses: the one-triangle test hits but the full BVH returns nothing, or a hit
//!   farther than it (beyond rounding): the traversal culled a triangle. Must be 0.
//! * triangle-test misses: the f64 test hits (strictly inside, barycentric margin > 0) but the
//!   f32 test of that triangle alone misses. Reported per offset: the triangle test's own
//!   precision at that distance, not a traversal loss.
//!
//! The dynamic tree gets the same treatment: every box an f64 slab test hits must be reported by
//! the tree's ray cast (the conservative slab test may report more, never fewer).

use glam::{DVec3, Vec3, Vec3A};
use slabtree::{
    Aabb, BuildOptions, BuildQuality, Dbvt, MeshBvh, QueryWorkspace, Ray, RayControl, RayLeaf, TriMesh, TriangleTest,
};

use common::rng::Rng;
use common::triangle::{margin, mt64};
use slabtree_testkit as common;

/// The library's closed torus as raw arrays, which this test offsets far from the origin.
fn torus(major: f32, minor: f32, nu: u32, nv: u32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let m = TriMesh::torus(major, minor, nu, nv);
    (m.positions().to_vec(), m.triangles().to_vec())
}

/// Random triangles of size about 1 in a 20-unit cube.
fn soup(n: usize, seed: u64) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut r = Rng(seed);
    let (mut p, mut t) = (Vec::new(), Vec::new());
    for i in 0..n as u32 {
        let c = r.unit3() * 20.0;
        for _ in 0..3 {
            p.push(c + (r.unit3() - Vec3::splat(0.5)) * 2.0);
        }
        t.push([3 * i, 3 * i + 1, 3 * i + 2]);
    }
    (p, t)
}

#[derive(Default, Debug)]
struct Counts {
    rays: u64,
    f64_hits: u64,
    traversal_none: u64,
    traversal_farther: u64,
    tri_test_miss: u64,
}

fn run_mesh(
    name: &str,
    base: &(Vec<Vec3>, Vec<[u32; 3]>),
    offset: f32,
    test: TriangleTest,
    quality: BuildQuality,
    rays: usize,
) -> Counts {
    let shift = Vec3::new(offset, -offset, offset * 0.5);
    let pos: Vec<Vec3> = base.0.iter().map(|p| *p + shift).collect();
    let mesh = TriMesh::new(pos, base.1.clone()).unwrap();
    let opts = BuildOptions { triangle_test: test, ..Default::default() };
    let bvh = MeshBvh::build(&mesh, &BuildOptions { quality, ..opts });
    let singles: Vec<MeshBvh> = (0..mesh.len())
        .map(|i| MeshBvh::build(&TriMesh::new(mesh.triangle(i).to_vec(), vec![[0, 1, 2]]).unwrap(), &opts))
        .collect();
    let bounds = mesh.bounds().unwrap();
    let (centre, size) = (Vec3::from(bounds.center()), Vec3::from(bounds.half_extents()).max_element());
    let mut r = Rng(0xFA7 ^ offset.to_bits() as u64);
    let mut c = Counts::default();
    for _ in 0..rays {
        // Aim at a random point of a random triangle (or at one of its vertices, 1 in 8) from
        // outside the bounds.
        let k = (r.unit() * mesh.len() as f32) as usize % mesh.len();
        let [a, b, cc] = mesh.triangle(k);
        let (mut u, mut v) = (r.unit(), r.unit());
        if u + v > 1.0 {
            (u, v) = (1.0 - u, 1.0 - v);
        }
        let aim = if r.unit() < 0.125 { a } else { a + (b - a) * u + (cc - a) * v };
        let o = centre + r.direction() * size * 3.0;
        let ray = Ray::new(Vec3A::from(o), Vec3A::from(aim - o));
        let (o64, d64) = (Vec3::from(ray.origin()).as_dvec3(), Vec3::from(ray.dir()).as_dvec3());
        c.rays += 1;
        let full = bvh.intersect(&ray).unwrap();
        let mut best_single: Option<f32> = None;
        for (i, single) in singles.iter().enumerate() {
            let Some((t, u, v)) = mt64(o64, d64, mesh.triangle(i).map(|p| p.as_dvec3())) else { continue };
            let margin = margin(u, v);
            if !(margin >= 0.0 && t >= 0.0) {
                continue;
            }
            c.f64_hits += 1;
            match single.intersect(&ray).unwrap() {
                Some(h) => best_single = Some(best_single.map_or(h.t, |b| b.min(h.t))),
                None if margin > 0.0 => c.tri_test_miss += 1,
                None => {}
            }
        }
        if let Some(bt) = best_single {
            match full {
                None => {
                    c.traversal_none += 1;
                    eprintln!("{name} +{offset}: traversal miss, ray {ray:?}");
                }
                Some(h) if h.t > bt + 1e-5 * (bt.abs() + 1.0) => {
                    c.traversal_farther += 1;
                    eprintln!("{name} +{offset}: closest culled, ray {ray:?}: full t {} vs single {bt}", h.t);
                }
                _ => {}
            }
        }
    }
    c
}

fn slab64(o: DVec3, d: DVec3, b: &Aabb) -> bool {
    let (mn, mx) = (Vec3::from(b.min).as_dvec3(), Vec3::from(b.max).as_dvec3());
    let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
    for i in 0..3 {
        if d[i] == 0.0 {
            if o[i] < mn[i] || o[i] > mx[i] {
                return false;
            }
            continue;
        }
        let (a, b) = ((mn[i] - o[i]) / d[i], (mx[i] - o[i]) / d[i]);
        t0 = t0.max(a.min(b));
        t1 = t1.min(a.max(b));
    }
    t0 <= t1
}

fn run_dbvt(offset: f32, rays: usize) -> (u64, u64, u64) {
    let shift = Vec3A::new(offset, -offset, offset * 0.5);
    let mut r = Rng(77 ^ offset.to_bits() as u64);
    let boxes: Vec<(Aabb, usize)> = (0..2000)
        .map(|i| {
            let c = Vec3A::from(r.unit3()) * 50.0 + shift;
            (Aabb::from_center_half_extents(c, Vec3A::from(r.unit3()) * 0.5 + Vec3A::splat(0.01)), i)
        })
        .collect();
    let (tree, ids) = Dbvt::build(boxes.clone()).unwrap();
    let fats: Vec<Aabb> = ids.iter().map(|id| tree.fat_aabb(*id).unwrap()).collect();
    let mut ws = QueryWorkspace::new();
    let (mut hits, mut missed, mut extra) = (0, 0, 0);
    for _ in 0..rays {
        let target = fats[(r.unit() * fats.len() as f32) as usize % fats.len()];
        // Aim at a corner or an edge of a box: the hardest case for the slab test.
        let aim =
            Vec3A::select(glam::BVec3A::new(r.unit() < 0.5, r.unit() < 0.5, r.unit() < 0.5), target.min, target.max);
        let o = Vec3A::from(r.direction()) * 80.0 + Vec3A::splat(25.0) + shift;
        let ray = Ray::new(o, aim - o);
        let mut got = vec![false; fats.len()];
        tree.visit_ray(&ray, &mut ws, &mut |l: RayLeaf<'_, usize>| {
            got[*l.data] = true;
            RayControl::Continue
        })
        .unwrap();
        let (o64, d64) = (Vec3::from(ray.origin()).as_dvec3(), Vec3::from(ray.dir()).as_dvec3());
        for (i, f) in fats.iter().enumerate() {
            let h = slab64(o64, d64, f);
            hits += h as u64;
            missed += (h && !got[i]) as u64;
            extra += (!h && got[i]) as u64;
        }
    }
    (hits, missed, extra)
}

fn rays_per_case() -> usize {
    if cfg!(feature = "soak") { 20_000 } else { 3_000 }
}

/// Every offset and triangle test on one mesh; each mesh is a test of its own, so that the
/// meshes run on separate threads.
fn mesh_traversal_never_misses(name: &str, base: &(Vec<Vec3>, Vec<[u32; 3]>)) {
    let rays = rays_per_case();
    let mut traversal_total = 0;
    for offset in [0.0f32, 1e3, 1e5, 1e6] {
        // Both tests, and the watertight one on a build with spatial splits, whose boxes
        // hold parts of triangles clipped at planes.
        for (test, quality) in [
            (TriangleTest::Watertight, BuildQuality::Medium),
            (TriangleTest::MollerTrumbore, BuildQuality::Medium),
            (TriangleTest::Watertight, BuildQuality::High),
        ] {
            let c = run_mesh(name, base, offset, test, quality, rays);
            println!(
                "{name} +{offset:e}, {test:?} {quality:?}: {} rays, f64 hits {}, traversal misses (none / farther) \
                 {} / {}, triangle-test misses {}",
                c.rays, c.f64_hits, c.traversal_none, c.traversal_farther, c.tri_test_miss
            );
            traversal_total += c.traversal_none + c.traversal_farther;
        }
    }
    assert_eq!(traversal_total, 0, "{name}: the mesh traversal culled a triangle its own test hits");
}

#[test]
fn far_from_origin_the_traversal_of_a_torus_never_misses() {
    mesh_traversal_never_misses("torus", &torus(2.0, 0.7, 48, 24));
}

#[test]
fn far_from_origin_the_traversal_of_a_triangle_soup_never_misses() {
    mesh_traversal_never_misses("soup", &soup(1500, 5));
}

#[test]
fn far_from_origin_the_dynamic_tree_never_misses() {
    let rays = rays_per_case();
    let mut dbvt_missed = 0;
    for offset in [0.0f32, 1e3, 1e5, 1e6] {
        let (hits, missed, extra) = run_dbvt(offset, rays);
        println!(
            "dbvt +{offset:e}: {rays} rays at box corners, f64 box hits {hits}, missed {missed}, extra (conservative) {extra}"
        );
        dbvt_missed += missed;
    }
    assert_eq!(dbvt_missed, 0, "the dynamic tree missed a box an f64 slab test hits");
}
