//! Sphere and capsule casts: the first contact of a sphere or a capsule moving along a straight
//! line with the triangles of a mesh, for character controllers and projectiles.
//!
//! The BVH is box-cast with a box around the shape, nearest leaf first and clipped at each
//! contact, as the box sweep is; each triangle is then tested exactly, in f64, by the standard
//! decomposition of a swept sphere against a triangle (Ericson, *Real-Time Collision Detection*,
//! 5.5.7: the face moved out by the radius, the edges as cylinders, the corners as spheres; the
//! earliest of these is the first contact). A capsule (a segment with a radius) adds what its
//! segment's interior can touch first: a corner of the triangle (the corner's line against the
//! segment's cylinder) and an edge (the two lines' common normal reaching the radius); its end
//! spheres are swept as spheres. A shape that starts in contact reports `t = 0`.

use glam::{DVec3, Vec3, Vec3A};

use super::MeshBvh;
use super::closest::closest_on_triangle64;
use crate::math::{Aabb, InputError, Ray};

/// The first contact of a swept sphere or capsule with a mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeCastHit {
    /// Fraction of the displacement at first contact, in `[0, 1]`; 0 when the shape starts in
    /// contact.
    pub t: f32,
    /// The triangle touched, in input order.
    pub triangle: u32,
    /// The point of contact, on the triangle.
    pub point: Vec3,
    /// Unit contact normal, from the triangle towards the shape.
    pub normal: Vec3,
}

/// The smallest root in `[0, limit]` of `a t² + b t + c`, with `c > 0` (apart at `t = 0`).
fn first_root(a: f64, b: f64, c: f64, limit: f64) -> Option<f64> {
    if a <= 0.0 {
        return None;
    }
    let disc = b * b - 4.0 * a * c;
    if disc < 0.0 || b >= 0.0 {
        // No real root, or both roots negative (moving apart).
        return None;
    }
    // The numerically stable pair: q = -(b - sqrt(disc)) / 2 > 0, roots c / q and q / a.
    let q = -0.5 * (b - disc.sqrt());
    let t = (c / q).min(q / a);
    (t >= 0.0 && t <= limit).then_some(t)
}

/// First time in `[0, limit]` at which point `p` moving by `d` comes within `r` of the infinite
/// line through `e0` with direction `e` (non-zero), where the nearest point of the line lies
/// between `e0` and `e0 + e`: (t, that nearest point).
fn point_reaches_segment(p: DVec3, d: DVec3, r: f64, e0: DVec3, e: DVec3, limit: f64) -> Option<(f64, DVec3)> {
    let ee = e.length_squared();
    let m = p - e0;
    // Components across the line: |m + t d|² - ((m + t d)·e)² / |e|² = r².
    let (md, me, de) = (m.dot(d), m.dot(e), d.dot(e));
    let a = d.length_squared() * ee - de * de;
    let b = 2.0 * (md * ee - me * de);
    let c = (m.length_squared() - r * r) * ee - me * me;
    let t = first_root(a, b, c, limit)?;
    let s = (m + d * t).dot(e) / ee;
    (0.0..=1.0).contains(&s).then(|| (t, e0 + e * s))
}

/// First time in `[0, limit]` at which a sphere of radius `r` centred at `c` and moving by `d`
/// touches triangle `tri`, with the point touched, or `None`. The sphere must not touch the
/// triangle at `t = 0` (callers check that first).
fn sphere_first_touch(c: DVec3, r: f64, d: DVec3, [a, b, cc]: [DVec3; 3], limit: f64) -> Option<(f64, DVec3)> {
    let mut best: Option<(f64, DVec3)> = None;
    let mut keep = |hit: Option<(f64, DVec3)>| {
        if let Some(h) = hit
            && best.is_none_or(|b| h.0 < b.0)
        {
            best = Some(h);
        }
    };
    // The face, moved out by r on the sphere's side.
    let n = (b - a).cross(cc - a);
    if n.length_squared() > 0.0 {
        let mut n = n.normalize();
        let mut s0 = n.dot(c - a);
        if s0 < 0.0 {
            n = -n;
            s0 = -s0;
        }
        let vel = n.dot(d);
        if s0 >= r && vel < 0.0 {
            let t = (r - s0) / vel;
            if t <= limit {
                let q = c + d * t - n * r;
                if inside(q, [a, b, cc], n) {
                    keep(Some((t, q)));
                }
            }
        }
    }
    // The edges as cylinders, the corners as spheres.
    for (e0, e1) in [(a, b), (b, cc), (cc, a)] {
        if e1 != e0 {
            keep(point_reaches_segment(c, d, r, e0, e1 - e0, limit));
        }
    }
    for v in [a, b, cc] {
        let m = c - v;
        keep(first_root(d.length_squared(), 2.0 * m.dot(d), m.length_squared() - r * r, limit).map(|t| (t, v)));
    }
    best
}

