//! Single-tree queries: ray cast, box cast (swept AABB), overlap, point and frustum. Each is a
//! [`Visitor`] of the one traversal loop, and each hands leaves to a caller's policy.
//!
//! Queries test the proxies' stored (fat) boxes, as Bullet's and Box2D's trees do; the policy is
//! where a caller runs its exact test (against a tight box, a mesh, a shape) and tells the
//! traversal what to do next.

use glam::Vec3A;
use wide::f32x4;

use super::node::{BoxLanes, FrustumLanes, Node, RayLanes};
use super::traverse::{NodeTest, QueryWorkspace, Visitor};
use super::{Dbvt, DbvtError, ProxyId};
use crate::math::InputError;
use crate::math::QueryStats;
use crate::math::{Aabb, Frustum, Ray, slab_interval};

/// A leaf reached by a ray cast or a box cast.
#[derive(Clone, Copy, Debug)]
pub struct RayLeaf<'a, T> {
    /// The proxy.
    pub id: ProxyId,
    /// Its user data.
    pub data: &'a T,
    /// Where the ray enters the proxy's fat box (for a box cast: the time of first contact of
    /// the moving box with it, in `[0, 1]`). Equals the ray's `tmin` when it starts inside.
    pub t: f32,
    /// The ray's current end: the last clip, or its original `tmax`.
    pub tmax: f32,
}

/// What a ray-cast policy tells the traversal after a leaf.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RayControl {
    /// Go on; the leaf is ignored (skipped) or recorded by the policy.
    Continue,
    /// Go on, but only up to `t`: the ray's `tmax` becomes `min(tmax, t)`, and no later leaf
    /// is reported beyond it. This is how closest-hit queries prune.
    Clip(f32),
    /// End the query now.
    Stop,
}

impl RayControl {
    /// Carries out the control on a traversal's current `tmax`: a clip shortens it (a NaN or
    /// longer clip is ignored rather than trusted). Returns `false` to stop.
    #[inline(always)]
    pub(crate) fn apply(self, tmax: &mut f32) -> bool {
        match self {
            RayControl::Continue => true,
            RayControl::Clip(t) => {
                if t < *tmax {
                    *tmax = t;
                }
                true
            }
            RayControl::Stop => false,
        }
    }
}

/// Decides, at each leaf a ray or box cast reaches, whether to continue, clip or stop.
/// Closures `FnMut(RayLeaf<T>) -> RayControl` implement it.
pub trait RayPolicy<T> {
    /// Called once per leaf whose box the ray reaches within its current range, nearest entry
    /// first (in the order of node entry, so a leaf may follow one with a larger `t`).
    fn visit(&mut self, leaf: RayLeaf<'_, T>) -> RayControl;
}

impl<T, F: FnMut(RayLeaf<'_, T>) -> RayControl> RayPolicy<T> for F {
    fn visit(&mut self, leaf: RayLeaf<'_, T>) -> RayControl {
        self(leaf)
    }
}

/// What an overlap, point or frustum policy tells the traversal after a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafControl {
    /// Go on.
    Continue,
    /// End the query now.
    Stop,
}

/// Receives the leaves of overlap, point and frustum queries. Closures
/// `FnMut(ProxyId, &T) -> LeafControl` implement it.
pub trait LeafPolicy<T> {
    /// Called once per proxy whose box passes the query's test.
    fn visit(&mut self, id: ProxyId, data: &T) -> LeafControl;
}

impl<T, F: FnMut(ProxyId, &T) -> LeafControl> LeafPolicy<T> for F {
    fn visit(&mut self, id: ProxyId, data: &T) -> LeafControl {
        self(id, data)
    }
}

/// The closest proxy box on a ray or box cast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProxyHit {
    /// The proxy.
    pub id: ProxyId,
    /// Its entry distance (box cast: time of first contact).
    pub t: f32,
}

/// The policy of [`Dbvt::intersect`] (and of the 8-wide copy's): keeps in `best` the box entered
/// first, of equal distances the lowest proxy index, and clips the ray to it. Clipping keeps
/// entries at exactly `t` (the traversal's tests are inclusive), so every box tied with the best
/// is seen, whatever the order of visits.
pub(crate) fn closest_hit<T>(best: &mut Option<ProxyHit>) -> impl FnMut(RayLeaf<'_, T>) -> RayControl + '_ {
    |leaf: RayLeaf<'_, T>| {
        if best.is_none_or(|b| leaf.t < b.t || (leaf.t == b.t && leaf.id.index() < b.id.index())) {
            *best = Some(ProxyHit { id: leaf.id, t: leaf.t });
        }
        RayControl::Clip(leaf.t)
    }
}

