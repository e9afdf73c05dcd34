//! PLY 1.0, ASCII and binary (little- and big-endian): `vertex` positions and `face` polygons.

use std::path::Path;

use glam::Vec3;

use super::{LoadError, LoadErrorKind, finish, parse_f32, parse_f64, parse_i64, read_file, token_text};
use crate::mesh::TriMesh;

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

    let mut out =
        Output { positions: Vec::new(), triangles: Vec::new(), vertex_count, face: Vec::new(), coord: [0.0; 3] };
    match header.format {
        Format::Ascii => parse_ascii_body(body, header.body_line, &header.elements, name, &mut out)?,
        Format::BinaryLe => parse_binary_body(body, false, &header.elements, name, &mut out)?,
        Format::BinaryBe => parse_binary_body(body, true, &header.elements, name, &mut out)?,
    }
    finish(name, out.positions, out.triangles)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Ascii,
    BinaryLe,
    BinaryBe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    fn from_name(name: &[u8]) -> Option<Scalar> {
        Some(match name {
            b"char" | b"int8" => Scalar::I8,
            b"uchar" | b"uint8" => Scalar::U8,
            b"short" | b"int16" => Scalar::I16,
            b"ushort" | b"uint16" => Scalar::U16,
            b"int" | b"int32" => Scalar::I32,
            b"uint" | b"uint32" => Scalar::U32,
            b"float" | b"float32" => Scalar::F32,
            b"double" | b"float64" => Scalar::F64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
}

/// What a property's values are used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Skip,
    /// Vertex coordinate 0, 1 or 2.
    Coord(usize),
    /// The face's vertex index list.
    Indices,
}

#[derive(Clone, Copy, Debug)]
enum PropType {
    Scalar(Scalar),
    List { len: Scalar, item: Scalar },
}

#[derive(Debug)]
struct Property {
    name: String,
    ty: PropType,
    role: Role,
}

#[derive(Debug)]
struct Element {
    name: String,
    count: usize,
    props: Vec<Property>,
    /// `vertex` or `face`: whether this element is read (only the first of each name is).
    used: bool,
}

impl Element {
    /// Fewest bytes one binary record can take (lists empty); at least 1, to bound allocations.
    fn min_binary_size(&self) -> usize {
        let size = self.props.iter().fold(0usize, |acc, p| {
            acc.saturating_add(match p.ty {
                PropType::Scalar(s) => s.size(),
                PropType::List { len, .. } => len.size(),
            })
        });
        size.max(1)
    }
}

#[derive(Debug)]
struct Header {
    format: Format,
    elements: Vec<Element>,
    body_start: usize,
    /// The 1-based line on which the body starts (for ASCII).
    body_line: usize,
}

impl Header {
    fn vertex_count(&self) -> usize {
        self.elements.iter().find(|e| e.used && e.name == "vertex").map_or(0, |e| e.count)
    }
}

fn bad_header(name: &str, line: usize, message: impl Into<String>) -> LoadError {
    LoadError::at_line(name, line, LoadErrorKind::BadHeader { message: message.into() })
}

fn unsupported(name: &str, line: usize, message: impl Into<String>) -> LoadError {
    LoadError::at_line(name, line, LoadErrorKind::Unsupported { message: message.into() })
}

fn parse_header(bytes: &[u8], name: &str) -> Result<Header, LoadError> {
    let mut format = None;
    let (mut seen_vertex, mut seen_face) = (false, false);
    let mut elements: Vec<Element> = Vec::new();
    // Header line of each element and property, for errors found after the header is read.
    let mut element_lines: Vec<usize> = Vec::new();
    let mut prop_lines: Vec<Vec<usize>> = Vec::new();
    let mut pos = 0usize;
    let mut line_no = 0usize;
    let body_start = loop {
        let rest = bytes.get(pos..).unwrap_or_default();
        if rest.is_empty() {
            return Err(bad_header(name, line_no.max(1), "the header has no `end_header` line"));
        }
        line_no += 1;
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(n) => (rest.get(..n).unwrap_or_default(), pos.saturating_add(n).saturating_add(1)),
            None => (rest, bytes.len()),
        };
        pos = next;
        let mut tokens = line.split(u8::is_ascii_whitespace).filter(|t| !t.is_empty());
        let keyword = tokens.next();
        if line_no == 1 {
            if keyword != Some(&b"ply"[..]) || tokens.next().is_some() {
                return Err(bad_header(name, 1, "not a PLY file: the first line is not `ply`"));
            }
            continue;
        }
        match keyword {
            None | Some(b"comment") | Some(b"obj_info") => {}
            Some(b"end_header") => break pos,
            Some(b"format") => {
                if format.is_some() {
                    return Err(bad_header(name, line_no, "a second `format` line"));
                }
                let f = match tokens.next() {
                    Some(b"ascii") => Format::Ascii,
                    Some(b"binary_little_endian") => Format::BinaryLe,
                    Some(b"binary_big_endian") => Format::BinaryBe,
                    Some(other) => {
                        return Err(unsupported(name, line_no, format!("format `{}`", token_text(other))));
                    }
                    None => return Err(bad_header(name, line_no, "`format` without a format name")),
                };
                match tokens.next() {
                    Some(v) if parse_f64(v) == Some(1.0) => {}
                    Some(v) => return Err(unsupported(name, line_no, format!("version `{}`", token_text(v)))),
                    None => return Err(bad_header(name, line_no, "`format` without a version")),
                }
                format = Some(f);
            }
            Some(b"element") => {
                let (Some(el_name), Some(count), None) = (tokens.next(), tokens.next(), tokens.next()) else {
                    return Err(bad_header(name, line_no, "expected `element <name> <count>`"));
                };
                let Some(count) = parse_i64(count).and_then(|c| usize::try_from(c).ok()) else {
                    return Err(bad_header(name, line_no, format!("bad element count `{}`", token_text(count))));
                };
                let el_name = String::from_utf8_lossy(el_name).into_owned();
                // Only the first `vertex` and the first `face` element are read.
                let used = match el_name.as_str() {
                    "vertex" => !std::mem::replace(&mut seen_vertex, true),
                    "face" => !std::mem::replace(&mut seen_face, true),
                    _ => false,
                };
                elements.push(Element { name: el_name, count, props: Vec::new(), used });
                element_lines.push(line_no);
                prop_lines.push(Vec::new());
            }
            Some(b"property") => {
                let (Some(element), Some(lines)) = (elements.last_mut(), prop_lines.last_mut()) else {
                    return Err(bad_header(name, line_no, "`property` before any `element`"));
                };
                let ty_name = tokens.next();
                let ty = if ty_name == Some(&b"list"[..]) {
                    let (Some(len), Some(item)) = (tokens.next(), tokens.next()) else {
                        return Err(bad_header(name, line_no, "expected `property list <type> <type> <name>`"));
                    };
                    let (Some(len_ty), Some(item_ty)) = (Scalar::from_name(len), Scalar::from_name(item)) else {
                        let bad = if Scalar::from_name(len).is_none() { len } else { item };
                        return Err(unsupported(name, line_no, format!("property type `{}`", token_text(bad))));
                    };
                    if len_ty.is_float() {
                        return Err(unsupported(name, line_no, "a list length of floating-point type"));
                    }
                    PropType::List { len: len_ty, item: item_ty }
                } else {
                    let Some(t) = ty_name else {
                        return Err(bad_header(name, line_no, "expected `property <type> <name>`"));
                    };
                    let Some(s) = Scalar::from_name(t) else {
                        return Err(unsupported(name, line_no, format!("property type `{}`", token_text(t))));
                    };
                    PropType::Scalar(s)
                };
                let (Some(prop_name), None) = (tokens.next(), tokens.next()) else {
                    return Err(bad_header(name, line_no, "expected one property name"));
                };
                let prop_name = String::from_utf8_lossy(prop_name).into_owned();
                element.props.push(Property { name: prop_name, ty, role: Role::Skip });
                lines.push(line_no);
            }
            Some(other) => {
                return Err(bad_header(name, line_no, format!("unknown header line `{}`", token_text(other))));
            }
        }
    };
    let Some(format) = format else {
        return Err(bad_header(name, line_no, "the header has no `format` line"));
    };

    // Assign roles and check the properties that are read.
    for ((element, &el_line), lines) in elements.iter_mut().zip(&element_lines).zip(&prop_lines) {
        if !element.used {
            continue;
        }
        if element.name == "vertex" {
            if element.count > u32::MAX as usize {
                return Err(LoadError::at_line(name, el_line, LoadErrorKind::TooManyVertices));
            }
            for (axis, axis_name) in ["x", "y", "z"].into_iter().enumerate() {
                let Some((prop, &line)) = element.props.iter_mut().zip(lines).find(|(p, _)| p.name == axis_name) else {
                    return Err(unsupported(
                        name,
                        el_line,
                        format!("the vertex element has no `{axis_name}` property"),
                    ));
                };
                if matches!(prop.ty, PropType::List { .. }) {
                    return Err(unsupported(name, line, format!("vertex property `{axis_name}` is a list")));
                }
                prop.role = Role::Coord(axis);
            }
        } else {
            let found = element
                .props
                .iter_mut()
                .zip(lines)
                .find(|(p, _)| p.name == "vertex_indices" || p.name == "vertex_index");
            let Some((prop, &line)) = found else {
                return Err(unsupported(name, el_line, "the face element has no `vertex_indices` list"));
            };
            match prop.ty {
                PropType::Scalar(_) => return Err(unsupported(name, line, "face `vertex_indices` is not a list")),
                PropType::List { item, .. } if item.is_float() => {
                    return Err(unsupported(name, line, "face vertex indices of floating-point type"));
                }
                PropType::List { .. } => prop.role = Role::Indices,
            }
        }
    }
    Ok(Header { format, elements, body_start, body_line: line_no.saturating_add(1) })
}

