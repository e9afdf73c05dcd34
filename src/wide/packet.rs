//! Ray packets of up to 64 rays over 8-wide nodes: the rays laid out for the node tests, eight to
//! a vector; the two tests, the interval test of the whole packet against a node's children and
//! each ray's own slab test of a child; and the one packet walk, generic over what a leaf holds,
//! which the mesh BVH's streams (`mesh::stream`, where the design and why each answer equals the
//! single ray's are set out) and the scene's streams (`scene::stream`) both use.

use super::ray::{box_margin, fused_constants, fused_interval, plane_rows};
use super::{ChildRef, FixedStack, Lanes8, Node8, NodeStore};
use crate::math::{FAR_PAD, Ray, max_keep, min_keep};

/// Rays in a packet at most.
pub(crate) const PACKET: usize = 64;
const GROUPS: usize = PACKET / 8;
/// Relative margin of the interval bounds (64 units of f32 roundoff; see `Packet::cull_test`).
const REL_MARGIN: f32 = 64.0 * f32::EPSILON * 0.5;
/// Relative margin by which a leaf's rays' `tmax` is raised when ties are looked for (see
/// [`Packet::enter`]): 2⁻¹⁶, far above the few roundings of a triangle test's `t`.
const TIE_MARGIN: f32 = 1.0 / 65536.0;

/// `tmax` raised by [`TIE_MARGIN`] relative, as [`Packet::enter`] raises it for closest hits
/// (the same expression, there eight lanes at a time): the interval test's bound of the packet's
/// largest `tmax`, and the box tests' `tmax` of a ray of a closest-hit packet that walks a
/// subtree alone.
#[inline(always)]
pub(crate) fn raised_tmax(tmax: f32) -> f32 {
    tmax + tmax.abs() * TIE_MARGIN + f32::MIN_POSITIVE
}

/// [`raised_tmax`] of eight rays' `tmax` (a lane holding -inf becomes NaN, which no test passes).
#[inline(always)]
pub(crate) fn raised_tmax8<L: Lanes8>(tmax: L) -> L {
    tmax + abs(tmax) * L::splat(TIE_MARGIN) + L::splat(f32::MIN_POSITIVE)
}

/// `|x|`, lane by lane.
#[inline(always)]
fn abs<L: Lanes8>(x: L) -> L {
    x.xor(x.sign())
}

/// The lower end of the band around a ray's `tmax` within which a second hit may be a tie:
/// `tmax` lowered by [`TIE_MARGIN`] relative, as [`raised_tmax`] raises it.
#[inline(always)]
pub(crate) fn lowered_tmax(tmax: f32) -> f32 {
    tmax - tmax.abs() * TIE_MARGIN
}

/// One value per ray of a packet, 32-byte aligned so that each group of eight loads as one
/// vector.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Lanes([f32; PACKET]);

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes([0.0; PACKET])
    }
}

impl Lanes {
    /// Rays `8g..8g + 8`.
    #[inline(always)]
    fn group<L: Lanes8>(&self, g: usize) -> L {
        debug_assert!(g < GROUPS);
        // SAFETY: `g < GROUPS`, so the 8 floats at `8g` are in bounds (and 32-byte aligned).
        L::load(unsafe { &*self.0.as_ptr().add(g * 8).cast::<[f32; 8]>() })
    }
}

/// One child's planes, splatted, near and far per axis by the packet's direction signs.
pub(crate) struct Planes<L = wide::f32x8> {
    near: [L; 3],
    far: [L; 3],
}

/// One group of eight of a packet's rays, across the lanes, for the triangle tests
/// (`crate::mesh::TriRay::intersect_mt_rays`).
pub(crate) struct GroupRays<L> {
    pub(crate) o: [L; 3],
    pub(crate) d: [L; 3],
    pub(crate) inv: [L; 3],
    /// Whether each direction component is negative (the packet's rays share their signs).
    pub(crate) negative: [bool; 3],
    /// Each ray's [`box_margin`].
    pub(crate) box_margin: L,
    pub(crate) tmin: L,
    pub(crate) tmax: L,
}

