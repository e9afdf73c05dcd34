//! glTF 2.0 scenes (`.gltf` with embedded or external buffers, and binary `.glb`), feature `gltf`.
//!
//! [`read_gltf`] reads a file's triangle meshes and the nodes that place them into a
//! [`GltfDocument`]; [`GltfDocument::build_scene`] turns that into a [`Scene`]: each glTF mesh one
//! shared [`MeshBvh`], each node that references it one instance with the node's world transform
//! and the node's index as its user id. [`load_gltf`] does both.
//!
//! The `gltf` crate parses and validates the document; the buffers and accessors are read here,
//! with every offset, stride and index checked, so that a malformed file is a [`LoadError`] naming
//! the file and the buffer, accessor, mesh or node, never a panic. The default scene (or the
//! first; or, without scenes, every root node) is walked. Triangle lists, strips and fans are
//! read; points and lines are skipped.

use std::path::Path;
use std::sync::Arc;

use glam::{Affine3A, Mat4, Vec3};
use gltf::Document;
use gltf::accessor::{Accessor, DataType, Dimensions};
use gltf::buffer::Source;
use gltf::mesh::Mode;

use super::{LoadError, LoadErrorKind, display_name};
use crate::math::Aabb;
use crate::mesh::{BuildOptions, MeshBvh, TriMesh};
use crate::scene::{Scene, SceneError, transform_aabb};

/// Deepest node hierarchy accepted; deeper is taken as a cycle.
const MAX_DEPTH: usize = 256;

/// A glTF file's triangle meshes, in each mesh's own space, and where its nodes place them.
#[derive(Clone, Debug, Default)]
pub struct GltfDocument {
    /// Every glTF mesh, by its index in the file. A mesh that no node of the walked scene
    /// references is left empty (unread, so a fault in it is not an error), as is one with no
    /// triangle primitive.
    pub meshes: Vec<GltfMesh>,
    /// One per node of the walked scene that references a mesh with triangles, in the order of
    /// a depth-first walk.
    pub instances: Vec<GltfInstance>,
    /// Each material's base colour factor (linear RGBA), by material index.
    pub materials: Vec<[f32; 4]>,
}

/// One glTF mesh: its primitives' triangles in one [`TriMesh`], in primitive order.
#[derive(Clone, Debug, Default)]
pub struct GltfMesh {
    /// The triangles, in the mesh's space.
    pub mesh: TriMesh,
    /// Per triangle, the material of its primitive (an index into
    /// [`GltfDocument::materials`]), if it has one.
    pub materials: Vec<Option<u32>>,
}

/// A node that places a mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GltfInstance {
    /// The node's index in the file; `None` for the meshes of a file without nodes, which are
    /// placed as they are.
    pub node: Option<usize>,
    /// The mesh: an index into [`GltfDocument::meshes`].
    pub mesh: usize,
    /// The node's world transform (its parents' times its own): finite, and it keeps the mesh's
    /// world box within the f32 range.
    pub transform: Affine3A,
}

