//! The ray–node test of 8-wide nodes.

use glam::Vec3A;
use wide::f32x8;

use super::Node8;
use crate::math::{FAR_PAD, Ray};

/// One ray, or the centre ray of a swept box, splatted once for testing the 8 children of
/// [`Node8`]s: the slab test of `dbvt::node::RayLanes::test_pair`, eight lanes at a time, in the
/// same operation order as [`crate::math::slab_interval`], so a box is never culled by rounding
/// where the scalar test keeps it.
pub(crate) struct Ray8 {
    origin: [f32x8; 3],
    inv_dir: [f32x8; 3],
    /// Added to the near plane and subtracted from the far plane of each axis: `∓ half_extent`
    /// for a box sweep (the near plane moves out against the direction, the far one with it).
    near_offset: [f32x8; 3],
    sign: [usize; 3],
    tmin: f32x8,
}

impl Ray8 {
    /// `inflate` is the half-extent of a swept box (zero for rays; only read by
    /// [`Ray8::test`]`::<true>`).
    #[inline]
    pub(crate) fn new(ray: &Ray, inflate: Vec3A) -> Ray8 {
        let (o, inv) = (ray.origin(), ray.inv_dir());
        let sign = ray.sign().map(usize::from);
        let near_off = |a: usize| f32x8::splat(if sign[a] == 1 { inflate[a] } else { -inflate[a] });
        Ray8 {
            origin: [f32x8::splat(o.x), f32x8::splat(o.y), f32x8::splat(o.z)],
            inv_dir: [f32x8::splat(inv.x), f32x8::splat(inv.y), f32x8::splat(inv.z)],
            near_offset: [near_off(0), near_off(1), near_off(2)],
            sign,
            tmin: f32x8::splat(ray.tmin),
        }
    }

    /// The lanes of `node` the ray enters within `[tmin, tmax]` at a finite distance (as
    /// `SlabInterval::is_hit`), as a bit mask, and every lane's entry distance. Empty lanes enter
    /// at `+inf` and are never in the mask. `INFLATE` grows the planes by the swept box.
    #[inline(always)]
    pub(crate) fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, f32x8) {
        let mut near = self.tmin;
        let mut far = f32x8::splat(tmax);
        let pad = f32x8::splat(FAR_PAD);
        for a in 0..3 {
            let s = self.sign[a] & 1;
            let (mut np, mut fp) = (f32x8::new(node.bounds[s][a]), f32x8::new(node.bounds[s ^ 1][a]));
            if INFLATE {
                np += self.near_offset[a];
                fp -= self.near_offset[a];
            }
            let tn = (np - self.origin[a]) * self.inv_dir[a];
            let tf = (fp - self.origin[a]) * self.inv_dir[a] * pad;
            near = tn.fast_max(near);
            far = tf.fast_min(far);
        }
        ((near.simd_le(far) & near.simd_lt(f32x8::splat(f32::INFINITY))).to_bitmask(), near)
    }
}
