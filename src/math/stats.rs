//! What one query visited, counted the same way by every tree.

/// Visit counts of one query, for profiling, cost heat maps and tests (Box2D v3 returns these
/// from every query). The instructions of a query are about a fixed cost per node plus one per
/// leaf, so these two numbers compare trees and kernels without a timer.
///
/// ```
/// use glam::Vec3;
/// use slabtree::{BuildOptions, MeshBvh, QueryStats, Ray, TriMesh};
/// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default());
/// let ray = Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z);
/// let (hit, stats): (_, QueryStats) = bvh.intersect_counting(&ray).unwrap();
/// assert!(hit.is_some() && stats.nodes >= 1 && stats.leaves >= 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Internal nodes whose children were tested: a mesh BVH's 8-wide nodes, a dynamic tree's
    /// binary nodes (for pair queries: node pairs tested).
    pub nodes: u32,
    /// Leaves tested or handed to the policy: a mesh BVH's triangle packs of up to 4, a dynamic
    /// tree's proxies (for pair queries: leaf pairs reported).
    pub leaves: u32,
}
