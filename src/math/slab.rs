//! The slab test: one implementation, shared by 2D and 3D, by the scalar reference path and (lane
//! for lane, in the same operation order) by the SIMD node tests.
//!
//! The test follows Bullet's `btRayAabb2` (after Williams, Barrus, Morley and Shirley, "An
//! Efficient and Robust Ray–Box Intersection Algorithm", JGT 2005): the ray carries its inverse
//! direction and one sign bit per axis, and the sign bit indexes the `[min, max]` pair to pick the
//! near and the far plane, so no branch depends on the direction.
//!
//! Two robustness rules make it safe for every input a user can build:
//!
//! * **Parallel axes.** A direction component of `±0.0` gives `inv_dir = ±inf`. When the origin lies
//!   exactly in a slab plane, `(plane - origin) * inv_dir` is `0 * inf = NaN`. The running maximum
//!   and minimum are written as `if t > acc { t } else { acc }`, which keeps the accumulator when
//!   `t` is NaN: that axis then places no constraint, and a ray lying in a face of the box counts as
//!   touching it. Every fold, scalar or SIMD, goes through [`max_keep`] and [`min_keep`], which
//!   follow this rule on every target (see [`KeepLanes`]), so all paths give bit-identical answers.
//! * **Rounding.** Each far distance is multiplied by `1 + 2γ(3)` (Ize, "Robust BVH Ray
//!   Traversal", JCGT 2013; γ(n) = nε/(1 − nε) as in Pharr, Jakob and Humphreys, PBRT 3.9.2), which
//!   bounds the rounding error of `(plane - origin) * inv_dir` with a rounded `inv_dir`. A box the
//!   ray touches is therefore never culled by rounding; at worst a box missed by less than the
//!   error bound is visited.

/// γ(n) = nε / (1 − nε) with ε = 2⁻²⁴, the relative error bound of n chained f32 operations.
const fn gamma(n: u32) -> f32 {
    let e = f32::EPSILON * 0.5;
    (n as f32 * e) / (1.0 - n as f32 * e)
}

/// `1 + 2γ(3)`: the factor applied to far slab distances (Ize 2013).
pub const FAR_PAD: f32 = 1.0 + 2.0 * gamma(3);

/// The running maximum and minimum of the slab test, lane by lane, with one NaN rule on every
/// target: **the candidate wins only when it compares strictly better than the accumulator**.
///
/// * `max_keep(candidate, acc)` is `if candidate > acc { candidate } else { acc }`;
/// * `min_keep(candidate, acc)` is `if candidate < acc { candidate } else { acc }`.
///
/// What the slab test relies on:
///
/// * a NaN candidate (`0 · inf`, a ray lying in a slab plane) keeps the accumulator, so that axis
///   places no constraint;
/// * the accumulator starts at the ray's `tmin` and `tmax`, which are never NaN, so it never is;
/// * `±inf` candidates compare as usual (an infinite inverse direction off the plane gives
///   `±inf`, which culls or admits the whole axis);
/// * of `+0` and `-0`, which compare equal, the accumulator is kept, so every target returns the
///   same bits.
///
/// This is the operand order of x86's `maxps`/`minps` (`dst = a > b ? a : b`), so on x86 each
/// fold is one instruction. Other targets' native maximum does not follow it (NEON's `fmax`
/// returns NaN, WebAssembly's `pmax` and `wide`'s scalar fallback return the NaN operand when it
/// comes first), so there the fold is a comparison and a select. Every slab-test fold, scalar
/// or SIMD, goes through this trait; never through `fast_max`/`fast_min` directly, whose NaN
/// result `wide` leaves to the target.
pub(crate) trait KeepLanes: Copy {
    /// `if candidate > acc { candidate } else { acc }`, lane by lane.
    fn max_keep(candidate: Self, acc: Self) -> Self;
    /// `if candidate < acc { candidate } else { acc }`, lane by lane.
    fn min_keep(candidate: Self, acc: Self) -> Self;
}

impl KeepLanes for f32 {
    #[inline(always)]
    fn max_keep(candidate: f32, acc: f32) -> f32 {
        if candidate > acc { candidate } else { acc }
    }

    #[inline(always)]
    fn min_keep(candidate: f32, acc: f32) -> f32 {
        if candidate < acc { candidate } else { acc }
    }
}

/// Whether `wide`'s `fast_max`/`fast_min` are x86's `maxps`/`minps` (SSE, which `wide` uses for
/// both widths, or AVX for eight lanes), whose operand order is the rule.
const NATIVE_KEEPS: bool = cfg!(all(any(target_arch = "x86", target_arch = "x86_64"), target_feature = "sse"));

