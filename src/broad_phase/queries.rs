//! Queries over every object of a broad phase: each walks the three trees (static, kinematic,
//! dynamic) in turn with the caller's policy, so a physics engine's scene queries need no second
//! structure. Like the tree's queries, they test the objects' fat boxes; the policy runs the
//! exact test.

use glam::Vec3A;

use super::{BroadPhase, BroadPhaseError, ObjectId};
use crate::dbvt::{Dbvt, DbvtError, LeafControl, ProxyId, QueryStats, QueryWorkspace, RayControl, RayLeaf};
use crate::math::{Aabb, Frustum, Ray};

/// The closest object box on a ray or box cast.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObjectHit {
    /// The object.
    pub id: ObjectId,
    /// Where the ray enters its fat box (box cast: the time of first contact, in `[0, 1]`).
    pub t: f32,
}

/// A ray policy carried across the three trees: the clip one tree's leaves set also bounds the
/// next trees', and a stop ends the whole query.
struct AcrossTrees<'a, T, P> {
    phase: &'a BroadPhase<T>,
    policy: P,
    clip: f32,
    stopped: bool,
}

impl<T, P: FnMut(ObjectId, &T, f32) -> RayControl> AcrossTrees<'_, T, P> {
    fn visit(&mut self, leaf: RayLeaf<'_, u32>) -> RayControl {
        if leaf.t > self.clip {
            return RayControl::Continue;
        }
        let i = *leaf.data;
        let data = self.phase.data[i as usize].as_ref().expect("a tree's proxy is a live object");
        let control = (self.policy)(self.phase.id_of(i), data, leaf.t);
        match control {
            RayControl::Clip(t) if t < self.clip => self.clip = t,
            RayControl::Stop => self.stopped = true,
            _ => {}
        }
        control
    }
}

/// The policy of [`BroadPhase::intersect`] and [`BroadPhase::cast_box`]: keeps in `best` the box
/// entered first, of equal distances the lowest slot, and clips the ray to it (clipping keeps
/// entries at exactly `t`, so every tie is seen, as in the tree's own closest hit).
fn closest_object<T>(best: &mut Option<ObjectHit>) -> impl FnMut(ObjectId, &T, f32) -> RayControl + '_ {
    |id, _, t| {
        if best.is_none_or(|b| t < b.t || (t == b.t && id.index < b.id.index)) {
            *best = Some(ObjectHit { id, t });
        }
        RayControl::Clip(t)
    }
}

