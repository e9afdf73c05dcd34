//! Ray streams over a scene: the picking and visibility layer's coherent rays (a tile of camera
//! rays, shadow rays to one light) as packets through both levels.
//!
//! The stream is regrouped into packets as a mesh stream is (`mesh::stream::regroup`). A packet
//! walks the instance tree's 8-wide copy with the packet walk of `wide::packet`, in the exact form
//! of the slab test that a single ray's walk of that copy uses, so every instance a ray of the
//! packet can reach before its closest hit so far is reached. At an instance, the rays that enter
//! its box go, in its space, through its mesh as one
//! [`MeshBvh`](crate::MeshBvh) stream (as packets again when there are enough of them), and each
//! hit clips its ray for the rest of the walk. A ray whose hits on two instances come within
//! rounding of each other is answered by [`Scene::intersect`] itself: which of the two the single
//! ray keeps depends on the order it meets them. Until the scene has
//! its 8-wide copy ([`Scene::ray_tree`]), rays are traced one by one.

use std::cell::RefCell;

use super::query::{SceneHit, local_ray, near_tie};
use super::{InstanceSlot, Scene};
use crate::dbvt::WideView;
use crate::math::{BatchError, Ray, validate_rays};
use crate::mesh::Hit;
use crate::mesh::stream::regroup::{PIECE, Regroup};
use crate::wide::packet::{PACKET, Packet, PacketLeaf};

/// Per-thread scratch of the scene's streams, so a warm stream allocates nothing.
struct Scratch {
    pk: Box<Packet>,
    regroup: Regroup,
    /// Per ray of a packet: its closest hit so far (instance slot and hit).
    best: Vec<Option<(u32, Hit)>>,
    /// An instance's rays in its space, and their rays in the packet.
    local: Vec<Ray>,
    which: Vec<u32>,
    /// The instance's answers.
    hits: Vec<Option<Hit>>,
    occluded: Vec<bool>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            pk: Box::new(Packet::new()),
            regroup: Regroup::new(),
            best: vec![None; PACKET],
            local: Vec::with_capacity(PACKET),
            which: Vec::with_capacity(PACKET),
            hits: Vec::with_capacity(PACKET),
            occluded: Vec::with_capacity(PACKET),
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's scratch (or a fresh one on re-entry).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => f(s.get_or_insert_with(Scratch::new)),
        Err(_) => f(&mut Scratch::new()),
    })
}

