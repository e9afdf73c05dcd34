//! Loading triangle meshes from Wavefront OBJ and PLY files, and (feature `gltf`) glTF scenes.
//!
//! * [`load_mesh`] picks the format from the file extension (`.obj` or `.ply`, any case).
//! * [`load_obj`] / [`parse_obj`]: Wavefront OBJ. Only `v` positions and `f` faces are read;
//!   texture coordinates, normals, groups, objects, materials, lines and points are ignored.
//! * [`load_ply`] / [`parse_ply`]: PLY 1.0 in `ascii`, `binary_little_endian` or
//!   `binary_big_endian` format. Reads `x`, `y`, `z` of the `vertex` element and the
//!   `vertex_indices` (or `vertex_index`) list of the `face` element; everything else is skipped.
//!
//! Both formats keep the file's order: position `i` is the `i`-th vertex of the file (OBJ `v`
//! lines across the whole file, unreferenced ones included) and triangle `i` is the `i`-th
//! triangle in face order. Polygons with more than three vertices are fan-triangulated
//! (`a b c d` gives `a b c` and `a c d`) in place, so a quad takes two consecutive triangle
//! indices. A file without faces gives an empty mesh, not an error.
//!
//! Nothing here panics on malformed input: every problem is a [`LoadError`] that names the
//! file and, where there is one, the 1-based line (text) or the 0-based element record
//! (binary PLY, and also ASCII PLY body lines).
//!
//! ```
//! use slabtree::io::parse_obj;
//! let mesh = parse_obj(b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n", "square.obj")?;
//! assert_eq!(mesh.triangles(), &[[0, 1, 2], [0, 2, 3]]);
//!
//! let err = parse_obj(b"v 0 0 0\nv 1 0 0\nf 1 2 7\n", "broken.obj").unwrap_err();
//! assert_eq!(err.line(), Some(3));
//! assert!(err.to_string().starts_with("broken.obj, line 3: "));
//! # Ok::<(), slabtree::io::LoadError>(())
//! ```

use std::fmt;
use std::path::Path;

use crate::mesh::MeshError;
use crate::mesh::TriMesh;

#[cfg(feature = "gltf")]
mod gltf;
mod obj;
mod ply;

#[cfg(feature = "gltf")]
pub use gltf::{GltfDocument, GltfInstance, GltfMesh, load_gltf, parse_gltf, read_gltf};
pub use obj::{load_obj, parse_obj};
pub use ply::{load_ply, parse_ply};

/// Loads a triangle mesh, choosing the format by the file extension: `.obj` ([`load_obj`]) or
/// `.ply` ([`load_ply`]), compared case-insensitively.
///
/// Any other extension, or none, is [`LoadErrorKind::UnknownFormat`]; the file is not read.
pub fn load_mesh(path: impl AsRef<Path>) -> Result<TriMesh, LoadError> {
    let path = path.as_ref();
    let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
    match ext.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("obj") => load_obj(path),
        Some("ply") => load_ply(path),
        _ => Err(LoadError::new(&display_name(path), LoadErrorKind::UnknownFormat { extension: ext })),
    }
}

/// The name used in errors for a file loaded from disk.
fn display_name(path: &Path) -> String {
    path.display().to_string()
}

/// Reads a whole file into memory, naming it in the error.
fn read_file(path: &Path) -> Result<(Vec<u8>, String), LoadError> {
    let name = display_name(path);
    match std::fs::read(path) {
        Ok(bytes) => Ok((bytes, name)),
        Err(e) => Err(LoadError::new(&name, LoadErrorKind::Io(e))),
    }
}

/// Why a mesh file could not be loaded, with where: the file name, and the 1-based line or the
/// 0-based element record when the problem is at one.
///
/// Its [`Display`](fmt::Display) always starts with the file name, then the place, then what
/// was wrong, e.g. `bunny.obj, line 12: \`1.0x\` is not a number` or
/// `dragon.ply, face 17: data ends inside this record (it needs 13 bytes, 5 are left)`.
/// Record numbers count from 0 within their element, as face and vertex indices do.
#[derive(Debug)]
pub struct LoadError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    file: String,
    line: Option<usize>,
    record: Option<(String, usize)>,
    kind: LoadErrorKind,
}

impl LoadError {
    pub(crate) fn new(file: &str, kind: LoadErrorKind) -> LoadError {
        LoadError(Box::new(Inner { file: file.to_owned(), line: None, record: None, kind }))
    }

    pub(crate) fn at_line(file: &str, line: usize, kind: LoadErrorKind) -> LoadError {
        LoadError::new(file, kind).with_line(line)
    }

