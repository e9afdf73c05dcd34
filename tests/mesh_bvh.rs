//! Mesh BVH queries against brute force over every triangle (f64 Möller–Trumbore, no epsilon) on
//! generated meshes: random triangle soup, a sphere and a closed torus.

use glam::{DVec3, Vec3, Vec3A};
use slabtree::{
    Aabb, AcceptAll, BatchOptions, BuildOptions, BuildQuality, HitCandidate, HitControl, InputError, MeshBvh, Ray,
    RayCoherence, RayOptions, Threads, TriMesh, TriangleTest,
};

use common::rng::Rng;
use common::triangle::{margin, mt64, random_triangles, room};
use slabtree_testkit as common;

fn soup(n: usize, seed: u64) -> TriMesh {
    let (mut p, mut t) = random_triangles(n, seed, |_| 2.0);
    // A few degenerate triangles that must never be hit or produce NaN.
    let k = p.len() as u32;
    p.extend([Vec3::splat(5.0), Vec3::splat(5.0), Vec3::splat(5.0), Vec3::ZERO, Vec3::splat(10.0)]);
    t.push([k, k + 1, k + 2]);
    t.push([k + 3, k + 4, k + 4]);
    t.push([k + 3, k + 1, k + 4]); // collinear: (0,0,0), (5,5,5), (10,10,10)
    TriMesh::new(p, t).unwrap()
}

/// An interior of long wall strips and beams around small triangles, where a High build puts
/// triangles in several leaves (`common::triangle::room`).
fn room_mesh() -> TriMesh {
    let (p, t) = room(1500, 11);
    TriMesh::new(p, t).unwrap()
}

/// Exact-ish reference: f64 Möller–Trumbore without epsilon. Returns (t, triangle, min
/// barycentric margin) of the closest hit in [tmin, tmax].
fn brute(mesh: &TriMesh, o: Vec3, d: Vec3, tmin: f32, tmax: f32) -> Option<(f64, u32, f64)> {
    let (o, d) = (o.as_dvec3(), d.as_dvec3());
    let mut best: Option<(f64, u32, f64)> = None;
    for i in 0..mesh.len() {
        let [a, b, c] = mesh.triangle(i).map(|v| v.as_dvec3());
        if let Some((t, margin)) = mt64_margin(o, d, a, b, c)
            && t >= tmin as f64
            && t <= tmax as f64
            && best.is_none_or(|x| t < x.0)
        {
            best = Some((t, i as u32, margin));
        }
    }
    best
}

/// `(t, margin)` when the line hits the triangle (margin: the smallest barycentric, >= 0).
fn mt64_margin(o: DVec3, d: DVec3, a: DVec3, b: DVec3, c: DVec3) -> Option<(f64, f64)> {
    let (t, u, v) = mt64(o, d, [a, b, c])?;
    let m = margin(u, v);
    (m >= 0.0).then_some((t, m))
}

