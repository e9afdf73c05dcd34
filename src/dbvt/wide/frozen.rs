//! The public face of the 8-wide copy: [`WideDbvt`], a read-only view of a tree for ray casts
//! and frustum queries while the tree does not change.
//!
//! The borrow ties the copy to the tree's state: a `WideDbvt` holds `&Dbvt`, so the tree cannot
//! change while the copy is in use, and every answer is the binary tree's own. Its memory is
//! handed back with [`WideDbvt::into_storage`] and reused by the next [`Dbvt::wide_from`], which
//! only refits the copy when the tree's links have not changed since (moves and refits keep
//! them), and collapses it anew otherwise.

use super::WideView;
use crate::dbvt::queries::{LeafPolicy, ProxyHit, RayPolicy, closest_hit};
use crate::dbvt::traverse::QueryWorkspace;
use crate::dbvt::{Dbvt, DbvtError};
use crate::math::QueryStats;
use crate::math::{Frustum, Ray};

/// An 8-wide, read-only copy of a [`Dbvt`], for trees that answer many rays or frustum queries
/// between changes (a static level, a frame's picking after the frame's moves).
///
/// Each node holds eight children, tested with one set of `f32x8` operations, so a ray takes a
/// third of the dependent node loads of the binary tree (Wald, Benthin and Boulos 2008; Embree's
/// BVH8). The same proxies reach the policy as through [`Dbvt::visit_ray`] and [`Dbvt::frustum`],
/// in another order; closest-hit policies get the same answers. Making the copy costs one pass
/// over the tree, so it pays when many rays follow before the tree changes again
/// (`docs/performance.md`, "The dynamic tree's choices, measured").
///
/// ```
/// use slabtree::{Aabb, Dbvt, QueryWorkspace, Ray, WideStorage};
/// use glam::Vec3A;
/// let at = |x: f32| Aabb::from_center_half_extents(Vec3A::new(x, 0.0, 0.0), Vec3A::splat(0.4));
/// let (mut tree, ids) = Dbvt::build((0..1000).map(|i| (at(i as f32), i)))?;
/// let mut ws = QueryWorkspace::new();
/// let mut storage = WideStorage::default();
/// for frame in 0..3 {
///     // The frame's moves first: the tree cannot change while a wide copy borrows it.
///     tree.move_proxy(ids[0], at(-5.0 - frame as f32), Vec3A::ZERO)?;
///     let wide = tree.wide_from(storage)?;
///     let hit = wide.intersect(&Ray::new(Vec3A::new(-100.0, 0.0, 0.0), Vec3A::X), &mut ws)?;
///     assert_eq!(hit.map(|h| h.id), Some(ids[0]));
///     assert_eq!(hit, tree.intersect(&Ray::new(Vec3A::new(-100.0, 0.0, 0.0), Vec3A::X), &mut ws)?);
///     storage = wide.into_storage(); // the memory, for the next frame's copy
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WideDbvt<'a, T> {
    tree: &'a Dbvt<T>,
    view: WideView,
}

/// A copy's memory and the tag of the tree it was made from.
type Kept = (u32, WideView);

/// The memory of a [`WideDbvt`], kept between frames so that making the next copy allocates
/// nothing and, while the tree's links are unchanged, only refits (see [`Dbvt::wide_from`]).
#[derive(Clone, Debug, Default)]
pub struct WideStorage(Option<Kept>);

impl<T> Dbvt<T> {
    /// An 8-wide copy of the tree as it is now (see [`WideDbvt`]). Fails with
    /// [`DbvtError::RefitPending`] while [`Dbvt::update_proxy`] changes await a refit, as queries
    /// do.
    pub fn wide(&self) -> Result<WideDbvt<'_, T>, DbvtError> {
        self.wide_from(WideStorage::default())
    }

    /// [`Dbvt::wide`] in the memory of an earlier copy. If that copy was made from this tree and
    /// its links have not changed since (proxies moved by [`Dbvt::update_proxies`] and a
    /// [`Dbvt::refit`] keep them; insertions, removals, reinsertions and optimisation change
    /// them), only its boxes are copied again; otherwise the tree is collapsed anew.
    pub fn wide_from(&self, storage: WideStorage) -> Result<WideDbvt<'_, T>, DbvtError> {
        // A copy of another tree may share a topology count by chance: refit only our own.
        let old = storage.0.filter(|(tag, _)| *tag == self.tag).map(|(_, view)| view);
        Ok(WideDbvt { tree: self, view: self.wide_view(old)? })
    }
}

impl<T> WideDbvt<'_, T> {
    /// [`Dbvt::visit_ray`] over the copy: the same proxies reach `policy`, nearest entry first
    /// among those waiting.
    pub fn visit_ray<P: RayPolicy<T>>(
        &self,
        ray: &Ray,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.tree.visit_ray_wide(&self.view, ray, &mut ws.wide_stack, policy)
    }

    /// [`Dbvt::intersect`] over the copy: the proxy whose fat box the ray enters first.
    pub fn intersect(&self, ray: &Ray, ws: &mut QueryWorkspace) -> Result<Option<ProxyHit>, DbvtError> {
        let mut best: Option<ProxyHit> = None;
        self.visit_ray(ray, ws, &mut closest_hit(&mut best))?;
        Ok(best)
    }

    /// [`Dbvt::frustum`] over the copy: the same proxies reach `policy`, in another order.
    pub fn frustum<P: LeafPolicy<T>>(
        &self,
        frustum: &Frustum,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.tree.frustum_wide(&self.view, frustum, &mut ws.wide_stack, policy)
    }

    /// The tree this is a copy of.
    pub fn tree(&self) -> &Dbvt<T> {
        self.tree
    }

    /// Nodes of the copy (each of up to eight children).
    pub fn node_count(&self) -> usize {
        self.view.node_count()
    }

    /// Gives back the copy's memory for [`Dbvt::wide_from`].
    pub fn into_storage(self) -> WideStorage {
        WideStorage(Some((self.tree.tag, self.view)))
    }
}

impl<T> std::fmt::Debug for WideDbvt<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WideDbvt").field("nodes", &self.view.node_count()).finish_non_exhaustive()
    }
}
