//! Triangle packs tested against eight rays at once, the rays across the lanes and the pack's
//! triangles one at a time: a packet's leaf test (`super::stream`) where several of a group's
//! rays enter the leaf. Each lane's answer is bit for bit the single ray's
//! ([`TriRay::intersect_mt`], [`TriRay::intersect_watertight`]): the same expressions, operand
//! for operand, with the triangle splatted where the single ray splats itself.

use super::triangle::{BOX_BAND, NEXT, NO_PRIM, Shear, TriPack, box_entry, exact_edges};
#[cfg(doc)]
use super::triangle::{LaneHits, TriRay};
use crate::math::{max_keep, min_keep};
use crate::wide::Lanes8;
use crate::wide::packet::GroupRays;

/// [`Shear::of`] of eight directions, one per lane (`d`, per axis), with the same comparisons
/// and the same divisions, so each lane's shear is its ray's bit for bit; `uniform` when all
/// eight share their permutation, which the eight-ray watertight test
/// ([`watertight`]) needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShearLanes {
    pub k: [[u8; 3]; 8],
    pub s: [[f32; 8]; 2],
    pub uniform: bool,
}

impl ShearLanes {
    /// An empty set, to be overwritten.
    pub(crate) const EMPTY: ShearLanes = ShearLanes { k: [[0, 1, 2]; 8], s: [[0.0; 8]; 2], uniform: true };

    /// The shears of the eight directions `d`.
    #[inline(always)]
    pub(crate) fn of<L: Lanes8>(d: &[L; 3]) -> ShearLanes {
        // Written out rather than by `array::map` (see `crate::wide::packet::Packet::planes`).
        let ad = [d[0].xor(d[0].sign()), d[1].xor(d[1].sign()), d[2].xor(d[2].sign())];
        let z0 = ad[0].ge_bits(ad[1]) & ad[0].ge_bits(ad[2]);
        let z1 = !z0 & ad[1].ge_bits(ad[2]);
        let dz = L::select_bits(z0, d[0], L::select_bits(z1, d[1], d[2]));
        let neg = dz.lt_bits(L::splat(0.0));
        let (mut k, mut x0, mut x1, mut y0, mut y1) = ([[0u8; 3]; 8], 0u32, 0u32, 0u32, 0u32);
        for (l, k) in k.iter_mut().enumerate() {
            let kz = if z0 >> l & 1 != 0 {
                0
            } else if z1 >> l & 1 != 0 {
                1
            } else {
                2
            };
            let (mut kx, mut ky) = (NEXT[kz], NEXT[NEXT[kz]]);
            if neg >> l & 1 != 0 {
                std::mem::swap(&mut kx, &mut ky);
            }
            *k = [kx as u8, ky as u8, kz as u8];
            x0 |= u32::from(kx == 0) << l;
            x1 |= u32::from(kx == 1) << l;
            y0 |= u32::from(ky == 0) << l;
            y1 |= u32::from(ky == 1) << l;
        }
        let dx = L::select_bits(x0, d[0], L::select_bits(x1, d[1], d[2]));
        let dy = L::select_bits(y0, d[0], L::select_bits(y1, d[1], d[2]));
        let uniform = k.iter().all(|&kl| kl == k[0]);
        ShearLanes { k, s: [(dx / dz).to_array(), (dy / dz).to_array()], uniform }
    }

    /// Lane `l`'s shear.
    #[inline(always)]
    pub(crate) fn lane(&self, l: usize) -> Shear {
        Shear { k: self.k[l].map(usize::from), s: [self.s[0][l], self.s[1][l]] }
    }
}

