//! One broad phase (slabtree's `BroadPhase`, rapier3d's `BroadPhaseBvh` or Bullet's
//! `btDbvtBroadphase`) driving one seeded world alone in its process, single thread, for
//! `benches/peers/broadphase.sh`, which alternates the libraries' processes and builds the table.
//!
//! `broadphase <slabtree|rapier|bullet> <pile|level|swarm> <objects> <frames> [passes]`
//!
//! Each frame is timed from the first move to the end of the pair update: the world's new boxes
//! (computed just before, outside the timing) are handed to the broad phase the way its engine
//! does it, and its pairs updated. After the last frame the tracked pairs are checked against
//! brute force over the tight boxes: every pair whose boxes overlap must be tracked (each library
//! also tracks pairs within its own margins, so counts differ). Prints one line:
//! `lib workload n best_ms median_ms pairs overlapping`.

use std::time::Instant;

use glam::Vec3A;
use slabtree::Aabb;
use slabtree::broad_phase::{BodyKind, BroadPhase, ObjectId};
use slabtree_testkit::worlds::{Workload, World};

/// Every pair of the world's current boxes that overlaps, one side dynamic, by sort and sweep.
fn brute_force(world: &World) -> Vec<(usize, usize)> {
    let boxes: Vec<Aabb> = world.bodies.iter().map(|b| b.aabb()).collect();
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| boxes[a].min.x.total_cmp(&boxes[b].min.x));
    let mut pairs = Vec::new();
    for (k, &a) in order.iter().enumerate() {
        for &b in &order[k + 1..] {
            if boxes[b].min.x > boxes[a].max.x {
                break;
            }
            if (world.bodies[a].dynamic || world.bodies[b].dynamic) && boxes[a].overlaps(&boxes[b]) {
                pairs.push((a.min(b), a.max(b)));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// A broad phase under test: one frame's work, and its tracked pairs as body indices.
trait Peer {
    fn frame(&mut self, moves: &[(usize, Aabb, Vec3A)]);
    /// Untimed bookkeeping after a frame (rapier reports events only, which are replayed here).
    fn after_frame(&mut self) {}
    fn pairs(&mut self) -> Vec<(usize, usize)>;
}

struct Slabtree {
    phase: BroadPhase<usize>,
    ids: Vec<ObjectId>,
}

impl Slabtree {
    fn new(world: &World) -> Slabtree {
        let mut phase = BroadPhase::new();
        let ids = (world.bodies.iter().enumerate())
            .map(|(i, b)| phase.add(b.aabb(), if b.dynamic { BodyKind::Dynamic } else { BodyKind::Static }, i).unwrap())
            .collect();
        phase.update_pairs();
        Slabtree { phase, ids }
    }
}

impl Peer for Slabtree {
    fn frame(&mut self, moves: &[(usize, Aabb, Vec3A)]) {
        // The moves go in as an iterator over the engine's own array, read once, with no copy
        // into a vector of their own (`docs/performance.md`, "The broad phase's choices, measured").
        let ids = &self.ids;
        self.phase.move_objects(moves.iter().map(|&(i, b, d)| (ids[i], b, d))).unwrap();
        std::hint::black_box(self.phase.update_pairs());
    }
    fn pairs(&mut self) -> Vec<(usize, usize)> {
        let body = |id| *self.phase.get(id).unwrap();
        self.phase.pairs().map(|(a, b)| (body(a).min(body(b)), body(a).max(body(b)))).collect()
    }
}

/// rapier3d: dynamic bodies carry cuboid colliders, static objects are parentless (fixed)
/// colliders, so its default `ActiveCollisionTypes` keeps static pairs out as slabtree's kinds
/// do. Each frame's boxes go in through `BroadPhaseBvh::set_aabb`, then `update` finds the pairs.
struct Rapier {
    params: rapier3d::dynamics::IntegrationParameters,
    bodies: rapier3d::dynamics::RigidBodySet,
    colliders: rapier3d::geometry::ColliderSet,
    phase: rapier3d::geometry::BroadPhaseBvh,
    handles: Vec<rapier3d::geometry::ColliderHandle>,
    events: Vec<rapier3d::geometry::BroadPhasePairEvent>,
    body_of: std::collections::HashMap<rapier3d::geometry::ColliderHandle, usize>,
    /// The pairs added and not removed, from the events.
    tracked: std::collections::BTreeSet<(usize, usize)>,
}

fn paabb(b: &Aabb) -> rapier3d::geometry::Aabb {
    let v = |p: Vec3A| parry3d::math::Vector::new(p.x, p.y, p.z);
    rapier3d::geometry::Aabb::new(v(b.min), v(b.max))
}

impl Rapier {
    fn new(world: &World) -> Rapier {
        use rapier3d::prelude::*;
        let mut bodies = RigidBodySet::new();
        let mut colliders = ColliderSet::new();
        let mut handles = Vec::new();
        let mut body_of = std::collections::HashMap::new();
        for (i, b) in world.bodies.iter().enumerate() {
            let t = Vector::new(b.center.x, b.center.y, b.center.z);
            let shape = ColliderBuilder::cuboid(b.half.x, b.half.y, b.half.z);
            let h = if b.dynamic {
                let body = bodies.insert(RigidBodyBuilder::dynamic().translation(t));
                colliders.insert_with_parent(shape, body, &mut bodies)
            } else {
                colliders.insert(shape.translation(t))
            };
            handles.push(h);
            body_of.insert(h, i);
        }
        let params = IntegrationParameters::default();
        let mut phase = BroadPhaseBvh::new();
        let modified = colliders.take_modified();
        let mut events = Vec::new();
        phase.update(&params, &colliders, &bodies, &modified, &[], &mut events);
        let mut rapier =
            Rapier { params, bodies, colliders, phase, handles, events, body_of, tracked: Default::default() };
        rapier.after_frame();
        rapier
    }
}

impl Peer for Rapier {
    fn frame(&mut self, moves: &[(usize, Aabb, Vec3A)]) {
        for &(i, b, _) in moves {
            self.phase.set_aabb(&self.params, self.handles[i], paabb(&b));
        }
        self.events.clear();
        self.phase.update(&self.params, &self.colliders, &self.bodies, &[], &[], &mut self.events);
        std::hint::black_box(&self.events);
    }
    fn after_frame(&mut self) {
        use rapier3d::geometry::BroadPhasePairEvent::*;
        for e in &self.events {
            let (p, add) = match e {
                AddPair(p) => (p, true),
                DeletePair(p) => (p, false),
            };
            let (a, b) = (self.body_of[&p.collider1], self.body_of[&p.collider2]);
            let key = (a.min(b), a.max(b));
            if add {
                self.tracked.insert(key);
            } else {
                self.tracked.remove(&key);
            }
        }
    }
    fn pairs(&mut self) -> Vec<(usize, usize)> {
        self.tracked.iter().copied().collect()
    }
}

#[cfg(has_bullet)]
mod bullet {
    use super::*;
    #[repr(C)]
    pub struct Raw {
        _private: [u8; 0],
    }
    unsafe extern "C" {
        fn bullet_bp_new() -> *mut Raw;
        fn bullet_bp_free(b: *mut Raw);
        fn bullet_bp_add(b: *mut Raw, min: *const f32, max: *const f32, is_static: i32);
        fn bullet_bp_set_aabb(b: *mut Raw, i: i32, min: *const f32, max: *const f32);
        fn bullet_bp_update(b: *mut Raw);
        fn bullet_bp_pair_count(b: *mut Raw) -> i32;
        fn bullet_bp_pairs(b: *mut Raw, out: *mut i32);
    }

    pub struct Bullet(*mut Raw);

    impl Bullet {
        pub fn new(world: &World) -> Bullet {
            // SAFETY: the shim owns the object until `Drop`; every pointer passed lives for the call.
            unsafe {
                let raw = bullet_bp_new();
                for b in &world.bodies {
                    let (lo, hi) = (b.aabb().min.to_array(), b.aabb().max.to_array());
                    bullet_bp_add(raw, lo.as_ptr(), hi.as_ptr(), i32::from(!b.dynamic));
                }
                bullet_bp_update(raw);
                Bullet(raw)
            }
        }
    }

    impl Peer for Bullet {
        fn frame(&mut self, moves: &[(usize, Aabb, Vec3A)]) {
            // SAFETY: as in `new`; indices are the bodies added there.
            unsafe {
                for &(i, b, _) in moves {
                    let (lo, hi) = (b.min.to_array(), b.max.to_array());
                    bullet_bp_set_aabb(self.0, i as i32, lo.as_ptr(), hi.as_ptr());
                }
                bullet_bp_update(self.0);
            }
        }
        fn pairs(&mut self) -> Vec<(usize, usize)> {
            // SAFETY: the buffer has room for every pair the cache reports.
            unsafe {
                let n = bullet_bp_pair_count(self.0) as usize;
                let mut out = vec![0i32; 2 * n];
                bullet_bp_pairs(self.0, out.as_mut_ptr());
                out.chunks(2).map(|p| (p[0].min(p[1]) as usize, p[0].max(p[1]) as usize)).collect()
            }
        }
    }

    impl Drop for Bullet {
        fn drop(&mut self) {
            // SAFETY: created by `bullet_bp_new`, freed once.
            unsafe { bullet_bp_free(self.0) }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: broadphase <slabtree|rapier|bullet> <pile|level|swarm> <objects> <frames> [passes]");
        std::process::exit(2);
    }
    let lib = args[0].as_str();
    let workload = Workload::parse(&args[1]).expect("pile, level or swarm");
    let n: usize = args[2].parse().unwrap();
    let count: usize = args[3].parse().unwrap();
    let passes: usize = args.get(4).map_or(3, |p| p.parse().unwrap());
    let start = World::new(workload, n, 42);
    let mut times = Vec::new();
    let mut tracked = 0;
    let mut overlapping = 0;
    for _ in 0..passes {
        // A fresh broad phase per pass, warmed by its first update (not timed).
        let mut peer: Box<dyn Peer> = match lib {
            "slabtree" => Box::new(Slabtree::new(&start)),
            "rapier" => Box::new(Rapier::new(&start)),
            #[cfg(has_bullet)]
            "bullet" => Box::new(bullet::Bullet::new(&start)),
            _ => {
                eprintln!("{lib}: not built (Bullet needs Debian's libbullet-dev)");
                std::process::exit(2);
            }
        };
        // Each frame's boxes are computed just before it, untimed, as a solver hands them over
        // (in cache), and the same for every library.
        let mut world = start.clone();
        let mut moves = Vec::new();
        let mut frame_ms = Vec::with_capacity(count);
        for _ in 0..count {
            world.step(&mut moves);
            let t = Instant::now();
            peer.frame(&moves);
            frame_ms.push(t.elapsed().as_secs_f64() * 1e3);
            peer.after_frame();
        }
        let want = brute_force(&world);
        let got: std::collections::BTreeSet<(usize, usize)> = peer.pairs().into_iter().collect();
        let missing = want.iter().filter(|p| !got.contains(p)).count();
        assert_eq!(missing, 0, "{lib} {workload:?}: {missing} of {} overlapping pairs are not tracked", want.len());
        tracked = got.len();
        overlapping = want.len();
        let mean = frame_ms.iter().sum::<f64>() / frame_ms.len() as f64;
        if std::env::var_os("BP_FRAMES").is_some() {
            let mut f = frame_ms.clone();
            f.sort_by(f64::total_cmp);
            eprintln!("frames: min {:.4} median {:.4} max {:.4}", f[0], f[f.len() / 2], f[f.len() - 1]);
        }
        times.push(mean);
    }
    times.sort_by(f64::total_cmp);
    println!("{lib} {} {n} {:.4} {:.4} {tracked} {overlapping}", workload.name(), times[0], times[times.len() / 2]);
}