/// Ray cast and box cast: the slab test, with node bounds grown by the moving box's half-extents
/// for a box cast (Minkowski sum, as Bullet's `rayTestInternal` with `aabbMin/aabbMax`).
struct RayVisitor<'p, P, const INFLATE: bool> {
    lanes: RayLanes,
    ray: Ray,
    inflate: Vec3A,
    scalar: bool,
    policy: &'p mut P,
}

impl<P, const INFLATE: bool> RayVisitor<'_, P, INFLATE> {
    /// The scalar reference test of one box (grown by `inflate`).
    #[inline(always)]
    fn scalar_test(&self, b: &Aabb) -> Option<f32> {
        let (min, max) = if INFLATE { (b.min - self.inflate, b.max + self.inflate) } else { (b.min, b.max) };
        let s = slab_interval(
            [min.to_array(), max.to_array()],
            self.ray.origin().to_array(),
            self.ray.inv_dir().to_array(),
            self.ray.sign(),
            self.ray.tmin,
            self.ray.tmax,
        );
        s.is_hit().then_some(s.near)
    }
}

impl<T, P: RayPolicy<T>, const INFLATE: bool> Visitor<T> for RayVisitor<'_, P, INFLATE> {
    const ORDERED: bool = true;

    fn enter_root(&mut self, bounds: &Aabb) -> Option<f32> {
        self.scalar_test(bounds)
    }

    #[inline(always)]
    fn test_children(&mut self, node: &Node, _: f32) -> (u32, [f32; 2]) {
        if self.scalar {
            let mut mask = 0;
            let mut keys = [0.0; 2];
            for (s, key) in keys.iter_mut().enumerate() {
                if let Some(t) = self.scalar_test(&node.bounds(s)) {
                    mask |= 1 << s;
                    *key = t;
                }
            }
            (mask, keys)
        } else {
            self.lanes.test_pair::<INFLATE>(node, self.ray.tmax)
        }
    }

    #[inline(always)]
    fn visit_leaf(&mut self, id: ProxyId, data: &T, t: f32) -> bool {
        self.policy.visit(RayLeaf { id, data, t, tmax: self.ray.tmax }).apply(&mut self.ray.tmax)
    }

    #[inline(always)]
    fn keep(&self, key: f32) -> bool {
        key <= self.ray.tmax
    }
}

/// Overlap with a box (and, as a zero-sized box, a point).
struct BoxVisitor<'p, P> {
    query: Aabb,
    lanes: BoxLanes,
    scalar: bool,
    policy: &'p mut P,
}

impl<T, P: LeafPolicy<T>> Visitor<T> for BoxVisitor<'_, P> {
    const ORDERED: bool = false;
    fn enter_root(&mut self, bounds: &Aabb) -> Option<f32> {
        bounds.overlaps(&self.query).then_some(0.0)
    }
    #[inline(always)]
    fn test_children(&mut self, node: &Node, _: f32) -> (u32, [f32; 2]) {
        let mask = if self.scalar {
            (node.bounds(0).overlaps(&self.query) as u32) | ((node.bounds(1).overlaps(&self.query) as u32) << 1)
        } else {
            self.lanes.test_pair(node)
        };
        (mask, [0.0; 2])
    }
    fn visit_leaf(&mut self, id: ProxyId, data: &T, _: f32) -> bool {
        self.policy.visit(id, data) == LeafControl::Continue
    }
    fn keep(&self, _: f32) -> bool {
        true
    }
}

/// Frustum culling: plane tests with the p-vertex of each box, with plane masking. An entry's
/// key is the 6-bit mask (as an exact small `f32`) of the planes its box is not known to be
/// inside; a subtree wholly inside the frustum is walked without a test.
struct FrustumVisitor<'p, P> {
    frustum: Frustum,
    lanes: FrustumLanes<f32x4>,
    scalar: bool,
    policy: &'p mut P,
}

/// Every plane active: the root's key.
pub(super) const ALL_PLANES: u32 = 0b11_1111;

