//! The ray–node test of 8-wide nodes.
//!
//! Two forms of the slab test, each a [`ChildBoxTest`]:
//!
//! * **exact** ([`Ray8::new`]): `(plane - origin) * inv_dir`, the slab test of
//!   `dbvt::node::RayLanes::test_pair` eight lanes at a time, in the same operation order as
//!   [`crate::math::slab_interval`], so each lane's answer and entry distance are the scalar
//!   test's. The dynamic tree's copy and the swept boxes use it, and a mesh BVH's rays where
//!   the fused form is not available, with the fused form's slack ([`Ray8::lowered`]).
//! * **fused** ([`FusedRay8`], the mesh BVH's rays): `plane * inv_dir - origin * inv_dir` with the
//!   product `origin * inv_dir` computed once per ray, so each plane costs one fused multiply-add,
//!   as in Embree's BVH kernels. Embree's fast mode accepts that the rounding of the precomputed
//!   product can cull a box the ray grazes; here the test stays conservative (the argument is in
//!   `docs/architecture.md`, "The fused slab test"), with both corrections in the per-ray
//!   constants ([`FusedConstants`]) rather than in each node's arithmetic: the entry planes'
//!   product is `o·inv + Δ` and `tmin` is lowered to `tmin − Δ`, with `Δ = 8u·max|o·inv|`
//!   (`u = 2⁻²⁴`), which covers the rounding of every constant on both sides of the comparison
//!   and keeps the entry distance at or below the exact one; the exit planes use `inv` and
//!   `o·inv` scaled by the slab test's factor `1 + 2γ(3)` (Ize 2013), which covers the relative
//!   error of one rounded `inv_dir`, of the scaled constants and of one rounding of the fused
//!   result. A node's verdict is then one fused multiply-add per plane, a maximum, a minimum and
//!   a comparison, the chain a walk waits on between one node and the next. The fused form
//!   needs a real fused multiply-add ([`Lanes8::FMA`]) and finite constants; a ray
//!   without them (a direction component of 0, an origin so far out that `o·inv` overflows) is
//!   tested in the exact form.

use glam::Vec3A;

use super::{Lanes8, Node8, NodeStore};
use crate::math::{FAR_PAD, Ray, max_keep, min_keep};

/// What the 8-wide traversal asks of a ray: which children of a node it enters, and where.
pub(crate) trait ChildBoxTest {
    /// The lanes the test computes in (the SIMD level).
    type Lanes: Lanes8;

    /// The lanes of `node` the ray enters within `[tmin, tmax]` (as `SlabInterval::is_hit`), as
    /// a bit mask, and every lane's entry distance, never later than the exact one. Empty lanes
    /// enter at `+inf` and are never in the mask. (The fused form may also report a lane whose
    /// planes overflow to infinity, entered at `+inf`: conservative, never a wrong cull.)
    /// `INFLATE` grows the planes by a swept box (only [`Ray8`] supports it).
    fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, Self::Lanes);

    /// [`ChildBoxTest::test`] of the node `index` names in `nodes`.
    ///
    /// # Safety
    /// As for [`NodeStore::node`].
    #[inline(always)]
    unsafe fn test_at<const INFLATE: bool, N: NodeStore + ?Sized>(
        &self,
        nodes: &N,
        index: u32,
        tmax: f32,
    ) -> (u32, Self::Lanes) {
        // SAFETY: the caller's promise, as for `NodeStore::node`.
        self.test::<INFLATE>(unsafe { nodes.node(index) }, tmax)
    }
}

/// Row of each axis' near and far plane among a node's six bound rows (`side * 3 + axis`), chosen
/// by the direction's sign once per ray. Always below 6.
pub(crate) fn plane_rows(ray: &Ray) -> ([usize; 3], [usize; 3]) {
    let sign = ray.sign().map(usize::from);
    ([sign[0] * 3, 1 + sign[1] * 3, 2 + sign[2] * 3], [(1 - sign[0]) * 3, 1 + (1 - sign[1]) * 3, 2 + (1 - sign[2]) * 3])
}