/// The SIMD implementations: one instruction where the target's maximum follows the rule, a
/// comparison and a select elsewhere (the branch is on a constant).
macro_rules! keep_lanes_simd {
    ($($t:ty),*) => {$(
        impl KeepLanes for $t {
            #[inline(always)]
            fn max_keep(candidate: $t, acc: $t) -> $t {
                if NATIVE_KEEPS { candidate.fast_max(acc) } else { candidate.simd_gt(acc).select(candidate, acc) }
            }

            #[inline(always)]
            fn min_keep(candidate: $t, acc: $t) -> $t {
                if NATIVE_KEEPS { candidate.fast_min(acc) } else { candidate.simd_lt(acc).select(candidate, acc) }
            }
        }
    )*};
}
keep_lanes_simd!(wide::f32x4, wide::f32x8);

/// The slab test's running maximum: `candidate` if it is greater than `acc`, else `acc` (a NaN
/// candidate keeps `acc`). The rule, and why, is on [`KeepLanes`].
#[inline(always)]
pub(crate) fn max_keep<T: KeepLanes>(candidate: T, acc: T) -> T {
    T::max_keep(candidate, acc)
}

/// The slab test's running minimum: `candidate` if it is less than `acc`, else `acc` (a NaN
/// candidate keeps `acc`). The rule, and why, is on [`KeepLanes`].
#[inline(always)]
pub(crate) fn min_keep<T: KeepLanes>(candidate: T, acc: T) -> T {
    T::min_keep(candidate, acc)
}

/// The interval of a ray inside a box, as the slab test computes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlabInterval {
    /// Entry distance, at least the ray's starting value.
    pub near: f32,
    /// Exit distance (padded), at most the ray's `tmax`.
    pub far: f32,
    /// The axis whose plane gave `near`, or `N` (the dimension) when the start value was kept,
    /// which means the ray starts inside every slab.
    pub entry_axis: usize,
}

impl SlabInterval {
    /// `true` when the ray touches the box within its range. The entry must be finite: an
    /// interval `[inf, inf]` (a zero-length ray beside the box, or a direction so small that the
    /// box lies beyond f32's range of t) is not a hit.
    #[inline(always)]
    pub fn is_hit(&self) -> bool {
        self.near <= self.far && self.near < f32::INFINITY
    }
}

/// The slab test in N dimensions: the single implementation behind [`ray_aabb2`], the 2D ray cast
/// and the box cast.
///
/// `bounds` is `[min, max]`, `neg[a]` is 1 when the direction is negative on axis `a` (its sign
/// bit, so `-0.0` counts as negative), and the interval starts as `[near0, far0]`.
#[inline(always)]
pub fn slab_interval<const N: usize>(
    bounds: [[f32; N]; 2],
    origin: [f32; N],
    inv_dir: [f32; N],
    neg: [u8; N],
    near0: f32,
    far0: f32,
) -> SlabInterval {
    let mut near = near0;
    let mut far = far0;
    let mut entry_axis = N;
    for a in 0..N {
        let s = neg[a] as usize;
        let t_near = (bounds[s][a] - origin[a]) * inv_dir[a];
        let t_far = (bounds[1 - s][a] - origin[a]) * inv_dir[a] * FAR_PAD;
        if t_near > near {
            entry_axis = a;
        }
        near = max_keep(t_near, near);
        far = min_keep(t_far, far);
    }
    SlabInterval { near, far, entry_axis }
}

/// A ray that can be tested against its dimension's box with [`ray_aabb2`].
pub trait SlabRay {
    /// The box type of the same dimension.
    type Bounds;
    /// The slab interval of this ray within `bounds`, clipped to the ray's `[tmin, tmax]`.
    fn slab(&self, bounds: &Self::Bounds) -> SlabInterval;
}

/// Bullet's `btRayAabb2`, branchless and conservative: the entry distance of `ray` into `bounds`
/// within `[tmin, tmax]`, or `None` when the ray misses.
///
/// The entry distance is `tmin` when the ray starts inside the box.
///
/// ```
/// use slabtree::{ray_aabb2, Aabb, Ray};
/// use glam::Vec3A;
/// let b = Aabb::new(Vec3A::splat(-1.0), Vec3A::splat(1.0));
/// let r = Ray::new(Vec3A::new(-5.0, 0.0, 0.0), Vec3A::X);
/// assert_eq!(ray_aabb2(&r, &b), Some(4.0));
/// // A ray lying exactly in the face y = 1, with a direction of exactly zero on y:
/// let grazing = Ray::new(Vec3A::new(-5.0, 1.0, 0.0), Vec3A::X);
/// assert_eq!(ray_aabb2(&grazing, &b), Some(4.0));
/// ```
#[inline]
pub fn ray_aabb2<R: SlabRay>(ray: &R, bounds: &R::Bounds) -> Option<f32> {
    let s = ray.slab(bounds);
    s.is_hit().then_some(s.near)
}

