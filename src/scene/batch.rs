//! Many rays at once through the scene: [`Scene::intersect_batch`] and
//! [`Scene::occluded_batch`], the one entry for each kind of answer, as the mesh BVH's
//! ([`crate::MeshBvh::intersect_batch`]): each run of rays checked as it is traced, on rayon's
//! threads or the caller's, one ray at a time (`super::query`) or as packets (`super::stream`).

use super::Scene;
use super::query::SceneHit;
use crate::math::{BatchError, BatchOptions, QueryStats, Ray};
use crate::mesh::BatchWalks;

/// Rays checked and traced together one by one: few, since a scene ray costs much more than the
/// check.
const SINGLE_RUN: usize = 64;

impl Scene {
    /// The closest hit of every ray among the instances whose mask shares a bit with `mask`
    /// ([`Scene::intersect`]'s answer), into `hits`: cleared first and keeping its room (a
    /// caller tracing a batch per frame allocates nothing once it has room), left empty when a
    /// ray is invalid (the error names the first). `options` say where the rays run and whether
    /// coherent ones go as packets through both levels ([`BatchOptions`]); the answers are the
    /// same whatever they say.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3};
    /// use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, Scene, TriMesh};
    /// let sphere = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 16, 8), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// scene.add(sphere, Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0)), 7, Scene::ALL)?;
    /// let rays = vec![Ray::new(Vec3::ZERO, -Vec3::Z); 100];
    /// let mut hits = Vec::new();
    /// scene.intersect_batch(&rays, Scene::ALL, &mut hits, BatchOptions::default())?;
    /// assert!(hits.len() == 100 && hits.iter().all(|h| h.is_some_and(|h| h.user_id == 7)));
    /// // Every ray alone (no packets): the same answers.
    /// let mut alone = Vec::new();
    /// scene.intersect_batch(&rays, Scene::ALL, &mut alone, BatchOptions { packets: false, ..Default::default() })?;
    /// assert_eq!(alone, hits);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_batch(
        &self,
        rays: &[Ray],
        mask: u32,
        hits: &mut Vec<Option<SceneHit>>,
        options: BatchOptions,
    ) -> Result<QueryStats, BatchError> {
        let walks = BatchWalks {
            one_by_one: |r: &Ray| self.intersect_valid::<false>(r, mask, 0).0,
            packets: |r: &[Ray], o: &mut [Option<SceneHit>]| self.intersect_packets(r, mask, o),
            counting: |r: &Ray| self.intersect_valid::<true>(r, mask, 0),
        };
        self.batch(options, rays, None, hits, walks)
    }

    /// Whether each ray hits an instance whose mask shares a bit with `mask`
    /// ([`Scene::occluded`]'s answer), into `occluded`, as [`Scene::intersect_batch`] runs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::{Affine3A, Vec3A};
    /// use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, Scene, TriMesh};
    /// let sphere = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default()));
    /// let mut scene = Scene::new();
    /// scene.add(sphere, Affine3A::IDENTITY, 0, Scene::ALL)?;
    /// let light = Vec3A::new(0.0, 5.0, 0.0);
    /// let rays: Vec<Ray> =
    ///     (0..64).map(|i| Ray::segment(Vec3A::new(i as f32 / 16.0 - 2.0, -3.0, 0.0), light)).collect();
    /// let mut occluded = Vec::new();
    /// scene.occluded_batch(&rays, Scene::ALL, &mut occluded, BatchOptions::default())?;
    /// assert!(occluded[32] && !occluded[0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occluded_batch(
        &self,
        rays: &[Ray],
        mask: u32,
        occluded: &mut Vec<bool>,
        options: BatchOptions,
    ) -> Result<QueryStats, BatchError> {
        let walks = BatchWalks {
            one_by_one: |r: &Ray| self.occluded_valid::<false>(r, mask, 0).0,
            packets: |r: &[Ray], o: &mut [bool]| self.occluded_packets(r, mask, o),
            counting: |r: &Ray| self.occluded_valid::<true>(r, mask, 0),
        };
        self.batch(options, rays, false, occluded, walks)
    }

    /// `crate::mesh::trace_batch` with the scene's walks, of which `one_by_one` takes one ray:
    /// each ray of a run in turn.
    fn batch<R: Clone + Send + Sync>(
        &self,
        options: BatchOptions,
        rays: &[Ray],
        fill: R,
        out: &mut Vec<R>,
        walks: BatchWalks<
            impl Fn(&Ray) -> R + Sync + Send,
            impl Fn(&[Ray], &mut [R]) + Sync + Send,
            impl Fn(&Ray) -> (R, QueryStats) + Sync + Send,
        >,
    ) -> Result<QueryStats, BatchError> {
        // Every ray of the batch counts towards the wide copy here, all at once, not one
        // contended add per ray or per window: a window of packets may yet go one by one
        // (`crate::mesh::trace_batch`), and its streams only look the copy up.
        self.wide_view(rays.len() as u64);
        let each = walks.one_by_one;
        let one_by_one = |r: &[Ray], o: &mut [R]| r.iter().zip(o).for_each(|(r, o)| *o = each(r));
        let walks = BatchWalks { one_by_one, packets: walks.packets, counting: walks.counting };
        crate::mesh::trace_batch(options, rays, SINGLE_RUN, fill, out, walks)
    }
}