/// Bound row `row` (`side * 3 + axis`) of `node`.
#[inline(always)]
fn plane<L: Lanes8>(node: &Node8, row: usize) -> L {
    let rows = node.bounds.as_flattened();
    debug_assert!(row < rows.len());
    // SAFETY: rows come from `plane_rows` as `side * 3 + axis` with side < 2 and axis < 3, and
    // `rows` has 6 entries.
    L::load(unsafe { rows.get_unchecked(row) })
}

#[inline(always)]
fn splat3<L: Lanes8>(v: Vec3A) -> [L; 3] {
    [L::splat(v.x), L::splat(v.y), L::splat(v.z)]
}

/// One ray, or the centre ray of a swept box, splatted once for the exact form of the test;
/// with `LOWERED`, a mesh BVH's ray, whose entry distances are lowered by `slack`
/// ([`Ray8::lowered`]).
pub(crate) struct Ray8<L = wide::f32x8, const LOWERED: bool = false> {
    origin: [L; 3],
    inv_dir: [L; 3],
    /// Added to the near plane and subtracted from the far plane of each axis: `∓ half_extent`
    /// for a box sweep (the near plane moves out against the direction, the far one with it).
    near_offset: [L; 3],
    near_row: [usize; 3],
    far_row: [usize; 3],
    tmin: L,
    /// The fused form's `Δ` with `LOWERED` (else unused, 0).
    slack: L,
}

impl<L: Lanes8> Ray8<L> {
    /// The exact form. `inflate` is the half-extent of a swept box (zero for rays; only read by
    /// [`ChildBoxTest::test`]`::<true>`).
    #[inline(always)]
    pub(crate) fn new(ray: &Ray, inflate: Vec3A) -> Ray8<L> {
        let sign = ray.sign();
        let near_off = |a: usize| L::splat(if sign[a] == 1 { inflate[a] } else { -inflate[a] });
        let (near_row, far_row) = plane_rows(ray);
        Ray8 {
            origin: splat3(ray.origin()),
            inv_dir: splat3(ray.inv_dir()),
            near_offset: [near_off(0), near_off(1), near_off(2)],
            near_row,
            far_row,
            tmin: L::splat(ray.tmin),
            slack: L::splat(0.0),
        }
    }
}

impl<L: Lanes8> Ray8<L, true> {
    /// The exact form for a mesh BVH's ray, with the fused form's slack: every entry distance
    /// lowered by its `Δ` ([`FusedConstants::widen`]) where the ray has fused constants. A level
    /// without a fused multiply-add walks with this form and a level with one with
    /// [`FusedRay8`], so both must enter the boxes that a ray misses by a rounding: a triangle in
    /// one can still be hit at a rounded `t` within the range (a ray that starts a subnormal
    /// outside a box, on a triangle's corner), and with the exact distances alone one level
    /// would find it and the other not (`tests/regressions.rs`).
    #[inline(always)]
    pub(crate) fn lowered(ray: &Ray) -> Ray8<L, true> {
        let Ray8 { origin, inv_dir, near_offset, near_row, far_row, tmin, .. } = Ray8::<L>::new(ray, Vec3A::ZERO);
        let slack = L::splat(fused_constants(ray).map_or(0.0, |c| c.widen));
        Ray8 { origin, inv_dir, near_offset, near_row, far_row, tmin, slack }
    }
}

impl<L: Lanes8, const LOWERED: bool> ChildBoxTest for Ray8<L, LOWERED> {
    type Lanes = L;

    #[inline(always)]
    fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, L) {
        let mut near = self.tmin;
        let mut far = L::splat(tmax);
        let pad = L::splat(FAR_PAD);
        for a in 0..3 {
            let (mut np, mut fp) = (plane::<L>(node, self.near_row[a]), plane::<L>(node, self.far_row[a]));
            if INFLATE {
                np = np + self.near_offset[a];
                fp = fp - self.near_offset[a];
            }
            let tn = (np - self.origin[a]) * self.inv_dir[a];
            let tf = (fp - self.origin[a]) * self.inv_dir[a] * pad;
            near = max_keep(tn, near);
            far = min_keep(tf, far);
        }
        let near = if LOWERED { near - self.slack } else { near };
        (near.le_bits(far) & near.lt_bits(L::splat(f32::INFINITY)), near)
    }
}

