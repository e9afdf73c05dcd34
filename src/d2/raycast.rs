//! Ray casts against boxes and polygons, and linear shape casts: Box2D v3's `b2AABB_RayCast`
//! (`aabb.c`), `b2RayCastPolygon` (`geometry.c`) and `b2ShapeCast` (`distance.c`).
//!
//! # Box casts and the shared slab test
//!
//! [`raycast_aabb`] is the slab method (Ericson, *Real-Time Collision Detection*, 5.3.3, p. 179),
//! as [`crate::math::slab_interval`] is, with the same slab distances `(plane − p) · (1/d)` from
//! [`Ray2`]'s inverse direction, the same near plane (Box2D swaps `t1`, `t2`; the shared test
//! indexes by the sign bit: the same choice except on a zero-thickness box, where Box2D's rule is
//! kept) and the same tie rule for the entered face (a later axis wins only when strictly later).
//! It keeps three rules of Box2D that the shared test, built for conservative tree traversal,
//! deliberately does not have:
//!
//! * an axis with `|d| < FLT_EPSILON` is parallel: the segment misses unless its start lies in
//!   the slab (the shared test divides by any non-zero component);
//! * the exit distance is not padded: the shared test multiplies it by `1 + 2γ(3)` so that a box
//!   touched under rounding is never culled, which would turn Box2D's exact misses at grazed
//!   corners into hits;
//! * a segment that starts inside the box (entry before 0) is no hit, nor one entering after 1.
//!
//! The exit is accumulated with the shared [`crate::math::min_keep`]. `tests/box2d_oracle.rs`
//! also replays the Box2D cases through [`Ray2::cast_aabb`] and reports how often the shared test
//! agrees.

use glam::Vec2;

use super::distance::{DistanceInput, ShapeProxy, SimplexCache, shape_distance};
use super::math::{Transform, add_scaled, dot, lerp, max_f, sub};
use super::{LINEAR_SLOP, Polygon};
use crate::math::{Aabb2, Ray2, RayHit2, min_keep};

/// A segment `p1 → p2` against a box with Box2D's `b2AABB_RayCast` rules (see the module docs):
/// the entry fraction in `[0, 1]`, the entry point `lerp(p1, p2, fraction)` and the axis-aligned
/// normal of the entered face. A segment starting inside the box reports no hit.
///
/// ```
/// use glam::Vec2;
/// use slabtree::Aabb2;
/// use slabtree::d2::raycast_aabb;
/// let b = Aabb2::new(Vec2::new(-1.0, -0.5), Vec2::new(1.0, 0.5));
/// let hit = raycast_aabb(&b, Vec2::new(-3.0, 0.0), Vec2::new(3.0, 0.0)).unwrap();
/// assert_eq!(hit.fraction, 1.0 / 3.0);
/// assert_eq!(hit.normal, Vec2::new(-1.0, 0.0));
/// assert!(raycast_aabb(&b, Vec2::ZERO, Vec2::new(3.0, 0.0)).is_none()); // starts inside
/// ```
pub fn raycast_aabb(aabb: &Aabb2, p1: Vec2, p2: Vec2) -> Option<RayHit2> {
    let ray = Ray2::segment(p1, p2);
    let d = ray.dir();
    let inv_d = ray.inv_dir().to_array();
    let (p, dv) = (p1.to_array(), d.to_array());
    let bounds = [aabb.min.to_array(), aabb.max.to_array()];

    let mut t_min = -f32::MAX;
    let mut t_max = f32::MAX;
    let mut normal = Vec2::ZERO;
    for a in 0..2 {
        if dv[a].abs() < f32::EPSILON {
            // parallel
            if p[a] < bounds[0][a] || bounds[1][a] < p[a] {
                return None;
            }
            continue;
        }
        let mut t1 = (bounds[0][a] - p[a]) * inv_d[a];
        let mut t2 = (bounds[1][a] - p[a]) * inv_d[a];

        // Sign of the normal vector. Swapping on `t1 > t2` picks the near plane as the shared
        // test's sign bit does, except on a zero-thickness box (t1 == t2), where Box2D keeps the
        // lower face: kept here for bit-exact agreement.
        let mut s = -1.0;
        if t1 > t2 {
            std::mem::swap(&mut t1, &mut t2);
            s = 1.0;
        }

        // Push the min up
        if t1 > t_min {
            normal = Vec2::ZERO;
            normal[a] = s;
            t_min = t1;
        }
        // Pull the max down
        t_max = min_keep(t2, t_max);
        if t_min > t_max {
            return None;
        }
    }

    // Does the ray start inside the box? Does it intersect beyond the segment length?
    if !(0.0..=1.0).contains(&t_min) {
        return None;
    }
    Some(RayHit2 { fraction: t_min, point: lerp(p1, p2, t_min), normal })
}

