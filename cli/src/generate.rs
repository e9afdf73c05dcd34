//! Scenes generated in code, so that the command works with no files: a field of procedural objects
//! (the default render) and the Cornell box. Also writes any scene to an OBJ file.

use std::f32::consts::{PI, TAU};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

use glam::{Affine3A, Quat, Vec3};
use slabtree::TriMesh;

use super::args::Builtin;
use super::error::{CliError, CliResult};
use super::rng::{self, Rng};
use super::scene::{Scene, View};

/// Generates a built-in scene.
pub fn builtin(which: Builtin) -> Scene {
    match which {
        Builtin::Field => field(),
        Builtin::Cornell => cornell(),
    }
}

/// Positions, triangles and a colour per triangle, grown one object at a time.
#[derive(Default)]
struct Builder {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    colors: Vec<Vec3>,
    /// The finished objects' triangle ranges.
    objects: Vec<Range<u32>>,
}

impl Builder {
    /// Adds a parametric surface `f(u, v)` for `u, v` in `[0, 1]` sampled on a `nu × nv` grid of
    /// quads; `wrap_u` joins the `u = 1` seam to `u = 0` (closed in u).
    fn surface(&mut self, nu: u32, nv: u32, wrap_u: bool, color: Vec3, xf: &Affine3A, f: impl Fn(f32, f32) -> Vec3) {
        let base = self.positions.len() as u32;
        let cols = if wrap_u { nu } else { nu + 1 };
        for j in 0..=nv {
            for i in 0..cols {
                let p = f(i as f32 / nu as f32, j as f32 / nv as f32);
                self.positions.push(xf.transform_point3(p));
            }
        }
        for j in 0..nv {
            for i in 0..nu {
                let i1 = if wrap_u { (i + 1) % nu } else { i + 1 };
                let a = base + j * cols + i;
                let b = base + j * cols + i1;
                let c = base + (j + 1) * cols + i1;
                let d = base + (j + 1) * cols + i;
                self.triangles.push([a, b, c]);
                self.triangles.push([a, c, d]);
                self.colors.extend([color, color]);
            }
        }
        self.end_object();
    }

    /// Closes the current object: the triangles added since the last one.
    fn end_object(&mut self) {
        let start = self.objects.last().map_or(0, |r| r.end);
        self.objects.push(start..self.triangles.len() as u32);
    }

    /// Adds `mesh` under `xf` as one object of one colour.
    fn mesh(&mut self, mesh: &TriMesh, color: Vec3, xf: &Affine3A) {
        let base = self.positions.len() as u32;
        self.positions.extend(mesh.positions().iter().map(|&p| xf.transform_point3(p)));
        self.triangles.extend(mesh.triangles().iter().map(|t| t.map(|v| base + v)));
        self.colors.extend(std::iter::repeat_n(color, mesh.len()));
        self.end_object();
    }

    /// Adds a planar polygon given by its corners in order (fan-triangulated).
    fn polygon(&mut self, corners: &[Vec3], color: Vec3) {
        let base = self.positions.len() as u32;
        self.positions.extend_from_slice(corners);
        for i in 1..corners.len() as u32 - 1 {
            self.triangles.push([base, base + i, base + i + 1]);
            self.colors.push(color);
        }
    }

    fn finish(self, name: &str, view: Option<View>, light: Option<Vec3>) -> Scene {
        let mesh = TriMesh::new(self.positions, self.triangles).expect("generated meshes are valid");
        Scene { name: name.to_owned(), mesh, colors: Some(self.colors), view, light, objects: self.objects }
    }
}

/// sRGB-ish colour from hue, saturation and value, returned as linear RGB.
fn hsv(h: f32, s: f32, v: f32) -> Vec3 {
    let k = |n: f32| {
        let k = (n + h * 6.0) % 6.0;
        v - v * s * k.min(4.0 - k).clamp(0.0, 1.0)
    };
    Vec3::new(k(5.0), k(3.0), k(1.0)).powf(2.2)
}

