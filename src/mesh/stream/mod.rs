//! Ray streams: coherent rays traced as packets of up to 64, with the whole packet culled at each
//! node by interval arithmetic, and the rest of the stream traced one ray at a time.
//!
//! The packet traversal follows the large-packet kernels of the literature:
//!
//! * **Interval culling** (Wald, Boulos and Shirley 2007, "Ray Tracing Deformable Scenes Using
//!   Dynamic Bounding Volume Hierarchies"): the packet's origins and inverse directions are
//!   bounded by intervals, and one `f32x8` test of a node's eight children against those
//!   intervals culls every child that no ray of the packet can enter.
//! * **First and last active ray** (Overbeck, Ramamoorthi and Mark 2008, "Large Ray Packets for
//!   Real-time Whitted Ray Tracing"; Reshetov, Soupikov and Hurley 2005): a child is entered with
//!   the first and the last ray of the parent's range that enter it, found by testing eight rays
//!   at a time from either end. Rays outside the range missed the child, so they miss everything
//!   inside it, and most children of a coherent packet are decided by one or two tests.
//! * **Exact leaves**: at a leaf, the rays of its range are tested against the leaf's box with the
//!   single-ray slab arithmetic, lane for lane, and the rays that enter it test its triangles with
//!   the single-ray triangle test (Möller–Trumbore with eight rays across the lanes, in the same
//!   arithmetic, when three or more rays of a group enter).
//!
//! * **Single rays where the packet has parted** (Benthin, Wald, Woop, Ernst and Mark 2012,
//!   "Combining Single and Packet-Ray Tracing for Arbitrary Ray Distributions on the Intel MIC
//!   Architecture"): a child node entered by at most `ALONE` (`trace.rs`) of the packet's rays
//!   is walked by each of them alone, with the single ray's own loop from that node, which costs
//!   fewer instructions than the packet's walk once few rays remain (`docs/performance.md`).
//!
//! Before any of that, the stream is regrouped ([`regroup`]): incoherent runs go to the single
//! ray at once, rays that miss the root are settled, and the rest become tiles of rays. Where the
//! packets of a window of the stream share their leaves too little (about one ray per leaf and
//! group of eight: triangles smaller than the rays' spacing), the next windows go to single rays.
//! Through a large BVH ([`crate::mesh::LARGE_BVH_BYTES`]) those runs of single rays are traced with
//! several rays in flight, as a batch's are (`mesh::interleave`): there a lone ray waits on
//! memory at most of its visits.
//!
//! # Why each answer equals the single-ray answer
//!
//! The per-ray box test is the single-ray test, operation for operation (fused or exact form,
//! `FusedRay8` and `Ray8` in `crate::wide::ray`), with rays across the lanes instead of children.
//! Its rounding is monotone in the planes, so a ray that enters a leaf's box enters every
//! ancestor's box too: the packet reaches every leaf that the single ray reaches. The interval
//! test only culls a child when, for every ray, the lower bound of its entry distance exceeds the
//! upper bound of its exit distance; both bounds are widened by the rounding of the per-ray test
//! (the margin is derived in `Packet::cull_test`, `crate::wide::packet`). Triangles are tested by
//! the single ray's code. What can differ is the order in which a ray meets the leaves, which
//! matters only when two triangles give the same `t`, or nearly: the single ray keeps the first
//! and may refuse the second by the rounding of the triangle test's range check, so its answer
//! depends on its order. Such a ray is traced again singly. So that no such tie is hidden,
//! closest-hit packets test boxes and triangles against each ray's `tmax` raised by 2⁻¹⁶
//! relative (a triangle's `t` can round to just before its box's entry distance, and past the
//! range check at the exact `tmax`), and a hit within that band around `tmax`, on either side
//! (an earlier hit's `t`, or the end of the ray's range), is a tie (`record`). Any-hit packets
//! test boxes against the raised `tmax` too, as the single ray's walk does (`mesh::policy`), and
//! triangles against the exact one.

pub(crate) mod choice;
pub(crate) mod regroup;
mod trace;

