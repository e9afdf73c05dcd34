//! A packet's trace through the mesh BVH ([`MeshBvh::trace_packet`]): the packet walk with its
//! leaves' triangle tests, eight rays across the lanes or one ray at a time, the subtrees its
//! rays walk alone, and the record of each ray's hit and ties. Why its answers equal the single
//! ray's is set out in the parent module, `mesh::stream`.

use crate::math::Ray;
use crate::mesh::bvh::{MeshBvh, STACK};
use crate::mesh::layout::Blocks;
use crate::mesh::triangle::{PackHit, TriPack, TriRay};
use crate::mesh::triangle_rays::{self, ShearLanes};
use crate::wide::packet::{PACKET, Packet, lowered_tmax, raised_tmax, raised_tmax8};
use crate::wide::packet_walk::{PacketLeaf, PacketVisitor, packet_walk};
use crate::wide::{ChildRef, FixedStack, FusedRay8, Lanes8, LeafVisitor, Ray8, WithLanes, closest_first};

/// Rays of a group that enter a leaf above which its triangles are tested with the rays across
/// the lanes (four eight-ray tests) rather than ray by ray (one four-triangle test each).
const LANES_FROM: u32 = 2;
/// Rays at most that walk a subtree alone rather than in their packet (see `packet_walk`).
const ALONE: u32 = 8;

/// Records ray `r`'s hit `h` on triangle `prim`, where the ray's `tmax` was `tmax` and the
/// triangle test's range was raised to [`triangle_tmax`]`(tmax)`. A hit beyond `tmax` is no hit.
/// Any hit within it ends the ray. A closest hit within it clips the ray; either is a tie, and
/// the ray is traced again singly, when it lies within the band of [`lowered_tmax`] and
/// [`raised_tmax`] around `tmax`. Returns whether the ray was clipped.
///
/// Why a band, and not `t == tmax`: the single ray refuses a triangle at `t <= tmax` when the
/// triangle test's scaled check (`t_num <= |det|·tmax`, rounded) fails, which it can for `t`
/// equal to `tmax` or a rounding below it. When `tmax` is an earlier hit's `t`, which of the two
/// triangles the single ray returns depends on the order it meets them in, and a packet meets
/// them in its own order; when `tmax` is the end of the ray's range, the packet's raised range
/// would take a hit that the single ray's check refuses.
#[inline(always)]
fn record<const ANY: bool>(
    pk: &mut Packet,
    best: &mut Best,
    ties: &mut u64,
    r: usize,
    prim: u32,
    h: PackHit,
    tmax: f32,
) -> bool {
    if ANY {
        // Tested up to the band too, and kept only within the range, as the single ray's leaf
        // test (`TriangleLeaf`) keeps it: any hit then finds a hit exactly when closest hit does.
        if h.t <= tmax {
            best[r] = Some((prim, h));
            pk.live &= !(1u64 << r);
        }
        return false;
    }
    if h.t >= lowered_tmax(tmax) {
        *ties |= 1 << r;
    }
    if h.t > tmax {
        return false;
    }
    best[r] = Some((prim, h));
    pk.clip(r, h.t);
    true
}

/// The `tmax` of a triangle test in a packet: raised, so that [`record`] sees every hit that may
/// tie with a closest hit's current one, and every hit whose rounded `t` is the end of an any
/// hit's range, as the single ray's leaf test (`TriangleLeaf`) does.
#[inline(always)]
fn triangle_tmax(tmax: f32) -> f32 {
    raised_tmax(tmax)
}

/// The watertight test's ray spaces of the current packet's groups of eight rays, each computed
/// at the first leaf its rays test ([`ShearLanes::of`]), as most rays of a camera packet reach
/// no leaf.
pub(super) struct Shears {
    /// The groups computed, a bit each.
    ready: u8,
    groups: [ShearLanes; PACKET / 8],
}

impl Shears {
    /// No group computed.
    pub(super) fn new() -> Shears {
        Shears { ready: 0, groups: [ShearLanes::EMPTY; PACKET / 8] }
    }

    /// Group `g`'s ray spaces.
    #[inline(always)]
    fn group<L: Lanes8>(&mut self, pk: &Packet, g: usize) -> &ShearLanes {
        if self.ready & (1 << g) == 0 {
            self.groups[g] = ShearLanes::of::<L>(&pk.group_dirs::<L>(g));
            self.ready |= 1 << g;
        }
        &self.groups[g]
    }
}

/// Per ray of a packet: its nearest pack hit so far.
pub(super) type Best = [Option<(u32, PackHit)>; PACKET];