/// The default scene: a checkered ground with a grid of generated objects (spheres, tori, rounded
/// boxes, vases, blobs, capsules) resting on it, and a torus knot in the middle: about 1.4 million
/// triangles. The light is a sun high to the left, so every object casts a visible shadow.
fn field() -> Scene {
    let mut b = Builder::default();
    let mut rng = Rng(0x51ab_7233);

    // Ground: a 24 × 24 checkerboard of two greys.
    let half = 36.0;
    let n = 24;
    let cell = 2.0 * half / n as f32;
    for j in 0..n {
        for i in 0..n {
            let (x, z) = (-half + i as f32 * cell, -half + j as f32 * cell);
            let c = if (i + j) % 2 == 0 { Vec3::splat(0.62) } else { Vec3::splat(0.48) };
            b.polygon(
                &[
                    Vec3::new(x, 0.0, z),
                    Vec3::new(x, 0.0, z + cell),
                    Vec3::new(x + cell, 0.0, z + cell),
                    Vec3::new(x + cell, 0.0, z),
                ],
                c,
            );
        }
    }
    b.end_object();

    // A grid of objects, leaving the middle free for the knot.
    let grid = 17;
    let spacing = 3.6;
    for gz in 0..grid {
        for gx in 0..grid {
            let (cx, cz) =
                ((gx as f32 - (grid - 1) as f32 / 2.0) * spacing, (gz as f32 - (grid - 1) as f32 / 2.0) * spacing);
            if cx.abs() < 7.0 && cz.abs() < 7.0 {
                continue;
            }
            let jitter = Vec3::new(rng.range(-0.5, 0.5), 0.0, rng.range(-0.5, 0.5));
            let color = hsv(rng.unit(), rng.range(0.45, 0.75), rng.range(0.75, 0.95));
            let size = rng.range(0.8, 1.35);
            let yaw = Quat::from_rotation_y(rng.range(0.0, TAU));
            let kind = rng::below(&mut rng, 6);
            let before = b.positions.len();
            let xf = Affine3A::from_rotation_translation(yaw, Vec3::ZERO) * Affine3A::from_scale(Vec3::splat(size));
            match kind {
                // The library's closed shapes; the others are this scene's own surfaces.
                0 => b.mesh(&TriMesh::uv_sphere(1.0, 64, 32), color, &xf),
                1 => {
                    let (r, t) = (rng.range(0.6, 0.8), rng.range(0.18, 0.32));
                    let tilt = Quat::from_rotation_x(rng.range(0.0, PI / 2.0));
                    let xf = xf * Affine3A::from_quat(tilt);
                    b.mesh(&TriMesh::torus(r, t, 72, 24), color, &xf);
                }
                2 => {
                    let e = rng.range(0.25, 0.5);
                    b.surface(64, 32, true, color, &xf, move |u, v| superellipsoid(u, v, e) * 0.8);
                }
                3 => {
                    let (a, w) = (rng.range(0.25, 0.45), rng.range(1.5, 3.5));
                    b.surface(64, 32, true, color, &xf, move |u, v| vase(u, v, a, w));
                }
                4 => {
                    let (f, a) = (rng.range(2.0, 5.0).round(), rng.range(0.08, 0.16));
                    b.surface(96, 48, true, color, &xf, move |u, v| blob(u, v, f, a));
                }
                _ => {
                    let len = rng.range(0.6, 1.4);
                    let tilt = Quat::from_rotation_z(rng.range(0.0, PI / 2.0));
                    let xf = xf * Affine3A::from_quat(tilt);
                    b.surface(48, 40, true, color, &xf, move |u, v| capsule(u, v, 0.45, len));
                }
            }
            // Rest the object on the ground at its grid cell.
            let lowest = b.positions[before..].iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
            let shift = Vec3::new(cx, -lowest, cz) + jitter;
            for p in &mut b.positions[before..] {
                *p += shift;
            }
        }
    }

    // The centrepiece: a (2, 3) torus knot tube, standing up.
    let before = b.positions.len();
    let xf = Affine3A::from_rotation_x(PI / 2.0) * Affine3A::from_scale(Vec3::splat(2.2));
    b.surface(1536, 32, true, hsv(0.08, 0.7, 0.95), &xf, |u, v| torus_knot(u, v, 2.0, 3.0, 0.42));
    let lowest = b.positions[before..].iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    for p in &mut b.positions[before..] {
        p.y += 0.05 - lowest;
    }

    let view = View { eye: Vec3::new(0.0, 21.0, 44.0), at: Vec3::new(0.0, 0.5, 4.0), fov: 40.0 };
    b.finish("built-in field", Some(view), Some(Vec3::new(-70.0, 90.0, 35.0)))
}

/// The unit sphere as a parametric surface (`u` around, `v` from pole to pole): the base that the
/// blob and the capsule deform.
fn sphere(u: f32, v: f32) -> Vec3 {
    let (phi, theta) = (u * TAU, v * PI);
    Vec3::new(theta.sin() * phi.cos(), -theta.cos(), theta.sin() * phi.sin())
}

