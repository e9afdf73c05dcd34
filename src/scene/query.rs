//! Scene queries: pick (closest hit), occlusion, their rayon batches, frustum culling and box
//! overlap (ray streams are in `stream.rs`).

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use glam::{Vec3, Vec3A};

use super::reach::{Reach, instance_floor};
use super::{Instance, InstanceId, InstanceSlot, Scene, SceneError};
use crate::dbvt::{LeafControl, ProxyId, QueryWorkspace, RayControl, RayLeaf};
use crate::math::{Aabb, Frustum, InputError, QueryStats, Ray, RayCoherence};

thread_local! {
    /// Per-thread traversal scratch of the instance tree, so queries allocate nothing once warm.
    static WS: RefCell<QueryWorkspace> = RefCell::new(QueryWorkspace::new());
}

/// Runs `f` with this thread's workspace (or a fresh one on re-entry).
pub(crate) fn with_ws<R>(f: impl FnOnce(&mut QueryWorkspace) -> R) -> R {
    WS.with(|ws| match ws.try_borrow_mut() {
        Ok(mut ws) => f(&mut ws),
        Err(_) => f(&mut QueryWorkspace::new()),
    })
}

/// The closest hit of a ray in a scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneHit {
    /// The instance hit.
    pub instance: InstanceId,
    /// Its user id.
    pub user_id: u64,
    /// The triangle, in the mesh's input order.
    pub triangle: u32,
    /// Ray parameter of the hit (the same in world and instance space).
    pub t: f32,
    /// Barycentric weight of the triangle's second vertex.
    pub u: f32,
    /// Barycentric weight of the third vertex.
    pub v: f32,
    /// Unit geometric normal in world space (instance normal times the inverse transpose).
    pub normal: Vec3,
}

/// The ray in an instance's space, with `t` unchanged (direction not renormalised), starting no
/// earlier than [`instance_floor`].
#[inline]
pub(crate) fn local_ray(inst: &Instance, ray: &Ray, tmax: f32) -> Ray {
    let o = inst.inverse.transform_point3a(ray.origin());
    let d = inst.inverse.transform_vector3a(ray.dir());
    Ray::new(o, d).with_range(ray.tmin.max(instance_floor(inst, ray)), tmax)
}

