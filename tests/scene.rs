//! The two-level scene against brute force over all instances and all triangles, after random
//! sequences of add, remove, set_transform and batched moves: pick, occluded, visible, overlap,
//! cast_box, masks, streams (equal to single rays exactly) and bad input.

use std::sync::Arc;

use glam::{Affine3A, DVec3, Mat4, Quat, Vec3, Vec3A};
use slabtree::{
    Aabb, BatchOptions, BuildOptions, BuildQuality, DbvtConfig, Frustum, HitControl, InputError, InstanceId, MeshBvh,
    Ray, RayTree, Scene, SceneError, SceneHitCandidate, Threads, TriMesh,
};

use common::rng::{Rng, triangle_soup};
use common::triangle::{clip_meets, triangle_distance};
use slabtree_testkit as common;

fn meshes(rng: &mut Rng) -> Vec<Arc<MeshBvh>> {
    let o = BuildOptions::default();
    vec![
        Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 12, 6), &o)),
        Arc::new(MeshBvh::build(&triangle_soup(rng, 40, 1.0, 0.4), &o)),
        Arc::new(MeshBvh::build(
            &TriMesh::uv_sphere(0.7, 6, 3),
            &BuildOptions { triangle_test: slabtree::TriangleTest::Watertight, ..o },
        )),
    ]
}

fn random_transform(rng: &mut Rng, spread: f32) -> Affine3A {
    let axis = rng.vec(-1.0, 1.0).normalize_or(Vec3::Y);
    let rot = Quat::from_axis_angle(axis, rng.range(0.0, 6.0));
    let scale = if rng.below(3) == 0 { Vec3::splat(rng.range(0.5, 2.0)) } else { rng.vec(0.4, 2.0) };
    let mut a = Affine3A::from_scale_rotation_translation(scale, rot, rng.vec(-spread, spread));
    if rng.below(4) == 0 {
        // A shear, so instance space is not merely rotated and scaled.
        a *= Affine3A::from_cols_array(&[1.0, 0.3, 0.0, 0.0, 1.0, 0.2, 0.1, 0.0, 1.0, 0.0, 0.0, 0.0]);
    }
    a
}

/// The model: every live instance with its mesh, transform, user id and mask.
#[derive(Clone)]
struct Model {
    id: InstanceId,
    mesh: usize,
    xf: Affine3A,
    user: u64,
    mask: u32,
}

/// f64 Möller–Trumbore in world space on the transformed triangle.
fn ray_tri(o: [f64; 3], d: [f64; 3], tri: [[f64; 3]; 3]) -> Option<f64> {
    ray_tri_slack(o, d, tri, 1e-9)
}