fn check_against_brute(
    mesh: &TriMesh,
    rays: &[(Vec3, Vec3, f32)],
    test: TriangleTest,
    rotation_passes: usize,
    quality: BuildQuality,
) -> usize {
    let bvh = MeshBvh::build(
        mesh,
        &BuildOptions { triangle_test: test, quality, parallel_threshold: 64, rotation_passes, ..Default::default() },
    );
    // Every ray through the single query, through it with each coherence hint (the incoherent
    // one takes the walk with early child loads), and through the batch, which judges the
    // coherence of its runs itself: each is checked against brute force.
    let all: Vec<Ray> = rays.iter().map(|&(o, d, tmax)| Ray::new(o, d).with_range(0.0, tmax)).collect();
    let mut batch = Vec::new();
    bvh.intersect_batch(
        &all,
        &mut batch,
        BatchOptions { threads: Threads::Calling, packets: false, ..Default::default() },
    )
    .unwrap();
    let mut batch_any = Vec::new();
    bvh.occluded_batch(
        &all,
        &mut batch_any,
        BatchOptions { threads: Threads::Calling, packets: false, ..Default::default() },
    )
    .unwrap();
    let mut compared = 0;
    let incoherent = RayOptions { coherence: RayCoherence::Incoherent };
    for (i, &(o, d, tmax)) in rays.iter().enumerate() {
        let ray = all[i];
        let got = bvh.intersect(&ray).unwrap();
        let expect = brute(mesh, o, d, 0.0, tmax);
        let variants = [
            ("intersect", got, bvh.occluded(&ray).unwrap()),
            (
                "coherent hint",
                bvh.intersect_with(&ray, &mut AcceptAll, RayOptions { coherence: RayCoherence::Coherent }).unwrap(),
                bvh.occluded_with(&ray, &mut AcceptAll, RayOptions { coherence: RayCoherence::Coherent }).unwrap(),
            ),
            (
                "incoherent hint",
                bvh.intersect_with(&ray, &mut AcceptAll, RayOptions { coherence: RayCoherence::Incoherent }).unwrap(),
                bvh.occluded_with(&ray, &mut AcceptAll, RayOptions { coherence: RayCoherence::Incoherent }).unwrap(),
            ),
            (
                "accepting policy, incoherent (the policy walk with early loads)",
                bvh.intersect_with(&ray, &mut |_: &HitCandidate| HitControl::Accept, incoherent).unwrap(),
                bvh.occluded_with(&ray, &mut |_: &HitCandidate| HitControl::Accept, incoherent).unwrap(),
            ),
            ("batch", batch[i], batch_any[i]),
        ];
        for (what, got, any) in variants {
            assert_eq!(any, got.is_some(), "{what}: any-hit disagrees with closest-hit");
        }
        // Rays within 1e-5 (barycentric) of an edge, or with t at tmax, may round either way.
        if let Some((t, _, m)) = expect
            && (m < 1e-5 || (t - tmax as f64).abs() < 1e-4 * t)
        {
            continue;
        }
        compared += 1;
        for (what, got, _) in variants {
            match (got, expect) {
                (None, None) => {}
                (Some(h), Some((t, tri, _))) => {
                    assert!(h.t.is_finite() && h.u.is_finite() && h.v.is_finite() && h.normal.is_finite());
                    assert!(((h.t as f64) - t).abs() <= 1e-4 * t.max(1e-3), "{what}: t {} vs {t}", h.t);
                    if h.triangle != tri {
                        // A tie: the reported triangle must be hit at the same t.
                        let [a, b, c] = mesh.triangle(h.triangle as usize).map(|v| v.as_dvec3());
                        let other = mt64_margin(o.as_dvec3(), d.as_dvec3(), a, b, c).map(|x| x.0);
                        assert!(
                            other.is_some_and(|ot| (ot - t).abs() <= 1e-4 * t),
                            "{what}: triangle {} vs {tri}",
                            h.triangle
                        );
                    }
                    // Barycentrics reproduce the hit point.
                    let [a, b, c] = mesh.triangle(h.triangle as usize);
                    let p = a * (1.0 - h.u - h.v) + b * h.u + c * h.v;
                    assert!(p.distance(o + d * h.t) < 1e-3 * (1.0 + h.t * d.length()), "{what}: barycentrics off");
                }
                (g, e) => panic!("{what}: hit/miss differs: bvh {g:?}, brute {e:?} for o={o} d={d}"),
            }
        }
    }
    compared
}

fn random_rays(r: &mut Rng, n: usize, center: Vec3, radius: f32) -> Vec<(Vec3, Vec3, f32)> {
    (0..n)
        .map(|i| {
            let o = center + r.direction() * radius;
            let target = center + (r.unit3() - Vec3::splat(0.5)) * radius;
            let tmax = if i % 5 == 0 { r.unit() * 2.0 } else { f32::INFINITY };
            (o, (target - o).normalize(), if i % 5 == 0 { tmax * radius } else { tmax })
        })
        .collect()
}

