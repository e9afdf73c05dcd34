//! Rays in 3D ([`Ray`]) and 2D ([`Ray2`]), carrying their precomputed inverse direction and sign
//! bits so that every slab test is a subtract and a multiply per plane.

use glam::{Vec2, Vec3, Vec3A};

use super::aabb::{Aabb, Aabb2};
use super::error::BatchError;
use super::error::InputError;
use super::slab::{SlabInterval, SlabRay, slab_interval};

/// A ray `origin + t * dir` for `t` in `[tmin, tmax]`.
///
/// The direction need not be normalised: `t` is measured in units of `dir`, so a segment from
/// `a` to `b` is `Ray::segment(a, b)` with `t` in `[0, 1]`. A zero direction is allowed and makes
/// the ray a point query.
///
/// ```
/// use slabtree::Ray;
/// use glam::Vec3A;
/// let r = Ray::new(Vec3A::ZERO, Vec3A::new(0.0, -2.0, 0.0)).with_range(0.0, 10.0);
/// assert_eq!(r.sign(), [0, 1, 0]);
/// assert_eq!(r.inv_dir().y, -0.5);
/// assert_eq!(r.at(1.5), Vec3A::new(0.0, -3.0, 0.0));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(from = "RayParts", into = "RayParts"))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray {
    origin: Vec3A,
    dir: Vec3A,
    inv_dir: Vec3A,
    sign: [u8; 3],
    /// Start of the valid range of `t`.
    pub tmin: f32,
    /// End of the valid range of `t` (may be `+inf`).
    pub tmax: f32,
}

impl Ray {
    /// A ray with `t` in `[0, +inf)`.
    #[inline]
    pub fn new(origin: impl Into<Vec3A>, dir: impl Into<Vec3A>) -> Ray {
        let (origin, dir) = (origin.into(), dir.into());
        let inv_dir = Vec3A::ONE / dir;
        let sign = [
            inv_dir.x.is_sign_negative() as u8,
            inv_dir.y.is_sign_negative() as u8,
            inv_dir.z.is_sign_negative() as u8,
        ];
        Ray { origin, dir, inv_dir, sign, tmin: 0.0, tmax: f32::INFINITY }
    }

    /// The segment from `a` to `b`: direction `b - a`, `t` in `[0, 1]`.
    #[inline]
    pub fn segment(a: impl Into<Vec3A>, b: impl Into<Vec3A>) -> Ray {
        let a = a.into();
        Ray::new(a, b.into() - a).with_range(0.0, 1.0)
    }

    /// The same ray with `t` limited to `[tmin, tmax]`.
    #[inline]
    #[must_use]
    pub fn with_range(mut self, tmin: f32, tmax: f32) -> Ray {
        self.tmin = tmin;
        self.tmax = tmax;
        self
    }

    /// The origin.
    #[inline]
    pub fn origin(&self) -> Vec3A {
        self.origin
    }

    /// The direction, as given.
    #[inline]
    pub fn dir(&self) -> Vec3A {
        self.dir
    }

    /// `1 / dir` per component; `±inf` where the direction is `±0`.
    #[inline]
    pub fn inv_dir(&self) -> Vec3A {
        self.inv_dir
    }

    /// One per axis: 1 when the direction's sign bit is set (`-0.0` included), else 0.
    #[inline]
    pub fn sign(&self) -> [u8; 3] {
        self.sign
    }

    /// The point at parameter `t`.
    #[inline]
    pub fn at(&self, t: f32) -> Vec3A {
        self.origin + self.dir * t
    }

    /// `Ok` when origin and direction are finite, `tmin` is finite, `tmax` is not NaN and
    /// `tmin <= tmax`. Queries call this first and refuse invalid rays with the error.
    /// Inlined: out of line, it read `tmin` and `tmax` with one 8-byte load just after the
    /// caller had stored them with two 4-byte stores, and waited on store forwarding (a tenth
    /// of a bunny primary ray's time, `perf record -e cpu-clock`).
    #[inline]
    pub fn validate(&self) -> Result<(), InputError> {
        if !(self.origin.is_finite() && self.dir.is_finite()) {
            return Err(InputError::NonFiniteRay { origin: self.origin.into(), dir: self.dir.into() });
        }
        if !(self.tmin.is_finite() && !self.tmax.is_nan() && self.tmin <= self.tmax) {
            return Err(InputError::InvalidRayRange { tmin: self.tmin, tmax: self.tmax });
        }
        Ok(())
    }