#[cfg(test)]
mod tests {
    use super::*;

    const _: () = assert!(FAR_PAD > 1.0 && FAR_PAD < 1.0 + 8.0 * f32::EPSILON);

    /// Values that take every branch of the rule: NaN (both signs), infinities, signed zeros,
    /// subnormals, the extremes and ordinary numbers.
    const SPECIAL: [f32; 14] = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        1e-40,
        -1e-40,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        0.5,
    ];

    /// Every ordered pair of [`SPECIAL`] values as (candidate, accumulator).
    fn pairs() -> Vec<(f32, f32)> {
        SPECIAL.iter().flat_map(|&c| SPECIAL.iter().map(move |&a| (c, a))).collect()
    }

    /// The rule, written out: the candidate's bits when it compares strictly better, else the
    /// accumulator's (so a NaN on either side, and the second of two equal zeros, keep `acc`).
    fn rule(c: f32, a: f32, better: fn(f32, f32) -> bool) -> u32 {
        if better(c, a) { c.to_bits() } else { a.to_bits() }
    }

    /// Each lane width against the rule, bit for bit, on every pair, so that the SIMD folds of
    /// the slab test give the scalar test's answers on every target (NEON's and WebAssembly's
    /// native maximum do not follow it).
    fn check<T: KeepLanes, const N: usize>(new: fn([f32; N]) -> T, get: fn(T) -> [f32; N]) {
        let pairs = pairs();
        for chunk in pairs.chunks(N) {
            let (mut c, mut a) = ([0.0; N], [0.0; N]);
            for (k, &(ck, ak)) in chunk.iter().enumerate() {
                (c[k], a[k]) = (ck, ak);
            }
            let (hi, lo) = (get(max_keep(new(c), new(a))), get(min_keep(new(c), new(a))));
            for k in 0..chunk.len() {
                assert_eq!(
                    hi[k].to_bits(),
                    rule(c[k], a[k], |x, y| x > y),
                    "max_keep({:?}, {:?}) = {:?}",
                    c[k],
                    a[k],
                    hi[k]
                );
                assert_eq!(
                    lo[k].to_bits(),
                    rule(c[k], a[k], |x, y| x < y),
                    "min_keep({:?}, {:?}) = {:?}",
                    c[k],
                    a[k],
                    lo[k]
                );
            }
        }
    }

    #[test]
    fn keep_rule_holds_for_scalars() {
        check::<f32, 1>(|[v]| v, |v| [v]);
    }

    #[test]
    fn keep_rule_holds_for_four_lanes() {
        check::<wide::f32x4, 4>(wide::f32x4::new, wide::f32x4::to_array);
    }

    #[test]
    fn keep_rule_holds_for_eight_lanes() {
        check::<wide::f32x8, 8>(wide::f32x8::new, wide::f32x8::to_array);
    }

    /// The cases the slab test leans on, spelled out: a NaN distance (`0 · inf`, a ray in a slab
    /// plane) places no constraint, and an infinite one culls or admits the whole axis.
    #[test]
    fn nan_candidate_keeps_accumulator() {
        assert_eq!(max_keep(f32::NAN, 1.0), 1.0);
        assert_eq!(min_keep(f32::NAN, 1.0), 1.0);
        assert_eq!(max_keep(f32::INFINITY, 1.0), f32::INFINITY);
        assert_eq!(min_keep(f32::NEG_INFINITY, 1.0), f32::NEG_INFINITY);
        assert_eq!(max_keep(f32::NEG_INFINITY, 1.0), 1.0);
        assert_eq!(max_keep(2.0, 1.0), 2.0);
        assert_eq!(min_keep(0.5, 1.0), 0.5);
        let lanes = max_keep(wide::f32x8::splat(f32::NAN), wide::f32x8::splat(3.0));
        assert_eq!(lanes.to_array(), [3.0; 8]);
    }

    /// A ray lying in the face plane `y = 1` of the unit box, with a zero direction on y, touches
    /// it; off the plane by one ulp it misses.
    #[test]
    fn ray_in_a_face_plane_touches() {
        use crate::math::{Aabb, Ray};
        use glam::Vec3A;
        let b = Aabb::new(Vec3A::splat(-1.0), Vec3A::splat(1.0));
        let touching = Ray::new(Vec3A::new(-5.0, 1.0, 0.0), Vec3A::X);
        assert_eq!(ray_aabb2(&touching, &b), Some(4.0));
        let beside = Ray::new(Vec3A::new(-5.0, f32::from_bits(1.0f32.to_bits() + 1), 0.0), Vec3A::X);
        assert_eq!(ray_aabb2(&beside, &b), None);
    }
}
