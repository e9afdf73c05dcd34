//! GJK distance between convex point clouds with radii: Box2D v3's `b2ShapeDistance`
//! (`distance.c`), after Gilbert, Johnson and Keerthi (1988) in the form of Erin Catto's "Computing
//! Distance" (GDC 2010): the simplex is solved with signed barycentric coordinates over its
//! Voronoi regions (Ericson, *Real-Time Collision Detection*, 5.1), and the search stops when a
//! support point repeats.
//!
//! Everything runs in A's frame: B's points are transformed once into it, and the results
//! (points, normal) are in that frame too.

use glam::Vec2;

use super::MAX_POLYGON_VERTICES;
use super::math::{
    Transform, add, add_scaled, clamp_f, cross, cross_sv, distance, distance_squared, dot, max_f, neg, normalize, sub,
    sub_scaled,
};

/// A convex shape for GJK: up to [`MAX_POLYGON_VERTICES`] points and a radius (Box2D's
/// `b2ShapeProxy`). The shape is the convex hull of the points grown by the radius.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeProxy {
    /// The points; the first `count` are valid.
    pub points: [Vec2; MAX_POLYGON_VERTICES],
    /// The number of points (at least 1).
    pub count: usize,
    /// The radius.
    pub radius: f32,
}

impl ShapeProxy {
    /// A proxy from at most [`MAX_POLYGON_VERTICES`] points (extra points are ignored, as
    /// `b2MakeProxy` does). `points` must not be empty.
    pub fn new(points: &[Vec2], radius: f32) -> ShapeProxy {
        assert!(!points.is_empty(), "a shape proxy needs at least one point");
        let count = points.len().min(MAX_POLYGON_VERTICES);
        let mut p = [Vec2::ZERO; MAX_POLYGON_VERTICES];
        p[..count].copy_from_slice(&points[..count]);
        ShapeProxy { points: p, count, radius }
    }

    /// The valid points.
    #[inline]
    pub fn points(&self) -> &[Vec2] {
        &self.points[..self.count]
    }

    /// The index of the point furthest along `direction`, the first on ties (`b2FindSupport`).
    #[inline]
    pub fn support(&self, direction: Vec2) -> usize {
        let mut best_index = 0;
        let mut best_value = dot(self.points[0], direction);
        for i in 1..self.count {
            let value = dot(self.points[i], direction);
            if value > best_value {
                best_index = i;
                best_value = value;
            }
        }
        best_index
    }
}

/// The vertex indices of the last simplex, to warm-start the next query on the same pair
/// (Box2D's `b2SimplexCache`). Start from `SimplexCache::default()` (empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimplexCache {
    /// The number of vertices (0 to 3).
    pub count: u16,
    /// The vertex on A of each simplex vertex.
    pub index_a: [u8; 3],
    /// The vertex on B of each simplex vertex.
    pub index_b: [u8; 3],
}

/// The input of [`shape_distance`] (Box2D's `b2DistanceInput`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistanceInput {
    /// Shape A, in its own frame.
    pub proxy_a: ShapeProxy,
    /// Shape B, in its own frame.
    pub proxy_b: ShapeProxy,
    /// The pose of B in A's frame (see [`Transform::inv_mul`]).
    pub transform: Transform,
    /// Subtract the radii from the distance and move the points onto the rounded surfaces.
    pub use_radii: bool,
}

/// The result of [`shape_distance`] (Box2D's `b2DistanceOutput`), in A's frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DistanceOutput {
    /// The closest point on A.
    pub point_a: Vec2,
    /// The closest point on B.
    pub point_b: Vec2,
    /// The unit normal from A to B; zero when the shapes overlap.
    pub normal: Vec2,
    /// The distance, 0 when the shapes overlap.
    pub distance: f32,
    /// The GJK iterations (support-point evaluations); 0 on the overlap early-out.
    pub iterations: u32,
}

