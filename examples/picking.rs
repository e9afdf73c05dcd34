//! The picking and visibility layer of a renderer: 10,000 moving instances of a few generated
//! meshes in a [`Scene`]. Each frame moves 10% of them (one batched update and refit, then a
//! little incremental optimisation), picks 100 cursor rays and runs a frustum query, and prints
//! the per-frame times. Then it measures 8-ray packets against single rays on primary rays.
//!
//! `cargo run --release --example picking [instances] [frames]`

use std::sync::Arc;
use std::time::Instant;

use glam::{Affine3A, Mat4, Quat, Vec3, Vec3A};
use slabtree::{BuildOptions, Frustum, InstanceId, MeshBvh, Ray, Scene, TriMesh};

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

/// The world: instances spread in a cube of side `4 n^(1/3)`, each with a velocity.
struct World {
    scene: Scene,
    ids: Vec<InstanceId>,
    pos: Vec<Vec3>,
    rot: Vec<Quat>,
    vel: Vec<Vec3>,
    side: f32,
    rng: Rng,
}

fn meshes() -> Vec<Arc<MeshBvh>> {
    let o = BuildOptions::default();
    vec![
        Arc::new(MeshBvh::build(&sphere(16, 0.5), &o)),
        Arc::new(MeshBvh::build(&torus(32, 12, 0.4, 0.15), &o)),
        Arc::new(MeshBvh::build(&boxy(), &o)),
    ]
}

impl World {
    fn new(n: usize, meshes: &[Arc<MeshBvh>]) -> World {
        let mut rng = Rng(42);
        let side = 4.0 * (n as f32).cbrt();
        let mut w =
            World { scene: Scene::new(), ids: vec![], pos: vec![], rot: vec![], vel: vec![], side, rng: Rng(7) };
        for i in 0..n {
            let p = Vec3::new(rng.range(0.0, side), rng.range(0.0, side), rng.range(0.0, side));
            let q = Quat::from_rotation_y(rng.range(0.0, std::f32::consts::TAU))
                * Quat::from_rotation_x(rng.range(0.0, std::f32::consts::TAU));
            let v = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)) * 0.3;
            let id = w
                .scene
                .add(meshes[i % meshes.len()].clone(), Affine3A::from_rotation_translation(q, p), i as u64)
                .unwrap();
            w.ids.push(id);
            w.pos.push(p);
            w.rot.push(q);
            w.vel.push(v);
        }
        w.scene.rebuild();
        w
    }

    /// Moves 10% of the instances (a rotating window), batched, then optimises a little.
    fn step(&mut self, frame: usize) {
        let n = self.ids.len();
        let k = n / 10;
        let mut moves = Vec::with_capacity(k);
        for j in 0..k {
            let i = (frame * k + j) % n;
            self.pos[i] += self.vel[i];
            for a in 0..3 {
                if self.pos[i][a] < 0.0 || self.pos[i][a] > self.side {
                    self.vel[i][a] = -self.vel[i][a];
                }
            }
            self.rot[i] *= Quat::from_rotation_y(0.05);
            moves.push((self.ids[i], Affine3A::from_rotation_translation(self.rot[i], self.pos[i])));
        }
        self.scene.set_transforms(&moves).unwrap();
        self.scene.optimize(k / 8 + 1);
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(10_000);
    let frames = args.get(1).copied().unwrap_or(20);
    let meshes = meshes();
    let t0 = Instant::now();
    let mut world = World::new(n, &meshes);
    println!("{n} instances of {} meshes, built in {:.1} ms", meshes.len(), t0.elapsed().as_secs_f64() * 1e3);
    println!("frame  move+refit+opt ms  100 picks ms  frustum ms  total ms  hits  visible");
    let mut total = 0.0;
    for f in 0..frames {
        let a = Instant::now();
        world.step(f);
        let b = Instant::now();
        let hits = world.queries_picks();
        let c = Instant::now();
        let visible = world.queries_frustum();
        let d = Instant::now();
        let ms = |x: Instant, y: Instant| (y - x).as_secs_f64() * 1e3;
        total += ms(a, d);
        println!(
            "{f:>5}  {:>17.3}  {:>12.3}  {:>10.3}  {:>8.3}  {hits:>4}  {visible:>7}",
            ms(a, b),
            ms(b, c),
            ms(c, d),
            ms(a, d)
        );
    }
    println!("mean frame: {:.3} ms", total / frames as f64);
    packets(&world);
}