    pub(crate) fn at_record(file: &str, element: &str, index: usize, kind: LoadErrorKind) -> LoadError {
        LoadError::new(file, kind).with_record(element, index)
    }

    pub(crate) fn with_line(mut self, line: usize) -> LoadError {
        self.0.line = Some(line);
        self
    }

    pub(crate) fn with_record(mut self, element: &str, index: usize) -> LoadError {
        self.0.record = Some((element.to_owned(), index));
        self
    }

    /// The file: its path as given to a `load_*` function, or the name given to a `parse_*`
    /// function.
    pub fn file(&self) -> &str {
        &self.0.file
    }

    /// The 1-based line of a text file (an OBJ file, a PLY header or an ASCII PLY body), if the
    /// error is at one.
    pub fn line(&self) -> Option<usize> {
        self.0.line
    }

    /// The PLY element name and the 0-based record index within it (`("face", 17)` is the 18th
    /// face), if the error is in a record of the PLY body.
    pub fn record(&self) -> Option<(&str, usize)> {
        self.0.record.as_ref().map(|(e, i)| (e.as_str(), *i))
    }

    /// What was wrong.
    pub fn kind(&self) -> &LoadErrorKind {
        &self.0.kind
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "{}", e.file)?;
        if let Some(line) = e.line {
            write!(f, ", line {line}")?;
        }
        if let Some((element, index)) = &e.record {
            write!(f, ", {element} {index}")?;
        }
        write!(f, ": {}", e.kind)
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            LoadErrorKind::Io(e) => Some(e),
            LoadErrorKind::Mesh(e) => Some(e),
            _ => None,
        }
    }
}

/// What was wrong with a mesh file. The place (file, line, record) is on [`LoadError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be read (missing, a directory, no permission, ...).
    Io(std::io::Error),
    /// [`load_mesh`] was given a path whose extension is not `.obj` or `.ply`.
    UnknownFormat {
        /// The extension, without the dot; `None` if the path has none.
        extension: Option<String>,
    },
    /// A value that should be a number is not one.
    BadNumber {
        /// The text found.
        token: String,
    },
    /// A line or the data ended before a needed value.
    MissingValue {
        /// What was expected, e.g. "3 vertex coordinates".
        expected: String,
    },
    /// An OBJ face vertex that is not a vertex reference: not an integer, `0`, or more than
    /// three `/`-separated parts.
    BadIndex {
        /// The text found.
        token: String,
    },
    /// A face with fewer than three vertices.
    TooFewVertices {
        /// How many it has.
        count: usize,
    },
    /// A face vertex index that names no vertex. For OBJ the index is as written (1-based, or
    /// negative for relative) and `vertices` counts the vertices of the whole file (or, for a
    /// negative index, those before the face); for PLY it is the 0-based index and the
    /// declared vertex count.
    IndexOutOfRange {
        /// The index as read.
        index: i64,
        /// How many vertices it could refer to.
        vertices: usize,
    },
    /// A vertex coordinate that is NaN or infinite as an `f32` (including decimal text beyond
    /// the `f32` range, such as `1e39`).
    NonFiniteCoordinate {
        /// The value as read.
        value: String,
    },
    /// More vertices than `u32` indices can address.
    TooManyVertices,
    /// A negative list length in a PLY record.
    BadListLength {
        /// The length read.
        length: i64,
    },
    /// Binary PLY data ends inside a record.
    Truncated {
        /// Bytes the record needs, from its start to the end of the value that was cut off.
        needed: usize,
        /// Bytes left in the file at the record's start.
        available: usize,
    },
    /// A malformed PLY header: missing `ply` magic, `format` line or `end_header`, or a line
    /// that cannot be read.
    BadHeader {
        /// What was wrong.
        message: String,
    },
    /// A PLY feature this loader does not support: an unknown property type, a format or
    /// version other than ASCII/binary 1.0, a list where a scalar is needed (or the reverse),
    /// a floating-point list length or face index, or a missing `x`/`y`/`z` or
    /// `vertex_indices` property.
    Unsupported {
        /// What was found.
        message: String,
    },
    /// The mesh was rejected by [`TriMesh::new`]. The loaders check indices and coordinates
    /// themselves, so this is not expected.
    Mesh(MeshError),
    /// A glTF file that cannot be read (feature `gltf`): the message names the place in the
    /// document (a JSON line, a buffer, accessor, mesh, primitive or node) and what is wrong.
    Gltf(String),
}