/// What the body parsers fill.
struct Output {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    /// Declared vertex count, against which face indices are checked.
    vertex_count: usize,
    /// Scratch: the current face's indices.
    face: Vec<u32>,
    /// Scratch: the current vertex's coordinates.
    coord: [f32; 3],
}

impl Output {
    fn reserve(&mut self, element: &Element, max_records: usize) {
        let n = element.count.min(max_records);
        match element.name.as_str() {
            "vertex" => self.positions.reserve(n),
            _ => self.triangles.reserve(n),
        }
    }

    /// Checks and stores one face index.
    fn push_index(&mut self, index: i64) -> Result<(), LoadErrorKind> {
        match u32::try_from(index) {
            Ok(i) if (i as usize) < self.vertex_count => {
                self.face.push(i);
                Ok(())
            }
            _ => Err(LoadErrorKind::IndexOutOfRange { index, vertices: self.vertex_count }),
        }
    }

    fn set_coord(&mut self, axis: usize, value: f32, text: impl FnOnce() -> String) -> Result<(), LoadErrorKind> {
        if !value.is_finite() {
            return Err(LoadErrorKind::NonFiniteCoordinate { value: text() });
        }
        if let Some(c) = self.coord.get_mut(axis) {
            *c = value;
        }
        Ok(())
    }

