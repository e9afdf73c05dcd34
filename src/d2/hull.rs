//! Convex hulls by quickhull, Box2D v3's `b2ComputeHull` (`hull.c`), operation for operation.
//!
//! Points closer than `4·slop` are welded (the first of a cluster stays), points within `2·slop`
//! of a hull edge are dropped, and the result is counter-clockwise. Failure (fewer than 3 points,
//! more than [`MAX_POLYGON_VERTICES`], all points welded or collinear) is an empty hull.

use glam::Vec2;

use super::math::{cross, distance_squared, normalize, sub};
use super::{LINEAR_SLOP, MAX_POLYGON_VERTICES};

/// A convex hull of at most [`MAX_POLYGON_VERTICES`] points in counter-clockwise order, Box2D's
/// `b2Hull`. Build polygons from it with [`crate::d2::Polygon::from_hull`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hull {
    /// The hull points; the first `count` are valid.
    pub points: [Vec2; MAX_POLYGON_VERTICES],
    /// The number of points: 0 when the hull failed, otherwise 3 to 8.
    pub count: usize,
}

impl Default for Hull {
    fn default() -> Self {
        Hull { points: [Vec2::ZERO; MAX_POLYGON_VERTICES], count: 0 }
    }
}

impl Hull {
    /// The valid points.
    #[inline]
    pub fn points(&self) -> &[Vec2] {
        &self.points[..self.count]
    }

    /// Appends a point; `false` when the hull is already full (only degenerate, rounding-ridden
    /// input gets there: a fuzzing finding).
    #[must_use]
    fn push(&mut self, p: Vec2) -> bool {
        if self.count == MAX_POLYGON_VERTICES {
            return false;
        }
        self.points[self.count] = p;
        self.count += 1;
        true
    }
}

/// Quickhull recursion: the hull of `ps` to the right of the edge `p1 → p2`, without the ends.
///
/// Each level adds one hull point, so a hull of at most `MAX_POLYGON_VERTICES` points never
/// recurses deeper than that. With extreme coordinates (around 1e17), rounding can make a point
/// look farther than 2·slop from an edge through itself, and Box2D's `b2RecurseHull` then recurses
/// forever; past the depth limit `failed` is set and the caller reports no hull (a fuzzing
/// finding, `tests/regressions.rs`).
fn recurse_hull(p1: Vec2, p2: Vec2, ps: &[Vec2], depth: usize, failed: &mut bool) -> Hull {
    let mut hull = Hull::default();
    if ps.is_empty() || *failed {
        return hull;
    }
    if depth > MAX_POLYGON_VERTICES {
        *failed = true;
        return hull;
    }

    // create an edge vector pointing from p1 to p2
    let e = normalize(sub(p2, p1));

    // discard points left of e and find point furthest to the right of e
    let mut right_points = [Vec2::ZERO; MAX_POLYGON_VERTICES];
    let mut right_count = 0;

    let mut best_index = 0;
    let mut best_distance = cross(sub(ps[best_index], p1), e);
    if best_distance > 0.0 {
        right_points[right_count] = ps[best_index];
        right_count += 1;
    }

    for (i, &p) in ps.iter().enumerate().skip(1) {
        let distance = cross(sub(p, p1), e);
        if distance > best_distance {
            best_index = i;
            best_distance = distance;
        }
        if distance > 0.0 {
            right_points[right_count] = p;
            right_count += 1;
        }
    }

    if best_distance < 2.0 * LINEAR_SLOP {
        return hull;
    }

    let best_point = ps[best_index];

    // compute hull to the right of p1-bestPoint, then of bestPoint-p2, and stitch them
    let hull1 = recurse_hull(p1, best_point, &right_points[..right_count], depth + 1, failed);
    let hull2 = recurse_hull(best_point, p2, &right_points[..right_count], depth + 1, failed);
    for &p in hull1.points().iter().chain([&best_point]).chain(hull2.points()) {
        if !hull.push(p) {
            *failed = true;
            return Hull::default();
        }
    }
    hull
}

