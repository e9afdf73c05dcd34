//! How a batch of rays runs: the options every type's `intersect_batch` and `occluded_batch`
//! take. They change how long a batch takes, never its answers.

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
/// how each run of rays walks the tree (one ray at a time for coherent runs, several in flight
/// for incoherent runs through a BVH larger than the caches).
///
/// ```
/// use slabtree::{BatchOptions, Threads};
/// let on_this_thread = BatchOptions { threads: Threads::Calling, ..Default::default() };
/// let as_packets = BatchOptions { packets: true, ..Default::default() };
/// assert_ne!(on_this_thread, as_packets);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchOptions {
    /// Where the rays are traced.
    pub threads: Threads,
    /// Trace the rays as packets (ray streams, `mesh::stream`): rays whose directions agree are
    /// regrouped into packets of up to 64 that walk the BVH together, and the others go one by
    /// one. Packets pay for camera rays through an interior, where many rays share each leaf,
    /// and cost time where few do (small or distant objects, shadow rays from scattered points;
    /// `docs/performance.md`, "Ray streams"); the library does not yet choose them by itself.
    /// The answers are the same either way.
    pub packets: bool,
}
