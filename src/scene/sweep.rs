//! The swept box against every instance: the first contact of a world-space box moving by a
//! displacement with the triangles of any instance, for character controllers.
//!
//! The instance tree is box-cast first ([`Dbvt::box_cast`](crate::Dbvt::box_cast)); each
//! instance reached is tested in its own space, where the world box becomes a parallelepiped
//! (an oriented box when the transform is a rotation, translation and uniform scale): centre
//! `M⁻¹c`, edge directions the columns of `M⁻¹`, the same half-extents, displacement `M⁻¹d`. An
//! affine map preserves the time of contact, so `t` needs no conversion. Candidate triangles come
//! from the mesh BVH with the box of the swept parallelepiped, and each is tested exactly by the
//! separating-axis theorem over the sweep (Ericson, *Real-Time Collision Detection*, 5.5.8;
//! Gottschalk, Lin and Manocha, "OBBTree", 1996): 13 axes, the box's 3 face normals, the
//! triangle's normal and the 9 cross products of box edges with triangle edges, each giving one
//! interval of overlap in `t`.

use glam::{Mat3A, Vec3, Vec3A};

use super::query::with_ws;
use super::{InstanceId, InstanceSlot, Scene};
use crate::dbvt::{RayControl, RayLeaf};
use crate::math::Aabb;

/// The first contact of a swept box with a scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneSweepHit {
    /// Fraction of the displacement at first contact, in `[0, 1]`; 0 when the box starts in
    /// contact.
    pub t: f32,
    /// The instance touched.
    pub instance: InstanceId,
    /// Its user id.
    pub user_id: u64,
    /// The triangle touched, in its mesh's input order.
    pub triangle: u32,
    /// Unit contact normal in world space, pointing from the triangle towards the box.
    pub normal: Vec3,
}

/// A box in an instance's space: centre, edge directions (unit in world space, not in instance
/// space) and half-extents along them.
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
    let scale =
        (edges[0].length_squared() + edges[1].length_squared() + edges[2].length_squared()).max(f32::MIN_POSITIVE);
    let ulen = [u[0].length_squared(), u[1].length_squared(), u[2].length_squared()];
    let mut enter = f32::NEG_INFINITY;
    let mut exit = f32::INFINITY;
    let mut normal = Vec3::ZERO;
    for (k, l) in axes.into_iter().enumerate() {
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
        let (pa, pb, pc) = (l.dot(a), l.dot(b), l.dot(c));
        let tri_min = pa.min(pb).min(pc);
        let tri_max = pa.max(pb).max(pc);
        let r = obb.half.x * l.dot(u[0]).abs() + obb.half.y * l.dot(u[1]).abs() + obb.half.z * l.dot(u[2]).abs();
        let p = l.dot(obb.center);
        let s = l.dot(d);
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
            normal = if s > 0.0 { -l } else { l };
        }
        exit = exit.min(t1);
        if enter > exit || enter > tmax || exit < 0.0 {
            return None;
        }
    }
    Some((enter.max(0.0), normal))
}

impl Scene {
    /// First contact of box `aabb` moving by `displacement` (`t` in `[0, 1]`) with the triangles
    /// of any instance; `None` when nothing is touched or the input is not finite.
    pub fn sweep_box(&self, aabb: &Aabb, displacement: Vec3A) -> Option<SceneSweepHit> {
        self.sweep_box_masked(aabb, displacement, u32::MAX)
    }

    /// [`Scene::sweep_box`] over the instances whose mask shares a bit with `mask`.
    pub fn sweep_box_masked(&self, aabb: &Aabb, displacement: Vec3A, mask: u32) -> Option<SceneSweepHit> {
        if aabb.validate().is_err() || !displacement.is_finite() {
            return None;
        }
        let (center, half) = (aabb.center(), aabb.half_extents());
        let mut best: Option<(u32, u32, f32, Vec3)> = None;
        let r = with_ws(|ws| {
            self.tree.box_cast(aabb, displacement, ws, &mut |leaf: RayLeaf<'_, InstanceSlot>| {
                if leaf.data.mask & mask == 0 {
                    return RayControl::Continue;
                }
                let inst = self.slot(leaf.data.index);
                let limit = best.map_or(1.0, |b| b.2);
                let m: Mat3A = inst.inverse.matrix3;
                let obb = Obb {
                    center: inst.inverse.transform_point3a(center).into(),
                    axes: [m.x_axis.into(), m.y_axis.into(), m.z_axis.into()],
                    half: half.into(),
                };
                let d: Vec3 = (m * displacement).into();
                // The swept parallelepiped's box in instance space, up to the current limit.
                let ext = Vec3::from(m.x_axis.abs() * half.x + m.y_axis.abs() * half.y + m.z_axis.abs() * half.z);
                let pad = (obb.center.abs() + ext + (d * limit).abs()) * 1e-5;
                let start = Aabb::new(obb.center - ext - pad, obb.center + ext + pad);
                let end_c = obb.center + d * limit;
                let query = start.union(&Aabb::new(end_c - ext - pad, end_c + ext + pad));
                let mut found: Option<(u32, f32, Vec3)> = None;
                inst.mesh.for_each_triangle_in(&query, &mut |prim, tri| {
                    let lim = found.map_or(limit, |f| f.1);
                    if let Some((t, n)) = sweep_obb_triangle(&obb, d, &tri, lim)
                        && found.is_none_or(|f| t < f.1)
                    {
                        found = Some((prim, t, n));
                    }
                    true
                });
                match found {
                    Some((prim, t, n)) if best.is_none_or(|b| t < b.2) => {
                        best = Some((leaf.data.index, prim, t, n));
                        RayControl::Clip(t)
                    }
                    _ => RayControl::Continue,
                }
            })
        });
        r.ok()?;
        best.map(|(s, triangle, t, n)| {
            let inst = self.slot(s);
            SceneSweepHit {
                t,
                instance: self.id_of(s),
                user_id: inst.user_id,
                triangle,
                normal: (inst.normal_matrix * Vec3A::from(n)).normalize_or_zero().into(),
            }
        })
    }
}