impl MeshBvh {
    /// Traces the packet loaded from `rays[idx[..]]`: each ray's nearest (or, with `ANY`, first)
    /// pack hit in `best`; returns the rays that met a tie (a hit within a rounding band of their
    /// `tmax`, see [`record`]; to be traced again singly).
    #[inline(always)]
    fn trace_packet<L: Lanes8, const ANY: bool, const FUSED: bool>(
        &self,
        pk: &mut Packet,
        rays: &[Ray],
        idx: &[usize],
        watertight: bool,
        best: &mut Best,
        shears: &mut Shears,
    ) -> u64 {
        best[..pk.n].fill(None);
        shears.ready = 0;
        let mut ties = 0u64;
        if self.blocks.is_empty() {
            return ties;
        }
        let blocks = &self.blocks;
        let prefetch = |c: ChildRef| {
            let len = if c.is_leaf() { size_of::<TriPack>() } else { size_of::<crate::wide::Node8>() };
            crate::hint::prefetch_record(blocks.block_ptr(c.index()), len);
        };
        let mut leaves = PacketPacks::<L, ANY, FUSED> {
            bvh: self,
            rays,
            idx,
            watertight,
            best,
            ties: &mut ties,
            shears,
            lanes: std::marker::PhantomData,
        };
        packet_walk::<L, ANY, FUSED, ALONE, _>(blocks, pk, prefetch, &mut leaves);
        ties
    }

    /// The rays of `at`'s range that enter its box, each walking the subtree under it alone
    /// (see `packet_walk`): with the single ray's node test, in the form and with the constants
    /// of its lanes in the packet, and the single ray's pack test, from its current `tmax`, its
    /// hits recorded as the packet's are. The box tests take `tmax` raised as the packet's do,
    /// and for closest hits the pack tests too, so that no tie is hidden. Returns whether the
    /// walk goes on.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn walk_subtree<L: Lanes8, const ANY: bool, const FUSED: bool>(
        &self,
        pk: &mut Packet,
        at: &PacketLeaf<L>,
        rays: &[Ray],
        idx: &[usize],
        watertight: bool,
        best: &mut Best,
        ties: &mut u64,
    ) -> bool {
        for g in at.groups() {
            let mut m = at.entering::<FUSED, true>(pk, g);
            while m != 0 {
                let r = g * 8 + m.trailing_zeros() as usize;
                m &= m - 1;
                let ray = &rays[idx[r]];
                let tmax = pk.tmax_of(r);
                let box_tmax = raised_tmax(tmax);
                let tr = TriRay::new(ray, watertight);
                let mut visitor = Alone::<ANY> {
                    blocks: &self.blocks,
                    tr,
                    watertight,
                    pk: &mut *pk,
                    best: &mut *best,
                    ties: &mut *ties,
                    r,
                };
                let mut stack = FixedStack::<_, STACK>::new();
                let start = ChildRef::node(at.index);
                match if FUSED { FusedRay8::<L>::new(ray) } else { None } {
                    Some(f) => closest_first::<ANY, false, _, _, _, _>(
                        &self.blocks,
                        start,
                        &f,
                        ray.tmin,
                        box_tmax,
                        &mut stack,
                        &mut visitor,
                    ),
                    None => closest_first::<ANY, false, _, _, _, _>(
                        &self.blocks,
                        start,
                        &Ray8::<L, true>::lowered(ray),
                        ray.tmin,
                        box_tmax,
                        &mut stack,
                        &mut visitor,
                    ),
                };
            }
        }
        pk.clipped();
        !ANY || pk.live != 0
    }
}

/// One ray of a packet walking a subtree alone (`MeshBvh::walk_subtree`): each pack is tested
/// with the ray's `tmax`, kept in the packet (raised for closest hits, see [`record`]), and each
/// hit is recorded in the packet's answers as it is found, so ties are seen as in the packet's
/// own leaves; the walk's `tmax` (the box tests') is the raised one.
struct Alone<'a, const ANY: bool> {
    blocks: &'a Blocks,
    tr: TriRay,
    watertight: bool,
    pk: &'a mut Packet,
    best: &'a mut Best,
    ties: &'a mut u64,
    r: usize,
}

impl<const ANY: bool> LeafVisitor for Alone<'_, ANY> {
    #[inline(always)]
    fn visit(&mut self, leaf: ChildRef, _entry: f32, box_tmax: &mut f32) -> bool {
        // SAFETY: a leaf reference read from this BVH's nodes, not an empty slot's.
        let p = unsafe { self.blocks.pack_of_leaf(leaf) };
        let tmax = self.pk.tmax_of(self.r);
        let test_tmax = triangle_tmax(tmax);
        let h = if self.watertight {
            self.tr.intersect_watertight(p, test_tmax)
        } else {
            self.tr.intersect_mt(p, test_tmax)
        };
        let Some(mut h) = h else { return true };
        h.pack = leaf.index();
        let clipped = record::<ANY>(self.pk, self.best, self.ties, self.r, p.prim[h.lane], h, tmax);
        if ANY {
            // The walk ends once the ray has its hit (`record` ends it).
            return self.pk.live & (1u64 << self.r) != 0;
        }
        if clipped {
            *box_tmax = raised_tmax(h.t);
        }
        true
    }

    #[inline(always)]
    fn prefetch(&self, child: ChildRef) {
        self.blocks.prefetch_child(child);
    }
}

