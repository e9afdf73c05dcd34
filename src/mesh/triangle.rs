//! Triangle packs: up to four triangles stored SoA, tested against one ray in one set of
//! `f32x4` operations.
//!
//! Two tests share the layout, three rows of four lanes per axis, and differ in what the rows
//! hold (see [`TriPack`]):
//!
//! * Möller and Trumbore, "Fast, Minimum Storage Ray/Triangle Intersection" (JGT 1997): fast, but a
//!   ray through a shared edge can fall between the two triangles by rounding.
//! * Woop, Benthin and Wald, "Watertight Ray/Triangle Intersection" (JCGT 2013): the triangle is
//!   sheared into a ray-aligned space where the edge functions of a shared edge are computed from
//!   the same products with opposite signs, so no ray passes between triangles. Edge functions
//!   that come out exactly 0 in f32 are recomputed in f64, as the paper prescribes.

use std::ops::{Mul, Sub};

use glam::{Vec3, Vec3A};
use wide::f32x4;

use crate::math::{KeepLanes, Ray, max_keep, min_keep};
use crate::wide::box_margin;

/// Marks an unused lane of a pack.
pub(crate) const NO_PRIM: u32 = u32::MAX;

/// Up to four triangles, SoA: `v[row][axis][lane]`, and their input indices.
///
/// The rows are the three corners for the watertight test, which must see the bit-identical
/// shared vertices of neighbouring triangles, and `v0`, `e1 = v1 - v0`, `e2 = v2 - v0` (rounded
/// to f32) for Möller–Trumbore, which only ever uses the edges: Embree's `Triangle4` without its
/// stored normal, so the edges are not recomputed at each test and the pack keeps its 160 bytes.
/// The rows of a triangle come from [`PackRows::rows`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(32))]
pub(crate) struct TriPack {
    pub v: [[[f32; 4]; 3]; 3],
    pub prim: [u32; 4],
}

// 160 bytes aligned to 32: three cache lines wherever it starts in the mesh BVH's block array
// (a 64-aligned 192-byte pack also takes three, in more memory; see `super::layout`).
const _: () = assert!(std::mem::size_of::<TriPack>() == 160);

impl TriPack {
    /// A pack with every lane unused.
    pub(crate) const EMPTY: TriPack = TriPack { v: [[[0.0; 4]; 3]; 3], prim: [NO_PRIM; 4] };

    /// Stores triangle `prim`'s `rows` (from [`PackRows::rows`]) in `lane`.
    pub(crate) fn set(&mut self, lane: usize, prim: u32, rows: &[Vec3; 3]) {
        self.prim[lane] = prim;
        for (k, v) in rows.iter().enumerate() {
            for a in 0..3 {
                self.v[k][a][lane] = v[a];
            }
        }
    }

    /// The rows of the triangle in `lane`: its corners, or its first corner and two edges.
    #[inline]
    pub(crate) fn rows(&self, lane: usize) -> [Vec3; 3] {
        let v = &self.v;
        [0, 1, 2].map(|k| Vec3::new(v[k][0][lane], v[k][1][lane], v[k][2][lane]))
    }

    #[inline(always)]
    fn lanes(&self, k: usize, a: usize) -> f32x4 {
        f32x4::new(self.v[k][a])
    }

    #[inline(always)]
    fn valid(&self) -> f32x4 {
        let p = self.prim;
        let m = |i: usize| if p[i] == NO_PRIM { 0.0 } else { f32::from_bits(u32::MAX) };
        f32x4::new([m(0), m(1), m(2), m(3)])
    }
}

/// What a pack's rows hold for each triangle (see [`TriPack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PackRows {
    /// `v0, v1, v2`: the watertight test.
    Corners,
    /// `v0, v1 - v0, v2 - v0`: Möller–Trumbore.
    Edges,
}