/// A rounded box: the superellipsoid |x|^(2/e) + |y|^(2/e) + |z|^(2/e) = 1.
fn superellipsoid(u: f32, v: f32, e: f32) -> Vec3 {
    let spow = |x: f32| x.signum() * x.abs().powf(e);
    let (phi, theta) = (u * TAU, v * PI - PI / 2.0);
    Vec3::new(spow(theta.cos()) * spow(phi.cos()), spow(theta.sin()), spow(theta.cos()) * spow(phi.sin()))
}

/// A closed surface of revolution with a wavy profile, like a vase.
fn vase(u: f32, v: f32, amp: f32, waves: f32) -> Vec3 {
    let phi = u * TAU;
    let h = 2.2;
    let r = (0.45 + amp * (waves * v * PI).sin().abs()) * (v * PI).sin().max(0.0).powf(0.25);
    Vec3::new(r * phi.cos(), v * h, r * phi.sin())
}

/// A sphere with its radius modulated by sines: a lumpy blob.
fn blob(u: f32, v: f32, freq: f32, amp: f32) -> Vec3 {
    let p = sphere(u, v);
    let bump = 1.0 + amp * ((freq * p.x).sin() * (freq * p.y + 1.0).sin() * (freq * p.z + 2.0).sin() * 2.0);
    p * bump
}

/// A capsule of radius `r` whose straight part is `len` long, along y.
fn capsule(u: f32, v: f32, r: f32, len: f32) -> Vec3 {
    let p = sphere(u, v) * r;
    p + Vec3::Y * if v < 0.5 { -len / 2.0 } else { len / 2.0 }
}

/// A tube of radius `tube` around the (p, q) torus knot.
fn torus_knot(u: f32, v: f32, p: f32, q: f32, tube: f32) -> Vec3 {
    let curve = |s: f32| {
        let a = s * TAU;
        let r = 2.0 + (q * a).cos();
        Vec3::new(r * (p * a).cos(), r * (p * a).sin(), -(q * a).sin())
    };
    let c = curve(u);
    let tangent = (curve(u + 1e-3) - curve(u - 1e-3)).normalize();
    let normal = tangent.cross(Vec3::Z).normalize();
    let binormal = tangent.cross(normal);
    let b = v * TAU;
    c + tube * (normal * b.cos() + binormal * b.sin())
}

