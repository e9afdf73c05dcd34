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
//! The two libraries run alternately, in blocks of 10 frames each (each keeps its own scene and
//! its own copy of the moving instances, so each sees every frame in order). This machine's
//! speed drifts by ±10% over seconds; with all of one library's frames before the other's, the
//! ratio drifted with it, while alternating blocks exposes both to the same drift. Each block
//! starts with caches the other library has used, as a frame in a renderer would.
//!
//! Usage: `scene_vs_parry [N ...]` (default 1000 10000 100000). Environment: `FRAMES` (default
//! 30), `SLABTREE_ONLY=1` (skip parry), `WATERTIGHT=1` (slabtree meshes use the watertight test),
//! `RAY_TREE=binary|wide` (the scene's `RayTree` instead of `Auto`), `OPT_DIV` (slabtree's
//! optimiser budget per frame is `n / OPT_DIV + 1` leaves; default 80), `BLOCK` (frames per
//! block of the alternation; default 10, 0 for all of slabtree's frames first),
//! `WHOLE_REBUILD_MAX` (slabtree's `DbvtConfig::whole_rebuild_max`; default the library's, 0: set
//! it above N to rebuild the whole tree every n/budget frames with binned SAH), `REFRESH_MAX` and
//! `REFRESH_GROWTH` (its `refresh_max`, default 131072, and `refresh_growth`, default 0.05:
//! `REFRESH_MAX=0 WHOLE_REBUILD_MAX=2048` gives the optimiser of commit `03eeb68`).

use std::sync::Arc;
use std::time::Instant;

use glam::{Quat, Vec3, Vec3A};
use parry3d::bounding_volume::BoundingVolume;
use parry3d::math::{Pose, Vector};
use parry3d::partitioning::{Bvh, BvhWorkspace};
use parry3d::query::{Ray as PRay, RayCast};
use parry3d::shape::TriMesh as PTriMesh;
use slabtree::{Aabb, BuildOptions, Frustum, InstanceId, MeshBvh, Scene, TriMesh};

/// The environment variable `name` parsed as a `T`, if set and well-formed.
fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

/// Frames per run: 30, or the `FRAMES` environment variable.
fn frames() -> usize {
    env("FRAMES").unwrap_or(30)
}
/// parry's margin: the same as slabtree's (`tree_config`).
const MARGIN: f32 = 0.1;
/// The optimiser's budget per frame is `n / OPT_DIV + 1` leaves (default 80).
fn opt_div() -> usize {
    env("OPT_DIV").unwrap_or(80)
}
use slabtree_testkit::moving_instances::{MovingInstances as Setup, meshes, tree_config};

fn pose(q: Quat, p: Vec3) -> Pose {
    Pose::from_parts(Vector::new(p.x, p.y, p.z), parry3d::math::Rot3::from_xyzw(q.x, q.y, q.z, q.w))
}

/// Frames per block of the alternation: 10, or the `BLOCK` environment variable (0: no
/// alternation, all of slabtree's frames first).
fn block() -> usize {
    env("BLOCK").unwrap_or(10)
}

#[derive(Default, Debug, Clone)]
struct Times {
    update: f64,
    /// slabtree only: the part of `update` spent in `optimize`.
    optimize: f64,
    pick: f64,
    frustum: f64,
    /// Every frame's total, in seconds: the median is robust to a stall of the machine, which
    /// over 30 frames moves the mean by several percent (one 1 ms stall at 1k: 0.04 ms/frame).
    totals: Vec<f64>,
    hits: usize,
    tsum: f64,
    visible: usize,
}

impl Times {
    /// Adds one frame whose update ran from `a` to `b`, picks to `c` and frustum to `d`.
    fn add_frame(&mut self, a: Instant, b: Instant, c: Instant, d: Instant) {
        self.update += (b - a).as_secs_f64();
        self.pick += (c - b).as_secs_f64();
        self.frustum += (d - c).as_secs_f64();
        self.totals.push((d - a).as_secs_f64());
    }

    /// The slowest frame (update, picks and frustum), in seconds (0 without frames): a budget
    /// spent in bursts (optimiser rounds) shows here, not in the means.
    fn worst(&self) -> f64 {
        self.totals.iter().copied().fold(0.0, f64::max)
    }

    /// The median frame total, in seconds (0 without frames).
    fn median(&self) -> f64 {
        let mut t = self.totals.clone();
        t.sort_by(f64::total_cmp);
        if t.is_empty() { 0.0 } else { t[t.len() / 2] }
    }
}

/// Möller–Trumbore by default, as a renderer would pick; `WATERTIGHT=1` for the watertight test.
fn build_options() -> BuildOptions {
    let mut o = BuildOptions::default();
    if std::env::var_os("WATERTIGHT").is_some() {
        o.triangle_test = slabtree::TriangleTest::Watertight;
    }
    o
}

/// slabtree's side of the loop: its scene, and its own copy of the moving instances.
struct SlabtreeRun {
    s: Setup,
    scene: Scene,
    ids: Vec<InstanceId>,
    visible: Vec<InstanceId>,
    n: usize,
}