impl GltfDocument {
    /// The two-level scene of the document: each mesh with triangles one shared [`MeshBvh`]
    /// (built with `options`, on rayon's threads with feature `parallel`), each instance an
    /// instance of it with user id the node's index (the mesh's index for a file without nodes)
    /// and mask [`Scene::ALL`]. An instance whose transform is singular (a node scaled to zero,
    /// which glTF uses to hide things) has no surface to hit and is left out.
    ///
    /// Fails on a transform that is not finite or takes its mesh beyond the f32 range, which
    /// [`read_gltf`] never gives.
    pub fn build_scene(&self, options: &BuildOptions) -> Result<Scene, SceneError> {
        let mut used = vec![false; self.meshes.len()];
        for inst in &self.instances {
            if let Some(u) = used.get_mut(inst.mesh) {
                *u = true;
            }
        }
        let bvhs: Vec<Option<Arc<MeshBvh>>> = crate::par::map_range(self.meshes.len() as u32, 1, |m| {
            let g = &self.meshes[m as usize];
            (used[m as usize] && !g.mesh.is_empty()).then(|| Arc::new(MeshBvh::build(&g.mesh, options)))
        });
        let mut scene = Scene::new();
        for inst in &self.instances {
            let Some(Some(bvh)) = bvhs.get(inst.mesh) else { continue };
            let user = inst.node.unwrap_or(inst.mesh) as u64;
            match scene.add(bvh.clone(), inst.transform, user, Scene::ALL) {
                Ok(_) => {}
                Err(SceneError::InvalidTransform) if inst.transform.is_finite() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(scene)
    }
}

/// Reads a glTF file (`.gltf` or `.glb`, told apart by content) into a two-level [`Scene`]: see
/// [`read_gltf`] and [`GltfDocument::build_scene`].
///
/// ```no_run
/// use slabtree::{BuildOptions, Ray, Scene};
/// let scene = slabtree::io::load_gltf("city.glb", &BuildOptions::default())?;
/// if let Some(hit) = scene.intersect(&Ray::new(glam::Vec3A::new(0.0, 2.0, 10.0), -glam::Vec3A::Z), Scene::ALL)? {
///     println!("node {} at t = {}", hit.user_id, hit.t);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_gltf(path: impl AsRef<Path>, options: &BuildOptions) -> Result<Scene, LoadError> {
    let path = path.as_ref();
    let doc = read_gltf(path)?;
    doc.build_scene(options).map_err(|e| LoadError::new(&display_name(path), LoadErrorKind::Gltf(e.to_string())))
}

/// Reads a glTF file's meshes and placements, building nothing. Buffers may be the GLB binary
/// chunk, base64 `data:` URIs, or files beside the glTF (relative URIs).
pub fn read_gltf(path: impl AsRef<Path>) -> Result<GltfDocument, LoadError> {
    let path = path.as_ref();
    let (bytes, name) = super::read_file(path)?;
    read(&bytes, &name, Some(path.parent().unwrap_or(Path::new(""))))
}

/// [`read_gltf`] of a file's bytes, named `name` in errors. A buffer that refers to another file
/// is an error, since there is no folder to find it in.
///
/// ```
/// // A document with no meshes reads as an empty one; a broken one names the file and the line.
/// let doc = slabtree::io::parse_gltf(br#"{"asset": {"version": "2.0"}}"#, "empty.gltf")?;
/// assert!(doc.meshes.is_empty() && doc.instances.is_empty());
/// let err = slabtree::io::parse_gltf(b"{\n  \"asset\": {\"version\": \"2.0\"},\n  oops\n}", "bad.gltf").unwrap_err();
/// assert!(err.to_string().starts_with("bad.gltf: invalid glTF: ") && err.to_string().contains("line 3"));
/// # Ok::<(), slabtree::io::LoadError>(())
/// ```
pub fn parse_gltf(bytes: &[u8], name: &str) -> Result<GltfDocument, LoadError> {
    read(bytes, name, None)
}

fn read(bytes: &[u8], name: &str, dir: Option<&Path>) -> Result<GltfDocument, LoadError> {
    let fail = |message: String| LoadError::new(name, LoadErrorKind::Gltf(message));
    let gltf = parse(bytes).map_err(fail)?;
    let buffers = load_buffers(&gltf.document, gltf.blob.as_deref(), dir).map_err(|p| fail(p.0))?;
    let mut out = GltfDocument {
        meshes: vec![GltfMesh::default(); gltf.document.meshes().len()],
        materials: gltf.document.materials().map(|m| m.pbr_metallic_roughness().base_color_factor()).collect(),
        instances: Vec::new(),
    };
    walk(&gltf.document, &buffers, &mut out).map_err(|p| fail(p.0))?;
    Ok(out)
}

/// Parses and validates the document, guarding two faults of the gltf crates. gltf-json 1.4 indexes the accessor array while validating
/// a primitive's POSITION and panics when it names a missing accessor (found by fuzzing,
/// `tests/regressions.rs`), so that is checked first; the validation runs under `catch_unwind`
/// as well, so that another such fault is an error too (its panic message still reaches stderr:
/// a library must not replace the process's panic hook).
fn parse(bytes: &[u8]) -> Result<gltf::Gltf, String> {
    // gltf 1.4 subtracts the 12-byte header from a GLB's declared length unchecked, which
    // overflows (a panic in debug builds) when the length is below 12 (found by fuzzing).
    if let Some(len) = bytes.strip_prefix(b"glTF").and_then(|b| b.get(4..8)) {
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes"));
        if len < 12 {
            return Err(format!("GLB header: the file's declared length {len} is shorter than the header"));
        }
    }
    let gltf::Gltf { document, blob } = gltf::Gltf::from_slice_without_validation(bytes).map_err(|e| e.to_string())?;
    let json = document.into_json();
    let accessors = json.accessors.len();
    for (m, mesh) in json.meshes.iter().enumerate() {
        for (p, prim) in mesh.primitives.iter().enumerate() {
            for (semantic, index) in &prim.attributes {
                if index.value() >= accessors {
                    return Err(format!(
                        "meshes[{m}].primitives[{p}].attributes: {semantic:?} names accessor {}, but the file has {accessors}",
                        index.value()
                    ));
                }
            }
        }
    }
    let validated = std::panic::catch_unwind(move || Document::from_json(json))
        .map_err(|_| "the document refers to objects it does not contain".to_string())?;
    let document = validated.map_err(|e| match e {
        gltf::Error::Validation(problems) => {
            problems.iter().map(|(path, what)| format!("{path}: {what}")).collect::<Vec<_>>().join("; ")
        }
        e => e.to_string(),
    })?;
    Ok(gltf::Gltf { document, blob })
}

/// An error inside the file, before the file name is put in front.
struct Problem(String);

macro_rules! problem {
    ($($t:tt)*) => { Problem(format!($($t)*)) };
}

/// Reads every buffer: the GLB binary chunk, a base64 `data:` URI or a file in `dir`.
fn load_buffers(doc: &Document, blob: Option<&[u8]>, dir: Option<&Path>) -> Result<Vec<Vec<u8>>, Problem> {
    doc.buffers()
        .map(|b| {
            let i = b.index();
            let data = match b.source() {
                Source::Bin => blob
                    .ok_or_else(|| problem!("buffer {i}: refers to the GLB binary chunk, but the file has none"))?
                    .to_vec(),
                Source::Uri(uri) if uri.starts_with("data:") => {
                    decode_data_uri(uri).map_err(|m| problem!("buffer {i}: {m}"))?
                }
                Source::Uri(uri) if uri.contains("://") => {
                    return Err(problem!("buffer {i}: URI `{}` is not a file beside the glTF", short(uri)));
                }
                Source::Uri(uri) => {
                    let dir = dir.ok_or_else(|| {
                        problem!("buffer {i}: refers to file `{}`, but the glTF was given as bytes", short(uri))
                    })?;
                    let file = dir.join(percent_decode(uri));
                    std::fs::read(&file).map_err(|e| problem!("buffer {i}: cannot read {}: {e}", file.display()))?
                }
            };
            if data.len() < b.length() {
                return Err(problem!("buffer {i}: has {} bytes, but the glTF declares {}", data.len(), b.length()));
            }
            Ok(data)
        })
        .collect()
}

/// The start of a long string, for messages.
fn short(s: &str) -> String {
    if s.len() > 60 { format!("{}...", s.chars().take(60).collect::<String>()) } else { s.to_owned() }
}

/// Decodes `data:[<mime>][;base64],<data>`; only base64 data is accepted.
fn decode_data_uri(uri: &str) -> Result<Vec<u8>, String> {
    let (head, data) = uri.split_once(',').ok_or("data URI has no `,`")?;
    if !head.ends_with(";base64") {
        return Err("data URI is not base64".into());
    }
    base64_decode(data)
}

/// Standard base64 (RFC 4648, `+` and `/`), with or without `=` padding.
fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, c) in s.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("bad base64 character at offset {i} of the data")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

