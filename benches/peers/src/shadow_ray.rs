//! The shadow ray of a camera ray's hit, as the shared scenes' README defines its `shadow` kind,
//! which both ray peer programs (`frontier`, `stream_vs_embree`) generate at other image sizes.

use glam::DVec3;
use slabtree::{Hit, Ray, TriMesh};

/// The shadow ray of `hit`, the hit of a ray along `dir` on `mesh`, towards `light`: from the hit
/// point moved `1e-4·size` along the triangle's normal that faces the ray, stored as f32, with
/// `tmax` the distance to the light (`size` is the scene's `D`, its box's diagonal).
pub fn shadow_ray(mesh: &TriMesh, hit: &Hit, dir: DVec3, size: f64, light: DVec3) -> Ray {
    let [v0, v1, v2] = mesh.triangle(hit.triangle as usize).map(|p| p.as_dvec3());
    let (u, v) = (f64::from(hit.u), f64::from(hit.v));
    let p = (1.0 - u - v) * v0 + u * v1 + v * v2;
    let mut n = (v1 - v0).cross(v2 - v0).normalize_or_zero();
    if n.dot(dir) > 0.0 {
        n = -n;
    }
    // The origin as a ray file stores it: rounded to f32.
    let o = (p + 1e-4 * size * n).as_vec3().as_dvec3();
    let to = light - o;
    let len = to.length();
    Ray::new(o.as_vec3(), (to / len).as_vec3()).with_range(0.0, len as f32)
}