impl PackRows {
    /// The rows stored for triangle `[a, b, c]`.
    #[inline]
    pub(crate) fn rows(self, [a, b, c]: [Vec3; 3]) -> [Vec3; 3] {
        match self {
            PackRows::Corners => [a, b, c],
            PackRows::Edges => [a, b - a, c - a],
        }
    }
}

/// The body of Möller–Trumbore on a pack ([`TriRay::intersect_mt`]), ending in `$then(mask, t,
/// u, v)` over the hit lanes: one text for the nearest hit and for every hit. A macro, not a
/// generic function taking `$then`: the generic one changed the register allocation of the
/// closest-hit loop that inlines it, for more instructions per ray (`docs/performance.md`).
macro_rules! moller_trumbore {
    ($ray:ident, $p:ident, $tmax:ident, $then:expr) => {{
        let [ox, oy, oz] = $ray.o;
        let [dx, dy, dz] = $ray.d;
        let (v0x, v0y, v0z) = ($p.lanes(0, 0), $p.lanes(0, 1), $p.lanes(0, 2));
        let e1 = [$p.lanes(1, 0), $p.lanes(1, 1), $p.lanes(1, 2)];
        let e2 = [$p.lanes(2, 0), $p.lanes(2, 1), $p.lanes(2, 2)];
        // Every product and sum rounded on its own, on every SIMD level: a fused multiply-add
        // (AVX2, NEON) rounds once where the baseline rounds twice, and the levels would then
        // give different bits, and different triangles at a shared edge.
        let cross = |a: &[f32x4; 3], b: &[f32x4; 3]| {
            [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
        };
        let dot = |a: &[f32x4; 3], b: &[f32x4; 3]| a[0] * b[0] + (a[1] * b[1] + a[2] * b[2]);
        let d = [dx, dy, dz];
        let n = cross(&e1, &e2);
        let c = [v0x - ox, v0y - oy, v0z - oz];
        let r = cross(&c, &d);
        let den = dot(&n, &d);
        let sign = den & f32x4::splat(-0.0);
        let abs_den = den ^ sign;
        let u = dot(&r, &e2) ^ sign;
        let v = -dot(&r, &e1) ^ sign;
        let zero = f32x4::ZERO;
        // Comparisons are false on NaN, and den = 0 (a degenerate triangle, a ray in its plane)
        // is refused, so neither ever hits.
        let inside = $p.valid() & abs_den.simd_gt(zero) & u.simd_ge(zero) & v.simd_ge(zero) & (u + v).simd_le(abs_den);
        if inside.to_bitmask() == 0 {
            return None;
        }
        let t = dot(&c, &n) ^ sign;
        let mask = inside & t.simd_ge(abs_den * f32x4::splat($ray.tmin)) & t.simd_le(abs_den * f32x4::splat($tmax));
        if mask.to_bitmask() == 0 {
            return None;
        }
        let inv = f32x4::ONE / abs_den;
        let (t, u, v) = (t * inv, u * inv, v * inv);
        // The quotient is checked against the range again: rounding can move it just outside
        // where the scaled tests passed, and it can overflow (a hit is at a finite distance).
        // The barycentrics must be finite too: a determinant that overflows (corners near
        // f32::MAX) makes `inv` zero and an infinite `v` NaN, a denormal one makes `inv`
        // infinite.
        let max = f32x4::splat(f32::MAX);
        let mask = mask
            & t.simd_ge(f32x4::splat($ray.tmin))
            & t.simd_le(f32x4::splat($tmax))
            & t.simd_lt(f32x4::splat(f32::INFINITY))
            & u.simd_le(max)
            & v.simd_le(max);
        let corners =
            [[v0x, v0y, v0z], [v0x + e1[0], v0y + e1[1], v0z + e1[2]], [v0x + e2[0], v0y + e2[1], v0z + e2[2]]];
        let mask = mask & $ray.not_before_box(&corners, t);
        $then(mask, t, u, v)
    }};
}

/// The body of the watertight test on a pack ([`TriRay::intersect_watertight`]), ending in
/// `$then(mask, t, u, v)` over the hit lanes; a macro for the reason given at `moller_trumbore`.
macro_rules! watertight {
    ($ray:ident, $p:ident, $tmax:ident, $then:expr) => {{
        let [kx, ky, kz] = $ray.k;
        let [sx, sy, _] = $ray.shear;
        let [okx, oky, okz] = $ray.o_k;
        // Each corner relative to the origin along the ray's permuted axes, read straight from
        // the pack's rows, then sheared into ray space. (Indexing an array of the three relative
        // coordinates by kx, ky and kz instead put them on the stack and read them back, for
        // every pack; the values are the same.)
        let sheared = |k: usize| -> [f32x4; 2] {
            let (x, y, z) = ($p.lanes(k, kx) - okx, $p.lanes(k, ky) - oky, $p.lanes(k, kz) - okz);
            // Rounded twice, on every SIMD level, as in `moller_trumbore` (a corner's sheared
            // coordinates need only be one function of that corner, whichever triangle asks; the
            // edge functions below must not be fused, or an edge's function would not be the
            // exact negative of itself seen from the neighbouring triangle).
            [x - sx * z, y - sy * z]
        };
        let [ax, ay] = sheared(0);
        let [bx, by] = sheared(1);
        let [cx, cy] = sheared(2);
        let mut u = cx * by - cy * bx;
        let mut v = ax * cy - ay * cx;
        let mut w = bx * ay - by * ax;
        let zero = f32x4::ZERO;
        // Not on both sides of the ray: all edge functions >= 0, or all <= 0 (as Embree's robust
        // kernel tests them, by their minimum and maximum; a NaN is refused below, where the
        // barycentrics must be finite). The folds are the slab tests' (`KeepLanes`), which every
        // level and the eight-ray test (`super::triangle_rays::watertight`) compute alike, also
        // on NaN.
        let one_side = |u: f32x4, v: f32x4, w: f32x4| {
            min_keep(min_keep(u, v), w).simd_ge(zero) | max_keep(max_keep(u, v), w).simd_le(zero)
        };
        // Most packs a ray reaches miss: the edge functions alone say so, before the distance
        // and its divisions are paid for (as Möller–Trumbore leaves its distance until a lane
        // passes the edge tests).
        let mut inside = $p.valid() & one_side(u, v, w);
        if inside.none() {
            return None;
        }
        // Recompute exactly-zero edge functions in double precision (section 3.4 of the paper):
        // the f32 products are exact in f64, so the sign is the true sign. Only lanes still in
        // the running need it. A lane already out has a strictly positive and a strictly
        // negative edge function, and a nonzero f32 edge function has its true sign (rounding is
        // monotonic, so the rounded products keep their order), which f64 would only confirm.
        let any_zero = u.simd_eq(zero) | v.simd_eq(zero) | w.simd_eq(zero);
        if (any_zero & inside).any() {
            let (mut ua, mut va, mut wa) = (u.to_array(), v.to_array(), w.to_array());
            let (axa, aya, bxa, bya, cxa, cya) =
                (ax.to_array(), ay.to_array(), bx.to_array(), by.to_array(), cx.to_array(), cy.to_array());
            for l in 0..4 {
                if ua[l] == 0.0 || va[l] == 0.0 || wa[l] == 0.0 {
                    [ua[l], va[l], wa[l]] = exact_edges([axa[l], aya[l]], [bxa[l], bya[l]], [cxa[l], cya[l]]);
                }
            }
            u = f32x4::new(ua);
            v = f32x4::new(va);
            w = f32x4::new(wa);
            inside &= one_side(u, v, w);
        }
        let det = u + v + w;
        let inside = inside & det.simd_ne(zero);
        // The edge functions decide inside or outside (watertight). The distance, though, is taken
        // from the triangle's plane, t = n·(v0 - o) / n·d with n from the edges, as Embree's robust
        // kernel does: Woop's T = U·Az + V·Bz + W·Cz multiplies errors that scale with the
        // distance to the origin and lost up to 1e-3 relative on large triangles near the origin
        // (Sponza's walls).
        let e1 = [$p.lanes(1, 0) - $p.lanes(0, 0), $p.lanes(1, 1) - $p.lanes(0, 1), $p.lanes(1, 2) - $p.lanes(0, 2)];
        let e2 = [$p.lanes(2, 0) - $p.lanes(0, 0), $p.lanes(2, 1) - $p.lanes(0, 1), $p.lanes(2, 2) - $p.lanes(0, 2)];
        let n = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
        let den = n[0] * $ray.d[0] + n[1] * $ray.d[1] + n[2] * $ray.d[2];
        let ra = [$p.lanes(0, 0) - $ray.o[0], $p.lanes(0, 1) - $ray.o[1], $p.lanes(0, 2) - $ray.o[2]];
        let t_num = n[0] * ra[0] + n[1] * ra[1] + n[2] * ra[2];
        // Before dividing, the range is tested on t·|den| (the sign of den folded into the
        // numerator, as in `moller_trumbore`): a closest-hit walk meets many packs past its
        // current hit, whose lanes pass the edge functions, and leaves them without a division.
        let sign = den & f32x4::splat(-0.0);
        let (t_num, abs_den) = (t_num ^ sign, den ^ sign);
        let near = inside
            & t_num.simd_ge(abs_den * f32x4::splat($ray.tmin))
            & t_num.simd_le(abs_den * f32x4::splat($tmax));
        if near.none() {
            return None;
        }
        let t = t_num / abs_den;
        // The quotient is tested again: rounding can move it just outside where the scaled tests
        // passed.
        let mask = near
            & t.simd_ge(f32x4::splat($ray.tmin))
            & t.simd_le(f32x4::splat($tmax))
            // A hit is at a finite distance (a zero direction gives t = x / 0 = inf).
            & t.simd_lt(f32x4::splat(f32::INFINITY));
        let inv = f32x4::ONE / det;
        let (bu, bv) = (v * inv, w * inv);
        // Edge functions of a triangle with coordinates near f32::MAX overflow to inf and NaN, and
        // a NaN passes "not on both sides" (every comparison is false): demand finite
        // barycentrics (a fuzzing finding, tests/regressions.rs).
        let mask = mask & bu.is_finite() & bv.is_finite();
        let corner = |k: usize| [$p.lanes(k, 0), $p.lanes(k, 1), $p.lanes(k, 2)];
        let mask = mask & $ray.not_before_box(&[corner(0), corner(1), corner(2)], t);
        $then(mask, t, bu, bv)
    }};
}

/// The three edge functions `(u, v, w)` of a ray's sheared corners `a`, `b` and `c`, in f64:
/// the f32 products are exact there, so each sign is the true sign (Woop, Benthin and Wald,
/// section 3.4), for the lanes whose f32 edge functions came out exactly 0. One text for the
/// single ray's test and the eight-ray one (`super::triangle_rays::watertight`).
#[inline(always)]
pub(super) fn exact_edges(a: [f32; 2], b: [f32; 2], c: [f32; 2]) -> [f32; 3] {
    let f = |x: f32| x as f64;
    [
        (f(c[0]) * f(b[1]) - f(c[1]) * f(b[0])) as f32,
        (f(a[0]) * f(c[1]) - f(a[1]) * f(c[0])) as f32,
        (f(b[0]) * f(a[1]) - f(b[1]) * f(a[0])) as f32,
    ]
}

/// The band, relative to a hit's distance, by which it may lie before its triangle's box.
pub(super) const BOX_BAND: f32 = 1.0 / (1 << 20) as f32;

/// The distance at which a ray (origin `o`, inverse direction `inv`, the sign of each
/// component `negative`) enters the box of each lane's triangle, whose `corners` are given,
/// in the node tests' exact form: `(plane - o)·inv` through the entry plane of each axis,
/// the largest of the three, an axis whose product is NaN (an origin on a plane the ray is
/// parallel to) left out. `-inf` is the identity of that maximum.
///
/// A triangle test's distance is rounded, and for a ray nearly parallel to the triangle's
/// plane the rounding of its origin becomes any distance along the ray: a hit can come out
/// far before the ray even reaches the triangle's box (a ray 2.5e-23 outside a box and
/// nearly parallel to its face was "hit" at 0.33, its box's entry 1.89). A walk that has
/// clipped its range below a box's entry culls the box, so such a hit would be found or not
/// as the walk's order goes. The tests therefore keep a hit only when
/// `entry <= t + |t|·BOX_BAND + margin`, with `margin` half the fused form's `Δ` (or 0 where
/// the ray takes the exact form, [`box_margin`]): a node test's entry distance for a leaf
/// box holding the triangle is at most this entry, lowered by about `Δ` and a few roundings
/// of the distance, and a walk culls only past its range raised by `2⁻¹⁶` of it
/// (`crate::wide::packet::raised_tmax`), so a kept hit within the range is never in a culled
/// box, whatever the order (`docs/robustness.md`). A real hit lies in the triangle's box, so
/// it is kept unless its distance is off by more than the allowance. The box of a
/// Möller–Trumbore pack's triangle is that of `v0`, `v0 + e1` and `v0 + e2`, as rounded.
#[inline(always)]
pub(crate) fn box_entry<T>(corners: &[[T; 3]; 3], o: &[T; 3], inv: &[T; 3], negative: [bool; 3], neg_inf: T) -> T
where
    T: KeepLanes + Sub<Output = T> + Mul<Output = T>,
{
    let mut entry = neg_inf;
    for a in 0..3 {
        let (c0, c1, c2) = (corners[0][a], corners[1][a], corners[2][a]);
        let plane = if negative[a] { max_keep(c0, max_keep(c1, c2)) } else { min_keep(c0, min_keep(c1, c2)) };
        entry = max_keep((plane - o[a]) * inv[a], entry);
    }
    entry
}

/// The watertight test's ray space (Woop, Benthin and Wald 2013, section 3): the permutation
/// `(kx, ky, kz)`, with `kz` the axis along which the direction is largest and `kx`, `ky`
/// swapped where `d[kz] < 0` to keep the winding, and the shear `(d[kx] / d[kz], d[ky] / d[kz])`.
/// Woop's third factor, `1 / d[kz]`, scales only his distance, which is not used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shear {
    pub k: [usize; 3],
    pub s: [f32; 2],
}

