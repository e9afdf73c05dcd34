//! Ray streams: coherent rays traced as packets of up to 64, with the whole packet culled at each
//! node by interval arithmetic, and the rest of the stream traced one ray at a time.
//!
//! The packet traversal follows the large-packet kernels of the literature:
//!
//! * **Interval culling** (Wald, Boulos and Shirley 2007, "Ray Tracing Deformable Scenes Using
//!   Dynamic Bounding Volume Hierarchies"): the packet's origins and inverse directions are
//!   bounded by intervals, and one `f32x8` test of a node's eight children against those
//!   intervals culls every child that no ray of the packet can enter.
//! * **First active ray** (Overbeck, Ramamoorthi and Mark 2008, "Large Ray Packets for Real-time
//!   Whitted Ray Tracing"; Reshetov, Soupikov and Hurley 2005): a child is entered with the index
//!   of the first ray that enters it, found by testing eight rays at a time from the parent's
//!   first ray on. Rays before it missed the child, so they miss everything inside it, and
//!   most children of a coherent packet are decided by the first eight rays tested.
//! * **Exact leaves**: at a leaf, every ray from the first active one on is tested against the
//!   leaf's box with the single-ray slab arithmetic, lane for lane, and the rays that enter it
//!   test its triangles with the single-ray triangle test.
//!
//! # Why each answer equals the single-ray answer
//!
//! The per-ray box test is the single-ray test, operation for operation (fused or exact form,
//! `FusedRay8` and `Ray8` in `crate::wide::ray`), with rays across the lanes instead of children.
//! Its rounding is monotone in the planes, so a ray that enters a leaf's box enters every
//! ancestor's box too: the packet reaches every leaf that the single ray reaches. The interval
//! test only culls a child when, for every ray, the lower bound of its entry distance exceeds the
//! upper bound of its exit distance; both bounds are widened by the rounding of the per-ray test
//! (the margin is derived in [`Packet::cull_test`]). Triangles are tested by the single ray's
//! code. What can differ is the order in which a ray meets the leaves, which matters only when
//! two triangles give exactly the same `t`: such a ray is traced again singly, as in the 8-ray
//! packets.

use wide::f32x8;

use super::bvh::{Hit, MeshBvh, TriangleTest};
use super::triangle::{PackHit, TriRay};
use crate::math::{BatchError, FAR_PAD, Ray, validate_rays};
use crate::wide::{ChildRef, FixedStack, Node8};

/// Rays in a packet at most: a chunk of the stream.
pub(crate) const PACKET: usize = 64;
const GROUPS: usize = PACKET / 8;
/// Rays regrouped together: enough rows of an image for its packets to become tiles.
const WINDOW: usize = 4096;
/// Largest average step between the unit directions of consecutive rays, per axis, for a bucket
/// to be regrouped into packets (neighbouring pixels of a 256-pixel image with a 90° view differ
/// by about 0.008).
const MAX_STEP: f32 = 0.05;
/// Rays on a side of a tile that [`tile_order`] makes.
const TILE: usize = 8;
/// Most tiles in a window's bucket.
const MAX_CELLS: usize = 1024;
/// Rays of one direction octant in a chunk below which they are traced singly.
const MIN_PACKET: usize = 8;
/// Largest spread of a packet's unit directions, per axis, for it to be traced as a packet; wider
/// packets (diffuse bounces, random rays) cull too little to pay for the packet's set-up.
const MAX_DIR_SPREAD: f32 = 0.5;
/// Stack entries of the packet traversal; as for the single ray (7 siblings per level).
const STACK: usize = 1024;
/// Relative margin of the interval bounds (64 units of f32 roundoff; see `Packet::cull_test`).
const REL_MARGIN: f32 = 64.0 * f32::EPSILON * 0.5;

/// One value per ray of a packet, 32-byte aligned so that each group of eight loads as one
/// vector.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Lanes([f32; PACKET]);

impl Lanes {
    const ZERO: Lanes = Lanes([0.0; PACKET]);

