//! Builds of every quality level (High with spatial splits, and Low or Medium) on random meshes with
//! degenerate triangles mixed in (zero-area, collinear, repeated, huge, long thin strips),
//! checked against brute force over the triangles one at a time.
//!
//! The brute force asks each triangle alone, so that no build decides anything in it, in two
//! ways: *tight*, a BVH of the triangle alone, which a ray reaches only through the triangle's
//! own box, asked again with the ray ending at that hit; and *open*, the triangle in one leaf
//! with a segment from -1e9 to 1e9 (never hit), which every ray reaches. They differ only where
//! the f32 triangle test reports a hit outside the triangle's box (Möller–Trumbore near a thin
//! triangle's edge, or a triangle with a far corner): either the ray misses the box, or it
//! enters the box only after that hit, so that a closest-hit walk which has found a hit between
//! the two prunes the triangle's leaf (as it should: in exact arithmetic such a ray misses the
//! triangle). Such a triangle is
//! *undecided*, as a tree may or may not bring the ray to it. A whole mesh's BVH must then give,
//! for every ray:
//! - all hits: every triangle the tight test hits, each once, at its own `t`, and besides them
//!   only undecided triangles, at their own `t`;
//! - closest hit: a triangle hit (tight, or undecided) whose f32 distance is no larger than any
//!   tight hit's (triangles tied there may be reported in any order, and their f64-refined
//!   distances differ by rounding), with exactly that triangle's own `t`, `u`, `v` and normal;
//!   through single rays, batches and streams;
//! - any hit: whether some triangle is hit (either answer when only undecided ones are);
//!
//! and for boxes and points: `triangles_in_box` (each triangle once) and `closest_point`'s
//! distance. Spatial splits put one triangle in several leaves, which these catch if it is then
//! reported twice or missed where it was clipped. Half the inputs ask BVHs rebuilt in place
//! (`MeshBvh::rebuild`) from other vertices.
#![no_main]

#[path = "common/random_mesh.rs"]
mod random_mesh;

use glam::{Vec3, Vec3A};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::{
    Aabb, BatchOptions, BuildOptions, BuildQuality, Hit, HitCandidate, HitControl, MeshBvh, Ray, RayOptions, Threads,
    TriMesh, TriangleTest,
};

/// Each triangle alone: its tight BVH and its open one (see the top of the file).
struct Single {
    tight: MeshBvh,
    open: MeshBvh,
}

fn singles(mesh: &TriMesh, triangle_test: TriangleTest) -> Vec<Single> {
    let options = BuildOptions { triangle_test, ..Default::default() };
    (0..mesh.len())
        .map(|i| {
            let corners = mesh.triangle(i).to_vec();
            let tight = MeshBvh::build(&TriMesh::new(corners.clone(), vec![[0, 1, 2]]).unwrap(), &options);
            let mut points = corners;
            points.extend([Vec3::splat(-1e9), Vec3::splat(1e9)]);
            let open = MeshBvh::build(&TriMesh::new(points, vec![[0, 1, 2], [3, 4, 4]]).unwrap(), &options);
            assert_eq!(open.stats().leaves, 1, "the open BVH keeps its triangle in the root's leaf");
            Single { tight, open }
        })
        .collect()
}

/// A triangle's hit as it alone answers: the f32 distance the traversal compares
/// (`HitCandidate::t`) and the hit the query returns (its distance refined in f64).
fn alone(bvh: &MeshBvh, triangle: usize, ray: &Ray) -> Option<(f32, Hit)> {
    let mut raw = None;
    let mut record = |c: &HitCandidate| {
        if c.triangle == 0 {
            raw = Some(c.t);
        }
        HitControl::Accept
    };
    let hit = bvh.intersect_with(ray, &mut record, RayOptions::default()).ok().flatten()?;
    Some((raw.expect("a hit was a candidate"), Hit { triangle: triangle as u32, ..hit }))
}