/// Each axis's successor: `(kx, ky)` follow `kz` (plain arrays and a table: glam's indexing by a
/// runtime axis is a match, and `% 3` a multiply, per ray).
pub(super) const NEXT: [usize; 3] = [1, 2, 0];

impl Shear {
    /// The ray space of direction `d`.
    #[inline(always)]
    pub(crate) fn of(d: Vec3) -> Shear {
        let (da, ad) = (d.to_array(), d.abs());
        let kz = if ad.x >= ad.y && ad.x >= ad.z {
            0
        } else if ad.y >= ad.z {
            1
        } else {
            2
        };
        let (mut kx, mut ky) = (NEXT[kz], NEXT[NEXT[kz]]);
        if da[kz] < 0.0 {
            std::mem::swap(&mut kx, &mut ky);
        }
        Shear { k: [kx, ky, kz], s: [da[kx] / da[kz], da[ky] / da[kz]] }
    }
}

/// The per-ray data of the triangle tests, computed once per ray.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TriRay {
    o: [f32x4; 3],
    d: [f32x4; 3],
    /// Watertight: permutation (kx, ky, kz) and shear (Sx, Sy, 0): Woop's Sz is not needed, since
    /// t comes from the plane equation.
    k: [usize; 3],
    shear: [f32x4; 3],
    /// Watertight: the origin's coordinates along kx, ky and kz.
    o_k: [f32x4; 3],
    /// For [`TriRay::not_before_box`]: the inverse direction, whether each component is
    /// negative (the ray enters a box through its upper plane), and the ray's [`box_margin`].
    inv: [f32x4; 3],
    negative: [bool; 3],
    box_margin: f32x4,
    pub tmin: f32,
}

