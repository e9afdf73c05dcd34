//! How a batch of rays runs: the options every type's `intersect_batch` and `occluded_batch`
//! take. They change how long a batch takes, and whether it counts its visits, never its
//! answers.

/// Where a batch's rays are traced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// On rayon's threads (feature `parallel`; without it, on the calling thread): the global
    /// pool, or the pool the caller runs in (`ThreadPool::install`).
    #[default]
    Pool,
    /// On the calling thread only: for a caller that already runs one batch per thread (a
    /// renderer's tiles, a job system), where a pool would only add hand-offs.
    Calling,
}

/// How a batch runs ([`MeshBvh::intersect_batch`](crate::MeshBvh::intersect_batch) and the
/// others). The default is what suits most rays: rayon's threads, and the library's choice of
/// how each run of rays walks the tree (packets where they are timed faster, else one ray at a
/// time, with several in flight for incoherent runs through a BVH larger than the caches).
///
/// ```
/// use slabtree::{BatchOptions, Threads};
/// let on_this_thread = BatchOptions { threads: Threads::Calling, ..Default::default() };
/// let one_by_one = BatchOptions { packets: false, ..Default::default() };
/// assert!(on_this_thread.packets && !one_by_one.packets);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchOptions {
    /// Where the rays are traced.
    pub threads: Threads,
    /// Let coherent rays go as packets (ray streams, `mesh::stream`; on by default): rays whose
    /// directions agree are regrouped into packets of up to 64 that walk the BVH together, and
    /// the others go one by one. Packets pay for camera rays through an interior, where many
    /// rays share each leaf, and cost time where few do (small or distant objects, shadow rays
    /// from scattered points); so a stream times both walks on a share of its rays every few
    /// thousand rays, and traces the rest with the faster (`docs/performance.md`, "Ray
    /// streams"). On rayon's threads a batch goes as packets only with two windows of 4096 rays
    /// or more per thread; a shorter one shares out its single rays in short runs instead.
    /// `false` traces every ray alone, as a loop of single rays would. The answers are the
    /// same either way.
    pub packets: bool,
    /// Count what every ray visits, and return the sum ([`QueryStats`](crate::QueryStats)) from the batch: for the
    /// mean cost of a view, or to compare trees and builds without a timer. Counting traces each
    /// ray alone, on the walk [`MeshBvh::intersect_counting`](crate::MeshBvh::intersect_counting)
    /// counts (whatever `packets` says), so its counts are the sum of that query's over the
    /// rays, and the batch is no faster than a loop of it. Without it the batch returns zeros.
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BatchOptions, BuildOptions, MeshBvh, QueryStats, Ray, TriMesh};
    /// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default());
    /// let rays: Vec<Ray> = (0..100).map(|i| Ray::new(Vec3::new(i as f32 / 50.0 - 1.0, 0.1, 5.0), -Vec3::Z)).collect();
    /// let mut hits = Vec::new();
    /// let counted = bvh.intersect_batch(&rays, &mut hits, BatchOptions { count_visits: true, ..Default::default() })?;
    /// let one_by_one: QueryStats = rays.iter().map(|r| bvh.intersect_counting(r).unwrap().1).sum();
    /// assert_eq!(counted, one_by_one);
    /// println!("{:.1} nodes per ray", counted.nodes as f64 / rays.len() as f64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub count_visits: bool,
}

impl Default for BatchOptions {
    /// Rayon's threads, packets where they are timed faster, no counting.
    fn default() -> BatchOptions {
        BatchOptions { threads: Threads::Pool, packets: true, count_visits: false }
    }
}
