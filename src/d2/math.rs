//! The small 2D algebra of Box2D v3 (`math_functions.h`), written out operation by operation.
//!
//! Box2D's results depend on the exact order of its `f32` operations, so every helper here spells
//! out the same expression tree as the C inline it mirrors (`b2Dot`, `b2Cross`, `b2Lerp`,
//! `b2TransformPoint`, ...) instead of calling `glam` methods whose internal order may differ
//! (`Vec2::lerp`, for one, is `a + (b - a) * t`, not Box2D's `(1 - t) * a + t * b`). No helper uses
//! `f32::mul_add`: Box2D is built with `-ffp-contract=off`, and Rust never contracts `a * b + c`
//! itself. (`add_scaled` is Box2D's `b2MulAdd`: a multiply and an add, two roundings.)

use glam::Vec2;

/// Box2D's `B2_PI` (`3.14159265359f`, the same `f32` as [`std::f32::consts::PI`]).
pub const PI: f32 = std::f32::consts::PI;

/// A rotation stored as its cosine and sine, Box2D's `b2Rot`.
///
/// The rotation matrix has columns `(c, s)` and `(-s, c)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rot {
    /// Cosine of the angle.
    pub c: f32,
    /// Sine of the angle.
    pub s: f32,
}

impl Rot {
    /// The identity rotation.
    pub const IDENTITY: Rot = Rot { c: 1.0, s: 0.0 };

    /// A rotation from an angle in radians with Box2D's deterministic `b2MakeRot`
    /// (Bhāskara I's approximation, then normalised; see [`compute_cos_sin`]).
    ///
    /// ```
    /// use slabtree::d2::Rot;
    /// let q = Rot::from_angle(1.0e-6);
    /// assert_eq!((q.c, q.s), (1.0, 1.0185915e-6)); // Box2D's value, not libm's sin(1e-6)
    /// ```
    #[inline]
    pub fn from_angle(radians: f32) -> Rot {
        let (c, s) = compute_cos_sin(radians);
        Rot { c, s }
    }

    /// A rotation from a cosine and sine pair taken as given (no normalisation), for example the
    /// exact values a recorded simulation used.
    #[inline]
    pub const fn from_cos_sin(c: f32, s: f32) -> Rot {
        Rot { c, s }
    }

    /// `q * v` (`b2RotateVector`).
    #[inline]
    pub fn rotate(self, v: Vec2) -> Vec2 {
        Vec2::new(self.c * v.x - self.s * v.y, self.s * v.x + self.c * v.y)
    }

    /// `q⁻¹ * v` (`b2InvRotateVector`).
    #[inline]
    pub fn inv_rotate(self, v: Vec2) -> Vec2 {
        Vec2::new(self.c * v.x + self.s * v.y, -self.s * v.x + self.c * v.y)
    }

    /// `a⁻¹ * b` (`b2InvMulRot`).
    #[inline]
    pub fn inv_mul(self, b: Rot) -> Rot {
        Rot { s: self.c * b.s - self.s * b.c, c: self.c * b.c + self.s * b.s }
    }

    /// The rotation scaled back to unit length (`b2NormalizeRot`); the zero rotation stays zero.
    #[inline]
    #[must_use]
    pub fn normalize(self) -> Rot {
        let mag = (self.s * self.s + self.c * self.c).sqrt();
        let inv_mag = if mag > 0.0 { 1.0 / mag } else { 0.0 };
        Rot { c: self.c * inv_mag, s: self.s * inv_mag }
    }

    /// `true` when `c² + s²` is within Box2D's tolerance (6e-4) of 1 (`b2IsNormalizedRot`).
    #[inline]
    pub fn is_normalized(self) -> bool {
        let qq = self.s * self.s + self.c * self.c;
        1.0 - 0.0006 < qq && qq < 1.0 + 0.0006
    }
}

impl std::ops::Mul for Rot {
    type Output = Rot;

    /// `a * b`, the rotation by `b` then by `a` (`b2MulRot`).
    #[inline]
    fn mul(self, b: Rot) -> Rot {
        Rot { s: self.s * b.c + self.c * b.s, c: self.c * b.c - self.s * b.s }
    }
}

/// A rigid transform, Box2D's `b2Transform`: a point `v` maps to `q * v + p`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Translation.
    pub p: Vec2,
    /// Rotation.
    pub q: Rot,
}

