//! PLY 1.0, ASCII and binary (little- and big-endian): `vertex` positions and `face` polygons.

use std::path::Path;

mod body;
mod header;

use super::{LoadError, finish, read_file};
use crate::mesh::TriMesh;
use body::{Output, parse_ascii_body, parse_binary_body};
use header::{Format, parse_header};

/// Loads a PLY file. See [`parse_ply`] for what is read.
pub fn load_ply(path: impl AsRef<Path>) -> Result<TriMesh, LoadError> {
    let (bytes, name) = read_file(path.as_ref())?;
    parse_ply(&bytes, &name)
}

/// Parses PLY data (header and body); `name` names the file in errors.
///
/// * Formats: `ascii 1.0`, `binary_little_endian 1.0` and `binary_big_endian 1.0`.
/// * Property types: `char`/`int8`, `uchar`/`uint8`, `short`/`int16`, `ushort`/`uint16`,
///   `int`/`int32`, `uint`/`uint32`, `float`/`float32`, `double`/`float64`.
/// * The `vertex` element gives the positions from its scalar `x`, `y`, `z` properties of any
///   type (`double` is rounded to `f32`; a NaN or infinite result is an error). Its other
///   properties, lists included, are skipped.
/// * The `face` element gives the polygons from its list property `vertex_indices` (or
///   `vertex_index`), with any integer length and index types. Indices are 0-based. Polygons
///   are fan-triangulated in place, so triangle `i` is the `i`-th triangle in face order; a face
///   with fewer than three vertices is an error. Other face properties are skipped.
/// * Other elements are skipped, and the elements may come in any order. Data after the last
///   element is ignored. Without a `vertex` element there are no vertices; without a `face`
///   element the mesh is empty.
///
/// Header errors give the 1-based line. Body errors give the element and 0-based record (the
/// 18th face is `face 17`) and, for ASCII, also the line.
pub fn parse_ply(bytes: &[u8], name: &str) -> Result<TriMesh, LoadError> {
    let header = parse_header(bytes, name)?;
    let body = bytes.get(header.body_start..).unwrap_or_default();
    let vertex_count = header.vertex_count();

    let mut out = Output::new(vertex_count);
    match header.format {
        Format::Ascii => parse_ascii_body(body, header.body_line, &header.elements, name, &mut out)?,
        Format::BinaryLe => parse_binary_body(body, false, &header.elements, name, &mut out)?,
        Format::BinaryBe => parse_binary_body(body, true, &header.elements, name, &mut out)?,
    }
    let (positions, triangles) = out.into_parts();
    finish(name, positions, triangles)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::LoadErrorKind;

    const ASCII: &str = "ply\nformat ascii 1.0\ncomment hi\nelement vertex 4\nproperty float x\nproperty float y\n\
                         property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n\
                         0 0 0\n1 0 0\n1 1 0\n0 1 0\n4 0 1 2 3\n";

    fn err(text: &str) -> LoadError {
        match parse_ply(text.as_bytes(), "t.ply") {
            Ok(m) => panic!("expected an error, got {m:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn ascii_quad() {
        let m = parse_ply(ASCII.as_bytes(), "t.ply").unwrap();
        assert_eq!(m.positions().len(), 4);
        assert_eq!(m.triangles(), &[[0, 1, 2], [0, 2, 3]]);
    }

    #[test]
    fn header_errors() {
        let e = err("ply\nformat ascii 1.0\nelement vertex 1\nproperty floot x\nend_header\n");
        assert_eq!(e.line(), Some(4));
        assert!(matches!(e.kind(), LoadErrorKind::Unsupported { .. }));
        let e = err("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n");
        assert!(matches!(e.kind(), LoadErrorKind::BadHeader { .. }), "{e}");
        let e = err("plx\n");
        assert_eq!(e.line(), Some(1));
        let e = err("ply\nformat ascii 2.0\nend_header\n");
        assert!(matches!(e.kind(), LoadErrorKind::Unsupported { .. }));
        let e = err("ply\nend_header\n");
        assert!(matches!(e.kind(), LoadErrorKind::BadHeader { .. }));
        let e = err("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n0 0\n");
        assert_eq!(e.line(), Some(3));
        let e = err("ply\nformat ascii 1.0\nelement face 1\nproperty list float int vertex_indices\nend_header\n");
        assert_eq!(e.line(), Some(4));
        let e = err("ply\nformat ascii 1.0\nelement face 1\nproperty list uchar int vertex_indicez\nend_header\n");
        assert_eq!(e.line(), Some(3));
        let e = err("ply\nformat ascii 1.0\nelement face 1\nproperty list uchar double vertex_indices\nend_header\n");
        assert_eq!(e.line(), Some(4));
        let e = err("ply\nformat ascii 1.0\nproperty float x\nend_header\n");
        assert_eq!(e.line(), Some(3));
        let e = err("ply\nformat ascii 1.0\nelement vertex 99999999999999999999\nend_header\n");
        assert_eq!(e.line(), Some(3));
    }

    #[test]
    fn body_errors() {
        let e = err(&ASCII.replace("1 1 0\n", "1 1e99 0\n"));
        assert_eq!((e.line(), e.record()), (Some(13), Some(("vertex", 2))));
        assert!(matches!(e.kind(), LoadErrorKind::NonFiniteCoordinate { .. }));
        let e = err(&ASCII.replace("4 0 1 2 3", "4 0 1 2 4"));
        assert_eq!((e.line(), e.record()), (Some(15), Some(("face", 0))));
        assert!(matches!(e.kind(), LoadErrorKind::IndexOutOfRange { index: 4, vertices: 4 }));
        let e = err(&ASCII.replace("4 0 1 2 3", "-1 0 1 2 3"));
        assert!(matches!(e.kind(), LoadErrorKind::BadListLength { length: -1 }));
        let e = err(&ASCII.replace("4 0 1 2 3\n", "4 0 1 2"));
        assert!(matches!(e.kind(), LoadErrorKind::MissingValue { .. }));
    }

    #[test]
    fn only_the_first_vertex_and_face_elements_are_read() {
        let text = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n\
                    element vertex 1\nproperty float x\nelement face 1\nproperty list uchar int vertex_indices\n\
                    element face 1\nproperty list uchar int vertex_indices\nend_header\n\
                    0 0 0\n1 0 0\n0 1 0\n9\n3 0 1 2\n3 2 1 99\n";
        let m = parse_ply(text.as_bytes(), "t.ply").unwrap();
        assert_eq!(m.positions().len(), 3);
        assert_eq!(m.triangles(), &[[0, 1, 2]]);
    }

    #[test]
    fn binary_huge_counts_are_truncation_not_allocation() {
        let mut data = b"ply\nformat binary_little_endian 1.0\nelement vertex 4294967295\nproperty float x\n\
                         property float y\nproperty float z\nelement face 4000000000\n\
                         property list uint uint vertex_indices\nend_header\n"
            .to_vec();
        data.extend_from_slice(&[0u8; 30]);
        let e = parse_ply(&data, "t.ply").unwrap_err();
        assert_eq!(e.record(), Some(("vertex", 2)));
        assert!(matches!(e.kind(), LoadErrorKind::Truncated { needed: 12, available: 6 }), "{e}");
    }
}