use super::bvh::{Hit, MeshBvh, TriangleTest};
use super::query::enters_node;
use super::triangle::PackHit;
use crate::math::{Ray, RayCoherence};
use crate::wide::packet::{PACKET, Packet};
use crate::wide::{Lanes8, WithLanes, dispatch};
use choice::{Choosing, wall_clock};
use regroup::{MIN_PACKET, RUN, Regroup};
use trace::{Best, Shears, TracePacket};

/// Rays a batch of `rays` rays on `threads` threads hands to the packets at a time: one
/// regrouping window, the long one ([`regroup::LONG_WINDOW`], which the stream then regroups
/// by) where every thread gets 16 of them or more (a 1024 × 1024 image on up to four threads).
pub(super) fn packet_run(rays: usize, threads: usize) -> usize {
    regroup::window_for(rays / (16 * threads.max(1)))
}

/// What a stream works in, kept per thread so that a stream call allocates and zeroes nothing
/// once warm (about 100 KB for a window of 4096 rays, and 400 KB once a long batch has used one
/// of 16,384: a window's indices twice, its tiles and packet ends, a packet).
struct Scratch {
    best: Box<Best>,
    pk: Box<Packet>,
    /// The packet the rays are settled in (`SettleAtRoot`), apart from `pk`, which the packets'
    /// walks hold meanwhile.
    settle_pk: Box<Packet>,
    shears: Box<Shears>,
    regroup: Regroup,
    /// The walk chosen for closest-hit streams and for any-hit streams (`Choosing`).
    choosing: [Choosing; 2],
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            best: Box::new([None; PACKET]),
            pk: Box::new(Packet::new()),
            settle_pk: Box::new(Packet::new()),
            shears: Box::new(Shears::new()),
            regroup: Regroup::new(),
            choosing: [Choosing::new(); 2],
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

impl MeshBvh {
    /// The closest hit of each of `rays`, all valid ([`Ray::validate`]), into `hits` (one slot per
    /// ray), with the coherent rays traced as packets: each answer equals
    /// [`MeshBvh::intersect`]'s exactly (triangle, `t`, `u`, `v`, normal). The packets of
    /// [`MeshBvh::intersect_batch`], which checked its rays.
    pub(crate) fn intersect_stream_valid(&self, rays: &[Ray], hits: &mut [Option<Hit>]) {
        self.intersect_stream_in(rays, hits, self.is_large());
    }

    /// [`MeshBvh::intersect_stream_valid`], with the runs of rays traced alone traced with
    /// several rays in flight when `in_flight` (the BVH is large).
    fn intersect_stream_in(&self, rays: &[Ray], hits: &mut [Option<Hit>], in_flight: bool) {
        debug_assert!(rays.iter().all(|r| r.validate().is_ok()));
        // Each answer is written in place: built elsewhere and copied, its 32-byte reload
        // waited on the narrower stores that wrote it (a tenth of a stream's time, perf).
        let answer = |ray: &Ray, packed: Option<_>, hint, slot: &mut Option<Hit>| match packed {
            // Traced alone, or met a tie in its packet.
            None | Some((_, true)) => self.intersect_into(ray, hint, slot),
            Some((None, false)) => *slot = None,
            Some((Some((prim, h)), false)) => *slot = Some(self.finish(prim, h, ray)),
        };
        let alone = |run: &[Ray], hint, hits: &mut [Option<Hit>]| {
            if in_flight && hint == RayCoherence::Incoherent {
                self.intersect_interleaved(run, hits)
            } else {
                self.intersect_valid_run(run, hint, hits)
            }
        };
        self.stream::<false, _>(rays, true, hits, answer, alone);
    }

    /// [`MeshBvh::intersect_stream_valid`] with each hit's key, the distance the walk ranked it
    /// by ([`MeshBvh::intersect_keyed_unchecked`]): the scene's packets. Rays may have a
    /// non-finite origin or direction (those hit nothing), as an instance's view of world rays
    /// does; their ranges are valid.
    pub(crate) fn intersect_stream_keyed_unchecked(&self, rays: &[Ray], hits: &mut [Option<(f32, Hit)>]) {
        self.intersect_stream_keyed_in(rays, hits, self.is_large());
    }

