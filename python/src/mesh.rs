//! `MeshBvh`: a triangle mesh's BVH, queried by batches of rays or points.

use glam::Vec3;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use slabtree::mesh::LARGE_BVH_BYTES;
use slabtree::{
    AcceptAll, BatchOptions, BuildOptions, BuildQuality, MeshBvh, Ray, RayCoherence, RayOptions, Threads, TriMesh,
    TriangleTest,
};

use crate::{F32s, I64s, bad_ray, first_refusal, rays, rows, unchecked_rays, with_threads};

/// Rays per task of a batch: enough to pay for the task, few enough to balance the threads.
const CHUNK: usize = 1024;

/// `closest_point`'s arrays: points, triangles, distances, u, v.
type Nearest<'py> = (Bound<'py, PyArray2<f32>>, I64s<'py>, F32s<'py>, F32s<'py>, F32s<'py>);

/// The BVH of a triangle mesh (the Python class `slabtree.MeshBvh` wraps this one).
#[pyclass(module = "slabtree._slabtree", name = "MeshBvh")]
pub struct PyMeshBvh {
    bvh: MeshBvh,
}

impl PyMeshBvh {
    /// `rebuild` or `refit` (`how`) to `vertices`, without the GIL, its refusal a ValueError.
    fn move_vertices(
        &mut self,
        py: Python<'_>,
        vertices: &PyReadonlyArray2<'_, f32>,
        threads: Option<usize>,
        how: fn(&mut MeshBvh, &[Vec3]) -> Result<(), slabtree::MeshError>,
    ) -> PyResult<()> {
        let positions: Vec<Vec3> = rows(vertices, "vertices")?.into_iter().map(Vec3::from).collect();
        let bvh = &mut self.bvh;
        py.detach(|| with_threads(threads, || how(bvh, &positions)))?.map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// `LARGE_BVH_BYTES` or more: batches go through the library's own (see `intersect`).
    fn large(&self) -> bool {
        self.bvh.bvh_bytes() >= LARGE_BVH_BYTES
    }
}

#[pymethods]
impl PyMeshBvh {
    /// Builds the BVH of `vertices` (`(n, 3)` float32) and `faces` (`(m, 3)` uint32), with the
    /// build quality named `"low"`, `"medium"` or `"high"` (spatial splits).
    #[new]
    #[pyo3(signature = (vertices, faces, watertight = true, threads = None, quality = "medium"))]
    fn new(
        py: Python<'_>,
        vertices: PyReadonlyArray2<'_, f32>,
        faces: PyReadonlyArray2<'_, u32>,
        watertight: bool,
        threads: Option<usize>,
        quality: &str,
    ) -> PyResult<Self> {
        let quality = match quality {
            "low" => BuildQuality::Low,
            "medium" => BuildQuality::Medium,
            "high" => BuildQuality::High,
            other => {
                return Err(PyValueError::new_err(format!(
                    "quality must be \"low\", \"medium\" or \"high\", not {other:?}"
                )));
            }
        };
        let positions: Vec<Vec3> = rows(&vertices, "vertices")?.into_iter().map(Vec3::from).collect();
        let f = faces.as_array();
        if f.ncols() != 3 {
            return Err(PyValueError::new_err(format!("faces must have shape (m, 3), not {:?}", f.shape())));
        }
        let triangles: Vec<[u32; 3]> = f.rows().into_iter().map(|r| [r[0], r[1], r[2]]).collect();
        let mesh = TriMesh::new(positions, triangles).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let triangle_test = if watertight { TriangleTest::Watertight } else { TriangleTest::MollerTrumbore };
        let options = BuildOptions { triangle_test, quality, ..BuildOptions::default() };
        let bvh = py.detach(|| with_threads(threads, || MeshBvh::build_owned(mesh, &options)))?;
        Ok(PyMeshBvh { bvh })
    }

    /// Moves the mesh's vertices to `vertices` (`(n, 3)` float32, as many as it has) and builds
    /// the BVH again with its own options, in the old tree's memory (`MeshBvh::rebuild`). Bad
    /// vertices are a ValueError, and leave the BVH as it was.
    #[pyo3(signature = (vertices, threads = None))]
    fn rebuild(&mut self, py: Python<'_>, vertices: PyReadonlyArray2<'_, f32>, threads: Option<usize>) -> PyResult<()> {
        self.move_vertices(py, &vertices, threads, MeshBvh::rebuild)
    }