    /// [`Ray::validate`]'s verdict alone, without a branch: for a batch's check of every ray
    /// before it starts, where rays are almost always valid and only the first invalid one needs
    /// its error. `abs(x) < inf` is `false` for NaN, as `is_finite` is.
    #[inline(always)]
    fn is_valid(&self) -> bool {
        let inf = Vec3A::splat(f32::INFINITY);
        let finite = (self.origin.abs().cmplt(inf) & self.dir.abs().cmplt(inf)).all();
        finite & (self.tmin.abs() < f32::INFINITY) & !self.tmax.is_nan() & (self.tmin <= self.tmax)
    }
}

/// Checks every ray of a batch: the first invalid one, with its index, as a [`BatchError`].
pub fn validate_rays(rays: &[Ray]) -> Result<(), BatchError> {
    match rays.iter().position(|r| !r.is_valid()) {
        Some(index) => Err(BatchError { index, error: rays[index].validate().unwrap_err() }),
        None => Ok(()),
    }
}

impl SlabRay for Ray {
    type Bounds = Aabb;
    #[inline(always)]
    fn slab(&self, b: &Aabb) -> SlabInterval {
        slab_interval(
            [b.min.to_array(), b.max.to_array()],
            self.origin.to_array(),
            self.inv_dir.to_array(),
            self.sign,
            self.tmin,
            self.tmax,
        )
    }
}

impl From<Ray> for (Vec3, Vec3) {
    fn from(r: Ray) -> (Vec3, Vec3) {
        (r.origin.into(), r.dir.into())
    }
}

/// A 2D ray `origin + t * dir` for `t` in `[tmin, tmax]`, the twin of [`Ray`].
///
/// ```
/// use slabtree::{Aabb2, Ray2};
/// use glam::Vec2;
/// let b = Aabb2::new(Vec2::new(1.0, -1.0), Vec2::new(2.0, 1.0));
/// let hit = Ray2::segment(Vec2::ZERO, Vec2::new(4.0, 0.0)).cast_aabb(&b).unwrap();
/// assert_eq!(hit.fraction, 0.25);
/// assert_eq!(hit.normal, Vec2::new(-1.0, 0.0));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(from = "Ray2Parts", into = "Ray2Parts"))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray2 {
    origin: Vec2,
    dir: Vec2,
    inv_dir: Vec2,
    sign: [u8; 2],
    /// Start of the valid range of `t`.
    pub tmin: f32,
    /// End of the valid range of `t`.
    pub tmax: f32,
}

/// Where a [`Ray2`] enters an [`Aabb2`]: the fraction, the point and the outward face normal, as
/// Box2D's `b2AABB_RayCast` reports them.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit2 {
    /// The ray parameter of the entry point.
    pub fraction: f32,
    /// The entry point.
    pub point: Vec2,
    /// The unit normal of the entered face, pointing against the ray.
    pub normal: Vec2,
}

impl Ray2 {
    /// A ray with `t` in `[0, +inf)`.
    #[inline]
    pub fn new(origin: Vec2, dir: Vec2) -> Ray2 {
        let inv_dir = Vec2::ONE / dir;
        let sign = [inv_dir.x.is_sign_negative() as u8, inv_dir.y.is_sign_negative() as u8];
        Ray2 { origin, dir, inv_dir, sign, tmin: 0.0, tmax: f32::INFINITY }
    }

    /// The segment from `a` to `b`: `t` in `[0, 1]`, as Box2D's `p1`, `p2` ray input.
    #[inline]
    pub fn segment(a: Vec2, b: Vec2) -> Ray2 {
        Ray2 { tmax: 1.0, ..Ray2::new(a, b - a) }
    }

    /// The same ray with `t` limited to `[tmin, tmax]`.
    #[inline]
    #[must_use]
    pub fn with_range(mut self, tmin: f32, tmax: f32) -> Ray2 {
        self.tmin = tmin;
        self.tmax = tmax;
        self
    }

    /// The origin.
    #[inline]
    pub fn origin(&self) -> Vec2 {
        self.origin
    }

    /// The direction.
    #[inline]
    pub fn dir(&self) -> Vec2 {
        self.dir
    }

    /// `1 / dir` per component.
    #[inline]
    pub fn inv_dir(&self) -> Vec2 {
        self.inv_dir
    }

    /// Sign bits of the direction.
    #[inline]
    pub fn sign(&self) -> [u8; 2] {
        self.sign
    }