/// Decodes `%XX` escapes in a relative URI.
fn percent_decode(uri: &str) -> String {
    let b = uri.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Walks the default scene (or the first, or every root node), reading each mesh the first time
/// a node references it and recording every placement.
fn walk(doc: &Document, buffers: &[Vec<u8>], out: &mut GltfDocument) -> Result<(), Problem> {
    let scene = doc.default_scene().or_else(|| doc.scenes().next());
    let roots: Vec<gltf::Node> = match scene {
        Some(s) => s.nodes().collect(),
        None => {
            let mut is_child = vec![false; doc.nodes().len()];
            for n in doc.nodes() {
                for c in n.children() {
                    is_child[c.index()] = true;
                }
            }
            doc.nodes().filter(|n| !is_child[n.index()]).collect()
        }
    };
    // Each mesh's bounds once read (`None`: not read yet, or no triangles).
    let mut bounds: Vec<Option<Option<Aabb>>> = vec![None; out.meshes.len()];
    if roots.is_empty() && doc.nodes().len() == 0 {
        // No nodes at all: take each mesh as it is.
        for mesh in doc.meshes() {
            out.meshes[mesh.index()] = read_mesh(&mesh, buffers)?;
            if !out.meshes[mesh.index()].mesh.is_empty() {
                out.instances.push(GltfInstance { node: None, mesh: mesh.index(), transform: Affine3A::IDENTITY });
            }
        }
        return Ok(());
    }
    let mut stack: Vec<(gltf::Node, Mat4, usize)> = roots.into_iter().rev().map(|n| (n, Mat4::IDENTITY, 0)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        let at = node.index();
        if depth >= MAX_DEPTH {
            return Err(problem!("node {at}: the node hierarchy is deeper than {MAX_DEPTH} levels (a cycle?)"));
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            let m = mesh.index();
            if bounds[m].is_none() {
                out.meshes[m] = read_mesh(&mesh, buffers).map_err(|p| problem!("node {at}, {}", p.0))?;
                bounds[m] = Some(out.meshes[m].mesh.bounds());
            }
            // glTF node matrices are affine (decomposable into translation, rotation, scale); the
            // last row is dropped.
            let transform = Affine3A::from_mat4(world);
            if !transform.is_finite() {
                return Err(problem!("node {at}: its world transform is not finite"));
            }
            if let Some(Some(b)) = bounds[m] {
                // The instance's world box, as the scene will compute it, must be finite too.
                if transform_aabb(&transform, &b).validate().is_err() {
                    return Err(problem!("node {at}: its world transform takes mesh {m} beyond the f32 range"));
                }
                out.instances.push(GltfInstance { node: Some(at), mesh: m, transform });
            }
        }
        for child in node.children().collect::<Vec<_>>().into_iter().rev() {
            stack.push((child, world, depth + 1));
        }
    }
    Ok(())
}

/// Every triangle primitive of `mesh`, in its own space.
fn read_mesh(mesh: &gltf::Mesh, buffers: &[Vec<u8>]) -> Result<GltfMesh, Problem> {
    let (mut positions, mut triangles, mut materials) = (Vec::<Vec3>::new(), Vec::new(), Vec::new());
    for prim in mesh.primitives() {
        let place = |m: String| problem!("mesh {} primitive {}: {m}", mesh.index(), prim.index());
        if !matches!(prim.mode(), Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan) {
            continue;
        }
        let pos = prim.get(&gltf::Semantic::Positions).ok_or_else(|| place("no POSITION attribute".into()))?;
        if pos.dimensions() != Dimensions::Vec3 {
            return Err(place(format!("POSITION accessor {} is not VEC3", pos.index())));
        }
        let p = read_accessor(&pos, buffers).map_err(|m| place(format!("POSITION accessor {}: {m}", pos.index())))?;
        let n = p.len() / 3;
        let base = positions.len();
        if base + n > u32::MAX as usize {
            return Err(place("more vertices than u32 indices can address".into()));
        }
        // A position that is not finite as f32 is refused by `TriMesh::new` below if a triangle
        // uses it.
        positions.extend(p.chunks_exact(3).map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32)));
        let indices: Vec<u32> = match prim.indices() {
            Some(acc) => {
                let what = |m: String| place(format!("indices accessor {}: {m}", acc.index()));
                if acc.dimensions() != Dimensions::Scalar
                    || !matches!(acc.data_type(), DataType::U8 | DataType::U16 | DataType::U32)
                {
                    return Err(what("must be SCALAR unsigned integers".into()));
                }
                let v = read_accessor(&acc, buffers).map_err(what)?;
                let mut idx = Vec::with_capacity(v.len());
                for (k, &x) in v.iter().enumerate() {
                    if x as usize >= n {
                        return Err(place(format!("index {} (element {k}) is out of range ({n} vertices)", x as u64)));
                    }
                    idx.push(x as u32);
                }
                idx
            }
            None => (0..n as u32).collect(),
        };
        let start = triangles.len();
        let off = base as u32;
        match prim.mode() {
            Mode::TriangleStrip => triangles.extend((0..indices.len().saturating_sub(2)).map(|i| {
                let (a, b, c) = (indices[i], indices[i + 1], indices[i + 2]);
                if i % 2 == 0 { [a + off, b + off, c + off] } else { [b + off, a + off, c + off] }
            })),
            Mode::TriangleFan => triangles.extend(
                (1..indices.len().saturating_sub(1)).map(|i| [indices[0], indices[i], indices[i + 1]].map(|x| x + off)),
            ),
            _ => triangles.extend(indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]].map(|x| x + off))),
        }
        let material = prim.material().index().map(|m| m as u32);
        materials.extend(std::iter::repeat_n(material, triangles.len() - start));
    }
    let mesh = TriMesh::new(positions, triangles).map_err(|e| problem!("mesh {}: {e}", mesh.index()))?;
    Ok(GltfMesh { mesh, materials })
}

