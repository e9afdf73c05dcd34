//! Many rays at once: [`MeshBvh::intersect_batch`] and [`MeshBvh::occluded_batch`], the one
//! entry for each kind of answer. Both check each run of rays as they trace it
//! ([`trace_batch`]), on rayon's threads or the caller's, and hand the run to one of the
//! walks: single rays and rays in flight (`super::query`, `super::interleave`) or packets
//! (`super::stream`), as [`BatchOptions`] say.

use super::bvh::{HINT_RUN, Hit, MeshBvh};
use super::stream::packet_run;
use crate::math::{BatchError, BatchOptions, QueryStats, Ray, RayCoherence, Threads, validate_rays};

impl MeshBvh {
    /// The closest hit of every ray ([`MeshBvh::intersect`]'s answer, bit for bit), into `hits`:
    /// cleared first and keeping its room, so that a caller tracing batch after batch (a
    /// renderer's frames) allocates nothing once it has room. `options` say where the rays run
    /// and how they walk the BVH ([`BatchOptions`]); the answers are the same whatever they say.
    ///
    /// Each run of 256 rays is checked as it is traced and judged coherent or not
    /// ([`RayCoherence::of_rays`](crate::RayCoherence::of_rays)): coherent runs go one ray after another, incoherent runs
    /// through a BVH larger than the last-level cache with several rays in flight, so that one
    /// ray's wait on memory hides behind the others' work. When a ray is invalid, the error names
    /// the first, and `hits` is left empty (some rays may have been traced).
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, Threads, TriMesh};
    /// let mesh = TriMesh::new(vec![Vec3::new(-1.0, -1.0, 0.0), Vec3::new(1.0, -1.0, 0.0), Vec3::new(0.0, 1.0, 0.0)], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let mut hits = Vec::new();
    /// for frame in 0..3 {
    ///     let rays: Vec<Ray> = (0..64).map(|i| Ray::new(Vec3::new(i as f32 / 32.0 - 1.0, -0.5, 1.0), -Vec3::Z)).collect();
    ///     bvh.intersect_batch(&rays, &mut hits, BatchOptions::default())?;
    ///     assert_eq!(hits.len(), 64);
    ///     assert_eq!(hits[32].map(|h| h.t), Some(1.0));
    /// }
    /// // On this thread only, every ray alone (no packets): the same answers.
    /// let rays = [Ray::new(Vec3::Z, -Vec3::Z), Ray::new(Vec3::new(5.0, 0.0, 1.0), -Vec3::Z)];
    /// bvh.intersect_batch(&rays, &mut hits, BatchOptions { threads: Threads::Calling, packets: false, ..Default::default() })?;
    /// assert_eq!(hits[0].map(|h| h.t), Some(1.0));
    /// assert!(hits[1].is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_batch(
        &self,
        rays: &[Ray],
        hits: &mut Vec<Option<Hit>>,
        options: BatchOptions,
    ) -> Result<QueryStats, BatchError> {
        let walks = BatchWalks {
            one_by_one: |r: &[Ray], o: &mut [Option<Hit>]| self.intersect_valid_rays(r, o),
            packets: |r: &[Ray], o: &mut [Option<Hit>]| self.intersect_stream_valid(r, o),
            counting: |r: &Ray| self.intersect_unchecked(r),
        };
        trace_batch(options, rays, HINT_RUN, None, hits, walks)
    }

    /// Whether each ray hits anything ([`MeshBvh::occluded`]'s answer), into `occluded`, as
    /// [`MeshBvh::intersect_batch`] runs: cleared first and keeping its room, `options` for where
    /// and how, left empty when a ray is invalid. Shadow rays are the case it is made for.
    ///
    /// ```
    /// use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, TriMesh};
    /// use glam::Vec3A;
    /// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default());
    /// let light = Vec3A::new(0.0, 5.0, 0.0);
    /// let rays: Vec<Ray> =
    ///     (0..64).map(|i| Ray::segment(Vec3A::new(i as f32 / 16.0 - 2.0, -3.0, 0.0), light)).collect();
    /// let mut occluded = Vec::new();
    /// bvh.occluded_batch(&rays, &mut occluded, BatchOptions::default())?;
    /// assert!(occluded[32]); // straight below the sphere
    /// assert!(!occluded[0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occluded_batch(
        &self,
        rays: &[Ray],
        occluded: &mut Vec<bool>,
        options: BatchOptions,
    ) -> Result<QueryStats, BatchError> {
        let walks = BatchWalks {
            one_by_one: |r: &[Ray], o: &mut [bool]| self.occluded_valid_rays(r, o),
            packets: |r: &[Ray], o: &mut [bool]| self.occluded_stream_unchecked(r, o, true),
            counting: |r: &Ray| self.occluded_unchecked(r, RayCoherence::Coherent),
        };
        trace_batch(options, rays, HINT_RUN, false, occluded, walks)
    }
}

