//! What a ray's walk does at a leaf of the mesh BVH: the leaf test ([`LeafTest`]), and the one
//! leaf test of every ray query ([`TriangleLeaf`]), generic over what decides at each hit it
//! finds: the pack's nearest hit taken at once ([`Nearest`], the fixed queries), or each hit
//! offered to the caller's [`HitPolicy`] ([`Offer`], `super::policy`'s queries).

use super::triangle::{PackHit, TriPack, TriRay};
use super::triangle_set::{SeenOnRay, TriangleSet};
use crate::math::Ray;
use crate::wide::packet::raised_tmax;

/// What the traversal does at a leaf: test a triangle pack against the current `tmax` and return
/// the nearest hit's triangle, distance and payload.
pub(crate) trait LeafTest {
    type Hit;
    /// `index` is the pack's position in the BVH (`super::layout`); `ANY` says the walk ends at
    /// the first hit.
    fn test<const ANY: bool>(&mut self, index: u32, pack: &TriPack, tmax: f32) -> Option<(u32, f32, Self::Hit)>;

    /// The bound the walk culls boxes with while the ray ends at `t` (its `tmax`, then each
    /// closer hit's `t`): `t` itself, or a little more where the leaf test must see every hit
    /// at `t` ([`TriangleLeaf`]).
    #[inline(always)]
    fn walk_tmax(&self, t: f32) -> f32 {
        t
    }

    /// Whether the hit just returned ends the query (a policy's stop); a closest-hit walk
    /// otherwise goes on, clipped to it.
    #[inline(always)]
    fn stopped(&self) -> bool {
        false
    }
}

/// A triangle a ray crosses within its current range, offered to a [`HitPolicy`].
#[derive(Clone, Copy, Debug)]
pub struct HitCandidate {
    /// The triangle's index in the mesh.
    pub triangle: u32,
    /// The distance along the ray, as the traversal computed it in f32 (the [`Hit`](super::Hit) a query
    /// returns refines it in f64).
    pub t: f32,
    /// Barycentric weight of the triangle's second corner.
    pub u: f32,
    /// Barycentric weight of the third corner.
    pub v: f32,
    /// Where the traversal found it, to finish the public hit without reading the mesh.
    pub(crate) found: PackHit,
}

/// What a [`HitPolicy`] tells the traversal about a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitControl {
    /// Take the hit: the ray ends at it, and the query returns it unless a closer one is taken
    /// later.
    Accept,
    /// Pass through: the ray goes on as if the triangle were not there.
    Ignore,
    /// Take the hit and end the query at once (an early exit: the hit is returned even if a
    /// closer one might have been found).
    Stop,
}

/// Decides, at each triangle a ray crosses, whether to accept, ignore or stop. Closures
/// `FnMut(&HitCandidate) -> HitControl` implement it.
pub trait HitPolicy {
    /// Whether the policy accepts every hit, so that the query can take the nearest hit of each
    /// triangle pack without asking, on the fixed queries' walk. Only [`AcceptAll`] sets it.
    #[doc(hidden)]
    const ACCEPTS_ALL: bool = false;

    /// Called once per triangle the ray crosses within its current range.
    fn visit(&mut self, candidate: &HitCandidate) -> HitControl;
}

impl<F: FnMut(&HitCandidate) -> HitControl> HitPolicy for F {
    #[inline(always)]
    fn visit(&mut self, candidate: &HitCandidate) -> HitControl {
        self(candidate)
    }
}

/// The policy that accepts every hit: [`MeshBvh::intersect_with`](super::MeshBvh::intersect_with)
/// with it is [`MeshBvh::intersect`](super::MeshBvh::intersect), on the same walk, taking the
/// [`RayOptions`](crate::RayOptions) it is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcceptAll;

impl HitPolicy for AcceptAll {
    const ACCEPTS_ALL: bool = true;
    #[inline(always)]
    fn visit(&mut self, _: &HitCandidate) -> HitControl {
        HitControl::Accept
    }
}

/// How a [`TriangleLeaf`] decides at a pack's hits: every hit offered to a caller's [`HitPolicy`]
/// ([`Offer`]), or the pack's nearest taken at once ([`Nearest`], the fixed queries). Known at
/// compile time, so the fixed queries' leaf test is the nearest-lane one with nothing of the
/// policy loop left in it: the loop, even with a policy that accepts everything, costs the fixed
/// queries instructions at every pack (`docs/performance.md`, "Hit policies, proximity queries and
/// shape casts").
pub(super) trait Decide {
    /// Whether only the pack's nearest hit matters, taken without asking.
    const NEAREST: bool;
    /// What to do with `candidate`.
    fn decide(&mut self, candidate: &HitCandidate) -> HitControl;
}

/// The fixed queries: the nearest hit is taken.
pub(super) struct Nearest;

impl Decide for Nearest {
    const NEAREST: bool = true;
    #[inline(always)]
    fn decide(&mut self, _: &HitCandidate) -> HitControl {
        HitControl::Accept
    }
}

/// A caller's policy, asked at every hit, once per triangle: a triangle in several leaves (the
/// BVH's `shared` ones, from spatial splits) is offered the first time the walk meets it, and
/// ignored after, whatever the policy said.
pub(super) struct Offer<'p, P> {
    policy: &'p mut P,
    shared: Option<&'p TriangleSet>,
    seen: SeenOnRay,
}