/// A ray for [`raycast_polygon`] (Box2D's `b2RayCastInput`): the points `origin + t·translation`
/// for `t` in `[0, max_fraction]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayCastInput {
    /// The start point.
    pub origin: Vec2,
    /// The translation: the end point at fraction 1 minus the origin.
    pub translation: Vec2,
    /// The largest fraction of interest (finite, ≥ 0).
    pub max_fraction: f32,
}

impl RayCastInput {
    /// The part of a [`Ray2`] within `[tmin, tmax]`, as a cast from `ray.at(tmin)`; `None` when
    /// the ray is not valid or its range is not finite. The fractions of the output then count from
    /// `tmin` (add `ray.tmin` to get the ray's parameter).
    ///
    /// ```
    /// use glam::Vec2;
    /// use slabtree::Ray2;
    /// use slabtree::d2::{raycast_polygon, Polygon, RayCastInput};
    /// let ray = Ray2::new(Vec2::new(-4.0, 0.0), Vec2::X).with_range(1.0, 10.0);
    /// let input = RayCastInput::from_ray(&ray).unwrap();
    /// let out = raycast_polygon(&Polygon::make_box(1.0, 1.0), &input);
    /// assert_eq!(ray.tmin + out.fraction, 3.0); // enters x = -1 at t = 3
    /// assert!(RayCastInput::from_ray(&Ray2::new(Vec2::ZERO, Vec2::X)).is_none()); // tmax = inf
    /// ```
    pub fn from_ray(ray: &Ray2) -> Option<RayCastInput> {
        ray.validate().ok()?;
        if !ray.tmax.is_finite() {
            return None;
        }
        let origin = if ray.tmin == 0.0 { ray.origin() } else { ray.origin() + ray.dir() * ray.tmin };
        Some(RayCastInput { origin, translation: ray.dir(), max_fraction: ray.tmax - ray.tmin })
    }
}

/// The result of a ray or shape cast (Box2D's `b2CastOutput`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CastOutput {
    /// The surface normal at the hit; zero for an initial overlap.
    pub normal: Vec2,
    /// The hit point (for an initial overlap: the origin, or a point inside the overlap).
    pub point: Vec2,
    /// The fraction of the translation at the hit.
    pub fraction: f32,
    /// The conservative-advancement iterations (rounded polygons and shape casts only).
    pub iterations: u32,
    /// `true` on a hit.
    pub hit: bool,
}

/// A ray against a polygon in the polygon's frame (Box2D's `b2RayCastPolygon`).
///
/// Sharp polygons are clipped edge by edge (Cyrus–Beck): the entry fraction and the entered
/// edge's normal, or, for a ray starting inside, a hit at fraction 0 with the origin as point and
/// a zero normal. Rounded polygons go through [`shape_cast`] of a point against the polygon.
///
/// ```
/// use glam::Vec2;
/// use slabtree::d2::{raycast_polygon, Polygon, RayCastInput};
/// let p = Polygon::make_box(1.0, 0.5);
/// let ray = RayCastInput { origin: Vec2::new(-3.0, 0.0), translation: Vec2::new(4.0, 0.0), max_fraction: 1.0 };
/// let out = raycast_polygon(&p, &ray);
/// assert!(out.hit);
/// assert_eq!((out.fraction, out.normal), (0.5, Vec2::new(-1.0, 0.0)));
/// ```
pub fn raycast_polygon(shape: &Polygon, input: &RayCastInput) -> CastOutput {
    let mut output = CastOutput::default();
    if shape.radius == 0.0 {
        // Shift all math to first vertex since the polygon may be far from the origin.
        let base = shape.vertices[0];
        let p1 = sub(input.origin, base);
        let d = input.translation;

        let mut lower = 0.0f32;
        let mut upper = input.max_fraction;
        let mut index = None;

        for edge_index in 0..shape.count {
            // p = p1 + a * d
            // dot(normal, p - v) = 0
            // dot(normal, p1 - v) + a * dot(normal, d) = 0
            let vertex = sub(shape.vertices[edge_index], base);
            let numerator = dot(shape.normals[edge_index], sub(vertex, p1));
            let denominator = dot(shape.normals[edge_index], d);

            if denominator == 0.0 {
                // Parallel and runs outside edge
                if numerator < 0.0 {
                    return output;
                }
            } else if denominator < 0.0 && numerator < lower * denominator {
                // lower < numerator / denominator, flipped because denominator < 0:
                // the segment enters this half-space.
                lower = numerator / denominator;
                index = Some(edge_index);
            } else if denominator > 0.0 && numerator < upper * denominator {
                // The segment exits this half-space.
                upper = numerator / denominator;
            }

            if upper < lower {
                // Ray misses
                return output;
            }
        }

        match index {
            Some(i) => {
                output.fraction = lower;
                output.normal = shape.normals[i];
                output.point = add_scaled(input.origin, lower, d);
            }
            // initial overlap
            None => output.point = input.origin,
        }
        output.hit = true;
        return output;
    }

    let cast_input = ShapeCastInput {
        proxy_a: shape.proxy(),
        proxy_b: ShapeProxy::new(&[input.origin], 0.0),
        transform: Transform::IDENTITY,
        translation_b: input.translation,
        max_fraction: input.max_fraction,
        can_encroach: false,
    };
    shape_cast(&cast_input)
}

