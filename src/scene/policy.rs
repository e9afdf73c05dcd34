//! Hit policies over a scene: the mesh BVH's [`crate::HitPolicy`] across instances (see
//! `crate::mesh::policy`). The instance tree is walked with a ray-cast policy; at each instance
//! the mesh's own policy walk runs in the instance's space, handing the caller each candidate with
//! its instance. An accepted hit clips the world ray for every later instance, a stop ends the
//! whole query.

use super::query::{local_ray, nearer};
use super::{InstanceId, InstanceSlot, Scene, SceneHit};
use crate::dbvt::{RayControl, RayLeaf};
use crate::math::RayCoherence;
use crate::math::{InputError, Ray};
use crate::mesh::{HitCandidate, HitControl};

/// A triangle of an instance that a ray crosses within its current range, offered to a
/// [`SceneHitPolicy`].
#[derive(Clone, Copy, Debug)]
pub struct SceneHitCandidate {
    /// The instance.
    pub instance: InstanceId,
    /// Its user id.
    pub user_id: u64,
    /// The triangle, in the instance mesh's input order.
    pub triangle: u32,
    /// Ray parameter of the hit (the same in world and instance space), in f32 as the traversal
    /// computed it.
    pub t: f32,
    /// Barycentric weight of the triangle's second vertex.
    pub u: f32,
    /// Barycentric weight of the third vertex.
    pub v: f32,
}

/// Decides, at each triangle of each instance a ray crosses, whether to accept, ignore or stop
/// (as [`crate::HitPolicy`] for one mesh). Closures `FnMut(&SceneHitCandidate) -> HitControl` implement
/// it.
pub trait SceneHitPolicy {
    /// Called once per triangle the ray crosses within its current range.
    fn visit(&mut self, candidate: &SceneHitCandidate) -> HitControl;
}

impl<F: FnMut(&SceneHitCandidate) -> HitControl> SceneHitPolicy for F {
    #[inline(always)]
    fn visit(&mut self, candidate: &SceneHitCandidate) -> HitControl {
        self(candidate)
    }
}