    /// Rays `8g..8g + 8`.
    #[inline(always)]
    fn group(&self, g: usize) -> f32x8 {
        debug_assert!(g < GROUPS);
        // SAFETY: `Lanes` is 32-byte aligned and `g < GROUPS`, so the 8 floats at `8g` are an
        // aligned, in-bounds `f32x8` (whose layout is `[f32; 8]`).
        unsafe { *self.0.as_ptr().add(g * 8).cast::<f32x8>() }
    }
}

/// One child's planes, splatted, near and far per axis by the packet's direction signs.
struct Planes {
    near: [f32x8; 3],
    far: [f32x8; 3],
}

/// A packet: up to 64 valid rays of one direction octant whose fused products are finite, laid
/// out for the single-ray node test with rays across the lanes. Filled in place for each packet
/// by [`Packet::load`], so that a stream allocates and copies nothing else.
struct Packet {
    n: usize,
    inv: [Lanes; 3],
    /// `o·inv` (fused form) or `o` (exact form).
    org: [Lanes; 3],
    /// The fused form's `Δ` (zero in the exact form).
    widen: Lanes,
    tmin: Lanes,
    /// `tmax`, lowered as hits are found; `-inf` past the last ray, so no box passes there.
    tmax: Lanes,
    /// Origins and directions, for the triangle tests.
    o: [Lanes; 3],
    d: [Lanes; 3],
    /// Rays still searching (any hit: not yet occluded).
    live: u64,
    near_row: [usize; 3],
    far_row: [usize; 3],
    /// Bounds of the origins and inverse directions, per axis.
    o_lo: [f32x8; 3],
    o_hi: [f32x8; 3],
    i_lo: [f32x8; 3],
    i_hi: [f32x8; 3],
    tmin_lo: f32x8,
    /// Absolute margin of the interval bounds: three times the largest `Δ`.
    margin: f32x8,
    /// The largest `tmax` of a live ray.
    tmax_hi: f32,
}

impl Packet {
    /// An empty packet, to [`Packet::load`].
    fn new() -> Packet {
        let z = f32x8::ZERO;
        Packet {
            n: 0,
            inv: [Lanes::ZERO; 3],
            org: [Lanes::ZERO; 3],
            widen: Lanes::ZERO,
            tmin: Lanes::ZERO,
            tmax: Lanes::ZERO,
            o: [Lanes::ZERO; 3],
            d: [Lanes::ZERO; 3],
            live: 0,
            near_row: [0; 3],
            far_row: [0; 3],
            o_lo: [z; 3],
            o_hi: [z; 3],
            i_lo: [z; 3],
            i_hi: [z; 3],
            tmin_lo: z,
            margin: z,
            tmax_hi: 0.0,
        }
    }

