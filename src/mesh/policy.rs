//! Hit policies: the caller's decision at every triangle a ray crosses.
//!
//! The counterpart, for triangles, of the dynamic tree's [`crate::RayPolicy`], and of Embree's
//! filter functions: at each candidate hit (triangle, `t`, `u`, `v`) the policy accepts it (the
//! ray is clipped to it), ignores it (an alpha-tested leaf, the ray's own surface) or stops the
//! query at it. Policy queries run on the fixed queries' kernel (the one traversal loop,
//! `wide::closest_first`, and the mesh's pack visitor), with a leaf test that offers each hit to
//! the policy where the fixed queries' takes the pack's nearest: [`MeshBvh::intersect_with`] on
//! the closest-first walk, [`MeshBvh::occluded_with`] on the any-hit walk. All hits along a ray
//! ([`MeshBvh::intersect_all`]) is the policy that ignores every hit.
//!
//! Within a pack, candidates are offered nearest first (the lowest lane on equal distances), and
//! an accepted one ends the pack: the others lie at or beyond it. So a policy that accepts
//! everything gets exactly the closest hit of [`MeshBvh::intersect`], tie for tie (a test checks
//! it).

use super::bvh::{Hit, LeafTest, MeshBvh};
use super::triangle::{LaneHits, PackHit, TriPack, TriRay};
use crate::math::{InputError, Ray};

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

/// Ray against triangles, by the watertight test or by Möller–Trumbore: the nearest hit of each
/// pack, the leaf test of the fixed queries. (A [`PolicyLeaf`] whose policy accepts everything
/// gives the same hits, but its loop over a pack's lanes cost 2-3% more instructions per
/// closest-hit ray on the bunny, callgrind.)
pub(super) struct RayLeaf<const WATERTIGHT: bool> {
    tr: TriRay,
}

impl<const WATERTIGHT: bool> RayLeaf<WATERTIGHT> {
    #[inline(always)]
    pub(super) fn new(ray: &Ray) -> Self {
        RayLeaf { tr: TriRay::new(ray.origin().into(), ray.dir().into(), ray.tmin, WATERTIGHT) }
    }

    /// The pack's hits within `tmax`.
    #[inline(always)]
    fn lanes(&self, p: &TriPack, tmax: f32) -> Option<LaneHits> {
        if WATERTIGHT { self.tr.intersect_watertight_lanes(p, tmax) } else { self.tr.intersect_mt_lanes(p, tmax) }
    }
}

impl<const WATERTIGHT: bool> LeafTest for RayLeaf<WATERTIGHT> {
    type Hit = PackHit;

    #[inline(always)]
    fn test(&mut self, index: u32, p: &TriPack, tmax: f32) -> Option<(u32, f32, PackHit)> {
        let mut h = if WATERTIGHT { self.tr.intersect_watertight(p, tmax) } else { self.tr.intersect_mt(p, tmax) }?;
        h.pack = index;
        Some((p.prim[h.lane], h.t, h))
    }
}

/// Ray against triangles with `policy` deciding at each hit.
pub(super) struct PolicyLeaf<'p, const WATERTIGHT: bool, P> {
    ray: RayLeaf<WATERTIGHT>,
    policy: &'p mut P,
    stopped: bool,
}

impl<'p, const WATERTIGHT: bool, P: HitPolicy> PolicyLeaf<'p, WATERTIGHT, P> {
    #[inline(always)]
    pub(super) fn new(ray: &Ray, policy: &'p mut P) -> Self {
        PolicyLeaf { ray: RayLeaf::new(ray), policy, stopped: false }
    }
}

impl<const WATERTIGHT: bool, P: HitPolicy> LeafTest for PolicyLeaf<'_, WATERTIGHT, P> {
    type Hit = PackHit;

    #[inline(always)]
    fn test(&mut self, index: u32, p: &TriPack, tmax: f32) -> Option<(u32, f32, PackHit)> {
        let lanes = self.ray.lanes(p, tmax)?;
        let mut left = lanes.mask;
        while left != 0 {
            let lane = lanes.nearest_of(left);
            left &= !(1 << lane);
            let found = lanes.hit(index, lane);
            let candidate = HitCandidate { triangle: p.prim[lane], t: found.t, u: found.u, v: found.v, found };
            match self.policy.visit(&candidate) {
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
        self.stopped
    }
}

impl MeshBvh {
    /// The nearest hit that `policy` accepts (or the one it stops at), walking the BVH nearest
    /// first as [`MeshBvh::intersect`] does; `policy` sees every triangle the ray crosses before
    /// its current end, each at most once, roughly nearest first. An invalid ray is refused, as by
    /// [`MeshBvh::intersect`].
    ///
    /// An alpha test that lets the ray through the left half of each triangle:
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