/// One ray splatted once for the fused form of the test (see the module doc).
#[derive(Clone, Copy)]
pub(crate) struct FusedRay8<L = wide::f32x8> {
    inv_dir: [L; 3],
    /// `o·inv + Δ`, per axis: the entry planes' products, so that every entry distance comes
    /// out lowered by about `Δ` (see [`FusedConstants`]).
    near_org: [L; 3],
    /// `inv·(1 + 2γ(3))` and `o·inv·(1 + 2γ(3))`: the exit planes' products, so that every exit
    /// distance comes out raised by the slab test's factor.
    far_inv: [L; 3],
    far_org: [L; 3],
    near_row: [usize; 3],
    far_row: [usize; 3],
    /// `tmin − Δ`.
    tmin: L,
}

/// `8u` with `u = 2⁻²⁴`, the unit roundoff of f32: `Δ` is this times the largest `|o·inv|`.
pub(crate) const FUSED_PAD: f32 = 8.0 * f32::EPSILON * 0.5;

/// The fused form's per-ray constants, each rounded to nearest once (the argument that the test
/// built from them is conservative is in `docs/architecture.md`, "The fused slab test"). The
/// widening `Δ` and the exit factor `1 + 2γ(3)` live in these constants rather than in the
/// per-node arithmetic, so that a node's verdict is one fused multiply-add per plane, a maximum
/// and a minimum over the axes, and one comparison: the chain from a node's load to the choice
/// of the next node is what a walk waits on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FusedConstants {
    /// The inverse direction, for the entry planes.
    pub(crate) inv: Vec3A,
    /// `p = o·inv`, rounded to nearest.
    pub(crate) p: Vec3A,
    /// `Δ = 8u·max|p| + MIN_POSITIVE` (the last term for products in the subnormal range).
    pub(crate) widen: f32,
    /// The ray's `tmin`.
    pub(crate) tmin: f32,
}

impl FusedConstants {
    /// `p + Δ`: the entry planes' origin term.
    #[inline(always)]
    pub(crate) fn near_org(&self) -> Vec3A {
        self.p + Vec3A::splat(self.widen)
    }

    /// `inv·(1 + 2γ(3))`: the exit planes' inverse direction.
    #[inline(always)]
    pub(crate) fn far_inv(&self) -> Vec3A {
        self.inv * FAR_PAD
    }

    /// `p·(1 + 2γ(3))`: the exit planes' origin term.
    #[inline(always)]
    pub(crate) fn far_org(&self) -> Vec3A {
        self.p * FAR_PAD
    }

    /// `tmin − Δ`: the range's start for the node tests.
    #[inline(always)]
    pub(crate) fn node_tmin(&self) -> f32 {
        self.tmin - self.widen
    }
}

/// The fused form's per-ray constants, or `None` when they are not finite or the ray's range
/// starts before its origin (`tmin < 0`, for which [`fused_interval`]'s integer maximum would let
/// boxes behind the origin in); then the ray takes the exact form. The packets of
/// `super::packet` take exactly the rays for which this is `Some`, and the same constants,
/// whatever the target.
#[inline(always)]
pub(crate) fn fused_constants(ray: &Ray) -> Option<FusedConstants> {
    let (o, inv) = (ray.origin(), ray.inv_dir());
    let p = o * inv;
    let widen = fused_widen(o, inv, ray.tmin)?;
    Some(FusedConstants { inv, p, widen, tmin: ray.tmin })
}

/// How far before a triangle's box a triangle test may report a hit and have it kept, beyond a
/// band relative to the distance: half the fused form's `Δ` for a ray that has it, else 0
/// (the argument is in `mesh::triangle`, at `TriRay::not_before_box`).
#[inline(always)]
pub(crate) fn box_margin(o: Vec3A, inv: Vec3A, tmin: f32) -> f32 {
    fused_widen(o, inv, tmin).map_or(0.0, |w| w * 0.5)
}

/// The fused form's `Δ` of the ray from `o` with inverse direction `inv` and range start `tmin`,
/// or `None` where the ray takes the exact form ([`fused_constants`]).
#[inline(always)]
fn fused_widen(o: Vec3A, inv: Vec3A, tmin: f32) -> Option<f32> {
    let p = o * inv;
    // One check for all: the sum is finite only if both terms are at most `f32::MAX / 2`, and
    // then so are `p + Δ` and both products by `1 + 2γ(3)` (a sum of finite terms can also
    // overflow, and such a ray takes the exact form, which is always correct).
    if !((inv.abs() + p.abs()) * 2.0).is_finite() || tmin < 0.0 {
        return None;
    }
    Some(p.abs().max_element() * FUSED_PAD + f32::MIN_POSITIVE)
}