/// Bytes per component.
fn component_size(t: DataType) -> usize {
    match t {
        DataType::I8 | DataType::U8 => 1,
        DataType::I16 | DataType::U16 => 2,
        DataType::U32 | DataType::F32 => 4,
    }
}

/// Components per element.
fn components(d: Dimensions) -> usize {
    match d {
        Dimensions::Scalar => 1,
        Dimensions::Vec2 => 2,
        Dimensions::Vec3 => 3,
        Dimensions::Vec4 | Dimensions::Mat2 => 4,
        Dimensions::Mat3 => 9,
        Dimensions::Mat4 => 16,
    }
}

/// One component at the start of `b`, as f64 (normalised integers mapped to [-1, 1] or [0, 1]).
fn component(b: &[u8], t: DataType, normalized: bool) -> f64 {
    let (v, scale) = match t {
        DataType::I8 => (f64::from(b[0] as i8), 127.0),
        DataType::U8 => (f64::from(b[0]), 255.0),
        DataType::I16 => (f64::from(i16::from_le_bytes([b[0], b[1]])), 32767.0),
        DataType::U16 => (f64::from(u16::from_le_bytes([b[0], b[1]])), 65535.0),
        DataType::U32 => (f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 4_294_967_295.0),
        DataType::F32 => return f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    };
    if normalized { (v / scale).max(-1.0) } else { v }
}

