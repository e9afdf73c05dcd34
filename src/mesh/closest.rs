//! Closest point: the point of a mesh nearest to a query point, by a best-first descent with a
//! shrinking distance bound.
//!
//! It runs on the rays' own traversal loop (`wide::closest_first`): a node's eight lane boxes are
//! tested at once for their squared distance to the point (`f32x8`, [`PointLanes`]); lanes
//! farther than the best distance found so far are dropped, the others wait on the stack nearest
//! on top, so the first leaves reached are near and the bound shrinks early. At a
//! leaf, each triangle's nearest point is found by Ericson's region test ("Real-Time Collision
//! Detection", 5.1.5, `ClosestPtPointTriangle`), which also gives its barycentrics.

use glam::{Affine3A, DVec3, Vec3};
use wide::f32x8;

use super::bvh::STACK;
use super::leaf::LeafTest;
use super::query::PackVisitor;
use super::triangle::{NO_PRIM, TriPack};
use super::{MeshBvh, TriMesh};
use crate::math::InputError;
use crate::wide::{ChildBoxTest, ChildRef, FixedStack, Node8, closest_first};

/// The point of a mesh nearest to a query point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClosestPoint {
    /// The nearest point, on triangle `triangle`: `a + u (b - a) + v (c - a)` for its corners.
    pub point: Vec3,
    /// The triangle it lies on (of several at the same distance, one of them).
    pub triangle: u32,
    /// Barycentric weight of the triangle's second corner.
    pub u: f32,
    /// Barycentric weight of the triangle's third corner.
    pub v: f32,
    /// Distance from the query point.
    pub distance: f32,
}

/// The nearest point of triangle `[a, b, c]` to `p`, as (point, u, v): Ericson 5.1.5, which
/// classifies `p` against the triangle's Voronoi regions (three corners, three edges, the face).
/// A degenerate triangle (a segment or a point) falls into a corner or edge region. Computed in
/// f64 ([`closest_on_triangle64`]), so the regions' dot products do not cancel.
pub(crate) fn closest_on_triangle(p: Vec3, tri: [Vec3; 3]) -> (Vec3, f32, f32) {
    let (q, u, v) = closest_on_triangle64(p.as_dvec3(), tri.map(Vec3::as_dvec3));
    (q.as_vec3(), u as f32, v as f32)
}

/// [`closest_on_triangle`] in f64.
///
/// Each edge region divides by the edge's squared length (`d1 - d3` is `|ab|²`, `d2 - d6`
/// `|ac|²`, and the third `|bc|²`), which Ericson's code takes to be positive. A triangle with two
/// equal corners has a zero-length edge whose region test passes with 0/0: that edge is skipped
/// (its corners' regions and the other edges cover it), and so is the face of a triangle whose
/// corners are on one line (`va + vb + vc`, its squared doubled area, is zero), which the edge
/// regions then cover.
pub(crate) fn closest_on_triangle64(p: DVec3, [a, b, c]: [DVec3; 3]) -> (DVec3, f64, f64) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, 0.0, 0.0);
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (b, 1.0, 0.0);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 && d1 - d3 > 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, v, 0.0);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, 0.0, 1.0);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 && d2 - d6 > 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, 0.0, w);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 && (d4 - d3) + (d5 - d6) > 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, 1.0 - w, w);
    }
    if va + vb + vc > 0.0 {
        let denom = 1.0 / (va + vb + vc);
        let (v, w) = (vb * denom, vc * denom);
        return (a + ab * v + ac * w, v, w);
    }
    // Corners on one line, with p in none of the regions above (rounding near a region's
    // boundary): the nearest of the three edges, each a segment.
    let on_segment = |s: DVec3, e: DVec3| {
        let len2 = (e - s).length_squared();
        let f = if len2 > 0.0 { ((p - s).dot(e - s) / len2).clamp(0.0, 1.0) } else { 0.0 };
        (s + (e - s) * f, f)
    };
    let ((qab, fab), (qac, fac), (qbc, fbc)) = (on_segment(a, b), on_segment(a, c), on_segment(b, c));
    let candidates = [(qab, fab, 0.0), (qac, 0.0, fac), (qbc, 1.0 - fbc, fbc)];
    candidates.into_iter().min_by(|x, y| p.distance_squared(x.0).total_cmp(&p.distance_squared(y.0))).expect("three")
}

