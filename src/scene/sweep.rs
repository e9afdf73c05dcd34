//! The swept box against every instance: the first contact of a world-space box moving by a
//! displacement with the triangles of any instance, for character controllers.
//!
//! The instance tree is box-cast first ([`Dbvt::visit_swept_box`](crate::Dbvt::visit_swept_box)); each
//! instance reached is tested in its own space, where the world box becomes a parallelepiped
//! (an oriented box when the transform is a rotation, translation and uniform scale): centre
//! `M⁻¹c`, edge directions the columns of `M⁻¹`, the same half-extents, displacement `M⁻¹d`. An
//! affine map preserves the time of contact, so `t` needs no conversion. Candidate triangles come
//! from a box cast of the mesh BVH with a box around the parallelepiped, nearest leaf first and
//! clipped at each contact (`MeshBvh::cast_obb`; collecting every triangle in the box of the
//! whole sweep instead cost 675 times the instructions on long sweeps through a 65k-triangle
//! torus). Each is tested exactly by the separating-axis theorem over the sweep (Ericson,
//! *Real-Time Collision Detection*, 5.5.8; Gottschalk, Lin and Manocha, "OBBTree", 1996): 13
//! axes, the box's 3 face normals, the triangle's normal and the 9 cross products of box edges
//! with triangle edges, each giving one interval of overlap in `t`.

use glam::{Affine3A, Mat3A, Vec3, Vec3A};

use super::query::with_ws;
use super::{Instance, InstanceId, InstanceSlot, Scene};
use crate::dbvt::{RayControl, RayLeaf};
use crate::math::Ray;
use crate::math::{Aabb, InputError};
use crate::mesh::cast::Swept;
use crate::mesh::sweep::Obb;

/// The first contact of a swept box with a scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneBoxCastHit {
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

/// A world box (centre, half-extents) moving by `d` up to `limit`, seen from an instance through
/// its `inverse` transform: the box's centre in instance space, and half-extents of a box around
/// its image there (a parallelepiped), padded so that f32 rounding never makes it smaller. Its
/// sweep covers the image's; the box sweep and the shape casts walk an instance's BVH with it.
fn local_sweep_box(inverse: &Affine3A, center: Vec3A, half: Vec3A, d: Vec3A, limit: f32) -> (Vec3A, Vec3A) {
    let m: Mat3A = inverse.matrix3;
    let local = inverse.transform_point3a(center);
    let ext = m.x_axis.abs() * half.x + m.y_axis.abs() * half.y + m.z_axis.abs() * half.z;
    let pad = (local.abs() + ext + (m * d * limit).abs()) * 1e-5 + Vec3A::splat(f32::MIN_POSITIVE);
    (local, ext + pad)
}

impl Scene {
    /// First contact of box `aabb` moving by `displacement` (`t` in `[0, 1]`) with the triangles
    /// of the instances whose mask shares a bit with `mask`, or `None` when nothing is touched.
    /// A NaN, infinite or inverted box or displacement is refused.
    pub fn cast_box(&self, aabb: &Aabb, displacement: Vec3A, mask: u32) -> Result<Option<SceneBoxCastHit>, InputError> {
        aabb.validate()?;
        if !displacement.is_finite() {
            return Err(InputError::NonFiniteDisplacement);
        }
        let half = aabb.half_extents();
        let best = self.first_contact(aabb, displacement, mask, |inst, local, ext, limit| {
            let m: Mat3A = inst.inverse.matrix3;
            let obb = Obb {
                center: local.into(),
                axes: [m.x_axis.into(), m.y_axis.into(), m.z_axis.into()],
                half: half.into(),
            };
            inst.mesh.cast_obb(&obb, ext, m * displacement, limit)
        });
        Ok(best.map(|(s, triangle, t, n)| {
            let inst = self.slot(s);
            SceneBoxCastHit {
                t,
                instance: self.id_of(s),
                user_id: inst.user_id,
                triangle,
                normal: inst.normal_to_world(Vec3A::from(n)).into(),
            }
        }))
    }
}

/// The first contact of a swept sphere or capsule with a scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneShapeCastHit {
    /// Fraction of the displacement at first contact, in `[0, 1]`; 0 when the shape starts in
    /// contact.
    pub t: f32,
    /// The instance touched.
    pub instance: InstanceId,
    /// Its user id.
    pub user_id: u64,
    /// The triangle touched, in its mesh's input order.
    pub triangle: u32,
    /// The point of contact, on the triangle, in world space.
    pub point: Vec3,
    /// Unit contact normal in world space, from the triangle towards the shape.
    pub normal: Vec3,
}

