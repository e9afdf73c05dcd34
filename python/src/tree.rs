//! `Dbvt`: the dynamic AABB tree of boxes named by integer ids.
//!
//! Python ids are dense integers issued by this wrapper, never reused: an id kept after its box
//! was removed is a `KeyError`, not another box. Each maps to the library's `ProxyId`.

use glam::Vec3A;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use slabtree::{Aabb, Dbvt, DbvtConfig, DbvtError, LeafControl, PairControl, ProxyId, QueryWorkspace};

use crate::{F32s, I64s, bad_ray, first_refusal, unchecked_rays, with_threads};

/// Rays per task of a batched ray cast.
const RAY_CHUNK: usize = 1024;

/// The first eight bytes of `Dbvt.to_bytes`, then the version of its layout (`to_bytes` says
/// what follows).
const MAGIC: &[u8; 8] = b"SLABDBVT";
const VERSION: u32 = 1;

/// A `DbvtError` as a Python exception, with the library's message.
fn error(e: DbvtError) -> PyErr {
    match e {
        DbvtError::StaleProxy(_) | DbvtError::ForeignProxy(_) => PyKeyError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A dynamic AABB tree (the Python class `slabtree.Dbvt` wraps this one).
#[pyclass(module = "slabtree._slabtree", name = "Dbvt")]
pub struct PyDbvt {
    tree: Dbvt<i64>,
    /// The library's id of each Python id; `None` once removed.
    ids: Vec<Option<ProxyId>>,
    ws: QueryWorkspace,
}

impl PyDbvt {
    /// The library's id of Python id `id`, or a `KeyError`.
    fn proxy(&self, id: i64) -> PyResult<ProxyId> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.ids.get(i).copied().flatten())
            .ok_or_else(|| PyKeyError::new_err(format!("id {id} is not in the tree")))
    }

    /// Inserts `boxes` one by one and returns their new ids. Checks every box first, so that a
    /// bad one leaves the tree unchanged.
    fn insert_all(&mut self, boxes: &[Aabb]) -> PyResult<Vec<i64>> {
        for (i, b) in boxes.iter().enumerate() {
            b.validate().map_err(|e| PyValueError::new_err(format!("box {i}: {e}")))?;
        }
        let mut out = Vec::with_capacity(boxes.len());
        for b in boxes {
            let id = self.ids.len() as i64;
            let p = self.tree.insert(*b, id).map_err(error)?;
            self.ids.push(Some(p));
            out.push(id);
        }
        Ok(out)
    }
}

#[pymethods]
impl PyDbvt {
    /// A tree of `boxes` (`(n, 2, 3)` float32), built in bulk (binned SAH); their ids are
    /// `0..n`. Each box is stored grown by `margin` on every side, so that later moves within it
    /// cost nothing.
    #[new]
    #[pyo3(signature = (boxes, margin = 0.0))]
    fn new(py: Python<'_>, boxes: PyReadonlyArray3<'_, f32>, margin: f32) -> PyResult<Self> {
        if !(margin >= 0.0 && margin.is_finite()) {
            return Err(PyValueError::new_err(format!("margin must be finite and at least 0, not {margin}")));
        }
        let boxes = crate::boxes(&boxes)?;
        for (i, b) in boxes.iter().enumerate() {
            b.validate().map_err(|e| PyValueError::new_err(format!("box {i}: {e}")))?;
        }
        let config = DbvtConfig { margin, prediction: 0.0, ..DbvtConfig::default() };
        let (tree, ids) = py.detach(|| Dbvt::build_with_config(boxes.into_iter().zip(0..), config)).map_err(error)?;
        Ok(PyDbvt { tree, ids: ids.into_iter().map(Some).collect(), ws: QueryWorkspace::new() })
    }

