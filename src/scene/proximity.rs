//! Proximity queries over a scene: the nearest point of any instance to a point, and the
//! triangles of the instances that intersect a box or a sphere, all in world terms.
//!
//! Each walks the instance tree, then each candidate instance's own BVH in its space. Distances
//! and overlaps are decided in the world, on the instance's triangles mapped by its transform, so
//! scale and shear are honoured exactly: the nearest point uses the mesh's best-first descent
//! with its node boxes taken to the world (`MeshBvh::closest_point_placed`), and an overlap
//! searches the instance's BVH with the query's bounds taken into instance space (a box that
//! contains the query's preimage) before each triangle is tested in the world.

use glam::{Vec3, Vec3A};

use super::query::with_ws;
use super::{InstanceId, InstanceSlot, Scene, transform_aabb};
use crate::dbvt::{LeafControl, ProxyId};
use crate::math::{Aabb, InputError};
use crate::mesh::overlap::{sphere_bounds, sphere_touches, triangle_overlaps_box};

/// The point of a scene nearest to a query point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneClosestPoint {
    /// The instance it lies on.
    pub instance: InstanceId,
    /// Its user id.
    pub user_id: u64,
    /// The triangle, in the instance mesh's input order.
    pub triangle: u32,
    /// The nearest point, in world space.
    pub point: Vec3,
    /// Barycentric weight of the triangle's second corner (the same in instance and world space).
    pub u: f32,
    /// Barycentric weight of the third corner.
    pub v: f32,
    /// Distance from the query point, in world units.
    pub distance: f32,
}