/// [`ray_tri`] with the barycentric tests loosened by `slack` (tightened when negative).
fn ray_tri_slack(o: [f64; 3], d: [f64; 3], tri: [[f64; 3]; 3], slack: f64) -> Option<f64> {
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let cross =
        |a: [f64; 3], b: [f64; 3]| [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let e1 = sub(tri[1], tri[0]);
    let e2 = sub(tri[2], tri[0]);
    let p = cross(d, e2);
    let det = dot(e1, p);
    if det.abs() < 1e-300 {
        return None;
    }
    let s = sub(o, tri[0]);
    let u = dot(s, p) / det;
    let q = cross(s, e1);
    let v = dot(d, q) / det;
    if u < -slack || v < -slack || u + v > 1.0 + slack {
        return None;
    }
    Some(dot(e2, q) / det)
}

fn world_tris(meshes: &[Arc<MeshBvh>], m: &Model) -> Vec<[Vec3; 3]> {
    let mesh = meshes[m.mesh].mesh();
    (0..mesh.len()).map(|i| mesh.triangle(i).map(|v| m.xf.transform_point3(v))).collect()
}

/// Brute force: every (instance, triangle, t) the ray crosses within its range, with the
/// barycentric tests loosened by `slack` (tightened when negative) and the range's ends by the
/// relative `end_slack`.
fn brute_all(
    meshes: &[Arc<MeshBvh>],
    model: &[Model],
    ray: &Ray,
    mask: u32,
    slack: f64,
    end_slack: f64,
) -> Vec<(InstanceId, u32, f64)> {
    let o = ray.origin().to_array().map(|x| x as f64);
    let d = ray.dir().to_array().map(|x| x as f64);
    let mut all = Vec::new();
    for m in model.iter().filter(|m| m.mask & mask != 0) {
        for (i, tri) in world_tris(meshes, m).iter().enumerate() {
            if let Some(t) = ray_tri_slack(o, d, tri.map(|v| v.to_array().map(|x| x as f64)), slack)
                && t >= ray.tmin as f64 - end_slack * (1.0 + t.abs())
                && t <= ray.tmax as f64 + end_slack * (1.0 + t.abs())
            {
                all.push((m.id, i as u32, t));
            }
        }
    }
    all
}

/// The policy queries against brute force and against the fixed queries: all hits are the
/// brute-force set (up to rounding at edges and range ends), a policy that accepts everything is
/// `intersect` and `occluded` exactly, and one that ignores odd user ids finds the nearest hit on
/// the others.
fn check_policies(scene: &Scene, meshes: &[Arc<MeshBvh>], model: &[Model], ray: &Ray, mask: u32) -> usize {
    let mut all = Vec::new();
    scene.intersect_all(ray, mask, &mut all).unwrap();
    assert!(
        all.windows(2)
            .all(|w| (w[0].t, w[0].instance.index(), w[0].triangle) < (w[1].t, w[1].instance.index(), w[1].triangle)),
        "all hits out of order or repeated"
    );
    let must = brute_all(meshes, model, ray, mask, -1e-5, -1e-4);
    let may = brute_all(meshes, model, ray, mask, 1e-5, 1e-4);
    for (id, tri, t) in &must {
        let h = all.iter().find(|h| (h.instance, h.triangle) == (*id, *tri));
        let h = h.unwrap_or_else(|| panic!("all hits miss {id:?} triangle {tri} at {t} on {ray:?}"));
        assert!((h.t as f64 - t).abs() <= 1e-4 * (1.0 + t.abs()), "t {} vs {t}", h.t);
    }
    for h in &all {
        assert!(may.iter().any(|m| (m.0, m.1) == (h.instance, h.triangle)), "all hits has a miss: {h:?}");
    }
    let accept = |_: &SceneHitCandidate| HitControl::Accept;
    assert_eq!(scene.intersect_with(ray, mask, &mut accept.clone()).unwrap(), scene.intersect(ray, mask).unwrap());
    assert_eq!(scene.occluded_with(ray, mask, &mut accept.clone()).unwrap(), scene.occluded(ray, mask).unwrap());
    // Odd user ids are glass.
    let user = |id: InstanceId| model.iter().find(|m| m.id == id).unwrap().user;
    let mut clear = |c: &SceneHitCandidate| {
        assert_eq!(c.user_id, user(c.instance));
        if c.user_id % 2 == 1 { HitControl::Ignore } else { HitControl::Accept }
    };
    let got = scene.intersect_with(ray, mask, &mut clear).unwrap();
    let near = |hits: &[(InstanceId, u32, f64)]| {
        hits.iter().filter(|h| user(h.0) % 2 == 0).map(|h| h.2).fold(f64::INFINITY, f64::min)
    };
    let (lo, hi) = (near(&may), near(&must));
    match got {
        Some(g) => {
            assert_eq!(g.user_id % 2, 0);
            let t = g.t as f64;
            assert!(t >= lo - 1e-4 * (1.0 + lo.abs()) && t <= hi + 1e-4 * (1.0 + hi.abs()), "{t} not in [{lo}, {hi}]");
        }
        None => assert!(hi.is_infinite(), "the filtered pick missed a hit at {hi}"),
    }
    assert_eq!(scene.occluded_with(ray, mask, &mut clear).unwrap(), got.is_some());
    // A stop ends the query at its candidate: the policy is not called again.
    let (mut calls, mut first) = (0, None);
    let stopped = scene
        .intersect_with(ray, mask, &mut |c: &SceneHitCandidate| {
            calls += 1;
            first = Some((c.instance, c.triangle));
            HitControl::Stop
        })
        .unwrap();
    assert_eq!(calls, usize::from(!all.is_empty() || stopped.is_some()));
    assert_eq!(stopped.map(|h| (h.instance, h.triangle)), first);
    all.len()
}

/// The world triangles of an instance in f64, from its transform in f64.
fn world_tris64(meshes: &[Arc<MeshBvh>], m: &Model) -> Vec<[DVec3; 3]> {
    let mesh = meshes[m.mesh].mesh();
    let xf = glam::DAffine3::from_mat4(Mat4::from(m.xf).as_dmat4());
    (0..mesh.len()).map(|i| mesh.triangle(i).map(|v| xf.transform_point3(v.as_dvec3()))).collect()
}

/// The proximity queries against brute force over every world triangle in f64: the nearest point
/// (f64 distances to the face or nearest edge), and the triangles in a box (f64 clipping) or a
/// sphere (f64 distance), each required when clearly in and refused when clearly out.
fn check_proximity(rng: &mut Rng, scene: &Scene, meshes: &[Arc<MeshBvh>], model: &[Model]) -> usize {
    let mut compared = 0;
    let tris: Vec<(InstanceId, u32, u64, Vec<[DVec3; 3]>)> =
        model.iter().map(|m| (m.id, m.mask, m.user, world_tris64(meshes, m))).collect();
    for k in 0..12 {
        let mask = [u32::MAX, 1, 2][k % 3];
        let p = rng.vec(-15.0, 15.0) * if k % 4 == 0 { 3.0 } else { 1.0 };
        let near = scene.closest_point(p, f32::INFINITY, mask).unwrap();
        let p64 = p.as_dvec3();
        let brute = tris
            .iter()
            .filter(|t| t.1 & mask != 0)
            .flat_map(|t| t.3.iter().map(move |tri| triangle_distance(p64, *tri)))
            .fold(f64::INFINITY, f64::min);
        match near {
            None => assert!(brute.is_infinite(), "closest point missed a triangle at {brute}"),
            Some(c) => {
                compared += 1;
                let tol = 1e-4 * (1.0 + brute);
                assert!((c.distance as f64 - brute).abs() <= tol, "distance {} vs {brute}", c.distance);
                let (_, _, user, inst_tris) = tris.iter().find(|t| t.0 == c.instance).unwrap();
                assert_eq!(c.user_id, *user);
                // The point lies on the reported triangle, at the reported distance.
                let on = triangle_distance(c.point.as_dvec3(), inst_tris[c.triangle as usize]);
                assert!(on <= tol, "the point is {on} off its triangle");
                assert!(((c.point - p).length() - c.distance).abs() <= 1e-5 * (1.0 + c.distance));
                // A limit below the distance finds nothing; one above finds the same distance.
                if brute > 1e-2 {
                    assert_eq!(scene.closest_point(p, (brute * 0.99) as f32, mask).unwrap(), None);
                    let again = scene.closest_point(p, (brute * 1.01) as f32, mask).unwrap().unwrap();
                    assert!((again.distance - c.distance).abs() <= 1e-6 * (1.0 + c.distance));
                }
            }
        }
        // Triangles in a box and in a sphere around a point near the instances.
        let c = rng.vec(-12.0, 12.0);
        let h = rng.vec(0.2, 3.0);
        let b = Aabb::from_center_half_extents(Vec3A::from(c), Vec3A::from(h));
        let r = rng.range(0.2, 4.0);
        let (mut in_box, mut in_sphere) = (Vec::new(), Vec::new());
        scene.triangles_in_box(&b, mask, &mut in_box).unwrap();
        scene.triangles_in_sphere(c, r, mask, &mut in_sphere).unwrap();
        for found in [&mut in_box, &mut in_sphere] {
            found.sort_unstable();
            assert!(found.windows(2).all(|w| w[0] != w[1]), "a triangle reported twice");
        }
        let eps = 1e-4;
        let (lo, hi) = (b.min.as_dvec3(), b.max.as_dvec3());
        for (id, m, _, inst_tris) in &tris {
            for (i, tri) in inst_tris.iter().enumerate() {
                let key = (*id, i as u32);
                let (listed_box, listed_sphere) =
                    (in_box.binary_search(&key).is_ok(), in_sphere.binary_search(&key).is_ok());
                if m & mask == 0 {
                    assert!(!listed_box && !listed_sphere, "a masked instance's triangle was reported");
                    continue;
                }
                if clip_meets(*tri, lo + eps, hi - eps) {
                    assert!(listed_box, "triangle {key:?} meets the box but was not reported");
                }
                if !clip_meets(*tri, lo - eps, hi + eps) {
                    assert!(!listed_box, "triangle {key:?} misses the box but was reported");
                }
                let d = triangle_distance(c.as_dvec3(), *tri);
                if d <= r as f64 - eps {
                    assert!(listed_sphere, "triangle {key:?} is in the sphere but was not reported");
                }
                if d > r as f64 + eps {
                    assert!(!listed_sphere, "triangle {key:?} is outside the sphere but was reported");
                }
            }
        }
        compared += in_box.len() + in_sphere.len();
    }
    compared
}

/// Brute-force closest hit: (t, instance, triangle).
fn brute_pick(meshes: &[Arc<MeshBvh>], model: &[Model], ray: &Ray, mask: u32) -> Option<(f64, InstanceId, u32)> {
    let o = ray.origin().to_array().map(|x| x as f64);
    let d = ray.dir().to_array().map(|x| x as f64);
    let mut best: Option<(f64, InstanceId, u32)> = None;
    for m in model.iter().filter(|m| m.mask & mask != 0) {
        for (i, tri) in world_tris(meshes, m).iter().enumerate() {
            if let Some(t) = ray_tri(o, d, tri.map(|v| v.to_array().map(|x| x as f64)))
                && t >= ray.tmin as f64
                && t <= ray.tmax as f64
                && best.is_none_or(|b| t < b.0)
            {
                best = Some((t, m.id, i as u32));
            }
        }
    }
    best
}

fn check_queries(rng: &mut Rng, scene: &Scene, meshes: &[Arc<MeshBvh>], model: &[Model]) -> [usize; 4] {
    let mut seen = [0usize; 4];
    scene.validate().unwrap();
    assert_eq!(scene.len(), model.len());
    for m in model {
        let inst = scene.get(m.id).unwrap();
        assert_eq!((inst.user_id(), inst.mask()), (m.user, m.mask));
    }
    // Pick and occluded, with and without masks; streams equal single rays exactly.
    let mut rays = Vec::new();
    for i in 0..64 {
        let target = rng.vec(-12.0, 12.0);
        let o = if i < 32 { Vec3::new(0.0, 0.0, 30.0) } else { rng.vec(-25.0, 25.0) };
        let mut ray = Ray::new(Vec3A::from(o), Vec3A::from((target - o) * rng.range(0.2, 3.0)));
        if i % 5 == 0 {
            ray = ray.with_range(0.0, rng.range(0.3, 1.2));
        }
        rays.push(ray);
    }
    for mask in [u32::MAX, 1, 2] {
        for ray in &rays {
            let got = scene.intersect(ray, mask).unwrap();
            let want = brute_pick(meshes, model, ray, mask);
            match (got, want) {
                (None, None) => {}
                (Some(g), Some(w)) => {
                    seen[0] += 1;
                    let tol = 1e-4 * (1.0 + w.0.abs());
                    assert!((g.t as f64 - w.0).abs() <= tol, "t {} vs {}", g.t, w.0);
                    if (g.instance, g.triangle) != (w.1, w.2) {
                        // Only a tie within rounding may pick another triangle.
                        let gm = model.iter().find(|m| m.id == g.instance).unwrap();
                        let tri = world_tris(meshes, gm)[g.triangle as usize];
                        let o = ray.origin().to_array().map(|x| x as f64);
                        let d = ray.dir().to_array().map(|x| x as f64);
                        let tg = ray_tri(o, d, tri.map(|v| v.to_array().map(|x| x as f64)));
                        assert!(tg.is_some_and(|t| (t - w.0).abs() <= tol), "other triangle, not a tie");
                    }
                    assert_eq!(g.user_id, model.iter().find(|m| m.id == g.instance).unwrap().user);
                    assert!((g.normal.length() - 1.0).abs() < 1e-4);
                    // The world normal is perpendicular to the world triangle.
                    let gm = model.iter().find(|m| m.id == g.instance).unwrap();
                    let tri = world_tris(meshes, gm)[g.triangle as usize];
                    let n = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize();
                    assert!(n.dot(g.normal) > 0.999, "normal {} vs {}", g.normal, n);
                }
                (g, w) => {
                    // Grazing hits at a range end or an edge may differ by rounding only.
                    let t = g.map(|g| g.t as f64).or(w.map(|w| w.0)).unwrap();
                    let near_end = (t - ray.tmax as f64).abs() < 1e-4 * (1.0 + t.abs());
                    assert!(near_end || g.is_none(), "pick {g:?} vs brute {w:?} for {ray:?}");
                }
            }
            let occ = scene.occluded(ray, mask).unwrap();
            if let Some(w) = want
                && (w.0 - ray.tmax as f64).abs() > 1e-4 * (1.0 + w.0.abs())
            {
                assert!(occ, "occluded missed a hit at {}", w.0);
            }
            if want.is_none() {
                assert!(!occ || got.is_some(), "occluded without any hit");
            }
            seen[3] += check_policies(scene, meshes, model, ray, mask);
        }
        seen[3] += check_proximity(rng, scene, meshes, model);
        let single_hits: Vec<_> = rays.iter().map(|r| scene.intersect(r, mask).unwrap()).collect();
        let single_occluded: Vec<_> = rays.iter().map(|r| scene.occluded(r, mask).unwrap()).collect();
        assert_eq!(
            {
                let mut out = Vec::new();
                scene
                    .intersect_batch(&rays, mask, &mut out, BatchOptions { packets: false, ..Default::default() })
                    .map(|_| out)
            }
            .unwrap(),
            single_hits
        );
        assert_eq!(
            {
                let mut out = Vec::new();
                scene
                    .occluded_batch(&rays, mask, &mut out, BatchOptions { packets: false, ..Default::default() })
                    .map(|_| out)
            }
            .unwrap(),
            single_occluded
        );
        // Into vectors that held more, and fewer, answers before.
        let (mut batch_hits, mut batch_occluded) = (vec![None; rays.len() + 5], vec![true; 2]);
        scene
            .intersect_batch(&rays, mask, &mut batch_hits, BatchOptions { packets: false, ..Default::default() })
            .unwrap();
        scene
            .occluded_batch(&rays, mask, &mut batch_occluded, BatchOptions { packets: false, ..Default::default() })
            .unwrap();
        assert!(batch_hits == single_hits && batch_occluded == single_occluded);
        // Streams of these rays and of a camera's rays in scan-line order (packets inside each
        // instance) equal single rays exactly.
        let eye = rng.vec(-20.0, 20.0);
        let to = rng.vec(-5.0, 5.0) - eye;
        let (right, up) = (to.cross(Vec3::Y).normalize_or(Vec3::X), to.cross(Vec3::X).normalize_or(Vec3::Y));
        let camera = (0..48 * 40).map(|i| {
            let (x, y) = ((i % 48) as f32 / 24.0 - 1.0, (i / 48) as f32 / 20.0 - 1.0);
            Ray::new(eye, to + (right * x + up * y) * to.length() * 0.4)
        });
        let stream: Vec<Ray> = rays.iter().copied().chain(camera).collect();
        let (mut hits, mut occluded) = (Vec::new(), Vec::new());
        scene
            .intersect_batch(
                &stream,
                mask,
                &mut hits,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        scene
            .occluded_batch(
                &stream,
                mask,
                &mut occluded,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        for (i, ray) in stream.iter().enumerate() {
            assert_eq!(hits[i], scene.intersect(ray, mask).unwrap(), "stream ray {i}");
            assert_eq!(occluded[i], scene.occluded(ray, mask).unwrap(), "stream ray {i}");
        }
    }
    // Visible: every instance whose world box passes the planes is reported (conservative).
    let eye = rng.vec(-20.0, 20.0);
    let view = glam::camera::rh::view::look_at_mat4(eye, rng.vec(-5.0, 5.0), Vec3::Y);
    let frustum = Frustum::from_view_projection(
        glam::camera::rh::proj::directx::perspective(rng.range(0.5, 1.5), 1.3, 0.5, 40.0) * view,
    );
    let vis: Vec<InstanceId> = scene.visible(&frustum, slabtree::Scene::ALL).unwrap().collect();
    seen[2] += vis.len();
    // The caller's-vector form gives the same instances (perhaps in another order: this second
    // query may scan where the first walked the tree), replacing what the vector held.
    let mut into: Vec<InstanceId> = scene.iter().map(|(id, _)| id).take(3).collect();
    scene.visible_into(&frustum, u32::MAX, &mut into).unwrap();
    into.sort();
    let mut sorted_vis = vis.clone();
    sorted_vis.sort();
    assert_eq!(into, sorted_vis);
    let mut dedup = sorted_vis;
    dedup.dedup();
    assert_eq!(dedup.len(), vis.len());
    for m in model {
        let world = scene.get(m.id).unwrap().world_aabb();
        if frustum.may_contain(&world) {
            assert!(vis.contains(&m.id), "visible missed an instance");
        }
    }
    for id in &vis {
        assert!(scene.contains(*id));
        let fat = scene.get(*id).unwrap().world_aabb().expand(20.0);
        assert!(frustum.may_contain(&fat));
    }
    // Overlap: exactly the instances whose tight world box overlaps.
    for _ in 0..8 {
        let q = Aabb::from_center_half_extents(rng.vec(-12.0, 12.0), rng.vec(0.5, 4.0));
        let mut got = scene.overlap(&q, slabtree::Scene::ALL).unwrap();
        got.sort();
        let mut want: Vec<InstanceId> =
            model.iter().filter(|m| scene.get(m.id).unwrap().world_aabb().overlaps(&q)).map(|m| m.id).collect();
        want.sort();
        assert_eq!(got, want);
        // The world box contains every transformed vertex.
        for m in model {
            let b = scene.get(m.id).unwrap().world_aabb();
            for tri in world_tris(meshes, m) {
                for v in tri {
                    assert!(b.contains_point(v.into()), "world box misses a vertex");
                }
            }
        }
    }
    // Sweep: against MeshBvh::cast_box on all world-space triangles merged into one mesh.
    let mut pos = Vec::new();
    let mut tris = Vec::new();
    let mut owner = Vec::new();
    for m in model {
        for (i, tri) in world_tris(meshes, m).into_iter().enumerate() {
            let b = pos.len() as u32;
            pos.extend(tri);
            tris.push([b, b + 1, b + 2]);
            owner.push((m.id, i as u32));
        }
    }
    let merged = MeshBvh::build(&TriMesh::new(pos, tris).unwrap(), &BuildOptions::default());
    for _ in 0..24 {
        let b = Aabb::from_center_half_extents(rng.vec(-14.0, 14.0), rng.vec(0.05, 1.0));
        let d = Vec3A::from(rng.vec(-10.0, 10.0));
        let got = scene.cast_box(&b, d, Scene::ALL).unwrap();
        let want = merged.cast_box(&b, d).unwrap();
        match (got, want) {
            (None, None) => {}
            (Some(g), Some(w)) => {
                seen[1] += 1;
                assert!((g.t - w.t).abs() <= 1e-3, "sweep t {} vs {}", g.t, w.t);
                assert!((g.normal.length() - 1.0).abs() < 1e-3 || g.t == 0.0);
                if owner[w.triangle as usize] == (g.instance, g.triangle) && g.t > 0.0 && w.t > 0.0 {
                    // Same triangle, same contact: same normal (unless an edge or corner contact
                    // is chosen differently among equal axes).
                    let dot = g.normal.dot(w.normal);
                    assert!(dot > 0.0, "normal {} vs {}", g.normal, w.normal);
                }
            }
            (g, w) => {
                let t = g.map(|g| g.t).or(w.map(|w| w.t)).unwrap();
                assert!(t > 0.999, "sweep {g:?} vs {w:?} for {b:?} {d}");
            }
        }
    }
    seen
}

/// The wide copy of the instance tree lives from one query to the next until the tree changes.
/// Here a copy is made just before each kind of change, and every query after it must still
/// equal brute force: a move or removal that kept a stale copy would answer for boxes no longer
/// there (each of those is checked to fail this test).
#[test]
fn the_wide_copy_follows_every_change() {
    let mut rng = Rng(99);
    let meshes = meshes(&mut rng);
    // Whole binned rebuilds, so that `optimize` always makes a new structure here (a refresh
    // would wait for the tree to age).
    let mut scene = Scene::with_config(DbvtConfig { whole_rebuild_max: 2048, ..DbvtConfig::default() });
    scene.set_ray_tree(RayTree::Wide);
    let mut model: Vec<Model> = Vec::new();
    let add = |rng: &mut Rng, scene: &mut Scene, model: &mut Vec<Model>, user: u64| {
        let mesh = rng.below(meshes.len());
        let xf = random_transform(rng, 10.0);
        let mask = 1 << rng.below(2);
        let id = scene.add(meshes[mesh].clone(), xf, user, mask).unwrap();
        model.push(Model { id, mesh, xf, user, mask });
    };
    for user in 0..30 {
        add(&mut rng, &mut scene, &mut model, user);
    }
    for change in 0..8 {
        check_queries(&mut rng, &scene, &meshes, &model);
        let k = rng.below(model.len());
        match change {
            0 => {
                let moves: Vec<_> = model
                    .iter_mut()
                    .map(|m| {
                        m.xf = Affine3A::from_translation(Vec3::new(3.0, -2.0, 1.0)) * m.xf;
                        (m.id, m.xf)
                    })
                    .collect();
                assert!(scene.set_transforms(&moves).unwrap() > 0);
            }
            1 => {
                for m in model.iter_mut().step_by(3) {
                    m.xf = random_transform(&mut rng, 10.0);
                    scene.set_transform(m.id, m.xf).unwrap();
                }
            }
            2 => {
                // Inside the fat box: the tree, and so the copy, stays as it was. (The first
                // nudge may refit a fat box that the earlier moves' prediction stretched.)
                for nudge in 0..2 {
                    model[k].xf = Affine3A::from_translation(Vec3::splat(0.01)) * model[k].xf;
                    let reinserted = scene.set_transform(model[k].id, model[k].xf).unwrap();
                    assert!(nudge == 0 || !reinserted);
                    if nudge == 0 {
                        check_queries(&mut rng, &scene, &meshes, &model);
                    }
                }
            }
            3 => add(&mut rng, &mut scene, &mut model, 100),
            4 => {
                let m = model.swap_remove(k);
                scene.remove(m.id).unwrap();
            }
            // The same fat boxes in a new structure: a kept copy would still answer right, only
            // slower; these check that the new structure does.
            5 => assert!(scene.optimize(1000) > 0),
            6 => scene.rebuild(),
            _ => {
                model[k].mask ^= 3;
                scene.set_mask(model[k].id, model[k].mask).unwrap();
            }
        }
        check_queries(&mut rng, &scene, &meshes, &model);
    }
}

/// Batched moves of a rebuilt (pre-ordered) tree write their new boxes into the wide copy during
/// the refit instead of setting the copy aside (`Dbvt::refit_mirrored`): every query after each
/// batch must still equal brute force (dropping one child slot's write fails this test).
#[test]
fn batched_moves_keep_the_wide_copy_in_step() {
    let mut rng = Rng(7);
    let meshes = meshes(&mut rng);
    let mut scene = Scene::new();
    scene.set_ray_tree(RayTree::Wide);
    let mut model: Vec<Model> = (0..80)
        .map(|user| {
            let mesh = rng.below(meshes.len());
            let xf = random_transform(&mut rng, 12.0);
            let id = scene.add(meshes[mesh].clone(), xf, user, slabtree::Scene::ALL).unwrap();
            Model { id, mesh, xf, user, mask: u32::MAX }
        })
        .collect();
    scene.rebuild();
    for round in 0..6 {
        check_queries(&mut rng, &scene, &meshes, &model);
        let step = Vec3::new(1.5, -1.0, 0.5) * if round % 2 == 0 { 1.0 } else { -2.0 };
        let moves: Vec<_> = model
            .iter_mut()
            .skip(round % 3)
            .step_by(3)
            .map(|m| {
                m.xf = Affine3A::from_translation(step) * m.xf;
                (m.id, m.xf)
            })
            .collect();
        assert!(scene.set_transforms(&moves).unwrap() > 0);
    }
    check_queries(&mut rng, &scene, &meshes, &model);
}

#[test]
fn random_operations_against_brute_force() {
    let mut seen = [0usize; 4];
    for seed in 0..6u64 {
        let mut rng = Rng(seed * 7919 + 1);
        let meshes = meshes(&mut rng);
        let mut scene = Scene::new();
        let kept = [RayTree::Auto, RayTree::Binary, RayTree::Wide][seed as usize % 3];
        scene.set_ray_tree(kept);
        let mut model: Vec<Model> = Vec::new();
        let mut user = 0u64;
        for step in 0..60 {
            match rng.below(6) {
                0 | 1 if model.len() < 40 => {
                    let mesh = rng.below(meshes.len());
                    let xf = random_transform(&mut rng, 10.0);
                    let mask = 1 << rng.below(2);
                    user += 1;
                    let id = scene.add(meshes[mesh].clone(), xf, user, mask).unwrap();
                    model.push(Model { id, mesh, xf, user, mask });
                }
                2 if !model.is_empty() => {
                    let k = rng.below(model.len());
                    let m = model.swap_remove(k);
                    assert_eq!(scene.remove(m.id).unwrap(), m.user);
                    assert_eq!(scene.remove(m.id), Err(SceneError::StaleInstance(m.id)));
                    assert!(scene.get(m.id).is_err());
                }
                3 if !model.is_empty() => {
                    // A small move (inside the fat box) or a teleport.
                    let k = rng.below(model.len());
                    let xf = if rng.below(2) == 0 {
                        Affine3A::from_translation(rng.vec(-0.03, 0.03)) * model[k].xf
                    } else {
                        random_transform(&mut rng, 10.0)
                    };
                    scene.set_transform(model[k].id, xf).unwrap();
                    model[k].xf = xf;
                }
                4 if !model.is_empty() => {
                    let mut moves = Vec::new();
                    for m in model.iter_mut() {
                        if rng.below(3) == 0 {
                            m.xf = Affine3A::from_translation(rng.vec(-1.0, 1.0)) * m.xf;
                            moves.push((m.id, m.xf));
                        }
                    }
                    scene.set_transforms(&moves).unwrap();
                    if rng.below(2) == 0 {
                        scene.optimize(8);
                    }
                }
                _ => {}
            }
            if step % 6 == 5 {
                // Every query on each form of the instance tree rays may walk. The seed's own
                // setting comes first and last, so the wide copy its last check makes lives on
                // into the next operations (the_wide_copy_follows_every_change targets that).
                for ray_tree in [kept, RayTree::Binary, RayTree::Wide, RayTree::Auto, kept] {
                    scene.set_ray_tree(ray_tree);
                    let s = check_queries(&mut rng, &scene, &meshes, &model);
                    (0..4).for_each(|i| seen[i] += s[i]);
                }
            }
        }
        let s = check_queries(&mut rng, &scene, &meshes, &model);
        (0..4).for_each(|i| seen[i] += s[i]);
    }
    // The checks above compared real answers, not only misses.
    assert!(seen[0] > 200 && seen[1] > 40 && seen[2] > 50 && seen[3] > 500, "{seen:?}");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let mut rng = Rng(99);
    let meshes = meshes(&mut rng);
    let mut scene = Scene::new();
    let id = scene.add(meshes[0].clone(), Affine3A::IDENTITY, 1, slabtree::Scene::ALL).unwrap();
    let world = scene.get(id).unwrap().world_aabb();
    // A valid move before the bad one in a batch: it must not be applied either.
    let away = Affine3A::from_translation(Vec3::new(50.0, 0.0, 0.0));
    for bad in [
        Affine3A::from_translation(Vec3::new(f32::NAN, 0.0, 0.0)),
        Affine3A::from_scale(Vec3::new(1.0, f32::INFINITY, 1.0)),
        Affine3A::from_scale(Vec3::new(1.0, 0.0, 1.0)),
    ] {
        assert_eq!(
            scene.add(meshes[0].clone(), bad, 2, slabtree::Scene::ALL).err(),
            Some(SceneError::InvalidTransform)
        );
        assert_eq!(scene.set_transform(id, bad), Err(SceneError::InvalidTransform));
        assert_eq!(scene.set_transforms(&[(id, away), (id, bad)]), Err(SceneError::InvalidTransform));
    }
    assert_eq!(scene.len(), 1);
    assert_eq!(*scene.get(id).unwrap().transform(), Affine3A::IDENTITY);
    assert_eq!(scene.get(id).unwrap().world_aabb(), world);
    // The tree still holds the instance where it was: a ray through its box's centre picks it.
    let c = world.center();
    let ray = Ray::new(Vec3A::new(c.x, c.y, c.z - 100.0), Vec3A::Z);
    assert_eq!(scene.intersect(&ray, slabtree::Scene::ALL).unwrap().map(|p| p.instance), Some(id));
    let other = Scene::new();
    assert_eq!(other.get(id).err(), Some(SceneError::ForeignInstance(id)));
    assert!(matches!(
        scene.intersect(&Ray::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::X), slabtree::Scene::ALL),
        Err(InputError::NonFiniteRay { .. })
    ));
    assert!(matches!(
        scene.occluded(&Ray::new(Vec3A::ZERO, Vec3A::new(0.0, f32::INFINITY, 0.0)), slabtree::Scene::ALL),
        Err(InputError::NonFiniteRay { .. })
    ));
    assert!(matches!(
        scene.cast_box(&Aabb::new(Vec3A::ONE, Vec3A::ZERO), Vec3A::X, slabtree::Scene::ALL),
        Err(InputError::InvertedAabb { .. })
    ));
    assert!(scene.overlap(&Aabb::new(Vec3A::splat(f32::NAN), Vec3A::ONE), slabtree::Scene::ALL).is_err());
    let mut f = Frustum::from_view_projection(Mat4::IDENTITY);
    f.planes[2].d = f32::NAN;
    assert!(scene.visible(&f, slabtree::Scene::ALL).is_err());
    let e = SceneError::InvalidTransform;
    assert!(!e.to_string().is_empty());
    let _: &dyn std::error::Error = &e;
}

#[test]
fn masks_filter_shadow_rays() {
    let mut rng = Rng(5);
    let meshes = meshes(&mut rng);
    let mut scene = Scene::new();
    let near = scene.add(meshes[0].clone(), Affine3A::from_translation(Vec3::new(0.0, 0.0, -3.0)), 1, 0b01).unwrap();
    let far = scene.add(meshes[0].clone(), Affine3A::from_translation(Vec3::new(0.0, 0.0, -9.0)), 2, 0b10).unwrap();
    let ray = Ray::new(Vec3A::ZERO, -Vec3A::Z);
    assert_eq!(scene.intersect(&ray, slabtree::Scene::ALL).unwrap().unwrap().instance, near);
    assert_eq!(scene.intersect(&ray, 0b10).unwrap().unwrap().instance, far);
    assert!(scene.intersect(&ray, 0b100).unwrap().is_none());
    assert!(!scene.occluded(&ray.with_range(0.0, 5.0), 0b10).unwrap());
    assert!(scene.occluded(&ray.with_range(0.0, 5.0), 0b01).unwrap());
    scene.set_mask(near, 0).unwrap();
    assert_eq!(scene.intersect(&ray, slabtree::Scene::ALL).unwrap().unwrap().instance, far);
    // The sweep of a box falling onto a scaled, rotated floor.
    let floor = TriMesh::new(
        vec![Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 0.0, -1.0), Vec3::new(0.0, 0.0, 1.0)],
        vec![[0, 2, 1]],
    )
    .unwrap();
    let floor = Arc::new(MeshBvh::build(&floor, &BuildOptions::default()));
    let mut s2 = Scene::new();
    let xf = Affine3A::from_scale_rotation_translation(
        Vec3::new(10.0, 1.0, 10.0),
        Quat::from_rotation_y(0.7),
        Vec3::new(50.0, -1.0, 0.0),
    );
    let fid = s2.add(floor, xf, 3, slabtree::Scene::ALL).unwrap();
    let hit = s2
        .cast_box(
            &Aabb::from_center_half_extents(Vec3A::new(50.0, 2.0, 0.0), Vec3A::splat(0.5)),
            Vec3A::new(0.0, -4.0, 0.0),
            Scene::ALL,
        )
        .unwrap()
        .unwrap();
    assert_eq!(hit.instance, fid);
    assert!((hit.t - 0.625).abs() < 1e-5, "{}", hit.t);
    assert!(hit.normal.abs_diff_eq(Vec3::Y, 1e-5), "{}", hit.normal);
}

/// The frustum query scans every box when the last one saw a quarter of the scene or more, and
/// walks the tree otherwise: both must give the same instances, which must agree with a
/// brute-force test of the world boxes.
#[test]
fn frustum_culling_scans_or_walks_with_the_same_answer() {
    let mut rng = Rng(11);
    let meshes = meshes(&mut rng);
    let mut scene = Scene::new();
    let mut model: Vec<Model> = (0..300)
        .map(|user| {
            let mesh = rng.below(meshes.len());
            let xf = random_transform(&mut rng, 20.0);
            let mask = 1 << rng.below(3);
            let id = scene.add(meshes[mesh].clone(), xf, user, mask).unwrap();
            Model { id, mesh, xf, user, mask }
        })
        .collect();
    // Free slots keep their last boxes in the tree's proxy table: the scan must skip them.
    for _ in 0..40 {
        let m = model.swap_remove(rng.below(model.len()));
        scene.remove(m.id).unwrap();
    }
    let frustum = |fov: f32| {
        let view = glam::camera::rh::view::look_at_mat4(Vec3::new(0.0, 0.0, 60.0), Vec3::ZERO, Vec3::Y);
        Frustum::from_view_projection(glam::camera::rh::proj::directx::perspective(fov, 1.0, 0.5, 200.0) * view)
    };
    let (wide, narrow) = (frustum(1.2), frustum(0.05));
    let sorted = |mut v: Vec<InstanceId>| {
        v.sort();
        v
    };
    let query = |f: &Frustum, mask: u32| {
        let mut v = Vec::new();
        scene.visible_into(f, mask, &mut v).unwrap();
        sorted(v)
    };
    // The first answers walk (no count yet); their sizes tell which later answers scan.
    let (all_wide, all_narrow) = (query(&wide, u32::MAX).len(), query(&narrow, u32::MAX).len());
    assert!(all_wide * 4 >= model.len() && all_narrow * 4 < model.len(), "{all_wide} {all_narrow}");
    // Narrow, narrow: walks. Wide after narrow: walks; wide after wide: scans. Narrow after wide:
    // scans; then walks again. Each frustum is answered both ways, for every mask.
    for mask in [u32::MAX, 1, 2 | 4] {
        query(&narrow, mask);
        let narrow_walk = query(&narrow, mask);
        let wide_walk = query(&wide, mask);
        let wide_scan = query(&wide, mask);
        let narrow_scan = query(&narrow, mask);
        assert_eq!(wide_walk, wide_scan, "mask {mask:#x}");
        assert_eq!(narrow_walk, narrow_scan, "mask {mask:#x}");
        for (f, got) in [(&wide, &wide_scan), (&narrow, &narrow_scan)] {
            for m in &model {
                let world = scene.get(m.id).unwrap().world_aabb();
                let listed = got.contains(&m.id);
                if m.mask & mask == 0 {
                    assert!(!listed, "an instance outside the mask was listed");
                } else if f.may_contain(&world) {
                    assert!(listed, "a visible instance was missed");
                }
            }
        }
    }
}

/// A scene may hold meshes built at different qualities: instances of a `Low` and a `High` BVH
/// answer as instances of a `Medium` BVH of the same mesh do (the same distance; the same
/// triangle but for triangles tied at that distance), and the scene's box query reports each
/// triangle of a `High` instance once, though its leaves share triangles.
#[test]
fn meshes_of_different_build_qualities_answer_alike() {
    let mut rng = Rng(77);
    let mesh = triangle_soup(&mut rng, 3000, 3.0, 0.5);
    let at = |quality| Arc::new(MeshBvh::build(&mesh, &BuildOptions { quality, ..Default::default() }));
    let (low, medium, high) = (at(BuildQuality::Low), at(BuildQuality::Medium), at(BuildQuality::High));
    assert!(high.stats().references > mesh.len(), "the soup's High build shares no triangle");
    let (mut mixed, mut uniform) = (Scene::new(), Scene::new());
    for i in 0..12 {
        let place = random_transform(&mut rng, 20.0);
        let bvh = [&low, &medium, &high][i as usize % 3];
        mixed.add(bvh.clone(), place, i, Scene::ALL).unwrap();
        uniform.add(medium.clone(), place, i, Scene::ALL).unwrap();
    }
    for _ in 0..200 {
        let b = Aabb::from_center_half_extents(rng.in_cube(15.0), Vec3A::splat(2.0));
        let (mut a, mut u) = (Vec::new(), Vec::new());
        mixed.triangles_in_box(&b, Scene::ALL, &mut a).unwrap();
        uniform.triangles_in_box(&b, Scene::ALL, &mut u).unwrap();
        // The two scenes' ids differ in their scene; the slots are the same.
        let slots = |v: &[(InstanceId, u32)]| {
            let mut v: Vec<(u32, u32)> = v.iter().map(|&(id, t)| (id.index(), t)).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(slots(&a), slots(&u));
    }
    let mut hits = 0;
    for _ in 0..3000 {
        let origin = rng.on_sphere() * 40.0;
        let ray = Ray::new(origin, rng.in_cube(15.0) - origin);
        let (a, b) = (mixed.intersect(&ray, Scene::ALL).unwrap(), uniform.intersect(&ray, Scene::ALL).unwrap());
        assert_eq!(a.map(|h| (h.t.to_bits(), h.user_id)), b.map(|h| (h.t.to_bits(), h.user_id)));
        if let (Some(a), Some(b)) = (a, b)
            && a.triangle != b.triangle
        {
            let [p, q, r] = mesh.triangle(a.triangle as usize);
            let n = (q - p).cross(r - p);
            assert!(n.dot(Vec3::from(ray.origin()) + Vec3::from(ray.dir()) * b.t - p).abs() < 1e-3 * n.length());
        }
        hits += usize::from(a.is_some());
        assert_eq!(mixed.occluded(&ray, Scene::ALL).unwrap(), b.is_some());
    }
    assert!(hits > 300, "only {hits} rays hit");
}

/// Copies of one mesh in one place are hit at one distance: the scene reports the copy added
/// first (the lowest instance slot), whichever tree its rays walk (binary or 8-wide), through
/// single rays, policies, and batches with and without packets. The oracle is the copies' own
/// order; before the rule, the answer followed the walk's order, and so changed once the scene
/// made its 8-wide copy.
#[test]
fn copies_in_one_place_report_the_first_copy() {
    let mesh = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 24, 12), &BuildOptions::default()));
    let mut rng = Rng(11);
    let place = random_transform(&mut rng, 4.0);
    let rays: Vec<Ray> = (0..600)
        .map(|i| {
            let (x, y) = ((i % 30) as f32 / 15.0 - 1.0, (i / 30) as f32 / 10.0 - 1.0);
            let at = place.transform_point3(Vec3::ZERO);
            Ray::new(at + Vec3::new(0.3 * x, 0.3 * y, 6.0), Vec3::new(0.02 * x, 0.02 * y, -1.0))
        })
        .collect();
    for tree in [RayTree::Binary, RayTree::Wide] {
        let mut scene = Scene::new();
        let mut ids = Vec::new();
        // Other instances first, away from the rays, so that the copies' slots are not 0 and 1
        // and the walk's order among the leaves is not the slots' order.
        for k in 0..5 {
            let away = Affine3A::from_translation(Vec3::new(100.0 + 10.0 * k as f32, 0.0, 0.0));
            scene.add(mesh.clone(), away, 100 + k, Scene::ALL).unwrap();
        }
        for k in 0..4 {
            ids.push(scene.add(mesh.clone(), place, k, Scene::ALL).unwrap());
        }
        scene.set_ray_tree(tree);
        let first = ids[0];
        let mut hits = 0;
        for ray in &rays {
            let single = scene.intersect(ray, Scene::ALL).unwrap();
            let through_policy =
                scene.intersect_with(ray, Scene::ALL, &mut |_: &SceneHitCandidate| HitControl::Accept).unwrap();
            if let Some(h) = single {
                hits += 1;
                assert_eq!(h.instance, first, "{tree:?}: {ray:?}");
            }
            assert_eq!(through_policy.map(|h| (h.instance, h.t)), single.map(|h| (h.instance, h.t)), "{tree:?}");
        }
        assert!(hits > 100, "{hits} rays hit");
        for packets in [false, true] {
            let mut batch = Vec::new();
            let options = BatchOptions { threads: Threads::Calling, packets, ..Default::default() };
            scene.intersect_batch(&rays, Scene::ALL, &mut batch, options).unwrap();
            for (ray, h) in rays.iter().zip(&batch) {
                let single = scene.intersect(ray, Scene::ALL).unwrap();
                assert_eq!(
                    h.map(|h| (h.t, h.triangle)),
                    single.map(|h| (h.t, h.triangle)),
                    "{tree:?}, packets {packets}"
                );
                assert!(h.is_none_or(|h| h.instance == first), "{tree:?}, packets {packets}: {ray:?}");
            }
        }
    }
}
