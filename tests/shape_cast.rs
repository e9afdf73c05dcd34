//! Sphere and capsule casts (`MeshBvh::cast_sphere`, `cast_capsule`) against an oracle that
//! uses none of their code: for a shape translating along a line, its distance to a triangle is a
//! convex function of `t` (the distance from a point moving on a line to a convex set, the
//! triangle minus the shape's core), so its minimum over any interval is found by ternary search
//! on f64 point–triangle distances. No triangle may come within the radius before the reported
//! `t` (no tunnelling, no late contact), the reported triangle must be at the radius at `t` (no
//! early contact), and a miss means that no triangle comes within the radius at all. Dense time
//! sampling (128 times over the interval) checks the same claims without the convexity argument.

use glam::{DVec3, Vec3};
use slabtree::{BuildOptions, BuildQuality, InputError, MeshBvh, ShapeCastHit, TriMesh};

use common::rng::Rng;
use common::triangle::{random_triangles, room, triangle_distance};
use slabtree_testkit as common;

/// The minimum of convex `f` on `[lo, hi]`, by ternary search.
fn convex_min(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let (mut a, mut b) = (lo, hi);
    for _ in 0..64 {
        let (m1, m2) = (a + (b - a) / 3.0, b - (b - a) / 3.0);
        if f(m1) <= f(m2) { b = m2 } else { a = m1 }
    }
    f(a).min(f(lo)).min(f(hi))
}

/// A shape: a segment `[p0, p1]` (a point for a sphere) with a radius, moving by `d`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    p0: DVec3,
    p1: DVec3,
    r: f64,
    d: DVec3,
}

impl Shape {
    /// Distance from the shape's core at time `t` to triangle `tri`.
    fn distance(&self, t: f64, tri: [DVec3; 3]) -> f64 {
        let at = |s: f64| self.p0 + (self.p1 - self.p0) * s + self.d * t;
        if self.p0 == self.p1 {
            return triangle_distance(at(0.0), tri);
        }
        convex_min(0.0, 1.0, |s| triangle_distance(at(s), tri))
    }

    /// Whether the box around the whole sweep, grown by the radius, meets the triangle's box.
    fn may_touch(&self, tri: [DVec3; 3]) -> bool {
        let pts = [self.p0, self.p1, self.p0 + self.d, self.p1 + self.d];
        let lo = pts.iter().fold(DVec3::INFINITY, |m, p| m.min(*p)) - self.r;
        let hi = pts.iter().fold(DVec3::NEG_INFINITY, |m, p| m.max(*p)) + self.r;
        let (tlo, thi) = (tri[0].min(tri[1]).min(tri[2]), tri[0].max(tri[1]).max(tri[2]));
        tlo.cmple(hi).all() && thi.cmpge(lo).all()
    }
}

/// Checks one cast against the oracle; returns whether it hit.
fn check(mesh: &TriMesh, shape: &Shape, got: Option<ShapeCastHit>, what: &str) -> bool {
    let tris: Vec<(usize, [DVec3; 3])> = (0..mesh.len())
        .map(|i| (i, mesh.triangle(i).map(Vec3::as_dvec3)))
        .filter(|(_, t)| shape.may_touch(*t))
        .collect();
    let scale = 1.0 + shape.p0.abs().max_element() + shape.d.abs().max_element() + shape.r;
    let tol = 2e-5 * scale;
    match got {
        None => {
            for (i, tri) in &tris {
                let m = convex_min(0.0, 1.0, |t| shape.distance(t, *tri));
                assert!(m > shape.r - tol, "{what}: missed triangle {i}, which comes within {m} of {shape:?}");
                for k in 0..=128 {
                    let at = shape.distance(f64::from(k) / 128.0, *tri);
                    assert!(at > shape.r - tol, "{what}: missed triangle {i}, within {at} at t = {k}/128");
                }
            }
            false
        }
        Some(h) => {
            let t = f64::from(h.t);
            assert!((0.0..=1.0).contains(&t), "{what}: t = {t}");
            // No triangle within the radius before t (allowing the rounding of t itself): the
            // exact minimum by the convexity above, and, as a check of that oracle that assumes
            // nothing, the distance at 128 evenly spaced times.
            let before = (t - 1e-6).max(0.0);
            for (i, tri) in &tris {
                let m = convex_min(0.0, before, |s| shape.distance(s, *tri));
                assert!(m > shape.r - tol || t == 0.0, "{what}: triangle {i} within {m} at t < {t} ({shape:?})");
                for k in 0..128 {
                    let s = before * f64::from(k) / 128.0;
                    let at = shape.distance(s, *tri);
                    assert!(at > shape.r - tol || t == 0.0, "{what}: triangle {i} within {at} at t = {s} < {t}");
                }
            }
            // The reported triangle is at the radius at t (or nearer at t = 0: started in contact).
            let tri = mesh.triangle(h.triangle as usize).map(Vec3::as_dvec3);
            let at = shape.distance(t, tri);
            assert!(at <= shape.r + tol, "{what}: triangle {} is {at} away at t = {t}, radius {}", h.triangle, shape.r);
            if t > 0.0 {
                assert!(at >= shape.r - tol, "{what}: triangle {} overlaps by {} at t = {t}", h.triangle, shape.r - at);
            }
            // The contact point is on the triangle, and the normal a unit vector.
            assert!(triangle_distance(h.point.as_dvec3(), tri) <= tol, "{what}: the point is off the triangle");
            assert!((h.normal.length() - 1.0).abs() < 1e-4, "{what}: normal {}", h.normal);
            true
        }
    }
}