/// Whether `q`, in the plane of triangle `tri` with unit normal `n`, lies inside it (edges count).
fn inside(q: DVec3, [a, b, c]: [DVec3; 3], n: DVec3) -> bool {
    [(a, b), (b, c), (c, a)].iter().all(|&(e0, e1)| (e1 - e0).cross(q - e0).dot(n) >= 0.0)
        || [(a, b), (b, c), (c, a)].iter().all(|&(e0, e1)| (e1 - e0).cross(q - e0).dot(n) <= 0.0)
}

/// The nearest point of triangle `tri` to `p`, in f64.
fn nearest_on_triangle(p: DVec3, tri: [DVec3; 3]) -> DVec3 {
    closest_on_triangle64(p, tri).0
}

/// The nearest points of segments `[p0, p1]` and `[q0, q1]` (Ericson 5.1.9, f64).
fn segment_segment(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> (DVec3, DVec3) {
    let (d1, d2, r) = (p1 - p0, q1 - q0, p0 - q0);
    let (a, e, f) = (d1.length_squared(), d2.length_squared(), d2.dot(r));
    let (s, t);
    if a <= f64::MIN_POSITIVE && e <= f64::MIN_POSITIVE {
        return (p0, q0);
    }
    if a <= f64::MIN_POSITIVE {
        s = 0.0;
        t = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(r);
        if e <= f64::MIN_POSITIVE {
            t = 0.0;
            s = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(d2);
            let denom = a * e - b * b;
            let s0 = if denom > 0.0 { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
            let t0 = (b * s0 + f) / e;
            if t0 < 0.0 {
                t = 0.0;
                s = (-c / a).clamp(0.0, 1.0);
            } else if t0 > 1.0 {
                t = 1.0;
                s = ((b - c) / a).clamp(0.0, 1.0);
            } else {
                t = t0;
                s = s0;
            }
        }
    }
    (p0 + d1 * s, q0 + d2 * t)
}

/// The nearest points of segment `[p0, p1]` and triangle `tri`: (on the segment, on the
/// triangle). A segment through the triangle meets it where it crosses.
fn segment_triangle(p0: DVec3, p1: DVec3, tri: [DVec3; 3]) -> (DVec3, DVec3) {
    let [a, b, c] = tri;
    let n = (b - a).cross(c - a);
    if n.length_squared() > 0.0 {
        let (h0, h1) = (n.dot(p0 - a), n.dot(p1 - a));
        if (h0 <= 0.0) != (h1 <= 0.0) || h0 == 0.0 || h1 == 0.0 {
            let x = if h0 == h1 { p0 } else { p0 + (p1 - p0) * (h0 / (h0 - h1)) };
            if inside(x, tri, n) {
                return (x, x);
            }
        }
    }
    let mut best = (p0, nearest_on_triangle(p0, tri));
    let mut consider = |pair: (DVec3, DVec3)| {
        if pair.0.distance_squared(pair.1) < best.0.distance_squared(best.1) {
            best = pair;
        }
    };
    consider((p1, nearest_on_triangle(p1, tri)));
    for (e0, e1) in [(a, b), (b, c), (c, a)] {
        consider(segment_segment(p0, p1, e0, e1));
    }
    best
}

/// Whether the box of triangle `tri` meets the box `[lo, hi]` (touching counts).
fn boxes_meet(tri: [DVec3; 3], lo: DVec3, hi: DVec3) -> bool {
    let (tlo, thi) = (tri[0].min(tri[1]).min(tri[2]), tri[0].max(tri[1]).max(tri[2]));
    tlo.cmple(hi).all() && thi.cmpge(lo).all()
}

/// The contact normal from the triangle's point `q` towards the shape's core point `x`; the
/// triangle's normal facing against the motion when they coincide (a shape that starts deep).
fn contact_normal(x: DVec3, q: DVec3, tri: [DVec3; 3], d: DVec3) -> Vec3 {
    let v = x - q;
    if v.length_squared() > 0.0 {
        return v.normalize().as_vec3();
    }
    let n = (tri[1] - tri[0]).cross(tri[2] - tri[0]);
    let n = if n.dot(d) > 0.0 { -n } else { n };
    n.normalize_or_zero().as_vec3()
}

/// First contact, `t` in `[0, limit]`, of the sphere (`c`, `r`) moving by `d` with triangle
/// `tri`: (t, contact point, unit normal).
fn sweep_sphere_triangle(c: Vec3, r: f32, d: Vec3, tri: &[Vec3; 3], limit: f32) -> Option<(f32, (Vec3, Vec3))> {
    let tri64 = tri.map(Vec3::as_dvec3);
    let (c, d, r) = (c.as_dvec3(), d.as_dvec3(), f64::from(r));
    if boxes_meet(tri64, c - r, c + r) {
        let q0 = nearest_on_triangle(c, tri64);
        if c.distance_squared(q0) <= r * r {
            return Some((0.0, (q0.as_vec3(), contact_normal(c, q0, tri64, d))));
        }
    }
    let (t, q) = sphere_first_touch(c, r, d, tri64, f64::from(limit))?;
    Some((t as f32, (q.as_vec3(), contact_normal(c + d * t, q, tri64, d))))
}

/// First contact, `t` in `[0, limit]`, of the capsule (segment `[p0, p1]`, radius `r`) moving by
/// `d` with triangle `tri`: (t, contact point, unit normal).
fn sweep_capsule_triangle(
    p0: Vec3,
    p1: Vec3,
    r: f32,
    d: Vec3,
    tri: &[Vec3; 3],
    limit: f32,
) -> Option<(f32, (Vec3, Vec3))> {
    let tri64 = tri.map(Vec3::as_dvec3);
    let (p0, p1, d, r, limit) = (p0.as_dvec3(), p1.as_dvec3(), d.as_dvec3(), f64::from(r), f64::from(limit));
    // Already in contact: only where the triangle's box meets the capsule's at the start.
    if boxes_meet(tri64, p0.min(p1) - r, p0.max(p1) + r) {
        let (x0, q0) = segment_triangle(p0, p1, tri64);
        if x0.distance_squared(q0) <= r * r {
            return Some((0.0, (q0.as_vec3(), contact_normal(x0, q0, tri64, d))));
        }
    }
    let mut best: Option<(f64, DVec3)> = None;
    let mut keep = |hit: Option<(f64, DVec3)>| {
        if let Some(h) = hit
            && best.is_none_or(|b| h.0 < b.0)
        {
            best = Some(h);
        }
    };
    // The end spheres.
    keep(sphere_first_touch(p0, r, d, tri64, limit));
    keep(sphere_first_touch(p1, r, d, tri64, limit));
    let u = p1 - p0;
    if u.length_squared() > 0.0 {
        // A corner against the segment's cylinder: the corner moving by -d.
        for v in tri64 {
            keep(point_reaches_segment(v, -d, r, p0, u, limit).map(|(t, _)| (t, v)));
        }
        // An edge against the segment's interior: the lines' common normal reaches r.
        for (e0, e1) in [(tri64[0], tri64[1]), (tri64[1], tri64[2]), (tri64[2], tri64[0])] {
            let w = u.cross(e1 - e0);
            if w.length_squared() <= 1e-24 * u.length_squared() * (e1 - e0).length_squared() {
                continue;
            }
            let n = w.normalize();
            let (h0, vel) = (n.dot(p0 - e0), n.dot(d));
            if vel == 0.0 {
                continue;
            }
            for side in [r, -r] {
                let t = (side - h0) / vel;
                if !(0.0..=limit).contains(&t) {
                    continue;
                }
                let (x, q) = segment_segment(p0 + d * t, p1 + d * t, e0, e1);
                // Only a contact between the two interiors, at the radius.
                if (x.distance(q) - r).abs() <= 1e-9 * (r + x.abs().max_element()) {
                    keep(Some((t, q)));
                }
            }
        }
    }
    let (t, q) = best?;
    let (x, _) = segment_segment(p0 + d * t, p1 + d * t, q, q);
    Some((t as f32, (q.as_vec3(), contact_normal(x, q, tri64, d))))
}

impl MeshBvh {
    /// First contact of the sphere of radius `radius` centred at `center` moving by
    /// `displacement` (`t` in `[0, 1]`) with the mesh's triangles: exact, no tunnelling through
    /// thin walls and no contact reported early (see the module docs). Refuses a non-finite
    /// centre or displacement, or a NaN, infinite or negative radius.
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BuildOptions, MeshBvh, TriMesh};
    /// // A floor triangle at y = 0, a ball of radius 0.5 falling from y = 2 by 4 units.
    /// let mesh = TriMesh::new(vec![Vec3::new(-5.0, 0.0, -5.0), Vec3::new(5.0, 0.0, -5.0), Vec3::new(0.0, 0.0, 5.0)], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let hit = bvh.cast_sphere(Vec3::new(0.0, 2.0, 0.0), 0.5, Vec3::new(0.0, -4.0, 0.0))?.unwrap();
    /// assert_eq!((hit.t, hit.point, hit.normal), (0.375, Vec3::ZERO, Vec3::Y));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cast_sphere(
        &self,
        center: Vec3,
        radius: f32,
        displacement: Vec3,
    ) -> Result<Option<ShapeCastHit>, InputError> {
        Ok(self.cast(&Swept::new(center, center, radius, displacement)?))
    }

    /// First contact of the capsule (the points within `radius` of segment `[a, b]`) moving by
    /// `displacement` (`t` in `[0, 1]`) with the mesh's triangles, exact as
    /// [`MeshBvh::cast_sphere`]: a character controller's step. Refuses non-finite points or
    /// displacement, or a NaN, infinite or negative radius.
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BuildOptions, MeshBvh, TriMesh};
    /// // A wall at x = 1 facing the origin, and a standing capsule (y from 0 to 2, radius 0.25)
    /// // walking 2 units along x: its side touches the wall after 0.75 units.
    /// let mesh = TriMesh::new(vec![Vec3::new(1.0, -5.0, -5.0), Vec3::new(1.0, 5.0, -5.0), Vec3::new(1.0, 0.0, 5.0)], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let hit = bvh.cast_capsule(Vec3::ZERO, Vec3::new(0.0, 2.0, 0.0), 0.25, Vec3::new(2.0, 0.0, 0.0))?.unwrap();
    /// assert_eq!((hit.t, hit.normal), (0.375, -Vec3::X));
    /// assert_eq!(hit.point.x, 1.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cast_capsule(
        &self,
        a: Vec3,
        b: Vec3,
        radius: f32,
        displacement: Vec3,
    ) -> Result<Option<ShapeCastHit>, InputError> {
        Ok(self.cast(&Swept::new(a, b, radius, displacement)?))
    }

    /// The BVH walk of both casts, with the shape's box padded so that f32 rounding never makes
    /// it smaller than the shape.
    fn cast(&self, shape: &Swept) -> Option<ShapeCastHit> {
        let bounds = shape.bounds();
        let (centre, ext, displacement) = (bounds.center(), bounds.half_extents(), shape.d);
        let pad = (centre.abs() + ext) * 1e-6 + Vec3A::splat(f32::MIN_POSITIVE);
        let ext = (ext + pad).min(Vec3A::splat(f32::MAX));
        let ray = Ray::new(centre, Vec3A::from(displacement)).with_range(0.0, 1.0);
        if ray.validate().is_err() || !ext.is_finite() {
            return None;
        }
        let (triangle, t, (point, normal)) = self.sweep_with(&ray, ext, |tri, limit| shape.hit(tri, limit))?;
        Some(ShapeCastHit { t, triangle, point, normal })
    }
}

