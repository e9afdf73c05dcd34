//! Ray streams over a scene: the picking and visibility layer's coherent rays (a tile of camera
//! rays, shadow rays to one light), with each instance's rays traced as one mesh stream, so that
//! the rays of a tile that meet the same instance go through its BVH as packets.
//!
//! For a chunk of the stream, every ray's instances are found in the instance tree (as for a
//! single ray), grouped by instance, and the instances taken nearest first. Each instance gets the
//! rays that reach its box before their closest hit so far, in its own space, as one
//! [`MeshBvh`](crate::MeshBvh) stream. A ray whose hits on two instances come within rounding of
//! each other is answered by [`Scene::intersect`] itself, as in the 8-ray packets: which of the
//! two the single ray keeps depends on the order it meets them.

use std::cell::RefCell;

use super::Scene;
use super::query::{SceneHit, local_ray, near_tie, with_ws};
use crate::dbvt::{RayControl, RayLeaf};
use crate::math::{BatchError, Ray, validate_rays};
use crate::mesh::Hit;

/// Rays whose instances are gathered together: enough for the rays of a tile that meet one
/// instance to make packets in its mesh stream.
const CHUNK: usize = 1024;

/// Per-thread scratch of the scene's streams, so a warm stream allocates nothing.
#[derive(Default)]
struct Scratch {
    /// (instance slot, ray in the chunk, entry distance) for every instance box a ray reaches.
    reached: Vec<(u32, u32, f32)>,
    /// Runs of `reached` with one instance: (slot, start, end, nearest entry).
    runs: Vec<(u32, u32, u32, f32)>,
    /// An instance's rays in its space, and their rays in the chunk.
    local: Vec<Ray>,
    which: Vec<u32>,
    /// The instance's answers.
    hits: Vec<Option<Hit>>,
    occluded: Vec<bool>,
    /// Per ray of the chunk: its closest hit so far (instance slot and hit), and whether it
    /// must be traced again singly.
    best: Vec<Option<(u32, Hit)>>,
    redo: Vec<bool>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch (or a fresh one on re-entry).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

impl Scene {
    /// [`Scene::intersect`] of every ray of `rays`, written to `hits` (cleared first): each
    /// answer equals `intersect`'s. The rays of a chunk that meet one instance are traced through
    /// its mesh as one [`MeshBvh::intersect_stream`](crate::MeshBvh::intersect_stream), so
    /// coherent rays (a tile of camera rays) go as packets. Nothing is allocated once `hits` has
    /// room and the thread has traced a stream. Refuses the whole stream, before tracing any
    /// ray, when one is invalid, naming the first.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3, Vec3A};
    /// use slabtree::{BuildOptions, MeshBvh, Ray, Scene, TriMesh};
    /// let sphere = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// for x in [-2.0, 0.0, 2.0] {
    ///     scene.add(sphere.clone(), Affine3A::from_translation(Vec3::new(x, 0.0, 0.0)), 0, Scene::ALL)?;
    /// }
    /// // A 32 × 8 camera tile at z = 6.
    /// let rays: Vec<Ray> = (0..256)
    ///     .map(|i| {
    ///         let (x, y) = ((i % 32) as f32 / 16.0 - 1.0, (i / 32) as f32 / 16.0 - 0.25);
    ///         Ray::new(Vec3A::new(0.0, 0.0, 6.0), Vec3A::new(x * 0.6, y * 0.6, -1.0))
    ///     })
    ///     .collect();
    /// let mut hits = Vec::new();
    /// scene.intersect_stream(&rays, Scene::ALL, &mut hits)?;
    /// for (ray, hit) in rays.iter().zip(&hits) {
    ///     assert_eq!(*hit, scene.intersect(ray, Scene::ALL)?);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_stream(
        &self,
        rays: &[Ray],
        mask: u32,
        hits: &mut Vec<Option<SceneHit>>,
    ) -> Result<(), BatchError> {
        validate_rays(rays)?;
        self.wide_view(rays.len() as u64);
        hits.clear();
        hits.resize(rays.len(), None);
        with_scratch(|s| {
            for (c, chunk) in rays.chunks(CHUNK).enumerate() {
                self.intersect_chunk(chunk, mask, s, &mut hits[c * CHUNK..c * CHUNK + chunk.len()]);
            }
        });
        Ok(())
    }

