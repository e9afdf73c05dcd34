//! How far before an instance's world box its mesh may report a hit ([`instance_floor`]), and
//! how far past a ray's range the instance walk must therefore reach ([`Reach`]), so that every
//! scene query takes the same hits whatever order it meets the instances in.
//!
//! The mesh answers in the instance's space, with the ray carried there by the inverse
//! transform, whose rounding can be large: under a nearly singular transform the carried ray no
//! longer passes where the world ray does, and its mesh reported a hit at `t` = 3e-25 for a world
//! ray that enters the instance's box at 0.3 (`tests/regressions.rs`). A hit is a point of the
//! instance, inside its world box (padded outwards, `transform_aabb`), so its distance is at
//! least the box's entry up to an allowance for rounding; the mesh is asked from there on
//! ([`instance_floor`]). The instance tree culls by world boxes, so it must reach every box whose
//! floor lies within the range, not only every box it enters within the range: a box entered just
//! past the range's end can hold a hit within the allowance before it, and whether such a hit
//! was found would otherwise depend on the order of the instances (which one clipped the range
//! first). [`Reach::bound`] is that reach.

use super::Instance;
use crate::math::{Aabb, Ray, slab_interval};

/// Where `ray` enters the instance's world box, less an allowance for the rounding of the
/// distances found in the instance's space: the fused node test's `8u·max|o·inv|` (over the axes
/// where it is finite, [`floor_pad`]) and `2⁻²⁰` of the distance (see the module doc).
#[inline]
pub(crate) fn instance_floor(inst: &Instance, ray: &Ray) -> f32 {
    floor_of(&inst.world, ray, floor_pad(ray))
}

/// [`instance_floor`] of the world box `world`, with the ray's [`floor_pad`] `pad`.
#[inline]
fn floor_of(world: &Aabb, ray: &Ray, pad: f32) -> f32 {
    let entry = entry_of(world, ray);
    let band = if entry > 0.0 { 1.0 - FLOOR_BAND } else { 1.0 + FLOOR_BAND };
    entry * band - pad
}

/// Where `ray` enters `world`, by the slab test's exact form, which the instance tree's walks
/// compute lane for lane (`wide::Ray8`, `dbvt::node::RayLanes`).
#[inline]
fn entry_of(world: &Aabb, ray: &Ray) -> f32 {
    let (o, inv) = (ray.origin().to_array(), ray.inv_dir().to_array());
    let bounds = [world.min.to_array(), world.max.to_array()];
    slab_interval(bounds, o, inv, ray.sign(), f32::NEG_INFINITY, f32::INFINITY).near
}

/// The floor's absolute allowance, `8u·max|o·inv|` over the axes where the product is finite
/// (the fused node test's widening, `wide::FUSED_PAD`).
#[inline]
fn floor_pad(ray: &Ray) -> f32 {
    let scale =
        (ray.origin() * ray.inv_dir()).abs().to_array().into_iter().filter(|p| p.is_finite()).fold(0.0, f32::max);
    scale * crate::wide::FUSED_PAD
}

/// [`instance_floor`]'s band, relative to the distance.
const FLOOR_BAND: f32 = 1.0 / (1 << 20) as f32;

/// How far the instance walk of one ray reaches: past every range it is given by the floor's
/// allowance, so that it reaches every instance whose [`instance_floor`] lies within the range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reach {
    /// Twice the ray's [`floor_pad`].
    pad: f32,
}

impl Reach {
    /// The reach of `ray`'s instance walks.
    #[inline]
    pub(crate) fn of(ray: &Ray) -> Reach {
        Reach { pad: 2.0 * floor_pad(ray) }
    }

    /// The bound the instance walk culls boxes with while the range ends at `t`:
    /// `t + |t|·2⁻¹⁸ + 2·pad + MIN_POSITIVE`.
    ///
    /// Why it is enough: a box whose floor `(e·(1 ∓ 2⁻²⁰) − pad)`, rounded twice, is at most `t`
    /// has its entry `e` at most `t·(1 + 2⁻²⁰ + 4u) + pad·(1 + 2⁻¹⁹)` for `t ≥ 0`, and at most
    /// `t + |t|·(2⁻²⁰ + 4u) + pad·(1 + 2⁻¹⁹)` otherwise (`u = 2⁻²⁴`); the bound's own two
    /// roundings take less than `2u·|t|` and `2u·pad` of its margins, and `MIN_POSITIVE` covers
    /// the absolute rounding of subnormal distances. The walk's node tests compute a box's
    /// entry as [`instance_floor`] does, and never later for an enclosing box. `∞` stays `∞`.
    #[inline]
    pub(crate) fn bound(self, t: f32) -> f32 {
        t + t.abs() * REACH_BAND + self.pad + f32::MIN_POSITIVE
    }
}

/// [`Reach::bound`]'s band, relative to the distance: four times the floor's.
const REACH_BAND: f32 = 1.0 / (1 << 18) as f32;

#[cfg(test)]
mod tests {
    use glam::Vec3A;
    use slabtree_testkit::rng::Rng;

    use super::{Reach, entry_of, floor_of, floor_pad};
    use crate::math::{Aabb, Ray};

    /// A value of any sign and of magnitudes from 1e-30 to 1e30, or 0.
    fn any(rng: &mut Rng) -> f32 {
        if rng.unit() < 0.05 {
            return 0.0;
        }
        let sign = if rng.unit() < 0.5 { -1.0 } else { 1.0 };
        sign * 10f32.powf(rng.unit() * 60.0 - 30.0)
    }

    /// The reach covers every box whose floor lies within the range: checked against the entry
    /// itself, over random boxes, rays and ranges of every magnitude, near the floor's edge.
    #[test]
    fn every_box_whose_floor_is_within_the_range_is_reached() {
        let mut rng = Rng(0x5eac4);
        let mut near_edge = 0;
        for _ in 0..200_000 {
            let o = Vec3A::new(any(&mut rng), any(&mut rng), any(&mut rng));
            let d = Vec3A::new(any(&mut rng), any(&mut rng), any(&mut rng));
            let ray = Ray::new(o, d);
            let c = o + d * any(&mut rng).abs();
            let h = Vec3A::new(any(&mut rng).abs(), any(&mut rng).abs(), any(&mut rng).abs());
            let world = Aabb { min: c - h, max: c + h };
            if !(world.min.is_finite() && world.max.is_finite()) {
                continue;
            }
            let (pad, entry) = (floor_pad(&ray), entry_of(&world, &ray));
            let floor = floor_of(&world, &ray, pad);
            if !(floor.is_finite() && entry.is_finite()) {
                continue;
            }
            // Ranges ending at the floor, a rounding or two past it, and anywhere.
            let ends = [floor, floor.next_up(), floor.next_up().next_up(), floor + floor.abs() * 1e-7, any(&mut rng)];
            for t in ends {
                if floor <= t {
                    near_edge += usize::from(entry > t);
                    let bound = Reach::of(&ray).bound(t);
                    assert!(entry <= bound, "{ray:?} {world:?}: entry {entry} floor {floor} range {t} reach {bound}");
                }
            }
        }
        // The case the reach exists for: a box entered past the range, whose floor is within it.
        assert!(near_edge > 100_000, "{near_edge}");
    }
}