/// The three ways a batch can trace a run of valid rays, given by each type to [`trace_batch`].
pub(crate) struct BatchWalks<OneByOne, Packets, Counting> {
    /// The answers of a run, one ray after another (or several in flight).
    pub one_by_one: OneByOne,
    /// The answers of a run as packets.
    pub packets: Packets,
    /// One ray's answer and visits, for a batch that counts.
    pub counting: Counting,
}

/// Whether a batch of `rays` rays with `options` goes to its packets' walk, else one by one (or
/// counting): with packets on, on the calling thread, or on rayon's threads when each thread
/// gets two regrouping windows ([`packet_run`]) or more. A stream's regrouping and its timed
/// choice between packets and single rays need whole windows, while the single rays share out
/// in short runs: a batch of a few windows on two threads ran 1.3–2× slower as packets than
/// one by one (`docs/performance.md`, "How a batch runs").
fn goes_as_packets(options: BatchOptions, rays: usize) -> bool {
    if !options.packets || options.count_visits {
        return false;
    }
    let threads = batch_threads(options);
    threads <= 1 || rays >= 2 * threads * packet_run(rays, threads)
}

/// The threads a batch with `options` runs on.
fn batch_threads(options: BatchOptions) -> usize {
    if options.threads == Threads::Pool { crate::par::threads() } else { 1 }
}

/// Every batch of the mesh and the scene: `out` (cleared first, its room kept) gets one answer
/// per ray, the rays cut into runs, each run checked ([`validate_rays`]) just before it is
/// traced, on rayon's threads or the calling thread as `options` say. Runs of `run` rays go to
/// `walks.one_by_one(run, answers)`; where [`goes_as_packets`], runs of a regrouping window go
/// to `walks.packets(run, answers)`; with `options.count_visits`, each ray goes to
/// `walks.counting(ray)`, and the visits are summed. On an invalid ray the error names the
/// first and `out` is left empty (see `crate::par::map_checked_chunks_into`).
pub(crate) fn trace_batch<R: Clone + Send + Sync>(
    options: BatchOptions,
    rays: &[Ray],
    run: usize,
    fill: R,
    out: &mut Vec<R>,
    walks: BatchWalks<
        impl Fn(&[Ray], &mut [R]) + Sync + Send,
        impl Fn(&[Ray], &mut [R]) + Sync + Send,
        impl Fn(&Ray) -> (R, QueryStats) + Sync + Send,
    >,
) -> Result<QueryStats, BatchError> {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let parallel = options.threads == Threads::Pool;
    let check = validate_rays;
    let rebase = BatchError::rebased;
    if options.count_visits {
        // Summed per run, then once per run into the totals: no contended add per ray.
        let (nodes, leaves) = (AtomicU64::new(0), AtomicU64::new(0));
        let counting = |rays: &[Ray], answers: &mut [R]| {
            let mut run_stats = QueryStats::default();
            for (ray, answer) in rays.iter().zip(answers) {
                let stats;
                (*answer, stats) = (walks.counting)(ray);
                run_stats += stats;
            }
            nodes.fetch_add(run_stats.nodes, Relaxed);
            leaves.fetch_add(run_stats.leaves, Relaxed);
        };
        crate::par::map_checked_chunks_into(parallel, rays, run, fill, out, check, rebase, counting)?;
        return Ok(QueryStats { nodes: nodes.into_inner(), leaves: leaves.into_inner() });
    }
    if goes_as_packets(options, rays.len()) {
        // A window of incoherent runs alone (diffuse bounces) would be one long task of single
        // rays: it is shared out in runs instead, as a batch of single rays is, so that the
        // threads end together (`docs/performance.md`, "How a batch runs").
        let window = |rays: &[Ray], out: &mut [R]| {
            let incoherent = |r: &[Ray]| RayCoherence::of_rays(r) == RayCoherence::Incoherent;
            if parallel && rays.chunks(crate::mesh::stream::regroup::RUN).all(incoherent) {
                crate::par::for_each_chunk(rays, out, run, &walks.one_by_one);
            } else {
                (walks.packets)(rays, out);
            }
        };
        let window_rays = packet_run(rays.len(), batch_threads(options));
        crate::par::map_checked_chunks_into(parallel, rays, window_rays, fill, out, check, rebase, window)?;
    } else {
        crate::par::map_checked_chunks_into(parallel, rays, run, fill, out, check, rebase, walks.one_by_one)?;
    }
    Ok(QueryStats::default())
}