    /// Moves the mesh's vertices to `vertices` and refits the boxes, keeping the tree's shape
    /// (`MeshBvh::refit`). Bad vertices, or a BVH with spatial splits, are a ValueError, and
    /// leave the BVH as it was.
    #[pyo3(signature = (vertices, threads = None))]
    fn refit(&mut self, py: Python<'_>, vertices: PyReadonlyArray2<'_, f32>, threads: Option<usize>) -> PyResult<()> {
        self.move_vertices(py, &vertices, threads, MeshBvh::refit)
    }

    /// Closest hit of every ray: `(t, triangle, u, v)`, with `t = inf` and `triangle = -1` on a
    /// miss.
    #[pyo3(signature = (origins, directions, tmin, tmax, threads = None))]
    fn intersect<'py>(
        &self,
        py: Python<'py>,
        origins: PyReadonlyArray2<'py, f32>,
        directions: PyReadonlyArray2<'py, f32>,
        tmin: PyReadonlyArray1<'py, f32>,
        tmax: PyReadonlyArray1<'py, f32>,
        threads: Option<usize>,
    ) -> PyResult<(F32s<'py>, I64s<'py>, F32s<'py>, F32s<'py>)> {
        let rays = unchecked_rays(&origins, &directions, &tmin, &tmax)?;
        let large = self.large();
        let n = rays.len();
        // Every element is written below, chunk by chunk: no zeroing first (2% of a bunny
        // primary batch).
        let (mut t, mut tri, mut u, mut v): (Vec<f32>, Vec<i64>, Vec<f32>, Vec<f32>) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let refused = py.detach(|| {
            with_threads(threads, || {
                (
                    t.spare_capacity_mut()[..n].par_chunks_mut(CHUNK),
                    tri.spare_capacity_mut()[..n].par_chunks_mut(CHUNK),
                    u.spare_capacity_mut()[..n].par_chunks_mut(CHUNK),
                    v.spare_capacity_mut()[..n].par_chunks_mut(CHUNK),
                )
                    .into_par_iter()
                    .enumerate()
                    .map(|(c, (t, tri, u, v))| {
                        let base = c * CHUNK;
                        let mut refused = None;
                        let mut hits = Vec::new();
                        let hint = if large { RayCoherence::Coherent } else { rays.coherence(base, t.len()) };
                        if large {
                            // Through the library's batch on this thread, which keeps several rays
                            // in flight through a large BVH.
                            let chunk: Vec<Ray> = (0..t.len()).map(|i| rays.ray(base + i)).collect();
                            refused = self
                                .bvh
                                .intersect_batch(
                                    &chunk,
                                    &mut hits,
                                    BatchOptions { threads: Threads::Calling, ..Default::default() },
                                )
                                .err()
                                .map(|e| (base + e.index, e.error));
                        }
                        for i in 0..t.len() {
                            // A small BVH's rays one by one, made where they are traced (a chunk
                            // of them made first, and its hits copied after, cost 1-14%); a
                            // refused ray, or a refused chunk's, is written as a miss.
                            let hit = if large {
                                hits.get(i).copied().flatten()
                            } else {
                                self.bvh
                                    .intersect_with(&rays.ray(base + i), &mut AcceptAll, RayOptions { coherence: hint })
                                    .unwrap_or_else(|e| {
                                        refused = refused.or(Some((base + i, e)));
                                        None
                                    })
                            };
                            let (ht, htri, hu, hv) =
                                hit.map_or((f32::INFINITY, -1, 0.0, 0.0), |h| (h.t, i64::from(h.triangle), h.u, h.v));
                            t[i].write(ht);
                            tri[i].write(htri);
                            u[i].write(hu);
                            v[i].write(hv);
                        }
                        refused
                    })
                    .reduce(|| None, first_refusal)
            })
        })?;
        if let Some((i, e)) = refused {
            return Err(bad_ray(i, e));
        }
        // SAFETY: the loop above wrote each of the first `n` elements of every vector once (the
        // chunks cover `0..n`, and each index of a chunk is written).
        unsafe {
            t.set_len(n);
            tri.set_len(n);
            u.set_len(n);
            v.set_len(n);
        }
        Ok((t.into_pyarray(py), tri.into_pyarray(py), u.into_pyarray(py), v.into_pyarray(py)))
    }