impl Scene {
    /// The point nearest to `p` within `max_distance` (inclusive; `f32::INFINITY` for no limit)
    /// over the instances whose mask shares a bit with `mask`, with its instance, triangle and
    /// barycentrics. Distances are world distances, under any transform (scale, shear). Of
    /// several instances at the same distance, the one the instance tree holds first. Refuses a
    /// NaN or infinite `p`, or a NaN or negative `max_distance`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3};
    /// use slabtree::{BuildOptions, MeshBvh, Scene, TriMesh};
    ///
    /// let cube = Arc::new(MeshBvh::build(&TriMesh::cuboid(Vec3::splat(0.5)), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// // A cube stretched to 4 units along x, centred at x = 10.
    /// let stretched = Affine3A::from_scale_rotation_translation(Vec3::new(4.0, 1.0, 1.0), Default::default(), Vec3::X * 10.0);
    /// scene.add(cube, stretched, 7, Scene::ALL)?;
    /// let near = scene.closest_point(Vec3::ZERO, f32::INFINITY, Scene::ALL)?.unwrap();
    /// assert_eq!((near.user_id, near.point.x, near.distance), (7, 8.0, 8.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn closest_point(
        &self,
        p: Vec3,
        max_distance: f32,
        mask: u32,
    ) -> Result<Option<SceneClosestPoint>, InputError> {
        if !p.is_finite() || max_distance.is_nan() || max_distance < 0.0 {
            return Err(InputError::InvalidPointQuery { point: p, max_distance });
        }
        // The tree keeps the instance whose distance it was told is least (the lower proxy on a
        // tie); the same rule here keeps that instance's point.
        let mut best: Option<(ProxyId, SceneClosestPoint)> = None;
        let found = with_ws(|ws| {
            self.tree.nearest(Vec3A::from(p), max_distance, ws, |id, s: &InstanceSlot, _| {
                if s.mask & mask == 0 {
                    return None;
                }
                let inst = self.slot(s.index);
                let bound = best.map_or(max_distance, |b| b.1.distance.min(max_distance));
                let c = inst.mesh.closest_point_placed(p, bound, &inst.transform)?;
                if best.is_none_or(|(bid, b)| {
                    c.distance < b.distance || (c.distance == b.distance && id.index() < bid.index())
                }) {
                    let point = SceneClosestPoint {
                        instance: self.id_of(s.index),
                        user_id: inst.user_id,
                        triangle: c.triangle,
                        point: c.point,
                        u: c.u,
                        v: c.v,
                        distance: c.distance,
                    };
                    best = Some((id, point));
                }
                Some(c.distance)
            })
        })
        .map_err(|e| match e {
            crate::DbvtError::Input(i) => i,
            // The scene keeps its tree refitted, so nothing else can come back.
            _ => InputError::InvalidPointQuery { point: p, max_distance },
        })?;
        Ok(found.and_then(|f| best.filter(|b| b.0 == f.id).map(|b| b.1)))
    }

    /// Appends to `out` every (instance, triangle) of the instances whose mask shares a bit with
    /// `mask` whose world triangle intersects box `b` (touching counts), each once, in no
    /// particular order. Refuses a NaN, infinite or inverted box.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3, Vec3A};
    /// use slabtree::{Aabb, BuildOptions, MeshBvh, Scene, TriMesh};
    ///
    /// let cube = Arc::new(MeshBvh::build(&TriMesh::cuboid(Vec3::splat(0.5)), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// let id = scene.add(cube, Affine3A::from_translation(Vec3::X * 3.0), 1, Scene::ALL)?;
    /// let mut found = Vec::new();
    /// // A thin box through the cube's +x face only (the face's two triangles).
    /// scene.triangles_in_box(&Aabb::new(Vec3A::new(3.4, -0.1, -0.1), Vec3A::new(3.6, 0.1, 0.1)), Scene::ALL, &mut found)?;
    /// assert_eq!(found.len(), 2);
    /// assert!(found.iter().all(|&(i, _)| i == id));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn triangles_in_box(&self, b: &Aabb, mask: u32, out: &mut Vec<(InstanceId, u32)>) -> Result<(), InputError> {
        b.validate()?;
        let (centre, half) = (Vec3::from(b.center()), Vec3::from(b.half_extents()));
        self.overlapping(b, mask, out, |tri| triangle_overlaps_box(centre, half, tri));
        Ok(())
    }

    /// Appends to `out` every (instance, triangle) of the instances whose mask shares a bit with
    /// `mask` whose world triangle has a point within `radius` of `centre` (touching counts), each
    /// once, in no particular order. Refuses a non-finite centre, or a NaN, infinite or negative
    /// radius.
    pub fn triangles_in_sphere(
        &self,
        centre: Vec3,
        radius: f32,
        mask: u32,
        out: &mut Vec<(InstanceId, u32)>,
    ) -> Result<(), InputError> {
        if !centre.is_finite() || !radius.is_finite() || radius < 0.0 {
            return Err(InputError::InvalidPointQuery { point: centre, max_distance: radius });
        }
        let bounds = sphere_bounds(centre, radius);
        bounds.validate()?;
        self.overlapping(&bounds, mask, out, |tri| sphere_touches(centre, radius, tri));
        Ok(())
    }

    /// The instances whose world box overlaps `bounds`, and in each, the triangles in leaves
    /// whose boxes overlap `bounds` taken into instance space, for which `hit` (given the
    /// triangle in the world) says yes.
    fn overlapping(&self, bounds: &Aabb, mask: u32, out: &mut Vec<(InstanceId, u32)>, hit: impl Fn([Vec3; 3]) -> bool) {
        let _ = with_ws(|ws| {
            self.tree.overlap(bounds, ws, &mut |_: ProxyId, s: &InstanceSlot| {
                let inst = self.slot(s.index);
                if s.mask & mask == 0 || !inst.world.overlaps(bounds) {
                    return LeafControl::Continue;
                }
                // The box around the preimage of `bounds`, padded for rounding as the scene pads
                // its world boxes; an overflow leaves it infinite, which still bounds the preimage.
                let local = transform_aabb(&inst.inverse, bounds);
                let local = if local.validate().is_ok() {
                    local
                } else {
                    Aabb::new(Vec3A::splat(f32::MIN), Vec3A::splat(f32::MAX))
                };
                let id = self.id_of(s.index);
                let t = inst.transform;
                inst.mesh.overlapping(
                    &local,
                    |tri| hit(tri.map(|v| t.transform_point3(v))),
                    |prim| out.push((id, prim)),
                );
                LeafControl::Continue
            })
        });
    }
}
