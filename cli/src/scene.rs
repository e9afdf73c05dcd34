//! What the commands work on: a triangle mesh with optional per-triangle colours and a suggested
//! view, loaded from a file (OBJ, PLY, glTF) or generated in code.

use std::path::Path;

use glam::Vec3;
use slabtree::TriMesh;

use super::args::{Builtin, Input};
use super::error::{CliError, CliResult};
use super::{generate, gltf, progress};

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
    /// Objects the scene was made of (built-in scenes; 1 for files).
    pub objects: usize,
}

impl Scene {
    /// A scene of one mesh with no colours and no suggested view.
    pub fn plain(name: String, mesh: TriMesh) -> Scene {
        Scene { name, mesh, colors: None, view: None, light: None, objects: 1 }
    }
}

/// Loads the command's input, with a spinner on a terminal. An empty mesh is an error.
pub fn load(input: &Input) -> CliResult<Scene> {
    let scene = match (&input.file, input.builtin) {
        (_, Some(b)) => progress::spin(&format!("generating the {} scene", builtin_name(b)), || generate::builtin(b)),
        (Some(path), None) => progress::spin(&format!("loading {}", path.display()), || load_file(path))?,
        (None, None) => return Err(CliError::new("no input: give a mesh FILE or --builtin NAME")),
    };
    if scene.mesh.is_empty() {
        return Err(CliError::new(format!("{}: the mesh has no triangles", scene.name)));
    }
    Ok(scene)
}

/// The name `--builtin` takes.
pub fn builtin_name(b: Builtin) -> &'static str {
    match b {
        Builtin::Field => "field",
        Builtin::Cornell => "cornell",
    }
}

/// Loads a mesh file by its extension: `.obj`, `.ply`, `.gltf` or `.glb` (any case).
pub fn load_file(path: &Path) -> CliResult<Scene> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    let name = path.display().to_string();
    match ext.as_deref() {
        Some("gltf" | "glb") => gltf::load(path),
        Some("obj") => {
            let mesh = slabtree::load_mesh(path)?;
            let colors = obj_colors(path, mesh.len());
            Ok(Scene { colors, ..Scene::plain(name, mesh) })
        }
        Some("ply") => Ok(Scene::plain(name, slabtree::load_mesh(path)?)),
        Some(other) => {
            Err(CliError::new(format!("{name}: unknown mesh format `.{other}` (expected .obj, .ply, .gltf or .glb)")))
        }
        None => Err(CliError::new(format!(
            "{name}: unknown mesh format: no file extension (expected .obj, .ply, .gltf or .glb)"
        ))),
    }
}

/// Per-triangle diffuse colours of an OBJ file from its `usemtl` lines and the `Kd` of its
/// `mtllib` files. Best effort: `None` when the file uses no material with a `Kd`, or when the
/// face count does not come out as the loader's (the loader has already accepted the file).
fn obj_colors(path: &Path, triangles: usize) -> Option<Vec<Vec3>> {
    let text = std::fs::read(path).ok()?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut materials: Vec<(String, Vec3)> = Vec::new();
    let mut current: Option<Vec3> = None;
    let mut colors = Vec::with_capacity(triangles);
    let mut any = false;
    for line in text.split(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        match words.next() {
            Some("mtllib") => {
                for file in words {
                    materials.extend(read_mtl(&dir.join(file)));
                }
            }
            Some("usemtl") => {
                let name = words.next().unwrap_or("");
                current = materials.iter().rev().find(|(n, _)| n == name).map(|&(_, kd)| kd);
                any |= current.is_some();
            }
            Some("f") => {
                let corners = words.count();
                let c = current.unwrap_or(DEFAULT_ALBEDO);
                colors.extend(std::iter::repeat_n(c, corners.saturating_sub(2)));
            }
            _ => {}
        }
    }
    (any && colors.len() == triangles).then_some(colors)
}

/// The albedo of triangles without a material.
pub const DEFAULT_ALBEDO: Vec3 = Vec3::new(0.72, 0.70, 0.66);

/// `newmtl` names and `Kd` colours of an MTL file (nothing if it cannot be read).
fn read_mtl(path: &Path) -> Vec<(String, Vec3)> {
    let Ok(text) = std::fs::read(path) else { return Vec::new() };
    let mut out: Vec<(String, Vec3)> = Vec::new();
    for line in String::from_utf8_lossy(&text).lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("newmtl") => out.push((words.next().unwrap_or("").to_owned(), DEFAULT_ALBEDO)),
            Some("Kd") => {
                let v: Vec<f32> = words.filter_map(|w| w.parse().ok()).collect();
                if let (Some(last), [r, g, b, ..]) = (out.last_mut(), v.as_slice()) {
                    let kd = Vec3::new(*r, *g, *b);
                    if kd.is_finite() {
                        last.1 = kd.clamp(Vec3::ZERO, Vec3::ONE);
                    }
                }
            }
            _ => {}
        }
    }
    out
}