impl Scene {
    /// The nearest hit that `policy` accepts (or the one it stops at) over the instances whose
    /// mask shares a bit with `mask`: picking through alpha-tested leaves, or past the picker's
    /// own instance. `policy` sees every triangle the ray crosses before its current end, each at
    /// most once. An invalid ray is refused, as by [`Scene::intersect`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3, Vec3A};
    /// use slabtree::{BuildOptions, HitControl, MeshBvh, Ray, Scene, SceneHitCandidate, TriMesh};
    ///
    /// let cube = Arc::new(MeshBvh::build(&TriMesh::cuboid(Vec3::splat(0.5)), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// scene.add(cube.clone(), Affine3A::from_translation(Vec3::new(0.0, 0.0, 2.0)), 10, Scene::ALL)?;
    /// scene.add(cube, Affine3A::from_translation(Vec3::new(0.0, 0.0, 5.0)), 20, Scene::ALL)?;
    /// let ray = Ray::new(Vec3A::ZERO, Vec3A::Z);
    /// // Look through the glass cube (user id 10) to the one behind it.
    /// let hit = scene.intersect_with(&ray, Scene::ALL, &mut |c: &SceneHitCandidate| {
    ///     if c.user_id == 10 { HitControl::Ignore } else { HitControl::Accept }
    /// })?;
    /// assert_eq!((hit.unwrap().user_id, hit.unwrap().t), (20, 4.5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_with(
        &self,
        ray: &Ray,
        mask: u32,
        policy: &mut impl SceneHitPolicy,
    ) -> Result<Option<SceneHit>, InputError> {
        ray.validate()?;
        let mut best: Option<(u32, f32, crate::mesh::Hit)> = None;
        self.walk_with::<false>(ray, mask, policy, &mut |slot, key, finish, stopped| {
            // Ranked as `Scene::intersect` ranks them: by key, then by instance slot.
            if stopped || nearer(slot, key, best.map(|b| (b.0, b.1))) {
                best = Some((slot, key, finish()));
            }
        });
        Ok(best.map(|(slot, _, hit)| self.make_hit(slot, hit)))
    }

    /// Whether `policy` accepts (or stops at) any triangle the ray crosses, over the instances
    /// whose mask shares a bit with `mask`: shadow rays through alpha-tested leaves. The any-hit
    /// walk of [`Scene::occluded`]. An invalid ray is refused.
    pub fn occluded_with(&self, ray: &Ray, mask: u32, policy: &mut impl SceneHitPolicy) -> Result<bool, InputError> {
        ray.validate()?;
        let mut any = false;
        self.walk_with::<true>(ray, mask, policy, &mut |_, _, _, _| any = true);
        Ok(any)
    }

    /// Every triangle of the instances whose mask shares a bit with `mask` that the ray crosses
    /// with `tmin <= t <= tmax`, into `hits` (cleared first), sorted by distance, then instance
    /// index, then triangle. Each appears once. Allocates nothing once `hits` has room. An
    /// invalid ray is refused.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3, Vec3A};
    /// use slabtree::{BuildOptions, MeshBvh, Ray, Scene, TriMesh};
    ///
    /// let cube = Arc::new(MeshBvh::build(&TriMesh::cuboid(Vec3::splat(0.5)), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// scene.add(cube.clone(), Affine3A::from_translation(Vec3::new(0.0, 0.0, 2.0)), 10, Scene::ALL)?;
    /// scene.add(cube, Affine3A::from_translation(Vec3::new(0.0, 0.0, 5.0)), 20, Scene::ALL)?;
    /// let mut hits = Vec::new();
    /// scene.intersect_all(&Ray::new(Vec3A::new(0.1, 0.2, 0.0), Vec3A::Z), Scene::ALL, &mut hits)?;
    /// let t: Vec<f32> = hits.iter().map(|h| h.t).collect();
    /// assert_eq!(t, [1.5, 2.5, 4.5, 5.5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_all(&self, ray: &Ray, mask: u32, hits: &mut Vec<SceneHit>) -> Result<(), InputError> {
        ray.validate()?;
        hits.clear();
        let _ = self.cast(ray, 1, &mut |leaf: RayLeaf<'_, InstanceSlot>| {
            if leaf.data.mask & mask == 0 {
                return RayControl::Continue;
            }
            let inst = self.slot(leaf.data.index);
            let local = local_ray(inst, ray, ray.tmax);
            // A ray the transform made invalid (an overflow to infinity) hits nothing there.
            if local.validate().is_ok() {
                inst.mesh.trace_with::<false, _>(
                    &local,
                    &mut |c: &HitCandidate| {
                        hits.push(self.make_hit(leaf.data.index, inst.mesh.finish(c.triangle, c.found, &local)));
                        HitControl::Ignore
                    },
                    RayCoherence::Coherent,
                );
            }
            RayControl::Continue
        });
        hits.sort_unstable_by(|a, b| {
            a.t.total_cmp(&b.t).then(a.instance.index().cmp(&b.instance.index())).then(a.triangle.cmp(&b.triangle))
        });
        Ok(())
    }

    /// The instance walk of the policy queries: each instance's mesh walk (closest-first, or any
    /// hit with `ANY`) with `policy` seeing its candidates; `found(slot, key, finish, stopped)`
    /// gets every hit taken (accepted, or stopped at and then the last), each at or before the
    /// ray's end as clipped by the hits before it, with its key (the distance the walk ranked it
    /// by, at which the ray is clipped; see `MeshBvh::intersect_keyed_unchecked`) and `finish`
    /// making its public hit (in f64, so only where the hit is kept: `occluded_with` needs none).
    fn walk_with<const ANY: bool>(
        &self,
        ray: &Ray,
        mask: u32,
        policy: &mut impl SceneHitPolicy,
        found: &mut impl FnMut(u32, f32, &dyn Fn() -> crate::mesh::Hit, bool),
    ) {
        let mut cast = |leaf: RayLeaf<'_, InstanceSlot>| {
            if leaf.data.mask & mask == 0 {
                return RayControl::Continue;
            }
            let slot = leaf.data.index;
            let inst = self.slot(slot);
            let local = local_ray(inst, ray, leaf.tmax);
            if local.validate().is_err() {
                return RayControl::Continue;
            }
            let (instance, user_id) = (self.id_of(slot), inst.user_id);
            let mut stopped = false;
            let mut inner = |c: &HitCandidate| {
                let control = policy.visit(&SceneHitCandidate {
                    instance,
                    user_id,
                    triangle: c.triangle,
                    t: c.t,
                    u: c.u,
                    v: c.v,
                });
                stopped |= control == HitControl::Stop;
                control
            };
            let (hit, _) = inst.mesh.trace_with::<ANY, _>(&local, &mut inner, RayCoherence::Coherent);
            match hit {
                Some((prim, h)) => {
                    found(slot, h.t, &|| inst.mesh.finish(prim, h, &local), stopped);
                    if ANY || stopped { RayControl::Stop } else { RayControl::Clip(h.t) }
                }
                None => RayControl::Continue,
            }
        };
        let _ = self.cast(ray, 1, &mut cast);
    }
}
