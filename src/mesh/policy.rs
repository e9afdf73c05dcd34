//! Hit policies: the caller's decision at every triangle a ray crosses.
//!
//! The counterpart, for triangles, of the dynamic tree's [`crate::RayPolicy`], and of Embree's
//! filter functions: at each candidate hit (triangle, `t`, `u`, `v`) the policy accepts it (the
//! ray is clipped to it), ignores it (an alpha-tested leaf, the ray's own surface) or stops the
//! query at it. Every ray query runs on one kernel: the traversal loop (`wide::closest_first`),
//! the mesh's pack visitor, and one leaf test (`super::leaf::TriangleLeaf`) generic over what
//! decides at a hit: the fixed queries take the pack's nearest hit, the policy queries offer
//! each hit to the caller; [`MeshBvh::intersect_with`] walks closest first,
//! [`MeshBvh::occluded_with`] any hit first. All hits along a ray ([`MeshBvh::intersect_all`]) is
//! the policy that ignores every hit.
//!
//! Within a pack, candidates are offered nearest first (the lowest lane on equal distances), and
//! an accepted one ends the pack: the others lie at or beyond it. So a policy that accepts
//! everything gets exactly the closest hit of [`MeshBvh::intersect`], tie for tie (a test checks
//! it).

use super::bvh::{Hit, MeshBvh};
#[cfg(doc)]
use super::leaf::AcceptAll;
use super::leaf::{HitCandidate, HitControl, HitPolicy};
use crate::math::{InputError, Ray, RayCoherence, RayOptions};

impl MeshBvh {
    /// The nearest hit that `policy` accepts (or the one it stops at), walking the BVH nearest
    /// first as [`MeshBvh::intersect`] does; `policy` sees every triangle the ray crosses before
    /// its current end, each at most once, roughly nearest first. An invalid ray is refused, as by
    /// [`MeshBvh::intersect`].
    ///
    /// `options` say how the ray relates to the ones before it ([`RayOptions`]); [`AcceptAll`] as
    /// the policy gives [`MeshBvh::intersect`]'s answer on its own walk, with those options.
    ///
    /// An alpha test that cuts one triangle away:
    ///
    /// ```
    /// use slabtree::{BuildOptions, HitControl, MeshBvh, Ray, RayOptions, TriMesh};
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
    /// }, RayOptions::default())?;
    /// assert_eq!(hit.unwrap().triangle, 3);
    /// assert_eq!(hit.unwrap().t, 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_with<P: HitPolicy>(
        &self,
        ray: &Ray,
        policy: &mut P,
        options: RayOptions,
    ) -> Result<Option<Hit>, InputError> {
        ray.validate()?;
        // Every hit accepted: the fixed queries' walk, which takes a pack's nearest hit at once.
        let (hit, _) = if P::ACCEPTS_ALL {
            self.trace_valid::<false>(ray, options.coherence)
        } else {
            self.trace_with::<false, _>(ray, policy, options.coherence)
        };
        Ok(hit.map(|(prim, h)| self.finish(prim, h, ray)))
    }

    /// Whether `policy` accepts (or stops at) any triangle the ray crosses: the any-hit walk of
    /// [`MeshBvh::occluded`], which ends at the first. For shadow rays through alpha-tested
    /// leaves. An invalid ray is refused; `options` as for [`MeshBvh::intersect_with`].
    ///
    /// ```
    /// use slabtree::{BuildOptions, HitControl, MeshBvh, Ray, RayOptions, TriMesh};
    /// use glam::{Vec3, Vec3A};
    /// let mesh = TriMesh::new(vec![Vec3::new(-1.0, -1.0, 1.0), Vec3::new(1.0, -1.0, 1.0), Vec3::new(0.0, 1.0, 1.0)], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let ray = Ray::new(Vec3A::ZERO, Vec3A::Z);
    /// assert!(bvh.occluded(&ray)?);
    /// // A fully transparent triangle casts no shadow.
    /// let transparent = |_: &slabtree::HitCandidate| HitControl::Ignore;
    /// assert!(!bvh.occluded_with(&ray, &mut { transparent }, RayOptions::default())?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occluded_with<P: HitPolicy>(
        &self,
        ray: &Ray,
        policy: &mut P,
        options: RayOptions,
    ) -> Result<bool, InputError> {
        ray.validate()?;
        let (hit, _) = if P::ACCEPTS_ALL {
            self.trace_valid::<true>(ray, options.coherence)
        } else {
            self.trace_with::<true, _>(ray, policy, options.coherence)
        };
        Ok(hit.is_some())
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
        self.trace_with::<false, _>(
            ray,
            &mut |c: &HitCandidate| {
                hits.push(self.finish(c.triangle, c.found, ray));
                HitControl::Ignore
            },
            RayCoherence::Coherent,
        );
        hits.sort_unstable_by(|a, b| a.t.total_cmp(&b.t).then(a.triangle.cmp(&b.triangle)));
        Ok(())
    }
}