    /// Loads the rays `rays[idx[..]]`, which share their direction signs and have finite fused
    /// products (see [`fusable`]).
    fn load<const FUSED: bool>(&mut self, rays: &[Ray], idx: &[u32]) {
        let n = idx.len();
        debug_assert!((1..=PACKET).contains(&n));
        self.n = n;
        let sign = rays[idx[0] as usize].sign().map(usize::from);
        self.near_row = [sign[0] * 3, 1 + sign[1] * 3, 2 + sign[2] * 3];
        self.far_row = [(1 - sign[0]) * 3, 1 + (1 - sign[1]) * 3, 2 + (1 - sign[2]) * 3];
        let (mut o_lo, mut o_hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        let (mut i_lo, mut i_hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        let (mut tmin_lo, mut widen_hi, mut tmax_hi) = (f32::INFINITY, 0.0f32, f32::NEG_INFINITY);
        for (k, &i) in idx.iter().enumerate() {
            let r = &rays[i as usize];
            let (o, inv, d) = (r.origin(), r.inv_dir(), r.dir());
            let p = o * inv;
            for a in 0..3 {
                self.inv[a].0[k] = inv[a];
                self.org[a].0[k] = if FUSED { p[a] } else { o[a] };
                self.o[a].0[k] = o[a];
                self.d[a].0[k] = d[a];
                o_lo[a] = o_lo[a].min(o[a]);
                o_hi[a] = o_hi[a].max(o[a]);
                i_lo[a] = i_lo[a].min(inv[a]);
                i_hi[a] = i_hi[a].max(inv[a]);
            }
            let widen = if FUSED { fused_widen(p.abs().max_element()) } else { 0.0 };
            self.widen.0[k] = widen;
            self.tmin.0[k] = r.tmin;
            self.tmax.0[k] = r.tmax;
            tmin_lo = tmin_lo.min(r.tmin);
            widen_hi = widen_hi.max(widen);
            tmax_hi = tmax_hi.max(r.tmax);
        }
        // Lanes past the last ray: a copy of it (finite values, no NaN), which no box passes.
        for k in n..n.next_multiple_of(8) {
            for a in 0..3 {
                self.inv[a].0[k] = self.inv[a].0[n - 1];
                self.org[a].0[k] = self.org[a].0[n - 1];
            }
            self.widen.0[k] = self.widen.0[n - 1];
            self.tmin.0[k] = self.tmin.0[n - 1];
            self.tmax.0[k] = f32::NEG_INFINITY;
        }
        self.live = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let splat3 = |v: [f32; 3]| v.map(f32x8::splat);
        (self.o_lo, self.o_hi, self.i_lo, self.i_hi) = (splat3(o_lo), splat3(o_hi), splat3(i_lo), splat3(i_hi));
        self.tmin_lo = f32x8::splat(tmin_lo);
        self.margin = f32x8::splat(3.0 * widen_hi);
        self.tmax_hi = tmax_hi;
    }

    /// The triangle tests' data of ray `k`.
    #[inline(always)]
    fn tri_ray(&self, k: usize, watertight: bool) -> TriRay {
        let v = |l: &[Lanes; 3]| glam::Vec3::new(l[0].0[k], l[1].0[k], l[2].0[k]);
        TriRay::new(v(&self.o), v(&self.d), self.tmin.0[k], watertight)
    }

    /// The children of `node` that some ray of the packet may enter (a bit mask; never an empty
    /// slot), and a lower bound of every child's entry distance, to order them by.
    ///
    /// For ray `r` and axis `a`, the exact entry distance through plane `P` is
    /// `(P - o_r)·inv_r`, bilinear in `(o_r, inv_r)`, so over the box of origins and inverse
    /// directions it is smallest at a corner: the minimum of the four corner products bounds every
    /// ray's distance from below, and the maximum bounds the exit distance from above. The
    /// single-ray test computes its distances with at most a few roundings relative to the
    /// distance and, in the fused form, an absolute error of at most `Δ/4` from the rounded
    /// `o·inv`; it then lowers the entry by its `Δ` and raises the exit by `FAR_PAD` (at most
    /// `8·2⁻²³` relative). Widening both bounds by [`REL_MARGIN`] relative plus three times the
    /// packet's largest `Δ` absolute covers all of it with room to spare, so a child culled here
    /// is refused by every ray's own test.
    #[inline(always)]
    fn cull_test(&self, node: &Node8) -> (u32, f32x8) {
        let rows = node.bounds.as_flattened();
        let mut near = self.tmin_lo;
        let mut far = f32x8::splat(self.tmax_hi);
        let mut far_hi = f32x8::splat(f32::INFINITY);
        for a in 0..3 {
            let np = f32x8::new(rows[self.near_row[a]]);
            let fp = f32x8::new(rows[self.far_row[a]]);
            let (x0, x1) = (np - self.o_hi[a], np - self.o_lo[a]);
            let lo = (x0 * self.i_lo[a]).fast_min(x0 * self.i_hi[a]).fast_min((x1 * self.i_lo[a]).fast_min(x1 * self.i_hi[a]));
            let (y0, y1) = (fp - self.o_hi[a], fp - self.o_lo[a]);
            let hi = (y0 * self.i_lo[a]).fast_max(y0 * self.i_hi[a]).fast_max((y1 * self.i_lo[a]).fast_max(y1 * self.i_hi[a]));
            near = near.fast_max(lo);
            far_hi = far_hi.fast_min(hi);
        }
        // The margins are capped at f32::MAX so that an infinite bound stays infinite (and
        // `inf - inf` cannot make a NaN).
        let cap = f32x8::splat(f32::MAX);
        let rel = f32x8::splat(REL_MARGIN);
        let near = near - (near.abs() * rel + self.margin).fast_min(cap);
        let far_hi = far_hi + (far_hi.abs() * rel + self.margin).fast_min(cap);
        far = far.fast_min(far_hi);
        // Empty slots have planes +inf and -inf: their lower entry bound is +inf.
        ((near.simd_le(far) & near.simd_lt(f32x8::splat(f32::INFINITY))).to_bitmask(), near)
    }

    /// Lane `l`'s planes, splatted.
    #[inline(always)]
    fn planes(&self, node: &Node8, l: usize) -> Planes {
        let rows = node.bounds.as_flattened();
        Planes {
            near: self.near_row.map(|r| f32x8::splat(rows[r][l])),
            far: self.far_row.map(|r| f32x8::splat(rows[r][l])),
        }
    }

    /// The rays of group `g` that enter the box of `planes` within their `[tmin, tmax]`: the
    /// single-ray node test ([`crate::wide::FusedRay8`] or [`crate::wide::Ray8`]), lane for lane.
    #[inline(always)]
    fn enter<const FUSED: bool>(&self, planes: &Planes, g: usize) -> u32 {
        let inv = [self.inv[0].group(g), self.inv[1].group(g), self.inv[2].group(g)];
        let org = [self.org[0].group(g), self.org[1].group(g), self.org[2].group(g)];
        let (tmin, tmax) = (self.tmin.group(g), self.tmax.group(g));
        let pad = f32x8::splat(FAR_PAD);
        if FUSED {
            let nt = |a: usize| planes.near[a].mul_sub(inv[a], org[a]);
            let ft = |a: usize| planes.far[a].mul_sub(inv[a], org[a]);
            let near = nt(0).fast_max(nt(1)).fast_max(nt(2).fast_max(tmin)) - self.widen.group(g);
            let far = (ft(0).fast_min(ft(1)).fast_min(ft(2)) * pad).fast_min(tmax);
            near.simd_le(far).to_bitmask()
        } else {
            let mut near = tmin;
            let mut far = tmax;
            for a in 0..3 {
                let tn = (planes.near[a] - org[a]) * inv[a];
                let tf = (planes.far[a] - org[a]) * inv[a] * pad;
                near = tn.fast_max(near);
                far = tf.fast_min(far);
            }
            (near.simd_le(far) & near.simd_lt(f32x8::splat(f32::INFINITY))).to_bitmask()
        }
    }

    /// Group `g`'s live rays among `first..=last`.
    #[inline(always)]
    fn active(&self, g: usize, first: usize, last: usize) -> u32 {
        let range = (u64::MAX << first) & (u64::MAX >> (63 - last));
        (((self.live & range) >> (g * 8)) & 0xFF) as u32
    }

    /// The first and the last live ray of `first..=last` that enter the box of `planes`.
    #[inline(always)]
    fn entering<const FUSED: bool>(&self, planes: &Planes, first: usize, last: usize) -> Option<(usize, usize)> {
        let (g0, g1) = (first / 8, last / 8);
        for g in g0..=g1 {
            let active = self.active(g, first, last);
            if active == 0 {
                continue;
            }
            let m = self.enter::<FUSED>(planes, g) & active;
            if m == 0 {
                continue;
            }
            let lo = g * 8 + m.trailing_zeros() as usize;
            // The last one, from the end; the group of the first bounds the search.
            for h in (g + 1..=g1).rev() {
                let m = self.enter::<FUSED>(planes, h) & self.active(h, first, last);
                if m != 0 {
                    return Some((lo, h * 8 + 31 - m.leading_zeros() as usize));
                }
            }
            return Some((lo, g * 8 + 31 - m.leading_zeros() as usize));
        }
        None
    }
}

/// The fused form's `Δ` for a ray whose largest `|o·inv|` is `p` (as `FusedRay8::new`).
#[inline(always)]
fn fused_widen(p: f32) -> f32 {
    p * (4.0 * f32::EPSILON * 0.5) + f32::MIN_POSITIVE
}

/// `true` when the ray can join a packet: its inverse direction and `o·inv` are finite (the
/// condition of the fused node test; the interval bounds need it in both forms).
#[inline(always)]
fn fusable(ray: &Ray) -> bool {
    let (o, inv) = (ray.origin(), ray.inv_dir());
    (inv + o * inv).is_finite()
}

/// A packet's waiting child: the child, the first ray that enters it, and where its box is (the
/// parent node and lane), which a leaf's rays are tested against when it is taken.
#[derive(Clone, Copy)]
struct Entry {
    child: ChildRef,
    parent: u32,
    lane: u8,
    first: u8,
    last: u8,
}

/// Per ray of a packet: its nearest pack hit so far.
type Best = [Option<(u32, PackHit)>; PACKET];

impl MeshBvh {
    /// [`MeshBvh::intersect`] of every ray of `rays`, written to `hits` (cleared first), with the
    /// coherent ones traced as packets: each answer equals `intersect`'s exactly (triangle, `t`,
    /// `u`, `v`, normal).
    ///
    /// The stream is read in chunks of 64 consecutive rays. In each chunk, the rays that share
    /// their direction signs, and whose directions lie close together, form a packet whose every
    /// node is tested once for all of them; the others are traced one by one. Camera rays in
    /// scan-line or tile order, and shadow rays towards one light, are coherent; rays of random
    /// directions are traced singly at the single-ray speed. Nothing is allocated once `hits`
    /// has room. Refuses the whole stream, before tracing any ray, when one is invalid, naming
    /// the first.
    ///
    /// ```
    /// use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh};
    /// use glam::Vec3A;
    /// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default());
    /// // A 16 × 16 pinhole camera at z = 3, looking down -z.
    /// let rays: Vec<Ray> = (0..256)
    ///     .map(|i| {
    ///         let (x, y) = ((i % 16) as f32 / 8.0 - 1.0, (i / 16) as f32 / 8.0 - 1.0);
    ///         Ray::new(Vec3A::new(0.0, 0.0, 3.0), Vec3A::new(x * 0.4, y * 0.4, -1.0))
    ///     })
    ///     .collect();
    /// let mut hits = Vec::new();
    /// bvh.intersect_stream(&rays, &mut hits)?;
    /// for (ray, hit) in rays.iter().zip(&hits) {
    ///     assert_eq!(*hit, bvh.intersect(ray)?);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn intersect_stream(&self, rays: &[Ray], hits: &mut Vec<Option<Hit>>) -> Result<(), BatchError> {
        validate_rays(rays)?;
        hits.clear();
        hits.resize(rays.len(), None);
        self.stream::<false, _>(rays, hits, |ray, packed| match packed {
            // Traced alone, or met a tie in its packet.
            None | Some((_, true)) => self.intersect_unchecked(ray),
            Some((best, false)) => best.map(|(prim, h)| self.finish(prim, h, ray)),
        });
        Ok(())
    }

    /// [`MeshBvh::occluded`] of every ray of `rays`, written to `occluded` (cleared first), with
    /// the coherent ones traced as packets as in [`MeshBvh::intersect_stream`]: each answer equals
    /// `occluded`'s. Shadow rays from a tile of surface points to one light are the case it is
    /// made for.
    ///
    /// ```
    /// use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh};
    /// use glam::Vec3A;
    /// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default());
    /// let light = Vec3A::new(0.0, 5.0, 0.0);
    /// let rays: Vec<Ray> =
    ///     (0..64).map(|i| Ray::segment(Vec3A::new(i as f32 / 16.0 - 2.0, -3.0, 0.0), light)).collect();
    /// let mut occluded = Vec::new();
    /// bvh.occluded_stream(&rays, &mut occluded)?;
    /// assert!(occluded[32]); // straight below the sphere
    /// assert!(!occluded[0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occluded_stream(&self, rays: &[Ray], occluded: &mut Vec<bool>) -> Result<(), BatchError> {
        validate_rays(rays)?;
        occluded.clear();
        occluded.resize(rays.len(), false);
        self.stream::<true, _>(rays, occluded, |ray, packed| match packed {
            None => self.occluded_unchecked(ray),
            Some((best, _)) => best.is_some(),
        });
        Ok(())
    }