#[test]
fn closest_and_any_hit_match_brute_force() {
    let mut r = Rng(3);
    for (name, mesh, center, radius) in [
        ("soup", soup(3000, 1), Vec3::splat(10.0), 25.0),
        ("sphere", TriMesh::uv_sphere(3.0, 40, 20), Vec3::ZERO, 6.0),
        ("torus", TriMesh::torus(2.0, 0.7, 48, 24), Vec3::ZERO, 5.0),
        ("room", room_mesh(), Vec3::splat(10.0), 12.0),
    ] {
        let mut rays = random_rays(&mut r, 1500, center, radius);
        // Axis-aligned rays with exact zero components.
        for k in 0..100 {
            let o = center + Vec3::new(-radius, (k as f32 / 50.0 - 1.0) * 2.0, 0.37);
            rays.push((o, Vec3::X, f32::INFINITY));
            rays.push((center + Vec3::new(0.13, radius, (k as f32 / 50.0 - 1.0) * 2.0), -Vec3::Y, f32::INFINITY));
        }
        for (test, passes, quality) in [
            (TriangleTest::MollerTrumbore, 0, BuildQuality::Medium),
            (TriangleTest::Watertight, 0, BuildQuality::Medium),
            (TriangleTest::MollerTrumbore, 3, BuildQuality::Medium),
            (TriangleTest::MollerTrumbore, 0, BuildQuality::Low),
            (TriangleTest::Watertight, 3, BuildQuality::Low),
            (TriangleTest::MollerTrumbore, 3, BuildQuality::High),
            (TriangleTest::Watertight, 0, BuildQuality::High),
        ] {
            let n = check_against_brute(&mesh, &rays, test, passes, quality);
            assert!(n > rays.len() * 9 / 10, "{name}: only {n} rays compared");
        }
    }
}

#[test]
fn tmin_tmax_and_direction_sign_are_honoured() {
    let mesh = TriMesh::uv_sphere(1.0, 24, 12);
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
        // From the centre outwards: the hit is at t ~ 1 in every direction, including negative ones.
        for d in [Vec3::X, -Vec3::X, Vec3::new(-0.3, -0.8, 0.1).normalize(), -Vec3::Z] {
            let h = bvh.intersect(&Ray::new(Vec3::ZERO, d)).unwrap().expect("inside a closed sphere");
            assert!((h.t - 1.0).abs() < 0.02, "{}", h.t);
            assert!(bvh.intersect(&Ray::new(Vec3::ZERO, d).with_range(0.0, 0.9)).unwrap().is_none());
            assert!(!bvh.occluded(&Ray::new(Vec3::ZERO, d).with_range(0.0, 0.9)).unwrap());
            // tmin beyond the near hit finds the far side.
            let from_out = Ray::new(-d * 3.0, d);
            let near = bvh.intersect(&from_out).unwrap().unwrap().t;
            let far = bvh.intersect(&from_out.with_range(near + 0.1, f32::INFINITY)).unwrap().unwrap().t;
            assert!((near - 2.0).abs() < 0.02 && (far - 4.0).abs() < 0.02, "{near} {far}");
        }
        // Bad rays are refused with the ray's own error.
        assert!(matches!(
            bvh.intersect(&Ray::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::X)),
            Err(InputError::NonFiniteRay { .. })
        ));
        assert!(matches!(
            bvh.intersect(&Ray::new(Vec3::ZERO, Vec3::X).with_range(1.0, 0.0)),
            Err(InputError::InvalidRayRange { .. })
        ));
    }
}

/// Rays from inside the torus tube aimed exactly at vertices and at points on shared edges: a
/// closed mesh must be hit by every one of them in watertight mode.
#[test]
fn watertight_mode_never_leaks_through_edges_or_vertices() {
    let (major, minor, nu, nv) = (2.0f32, 0.7f32, 64, 32);
    let mesh = TriMesh::torus(major, minor, nu, nv);
    let wt = MeshBvh::build(&mesh, &BuildOptions { triangle_test: TriangleTest::Watertight, ..Default::default() });
    let mt = MeshBvh::build(&mesh, &BuildOptions::default());
    let mut r = Rng(11);
    let (mut rays, mut leaks_wt, mut leaks_mt) = (0usize, 0usize, 0usize);
    for tri in mesh.triangles() {
        let [a, b, c] = tri.map(|i| mesh.positions()[i as usize]);
        for target in [a, b, c, (a + b) * 0.5, (b + c) * 0.5, a + (c - a) * 0.25] {
            for _ in 0..2 {
                // A point inside the tube near the target: on the tube's centre circle, jittered.
                let ang = target.z.atan2(target.x);
                let centre = Vec3::new(major * ang.cos(), 0.0, major * ang.sin());
                let o = centre + (r.unit3() - Vec3::splat(0.5)) * (minor * 0.5);
                let ray = Ray::new(o, target - o);
                rays += 1;
                if !wt.occluded(&ray).unwrap() || wt.intersect(&ray).unwrap().is_none() {
                    leaks_wt += 1;
                }
                if mt.intersect(&ray).unwrap().is_none() {
                    leaks_mt += 1;
                }
            }
        }
    }
    println!("{rays} rays at vertices and edges: watertight leaks {leaks_wt}, Möller–Trumbore leaks {leaks_mt}");
    assert_eq!(leaks_wt, 0);
}