/// The bytes of `count` elements of `elem` bytes at `offset` in `view`, `stride` apart (default:
/// packed), checked against the view and the buffer.
fn view_slice<'b>(
    view: &gltf::buffer::View,
    offset: usize,
    count: usize,
    elem: usize,
    buffers: &'b [Vec<u8>],
) -> Result<(&'b [u8], usize), String> {
    let stride = view.stride().unwrap_or(elem);
    if stride < elem {
        return Err(format!("buffer view {} has stride {stride}, less than the element size {elem}", view.index()));
    }
    let data = &buffers[view.buffer().index()];
    let view_bytes = view
        .offset()
        .checked_add(view.length())
        .and_then(|end| data.get(view.offset()..end))
        .ok_or_else(|| format!("buffer view {} lies outside buffer {}", view.index(), view.buffer().index()))?;
    let need = stride.checked_mul(count - 1).and_then(|x| x.checked_add(elem)).and_then(|x| x.checked_add(offset));
    match need {
        Some(end) if end <= view_bytes.len() => Ok((&view_bytes[offset..end], stride)),
        _ => Err(format!(
            "{count} elements of {elem} bytes (stride {stride}) from offset {offset} do not fit in buffer view {} ({} bytes)",
            view.index(),
            view_bytes.len()
        )),
    }
}

/// Every component of every element of an accessor, sparse substitutions applied.
fn read_accessor(acc: &Accessor, buffers: &[Vec<u8>]) -> Result<Vec<f64>, String> {
    let (t, ncomp, count) = (acc.data_type(), components(acc.dimensions()), acc.count());
    if count == 0 {
        return Ok(Vec::new());
    }
    let csize = component_size(t);
    let elem = ncomp * csize;
    let mut out = vec![0.0f64; count.checked_mul(ncomp).ok_or("too many elements")?];
    if let Some(view) = acc.view() {
        let (bytes, stride) = view_slice(&view, acc.offset(), count, elem, buffers)?;
        for (i, o) in out.chunks_exact_mut(ncomp).enumerate() {
            let e = &bytes[i * stride..];
            for (c, v) in o.iter_mut().enumerate() {
                *v = component(&e[c * csize..], t, acc.normalized());
            }
        }
    }
    if let Some(sparse) = acc.sparse() {
        let n = sparse.count();
        if n == 0 {
            return Ok(out);
        }
        let ind = sparse.indices();
        let it = match ind.index_type() {
            gltf::accessor::sparse::IndexType::U8 => DataType::U8,
            gltf::accessor::sparse::IndexType::U16 => DataType::U16,
            gltf::accessor::sparse::IndexType::U32 => DataType::U32,
        };
        let isize = component_size(it);
        let (ib, istride) =
            view_slice(&ind.view(), ind.offset(), n, isize, buffers).map_err(|m| format!("sparse indices: {m}"))?;
        let vals = sparse.values();
        let (vb, vstride) =
            view_slice(&vals.view(), vals.offset(), n, elem, buffers).map_err(|m| format!("sparse values: {m}"))?;
        for k in 0..n {
            let i = component(&ib[k * istride..], it, false) as usize;
            let dst = out
                .get_mut(i * ncomp..(i + 1) * ncomp)
                .ok_or_else(|| format!("sparse index {i} is out of range ({count} elements)"))?;
            for (c, v) in dst.iter_mut().enumerate() {
                *v = component(&vb[k * vstride + c * csize..], t, acc.normalized());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("AAECAw==").unwrap(), [0, 1, 2, 3]);
        assert!(base64_decode("a*b").is_err());
    }

    #[test]
    fn uris() {
        assert_eq!(percent_decode("my%20mesh.bin"), "my mesh.bin");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("a%2"), "a%2");
    }
}
