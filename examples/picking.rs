//! The picking and visibility layer of a renderer: 10,000 moving instances of a few generated
//! meshes in a [`Scene`]. Each frame moves 10% of them (one batched update and refit, then a
//! little incremental optimisation), picks 100 cursor rays and runs a frustum query, and prints
//! the per-frame times. Then it picks a tile of camera rays per frame, one by one and as a ray
//! stream (`Scene::intersect_batch` with `packets`), and compares the two.
//!
//! `cargo run --release --example picking [instances] [frames]`

use std::sync::Arc;
use std::time::Instant;

use slabtree::{BatchOptions, BuildOptions, Frustum, InstanceId, MeshBvh, Scene, Threads};

use slabtree_testkit::moving_instances::{MovingInstances, meshes, tree_config};

/// The scene and the motion that drives it.
struct World {
    scene: Scene,
    ids: Vec<InstanceId>,
    motion: MovingInstances,
    /// The frustum query's list, kept from frame to frame so culling allocates nothing.
    visible: Vec<InstanceId>,
}

impl World {
    fn new(n: usize, meshes: &[Arc<MeshBvh>]) -> World {
        let motion = MovingInstances::new(n);
        let mut scene = Scene::with_config(tree_config());
        let ids = (0..n)
            .map(|i| {
                scene
                    .add(meshes[i % meshes.len()].clone(), motion.transform(i), i as u64, slabtree::Scene::ALL)
                    .unwrap()
            })
            .collect();
        scene.rebuild();
        World { scene, ids, motion, visible: Vec::new() }
    }

    /// Moves 10% of the instances (a rotating window), batched, then optimises a little.
    fn step(&mut self, frame: usize) {
        let moved = self.motion.step(frame);
        let moves: Vec<_> = moved.iter().map(|&i| (self.ids[i], self.motion.transform(i))).collect();
        self.scene.set_transforms(&moves).unwrap();
        self.scene.optimize(moved.len() / 8 + 1);
    }

    fn queries_picks(&self, frame: usize) -> usize {
        self.motion
            .cursor_rays(frame)
            .iter()
            .filter(|r| self.scene.intersect(r, slabtree::Scene::ALL).unwrap().is_some())
            .count()
    }

    fn queries_frustum(&mut self) -> usize {
        let frustum = Frustum::from_view_projection(self.motion.camera().1);
        self.scene.visible_into(&frustum, u32::MAX, &mut self.visible).unwrap();
        self.visible.len()
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(10_000);
    let frames = args.get(1).copied().unwrap_or(20);
    let o = BuildOptions::default();
    let meshes: Vec<Arc<MeshBvh>> = meshes().iter().map(|m| Arc::new(MeshBvh::build(m, &o))).collect();
    let t0 = Instant::now();
    let mut world = World::new(n, &meshes);
    println!("{n} instances of {} meshes, built in {:.1} ms", meshes.len(), t0.elapsed().as_secs_f64() * 1e3);
    println!("frame  move+refit+opt ms  100 picks ms  frustum ms  total ms  hits  visible");
    let mut total = 0.0;
    for f in 0..frames {
        let a = Instant::now();
        world.step(f);
        let b = Instant::now();
        let hits = world.queries_picks(f);
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
    tiles(&mut world, frames);
}

/// The same frames with a 64 × 64 tile of camera rays each, picked one by one and as a stream
/// (`Scene::intersect_batch` with `packets`), interleaved frame by frame; the answers must agree.
fn tiles(world: &mut World, frames: usize) {
    println!("\nframes with 100 cursor rays and a 64x64 camera tile, one thread: single rays vs streams");
    let (mut single, mut stream) = (Vec::new(), Vec::new());
    let mut hits = Vec::new();
    for f in 0..frames.max(5) {
        world.step(f);
        let mut rays = world.motion.cursor_rays(f);
        rays.extend(world.motion.tile_rays(f, 64));
        let a = Instant::now();
        let one: Vec<_> = rays.iter().map(|r| world.scene.intersect(r, slabtree::Scene::ALL).unwrap()).collect();
        let b = Instant::now();
        world
            .scene
            .intersect_batch(
                &rays,
                slabtree::Scene::ALL,
                &mut hits,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        let c = Instant::now();
        assert_eq!(one, hits, "frame {f}: streams and single rays disagree");
        single.push((b - a).as_secs_f64() * 1e3);
        stream.push((c - b).as_secs_f64() * 1e3);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (s, t) = (median(&mut single), median(&mut stream));
    println!("  picks per frame (median): single {s:.3} ms, stream {t:.3} ms, speed-up {:.2}x", s / t);
}
