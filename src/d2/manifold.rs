//! Polygon–polygon contact manifolds: Box2D v3's `b2CollidePolygons` (`manifold.c`), operation
//! for operation, returning the local manifold (frame A) of Box2D v3.2.
//!
//! The separating axis test runs over the edge normals of both polygons. If the larger face
//! separation exceeds the speculative distance (plus the radii) there is no manifold. Otherwise the
//! reference face is the one of larger separation (A on ties) and the incident edge is the other
//! polygon's edge most anti-parallel to it. Deeply disjoint pairs (separation > 0.1·slop) first
//! measure the reference and incident edges' closest points, and fall back to a single
//! vertex–vertex contact when clipping would overstate the separation; otherwise the incident edge
//! is clipped to the reference edge's extent and both clip points become (possibly speculative)
//! contacts at the midpoint between the rounded surfaces.

use glam::Vec2;

use super::distance::segment_distance;
use super::math::{Transform, add, add_scaled, cross_sv, dot, lerp, min_f, neg, sub};
use super::{LINEAR_SLOP, MAX_POLYGON_VERTICES, Polygon, SPECULATIVE_DISTANCE};

/// One point of a [`LocalManifold`] (Box2D's `b2LocalManifoldPoint`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalManifoldPoint {
    /// The contact point in A's frame: the midpoint between the two rounded surfaces.
    pub point: Vec2,
    /// The separation: negative when penetrating, up to the speculative distance when apart.
    pub separation: f32,
    /// The feature key `a << 8 | b`: a vertex of A and a vertex of B, whichever polygon holds the
    /// reference face (Box2D's `B2_MAKE_ID`).
    pub id: u16,
}

/// A contact manifold in A's frame (Box2D's `b2LocalManifold`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalManifold {
    /// The unit normal from A to B in A's frame; zero when there are no points.
    pub normal: Vec2,
    /// The points; the first `point_count` are valid.
    pub points: [LocalManifoldPoint; 2],
    /// The number of points: 0, 1 or 2.
    pub point_count: usize,
}

impl LocalManifold {
    /// The valid points.
    #[inline]
    pub fn points(&self) -> &[LocalManifoldPoint] {
        &self.points[..self.point_count]
    }
}

/// Box2D's `B2_MAKE_ID(a, b)`.
#[inline]
fn make_id(a: usize, b: usize) -> u16 {
    ((a as u8 as u16) << 8) | (b as u8 as u16)
}

#[inline]
fn next(i: usize, count: usize) -> usize {
    if i + 1 < count { i + 1 } else { 0 }
}

/// Clips the incident edge against the reference edge's extent; two contacts (`b2ClipPolygons`).
fn clip_polygons(poly_a: &Polygon, poly_b: &Polygon, edge_a: usize, edge_b: usize, flip: bool) -> LocalManifold {
    let mut manifold = LocalManifold::default();

    // reference polygon, incident polygon
    let (poly1, i11, poly2, i21) =
        if flip { (poly_b, edge_b, poly_a, edge_a) } else { (poly_a, edge_a, poly_b, edge_b) };
    let i12 = next(i11, poly1.count);
    let i22 = next(i21, poly2.count);

    let normal = poly1.normals[i11];

    // Reference edge vertices
    let v11 = poly1.vertices[i11];
    let v12 = poly1.vertices[i12];

    // Incident edge vertices
    let v21 = poly2.vertices[i21];
    let v22 = poly2.vertices[i22];

    let tangent = cross_sv(1.0, normal);

    let lower1 = 0.0;
    let upper1 = dot(sub(v12, v11), tangent);

    // Incident edge points opposite of tangent due to CCW winding
    let upper2 = dot(sub(v21, v11), tangent);
    let lower2 = dot(sub(v22, v11), tangent);

    // Are the segments disjoint?
    if upper2 < lower1 || upper1 < lower2 {
        return manifold;
    }

    let mut v_lower = if lower2 < lower1 && upper2 - lower2 > f32::EPSILON {
        lerp(v22, v21, (lower1 - lower2) / (upper2 - lower2))
    } else {
        v22
    };

    let mut v_upper = if upper2 > upper1 && upper2 - lower2 > f32::EPSILON {
        lerp(v22, v21, (upper1 - lower2) / (upper2 - lower2))
    } else {
        v21
    };

    let separation_lower = dot(sub(v_lower, v11), normal);
    let separation_upper = dot(sub(v_upper, v11), normal);

    let r1 = poly1.radius;
    let r2 = poly2.radius;

    // Put contact points at midpoint, accounting for radii
    v_lower = add_scaled(v_lower, 0.5 * (r1 - r2 - separation_lower), normal);
    v_upper = add_scaled(v_upper, 0.5 * (r1 - r2 - separation_upper), normal);

    let radius = r1 + r2;

    let lower = LocalManifoldPoint { point: v_lower, separation: separation_lower - radius, id: 0 };
    let upper = LocalManifoldPoint { point: v_upper, separation: separation_upper - radius, id: 0 };
    if !flip {
        manifold.normal = normal;
        manifold.points[0] = LocalManifoldPoint { id: make_id(i11, i22), ..lower };
        manifold.points[1] = LocalManifoldPoint { id: make_id(i12, i21), ..upper };
    } else {
        manifold.normal = neg(normal);
        manifold.points[0] = LocalManifoldPoint { id: make_id(i21, i12), ..upper };
        manifold.points[1] = LocalManifoldPoint { id: make_id(i22, i11), ..lower };
    }
    manifold.point_count = 2;
    manifold
}

