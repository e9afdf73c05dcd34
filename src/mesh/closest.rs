//! Closest point: the point of a mesh nearest to a query point, by a best-first descent with a
//! shrinking distance bound.
//!
//! A node's eight lane boxes are tested at once for their squared distance to the point
//! (`f32x8`); lanes farther than the best distance found so far are dropped, the others wait on a
//! stack nearest on top, so the first leaves reached are near and the bound shrinks early. At a
//! leaf, each triangle's nearest point is found by Ericson's region test ("Real-Time Collision
//! Detection", 5.1.5, `ClosestPtPointTriangle`), which also gives its barycentrics.

use glam::Vec3;
use wide::f32x8;

use super::MeshBvh;
use super::triangle::NO_PRIM;
use crate::math::InputError;
use crate::wide::{ChildRef, FixedStack, Node8};

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
/// A degenerate triangle (a segment or a point) falls into a corner or edge region.
pub(crate) fn closest_on_triangle(p: Vec3, [a, b, c]: [Vec3; 3]) -> (Vec3, f32, f32) {
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
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, v, 0.0);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, 0.0, 1.0);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, 0.0, w);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, 1.0 - w, w);
    }
    let denom = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denom, vc * denom);
    (a + ab * v + ac * w, v, w)
}

/// Squared distances from `p` to the eight lane boxes of `node` (`+inf` for empty lanes).
#[inline(always)]
fn lane_distances(node: &Node8, p: [f32x8; 3]) -> f32x8 {
    let zero = f32x8::splat(0.0);
    let mut d2 = zero;
    for (a, &pa) in p.iter().enumerate() {
        let (lo, hi) = (f32x8::new(node.bounds[0][a]), f32x8::new(node.bounds[1][a]));
        // Outside below, outside above, or inside (0); an empty lane's +inf min gives +inf.
        let d = (lo - pa).fast_max(pa - hi).fast_max(zero);
        d2 += d * d;
    }
    d2
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
        let lanes = [f32x8::splat(p.x), f32x8::splat(p.y), f32x8::splat(p.z)];
        // The bound, squared; a leaf is opened only if its box is no farther.
        let mut bound = max_distance * max_distance;
        let mut best: Option<(Vec3, u32, f32, f32)> = None;
        let mut stack = FixedStack::<(ChildRef, f32), { super::bvh::STACK }>::new();
        stack.push((ChildRef::node(0), 0.0));
        while let Some((c, d2)) = stack.pop() {
            if d2 > bound {
                continue;
            }
            if c.is_leaf() {
                let pack = self.blocks.pack(c.index()).expect("a leaf reference names a pack");
                for &prim in &pack.prim {
                    if prim == NO_PRIM {
                        continue;
                    }
                    let (q, u, v) = closest_on_triangle(p, self.mesh.triangle(prim as usize));
                    let dq = (q - p).length_squared();
                    if dq <= bound && best.is_none_or(|b| dq < (b.0 - p).length_squared()) {
                        bound = dq;
                        best = Some((q, prim, u, v));
                    }
                }
                continue;
            }
            let node = self.blocks.node(c.index());
            let d = lane_distances(node, lanes);
            let mut mask = d.simd_le(f32x8::splat(bound)).to_bitmask() & node.used_lanes();
            let d = d.to_array();
            // Far first onto the stack, so the nearest is taken next (at most 8: insertion). The
            // next pop takes one of them at once, so the stack grows by at most 7 per level:
            // within `STACK` for any tree a build or a saved BVH's check lets through.
            let mut order = [0usize; 8];
            let mut n = 0;
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let mut j = n;
                while j > 0 && d[order[j - 1]] < d[l] {
                    order[j] = order[j - 1];
                    j -= 1;
                }
                order[j] = l;
                n += 1;
            }
            for &l in &order[..n] {
                stack.push((node.child[l], d[l]));
            }
        }
        Ok(best.map(|(point, triangle, u, v)| ClosestPoint { point, triangle, u, v, distance: (point - p).length() }))
    }
}