/// The convex hull of `points` (`b2ComputeHull`); an empty hull (count 0) on failure.
///
/// ```
/// use glam::Vec2;
/// use slabtree::d2::compute_hull;
/// let pts = [Vec2::new(0.0, 0.0), Vec2::new(1.0, 0.0), Vec2::new(0.5, 0.2), Vec2::new(0.0, 1.0)];
/// let hull = compute_hull(&pts);
/// assert_eq!(hull.count, 3); // (0.5, 0.2) is inside
/// ```
pub fn compute_hull(points: &[Vec2]) -> Hull {
    let mut hull = Hull::default();
    let count = points.len();
    if !(3..=MAX_POLYGON_VERTICES).contains(&count) {
        // check your data
        return hull;
    }

    let mut lower = Vec2::splat(f32::MAX);
    let mut upper = Vec2::splat(-f32::MAX);

    // Perform aggressive point welding. First point always remains.
    // Also compute the bounding box for later.
    let mut ps = [Vec2::ZERO; MAX_POLYGON_VERTICES];
    let mut n = 0;
    let tol_sqr = 16.0 * LINEAR_SLOP * LINEAR_SLOP;
    for i in 0..count {
        let vi = points[i];
        // b2Min / b2Max: `a < b ? a : b` per component.
        lower = Vec2::new(if lower.x < vi.x { lower.x } else { vi.x }, if lower.y < vi.y { lower.y } else { vi.y });
        upper = Vec2::new(if upper.x > vi.x { upper.x } else { vi.x }, if upper.y > vi.y { upper.y } else { vi.y });

        let unique = points[..i].iter().all(|&vj| distance_squared(vi, vj) >= tol_sqr);
        if unique {
            ps[n] = vi;
            n += 1;
        }
    }

    if n < 3 {
        // all points very close together, check your data and check your scale
        return hull;
    }

    // Find an extreme point as the first point on the hull
    // b2AABB_Center: 0.5 * (lower + upper) per component.
    let c = Vec2::new(0.5 * (lower.x + upper.x), 0.5 * (lower.y + upper.y));
    let mut f1 = 0;
    let mut dsq1 = distance_squared(c, ps[f1]);
    for (i, &p) in ps.iter().enumerate().take(n).skip(1) {
        let dsq = distance_squared(c, p);
        if dsq > dsq1 {
            f1 = i;
            dsq1 = dsq;
        }
    }

    // remove p1 from working set
    let p1 = ps[f1];
    ps[f1] = ps[n - 1];
    n -= 1;

    let mut f2 = 0;
    let mut dsq2 = distance_squared(p1, ps[f2]);
    for (i, &p) in ps.iter().enumerate().take(n).skip(1) {
        let dsq = distance_squared(p1, p);
        if dsq > dsq2 {
            f2 = i;
            dsq2 = dsq;
        }
    }

    // remove p2 from working set
    let p2 = ps[f2];
    ps[f2] = ps[n - 1];
    n -= 1;

    // split the points into points that are left and right of the line p1-p2.
    let mut right_points = [Vec2::ZERO; MAX_POLYGON_VERTICES - 2];
    let mut right_count = 0;
    let mut left_points = [Vec2::ZERO; MAX_POLYGON_VERTICES - 2];
    let mut left_count = 0;

    let e = normalize(sub(p2, p1));
    for &p in &ps[..n] {
        let d = cross(sub(p, p1), e);
        // slop used here to skip points that are very close to the line p1-p2
        if d >= 2.0 * LINEAR_SLOP {
            right_points[right_count] = p;
            right_count += 1;
        } else if d <= -2.0 * LINEAR_SLOP {
            left_points[left_count] = p;
            left_count += 1;
        }
    }

    // compute hulls on right and left
    let mut failed = false;
    let hull1 = recurse_hull(p1, p2, &right_points[..right_count], 1, &mut failed);
    let hull2 = recurse_hull(p2, p1, &left_points[..left_count], 1, &mut failed);
    if failed {
        return Hull::default();
    }

    if hull1.count == 0 && hull2.count == 0 {
        // all points collinear
        return hull;
    }

    // stitch hulls together, preserving CCW winding order
    for &p in [&p1].into_iter().chain(hull1.points()).chain([&p2]).chain(hull2.points()) {
        if !hull.push(p) {
            return Hull::default();
        }
    }

    // merge collinear
    let mut searching = true;
    while searching && hull.count > 2 {
        searching = false;
        for i in 0..hull.count {
            let i1 = i;
            let i2 = (i + 1) % hull.count;
            let i3 = (i + 2) % hull.count;

            let s1 = hull.points[i1];
            let s2 = hull.points[i2];
            let s3 = hull.points[i3];

            // unit edge vector for s1-s3
            let r = normalize(sub(s3, s1));

            let distance = cross(sub(s2, s1), r);
            if distance <= 2.0 * LINEAR_SLOP {
                // remove midpoint from hull
                hull.points.copy_within(i2 + 1..hull.count, i2);
                hull.count -= 1;

                // continue searching for collinear points
                searching = true;
                break;
            }
        }
    }

    if hull.count < 3 {
        // all points collinear, shouldn't be reached since this was validated above
        hull.count = 0;
    }

    hull
}
