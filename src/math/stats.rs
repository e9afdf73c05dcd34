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
    pub nodes: u64,
    /// Leaves tested or handed to the policy: a mesh BVH's triangle packs of up to 4, a dynamic
    /// tree's proxies (for pair queries: leaf pairs reported).
    pub leaves: u64,
}

/// Visits summed, as a batch sums its rays' (`QueryStats::default()` is the zero).
///
/// ```
/// use slabtree::QueryStats;
/// let rays = [QueryStats { nodes: 3, leaves: 1 }, QueryStats { nodes: 5, leaves: 2 }];
/// let total: QueryStats = rays.iter().copied().sum();
/// assert_eq!(total, QueryStats { nodes: 8, leaves: 3 });
/// ```
impl std::ops::Add for QueryStats {
    type Output = QueryStats;
    #[inline]
    fn add(self, other: QueryStats) -> QueryStats {
        QueryStats { nodes: self.nodes + other.nodes, leaves: self.leaves + other.leaves }
    }
}

impl std::ops::AddAssign for QueryStats {
    #[inline]
    fn add_assign(&mut self, other: QueryStats) {
        *self = *self + other;
    }
}

impl std::iter::Sum for QueryStats {
    fn sum<I: Iterator<Item = QueryStats>>(iter: I) -> QueryStats {
        iter.fold(QueryStats::default(), |a, b| a + b)
    }
}
