//! Planes and view frustums for culling queries.

use glam::{Mat4, Vec3A, Vec4};

use super::aabb::Aabb;
use super::error::InputError;

/// A plane `normal · p + d = 0`. Points with `normal · p + d >= 0` are on its inner side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plane {
    /// The normal, pointing to the inner side. It need not be unit length.
    pub normal: Vec3A,
    /// The offset.
    pub d: f32,
}

impl Plane {
    /// A plane from its normal and offset.
    pub fn new(normal: impl Into<Vec3A>, d: f32) -> Plane {
        Plane { normal: normal.into(), d }
    }

    /// Signed distance (scaled by `|normal|`) of `p`. Written out term by term, in the order
    /// the SIMD node test uses, so both give the same bits.
    #[inline]
    pub fn signed_distance(&self, p: Vec3A) -> f32 {
        let n = self.normal;
        n.x * p.x + n.y * p.y + n.z * p.z + self.d
    }

    /// `true` when the whole box lies strictly outside the plane. It tests the box corner
    /// furthest along the normal (the "p-vertex", Greene 1994; Ericson 5.2.3): if even that corner
    /// is outside, every corner is.
    #[inline]
    pub fn box_outside(&self, b: &Aabb) -> bool {
        let mask = self.normal.cmpge(Vec3A::ZERO);
        let p = Vec3A::select(mask, b.max, b.min);
        self.signed_distance(p) < 0.0
    }
}

/// Six planes bounding a view volume; a box is visible unless it is outside one of them.
///
/// The test is conservative: a box outside the frustum but straddling two planes near a corner may
/// be reported as visible, never the reverse.
///
/// ```
/// use slabtree::{Aabb, Frustum};
/// use glam::{Mat4, Vec3, Vec3A};
/// let proj = glam::camera::rh::proj::directx::perspective(1.0, 1.0, 0.1, 100.0);
/// let view = glam::camera::rh::view::look_at_mat4(Vec3::new(0.0, 0.0, 10.0), Vec3::ZERO, Vec3::Y);
/// let f = Frustum::from_view_projection(proj * view);
/// assert!(f.may_contain(&Aabb::new(Vec3A::splat(-1.0), Vec3A::splat(1.0))));
/// assert!(!f.may_contain(&Aabb::new(Vec3A::splat(50.0), Vec3A::splat(51.0))));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frustum {
    /// Left, right, bottom, top, near, far (any order works).
    pub planes: [Plane; 6],
}

impl Frustum {
    /// Extracts the six planes of a view-projection matrix with clip depth in `[0, 1]` (the convention of
    /// glam's `camera::rh::proj::directx::perspective`), after Gribb and Hartmann, "Fast Extraction of Viewing Frustum
    /// Planes from the World-View-Projection Matrix" (2001).
    pub fn from_view_projection(m: Mat4) -> Frustum {
        let (r0, r1, r2, r3) = (m.row(0), m.row(1), m.row(2), m.row(3));
        let p = |v: Vec4| Plane { normal: v.truncate().into(), d: v.w };
        Frustum { planes: [p(r3 + r0), p(r3 - r0), p(r3 + r1), p(r3 - r1), p(r2), p(r3 - r2)] }
    }

    /// `false` only when `b` is certainly outside.
    #[inline]
    pub fn may_contain(&self, b: &Aabb) -> bool {
        !self.planes.iter().any(|p| p.box_outside(b))
    }

    /// `Ok` when every plane is finite.
    pub fn validate(&self) -> Result<(), InputError> {
        for (i, p) in self.planes.iter().enumerate() {
            if !(p.normal.is_finite() && p.d.is_finite()) {
                return Err(InputError::NonFinitePlane { index: i });
            }
        }
        Ok(())
    }
}