impl<P> FrustumVisitor<'_, P> {
    fn scalar_test(&self, b: &Aabb, active: u32) -> (bool, u32) {
        frustum_box_test(&self.frustum, b, active)
    }
}

/// The scalar reference for [`FrustumLanes::test_pair`] (and the 8-wide copy's test): whether
/// `b` is kept against the planes in `active`, and the active planes `b` is not entirely inside.
pub(super) fn frustum_box_test(frustum: &Frustum, b: &Aabb, active: u32) -> (bool, u32) {
    let mut partial = 0;
    for (i, plane) in frustum.planes.iter().enumerate() {
        if active & (1 << i) == 0 {
            continue;
        }
        if plane.box_outside(b) {
            return (false, 0);
        }
        let n_vertex = Vec3A::select(plane.normal.cmpge(Vec3A::ZERO), b.min, b.max);
        // Not inside unless the n-vertex is on or above the plane (a NaN is not inside).
        if plane.signed_distance(n_vertex).partial_cmp(&0.0).is_none_or(|o| o.is_lt()) {
            partial |= 1 << i;
        }
    }
    (true, partial)
}

impl<T, P: LeafPolicy<T>> Visitor<T> for FrustumVisitor<'_, P> {
    const ORDERED: bool = false;
    fn enter_root(&mut self, bounds: &Aabb) -> Option<f32> {
        let (keep, active) = self.scalar_test(bounds, ALL_PLANES);
        keep.then_some(active as f32)
    }
    #[inline(always)]
    fn test_children(&mut self, node: &Node, key: f32) -> (u32, [f32; 2]) {
        let active = key as u32;
        if active == 0 {
            return (3, [0.0; 2]);
        }
        let (mask, partial) = if self.scalar {
            let (k0, p0) = self.scalar_test(&node.bounds(0), active);
            let (k1, p1) = self.scalar_test(&node.bounds(1), active);
            (k0 as u32 | (k1 as u32) << 1, [p0, p1])
        } else {
            self.lanes.test_pair(node, active)
        };
        (mask, [partial[0] as f32, partial[1] as f32])
    }
    fn visit_leaf(&mut self, id: ProxyId, data: &T, _: f32) -> bool {
        self.policy.visit(id, data) == LeafControl::Continue
    }
    fn keep(&self, _: f32) -> bool {
        true
    }
    fn whole(&self, key: f32) -> bool {
        key == 0.0
    }
}

impl<T> Dbvt<T> {
    /// Queries refuse to run while [`Dbvt::update_proxy`] changes await a refit.
    #[inline]
    pub(super) fn check_refitted(&self) -> Result<(), DbvtError> {
        if self.refit_pending { Err(DbvtError::RefitPending) } else { Ok(()) }
    }

    /// Visits every proxy along a ray: each proxy whose fat box the ray reaches within its
    /// current range goes to `policy`, nearest box first, and the policy may continue, shorten
    /// the ray ([`RayControl::Clip`]) or stop. [`Dbvt::intersect`] is this walk with a policy
    /// that keeps the nearest box.
    ///
    /// Refuses a NaN or infinite ray, or one with `tmin > tmax`, with an error and visits nothing.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt, QueryWorkspace, Ray, RayControl};
    /// use glam::Vec3A;
    /// let (tree, _) = Dbvt::build((0..10).map(|i| {
    ///     let c = Vec3A::new(i as f32 * 3.0, 0.0, 0.0);
    ///     (Aabb::from_center_half_extents(c, Vec3A::splat(0.5)), i)
    /// }))?;
    /// let mut ws = QueryWorkspace::new();
    /// // All boxes the ray passes, without clipping:
    /// let mut all = Vec::new();
    /// tree.visit_ray(&Ray::new(Vec3A::new(-5.0, 0.0, 0.0), Vec3A::X), &mut ws, &mut |leaf: slabtree::RayLeaf<i32>| {
    ///     all.push(*leaf.data);
    ///     RayControl::Continue
    /// })?;
    /// all.sort();
    /// assert_eq!(all, (0..10).collect::<Vec<_>>());
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn visit_ray<P: RayPolicy<T>>(
        &self,
        ray: &Ray,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        ray.validate()?;
        let lanes = RayLanes::new(ray.origin(), ray.inv_dir(), ray.sign(), ray.tmin, Vec3A::ZERO);
        let scalar = ws.node_test == NodeTest::Scalar;
        let mut v = RayVisitor::<P, false> { lanes, ray: *ray, inflate: Vec3A::ZERO, scalar, policy };
        Ok(self.traverse(&mut ws.stack, &mut v))
    }