impl<L: Lanes8> FusedRay8<L> {
    /// The fused form, where the lanes' level and this ray allow it (else `None`: use [`Ray8`]).
    #[inline(always)]
    pub(crate) fn new(ray: &Ray) -> Option<FusedRay8<L>> {
        if !L::FMA {
            return None;
        }
        let c = fused_constants(ray)?;
        let (near_row, far_row) = plane_rows(ray);
        Some(FusedRay8 {
            inv_dir: splat3(c.inv),
            near_org: splat3(c.near_org()),
            far_inv: splat3(c.far_inv()),
            far_org: splat3(c.far_org()),
            near_row,
            far_row,
            tmin: L::splat(c.node_tmin()),
        })
    }

    /// The verdict on the node whose bound rows `row` loads (by `side * 3 + axis`).
    #[inline(always)]
    fn verdict(&self, row: impl Fn(usize) -> L, tmax: f32) -> (u32, L) {
        let near_t = |a: usize| row(self.near_row[a]).mul_sub(self.inv_dir[a], self.near_org[a]);
        let far_t = |a: usize| row(self.far_row[a]).mul_sub(self.far_inv[a], self.far_org[a]);
        fused_interval([near_t(0), near_t(1), near_t(2)], [far_t(0), far_t(1), far_t(2)], self.tmin, L::splat(tmax))
    }
}

impl<L: Lanes8> ChildBoxTest for FusedRay8<L> {
    type Lanes = L;

    #[inline(always)]
    fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, L) {
        debug_assert!(!INFLATE, "the fused form tests rays, not swept boxes");
        self.verdict(|row| plane::<L>(node, row), tmax)
    }

    /// Each row straight from the store ([`NodeStore::row`]), so that the mesh BVH's loads take
    /// the node's reference as their index (`mesh::layout`).
    #[inline(always)]
    unsafe fn test_at<const INFLATE: bool, N: NodeStore + ?Sized>(&self, nodes: &N, index: u32, tmax: f32) -> (u32, L) {
        debug_assert!(!INFLATE, "the fused form tests rays, not swept boxes");
        // SAFETY: the caller's promise, as for `NodeStore::node`.
        self.verdict(|row| L::load(unsafe { nodes.row(index, row) }), tmax)
    }
}

/// The fused form's verdict from the per-axis entry distances `fma(plane, inv, −(o·inv + Δ))` and
/// exit distances `fma(plane, inv·(1 + 2γ(3)), −o·inv·(1 + 2γ(3)))` and the lowered `tmin − Δ`
/// ([`FusedConstants`]): the lanes entered (a bit mask) and their entry distances. Shared by
/// [`FusedRay8`] and the packets of `super::packet`, so that a ray in a packet enters exactly the
/// lanes it enters alone.
///
/// No lane is NaN: the products and constants are finite and the planes finite or infinite. An
/// empty lane (planes +inf and -inf) enters at +inf and leaves at -inf, so the one comparison
/// refuses it. `tmin` and `tmax` join the third axis before it meets the other two, so that the
/// chain from the planes to the mask is one fused multiply-add, one integer and one float
/// maximum (minimum), and the comparison.
///
/// The first two axes are combined by [`int_max`] and [`int_min`], as Embree's kernels combine
/// all of them: a shorter dependency chain per node visit (`docs/performance.md`). The entry
/// distance is never
/// later than the float form's, and earlier only when both of the first two axes enter behind
/// the origin and the lowered `tmin` is below them, which lowers it by at most `Δ` past `tmin`
/// (see `int_max`); the exit distance can only come out later than the float minimum when both
/// of its axes exit behind the origin (see `int_min`), and then a box is entered only if it ends
/// within `Δ` behind `tmin`.
#[inline(always)]
pub(crate) fn fused_interval<L: Lanes8>(near_t: [L; 3], far_t: [L; 3], tmin: L, tmax: L) -> (u32, L) {
    let near = max_keep(int_max(near_t[0], near_t[1]), max_keep(near_t[2], tmin));
    let far = min_keep(int_min(far_t[0], far_t[1]), min_keep(far_t[2], tmax));
    (near.le_bits(far), near)
}

