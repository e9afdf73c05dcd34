//! The builder's items: one primitive's bounds and index in 32 bytes, and the bounds of a set of
//! them, in the `Vec4` form the binning loops read.

use glam::{BVec4A, Vec3A, Vec4};
use wide::f32x4;

use crate::math::Aabb;

/// One primitive to build over: its bounds and the caller's index, in 32 bytes (the index rides
/// in the unused fourth lane of the lower corner, as in Embree's `PrimRef`). Half the 64 bytes of
/// a box, a centroid and an index: the builder streams every item through memory about three
/// times per level, and at the top levels the items do not fit in cache.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct BuildItem {
    /// The lower corner; `w` holds the index's bits.
    pub(super) lo: Vec4,
    /// The upper corner; `w` is zero.
    pub(super) hi: Vec4,
}

impl BuildItem {
    /// An item over `bounds` with the caller's `index`. The binned point is the bounds' centre.
    #[inline]
    pub fn new(bounds: Aabb, index: u32) -> Self {
        BuildItem { lo: bounds.min.extend(f32::from_bits(index)), hi: bounds.max.extend(0.0) }
    }

    /// The primitive's bounds.
    #[inline]
    pub fn bounds(&self) -> Aabb {
        Aabb { min: Vec3A::from_vec4(xyz(self.lo)), max: Vec3A::from_vec4(self.hi) }
    }

    /// The caller's index of the primitive.
    #[inline]
    pub fn index(&self) -> u32 {
        self.lo.w.to_bits()
    }

    /// Replaces the caller's index.
    #[inline]
    pub fn set_index(&mut self, index: u32) {
        self.lo.w = f32::from_bits(index);
    }

    /// Twice the centroid, `min + max`: the binned point, without the halving (doubling is exact,
    /// so bins and orders are those of the centroid itself). Its `w` lane is zero: the index's
    /// bits read as a subnormal float, and arithmetic on subnormals takes a microcode assist,
    /// which made the binning loop slower than with items twice this size (perf).
    #[inline(always)]
    pub(super) fn centroid2(&self) -> Vec4 {
        xyz(self.lo) + self.hi
    }
}

impl PartialEq for BuildItem {
    /// The same bounds and index (compared as bits, since the index lane may read as a NaN).
    fn eq(&self, other: &Self) -> bool {
        self.bounds() == other.bounds() && self.index() == other.index()
    }
}

impl std::fmt::Debug for BuildItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildItem").field("bounds", &self.bounds()).field("index", &self.index()).finish()
    }
}

const _: () = assert!(size_of::<BuildItem>() == 32);

/// Bounds of points or boxes kept as two `Vec4`s (`w` ignored), the form the items come in.
#[derive(Clone, Copy)]
pub(super) struct Bounds4 {
    pub(super) lo: Vec4,
    pub(super) hi: Vec4,
}

impl Bounds4 {
    pub(super) const EMPTY: Bounds4 = Bounds4 { lo: Vec4::splat(f32::INFINITY), hi: Vec4::splat(f32::NEG_INFINITY) };

    #[inline(always)]
    pub(super) fn grow(&mut self, p: Vec4) {
        self.lo = self.lo.min(p);
        self.hi = self.hi.max(p);
    }

    #[inline(always)]
    pub(super) fn add_item(&mut self, it: &BuildItem) {
        self.lo = self.lo.min(it.lo);
        self.hi = self.hi.max(it.hi);
    }

    #[inline(always)]
    pub(super) fn union(&self, o: &Bounds4) -> Bounds4 {
        Bounds4 { lo: self.lo.min(o.lo), hi: self.hi.max(o.hi) }
    }

    /// The box, with a zero `w` lane (see [`BuildItem::centroid2`]).
    #[inline(always)]
    pub(super) fn aabb(&self) -> Aabb {
        Aabb { min: Vec3A::from_vec4(xyz(self.lo)), max: Vec3A::from_vec4(xyz(self.hi)) }
    }
}

/// The half surface areas of three boxes, box `a`'s in lane `a` (lane 3 zero), in
/// [`Aabb::half_area`]'s arithmetic lane for lane, so each lane equals it bit for bit: the SAH
/// sweeps take the three axes' candidate boxes at once.
#[inline(always)]
pub(super) fn half_areas(b: &[Bounds4; 3]) -> f32x4 {
    let e = b.map(|b| (b.hi - b.lo).to_array());
    let lane = |k: usize| f32x4::new([e[0][k], e[1][k], e[2][k], 0.0]).fast_max(f32x4::ZERO);
    let (x, y, z) = (lane(0), lane(1), lane(2));
    x * y + y * z + z * x
}

/// `v` with its `w` lane zeroed.
#[inline(always)]
pub(super) fn xyz(v: Vec4) -> Vec4 {
    Vec4::select(BVec4A::new(true, true, true, false), v, Vec4::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items carry their index in a float lane: every index, including those whose bits read as
    /// NaN or infinity, comes back, and such items compare equal to themselves.
    #[test]
    fn item_indices_round_trip() {
        let b = Aabb::new(Vec3A::new(-1.0, 2.0, 3.0), Vec3A::new(4.0, 5.0, 6.0));
        for index in [0, 1, 0x7f80_0000, 0x7fc0_0001, u32::MAX - 1, u32::MAX] {
            let mut it = BuildItem::new(b, 7);
            it.set_index(index);
            assert_eq!(it.index(), index);
            assert_eq!(it.bounds(), b);
            assert_eq!(it, it);
        }
    }
}
