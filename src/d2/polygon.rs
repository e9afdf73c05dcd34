//! Convex polygons, optionally rounded, Box2D v3's `b2Polygon` and its constructors
//! (`geometry.c`: `b2MakePolygon`, `b2MakeBox`, `b2MakeOffsetBox`, `b2MakeOffsetRoundedBox`).

use glam::Vec2;

use super::hull::Hull;
use super::math::{Rot, Transform, add, add_scaled, cross, cross_vs, normalize, sub};
use super::{MAX_POLYGON_VERTICES, ShapeProxy};

/// A solid convex polygon of 3 to 8 counter-clockwise vertices, rounded by `radius` (a rounded
/// polygon is the Minkowski sum of the polygon and a disc). Box2D's `b2Polygon`.
///
/// Build one with [`Polygon::from_hull`] (from [`crate::d2::compute_hull`]) or the box
/// constructors; the fields are public so that exact recorded shapes can be loaded, but the
/// queries assume what the constructors guarantee: convex, counter-clockwise, unit outward edge
/// normals (`normals[i]` belongs to the edge from vertex `i` to `i + 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Polygon {
    /// The vertices; the first `count` are valid.
    pub vertices: [Vec2; MAX_POLYGON_VERTICES],
    /// The outward unit normal of edge `i` (from vertex `i` to vertex `i + 1`).
    pub normals: [Vec2; MAX_POLYGON_VERTICES],
    /// The centroid (centre of area) of the unrounded polygon.
    pub centroid: Vec2,
    /// The rounding radius (0 for a sharp polygon).
    pub radius: f32,
    /// The number of vertices.
    pub count: usize,
}

impl Polygon {
    /// The polygon of a hull (`b2MakePolygon`), rounded by `radius`. `None` for a failed hull
    /// (fewer than 3 points).
    ///
    /// ```
    /// use glam::Vec2;
    /// use slabtree::d2::{compute_hull, Polygon};
    /// let tri = [Vec2::new(0.0, 0.0), Vec2::new(1.0, 0.0), Vec2::new(0.0, 1.0)];
    /// let p = Polygon::from_hull(&compute_hull(&tri), 0.0).unwrap();
    /// assert_eq!(p.count, 3);
    /// assert!((p.centroid - Vec2::new(1.0 / 3.0, 1.0 / 3.0)).length() < 1e-6);
    /// ```
    pub fn from_hull(hull: &Hull, radius: f32) -> Option<Polygon> {
        if hull.count < 3 {
            return None;
        }
        let mut shape = Polygon {
            vertices: [Vec2::ZERO; MAX_POLYGON_VERTICES],
            normals: [Vec2::ZERO; MAX_POLYGON_VERTICES],
            centroid: Vec2::ZERO,
            radius,
            count: hull.count,
        };
        shape.vertices[..hull.count].copy_from_slice(hull.points());
        shape.compute_normals();
        shape.centroid = polygon_centroid(shape.vertices());
        Some(shape)
    }

    /// An axis-aligned box centred on the origin (`b2MakeBox`).
    pub fn make_box(half_width: f32, half_height: f32) -> Polygon {
        let (hx, hy) = (half_width, half_height);
        let mut vertices = [Vec2::ZERO; MAX_POLYGON_VERTICES];
        let mut normals = [Vec2::ZERO; MAX_POLYGON_VERTICES];
        vertices[..4].copy_from_slice(&[
            Vec2::new(-hx, -hy),
            Vec2::new(hx, -hy),
            Vec2::new(hx, hy),
            Vec2::new(-hx, hy),
        ]);
        normals[..4].copy_from_slice(&[Vec2::NEG_Y, Vec2::X, Vec2::Y, Vec2::NEG_X]);
        Polygon { vertices, normals, centroid: Vec2::ZERO, radius: 0.0, count: 4 }
    }

    /// A box with rounded corners (`b2MakeRoundedBox`): the box grown by `radius` on every side.
    pub fn make_rounded_box(half_width: f32, half_height: f32, radius: f32) -> Polygon {
        Polygon { radius, ..Polygon::make_box(half_width, half_height) }
    }

    /// A box centred on `center` and rotated by `rotation` (`b2MakeOffsetBox`).
    pub fn make_offset_box(half_width: f32, half_height: f32, center: Vec2, rotation: Rot) -> Polygon {
        let xf = Transform::new(center, rotation);
        let (hx, hy) = (half_width, half_height);
        let mut shape = Polygon::make_box(hx, hy);
        for i in 0..4 {
            shape.vertices[i] = xf.apply(shape.vertices[i]);
            shape.normals[i] = xf.q.rotate(shape.normals[i]);
        }
        shape.centroid = xf.p;
        shape
    }

    /// A rounded box centred on `center` and rotated by `rotation` (`b2MakeOffsetRoundedBox`).
    pub fn make_offset_rounded_box(
        half_width: f32,
        half_height: f32,
        center: Vec2,
        rotation: Rot,
        radius: f32,
    ) -> Polygon {
        Polygon { radius, ..Polygon::make_offset_box(half_width, half_height, center, rotation) }
    }

    /// The valid vertices.
    #[inline]
    pub fn vertices(&self) -> &[Vec2] {
        &self.vertices[..self.count]
    }

    /// The valid edge normals.
    #[inline]
    pub fn normals(&self) -> &[Vec2] {
        &self.normals[..self.count]
    }

    /// The polygon as a GJK proxy: its vertices and radius (`b2MakeProxy`).
    #[inline]
    pub fn proxy(&self) -> ShapeProxy {
        ShapeProxy::new(self.vertices(), self.radius)
    }

    /// The polygon moved by `xf` (`b2TransformPolygon`).
    #[must_use]
    pub fn transformed(&self, xf: Transform) -> Polygon {
        let mut p = *self;
        for i in 0..p.count {
            p.vertices[i] = xf.apply(p.vertices[i]);
            p.normals[i] = xf.q.rotate(p.normals[i]);
        }
        p.centroid = xf.apply(p.centroid);
        p
    }

    /// `normals[i] = normalize(cross(v[i+1] - v[i], 1))`, as `b2MakePolygon`.
    fn compute_normals(&mut self) {
        for i in 0..self.count {
            let i2 = if i + 1 < self.count { i + 1 } else { 0 };
            let edge = sub(self.vertices[i2], self.vertices[i]);
            self.normals[i] = normalize(cross_vs(edge, 1.0));
        }
    }
}

/// The centre of area of a convex polygon, triangles fanned from the first vertex to limit
/// round-off (`b2ComputePolygonCentroid`).
fn polygon_centroid(vertices: &[Vec2]) -> Vec2 {
    let mut center = Vec2::ZERO;
    let mut area = 0.0f32;
    let origin = vertices[0];
    let inv3 = 1.0f32 / 3.0;
    for i in 1..vertices.len() - 1 {
        // Triangle edges
        let e1 = sub(vertices[i], origin);
        let e2 = sub(vertices[i + 1], origin);
        let a = 0.5 * cross(e1, e2);
        // Area weighted centroid
        center = add_scaled(center, a * inv3, add(e1, e2));
        area += a;
    }
    let inv_area = 1.0 / area;
    center.x *= inv_area;
    center.y *= inv_area;
    // Restore offset
    add(origin, center)
}
