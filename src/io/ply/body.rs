//! The PLY body, binary or ASCII, record by record into the mesh's positions and triangles.

use glam::Vec3;

use super::header::{Element, PropType, Role, Scalar};
use crate::io::{LoadError, LoadErrorKind, parse_f32, parse_f64, parse_i64, token_text};

/// What the body parsers fill.
pub(super) struct Output {
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
    /// Nothing read yet, for a body declaring `vertex_count` vertices.
    pub(super) fn new(vertex_count: usize) -> Output {
        Output { positions: Vec::new(), triangles: Vec::new(), vertex_count, face: Vec::new(), coord: [0.0; 3] }
    }

    /// The positions and triangles read.
    pub(super) fn into_parts(self) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        (self.positions, self.triangles)
    }

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

pub(super) fn parse_binary_body(
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

pub(super) fn parse_ascii_body(
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
