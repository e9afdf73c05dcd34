//! `MeshBvh::closest_point` against brute force over every triangle, in f64 by a different method
//! (minimising over the face's projection and the three edges' segments, not Ericson's regions):
//! random soups, a closed sphere, points inside, outside and on the surface, distance limits, and
//! bad input.

use glam::Vec3;
use slabtree::{BuildOptions, BuildQuality, InputError, MeshBvh, TriMesh, TriangleTest};

use common::rng::Rng;
use common::triangle::{random_triangles, triangle_distance};
use slabtree_testkit as common;

fn soup(n: usize, seed: u64) -> TriMesh {
    let (mut p, mut t) = random_triangles(n, seed, |_| 3.0);
    // Degenerate triangles: a point, and segments with each pair of corners equal (Ericson's
    // regions divide by an edge's squared length, which is zero for the repeated corners) or
    // with three distinct corners on a line.
    let k = p.len() as u32;
    p.extend([Vec3::splat(30.0), Vec3::new(-5.0, 0.0, 0.0), Vec3::new(-5.0, 8.0, 0.0)]);
    p.extend([Vec3::new(-20.0, -20.0, 0.0), Vec3::new(-18.0, -19.0, 1.0), Vec3::new(-14.0, -17.0, 3.0)]);
    t.push([k, k, k]);
    t.push([k + 1, k + 2, k + 2]);
    t.push([k + 1, k + 1, k + 2]);
    t.push([k + 2, k + 1, k + 2]);
    t.push([k + 3, k + 5, k + 4]);
    TriMesh::new(p, t).unwrap()
}

/// A UV sphere of radius 5 around (3, 3, 3).
fn sphere() -> TriMesh {
    let (rings, segs) = (24u32, 48u32);
    let mut p = Vec::new();
    for i in 0..=rings {
        let th = std::f32::consts::PI * i as f32 / rings as f32;
        for j in 0..segs {
            let ph = std::f32::consts::TAU * j as f32 / segs as f32;
            p.push(Vec3::splat(3.0) + 5.0 * Vec3::new(th.sin() * ph.cos(), th.sin() * ph.sin(), th.cos()));
        }
    }
    let mut t = Vec::new();
    for i in 0..rings {
        for j in 0..segs {
            let (a, b) = (i * segs + j, i * segs + (j + 1) % segs);
            let (c, d) = (a + segs, b + segs);
            t.push([a, c, b]);
            t.push([b, c, d]);
        }
    }
    TriMesh::new(p, t).unwrap()
}

fn check(bvh: &MeshBvh, points: &[Vec3]) {
    let mesh = bvh.mesh();
    for &p in points {
        let dists: Vec<f64> =
            (0..mesh.len()).map(|i| triangle_distance(p.as_dvec3(), mesh.triangle(i).map(Vec3::as_dvec3))).collect();
        let brute = dists.iter().copied().fold(f64::INFINITY, f64::min);
        let got = bvh.closest_point(p, f32::INFINITY).unwrap().expect("a non-empty mesh has a nearest point");
        let tol = 1e-5 * (1.0 + brute + p.as_dvec3().length());
        assert!((got.distance as f64 - brute).abs() <= tol, "p {p}: distance {} vs brute force {brute}", got.distance);
        // The reported triangle is at that distance, and the point is on it, as its barycentrics say.
        assert!((dists[got.triangle as usize] - brute).abs() <= tol, "triangle {} is not nearest", got.triangle);
        let [a, b, c] = mesh.triangle(got.triangle as usize);
        let q = a + (b - a) * got.u + (c - a) * got.v;
        assert!(q.distance(got.point) <= 1e-4 * (1.0 + got.point.length()), "barycentrics off at {p}");
        assert!((got.point.distance(p) - got.distance).abs() <= 1e-5 * (1.0 + got.distance));
        assert!(got.u >= 0.0 && got.v >= 0.0 && got.u + got.v <= 1.0 + 1e-6);
        // A limit just below the distance finds nothing; just above, the same distance.
        if brute > 1e-3 {
            let below = (brute * (1.0 - 1e-4)) as f32;
            assert_eq!(bvh.closest_point(p, below).unwrap(), None, "p {p}: found below the limit {below}");
            let above = bvh.closest_point(p, (brute * (1.0 + 1e-4)) as f32).unwrap().expect("within the limit");
            assert!((above.distance as f64 - brute).abs() <= tol);
        }
    }
}

