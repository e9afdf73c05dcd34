//! Hit policies on the mesh BVH (`MeshBvh::intersect_with`, `occluded_with`, `intersect_all`)
//! against brute force over every triangle (f64 Möller–Trumbore, no epsilon), and against the
//! fixed queries they must reproduce: a policy that accepts everything is `intersect`, bit for bit.

use glam::{Vec3, Vec3A};
use slabtree::{
    BuildOptions, BuildQuality, Hit, HitCandidate, HitControl, InputError, MeshBvh, Ray, RayOptions, TriMesh,
    TriangleTest,
};

use common::rng::Rng;
use common::triangle::{margin, mt64, random_triangles, room};
use slabtree_testkit as common;

/// Barycentric margin and relative distance within which f32 and f64 may disagree.
const EDGE: f64 = 1e-5;
const T_REL: f64 = 1e-4;

fn meshes() -> Vec<(&'static str, TriMesh, Vec3, f32)> {
    let (p, t) = random_triangles(2000, 11, |_| 2.0);
    vec![
        ("soup", TriMesh::new(p, t).unwrap(), Vec3::splat(10.0), 25.0),
        ("sphere", TriMesh::uv_sphere(3.0, 40, 20), Vec3::ZERO, 6.0),
        ("torus", TriMesh::torus(2.0, 0.7, 48, 24), Vec3::ZERO, 5.0),
        (
            "room",
            {
                let (p, t) = room(1500, 12);
                TriMesh::new(p, t).unwrap()
            },
            Vec3::splat(10.0),
            12.0,
        ),
    ]
}

fn rays(r: &mut Rng, n: usize, center: Vec3, radius: f32) -> Vec<Ray> {
    (0..n)
        .map(|i| {
            let o = center + r.direction() * radius;
            let target = center + (r.unit3() - Vec3::splat(0.5)) * radius;
            let ray = Ray::new(o, (target - o).normalize());
            // Some rays start inside the mesh's bounds and end early.
            if i % 4 == 0 { ray.with_range(radius * 0.5 * r.unit(), radius * (0.6 + r.unit())) } else { ray }
        })
        .collect()
}

/// Every triangle the ray's line crosses within its range, by f64 Möller–Trumbore: (triangle, t,
/// smallest barycentric).
fn brute_all(mesh: &TriMesh, ray: &Ray) -> Vec<(u32, f64, f64)> {
    let (o, d) = (ray.origin().as_dvec3(), ray.dir().as_dvec3());
    (0..mesh.len())
        .filter_map(|i| {
            let (t, u, v) = mt64(o, d, mesh.triangle(i).map(|v| v.as_dvec3()))?;
            let m = margin(u, v);
            (m > -EDGE && t >= ray.tmin as f64 * (1.0 - T_REL) && t <= ray.tmax as f64 * (1.0 + T_REL))
                .then_some((i as u32, t, m))
        })
        .collect()
}

/// Whether a brute-force hit is clear of the cases rounding decides: an edge, or an end of the
/// range.
fn clear(ray: &Ray, &(_, t, m): &(u32, f64, f64)) -> bool {
    let near = |end: f32| (t - end as f64).abs() <= T_REL * t.abs().max(1e-3);
    m > EDGE && !near(ray.tmin) && !near(ray.tmax)
}

/// Each triangle test with the default build and with spatial splits (`BuildQuality::High`),
/// which puts some triangles in several leaves: a policy must still see each once.
const BUILDS: [(TriangleTest, BuildQuality); 4] = [
    (TriangleTest::MollerTrumbore, BuildQuality::Medium),
    (TriangleTest::Watertight, BuildQuality::Medium),
    (TriangleTest::MollerTrumbore, BuildQuality::High),
    (TriangleTest::Watertight, BuildQuality::High),
];

fn build(mesh: &TriMesh, test: TriangleTest, quality: BuildQuality) -> MeshBvh {
    MeshBvh::build(mesh, &BuildOptions { triangle_test: test, quality, parallel_threshold: 64, ..Default::default() })
}

