//! `BroadPhase`: slabtree's broad phase of boxes named by integer ids, with its began and ended
//! pairs as numpy arrays.
//!
//! As in `Dbvt`, Python ids are dense integers issued by this wrapper and never reused: an id
//! kept after its object was removed is a `KeyError`. Each maps to the library's `ObjectId`, and
//! back through the object's data (or, for an object removed since the last `update_pairs`,
//! whose pairs end under its old id, through `gone`).

use std::collections::HashMap;

use glam::Vec3A;
use numpy::{IntoPyArray, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray3};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use slabtree::broad_phase::{BodyKind, BroadPhase, BroadPhaseConfig, BroadPhaseError, Filter, ObjectId};
use slabtree::{Aabb, DbvtConfig};

/// A `BroadPhaseError` as a Python exception, with the library's message.
fn error(e: BroadPhaseError) -> PyErr {
    match e {
        BroadPhaseError::StaleObject(_) => PyKeyError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// `0`, `1` and `2` as static, kinematic and dynamic.
fn kind(k: u8) -> PyResult<BodyKind> {
    match k {
        0 => Ok(BodyKind::Static),
        1 => Ok(BodyKind::Kinematic),
        2 => Ok(BodyKind::Dynamic),
        _ => Err(PyValueError::new_err(format!("kind {k}: 0 (static), 1 (kinematic) or 2 (dynamic)"))),
    }
}

/// `(k, 2)` pairs of Python ids, each with the smaller first, sorted.
fn pair_array<'py>(py: Python<'py>, mut pairs: Vec<[i64; 2]>) -> PyResult<Bound<'py, PyArray2<i64>>> {
    pairs.sort_unstable();
    let n = pairs.len();
    pairs.into_iter().flatten().collect::<Vec<_>>().into_pyarray(py).reshape([n, 2])
}

/// A broad phase (the Python class `slabtree.BroadPhase` wraps this one).
#[pyclass(module = "slabtree._slabtree", name = "BroadPhase")]
pub struct PyBroadPhase {
    phase: BroadPhase<i64>,
    /// The library's id of each Python id; `None` once removed.
    ids: Vec<Option<ObjectId>>,
    /// The Python ids of the objects removed since the last `update_pairs`.
    gone: HashMap<ObjectId, i64>,
}

impl PyBroadPhase {
    /// The library's ids of Python ids `ids`, or a `KeyError` for the first unknown one.
    fn objects(&self, ids: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<ObjectId>> {
        (ids.as_array().iter())
            .map(|&id| {
                usize::try_from(id)
                    .ok()
                    .and_then(|i| self.ids.get(i).copied().flatten())
                    .ok_or_else(|| PyKeyError::new_err(format!("id {id} is not in the broad phase")))
            })
            .collect()
    }

    /// The Python id of a live or just-removed object.
    fn python_id(&self, o: ObjectId) -> i64 {
        self.phase.get(o).copied().unwrap_or_else(|_| self.gone.get(&o).copied().unwrap_or(-1))
    }

    /// Library pairs as Python id pairs, the smaller first.
    fn python_pairs(&self, pairs: &[(ObjectId, ObjectId)]) -> Vec<[i64; 2]> {
        (pairs.iter())
            .map(|&(a, b)| {
                let (a, b) = (self.python_id(a), self.python_id(b));
                [a.min(b), a.max(b)]
            })
            .collect()
    }
}

#[pymethods]
impl PyBroadPhase {
    /// An empty broad phase: boxes are stored grown by `margin`, and stretched by `prediction`
    /// times their displacement along their motion.
    #[new]
    #[pyo3(signature = (margin = 0.05, prediction = 0.0))]
    fn new(margin: f32, prediction: f32) -> PyResult<Self> {
        for (name, v) in [("margin", margin), ("prediction", prediction)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(PyValueError::new_err(format!("{name} must be finite and at least 0, not {v}")));
            }
        }
        let tree = DbvtConfig { margin, prediction, ..DbvtConfig::default() };
        let config = BroadPhaseConfig { tree, ..Default::default() };
        Ok(PyBroadPhase { phase: BroadPhase::with_config(config), ids: Vec::new(), gone: HashMap::new() })
    }

    /// Adds `boxes` (`(k, 2, 3)`) of kinds `kinds` (`(k,)`: 0 static, 1 kinematic, 2 dynamic)
    /// with layer filters `category` and `mask` (`(k,)` each), and returns their new ids. Every
    /// input is checked first: a bad one adds nothing.
    fn add<'py>(
        &mut self,
        py: Python<'py>,
        boxes: PyReadonlyArray3<'py, f32>,
        kinds: PyReadonlyArray1<'py, u8>,
        category: PyReadonlyArray1<'py, u32>,
        mask: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<i64>>> {
        let boxes = crate::boxes(&boxes)?;
        let (kinds, category, mask) = (kinds.as_array(), category.as_array(), mask.as_array());
        if kinds.len() != boxes.len() || category.len() != boxes.len() || mask.len() != boxes.len() {
            return Err(PyValueError::new_err(format!(
                "{} boxes but {} kinds, {} categories and {} masks",
                boxes.len(),
                kinds.len(),
                category.len(),
                mask.len()
            )));
        }
        let kinds = kinds.iter().map(|&k| kind(k)).collect::<PyResult<Vec<_>>>()?;
        for (i, b) in boxes.iter().enumerate() {
            b.validate().map_err(|e| PyValueError::new_err(format!("box {i}: {e}")))?;
        }
        let mut out = Vec::with_capacity(boxes.len());
        for (i, b) in boxes.iter().enumerate() {
            let id = self.ids.len() as i64;
            let o = self.phase.add(*b, kinds[i], id).map_err(error)?;
            self.phase.set_filter(o, Filter { category: category[i], mask: mask[i] }).map_err(error)?;
            self.ids.push(Some(o));
            out.push(id);
        }
        Ok(out.into_pyarray(py))
    }

