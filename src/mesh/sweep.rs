//! Swept-box queries: the first contact of an axis-aligned box (or, for the scene, an instance's
//! view of one: an oriented box) moving by a displacement with a mesh's triangles.
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxCastHit {
    /// Fraction of the displacement at first contact, in `[0, 1]`; 0 when the box starts in
    /// contact.
    pub t: f32,
    /// The triangle touched, in input order.
    pub triangle: u32,
    /// Unit contact normal, pointing from the triangle towards the box (against the motion).
    pub normal: Vec3,
}

/// The interval of `t` during which a swept box and a triangle overlap on every axis tested so
/// far, with the axis that set its start: the contact normal, unnormalised, pointing from the
/// triangle towards the box.
struct SweepInterval {
    enter: f32,
    exit: f32,
    normal: Vec3,
}

impl SweepInterval {
    const ALL: SweepInterval = SweepInterval { enter: f32::NEG_INFINITY, exit: f32::INFINITY, normal: Vec3::ZERO };

    /// Narrows the interval by axis `l`, on which the box centred at `center` has radius `r` and
    /// moves by `l·d` per unit of `t`. Returns `false` when `l` separates box and triangle for
    /// every `t` in `[0, tmax]`.
    #[inline(always)]
    fn clip(&mut self, l: Vec3, tri: &[Vec3; 3], center: Vec3, r: f32, d: Vec3, tmax: f32) -> bool {
        let (pa, pb, pc) = (l.dot(tri[0]), l.dot(tri[1]), l.dot(tri[2]));
        let tri_min = pa.min(pb).min(pc);
        let tri_max = pa.max(pb).max(pc);
        let p = l.dot(center);
        let s = l.dot(d);
        // Overlap on this axis while p + t·s - r <= tri_max and p + t·s + r >= tri_min.
        let (lo, hi) = (tri_min - p - r, tri_max - p + r);
        if s == 0.0 {
            return lo <= 0.0 && hi >= 0.0;
        }
        let (t0, t1) = if s > 0.0 { (lo / s, hi / s) } else { (hi / s, lo / s) };
        if t0 > self.enter {
            self.enter = t0;
            // The box meets this axis' face moving along s: the normal opposes the motion.
            self.normal = if s > 0.0 { -l } else { l };
        }
        self.exit = self.exit.min(t1);
        !(self.enter > self.exit || self.enter > tmax || self.exit < 0.0)
    }
}

/// The 13 separating axes of a box with edge directions `u` and a triangle with edges `edges`:
/// the box's face normals, the triangle's normal and the 9 edge-edge cross products.
fn sat_axes(u: [Vec3; 3], edges: [Vec3; 3]) -> [Vec3; 13] {
    let mut axes = [Vec3::ZERO; 13];
    axes[0] = u[1].cross(u[2]);
    axes[1] = u[2].cross(u[0]);
    axes[2] = u[0].cross(u[1]);
    axes[3] = edges[0].cross(edges[1]);
    let mut k = 4;
    for e in edges {
        for ui in u {
            axes[k] = e.cross(ui);
            k += 1;
        }
    }
    axes
}

/// Squared length scale of a triangle, to recognise degenerate axes: an edge parallel to a box
/// axis gives a zero cross product (units of length), a degenerate triangle a zero normal (units
/// of area). Such axes separate nothing the other axes do not, so they are skipped.
fn edge_scale(edges: &[Vec3; 3]) -> f32 {
    (edges[0].length_squared() + edges[1].length_squared() + edges[2].length_squared()).max(f32::MIN_POSITIVE)
}

/// First contact of box (`center`, `half`) moving by `d` during `t` in `[0, tmax]` with the
/// triangle, as `(t, normal)`.
pub(crate) fn sweep_box_triangle(center: Vec3, half: Vec3, d: Vec3, tri: &[Vec3; 3], tmax: f32) -> Option<(f32, Vec3)> {
    let [a, b, c] = *tri;
    let edges = [b - a, c - b, a - c];
    let scale = edge_scale(&edges);
    let mut interval = SweepInterval::ALL;
    for (k, l) in sat_axes([Vec3::X, Vec3::Y, Vec3::Z], edges).into_iter().enumerate() {
        let degenerate = match k {
            0..=2 => false,
            3 => l.length_squared() <= 1e-12 * scale * scale,
            _ => l.length_squared() <= 1e-12 * scale,
        };
        if degenerate {
            continue;
        }
        let r = half.x * l.x.abs() + half.y * l.y.abs() + half.z * l.z.abs();
        if !interval.clip(l, tri, center, r, d, tmax) {
            return None;
        }
    }
    // In contact at the start (no axis had a positive entry): t = 0.
    let t = if interval.enter <= 0.0 { 0.0 } else { interval.enter };
    Some((t, interval.normal.normalize_or_zero()))
}

/// A box in an instance's space (see `scene::sweep`): centre, edge directions (unit in world
/// space, not in instance space) and half-extents along them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Obb {
    pub center: Vec3,
    pub axes: [Vec3; 3],
    pub half: Vec3,
}

/// First contact of `obb` moving by `d` during `t` in `[0, tmax]` with the triangle, as
/// `(t, normal)`; the normal is a separating-axis direction in the box's space, unnormalised,
/// pointing from the triangle towards the box.
pub(crate) fn sweep_obb_triangle(obb: &Obb, d: Vec3, tri: &[Vec3; 3], tmax: f32) -> Option<(f32, Vec3)> {
    let [a, b, c] = *tri;
    let edges = [b - a, c - b, a - c];
    let u = obb.axes;
    let scale = edge_scale(&edges);
    let ulen = [u[0].length_squared(), u[1].length_squared(), u[2].length_squared()];
    let mut interval = SweepInterval::ALL;
    for (k, l) in sat_axes(u, edges).into_iter().enumerate() {
        // Parallel edges give (near) zero crosses, a degenerate triangle a zero normal: such axes
        // separate nothing the others do not.
        let degenerate = match k {
            0..=2 => l.length_squared() == 0.0,
            3 => l.length_squared() <= 1e-12 * scale * scale,
            _ => l.length_squared() <= 1e-12 * scale * ulen[(k - 4) % 3],
        };
        if degenerate {
            continue;
        }
        let r = obb.half.x * l.dot(u[0]).abs() + obb.half.y * l.dot(u[1]).abs() + obb.half.z * l.dot(u[2]).abs();
        if !interval.clip(l, tri, obb.center, r, d, tmax) {
            return None;
        }
    }
    Some((interval.enter.max(0.0), interval.normal))
}

/// The box's centre, half-extents and the sweep as f32 vectors.
pub(crate) fn box_parts(aabb: &Aabb) -> (Vec3A, Vec3A) {
    (aabb.center(), aabb.half_extents())
}