/// A sphere or a capsule moving by `d`, checked: the points within `r` of segment `[a, b]` (a
/// sphere when the ends coincide). The casts of meshes and scenes both take one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Swept {
    a: Vec3,
    b: Vec3,
    r: f32,
    d: Vec3,
    /// The shape's box at the start, padded for the screen in [`Swept::hit`].
    lo: Vec3,
    hi: Vec3,
}

impl Swept {
    /// The shape, or the error for a non-finite point or displacement, or a NaN, infinite or
    /// negative radius.
    pub(crate) fn new(a: Vec3, b: Vec3, r: f32, d: Vec3) -> Result<Swept, InputError> {
        if !d.is_finite() {
            return Err(InputError::NonFiniteDisplacement);
        }
        let bad = [a, b].into_iter().find(|p| !p.is_finite()).or((!r.is_finite() || r < 0.0).then_some(a));
        if let Some(point) = bad {
            return Err(InputError::InvalidShape { point, radius: r });
        }
        // 1e-6 of the largest coordinate the screen's sums meet covers their f32 rounding.
        let (lo, hi) = (a.min(b), a.max(b));
        let pad = r + (lo.abs().max(hi.abs()) + d.abs() + r) * 1e-6 + Vec3::splat(f32::MIN_POSITIVE);
        Ok(Swept { a, b, r, d, lo: lo - pad, hi: hi + pad })
    }

