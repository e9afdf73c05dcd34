//! The moving-instances workload of the picking example, shared by `examples/picking.rs`,
//! `benches/scene.rs` and the parry3d comparison (`benches/peers/src/scene_vs_parry.rs`), so that
//! all three run exactly the same frames.
//!
//! `n` instances of three generated meshes at random places and orientations in a cube of side
//! 4·n^(1/3); each frame, a rotating window of 10% of them moves by its velocity (bouncing off the
//! cube's faces) and turns a little; a fixed camera looks at the cube's centre, and 100 cursor
//! rays per frame go through random points of the screen. It only produces transforms and rays,
//! so each library applies them to its own tree.

use glam::{Affine3A, Mat4, Quat, Vec3, Vec3A};
use slabtree::{DbvtConfig, Ray, TriMesh};

use crate::rng::Rng;

pub use crate::rays::primary_tiles;

/// The instance tree's tuning for this workload: the default fat margin (0.1) and no motion
/// prediction. Each instance moves only once every ten frames, so stretching its box by its last
/// move would only loosen it: measured, the picks ran 9% more instructions with the default
/// prediction of 2. parry3d, the peer, fattens by the margin alone, so both trees hold the same
/// boxes.
pub fn tree_config() -> DbvtConfig {
    DbvtConfig { margin: 0.1, prediction: 0.0, ..DbvtConfig::default() }
}

/// The instanced meshes: a sphere (960 triangles), a torus (768) and a box (12). Instance `i`
/// uses mesh `i % 3`.
pub fn meshes() -> Vec<TriMesh> {
    vec![TriMesh::uv_sphere(0.5, 32, 16), TriMesh::torus(0.4, 0.15, 32, 12), TriMesh::cuboid(Vec3::splat(0.5))]
}

/// Positions, orientations and velocities of the instances.
pub struct MovingInstances {
    /// Side of the cube the instances stay in.
    pub side: f32,
    pub pos: Vec<Vec3>,
    pub rot: Vec<Quat>,
    pub vel: Vec<Vec3>,
}

impl MovingInstances {
    pub fn new(n: usize) -> MovingInstances {
        let mut rng = Rng(42);
        let side = 4.0 * (n as f32).cbrt();
        let mut s = MovingInstances { side, pos: vec![], rot: vec![], vel: vec![] };
        for _ in 0..n {
            s.pos.push(Vec3::new(rng.range(0.0, side), rng.range(0.0, side), rng.range(0.0, side)));
            s.rot.push(
                Quat::from_rotation_y(rng.range(0.0, std::f32::consts::TAU))
                    * Quat::from_rotation_x(rng.range(0.0, std::f32::consts::TAU)),
            );
            s.vel.push(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)) * 0.3);
        }
        s
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Instance `i`'s transform (rigid: parry's poses have no scale).
    pub fn transform(&self, i: usize) -> Affine3A {
        Affine3A::from_rotation_translation(self.rot[i], self.pos[i])
    }

    /// Advances frame `frame`: moves the frame's 10% window; returns the indices moved.
    pub fn step(&mut self, frame: usize) -> Vec<usize> {
        let n = self.len();
        let k = n / 10;
        (0..k)
            .map(|j| {
                let i = (frame * k + j) % n;
                self.pos[i] += self.vel[i];
                for a in 0..3 {
                    if self.pos[i][a] < 0.0 || self.pos[i][a] > self.side {
                        self.vel[i][a] = -self.vel[i][a];
                    }
                }
                self.rot[i] *= Quat::from_rotation_y(0.05);
                i
            })
            .collect()
    }

    /// The camera's eye and view-projection matrix.
    pub fn camera(&self) -> (Vec3, Mat4) {
        let eye = Vec3::new(-5.0, self.side * 0.5, -5.0);
        let view = glam::camera::rh::view::look_at_mat4(eye, Vec3::splat(self.side * 0.5), Vec3::Y);
        (eye, glam::camera::rh::proj::directx::perspective(1.0, 16.0 / 9.0, 0.1, self.side * 3.0) * view)
    }

    /// The camera's rays through a `side` × `side` pixel tile of a 1024 × 576 image, in scan-line
    /// order; the tile moves with `frame` (a renderer's visibility pass, a tile per frame).
    pub fn tile_rays(&self, frame: usize, side: u32) -> Vec<Ray> {
        let (eye, vp) = self.camera();
        let inv = vp.inverse();
        let (w, h) = (1024u32, 576u32);
        let (x0, y0) = ((frame as u32 * 97) % (w - side), (frame as u32 * 61) % (h - side));
        (0..side * side)
            .map(|i| {
                let (px, py) = (x0 + i % side, y0 + i / side);
                let ndc =
                    Vec3::new((px as f32 + 0.5) / w as f32 * 2.0 - 1.0, 1.0 - (py as f32 + 0.5) / h as f32 * 2.0, 1.0);
                let far = inv.project_point3(ndc);
                Ray::new(Vec3A::from(eye), Vec3A::from((far - eye).normalize()))
            })
            .collect()
    }

    /// The 100 cursor rays of frame `frame`.
    pub fn cursor_rays(&self, frame: usize) -> Vec<Ray> {
        let (eye, vp) = self.camera();
        let inv = vp.inverse();
        let mut rng = Rng(1000 + frame as u64);
        (0..100)
            .map(|_| {
                let far = inv.project_point3(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 1.0));
                Ray::new(Vec3A::from(eye), Vec3A::from((far - eye).normalize()))
            })
            .collect()
    }
}