fn meshes() -> Vec<(&'static str, TriMesh, Vec3, f32)> {
    let (mut p, mut t) = random_triangles(600, 21, |i| if i % 5 == 0 { 6.0 } else { 2.0 });
    // Degenerate triangles: a point and a segment.
    let k = p.len() as u32;
    p.extend([Vec3::splat(10.0), Vec3::new(2.0, 3.0, 4.0), Vec3::new(18.0, 15.0, 4.0)]);
    t.push([k, k, k]);
    t.push([k + 1, k + 2, k + 2]);
    vec![
        ("soup", TriMesh::new(p, t).unwrap(), Vec3::splat(10.0), 14.0),
        ("sphere", TriMesh::uv_sphere(3.0, 24, 12), Vec3::ZERO, 5.0),
        ("torus", TriMesh::torus(2.0, 0.5, 32, 12), Vec3::ZERO, 4.0),
        (
            "room",
            {
                let (p, t) = room(300, 22);
                TriMesh::new(p, t).unwrap()
            },
            Vec3::splat(10.0),
            12.0,
        ),
    ]
}

/// Each mesh with the default build, and with spatial splits (`BuildQuality::High`), whose
/// leaves share triangles: the first contact must be the same.
fn builds() -> Vec<(&'static str, TriMesh, Vec3, f32, MeshBvh)> {
    let mut out = Vec::new();
    for (name, mesh, centre, size) in meshes() {
        // The closed meshes' small triangles are never split: High on the soup and the room.
        let qualities: &[BuildQuality] = match name {
            "soup" | "room" => &[BuildQuality::Medium, BuildQuality::High],
            _ => &[BuildQuality::Medium],
        };
        for &quality in qualities {
            let bvh = MeshBvh::build(&mesh, &BuildOptions { parallel_threshold: 64, quality, ..Default::default() });
            out.push((name, mesh.clone(), centre, size, bvh));
        }
    }
    out
}

#[test]
fn sphere_casts_meet_the_convex_oracle() {
    let mut r = Rng(3);
    let mut hits = 0;
    for (name, mesh, centre, size, bvh) in builds() {
        for k in 0..240 {
            let c = centre + (r.unit3() - Vec3::splat(0.5)) * 2.0 * size;
            // Long moves (through thin walls), short ones, radii from tiny to large.
            let d = (r.unit3() - Vec3::splat(0.5)) * size * if k % 3 == 0 { 4.0 } else { 0.5 };
            let radius = [0.01f32, 0.3, 1.5][k % 3];
            let got = bvh.cast_sphere(c, radius, d).unwrap();
            let shape = Shape { p0: c.as_dvec3(), p1: c.as_dvec3(), r: f64::from(radius), d: d.as_dvec3() };
            hits += usize::from(check(&mesh, &shape, got, &format!("{name} sphere {k}")));
        }
    }
    assert!(hits > 150, "{hits}");
}

#[test]
fn capsule_casts_meet_the_convex_oracle() {
    let mut r = Rng(4);
    let mut hits = 0;
    for (name, mesh, centre, size, bvh) in builds() {
        for k in 0..150 {
            let a = centre + (r.unit3() - Vec3::splat(0.5)) * 2.0 * size;
            // Upright capsules (a character), and tilted ones.
            let axis = if k % 2 == 0 { Vec3::Y * 2.0 } else { (r.unit3() - Vec3::splat(0.5)) * 4.0 };
            let b = a + axis;
            let d = (r.unit3() - Vec3::splat(0.5)) * size * if k % 3 == 0 { 4.0 } else { 0.5 };
            let radius = [0.05f32, 0.4, 1.0][k % 3];
            let got = bvh.cast_capsule(a, b, radius, d).unwrap();
            let shape = Shape { p0: a.as_dvec3(), p1: b.as_dvec3(), r: f64::from(radius), d: d.as_dvec3() };
            hits += usize::from(check(&mesh, &shape, got, &format!("{name} capsule {k}")));
        }
    }
    assert!(hits > 100, "{hits}");
}