    fn end_vertex(&mut self) {
        self.positions.push(Vec3::from_array(self.coord));
    }

    fn end_face(&mut self) {
        if let Some((&first, rest)) = self.face.split_first() {
            self.triangles.extend(rest.windows(2).map(|w| [first, w[0], w[1]]));
        }
    }
}

fn check_list_len(len: i64, role: Role) -> Result<usize, LoadErrorKind> {
    let Ok(n) = usize::try_from(len) else {
        return Err(LoadErrorKind::BadListLength { length: len });
    };
    if role == Role::Indices && n < 3 {
        return Err(LoadErrorKind::TooFewVertices { count: n });
    }
    Ok(n)
}

// ---------------------------------------------------------------------------------------------
// Binary

/// A cursor over binary data; a read past the end reports the offset it needed to reach.
struct Bin<'a> {
    data: &'a [u8],
    pos: usize,
    big_endian: bool,
}

impl<'a> Bin<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], usize> {
        let end = self.pos.saturating_add(N);
        let bytes = self.data.get(self.pos..end).and_then(|b| <[u8; N]>::try_from(b).ok()).ok_or(end)?;
        self.pos = end;
        Ok(bytes)
    }

    fn skip(&mut self, n: usize) -> Result<(), usize> {
        let end = self.pos.saturating_add(n);
        if end > self.data.len() {
            return Err(end);
        }
        self.pos = end;
        Ok(())
    }

    fn int(&mut self, ty: Scalar) -> Result<i64, usize> {
        let be = self.big_endian;
        Ok(match ty {
            Scalar::I8 => i64::from(i8::from_le_bytes(self.take::<1>()?)),
            Scalar::U8 => i64::from(u8::from_le_bytes(self.take::<1>()?)),
            Scalar::I16 => {
                let b = self.take::<2>()?;
                i64::from(if be { i16::from_be_bytes(b) } else { i16::from_le_bytes(b) })
            }
            Scalar::U16 => {
                let b = self.take::<2>()?;
                i64::from(if be { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) })
            }
            Scalar::I32 => {
                let b = self.take::<4>()?;
                i64::from(if be { i32::from_be_bytes(b) } else { i32::from_le_bytes(b) })
            }
            Scalar::U32 => {
                let b = self.take::<4>()?;
                i64::from(if be { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
            }
            // Not used for lengths or indices (rejected in the header); truncate like a cast.
            Scalar::F32 | Scalar::F64 => self.float(ty)? as i64,
        })
    }

    fn float(&mut self, ty: Scalar) -> Result<f64, usize> {
        let be = self.big_endian;
        Ok(match ty {
            Scalar::F32 => f64::from(self.f32()?),
            Scalar::F64 => {
                let b = self.take::<8>()?;
                if be { f64::from_be_bytes(b) } else { f64::from_le_bytes(b) }
            }
            _ => self.int(ty)? as f64,
        })
    }

    fn f32(&mut self) -> Result<f32, usize> {
        let b = self.take::<4>()?;
        Ok(if self.big_endian { f32::from_be_bytes(b) } else { f32::from_le_bytes(b) })
    }

    /// A coordinate as `f32`: floats directly, doubles and integers rounded.
    fn coord(&mut self, ty: Scalar) -> Result<f32, usize> {
        match ty {
            Scalar::F32 => self.f32(),
            _ => Ok(self.float(ty)? as f32),
        }
    }
}