impl Scene {
    /// [`Scene::intersect`] of every ray of `rays`, written to `hits` (cleared first): each
    /// answer equals `intersect`'s. Coherent rays (a tile of camera rays in scan-line order) are
    /// regrouped into packets that walk the instance tree together, and the rays of a packet
    /// that meet one instance go through its mesh as one
    /// [`MeshBvh::intersect_stream`](crate::MeshBvh::intersect_stream). Nothing is allocated once
    /// `hits` has room and the thread has traced a stream. Refuses the whole stream, before
    /// tracing any ray, when one is invalid, naming the first.
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
        hits.clear();
        hits.resize(rays.len(), None);
        let Some(view) = self.wide_view(rays.len() as u64) else {
            for (ray, hit) in rays.iter().zip(hits.iter_mut()) {
                *hit = self.intersect_counted(ray, mask, 0);
            }
            return Ok(());
        };
        with_scratch(|s| {
            let Scratch { pk, regroup, best, local, which, hits: local_hits, .. } = s;
            // The regrouping names rays by u32 indices.
            for (rays, hits) in rays.chunks(PIECE).zip(hits.chunks_mut(PIECE)) {
                regroup.run(
                    rays,
                    hits,
                    |_, _| false,
                    |hits, i| hits[i] = self.intersect_counted(&rays[i], mask, 0),
                    |hits, idx| {
                        pk.load::<false>(rays, idx);
                        let redo = self.pick_packet(view, rays, idx, mask, pk, best, local, which, local_hits);
                        for (k, &i) in idx.iter().enumerate() {
                            let i = i as usize;
                            hits[i] = if redo & (1 << k) != 0 {
                                self.intersect_counted(&rays[i], mask, 0)
                            } else {
                                best[k].map(|(slot, h)| self.make_hit(slot, h))
                            };
                        }
                    },
                );
            }
        });
        Ok(())
    }

    /// [`Scene::occluded`] of every ray of `rays`, written to `occluded` (cleared first), with
    /// coherent rays as packets through both levels as in [`Scene::intersect_stream`]; each
    /// answer equals `occluded`'s. Invalid rays as in [`Scene::intersect_stream`].
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
        occluded.clear();
        occluded.resize(rays.len(), false);
        let Some(view) = self.wide_view(rays.len() as u64) else {
            for (ray, o) in rays.iter().zip(occluded.iter_mut()) {
                *o = self.occluded_counted(ray, mask, 0);
            }
            return Ok(());
        };
        with_scratch(|s| {
            let Scratch { pk, regroup, local, which, occluded: local_occluded, .. } = s;
            for (rays, occluded) in rays.chunks(PIECE).zip(occluded.chunks_mut(PIECE)) {
                regroup.run(
                    rays,
                    occluded,
                    |_, _| false,
                    |occluded, i| occluded[i] = self.occluded_counted(&rays[i], mask, 0),
                    |occluded, idx| {
                        pk.load::<false>(rays, idx);
                        let _ = self.tree.packet_walk_wide::<true>(view, pk, |pk, at, data| {
                            self.occlude_at(rays, idx, mask, pk, at, data, local, which, local_occluded);
                            pk.live != 0
                        });
                        for (k, &i) in idx.iter().enumerate() {
                            occluded[i as usize] = pk.live & (1 << k) == 0;
                        }
                    },
                );
            }
        });
        Ok(())
    }

    /// Walks the instance tree with the loaded packet of `rays[idx[..]]`: each ray's closest hit
    /// in `best` (its instance slot and hit), and the rays whose hits on two instances tied
    /// within rounding (to be traced again singly).
    #[allow(clippy::too_many_arguments)] // the packet and its scratch, borrowed apart
    fn pick_packet(
        &self,
        view: &WideView,
        rays: &[Ray],
        idx: &[u32],
        mask: u32,
        pk: &mut Packet,
        best: &mut [Option<(u32, Hit)>],
        local: &mut Vec<Ray>,
        which: &mut Vec<u32>,
        hits: &mut Vec<Option<Hit>>,
    ) -> u64 {
        best[..idx.len()].fill(None);
        let mut redo = 0u64;
        let walked = self.tree.packet_walk_wide::<false>(view, pk, |pk, at, data: &InstanceSlot| {
            if data.mask & mask == 0 {
                return true;
            }
            let inst = self.slot(data.index);
            local.clear();
            which.clear();
            for g in at.groups() {
                let mut m = at.entering::<false, true>(pk, g);
                while m != 0 {
                    let r = g * 8 + m.trailing_zeros() as usize;
                    m &= m - 1;
                    local.push(local_ray(inst, &rays[idx[r] as usize], pk.tmax_of(r)));
                    which.push(r as u32);
                }
            }
            if local.is_empty() {
                return true;
            }
            hits.clear();
            hits.resize(local.len(), None);
            inst.mesh.intersect_stream_unchecked(local, hits);
            let mut clipped = false;
            for (&r, h) in which.iter().zip(hits.iter()) {
                let (Some(h), r) = (*h, r as usize) else { continue };
                match best[r] {
                    Some(b) if near_tie(h.t, b.1.t) => redo |= 1 << r,
                    Some(b) if h.t >= b.1.t => {}
                    _ => {
                        best[r] = Some((data.index, h));
                        pk.clip(r, h.t);
                        clipped = true;
                    }
                }
            }
            if clipped {
                pk.clipped();
            }
            true
        });
        // A tree with refits pending refuses every query, as the single ray's walk does.
        if walked.is_err() {
            best[..idx.len()].fill(None);
        }
        redo
    }

    /// At instance `data`, which the walk reached: the live rays of the packet that enter its
    /// box are tested against its mesh as one stream, and those occluded end.
    #[allow(clippy::too_many_arguments)] // the packet and its scratch, borrowed apart
    fn occlude_at(
        &self,
        rays: &[Ray],
        idx: &[u32],
        mask: u32,
        pk: &mut Packet,
        at: &PacketLeaf,
        data: &InstanceSlot,
        local: &mut Vec<Ray>,
        which: &mut Vec<u32>,
        occluded: &mut Vec<bool>,
    ) {
        if data.mask & mask == 0 {
            return;
        }
        let inst = self.slot(data.index);
        local.clear();
        which.clear();
        for g in at.groups() {
            let mut m = at.entering::<false, false>(pk, g);
            while m != 0 {
                let r = g * 8 + m.trailing_zeros() as usize;
                m &= m - 1;
                let ray = &rays[idx[r] as usize];
                local.push(local_ray(inst, ray, ray.tmax));
                which.push(r as u32);
            }
        }
        if local.is_empty() {
            return;
        }
        occluded.clear();
        occluded.resize(local.len(), false);
        inst.mesh.occluded_stream_unchecked(local, occluded);
        for (&r, &o) in which.iter().zip(occluded.iter()) {
            if o {
                pk.live &= !(1u64 << r);
            }
        }
    }
}