impl Scene {
    /// First contact of a sphere (`center`, `radius`) moving by `displacement` (`t` in `[0, 1]`)
    /// with the triangles of the instances whose mask shares a bit with `mask`: exact in world
    /// space under any transform (each candidate triangle is placed in the world and tested
    /// there, as [`MeshBvh::cast_sphere`](crate::MeshBvh::cast_sphere) tests). Bad input as for
    /// that method.
    pub fn cast_sphere(
        &self,
        center: Vec3,
        radius: f32,
        displacement: Vec3,
        mask: u32,
    ) -> Result<Option<SceneShapeCastHit>, InputError> {
        Ok(self.cast_shape(&Swept::new(center, center, radius, displacement)?, mask))
    }

    /// First contact of a capsule (segment `[a, b]`, `radius`) moving by `displacement` with the
    /// scene's triangles, exact as [`Scene::cast_sphere`]: a character controller's step through
    /// a level of instances.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3};
    /// use slabtree::{BuildOptions, MeshBvh, Scene, TriMesh};
    ///
    /// let cube = Arc::new(MeshBvh::build(&TriMesh::cuboid(Vec3::splat(0.5)), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// // A wall: the cube stretched to 4 units high and moved to x = 3 (its face at x = 2.5).
    /// let wall = Affine3A::from_scale_rotation_translation(Vec3::new(1.0, 4.0, 4.0), Default::default(), Vec3::X * 3.0);
    /// scene.add(cube, wall, 9, Scene::ALL)?;
    /// let hit = scene.cast_capsule(Vec3::ZERO, Vec3::Y, 0.5, Vec3::X * 4.0, Scene::ALL)?.unwrap();
    /// assert_eq!((hit.user_id, hit.t, hit.normal), (9, 0.5, -Vec3::X));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cast_capsule(
        &self,
        a: Vec3,
        b: Vec3,
        radius: f32,
        displacement: Vec3,
        mask: u32,
    ) -> Result<Option<SceneShapeCastHit>, InputError> {
        Ok(self.cast_shape(&Swept::new(a, b, radius, displacement)?, mask))
    }

    /// The casts' walk: the instance tree box-cast with the shape's world box; each instance's
    /// BVH box-cast in its space with a box around the world box's preimage (as
    /// [`Scene::cast_box`] does), and each candidate triangle placed in the world and tested by
    /// the shape's exact test. An affine map keeps `t`.
    fn cast_shape(&self, shape: &Swept, mask: u32) -> Option<SceneShapeCastHit> {
        let (bounds, displacement) = (&shape.bounds(), shape.displacement());
        if bounds.validate().is_err() {
            // A finite shape whose box overflows: nothing it can touch is representable.
            return None;
        }
        let d = Vec3A::from(displacement);
        let best = self.first_contact(bounds, d, mask, |inst, local, ext, limit| {
            let ray = Ray::new(local, inst.inverse.matrix3 * d).with_range(0.0, limit);
            let ext = ext.min(Vec3A::splat(f32::MAX));
            if ray.validate().is_err() || !ext.is_finite() {
                return None;
            }
            let t = inst.transform;
            let placed = |tri: &[Vec3; 3], lim: f32| shape.hit(&tri.map(|v| t.transform_point3(v)), lim);
            inst.mesh.sweep_with(&ray, ext, placed)
        });
        best.map(|(s, triangle, t, (point, normal))| SceneShapeCastHit {
            t,
            instance: self.id_of(s),
            user_id: self.slot(s).user_id,
            triangle,
            point,
            normal,
        })
    }
}

impl Scene {
    /// The walk of the box sweep and the shape casts: the instance tree box-cast with `bounds`
    /// moving by `d`, and for each instance whose mask shares a bit with `mask`, `contact(inst,
    /// local centre, local half-extents, limit)` ([`local_sweep_box`]), which gives the first
    /// contact in that instance before `limit` as (triangle, t, what the query reports); the
    /// walk is clipped at each nearer one. Returns the nearest, with its instance's slot.
    fn first_contact<H: Copy>(
        &self,
        bounds: &Aabb,
        d: Vec3A,
        mask: u32,
        mut contact: impl FnMut(&Instance, Vec3A, Vec3A, f32) -> Option<(u32, f32, H)>,
    ) -> Option<(u32, u32, f32, H)> {
        let (center, half) = (bounds.center(), bounds.half_extents());
        let mut best: Option<(u32, u32, f32, H)> = None;
        // The callers check the input and the scene keeps its tree refitted, so the cast cannot
        // be refused; were it, nothing was touched.
        let _ = with_ws(|ws| {
            self.tree.visit_swept_box(bounds, d, ws, &mut |leaf: RayLeaf<'_, InstanceSlot>| {
                if leaf.data.mask & mask == 0 {
                    return RayControl::Continue;
                }
                let inst = self.slot(leaf.data.index);
                let limit = best.map_or(1.0, |b| b.2);
                let (local, ext) = local_sweep_box(&inst.inverse, center, half, d, limit);
                match contact(inst, local, ext, limit) {
                    Some((prim, t, h)) if best.is_none_or(|b| t < b.2) => {
                        best = Some((leaf.data.index, prim, t, h));
                        RayControl::Clip(t)
                    }
                    _ => RayControl::Continue,
                }
            })
        });
        best
    }
}