    /// `Ok` when the ray is finite and its range is ordered.
    #[inline]
    pub fn validate(&self) -> Result<(), InputError> {
        if !(self.origin.is_finite() && self.dir.is_finite()) {
            return Err(InputError::NonFiniteRay { origin: self.origin.extend(0.0), dir: self.dir.extend(0.0) });
        }
        if !(self.tmin.is_finite() && !self.tmax.is_nan() && self.tmin <= self.tmax) {
            return Err(InputError::InvalidRayRange { tmin: self.tmin, tmax: self.tmax });
        }
        Ok(())
    }

    /// Casts the ray against a box, as Box2D's `b2AABB_RayCast`: the entry fraction, point and
    /// normal, or `None` on a miss. A ray that starts inside the box reports no hit, because it
    /// enters no face. Invalid rays report no hit.
    pub fn cast_aabb(&self, b: &Aabb2) -> Option<RayHit2> {
        if self.validate().is_err() {
            return None;
        }
        // Start the entry distance at -inf so the entering axis is always recorded, then demand
        // that the entry lies in [tmin, tmax].
        let s = slab_interval(
            [b.min.to_array(), b.max.to_array()],
            self.origin.to_array(),
            self.inv_dir.to_array(),
            self.sign,
            f32::NEG_INFINITY,
            self.tmax,
        );
        if !(s.is_hit() && s.near >= self.tmin && s.entry_axis < 2) {
            return None;
        }
        let mut normal = Vec2::ZERO;
        // The entered face faces against the ray: -1 on a positive direction.
        normal[s.entry_axis] = if self.sign[s.entry_axis] == 1 { 1.0 } else { -1.0 };
        Some(RayHit2 { fraction: s.near, point: self.origin + self.dir * s.near, normal })
    }
}

impl SlabRay for Ray2 {
    type Bounds = Aabb2;
    #[inline(always)]
    fn slab(&self, b: &Aabb2) -> SlabInterval {
        slab_interval(
            [b.min.to_array(), b.max.to_array()],
            self.origin.to_array(),
            self.inv_dir.to_array(),
            self.sign,
            self.tmin,
            self.tmax,
        )
    }
}

/// What a serialised [`Ray`] holds: the inverse direction and sign bits are derived again on
/// reading, so a stored ray cannot disagree with itself.
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
struct RayParts {
    origin: Vec3A,
    dir: Vec3A,
    tmin: f32,
    tmax: f32,
}

#[cfg(feature = "serde")]
impl From<RayParts> for Ray {
    fn from(r: RayParts) -> Ray {
        Ray::new(r.origin, r.dir).with_range(r.tmin, r.tmax)
    }
}

#[cfg(feature = "serde")]
impl From<Ray> for RayParts {
    fn from(r: Ray) -> RayParts {
        RayParts { origin: r.origin, dir: r.dir, tmin: r.tmin, tmax: r.tmax }
    }
}

/// What a serialised [`Ray2`] holds (see [`RayParts`]).
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
struct Ray2Parts {
    origin: Vec2,
    dir: Vec2,
    tmin: f32,
    tmax: f32,
}

#[cfg(feature = "serde")]
impl From<Ray2Parts> for Ray2 {
    fn from(r: Ray2Parts) -> Ray2 {
        Ray2::new(r.origin, r.dir).with_range(r.tmin, r.tmax)
    }
}

#[cfg(feature = "serde")]
impl From<Ray2> for Ray2Parts {
    fn from(r: Ray2) -> Ray2Parts {
        Ray2Parts { origin: r.origin, dir: r.dir, tmin: r.tmin, tmax: r.tmax }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch's branch-free check agrees with [`Ray::validate`] on every mix of NaN, infinite,
    /// huge, subnormal, signed-zero and ordinary origins, directions and ranges.
    #[test]
    fn batch_check_agrees_with_validate() {
        let values = [0.0, -0.0, 1.0, -2.5, 1e-40, f32::MAX, f32::MIN, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        let mut checked = 0;
        for &a in &values {
            for &b in &values {
                for axis in 0..3 {
                    let mut v = Vec3A::new(0.5, -1.0, 2.0);
                    v[axis] = a;
                    for (o, d) in [(v, Vec3A::X), (Vec3A::ZERO, v)] {
                        for (tmin, tmax) in [(a, b), (0.0, b), (a, f32::INFINITY)] {
                            let ray = Ray::new(o, d).with_range(tmin, tmax);
                            assert_eq!(ray.is_valid(), ray.validate().is_ok(), "{ray:?}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, values.len() * values.len() * 3 * 2 * 3);
        let bad = [Ray::new(Vec3A::ZERO, Vec3A::X), Ray::new(Vec3A::splat(f32::NAN), Vec3A::X)];
        assert_eq!(validate_rays(&bad).unwrap_err().index, 1);
    }
}