#[derive(Clone, Copy, Default)]
struct SimplexVertex {
    w_a: Vec2,
    w_b: Vec2,
    w: Vec2,
    a: f32,
    index_a: usize,
    index_b: usize,
}

#[derive(Clone, Copy, Default)]
struct Simplex {
    v: [SimplexVertex; 3],
    count: usize,
}

fn make_simplex_from_cache(cache: &SimplexCache, proxy_a: &ShapeProxy, proxy_b: &ShapeProxy) -> Simplex {
    let mut s = Simplex { count: cache.count.min(3) as usize, ..Simplex::default() };
    for i in 0..s.count {
        let v = &mut s.v[i];
        v.index_a = cache.index_a[i] as usize;
        v.index_b = cache.index_b[i] as usize;
        // A cache from another pair may point past the end: treat it as empty.
        if v.index_a >= proxy_a.count || v.index_b >= proxy_b.count {
            s.count = 0;
            break;
        }
        v.w_a = proxy_a.points[v.index_a];
        v.w_b = proxy_b.points[v.index_b];
        v.w = sub(v.w_a, v.w_b);
        // invalid
        v.a = -1.0;
    }

    // If the cache is empty or invalid ...
    if s.count == 0 {
        let v = &mut s.v[0];
        v.index_a = 0;
        v.index_b = 0;
        v.w_a = proxy_a.points[0];
        v.w_b = proxy_b.points[0];
        v.w = sub(v.w_a, v.w_b);
        v.a = 1.0;
        s.count = 1;
    }
    s
}

fn make_simplex_cache(s: &Simplex) -> SimplexCache {
    let mut cache = SimplexCache { count: s.count as u16, ..SimplexCache::default() };
    for i in 0..s.count {
        cache.index_a[i] = s.v[i].index_a as u8;
        cache.index_b[i] = s.v[i].index_b as u8;
    }
    cache
}

/// `b2Weight2`.
#[inline(always)]
fn weight2(a1: f32, w1: Vec2, a2: f32, w2: Vec2) -> Vec2 {
    Vec2::new(a1 * w1.x + a2 * w2.x, a1 * w1.y + a2 * w2.y)
}

/// `b2Weight3`.
#[inline(always)]
fn weight3(a1: f32, w1: Vec2, a2: f32, w2: Vec2, a3: f32, w3: Vec2) -> Vec2 {
    Vec2::new(a1 * w1.x + a2 * w2.x + a3 * w3.x, a1 * w1.y + a2 * w2.y + a3 * w3.y)
}

/// The closest points on A and B of the current simplex (`b2ComputeSimplexWitnessPoints`).
fn witness_points(s: &Simplex) -> (Vec2, Vec2) {
    let [v1, v2, v3] = &s.v;
    match s.count {
        1 => (v1.w_a, v1.w_b),
        2 => (weight2(v1.a, v1.w_a, v2.a, v2.w_a), weight2(v1.a, v1.w_b, v2.a, v2.w_b)),
        _ => {
            // Box2D uses A's point for both: the origin is inside the triangle.
            let a = weight3(v1.a, v1.w_a, v2.a, v2.w_a, v3.a, v3.w_a);
            (a, a)
        }
    }
}

/// Reduces a 2-simplex to the Voronoi region of the origin; returns a search direction towards
/// the origin (`b2SolveSimplex2`).
fn solve2(s: &mut Simplex) -> Vec2 {
    let w1 = s.v[0].w;
    let w2 = s.v[1].w;
    let e12 = sub(w2, w1);

    // w1 region
    let d12_2 = -dot(w1, e12);
    if d12_2 <= 0.0 {
        // a2 <= 0, so we clamp it to 0
        s.v[0].a = 1.0;
        s.count = 1;
        return neg(w1);
    }

    // w2 region
    let d12_1 = dot(w2, e12);
    if d12_1 <= 0.0 {
        // a1 <= 0, so we clamp it to 0
        s.v[1].a = 1.0;
        s.count = 1;
        s.v[0] = s.v[1];
        return neg(w2);
    }

    // Must be in e12 region.
    let inv_d12 = 1.0 / (d12_1 + d12_2);
    s.v[0].a = d12_1 * inv_d12;
    s.v[1].a = d12_2 * inv_d12;
    s.count = 2;
    cross_sv(cross(add(w1, w2), e12), e12)
}