/// A packet: up to 64 valid rays of one direction octant whose fused products are finite, laid
/// out for the single-ray node test with rays across the lanes. Filled in place for each packet
/// by [`Packet::load`], so that a stream allocates and copies nothing else.
#[derive(Default)]
pub(crate) struct Packet {
    pub(crate) n: usize,
    inv: [Lanes; 3],
    /// `o·inv + Δ` (fused form) or `o` (exact form): the entry planes' origin term.
    org: [Lanes; 3],
    /// The fused form's exit planes' terms, `inv·(1 + 2γ(3))` and `o·inv·(1 + 2γ(3))`
    /// (`crate::wide::ray::FusedConstants`; unused in the exact form).
    far_inv: [Lanes; 3],
    far_org: [Lanes; 3],
    /// The `tmin` of the node tests: the fused form's `tmin − Δ`, or `tmin` in the exact form.
    node_tmin: Lanes,
    /// The exact form's `Δ` for a mesh BVH's rays (see [`crate::wide::Ray8::lowered`]), else 0.
    slack: Lanes,
    /// The triangle tests' allowance before a triangle's box (`crate::mesh::triangle`'s
    /// `box_margin`).
    box_margin: Lanes,
    tmin: Lanes,
    /// `tmax`, lowered as hits are found; `-inf` past the last ray, so no box passes there.
    tmax: Lanes,
    /// Origins and directions, for the triangle tests.
    o: [Lanes; 3],
    d: [Lanes; 3],
    /// Rays still searching (any hit: not yet occluded).
    pub(crate) live: u64,
    near_row: [usize; 3],
    far_row: [usize; 3],
    /// Bounds of the origins and inverse directions, per axis, splatted.
    o_lo: [[f32; 8]; 3],
    o_hi: [[f32; 8]; 3],
    i_lo: [[f32; 8]; 3],
    i_hi: [[f32; 8]; 3],
    tmin_lo: [f32; 8],
    /// Absolute margin of the interval bounds: three times the largest `Δ`.
    margin: [f32; 8],
    /// The largest `tmax` of a live ray.
    tmax_hi: f32,
}

impl Packet {
    /// An empty packet, to [`Packet::load`].
    pub(crate) fn new() -> Packet {
        Packet::default()
    }