    /// Removes the objects of `ids`; their pairs end at the next `update_pairs`. Every id is
    /// checked first: an unknown or removed one is a `KeyError` and nothing is removed.
    fn remove(&mut self, ids: PyReadonlyArray1<'_, i64>) -> PyResult<()> {
        let objects = self.objects(&ids)?;
        let mut sorted = ids.as_array().to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(PyValueError::new_err(format!("id {} is given twice", w[0])));
        }
        for (&id, o) in ids.as_array().iter().zip(objects) {
            self.phase.remove(o).map_err(error)?;
            self.ids[id as usize] = None;
            self.gone.insert(o, id);
        }
        Ok(())
    }

    /// Moves the objects of `ids` to `boxes` (`(k, 2, 3)`), each having moved by its row of
    /// `displacements` (`(k, 3)`) since its last move. Returns how many fat boxes changed.
    /// Everything is checked first: a bad id or box changes nothing.
    fn move_objects(
        &mut self,
        ids: PyReadonlyArray1<'_, i64>,
        boxes: PyReadonlyArray3<'_, f32>,
        displacements: numpy::PyReadonlyArray2<'_, f32>,
    ) -> PyResult<usize> {
        let objects = self.objects(&ids)?;
        let boxes = crate::boxes(&boxes)?;
        let d = crate::rows(&displacements, "displacements")?;
        if objects.len() != boxes.len() || d.len() != boxes.len() {
            return Err(PyValueError::new_err(format!(
                "{} ids, {} boxes and {} displacements",
                objects.len(),
                boxes.len(),
                d.len()
            )));
        }
        let moves: Vec<(ObjectId, Aabb, Vec3A)> =
            objects.into_iter().zip(boxes).zip(d).map(|((o, b), d)| (o, b, d)).collect();
        self.phase.move_objects(&moves).map_err(error)
    }

    /// Sets the layer filters of `ids` (`category` and `mask`, `(k,)` each).
    fn set_filter(
        &mut self,
        ids: PyReadonlyArray1<'_, i64>,
        category: PyReadonlyArray1<'_, u32>,
        mask: PyReadonlyArray1<'_, u32>,
    ) -> PyResult<()> {
        let objects = self.objects(&ids)?;
        let (category, mask) = (category.as_array(), mask.as_array());
        if category.len() != objects.len() || mask.len() != objects.len() {
            return Err(PyValueError::new_err(format!(
                "{} ids, {} categories and {} masks",
                objects.len(),
                category.len(),
                mask.len()
            )));
        }
        for (i, o) in objects.into_iter().enumerate() {
            self.phase.set_filter(o, Filter { category: category[i], mask: mask[i] }).map_err(error)?;
        }
        Ok(())
    }

    /// Sets the kinds of `ids` (`(k,)`: 0 static, 1 kinematic, 2 dynamic).
    fn set_kind(&mut self, ids: PyReadonlyArray1<'_, i64>, kinds: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        let objects = self.objects(&ids)?;
        let kinds = kinds.as_array().iter().map(|&k| kind(k)).collect::<PyResult<Vec<_>>>()?;
        if kinds.len() != objects.len() {
            return Err(PyValueError::new_err(format!("{} ids but {} kinds", objects.len(), kinds.len())));
        }
        for (o, k) in objects.into_iter().zip(kinds) {
            self.phase.set_kind(o, k).map_err(error)?;
        }
        Ok(())
    }

    /// The pairs that began and those that ended since the last call: two `(k, 2)` arrays of
    /// ids, each pair with the smaller id first, sorted.
    #[allow(clippy::type_complexity)]
    fn update_pairs<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<i64>>)> {
        let events = self.phase.update_pairs().clone();
        let began = self.python_pairs(events.began());
        let ended = self.python_pairs(events.ended());
        self.gone.clear();
        Ok((pair_array(py, began)?, pair_array(py, ended)?))
    }

    /// Every pair tracked, `(k, 2)` ids with the smaller first, sorted.
    fn pairs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let pairs: Vec<(ObjectId, ObjectId)> = self.phase.pairs().collect();
        pair_array(py, self.python_pairs(&pairs))
    }

    /// The stored (fat) boxes of `ids`, `(k, 2, 3)`.
    fn boxes<'py>(&self, py: Python<'py>, ids: PyReadonlyArray1<'py, i64>) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let objects = self.objects(&ids)?;
        let mut out = Vec::with_capacity(6 * objects.len());
        for o in &objects {
            let b = self.phase.fat_aabb(*o).map_err(error)?;
            out.extend(b.min.to_array());
            out.extend(b.max.to_array());
        }
        out.into_pyarray(py).reshape([objects.len(), 2, 3])
    }

    /// Objects in the broad phase.
    fn __len__(&self) -> usize {
        self.phase.len()
    }

    fn __contains__(&self, id: i64) -> bool {
        usize::try_from(id).ok().and_then(|i| self.ids.get(i).copied().flatten()).is_some()
    }

    fn __repr__(&self) -> String {
        format!("BroadPhase({} objects, {} pairs)", self.phase.len(), self.phase.pair_count())
    }
}
