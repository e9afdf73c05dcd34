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
use super::reach::Reach;
use super::{Instance, InstanceSlot, Scene};
use crate::dbvt::WideView;
use crate::math::Ray;
use crate::mesh::Hit;
use crate::mesh::stream::choice::{Choosing, wall_clock};
use crate::mesh::stream::regroup::Regroup;
use crate::wide::packet::{PACKET, Packet};
use crate::wide::packet_walk::PacketLeaf;

/// Per-thread scratch of the scene's streams, so a warm stream allocates nothing.
struct Scratch {
    regroup: Regroup,
    /// The walk chosen for closest-hit streams and for any-hit streams (`Choosing`).
    choosing: [Choosing; 2],
    pk: Box<Packet>,
    work: Work,
}

/// What a packet's instances work in, beside the packet itself.
struct Work {
    /// Per ray of a packet: its closest hit so far (instance slot, key and hit; see
    /// `Scene::intersect_valid`).
    best: Vec<Option<(u32, f32, Hit)>>,
    /// An instance's rays in its space, and their places in the packet.
    local: Vec<Ray>,
    which: Vec<usize>,
    /// The instance's answers, with their keys.
    hits: Vec<Option<(f32, Hit)>>,
    occluded: Vec<bool>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            regroup: Regroup::new(),
            choosing: [Choosing::new(); 2],
            pk: Box::new(Packet::new()),
            work: Work {
                best: vec![None; PACKET],
                local: Vec::with_capacity(PACKET),
                which: Vec::with_capacity(PACKET),
                hits: Vec::with_capacity(PACKET),
                occluded: Vec::with_capacity(PACKET),
            },
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

impl Work {
    /// The rays of the packet `pk` of `rays[idx[..]]` that enter the box of leaf `at` (`TIES` as
    /// in [`PacketLeaf::entering`]: the closest-hit walk), in the space of `inst`, each ending
    /// where its range does (its closest hit so far in `best` with `TIES`, else its `tmax`; the
    /// packet's own `tmax` is the walk's reach past it, `super::reach`), into `local`, and their
    /// places in the packet into `which`. `false` when there are none.
    fn gather<const TIES: bool>(
        &mut self,
        pk: &Packet,
        inst: &Instance,
        rays: &[Ray],
        idx: &[usize],
        at: &PacketLeaf,
    ) -> bool {
        self.local.clear();
        self.which.clear();
        for g in at.groups() {
            let mut m = at.entering::<false, TIES>(pk, g);
            while m != 0 {
                let r = g * 8 + m.trailing_zeros() as usize;
                m &= m - 1;
                let ray = &rays[idx[r]];
                let range = if TIES { self.best[r].map_or(ray.tmax, |b| b.1) } else { ray.tmax };
                let local = local_ray(inst, ray, range);
                // A range the instance's floor emptied (`super::reach::instance_floor`): nothing
                // there, as for the single ray, which refuses such a ray.
                if !(local.tmin.is_finite() && local.tmin <= local.tmax) {
                    continue;
                }
                self.local.push(local);
                self.which.push(r);
            }
        }
        !self.local.is_empty()
    }
}

impl Scene {
    /// The closest hit of each of `rays` (valid) into `hits` (one slot per ray), each equal to
    /// [`Scene::intersect`]'s: [`Scene::intersect_batch`]'s packets. Coherent rays (a tile of
    /// camera rays in scan-line order) are regrouped into packets that walk the instance tree
    /// together, and the rays of a packet that meet one instance go through its mesh as packets
    /// too. Nothing is allocated once the thread has traced a stream.
    pub(super) fn intersect_packets(&self, rays: &[Ray], mask: u32, hits: &mut [Option<SceneHit>]) {
        self.stream(
            false,
            rays,
            hits,
            |ray| self.intersect_valid::<false>(ray, mask, 0).0,
            |view, pk, work, idx, hits| {
                let redo = self.pick_packet(view, rays, idx, mask, pk, work);
                for (k, &i) in idx.iter().enumerate() {
                    hits[i] = if redo & (1 << k) != 0 {
                        self.intersect_valid::<false>(&rays[i], mask, 0).0
                    } else {
                        work.best[k].map(|(slot, _, h)| self.make_hit(slot, h))
                    };
                }
            },
        )
    }

    /// Whether each of `rays` (valid) hits anything, into `occluded` (one slot per ray), with
    /// coherent rays as packets through both levels as in `Scene::intersect_packets`; each
    /// answer equals [`Scene::occluded`]'s.
    pub(super) fn occluded_packets(&self, rays: &[Ray], mask: u32, occluded: &mut [bool]) {
        self.stream(
            true,
            rays,
            occluded,
            |ray| self.occluded_valid::<false>(ray, mask, 0).0,
            |view, pk, work, idx, occluded| {
                // A tree with refits pending refuses the walk, and then nothing is occluded, as for
                // the single ray.
                let _ = self.tree.packet_walk_wide::<true>(view, pk, |pk, at, data| {
                    self.occlude_at(rays, idx, mask, pk, work, at, data);
                    pk.live != 0
                });
                for (k, &i) in idx.iter().enumerate() {
                    occluded[i] = pk.live & (1 << k) == 0;
                }
            },
        )
    }

