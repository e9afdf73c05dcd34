//! The frame loop of `examples/picking.rs` on slabtree's `Scene` and on parry3d (its `Bvh` of
//! instance boxes, a `TriMesh` per mesh shared by its instances, a `Pose` per instance), one
//! thread, in one run.
//!
//! Each frame: 10% of the instances move (a rotating window; rigid motions, since parry's poses
//! have no scale), each library updates its tree (slabtree: `Scene::set_transforms`, i.e. O(1)
//! leaf updates and one refit, then `optimize(n/80)`; parry: `insert_or_update_partially` with
//! the same margin, `refit`, `optimize_incremental`), then 100 cursor rays pick the closest
//! triangle over all instances and one frustum query lists the instances whose box may be
//! visible (parry has no frustum query: `Bvh::leaves` with the same p-vertex plane test).
//! Answers are compared (hit count, sum of t); a difference prints `MISMATCH`.
//!
//! Usage: `scene_vs_parry [N ...]` (default 1000 10000 100000).

use std::sync::Arc;
use std::time::Instant;

use glam::{Affine3A, Mat4, Quat, Vec3, Vec3A};
use parry3d::bounding_volume::BoundingVolume;
use parry3d::math::{Pose, Vector};
use parry3d::partitioning::{Bvh, BvhWorkspace};
use parry3d::query::{Ray as PRay, RayCast};
use parry3d::shape::TriMesh as PTriMesh;
use slabtree::{Aabb, BuildOptions, Frustum, InstanceId, MeshBvh, Ray, Scene, TriMesh};

/// Frames per run: 30, or the `FRAMES` environment variable.
fn frames() -> usize {
    std::env::var("FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(30)
}
const MARGIN: f32 = 0.1;
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn range(&mut self, a: f32, b: f32) -> f32 {
        a + (b - a) * self.unit()
    }
}

fn sphere(n: u32, r: f32) -> TriMesh {
    let (mut p, mut t) = (Vec::new(), Vec::new());
    for i in 0..=n {
        for j in 0..=2 * n {
            let th = std::f32::consts::PI * i as f32 / n as f32;
            let ph = std::f32::consts::PI * j as f32 / n as f32;
            p.push(Vec3::new(th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()) * r);
        }
    }
    let w = 2 * n + 1;
    for i in 0..n {
        for j in 0..2 * n {
            let a = i * w + j;
            t.push([a, a + w, a + 1]);
            t.push([a + 1, a + w, a + w + 1]);
        }
    }
    TriMesh::new(p, t).unwrap()
}

fn torus(n: u32, m: u32, r0: f32, r1: f32) -> TriMesh {
    let (mut p, mut t) = (Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..m {
            let a = std::f32::consts::TAU * i as f32 / n as f32;
            let b = std::f32::consts::TAU * j as f32 / m as f32;
            p.push(Vec3::new((r0 + r1 * b.cos()) * a.cos(), r1 * b.sin(), (r0 + r1 * b.cos()) * a.sin()));
        }
    }
    for i in 0..n {
        for j in 0..m {
            let (i1, j1) = ((i + 1) % n, (j + 1) % m);
            t.push([i * m + j, i1 * m + j, i1 * m + j1]);
            t.push([i * m + j, i1 * m + j1, i * m + j1]);
        }
    }
    TriMesh::new(p, t).unwrap()
}

fn boxy() -> TriMesh {
    let p: Vec<Vec3> = (0..8)
        .map(|i| Vec3::new((i & 1) as f32 - 0.5, ((i >> 1) & 1) as f32 - 0.5, ((i >> 2) & 1) as f32 - 0.5))
        .collect();
    let t = vec![
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ];
    TriMesh::new(p, t).unwrap()
}

fn meshes() -> Vec<TriMesh> {
    vec![sphere(16, 0.5), torus(32, 12, 0.4, 0.15), boxy()]
}

struct Setup {
    side: f32,
    pos: Vec<Vec3>,
    rot: Vec<Quat>,
    vel: Vec<Vec3>,
}