    /// Adds `boxes` (`(k, 2, 3)`) and returns their ids.
    fn insert<'py>(
        &mut self,
        py: Python<'py>,
        boxes: PyReadonlyArray3<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let boxes = crate::boxes(&boxes)?;
        Ok(self.insert_all(&boxes)?.into_pyarray(py))
    }

    /// Removes the boxes of `ids`. Every id is checked first: an unknown or removed one is a
    /// `KeyError` and nothing is removed.
    fn remove(&mut self, ids: PyReadonlyArray1<'_, i64>) -> PyResult<()> {
        let ids = ids.as_array();
        let proxies = ids.iter().map(|&i| self.proxy(i)).collect::<PyResult<Vec<_>>>()?;
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(PyValueError::new_err(format!("id {} is given twice", w[0])));
        }
        for (&id, p) in ids.iter().zip(proxies) {
            self.tree.remove(p).map_err(error)?;
            self.ids[id as usize] = None;
        }
        Ok(())
    }

    /// Moves the boxes of `ids` to `boxes` (`(k, 2, 3)`). With a margin, a box that stays inside
    /// its grown box keeps it (unless that became much larger than needed); without, every box
    /// is stored exactly. Ids and boxes are checked
    /// first: a bad one changes nothing.
    fn update(&mut self, ids: PyReadonlyArray1<'_, i64>, boxes: PyReadonlyArray3<'_, f32>) -> PyResult<()> {
        let ids = ids.as_array().to_vec();
        let boxes = crate::boxes(&boxes)?;
        if ids.len() != boxes.len() {
            return Err(PyValueError::new_err(format!("{} ids but {} boxes", ids.len(), boxes.len())));
        }
        let proxies = ids.iter().map(|&i| self.proxy(i)).collect::<PyResult<Vec<_>>>()?;
        for (i, b) in boxes.iter().enumerate() {
            b.validate().map_err(|e| PyValueError::new_err(format!("box {i}: {e}")))?;
        }
        for (p, b) in proxies.into_iter().zip(boxes) {
            // With no margin a box that shrinks is reinserted too (the stored box must hold the
            // new one and be within 4 margins of it), so boxes stay exact.
            self.tree.move_proxy(p, b, Vec3A::ZERO).map_err(error)?;
        }
        Ok(())
    }

    /// The stored boxes of `ids`, `(k, 2, 3)` (grown by the margin).
    fn boxes<'py>(&self, py: Python<'py>, ids: PyReadonlyArray1<'py, i64>) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let ids = ids.as_array();
        let mut out = Vec::with_capacity(6 * ids.len());
        for &i in ids.iter() {
            let b = self.tree.fat_aabb(self.proxy(i)?).map_err(error)?;
            out.extend(b.min.to_array());
            out.extend(b.max.to_array());
        }
        out.into_pyarray(py).reshape([ids.len(), 2, 3])
    }

    /// The ids in the tree, ascending.
    fn ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let ids: Vec<i64> = (0..self.ids.len() as i64).filter(|&i| self.ids[i as usize].is_some()).collect();
        ids.into_pyarray(py)
    }

    /// For each ray, the box it enters first and the distance there: `(id, t)`, with `-1` and
    /// `inf` on a miss. Of boxes entered at the same distance, one of them.
    #[pyo3(signature = (origins, directions, tmin, tmax, threads = None))]
    fn intersect<'py>(
        &self,
        py: Python<'py>,
        origins: PyReadonlyArray2<'py, f32>,
        directions: PyReadonlyArray2<'py, f32>,
        tmin: PyReadonlyArray1<'py, f32>,
        tmax: PyReadonlyArray1<'py, f32>,
        threads: Option<usize>,
    ) -> PyResult<(I64s<'py>, F32s<'py>)> {
        // Each chunk's rays are checked by the library's batch, which names the first refused.
        let rays = unchecked_rays(&origins, &directions, &tmin, &tmax)?;
        let (mut id, mut t) = (vec![-1i64; rays.len()], vec![f32::INFINITY; rays.len()]);
        let refused = py.detach(|| {
            with_threads(threads, || {
                // Chunks of rays in flight together through the tree (`Dbvt::intersect_batch`).
                id.par_chunks_mut(RAY_CHUNK)
                    .zip(t.par_chunks_mut(RAY_CHUNK))
                    .enumerate()
                    .map_init(
                        || (QueryWorkspace::new(), Vec::new(), Vec::new()),
                        |(ws, chunk, hits), (c, (id, t))| {
                            let base = c * RAY_CHUNK;
                            chunk.clear();
                            chunk.extend((base..base + id.len()).map(|i| rays.ray(i)));
                            if let Err(e) = self.tree.intersect_batch(chunk, ws, hits) {
                                return Some((base, e));
                            }
                            for ((id, t), h) in id.iter_mut().zip(t.iter_mut()).zip(hits.iter()) {
                                if let Some(h) = h {
                                    (*id, *t) = (*self.tree.get(h.id).expect("a hit's proxy is live"), h.t);
                                }
                            }
                            None
                        },
                    )
                    .reduce(|| None, first_refusal)
            })
        })?;
        match refused {
            Some((base, DbvtError::Ray(e))) => Err(bad_ray(base + e.index, e.error)),
            Some((_, e)) => Err(error(e)),
            None => Ok((id.into_pyarray(py), t.into_pyarray(py))),
        }
    }

    /// Every pair of a query box (`(k, 2, 3)`) and a stored box that overlap (touching counts):
    /// `(query_index, id)`, by query, then by id.
    #[pyo3(signature = (boxes, threads = None))]
    fn overlap<'py>(
        &self,
        py: Python<'py>,
        boxes: PyReadonlyArray3<'py, f32>,
        threads: Option<usize>,
    ) -> PyResult<(I64s<'py>, I64s<'py>)> {
        let boxes = crate::boxes(&boxes)?;
        for (i, b) in boxes.iter().enumerate() {
            b.validate().map_err(|e| PyValueError::new_err(format!("box {i}: {e}")))?;
        }
        let found: Vec<Vec<i64>> = py.detach(|| {
            with_threads(threads, || {
                boxes
                    .par_iter()
                    .with_min_len(64)
                    .map_init(QueryWorkspace::new, |ws, b| {
                        let mut ids = Vec::new();
                        let _ = self.tree.overlap(b, ws, &mut |_: ProxyId, &id: &i64| {
                            ids.push(id);
                            LeafControl::Continue
                        });
                        ids.sort_unstable();
                        ids
                    })
                    .collect()
            })
        })?;
        let (mut query, mut id) = (Vec::new(), Vec::new());
        for (q, ids) in found.into_iter().enumerate() {
            query.extend(std::iter::repeat_n(q as i64, ids.len()));
            id.extend(ids);
        }
        Ok((query.into_pyarray(py), id.into_pyarray(py)))
    }

    /// Every pair of stored boxes that overlap, `(k, 2)` ids with the smaller first, sorted.
    fn self_pairs<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let mut pairs: Vec<[i64; 2]> = Vec::new();
        self.tree
            .self_pairs(&mut self.ws, |_, &a, _, &b| {
                pairs.push([a.min(b), a.max(b)]);
                PairControl::Continue
            })
            .map_err(error)?;
        pairs.sort_unstable();
        let n = pairs.len();
        pairs.into_iter().flatten().collect::<Vec<_>>().into_pyarray(py).reshape([n, 2])
    }

    /// The tree as bytes, for pickling and for other processes: the margin and every id's
    /// stored box, little-endian (`MAGIC`, the version, the margin as `f32`, the number of ids
    /// ever issued as `u64`, then per id a byte, 1 if it is in the tree, followed by its box as
    /// six `f32`). `Dbvt.from_bytes` builds a tree that stores the same boxes under the same ids.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(24 + self.ids.len() * 25);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.tree.config().margin.to_le_bytes());
        out.extend_from_slice(&(self.ids.len() as u64).to_le_bytes());
        for p in &self.ids {
            match p {
                Some(p) => {
                    let b = self.tree.fat_aabb(*p).map_err(error)?;
                    out.push(1);
                    for x in b.min.to_array().into_iter().chain(b.max.to_array()) {
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                }
                None => out.push(0),
            }
        }
        Ok(PyBytes::new(py, &out))
    }

    /// Reads bytes written by `to_bytes`. Bytes that are not such a tree are a `ValueError`
    /// saying where they stop making sense.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let bad = |what: String| PyValueError::new_err(format!("not a slabtree Dbvt: {what}"));
        let mut at = 0usize;
        let mut take = |n: usize, what: &str| -> PyResult<&[u8]> {
            let end = at.checked_add(n).filter(|&e| e <= data.len());
            let end =
                end.ok_or_else(|| bad(format!("the bytes end inside {what} (at byte {at} of {})", data.len())))?;
            let part = &data[at..end];
            at = end;
            Ok(part)
        };
        if take(8, "the magic")? != MAGIC {
            return Err(bad("the first eight bytes are not SLABDBVT".into()));
        }
        let version = u32::from_le_bytes(take(4, "the version")?.try_into().unwrap());
        if version != VERSION {
            return Err(bad(format!("layout version {version}; this package reads version {VERSION}")));
        }
        let margin = f32::from_le_bytes(take(4, "the margin")?.try_into().unwrap());
        if !(margin >= 0.0 && margin.is_finite()) {
            return Err(bad(format!("margin {margin}")));
        }
        let count = u64::from_le_bytes(take(8, "the id count")?.try_into().unwrap());
        let count =
            usize::try_from(count).ok().filter(|&c| c <= data.len()).ok_or_else(|| bad(format!("{count} ids")))?;
        let mut stored = Vec::new();
        let mut present = Vec::with_capacity(count);
        for id in 0..count {
            match take(1, "an id's flag")?[0] {
                0 => present.push(false),
                1 => {
                    let raw = take(24, "a box")?;
                    let f = |i: usize| f32::from_le_bytes(raw[4 * i..4 * i + 4].try_into().unwrap());
                    let b = Aabb::new(Vec3A::new(f(0), f(1), f(2)), Vec3A::new(f(3), f(4), f(5)));
                    b.validate().map_err(|e| bad(format!("the box of id {id}: {e}")))?;
                    stored.push((b, id as i64));
                    present.push(true);
                }
                flag => return Err(bad(format!("id {id}'s flag is {flag}, not 0 or 1"))),
            }
        }
        if at != data.len() {
            return Err(bad(format!("{} bytes after the last id", data.len() - at)));
        }
        let config = DbvtConfig { margin, prediction: 0.0, ..DbvtConfig::default() };
        let (tree, proxies) = py.detach(|| Dbvt::from_stored_boxes(stored, config)).map_err(error)?;
        let mut proxies = proxies.into_iter();
        let ids = present.into_iter().map(|p| if p { proxies.next() } else { None }).collect();
        Ok(PyDbvt { tree, ids, ws: QueryWorkspace::new() })
    }

    /// Boxes in the tree.
    fn __len__(&self) -> usize {
        self.tree.len()
    }

    fn __contains__(&self, id: i64) -> bool {
        self.proxy(id).is_ok()
    }

    fn __repr__(&self) -> String {
        format!("Dbvt({} boxes)", self.tree.len())
    }
}
