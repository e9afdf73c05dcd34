//! Axis-aligned bounding boxes in 3D ([`Aabb`]) and 2D ([`Aabb2`]).

use glam::{Vec2, Vec3, Vec3A};

use super::error::InputError;

/// An axis-aligned bounding box in 3D, stored as its two corners.
///
/// `Vec3A` keeps the corners 16-byte aligned so the hot paths load them with one instruction.
///
/// ```
/// use slabtree::Aabb;
/// use glam::Vec3A;
/// let a = Aabb::new(Vec3A::ZERO, Vec3A::ONE);
/// let b = Aabb::from_center_half_extents(Vec3A::splat(1.5), Vec3A::splat(0.5));
/// assert!(a.overlaps(&b)); // they touch at the corner (1, 1, 1)
/// assert_eq!(a.union(&b).max, Vec3A::splat(2.0));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// The lower corner.
    pub min: Vec3A,
    /// The upper corner.
    pub max: Vec3A,
}

impl Aabb {
    /// The empty box: `min = +inf`, `max = -inf`. It is the identity of [`Aabb::union`], and it
    /// overlaps nothing. It is *not* a valid proxy box (see [`Aabb::validate`]).
    pub const EMPTY: Aabb = Aabb { min: Vec3A::splat(f32::INFINITY), max: Vec3A::splat(f32::NEG_INFINITY) };

    /// A box from its corners. No check is made here; trees check boxes on insertion.
    #[inline]
    pub fn new(min: impl Into<Vec3A>, max: impl Into<Vec3A>) -> Self {
        Aabb { min: min.into(), max: max.into() }
    }

    /// A box from its centre and half-extents.
    #[inline]
    pub fn from_center_half_extents(center: impl Into<Vec3A>, half: impl Into<Vec3A>) -> Self {
        let (c, h) = (center.into(), half.into());
        Aabb { min: c - h, max: c + h }
    }

    /// The smallest box holding every point of `points` ([`Aabb::EMPTY`] for none).
    pub fn from_points(points: impl IntoIterator<Item = Vec3>) -> Self {
        points.into_iter().fold(Aabb::EMPTY, |b, p| b.grow(p.into()))
    }

    /// `Ok` when both corners are finite and `min <= max` on every axis.
    ///
    /// A zero-sized box (a point, a face) is valid. NaN and infinite boxes are refused because a
    /// single one poisons every ancestor's bounds.
    #[inline]
    pub fn validate(&self) -> Result<(), InputError> {
        if !(self.min.is_finite() && self.max.is_finite()) {
            return Err(InputError::NonFiniteAabb { min: self.min.into(), max: self.max.into() });
        }
        if self.min.cmpgt(self.max).any() {
            return Err(InputError::InvertedAabb { min: self.min.into(), max: self.max.into() });
        }
        Ok(())
    }

    /// The smallest box holding both boxes.
    #[inline]
    #[must_use]
    pub fn union(&self, other: &Aabb) -> Aabb {
        Aabb { min: self.min.min(other.min), max: self.max.max(other.max) }
    }

    /// The smallest box holding this box and a point.
    #[inline]
    #[must_use]
    pub fn grow(&self, p: Vec3A) -> Aabb {
        Aabb { min: self.min.min(p), max: self.max.max(p) }
    }

    /// The box grown by `margin` on every side.
    #[inline]
    #[must_use]
    pub fn expand(&self, margin: f32) -> Aabb {
        Aabb { min: self.min - Vec3A::splat(margin), max: self.max + Vec3A::splat(margin) }
    }

    /// The box extended in the direction of `displacement` only, as Bullet's `SignedExpand`:
    /// a box moving by `d` this frame is predicted to sweep `[min + min(d, 0), max + max(d, 0)]`.
    #[inline]
    #[must_use]
    pub fn extend_by_displacement(&self, displacement: Vec3A) -> Aabb {
        Aabb { min: self.min + displacement.min(Vec3A::ZERO), max: self.max + displacement.max(Vec3A::ZERO) }
    }

    /// `true` when the boxes share at least one point (touching counts).
    #[inline]
    pub fn overlaps(&self, other: &Aabb) -> bool {
        (self.min.cmple(other.max) & other.min.cmple(self.max)).all()
    }

    /// `true` when `other` lies inside this box (boundaries included).
    #[inline]
    pub fn contains(&self, other: &Aabb) -> bool {
        (self.min.cmple(other.min) & other.max.cmple(self.max)).all()
    }

    /// `true` when `p` lies inside this box (boundaries included).
    #[inline]
    pub fn contains_point(&self, p: Vec3A) -> bool {
        (self.min.cmple(p) & p.cmple(self.max)).all()
    }

    /// The centre point.
    #[inline]
    pub fn center(&self) -> Vec3A {
        (self.min + self.max) * 0.5
    }

    /// Half the size on each axis.
    #[inline]
    pub fn half_extents(&self) -> Vec3A {
        (self.max - self.min) * 0.5
    }

    /// The surface area, the cost metric of the surface area heuristic (MacDonald and Booth 1990).
    /// The empty box has area 0.
    #[inline]
    pub fn surface_area(&self) -> f32 {
        let d = (self.max - self.min).max(Vec3A::ZERO);
        2.0 * (d.x * d.y + d.y * d.z + d.z * d.x)
    }

    /// Half the surface area. Builders compare costs, so the factor 2 is dropped there.
    #[inline]
    pub fn half_area(&self) -> f32 {
        let d = (self.max - self.min).max(Vec3A::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }
}

/// An axis-aligned bounding box in 2D, the twin of [`Aabb`] for the 2D modules.
///
/// ```
/// use slabtree::Aabb2;
/// use glam::Vec2;
/// let b = Aabb2::new(Vec2::ZERO, Vec2::new(2.0, 1.0));
/// assert_eq!(b.perimeter(), 6.0);
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb2 {
    /// The lower corner.
    pub min: Vec2,
    /// The upper corner.
    pub max: Vec2,
}

impl Aabb2 {
    /// A box from its corners.
    #[inline]
    pub fn new(min: Vec2, max: Vec2) -> Self {
        Aabb2 { min, max }
    }

    /// `Ok` when both corners are finite and `min <= max`.
    pub fn validate(&self) -> Result<(), InputError> {
        let (min, max) = (self.min.extend(0.0), self.max.extend(0.0));
        if !(self.min.is_finite() && self.max.is_finite()) {
            return Err(InputError::NonFiniteAabb { min, max });
        }
        if self.min.cmpgt(self.max).any() {
            return Err(InputError::InvertedAabb { min, max });
        }
        Ok(())
    }

    /// The smallest box holding both boxes.
    #[inline]
    #[must_use]
    pub fn union(&self, other: &Aabb2) -> Aabb2 {
        Aabb2 { min: self.min.min(other.min), max: self.max.max(other.max) }
    }

    /// `true` when the boxes share at least one point.
    #[inline]
    pub fn overlaps(&self, other: &Aabb2) -> bool {
        (self.min.cmple(other.max) & other.min.cmple(self.max)).all()
    }

    /// The perimeter, Box2D's 2D stand-in for surface area.
    #[inline]
    pub fn perimeter(&self) -> f32 {
        let d = self.max - self.min;
        2.0 * (d.x + d.y)
    }
}