    /// Cuts valid `rays` into windows of [`WINDOW`] consecutive rays, regroups each window's
    /// coherent rays into packets, and writes `answer(ray, packed)` to `out` for every ray:
    /// `packed` is `None` for a ray to be traced alone, else the packet's pack hit for it and
    /// whether it met a tie.
    ///
    /// In a window, rays are bucketed by direction octant. A bucket whose consecutive rays point
    /// in nearly the same direction (camera rays, shadow rays towards one light) is reordered
    /// tile by tile ([`tile_order`]), which turns the scan lines of an image into square tiles,
    /// and cut into packets of whole tiles of at most [`PACKET`] rays; a packet whose directions
    /// still spread too widely, and every ray of an incoherent bucket, is traced alone.
    fn stream<const ANY: bool, T>(
        &self,
        rays: &[Ray],
        out: &mut [T],
        answer: impl Fn(&Ray, Option<(Option<(u32, PackHit)>, bool)>) -> T,
    ) {
        let watertight = self.options.triangle_test == TriangleTest::Watertight;
        let fused = cfg!(target_feature = "fma");
        let mut best: Best = [None; PACKET];
        let mut pk = Packet::new();
        // A window's rays, by octant, as indices into `rays`; then a bucket's sort keys.
        let mut by_octant = [0u32; WINDOW];
        let mut sorted = [0u32; WINDOW];
        let mut ends = Ends { at: [0; WINDOW], len: 0 };
        for (w, window) in rays.chunks(WINDOW).enumerate() {
            let base = w * WINDOW;
            let mut count = [0usize; 8];
            let octant_of = |ray: &Ray| {
                let s = ray.sign();
                (s[0] | s[1] << 1 | s[2] << 2) as usize
            };
            for (k, ray) in window.iter().enumerate() {
                if fusable(ray) {
                    count[octant_of(ray)] += 1;
                } else {
                    out[base + k] = answer(ray, None);
                }
            }
            let mut start = [0usize; 8];
            for o in 1..8 {
                start[o] = start[o - 1] + count[o - 1];
            }
            let mut next = start;
            for (k, ray) in window.iter().enumerate() {
                if fusable(ray) {
                    let o = octant_of(ray);
                    by_octant[next[o]] = (base + k) as u32;
                    next[o] += 1;
                }
            }
            for o in 0..8 {
                let bucket = &mut by_octant[start[o]..start[o] + count[o]];
                let sorted = &mut sorted[..bucket.len()];
                if bucket.len() < MIN_PACKET || !tile_order(rays, bucket, sorted, &mut ends) {
                    for &i in bucket.iter() {
                        out[i as usize] = answer(&rays[i as usize], None);
                    }
                    continue;
                }
                let mut from = 0;
                for &end in &ends.at[..ends.len] {
                    let idx = &bucket[from..end as usize];
                    from = end as usize;
                    if idx.len() < MIN_PACKET || !coherent(rays, idx) {
                        for &i in idx {
                            out[i as usize] = answer(&rays[i as usize], None);
                        }
                        continue;
                    }
                    let ties = if fused {
                        pk.load::<true>(rays, idx);
                        self.trace_packet::<ANY, true>(&mut pk, watertight, &mut best)
                    } else {
                        pk.load::<false>(rays, idx);
                        self.trace_packet::<ANY, false>(&mut pk, watertight, &mut best)
                    };
                    for (k, &i) in idx.iter().enumerate() {
                        out[i as usize] = answer(&rays[i as usize], Some((best[k], ties & (1 << k) != 0)));
                    }
                }
            }
        }
    }