fn parse_binary_body(
    data: &[u8],
    big_endian: bool,
    elements: &[Element],
    name: &str,
    out: &mut Output,
) -> Result<(), LoadError> {
    let mut bin = Bin { data, pos: 0, big_endian };
    for element in elements {
        let remaining = data.len().saturating_sub(bin.pos);
        let min_size = element.min_binary_size();
        if !element.used {
            // A skipped element of fixed-size records is jumped over in one step.
            if let Some(size) = fixed_size(element) {
                let total = element.count.checked_mul(size);
                match total {
                    Some(t) if t <= remaining => {
                        bin.pos += t;
                        continue;
                    }
                    _ => {
                        let size = size.max(1);
                        let index = remaining / size;
                        let available = remaining - index * size;
                        let kind = LoadErrorKind::Truncated { needed: size, available };
                        return Err(LoadError::at_record(name, &element.name, index, kind));
                    }
                }
            }
        } else {
            out.reserve(element, remaining / min_size);
        }
        let record_size = fixed_size(element);
        for index in 0..element.count {
            let start = bin.pos;
            binary_record(&mut bin, element, out).map_err(|e| {
                let kind = match e {
                    RecordError::Kind(kind) => kind,
                    RecordError::Eof(end) => LoadErrorKind::Truncated {
                        needed: record_size.unwrap_or(end.saturating_sub(start)),
                        available: data.len().saturating_sub(start),
                    },
                };
                LoadError::at_record(name, &element.name, index, kind)
            })?;
        }
    }
    Ok(())
}

/// The size of every record of `element` if it has no list properties.
fn fixed_size(element: &Element) -> Option<usize> {
    element.props.iter().try_fold(0usize, |acc, p| match p.ty {
        PropType::Scalar(s) => acc.checked_add(s.size()),
        PropType::List { .. } => None,
    })
}

enum RecordError {
    /// The data ended; the offset the read needed to reach.
    Eof(usize),
    Kind(LoadErrorKind),
}

impl From<usize> for RecordError {
    fn from(end: usize) -> Self {
        RecordError::Eof(end)
    }
}

impl From<LoadErrorKind> for RecordError {
    fn from(kind: LoadErrorKind) -> Self {
        RecordError::Kind(kind)
    }
}