impl Setup {
    fn new(n: usize) -> Setup {
        let mut rng = Rng(42);
        let side = 4.0 * (n as f32).cbrt();
        let mut s = Setup { side, pos: vec![], rot: vec![], vel: vec![] };
        for _ in 0..n {
            s.pos.push(Vec3::new(rng.range(0.0, side), rng.range(0.0, side), rng.range(0.0, side)));
            s.rot.push(Quat::from_rotation_y(rng.range(0.0, 6.28)) * Quat::from_rotation_x(rng.range(0.0, 6.28)));
            s.vel.push(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)) * 0.3);
        }
        s
    }

    /// Advances frame `f`: the indices moved.
    fn step(&mut self, f: usize) -> Vec<usize> {
        let n = self.pos.len();
        let k = n / 10;
        (0..k)
            .map(|j| {
                let i = (f * k + j) % n;
                self.pos[i] += self.vel[i];
                for a in 0..3 {
                    if self.pos[i][a] < 0.0 || self.pos[i][a] > self.side {
                        self.vel[i][a] = -self.vel[i][a];
                    }
                }
                self.rot[i] *= Quat::from_rotation_y(0.05);
                i
            })
            .collect()
    }

    fn camera(&self) -> (Vec3, Mat4) {
        let eye = Vec3::new(-5.0, self.side * 0.5, -5.0);
        let view = Mat4::look_at_rh(eye, Vec3::splat(self.side * 0.5), Vec3::Y);
        (eye, Mat4::perspective_rh(1.0, 16.0 / 9.0, 0.1, self.side * 3.0) * view)
    }

    fn cursor_rays(&self, f: usize) -> Vec<Ray> {
        let (eye, vp) = self.camera();
        let inv = vp.inverse();
        let mut rng = Rng(1000 + f as u64);
        (0..100)
            .map(|_| {
                let far = inv.project_point3(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 1.0));
                Ray::new(Vec3A::from(eye), Vec3A::from((far - eye).normalize()))
            })
            .collect()
    }
}

fn pose(q: Quat, p: Vec3) -> Pose {
    Pose::from_parts(Vector::new(p.x, p.y, p.z), parry3d::math::Rot3::from_xyzw(q.x, q.y, q.z, q.w))
}

#[derive(Default, Debug, Clone, Copy)]
struct Times {
    update: f64,
    /// slabtree only: the part of `update` spent in `optimize`.
    optimize: f64,
    pick: f64,
    frustum: f64,
    hits: usize,
    tsum: f64,
    visible: usize,
}

fn run_slabtree(n: usize, meshes: &[TriMesh]) -> Times {
    let bvhs: Vec<Arc<MeshBvh>> =
        meshes.iter().map(|m| Arc::new(MeshBvh::build(m, &BuildOptions::default()))).collect();
    let mut s = Setup::new(n);
    let mut scene = Scene::with_config(slabtree::DbvtConfig { margin: MARGIN, ..Default::default() });
    let ids: Vec<InstanceId> = (0..n)
        .map(|i| {
            scene.add(bvhs[i % 3].clone(), Affine3A::from_rotation_translation(s.rot[i], s.pos[i]), i as u64).unwrap()
        })
        .collect();
    scene.rebuild();
    let mut t = Times::default();
    for f in 0..frames() {
        let a = Instant::now();
        let moved = s.step(f);
        let moves: Vec<_> =
            moved.iter().map(|&i| (ids[i], Affine3A::from_rotation_translation(s.rot[i], s.pos[i]))).collect();
        scene.set_transforms(&moves).unwrap();
        let o = Instant::now();
        scene.optimize(n / 80 + 1);
        let b = Instant::now();
        t.optimize += (b - o).as_secs_f64();
        for r in s.cursor_rays(f) {
            if let Some(p) = scene.pick(&r) {
                t.hits += 1;
                t.tsum += p.t as f64;
            }
        }
        let c = Instant::now();
        t.visible += scene.visible(&Frustum::from_view_projection(s.camera().1)).unwrap().count();
        let d = Instant::now();
        t.update += (b - a).as_secs_f64();
        t.pick += (c - b).as_secs_f64();
        t.frustum += (d - c).as_secs_f64();
    }
    let mut fresh = scene.tree().clone();
    fresh.rebuild();
    eprintln!(
        "N={n}: slabtree tree SAH cost after {} frames {:.1}, rebuilt {:.1}",
        frames(),
        scene.tree().stats().sah_cost,
        fresh.stats().sah_cost
    );
    t
}

