//! Hit policies: the caller's decision at every triangle a ray crosses.
//!
//! The counterpart, for triangles, of the dynamic tree's [`crate::RayPolicy`], and of Embree's
//! filter functions: at each candidate hit (triangle, `t`, `u`, `v`) the policy accepts it (the
//! ray is clipped to it), ignores it (an alpha-tested leaf, the ray's own surface) or stops the
//! query at it. Every ray query runs on one kernel: the traversal loop (`wide::closest_first`),
//! the mesh's pack visitor, and one leaf test ([`RayLeaf`]) generic over what decides at a hit:
//! the fixed queries' take the pack's nearest hit ([`Nearest`]), the policy queries offer each
//! hit to the caller ([`Offer`]); [`MeshBvh::intersect_with`] walks closest first,
//! [`MeshBvh::occluded_with`] any hit first. All hits along a ray ([`MeshBvh::intersect_all`]) is
//! the policy that ignores every hit.
//!
//! Within a pack, candidates are offered nearest first (the lowest lane on equal distances), and
//! an accepted one ends the pack: the others lie at or beyond it. So a policy that accepts
//! everything gets exactly the closest hit of [`MeshBvh::intersect`], tie for tie (a test checks
//! it).

use super::bvh::{Hit, MeshBvh};
use super::query::LeafTest;
use super::triangle::{PackHit, TriPack, TriRay};
use crate::math::{InputError, Ray};
use crate::wide::packet::raised_tmax;

/// A triangle a ray crosses within its current range, offered to a [`HitPolicy`].
#[derive(Clone, Copy, Debug)]
pub struct HitCandidate {
    /// The triangle's index in the mesh.
    pub triangle: u32,
    /// The distance along the ray, as the traversal computed it in f32 (the [`Hit`] a query
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
    /// Called once per triangle the ray crosses within its current range.
    fn visit(&mut self, candidate: &HitCandidate) -> HitControl;
}

impl<F: FnMut(&HitCandidate) -> HitControl> HitPolicy for F {
    #[inline(always)]
    fn visit(&mut self, candidate: &HitCandidate) -> HitControl {
        self(candidate)
    }
}

/// How a [`RayLeaf`] decides at a pack's hits: every hit offered to a caller's [`HitPolicy`]
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

/// A caller's policy, asked at every hit.
pub(super) struct Offer<'p, P>(pub(super) &'p mut P);

impl<P: HitPolicy> Decide for Offer<'_, P> {
    const NEAREST: bool = false;
    #[inline(always)]
    fn decide(&mut self, candidate: &HitCandidate) -> HitControl {
        self.0.visit(candidate)
    }
}

