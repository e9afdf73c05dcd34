//! Criterion benchmark of the picking frame loop of `examples/picking.rs` at 1k, 10k and 100k
//! instances: move 10% of the instances (`Scene::set_transforms`: O(1) leaf updates and one
//! refit, then `optimize`), pick 100 cursor rays, run one frustum query. Group `packets`: 8-ray
//! packets against single rays on 512×512 primary rays (4×2 tiles) on a 360k-triangle sphere.
//!
//! `cargo bench --bench scene`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
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

struct World {
    scene: Scene,
    ids: Vec<InstanceId>,
    pos: Vec<Vec3>,
    rot: Vec<Quat>,
    vel: Vec<Vec3>,
    side: f32,
    frame: usize,
}

impl World {
    fn new(n: usize) -> World {
        let o = BuildOptions::default();
        let meshes = [
            Arc::new(MeshBvh::build(&sphere(16, 0.5), &o)),
            Arc::new(MeshBvh::build(&torus(32, 12, 0.4, 0.15), &o)),
            Arc::new(MeshBvh::build(&boxy(), &o)),
        ];
        let mut rng = Rng(42);
        let side = 4.0 * (n as f32).cbrt();
        let mut w = World { scene: Scene::new(), ids: vec![], pos: vec![], rot: vec![], vel: vec![], side, frame: 0 };
        for i in 0..n {
            let p = Vec3::new(rng.range(0.0, side), rng.range(0.0, side), rng.range(0.0, side));
            let q = Quat::from_rotation_y(rng.range(0.0, std::f32::consts::TAU))
                * Quat::from_rotation_x(rng.range(0.0, std::f32::consts::TAU));
            w.ids
                .push(w.scene.add(meshes[i % 3].clone(), Affine3A::from_rotation_translation(q, p), i as u64).unwrap());
            w.pos.push(p);
            w.rot.push(q);
            w.vel.push(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)) * 0.3);
        }
        w.scene.rebuild();
        w
    }

    fn frame(&mut self) -> (usize, usize) {
        let n = self.ids.len();
        let k = n / 10;
        let f = self.frame;
        self.frame += 1;
        let mut moves = Vec::with_capacity(k);
        for j in 0..k {
            let i = (f * k + j) % n;
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
        self.scene.optimize(n / 80 + 1);
        let eye = Vec3::new(-5.0, self.side * 0.5, -5.0);
        let vp = Mat4::perspective_rh(1.0, 16.0 / 9.0, 0.1, self.side * 3.0)
            * Mat4::look_at_rh(eye, Vec3::splat(self.side * 0.5), Vec3::Y);
        let inv = vp.inverse();
        let mut rng = Rng(1000 + f as u64);
        let mut hits = 0;
        for _ in 0..100 {
            let far = inv.project_point3(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 1.0));
            hits +=
                self.scene.pick(&Ray::new(Vec3A::from(eye), Vec3A::from((far - eye).normalize()))).is_some() as usize;
        }
        (hits, self.scene.visible(&Frustum::from_view_projection(vp)).unwrap().count())
    }
}

fn frame_loop(c: &mut Criterion) {
    let mut g = c.benchmark_group("frame");
    g.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    for n in [1_000, 10_000, 100_000] {
        let mut w = World::new(n);
        g.bench_function(BenchmarkId::from_parameter(n), |b| b.iter(|| black_box(w.frame())));
    }
    g.finish();
}

fn packets(c: &mut Criterion) {
    let big = MeshBvh::build(&sphere(300, 1.0), &BuildOptions::default());
    let (w, h) = (512u32, 512u32);
    let eye = Vec3::new(0.2, 0.3, 3.0);
    let f = (-eye).normalize();
    let r = f.cross(Vec3::Y).normalize();
    let u = r.cross(f);
    let s = 0.5f32.tan();
    let mut rays = Vec::new();
    for ty in (0..h).step_by(2) {
        for tx in (0..w).step_by(4) {
            for dy in 0..2 {
                for dx in 0..4 {
                    let px = ((tx + dx) as f32 + 0.5) / w as f32 * 2.0 - 1.0;
                    let py = ((ty + dy) as f32 + 0.5) / h as f32 * 2.0 - 1.0;
                    rays.push(Ray::new(Vec3A::from(eye), Vec3A::from(f + r * px * s + u * py * s)));
                }
            }
        }
    }
    let mut g = c.benchmark_group("packets");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).throughput(Throughput::Elements(rays.len() as u64));
    g.bench_function("single", |b| b.iter(|| rays.iter().filter(|r| big.intersect(r).is_some()).count()));
    g.bench_function("packet8", |b| {
        b.iter(|| {
            rays.chunks_exact(8).map(|c| big.intersect8(c.try_into().unwrap()).iter().flatten().count()).sum::<usize>()
        })
    });
    g.bench_function("single_any", |b| b.iter(|| rays.iter().filter(|r| big.occluded(r)).count()));
    g.bench_function("packet8_any", |b| {
        b.iter(|| {
            rays.chunks_exact(8)
                .map(|c| big.occluded8(c.try_into().unwrap()).iter().filter(|o| **o).count())
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, frame_loop, packets);
criterion_main!(benches);
