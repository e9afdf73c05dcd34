//! The broad-phase workloads of the tests, the example and the peer programs: seeded worlds of
//! boxes that step frame by frame, the same on every platform.
//!
//! * [`Workload::Pile`]: columns of unit boxes resting on each other on a static floor, each
//!   jittering by a few millimetres a frame (a settled pile: many resting contacts, few changes);
//! * [`Workload::Level`]: static level geometry of mixed sizes, 10% of the objects dynamic and
//!   wandering through it;
//! * [`Workload::Swarm`]: every object dynamic and fast (half to one and a half of its size per
//!   frame), bouncing inside a box.

use glam::Vec3A;
use slabtree::Aabb;
use slabtree::broad_phase::{BodyKind, BroadPhase, BroadPhaseConfig, Filter, ObjectId};

use crate::rng::Rng;

/// Which world (see the module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Pile,
    Level,
    Swarm,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Workload::Pile, Workload::Level, Workload::Swarm];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Pile => "pile",
            Workload::Level => "level",
            Workload::Swarm => "swarm",
        }
    }

    pub fn parse(s: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == s)
    }
}

/// One object of a world.
#[derive(Clone, Copy, Debug)]
pub struct Body {
    pub center: Vec3A,
    pub half: Vec3A,
    /// Displacement per frame (unused by the pile, whose boxes jitter around `rest`).
    pub velocity: Vec3A,
    pub dynamic: bool,
    /// The pile's resting place, which the jitter stays around.
    pub rest: Vec3A,
}

impl Body {
    pub fn aabb(&self) -> Aabb {
        Aabb::from_center_half_extents(self.center, self.half)
    }
}

/// A world of `bodies` that [`World::step`] moves.
#[derive(Clone, Debug)]
pub struct World {
    pub workload: Workload,
    pub bodies: Vec<Body>,
    /// Moving bodies bounce inside `[-bound, bound]³`.
    pub bound: f32,
    rng: Rng,
}

impl World {
    /// A world of `n` objects.
    pub fn new(workload: Workload, n: usize, seed: u64) -> World {
        let mut rng = Rng(seed);
        let mut bodies = Vec::with_capacity(n);
        let unit = Vec3A::splat(0.5);
        let bound;
        match workload {
            Workload::Pile => {
                // Columns 8 high on a square footprint, one unit apart (faces touching).
                let columns = (n - 1).div_ceil(8).max(1);
                let side = (columns as f32).sqrt().ceil() as usize;
                bound = side as f32;
                let floor = Aabb::new(Vec3A::new(-1.0, -1.0, -1.0), Vec3A::new(side as f32, 0.0, side as f32));
                bodies.push(Body {
                    center: floor.center(),
                    half: floor.half_extents(),
                    velocity: Vec3A::ZERO,
                    dynamic: false,
                    rest: floor.center(),
                });
                for i in 0..n - 1 {
                    let (column, level) = (i / 8, i % 8);
                    let rest = Vec3A::new((column % side) as f32, level as f32 + 0.5, (column / side) as f32);
                    bodies.push(Body { center: rest, half: unit, velocity: Vec3A::ZERO, dynamic: true, rest });
                }
            }
            Workload::Level => {
                // About 40 units of volume per object, so a wanderer meets a few static pieces.
                bound = 0.5 * (40.0 * n as f32).cbrt();
                for i in 0..n {
                    let dynamic = i % 10 == 0;
                    let center = rng.in_cube(bound);
                    let half = if dynamic {
                        unit
                    } else {
                        Vec3A::new(rng.range(0.25, 4.0), rng.range(0.25, 1.0), rng.range(0.25, 4.0))
                    };
                    let velocity = if dynamic { rng.on_sphere() * rng.range(0.05, 0.3) } else { Vec3A::ZERO };
                    bodies.push(Body { center, half, velocity, dynamic, rest: center });
                }
            }
            Workload::Swarm => {
                // About 8 units of volume per object.
                bound = 0.5 * (8.0 * n as f32).cbrt();
                for _ in 0..n {
                    let center = rng.in_cube(bound);
                    let velocity = rng.on_sphere() * rng.range(0.5, 1.5);
                    bodies.push(Body { center, half: unit, velocity, dynamic: true, rest: center });
                }
            }
        }
        World { workload, bodies, bound, rng }
    }