/// [`TriRay::intersect_mt`] of eight rays (origins `o`, directions `d`, ranges `tmin..=tmax`,
/// one per lane) against the pack, one triangle at a time: each lane of `active` gets bit for
/// bit what `intersect_mt` gives its ray (the other lanes no hit). The arithmetic is the same expression, operand for
/// operand, with the triangle splatted instead of the ray, so each lane rounds exactly as the
/// single-ray lane does; the nearest triangle is kept with a strict `<` in lane order, which
/// is [`LaneHits::nearest_of`]'s choice of the first of equal distances.
#[inline(always)]
pub(crate) fn moller_trumbore<L: Lanes8>(p: &TriPack, rays: &GroupRays<L>, active: u32, tmax: L) -> RaysHit {
    let GroupRays { o, d, box_margin, tmin, .. } = rays;
    let (tmin, negative) = (*tmin, rays.negative);
    let (mut mask, mut best_t, mut best_u, mut best_v) = (0u32, L::splat(f32::INFINITY), L::splat(0.0), L::splat(0.0));
    let mut lanes = [0u8; 8];
    let cross =
        |a: &[L; 3], b: &[L; 3]| [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    let dot = |a: &[L; 3], b: &[L; 3]| a[0] * b[0] + (a[1] * b[1] + a[2] * b[2]);
    let (zero, minus_zero) = (L::splat(0.0), L::splat(-0.0));
    for lane in 0..4 {
        if p.prim[lane] == NO_PRIM {
            continue;
        }
        // Written out rather than by `array::map` (see `crate::wide::packet::Packet::planes`).
        let row = |k: usize| [L::splat(p.v[k][0][lane]), L::splat(p.v[k][1][lane]), L::splat(p.v[k][2][lane])];
        let (v0, e1, e2) = (row(0), row(1), row(2));
        let n = cross(&e1, &e2);
        let c = [v0[0] - o[0], v0[1] - o[1], v0[2] - o[2]];
        let r = cross(&c, d);
        let den = dot(&n, d);
        let sign = den.sign();
        let abs_den = den.xor(sign);
        let u = dot(&r, &e2).xor(sign);
        let v = dot(&r, &e1).xor(minus_zero).xor(sign);
        let inside = active & abs_den.gt_bits(zero) & u.ge_bits(zero) & v.ge_bits(zero) & (u + v).le_bits(abs_den);
        if inside == 0 {
            continue;
        }
        let t = dot(&c, &n).xor(sign);
        let hit = inside & t.ge_bits(abs_den * tmin) & t.le_bits(abs_den * tmax);
        if hit == 0 {
            continue;
        }
        let inv = L::splat(1.0) / abs_den;
        let (t, u, v) = (t * inv, u * inv, v * inv);
        // As in `moller_trumbore`: within the range, at a finite distance, with finite
        // barycentrics.
        let max = L::splat(f32::MAX);
        let hit = hit
            & t.ge_bits(tmin)
            & t.le_bits(tmax)
            & t.lt_bits(L::splat(f32::INFINITY))
            & u.le_bits(max)
            & v.le_bits(max);
        // As `not_before_box`, operand for operand.
        let corners =
            [v0, [v0[0] + e1[0], v0[1] + e1[1], v0[2] + e1[2]], [v0[0] + e2[0], v0[1] + e2[1], v0[2] + e2[2]]];
        let entry = box_entry(&corners, o, &rays.inv, negative, L::splat(f32::NEG_INFINITY));
        let abs_t = max_keep(t, zero - t);
        let hit = hit & entry.le_bits(t + abs_t * L::splat(BOX_BAND) + *box_margin);
        // The first triangle of the smallest `t`, per ray.
        let better = hit & t.lt_bits(best_t);
        if better == 0 {
            continue;
        }
        best_t = L::select_bits(better, t, best_t);
        best_u = L::select_bits(better, u, best_u);
        best_v = L::select_bits(better, v, best_v);
        mask |= better;
        for (l, slot) in lanes.iter_mut().enumerate() {
            if better & (1 << l) != 0 {
                *slot = lane as u8;
            }
        }
    }
    RaysHit { mask, t: best_t.to_array(), u: best_u.to_array(), v: best_v.to_array(), lane: lanes }
}

/// [`TriRay::intersect_watertight`] of eight rays (one per lane, sharing their ray space
/// `shear`, which must be [`ShearLanes::uniform`]) against the pack, one triangle at a time:
/// each lane's answer is bit for bit what `intersect_watertight` gives that ray, for the
/// reasons given at [`moller_trumbore`]. Its ending (the box check and the nearest triangle) is
/// `moller_trumbore`'s written out again: shared, it cost both tests instructions
/// (`docs/performance.md`).
#[inline(always)]
pub(crate) fn watertight<L: Lanes8>(
    p: &TriPack,
    rays: &GroupRays<L>,
    shear: &ShearLanes,
    active: u32,
    tmax: L,
) -> RaysHit {
    debug_assert!(shear.uniform);
    let GroupRays { o, d, box_margin, tmin, .. } = rays;
    let (tmin, negative) = (*tmin, rays.negative);
    let [kx, ky, kz] = shear.k[0].map(usize::from);
    let (sx, sy) = (L::load(&shear.s[0]), L::load(&shear.s[1]));
    let (okx, oky, okz) = (rays.o_along(kx), rays.o_along(ky), rays.o_along(kz));
    let (mut mask, mut best_t, mut best_u, mut best_v) = (0u32, L::splat(f32::INFINITY), L::splat(0.0), L::splat(0.0));
    let mut lanes = [0u8; 8];
    let zero = L::splat(0.0);
    for lane in 0..4 {
        if p.prim[lane] == NO_PRIM {
            continue;
        }
        let (c0, c1, c2): ([L; 3], [L; 3], [L; 3]) = (corner(p, 0, lane), corner(p, 1, lane), corner(p, 2, lane));
        let k = [kx, ky, kz];
        let [ax, ay] = sheared(p, 0, lane, k, [okx, oky, okz], [sx, sy]);
        let [bx, by] = sheared(p, 1, lane, k, [okx, oky, okz], [sx, sy]);
        let [cx, cy] = sheared(p, 2, lane, k, [okx, oky, okz], [sx, sy]);
        let mut u = cx * by - cy * bx;
        let mut v = ax * cy - ay * cx;
        let mut w = bx * ay - by * ax;
        let mut inside = active & one_side(u, v, w);
        if inside == 0 {
            continue;
        }
        if (eq_zero(u) | eq_zero(v) | eq_zero(w)) & inside != 0 {
            let (mut ua, mut va, mut wa) = (u.to_array(), v.to_array(), w.to_array());
            let (axa, aya, bxa, bya, cxa, cya) =
                (ax.to_array(), ay.to_array(), bx.to_array(), by.to_array(), cx.to_array(), cy.to_array());
            for l in 0..8 {
                if ua[l] == 0.0 || va[l] == 0.0 || wa[l] == 0.0 {
                    [ua[l], va[l], wa[l]] = exact_edges([axa[l], aya[l]], [bxa[l], bya[l]], [cxa[l], cya[l]]);
                }
            }
            (u, v, w) = (L::load(&ua), L::load(&va), L::load(&wa));
            inside &= one_side(u, v, w);
        }
        let det = u + v + w;
        let inside = inside & !eq_zero(det);
        let e1 = [c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2]];
        let e2 = [c2[0] - c0[0], c2[1] - c0[1], c2[2] - c0[2]];
        let n = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
        let den = n[0] * d[0] + n[1] * d[1] + n[2] * d[2];
        let ra = [c0[0] - o[0], c0[1] - o[1], c0[2] - o[2]];
        let t_num = n[0] * ra[0] + n[1] * ra[1] + n[2] * ra[2];
        let sign = den.sign();
        let (t_num, abs_den) = (t_num.xor(sign), den.xor(sign));
        let near = inside & t_num.ge_bits(abs_den * tmin) & t_num.le_bits(abs_den * tmax);
        if near == 0 {
            continue;
        }
        let t = t_num / abs_den;
        let inf = L::splat(f32::INFINITY);
        let hit = near & t.ge_bits(tmin) & t.le_bits(tmax) & t.lt_bits(inf);
        let inv = L::splat(1.0) / det;
        let (bu, bv) = (v * inv, w * inv);
        let hit = hit & finite(bu) & finite(bv);
        // As `not_before_box`, operand for operand.
        let entry = box_entry(&[c0, c1, c2], o, &rays.inv, negative, L::splat(f32::NEG_INFINITY));
        let abs_t = max_keep(t, zero - t);
        let hit = hit & entry.le_bits(t + abs_t * L::splat(BOX_BAND) + *box_margin);
        // The first triangle of the smallest `t`, per ray.
        let better = hit & t.lt_bits(best_t);
        if better == 0 {
            continue;
        }
        best_t = L::select_bits(better, t, best_t);
        best_u = L::select_bits(better, bu, best_u);
        best_v = L::select_bits(better, bv, best_v);
        mask |= better;
        for (l, slot) in lanes.iter_mut().enumerate() {
            if better & (1 << l) != 0 {
                *slot = lane as u8;
            }
        }
    }
    RaysHit { mask, t: best_t.to_array(), u: best_u.to_array(), v: best_v.to_array(), lane: lanes }
}

