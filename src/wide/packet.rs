//! Ray packets of up to 64 rays over 8-wide nodes: the rays laid out for the node tests, eight to
//! a vector, and the two tests, the interval test of the whole packet against a node's children
//! and each ray's own slab test of a child. The walk that uses them is `super::packet_walk`; the
//! mesh BVH's streams (`mesh::stream`, where the design and why each answer equals the single
//! ray's are set out) and the scene's streams (`scene::stream`) both take it.

use super::ray::{FUSED_PAD, fused_constants, fused_interval, plane_rows};
use super::{Lanes8, Node8};
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
    /// Sets rays `8g..8g + 8`.
    #[inline(always)]
    fn set_group<L: Lanes8>(&mut self, g: usize, v: L) {
        self.0[g * 8..g * 8 + 8].copy_from_slice(&v.to_array());
    }

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
/// (`crate::mesh::triangle_rays`).
pub(crate) struct GroupRays<L> {
    pub(crate) o: [L; 3],
    pub(crate) d: [L; 3],
    pub(crate) inv: [L; 3],
    /// Whether each direction component is negative (the packet's rays share their signs).
    pub(crate) negative: [bool; 3],
    /// Each ray's [`crate::wide::box_margin`].
    pub(crate) box_margin: L,
    pub(crate) tmin: L,
    pub(crate) tmax: L,
}

impl<L: Lanes8> GroupRays<L> {
    /// The origins' coordinates along axis `a`, chosen at run time: by a branch on the axis, as
    /// an array of vectors indexed at run time goes through the stack.
    #[inline(always)]
    pub(crate) fn o_along(&self, a: usize) -> L {
        match a {
            0 => self.o[0],
            1 => self.o[1],
            _ => self.o[2],
        }
    }
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
    ///
    /// The rays' origins, directions and ranges are copied across the lanes one ray at a time;
    /// everything derived from them (the fused constants, the margins, the bounds) is then
    /// computed eight rays at a time in `L`, with the single ray's operations in the single
    /// ray's order (`super::ray::fused_constants`), so each lane holds the single ray's values
    /// bit for bit.
    #[inline(always)]
    pub(crate) fn load<L: Lanes8, const FUSED: bool, const LOWERED: bool>(&mut self, rays: &[Ray], idx: &[usize]) {
        debug_assert!(idx.iter().all(|&i| fusable(&rays[i])));
        self.load_if_packable::<L, FUSED, LOWERED>(rays, idx);
    }