fn run_parry(n: usize, meshes: &[TriMesh]) -> Times {
    let pmeshes: Vec<PTriMesh> = meshes
        .iter()
        .map(|m| {
            let v = m.positions().iter().map(|p| Vector::new(p.x, p.y, p.z)).collect();
            PTriMesh::new(v, m.triangles().to_vec()).unwrap()
        })
        .collect();
    let mut s = Setup::new(n);
    let mut poses: Vec<Pose> = (0..n).map(|i| pose(s.rot[i], s.pos[i])).collect();
    let mut bvh = Bvh::new();
    for i in 0..n {
        let b = pmeshes[i % 3].aabb(&poses[i]).loosened(MARGIN);
        bvh.insert(b, i as u32);
    }
    let mut ws = BvhWorkspace::default();
    let mut t = Times::default();
    for f in 0..frames() {
        let a = Instant::now();
        let moved = s.step(f);
        for &i in &moved {
            poses[i] = pose(s.rot[i], s.pos[i]);
            bvh.insert_or_update_partially(pmeshes[i % 3].aabb(&poses[i]), i as u32, MARGIN);
        }
        bvh.refit(&mut ws);
        bvh.optimize_incremental(&mut ws);
        let b = Instant::now();
        for r in s.cursor_rays(f) {
            let (o, d) = (r.origin(), r.dir());
            let pr = PRay::new(Vector::new(o.x, o.y, o.z), Vector::new(d.x, d.y, d.z));
            if let Some((_, toi)) = bvh.cast_ray(&pr, f32::MAX, |leaf, best| {
                pmeshes[leaf as usize % 3].cast_ray(&poses[leaf as usize], &pr, best, true)
            }) {
                t.hits += 1;
                t.tsum += toi as f64;
            }
        }
        let c = Instant::now();
        let fr = Frustum::from_view_projection(s.camera().1);
        let visible = bvh
            .leaves(|node| {
                let (mn, mx) = (node.mins(), node.maxs());
                fr.may_contain(&Aabb::new(Vec3A::new(mn.x, mn.y, mn.z), Vec3A::new(mx.x, mx.y, mx.z)))
            })
            .count();
        t.visible += visible;
        let d = Instant::now();
        t.update += (b - a).as_secs_f64();
        t.pick += (c - b).as_secs_f64();
        t.frustum += (d - c).as_secs_f64();
    }
    t
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if args.is_empty() { vec![1000, 10_000, 100_000] } else { args };
    let meshes = meshes();
    println!(
        "| N | library | update ms/frame | 100 picks ms/frame | frustum ms/frame | total ms/frame | parry / slabtree |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in sizes {
        let s = run_slabtree(n, &meshes);
        let p = if std::env::var_os("SLABTREE_ONLY").is_some() { Times::default() } else { run_parry(n, &meshes) };
        let ms = |x: f64| x * 1e3 / frames() as f64;
        let tot = |t: &Times| ms(t.update + t.pick + t.frustum);
        for (name, t) in [("slabtree", &s), ("parry3d", &p)] {
            println!(
                "| {n} | {name} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
                ms(t.update),
                ms(t.pick),
                ms(t.frustum),
                tot(t),
                if name == "parry3d" { format!("{:.2}x", tot(&p) / tot(&s)) } else { String::new() }
            );
        }
        if s.hits != p.hits || (s.tsum - p.tsum).abs() > 1e-3 * s.tsum.max(1.0) {
            println!(
                "MISMATCH N={n} picks: slabtree {} hits, sum t {:.4}; parry3d {} hits, sum t {:.4}",
                s.hits, s.tsum, p.hits, p.tsum
            );
        }
        eprintln!("N={n}: slabtree optimize {:.3} ms/frame of its update", ms(s.optimize));
        eprintln!("N={n}: visible (summed over frames) slabtree {} parry3d {}", s.visible, p.visible);
    }
}