    /// Traces the loaded packet: each ray's nearest (or, with `ANY`, first) pack hit in `best`,
    /// and the rays that met an exact tie between two triangles (to be traced again singly).
    fn trace_packet<const ANY: bool, const FUSED: bool>(&self, pk: &mut Packet, watertight: bool, best: &mut Best) -> u64 {
        best[..pk.n].fill(None);
        let mut ties = 0u64;
        if self.blocks.is_empty() {
            return ties;
        }
        let mut stack = FixedStack::<Entry, STACK>::new();
        let mut cur = Entry { child: ChildRef::node(0), parent: 0, lane: 0, first: 0, last: (pk.n - 1) as u8 };
        loop {
            let (first, last) = (cur.first as usize, cur.last as usize);
            if cur.child.is_leaf() {
                // SAFETY: `parent` is a node that held this leaf reference.
                let parent = unsafe { self.blocks.node_unchecked(cur.parent) };
                let planes = pk.planes(parent, cur.lane as usize);
                // SAFETY: a leaf reference read from this BVH's nodes, not an empty slot's (the
                // cull test never passes one).
                let p = unsafe { self.blocks.pack_unchecked(cur.child.index()) };
                let mut hit = false;
                for g in first / 8..=last / 8 {
                    let active = pk.active(g, first, last);
                    if active == 0 {
                        continue;
                    }
                    let mut m = pk.enter::<FUSED>(&planes, g) & active;
                    while m != 0 {
                        let r = g * 8 + m.trailing_zeros() as usize;
                        m &= m - 1;
                        let tmax = pk.tmax.0[r];
                        let tr = pk.tri_ray(r, watertight);
                        let h = if watertight { tr.intersect_watertight(p, tmax) } else { tr.intersect_mt(p, tmax) };
                        if let Some(mut h) = h {
                            h.pack = cur.child.index();
                            if ANY {
                                best[r] = Some((p.prim[h.lane], h));
                                pk.live &= !(1u64 << r);
                                continue;
                            }
                            if best[r].is_some() && h.t == tmax {
                                ties |= 1 << r;
                            }
                            best[r] = Some((p.prim[h.lane], h));
                            pk.tmax.0[r] = h.t;
                            hit = true;
                        }
                    }
                }
                if ANY && pk.live == 0 {
                    break;
                }
                if hit {
                    pk.tmax_hi = pk.tmax.0[..pk.n].iter().fold(f32::NEG_INFINITY, |m, &t| m.max(t));
                }
            } else {
                // SAFETY: the root, or a node reference read from this BVH's nodes.
                let node = unsafe { self.blocks.node_unchecked(cur.child.index()) };
                let (mut mask, key) = pk.cull_test(node);
                let key = key.to_array();
                let mut found = [(cur, 0.0f32); 8];
                let mut n = 0;
                while mask != 0 {
                    let l = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    if let Some((lo, hi)) = pk.entering::<FUSED>(&pk.planes(node, l), first, last) {
                        let (child, parent) = (node.child[l], cur.child.index());
                        let e = Entry { child, parent, lane: l as u8, first: lo as u8, last: hi as u8 };
                        // Far to near by insertion, so the nearest is taken first.
                        let mut j = n;
                        while !ANY && j > 0 && found[j - 1].1 < key[l] {
                            found[j] = found[j - 1];
                            j -= 1;
                        }
                        found[j] = (e, key[l]);
                        n += 1;
                    }
                }
                if n > 0 {
                    for &(e, _) in &found[..n - 1] {
                        let len = if e.child.is_leaf() { 160 } else { 224 };
                        crate::hint::prefetch_record(self.blocks.block_ptr(e.child.index()), len);
                        stack.push(e);
                    }
                    cur = found[n - 1].0;
                    continue;
                }
            }
            match stack.pop() {
                Some(e) => cur = e,
                None => break,
            }
        }
        ties
    }
}

