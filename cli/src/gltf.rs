//! glTF 2.0 files (`.gltf` with embedded or external buffers, and binary `.glb`) as one triangle
//! mesh in world space: the library's reader (`slabtree::io::read_gltf`, which checks every
//! buffer, accessor and index and names the place of a fault), with each node's mesh placed by
//! its world transform. Each placed mesh is one object of the scene; each triangle gets its
//! material's base colour factor.

use std::path::Path;

use glam::Vec3;
use slabtree::TriMesh;

use super::error::{CliError, CliResult};
use super::scene::{DEFAULT_ALBEDO, Scene};

/// Loads a `.gltf` or `.glb` file.
pub fn load(path: &Path) -> CliResult<Scene> {
    let name = path.display().to_string();
    let doc = slabtree::io::read_gltf(path).map_err(|e| CliError::new(e.to_string()))?;
    let (mut positions, mut triangles, mut colors, mut objects) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let color = |m: Option<u32>| {
        let Some([r, g, b, _]) = m.and_then(|m| doc.materials.get(m as usize)) else { return DEFAULT_ALBEDO };
        let c = Vec3::new(*r, *g, *b);
        if c.is_finite() { c.clamp(Vec3::ZERO, Vec3::ONE) } else { DEFAULT_ALBEDO }
    };
    let mut any_material = false;
    for inst in &doc.instances {
        let g = &doc.meshes[inst.mesh];
        let base = u32::try_from(positions.len())
            .ok()
            .filter(|b| b.checked_add(g.mesh.positions().len() as u32).is_some())
            .ok_or_else(|| CliError::new(format!("{name}: more vertices than u32 indices can address")))?;
        positions.extend(g.mesh.positions().iter().map(|&p| inst.transform.transform_point3(p)));
        let start = triangles.len() as u32;
        triangles.extend(g.mesh.triangles().iter().map(|t| t.map(|i| i + base)));
        any_material |= g.materials.iter().any(Option::is_some);
        colors.extend(g.materials.iter().map(|&m| color(m)));
        objects.push(start..triangles.len() as u32);
    }
    let mesh = TriMesh::new(positions, triangles).map_err(|e| {
        CliError::new(format!("{name}: invalid mesh (a node transform takes a vertex out of f32 range?): {e}"))
    })?;
    Ok(Scene { colors: any_material.then_some(colors), objects, ..Scene::plain(name, mesh) })
}