#[test]
fn all_hits_are_the_brute_force_set() {
    let mut r = Rng(41);
    let mut compared = 0;
    for (name, mesh, center, radius) in meshes() {
        for (test, quality) in BUILDS {
            let bvh = build(&mesh, test, quality);
            let mut hits = Vec::new();
            for ray in rays(&mut r, 800, center, radius) {
                bvh.intersect_all(&ray, &mut hits).unwrap();
                let expect = brute_all(&mesh, &ray);
                // Sorted by distance, each triangle once.
                assert!(hits.windows(2).all(|w| (w[0].t, w[0].triangle) < (w[1].t, w[1].triangle)), "{name}: order");
                // Every clear brute-force hit is there, at its distance.
                for e in expect.iter().filter(|e| clear(&ray, e)) {
                    let h = hits.iter().find(|h| h.triangle == e.0);
                    let h = h.unwrap_or_else(|| panic!("{name} {test:?}: triangle {} missing on {ray:?}", e.0));
                    assert!((h.t as f64 - e.1).abs() <= T_REL * e.1.abs().max(1e-3), "{name}: t {} vs {}", h.t, e.1);
                    compared += 1;
                }
                // Nothing the line misses (beyond rounding at an edge or the range's ends).
                for h in &hits {
                    assert!(expect.iter().any(|e| e.0 == h.triangle), "{name} {test:?}: {} is no hit", h.triangle);
                }
            }
        }
    }
    assert!(compared > 5000, "too few hits compared to mean anything: {compared}");
}

/// Inside-outside parity, the classic use of all hits: a point inside the closed torus sees an
/// odd number of its surfaces along any ray, a point outside an even number. The oracle is the
/// equation of the torus (about the y axis), for points clear of the faceted surface.
#[test]
fn all_hits_give_the_parity_of_a_closed_mesh() {
    let (big, small) = (2.0f32, 0.7f32);
    let mesh = TriMesh::torus(big, small, 64, 32);
    let bvh = build(&mesh, TriangleTest::Watertight, BuildQuality::High);
    let mut r = Rng(7);
    let (mut inside, mut outside, mut hits) = (0, 0, Vec::new());
    for _ in 0..3000 {
        let p = (r.unit3() - Vec3::splat(0.5)) * 6.0;
        let ring = (Vec3::new(p.x, 0.0, p.z).length() - big).hypot(p.y);
        // The facets lie within 0.01 of the true surface at this tessellation.
        if (ring - small).abs() < 0.05 {
            continue;
        }
        bvh.intersect_all(&Ray::new(p, r.direction()), &mut hits).unwrap();
        let odd = hits.len() % 2 == 1;
        assert_eq!(odd, ring < small, "point {p} (ring distance {ring}): {} crossings", hits.len());
        if odd { inside += 1 } else { outside += 1 }
    }
    assert!(inside > 200 && outside > 1000, "{inside} inside, {outside} outside");
}

#[test]
fn accepting_every_hit_is_the_closest_hit_bit_for_bit() {
    let mut r = Rng(5);
    for (_, mesh, center, radius) in meshes() {
        for (test, quality) in BUILDS {
            let bvh = build(&mesh, test, quality);
            for ray in rays(&mut r, 1500, center, radius) {
                let fixed = bvh.intersect(&ray).unwrap();
                let mut offered = 0;
                let with = bvh
                    .intersect_with(
                        &ray,
                        &mut |_: &HitCandidate| {
                            offered += 1;
                            HitControl::Accept
                        },
                        RayOptions::default(),
                    )
                    .unwrap();
                assert_eq!(bits(fixed), bits(with), "{test:?} {ray:?}");
                assert_eq!(offered > 0, fixed.is_some());
                let any =
                    bvh.occluded_with(&ray, &mut |_: &HitCandidate| HitControl::Accept, RayOptions::default()).unwrap();
                assert_eq!(any, bvh.occluded(&ray).unwrap());
            }
        }
    }
}