#[test]
fn refit_follows_deformation() {
    let mesh = TriMesh::torus(2.0, 0.5, 32, 16);
    let mut bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let moved: Vec<Vec3> =
        mesh.positions().iter().map(|p| *p * Vec3::new(1.5, 0.5, 1.0) + Vec3::new(0.0, 3.0, 0.0)).collect();
    bvh.refit(&moved).unwrap();
    let deformed = TriMesh::new(moved, mesh.triangles().to_vec()).unwrap();
    let mut r = Rng(5);
    let rays = random_rays(&mut r, 800, Vec3::new(0.0, 3.0, 0.0), 5.0);
    for &(o, d, tmax) in &rays {
        let ray = Ray::new(o, d).with_range(0.0, tmax);
        let e = brute(&deformed, o, d, 0.0, tmax);
        if e.is_some_and(|x| x.2 < 1e-5) {
            continue;
        }
        assert_eq!(bvh.intersect(&ray).unwrap().map(|h| h.triangle), e.map(|x| x.1));
    }
    assert!(bvh.refit(&[Vec3::ZERO]).is_err());
}

/// A rebuild gives the tree a fresh build of the moved mesh gives, byte for byte, at every
/// quality, on one thread and two with the parallel paths taken (the interior's 1500 strips and
/// beams with a low threshold), twice in a row, and its rays hit what brute force over the moved
/// mesh hits. (These meshes are too small for their memory to be reused: a unit test in
/// `mesh::bvh` checks that on a larger one.)
#[test]
fn rebuild_is_a_build_of_the_moved_mesh() {
    let on_threads = |threads: usize, f: &(dyn Fn() + Sync)| {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
    };
    // The large torus's BVH spans huge pages, so that each rebuild is made in the memory of the
    // tree before it (`MeshBvh::rebuild`), whose old bytes must not show through.
    for mesh in [TriMesh::torus(2.0, 0.5, 32, 16), room_mesh(), TriMesh::torus(2.0, 0.5, 256, 160)] {
        let rays = if mesh.len() > 10_000 { 40 } else { 300 };
        let frames: Vec<Vec<Vec3>> = (1..=2)
            .map(|k| {
                let s = Vec3::new(1.0 + 0.5 * k as f32, 0.5, 1.0);
                mesh.positions().iter().map(|p| *p * s + Vec3::new(0.0, 3.0 * k as f32, 0.0)).collect()
            })
            .collect();
        for quality in [BuildQuality::Low, BuildQuality::Medium, BuildQuality::High] {
            let options = BuildOptions { quality, parallel_threshold: 64, ..Default::default() };
            for threads in [1, 2] {
                on_threads(threads, &|| {
                    let mut bvh = MeshBvh::build(&mesh, &options);
                    for (k, moved) in frames.iter().enumerate() {
                        bvh.rebuild(moved).unwrap();
                        let deformed = TriMesh::new(moved.clone(), mesh.triangles().to_vec()).unwrap();
                        let fresh = MeshBvh::build(&deformed, &options);
                        assert!(bvh.to_bytes() == fresh.to_bytes(), "{quality:?}, {threads} threads, frame {k}");
                        assert_eq!(bvh.mesh(), &deformed);
                        assert_eq!(bvh.bounds(), fresh.bounds());
                        let mut r = Rng(11 + k as u64);
                        let centre = Vec3::new(0.0, 3.0 * (k + 1) as f32, 0.0);
                        for (o, d, tmax) in random_rays(&mut r, rays, centre, 6.0) {
                            let ray = Ray::new(o, d).with_range(0.0, tmax);
                            let e = brute(&deformed, o, d, 0.0, tmax);
                            if e.is_some_and(|x| x.2 < 1e-5) {
                                continue;
                            }
                            assert_eq!(bvh.intersect(&ray).unwrap().map(|h| h.triangle), e.map(|x| x.1));
                        }
                    }
                });
            }
        }
    }
}

