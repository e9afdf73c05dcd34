//! The Box2D reference vectors (`../shared/reference/box2d/*.jsonl`): a minimal JSON reader and
//! the conversions of its values into `slabtree::d2` inputs, shared by the oracle test
//! (`tests/box2d_oracle.rs`) and the 2D bench (`benches/d2.rs`).
//!
//! The reader knows enough JSON for the reference files (objects, arrays, numbers, strings,
//! booleans, null). Numbers keep their exact `f32` value: parsed as `f64`, then rounded, which the
//! folder's README guarantees gives Box2D's bits. It panics on malformed input: the files are
//! test data, and a panic names the byte.

use std::path::{Path, PathBuf};

use glam::Vec2;
use slabtree::d2::{Polygon, Rot, ShapeProxy, Sweep, Transform};

/// A JSON value.
#[derive(Debug, Clone)]
pub enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn opt(&self, k: &str) -> Option<&J> {
        match self {
            J::Obj(v) => v.iter().find(|(a, _)| a == k).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn get(&self, k: &str) -> &J {
        self.opt(k).unwrap_or_else(|| panic!("missing key {k:?}"))
    }
    pub fn f(&self) -> f32 {
        match self {
            J::Num(x) => *x as f32,
            _ => panic!("not a number: {self:?}"),
        }
    }
    pub fn u(&self) -> u64 {
        match self {
            J::Num(x) => *x as u64,
            _ => panic!("not a number: {self:?}"),
        }
    }
    pub fn b(&self) -> bool {
        matches!(self, J::Bool(true))
    }
    pub fn s(&self) -> &str {
        match self {
            J::Str(s) => s,
            _ => panic!("not a string: {self:?}"),
        }
    }
    pub fn arr(&self) -> &[J] {
        match self {
            J::Arr(v) => v,
            _ => panic!("not an array: {self:?}"),
        }
    }
    pub fn fs(&self) -> Vec<f32> {
        self.arr().iter().map(J::f).collect()
    }
}

pub fn parse(s: &str) -> J {
    let mut p = P { b: s.as_bytes(), i: 0 };
    let v = p.value();
    p.ws();
    assert_eq!(p.i, p.b.len(), "trailing characters");
    v
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.b[self.i] as char, c as char, "at byte {}", self.i);
        self.i += 1;
    }
    fn value(&mut self) -> J {
        self.ws();
        match self.b[self.i] {
            b'{' => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b[self.i] == b'}' {
                    self.i += 1;
                    return J::Obj(v);
                }
                loop {
                    self.ws();
                    let k = self.string();
                    self.eat(b':');
                    v.push((k, self.value()));
                    self.ws();
                    self.i += 1;
                    if self.b[self.i - 1] == b'}' {
                        return J::Obj(v);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b[self.i] == b']' {
                    self.i += 1;
                    return J::Arr(v);
                }
                loop {
                    v.push(self.value());
                    self.ws();
                    self.i += 1;
                    if self.b[self.i - 1] == b']' {
                        return J::Arr(v);
                    }
                }
            }
            b'"' => J::Str(self.string()),
            b't' => {
                self.i += 4;
                J::Bool(true)
            }
            b'f' => {
                self.i += 5;
                J::Bool(false)
            }
            b'n' => {
                self.i += 4;
                J::Null
            }
            _ => {
                let start = self.i;
                while self.i < self.b.len() && matches!(self.b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.b[start..self.i]).unwrap();
                J::Num(t.parse().unwrap_or_else(|_| panic!("bad number {t:?}")))
            }
        }
    }
    fn string(&mut self) -> String {
        self.eat(b'"');
        let start = self.i;
        while self.b[self.i] != b'"' {
            self.i += if self.b[self.i] == b'\\' { 2 } else { 1 };
        }
        self.i += 1;
        String::from_utf8_lossy(&self.b[start..self.i - 1]).into_owned()
    }
}

/// The reference folder: `$SLABTREE_BOX2D_REF`, or `../shared/reference/box2d` beside the
/// repository, when it exists.
pub fn find_ref_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SLABTREE_BOX2D_REF")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/box2d"));
    dir.is_dir().then_some(dir)
}

/// [`find_ref_dir`], failing loudly when the folder is missing.
pub fn ref_dir() -> PathBuf {
    find_ref_dir().unwrap_or_else(|| {
        panic!("Box2D reference vectors not found: set SLABTREE_BOX2D_REF to the folder holding the .jsonl files")
    })
}

pub fn v2(j: &J) -> Vec2 {
    let a = j.fs();
    assert_eq!(a.len(), 2);
    Vec2::new(a[0], a[1])
}

pub fn pts(j: &J) -> Vec<Vec2> {
    j.fs().chunks_exact(2).map(|c| Vec2::new(c[0], c[1])).collect()
}

pub fn rot(j: &J) -> Rot {
    let a = j.fs();
    Rot::from_cos_sin(a[0], a[1])
}

pub fn xf(j: &J) -> Transform {
    Transform::new(v2(j.get("p")), rot(j.get("q")))
}

pub fn proxy(j: &J) -> ShapeProxy {
    ShapeProxy::new(&pts(j.get("v")), j.get("radius").f())
}

pub fn polygon(j: &J) -> Polygon {
    let v = pts(j.get("v"));
    let n = pts(j.get("n"));
    let mut p = Polygon::make_box(1.0, 1.0);
    p.count = v.len();
    p.vertices[..v.len()].copy_from_slice(&v);
    p.normals[..n.len()].copy_from_slice(&n);
    p.centroid = v2(j.get("centroid"));
    p.radius = j.get("radius").f();
    p
}

pub fn sweep(j: &J) -> Sweep {
    Sweep {
        local_center: v2(j.get("localCenter")),
        c1: v2(j.get("c1")),
        c2: v2(j.get("c2")),
        q1: rot(j.get("q1")),
        q2: rot(j.get("q2")),
    }
}

/// Every non-blank line of `file` in `dir`, parsed and converted by `f`.
pub fn cases<T>(dir: &Path, file: &str, f: impl Fn(&J) -> T) -> Vec<T> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| f(&parse(l))).collect()
}
