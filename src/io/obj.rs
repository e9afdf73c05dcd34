//! Wavefront OBJ: `v` positions and `f` polygons, in file order.

use std::path::Path;

use glam::Vec3;

use super::{LoadError, LoadErrorKind, finish, parse_f32, parse_i64, read_file, token_text};
use crate::mesh::TriMesh;

/// Loads a Wavefront OBJ file. See [`parse_obj`] for what is read.
pub fn load_obj(path: impl AsRef<Path>) -> Result<TriMesh, LoadError> {
    let (bytes, name) = read_file(path.as_ref())?;
    parse_obj(&bytes, &name)
}

/// Parses Wavefront OBJ text; `name` names the file in errors.
///
/// * Every `v x y z` line is a position, in file order, whether or not a face uses it; the
///   coordinates are parsed exactly as `str::parse::<f32>` does, and any further values (`w`,
///   vertex colours) are ignored. A NaN or infinite coordinate is an error.
/// * Every `f` line is a polygon of at least three vertices, each `v`, `v/vt`, `v//vn` or
///   `v/vt/vn`. Indices are 1-based across the whole file (`o` and `g` do not restart them),
///   or negative to count back from the last `v` line before the face. Only the position index
///   is used. Polygons are fan-triangulated in place, so triangle `i` is the `i`-th triangle
///   of the file in `f` order.
/// * `#` starts a comment. Every other statement (`vt`, `vn`, `o`, `g`, `s`, `usemtl`,
///   `mtllib`, `l`, `p`, ...) is ignored. Lines may end in `\n` or `\r\n`.
///
/// Errors give the 1-based line.
pub fn parse_obj(bytes: &[u8], name: &str) -> Result<TriMesh, LoadError> {
    let mut positions: Vec<Vec3> = Vec::new();
    let mut triangles: Vec<[u32; 3]> = Vec::new();
    // Vertex indices of the current face (reused, so no allocation per line).
    let mut face: Vec<u32> = Vec::new();
    // Faces that name a vertex defined later in the file: (line, largest 1-based index).
    let mut forward: Vec<(usize, i64)> = Vec::new();

    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let err = |kind| LoadError::at_line(name, line_no, kind);
        let line = match raw.iter().position(|&b| b == b'#') {
            Some(p) => raw.get(..p).unwrap_or(raw),
            None => raw,
        };
        let mut tokens = line.split(u8::is_ascii_whitespace).filter(|t| !t.is_empty());
        match tokens.next() {
            Some(b"v") => {
                let mut xyz = [0.0f32; 3];
                for c in &mut xyz {
                    let Some(tok) = tokens.next() else {
                        return Err(err(LoadErrorKind::MissingValue { expected: "3 vertex coordinates".into() }));
                    };
                    let Some(v) = parse_f32(tok) else {
                        return Err(err(LoadErrorKind::BadNumber { token: token_text(tok) }));
                    };
                    if !v.is_finite() {
                        return Err(err(LoadErrorKind::NonFiniteCoordinate { value: token_text(tok) }));
                    }
                    *c = v;
                }
                if positions.len() > u32::MAX as usize {
                    return Err(err(LoadErrorKind::TooManyVertices));
                }
                positions.push(Vec3::from_array(xyz));
            }
            Some(b"f") => {
                face.clear();
                let defined = positions.len();
                let mut max_forward = 0i64;
                for tok in tokens {
                    let mut parts = tok.split(|&b| b == b'/');
                    let v_part = parts.next().unwrap_or(tok);
                    // At most `v/vt/vn`.
                    if parts.nth(2).is_some() {
                        return Err(err(LoadErrorKind::BadIndex { token: token_text(tok) }));
                    }
                    let Some(index) = parse_i64(v_part).filter(|&x| x != 0) else {
                        return Err(err(LoadErrorKind::BadIndex { token: token_text(tok) }));
                    };
                    let out_of_range = || err(LoadErrorKind::IndexOutOfRange { index, vertices: defined });
                    let zero_based = if index > 0 {
                        if index as u64 > defined as u64 {
                            max_forward = max_forward.max(index);
                        }
                        index - 1
                    } else {
                        // Relative: -1 is the last vertex defined so far.
                        match (defined as i64).checked_add(index) {
                            Some(r) if r >= 0 => r,
                            _ => return Err(out_of_range()),
                        }
                    };
                    face.push(u32::try_from(zero_based).map_err(|_| out_of_range())?);
                }
                if face.len() < 3 {
                    return Err(err(LoadErrorKind::TooFewVertices { count: face.len() }));
                }
                if max_forward > 0 {
                    forward.push((line_no, max_forward));
                }
                if let Some((&first, rest)) = face.split_first() {
                    triangles.extend(rest.windows(2).map(|w| [first, w[0], w[1]]));
                }
            }
            _ => {}
        }
    }

    // Positive indices may name vertices defined later; check them against the whole file.
    if let Some(&(line, index)) = forward.iter().find(|&&(_, index)| index as u64 > positions.len() as u64) {
        return Err(LoadError::at_line(
            name,
            line,
            LoadErrorKind::IndexOutOfRange { index, vertices: positions.len() },
        ));
    }
    finish(name, positions, triangles)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> LoadError {
        match parse_obj(text.as_bytes(), "t.obj") {
            Ok(m) => panic!("expected an error, got {m:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn fan_and_relative() {
        let m = parse_obj(b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 2 0\nf -5 -4 -3 -2 -1\n", "t.obj").unwrap();
        assert_eq!(m.triangles(), &[[0, 1, 2], [0, 2, 3], [0, 3, 4]]);
    }

    #[test]
    fn forward_reference_is_allowed() {
        let m = parse_obj(b"f 1 2 3\nv 0 0 0\nv 1 0 0\nv 0 1 0\n", "t.obj").unwrap();
        assert_eq!(m.triangles(), &[[0, 1, 2]]);
        let e = err("f 1 2 4\nv 0 0 0\nv 1 0 0\nv 0 1 0\n");
        assert_eq!(e.line(), Some(1));
        assert!(matches!(e.kind(), LoadErrorKind::IndexOutOfRange { index: 4, vertices: 3 }));
    }

    #[test]
    fn errors_name_the_line() {
        assert!(matches!(err("v 0 0 0\n\nv 1 x 0\n").kind(), LoadErrorKind::BadNumber { .. }));
        assert_eq!(err("v 0 0 0\n\nv 1 x 0\n").line(), Some(3));
        assert!(matches!(err("v 0 0\n").kind(), LoadErrorKind::MissingValue { .. }));
        assert!(matches!(err("v 0 0 1e39\n").kind(), LoadErrorKind::NonFiniteCoordinate { .. }));
        assert!(matches!(err("v 0 0 nan\n").kind(), LoadErrorKind::NonFiniteCoordinate { .. }));
        assert!(matches!(err("v 0 0 0\nf 1 0 1\n").kind(), LoadErrorKind::BadIndex { .. }));
        assert!(matches!(err("v 0 0 0\nf 1 1/2/3/4 1\n").kind(), LoadErrorKind::BadIndex { .. }));
        assert!(matches!(err("v 0 0 0\nf 1 -2 1\n").kind(), LoadErrorKind::IndexOutOfRange { index: -2, vertices: 1 }));
        assert!(matches!(err("v 0 0 0\nf 1 1\n").kind(), LoadErrorKind::TooFewVertices { count: 2 }));
        assert!(matches!(err("f\n").kind(), LoadErrorKind::TooFewVertices { count: 0 }));
        assert!(matches!(err("v 0 0 0\nf 1 1 99999999999\n").kind(), LoadErrorKind::IndexOutOfRange { .. }));
        assert!(matches!(err("v 0 0 0\nf 1 1 -9223372036854775808\n").kind(), LoadErrorKind::IndexOutOfRange { .. }));
    }

    #[test]
    fn comments_and_other_statements() {
        let text = "# c\nmtllib a.mtl\no a # x\nv 1 2 3 1.0\nvt 0 0\nvn 0 0 1\nv 4 5 6\r\nv 7 8 9 # c\ns off\nusemtl m\nl 1 2\np 1\nf 1/1/1 2//1 3/1 # tri\n";
        let m = parse_obj(text.as_bytes(), "t.obj").unwrap();
        assert_eq!(m.positions(), &[Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.0, 5.0, 6.0), Vec3::new(7.0, 8.0, 9.0)]);
        assert_eq!(m.triangles(), &[[0, 1, 2]]);
        assert!(parse_obj(b"", "t.obj").unwrap().is_empty());
    }
}
