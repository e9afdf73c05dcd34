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