    /// Loads the rays `rays[idx[..]]`, which share their direction signs and have finite fused
    /// products (see [`fusable`]): for the fused form with `FUSED`, else the exact form, whose
    /// entry distances are lowered by the fused form's `Δ` with `LOWERED` (a mesh BVH's rays:
    /// see [`crate::wide::Ray8::lowered`]) and are not without (the scene's instance tree,
    /// whose single rays take the exact form at every level).
    pub(crate) fn load<const FUSED: bool, const LOWERED: bool>(&mut self, rays: &[Ray], idx: &[usize]) {
        let n = idx.len();
        debug_assert!((1..=PACKET).contains(&n));
        self.n = n;
        (self.near_row, self.far_row) = plane_rows(&rays[idx[0]]);
        let (mut o_lo, mut o_hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        let (mut i_lo, mut i_hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        let (mut tmin_lo, mut widen_hi, mut tmax_hi) = (f32::INFINITY, 0.0f32, f32::NEG_INFINITY);
        for (k, &i) in idx.iter().enumerate() {
            let r = &rays[i];
            let (o, inv, d) = (r.origin(), r.inv_dir(), r.dir());
            // The single ray's constants (a ray without them is never given: see `fusable`).
            let constants = if FUSED || LOWERED { fused_constants(r) } else { None };
            let fused = if FUSED { constants } else { None };
            debug_assert!(!FUSED || fused.is_some());
            let (near_org, far_inv, far_org) = fused.map_or((o, inv, o), |c| (c.near_org(), c.far_inv(), c.far_org()));
            for a in 0..3 {
                self.inv[a].0[k] = inv[a];
                self.org[a].0[k] = near_org[a];
                self.far_inv[a].0[k] = far_inv[a];
                self.far_org[a].0[k] = far_org[a];
                self.o[a].0[k] = o[a];
                self.d[a].0[k] = d[a];
                o_lo[a] = o_lo[a].min(o[a]);
                o_hi[a] = o_hi[a].max(o[a]);
                i_lo[a] = i_lo[a].min(inv[a]);
                i_hi[a] = i_hi[a].max(inv[a]);
            }
            let widen = constants.map_or(0.0, |c| c.widen);
            self.node_tmin.0[k] = fused.map_or(r.tmin, |c| c.node_tmin());
            self.slack.0[k] = if FUSED { 0.0 } else { widen };
            self.box_margin.0[k] = box_margin(o, inv, r.tmin);
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
                self.far_inv[a].0[k] = self.far_inv[a].0[n - 1];
                self.far_org[a].0[k] = self.far_org[a].0[n - 1];
            }
            self.node_tmin.0[k] = self.node_tmin.0[n - 1];
            self.slack.0[k] = self.slack.0[n - 1];
            self.box_margin.0[k] = self.box_margin.0[n - 1];
            self.tmin.0[k] = self.tmin.0[n - 1];
            self.tmax.0[k] = f32::NEG_INFINITY;
        }
        self.live = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let splat3 = |v: [f32; 3]| v.map(|x| [x; 8]);
        (self.o_lo, self.o_hi, self.i_lo, self.i_hi) = (splat3(o_lo), splat3(o_hi), splat3(i_lo), splat3(i_hi));
        self.tmin_lo = [tmin_lo; 8];
        self.margin = [3.0 * widen_hi; 8];
        self.tmax_hi = tmax_hi;
    }

    /// Ray `k`'s `tmax`.
    #[inline(always)]
    pub(crate) fn tmax_of(&self, k: usize) -> f32 {
        self.tmax.0[k]
    }

    /// Clips ray `k` at a hit at `t` (call [`Packet::clipped`] once the leaf is done).
    #[inline(always)]
    pub(crate) fn clip(&mut self, k: usize, t: f32) {
        self.tmax.0[k] = t;
    }

    /// Updates the largest `tmax` after clips.
    pub(crate) fn clipped(&mut self) {
        // Lanes past the last ray hold -inf, so whole groups can be taken.
        let m =
            (0..self.n.div_ceil(8)).fold(wide::f32x8::splat(f32::NEG_INFINITY), |m, g| m.fast_max(self.tmax.group(g)));
        self.tmax_hi = m.to_array().into_iter().fold(f32::NEG_INFINITY, f32::max);
    }

    /// Group `g`'s rays for the triangle tests with rays across the lanes.
    #[inline(always)]
    pub(crate) fn group_rays<L: Lanes8>(&self, g: usize) -> GroupRays<L> {
        let three = |l: &[Lanes; 3]| [l[0].group(g), l[1].group(g), l[2].group(g)];
        GroupRays {
            o: three(&self.o),
            d: three(&self.d),
            inv: three(&self.inv),
            negative: self.near_row.map(|row| row >= 3),
            box_margin: self.box_margin.group(g),
            tmin: self.tmin.group(g),
            tmax: self.tmax.group(g),
        }
    }

    /// Ray `k`'s origin, direction and `tmin`, as loaded.
    #[inline(always)]
    pub(crate) fn ray_parts(&self, k: usize) -> (glam::Vec3, glam::Vec3, f32) {
        let v = |l: &[Lanes; 3]| glam::Vec3::new(l[0].0[k], l[1].0[k], l[2].0[k]);
        (v(&self.o), v(&self.d), self.tmin.0[k])
    }

    /// The children of `node` that some ray of the packet may enter (a bit mask; never an empty
    /// slot), and a lower bound of every child's entry distance, to order them by.
    ///
    /// For ray `r` and axis `a`, the exact entry distance through plane `P` is
    /// `(P - o_r)·inv_r`, bilinear in `(o_r, inv_r)`, so over the box of origins and inverse
    /// directions it is smallest at a corner: the minimum of the four corner products bounds every
    /// ray's distance from below, and the maximum bounds the exit distance from above. The
    /// single-ray test computes its distances with at most a few roundings relative to the
    /// distance and, in the fused form, lowers its entry distances by at most `1.3·Δ` (its
    /// `o·inv + Δ` and `tmin − Δ`, with their roundings) and raises its exit distances by the
    /// factor `FAR_PAD` (at most `8·2⁻²³` relative) and an absolute error below `Δ/2` (see
    /// `docs/architecture.md`, "The fused slab test"). Widening both bounds by [`REL_MARGIN`]
    /// relative plus three times the packet's largest `Δ` absolute covers all of it with room to
    /// spare, so a child culled here is refused by every ray's own test.
    #[inline(always)]
    pub(crate) fn cull_test<L: Lanes8>(&self, node: &Node8) -> (u32, L) {
        let rows = node.bounds.as_flattened();
        let mut near = L::load(&self.tmin_lo);
        let mut far = L::splat(raised_tmax(self.tmax_hi));
        let mut far_hi = L::splat(f32::INFINITY);
        for a in 0..3 {
            let np = L::load(&rows[self.near_row[a]]);
            let fp = L::load(&rows[self.far_row[a]]);
            let (o_lo, o_hi) = (L::load(&self.o_lo[a]), L::load(&self.o_hi[a]));
            let (i_lo, i_hi) = (L::load(&self.i_lo[a]), L::load(&self.i_hi[a]));
            let (x0, x1) = (np - o_hi, np - o_lo);
            let lo = min_keep(min_keep(x0 * i_lo, x0 * i_hi), min_keep(x1 * i_lo, x1 * i_hi));
            let (y0, y1) = (fp - o_hi, fp - o_lo);
            let hi = max_keep(max_keep(y0 * i_lo, y0 * i_hi), max_keep(y1 * i_lo, y1 * i_hi));
            near = max_keep(lo, near);
            far_hi = min_keep(hi, far_hi);
        }
        // The margins are capped at f32::MAX so that an infinite bound stays infinite (and
        // `inf - inf` cannot make a NaN; the margins themselves are never NaN).
        let cap = L::splat(f32::MAX);
        let (rel, margin) = (L::splat(REL_MARGIN), L::load(&self.margin));
        let near = near - min_keep(abs(near) * rel + margin, cap);
        let far_hi = far_hi + min_keep(abs(far_hi) * rel + margin, cap);
        far = min_keep(far_hi, far);
        // Empty slots have planes +inf and -inf: their lower entry bound is +inf.
        (near.le_bits(far) & near.lt_bits(L::splat(f32::INFINITY)), near)
    }

    /// Lane `l`'s planes, splatted.
    #[inline(always)]
    pub(crate) fn planes<L: Lanes8>(&self, node: &Node8, l: usize) -> Planes<L> {
        let rows = node.bounds.as_flattened();
        // Written out rather than by `array::map`, which the compiler may leave out of line, and
        // out of line the lanes' operations lose their level's instructions (`super::lanes`).
        let (n, f) = (self.near_row, self.far_row);
        Planes {
            near: [L::splat(rows[n[0]][l]), L::splat(rows[n[1]][l]), L::splat(rows[n[2]][l])],
            far: [L::splat(rows[f[0]][l]), L::splat(rows[f[1]][l]), L::splat(rows[f[2]][l])],
        }
    }

    /// The rays of group `g` that enter the box of `planes` within their `[tmin, tmax]`: the
    /// single-ray node test ([`crate::wide::FusedRay8`] or [`crate::wide::Ray8`]), lane for lane.
    ///
    /// With `TIES`, each ray's `tmax` is first raised by [`TIE_MARGIN`] relative: a leaf whose
    /// triangle is hit at exactly the ray's current `tmax` is then entered even when the rounding
    /// of the triangle test put that `t` just before the box's entry distance, so that the tie
    /// is seen (and the ray traced again singly) rather than hidden by the order of the walk.
    #[inline(always)]
    pub(crate) fn enter<L: Lanes8, const FUSED: bool, const TIES: bool>(&self, planes: &Planes<L>, g: usize) -> u32 {
        debug_assert!(!FUSED || L::FMA, "the fused form needs a fused multiply-add");
        let inv: [L; 3] = [self.inv[0].group(g), self.inv[1].group(g), self.inv[2].group(g)];
        let org: [L; 3] = [self.org[0].group(g), self.org[1].group(g), self.org[2].group(g)];
        let (tmin, mut tmax): (L, L) = (self.node_tmin.group(g), self.tmax.group(g));
        if TIES {
            // Lanes past the last ray hold -inf, which becomes NaN here; `active` masks them.
            tmax = raised_tmax8(tmax);
        }
        let pad = L::splat(FAR_PAD);
        if FUSED {
            let far_inv: [L; 3] = [self.far_inv[0].group(g), self.far_inv[1].group(g), self.far_inv[2].group(g)];
            let far_org: [L; 3] = [self.far_org[0].group(g), self.far_org[1].group(g), self.far_org[2].group(g)];
            let nt = |a: usize| planes.near[a].mul_sub(inv[a], org[a]);
            let ft = |a: usize| planes.far[a].mul_sub(far_inv[a], far_org[a]);
            fused_interval([nt(0), nt(1), nt(2)], [ft(0), ft(1), ft(2)], tmin, tmax).0
        } else {
            let mut near = tmin;
            let mut far = tmax;
            for a in 0..3 {
                let tn = (planes.near[a] - org[a]) * inv[a];
                let tf = (planes.far[a] - org[a]) * inv[a] * pad;
                near = max_keep(tn, near);
                far = min_keep(tf, far);
            }
            let near = near - self.slack.group(g);
            near.le_bits(far) & near.lt_bits(L::splat(f32::INFINITY))
        }
    }

    /// Group `g`'s live rays among `first..=last`.
    #[inline(always)]
    pub(crate) fn active(&self, g: usize, first: usize, last: usize) -> u32 {
        let range = (u64::MAX << first) & (u64::MAX >> (63 - last));
        (((self.live & range) >> (g * 8)) & 0xFF) as u32
    }

    /// The first and the last live ray of `first..=last` that enter the box of `planes`, and how
    /// many enter: exact when the two lie in one group or in neighbouring groups, else
    /// `u32::MAX` (the groups between are not tested).
    #[inline(always)]
    pub(crate) fn entering<L: Lanes8, const FUSED: bool, const TIES: bool>(
        &self,
        planes: &Planes<L>,
        first: usize,
        last: usize,
    ) -> Option<(usize, usize, u32)> {
        let (g0, g1) = (first / 8, last / 8);
        for g in g0..=g1 {
            let active = self.active(g, first, last);
            if active == 0 {
                continue;
            }
            let m = self.enter::<L, FUSED, TIES>(planes, g) & active;
            if m == 0 {
                continue;
            }
            let lo = g * 8 + m.trailing_zeros() as usize;
            // The last one, from the end; the group of the first bounds the search.
            for h in (g + 1..=g1).rev() {
                let m2 = self.enter::<L, FUSED, TIES>(planes, h) & self.active(h, first, last);
                if m2 != 0 {
                    let count = if h == g + 1 { m.count_ones() + m2.count_ones() } else { u32::MAX };
                    return Some((lo, h * 8 + 31 - m2.leading_zeros() as usize, count));
                }
            }
            return Some((lo, g * 8 + 31 - m.leading_zeros() as usize, m.count_ones()));
        }
        None
    }
}

/// `true` when the ray can join a packet: the fused form's constants are finite
/// ([`fused_constants`]; the interval bounds need finite ones in both forms).
#[inline(always)]
pub(crate) fn fusable(ray: &Ray) -> bool {
    fused_constants(ray).is_some()
}

/// Stack entries of the packet walk; as for the single ray (7 siblings per level).
const STACK: usize = 1024;

/// A waiting child of the packet walk: the child, the rays that may enter it (the first and the
/// last), and where its box is (the parent node and lane), which a leaf's rays are tested
/// against when it is taken.
#[derive(Clone, Copy)]
struct PacketEntry {
    child: ChildRef,
    parent: u32,
    lane: u8,
    first: u8,
    last: u8,
    /// A node that so few rays enter that they walk it alone (see [`packet_walk`]).
    alone: bool,
}

/// A leaf the packet walk reached, or a node whose subtree its few rays walk alone: its index
/// (of a [`ChildRef::leaf`], or of a [`ChildRef::node`]), its box's planes, and the packet's rays
/// that may enter it, `first..=last`.
pub(crate) struct PacketLeaf<L = wide::f32x8> {
    pub index: u32,
    /// `index` is a node's, whose subtree the rays walk alone.
    pub subtree: bool,
    pub planes: Planes<L>,
    pub first: usize,
    pub last: usize,
}

impl<L: Lanes8> PacketLeaf<L> {
    /// The live rays of group `g` that enter the leaf's box, by the single-ray slab test
    /// (`TIES`: against `tmax` raised as [`Packet::enter`] says, for closest hits).
    #[inline(always)]
    pub(crate) fn entering<const FUSED: bool, const TIES: bool>(&self, pk: &Packet, g: usize) -> u32 {
        let active = pk.active(g, self.first, self.last);
        if active == 0 { 0 } else { pk.enter::<L, FUSED, TIES>(&self.planes, g) & active }
    }