impl fmt::Display for LoadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadErrorKind::Io(e) => write!(f, "cannot read the file: {e}"),
            LoadErrorKind::UnknownFormat { extension: Some(ext) } => {
                write!(f, "unknown mesh format `.{ext}` (expected .obj or .ply)")
            }
            LoadErrorKind::UnknownFormat { extension: None } => {
                write!(f, "unknown mesh format: no file extension (expected .obj or .ply)")
            }
            LoadErrorKind::BadNumber { token } => write!(f, "`{token}` is not a number"),
            LoadErrorKind::MissingValue { expected } => write!(f, "missing value: expected {expected}"),
            LoadErrorKind::BadIndex { token } => write!(f, "`{token}` is not a vertex reference"),
            LoadErrorKind::TooFewVertices { count } => {
                write!(f, "face has {count} vertices; at least 3 are needed")
            }
            LoadErrorKind::IndexOutOfRange { index, vertices } => {
                write!(f, "vertex index {index} is out of range ({vertices} vertices)")
            }
            LoadErrorKind::NonFiniteCoordinate { value } => {
                write!(f, "coordinate `{value}` is not a finite f32")
            }
            LoadErrorKind::TooManyVertices => write!(f, "more vertices than u32 indices can address"),
            LoadErrorKind::BadListLength { length } => write!(f, "list length {length} is negative"),
            LoadErrorKind::Truncated { needed, available } => {
                write!(f, "data ends inside this record (it needs {needed} bytes, {available} are left)")
            }
            LoadErrorKind::BadHeader { message } => write!(f, "bad PLY header: {message}"),
            LoadErrorKind::Unsupported { message } => write!(f, "unsupported PLY: {message}"),
            LoadErrorKind::Mesh(e) => write!(f, "invalid mesh: {e}"),
            LoadErrorKind::Gltf(message) => write!(f, "invalid glTF: {message}"),
        }
    }
}

/// Builds the mesh; the loaders have checked indices and coordinates, so this only fails on a bug.
fn finish(file: &str, positions: Vec<glam::Vec3>, triangles: Vec<[u32; 3]>) -> Result<TriMesh, LoadError> {
    TriMesh::new(positions, triangles).map_err(|e| LoadError::new(file, LoadErrorKind::Mesh(e)))
}

/// Parses `token` as Rust's `str::parse::<f32>` does (correctly rounded).
fn parse_f32(token: &[u8]) -> Option<f32> {
    std::str::from_utf8(token).ok()?.parse::<f32>().ok()
}

/// Parses `token` as `str::parse::<f64>`.
fn parse_f64(token: &[u8]) -> Option<f64> {
    std::str::from_utf8(token).ok()?.parse::<f64>().ok()
}

/// Parses a decimal integer with an optional sign; `None` on anything else or overflow.
fn parse_i64(token: &[u8]) -> Option<i64> {
    let (neg, digits) = match token.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, token),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let d = i64::from(b - b'0');
        // Accumulate negatively so that i64::MIN parses.
        v = v.checked_mul(10)?.checked_sub(d)?;
    }
    if neg { Some(v) } else { v.checked_neg() }
}

/// Text of a token for an error message (lossy, and cut to a sane length).
fn token_text(token: &[u8]) -> String {
    const MAX: usize = 64;
    let s = String::from_utf8_lossy(token.get(..MAX).unwrap_or(token));
    if token.len() > MAX { format!("{s}...") } else { s.into_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"+7"), Some(7));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_i64(b"1.0"), None);
        assert_eq!(parse_i64(b"1a"), None);
    }

    #[test]
    fn token_text_is_cut() {
        assert_eq!(token_text(b"abc"), "abc");
        assert_eq!(token_text(&[b'x'; 100]).len(), 67);
        assert_eq!(token_text(&[0xff, b'a']), "\u{fffd}a");
    }

    #[test]
    fn error_display_and_accessors() {
        let e = LoadError::at_line("a.obj", 3, LoadErrorKind::TooFewVertices { count: 2 });
        assert_eq!(e.to_string(), "a.obj, line 3: face has 2 vertices; at least 3 are needed");
        assert_eq!((e.file(), e.line(), e.record()), ("a.obj", Some(3), None));
        let e = LoadError::at_record("b.ply", "face", 17, LoadErrorKind::Truncated { needed: 13, available: 5 });
        assert_eq!(e.to_string(), "b.ply, face 17: data ends inside this record (it needs 13 bytes, 5 are left)");
        assert_eq!(e.record(), Some(("face", 17)));
        let e = e.with_line(9);
        assert!(e.to_string().starts_with("b.ply, line 9, face 17: "));
    }
}