/// A point as the shared traversal loop's node test: each lane's key is the squared distance
/// from the point to the lane's box, and a lane is in the mask when that is within `tmax`, here
/// the squared distance bound. The loop's nearest-first order and its drop of waiting entries
/// beyond `tmax` are then exactly a best-first search whose bound shrinks at each better triangle.
struct PointLanes([f32x8; 3]);

impl ChildBoxTest for PointLanes {
    type Lanes = f32x8;

    #[inline(always)]
    fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, f32x8) {
        let zero = f32x8::splat(0.0);
        let mut d2 = zero;
        for (a, &pa) in self.0.iter().enumerate() {
            let (lo, hi) = (f32x8::new(node.bounds[0][a]), f32x8::new(node.bounds[1][a]));
            // Outside below, outside above, or inside (0).
            let d = (lo - pa).fast_max(pa - hi).fast_max(zero);
            d2 += d * d;
        }
        // An empty lane (min +inf, max -inf) is at +inf, which an unlimited bound would admit:
        // only lanes whose box is not empty count.
        let used = f32x8::new(node.bounds[0][0]).simd_le(f32x8::new(node.bounds[1][0]));
        ((d2.simd_le(f32x8::splat(tmax)) & used).to_bitmask(), d2)
    }
}

/// A point as the node test of a mesh placed in the world by an affine map (a scene's instance):
/// each lane's box is taken to the world as the scene bounds its instances (the centre mapped,
/// the half-extents by the map's absolute values; `scene::transform_aabb`), padded for the
/// rounding of that arithmetic, and the key is the squared distance from the world point to
/// that box. The placed box lies inside it, so the key bounds the distance to any placed
/// triangle below it, whatever the map's scale and shear.
struct PlacedPointLanes {
    p: [f32x8; 3],
    /// `m[i][a]`: row `i`, column `a` of the linear part, and its absolute value.
    m: [[f32x8; 3]; 3],
    abs_m: [[f32x8; 3]; 3],
    t: [f32x8; 3],
}

impl PlacedPointLanes {
    fn new(p: Vec3, place: &Affine3A) -> Self {
        let cols = [place.matrix3.x_axis, place.matrix3.y_axis, place.matrix3.z_axis];
        let m = [0, 1, 2].map(|i| [0, 1, 2].map(|a| f32x8::splat(cols[a][i])));
        let abs_m = [0, 1, 2].map(|i| [0, 1, 2].map(|a| f32x8::splat(cols[a][i].abs())));
        let t = [0, 1, 2].map(|i| f32x8::splat(place.translation[i]));
        PlacedPointLanes { p: [f32x8::splat(p.x), f32x8::splat(p.y), f32x8::splat(p.z)], m, abs_m, t }
    }
}

impl ChildBoxTest for PlacedPointLanes {
    type Lanes = f32x8;

    #[inline(always)]
    fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, f32x8) {
        let (zero, half) = (f32x8::splat(0.0), f32x8::splat(0.5));
        let lo = [0, 1, 2].map(|a| f32x8::new(node.bounds[0][a]));
        let hi = [0, 1, 2].map(|a| f32x8::new(node.bounds[1][a]));
        let c = [0, 1, 2].map(|a| (lo[a] + hi[a]) * half);
        let h = [0, 1, 2].map(|a| (hi[a] - lo[a]) * half);
        let mut d2 = zero;
        for i in 0..3 {
            let (m, am) = (&self.m[i], &self.abs_m[i]);
            let centre = m[0] * c[0] + m[1] * c[1] + m[2] * c[2] + self.t[i];
            let extent = am[0] * h[0] + am[1] * h[1] + am[2] * h[2];
            // Each term rounds by at most half an ulp of its magnitude: 2^-20 of the sum of the
            // magnitudes covers the few roundings many times over.
            let size = am[0] * c[0].abs() + am[1] * c[1].abs() + am[2] * c[2].abs() + self.t[i].abs() + extent;
            let pad = size * f32x8::splat(1.0 / 1_048_576.0) + f32x8::splat(f32::MIN_POSITIVE);
            let d = ((self.p[i] - centre).abs() - extent - pad).fast_max(zero);
            d2 += d * d;
        }
        // An empty lane's centre is NaN, which no comparison admits; the mask says so anyway.
        let used = lo[0].simd_le(hi[0]);
        ((d2.simd_le(f32x8::splat(tmax)) & used).to_bitmask(), d2)
    }
}