fn binary_record(bin: &mut Bin<'_>, element: &Element, out: &mut Output) -> Result<(), RecordError> {
    out.face.clear();
    for prop in &element.props {
        match (prop.ty, prop.role) {
            (PropType::Scalar(ty), Role::Coord(axis)) => {
                let v = bin.coord(ty)?;
                out.set_coord(axis, v, || v.to_string())?;
            }
            (PropType::Scalar(ty), _) => bin.skip(ty.size())?,
            (PropType::List { len, item }, role) => {
                let n = check_list_len(bin.int(len)?, role)?;
                let bytes = n.saturating_mul(item.size());
                if role == Role::Indices {
                    // Check the whole list is there before reading it.
                    if bin.data.len().saturating_sub(bin.pos) < bytes {
                        return Err(RecordError::Eof(bin.pos.saturating_add(bytes)));
                    }
                    for _ in 0..n {
                        let index = bin.int(item)?;
                        out.push_index(index)?;
                    }
                } else {
                    bin.skip(bytes)?;
                }
            }
        }
    }
    finish_record(element, out);
    Ok(())
}

fn finish_record(element: &Element, out: &mut Output) {
    if element.used {
        if element.name == "vertex" {
            out.end_vertex();
        } else {
            out.end_face();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ASCII

/// Whitespace-separated tokens, with the line of the last one returned.
struct Tokens<'a> {
    data: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        while let Some(&b) = self.data.get(self.pos) {
            if !b.is_ascii_whitespace() {
                break;
            }
            if b == b'\n' {
                self.line += 1;
            }
            self.pos += 1;
        }
        let start = self.pos;
        while self.data.get(self.pos).is_some_and(|b| !b.is_ascii_whitespace()) {
            self.pos += 1;
        }
        let token = self.data.get(start..self.pos)?;
        (!token.is_empty()).then_some(token)
    }
}

fn parse_ascii_body(
    data: &[u8],
    first_line: usize,
    elements: &[Element],
    name: &str,
    out: &mut Output,
) -> Result<(), LoadError> {
    let mut tokens = Tokens { data, pos: 0, line: first_line };
    for element in elements {
        if element.props.is_empty() {
            // Records without properties take no tokens.
            continue;
        }
        if element.used {
            // Each record takes at least one token and a separator.
            let remaining = data.len().saturating_sub(tokens.pos);
            out.reserve(element, remaining / element.props.len().max(1).saturating_mul(2));
        }
        for index in 0..element.count {
            ascii_record(&mut tokens, element, out)
                .map_err(|kind| LoadError::at_record(name, &element.name, index, kind).with_line(tokens.line))?;
        }
    }
    Ok(())
}

fn ascii_record(tokens: &mut Tokens<'_>, element: &Element, out: &mut Output) -> Result<(), LoadErrorKind> {
    out.face.clear();
    for prop in &element.props {
        let mut next = |what: &str| {
            tokens.next().ok_or_else(|| LoadErrorKind::MissingValue { expected: format!("{what} `{}`", prop.name) })
        };
        match (prop.ty, prop.role) {
            (PropType::Scalar(ty), Role::Coord(axis)) => {
                let tok = next("property")?;
                let v = ascii_coord(tok, ty).ok_or_else(|| LoadErrorKind::BadNumber { token: token_text(tok) })?;
                out.set_coord(axis, v, || token_text(tok))?;
            }
            (PropType::Scalar(_), _) => {
                next("property")?;
            }
            (PropType::List { .. }, role) => {
                let tok = next("the length of list")?;
                let len = parse_i64(tok).ok_or_else(|| LoadErrorKind::BadNumber { token: token_text(tok) })?;
                let n = check_list_len(len, role)?;
                for _ in 0..n {
                    let tok = next("an item of list")?;
                    if role == Role::Indices {
                        let index =
                            parse_i64(tok).ok_or_else(|| LoadErrorKind::BadNumber { token: token_text(tok) })?;
                        out.push_index(index)?;
                    }
                }
            }
        }
    }
    finish_record(element, out);
    Ok(())
}

fn ascii_coord(token: &[u8], ty: Scalar) -> Option<f32> {
    match ty {
        Scalar::F32 => parse_f32(token),
        Scalar::F64 => parse_f64(token).map(|v| v as f32),
        _ => parse_i64(token).map(|v| v as f32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