/// The nearest hit within a pack: lane, t, u, v, and the pack (its position in the BVH, set by the
/// caller, which knows it), from which the hit is finished without reading the mesh.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PackHit {
    pub pack: u32,
    pub lane: usize,
    pub t: f32,
    pub u: f32,
    pub v: f32,
}

impl TriRay {
    /// `ray`'s data for the tests; the shear of the watertight test is only computed when
    /// `watertight` is set.
    #[inline(always)]
    pub(crate) fn new(ray: &Ray, watertight: bool) -> TriRay {
        // The inverse direction is the ray's own, so that the box test matches the node tests'.
        let (o, d, inv) = (ray.origin(), ray.dir(), ray.inv_dir());
        let shear = if watertight { Some(Shear::of(d.into())) } else { None };
        TriRay::with(o.into(), d.into(), inv, box_margin(o, inv, ray.tmin), ray.tmin, shear)
    }

    /// The ray from its parts, as [`TriRay::new`] would compute them: `inv` is `1 / d` as
    /// `Ray::new` computes it, `box_margin` the ray's [`box_margin`], and `shear` the
    /// watertight test's [`Shear::of`]`(d)` (none for Möller–Trumbore). A packet has them all at
    /// hand (`crate::wide::packet::Packet`), and so tests a ray alone without dividing again.
    #[inline(always)]
    pub(crate) fn with(o: Vec3, d: Vec3, inv: Vec3A, box_margin: f32, tmin: f32, shear: Option<Shear>) -> TriRay {
        let s = f32x4::splat;
        let negative = inv.to_array().map(f32::is_sign_negative);
        let inv = [s(inv.x), s(inv.y), s(inv.z)];
        let Shear { k, s: [sx, sy] } = shear.unwrap_or(Shear { k: [0, 1, 2], s: [0.0; 2] });
        TriRay {
            o: [s(o.x), s(o.y), s(o.z)],
            d: [s(d.x), s(d.y), s(d.z)],
            k,
            shear: [s(sx), s(sy), s(0.0)],
            o_k: k.map(|k| s(o.to_array()[k])),
            inv,
            negative,
            box_margin: s(box_margin),
            tmin,
        }
    }