/// Corner `k` of the pack's triangle `lane`, relative to eight origins `o_k` along the permuted
/// axes `k`, sheared into their ray space (`s`): the single ray's `watertight` arithmetic, the
/// coordinates read from the pack by index as it reads them. (A function, not a closure: a
/// closure the compiler leaves out of line loses the level's instructions, `crate::wide`.)
#[inline(always)]
fn sheared<L: Lanes8>(p: &TriPack, corner: usize, lane: usize, k: [usize; 3], o_k: [L; 3], s: [L; 2]) -> [L; 2] {
    let at = |a: usize| L::splat(p.v[corner][a][lane]);
    let (x, y, z) = (at(k[0]) - o_k[0], at(k[1]) - o_k[1], at(k[2]) - o_k[2]);
    [x - s[0] * z, y - s[1] * z]
}

/// Corner `k` of the pack's triangle `lane`, splatted.
#[inline(always)]
fn corner<L: Lanes8>(p: &TriPack, k: usize, lane: usize) -> [L; 3] {
    [L::splat(p.v[k][0][lane]), L::splat(p.v[k][1][lane]), L::splat(p.v[k][2][lane])]
}

/// The lanes whose three edge functions are not on both sides of zero, by the slab tests' folds,
/// as the single ray's `watertight` test computes it.
#[inline(always)]
fn one_side<L: Lanes8>(u: L, v: L, w: L) -> u32 {
    let zero = L::splat(0.0);
    min_keep(min_keep(u, v), w).ge_bits(zero) | max_keep(max_keep(u, v), w).le_bits(zero)
}