impl<'p, P> Offer<'p, P> {
    /// `policy`, for a BVH whose triangles in several leaves are `shared`.
    pub(super) fn new(policy: &'p mut P, shared: Option<&'p TriangleSet>) -> Self {
        Offer { policy, shared, seen: SeenOnRay::new() }
    }
}

impl<P: HitPolicy> Decide for Offer<'_, P> {
    const NEAREST: bool = false;
    #[inline(always)]
    fn decide(&mut self, candidate: &HitCandidate) -> HitControl {
        if let Some(shared) = self.shared
            && shared.contains(candidate.triangle as usize)
            && !self.seen.first_time(candidate.triangle)
        {
            return HitControl::Ignore;
        }
        self.policy.visit(candidate)
    }
}

/// Ray against triangles, by the watertight test or by Möller–Trumbore, with `D` deciding at the
/// hits: the one leaf test of every ray query, fixed or with a policy.
pub(super) struct TriangleLeaf<const WATERTIGHT: bool, D> {
    tr: TriRay,
    decide: D,
    stopped: bool,
    /// Where the ray ends: its `tmax`, then the nearest hit's `t` (the walk's bound is a little
    /// more, [`LeafTest::walk_tmax`]).
    end_t: f32,
    /// The triangle of the nearest hit so far (`u32::MAX` before the first), for the choice
    /// between hits at one distance (see [`LeafTest::test`] below).
    end_prim: u32,
}

impl<const WATERTIGHT: bool, D: Decide> TriangleLeaf<WATERTIGHT, D> {
    #[inline(always)]
    pub(super) fn new(ray: &Ray, decide: D) -> Self {
        let tr = TriRay::new(ray, WATERTIGHT);
        TriangleLeaf { tr, decide, stopped: false, end_t: ray.tmax, end_prim: u32::MAX }
    }
}

impl<const WATERTIGHT: bool, D: Decide> LeafTest for TriangleLeaf<WATERTIGHT, D> {
    type Hit = PackHit;

    /// Without a policy, the walks of every SIMD level give the same answer, though they meet
    /// leaves in different orders (their node tests round differently):
    ///
    /// * the walk culls boxes with its bound raised by a rounding band ([`raised_tmax`]), so that
    ///   every level reaches every triangle hit at the ray's end, whatever its box's rounded
    ///   entry distance; the range itself is `end_t`, kept here;
    /// * of closest hits at one distance, the lower triangle index is kept. The pack is tested
    ///   up to the band past `end_t`, because its range check on the unrounded distance can
    ///   refuse a triangle whose rounded `t` is `end_t`; hits beyond `end_t` are dropped here.
    ///   (A pack's own choice among its lanes at one distance is its first lane's, the same at
    ///   every level.)
    #[inline(always)]
    fn test<const ANY: bool>(&mut self, index: u32, p: &TriPack, tmax: f32) -> Option<(u32, f32, PackHit)> {
        if D::NEAREST && ANY {
            // The same acceptance as the closest hit's below (tested up to the band, kept when
            // the rounded `t` is within the range), so that any hit finds a hit exactly when
            // closest hit does: a scaled check against the range's end alone can refuse a
            // triangle whose rounded `t` is that end, which closest hit takes.
            let end = self.end_t;
            let mut h = if WATERTIGHT { self.tr.intersect_watertight(p, tmax) } else { self.tr.intersect_mt(p, tmax) }?;
            if h.t > end {
                return None;
            }
            h.pack = index;
            return Some((p.prim[h.lane], h.t, h));
        }
        if D::NEAREST {
            let (end, band) = (self.end_t, tmax);
            let mut h = if WATERTIGHT { self.tr.intersect_watertight(p, band) } else { self.tr.intersect_mt(p, band) }?;
            let prim = p.prim[h.lane];
            if h.t > end || (h.t == end && prim >= self.end_prim) {
                return None;
            }
            (self.end_t, self.end_prim) = (h.t, prim);
            h.pack = index;
            return Some((prim, h.t, h));
        }
        // A policy is offered the triangles the fixed queries would take, by the same rule.
        let lanes =
            if WATERTIGHT { self.tr.intersect_watertight_lanes(p, tmax) } else { self.tr.intersect_mt_lanes(p, tmax) }?;
        let mut left = lanes.mask;
        while left != 0 {
            // Nearest first, so the first lane beyond the range ends the pack.
            let lane = lanes.nearest_of(left);
            left &= !(1 << lane);
            let found = lanes.hit(index, lane);
            let prim = p.prim[lane];
            if found.t > self.end_t {
                return None;
            }
            if found.t == self.end_t && prim >= self.end_prim {
                continue;
            }
            let candidate = HitCandidate { triangle: prim, t: found.t, u: found.u, v: found.v, found };
            match self.decide.decide(&candidate) {
                HitControl::Accept => {
                    (self.end_t, self.end_prim) = (found.t, prim);
                    return Some((prim, found.t, found));
                }
                HitControl::Ignore => {}
                HitControl::Stop => {
                    self.stopped = true;
                    return Some((prim, found.t, found));
                }
            }
        }
        None
    }

    #[inline(always)]
    fn stopped(&self) -> bool {
        !D::NEAREST && self.stopped
    }

    #[inline(always)]
    fn walk_tmax(&self, t: f32) -> f32 {
        raised_tmax(t)
    }
}
