//! Whether consecutive rays point the same way: the hint that picks a traversal tuned for rays
//! whose nodes are already in cache, or for rays that each walk a path of their own.
//!
//! Embree takes the same hint from its caller (`RTC_INTERSECT_CONTEXT_FLAG_COHERENT` and
//! `_INCOHERENT` in the intersect context). Here the batch queries also judge it themselves, from
//! a sample of each run of rays ([`RayCoherence::of_rays`]).

use glam::Vec3A;

use super::Ray;

/// How alike the directions of consecutive rays are: the hint of
/// [`crate::MeshBvh::intersect_with`] and [`crate::MeshBvh::occluded_with`] through [`RayOptions`].
///
/// Coherent rays (a camera's pixels in scan order, shadow rays towards one light) walk nearly the
/// same nodes one after another, so each walk finds its nodes in cache. Incoherent rays (random
/// rays, diffuse bounces) each walk a path of their own, and wait on memory at most nodes; the
/// walk for them loads every child of a node while the node's test runs, which costs coherent
/// rays a little time and gains incoherent ones more (`docs/performance.md`, "Early child loads
/// and coherence hints").
///
/// ```
/// use glam::Vec3;
/// use slabtree::{Ray, RayCoherence};
/// // A camera's scan line: neighbouring directions.
/// let row: Vec<Ray> = (0..64).map(|i| Ray::new(Vec3::ZERO, Vec3::new(i as f32 * 0.01, 0.0, -1.0))).collect();
/// assert_eq!(RayCoherence::of_rays(&row), RayCoherence::Coherent);
/// // Directions that jump about.
/// let scattered: Vec<Ray> =
///     (0..64).map(|i| Ray::new(Vec3::ZERO, Vec3::new((i * 37 % 11) as f32 - 5.0, (i % 3) as f32 - 1.0, 1.0))).collect();
/// assert_eq!(RayCoherence::of_rays(&scattered), RayCoherence::Incoherent);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RayCoherence {
    /// Consecutive rays point nearly the same way (the default, and what a single query assumes).
    #[default]
    Coherent,
    /// Consecutive rays point in unrelated directions.
    Incoherent,
}

/// The options of one ray's query with a policy ([`MeshBvh::intersect_with`](crate::MeshBvh::intersect_with),
/// [`MeshBvh::occluded_with`](crate::MeshBvh::occluded_with)), as Embree 4's arguments struct
/// holds its context flags: they change how long the query takes, never its answer.
///
/// ```
/// use slabtree::{AcceptAll, BuildOptions, MeshBvh, Ray, RayCoherence, RayOptions, TriMesh};
/// use glam::Vec3;
/// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default());
/// let ray = Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z);
/// // A random ray traced one by one: the walk that loads children early.
/// let options = RayOptions { coherence: RayCoherence::Incoherent };
/// assert_eq!(bvh.intersect_with(&ray, &mut AcceptAll, options)?, bvh.intersect(&ray)?);
/// # Ok::<(), slabtree::InputError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RayOptions {
    /// How alike this ray's direction is to the rays traced just before it on this thread. An
    /// [`RayCoherence::Incoherent`] ray takes a walk that loads every child of a node while the
    /// node is tested: faster for rays that each walk their own path (random rays, diffuse
    /// bounces), slower for rays that follow their neighbours' nodes. The default,
    /// [`RayCoherence::Coherent`], is what [`MeshBvh::intersect`](crate::MeshBvh::intersect)
    /// assumes; batches judge each run of rays themselves.
    pub coherence: RayCoherence,
}

/// Largest average step between the unit directions of consecutive rays, per axis, for rays to be
/// coherent (neighbouring pixels of a 256-pixel image with a 90° view differ by about 0.008; random
/// directions by about 0.9).
pub(crate) const MAX_STEP: f32 = 0.05;

impl RayCoherence {
    /// Judges `rays` from every eighth pair of consecutive rays: coherent when their unit
    /// directions differ on average by at most 0.05 on their most different axis. Fewer than two
    /// rays are coherent. Costs about one normalisation per four rays.
    pub fn of_rays(rays: &[Ray]) -> RayCoherence {
        Self::of_directions(rays.len(), |i| rays[i].dir())
    }

    /// [`RayCoherence::of_rays`] of `count` rays whose directions `dir(i)` gives, for callers
    /// that hold rays in their own layout (columns of an array, say).
    pub fn of_directions(count: usize, dir: impl Fn(usize) -> Vec3A) -> RayCoherence {
        let unit = |i: usize| dir(i).normalize_or_zero();
        let (mut step, mut pairs) = (0.0f32, 0usize);
        for i in (0..count.saturating_sub(1)).step_by(8) {
            step += (unit(i + 1) - unit(i)).abs().max_element();
            pairs += 1;
        }
        // A NaN step (from a NaN direction) compares false: incoherent, which only changes speed.
        if step <= MAX_STEP * pairs as f32 { RayCoherence::Coherent } else { RayCoherence::Incoherent }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_by_the_average_step() {
        let ray = |x: f32| Ray::new(glam::Vec3::ZERO, glam::Vec3::new(x, 0.0, 1.0));
        // Steps of 0.04 between unit directions, about, are coherent; of 0.1 are not.
        let fine: Vec<Ray> = (0..100).map(|i| ray(i as f32 * 0.04)).collect();
        let coarse: Vec<Ray> = (0..100).map(|i| ray((i % 2) as f32 * 0.2)).collect();
        assert_eq!(RayCoherence::of_rays(&fine[..20]), RayCoherence::Coherent);
        assert_eq!(RayCoherence::of_rays(&coarse), RayCoherence::Incoherent);
        // Too few rays to judge.
        assert_eq!(RayCoherence::of_rays(&coarse[..1]), RayCoherence::Coherent);
        assert_eq!(RayCoherence::of_rays(&[]), RayCoherence::Coherent);
    }
}