/// Ray against triangles, by the watertight test or by Möller–Trumbore, with `D` deciding at the
/// hits: the one leaf test of every ray query, fixed or with a policy.
pub(super) struct RayLeaf<const WATERTIGHT: bool, D> {
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

impl<const WATERTIGHT: bool, D: Decide> RayLeaf<WATERTIGHT, D> {
    #[inline(always)]
    pub(super) fn new(ray: &Ray, decide: D) -> Self {
        let tr = TriRay::new(ray.origin().into(), ray.dir().into(), ray.tmin, WATERTIGHT);
        RayLeaf { tr, decide, stopped: false, end_t: ray.tmax, end_prim: u32::MAX }
    }
}

impl<const WATERTIGHT: bool, D: Decide> LeafTest for RayLeaf<WATERTIGHT, D> {
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
            let end = self.end_t;
            let mut h = if WATERTIGHT { self.tr.intersect_watertight(p, end) } else { self.tr.intersect_mt(p, end) }?;
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
        let lanes =
            if WATERTIGHT { self.tr.intersect_watertight_lanes(p, tmax) } else { self.tr.intersect_mt_lanes(p, tmax) }?;
        let mut left = lanes.mask;
        while left != 0 {
            let lane = lanes.nearest_of(left);
            left &= !(1 << lane);
            let found = lanes.hit(index, lane);
            let candidate = HitCandidate { triangle: p.prim[lane], t: found.t, u: found.u, v: found.v, found };
            match self.decide.decide(&candidate) {
                HitControl::Accept => return Some((candidate.triangle, found.t, found)),
                HitControl::Ignore => {}
                HitControl::Stop => {
                    self.stopped = true;
                    return Some((candidate.triangle, found.t, found));
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
        if D::NEAREST { raised_tmax(t) } else { t }
    }
}

impl MeshBvh {
    /// The nearest hit that `policy` accepts (or the one it stops at), walking the BVH nearest
    /// first as [`MeshBvh::intersect`] does; `policy` sees every triangle the ray crosses before
    /// its current end, each at most once, roughly nearest first. An invalid ray is refused, as by
    /// [`MeshBvh::intersect`].
    ///
    /// An alpha test that cuts one triangle away:
    ///
    /// ```
    /// use slabtree::{BuildOptions, HitControl, MeshBvh, Ray, TriMesh};
    /// use glam::{Vec3, Vec3A};
    /// // Two parallel quads at z = 1 and z = 2, each of two triangles.
    /// let quad = |z: f32| [Vec3::new(-1.0, -1.0, z), Vec3::new(1.0, -1.0, z), Vec3::new(1.0, 1.0, z), Vec3::new(-1.0, 1.0, z)];
    /// let positions: Vec<Vec3> = quad(1.0).into_iter().chain(quad(2.0)).collect();
    /// let mesh = TriMesh::new(positions, vec![[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let ray = Ray::new(Vec3A::new(0.2, 0.5, 0.0), Vec3A::Z);
    /// assert_eq!(bvh.intersect(&ray)?.unwrap().triangle, 1);
    /// // Triangle 1 (the near quad's upper left) is cut away: the ray goes on to the far quad.
    /// let hit = bvh.intersect_with(&ray, &mut |c: &slabtree::HitCandidate| {
    ///     if c.triangle == 1 { HitControl::Ignore } else { HitControl::Accept }
    /// })?;
    /// assert_eq!(hit.unwrap().triangle, 3);
    /// assert_eq!(hit.unwrap().t, 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_with(&self, ray: &Ray, policy: &mut impl HitPolicy) -> Result<Option<Hit>, InputError> {
        ray.validate()?;
        let (hit, _) = self.trace_with::<false, _>(ray, policy);
        Ok(hit.map(|(prim, h)| self.finish(prim, h, ray)))
    }

    /// Whether `policy` accepts (or stops at) any triangle the ray crosses: the any-hit walk of
    /// [`MeshBvh::occluded`], which ends at the first. For shadow rays through alpha-tested
    /// leaves. An invalid ray is refused.
    ///
    /// ```
    /// use slabtree::{BuildOptions, HitControl, MeshBvh, Ray, TriMesh};
    /// use glam::{Vec3, Vec3A};
    /// let mesh = TriMesh::new(vec![Vec3::new(-1.0, -1.0, 1.0), Vec3::new(1.0, -1.0, 1.0), Vec3::new(0.0, 1.0, 1.0)], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let ray = Ray::new(Vec3A::ZERO, Vec3A::Z);
    /// assert!(bvh.occluded(&ray)?);
    /// // A fully transparent triangle casts no shadow.
    /// assert!(!bvh.occluded_with(&ray, &mut |_: &slabtree::HitCandidate| HitControl::Ignore)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occluded_with(&self, ray: &Ray, policy: &mut impl HitPolicy) -> Result<bool, InputError> {
        ray.validate()?;
        Ok(self.trace_with::<true, _>(ray, policy).0.is_some())
    }

    /// Every triangle the ray crosses with `tmin <= t <= tmax`, into `hits` (cleared first),
    /// sorted by distance and then by triangle: inside/outside parity, wall thickness, all the
    /// surfaces along a line of sight. Each triangle appears once. Allocates nothing once `hits`
    /// has room. An invalid ray is refused.
    ///
    /// ```
    /// use slabtree::{MeshBvh, BuildOptions, Ray, TriMesh};
    /// use glam::{Vec3, Vec3A};
    /// // A closed box: a ray from inside crosses one wall, from outside two.
    /// let mesh = TriMesh::cuboid(Vec3::splat(1.0));
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let mut hits = Vec::new();
    /// bvh.intersect_all(&Ray::new(Vec3A::new(0.1, 0.2, 0.0), Vec3A::X), &mut hits)?;
    /// assert_eq!(hits.len(), 1);
    /// bvh.intersect_all(&Ray::new(Vec3A::new(-5.0, 0.2, 0.1), Vec3A::X), &mut hits)?;
    /// assert_eq!(hits.iter().map(|h| h.t).collect::<Vec<_>>(), [4.0, 6.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_all(&self, ray: &Ray, hits: &mut Vec<Hit>) -> Result<(), InputError> {
        ray.validate()?;
        hits.clear();
        self.trace_with::<false, _>(ray, &mut |c: &HitCandidate| {
            hits.push(self.finish(c.triangle, c.found, ray));
            HitControl::Ignore
        });
        hits.sort_unstable_by(|a, b| a.t.total_cmp(&b.t).then(a.triangle.cmp(&b.triangle)));
        Ok(())
    }
}