    /// The groups the leaf's rays lie in.
    #[inline(always)]
    pub(crate) fn groups(&self) -> std::ops::RangeInclusive<usize> {
        self.first / 8..=self.last / 8
    }
}

/// What [`packet_walk`] does at a leaf (see there). Closures implement it; a kernel that runs
/// at a SIMD level implements it on a type of its own, with its body `#[inline(always)]`, since
/// a closure the compiler leaves out of line loses the level's instructions (`super::lanes`).
pub(crate) trait PacketVisitor<L> {
    /// Tests the rays of the packet that may enter `leaf`; `false` ends the walk.
    fn visit(&mut self, pk: &mut Packet, leaf: &PacketLeaf<L>) -> bool;
}

impl<L, F: FnMut(&mut Packet, &PacketLeaf<L>) -> bool> PacketVisitor<L> for F {
    #[inline(always)]
    fn visit(&mut self, pk: &mut Packet, leaf: &PacketLeaf<L>) -> bool {
        self(pk, leaf)
    }
}

/// Walks `nodes` (the root is node 0 of the store, and must exist) with the loaded packet: each
/// node's children are culled for the whole packet by [`Packet::cull_test`], each remaining
/// child is entered with the first and the last ray that enter it ([`Packet::entering`]), nearer
/// children first (by the interval test's entry bound) unless `ANY`, and every leaf reached goes to
/// `leaf`, which tests its rays (through [`PacketLeaf::entering`]), may clip them
/// ([`Packet::clip`], then [`Packet::clipped`]) or end them (`pk.live`), and returns `false` to end
/// the walk. `prefetch` starts loading a child that is pushed. Returns the nodes visited.
///
/// A child node that at most `ALONE` rays enter (counted where [`Packet::entering`] counts
/// exactly) goes to `leaf` too, marked [`PacketLeaf::subtree`], for those rays to walk its
/// subtree one at a time: deep in the tree, where a packet's rays have parted, the packet's tests
/// serve one or two rays at the cost of many, and the single ray's walk is cheaper (the switch of
/// Benthin, Wald, Woop, Ernst and Mark 2012, "Combining Single and Packet-Ray Tracing for
/// Arbitrary Ray Distributions on the Intel MIC Architecture"). With `ALONE` 0, `leaf` only
/// ever gets leaves.
#[inline(always)]
pub(crate) fn packet_walk<L: Lanes8, const ANY: bool, const FUSED: bool, const ALONE: u32, N: NodeStore + ?Sized>(
    nodes: &N,
    pk: &mut Packet,
    prefetch: impl Fn(ChildRef),
    mut leaf: impl PacketVisitor<L>,
) -> u32 {
    let mut visits = 0;
    let mut stack = FixedStack::<PacketEntry, STACK>::new();
    let mut cur =
        PacketEntry { child: ChildRef::node(0), parent: 0, lane: 0, first: 0, last: (pk.n - 1) as u8, alone: false };
    loop {
        let (first, last) = (cur.first as usize, cur.last as usize);
        if cur.child.is_leaf() || cur.alone {
            // SAFETY: `parent` is a node that held this reference.
            let parent = unsafe { nodes.node(cur.parent) };
            let planes = pk.planes::<L>(parent, cur.lane as usize);
            let at = PacketLeaf { index: cur.child.index(), subtree: cur.alone, planes, first, last };
            if !leaf.visit(pk, &at) || (ANY && pk.live == 0) {
                break;
            }
        } else {
            visits += 1;
            // SAFETY: the root, or a node reference read from the store's own nodes.
            let node = unsafe { nodes.node(cur.child.index()) };
            let (mut mask, key) = pk.cull_test::<L>(node);
            let key = key.to_array();
            let mut found = [(cur, 0.0f32); 8];
            let mut n = 0;
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let planes = pk.planes::<L>(node, l);
                // Any hit too takes the raised `tmax`: the single ray's walk culls its boxes with it
                // (`mesh::leaf::TriangleLeaf`), so that a hit at the ray's very end is reached at
                // every SIMD level, and the packet must reach what the single ray reaches.
                let range = pk.entering::<L, FUSED, true>(&planes, first, last);
                if let Some((lo, hi, count)) = range {
                    let (child, parent) = (node.child[l], cur.child.index());
                    let alone = count <= ALONE && !child.is_leaf();
                    let e = PacketEntry { child, parent, lane: l as u8, first: lo as u8, last: hi as u8, alone };
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
                    prefetch(e.child);
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
    visits
}