    /// The lanes whose hit at `t` is kept: those not before their triangle's box by more than
    /// the allowance (see [`box_entry`]). `corners` are the triangles' corners, as the test saw
    /// them.
    #[inline(always)]
    fn not_before_box(&self, corners: &[[f32x4; 3]; 3], t: f32x4) -> f32x4 {
        let entry = box_entry(corners, &self.o, &self.inv, self.negative, f32x4::splat(f32::NEG_INFINITY));
        let abs_t = max_keep(t, f32x4::ZERO - t);
        entry.simd_le(t + abs_t * f32x4::splat(BOX_BAND) + self.box_margin)
    }

    /// Möller–Trumbore on four triangles stored as edges ([`PackRows::Edges`]): the hits with
    /// `tmin <= t <= tmax`.
    ///
    /// Written with the triangle's normal `N = e1 × e2` and `R = C × d`, `C = v0 - o`, as Embree's
    /// kernels do: `den = d·N`, `u = R·e2 / den`, `v = -R·e1 / den`, `t = C·N / den` (Cramer's
    /// rule on `o + t·d = v0 + u·e1 + v·e2`). The sign of `den` is folded into the numerators so
    /// that the range tests compare against `|den|` and `|den|·t` without dividing; the division
    /// is made only for packs with a hit, and `t` is only computed for packs that pass the edge
    /// tests (most packs a ray reaches do not). The nearest hit.
    #[inline(always)]
    pub(crate) fn intersect_mt(&self, p: &TriPack, tmax: f32) -> Option<PackHit> {
        moller_trumbore!(self, p, tmax, nearest)
    }