impl<T> BroadPhase<T> {
    /// Hands every object whose fat box the ray passes to `policy(id, data, t)`, with `t` where
    /// the ray enters the box, and carries out what the policy answers (continue, clip the ray,
    /// or stop), across all objects of every kind.
    ///
    /// ```
    /// use slabtree::broad_phase::{BodyKind, BroadPhase};
    /// use slabtree::{Aabb, QueryWorkspace, Ray, RayControl};
    /// use glam::Vec3A;
    /// let mut world = BroadPhase::new();
    /// let unit = |x: f32| Aabb::from_center_half_extents(Vec3A::new(x, 0.0, 0.0), Vec3A::splat(0.5));
    /// world.add(unit(3.0), BodyKind::Static, "wall")?;
    /// world.add(unit(6.0), BodyKind::Dynamic, "ball")?;
    /// let mut seen = Vec::new();
    /// let ray = Ray::new(Vec3A::ZERO, Vec3A::X);
    /// world.visit_ray(&ray, &mut QueryWorkspace::new(), |_, name, _| {
    ///     seen.push(*name);
    ///     RayControl::Continue
    /// })?;
    /// seen.sort();
    /// assert_eq!(seen, ["ball", "wall"]);
    /// # Ok::<(), slabtree::broad_phase::BroadPhaseError>(())
    /// ```
    pub fn visit_ray(
        &self,
        ray: &Ray,
        ws: &mut QueryWorkspace,
        policy: impl FnMut(ObjectId, &T, f32) -> RayControl,
    ) -> Result<(), BroadPhaseError> {
        ray.validate()?;
        let mut across = AcrossTrees { phase: self, policy, clip: ray.tmax, stopped: false };
        for tree in &self.trees {
            let clipped = ray.with_range(ray.tmin, across.clip.max(ray.tmin));
            tree.visit_ray(&clipped, ws, &mut |leaf: RayLeaf<'_, u32>| across.visit(leaf))?;
            if across.stopped {
                break;
            }
        }
        Ok(())
    }

    /// The object whose fat box the ray enters first; of boxes entered at the same distance, the
    /// one of lowest [`ObjectId::index`].
    pub fn intersect(&self, ray: &Ray, ws: &mut QueryWorkspace) -> Result<Option<ObjectHit>, BroadPhaseError> {
        let mut best: Option<ObjectHit> = None;
        self.visit_ray(ray, ws, closest_object(&mut best))?;
        Ok(best)
    }

    /// Hands every object a moving box touches to `policy(id, data, t)`, with `t` in `[0, 1]`
    /// the time of first contact with its fat box: box `aabb` swept along `displacement`
    /// ([`Dbvt::visit_swept_box`](crate::Dbvt::visit_swept_box) over every kind).
    pub fn visit_swept_box(
        &self,
        aabb: &Aabb,
        displacement: Vec3A,
        ws: &mut QueryWorkspace,
        policy: impl FnMut(ObjectId, &T, f32) -> RayControl,
    ) -> Result<(), BroadPhaseError> {
        let mut across = AcrossTrees { phase: self, policy, clip: 1.0, stopped: false };
        for tree in &self.trees {
            tree.visit_swept_box(aabb, displacement, ws, &mut |leaf: RayLeaf<'_, u32>| across.visit(leaf))?;
            if across.stopped {
                break;
            }
        }
        Ok(())
    }

    /// The first object a moving box touches, with the time of contact; of equal times, the one
    /// of lowest [`ObjectId::index`].
    pub fn cast_box(
        &self,
        aabb: &Aabb,
        displacement: Vec3A,
        ws: &mut QueryWorkspace,
    ) -> Result<Option<ObjectHit>, BroadPhaseError> {
        let mut best: Option<ObjectHit> = None;
        self.visit_swept_box(aabb, displacement, ws, closest_object(&mut best))?;
        Ok(best)
    }

    /// Hands every object whose fat box overlaps `aabb` (touching counts) to `policy`.
    pub fn overlap(
        &self,
        aabb: &Aabb,
        ws: &mut QueryWorkspace,
        policy: impl FnMut(ObjectId, &T) -> LeafControl,
    ) -> Result<(), BroadPhaseError> {
        self.leaves_of_every_tree(policy, |tree, mut leaf| tree.overlap(aabb, ws, &mut leaf))
    }

    /// Hands every object whose fat box contains point `p` (boundary included) to `policy`.
    pub fn point(
        &self,
        p: Vec3A,
        ws: &mut QueryWorkspace,
        policy: impl FnMut(ObjectId, &T) -> LeafControl,
    ) -> Result<(), BroadPhaseError> {
        self.overlap(&Aabb::new(p, p), ws, policy)
    }

    /// Hands every object whose fat box is not certainly outside the frustum to `policy`
    /// (conservative, as [`Frustum::may_contain`]).
    pub fn frustum(
        &self,
        frustum: &Frustum,
        ws: &mut QueryWorkspace,
        policy: impl FnMut(ObjectId, &T) -> LeafControl,
    ) -> Result<(), BroadPhaseError> {
        self.leaves_of_every_tree(policy, |tree, mut leaf| tree.frustum(frustum, ws, &mut leaf))
    }

    /// Runs a leaf query (`query` on one tree with a leaf policy) on each tree in turn, handing
    /// each object it meets to `policy`, until `policy` stops.
    fn leaves_of_every_tree(
        &self,
        mut policy: impl FnMut(ObjectId, &T) -> LeafControl,
        mut query: impl FnMut(&Dbvt<u32>, &mut dyn FnMut(ProxyId, &u32) -> LeafControl) -> Result<QueryStats, DbvtError>,
    ) -> Result<(), BroadPhaseError> {
        let mut go_on = true;
        for tree in &self.trees {
            query(tree, &mut |_, &i: &u32| {
                let control =
                    policy(self.id_of(i), self.data[i as usize].as_ref().expect("a tree's proxy is a live object"));
                go_on = control == LeafControl::Continue;
                control
            })?;
            if !go_on {
                break;
            }
        }
        Ok(())
    }
}
