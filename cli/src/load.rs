//! Loading the command's input: a mesh file by its extension (OBJ with its MTL colours, PLY, glTF)
//! or a built-in scene.

use std::path::Path;

use glam::Vec3;

use super::args::{Builtin, Input};
use super::error::{CliError, CliResult};
use super::scene::{DEFAULT_ALBEDO, Scene};
use super::{generate, gltf, progress};

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