    /// [`TriRay::intersect_mt`]'s every hit lane, as [`LaneHits`].
    #[inline(always)]
    pub(crate) fn intersect_mt_lanes(&self, p: &TriPack, tmax: f32) -> Option<LaneHits> {
        moller_trumbore!(self, p, tmax, LaneHits::new)
    }

    /// Woop–Benthin–Wald watertight test on four triangles stored as corners
    /// ([`PackRows::Corners`]): the nearest hit with `tmin <= t <= tmax`.
    #[inline(always)]
    pub(crate) fn intersect_watertight(&self, p: &TriPack, tmax: f32) -> Option<PackHit> {
        watertight!(self, p, tmax, nearest)
    }

    /// [`TriRay::intersect_watertight`]'s every hit lane, as [`LaneHits`].
    #[inline(always)]
    pub(crate) fn intersect_watertight_lanes(&self, p: &TriPack, tmax: f32) -> Option<LaneHits> {
        watertight!(self, p, tmax, LaneHits::new)
    }
}

/// The lanes of a pack that a ray hits within its range, with each lane's distance and
/// barycentrics (meaningful where `mask` has the lane's bit).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneHits {
    /// One bit per hit lane, never 0.
    pub mask: u32,
    pub t: [f32; 4],
    pub u: [f32; 4],
    pub v: [f32; 4],
}

