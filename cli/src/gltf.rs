//! glTF 2.0 (`.gltf` with embedded or external buffers, and binary `.glb`) into one triangle mesh
//! in world space.
//!
//! The `gltf` crate parses and validates the document; the buffers and accessors are read here,
//! with every offset, stride and index checked, so that a malformed file is an error naming the
//! buffer, accessor, mesh or node, never a panic. The default scene (or the first; or, without
//! scenes, every root node) is walked with each node's transform applied to its mesh. Triangle
//! lists, strips and fans are read; points and lines are skipped. Each triangle gets its
//! material's base colour factor.

use std::path::Path;

use glam::{Mat4, Vec3};
use gltf::Document;
use gltf::accessor::{Accessor, DataType, Dimensions};
use gltf::buffer::Source;
use gltf::mesh::Mode;
use slabtree::TriMesh;

use super::error::{CliError, CliResult};
use super::scene::{DEFAULT_ALBEDO, Scene};

/// Deepest node hierarchy accepted; deeper is taken as a cycle.
const MAX_DEPTH: usize = 256;

/// `Gltf::from_slice`, with a panic inside it turned into `None`. gltf-json 1.4 indexes its own
/// arrays while validating and panics on some malformed documents (a primitive whose POSITION
/// names a missing accessor; found by fuzzing, `tests/regressions.rs`). The panic hook is silenced
/// for the call so that nothing reaches stderr; loading happens before any other thread exists.
fn parse_contained(bytes: &[u8]) -> Option<gltf::Result<gltf::Gltf>> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(|| gltf::Gltf::from_slice(bytes));
    std::panic::set_hook(hook);
    result.ok()
}

/// Loads a `.gltf` or `.glb` file.
pub fn load(path: &Path) -> CliResult<Scene> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, "read", &e))?;
    let gltf = parse_contained(&bytes)
        .ok_or_else(|| {
            CliError::new(format!("{name}: invalid glTF: the document refers to objects it does not contain"))
        })?
        .map_err(|e| match e {
            gltf::Error::Validation(problems) => {
                let list: Vec<String> = problems.iter().map(|(path, what)| format!("{path}: {what}")).collect();
                CliError::new(format!("{name}: invalid glTF: {}", list.join("; ")))
            }
            e => CliError::new(format!("{name}: invalid glTF: {e}")),
        })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let buffers = load_buffers(&gltf.document, gltf.blob.as_deref(), dir).map_err(|e| e.in_file(&name))?;
    let mut out = Collector::default();
    walk(&gltf.document, &buffers, &mut out).map_err(|e| e.in_file(&name))?;
    let colors = out.any_material.then_some(out.colors);
    let mesh = TriMesh::new(out.positions, out.triangles)
        .map_err(|e| CliError::new(format!("{name}: invalid mesh (a node transform that is not finite?): {e}")))?;
    Ok(Scene { colors, objects: out.instances, ..Scene::plain(name, mesh) })
}

/// An error inside the file, before the file name is put in front.
struct Problem(String);

impl Problem {
    fn in_file(self, file: &str) -> CliError {
        CliError::new(format!("{file}: {}", self.0))
    }
}

macro_rules! problem {
    ($($t:tt)*) => { Problem(format!($($t)*)) };
}

/// Reads every buffer: the GLB binary chunk, a base64 `data:` URI or a file beside the glTF.
fn load_buffers(doc: &Document, blob: Option<&[u8]>, dir: &Path) -> Result<Vec<Vec<u8>>, Problem> {
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

/// World-space triangles, gathered node by node.
#[derive(Default)]
struct Collector {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    colors: Vec<Vec3>,
    any_material: bool,
    /// Each mesh instance's triangle range.
    instances: Vec<std::ops::Range<u32>>,
}

/// Walks the default scene (or the first, or every root node) and collects its meshes.
fn walk(doc: &Document, buffers: &[Vec<u8>], out: &mut Collector) -> Result<(), Problem> {
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
    if roots.is_empty() && doc.nodes().len() == 0 {
        // No nodes at all: take each mesh as it is.
        for mesh in doc.meshes() {
            add_mesh(&mesh, &Mat4::IDENTITY, buffers, out)?;
        }
        return Ok(());
    }
    let mut stack: Vec<(gltf::Node, Mat4, usize)> = roots.into_iter().map(|n| (n, Mat4::IDENTITY, 0)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        if depth >= MAX_DEPTH {
            return Err(problem!(
                "node {}: the node hierarchy is deeper than {MAX_DEPTH} levels (a cycle?)",
                node.index()
            ));
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            add_mesh(&mesh, &world, buffers, out).map_err(|p| problem!("node {}, {}", node.index(), p.0))?;
        }
        for child in node.children() {
            stack.push((child, world, depth + 1));
        }
    }
    Ok(())
}

/// Adds every triangle primitive of `mesh`, transformed by `world`.
fn add_mesh(mesh: &gltf::Mesh, world: &Mat4, buffers: &[Vec<u8>], out: &mut Collector) -> Result<(), Problem> {
    let start = out.triangles.len() as u32;
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
        let base = out.positions.len();
        if base + n > u32::MAX as usize {
            return Err(place("more vertices than u32 indices can address".into()));
        }
        out.positions.extend(
            p.chunks_exact(3).map(|c| world.transform_point3(Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32))),
        );

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
        let tris: Vec<[u32; 3]> = match prim.mode() {
            Mode::TriangleStrip => (0..indices.len().saturating_sub(2))
                .map(|i| {
                    let (a, b, c) = (indices[i], indices[i + 1], indices[i + 2]);
                    if i % 2 == 0 { [a, b, c] } else { [b, a, c] }
                })
                .collect(),
            Mode::TriangleFan => {
                (1..indices.len().saturating_sub(1)).map(|i| [indices[0], indices[i], indices[i + 1]]).collect()
            }
            _ => indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect(),
        };
        let material = prim.material();
        let color = if material.index().is_some() {
            out.any_material = true;
            let [r, g, b, _] = material.pbr_metallic_roughness().base_color_factor();
            let c = Vec3::new(r, g, b);
            if c.is_finite() { c.clamp(Vec3::ZERO, Vec3::ONE) } else { DEFAULT_ALBEDO }
        } else {
            DEFAULT_ALBEDO
        };
        let off = base as u32;
        out.triangles.extend(tris.iter().map(|t| t.map(|i| i + off)));
        out.colors.extend(std::iter::repeat_n(color, tris.len()));
    }
    // Instances that add no triangle (points, lines) are not objects.
    let end = out.triangles.len() as u32;
    if end > start {
        out.instances.push(start..end);
    }
    Ok(())
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