impl Transform {
    /// The identity transform.
    pub const IDENTITY: Transform = Transform { p: Vec2::ZERO, q: Rot::IDENTITY };

    /// A transform from a translation and a rotation.
    #[inline]
    pub const fn new(p: Vec2, q: Rot) -> Transform {
        Transform { p, q }
    }

    /// `q * v + p` (`b2TransformPoint`).
    #[inline]
    pub fn apply(self, v: Vec2) -> Vec2 {
        let x = (self.q.c * v.x - self.q.s * v.y) + self.p.x;
        let y = (self.q.s * v.x + self.q.c * v.y) + self.p.y;
        Vec2::new(x, y)
    }

    /// `q⁻¹ * (v - p)` (`b2InvTransformPoint`).
    #[inline]
    pub fn apply_inverse(self, v: Vec2) -> Vec2 {
        let vx = v.x - self.p.x;
        let vy = v.y - self.p.y;
        Vec2::new(self.q.c * vx + self.q.s * vy, -self.q.s * vx + self.q.c * vy)
    }

    /// The pose of frame `b` in this frame, `self⁻¹ * b` (`b2InvMulTransforms`): what the pair
    /// queries ([`crate::d2::collide_polygons`], [`crate::d2::shape_distance`]) take.
    #[inline]
    pub fn inv_mul(self, b: Transform) -> Transform {
        Transform { q: self.q.inv_mul(b.q), p: self.q.inv_rotate(sub(b.p, self.p)) }
    }
}

/// Box2D's `b2ComputeCosSin`: cosine and sine from Bhāskara I's rational approximation, then
/// normalised. Deterministic across platforms (no libm), and what `b2MakeRot` uses.
pub fn compute_cos_sin(radians: f32) -> (f32, f32) {
    let x = unwind_angle(radians);
    let pi2 = PI * PI;

    // cosine needs angle in [-pi/2, pi/2]
    let c = if x < -0.5 * PI {
        let y = x + PI;
        let y2 = y * y;
        -(pi2 - 4.0 * y2) / (pi2 + y2)
    } else if x > 0.5 * PI {
        let y = x - PI;
        let y2 = y * y;
        -(pi2 - 4.0 * y2) / (pi2 + y2)
    } else {
        let y2 = x * x;
        (pi2 - 4.0 * y2) / (pi2 + y2)
    };

    // sine needs angle in [0, pi]
    let s = if x < 0.0 {
        let y = x + PI;
        -16.0 * y * (PI - y) / (5.0 * pi2 - 4.0 * y * (PI - y))
    } else {
        16.0 * x * (PI - x) / (5.0 * pi2 - 4.0 * x * (PI - x))
    };

    let mag = (s * s + c * c).sqrt();
    let inv_mag = if mag > 0.0 { 1.0 / mag } else { 0.0 };
    (c * inv_mag, s * inv_mag)
}

/// Any angle into `[-π, π]` (`b2UnwindAngle`, which is `remainderf(radians, 2π)`).
pub fn unwind_angle(radians: f32) -> f32 {
    remainder(radians, 2.0 * PI)
}

/// The IEEE 754 remainder `x - n·y` with `n` the integer nearest `x / y` (ties to even), as C's
/// `remainderf`, for `y > 0`. The result is exact.
fn remainder(x: f32, y: f32) -> f32 {
    if !x.is_finite() {
        return f32::NAN;
    }
    // `%` is C's fmodf: exact, with the sign of x and |r| < y.
    let r = x % y;
    let half = 0.5 * y;
    // Parity of the truncated quotient, only needed on an exact tie.
    let odd = || (((x as f64 - r as f64) / y as f64).round() as i64) & 1 == 1;
    // Both adjustments are exact (Sterbenz: y/2 <= |r| < y).
    if r > half || (r == half && odd()) {
        r - y
    } else if r < -half || (r == -half && odd()) {
        r + y
    } else {
        r
    }
}

// The operator helpers below mirror Box2D's inlines exactly; see the module docs.

#[inline(always)]
pub(crate) fn dot(a: Vec2, b: Vec2) -> f32 {
    a.x * b.x + a.y * b.y
}

#[inline(always)]
pub(crate) fn cross(a: Vec2, b: Vec2) -> f32 {
    a.x * b.y - a.y * b.x
}