impl Scene {
    /// A ray cast of the instance tree: over its 8-wide copy once enough rays have been cast
    /// since the last change (see [`Scene::wide_view`]), else over the binary tree. Both hand the
    /// policy the same instances.
    /// `count` is how many rays to add to the count that decides when to make the wide copy
    /// (0 when a batch has already added all of its rays).
    ///
    /// The tree is walked past the ray's range by the instances' rounding allowance
    /// ([`Reach`]), so that every instance whose mesh may hold a hit within the range is
    /// reached, whichever instance clipped the range first; the policy sees the range itself
    /// as each leaf's `tmax`, and its clips are carried to the walk raised alike.
    pub(super) fn cast<P: crate::dbvt::RayPolicy<InstanceSlot>>(
        &self,
        ray: &Ray,
        count: u64,
        policy: &mut P,
    ) -> Result<crate::dbvt::QueryStats, crate::DbvtError> {
        let reach = Reach::of(ray);
        let walk = ray.with_range(ray.tmin, reach.bound(ray.tmax));
        let mut range = ray.tmax;
        let mut reaching = |leaf: RayLeaf<'_, InstanceSlot>| match policy.visit(RayLeaf { tmax: range, ..leaf }) {
            RayControl::Clip(t) => {
                // As the walk applies a clip: only a shorter one, never a NaN.
                if t < range {
                    range = t;
                }
                RayControl::Clip(reach.bound(range))
            }
            control => control,
        };
        with_ws(|ws| match self.wide_view(count) {
            Some(view) => self.tree.visit_ray_wide(view, &walk, &mut ws.wide_stack, &mut reaching),
            None => self.tree.visit_ray(&walk, ws, &mut reaching),
        })
    }

    pub(super) fn make_hit(&self, slot: u32, h: crate::mesh::Hit) -> SceneHit {
        let inst = self.slot(slot);
        let n = inst.normal_to_world(Vec3A::from(h.normal));
        SceneHit {
            instance: self.id_of(slot),
            user_id: inst.user_id,
            triangle: h.triangle,
            t: h.t,
            u: h.u,
            v: h.v,
            normal: n.into(),
        }
    }

    /// The closest hit over the instances whose mask shares a bit with `mask` ([`Scene::ALL`]
    /// for every instance), or `None`. Of two instances hit at one distance (copies in one
    /// place), the one in the lower slot: the one added first, unless a removal freed a slot
    /// that a later one took. An invalid ray is refused with the [`InputError`] that
    /// [`Ray::validate`] gives.
    pub fn intersect(&self, ray: &Ray, mask: u32) -> Result<Option<SceneHit>, InputError> {
        ray.validate()?;
        Ok(self.intersect_valid::<false>(ray, mask, 1).0)
    }

    /// [`Scene::intersect`], and what the query visited, summed over both levels: the instance
    /// tree's nodes and the instances it reached, and each instance's BVH nodes and triangle
    /// packs (for a cost heat map of a scene; the instance tree's share depends on whether rays
    /// walk its binary or its 8-wide form, [`Scene::ray_tree`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3};
    /// use slabtree::{BuildOptions, MeshBvh, Ray, Scene, TriMesh};
    /// let sphere = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 16, 8), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// scene.add(sphere.clone(), Affine3A::IDENTITY, 0, Scene::ALL)?;
    /// let ray = Ray::new(Vec3::new(0.0, 0.0, 5.0), -Vec3::Z);
    /// let (hit, stats) = scene.intersect_counting(&ray, Scene::ALL)?;
    /// let (_, in_the_mesh) = sphere.intersect_counting(&ray)?;
    /// assert!(hit.is_some() && stats.nodes >= in_the_mesh.nodes && stats.leaves > in_the_mesh.leaves);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_counting(&self, ray: &Ray, mask: u32) -> Result<(Option<SceneHit>, QueryStats), InputError> {
        ray.validate()?;
        Ok(self.intersect_valid::<true>(ray, mask, 1))
    }

    /// The closest hit of a valid ray, and with `COUNT` what it visited (else zeros, and the
    /// walk spends nothing on the sums); `rays_cast` as `count` for [`Scene::cast`].
    pub(super) fn intersect_valid<const COUNT: bool>(
        &self,
        ray: &Ray,
        mask: u32,
        rays_cast: u64,
    ) -> (Option<SceneHit>, QueryStats) {
        // The best hit's instance slot, key and hit. Hits are ranked, and the ray clipped, by
        // their keys (see `MeshBvh::intersect_keyed_unchecked`): a hit at the same key in another
        // instance is then still seen, and ranked by `nearer`, whichever order the walk meets
        // them in; the packets (`super::stream`) see it too and trace the ray again singly.
        let mut best: Option<(u32, f32, crate::mesh::Hit)> = None;
        let mut below = QueryStats::default();
        let mut policy = |leaf: RayLeaf<'_, InstanceSlot>| {
            if leaf.data.mask & mask == 0 {
                return RayControl::Continue;
            }
            let inst = self.slot(leaf.data.index);
            // A ray the transform made invalid (an overflow to infinity) hits nothing there.
            let (hit, stats) = inst.mesh.intersect_keyed_unchecked(&local_ray(inst, ray, leaf.tmax));
            if COUNT {
                below += stats;
            }
            match hit {
                Some((key, h)) if nearer(leaf.data.index, key, best.map(|b| (b.0, b.1))) => {
                    best = Some((leaf.data.index, key, h));
                    RayControl::Clip(key)
                }
                _ => RayControl::Continue,
            }
        };
        let Ok(top) = self.cast(ray, rays_cast, &mut policy) else { return (None, QueryStats::default()) };
        let stats = if COUNT { top + below } else { QueryStats::default() };
        (best.map(|(s, _, h)| self.make_hit(s, h)), stats)
    }

    /// `true` when a triangle of an instance whose mask shares a bit with `mask` is hit within
    /// the ray's range (for example, shadow rays ignoring instances that cast no shadow). Invalid
    /// rays as in [`Scene::intersect`].
    pub fn occluded(&self, ray: &Ray, mask: u32) -> Result<bool, InputError> {
        ray.validate()?;
        Ok(self.occluded_valid::<false>(ray, mask, 1).0)
    }

    /// [`Scene::occluded`], and what the query visited, counted as by
    /// [`Scene::intersect_counting`].
    pub fn occluded_counting(&self, ray: &Ray, mask: u32) -> Result<(bool, QueryStats), InputError> {
        ray.validate()?;
        Ok(self.occluded_valid::<true>(ray, mask, 1))
    }

    /// Any hit of a valid ray, and with `COUNT` what it visited, as [`Scene::intersect_valid`].
    pub(super) fn occluded_valid<const COUNT: bool>(&self, ray: &Ray, mask: u32, rays_cast: u64) -> (bool, QueryStats) {
        let mut hit = false;
        let mut below = QueryStats::default();
        let top = self.cast(ray, rays_cast, &mut |leaf: RayLeaf<'_, InstanceSlot>| {
            if leaf.data.mask & mask == 0 {
                return RayControl::Continue;
            }
            let inst = self.slot(leaf.data.index);
            let (occluded, stats) =
                inst.mesh.occluded_unchecked(&local_ray(inst, ray, ray.tmax), RayCoherence::Coherent);
            if COUNT {
                below += stats;
            }
            if occluded {
                hit = true;
                return RayControl::Stop;
            }
            RayControl::Continue
        });
        (hit, if COUNT { top.unwrap_or_default() + below } else { QueryStats::default() })
    }

    /// Instances whose mask shares a bit with `mask` and whose (fat) world box is not certainly
    /// outside the frustum: conservative, as [`Frustum::may_contain`].
    ///
    /// The order is unspecified. When the previous frustum query found at least a quarter of
    /// the instances in view, this one tests every instance's box in a linear SIMD scan
    /// ([`crate::Dbvt::frustum_scan`]) instead of walking the tree, which is faster when much
    /// of the scene is in view (a camera moves little between frames, so the last count is a
    /// good forecast; `docs/performance.md`); the instances are the same either way.
    pub fn visible(&self, frustum: &Frustum, mask: u32) -> Result<impl Iterator<Item = InstanceId> + '_, SceneError> {
        let mut out = Vec::new();
        self.visible_into(frustum, mask, &mut out)?;
        Ok(out.into_iter())
    }

    /// [`Scene::visible`] into a caller's vector, which is cleared first: a renderer
    /// that keeps the vector from frame to frame culls without allocating (at 10k instances,
    /// most of them visible, the list is about 100 KB, regrown by doubling on every call
    /// otherwise).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Mat4, Vec3};
    /// use slabtree::{BuildOptions, Frustum, MeshBvh, Scene, TriMesh};
    ///
    /// let mesh = Arc::new(MeshBvh::build(&TriMesh::cuboid(Vec3::splat(0.5)), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// let ahead = scene.add(mesh.clone(), Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0)), 1, Scene::ALL)?;
    /// scene.add(mesh, Affine3A::from_translation(Vec3::new(0.0, 0.0, 5.0)), 2, Scene::ALL)?; // behind
    /// let view = glam::camera::rh::view::look_at_mat4(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y);
    /// let frustum = Frustum::from_view_projection(glam::camera::rh::proj::directx::perspective(1.0, 1.0, 0.1, 100.0) * view);
    ///
    /// let mut visible = Vec::new(); // kept across frames
    /// scene.visible_into(&frustum, Scene::ALL, &mut visible)?;
    /// assert_eq!(visible, [ahead]);
    /// # Ok::<(), slabtree::SceneError>(())
    /// ```
    pub fn visible_into(&self, frustum: &Frustum, mask: u32, out: &mut Vec<InstanceId>) -> Result<(), SceneError> {
        out.clear();
        let mut policy = |_: ProxyId, s: &InstanceSlot| {
            if s.mask & mask != 0 {
                out.push(self.id_from(s));
            }
            LeafControl::Continue
        };
        // When the last query found a quarter of the scene or more in view, a scan of every box
        // beats a walk of the tree (`docs/performance.md`). Otherwise the 8-wide copy when
        // there is one (a frustum query counts as one ray towards making it), else the binary
        // tree. All three hand over the same instances, in different orders.
        let scan = self.last_in_view.load(Ordering::Relaxed) as usize * 4 >= self.tree.len();
        let stats = if scan {
            self.tree.frustum_scan(frustum, &mut policy)
        } else {
            with_ws(|ws| match self.wide_view(1) {
                Some(view) => self.tree.frustum_wide(view, frustum, &mut ws.wide_stack, &mut policy),
                None => self.tree.frustum(frustum, ws, &mut policy),
            })
        }?;
        self.last_in_view.store(u32::try_from(stats.leaves).unwrap_or(u32::MAX), Ordering::Relaxed);
        Ok(())
    }

    /// Instances whose mask shares a bit with `mask` and whose tight world box overlaps `aabb`
    /// (touching counts).
    pub fn overlap(&self, aabb: &Aabb, mask: u32) -> Result<Vec<InstanceId>, SceneError> {
        let mut out = Vec::new();
        with_ws(|ws| {
            self.tree.overlap(aabb, ws, &mut |_: ProxyId, s: &InstanceSlot| {
                if s.mask & mask != 0 && self.slot(s.index).world.overlaps(aabb) {
                    out.push(self.id_of(s.index));
                }
                LeafControl::Continue
            })
        })?;
        Ok(out)
    }
}

/// Whether a hit in instance slot `slot` at `key` ranks before `best` (the slot and key of the
/// best hit so far): a smaller key, or the same key in a lower slot. Two instances hit at one
/// key (copies in one place) then give one answer whichever tree the ray walks, binary or
/// 8-wide ([`crate::RayTree`]), and in whichever order it meets them.
#[inline]
pub(super) fn nearer(slot: u32, key: f32, best: Option<(u32, f32)>) -> bool {
    best.is_none_or(|(best_slot, best_key)| key < best_key || (key == best_key && slot < best_slot))
}

/// Two distances within rounding of each other: the streams trace such a ray again singly, so
/// that which instance it reports is the single ray's ranking ([`nearer`]).
#[inline]
pub(super) fn near_tie(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + f32::MIN_POSITIVE
}