    /// Whether each ray hits any triangle within its range.
    #[pyo3(signature = (origins, directions, tmin, tmax, threads = None))]
    fn occluded<'py>(
        &self,
        py: Python<'py>,
        origins: PyReadonlyArray2<'py, f32>,
        directions: PyReadonlyArray2<'py, f32>,
        tmin: PyReadonlyArray1<'py, f32>,
        tmax: PyReadonlyArray1<'py, f32>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let rays = unchecked_rays(&origins, &directions, &tmin, &tmax)?;
        let large = self.large();
        let mut hit = vec![false; rays.len()];
        let refused = py.detach(|| {
            with_threads(threads, || {
                hit.par_chunks_mut(CHUNK)
                    .enumerate()
                    .map(|(c, hit)| {
                        // As in `intersect`: a large BVH's chunk through the library's batch, a
                        // small one's rays one by one.
                        let base = c * CHUNK;
                        if large {
                            let chunk: Vec<Ray> = (0..hit.len()).map(|i| rays.ray(base + i)).collect();
                            let mut occluded = Vec::with_capacity(chunk.len());
                            let refused = self
                                .bvh
                                .occluded_batch(
                                    &chunk,
                                    &mut occluded,
                                    BatchOptions { threads: Threads::Calling, ..Default::default() },
                                )
                                .err()
                                .map(|e| (base + e.index, e.error));
                            hit[..occluded.len()].copy_from_slice(&occluded);
                            return refused;
                        }
                        let mut refused = None;
                        let hint = rays.coherence(base, hit.len());
                        for (i, h) in hit.iter_mut().enumerate() {
                            match self.bvh.occluded_with(
                                &rays.ray(base + i),
                                &mut AcceptAll,
                                RayOptions { coherence: hint },
                            ) {
                                Ok(o) => *h = o,
                                Err(e) => refused = refused.or(Some((base + i, e))),
                            }
                        }
                        refused
                    })
                    .reduce(|| None, first_refusal)
            })
        })?;
        if let Some((i, e)) = refused {
            return Err(bad_ray(i, e));
        }
        Ok(hit.into_pyarray(py))
    }

    /// Every hit along every ray: `(ray_index, triangle, t)`, by ray, then by distance.
    #[pyo3(signature = (origins, directions, tmin, tmax, threads = None))]
    fn intersect_all<'py>(
        &self,
        py: Python<'py>,
        origins: PyReadonlyArray2<'py, f32>,
        directions: PyReadonlyArray2<'py, f32>,
        tmin: PyReadonlyArray1<'py, f32>,
        tmax: PyReadonlyArray1<'py, f32>,
        threads: Option<usize>,
    ) -> PyResult<(I64s<'py>, I64s<'py>, F32s<'py>)> {
        let rays = rays(&origins, &directions, &tmin, &tmax)?;
        let parts: Vec<(Vec<i64>, Vec<i64>, Vec<f32>)> = py.detach(|| {
            with_threads(threads, || {
                (0..rays.len().div_ceil(CHUNK))
                    .into_par_iter()
                    .map(|c| {
                        let (mut ray, mut tri, mut t) = (Vec::new(), Vec::new(), Vec::new());
                        let mut hits = Vec::new();
                        for i in 0..CHUNK.min(rays.len() - c * CHUNK) {
                            if self.bvh.intersect_all(&rays.ray(c * CHUNK + i), &mut hits).is_ok() {
                                for h in &hits {
                                    ray.push((c * CHUNK + i) as i64);
                                    tri.push(i64::from(h.triangle));
                                    t.push(h.t);
                                }
                            }
                        }
                        (ray, tri, t)
                    })
                    .collect()
            })
        })?;
        let (mut ray, mut tri, mut t) = (Vec::new(), Vec::new(), Vec::new());
        for (r, tr, tt) in parts {
            ray.extend(r);
            tri.extend(tr);
            t.extend(tt);
        }
        Ok((ray.into_pyarray(py), tri.into_pyarray(py), t.into_pyarray(py)))
    }

    /// The nearest point of the mesh to each point, within `max_distance`:
    /// `(point, triangle, distance, u, v)`, with `triangle = -1`, `distance = inf` and a NaN
    /// point when nothing is that near.
    #[pyo3(signature = (points, max_distance = f32::INFINITY, threads = None))]
    fn closest_point<'py>(
        &self,
        py: Python<'py>,
        points: PyReadonlyArray2<'py, f32>,
        max_distance: f32,
        threads: Option<usize>,
    ) -> PyResult<Nearest<'py>> {
        let points: Vec<Vec3> = rows(&points, "points")?.into_iter().map(Vec3::from).collect();
        // Each query checks its point and the bound (the library's message); the first refusal,
        // by point, is raised.
        let answers: Vec<Result<Option<slabtree::ClosestPoint>, slabtree::InputError>> = py.detach(|| {
            with_threads(threads, || {
                points.par_iter().with_min_len(256).map(|&p| self.bvh.closest_point(p, max_distance)).collect()
            })
        })?;
        if let Some((i, e)) = answers.iter().enumerate().find_map(|(i, a)| a.as_ref().err().map(|e| (i, e))) {
            return Err(PyValueError::new_err(format!("point {i}: {e}")));
        }
        let found: Vec<Option<slabtree::ClosestPoint>> = answers.into_iter().map(|a| a.ok().flatten()).collect();
        let n = found.len();
        let mut at = Vec::with_capacity(3 * n);
        let (mut tri, mut dist, mut u, mut v) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for c in &found {
            match c {
                Some(c) => {
                    at.extend(c.point.to_array());
                    tri.push(i64::from(c.triangle));
                    dist.push(c.distance);
                    u.push(c.u);
                    v.push(c.v);
                }
                None => {
                    at.extend([f32::NAN; 3]);
                    tri.push(-1);
                    dist.push(f32::INFINITY);
                    u.push(0.0);
                    v.push(0.0);
                }
            }
        }
        let at = at.into_pyarray(py).reshape([n, 3])?;
        Ok((at, tri.into_pyarray(py), dist.into_pyarray(py), u.into_pyarray(py), v.into_pyarray(py)))
    }

    /// The BVH and its mesh in slabtree's saved format (`MeshBvh.from_bytes` reads it back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bvh.to_bytes())
    }

    /// Reads bytes written by `to_bytes`, without a rebuild; `untrusted` computes every box again
    /// from the mesh.
    #[staticmethod]
    #[pyo3(signature = (data, untrusted = false))]
    fn from_bytes(py: Python<'_>, data: &[u8], untrusted: bool) -> PyResult<Self> {
        let read = if untrusted { MeshBvh::from_untrusted_bytes } else { MeshBvh::from_bytes };
        let bvh = py.detach(|| read(data)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyMeshBvh { bvh })
    }

    /// Whether the BVH uses the watertight triangle test.
    #[getter]
    fn watertight(&self) -> bool {
        self.bvh.options().triangle_test == TriangleTest::Watertight
    }

    /// The mesh's vertices, `(n, 3)` float32 (a copy).
    #[getter]
    fn vertices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let p = self.bvh.mesh().positions();
        let flat: Vec<f32> = p.iter().flat_map(|v| v.to_array()).collect();
        flat.into_pyarray(py).reshape([p.len(), 3])
    }

    /// The mesh's faces, `(m, 3)` int64 (a copy).
    #[getter]
    fn faces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let t = self.bvh.mesh().triangles();
        let flat: Vec<i64> = t.iter().flat_map(|f| f.map(i64::from)).collect();
        flat.into_pyarray(py).reshape([t.len(), 3])
    }

    /// Triangles in the mesh.
    fn __len__(&self) -> usize {
        self.bvh.mesh().len()
    }

    fn __repr__(&self) -> String {
        let s = self.bvh.stats();
        format!(
            "MeshBvh({} triangles, {} nodes, depth {}, watertight={})",
            self.bvh.mesh().len(),
            s.nodes,
            s.depth,
            if self.watertight() { "True" } else { "False" }
        )
    }
}