    /// [`MeshBvh::intersect_stream_keyed_unchecked`], with rays in flight as
    /// [`MeshBvh::intersect_stream_in`] says.
    fn intersect_stream_keyed_in(&self, rays: &[Ray], hits: &mut [Option<(f32, Hit)>], in_flight: bool) {
        debug_assert!(rays.iter().all(|r| r.tmin.is_finite() && r.tmin <= r.tmax));
        let answer = |ray: &Ray,
                      packed: Option<(Option<(u32, PackHit)>, bool)>,
                      hint,
                      slot: &mut Option<(f32, Hit)>| {
            *slot = match packed {
                // Traced alone, or met a tie in its packet.
                None | Some((_, true)) => match ray.validate() {
                    Ok(()) => self.trace_valid::<false>(ray, hint).0.map(|(prim, h)| (h.t, self.finish(prim, h, ray))),
                    Err(_) => None,
                },
                Some((None, false)) => None,
                Some((Some((prim, h)), false)) => Some((h.t, self.finish(prim, h, ray))),
            }
        };
        let alone = |run: &[Ray], hint, hits: &mut [Option<(f32, Hit)>]| {
            if in_flight && hint == RayCoherence::Incoherent {
                self.intersect_interleaved_keyed(run, hits)
            } else {
                for (ray, slot) in run.iter().zip(hits) {
                    *slot = self.trace_valid::<false>(ray, hint).0.map(|(prim, h)| (h.t, self.finish(prim, h, ray)));
                }
            }
        };
        self.stream::<false, _>(rays, false, hits, answer, alone);
    }

    /// Whether each of `rays` hits anything, into `occluded` (one slot per ray), with the
    /// coherent rays traced as packets, as [`MeshBvh::intersect_stream_valid`] traces them. Rays
    /// may be invalid, as [`MeshBvh::intersect_stream_keyed_unchecked`]'s may, unless `valid`
    /// says that every one is (a batch checked them).
    pub(crate) fn occluded_stream_unchecked(&self, rays: &[Ray], occluded: &mut [bool], valid: bool) {
        self.occluded_stream_in(rays, occluded, self.is_large(), valid);
    }

    /// [`MeshBvh::occluded_stream_unchecked`], with rays in flight as
    /// [`MeshBvh::intersect_stream_in`] says.
    fn occluded_stream_in(&self, rays: &[Ray], occluded: &mut [bool], in_flight: bool, valid: bool) {
        debug_assert!(rays.iter().all(|r| r.tmin.is_finite() && r.tmin <= r.tmax));
        let answer = |ray: &Ray, packed: Option<(Option<_>, bool)>, hint, slot: &mut bool| {
            *slot = match packed {
                None => self.occluded_unchecked(ray, hint).0,
                Some((best, _)) => best.is_some(),
            }
        };
        let alone = |run: &[Ray], hint, occluded: &mut [bool]| {
            if in_flight && hint == RayCoherence::Incoherent {
                self.occluded_interleaved(run, occluded)
            } else {
                self.occluded_valid_run(run, hint, occluded)
            }
        };
        self.stream::<true, _>(rays, valid, occluded, answer, alone);
    }

    /// Regroups `rays` into packets ([`Regroup::run`]) and calls `answer(ray, packed, slot)` for
    /// every ray and its slot of `out`: `packed` is `None` for an invalid ray (an instance's view
    /// of a world ray), else the packet's pack hit for it (none for a ray settled at the root)
    /// and whether it met a tie, to be traced again alone; `hint` is the coherence of the ray's
    /// run. Valid rays traced alone go to `alone(run, hint, out)`, a run or a ray at a time, as a
    /// batch's runs go one by one: each caller chooses there whether the incoherent runs of a large
    /// BVH ([`crate::mesh::LARGE_BVH_BYTES`]), where the rays wait on memory, go in flight
    /// (`interleave::by_runs`; coherent rays follow their neighbours' nodes, in cache). With
    /// `valid`, every ray is known to be valid, and none is checked again.
    fn stream<const ANY: bool, T>(
        &self,
        rays: &[Ray],
        valid: bool,
        out: &mut [T],
        answer: impl Fn(&Ray, Option<(Option<(u32, PackHit)>, bool)>, RayCoherence, &mut T),
        alone: impl Fn(&[Ray], RayCoherence, &mut [T]),
    ) {
        // Fewer rays than a packet holds: no packet, and no scratch to fetch.
        if rays.len() < MIN_PACKET {
            for (ray, slot) in rays.iter().zip(out.iter_mut()) {
                answer(ray, None, RayCoherence::Coherent, slot);
            }
            return;
        }
        SCRATCH.with(|cell| {
            let mut fresh = None;
            let mut held = cell.try_borrow_mut();
            let scratch = match held.as_mut() {
                Ok(scratch) => scratch.get_or_insert_with(Scratch::new),
                // Re-entered from `answer` on this thread (never by the library itself).
                Err(_) => fresh.insert(Scratch::new()),
            };
            self.stream_in::<ANY, T>(rays, valid, out, &answer, &alone, scratch);
        })
    }