/// The larger of `a` and `b` lane by lane, their bits compared as `i32` (`vpmaxsd`, an integer
/// operation of shorter latency than a float maximum, as Embree's kernels use it). Non-negative floats order as their bits
/// do, and every negative float's bits are below every non-negative one's, so this is the float
/// maximum whenever one operand is at least +0; when both are negative it is one of them (the
/// float minimum, as negative bits order backwards), never more than the maximum. An entry
/// distance computed with it is never later than the exact one; it must not take `tmin − Δ`,
/// or, that being negative for a range that starts at the origin, every box behind the origin
/// would be entered (`fused_interval` takes the float maximum with it after this one).
#[inline(always)]
fn int_max<L: Lanes8>(a: L, b: L) -> L {
    a.int_max(b)
}

/// The smaller of `a` and `b` lane by lane, their bits compared as `i32`: the float minimum when
/// both are at least +0, or when one is negative (its bits are below the other's); when both
/// are negative, the one nearer 0, never less than the minimum. An exit distance computed with
/// it is never earlier than the exact one.
#[inline(always)]
fn int_min<L: Lanes8>(a: L, b: L) -> L {
    a.int_min(b)
}

#[cfg(test)]
mod tests {
    use glam::Vec3A;
    use slabtree_testkit::rng::Rng;

    use super::{ChildBoxTest, FusedRay8, Ray8};
    use crate::child::ChildRef;
    use crate::math::{Aabb, Ray};
    use crate::wide::Lanes8;
    use crate::wide::Node8;
    use crate::wide::dispatch::at_every_level;

    /// The exact slab test in f64 on the f32 inputs: where the ray enters the box within its
    /// range, or `None`.
    fn entry(ray: &Ray, b: &Aabb) -> Option<f64> {
        let (o, d) = (ray.origin().as_dvec3(), ray.dir().as_dvec3());
        let (mut near, mut far) = (ray.tmin as f64, ray.tmax as f64);
        for a in 0..3 {
            let (lo, hi) = (b.min[a] as f64, b.max[a] as f64);
            if d[a] == 0.0 {
                if o[a] < lo || o[a] > hi {
                    return None;
                }
                continue;
            }
            let (t0, t1) = ((lo - o[a]) / d[a], (hi - o[a]) / d[a]);
            near = near.max(t0.min(t1));
            far = far.min(t0.max(t1));
        }
        (near <= far).then_some(near)
    }

    /// The fused form never culls a box the ray touches, nor reports it entered later than it
    /// is: rays from origins up to 1e6 away, boxes whose corners lie on the ray (grazing, the
    /// case rounding decides), in the exact and the fused form. With the widening `Δ` removed
    /// from either side (the far side: Embree's unpadded form) this fails.
    #[test]
    fn the_fused_node_test_is_conservative() {
        at_every_level!(conservative);
    }