/// A capsule lying flat over a triangle, sinking onto it: its segment crosses the triangle's
/// edges, its ends and the triangle's corners are all clear, so only the segment's interior
/// touches first, at an edge.
#[test]
fn a_flat_capsule_lands_on_an_edge_with_its_middle() {
    let mesh = TriMesh::new(
        vec![Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 0.0, -1.0), Vec3::new(0.0, 0.0, 1.0)],
        vec![[0, 1, 2]],
    )
    .unwrap();
    let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let (a, b) = (Vec3::new(-5.0, 2.0, 0.0), Vec3::new(5.0, 2.0, 0.0));
    let hit = bvh.cast_capsule(a, b, 0.5, Vec3::new(0.0, -4.0, 0.0)).unwrap().unwrap();
    assert!((hit.t - 0.375).abs() < 1e-6, "{}", hit.t);
    assert!((hit.normal - Vec3::Y).length() < 1e-5);
    let shape = Shape { p0: a.as_dvec3(), p1: b.as_dvec3(), r: 0.5, d: DVec3::new(0.0, -4.0, 0.0) };
    check(&mesh, &shape, Some(hit), "flat capsule");
}

#[test]
fn bad_shapes_are_refused() {
    let bvh = MeshBvh::build(&TriMesh::cuboid(Vec3::ONE), &BuildOptions::default());
    let bad = [(Vec3::NAN, 1.0, Vec3::X), (Vec3::ZERO, -1.0, Vec3::X), (Vec3::ZERO, f32::INFINITY, Vec3::X)];
    for (c, r, d) in bad {
        assert!(matches!(bvh.cast_sphere(c, r, d), Err(InputError::InvalidShape { .. })), "{c} {r}");
        assert!(matches!(bvh.cast_capsule(c, Vec3::ONE, r, d), Err(InputError::InvalidShape { .. })));
    }
    assert!(matches!(bvh.cast_sphere(Vec3::ZERO, 1.0, Vec3::INFINITY), Err(InputError::NonFiniteDisplacement)));
    // A shape that starts in contact reports t = 0; one that does not move tests overlap only.
    assert_eq!(bvh.cast_sphere(Vec3::new(1.2, 0.0, 0.0), 0.5, Vec3::X).unwrap().unwrap().t, 0.0);
    assert_eq!(bvh.cast_sphere(Vec3::new(3.0, 0.0, 0.0), 0.5, Vec3::ZERO).unwrap(), None);
}

/// The scene's casts, under rotations, non-uniform scales and shears, against the same oracle
/// on the instances' triangles placed in the world.
#[test]
fn scene_casts_meet_the_convex_oracle_under_any_transform() {
    use glam::{Affine3A, Quat};
    use slabtree::Scene;
    use std::sync::Arc;
    let mut r = Rng(8);
    let sources: Vec<Arc<MeshBvh>> = meshes()
        .into_iter()
        .skip(1)
        .map(|(_, m, _, _)| Arc::new(MeshBvh::build(&m, &BuildOptions::default())))
        .collect();
    let mut scene = Scene::new();
    // The merged world triangles, and where each instance's start.
    let (mut pos, mut tris, mut start) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..12 {
        let axis = (r.unit3() - Vec3::splat(0.5)).normalize_or(Vec3::Y);
        let scale = Vec3::new(0.5 + r.unit() * 1.5, 0.5 + r.unit() * 1.5, 0.5 + r.unit() * 1.5);
        let mut xf = Affine3A::from_scale_rotation_translation(
            scale,
            Quat::from_axis_angle(axis, r.unit() * 6.0),
            (r.unit3() - Vec3::splat(0.5)) * 30.0,
        );
        if i % 3 == 0 {
            xf *= Affine3A::from_cols_array(&[1.0, 0.3, 0.0, 0.0, 1.0, 0.2, 0.1, 0.0, 1.0, 0.0, 0.0, 0.0]);
        }
        let mesh = &sources[i % sources.len()];
        let id = scene.add(mesh.clone(), xf, i as u64, Scene::ALL).unwrap();
        start.push((id, tris.len() as u32));
        let base = pos.len() as u32;
        pos.extend(mesh.mesh().positions().iter().map(|&p| xf.transform_point3(p)));
        tris.extend(mesh.mesh().triangles().iter().map(|t| t.map(|v| v + base)));
    }
    let world = TriMesh::new(pos, tris).unwrap();
    let merged = |h: slabtree::SceneShapeCastHit| {
        let off = start.iter().find(|s| s.0 == h.instance).unwrap().1;
        ShapeCastHit { t: h.t, triangle: off + h.triangle, point: h.point, normal: h.normal }
    };
    let mut hits = 0;
    for k in 0..110 {
        let a = (r.unit3() - Vec3::splat(0.5)) * 30.0;
        let d = (r.unit3() - Vec3::splat(0.5)) * 40.0;
        let radius = [0.1f32, 0.8, 2.0][k % 3];
        let b = if k % 2 == 0 { a } else { a + (r.unit3() - Vec3::splat(0.5)) * 4.0 };
        let got = if a == b {
            scene.cast_sphere(a, radius, d, Scene::ALL).unwrap()
        } else {
            scene.cast_capsule(a, b, radius, d, Scene::ALL).unwrap()
        };
        let shape = Shape { p0: a.as_dvec3(), p1: b.as_dvec3(), r: f64::from(radius), d: d.as_dvec3() };
        hits += usize::from(check(&world, &shape, got.map(merged), &format!("scene cast {k}")));
    }
    assert!(hits > 35, "{hits}");
}
