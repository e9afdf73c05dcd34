//! What the commands work on: a triangle mesh with optional per-triangle colours and a suggested
//! view, loaded from a file (OBJ, PLY, glTF; `load.rs`) or generated in code (`generate.rs`).

use std::ops::Range;

use glam::Vec3;
use slabtree::TriMesh;

/// A camera view: where the eye is, what it looks at, the vertical field of view in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Camera position.
    pub eye: Vec3,
    /// The point at the image centre.
    pub at: Vec3,
    /// Vertical field of view, degrees.
    pub fov: f32,
}

/// A mesh and how to show it.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The file name, or the built-in scene's name.
    pub name: String,
    /// The triangles.
    pub mesh: TriMesh,
    /// Linear RGB albedo per triangle, when the file has materials.
    pub colors: Option<Vec<Vec3>>,
    /// A view chosen for this scene (built-in scenes), used instead of the framing default.
    pub view: Option<View>,
    /// A point light chosen for this scene (built-in scenes).
    pub light: Option<Vec3>,
    /// The objects the scene is made of, as ranges of [`Scene::mesh`]'s triangles, in order and
    /// covering them all: the generated objects of a built-in scene, the mesh instances of a glTF
    /// file, the whole mesh of an OBJ or PLY file. Each becomes an instance of the library's
    /// two-level scene when the render traces instances (see `render::Tracer`).
    pub objects: Vec<Range<u32>>,
}

impl Scene {
    /// A scene of one mesh with no colours and no suggested view.
    pub fn plain(name: String, mesh: TriMesh) -> Scene {
        // One object: the whole mesh.
        #[allow(clippy::single_range_in_vec_init)]
        let objects = vec![0..mesh.len() as u32];
        Scene { name, mesh, colors: None, view: None, light: None, objects }
    }
}

/// The albedo of triangles without a material.
pub const DEFAULT_ALBEDO: Vec3 = Vec3::new(0.72, 0.70, 0.66);