    /// Moves every dynamic body one frame and lists each one's index, new box and displacement
    /// in `moves` (cleared first).
    pub fn step(&mut self, moves: &mut Vec<(usize, Aabb, Vec3A)>) {
        moves.clear();
        for (i, b) in self.bodies.iter_mut().enumerate() {
            if !b.dynamic {
                continue;
            }
            let before = b.center;
            match self.workload {
                Workload::Pile => {
                    let jitter =
                        Vec3A::new(self.rng.range(-1.0, 1.0), self.rng.range(-1.0, 1.0), self.rng.range(-1.0, 1.0));
                    b.center = b.rest + jitter * 0.003;
                }
                Workload::Level | Workload::Swarm => {
                    b.center += b.velocity;
                    for axis in 0..3 {
                        if b.center[axis].abs() > self.bound {
                            b.velocity[axis] = -b.velocity[axis];
                            b.center[axis] = b.center[axis].clamp(-self.bound, self.bound);
                        }
                    }
                }
            }
            moves.push((i, b.aabb(), b.center - before));
        }
    }
}

/// A world driven through a [`BroadPhase`] frame by frame, with some churn on top of the motion
/// (every few frames an object is removed and another added, one changes filter, one changes
/// kind), so that every operation of the broad phase takes part. The same seed gives the same
/// calls.
pub struct Driven {
    pub world: World,
    pub phase: BroadPhase<usize>,
    /// The broad phase's id of each body (`None` once removed).
    pub ids: Vec<Option<ObjectId>>,
    frame: u64,
    moves: Vec<(usize, Aabb, Vec3A)>,
    batch: Vec<(ObjectId, Aabb, Vec3A)>,
}

impl Driven {
    pub fn new(world: World, config: BroadPhaseConfig) -> Driven {
        let mut phase = BroadPhase::with_config(config);
        let ids =
            (world.bodies.iter().enumerate()).map(|(i, b)| Some(phase.add(b.aabb(), kind_of(b), i).unwrap())).collect();
        Driven { world, phase, ids, frame: 0, moves: Vec::new(), batch: Vec::new() }
    }

    /// A driver of the same world in the same state driving `phase` (a restored copy of this
    /// one's broad phase).
    pub fn with_phase(&self, phase: BroadPhase<usize>) -> Driven {
        Driven {
            world: self.world.clone(),
            phase,
            ids: self.ids.clone(),
            frame: self.frame,
            moves: Vec::new(),
            batch: Vec::new(),
        }
    }

    /// One frame's calls, up to (not including) `update_pairs`.
    pub fn step(&mut self) {
        self.frame += 1;
        self.world.step(&mut self.moves);
        self.batch.clear();
        self.batch.extend(self.moves.iter().filter_map(|&(i, aabb, d)| self.ids[i].map(|id| (id, aabb, d))));
        self.phase.move_objects(&self.batch).unwrap();
        let n = self.ids.len() as u64;
        let pick = |salt: u64| (crate::rng::mix(self.frame * 4 + salt) % n) as usize;
        if self.frame.is_multiple_of(3) {
            // One body leaves and comes back elsewhere under a new id.
            let i = pick(0);
            if let Some(id) = self.ids[i].take() {
                self.phase.remove(id).unwrap();
            }
            let b = &self.world.bodies[i];
            self.ids[i] = Some(self.phase.add(b.aabb(), kind_of(b), i).unwrap());
        }
        if let Some(id) = self.ids[pick(1)] {
            let layer = 1 << (self.frame % 3);
            self.phase.set_filter(id, Filter { category: layer, mask: !layer | 1 }).unwrap();
        }
        // Kind changes among the first 4 bodies only, so that the trees' sizes stay within a
        // narrow band (a warm broad phase then has room for every frame).
        if let Some(id) = self.ids[pick(2) % 4] {
            let kind = [BodyKind::Static, BodyKind::Kinematic, BodyKind::Dynamic][(self.frame % 3) as usize];
            self.phase.set_kind(id, kind).unwrap();
        }
    }
}

fn kind_of(b: &Body) -> BodyKind {
    if b.dynamic { BodyKind::Dynamic } else { BodyKind::Static }
}