/// Every triangle's answer to `ray`: `(hit, decided)`, where an undecided triangle's hit is the
/// open one's and a decided one's is the tight one's (equal to the open one's).
fn brute_hits(singles: &[Single], ray: &Ray) -> Vec<(Option<(f32, Hit)>, bool)> {
    singles
        .iter()
        .enumerate()
        .map(|(i, one)| {
            // The second ask: a walk that has a hit at this distance or beyond still reaches
            // the triangle's box (`next_up`: the triangle test compares `t` in its own form).
            let reached_before =
                |(raw, _): &(f32, Hit)| alone(&one.tight, i, &ray.with_range(ray.tmin, raw.next_up())).is_some();
            let (tight, open) = (alone(&one.tight, i, ray).filter(reached_before), alone(&one.open, i, ray));
            let decided = match (tight, open) {
                (Some(a), Some(b)) => {
                    assert!(a.0 == b.0 && same_hit(&a.1, &b.1), "triangle {i} alone: {a:?} and {b:?}, {ray:?}");
                    true
                }
                (None, None) => true,
                (Some(a), None) => panic!("triangle {i}: hit {a:?} through its own box, not in the open, {ray:?}"),
                (None, Some(_)) => false,
            };
            (open, decided)
        })
        .collect()
}

fn same_hit(a: &Hit, b: &Hit) -> bool {
    a.triangle == b.triangle
        && [a.t, a.u, a.v].map(f32::to_bits) == [b.t, b.u, b.v].map(f32::to_bits)
        && a.normal.to_array().map(f32::to_bits) == b.normal.to_array().map(f32::to_bits)
}

/// Every triangle's answer to a ray, from [`brute_hits`].
type Brute = [(Option<(f32, Hit)>, bool)];

fn check_ray(bvh: &MeshBvh, brute: &Brute, ray: &Ray, closest: Option<Hit>, any: bool, what: &str) {
    let decided_hits = || brute.iter().filter(|b| b.1).filter_map(|b| b.0);
    let nearest = decided_hits().map(|h| h.0).fold(None, |m: Option<f32>, t| Some(m.map_or(t, |m| m.min(t))));
    let undecided = brute.iter().any(|b| !b.1 && b.0.is_some());
    match closest {
        Some(got) => {
            let own = brute.get(got.triangle as usize).and_then(|b| b.0);
            assert!(
                own.is_some_and(|(raw, h)| nearest.is_none_or(|t| raw <= t) && same_hit(&h, &got)),
                "{what}: hit {got:?} is not the nearest triangle's own hit (its own {own:?}, nearest tight \
                 {nearest:?}), {ray:?}, {:?}",
                bvh.mesh()
            );
        }
        None => assert!(nearest.is_none(), "{what}: no hit, brute force at {nearest:?}, {ray:?}, {:?}", bvh.options()),
    }
    assert!(any == nearest.is_some() || (undecided && nearest.is_none()), "{what}: any hit {any}, {ray:?}");
}