    /// [`Packet::load`] of any valid rays: whether they can form a packet, each [`fusable`] and
    /// with the first ray's direction signs. Where they cannot, the packet is not to be used.
    /// The check is made in the lanes, from the values the load computes anyway, where checking
    /// each ray first cost a settling stream a twentieth of its instructions.
    #[inline(always)]
    pub(crate) fn load_if_packable<L: Lanes8, const FUSED: bool, const LOWERED: bool>(
        &mut self,
        rays: &[Ray],
        idx: &[usize],
    ) -> bool {
        let n = idx.len();
        debug_assert!((1..=PACKET).contains(&n));
        self.n = n;
        (self.near_row, self.far_row) = plane_rows(&rays[idx[0]]);
        // The first ray's direction signs, as ±1: a lane's inverse direction has the same sign
        // bit exactly when its product with this is positive, given that it is neither zero nor
        // NaN (checked too; a valid ray's never is).
        let first_sign = rays[idx[0]].sign().map(|s| L::splat(if s == 1 { -1.0 } else { 1.0 }));
        let mut packable = u32::MAX;
        for (k, &i) in idx.iter().enumerate() {
            self.copy_ray(k, &rays[i]);
        }
        // Lanes past the last ray: a copy of it (finite values, no NaN, and no change to the
        // bounds), whose `tmax` of -inf no box passes.
        let padded = n.next_multiple_of(8);
        for k in n..padded {
            self.copy_ray(k, &rays[idx[n - 1]]);
            self.tmax.0[k] = f32::NEG_INFINITY;
        }
        let mut lo = [L::splat(f32::INFINITY); 6];
        let mut hi = [L::splat(f32::NEG_INFINITY); 6];
        let (mut tmin_lo, mut widen_hi, mut tmax_hi) =
            (L::splat(f32::INFINITY), L::splat(0.0), L::splat(f32::NEG_INFINITY));
        let (pad, far_pad) = (L::splat(FUSED_PAD), L::splat(FAR_PAD));
        for g in 0..padded / 8 {
            let o: [L; 3] = [self.o[0].group(g), self.o[1].group(g), self.o[2].group(g)];
            let inv: [L; 3] = [self.inv[0].group(g), self.inv[1].group(g), self.inv[2].group(g)];
            let (tmin, tmax): (L, L) = (self.tmin.group(g), self.tmax.group(g));
            // `super::ray::fused_widen`, eight rays at a time: Δ = 8u·max|o·inv| + MIN_POSITIVE.
            let p = [o[0] * inv[0], o[1] * inv[1], o[2] * inv[2]];
            let widest = max_keep(max_keep(abs(p[2]), abs(p[1])), abs(p[0]));
            let widen = widest * pad + L::splat(f32::MIN_POSITIVE);
            // `super::ray::fused_widen`'s check, lane by lane: `(|inv| + |o·inv|)·2` finite on
            // every axis and `tmin >= 0`; and the first ray's signs.
            let (zero, inf) = (L::splat(0.0), L::splat(f32::INFINITY));
            packable &= tmin.ge_bits(zero);
            for a in 0..3 {
                packable &= ((abs(inv[a]) + abs(p[a])) * L::splat(2.0)).lt_bits(inf);
                packable &= (inv[a] * first_sign[a]).gt_bits(zero);
            }
            for a in 0..3 {
                let (org, far_inv, far_org) =
                    if FUSED { (p[a] + widen, inv[a] * far_pad, p[a] * far_pad) } else { (o[a], inv[a], o[a]) };
                self.org[a].set_group(g, org);
                self.far_inv[a].set_group(g, far_inv);
                self.far_org[a].set_group(g, far_org);
                lo[a] = min_keep(o[a], lo[a]);
                hi[a] = max_keep(o[a], hi[a]);
                lo[3 + a] = min_keep(inv[a], lo[3 + a]);
                hi[3 + a] = max_keep(inv[a], hi[3 + a]);
            }
            self.node_tmin.set_group(g, if FUSED { tmin - widen } else { tmin });
            self.slack.set_group(g, if LOWERED && !FUSED { widen } else { L::splat(0.0) });
            self.box_margin.set_group(g, widen * L::splat(0.5));
            tmin_lo = min_keep(tmin, tmin_lo);
            // The margin of the interval test counts Δ only where the node tests use it.
            if FUSED || LOWERED {
                widen_hi = max_keep(widen, widen_hi);
            }
            tmax_hi = max_keep(tmax, tmax_hi);
        }
        let fold = |v: L, f: fn(f32, f32) -> f32, start: f32| v.to_array().into_iter().fold(start, f);
        for a in 0..3 {
            self.o_lo[a] = [fold(lo[a], f32::min, f32::INFINITY); 8];
            self.o_hi[a] = [fold(hi[a], f32::max, f32::NEG_INFINITY); 8];
            self.i_lo[a] = [fold(lo[3 + a], f32::min, f32::INFINITY); 8];
            self.i_hi[a] = [fold(hi[3 + a], f32::max, f32::NEG_INFINITY); 8];
        }
        self.live = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        self.tmin_lo = [fold(tmin_lo, f32::min, f32::INFINITY); 8];
        self.margin = [3.0 * fold(widen_hi, f32::max, 0.0); 8];
        self.tmax_hi = fold(tmax_hi, f32::max, f32::NEG_INFINITY);
        packable & 0xFF == 0xFF
    }