/// Reduces a 3-simplex (`b2SolveSimplex3`); a zero direction when the origin is inside.
fn solve3(s: &mut Simplex) -> Vec2 {
    let w1 = s.v[0].w;
    let w2 = s.v[1].w;
    let w3 = s.v[2].w;

    // Edge12
    let e12 = sub(w2, w1);
    let w1e12 = dot(w1, e12);
    let w2e12 = dot(w2, e12);
    let d12_1 = w2e12;
    let d12_2 = -w1e12;

    // Edge13
    let e13 = sub(w3, w1);
    let w1e13 = dot(w1, e13);
    let w3e13 = dot(w3, e13);
    let d13_1 = w3e13;
    let d13_2 = -w1e13;

    // Edge23
    let e23 = sub(w3, w2);
    let w2e23 = dot(w2, e23);
    let w3e23 = dot(w3, e23);
    let d23_1 = w3e23;
    let d23_2 = -w2e23;

    // Triangle123
    let n123 = cross(e12, e13);
    let d123_1 = n123 * cross(w2, w3);
    let d123_2 = n123 * cross(w3, w1);
    let d123_3 = n123 * cross(w1, w2);

    // w1 region
    if d12_2 <= 0.0 && d13_2 <= 0.0 {
        s.v[0].a = 1.0;
        s.count = 1;
        return neg(w1);
    }

    // e12
    if d12_1 > 0.0 && d12_2 > 0.0 && d123_3 <= 0.0 {
        let inv_d12 = 1.0 / (d12_1 + d12_2);
        s.v[0].a = d12_1 * inv_d12;
        s.v[1].a = d12_2 * inv_d12;
        s.count = 2;
        return cross_sv(cross(add(w1, w2), e12), e12);
    }

    // e13
    if d13_1 > 0.0 && d13_2 > 0.0 && d123_2 <= 0.0 {
        let inv_d13 = 1.0 / (d13_1 + d13_2);
        s.v[0].a = d13_1 * inv_d13;
        s.v[2].a = d13_2 * inv_d13;
        s.count = 2;
        s.v[1] = s.v[2];
        return cross_sv(cross(add(w1, w3), e13), e13);
    }

    // w2 region
    if d12_1 <= 0.0 && d23_2 <= 0.0 {
        s.v[1].a = 1.0;
        s.count = 1;
        s.v[0] = s.v[1];
        return neg(w2);
    }

    // w3 region
    if d13_1 <= 0.0 && d23_1 <= 0.0 {
        s.v[2].a = 1.0;
        s.count = 1;
        s.v[0] = s.v[2];
        return neg(w3);
    }

    // e23
    if d23_1 > 0.0 && d23_2 > 0.0 && d123_1 <= 0.0 {
        let inv_d23 = 1.0 / (d23_1 + d23_2);
        s.v[1].a = d23_1 * inv_d23;
        s.v[2].a = d23_2 * inv_d23;
        s.count = 2;
        s.v[0] = s.v[2];
        return cross_sv(cross(add(w2, w3), e23), e23);
    }

    // Must be in triangle123
    let inv_d123 = 1.0 / (d123_1 + d123_2 + d123_3);
    s.v[0].a = d123_1 * inv_d123;
    s.v[1].a = d123_2 * inv_d123;
    s.v[2].a = d123_3 * inv_d123;
    s.count = 3;

    // No search direction
    Vec2::ZERO
}

/// The GJK iteration limit (`b2ShapeDistance`'s `maxIterations`).
pub const GJK_MAX_ITERATIONS: u32 = 20;

