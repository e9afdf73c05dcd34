//! Generated closed meshes, for examples, benchmarks and tests: a UV sphere, a torus and a box.
//! Every vertex is shared by the triangles around it (no seam or pole duplicates), so the meshes
//! are watertight and have no degenerate triangles.

use std::f32::consts::{PI, TAU};

use glam::Vec3;

use super::TriMesh;

impl TriMesh {
    /// A sphere of `radius` about the origin: `segments` meridians (at least 3) and `rings`
    /// latitude bands (at least 2), one vertex at each pole; `2 · segments · (rings - 1)`
    /// triangles, wound outwards.
    ///
    /// ```
    /// let s = slabtree::TriMesh::uv_sphere(1.0, 32, 16);
    /// assert_eq!(s.triangles().len(), 2 * 32 * 15);
    /// ```
    pub fn uv_sphere(radius: f32, segments: u32, rings: u32) -> TriMesh {
        let (nu, nv) = (segments.max(3), rings.max(2));
        let mut p = vec![Vec3::new(0.0, radius, 0.0), Vec3::new(0.0, -radius, 0.0)];
        for j in 1..nv {
            for i in 0..nu {
                let (th, ph) = (j as f32 / nv as f32 * PI, i as f32 / nu as f32 * TAU);
                p.push(Vec3::new(th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()) * radius);
            }
        }
        let ring = |j: u32, i: u32| 2 + (j - 1) * nu + (i % nu);
        let mut t = Vec::with_capacity((2 * nu * (nv - 1)) as usize);
        for i in 0..nu {
            t.push([0, ring(1, i + 1), ring(1, i)]);
            t.push([1, ring(nv - 1, i), ring(nv - 1, i + 1)]);
            for j in 1..nv - 1 {
                t.push([ring(j, i), ring(j, i + 1), ring(j + 1, i + 1)]);
                t.push([ring(j, i), ring(j + 1, i + 1), ring(j + 1, i)]);
            }
        }
        TriMesh::new(p, t).expect("generated indices are in range")
    }

    /// A torus about the y axis: tube of radius `minor` around a circle of radius `major`, with
    /// `segments` steps around the y axis and `sides` around the tube (each at least 3);
    /// `2 · segments · sides` triangles, wound outwards.
    ///
    /// ```
    /// let t = slabtree::TriMesh::torus(1.0, 0.25, 32, 12);
    /// assert_eq!((t.positions().len(), t.triangles().len()), (32 * 12, 2 * 32 * 12));
    /// ```
    pub fn torus(major: f32, minor: f32, segments: u32, sides: u32) -> TriMesh {
        let (nu, nv) = (segments.max(3), sides.max(3));
        let mut p = Vec::with_capacity((nu * nv) as usize);
        for i in 0..nu {
            for j in 0..nv {
                let (u, v) = (i as f32 / nu as f32 * TAU, j as f32 / nv as f32 * TAU);
                p.push(Vec3::new(
                    (major + minor * v.cos()) * u.cos(),
                    minor * v.sin(),
                    (major + minor * v.cos()) * u.sin(),
                ));
            }
        }
        let idx = |i: u32, j: u32| (i % nu) * nv + (j % nv);
        let mut t = Vec::with_capacity((2 * nu * nv) as usize);
        for i in 0..nu {
            for j in 0..nv {
                t.push([idx(i, j), idx(i + 1, j + 1), idx(i + 1, j)]);
                t.push([idx(i, j), idx(i, j + 1), idx(i + 1, j + 1)]);
            }
        }
        TriMesh::new(p, t).expect("generated indices are in range")
    }

    /// The box `[-half_extents, half_extents]`: 8 vertices, 12 triangles.
    ///
    /// ```
    /// let b = slabtree::TriMesh::cuboid(glam::Vec3::splat(0.5));
    /// assert_eq!(b.triangles().len(), 12);
    /// ```
    pub fn cuboid(half_extents: Vec3) -> TriMesh {
        let p = (0..8)
            .map(|i| Vec3::new((i & 1) as f32 - 0.5, ((i >> 1) & 1) as f32 - 0.5, ((i >> 2) & 1) as f32 - 0.5))
            .map(|c| c * 2.0 * half_extents)
            .collect();
        let t = vec![
            [0, 2, 1],
            [1, 2, 3],
            [4, 5, 6],
            [5, 7, 6],
            [0, 1, 4],
            [1, 5, 4],
            [2, 6, 3],
            [3, 6, 7],
            [0, 4, 2],
            [2, 4, 6],
            [1, 3, 5],
            [3, 7, 5],
        ];
        TriMesh::new(p, t).expect("generated indices are in range")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signed volume by the divergence theorem: positive when every triangle faces outwards, and
    /// equal to the solid's volume only when the mesh is closed.
    fn signed_volume(m: &TriMesh) -> f64 {
        let p = m.positions();
        m.triangles()
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| p[i as usize].as_dvec3());
                a.dot(b.cross(c)) / 6.0
            })
            .sum()
    }

    #[test]
    fn shapes_are_closed_outward_and_of_the_right_volume() {
        // Against the analytic volumes; the tessellations fall short of a curved solid by a
        // known small fraction.
        let s = signed_volume(&TriMesh::uv_sphere(2.0, 256, 128));
        let exact = 4.0 / 3.0 * std::f64::consts::PI * 8.0;
        assert!(s > 0.0 && (s - exact).abs() < 1e-3 * exact, "sphere {s} vs {exact}");
        let t = signed_volume(&TriMesh::torus(1.0, 0.25, 256, 128));
        let exact = 2.0 * std::f64::consts::PI.powi(2) * 1.0 * 0.25f64.powi(2);
        assert!(t > 0.0 && (t - exact).abs() < 1e-3 * exact, "torus {t} vs {exact}");
        let b = signed_volume(&TriMesh::cuboid(Vec3::new(0.5, 1.0, 2.0)));
        assert!((b - 8.0).abs() < 1e-9, "box {b}");
    }
}