/// The mesh's leaves for [`packet_walk`] (`MeshBvh::trace_packet`): each leaf is a triangle
/// pack, tested against the packet's rays that enter it, or a subtree its few rays walk alone.
struct PacketPacks<'a, L, const ANY: bool, const FUSED: bool> {
    bvh: &'a MeshBvh,
    rays: &'a [Ray],
    idx: &'a [usize],
    watertight: bool,
    best: &'a mut Best,
    ties: &'a mut u64,
    shears: &'a mut Shears,
    lanes: std::marker::PhantomData<L>,
}

impl<L: Lanes8, const ANY: bool, const FUSED: bool> PacketVisitor<L> for &mut PacketPacks<'_, L, ANY, FUSED> {
    #[inline(always)]
    fn visit(&mut self, pk: &mut Packet, leaf: &PacketLeaf<L>) -> bool {
        let PacketPacks { bvh, rays, idx, watertight, ref mut best, ref mut ties, ref mut shears, .. } = **self;
        let (best, ties, shears) = (&mut **best, &mut **ties, &mut **shears);
        let blocks = &bvh.blocks;
        if leaf.subtree {
            return bvh.walk_subtree::<L, ANY, FUSED>(pk, leaf, rays, idx, watertight, best, ties);
        }
        // SAFETY: a leaf reference read from this BVH's nodes, not an empty slot's (the cull
        // test never passes one).
        let p = unsafe { blocks.pack_unchecked(leaf.index) };
        let mut hit = false;
        for g in leaf.groups() {
            let mut m = leaf.entering::<FUSED, true>(pk, g);
            let lanes = m.count_ones() > LANES_FROM && (!watertight || shears.group::<L>(pk, g).uniform);
            if lanes {
                // The group's rays across the lanes: four tests of eight rays, against one of
                // four triangles per ray that enters.
                let rays = pk.group_rays::<L>(g);
                let rh = if watertight {
                    triangle_rays::watertight(p, &rays, shears.group::<L>(pk, g), m, raised_tmax8(rays.tmax))
                } else {
                    triangle_rays::moller_trumbore(p, &rays, m, raised_tmax8(rays.tmax))
                };
                m &= rh.mask;
                let (t, u, v, tmax) = (rh.t, rh.u, rh.v, rays.tmax.to_array());
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let lane = rh.lane[l] as usize;
                    let h = PackHit { pack: leaf.index, lane, t: t[l], u: u[l], v: v[l] };
                    hit |= record::<ANY>(pk, best, ties, g * 8 + l, p.prim[lane], h, tmax[l]);
                }
                continue;
            }
            while m != 0 {
                let r = g * 8 + m.trailing_zeros() as usize;
                m &= m - 1;
                let tmax = pk.tmax_of(r);
                let (o, d, inv, margin, tmin) = pk.ray_parts(r);
                let shear = if watertight { Some(shears.group::<L>(pk, g).lane(r % 8)) } else { None };
                let tr = TriRay::with(o, d, inv, margin, tmin, shear);
                let test_tmax = triangle_tmax(tmax);
                let h = if watertight { tr.intersect_watertight(p, test_tmax) } else { tr.intersect_mt(p, test_tmax) };
                if let Some(mut h) = h {
                    h.pack = leaf.index;
                    hit |= record::<ANY>(pk, best, ties, r, p.prim[h.lane], h, tmax);
                }
            }
        }
        if hit {
            pk.clipped();
        }
        true
    }
}

/// One packet's walk (`MeshBvh::trace_packet`), loaded and traced at the SIMD level
/// [`crate::simd_level`] chose, as a kernel for [`crate::wide::dispatch()`]: the fused node test where the level
/// has a fused multiply-add, as the single rays at that level take it.
pub(super) struct TracePacket<'a, const ANY: bool> {
    pub(super) bvh: &'a MeshBvh,
    pub(super) pk: &'a mut Packet,
    pub(super) rays: &'a [Ray],
    pub(super) idx: &'a [usize],
    pub(super) watertight: bool,
    pub(super) best: &'a mut Best,
    pub(super) shears: &'a mut Shears,
}

impl<const ANY: bool> WithLanes for TracePacket<'_, ANY> {
    type Output = u64;

    #[inline(always)]
    fn run<L: Lanes8>(self) -> u64 {
        let TracePacket { bvh, pk, rays, idx, watertight, best, shears } = self;
        if L::FMA {
            pk.load::<L, true, true>(rays, idx);
            bvh.trace_packet::<L, ANY, true>(pk, rays, idx, watertight, best, shears)
        } else {
            pk.load::<L, false, true>(rays, idx);
            bvh.trace_packet::<L, ANY, false>(pk, rays, idx, watertight, best, shears)
        }
    }
}
