//! The exact-ish triangle reference of the mesh tests.

use glam::DVec3;

/// Möller–Trumbore (1997) in f64 without any epsilon: the ray parameter `t` and the barycentric
/// weights `u`, `v` of the second and third vertex where the line through `o` along `d` meets the
/// triangle's plane, or `None` when they are parallel. What counts as a hit (a slack on the
/// barycentrics, a range of `t`) is the caller's choice.
pub fn mt64(o: DVec3, d: DVec3, [a, b, c]: [DVec3; 3]) -> Option<(f64, f64, f64)> {
    let (e1, e2) = (b - a, c - a);
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 {
        return None;
    }
    let tv = o - a;
    let u = tv.dot(p) / det;
    let q = tv.cross(e1);
    let v = d.dot(q) / det;
    Some((e2.dot(q) / det, u, v))
}

/// The smallest of the three barycentric weights: negative outside the triangle.
pub fn margin(u: f64, v: f64) -> f64 {
    u.min(v).min(1.0 - u - v)
}

/// The nearest point of segment `[a, b]` to `p`, in f64 (a degenerate segment is its point).
pub fn on_segment(p: DVec3, a: DVec3, b: DVec3) -> DVec3 {
    let ab = b - a;
    let len2 = ab.length_squared();
    if len2 == 0.0 { a } else { a + ab * ((p - a).dot(ab) / len2).clamp(0.0, 1.0) }
}

/// Distance from `p` to triangle `[a, b, c]` in f64, by another method than the library's
/// Voronoi regions: the projection onto the face if it falls inside, else the nearest edge.
pub fn triangle_distance(p: DVec3, [a, b, c]: [DVec3; 3]) -> f64 {
    let n = (b - a).cross(c - a);
    let mut best = [on_segment(p, a, b), on_segment(p, b, c), on_segment(p, c, a)]
        .map(|q| q.distance(p))
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    if n.length_squared() > 0.0 {
        let q = p - n * ((p - a).dot(n) / n.length_squared());
        // Inside when q is on the inner side of every edge.
        if [(a, b), (b, c), (c, a)].iter().all(|&(e0, e1)| (e1 - e0).cross(q - e0).dot(n) >= 0.0) {
            best = best.min(q.distance(p));
        }
    }
    best
}

/// `n` random triangles around points in `[0, 20]^3`, triangle `i` with corners spread over a
/// cube of side `size(i)`: the soup the mesh tests build on (each appends its own degenerate
/// triangles). Returns positions and index triples.
pub fn random_triangles(n: usize, seed: u64, size: impl Fn(u32) -> f32) -> (Vec<glam::Vec3>, Vec<[u32; 3]>) {
    let mut r = crate::rng::Rng(seed);
    let (mut p, mut t) = (Vec::new(), Vec::new());
    for i in 0..n as u32 {
        let c = r.unit3() * 20.0;
        let s = size(i);
        for _ in 0..3 {
            p.push(c + (r.unit3() - glam::Vec3::splat(0.5)) * s);
        }
        t.push([3 * i, 3 * i + 1, 3 * i + 2]);
    }
    (p, t)
}

/// An interior in `[0, 20]³`, where spatial splits pay and put triangles in several leaves: the
/// six walls, each cut into eight long strips of two triangles that span the wall; twelve long
/// thin beams from wall to wall, diagonal and across; and `n` small random triangles inside
/// (as [`random_triangles`] with size 1.5).
pub fn room(n: usize, seed: u64) -> (Vec<glam::Vec3>, Vec<[u32; 3]>) {
    use glam::Vec3;
    let (mut p, mut t) = random_triangles(n, seed, |_| 1.5);
    let mut tri = |a: Vec3, b: Vec3, c: Vec3| {
        let k = p.len() as u32;
        p.extend([a, b, c]);
        t.push([k, k + 1, k + 2]);
    };
    let s = 20.0;
    for axis in 0..3 {
        let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
        for side in [0.0, s] {
            for k in 0..8 {
                let (v0, v1) = (k as f32 * s / 8.0, (k + 1) as f32 * s / 8.0);
                let corner = |cu: f32, cv: f32| {
                    let mut q = Vec3::splat(side);
                    q[u] = cu;
                    q[v] = cv;
                    q
                };
                tri(corner(0.0, v0), corner(s, v0), corner(s, v1));
                tri(corner(0.0, v0), corner(s, v1), corner(0.0, v1));
            }
        }
    }
    let mut r = crate::rng::Rng(seed ^ 0xbea7);
    for _ in 0..12 {
        let a = r.unit3() * s;
        let b = r.unit3() * s;
        let c = a + (r.unit3() - Vec3::splat(0.5)) * 0.3;
        tri(a, b, c);
    }
    (p, t)
}

/// Whether the triangle keeps a point after clipping to the box `[lo, hi]` (f64,
/// Sutherland–Hodgman against the six planes): the triangle–box oracle of the overlap tests.
pub fn clip_meets(tri: [DVec3; 3], lo: DVec3, hi: DVec3) -> bool {
    let mut poly: Vec<DVec3> = tri.to_vec();
    for a in 0..3 {
        for (bound, keep_below) in [(lo[a], false), (hi[a], true)] {
            let inside = |p: DVec3| if keep_below { p[a] <= bound } else { p[a] >= bound };
            let mut next = Vec::new();
            for i in 0..poly.len() {
                let (p, q) = (poly[i], poly[(i + 1) % poly.len()]);
                if inside(p) {
                    next.push(p);
                }
                if inside(p) != inside(q) {
                    let t = (bound - p[a]) / (q[a] - p[a]);
                    let mut x = p + (q - p) * t;
                    x[a] = bound;
                    next.push(x);
                }
            }
            poly = next;
            if poly.is_empty() {
                return false;
            }
        }
    }
    true
}