/// When consecutive rays of `bucket` point in nearly the same direction (on average by at most
/// [`MAX_STEP`] per axis), reorders `bucket` tile by tile and returns `true`; otherwise leaves it
/// as it is and returns `false`. `sorted` is scratch of the bucket's length.
///
/// The tiles are square cells, about [`TILE`] rays on a side, over the directions' central
/// projection onto the plane across their dominant axis, `(d[u] / |d[w]|, d[v] / |d[w]|)`: for a
/// pinhole camera that is the image plane, so scan lines become tiles of pixels. The rays'
/// spacing there is estimated as `sqrt(area / rays)` of their bounding rectangle, and the rays
/// are placed by a counting sort over the cells (stable, linear in the rays).
fn tile_order(rays: &[Ray], bucket: &mut [u32], sorted: &mut [u32], ends: &mut Ends) -> bool {
    ends.len = 0;
    let unit = |i: u32| rays[i as usize].dir().normalize_or_zero();
    let mut step = 0.0f32;
    let mut prev = unit(bucket[0]);
    let mut sum = glam::Vec3A::ZERO;
    for &i in bucket.iter() {
        let d = unit(i);
        step += (d - prev).abs().max_element();
        prev = d;
        sum += d.abs();
    }
    if step > MAX_STEP * bucket.len() as f32 {
        return false;
    }
    let w = sum.max_position();
    let (u, v) = ((w + 1) % 3, (w + 2) % 3);
    let project = |i: u32| {
        let d = rays[i as usize].dir();
        let inv = 1.0 / d[w].abs();
        glam::Vec2::new(d[u] * inv, d[v] * inv)
    };
    let (mut lo, mut hi) = (glam::Vec2::INFINITY, glam::Vec2::NEG_INFINITY);
    for &i in bucket.iter() {
        let p = project(i);
        lo = lo.min(p);
        hi = hi.max(p);
    }
    let ext = hi - lo;
    if !ext.is_finite() {
        return false;
    }
    // Cells of TILE × TILE rays at the average spacing, but never more than MAX_CELLS of them.
    let spacing = (ext.x * ext.y / bucket.len() as f32).sqrt();
    let mut cell = spacing * TILE as f32;
    let cells = |cell: f32| (ext / cell).floor() + glam::Vec2::ONE;
    if !(cell > 0.0) || cells(cell).x * cells(cell).y > MAX_CELLS as f32 {
        cell = ((ext.x * ext.y / MAX_CELLS as f32).sqrt()).max(ext.max_element() / MAX_CELLS as f32) * 1.01;
        if !(cell > 0.0) {
            return false;
        }
    }
    let dims = cells(cell);
    let (gx, gy) = (dims.x as usize, dims.y as usize);
    debug_assert!(gx * gy <= 2 * MAX_CELLS, "{gx} x {gy}");
    let cell_of = |i: u32| {
        let q = (project(i) - lo) / cell;
        (q.x as usize).min(gx - 1) + gx * (q.y as usize).min(gy - 1)
    };
    let mut start = [0u16; 2 * MAX_CELLS + 1];
    for &i in bucket.iter() {
        start[cell_of(i) + 1] += 1;
    }
    for c in 1..=gx * gy {
        start[c] += start[c - 1];
    }
    for &i in bucket.iter() {
        let c = cell_of(i);
        sorted[start[c] as usize] = i;
        start[c] += 1;
    }
    bucket.copy_from_slice(sorted);
    // Packets of whole tiles where they fit: `start[c]` is now where tile `c` ends.
    let mut open = 0usize;
    for c in 0..gx * gy {
        let end = start[c] as usize;
        if end - open > PACKET {
            let last = if c == 0 { 0 } else { start[c - 1] as usize };
            if last > open {
                ends.push(last as u16);
                open = last;
            }
            while end - open > PACKET {
                open += PACKET;
                ends.push(open as u16);
            }
        }
    }
    if open < bucket.len() {
        ends.push(bucket.len() as u16);
    }
    true
}

/// Where each packet of a regrouped bucket ends (at most one per ray).
struct Ends {
    at: [u16; WINDOW],
    len: usize,
}

impl Ends {
    fn push(&mut self, end: u16) {
        self.at[self.len] = end;
        self.len += 1;
    }
}

/// `true` when the rays' unit directions spread by at most [`MAX_DIR_SPREAD`] on every axis.
fn coherent(rays: &[Ray], idx: &[u32]) -> bool {
    let (mut lo, mut hi) = (glam::Vec3A::INFINITY, glam::Vec3A::NEG_INFINITY);
    for &i in idx {
        let d = rays[i as usize].dir().normalize_or_zero();
        lo = lo.min(d);
        hi = hi.max(d);
    }
    (hi - lo).max_element() <= MAX_DIR_SPREAD
}