impl World {
    fn camera(&self) -> (Vec3, Mat4, Mat4) {
        let eye = Vec3::new(-5.0, self.side * 0.5, -5.0);
        let target = Vec3::splat(self.side * 0.5);
        let view = Mat4::look_at_rh(eye, target, Vec3::Y);
        let proj = Mat4::perspective_rh(1.0, 16.0 / 9.0, 0.1, self.side * 3.0);
        (eye, view, proj)
    }

    fn queries_picks(&mut self) -> usize {
        let (eye, view, proj) = self.camera();
        let inv = (proj * view).inverse();
        let mut hits = 0;
        for _ in 0..100 {
            let (x, y) = (self.rng.range(-1.0, 1.0), self.rng.range(-1.0, 1.0));
            let far = inv.project_point3(Vec3::new(x, y, 1.0));
            let ray = Ray::new(Vec3A::from(eye), Vec3A::from((far - eye).normalize()));
            hits += self.scene.pick(&ray).is_some() as usize;
        }
        hits
    }

    fn queries_frustum(&self) -> usize {
        let (_, view, proj) = self.camera();
        self.scene.visible(&Frustum::from_view_projection(proj * view)).unwrap().count()
    }
}

/// Primary rays of a `w`×`h` image in 4×2 tiles (8 rays per tile, in tile order).
fn primary_tiles(eye: Vec3, target: Vec3, w: u32, h: u32) -> Vec<Ray> {
    let f = (target - eye).normalize();
    let r = f.cross(Vec3::Y).normalize();
    let u = r.cross(f);
    let s = 0.5f32.tan();
    let mut out = Vec::with_capacity((w * h) as usize);
    for ty in (0..h).step_by(2) {
        for tx in (0..w).step_by(4) {
            for dy in 0..2 {
                for dx in 0..4 {
                    let px = ((tx + dx) as f32 + 0.5) / w as f32 * 2.0 - 1.0;
                    let py = ((ty + dy) as f32 + 0.5) / h as f32 * 2.0 - 1.0;
                    out.push(Ray::new(
                        Vec3A::from(eye),
                        Vec3A::from(f + r * px * s * w as f32 / h as f32 + u * py * s),
                    ));
                }
            }
        }
    }
    out
}

/// Packets against single rays, one thread, on the same primary rays; best of 3.
fn packets(world: &World) {
    println!("\n8-ray packets vs single rays (primary rays, 4x2 tiles, one thread, best of 3)");
    let big = MeshBvh::build(&sphere(300, 1.0), &BuildOptions::default());
    let rays = primary_tiles(Vec3::new(0.2, 0.3, 3.0), Vec3::ZERO, 512, 512);
    let time = |f: &mut dyn FnMut() -> usize| {
        let mut best = f64::INFINITY;
        let mut r = 0;
        for _ in 0..3 {
            let t = Instant::now();
            r = f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        (best, r)
    };
    let (ts, hs) = time(&mut || rays.iter().filter(|r| big.intersect(r).is_some()).count());
    let (tp, hp) = time(&mut || {
        rays.chunks_exact(8).map(|c| big.intersect8(c.try_into().unwrap()).iter().filter(|h| h.is_some()).count()).sum()
    });
    assert_eq!(hs, hp);
    let mrays = |t: f64| rays.len() as f64 / t / 1e6;
    println!(
        "  mesh ({} triangles) closest hit: single {:.2} Mrays/s, packets {:.2} Mrays/s, speed-up {:.2}x",
        big.mesh().len(),
        mrays(ts),
        mrays(tp),
        ts / tp
    );
    let (ts, _) = time(&mut || rays.iter().filter(|r| big.occluded(r)).count());
    let (tp, _) = time(&mut || {
        rays.chunks_exact(8).map(|c| big.occluded8(c.try_into().unwrap()).iter().filter(|h| **h).count()).sum()
    });
    println!(
        "  mesh any hit: single {:.2} Mrays/s, packets {:.2} Mrays/s, speed-up {:.2}x",
        mrays(ts),
        mrays(tp),
        ts / tp
    );
    let (eye, _, _) = world.camera();
    let rays = primary_tiles(eye, Vec3::splat(world.side * 0.5), 256, 256);
    let (ts, hs) = time(&mut || rays.iter().filter(|r| world.scene.pick(r).is_some()).count());
    let (tp, hp) = time(&mut || {
        rays.chunks_exact(8)
            .map(|c| world.scene.pick8(c.try_into().unwrap(), u32::MAX).iter().filter(|h| h.is_some()).count())
            .sum()
    });
    assert_eq!(hs, hp);
    println!(
        "  scene ({} instances) pick: single {:.2} Mrays/s, packets {:.2} Mrays/s, speed-up {:.2}x",
        world.ids.len(),
        mrays(ts),
        mrays(tp),
        ts / tp
    );
}