/// The closest points of two convex shapes by GJK (Box2D v3's `b2ShapeDistance`), warm-started
/// from `cache`, which is updated to the final simplex for the next call on the same pair.
///
/// Overlap (the simplex encloses the origin, or the search direction degenerates) returns
/// distance 0, a zero normal and 0 iterations; the two points are then a witness inside the
/// overlap, and the radii are not applied.
///
/// ```
/// use glam::Vec2;
/// use slabtree::d2::{shape_distance, DistanceInput, Polygon, Rot, SimplexCache, Transform};
/// let a = Polygon::make_box(1.0, 1.0);
/// let b = Polygon::make_box(0.5, 0.5);
/// let input = DistanceInput {
///     proxy_a: a.proxy(),
///     proxy_b: b.proxy(),
///     transform: Transform::new(Vec2::new(3.0, 0.0), Rot::IDENTITY),
///     use_radii: true,
/// };
/// let mut cache = SimplexCache::default();
/// let out = shape_distance(&input, &mut cache);
/// assert!((out.distance - 1.5).abs() < 1e-6);
/// assert_eq!(out.normal, Vec2::X);
/// ```
pub fn shape_distance(input: &DistanceInput, cache: &mut SimplexCache) -> DistanceOutput {
    let mut output = DistanceOutput::default();
    let proxy_a = &input.proxy_a;

    // Get proxyB in frame A to avoid further transforms in the main loop.
    let mut local_proxy_b = input.proxy_b;
    for i in 0..local_proxy_b.count {
        local_proxy_b.points[i] = input.transform.apply(input.proxy_b.points[i]);
    }

    // Initialize the simplex.
    let mut simplex = make_simplex_from_cache(cache, proxy_a, &local_proxy_b);

    let mut non_unit_normal = Vec2::ZERO;

    // These store the vertices of the last simplex so that we can check for duplicates and
    // prevent cycling.
    let mut save_a = [0usize; 3];
    let mut save_b = [0usize; 3];

    // Main iteration loop. All computations are done in frame A.
    let mut iteration = 0;
    while iteration < GJK_MAX_ITERATIONS {
        // Copy simplex so we can identify duplicates.
        let save_count = simplex.count;
        for i in 0..save_count {
            save_a[i] = simplex.v[i].index_a;
            save_b[i] = simplex.v[i].index_b;
        }

        let d = match simplex.count {
            1 => neg(simplex.v[0].w),
            2 => solve2(&mut simplex),
            _ => solve3(&mut simplex),
        };

        // If we have 3 points, then the origin is in the corresponding triangle: overlap.
        // Ensure the search direction is numerically fit: a degenerate one means the origin is
        // (numerically) on the simplex, which is also an overlap. The threshold is the reference
        // build's `1000 * FLT_MIN` (later Box2D versions use `FLT_EPSILON²`; the two agree on
        // every shared reference case), and the cache is written on this exit too.
        if simplex.count == 3 || dot(d, d) < 1000.0 * f32::MIN_POSITIVE {
            let (point_a, point_b) = witness_points(&simplex);
            output.point_a = point_a;
            output.point_b = point_b;
            *cache = make_simplex_cache(&simplex);
            return output;
        }

        // Save the normal
        non_unit_normal = d;

        // Compute a tentative new simplex vertex using support points.
        // support = support(a, d) - support(b, -d)
        let index_a = proxy_a.support(d);
        let index_b = local_proxy_b.support(neg(d));
        let vertex = &mut simplex.v[simplex.count];
        vertex.index_a = index_a;
        vertex.w_a = proxy_a.points[index_a];
        vertex.index_b = index_b;
        vertex.w_b = local_proxy_b.points[index_b];
        vertex.w = sub(vertex.w_a, vertex.w_b);

        // Iteration count is equated to the number of support point calls.
        iteration += 1;

        // Check for duplicate support points. This is the main termination criterion.
        if (0..save_count).any(|i| index_a == save_a[i] && index_b == save_b[i]) {
            // If we found a duplicate support point we must exit to avoid cycling.
            break;
        }

        // New vertex is valid and needed.
        simplex.count += 1;
    }

    // Prepare output
    let normal = normalize(non_unit_normal);
    let (point_a, point_b) = witness_points(&simplex);
    output.normal = normal;
    output.distance = distance(point_a, point_b);
    output.point_a = point_a;
    output.point_b = point_b;
    output.iterations = iteration;

    // Cache the simplex
    *cache = make_simplex_cache(&simplex);

    // Apply radii if requested
    if input.use_radii {
        let radius_a = input.proxy_a.radius;
        let radius_b = input.proxy_b.radius;
        output.distance = max_f(0.0, output.distance - radius_a - radius_b);

        // Keep closest points on perimeter even if overlapped, this way the points move smoothly.
        output.point_a = add_scaled(output.point_a, radius_a, normal);
        output.point_b = sub_scaled(output.point_b, radius_b, normal);
    }

    output
}