    /// Its box at the start (infinite when the radius overflows the coordinates).
    pub(crate) fn bounds(&self) -> Aabb {
        Aabb::new(Vec3A::from(self.a.min(self.b)), Vec3A::from(self.a.max(self.b))).expand(self.r)
    }

    /// Its displacement.
    pub(crate) fn displacement(&self) -> Vec3 {
        self.d
    }

    /// Its first contact with triangle `tri` by `limit`: (t, contact point, unit normal).
    ///
    /// A triangle whose box misses the box of the sweep up to `limit` cannot be touched, and is
    /// refused before the exact f64 test: most of those a walk hands over are (a leaf's box holds
    /// four triangles; `docs/performance.md`). The start box is padded (see [`Swept::new`]) so
    /// that f32 rounding never refuses a contact. Inlined into the leaf loop, where a call per
    /// triangle cost time.
    #[inline(always)]
    pub(crate) fn hit(&self, tri: &[Vec3; 3], limit: f32) -> Option<(f32, (Vec3, Vec3))> {
        let (lo, hi) = (tri[0].min(tri[1]).min(tri[2]), tri[0].max(tri[1]).max(tri[2]));
        // (`beyond`: see below.)
        let beyond = limit.next_up();
        let moved = self.d * beyond;
        if lo.cmpgt(self.hi + moved.max(Vec3::ZERO)).any() || hi.cmplt(self.lo + moved.min(Vec3::ZERO)).any() {
            return None;
        }
        // The exact test finds `t` in f64 and reports it in f32. A contact counts when its f32
        // `t` is within `limit`, not its f64 one: two triangles whose contacts round to the same
        // f32 `t` are then both seen, whichever the walk meets first (the leaf keeps the lower
        // index of a tie), so the SIMD levels, which order children differently, agree. Found
        // by the `simd_levels` fuzz target.
        let hit = if self.a == self.b {
            sweep_sphere_triangle(self.a, self.r, self.d, tri, beyond)
        } else {
            sweep_capsule_triangle(self.a, self.b, self.r, self.d, tri, beyond)
        }?;
        (hit.0 <= limit).then_some(hit)
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::Swept;

    /// A contact whose f64 time lies just past an f32 value `t` but rounds to it counts as a
    /// contact at `t` when the limit is `t`: else, of two triangles touched at the same f32 `t`,
    /// the one met first would hide the other, and the answer would depend on the walk's order.
    #[test]
    fn a_contact_that_rounds_to_the_limit_is_within_it() {
        let (r, d) = (0.25f32, 3.0f32);
        let mut checked = 0;
        for k in 0..200 {
            // A floor at height h under a sphere falling from the origin by d along +z.
            let h = 1.0 + k as f32 * 0.013;
            let exact = (f64::from(h) - f64::from(r)) / f64::from(d);
            let t = exact as f32;
            if f64::from(t) >= exact {
                continue; // rounded up: within the limit in f64 too
            }
            let floor = [Vec3::new(-5.0, -5.0, h), Vec3::new(5.0, -5.0, h), Vec3::new(0.0, 5.0, h)];
            let sphere = Swept::new(Vec3::ZERO, Vec3::ZERO, r, Vec3::new(0.0, 0.0, d)).unwrap();
            let hit = sphere.hit(&floor, t).map(|h| h.0);
            assert_eq!(hit, Some(t), "floor at {h}: contact at {exact} (f32 {t}) with limit {t}");
            assert_eq!(sphere.hit(&floor, t.next_down()), None, "floor at {h}: a contact past the limit");
            checked += 1;
        }
        assert!(checked > 20, "only {checked} contacts rounded down");
    }
}
