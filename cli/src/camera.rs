//! A pinhole camera, and the default view that frames a whole model.

use glam::Vec3;
use slabtree::{Aabb, Ray};

use super::error::{CliError, CliResult};

/// A pinhole camera: rays from `eye` through an image plane one unit in front of it.
#[derive(Clone, Copy, Debug)]
pub struct Camera {
    /// Position.
    pub eye: Vec3,
    /// Unit view direction.
    pub forward: Vec3,
    /// Unit image right.
    pub right: Vec3,
    /// Unit image up.
    pub up: Vec3,
    /// `tan(vfov / 2)`.
    tan_half: f32,
    /// Width over height.
    aspect: f32,
}

impl Camera {
    /// A camera at `eye` looking at `at`, with `up` roughly up and a vertical field of view of
    /// `fov_deg` degrees, for an image `aspect` (width / height) wide.
    pub fn look_at(eye: Vec3, at: Vec3, up: Vec3, fov_deg: f32, aspect: f32) -> CliResult<Camera> {
        let forward = (at - eye).normalize_or_zero();
        let right = forward.cross(up).normalize_or_zero();
        if forward == Vec3::ZERO || right == Vec3::ZERO {
            return Err(CliError::new(
                "the camera's up direction is parallel to its view direction (or zero): choose another --up",
            ));
        }
        let up = right.cross(forward);
        Ok(Camera { eye, forward, right, up, tan_half: (fov_deg.to_radians() / 2.0).tan(), aspect })
    }

    /// The view of the whole of a model (its vertices `points`, inside `bounds`) from direction
    /// `view` (from the centre towards the eye): the camera looks at the centre of the bounds
    /// from just far enough away that every point is in the picture, with a small margin.
    pub fn framing(
        bounds: &Aabb,
        points: impl Iterator<Item = Vec3>,
        view: Vec3,
        up: Vec3,
        fov_deg: f32,
        aspect: f32,
    ) -> CliResult<Camera> {
        let (lo, hi) = (Vec3::from(bounds.min), Vec3::from(bounds.max));
        let center = (lo + hi) / 2.0;
        let dir = view.normalize_or_zero();
        if dir == Vec3::ZERO {
            return Err(CliError::new("--view must not be zero"));
        }
        // The basis does not depend on the distance: find it at distance 1.
        let basis = Camera::look_at(center + dir, center, up, fov_deg, aspect)?;
        let (tan_v, tan_h) = (basis.tan_half / 1.08, basis.tan_half * aspect / 1.08);
        // A point q (relative to the centre) is in view at distance d when
        // |q·right| <= tan_h · (d - q·dir), and the same for up.
        let mut dist = 1e-3 * (hi - lo).length().max(f32::MIN_POSITIVE);
        for p in points {
            let q = p - center;
            let depth = q.dot(dir);
            dist = dist.max(depth + q.dot(basis.right).abs() / tan_h).max(depth + q.dot(basis.up).abs() / tan_v);
        }
        Camera::look_at(center + dir * dist, center, up, fov_deg, aspect)
    }

    /// The ray through image point `(x, y)` in pixels of a `width × height` image (x to the right,
    /// y down; pixel `(i, j)` covers `[i, i+1) × [j, j+1)`).
    pub fn ray(&self, x: f32, y: f32, width: u32, height: u32) -> Ray {
        let sx = (2.0 * x / width as f32 - 1.0) * self.tan_half * self.aspect;
        let sy = (1.0 - 2.0 * y / height as f32) * self.tan_half;
        Ray::new(self.eye, (self.forward + sx * self.right + sy * self.up).normalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3A;

    #[test]
    fn centre_ray_looks_at_the_target() {
        let c = Camera::look_at(Vec3::new(0.0, 0.0, 5.0), Vec3::ZERO, Vec3::Y, 40.0, 2.0).unwrap();
        let r = c.ray(50.0, 25.0, 100, 50);
        assert!(r.dir().abs_diff_eq(-Vec3A::Z, 1e-6));
        // Left edge points left, top edge points up.
        assert!(c.ray(0.0, 25.0, 100, 50).dir().x < 0.0);
        assert!(c.ray(50.0, 0.0, 100, 50).dir().y > 0.0);
    }

    #[test]
    fn framing_sees_every_corner() {
        let b = Aabb { min: Vec3A::new(-1.0, 2.0, -3.0), max: Vec3A::new(4.0, 3.0, 1.0) };
        let corners: Vec<Vec3> = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 == 0 { b.min.x } else { b.max.x },
                    if i & 2 == 0 { b.min.y } else { b.max.y },
                    if i & 4 == 0 { b.min.z } else { b.max.z },
                )
            })
            .collect();
        let c = Camera::framing(&b, corners.iter().copied(), Vec3::new(0.55, 0.45, 1.0), Vec3::Y, 40.0, 16.0 / 9.0)
            .unwrap();
        let mut widest = 0.0f32;
        for p in corners {
            let d = p - c.eye;
            let z = d.dot(c.forward);
            assert!(z > 0.0);
            let (x, y) = ((d.dot(c.right) / z).abs() / (c.tan_half * c.aspect), (d.dot(c.up) / z).abs() / c.tan_half);
            assert!(x <= 1.0 && y <= 1.0);
            widest = widest.max(x).max(y);
        }
        assert!(widest > 0.9, "the model fills the picture: {widest}");
        assert!(Camera::look_at(Vec3::ZERO, Vec3::Y, Vec3::Y, 40.0, 1.0).is_err());
    }
}