/// The Cornell box, from the measurements Cornell's graphics group published, in millimetres:
/// a white room open at the front with a red left wall, a green right wall, a ceiling light and
/// two white blocks. 32 triangles.
fn cornell() -> Scene {
    let white = Vec3::new(0.73, 0.73, 0.73);
    let red = Vec3::new(0.63, 0.065, 0.05);
    let green = Vec3::new(0.14, 0.45, 0.091);
    let light = Vec3::new(1.0, 0.95, 0.85);
    let v = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
    let quads: [([Vec3; 4], Vec3); 16] = [
        ([v(552.8, 0.0, 0.0), v(0.0, 0.0, 0.0), v(0.0, 0.0, 559.2), v(549.6, 0.0, 559.2)], white), // floor
        ([v(343.0, 548.7, 227.0), v(343.0, 548.7, 332.0), v(213.0, 548.7, 332.0), v(213.0, 548.7, 227.0)], light),
        ([v(556.0, 548.8, 0.0), v(556.0, 548.8, 559.2), v(0.0, 548.8, 559.2), v(0.0, 548.8, 0.0)], white), // ceiling
        ([v(549.6, 0.0, 559.2), v(0.0, 0.0, 559.2), v(0.0, 548.8, 559.2), v(556.0, 548.8, 559.2)], white), // back
        ([v(0.0, 0.0, 559.2), v(0.0, 0.0, 0.0), v(0.0, 548.8, 0.0), v(0.0, 548.8, 559.2)], green),         // right
        ([v(552.8, 0.0, 0.0), v(549.6, 0.0, 559.2), v(556.0, 548.8, 559.2), v(556.0, 548.8, 0.0)], red),   // left
        // Short block.
        ([v(130.0, 165.0, 65.0), v(82.0, 165.0, 225.0), v(240.0, 165.0, 272.0), v(290.0, 165.0, 114.0)], white),
        ([v(290.0, 0.0, 114.0), v(290.0, 165.0, 114.0), v(240.0, 165.0, 272.0), v(240.0, 0.0, 272.0)], white),
        ([v(130.0, 0.0, 65.0), v(130.0, 165.0, 65.0), v(290.0, 165.0, 114.0), v(290.0, 0.0, 114.0)], white),
        ([v(82.0, 0.0, 225.0), v(82.0, 165.0, 225.0), v(130.0, 165.0, 65.0), v(130.0, 0.0, 65.0)], white),
        ([v(240.0, 0.0, 272.0), v(240.0, 165.0, 272.0), v(82.0, 165.0, 225.0), v(82.0, 0.0, 225.0)], white),
        // Tall block.
        ([v(423.0, 330.0, 247.0), v(265.0, 330.0, 296.0), v(314.0, 330.0, 456.0), v(472.0, 330.0, 406.0)], white),
        ([v(423.0, 0.0, 247.0), v(423.0, 330.0, 247.0), v(472.0, 330.0, 406.0), v(472.0, 0.0, 406.0)], white),
        ([v(472.0, 0.0, 406.0), v(472.0, 330.0, 406.0), v(314.0, 330.0, 456.0), v(314.0, 0.0, 456.0)], white),
        ([v(314.0, 0.0, 456.0), v(314.0, 330.0, 456.0), v(265.0, 330.0, 296.0), v(265.0, 0.0, 296.0)], white),
        ([v(265.0, 0.0, 296.0), v(265.0, 330.0, 296.0), v(423.0, 330.0, 247.0), v(423.0, 0.0, 247.0)], white),
    ];
    let mut b = Builder::default();
    for (k, (corners, color)) in quads.iter().enumerate() {
        b.polygon(corners, *color);
        // The room with its light, the short block, the tall block.
        if [5, 10, 15].contains(&k) {
            b.end_object();
        }
    }
    let view = View { eye: v(278.0, 273.0, -800.0), at: v(278.0, 273.0, 0.0), fov: 39.3 };
    b.finish("built-in cornell", Some(view), Some(v(278.0, 540.0, 279.6)))
}

/// Writes `scene` as a Wavefront OBJ file with an MTL file of the same stem beside it (one
/// material per distinct colour), so that loading it back gives the same triangles in the same
/// order, with the same colours.
pub fn write_obj(scene: &Scene, path: &Path) -> CliResult<()> {
    let mtl_path = path.with_extension("mtl");
    let mtl_name = mtl_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut palette: Vec<Vec3> = Vec::new();
    let mut obj = String::new();
    let _ = writeln!(obj, "# {} (written by slabtree export)", scene.name);
    if scene.colors.is_some() {
        let _ = writeln!(obj, "mtllib {mtl_name}");
    }
    for p in scene.mesh.positions() {
        let _ = writeln!(obj, "v {} {} {}", p.x, p.y, p.z);
    }
    let mut current = usize::MAX;
    for (i, t) in scene.mesh.triangles().iter().enumerate() {
        if let Some(colors) = &scene.colors {
            let c = colors[i];
            let m = palette.iter().position(|&p| p == c).unwrap_or_else(|| {
                palette.push(c);
                palette.len() - 1
            });
            if m != current {
                let _ = writeln!(obj, "usemtl m{m}");
                current = m;
            }
        }
        let _ = writeln!(obj, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    std::fs::write(path, obj).map_err(|e| CliError::io(path, "write", &e))?;
    if scene.colors.is_some() {
        let mut mtl = String::new();
        for (m, c) in palette.iter().enumerate() {
            let _ = writeln!(mtl, "newmtl m{m}\nKd {} {} {}\n", c.x, c.y, c.z);
        }
        std::fs::write(&mtl_path, mtl).map_err(|e| CliError::io(&mtl_path, "write", &e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_valid_and_coloured() {
        for which in [Builtin::Field, Builtin::Cornell] {
            let s = builtin(which);
            assert!(!s.mesh.is_empty());
            assert_eq!(s.colors.as_ref().map(Vec::len), Some(s.mesh.len()));
        }
        assert_eq!(builtin(Builtin::Cornell).mesh.len(), 32);
    }

    #[test]
    fn field_rests_on_the_ground() {
        let s = builtin(Builtin::Field);
        let b = s.mesh.bounds().unwrap();
        assert!(b.min.y.abs() < 1e-4, "{:?}", b.min);
        assert!(s.mesh.len() > 500_000);
    }
}
