//! Swept-box queries: the first contact of an axis-aligned box moving by a displacement with a
//! mesh's triangles.
//!
//! The test is exact, by the separating-axis theorem over the sweep interval (Ericson, *Real-Time
//! Collision Detection*, 5.5.8, "Moving objects"; Eberly, "Intersection of Objects with Linear
//! and Angular Velocities"). A translating box and a triangle are disjoint at time t exactly
//! when one of 13 axes separates them: the box's 3 face normals, the triangle's normal, and the 9
//! cross products of box axes with triangle edges. On each axis the projections overlap during one
//! interval of t; the first contact is the latest interval start, if it precedes the earliest
//! interval end.

use glam::{Vec3, Vec3A};

use crate::Aabb;

/// The first contact of a swept box with a mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepHit {
    /// Fraction of the displacement at first contact, in `[0, 1]`; 0 when the box starts in
    /// contact.
    pub t: f32,
    /// The triangle touched, in input order.
    pub triangle: u32,
    /// Unit contact normal, pointing from the triangle towards the box (against the motion).
    pub normal: Vec3,
}

/// First contact of box (`center`, `half`) moving by `d` during `t` in `[0, tmax]` with the
/// triangle, as `(t, normal)`.
pub(crate) fn sweep_box_triangle(center: Vec3, half: Vec3, d: Vec3, tri: &[Vec3; 3], tmax: f32) -> Option<(f32, Vec3)> {
    let [a, b, c] = *tri;
    let edges = [b - a, c - b, a - c];
    let n = edges[0].cross(edges[1]);
    let mut axes = [Vec3::ZERO; 13];
    axes[0] = Vec3::X;
    axes[1] = Vec3::Y;
    axes[2] = Vec3::Z;
    axes[3] = n;
    let mut k = 4;
    for e in edges {
        for u in [Vec3::X, Vec3::Y, Vec3::Z] {
            axes[k] = e.cross(u);
            k += 1;
        }
    }
    // Squared length scale of the triangle, to recognise degenerate axes: an edge parallel to a
    // box axis gives a zero cross product (units of length), a degenerate triangle a zero normal
    // (units of area). Such axes separate nothing the other axes do not, so they are skipped.
    let scale =
        (edges[0].length_squared() + edges[1].length_squared() + edges[2].length_squared()).max(f32::MIN_POSITIVE);
    let mut enter = f32::NEG_INFINITY;
    let mut exit = f32::INFINITY;
    let mut normal = Vec3::ZERO;
    for (k, l) in axes.into_iter().enumerate() {
        let degenerate = match k {
            0..=2 => false,
            3 => l.length_squared() <= 1e-12 * scale * scale,
            _ => l.length_squared() <= 1e-12 * scale,
        };
        if degenerate {
            continue;
        }
        let (pa, pb, pc) = (l.dot(a), l.dot(b), l.dot(c));
        let tri_min = pa.min(pb).min(pc);
        let tri_max = pa.max(pb).max(pc);
        let r = half.x * l.x.abs() + half.y * l.y.abs() + half.z * l.z.abs();
        let p = l.dot(center);
        let s = l.dot(d);
        // Overlap on this axis while p + t·s - r <= tri_max and p + t·s + r >= tri_min.
        let (lo, hi) = (tri_min - p - r, tri_max - p + r);
        if s == 0.0 {
            if lo > 0.0 || hi < 0.0 {
                return None;
            }
            continue;
        }
        let (t0, t1) = if s > 0.0 { (lo / s, hi / s) } else { (hi / s, lo / s) };
        if t0 > enter {
            enter = t0;
            // The box meets this axis' face moving along s: the normal opposes the motion.
            normal = if s > 0.0 { -l } else { l };
        }
        exit = exit.min(t1);
        if enter > exit || enter > tmax || exit < 0.0 {
            return None;
        }
    }
    if enter <= 0.0 {
        // In contact at the start: report the axis of least penetration as the normal direction
        // if no axis had a positive entry.
        return Some((0.0, normal.normalize_or_zero()));
    }
    Some((enter, normal.normalize_or_zero()))
}

/// The box's centre, half-extents and the sweep as f32 vectors.
pub(crate) fn box_parts(aabb: &Aabb) -> (Vec3A, Vec3A) {
    (aabb.center(), aabb.half_extents())
}