    /// [`Scene::occluded`] of every ray of `rays`, written to `occluded` (cleared first), with
    /// each instance's rays traced as one
    /// [`MeshBvh::occluded_stream`](crate::MeshBvh::occluded_stream); each answer equals
    /// `occluded`'s. Invalid rays as in [`Scene::intersect_stream`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3, Vec3A};
    /// use slabtree::{BuildOptions, MeshBvh, Ray, Scene, TriMesh};
    /// let sphere = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// scene.add(sphere, Affine3A::IDENTITY, 0, Scene::ALL)?;
    /// let light = Vec3A::new(0.0, 5.0, 0.0);
    /// let rays: Vec<Ray> =
    ///     (0..64).map(|i| Ray::segment(Vec3A::new(i as f32 / 16.0 - 2.0, -3.0, 0.0), light)).collect();
    /// let mut occluded = Vec::new();
    /// scene.occluded_stream(&rays, Scene::ALL, &mut occluded)?;
    /// assert!(occluded[32] && !occluded[0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occluded_stream(&self, rays: &[Ray], mask: u32, occluded: &mut Vec<bool>) -> Result<(), BatchError> {
        validate_rays(rays)?;
        self.wide_view(rays.len() as u64);
        occluded.clear();
        occluded.resize(rays.len(), false);
        with_scratch(|s| {
            for (c, chunk) in rays.chunks(CHUNK).enumerate() {
                self.occluded_chunk(chunk, mask, s, &mut occluded[c * CHUNK..c * CHUNK + chunk.len()]);
            }
        });
        Ok(())
    }

    /// Fills `s.reached` and `s.runs` for `rays`: the instances each ray's range reaches, grouped
    /// by instance, nearest first (the slot breaks ties, so the order is fixed by the input).
    fn gather(&self, rays: &[Ray], mask: u32, s: &mut Scratch) {
        let Scratch { reached, runs, .. } = s;
        reached.clear();
        runs.clear();
        with_ws(|ws| {
            for (r, ray) in rays.iter().enumerate() {
                let _ = self.tree.ray_cast(ray, ws, &mut |leaf: RayLeaf<'_, super::InstanceSlot>| {
                    if leaf.data.mask & mask != 0 {
                        reached.push((leaf.data.index, r as u32, leaf.t));
                    }
                    RayControl::Continue
                });
            }
        });
        reached.sort_unstable_by_key(|&(slot, r, _)| (slot, r));
        let mut start = 0;
        while start < reached.len() {
            let slot = reached[start].0;
            let mut end = start;
            let mut nearest = f32::INFINITY;
            while end < reached.len() && reached[end].0 == slot {
                nearest = nearest.min(reached[end].2);
                end += 1;
            }
            runs.push((slot, start as u32, end as u32, nearest));
            start = end;
        }
        runs.sort_unstable_by(|a, b| a.3.total_cmp(&b.3).then(a.0.cmp(&b.0)));
    }

    fn intersect_chunk(&self, rays: &[Ray], mask: u32, s: &mut Scratch, out: &mut [Option<SceneHit>]) {
        self.gather(rays, mask, s);
        let Scratch { reached, runs, local, which, hits, best, redo, .. } = s;
        best.clear();
        best.resize(rays.len(), None);
        redo.clear();
        redo.resize(rays.len(), false);
        for &(slot, start, end, _) in runs.iter() {
            let inst = self.slot(slot);
            local.clear();
            which.clear();
            for &(_, r, entry) in &reached[start as usize..end as usize] {
                let ray = &rays[r as usize];
                let tmax = best[r as usize].map_or(ray.tmax, |b| b.1.t);
                if entry <= tmax {
                    local.push(local_ray(inst, ray, tmax));
                    which.push(r);
                }
            }
            if local.is_empty() {
                continue;
            }
            hits.clear();
            hits.resize(local.len(), None);
            inst.mesh.intersect_stream_unchecked(local, hits);
            for (&r, h) in which.iter().zip(hits.iter()) {
                let Some(h) = *h else { continue };
                let r = r as usize;
                match best[r] {
                    Some(b) if near_tie(h.t, b.1.t) => redo[r] = true,
                    Some(b) if h.t >= b.1.t => {}
                    _ => best[r] = Some((slot, h)),
                }
            }
        }
        for (r, ray) in rays.iter().enumerate() {
            out[r] = if redo[r] {
                self.intersect_counted(ray, mask, 0)
            } else {
                best[r].map(|(slot, h)| self.make_hit(slot, h))
            };
        }
    }

    fn occluded_chunk(&self, rays: &[Ray], mask: u32, s: &mut Scratch, out: &mut [bool]) {
        self.gather(rays, mask, s);
        let Scratch { reached, runs, local, which, occluded, .. } = s;
        for &(slot, start, end, _) in runs.iter() {
            let inst = self.slot(slot);
            local.clear();
            which.clear();
            for &(_, r, entry) in &reached[start as usize..end as usize] {
                let ray = &rays[r as usize];
                if !out[r as usize] && entry <= ray.tmax {
                    local.push(local_ray(inst, ray, ray.tmax));
                    which.push(r);
                }
            }
            if local.is_empty() {
                continue;
            }
            occluded.clear();
            occluded.resize(local.len(), false);
            inst.mesh.occluded_stream_unchecked(local, occluded);
            for (&r, &o) in which.iter().zip(occluded.iter()) {
                out[r as usize] |= o;
            }
        }
    }
}