    /// What both streams share: traces every ray of `rays` (valid) into its slot of `out` with
    /// `single` until the scene has its 8-wide copy; then regroups the rays, tracing the
    /// incoherent ones with `single` and handing each packet (loaded in the exact slab form) to
    /// `packet(view, packet, work, indices, out)`; `any` says which kind of stream it is, each of
    /// which keeps its own choice of walk.
    fn stream<T>(
        &self,
        any: bool,
        rays: &[Ray],
        out: &mut [T],
        single: impl Fn(&Ray) -> T,
        mut packet: impl FnMut(&WideView, &mut Packet, &mut Work, &[usize], &mut [T]),
    ) {
        debug_assert!(rays.iter().all(|r| r.validate().is_ok()) && rays.len() == out.len());
        // The batch counted these rays towards the wide copy (`Scene::batch`).
        let Some(view) = self.wide_view(0) else {
            for (ray, slot) in rays.iter().zip(out.iter_mut()) {
                *slot = single(ray);
            }
            return;
        };
        let mut run = |s: &mut Scratch| {
            let Scratch { regroup, choosing, pk, work } = s;
            regroup.run(
                crate::mesh::stream::regroup::WINDOW,
                &mut choosing[usize::from(any)],
                rays,
                &mut *out,
                wall_clock(),
                |_, _, _, _| {},
                // Instances are walked without the coherence hint: it is a mesh walk's.
                |out, i, _| out[i] = single(&rays[i]),
                |out, range, _| range.for_each(|i| out[i] = single(&rays[i])),
                |out, idx| {
                    pk.load::<wide::f32x8, false, false>(rays, idx);
                    // The instance walk reaches past each ray's range (`super::reach`).
                    for (k, &i) in idx.iter().enumerate() {
                        pk.clip(k, Reach::of(&rays[i]).bound(rays[i].tmax));
                    }
                    pk.clipped();
                    packet(view, pk, work, idx, out);
                },
            );
        };
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => run(s.get_or_insert_with(Scratch::new)),
            // Re-entered on this thread (never by the library itself).
            Err(_) => run(&mut Scratch::new()),
        });
    }

    /// Walks the instance tree with the loaded packet `pk` of `rays[idx[..]]`: each ray's closest
    /// hit in `work.best` (its instance slot and hit), and the rays whose hits on two instances
    /// tied within rounding (to be traced again singly).
    fn pick_packet(
        &self,
        view: &WideView,
        rays: &[Ray],
        idx: &[usize],
        mask: u32,
        pk: &mut Packet,
        work: &mut Work,
    ) -> u64 {
        work.best[..idx.len()].fill(None);
        let mut redo = 0u64;
        let walked = self.tree.packet_walk_wide::<false>(view, pk, |pk, at, data: &InstanceSlot| {
            let inst = self.slot(data.index);
            if data.mask & mask == 0 || !work.gather::<true>(pk, inst, rays, idx, at) {
                return true;
            }
            let Work { best, local, which, hits, .. } = &mut *work;
            hits.clear();
            hits.resize(local.len(), None);
            inst.mesh.intersect_stream_keyed_unchecked(local, hits);
            let mut clipped = false;
            for (&r, h) in which.iter().zip(hits.iter()) {
                let Some((key, h)) = *h else { continue };
                match best[r] {
                    Some(b) if near_tie(key, b.1) => redo |= 1 << r,
                    Some(b) if key >= b.1 => {}
                    _ => {
                        best[r] = Some((data.index, key, h));
                        pk.clip(r, Reach::of(&rays[idx[r]]).bound(key));
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
            work.best[..idx.len()].fill(None);
        }
        redo
    }

    /// At instance `data`, which the walk reached: the live rays of the packet that enter its
    /// box are tested against its mesh as one stream, and those occluded end. (Occlusion rays
    /// keep their own `tmax`: nothing clips them.)
    #[allow(clippy::too_many_arguments)] // the packet and its scratch, borrowed apart
    fn occlude_at(
        &self,
        rays: &[Ray],
        idx: &[usize],
        mask: u32,
        pk: &mut Packet,
        work: &mut Work,
        at: &PacketLeaf,
        data: &InstanceSlot,
    ) {
        let inst = self.slot(data.index);
        if data.mask & mask == 0 || !work.gather::<false>(pk, inst, rays, idx, at) {
            return;
        }
        let Work { local, which, occluded, .. } = work;
        occluded.clear();
        occluded.resize(local.len(), false);
        inst.mesh.occluded_stream_unchecked(local, occluded, false);
        for (&r, &o) in which.iter().zip(occluded.iter()) {
            if o {
                pk.live &= !(1u64 << r);
            }
        }
    }
}