    /// [`MeshBvh::stream`] with its scratch.
    fn stream_in<const ANY: bool, T>(
        &self,
        rays: &[Ray],
        valid: bool,
        out: &mut [T],
        answer: &impl Fn(&Ray, Option<(Option<(u32, PackHit)>, bool)>, RayCoherence, &mut T),
        alone: &impl Fn(&[Ray], RayCoherence, &mut [T]),
        scratch: &mut Scratch,
    ) {
        let watertight = self.options.triangle_test == TriangleTest::Watertight;
        let Scratch { best, pk, settle_pk, shears, regroup, choosing } = scratch;
        let (best, pk, shears) = (&mut **best, &mut **pk, &mut **shears);
        // Found once per stream rather than per ray: the settling below runs for every ray.
        let root = (!self.blocks.is_empty()).then(|| self.blocks.node(0));
        // A run of valid rays to `alone`, else each ray to `answer`.
        let traced_alone = |out: &mut [T], range: std::ops::Range<usize>, hint| {
            let run = &rays[range.clone()];
            if valid || run.iter().all(|r| r.validate().is_ok()) {
                alone(run, hint, &mut out[range]);
            } else {
                range.for_each(|i| answer(&rays[i], None, hint, &mut out[i]));
            }
        };
        regroup.run(
            regroup::window_for(rays.len()),
            &mut choosing[usize::from(ANY)],
            rays,
            out,
            wall_clock(),
            // A ray that enters none of the root's children is settled: nothing is hit.
            |out, window, coherent, settled| {
                let Some(root) = root else { return };
                let pk = &mut **settle_pk;
                let (rays, out) = (&rays[window.clone()], &mut out[window]);
                dispatch(SettleAtRoot { root, rays, coherent, settled: &mut *settled, pk });
                for ((ray, slot), _) in rays.iter().zip(out).zip(settled.iter()).filter(|(_, s)| **s) {
                    answer(ray, Some((None, false)), RayCoherence::Coherent, slot);
                }
            },
            |out, i, hint| traced_alone(out, i..i + 1, hint),
            traced_alone,
            |out, idx| {
                let ties = dispatch(TracePacket::<ANY> {
                    bvh: self,
                    pk: &mut *pk,
                    rays,
                    idx,
                    watertight,
                    best: &mut *best,
                    shears: &mut *shears,
                });
                for ((k, &i), &best) in idx.iter().enumerate().zip(best.iter()) {
                    answer(&rays[i], Some((best, ties & (1 << k) != 0)), RayCoherence::Coherent, &mut out[i]);
                }
            },
        );
    }
}

/// The rays of a window that enter none of the root's children ([`enters_node`]), at the SIMD
/// level [`crate::simd_level`] chose, as a kernel for [`dispatch()`]: `settled[k]` is set for each
/// such ray `k` of a coherent run (`coherent[k / RUN]`).
struct SettleAtRoot<'a> {
    root: &'a crate::wide::Node8,
    rays: &'a [Ray],
    coherent: &'a [bool],
    settled: &'a mut [bool],
    /// Scratch for the packets the rays are tested in.
    pk: &'a mut Packet,
}