/// `b2CrossVS(v, s) = (s * v.y, -s * v.x)`.
#[inline(always)]
pub(crate) fn cross_vs(v: Vec2, s: f32) -> Vec2 {
    Vec2::new(s * v.y, -s * v.x)
}

/// `b2CrossSV(s, v) = (-s * v.y, s * v.x)`.
#[inline(always)]
pub(crate) fn cross_sv(s: f32, v: Vec2) -> Vec2 {
    Vec2::new(-s * v.y, s * v.x)
}

#[inline(always)]
pub(crate) fn add(a: Vec2, b: Vec2) -> Vec2 {
    Vec2::new(a.x + b.x, a.y + b.y)
}

#[inline(always)]
pub(crate) fn sub(a: Vec2, b: Vec2) -> Vec2 {
    Vec2::new(a.x - b.x, a.y - b.y)
}

#[inline(always)]
pub(crate) fn neg(a: Vec2) -> Vec2 {
    Vec2::new(-a.x, -a.y)
}

/// Box2D's `b2MulAdd(a, s, b) = a + s * b`, two roundings per component (no FMA).
#[inline(always)]
pub(crate) fn add_scaled(a: Vec2, s: f32, b: Vec2) -> Vec2 {
    Vec2::new(a.x + s * b.x, a.y + s * b.y)
}

/// Box2D's `b2MulSub(a, s, b) = a - s * b`.
#[inline(always)]
pub(crate) fn sub_scaled(a: Vec2, s: f32, b: Vec2) -> Vec2 {
    Vec2::new(a.x - s * b.x, a.y - s * b.y)
}

/// `b2Lerp(a, b, t) = (1 - t) * a + t * b`.
#[inline(always)]
pub(crate) fn lerp(a: Vec2, b: Vec2, t: f32) -> Vec2 {
    Vec2::new((1.0 - t) * a.x + t * b.x, (1.0 - t) * a.y + t * b.y)
}

#[inline(always)]
pub(crate) fn distance(a: Vec2, b: Vec2) -> f32 {
    let dx = b.x - a.x;
    let dy = b.y - a.y;
    (dx * dx + dy * dy).sqrt()
}

#[inline(always)]
pub(crate) fn distance_squared(a: Vec2, b: Vec2) -> f32 {
    let cx = b.x - a.x;
    let cy = b.y - a.y;
    cx * cx + cy * cy
}

/// `b2Normalize`: the unit vector, or zero when the length is below `FLT_EPSILON`.
#[inline(always)]
pub(crate) fn normalize(v: Vec2) -> Vec2 {
    let length = (v.x * v.x + v.y * v.y).sqrt();
    if length < f32::EPSILON {
        return Vec2::ZERO;
    }
    let inv_length = 1.0 / length;
    Vec2::new(inv_length * v.x, inv_length * v.y)
}

/// `b2AbsFloat`.
#[inline(always)]
pub(crate) fn abs_f(a: f32) -> f32 {
    if a < 0.0 { -a } else { a }
}

/// `b2MinFloat`.
#[inline(always)]
pub(crate) fn min_f(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// `b2MaxFloat`.
#[inline(always)]
pub(crate) fn max_f(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// `b2ClampFloat`.
#[inline(always)]
pub(crate) fn clamp_f(a: f32, lower: f32, upper: f32) -> f32 {
    if a < lower {
        lower
    } else if a > upper {
        upper
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remainder_matches_definition() {
        let y = 2.0 * PI;
        for &x in &[0.0f32, -0.0, 1.0, -1.0, 3.2, -3.2, 6.3, 100.0, -100.0, PI, -PI, 1e6] {
            let r = remainder(x, y);
            assert!(r.abs() <= 0.5 * y, "{x} -> {r}");
            // x - r is a multiple of y (checked in f64).
            let n = (x as f64 - r as f64) / y as f64;
            assert!((n - n.round()).abs() < 1e-6, "{x}: n = {n}");
        }
        assert!(remainder(-0.0, y).is_sign_negative());
    }

    #[test]
    fn rotation_round_trip() {
        let q = Rot::from_angle(0.7);
        let v = Vec2::new(0.3, -1.2);
        let w = q.inv_rotate(q.rotate(v));
        assert!((w - v).length() < 1e-6);
        let xf = Transform::new(Vec2::new(1.0, 2.0), q);
        assert!((xf.apply_inverse(xf.apply(v)) - v).length() < 1e-6);
    }
}