    #[inline(always)]
    fn conservative<L: Lanes8>() {
        let mut rng = Rng(0x5eed_f00d);
        let mut grazed = 0;
        for i in 0..40_000 {
            let scale = [1.0f32, 1e3, 1e5, 1e6][i % 4];
            let o = rng.unit3a() * 2.0 * scale - Vec3A::splat(scale);
            let d = (rng.unit3a() - Vec3A::splat(0.5)) * [1.0f32, 1e-3, 1e3][i % 3];
            let ray = Ray::new(o, d).with_range(0.0, f32::INFINITY);
            if ray.validate().is_err() {
                continue;
            }
            let mut node = Node8::EMPTY;
            let mut boxes = [Aabb::EMPTY; 8];
            for (lane, b) in boxes.iter_mut().enumerate() {
                // A point on the ray, then a box with one corner there (rounded to f32) and a
                // random extent on each axis, sometimes zero. Every other box lies close to the
                // origin compared with the origin's distance from 0, where the rounding of `o·inv`
                // is large against the box's distances (the widening `Δ` must cover it); one in
                // four lies a thousand times farther off, where the relative rounding of the
                // distances outgrows `Δ` (the exit factor must cover it).
                let distance = [1.0, 1e-3, 1e3, 1e-3][lane % 4];
                let t = rng.range(0.0, 4.0) * distance * scale / d.length().max(1e-30);
                let p = o + d * t;
                let ext = rng.unit3a() * scale * 0.01 * (lane % 3) as f32;
                let dir = Vec3A::new(
                    if rng.unit() < 0.5 { 1.0 } else { -1.0 },
                    if rng.unit() < 0.5 { 1.0 } else { -1.0 },
                    if rng.unit() < 0.5 { 1.0 } else { -1.0 },
                );
                let q = p + ext * dir;
                *b = Aabb::new(p.min(q), p.max(q));
                node.set(lane, ChildRef::leaf(lane as u32), b);
            }
            let (exact, exact_near) = Ray8::<L>::new(&ray, Vec3A::ZERO).test::<false>(&node, ray.tmax);
            // Levels without FMA have no fused form: the exact one is checked twice.
            let (mask, near) =
                FusedRay8::<L>::new(&ray).map_or((exact, exact_near), |f| f.test::<false>(&node, ray.tmax));
            let (near, exact_near) = (near.to_array(), exact_near.to_array());
            for (lane, b) in boxes.iter().enumerate() {
                if let Some(e) = entry(&ray, b) {
                    grazed += 1;
                    assert!(mask & (1 << lane) != 0, "fused test culled lane {lane}: {ray:?} {b:?}");
                    assert!(exact & (1 << lane) != 0, "exact test culled lane {lane}: {ray:?} {b:?}");
                    // The entry distance may not exceed the exact one by more than the slab
                    // test's relative error: the traversal drops a waiting child whose entry lies
                    // beyond the nearest hit so far.
                    let bound = e + e.abs() * 8.0 * 2f64.powi(-24);
                    assert!(near[lane] as f64 <= bound, "fused entry {} > {e}: {ray:?} {b:?}", near[lane]);
                    assert!(exact_near[lane] as f64 <= bound, "exact entry {} > {e}: {ray:?} {b:?}", exact_near[lane]);
                }
            }
        }
        assert!(grazed > 80_000, "too few touching boxes to mean anything: {grazed}");
    }

    /// No box that lies wholly behind the ray's range is entered, by either form: the integer
    /// maximum of the fused form must not make an entry distance earlier than every axis's (it
    /// would, with a negative `tmin` among its operands, and every box behind the origin would be
    /// visited; the conservativeness test above cannot see that).
    #[test]
    fn boxes_behind_the_range_are_not_entered() {
        at_every_level!(not_behind);
    }

    #[inline(always)]
    fn not_behind<L: Lanes8>() {
        let mut rng = Rng(0xbe41_0d00);
        let mut tested = 0;
        for i in 0..20_000 {
            let scale = [1.0f32, 1e3, 1e5][i % 3];
            let o = rng.unit3a() * 2.0 * scale - Vec3A::splat(scale);
            let d = (rng.unit3a() - Vec3A::splat(0.5)) * [1.0f32, 1e-3, 1e3][i % 3];
            // Ranges starting at, before and after the origin.
            let tmin = [0.0f32, -0.0, 1.0, -1.0][i % 4] * scale / d.length().max(1e-30);
            let ray = Ray::new(o, d).with_range(tmin, f32::INFINITY);
            if ray.validate().is_err() {
                continue;
            }
            let mut node = Node8::EMPTY;
            for lane in 0..8 {
                // A box around a point of the ray's line well before `tmin`, smaller than its
                // distance from the range's start.
                let back = rng.range(0.05, 4.0) * scale / d.length().max(1e-30);
                let p = o + d * (tmin - back);
                let half = Vec3A::splat(rng.range(0.0, 0.02) * scale);
                node.set(lane, ChildRef::leaf(lane as u32), &Aabb::new(p - half, p + half));
            }
            let (exact, _) = Ray8::<L>::new(&ray, Vec3A::ZERO).test::<false>(&node, ray.tmax);
            let fused = FusedRay8::<L>::new(&ray).map_or(exact, |f| f.test::<false>(&node, ray.tmax).0);
            assert_eq!(exact, 0, "exact test entered a box behind the range: {ray:?}");
            assert_eq!(fused, 0, "fused test entered a box behind the range: {ray:?}");
            tested += 1;
        }
        assert!(tested > 15_000, "{tested}");
    }
}