fn points(seed: u64, n: usize, center: Vec3, spread: f32) -> Vec<Vec3> {
    let mut r = Rng(seed);
    (0..n).map(|_| center + (r.unit3() - Vec3::splat(0.5)) * spread).collect()
}

#[test]
fn closest_points_match_brute_force() {
    // Each triangle test, with the default build and with spatial splits (`BuildQuality::High`,
    // which puts the soup's larger triangles in several leaves).
    for (test, quality) in [
        (TriangleTest::MollerTrumbore, BuildQuality::Medium),
        (TriangleTest::Watertight, BuildQuality::Medium),
        (TriangleTest::Watertight, BuildQuality::High),
    ] {
        let opts = BuildOptions { triangle_test: test, quality, parallel_threshold: 64, ..BuildOptions::default() };
        for (n, seed) in [(1, 1), (7, 2), (500, 3)] {
            let bvh = MeshBvh::build(&soup(n, seed), &opts);
            check(&bvh, &points(seed, 150, Vec3::splat(10.0), 60.0));
            // Points whose nearest triangle is one of the degenerate ones.
            check(&bvh, &points(seed, 100, Vec3::new(-5.0, 4.0, 0.0), 6.0));
            check(&bvh, &points(seed, 100, Vec3::new(-17.0, -18.5, 1.5), 8.0));
        }
        let bvh = MeshBvh::build(&sphere(), &opts);
        // Inside, outside, far away, and on the surface itself (the corners).
        let mut ps = points(9, 150, Vec3::splat(3.0), 16.0);
        ps.extend(bvh.mesh().positions().iter().step_by(37).copied());
        check(&bvh, &ps);
    }
}

#[test]
fn degenerate_triangles_alone_have_nearest_points() {
    // Each degenerate form as the only triangle, so that no other can answer for it.
    let (a, b) = (Vec3::new(-5.0, 0.0, 0.0), Vec3::new(-5.0, 8.0, 0.0));
    let on_line = [Vec3::new(-20.0, -20.0, 0.0), Vec3::new(-14.0, -17.0, 3.0), Vec3::new(-18.0, -19.0, 1.0)];
    for corners in [[a, a, a], [a, a, b], [a, b, a], [b, a, a], on_line] {
        let mesh = TriMesh::new(corners.to_vec(), vec![[0, 1, 2]]).unwrap();
        let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
        let centre = (corners[0] + corners[1] + corners[2]) / 3.0;
        check(&bvh, &points(11, 200, centre, 20.0));
    }
}

#[test]
fn bad_point_queries_are_refused() {
    let bvh = MeshBvh::build(&soup(5, 4), &BuildOptions::default());
    for (p, max) in [
        (Vec3::new(f32::NAN, 0.0, 0.0), 1.0),
        (Vec3::new(0.0, f32::INFINITY, 0.0), 1.0),
        (Vec3::ZERO, f32::NAN),
        (Vec3::ZERO, -1.0),
    ] {
        let e = bvh.closest_point(p, max).unwrap_err();
        assert!(matches!(e, InputError::InvalidPointQuery { .. }), "{e}");
        assert!(e.to_string().contains("point query"), "{e}");
    }
    let empty = MeshBvh::build(&TriMesh::new(Vec::new(), Vec::new()).unwrap(), &BuildOptions::default());
    assert_eq!(empty.closest_point(Vec3::ZERO, f32::INFINITY).unwrap(), None);
}