/// The largest separation of `poly2` along `poly1`'s edge normals, and that edge
/// (`b2FindMaxSeparation`).
fn find_max_separation(poly1: &Polygon, poly2: &Polygon) -> (f32, usize) {
    let mut best_index = 0;
    let mut max_separation = -f32::MAX;
    for i in 0..poly1.count {
        let n = poly1.normals[i];
        let v1 = poly1.vertices[i];

        // Find the deepest point for normal i.
        let mut si = f32::MAX;
        for &v2 in poly2.vertices() {
            let sij = dot(n, sub(v2, v1));
            if sij < si {
                si = sij;
            }
        }

        if si > max_separation {
            max_separation = si;
            best_index = i;
        }
    }
    (max_separation, best_index)
}

/// The edge of `poly` whose normal is most anti-parallel to `direction`.
fn incident_edge(poly: &Polygon, direction: Vec2) -> usize {
    let mut edge = 0;
    let mut min_dot = f32::MAX;
    for (i, &n) in poly.normals().iter().enumerate() {
        let d = dot(direction, n);
        if d < min_dot {
            min_dot = d;
            edge = i;
        }
    }
    edge
}

/// The contact manifold of two convex (possibly rounded) polygons, Box2D v3's `b2CollidePolygons`.
/// `xf` is the pose of B in A's frame (`xf_a.inv_mul(xf_b)`); the result is in A's frame.
///
/// Points may be speculative: up to [`SPECULATIVE_DISTANCE`] apart (positive separation), so that
/// a solver can stop approaching bodies before they touch.
///
/// ```
/// use glam::Vec2;
/// use slabtree::d2::{collide_polygons, Polygon, Rot, Transform};
/// let a = Polygon::make_box(1.0, 0.5);
/// let b = Polygon::make_box(0.5, 0.5);
/// // B rests 0.01 above A's top face: two speculative points.
/// let m = collide_polygons(&a, &b, Transform::new(Vec2::new(0.0, 1.01), Rot::IDENTITY));
/// assert_eq!(m.point_count, 2);
/// assert_eq!(m.normal, Vec2::Y);
/// for p in m.points() {
///     assert!((p.separation - 0.01).abs() < 1e-6);
/// }
/// ```
pub fn collide_polygons(polygon_a: &Polygon, polygon_b: &Polygon, xf: Transform) -> LocalManifold {
    let origin = polygon_a.vertices[0];

    // Shift to the origin in frame A for round-off, a pure translation in A's frame
    let xfs = Transform { p: sub(xf.p, origin), q: xf.q };

    let mut local_poly_a = *polygon_a;
    local_poly_a.vertices[0] = Vec2::ZERO;
    for i in 1..local_poly_a.count {
        local_poly_a.vertices[i] = sub(polygon_a.vertices[i], origin);
    }

    // Put polyB in polyA's frame to reduce round-off error
    let mut local_poly_b = *polygon_b;
    for i in 0..local_poly_b.count {
        local_poly_b.vertices[i] = xfs.apply(polygon_b.vertices[i]);
        local_poly_b.normals[i] = xfs.q.rotate(polygon_b.normals[i]);
    }
    debug_assert!(local_poly_a.count <= MAX_POLYGON_VERTICES && local_poly_b.count <= MAX_POLYGON_VERTICES);

    let (separation_a, mut edge_a) = find_max_separation(&local_poly_a, &local_poly_b);
    let (separation_b, mut edge_b) = find_max_separation(&local_poly_b, &local_poly_a);

    let radius = local_poly_a.radius + local_poly_b.radius;

    if separation_a > SPECULATIVE_DISTANCE + radius || separation_b > SPECULATIVE_DISTANCE + radius {
        return LocalManifold::default();
    }

    // Find incident edge
    let flip = if separation_a >= separation_b {
        edge_b = incident_edge(&local_poly_b, local_poly_a.normals[edge_a]);
        false
    } else {
        edge_a = incident_edge(&local_poly_a, local_poly_b.normals[edge_b]);
        true
    };

    let mut manifold;

    // Using slop here to ensure vertex-vertex normal vectors can be safely normalized
    if separation_a > 0.1 * LINEAR_SLOP || separation_b > 0.1 * LINEAR_SLOP {
        // Edges are disjoint. Find closest points between reference edge and incident edge.
        let i11 = edge_a;
        let i12 = next(edge_a, local_poly_a.count);
        let i21 = edge_b;
        let i22 = next(edge_b, local_poly_b.count);

        let v11 = local_poly_a.vertices[i11];
        let v12 = local_poly_a.vertices[i12];
        let v21 = local_poly_b.vertices[i21];
        let v22 = local_poly_b.vertices[i22];

        let result = segment_distance(v11, v12, v21, v22);
        let distance = result.distance_squared.sqrt();
        let separation = distance - radius;

        if distance - radius > SPECULATIVE_DISTANCE {
            // This can happen in the vertex-vertex case
            return LocalManifold::default();
        }

        // Attempt to clip edges
        manifold = clip_polygons(&local_poly_a, &local_poly_b, edge_a, edge_b, flip);

        let mut min_separation = f32::MAX;
        for p in manifold.points() {
            min_separation = min_f(min_separation, p.separation);
        }

        // Does vertex-vertex have substantially larger separation?
        if separation + 0.1 * LINEAR_SLOP < min_separation {
            let feature = match (result.fraction1, result.fraction2) {
                (f1, f2) if f1 == 0.0 && f2 == 0.0 => Some((v11, v21, i11, i21)),
                (f1, f2) if f1 == 0.0 && f2 == 1.0 => Some((v11, v22, i11, i22)),
                (f1, f2) if f1 == 1.0 && f2 == 0.0 => Some((v12, v21, i12, i21)),
                (f1, f2) if f1 == 1.0 && f2 == 1.0 => Some((v12, v22, i12, i22)),
                _ => None,
            };
            if let Some((va, vb, ia, ib)) = feature {
                let mut normal = sub(vb, va);
                let inv_distance = 1.0 / distance;
                normal.x *= inv_distance;
                normal.y *= inv_distance;

                let c1 = add_scaled(va, local_poly_a.radius, normal);
                let c2 = add_scaled(vb, -local_poly_b.radius, normal);

                manifold.normal = normal;
                manifold.points[0] =
                    LocalManifoldPoint { point: lerp(c1, c2, 0.5), separation: distance - radius, id: make_id(ia, ib) };
                manifold.point_count = 1;
            }
        }
    } else {
        // Polygons overlap
        manifold = clip_polygons(&local_poly_a, &local_poly_b, edge_a, edge_b, flip);
    }

    // Undo the origin shift so points are in frame A
    for p in &mut manifold.points[..manifold.point_count] {
        p.point = add(p.point, origin);
    }
    manifold
}
