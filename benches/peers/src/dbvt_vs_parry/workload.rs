//! The workload both libraries get: the scene's boxes, the frames that move them, the rays, and
//! the conversions to parry's types.

use glam::Vec3A;
use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::math::Vector;
use parry3d::query::Ray as PRay;
use slabtree::{Aabb, DbvtConfig, Ray};
use slabtree_testkit::rng::Rng;

use crate::{FRAMES, MARGIN, MOVED_FRACTION, RAYS};

pub(crate) fn scene_half(n: usize) -> f32 {
    2.0 * (n as f32).cbrt()
}

pub(crate) fn scene(n: usize, rng: &mut Rng) -> Vec<Aabb> {
    let half = scene_half(n);
    (0..n)
        .map(|_| {
            let c = rng.in_cube(half);
            let h = Vec3A::new(rng.range(0.1, 1.0), rng.range(0.1, 1.0), rng.range(0.1, 1.0));
            Aabb::from_center_half_extents(c, h)
        })
        .collect()
}

/// One frame of motion: (box index, new tight box, displacement); distinct indices.
pub(crate) type Frame = Vec<(u32, Aabb, Vec3A)>;

/// FRAMES frames applied in turn to `tight`, which ends in the final state.
pub(crate) fn frames(tight: &mut [Aabb], rng: &mut Rng) -> Vec<Frame> {
    let n = tight.len();
    let moved = ((n as f64) * MOVED_FRACTION).round() as usize;
    let mut order: Vec<usize> = (0..n).collect();
    (0..FRAMES)
        .map(|_| {
            (0..moved)
                .map(|k| {
                    let j = k + rng.below(n - k);
                    order.swap(k, j);
                    let i = order[k];
                    let d = rng.on_sphere() * rng.range(0.05, 0.5);
                    let b = Aabb::new(tight[i].min + d, tight[i].max + d);
                    tight[i] = b;
                    (i as u32, b, d)
                })
                .collect()
        })
        .collect()
}

/// A slabtree ray and the same ray for parry (unit direction, `t` is a distance).
pub(crate) fn rays(n: usize, rng: &mut Rng) -> Vec<(Ray, PRay)> {
    let half = scene_half(n);
    let radius = half * 3f32.sqrt() + 2.0;
    (0..RAYS)
        .map(|_| {
            let o = rng.on_sphere() * radius;
            let d = (rng.in_cube(half) - o).normalize();
            (Ray::new(o, d), PRay::new(Vector::new(o.x, o.y, o.z), Vector::new(d.x, d.y, d.z)))
        })
        .collect()
}

pub(crate) fn to_parry(b: &Aabb) -> PAabb {
    PAabb::new(Vector::new(b.min.x, b.min.y, b.min.z), Vector::new(b.max.x, b.max.y, b.max.z))
}

/// The fat box both libraries store for a tight box.
pub(crate) fn fat(b: &Aabb) -> Aabb {
    b.expand(MARGIN)
}

pub(crate) fn slab_config() -> DbvtConfig {
    // No motion prediction (parry has none) and a serial rebuild (one thread).
    DbvtConfig { margin: MARGIN, prediction: 0.0, parallel_threshold: usize::MAX, ..DbvtConfig::default() }
}