impl LaneHits {
    /// The hits of `mask`'s lanes, or `None` when there are none.
    #[inline(always)]
    fn new(mask: f32x4, t: f32x4, u: f32x4, v: f32x4) -> Option<LaneHits> {
        let mask = mask.to_bitmask();
        if mask == 0 {
            return None;
        }
        Some(LaneHits { mask, t: t.to_array(), u: u.to_array(), v: v.to_array() })
    }

    /// The hit lane with the smallest `t` among the lanes of `bits` (a non-empty subset of
    /// `mask`), the first such lane on ties, as [`nearest`] chooses.
    #[inline(always)]
    pub(crate) fn nearest_of(&self, bits: u32) -> usize {
        debug_assert!(bits != 0 && bits & !self.mask == 0);
        let mut best = bits.trailing_zeros() as usize;
        let mut rest = bits & (bits - 1);
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            if self.t[l] < self.t[best] {
                best = l;
            }
            rest &= rest - 1;
        }
        best
    }

    /// Lane `lane`'s hit in the pack at position `pack`.
    #[inline(always)]
    pub(crate) fn hit(&self, pack: u32, lane: usize) -> PackHit {
        PackHit { pack, lane, t: self.t[lane], u: self.u[lane], v: self.v[lane] }
    }
}

/// The lane with the smallest `t` among `mask` (the first on ties), as a hit of pack 0 (the
/// caller sets the pack). The same choice as [`LaneHits::nearest_of`], written out again: one
/// shared loop for both changed the register allocation of the closest-hit loop that inlines
/// this, for more instructions per ray (`docs/performance.md`).
#[inline(always)]
fn nearest(mask: f32x4, t: f32x4, u: f32x4, v: f32x4) -> Option<PackHit> {
    let bits = mask.to_bitmask();
    if bits == 0 {
        return None;
    }
    let ta = t.to_array();
    let mut best = bits.trailing_zeros() as usize;
    let mut rest = bits & (bits - 1);
    while rest != 0 {
        let l = rest.trailing_zeros() as usize;
        if ta[l] < ta[best] {
            best = l;
        }
        rest &= rest - 1;
    }
    Some(PackHit { pack: 0, lane: best, t: ta[best], u: u.to_array()[best], v: v.to_array()[best] })
}