impl SlabtreeRun {
    fn new(n: usize, meshes: &[TriMesh]) -> SlabtreeRun {
        let bvhs: Vec<Arc<MeshBvh>> = meshes.iter().map(|m| Arc::new(MeshBvh::build(m, &build_options()))).collect();
        let s = Setup::new(n);
        let mut config = tree_config();
        config.whole_rebuild_max = env("WHOLE_REBUILD_MAX").unwrap_or(config.whole_rebuild_max);
        config.refresh_max = env("REFRESH_MAX").unwrap_or(config.refresh_max);
        config.refresh_growth = env("REFRESH_GROWTH").unwrap_or(config.refresh_growth);
        let mut scene = Scene::with_config(config);
        match std::env::var("RAY_TREE").as_deref() {
            Ok("binary") => scene.set_ray_tree(slabtree::RayTree::Binary),
            Ok("wide") => scene.set_ray_tree(slabtree::RayTree::Wide),
            _ => {}
        }
        let ids = (0..n)
            .map(|i| scene.add(bvhs[i % 3].clone(), s.transform(i), i as u64, slabtree::Scene::ALL).unwrap())
            .collect();
        scene.rebuild();
        SlabtreeRun { s, scene, ids, visible: Vec::new(), n }
    }

    fn frame(&mut self, f: usize, t: &mut Times) {
        let (s, scene) = (&mut self.s, &mut self.scene);
        let a = Instant::now();
        let moved = s.step(f);
        let moves: Vec<_> = moved.iter().map(|&i| (self.ids[i], s.transform(i))).collect();
        scene.set_transforms(&moves).unwrap();
        let o = Instant::now();
        scene.optimize(self.n / opt_div() + 1);
        let b = Instant::now();
        t.optimize += (b - o).as_secs_f64();
        for r in s.cursor_rays(f) {
            if let Some(p) = scene.intersect(&r, slabtree::Scene::ALL).unwrap() {
                t.hits += 1;
                t.tsum += p.t as f64;
            }
        }
        let c = Instant::now();
        scene.visible_into(&Frustum::from_view_projection(s.camera().1), u32::MAX, &mut self.visible).unwrap();
        t.visible += self.visible.len();
        let d = Instant::now();
        t.add_frame(a, b, c, d);
    }

    /// Prints the tree's SAH cost against a fresh build's of the same instances (how much it
    /// has aged).
    fn report_quality(&self, frames: usize) {
        let boxes = self.scene.iter().map(|(_, i)| (i.world_aabb(), ()));
        let (fresh, _) = slabtree::Dbvt::build_with_config(boxes, tree_config()).expect("finite boxes");
        eprintln!(
            "N={}: slabtree tree SAH cost after {frames} frames {:.1}, a fresh build {:.1}",
            self.n,
            self.scene.tree_stats().sah_cost,
            fresh.stats().sah_cost
        );
    }
}

/// parry3d's side of the loop.
struct ParryRun {
    s: Setup,
    pmeshes: Vec<PTriMesh>,
    poses: Vec<Pose>,
    bvh: Bvh,
    ws: BvhWorkspace,
}

impl ParryRun {
    fn new(n: usize, meshes: &[TriMesh]) -> ParryRun {
        let pmeshes: Vec<PTriMesh> = meshes
            .iter()
            .map(|m| {
                let v = m.positions().iter().map(|p| Vector::new(p.x, p.y, p.z)).collect();
                PTriMesh::new(v, m.triangles().to_vec()).unwrap()
            })
            .collect();
        let s = Setup::new(n);
        let poses: Vec<Pose> = (0..n).map(|i| pose(s.rot[i], s.pos[i])).collect();
        assert_eq!(MARGIN, tree_config().margin);
        let mut bvh = Bvh::new();
        for i in 0..n {
            let b = pmeshes[i % 3].aabb(&poses[i]).loosened(MARGIN);
            bvh.insert(b, i as u32);
        }
        ParryRun { s, pmeshes, poses, bvh, ws: BvhWorkspace::default() }
    }

    fn frame(&mut self, f: usize, t: &mut Times) {
        let ParryRun { s, pmeshes, poses, bvh, ws } = self;
        let a = Instant::now();
        let moved = s.step(f);
        for &i in &moved {
            poses[i] = pose(s.rot[i], s.pos[i]);
            bvh.insert_or_update_partially(pmeshes[i % 3].aabb(&poses[i]), i as u32, MARGIN);
        }
        bvh.refit(ws);
        bvh.optimize_incremental(ws);
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
        t.add_frame(a, b, c, d);
    }
}

/// Runs `frames` frames of both libraries at `n` instances, alternating in blocks of `block`
/// frames (each library's frames stay in order; `block == 0` runs all of slabtree's, then all of
/// parry3d's).
fn run_both(n: usize, meshes: &[TriMesh], frames: usize, block: usize, with_parry: bool) -> (Times, Times) {
    let (mut st, mut pt) = (Times::default(), Times::default());
    let mut slab = SlabtreeRun::new(n, meshes);
    let mut parry = with_parry.then(|| ParryRun::new(n, meshes));
    let block = if block == 0 { frames.max(1) } else { block };
    for start in (0..frames).step_by(block) {
        let end = (start + block).min(frames);
        for f in start..end {
            slab.frame(f, &mut st);
        }
        if let Some(parry) = parry.as_mut() {
            for f in start..end {
                parry.frame(f, &mut pt);
            }
        }
    }
    slab.report_quality(frames);
    (st, pt)
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
        let (s, p) = run_both(n, &meshes, frames(), block(), std::env::var_os("SLABTREE_ONLY").is_none());
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
        eprintln!("N={n}: worst frame slabtree {:.3} ms, parry3d {:.3} ms", s.worst() * 1e3, p.worst() * 1e3);
        eprintln!(
            "N={n}: median frame slabtree {:.3} ms, parry3d {:.3} ms, parry / slabtree {:.2}x",
            s.median() * 1e3,
            p.median() * 1e3,
            p.median() / s.median()
        );
        eprintln!("N={n}: visible (summed over frames) slabtree {} parry3d {}", s.visible, p.visible);
    }
}