fn bits(h: Option<Hit>) -> Option<[u32; 7]> {
    h.map(|h| {
        let f = [h.t, h.u, h.v, h.normal.x, h.normal.y, h.normal.z].map(f32::to_bits);
        [h.triangle, f[0], f[1], f[2], f[3], f[4], f[5]]
    })
}

/// An alpha test: odd triangles are cut away. The nearest even triangle, by brute force, is the
/// answer; shadow rays are blocked by even triangles only.
#[test]
fn ignored_triangles_are_passed_through() {
    let mut r = Rng(9);
    let mut compared = 0;
    let keep = |c: &HitCandidate| if c.triangle.is_multiple_of(2) { HitControl::Accept } else { HitControl::Ignore };
    for (name, mesh, center, radius) in meshes() {
        for (test, quality) in BUILDS {
            let bvh = build(&mesh, test, quality);
            for ray in rays(&mut r, 800, center, radius) {
                let expect: Vec<_> = brute_all(&mesh, &ray).into_iter().filter(|e| e.0 % 2 == 0).collect();
                if expect.iter().any(|e| !clear(&ray, e)) {
                    continue;
                }
                compared += 1;
                let nearest = expect.iter().min_by(|a, b| a.1.total_cmp(&b.1));
                let got = bvh.intersect_with(&ray, &mut |c: &HitCandidate| keep(c), RayOptions::default()).unwrap();
                match (got, nearest) {
                    (None, None) => {}
                    (Some(h), Some(e)) => {
                        // A tie at equal distance may pick either triangle.
                        assert!((h.t as f64 - e.1).abs() <= T_REL * e.1.abs().max(1e-3), "{name}: {} vs {e:?}", h.t);
                        assert_eq!(h.triangle % 2, 0);
                    }
                    (g, e) => panic!("{name} {test:?}: {g:?} vs brute force {e:?} on {ray:?}"),
                }
                assert_eq!(
                    bvh.occluded_with(&ray, &mut |c: &HitCandidate| keep(c), RayOptions::default()).unwrap(),
                    nearest.is_some()
                );
            }
        }
    }
    assert!(compared > 3000, "{compared}");
}

/// `Stop` ends the query at the hit it is given, whatever might lie nearer: the policy is called
/// no more, and that hit is the answer.
#[test]
fn stop_ends_the_query_at_its_hit() {
    let mut r = Rng(13);
    for (_, mesh, center, radius) in meshes() {
        let bvh = build(&mesh, TriangleTest::Watertight, BuildQuality::High);
        let mut hits = Vec::new();
        for ray in rays(&mut r, 500, center, radius) {
            bvh.intersect_all(&ray, &mut hits).unwrap();
            // Stop at the k-th hit offered, after ignoring the ones before.
            for k in 0..hits.len().min(3) {
                let (mut offered, mut last) = (0, None);
                let got = bvh
                    .intersect_with(
                        &ray,
                        &mut |c: &HitCandidate| {
                            offered += 1;
                            last = Some(c.triangle);
                            if offered > k { HitControl::Stop } else { HitControl::Ignore }
                        },
                        RayOptions::default(),
                    )
                    .unwrap();
                assert_eq!(offered, k + 1, "the policy was called after it stopped");
                assert_eq!(got.map(|h| h.triangle), last);
            }
        }
    }
}

#[test]
fn invalid_rays_are_refused() {
    let bvh = build(&TriMesh::cuboid(Vec3::ONE), TriangleTest::Watertight, BuildQuality::Medium);
    let bad = Ray::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::X);
    let mut hits = vec![];
    assert!(matches!(bvh.intersect_all(&bad, &mut hits), Err(InputError::NonFiniteRay { .. })));
    assert!(bvh.intersect_with(&bad, &mut |_: &HitCandidate| HitControl::Accept, RayOptions::default()).is_err());
    assert!(bvh.occluded_with(&bad, &mut |_: &HitCandidate| HitControl::Accept, RayOptions::default()).is_err());
}