    /// The proxy whose fat box the ray enters first, with its entry distance; of boxes entered
    /// at the same distance, the one of lowest [`ProxyId::index`] (whatever order the traversal
    /// meets them in, so [`WideDbvt::intersect`](super::WideDbvt::intersect) answers the same).
    pub fn intersect(&self, ray: &Ray, ws: &mut QueryWorkspace) -> Result<Option<ProxyHit>, DbvtError> {
        let mut best: Option<ProxyHit> = None;
        self.visit_ray(ray, ws, &mut closest_hit(&mut best))?;
        Ok(best)
    }

    /// Visits every proxy a moving box passes: box `aabb` swept along `displacement` (`t` in
    /// `[0, 1]`) hands each proxy it touches to `policy` with the exact time of first contact
    /// against the proxy's fat box, earliest box first. Node bounds are grown by the moving box's
    /// half-extents, so this is a ray walk from the box's centre against Minkowski sums.
    /// [`Dbvt::cast_box`] is this walk with a policy that keeps the first contact.
    pub fn visit_swept_box<P: RayPolicy<T>>(
        &self,
        aabb: &Aabb,
        displacement: Vec3A,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        aabb.validate()?;
        let ray = Ray::new(aabb.center(), displacement).with_range(0.0, 1.0);
        ray.validate()?;
        let inflate = aabb.half_extents();
        // A finite box can still have infinite half-extents (min -3e38, max 3e38); node planes
        // grown by them would become NaN and constrain nothing.
        if !inflate.is_finite() {
            return Err(InputError::NonFiniteAabb { min: aabb.min.into(), max: aabb.max.into() }.into());
        }
        let lanes = RayLanes::new(ray.origin(), ray.inv_dir(), ray.sign(), ray.tmin, inflate);
        let scalar = ws.node_test == NodeTest::Scalar;
        let mut v = RayVisitor::<P, true> { lanes, ray, inflate, scalar, policy };
        Ok(self.traverse(&mut ws.stack, &mut v))
    }

    /// The first proxy a moving box touches, with the time of contact.
    pub fn cast_box(
        &self,
        aabb: &Aabb,
        displacement: Vec3A,
        ws: &mut QueryWorkspace,
    ) -> Result<Option<ProxyHit>, DbvtError> {
        let mut best: Option<ProxyHit> = None;
        self.visit_swept_box(aabb, displacement, ws, &mut |leaf: RayLeaf<'_, T>| {
            if best.is_none_or(|b| leaf.t < b.t) {
                best = Some(ProxyHit { id: leaf.id, t: leaf.t });
            }
            RayControl::Clip(leaf.t)
        })?;
        Ok(best)
    }

    /// Hands every proxy whose fat box overlaps `aabb` (touching counts) to `policy`.
    pub fn overlap<P: LeafPolicy<T>>(
        &self,
        aabb: &Aabb,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        aabb.validate()?;
        let scalar = ws.node_test == NodeTest::Scalar;
        let mut v = BoxVisitor { query: *aabb, lanes: BoxLanes::new(aabb), scalar, policy };
        Ok(self.traverse(&mut ws.stack, &mut v))
    }

    /// Hands every proxy whose fat box contains point `p` (boundary included) to `policy`.
    pub fn point<P: LeafPolicy<T>>(
        &self,
        p: Vec3A,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.overlap(&Aabb::new(p, p), ws, policy)
    }

    /// Hands every proxy whose fat box is not certainly outside the frustum to `policy`
    /// (conservative, as [`Frustum::may_contain`]).
    pub fn frustum<P: LeafPolicy<T>>(
        &self,
        frustum: &Frustum,
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        frustum.validate()?;
        let scalar = ws.node_test == NodeTest::Scalar;
        let mut v =
            FrustumVisitor { frustum: *frustum, lanes: FrustumLanes::new(frustum, f32x4::splat), scalar, policy };
        Ok(self.traverse(&mut ws.stack, &mut v))
    }
}
