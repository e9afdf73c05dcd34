//! Criterion benchmark of the picking frame loop of `examples/picking.rs` at 1k, 10k and 100k
//! instances: move 10% of the instances (`Scene::set_transforms`: O(1) leaf updates and one
//! refit, then `optimize`), pick 100 cursor rays, run one frustum query. Group `streams`: ray
//! streams against single rays on 512×512 primary rays (4×2 tiles) on a 359k-triangle sphere.
//!
//! `cargo bench --bench scene`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec3;
use slabtree::{BatchOptions, BuildOptions, Frustum, InstanceId, MeshBvh, Scene, Threads, TriMesh};

use slabtree_testkit::moving_instances::{MovingInstances, meshes, primary_tiles, tree_config};

struct World {
    scene: Scene,
    ids: Vec<InstanceId>,
    motion: MovingInstances,
    frame: usize,
    /// The frustum query's list, kept from frame to frame.
    visible: Vec<InstanceId>,
}

impl World {
    fn new(n: usize) -> World {
        let o = BuildOptions::default();
        let meshes: Vec<Arc<MeshBvh>> = meshes().iter().map(|m| Arc::new(MeshBvh::build(m, &o))).collect();
        let motion = MovingInstances::new(n);
        let mut scene = Scene::with_config(tree_config());
        let ids = (0..n)
            .map(|i| scene.add(meshes[i % 3].clone(), motion.transform(i), i as u64, slabtree::Scene::ALL).unwrap())
            .collect();
        scene.rebuild();
        World { scene, ids, motion, frame: 0, visible: Vec::new() }
    }

    /// One frame: hits of the 100 cursor rays, and instances in the frustum.
    fn frame(&mut self) -> (usize, usize) {
        let f = self.frame;
        self.frame += 1;
        let moved = self.motion.step(f);
        let moves: Vec<_> = moved.iter().map(|&i| (self.ids[i], self.motion.transform(i))).collect();
        self.scene.set_transforms(&moves).unwrap();
        self.scene.optimize(self.ids.len() / 80 + 1);
        let hits = self
            .motion
            .cursor_rays(f)
            .iter()
            .filter(|r| self.scene.intersect(r, slabtree::Scene::ALL).unwrap().is_some())
            .count();
        let frustum = Frustum::from_view_projection(self.motion.camera().1);
        self.scene.visible_into(&frustum, u32::MAX, &mut self.visible).unwrap();
        (hits, self.visible.len())
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

fn streams(c: &mut Criterion) {
    let big = MeshBvh::build(&TriMesh::uv_sphere(1.0, 600, 300), &BuildOptions::default());
    let rays = primary_tiles(Vec3::new(0.2, 0.3, 3.0), Vec3::ZERO, 512, 512);
    let mut g = c.benchmark_group("streams");
    g.sample_size(10).measurement_time(Duration::from_secs(3)).throughput(Throughput::Elements(rays.len() as u64));
    let (mut hits, mut occluded) = (Vec::new(), Vec::new());
    g.bench_function("single", |b| b.iter(|| rays.iter().filter(|r| big.intersect(r).unwrap().is_some()).count()));
    g.bench_function("stream", |b| {
        b.iter(|| {
            big.intersect_batch(
                &rays,
                &mut hits,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
            hits.iter().flatten().count()
        })
    });
    g.bench_function("single_any", |b| b.iter(|| rays.iter().filter(|r| big.occluded(r).unwrap()).count()));
    g.bench_function("stream_any", |b| {
        b.iter(|| {
            big.occluded_batch(
                &rays,
                &mut occluded,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
            occluded.iter().filter(|o| **o).count()
        })
    });
    g.finish();
}

criterion_group!(benches, frame_loop, streams);
criterion_main!(benches);