/// The nearest point of a pack's triangles, for [`PackVisitor`]: the key is the squared
/// distance, within `tmax` (the bound so far). `place` maps a triangle to where the query point
/// lives (the identity for a mesh's own query, an instance's transform for a scene's).
struct NearestLeaf<'m, P> {
    p: Vec3,
    mesh: &'m TriMesh,
    place: P,
}

impl<P: Fn([Vec3; 3]) -> [Vec3; 3]> LeafTest for NearestLeaf<'_, P> {
    /// The nearest point and its barycentrics (which an affine map keeps).
    type Hit = (Vec3, f32, f32);
    fn test<const ANY: bool>(&mut self, _: u32, pack: &TriPack, tmax: f32) -> Option<(u32, f32, Self::Hit)> {
        let mut best: Option<(u32, f32, Self::Hit)> = None;
        for &prim in pack.prim.iter().filter(|&&prim| prim != NO_PRIM) {
            let (q, u, v) = closest_on_triangle(self.p, (self.place)(self.mesh.triangle(prim as usize)));
            let d2 = (q - self.p).length_squared();
            if d2 <= best.map_or(tmax, |b| b.1) && best.is_none_or(|b| d2 < b.1) {
                best = Some((prim, d2, (q, u, v)));
            }
        }
        best
    }
}

impl MeshBvh {
    /// The point of the mesh nearest to `p` within `max_distance` (inclusive; `f32::INFINITY`
    /// for no limit), with its triangle and barycentrics, or `None` when no triangle is that
    /// near (or the mesh is empty). Refuses a NaN or infinite `p`, or a NaN or negative
    /// `max_distance`, with [`InputError::InvalidPointQuery`].
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BuildOptions, MeshBvh, TriMesh};
    /// let mesh = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let near = bvh.closest_point(Vec3::new(0.25, 0.25, 2.0), f32::INFINITY)?.unwrap();
    /// assert_eq!((near.point, near.triangle, near.distance), (Vec3::new(0.25, 0.25, 0.0), 0, 2.0));
    /// assert_eq!(bvh.closest_point(Vec3::new(0.25, 0.25, 2.0), 1.0)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn closest_point(&self, p: Vec3, max_distance: f32) -> Result<Option<ClosestPoint>, InputError> {
        if !p.is_finite() || max_distance.is_nan() || max_distance < 0.0 {
            return Err(InputError::InvalidPointQuery { point: p, max_distance });
        }
        if self.mesh.is_empty() {
            return Ok(None);
        }
        let lanes = PointLanes([f32x8::splat(p.x), f32x8::splat(p.y), f32x8::splat(p.z)]);
        Ok(self.nearest_with(&lanes, p, max_distance, |t| t))
    }

    /// The point nearest to world point `p` within `max_distance` of this mesh placed in the
    /// world by `place` (a scene's instance), in world terms: point, distance, and the
    /// barycentrics on the triangle. `p` is finite and `max_distance` not NaN nor negative.
    pub(crate) fn closest_point_placed(&self, p: Vec3, max_distance: f32, place: &Affine3A) -> Option<ClosestPoint> {
        if self.mesh.is_empty() {
            return None;
        }
        let lanes = PlacedPointLanes::new(p, place);
        self.nearest_with(&lanes, p, max_distance, |t: [Vec3; 3]| t.map(|v| place.transform_point3(v)))
    }

    /// The best-first descent of both: `lanes` keys the nodes, `place` maps each triangle before
    /// its nearest point is found.
    fn nearest_with(
        &self,
        lanes: &impl ChildBoxTest,
        p: Vec3,
        max_distance: f32,
        place: impl Fn([Vec3; 3]) -> [Vec3; 3],
    ) -> Option<ClosestPoint> {
        let mut leaf = NearestLeaf { p, mesh: &self.mesh, place };
        let mut packs = PackVisitor::<false, _> { blocks: &self.blocks, leaf: &mut leaf, best: None, tested: 0 };
        let mut stack = FixedStack::<_, STACK>::new();
        // The bound, squared, is the loop's `tmax`: a pack is opened only if its box is no farther.
        let bound2 = max_distance * max_distance;
        closest_first::<false, false, _, _, _, _>(
            &self.blocks,
            ChildRef::node(0),
            lanes,
            0.0,
            bound2,
            &mut stack,
            &mut packs,
        );
        packs.best.map(|(triangle, (point, u, v))| ClosestPoint {
            point,
            triangle,
            u,
            v,
            distance: (point - p).length(),
        })
    }
}
