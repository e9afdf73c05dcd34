//! The PLY header: the format, and each element's properties and the role each plays.

use crate::io::{LoadError, LoadErrorKind, parse_f64, parse_i64, token_text};

/// The body's encoding, from the header's `format` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    Ascii,
    BinaryLe,
    BinaryBe,
}

/// A property's scalar type (`char` to `double`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scalar {
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

    pub(super) fn size(self) -> usize {
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
pub(super) enum Role {
    Skip,
    /// Vertex coordinate 0, 1 or 2.
    Coord(usize),
    /// The face's vertex index list.
    Indices,
}

/// A property's type: one scalar, or a list with its length's type and its items' type.
#[derive(Clone, Copy, Debug)]
pub(super) enum PropType {
    Scalar(Scalar),
    List { len: Scalar, item: Scalar },
}

/// One declared property of an element.
#[derive(Debug)]
pub(super) struct Property {
    pub(super) name: String,
    pub(super) ty: PropType,
    pub(super) role: Role,
}

/// One declared element: its name, record count and properties.
#[derive(Debug)]
pub(super) struct Element {
    pub(super) name: String,
    pub(super) count: usize,
    pub(super) props: Vec<Property>,
    /// `vertex` or `face`: whether this element is read (only the first of each name is).
    pub(super) used: bool,
}

impl Element {
    /// Fewest bytes one binary record can take (lists empty); at least 1, to bound allocations.
    pub(super) fn min_binary_size(&self) -> usize {
        let size = self.props.iter().fold(0usize, |acc, p| {
            acc.saturating_add(match p.ty {
                PropType::Scalar(s) => s.size(),
                PropType::List { len, .. } => len.size(),
            })
        });
        size.max(1)
    }
}

/// The parsed header: the format, the elements in order, and where the body starts.
#[derive(Debug)]
pub(super) struct Header {
    pub(super) format: Format,
    pub(super) elements: Vec<Element>,
    pub(super) body_start: usize,
    /// The 1-based line on which the body starts (for ASCII).
    pub(super) body_line: usize,
}

impl Header {
    pub(super) fn vertex_count(&self) -> usize {
        self.elements.iter().find(|e| e.used && e.name == "vertex").map_or(0, |e| e.count)
    }
}

fn bad_header(name: &str, line: usize, message: impl Into<String>) -> LoadError {
    LoadError::at_line(name, line, LoadErrorKind::BadHeader { message: message.into() })
}

fn unsupported(name: &str, line: usize, message: impl Into<String>) -> LoadError {
    LoadError::at_line(name, line, LoadErrorKind::Unsupported { message: message.into() })
}

pub(super) fn parse_header(bytes: &[u8], name: &str) -> Result<Header, LoadError> {
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