/// Independent box–triangle overlap oracle: clip the triangle by the box's six planes
/// (Sutherland–Hodgman); they overlap when something is left.
fn box_overlaps_triangle(b: &Aabb, tri: &[Vec3; 3]) -> bool {
    let mut poly: Vec<DVec3> = tri.iter().map(|v| v.as_dvec3()).collect();
    for axis in 0..3 {
        for (bound, keep_below) in [(b.max[axis] as f64, true), (b.min[axis] as f64, false)] {
            let inside = |p: &DVec3| if keep_below { p[axis] <= bound } else { p[axis] >= bound };
            let mut out = Vec::new();
            for i in 0..poly.len() {
                let (p, q) = (poly[i], poly[(i + 1) % poly.len()]);
                if inside(&p) {
                    out.push(p);
                }
                if inside(&p) != inside(&q) {
                    let s = (bound - p[axis]) / (q[axis] - p[axis]);
                    out.push(p + (q - p) * s);
                }
            }
            poly = out;
            if poly.is_empty() {
                return false;
            }
        }
    }
    true
}

#[test]
fn sweep_box_matches_clipping_oracle() {
    let mesh = soup(400, 9);
    let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let mut r = Rng(21);
    let mut hits = 0;
    for _ in 0..300 {
        let start = r.unit3() * 24.0 - Vec3::splat(2.0);
        let half = Vec3::splat(0.1) + r.unit3() * 0.8;
        let d = r.direction() * (2.0 + r.unit() * 10.0);
        let aabb = Aabb::from_center_half_extents(start, half);
        let at =
            |t: f32, grow: f32| Aabb::from_center_half_extents(Vec3A::from(start + d * t), Vec3A::from(half) + grow);
        let any_at =
            |t: f32, grow: f32| (0..mesh.len()).any(|i| box_overlaps_triangle(&at(t, grow), &mesh.triangle(i)));
        match bvh.cast_box(&aabb, d.into()).unwrap() {
            Some(h) => {
                hits += 1;
                assert!((0.0..=1.0).contains(&h.t));
                // In contact at t (up to rounding), and with the reported triangle.
                let tri = mesh.triangle(h.triangle as usize);
                assert!(box_overlaps_triangle(&at(h.t, 1e-4), &tri), "no contact at reported t {}", h.t);
                assert!((h.normal.length() - 1.0).abs() < 1e-4 || h.t == 0.0);
                if h.t > 0.0 {
                    assert!(h.normal.dot(d) <= 1e-4, "normal must oppose the motion");
                }
                // Nothing touched earlier: sample the interval before t with a slightly shrunk box.
                for k in 0..64 {
                    let t = h.t * k as f32 / 64.0 - 1e-4;
                    if t >= 0.0 {
                        assert!(!any_at(t, -1e-3), "overlap at {t} before reported {}", h.t);
                    }
                }
            }
            None => {
                for k in 0..=128 {
                    assert!(!any_at(k as f32 / 128.0, -1e-3), "missed contact at {}", k as f32 / 128.0);
                }
            }
        }
    }
    assert!(hits > 30, "only {hits} sweeps hit: the test is not exercising contacts");
}

/// The collapse to 8-wide nodes keeps the wide nodes near the fewest that can hold the leaves
/// (`ceil((leaves - 1) / 7)`, every node full) at every size, whatever the binary depth modulo
/// three: heightfield grids, whose binary trees are nearly balanced, from 128 to 32,768 leaves.
/// Opening by area alone left the bottom wide level two or four lanes wide at some sizes (up to
/// 4× the fewest nodes).
#[test]
fn wide_nodes_stay_near_the_fewest_at_every_size() {
    let grid = |cells: u32| {
        let side = cells + 1;
        let positions = (0..side * side)
            .map(|k| Vec3::new((k % side) as f32, (k / side) as f32, ((k * 7) % 5) as f32 * 0.01))
            .collect();
        let tris = (0..cells * cells)
            .flat_map(|k| {
                let a = k / cells * side + k % cells;
                [[a, a + 1, a + side], [a + 1, a + side + 1, a + side]]
            })
            .collect();
        TriMesh::new(positions, tris).unwrap()
    };
    for cells in [16u32, 23, 32, 45, 64, 90, 128, 181, 256] {
        let stats = MeshBvh::build(&grid(cells), &BuildOptions::default()).stats();
        let fewest = (stats.leaves - 1).div_ceil(7);
        assert!(
            stats.nodes as f64 <= 1.8 * fewest as f64,
            "{cells}² cells: {} wide nodes over {} leaves, the fewest {fewest}",
            stats.nodes,
            stats.leaves
        );
    }
}