impl WithLanes for SettleAtRoot<'_> {
    type Output = ();

    /// The rays of a coherent run in packets of consecutive rays where they share their
    /// direction signs and can join a packet (every camera ray but near the image's middle
    /// lines), each ray tested in its lane with its own arithmetic ([`Packet::entering_children`]);
    /// the rest one at a time.
    #[inline(always)]
    fn run<L: Lanes8>(self) {
        let SettleAtRoot { root, rays, coherent, settled, pk } = self;
        let runs = rays.chunks(RUN).zip(settled.chunks_mut(RUN)).zip(coherent).enumerate();
        for (r, ((run, settled), _)) in runs.filter(|(_, (_, coherent))| **coherent) {
            for (c, (chunk, settled)) in run.chunks(PACKET).zip(settled.chunks_mut(PACKET)).enumerate() {
                let start = r * RUN + c * PACKET;
                let idx: [usize; PACKET] = std::array::from_fn(|k| start + k);
                let idx = &idx[..chunk.len()];
                // The signs first, ray by ray until one differs (shadow rays from a surface to a
                // light often do), so that such a chunk costs no load; the load checks the rest.
                // (Every eighth ray's signs alone let more such chunks through to a load.)
                let signs = chunk[0].inv_dir().is_negative_bitmask();
                let same_signs = chunk.iter().all(|r| r.inv_dir().is_negative_bitmask() == signs);
                let entering = if !same_signs {
                    None
                } else if L::FMA {
                    pk.load_if_packable::<L, true, true>(rays, idx).then(|| pk.entering_children::<L, true>(root))
                } else {
                    pk.load_if_packable::<L, false, true>(rays, idx).then(|| pk.entering_children::<L, false>(root))
                };
                if let Some(entering) = entering {
                    for (k, settled) in settled.iter_mut().enumerate() {
                        *settled = entering & (1 << k) == 0;
                    }
                } else {
                    for (ray, settled) in chunk.iter().zip(settled) {
                        *settled = !enters_node::<L>(root, ray);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec3A};

    use crate::{BuildOptions, MeshBvh, Ray, TriMesh};
    use slabtree_testkit::rng::units;

    /// Checks the three streams (closest hit, with its key, any hit) of `rays` against the single
    /// rays, with the runs traced alone in flight where `in_flight`, naming `what` on a failure;
    /// returns the rays that hit.
    fn streams_equal_single_rays(bvh: &MeshBvh, rays: &[Ray], in_flight: bool, what: &str) -> usize {
        let mut hits = vec![None; rays.len()];
        bvh.intersect_stream_in(rays, &mut hits, in_flight);
        let mut occluded = vec![false; rays.len()];
        bvh.occluded_stream_in(rays, &mut occluded, in_flight, true);
        let mut keyed = vec![None; rays.len()];
        bvh.intersect_stream_keyed_in(rays, &mut keyed, in_flight);
        for (i, r) in rays.iter().enumerate() {
            assert_eq!(hits[i], bvh.intersect(r).unwrap(), "ray {i}, {what}");
            assert_eq!(occluded[i], bvh.occluded(r).unwrap(), "ray {i}, {what}");
            assert_eq!(keyed[i], bvh.intersect_keyed_unchecked(r).0, "ray {i}, {what}");
        }
        hits.iter().filter(|h| h.is_some()).count()
    }

    /// Each walk a stream can choose gives the single rays' answers, held fixed (no probe):
    /// packets and single rays, each with and without settling the rays that miss the root first,
    /// for camera rays that partly miss a sphere, closest hit (with and without its key) and any
    /// hit, with both triangle tests.
    #[test]
    fn each_walk_a_stream_chooses_equals_single_rays() {
        use super::{Choosing, SCRATCH, Scratch};
        use crate::TriangleTest;
        let rays: Vec<Ray> = (0..96 * 96)
            .map(|i| {
                let (x, y) = ((i % 96) as f32 / 96.0 - 0.5, (i / 96) as f32 / 96.0 - 0.5);
                Ray::new(Vec3A::new(0.2, 0.1, 3.0), Vec3A::new(x, y, -1.0))
            })
            .collect();
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            let options = BuildOptions { triangle_test: test, ..Default::default() };
            let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 48, 24), &options);
            for (packets, settle) in [(true, true), (true, false), (false, true), (false, false)] {
                SCRATCH.with(|s| {
                    s.borrow_mut().get_or_insert_with(Scratch::new).choosing = [Choosing::fixed(packets, settle); 2];
                });
                let n = streams_equal_single_rays(
                    &bvh,
                    &rays,
                    false,
                    &format!("{test:?}, packets {packets}, settle {settle}"),
                );
                assert!(n > 2000 && n < rays.len() - 2000, "{n} hits");
            }
        }
        SCRATCH.with(|s| *s.borrow_mut() = None);
    }

    /// A stream long enough for the long window (`regroup::LONG_WINDOW`) regroups in windows of
    /// that many rays and still gives the single rays' answers: camera rays that partly miss a
    /// sphere, 128 × 300 of them in scan-line order (two long windows and part of a third), with
    /// each walk held fixed as in `each_walk_a_stream_chooses_equals_single_rays`.
    #[test]
    fn a_long_stream_equals_single_rays() {
        use super::regroup::{LONG_WINDOW, WINDOW, window_for};
        use super::{Choosing, SCRATCH, Scratch, packet_run};
        assert_eq!((window_for(LONG_WINDOW - 1), window_for(LONG_WINDOW)), (WINDOW, LONG_WINDOW));
        assert_eq!(packet_run(1 << 20, 1), LONG_WINDOW);
        assert_eq!(packet_run(1 << 20, 8), WINDOW);
        assert_eq!(packet_run(1 << 16, 1), WINDOW);
        let (side, rows) = (128, 300);
        let rays: Vec<Ray> = (0..side * rows)
            .map(|i| {
                let (x, y) = ((i % side) as f32 / side as f32 - 0.5, (i / side) as f32 / rows as f32 - 0.5);
                Ray::new(Vec3A::new(0.2, 0.1, 3.0), Vec3A::new(x, y, -1.0))
            })
            .collect();
        assert_eq!(window_for(rays.len()), LONG_WINDOW);
        let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 64, 32), &BuildOptions::default());
        for (packets, settle) in [(true, true), (true, false), (false, true)] {
            SCRATCH.with(|s| {
                s.borrow_mut().get_or_insert_with(Scratch::new).choosing = [Choosing::fixed(packets, settle); 2];
            });
            let n = streams_equal_single_rays(&bvh, &rays, false, &format!("packets {packets}, settle {settle}"));
            assert!(n > 3000 && n < rays.len() - 3000, "{n} hits");
        }
        SCRATCH.with(|s| *s.borrow_mut() = None);
    }

    /// The runs that a stream traces alone, traced with rays in flight (as through a large BVH,
    /// forced here on a small one) give the single rays' answers: random rays (incoherent runs)
    /// and camera rays (coherent, in packets) in one stream, closest hit (with and without its
    /// key) and any hit.
    #[test]
    fn runs_in_flight_equal_single_rays() {
        let mut next = units(7);
        let positions: Vec<Vec3> = (0..3000).map(|_| Vec3::new(next(), next(), next())).collect();
        let triangles: Vec<[u32; 3]> = (0..1000).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect();
        let bvh = MeshBvh::build(&TriMesh::new(positions, triangles).unwrap(), &BuildOptions::default());
        let random = (0..1500).map(|_| {
            let o = Vec3A::new(next(), next(), next()) * 3.0 - Vec3A::ONE;
            Ray::new(o, Vec3A::new(next(), next(), next()) - o)
                .with_range(0.0, if next() < 0.5 { 2.0 } else { f32::INFINITY })
        });
        let camera = (0..2048).map(|i| {
            let (x, y) = ((i % 64) as f32 / 64.0, (i / 64) as f32 / 32.0);
            Ray::new(Vec3A::new(0.5, 0.5, -2.0), Vec3A::new(x - 0.5, y - 0.5, 1.0))
        });
        let rays: Vec<Ray> = random.chain(camera).collect();
        let hits = streams_equal_single_rays(&bvh, &rays, true, "in flight");
        assert!(hits > 500, "{hits} hits");
    }
}