/// The lanes equal to zero (either sign).
#[inline(always)]
fn eq_zero<L: Lanes8>(x: L) -> u32 {
    let zero = L::splat(0.0);
    x.le_bits(zero) & x.ge_bits(zero)
}

/// The finite lanes (not infinite, not NaN).
#[inline(always)]
fn finite<L: Lanes8>(x: L) -> u32 {
    x.xor(x.sign()).lt_bits(L::splat(f32::INFINITY))
}

/// What [`moller_trumbore`] and [`watertight`] found for eight rays: the rays with a hit (a bit mask),
/// and per ray the hit's distance, barycentrics and the pack lane of its triangle.
pub(crate) struct RaysHit {
    pub mask: u32,
    pub t: [f32; 8],
    pub u: [f32; 8],
    pub v: [f32; 8],
    pub lane: [u8; 8],
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec3A};
    use slabtree_testkit::rng::units;

    use super::{ShearLanes, moller_trumbore, watertight};
    use crate::math::Ray;
    use crate::mesh::triangle::{PackRows, Shear, TriPack, TriRay};
    use crate::wide::Lanes8;
    use crate::wide::dispatch::at_every_level;
    use crate::wide::packet::Packet;

    /// Every lane of the eight-ray tests, both triangle tests, equals the single ray's test bit for
    /// bit (hit or not, the pack lane, `t`, `u`, `v`), and so does each lane's shear: packs with
    /// corners on a coarse grid and rays aimed at the corners (edge functions exactly zero, so the
    /// f64 recomputation runs), with missing triangles, ranges that end before, at and after the
    /// hits, and groups that only some lanes take part in.
    #[inline(always)]
    fn check<L: Lanes8>() {
        let mut next = units(0x7e57);
        let (mut compared, mut hits) = (0, 0);
        for round in 0..900 {
            // Three kinds of rounds: corners on a grid and rays of dyadic directions through the
            // corners (sheared coordinates exact, edge functions exactly zero, so the f64
            // recomputation runs); corners anywhere; corners near f32::MAX (edge functions that
            // overflow, refused by the finite barycentrics).
            let (exact, scale) = match round % 3 {
                0 => (true, 1.0),
                1 => (false, 1.0),
                _ => (false, 4e37),
            };
            let q = |x: f32| if exact { (x * 4.0).round() } else { x * 4.0 };
            let corners: Vec<[Vec3; 3]> =
                (0..4).map(|_| [0, 1, 2].map(|_| Vec3::new(q(next()), q(next()), q(next())) * scale)).collect();
            let (sx, sy) = (if next() < 0.5 { -1.0 } else { 1.0 }, if next() < 0.5 { -1.0 } else { 1.0 });
            let rays: Vec<Ray> = (0..8)
                .map(|_| {
                    let corner = Vec3A::from(corners[(next() * 3.99) as usize][(next() * 2.99) as usize]);
                    let (o, d) = if exact {
                        // One octant for the packet (the signs fixed by the round), `z` the largest
                        // component, and the corner at `t = k`.
                        let d = Vec3A::new(
                            sx * (1.0 + (next() * 2.99).floor()) / 4.0,
                            sy * (1.0 + (next() * 2.99).floor()) / 4.0,
                            1.0,
                        );
                        let o = corner - d * (3.0 + (next() * 2.99).floor());
                        // Half of them a rounding off the corner, where the f32 products of an
                        // edge function can round to the same value and their f64 ones not.
                        let mut nudge = |x: f32| if next() < 0.5 { x } else { f32::from_bits(x.to_bits() + 1) };
                        (Vec3A::new(nudge(o.x), nudge(o.y), o.z), d)
                    } else {
                        let o = Vec3A::new(q(next()), q(next()), -3.0 - q(next())) * scale;
                        let target =
                            if next() < 0.5 { corner } else { Vec3A::new(q(next()), q(next()), q(next())) * scale };
                        let d = target - o;
                        (o, Vec3A::new(sx * d.x.abs().max(0.01), sy * d.y.abs().max(0.01), d.z.abs().max(0.01)))
                    };
                    Ray::new(o, d)
                        .with_range(0.0, if next() < 0.3 { (1.0 + next() * 4.0) * scale } else { f32::INFINITY })
                })
                .collect();
            let active = if round % 3 == 0 { 0xFF } else { (next() * 255.0) as u32 | 1 };
            let mut pk = Packet::new();
            pk.load::<L, false, true>(&rays, &(0..8).collect::<Vec<_>>());
            let group = pk.group_rays::<L>(0);
            let shears = ShearLanes::of::<L>(&pk.group_dirs::<L>(0));
            for (l, r) in rays.iter().enumerate() {
                assert_eq!(shears.lane(l), Shear::of(r.dir().into()), "round {round}, ray {l}");
            }
            for rows in [PackRows::Edges, PackRows::Corners] {
                let mut p = TriPack::EMPTY;
                for (lane, c) in corners.iter().enumerate().filter(|&(lane, _)| round % 5 != 0 || lane != 2) {
                    p.set(lane, 10 + lane as u32, &rows.rows(*c));
                }
                let found = match rows {
                    PackRows::Edges => moller_trumbore(&p, &group, active, group.tmax),
                    PackRows::Corners if shears.uniform => watertight(&p, &group, &shears, active, group.tmax),
                    PackRows::Corners => continue,
                };
                for (l, r) in rays.iter().enumerate() {
                    let watertight = rows == PackRows::Corners;
                    let tr = TriRay::new(r, watertight);
                    let single =
                        if watertight { tr.intersect_watertight(&p, r.tmax) } else { tr.intersect_mt(&p, r.tmax) };
                    let single = single.filter(|_| active & (1 << l) != 0);
                    let lane = (found.mask & (1 << l) != 0).then(|| {
                        (found.lane[l] as usize, found.t[l].to_bits(), found.u[l].to_bits(), found.v[l].to_bits())
                    });
                    let expected = single.map(|h| (h.lane, h.t.to_bits(), h.u.to_bits(), h.v.to_bits()));
                    assert_eq!(lane, expected, "round {round}, {rows:?}, ray {l}");
                    compared += 1;
                    hits += usize::from(expected.is_some());
                }
            }
        }
        // The rounds must exercise both outcomes, and the watertight test most rounds.
        assert!(compared > 9000 && hits > 1500, "{compared} compared, {hits} hits");
    }

    #[test]
    fn every_lane_equals_the_single_ray_test() {
        at_every_level!(check);
    }
}