/// The input of [`shape_cast`] (Box2D's `b2ShapeCastPairInput`): B moves by `translation_b`, A is
/// fixed, both in A's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeCastInput {
    /// Shape A, in its own frame.
    pub proxy_a: ShapeProxy,
    /// Shape B, in its own frame.
    pub proxy_b: ShapeProxy,
    /// The pose of B in A's frame at the start.
    pub transform: Transform,
    /// B's translation over the cast, in A's frame.
    pub translation_b: Vec2,
    /// The largest fraction of interest.
    pub max_fraction: f32,
    /// Let initially close shapes (within `target + tolerance` but more than 2·slop apart) move
    /// closer instead of reporting an initial hit.
    pub can_encroach: bool,
}

/// A linear shape cast by conservative advancement (Box2D's `b2ShapeCast`): B translates and A is
/// fixed; the hit is where the shapes come within `max(slop, rA + rB − slop)` (± slop/4), with the
/// point on A's surface and the normal from A to B, in A's frame. An initial overlap is a hit at
/// fraction 0 with a zero normal.
pub fn shape_cast(input: &ShapeCastInput) -> CastOutput {
    // Compute tolerance
    let total_radius = input.proxy_a.radius + input.proxy_b.radius;
    let mut target = max_f(LINEAR_SLOP, total_radius - LINEAR_SLOP);
    let tolerance = 0.25 * LINEAR_SLOP;

    // Prepare input for distance query
    let mut cache = SimplexCache::default();
    let mut fraction = 0.0f32;
    let mut distance_input =
        DistanceInput { proxy_a: input.proxy_a, proxy_b: input.proxy_b, transform: input.transform, use_radii: false };

    let delta2 = input.translation_b;
    let mut output = CastOutput::default();

    for iteration in 0..20 {
        output.iterations += 1;

        let distance_output = shape_distance(&distance_input, &mut cache);

        if distance_output.distance < target + tolerance {
            if iteration == 0 {
                if input.can_encroach && distance_output.distance > 2.0 * LINEAR_SLOP {
                    target = distance_output.distance - LINEAR_SLOP;
                } else {
                    // Initial overlap: compute a common point
                    output.hit = true;
                    let c1 = add_scaled(distance_output.point_a, input.proxy_a.radius, distance_output.normal);
                    let c2 = add_scaled(distance_output.point_b, -input.proxy_b.radius, distance_output.normal);
                    output.point = lerp(c1, c2, 0.5);
                    return output;
                }
            } else {
                // Regular hit
                output.fraction = fraction;
                output.point = add_scaled(distance_output.point_a, input.proxy_a.radius, distance_output.normal);
                output.normal = distance_output.normal;
                output.hit = true;
                return output;
            }
        }

        // Check if shapes are approaching each other
        let denominator = dot(delta2, distance_output.normal);
        if denominator >= 0.0 {
            // Miss
            return output;
        }

        // Advance sweep
        fraction += (target - distance_output.distance) / denominator;
        if fraction >= input.max_fraction {
            // Miss
            return output;
        }

        distance_input.transform.p = add_scaled(input.transform.p, fraction, delta2);
    }

    // Failure!
    output
}
