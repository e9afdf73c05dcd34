//! The Python module `slabtree._slabtree`: slabtree's mesh BVH, dynamic AABB tree and broad phase
//! on numpy arrays. The Python package `slabtree` (`python/slabtree/`) wraps it: it checks and converts
//! the arrays (dtype, shape, contiguity) and gives the results their names, so this module takes
//! C-contiguous `float32` and `uint32` arrays of the right shapes only.
//!
//! Every batch releases the GIL and runs on rayon's threads: all of them by default, or a pool of
//! `threads` (cached per count). The library's typed errors become `ValueError` (bad input) or
//! `KeyError` (a removed or unknown tree id) with the library's own message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use glam::Vec3A;
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use slabtree::{Aabb, Ray, RayCoherence};

mod broad_phase;
mod mesh;
mod tree;

/// A returned float32 array.
type F32s<'py> = Bound<'py, numpy::PyArray1<f32>>;
/// A returned int64 array.
type I64s<'py> = Bound<'py, numpy::PyArray1<i64>>;

/// Runs `f` with `threads` worker threads (`None`: rayon's global pool, which has one per core).
fn with_threads<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> PyResult<R> {
    let Some(n) = threads else { return Ok(f()) };
    if n == 0 {
        return Err(PyValueError::new_err("threads must be at least 1"));
    }
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let pool = {
        let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        match pools.get(&n) {
            Some(p) => p.clone(),
            None => {
                let p = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}")))?;
                pools.entry(n).or_insert(Arc::new(p)).clone()
            }
        }
    };
    Ok(pool.install(f))
}

/// The boxes of an `(n, 2, 3)` array (minimum corner, then maximum corner).
fn boxes(a: &PyReadonlyArray3<'_, f32>) -> PyResult<Vec<Aabb>> {
    let a = a.as_array();
    if a.shape()[1..] != [2, 3] {
        return Err(PyValueError::new_err(format!("boxes must have shape (n, 2, 3), not {:?}", a.shape())));
    }
    Ok(a.outer_iter()
        .map(|b| Aabb::new(Vec3A::new(b[[0, 0]], b[[0, 1]], b[[0, 2]]), Vec3A::new(b[[1, 0]], b[[1, 1]], b[[1, 2]])))
        .collect())
}

/// The rows of an `(n, 3)` array as vectors.
fn rows(a: &PyReadonlyArray2<'_, f32>, what: &str) -> PyResult<Vec<Vec3A>> {
    Ok(flat3(a, what)?.chunks_exact(3).map(|r| Vec3A::new(r[0], r[1], r[2])).collect())
}

/// The numbers of a C-contiguous `(n, 3)` array, row after row.
fn flat3<'a>(a: &'a PyReadonlyArray2<'_, f32>, what: &str) -> PyResult<&'a [f32]> {
    if a.shape()[1] != 3 {
        return Err(PyValueError::new_err(format!("{what} must have shape (n, 3), not {:?}", a.shape())));
    }
    a.as_slice().map_err(|_| PyValueError::new_err(format!("{what} must be C-contiguous")))
}

/// A batch of rays as the caller's arrays: origins and directions `(n, 3)`, and `tmin` and
/// `tmax`, each one per ray or one for all. Each ray is made where it is traced, so a batch costs
/// no array of rays (which was 9% of a bunny primary batch's time).
#[derive(Clone, Copy)]
struct Rays<'a> {
    origins: &'a [f32],
    directions: &'a [f32],
    tmin: &'a [f32],
    tmax: &'a [f32],
}

impl Rays<'_> {
    fn len(&self) -> usize {
        self.origins.len() / 3
    }

    /// Ray `i`.
    #[inline]
    fn ray(&self, i: usize) -> Ray {
        let (o, d) = (&self.origins[3 * i..3 * i + 3], &self.directions[3 * i..3 * i + 3]);
        let range = |r: &[f32]| if r.len() == 1 { r[0] } else { r[i] };
        Ray::new(Vec3A::new(o[0], o[1], o[2]), Vec3A::new(d[0], d[1], d[2]))
            .with_range(range(self.tmin), range(self.tmax))
    }

    /// How alike the directions of rays `from..from + count` are: the hint for tracing them one
    /// by one (see `slabtree::RayCoherence`).
    fn coherence(&self, from: usize, count: usize) -> RayCoherence {
        RayCoherence::of_directions(count, |i| {
            let d = &self.directions[3 * (from + i)..3 * (from + i) + 3];
            Vec3A::new(d[0], d[1], d[2])
        })
    }
}

/// The rays of origin and direction rows and their ranges (`tmin`, `tmax`: one value each per
/// ray, or one for all), each checked by the library (`Ray::validate`): the first invalid one is
/// a `ValueError` naming its index.
fn rays<'a>(
    origins: &'a PyReadonlyArray2<'_, f32>,
    directions: &'a PyReadonlyArray2<'_, f32>,
    tmin: &'a PyReadonlyArray1<'_, f32>,
    tmax: &'a PyReadonlyArray1<'_, f32>,
) -> PyResult<Rays<'a>> {
    let rays = unchecked_rays(origins, directions, tmin, tmax)?;
    for i in 0..rays.len() {
        rays.ray(i).validate().map_err(|e| bad_ray(i, e))?;
    }
    Ok(rays)
}

/// [`rays`] without the check of each ray, for a query that checks each ray itself as it traces
/// it (a pass over every ray first was 2% of a bunny primary batch): the caller reports the
/// first refusal with [`bad_ray`].
fn unchecked_rays<'a>(
    origins: &'a PyReadonlyArray2<'_, f32>,
    directions: &'a PyReadonlyArray2<'_, f32>,
    tmin: &'a PyReadonlyArray1<'_, f32>,
    tmax: &'a PyReadonlyArray1<'_, f32>,
) -> PyResult<Rays<'a>> {
    let contiguous = |a: &'a PyReadonlyArray1<'_, f32>, what: &str| {
        a.as_slice().map_err(|_| PyValueError::new_err(format!("{what} must be C-contiguous")))
    };
    let rays = Rays {
        origins: flat3(origins, "origins")?,
        directions: flat3(directions, "directions")?,
        tmin: contiguous(tmin, "tmin")?,
        tmax: contiguous(tmax, "tmax")?,
    };
    let (o, d) = (rays.origins.len() / 3, rays.directions.len() / 3);
    let fits = |r: &[f32]| r.len() == o || r.len() == 1;
    if o != d || !fits(rays.tmin) || !fits(rays.tmax) {
        return Err(PyValueError::new_err(format!(
            "{o} origins, {d} directions, {} tmin and {} tmax",
            rays.tmin.len(),
            rays.tmax.len()
        )));
    }
    Ok(rays)
}

/// The `ValueError` of invalid ray `i`, with the library's message.
fn bad_ray(i: usize, e: slabtree::InputError) -> PyErr {
    PyValueError::new_err(format!("ray {i}: {e}"))
}

/// The first of two refusals (the lower ray index), for reducing over a batch's chunks.
fn first_refusal<E>(a: Option<(usize, E)>, b: Option<(usize, E)>) -> Option<(usize, E)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The native part of the `slabtree` package.
#[pymodule]
fn _slabtree(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<mesh::PyMeshBvh>()?;
    m.add_class::<tree::PyDbvt>()?;
    m.add_class::<broad_phase::PyBroadPhase>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
