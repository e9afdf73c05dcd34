//! Coherent rays: a pinhole camera's primary rays in the 4×2 tiles that 8-ray packets take. Shared
//! by the packet tests and the picking workload (`moving_instances`).

use glam::{Vec3, Vec3A};
use slabtree::Ray;

/// Primary rays of a `w`×`h` image (vertical field of view 1 rad) in 4×2 tiles, 8 rays per tile
/// in tile order: the coherent groups that 8-ray packets take.
pub fn primary_tiles(eye: Vec3, target: Vec3, w: u32, h: u32) -> Vec<Ray> {
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
