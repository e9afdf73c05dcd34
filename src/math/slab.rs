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
//!   touching it. This is the same operand order as the x86 `maxps`/`minps` instructions, so the
//!   SIMD paths give bit-identical answers.
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

/// NaN-ignoring maximum with the accumulator second, matching `maxps(candidate, acc)`.
#[inline(always)]
pub fn max_keep(candidate: f32, acc: f32) -> f32 {
    if candidate > acc { candidate } else { acc }
}

/// NaN-ignoring minimum with the accumulator second, matching `minps(candidate, acc)`.
#[inline(always)]
pub fn min_keep(candidate: f32, acc: f32) -> f32 {
    if candidate < acc { candidate } else { acc }
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

    #[test]
    fn nan_candidate_keeps_accumulator() {
        assert_eq!(max_keep(f32::NAN, 1.0), 1.0);
        assert_eq!(min_keep(f32::NAN, 1.0), 1.0);
        assert_eq!(max_keep(2.0, 1.0), 2.0);
        assert_eq!(min_keep(0.5, 1.0), 0.5);
    }
}