/// The closest points of two segments (Box2D's `b2SegmentDistanceResult`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SegmentDistance {
    /// The closest point on the first segment.
    pub closest1: Vec2,
    /// The closest point on the second segment.
    pub closest2: Vec2,
    /// The parameter of `closest1` on the first segment, in `[0, 1]`.
    pub fraction1: f32,
    /// The parameter of `closest2` on the second segment, in `[0, 1]`.
    pub fraction2: f32,
    /// The squared distance between the closest points.
    pub distance_squared: f32,
}

/// The closest points of segments `p1 q1` and `p2 q2` (`b2SegmentDistance`, after Ericson,
/// *Real-Time Collision Detection*, 5.1.9).
pub fn segment_distance(p1: Vec2, q1: Vec2, p2: Vec2, q2: Vec2) -> SegmentDistance {
    let d1 = sub(q1, p1);
    let d2 = sub(q2, p2);
    let r = sub(p1, p2);
    let dd1 = dot(d1, d1);
    let dd2 = dot(d2, d2);
    let rd1 = dot(r, d1);
    let rd2 = dot(r, d2);

    let eps_sqr = f32::EPSILON * f32::EPSILON;
    let (f1, f2);
    if dd1 < eps_sqr || dd2 < eps_sqr {
        // Handle all degeneracies
        if dd1 >= eps_sqr {
            // Segment 2 is degenerate
            f1 = clamp_f(-rd1 / dd1, 0.0, 1.0);
            f2 = 0.0;
        } else if dd2 >= eps_sqr {
            // Segment 1 is degenerate
            f1 = 0.0;
            f2 = clamp_f(rd2 / dd2, 0.0, 1.0);
        } else {
            f1 = 0.0;
            f2 = 0.0;
        }
    } else {
        // Non-degenerate segments
        let d12 = dot(d1, d2);
        let denominator = dd1 * dd2 - d12 * d12;

        // Fraction on segment 1
        let mut g1 = 0.0;
        if denominator != 0.0 {
            // not parallel
            g1 = clamp_f((d12 * rd2 - rd1 * dd2) / denominator, 0.0, 1.0);
        }

        // Compute point on segment 2 closest to p1 + f1 * d1
        let mut g2 = (d12 * g1 + rd2) / dd2;

        // Clamping of segment 2 requires a do over on segment 1
        if g2 < 0.0 {
            g2 = 0.0;
            g1 = clamp_f(-rd1 / dd1, 0.0, 1.0);
        } else if g2 > 1.0 {
            g2 = 1.0;
            g1 = clamp_f((d12 - rd1) / dd1, 0.0, 1.0);
        }
        f1 = g1;
        f2 = g2;
    }

    let closest1 = add_scaled(p1, f1, d1);
    let closest2 = add_scaled(p2, f2, d2);
    SegmentDistance {
        closest1,
        closest2,
        fraction1: f1,
        fraction2: f2,
        distance_squared: distance_squared(closest1, closest2),
    }
}