/// `intersect_all`'s answer against brute force: every decided hit, and undecided ones only.
fn check_all(bvh: &MeshBvh, brute: &Brute, ray: &Ray, all: &mut Vec<Hit>, what: &str) {
    bvh.intersect_all(ray, all).unwrap();
    let mut seen = vec![false; brute.len()];
    for h in all.iter() {
        let i = h.triangle as usize;
        assert!(!seen[i], "{what}: all hits report triangle {i} twice, {ray:?}");
        seen[i] = true;
        assert!(
            brute[i].0.is_some_and(|(_, own)| own.t.to_bits() == h.t.to_bits()),
            "{what}: all hits report {h:?}, the triangle alone {:?}, {ray:?}, {:?}",
            brute[i].0,
            bvh.mesh()
        );
    }
    for (i, b) in brute.iter().enumerate() {
        assert!(seen[i] || !b.1 || b.0.is_none(), "{what}: all hits miss triangle {i} at {:?}, {ray:?}", b.0);
    }
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mesh = random_mesh::mesh(u, 80)?;
    let triangle_test = if u.arbitrary()? { TriangleTest::Watertight } else { TriangleTest::MollerTrumbore };
    let singles = singles(&mesh, triangle_test);
    let mut rays = Vec::new();
    for _ in 0..u.int_in_range(1u8..=10)? {
        rays.push(random_mesh::ray(u, &mesh)?);
    }
    // The brute force depends on the ray alone, not on the build: computed once per ray.
    let brutes: Vec<_> = rays.iter().map(|ray| brute_hits(&singles, ray)).collect();
    let probe = random_mesh::ray(u, &mesh)?;
    let (centre, half) = (Vec3::from(probe.origin()), u.int_in_range(0u8..=32)? as f32 * 0.125);
    let query_box = Aabb::new(Vec3A::from(centre) - half, Vec3A::from(centre) + half);
    let options = BuildOptions {
        triangle_test,
        bins: *u.choose(&[32, 4, 2])?,
        rotation_passes: u.int_in_range(0..=3)?,
        ..Default::default()
    };
    let mut batch = Vec::new();
    let mut batch_any = Vec::new();
    let mut all = Vec::new();
    let mut found = Vec::new();
    // Two qualities per input, one of them High (the input chooses the other): spatial splits
    // are what most needs the brute force, and fewer builds keep an execution short.
    let other = *u.choose(&[BuildQuality::Low, BuildQuality::Medium])?;
    // Or each built first over the vertices moved round by one (the same triangles over other
    // corners) and then rebuilt in place over the mesh's own: a rebuild in the old tree's
    // memory must answer as a build does.
    let rebuilt = u.arbitrary::<bool>()?;
    for quality in [other, BuildQuality::High] {
        let options = BuildOptions { quality, ..options };
        let bvh = if rebuilt {
            let mut moved = mesh.positions().to_vec();
            moved.rotate_left(1);
            let mut bvh = MeshBvh::build(&TriMesh::new(moved, mesh.triangles().to_vec()).unwrap(), &options);
            bvh.rebuild(mesh.positions()).unwrap();
            bvh
        } else {
            MeshBvh::build(&mesh, &options)
        };
        let q = format!("{quality:?}, rebuilt {rebuilt}");
        for (ray, brute) in rays.iter().zip(&brutes) {
            let (closest, any) = (bvh.intersect(ray).unwrap(), bvh.occluded(ray).unwrap());
            check_ray(&bvh, brute, ray, closest, any, &q);
            check_all(&bvh, brute, ray, &mut all, &q);
        }
        for packets in [false, true] {
            let batch_options = BatchOptions { threads: Threads::Calling, packets, ..Default::default() };
            bvh.intersect_batch(&rays, &mut batch, batch_options).unwrap();
            bvh.occluded_batch(&rays, &mut batch_any, batch_options).unwrap();
            for (i, ray) in rays.iter().enumerate() {
                let what = format!("{q} batch, packets {packets}");
                check_ray(&bvh, &brutes[i], ray, batch[i], batch_any[i], &what);
            }
        }
        found.clear();
        bvh.triangles_in_box(&query_box, &mut found).unwrap();
        found.sort_unstable();
        let mut one = Vec::new();
        let expected: Vec<u32> = (0..singles.len() as u32)
            .filter(|&i| {
                one.clear();
                singles[i as usize].tight.triangles_in_box(&query_box, &mut one).unwrap();
                !one.is_empty()
            })
            .collect();
        assert_eq!(found, expected, "{q}: triangles in {query_box:?}, {mesh:?}");
        let near = bvh.closest_point(centre, f32::INFINITY).unwrap().map(|c| c.distance);
        let brute = singles
            .iter()
            .filter_map(|one| one.tight.closest_point(centre, f32::INFINITY).unwrap().map(|c| c.distance))
            .fold(None, |m: Option<f32>, d| Some(m.map_or(d, |m| m.min(d))));
        assert_eq!(near.map(f32::to_bits), brute.map(f32::to_bits), "{q}: closest point to {centre}");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