    /// Ray `r`'s origin, direction, inverse direction and range into lane `k`.
    #[inline(always)]
    fn copy_ray(&mut self, k: usize, r: &Ray) {
        let (o, inv, d) = (r.origin(), r.inv_dir(), r.dir());
        for a in 0..3 {
            self.o[a].0[k] = o[a];
            self.d[a].0[k] = d[a];
            self.inv[a].0[k] = inv[a];
        }
        self.tmin.0[k] = r.tmin;
        self.tmax.0[k] = r.tmax;
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

    /// Group `g`'s directions.
    #[inline(always)]
    pub(crate) fn group_dirs<L: Lanes8>(&self, g: usize) -> [L; 3] {
        [self.d[0].group(g), self.d[1].group(g), self.d[2].group(g)]
    }

    /// Ray `k`'s origin, direction, inverse direction, triangle tests' margin and `tmin`, as
    /// loaded.
    #[inline(always)]
    pub(crate) fn ray_parts(&self, k: usize) -> (glam::Vec3, glam::Vec3, glam::Vec3A, f32, f32) {
        let v = |l: &[Lanes; 3]| glam::Vec3::new(l[0].0[k], l[1].0[k], l[2].0[k]);
        (v(&self.o), v(&self.d), v(&self.inv).into(), self.box_margin.0[k], self.tmin.0[k])
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

    /// The loaded rays that enter some child of `node`, bit `k` for ray `k`: each ray's own
    /// single-ray test of the node, lane for lane ([`Packet::enter`], against `tmax` raised as
    /// for closest hits), as the first node test of its walk would find them.
    #[inline(always)]
    pub(crate) fn entering_children<L: Lanes8, const FUSED: bool>(&self, node: &Node8) -> u64 {
        // Only the children that the interval test leaves can be entered by any ray.
        let (mut children, _) = self.cull_test::<L>(node);
        let mut entering = 0u64;
        while children != 0 && entering != self.live {
            let l = children.trailing_zeros() as usize;
            children &= children - 1;
            let planes = self.planes::<L>(node, l);
            for g in 0..self.n.div_ceil(8) {
                entering |= u64::from(self.enter::<L, FUSED, true>(&planes, g)) << (g * 8);
            }
        }
        entering & self.live
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

#[cfg(test)]
mod tests {
    use glam::Vec3A;
    use slabtree_testkit::rng::units;

    use super::{PACKET, Packet, fusable};
    use crate::math::Ray;
    use crate::wide::Lanes8;
    use crate::wide::dispatch::at_every_level;
    use crate::wide::ray::{box_margin, fused_constants};

    /// Every lane of a loaded packet holds its ray's single-ray values bit for bit (the fused
    /// constants, the exact form's lowering, the triangle tests' margin), in all three forms
    /// and at every level, for packets of every length of rays of every magnitude.
    #[inline(always)]
    fn check<L: Lanes8>() {
        let mut next = units(0x10ad);
        for round in 0..300 {
            let scale = 10f32.powi((round % 13) as i32 * 3 - 18);
            let n = 1 + round % PACKET;
            let rays: Vec<Ray> = (0..n)
                .map(|_| {
                    let o = (Vec3A::new(next(), next(), next()) - 0.5) * scale;
                    let d = Vec3A::new(0.05 + next(), -0.05 - next(), 0.05 + next()) * (0.5 + next());
                    Ray::new(o, d).with_range(next() * scale, if next() < 0.5 { f32::INFINITY } else { 2.0 * scale })
                })
                .filter(fusable)
                .collect();
            if rays.is_empty() {
                continue;
            }
            let idx: Vec<usize> = (0..rays.len()).collect();
            let bits = |x: f32| x.to_bits();
            let mut pk = Packet::new();
            for form in 0..3 {
                match form {
                    0 => pk.load::<L, true, true>(&rays, &idx),
                    1 => pk.load::<L, false, true>(&rays, &idx),
                    _ => pk.load::<L, false, false>(&rays, &idx),
                }
                let (fused, lowered) = (form == 0, form < 2);
                let mut widen_hi = 0.0f32;
                for (k, r) in rays.iter().enumerate() {
                    let c = fused_constants(r).expect("a fusable ray");
                    if lowered {
                        widen_hi = widen_hi.max(c.widen);
                    }
                    let (org, far_inv, far_org) = if fused {
                        (c.near_org(), c.far_inv(), c.far_org())
                    } else {
                        (r.origin(), r.inv_dir(), r.origin())
                    };
                    for a in 0..3 {
                        assert_eq!(bits(pk.inv[a].0[k]), bits(r.inv_dir()[a]), "form {form}, ray {k}");
                        assert_eq!(bits(pk.org[a].0[k]), bits(org[a]), "form {form}, ray {k}");
                        assert_eq!(bits(pk.far_inv[a].0[k]), bits(far_inv[a]), "form {form}, ray {k}");
                        assert_eq!(bits(pk.far_org[a].0[k]), bits(far_org[a]), "form {form}, ray {k}");
                        assert_eq!(bits(pk.o[a].0[k]), bits(r.origin()[a]), "form {form}, ray {k}");
                        assert_eq!(bits(pk.d[a].0[k]), bits(r.dir()[a]), "form {form}, ray {k}");
                    }
                    let node_tmin = if fused { c.node_tmin() } else { r.tmin };
                    let slack = if lowered && !fused { c.widen } else { 0.0 };
                    assert_eq!(bits(pk.node_tmin.0[k]), bits(node_tmin), "form {form}, ray {k}");
                    assert_eq!(bits(pk.slack.0[k]), bits(slack), "form {form}, ray {k}");
                    let margin = box_margin(r.origin(), r.inv_dir(), r.tmin);
                    assert_eq!(bits(pk.box_margin.0[k]), bits(margin), "form {form}, ray {k}");
                    assert_eq!(bits(pk.tmax.0[k]), bits(r.tmax), "form {form}, ray {k}");
                }
                assert_eq!(pk.margin[0], 3.0 * widen_hi, "form {form}");
                let min = |f: &dyn Fn(&Ray) -> f32| rays.iter().map(f).fold(f32::INFINITY, f32::min);
                let max = |f: &dyn Fn(&Ray) -> f32| rays.iter().map(f).fold(f32::NEG_INFINITY, f32::max);
                for a in 0..3 {
                    assert_eq!(pk.o_lo[a][0], min(&|r| r.origin()[a]));
                    assert_eq!(pk.o_hi[a][0], max(&|r| r.origin()[a]));
                    assert_eq!(pk.i_lo[a][0], min(&|r| r.inv_dir()[a]));
                    assert_eq!(pk.i_hi[a][0], max(&|r| r.inv_dir()[a]));
                }
                assert_eq!(pk.tmin_lo[0], min(&|r| r.tmin));
                assert_eq!(pk.tmax_hi, max(&|r| r.tmax));
            }
        }
    }

    #[test]
    fn every_lane_holds_its_single_ray_values() {
        at_every_level!(check);
    }

    /// [`Packet::load_if_packable`] accepts exactly the rays that are each [`fusable`] and share
    /// the first ray's direction signs: packets of every length whose rays are perturbed one way
    /// or another (a sign flipped, a zero direction component of either sign, a range starting
    /// behind the origin, an origin far enough out that the fused products overflow).
    #[inline(always)]
    fn check_packable<L: Lanes8>() {
        let mut next = units(0xfeed);
        let mut seen = [0usize; 2];
        for round in 0..2000 {
            let n = 1 + round % PACKET;
            let rays: Vec<Ray> = (0..n)
                .map(|_| {
                    let mut o = Vec3A::new(next(), next(), next()) - 0.5;
                    let mut d = Vec3A::new(0.05 + next(), -0.05 - next(), 0.05 + next());
                    let mut tmin = 0.0;
                    if next() < 0.02 {
                        match (next() * 5.0) as u32 {
                            0 => d.x = -d.x,
                            1 => d.y = 0.0,
                            2 => d.z = -0.0,
                            3 => tmin = -1.0,
                            _ => o.x = 1e38 * (next() + 0.5),
                        }
                    }
                    Ray::new(o, d).with_range(tmin, f32::INFINITY)
                })
                .collect();
            let idx: Vec<usize> = (0..n).collect();
            let expected = rays.iter().all(|r| fusable(r) && r.sign() == rays[0].sign());
            let mut pk = Packet::new();
            assert_eq!(pk.load_if_packable::<L, true, true>(&rays, &idx), expected, "round {round}");
            assert_eq!(pk.load_if_packable::<L, false, true>(&rays, &idx), expected, "round {round}");
            seen[usize::from(expected)] += 1;
        }
        assert!(seen[0] > 200 && seen[1] > 200, "{seen:?}");
    }

    #[test]
    fn a_packet_takes_exactly_the_rays_that_can_join_it() {
        at_every_level!(check_packable);
    }
}
