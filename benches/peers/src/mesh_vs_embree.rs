//! slabtree's `MeshBvh` against Embree 3, obvhs, parry3d and the `bvh` crate: the same meshes and
//! the same ray files, in one run.
//!
//! Data: the meshes `bunny.obj`, `dragon.ply` and `sponza.obj` and the ray files
//! `rays/<scene>.<kind>.rays` of the shared scenes folder (see its README), with the Embree 4
//! reference answers `rays/<scene>.<kind>.hits` / `.occluded` for the cross-check. The folder is
//! the first argument if given, else `$SLABTREE_SCENES`, else `../shared/scenes` beside the repository. Further
//! arguments pick scenes (default: all three). Kinds `primary`, `random` and `diffuse` are
//! closest-hit queries; `shadow` rays (finite `tmax`) are any-hit (occlusion) queries.
//!
//! Libraries, each as its users would call it, one ray at a time. The two libraries that take a
//! hint of how alike consecutive rays are get the same one: each run of 256 rays of a file is
//! judged coherent or not once, outside the timed passes, by `RayCoherence::of_rays` (the judgement
//! slabtree's batch queries make themselves), and every ray of the run is traced with it.
//! * slabtree: `MeshBvh::intersect_with` / `occluded_with` with `AcceptAll` and that judgement, default build
//!   (Möller–Trumbore), and a second BVH built with `TriangleTest::Watertight` ("slabtree WT").
//! * Embree 3 (system `libembree3` through the `embree` crate): `rtcIntersect1` / `rtcOccluded1`
//!   with a coherent or incoherent intersect context by that judgement, once with the default
//!   scene flags (non-robust) and once with `RTC_SCENE_FLAG_ROBUST` (set through
//!   `embree::sys::rtcSetSceneFlags`), default build quality.
//! * obvhs: a CWBVH from `build_cwbvh_from_tris` (`BvhBuildParams::medium_build()`), triangles
//!   reordered to the BVH's primitive order as its examples do, `Triangle::intersect`;
//!   `ray_traverse` for closest hit and `ray_traverse_miss` (early exit) for occlusion.
//! * parry3d: `TriMesh::new` (its built-in BVH); `cast_ray_and_get_normal` for closest hit and
//!   `intersects_ray` with the shadow ray's `tmax` as max time of impact for occlusion.
//! * bvh (crate): `Bvh::build_par` over one shape per triangle; `traverse_iterator` yields the
//!   triangles whose boxes the ray hits, tested here with a plain Möller–Trumbore (no culling, no
//!   epsilon): nearest hit over all candidates, or the first hit within `tmax` for occlusion.
//!
//! Builds: wall time of each library's build from its input already in memory (slabtree
//! `MeshBvh::build`; Embree `rtcCommitScene` after its buffers are filled; obvhs build plus the
//! triangle reorder; parry3d `TriMesh::new`; bvh `Bvh::build_par`), each with its own default
//! threading (all of them parallel on this machine's cores except parry3d's; Embree uses TBB),
//! best of 3 (two interleaved rounds of throw-away builds, then the kept one). Bytes per triangle,
//! roughly "what a query reads": slabtree `stats().bytes_per_triangle` (nodes + triangle packs);
//! Embree the net bytes its memory monitor saw allocated during `rtcCommitScene` (BVH and leaf
//! triangles, not the vertex and index buffers); obvhs nodes + primitive indices + reordered
//! triangles; parry3d `TriMesh::heap_memory_size` (BVH + vertices + indices); bvh nodes + shapes.
//!
//! Every single-thread pass runs over the whole ray file and starts from the raw f32 records, so
//! each library's ray set-up (inverse direction etc.) is included. slabtree's barycentrics and
//! normal are passed through `black_box` so nothing it computes is optimised away (Embree writes
//! them to its `RTCRayHit` anyway). Passes are interleaved: in round r the libraries run in an
//! order rotated by r, and the best of the rounds is kept. A library whose first (untimed, recording) pass is slow gets fewer timed passes so the
//! run stays short; the table marks those with the pass count in brackets.
//!
//! Two threads: slabtree's `intersect_batch` / `occluded_batch` and Embree's
//! `rtcIntersect1` / `rtcOccluded1` under rayon's `par_chunks`, a task per run of 256 rays with the
//! run's coherence as its context flag (`CommittedScene` is `Sync` in the `embree` crate; Embree
//! documents scene queries as thread-safe), each on prebuilt rays and into answer vectors kept
//! across passes, in a 1-thread and a 2-thread rayon pool, with three times as many rounds as the
//! single-thread passes (they are short);
//! a timed pass traces the file several times in a row when it has fewer than `BATCH_RAYS` rays.
//!
//! Noise: while each ray set runs, /proc/stat tells how much CPU time other processes took; it is
//! printed per set ("other load") with a WARNING above 5%, since a busy machine skews the timings.
//!
//! Profiling: `MESH_PROFILE=LIB:SCENE:KIND[:PASSES]` (LIB one of `slabtree`, `slabtree-wt`,
//! `embree`, `embree-robust`; KIND one of `primary`, `random`, `diffuse`, `shadow`) builds that
//! one library over that one scene and traces its ray file PASSES times (default 1), printing the
//! hit count and nothing else, so that `valgrind --tool=callgrind` counts one library's
//! instructions per ray (run with 1 and 3 passes and divide the difference by twice the ray
//! count); it also prints the best pass's rate, for comparing two builds of slabtree by
//! alternating their runs. Build the profiled binary with `RUSTFLAGS="-C target-cpu=x86-64-v3"`.
//! KIND `build` builds that library's BVH of the scene PASSES times on one thread and traces
//! nothing (LIB `slabtree`, `slabtree-wt` or `embree`).
//!
//! Build times: `MESH_BUILD=ROUNDS` times only the builds of slabtree and Embree 3 with one and
//! with two threads (a rayon pool of that size; an Embree device with `threads=N`), interleaved
//! for ROUNDS rounds, and prints best, median and the SAH cost of both trees per scene.
//!
//! Environment: `MESH_LIBS=embree` (only slabtree and Embree: obvhs, parry3d and bvh are neither
//! built nor timed, and their cells read `-`; for quick before/after runs), `MESH_PASSES` (timed rounds, default 7), `MESH_BUDGET_S` (seconds of timed passes
//! per library and ray set before passes are cut, default 4), `MESH_EMBREE_VERBOSE` (set: print
//! Embree's configuration and selected ISA first), `MESH_FTZ` (set: turn on flush-to-zero and
//! denormals-are-zero, as Embree recommends, on the main thread and the rayon pools' threads; the
//! default leaves MXCSR as it is, like the Embree 4 reference timings in the scenes README).

mod embree_geometry;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use cgmath::Vector3;
use embree::{CommittedScene, Device, IntersectContext, RayHit, Scene, SceneFlags, sys};
use nalgebra::{Point3, Vector3 as NVec3};
use rayon::prelude::*;
use slabtree::{BatchOptions, BuildOptions, MeshBvh, TriMesh, TriangleTest};

const SCENES: [(&str, &str); 3] = [("bunny", "bunny.obj"), ("dragon", "dragon.ply"), ("sponza", "sponza.obj")];
const KINDS: [&str; 4] = ["primary", "random", "diffuse", "shadow"];
/// Builds per library and scene; the best is reported.
const BUILDS: usize = 3;
/// Relative hit-count difference to Embree above which a WARNING is printed.
const COUNT_TOLERANCE: f64 = 1e-3;
/// Relative `t` tolerance of the per-ray check (the reference README's).
const T_TOLERANCE: f32 = 1e-4;
/// Ray ids listed per disagreement class.
const LIST_IDS: usize = 12;
/// The two-thread passes are short, so they get this many times the single-thread rounds.
const MT_ROUNDS_FACTOR: usize = 3;

/// Rays a two-thread timed pass traces at least: the file is traced as many times in a row as
/// that takes, and the pass's time is divided by them. A file traced once is a 2–4 ms batch on two
/// threads (the bunny's camera and shadow rays), too short for the best of the passes to settle
/// on this kind of host: the bunny's camera rays ranged 1.59–2.03× one thread over three runs.
const BATCH_RAYS: usize = 250_000;
/// Share of the machine used by other processes above which a set's timings get a WARNING.
const FOREIGN_WARN: f64 = 0.05;

/// One ray record: origin, tmin, direction, tmax.
type RawRay = [f32; 8];

// ---------------------------------------------------------------------------------------------
// The libraries behind one interface.

/// A ray tracer over one mesh. `closest` gives `(t, triangle)`.
trait Tracer: Sync {
    /// `coherent`: whether the run of [`HINT_RUN`] rays this one belongs to was judged coherent
    /// ([`slabtree::RayCoherence::of_rays`], once per ray file, outside the timed passes). slabtree
    /// takes it as its query hint, Embree as its intersect context's coherent or incoherent flag;
    /// the other libraries have no such hint.
    fn closest(&self, r: &RawRay, coherent: bool) -> Option<(f32, u32)>;
    fn occluded(&self, r: &RawRay, coherent: bool) -> bool;
}

/// Rays judged coherent or not together: as in slabtree's batch queries, a few scan lines of a
/// camera's image.
const HINT_RUN: usize = 256;

/// Each run of [`HINT_RUN`] rays of `rays` judged coherent or not.
fn judge_runs(rays: &[RawRay]) -> Vec<bool> {
    rays.chunks(HINT_RUN)
        .map(|run| {
            let dir = |i: usize| glam::Vec3A::new(run[i][4], run[i][5], run[i][6]);
            slabtree::RayCoherence::of_directions(run.len(), dir) == slabtree::RayCoherence::Coherent
        })
        .collect()
}

/// Per-ray answers of one library on one ray set.
enum Outcome {
    Closest(Vec<Option<(f32, u32)>>),
    Occluded(Vec<bool>),
}

impl Outcome {
    fn count(&self) -> usize {
        match self {
            Outcome::Closest(v) => v.iter().filter(|h| h.is_some()).count(),
            Outcome::Occluded(v) => v.iter().filter(|&&o| o).count(),
        }
    }
    fn hit(&self, i: usize) -> bool {
        match self {
            Outcome::Closest(v) => v[i].is_some(),
            Outcome::Occluded(v) => v[i],
        }
    }
    fn t_prim(&self, i: usize) -> Option<(f32, u32)> {
        match self {
            Outcome::Closest(v) => v[i],
            Outcome::Occluded(_) => None,
        }
    }
    fn describe(&self, i: usize) -> String {
        match self {
            Outcome::Closest(v) => match v[i] {
                Some((t, p)) => format!("t={t:.7e} tri={p}"),
                None => "miss".to_string(),
            },
            Outcome::Occluded(v) => (if v[i] { "occluded" } else { "clear" }).to_string(),
        }
    }
}

/// Type-erased passes, monomorphised per tracer so the per-ray calls are static.
trait Passes: Sync {
    /// One timed pass: the hit (or occluded) count and the wall time. `coherent` holds each run
    /// of [`HINT_RUN`] rays' judgement ([`judge_runs`]).
    fn pass(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> (usize, Duration);
    /// One pass that keeps every answer.
    fn record(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> Outcome;
}

impl<T: Tracer> Passes for T {
    #[inline(never)]
    fn pass(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> (usize, Duration) {
        let start = Instant::now();
        let mut n = 0usize;
        for (run, &c) in rays.chunks(HINT_RUN).zip(coherent) {
            if shadow {
                for r in run {
                    n += self.occluded(r, c) as usize;
                }
            } else {
                for r in run {
                    n += self.closest(r, c).is_some() as usize;
                }
            }
        }
        (n, start.elapsed())
    }

    fn record(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> Outcome {
        let runs = || rays.chunks(HINT_RUN).zip(coherent);
        if shadow {
            Outcome::Occluded(runs().flat_map(|(run, &c)| run.iter().map(move |r| self.occluded(r, c))).collect())
        } else {
            Outcome::Closest(runs().flat_map(|(run, &c)| run.iter().map(move |r| self.closest(r, c))).collect())
        }
    }
}

/// The shared ray files hold valid rays only (finite, ordered ranges), so slabtree never refuses
/// one here.
const VALID: &str = "the shared rays are valid";

fn slab_ray(r: &RawRay) -> slabtree::Ray {
    slabtree::Ray::new(glam::Vec3A::new(r[0], r[1], r[2]), glam::Vec3A::new(r[4], r[5], r[6])).with_range(r[3], r[7])
}

struct Slab(MeshBvh);

fn slab_hint(coherent: bool) -> slabtree::RayCoherence {
    if coherent { slabtree::RayCoherence::Coherent } else { slabtree::RayCoherence::Incoherent }
}

fn embree_context(coherent: bool) -> IntersectContext {
    if coherent { IntersectContext::coherent() } else { IntersectContext::incoherent() }
}

impl Tracer for Slab {
    #[inline]
    fn closest(&self, r: &RawRay, coherent: bool) -> Option<(f32, u32)> {
        // Each computed field goes to `black_box` on its own, as a caller would store it: the
        // whole `Result<Option<Hit>>` through `black_box` made the compiler copy it between stack
        // slots with loads wider than the stores that wrote it, and time those stalls as ours.
        // The distance too: a timed pass only counts hits, and without it the compiler dropped
        // the refinement of `t` in f64, work a caller pays for (58 instructions per bunny random
        // ray, callgrind).
        let h = self
            .0
            .intersect_with(
                &slab_ray(r),
                &mut slabtree::AcceptAll,
                slabtree::RayOptions { coherence: slab_hint(coherent) },
            )
            .expect(VALID)?;
        black_box(h.t);
        black_box((h.u, h.v));
        black_box(h.normal);
        Some((h.t, h.triangle))
    }
    #[inline]
    fn occluded(&self, r: &RawRay, coherent: bool) -> bool {
        self.0
            .occluded_with(
                &slab_ray(r),
                &mut slabtree::AcceptAll,
                slabtree::RayOptions { coherence: slab_hint(coherent) },
            )
            .expect(VALID)
    }
}

fn embree_ray(r: &RawRay) -> embree::Ray {
    embree::Ray::segment(Vector3::new(r[0], r[1], r[2]), Vector3::new(r[4], r[5], r[6]), r[3], r[7])
}

struct Embree<'a>(CommittedScene<'a>);

impl Embree<'_> {
    #[inline]
    fn intersect(&self, ray: embree::Ray, coherent: bool) -> Option<(f32, u32)> {
        let mut ctx = embree_context(coherent);
        let mut rh = RayHit::new(ray);
        self.0.intersect(&mut ctx, &mut rh);
        rh.hit.hit().then_some((rh.ray.tfar, rh.hit.primID))
    }
    #[inline]
    fn occlude(&self, mut ray: embree::Ray, coherent: bool) -> bool {
        let mut ctx = embree_context(coherent);
        self.0.occluded(&mut ctx, &mut ray);
        // rtcOccluded1 sets tfar to -inf on a hit.
        ray.tfar == f32::NEG_INFINITY
    }
}

impl Tracer for Embree<'_> {
    #[inline]
    fn closest(&self, r: &RawRay, coherent: bool) -> Option<(f32, u32)> {
        self.intersect(embree_ray(r), coherent)
    }
    #[inline]
    fn occluded(&self, r: &RawRay, coherent: bool) -> bool {
        self.occlude(embree_ray(r), coherent)
    }
}

struct Obvhs {
    bvh: obvhs::cwbvh::CwBvh,
    /// Triangles in the BVH's primitive order.
    tris: Vec<obvhs::triangle::Triangle>,
}

fn obvhs_ray(r: &RawRay) -> obvhs::ray::Ray {
    obvhs::ray::Ray::new([r[0], r[1], r[2]].into(), [r[4], r[5], r[6]].into(), r[3], r[7])
}

impl Tracer for Obvhs {
    #[inline]
    fn closest(&self, r: &RawRay, _: bool) -> Option<(f32, u32)> {
        let mut hit = obvhs::ray::RayHit::none();
        let tris = &self.tris;
        if self.bvh.ray_traverse(obvhs_ray(r), &mut hit, |ray, id| tris[id].intersect(ray)) {
            Some((hit.t, self.bvh.primitive_indices[hit.primitive_id as usize]))
        } else {
            None
        }
    }
    #[inline]
    fn occluded(&self, r: &RawRay, _: bool) -> bool {
        let tris = &self.tris;
        !self.bvh.ray_traverse_miss(obvhs_ray(r), |ray, id| tris[id].intersect(ray))
    }
}

struct Parry(parry3d::shape::TriMesh);

fn parry_ray(r: &RawRay) -> parry3d::query::Ray {
    use parry3d::math::Vector;
    parry3d::query::Ray::new(Vector::new(r[0], r[1], r[2]), Vector::new(r[4], r[5], r[6]))
}

impl Tracer for Parry {
    #[inline]
    fn closest(&self, r: &RawRay, _: bool) -> Option<(f32, u32)> {
        use parry3d::query::RayCast;
        // parry's docs: `Real::MAX` for an unbounded ray.
        let max_toi = if r[7].is_finite() { r[7] } else { f32::MAX };
        let hit = self.0.cast_ray_and_get_normal(&parry3d::math::Pose::IDENTITY, &parry_ray(r), max_toi, true);
        black_box(hit).map(|h| (h.time_of_impact, h.subshape))
    }
    #[inline]
    fn occluded(&self, r: &RawRay, _: bool) -> bool {
        use parry3d::query::RayCast;
        self.0.intersects_ray(&parry3d::math::Pose::IDENTITY, &parry_ray(r), r[7])
    }
}

/// A triangle as a `bvh` crate shape.
struct BvhTri {
    v: [Point3<f32>; 3],
    index: u32,
    node: usize,
}

impl bvh::aabb::Bounded<f32, 3> for BvhTri {
    fn aabb(&self) -> bvh::aabb::Aabb<f32, 3> {
        bvh::aabb::Aabb::empty().grow(&self.v[0]).grow(&self.v[1]).grow(&self.v[2])
    }
}

impl bvh::bounding_hierarchy::BHShape<f32, 3> for BvhTri {
    fn set_bh_node_index(&mut self, index: usize) {
        self.node = index;
    }
    fn bh_node_index(&self) -> usize {
        self.node
    }
}

/// Möller–Trumbore without culling or epsilon: `t` in `[tmin, tmax]`.
#[inline]
fn moller_trumbore(o: &Point3<f32>, d: &NVec3<f32>, v: &[Point3<f32>; 3], tmin: f32, tmax: f32) -> Option<f32> {
    let e1 = v[1] - v[0];
    let e2 = v[2] - v[0];
    let p = d.cross(&e2);
    let det = e1.dot(&p);
    if det == 0.0 {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - v[0];
    let u = s.dot(&p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let w = d.dot(&q) * inv;
    if w < 0.0 || u + w > 1.0 {
        return None;
    }
    let t = e2.dot(&q) * inv;
    (t >= tmin && t <= tmax).then_some(t)
}

struct BvhCrate {
    bvh: bvh::bvh::Bvh<f32, 3>,
    shapes: Vec<BvhTri>,
}

fn bvh_ray(r: &RawRay) -> bvh::ray::Ray<f32, 3> {
    // Built field by field: `Ray::new` would renormalise the stored direction, and `t` is measured
    // in units of the stored vector.
    bvh::ray::Ray {
        origin: Point3::new(r[0], r[1], r[2]),
        direction: NVec3::new(r[4], r[5], r[6]),
        inv_direction: NVec3::new(1.0 / r[4], 1.0 / r[5], 1.0 / r[6]),
    }
}

impl Tracer for BvhCrate {
    #[inline]
    fn closest(&self, r: &RawRay, _: bool) -> Option<(f32, u32)> {
        let ray = bvh_ray(r);
        let mut best: Option<(f32, u32)> = None;
        let mut tmax = r[7];
        for tri in self.bvh.traverse_iterator(&ray, &self.shapes) {
            if let Some(t) = moller_trumbore(&ray.origin, &ray.direction, &tri.v, r[3], tmax) {
                tmax = t;
                best = Some((t, tri.index));
            }
        }
        best
    }
    #[inline]
    fn occluded(&self, r: &RawRay, _: bool) -> bool {
        let ray = bvh_ray(r);
        self.bvh
            .traverse_iterator(&ray, &self.shapes)
            .any(|tri| moller_trumbore(&ray.origin, &ray.direction, &tri.v, r[3], r[7]).is_some())
    }
}

// ---------------------------------------------------------------------------------------------
// Builds.

/// Net bytes Embree has allocated, from its memory monitor callback.
static EMBREE_BYTES: AtomicI64 = AtomicI64::new(0);

unsafe extern "C" fn embree_monitor(_user: *mut std::os::raw::c_void, bytes: sys::ssize_t, _post: bool) -> bool {
    EMBREE_BYTES.fetch_add(bytes as i64, Ordering::Relaxed);
    true
}

/// An uncommitted Embree scene with the mesh as its one triangle geometry.
fn embree_scene<'d>(device: &'d Device, mesh: &TriMesh, flags: SceneFlags) -> Scene<'d> {
    let geometry = embree_geometry::triangle_geometry(device, mesh);
    let mut scene = Scene::new(device);
    // SAFETY: the handle is the live scene just created; the flags are a valid RTCSceneFlags.
    unsafe { sys::rtcSetSceneFlags(scene.handle(), flags) };
    scene.attach_geometry(geometry);
    scene
}

/// Commits (builds) the scene: the committed scene, the build time and the net bytes allocated.
fn embree_commit<'a>(scene: &'a Scene<'a>) -> (CommittedScene<'a>, Duration, i64) {
    let before = EMBREE_BYTES.load(Ordering::Relaxed);
    let start = Instant::now();
    let committed = scene.commit();
    let time = start.elapsed();
    (committed, time, EMBREE_BYTES.load(Ordering::Relaxed) - before)
}

/// Installs the memory monitor on the scene's device and returns Embree's version number.
fn embree_setup(device: &Device) -> i64 {
    let scene = Scene::new(device);
    // SAFETY: rtcGetSceneDevice returns the device with one more reference, released here; the
    // callback is a plain function that only touches an atomic.
    unsafe {
        let dev = sys::rtcGetSceneDevice(scene.handle());
        sys::rtcSetDeviceMemoryMonitorFunction(dev, Some(embree_monitor), std::ptr::null_mut());
        let version = sys::rtcGetDeviceProperty(dev, sys::RTCDeviceProperty::VERSION);
        sys::rtcReleaseDevice(dev);
        version as i64
    }
}

/// Turns on flush-to-zero and denormals-are-zero for the calling thread.
fn set_ftz_daz() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only sets the FTZ (bit 15) and DAZ (bit 6) bits of this thread's MXCSR.
    #[allow(deprecated)]
    unsafe {
        use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
        _mm_setcsr(_mm_getcsr() | 0x8040);
    }
}

fn ftz_wanted() -> bool {
    std::env::var_os("MESH_FTZ").is_some()
}

fn pool(threads: usize) -> Result<rayon::ThreadPool, String> {
    let mut b = rayon::ThreadPoolBuilder::new().num_threads(threads);
    if ftz_wanted() {
        b = b.start_handler(|_| set_ftz_daz());
    }
    b.build().map_err(|e| e.to_string())
}

fn build_slab(mesh: &TriMesh, test: TriangleTest) -> (Slab, Duration) {
    let options = BuildOptions { triangle_test: test, ..BuildOptions::default() };
    let start = Instant::now();
    let bvh = MeshBvh::build(mesh, &options);
    let t = start.elapsed();
    (Slab(bvh), t)
}

fn obvhs_tris(mesh: &TriMesh) -> Vec<obvhs::triangle::Triangle> {
    (0..mesh.len())
        .map(|i| {
            let [a, b, c] = mesh.triangle(i);
            obvhs::triangle::Triangle { v0: a.to_array().into(), v1: b.to_array().into(), v2: c.to_array().into() }
        })
        .collect()
}

fn build_obvhs(tris: &[obvhs::triangle::Triangle]) -> (Obvhs, Duration) {
    let start = Instant::now();
    let bvh = obvhs::cwbvh::builder::build_cwbvh_from_tris(
        tris,
        obvhs::BvhBuildParams::medium_build(),
        &mut Duration::default(),
    );
    let ordered = bvh.primitive_indices.iter().map(|&i| tris[i as usize]).collect();
    let t = start.elapsed();
    (Obvhs { bvh, tris: ordered }, t)
}

fn build_parry(mesh: &TriMesh) -> (Parry, Duration) {
    let verts: Vec<parry3d::math::Vector> =
        mesh.positions().iter().map(|p| parry3d::math::Vector::new(p.x, p.y, p.z)).collect();
    let indices = mesh.triangles().to_vec();
    let start = Instant::now();
    let tm = parry3d::shape::TriMesh::new(verts, indices).expect("parry3d rejects the mesh");
    let t = start.elapsed();
    (Parry(tm), t)
}

fn build_bvh_crate(mesh: &TriMesh) -> (BvhCrate, Duration) {
    use bvh::bounding_hierarchy::BoundingHierarchy;
    let mut shapes: Vec<BvhTri> = (0..mesh.len())
        .map(|i| {
            let v = mesh.triangle(i).map(|p| Point3::new(p.x, p.y, p.z));
            BvhTri { v, index: i as u32, node: 0 }
        })
        .collect();
    let start = Instant::now();
    let bvh = bvh::bvh::Bvh::build_par(&mut shapes);
    let t = start.elapsed();
    (BvhCrate { bvh, shapes }, t)
}

// ---------------------------------------------------------------------------------------------
// Data.

struct RaySet {
    kind: &'static str,
    rays: Vec<RawRay>,
    shadow: bool,
    /// The Embree 4 (robust) reference answers shipped with the rays.
    reference: Option<Outcome>,
    /// Each run of [`HINT_RUN`] rays judged coherent or not ([`judge_runs`]).
    coherent: Vec<bool>,
}

fn read_f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

fn load_rays(dir: &Path, scene: &str, kind: &'static str) -> Result<RaySet, String> {
    let path = dir.join("rays").join(format!("{scene}.{kind}.rays"));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() % 32 != 0 {
        return Err(format!("{}: size {} is not a multiple of 32", path.display(), bytes.len()));
    }
    let floats: Vec<f32> = read_f32s(&bytes).collect();
    let rays: Vec<RawRay> = floats.chunks_exact(8).map(|c| c.try_into().unwrap()).collect();
    let shadow = kind == "shadow";
    let reference = if shadow {
        let p = dir.join("rays").join(format!("{scene}.shadow.occluded"));
        std::fs::read(&p)
            .ok()
            .filter(|b| b.len() == rays.len())
            .map(|b| Outcome::Occluded(b.iter().map(|&x| x != 0).collect()))
    } else {
        let p = dir.join("rays").join(format!("{scene}.{kind}.hits"));
        std::fs::read(&p).ok().filter(|b| b.len() == rays.len() * 16).map(|b| {
            Outcome::Closest(
                b.chunks_exact(16)
                    .map(|c| {
                        let t = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        let prim = i32::from_le_bytes([c[4], c[5], c[6], c[7]]);
                        (prim >= 0).then_some((t, prim as u32))
                    })
                    .collect(),
            )
        })
    };
    let coherent = judge_runs(&rays);
    Ok(RaySet { kind, rays, shadow, reference, coherent })
}

// ---------------------------------------------------------------------------------------------
// Reporting.

/// Busy CPU time of the whole machine and of this process, from /proc, to tell how much other
/// processes ran while a ray set was being timed (Linux only; `None` elsewhere).
struct CpuSnapshot(Option<(u64, u64)>);

impl CpuSnapshot {
    fn take() -> CpuSnapshot {
        let machine = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            let line = s.lines().next()?;
            let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
            (v.len() >= 8).then(|| v[0] + v[1] + v[2] + v[5] + v[6] + v[7])
        });
        let own = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after the command name.
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        });
        CpuSnapshot(machine.zip(own))
    }

    /// The share of all CPUs' time, since this snapshot, used by other processes (clock ticks of
    /// 1/100 s, the Linux default).
    fn foreign_load(&self, wall: Duration) -> Option<f64> {
        let ((m0, o0), (m1, o1)) = (self.0?, CpuSnapshot::take().0?);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let other = (m1 - m0).saturating_sub(o1 - o0) as f64 / 100.0;
        Some((other / (wall.as_secs_f64() * cpus)).clamp(0.0, 1.0))
    }
}

/// Results of one library on one ray set.
struct Timing {
    best: Duration,
    passes: usize,
    count: usize,
    /// `false` for a library this run left out (`MESH_LIBS`).
    active: bool,
}

struct SetResult {
    scene: &'static str,
    kind: &'static str,
    n: usize,
    reference: Option<usize>,
    st: Vec<Timing>,
    /// Two-thread table: slabtree 1T, 2T, Embree 1T, 2T, Embree robust 1T, 2T (best times).
    mt: Vec<Duration>,
    /// Share of the machine's CPU time used by other processes while the set ran.
    foreign: Option<f64>,
    /// Runs of [`HINT_RUN`] rays judged coherent, and all runs.
    coherent_runs: (usize, usize),
}

struct BuildResult {
    scene: &'static str,
    triangles: usize,
    /// Best build time and bytes per triangle, per library, in `LIBS` order.
    builds: Vec<(Duration, Option<f64>)>,
}

/// Library names in column order.
const LIBS: [&str; 7] = ["slabtree", "Embree", "Embree robust", "obvhs", "parry3d", "bvh", "slabtree WT"];

fn mrays(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64() / 1e6
}

/// Whether obvhs, parry3d and bvh take part (not with `MESH_LIBS=embree`).
fn rust_peers() -> bool {
    std::env::var("MESH_LIBS").map_or(true, |v| v != "embree")
}

/// A library left out of this run (`MESH_LIBS`): no time, no hits.
struct Skipped;

impl Tracer for Skipped {
    fn closest(&self, _: &RawRay, _: bool) -> Option<(f32, u32)> {
        None
    }
    fn occluded(&self, _: &RawRay, _: bool) -> bool {
        false
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Per-ray comparison of `got` against `want`: hit/miss disagreements and, where both hit, `t`
/// beyond the tolerance (a different triangle at the same `t` is a tie, not counted).
fn compare(got: &Outcome, want: &Outcome) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let (mut extra, mut missing, mut t_off) = (Vec::new(), Vec::new(), Vec::new());
    let n = match want {
        Outcome::Closest(v) => v.len(),
        Outcome::Occluded(v) => v.len(),
    };
    for i in 0..n {
        match (got.hit(i), want.hit(i)) {
            (true, false) => extra.push(i),
            (false, true) => missing.push(i),
            (true, true) => {
                if let (Some((tg, _)), Some((tw, _))) = (got.t_prim(i), want.t_prim(i))
                    && (tg - tw).abs() > T_TOLERANCE * tw.abs()
                {
                    t_off.push(i);
                }
            }
            (false, false) => {}
        }
    }
    (extra, missing, t_off)
}

fn ids(v: &[usize]) -> String {
    let shown: Vec<String> = v.iter().take(LIST_IDS).map(|i| i.to_string()).collect();
    if v.len() > LIST_IDS { format!("[{}, ...]", shown.join(", ")) } else { format!("[{}]", shown.join(", ")) }
}

// ---------------------------------------------------------------------------------------------

fn run_scene(
    dir: &Path,
    scene: &'static str,
    file: &str,
    device: &Device,
    rounds: usize,
    budget: f64,
) -> Result<(BuildResult, Vec<SetResult>), String> {
    let path = dir.join(file);
    let mesh = slabtree::load_mesh(&path).map_err(|e| e.to_string())?;
    let ntri = mesh.len();
    println!("\n## {scene}: {} triangles, {} vertices ({})", ntri, mesh.positions().len(), path.display());

    // Builds: BUILDS - 1 interleaved rounds of throw-away builds, then the kept ones.
    let peers = rust_peers();
    let active: [bool; 7] = [true, true, true, peers, peers, peers, true];
    let tris_ob = if peers { obvhs_tris(&mesh) } else { Vec::new() };
    let mut build_times = [Duration::MAX; 7];
    let mut keep = |lib: usize, t: Duration| build_times[lib] = build_times[lib].min(t);
    for round in 0..BUILDS - 1 {
        for k in 0..LIBS.len() {
            let lib = (round + k) % LIBS.len();
            if !active[lib] {
                continue;
            }
            match lib {
                0 => keep(0, build_slab(&mesh, TriangleTest::MollerTrumbore).1),
                1 | 2 => {
                    let flags = if lib == 1 { SceneFlags::NONE } else { SceneFlags::ROBUST };
                    // The scene (and its BVH) is released at the end of this block.
                    let s = embree_scene(device, &mesh, flags);
                    keep(lib, embree_commit(&s).1);
                }
                3 => keep(3, build_obvhs(&tris_ob).1),
                4 => keep(4, build_parry(&mesh).1),
                5 => keep(5, build_bvh_crate(&mesh).1),
                _ => keep(6, build_slab(&mesh, TriangleTest::Watertight).1),
            }
        }
    }
    let (slab, t) = build_slab(&mesh, TriangleTest::MollerTrumbore);
    keep(0, t);
    let fast_scene = embree_scene(device, &mesh, SceneFlags::NONE);
    let (fast, t, fast_bytes) = embree_commit(&fast_scene);
    keep(1, t);
    let robust_scene = embree_scene(device, &mesh, SceneFlags::ROBUST);
    let (robust, t, robust_bytes) = embree_commit(&robust_scene);
    keep(2, t);
    let (ob, pa, bv) = if peers {
        let (ob, t) = build_obvhs(&tris_ob);
        keep(3, t);
        let (pa, t) = build_parry(&mesh);
        keep(4, t);
        let (bv, t) = build_bvh_crate(&mesh);
        keep(5, t);
        (Some(ob), Some(pa), Some(bv))
    } else {
        (None, None, None)
    };
    let (slab_wt, t) = build_slab(&mesh, TriangleTest::Watertight);
    keep(6, t);
    drop(tris_ob);

    let per_tri = |bytes: usize| Some(bytes as f64 / ntri as f64);
    let ob_bytes = ob.as_ref().map(|ob| {
        std::mem::size_of_val(&ob.bvh.nodes[..])
            + std::mem::size_of_val(&ob.bvh.primitive_indices[..])
            + std::mem::size_of_val(&ob.tris[..])
    });
    let bv_bytes =
        bv.as_ref().map(|bv| std::mem::size_of_val(&bv.bvh.nodes[..]) + std::mem::size_of_val(&bv.shapes[..]));
    let bytes = [
        Some(slab.0.stats().bytes_per_triangle as f64),
        (fast_bytes > 0).then(|| fast_bytes as f64 / ntri as f64),
        (robust_bytes > 0).then(|| robust_bytes as f64 / ntri as f64),
        ob_bytes.and_then(per_tri),
        pa.as_ref().and_then(|pa| per_tri(pa.0.heap_memory_size())),
        bv_bytes.and_then(per_tri),
        Some(slab_wt.0.stats().bytes_per_triangle as f64),
    ];
    let build = BuildResult { scene, triangles: ntri, builds: build_times.iter().copied().zip(bytes).collect() };
    print!("build ms (best of {BUILDS}):");
    for (name, (t, _)) in LIBS.iter().zip(&build.builds) {
        if *t != Duration::MAX {
            print!(" {name} {:.1};", t.as_secs_f64() * 1e3);
        }
    }
    println!();

    let emb_fast = Embree(fast);
    let emb_robust = Embree(robust);
    let libs: [&dyn Passes; 7] = [
        &slab,
        &emb_fast,
        &emb_robust,
        ob.as_ref().map_or(&Skipped as &dyn Passes, |x| x),
        pa.as_ref().map_or(&Skipped as &dyn Passes, |x| x),
        bv.as_ref().map_or(&Skipped as &dyn Passes, |x| x),
        &slab_wt,
    ];

    let pool1 = pool(1)?;
    let pool2 = pool(2)?;

    let mut results = Vec::new();
    for kind in KINDS {
        let set = load_rays(dir, scene, kind)?;
        let n = set.rays.len();
        let t0 = Instant::now();
        let cpu0 = CpuSnapshot::take();

        // Recording pass (also the warm-up); its time sets how many timed passes a library gets.
        let mut outcomes = Vec::new();
        let mut allowed = [rounds; 7];
        for (l, lib) in libs.iter().enumerate() {
            if !active[l] {
                allowed[l] = 0;
                outcomes.push(lib.record(&[], &[], set.shadow));
                continue;
            }
            let start = Instant::now();
            outcomes.push(lib.record(&set.rays, &set.coherent, set.shadow));
            let secs = start.elapsed().as_secs_f64();
            allowed[l] = ((budget / secs).floor() as usize).clamp(1, rounds);
        }
        let counts: Vec<usize> = outcomes.iter().map(Outcome::count).collect();

        // Interleaved single-thread passes.
        let mut best = [Duration::MAX; 7];
        let mut done = [0usize; 7];
        for round in 0..rounds {
            for k in 0..libs.len() {
                let l = (round + k) % libs.len();
                if done[l] >= allowed[l] {
                    continue;
                }
                let (c, t) = libs[l].pass(&set.rays, &set.coherent, set.shadow);
                assert_eq!(c, counts[l], "{} gave a different count on a repeated pass", LIBS[l]);
                best[l] = best[l].min(t);
                done[l] += 1;
            }
        }

        // Two threads: slabtree batch vs Embree under rayon, 1- and 2-thread pools, prebuilt rays.
        let srays: Vec<slabtree::Ray> = set.rays.iter().map(slab_ray).collect();
        let erays: Vec<embree::Ray> = set.rays.iter().map(embree_ray).collect();
        // A timed pass traces the file `batches` times (see `BATCH_RAYS`); the time is per batch.
        let batches = BATCH_RAYS.div_ceil(n.max(1)).max(1);
        // Each library writes its answers into vectors kept across passes, as a renderer keeps
        // its frame's buffers: slabtree through its `_into` batches, Embree in place from tasks
        // of 256 rays, each free to be stolen, as slabtree's batches split their rays.
        let (mut slab_hits, mut slab_occluded) = (Vec::new(), Vec::new());
        let mut slab_batch = |pool: &rayon::ThreadPool| -> (usize, Duration) {
            let start = Instant::now();
            let c = pool.install(|| {
                (0..batches).fold(0, |_, _| {
                    if set.shadow {
                        slab.0.occluded_batch(&srays, &mut slab_occluded, BatchOptions::default()).expect(VALID);
                        slab_occluded.iter().filter(|&&o| o).count()
                    } else {
                        slab.0.intersect_batch(&srays, &mut slab_hits, BatchOptions::default()).expect(VALID);
                        slab_hits.iter().filter(|h| h.is_some()).count()
                    }
                })
            });
            (c, start.elapsed() / batches as u32)
        };
        let (mut emb_hits, mut emb_occluded) = (vec![None; erays.len()], vec![false; erays.len()]);
        let mut embree_batch_once = |e: &Embree, pool: &rayon::ThreadPool| -> usize {
            pool.install(|| {
                // Each task is one run of `HINT_RUN` rays, traced with the run's judgement as
                // the single-thread passes give it (slabtree's batches judge their runs alike).
                let runs = || erays.par_chunks(HINT_RUN).zip(set.coherent.par_iter());
                if set.shadow {
                    runs().zip(emb_occluded.par_chunks_mut(HINT_RUN)).with_max_len(1).for_each(|((c, &coh), o)| {
                        for (r, o) in c.iter().zip(o) {
                            *o = e.occlude(*r, coh);
                        }
                    });
                    emb_occluded.iter().filter(|&&o| o).count()
                } else {
                    runs().zip(emb_hits.par_chunks_mut(HINT_RUN)).with_max_len(1).for_each(|((c, &coh), o)| {
                        for (r, o) in c.iter().zip(o) {
                            *o = e.intersect(*r, coh);
                        }
                    });
                    emb_hits.iter().filter(|h: &&Option<(f32, u32)>| h.is_some()).count()
                }
            })
        };
        let mut embree_batch = |e: &Embree, pool: &rayon::ThreadPool| -> (usize, Duration) {
            let start = Instant::now();
            let c = (0..batches).fold(0, |_, _| embree_batch_once(e, pool));
            (c, start.elapsed() / batches as u32)
        };
        let mut mt = vec![Duration::MAX; 6];
        let mt_counts = [counts[0], counts[0], counts[1], counts[1], counts[2], counts[2]];
        for round in 0..MT_ROUNDS_FACTOR * rounds {
            for k in 0..6 {
                let j = (round + k) % 6;
                let pool = if j % 2 == 0 { &pool1 } else { &pool2 };
                let (c, t) = match j / 2 {
                    0 => slab_batch(pool),
                    1 => embree_batch(&emb_fast, pool),
                    _ => embree_batch(&emb_robust, pool),
                };
                assert_eq!(c, mt_counts[j], "a batch pass gave a different count");
                mt[j] = mt[j].min(t);
            }
        }

        // Report this set.
        let foreign = cpu0.foreign_load(t0.elapsed());
        let reference = set.reference.as_ref().map(Outcome::count);
        if let Some(f) = foreign.filter(|&f| f > FOREIGN_WARN) {
            println!(
                "WARNING: {scene}.{kind}: other processes used {:.0}% of the machine while this set was timed",
                100.0 * f
            );
        }
        println!(
            "{scene}.{kind}: {n} rays, {:.1} s; counts{}: {}",
            t0.elapsed().as_secs_f64(),
            if set.shadow { " (occluded)" } else { " (hits)" },
            LIBS.iter().zip(&counts).map(|(l, c)| format!("{l} {c}")).collect::<Vec<_>>().join(", ")
        );
        let embree_count = counts[1] as f64;
        for (l, &c) in counts.iter().enumerate() {
            let diff = (c as f64 - embree_count).abs();
            if l != 1 && active[l] && diff > COUNT_TOLERANCE * embree_count.max(1.0) {
                println!(
                    "WARNING: {scene}.{kind}: {} count {c} differs from Embree's {} by {:.3}%",
                    LIBS[l],
                    counts[1],
                    100.0 * diff / embree_count.max(1.0)
                );
            }
        }
        // Per-ray check of the slabtree variants against the Embree 4 reference files and against
        // Embree 3 (both flag sets).
        for (l, name) in [(0, "slabtree"), (6, "slabtree WT")] {
            let against: [(&str, Option<&Outcome>); 3] = [
                ("reference", set.reference.as_ref()),
                ("Embree", Some(&outcomes[1])),
                ("Embree robust", Some(&outcomes[2])),
            ];
            for (wname, want) in against {
                let Some(want) = want else { continue };
                let (extra, missing, t_off) = compare(&outcomes[l], want);
                if extra.is_empty() && missing.is_empty() && t_off.is_empty() {
                    continue;
                }
                println!(
                    "  {name} vs {wname}: {} hit where it missed {}, {} missed where it hit {}, {} with t off by > {T_TOLERANCE:e} rel {}",
                    extra.len(),
                    ids(&extra),
                    missing.len(),
                    ids(&missing),
                    t_off.len(),
                    ids(&t_off)
                );
                if wname == "reference" {
                    for &i in extra.iter().chain(&missing).chain(&t_off).take(6) {
                        println!(
                            "    ray {i}: {name} {} | reference {} | Embree {} | Embree robust {}",
                            outcomes[l].describe(i),
                            want.describe(i),
                            outcomes[1].describe(i),
                            outcomes[2].describe(i)
                        );
                    }
                }
            }
        }
        // Other libraries: hit/miss disagreements with the reference, counted only.
        if let Some(want) = &set.reference {
            let line: Vec<String> = (1..6)
                .filter(|&l| active[l])
                .map(|l| {
                    let (e, m, t) = compare(&outcomes[l], want);
                    let mut s = format!("{} +{}/-{}/t{}", LIBS[l], e.len(), m.len(), t.len());
                    if !(e.is_empty() && m.is_empty() && t.is_empty()) {
                        s += &format!(" (+{} -{} t{})", ids(&e), ids(&m), ids(&t));
                    }
                    s
                })
                .collect();
            println!("  vs reference (extra hits / missed hits / t off): {}", line.join(", "));
        }

        results.push(SetResult {
            scene,
            kind: set.kind,
            n,
            reference,
            st: (0..7)
                .map(|l| Timing { best: best[l], passes: done[l], count: counts[l], active: active[l] })
                .collect(),
            mt,
            foreign,
            coherent_runs: (set.coherent.iter().filter(|&&c| c).count(), set.coherent.len()),
        });
    }
    Ok((build, results))
}

/// An Embree 3 build with `threads` worker threads (device config `threads=N`), through the C API
/// (the `embree` crate's `Device` takes no configuration): the commit's wall time, from buffers
/// already filled, as `embree_commit` times it.
fn embree_build_time(mesh: &TriMesh, threads: usize, verbose: bool) -> Duration {
    let config = std::ffi::CString::new(format!("threads={threads}{}", if verbose { ",verbose=2" } else { "" }))
        .expect("no NUL in the config");
    // SAFETY: the C API used as documented: every handle is created here, checked, and released
    // before returning; the buffers are written within the item counts they were created with.
    unsafe {
        let device = sys::rtcNewDevice(config.as_ptr());
        assert!(!device.is_null(), "rtcNewDevice({config:?}) failed");
        let scene = sys::rtcNewScene(device);
        let geom = sys::rtcNewGeometry(device, sys::RTCGeometryType::TRIANGLE);
        let nv = mesh.positions().len();
        let verts = sys::rtcSetNewGeometryBuffer(geom, sys::RTCBufferType::VERTEX, 0, sys::RTCFormat::FLOAT3, 12, nv)
            .cast::<[f32; 3]>();
        for (i, p) in mesh.positions().iter().enumerate() {
            verts.add(i).write(p.to_array());
        }
        let nt = mesh.triangles().len();
        let idx = sys::rtcSetNewGeometryBuffer(geom, sys::RTCBufferType::INDEX, 0, sys::RTCFormat::UINT3, 12, nt)
            .cast::<[u32; 3]>();
        for (i, t) in mesh.triangles().iter().enumerate() {
            idx.add(i).write(*t);
        }
        sys::rtcCommitGeometry(geom);
        sys::rtcAttachGeometry(scene, geom);
        sys::rtcReleaseGeometry(geom);
        let start = Instant::now();
        sys::rtcCommitScene(scene);
        let t = start.elapsed();
        sys::rtcReleaseScene(scene);
        sys::rtcReleaseDevice(device);
        t
    }
}

/// `MESH_BUILD=ROUNDS`: build times only, slabtree (rayon pool of N threads) against Embree 3
/// (device with `threads=N`), N = 1 and 2, interleaved for ROUNDS rounds; best and median per
/// cell, and the SAH cost of both trees: `MeshBvh::stats().sah_cost`, and Embree's "total sah"
/// from its build statistics (the same sum, node areas plus leaf areas times blocks of 4
/// triangles over the root's), which it prints only on standard output with `verbose=2`, so a
/// child process builds it (`embree_sah`). With `MESH_EMBREE_VERBOSE`, Embree also prints its
/// statistics for its first build of each scene.
fn build_only(dir: &Path, picked: &[String], rounds: usize) -> Result<(), String> {
    println!("# Mesh BVH build time: slabtree against Embree 3, {rounds} interleaved rounds, best and median (ms)\n");
    println!(
        "| scene | triangles | threads | slabtree best | median | Embree best | median | speed: Embree best / slabtree best | slabtree SAH | Embree SAH |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let verbose = std::env::var_os("MESH_EMBREE_VERBOSE").is_some();
    let pools = [pool(1)?, pool(2)?];
    for (scene, file) in SCENES {
        if !picked.is_empty() && !picked.iter().any(|p| p == scene) {
            continue;
        }
        let mesh = slabtree::load_mesh(dir.join(file)).map_err(|e| e.to_string())?;
        let mut times = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]]; // [threads][lib]
        let mut sah = 0.0;
        for round in 0..rounds {
            for (t, pool) in pools.iter().enumerate() {
                // Which library goes first alternates from round to round.
                let embree_first = round % 2 == 1;
                let embree_time = || embree_build_time(&mesh, t + 1, verbose && round == 0);
                let early = if embree_first { Some(embree_time()) } else { None };
                let (bvh, slab) = pool.install(|| build_slab(&mesh, TriangleTest::MollerTrumbore));
                sah = bvh.0.stats().sah_cost;
                drop(bvh);
                let embree = early.unwrap_or_else(embree_time);
                times[t][0].push(slab.as_secs_f64() * 1e3);
                times[t][1].push(embree.as_secs_f64() * 1e3);
            }
        }
        let embree_sah = embree_sah(dir, scene)?;
        for (t, cells) in times.iter_mut().enumerate() {
            for v in cells.iter_mut() {
                v.sort_by(f64::total_cmp);
            }
            let (sb, sm) = (cells[0][0], cells[0][cells[0].len() / 2]);
            let (eb, em) = (cells[1][0], cells[1][cells[1].len() / 2]);
            println!(
                "| {scene} | {} | {} | {sb:.1} | {sm:.1} | {eb:.1} | {em:.1} | {:.2} | {sah:.2} | {embree_sah} |",
                mesh.len(),
                t + 1,
                eb / sb
            );
        }
    }
    Ok(())
}

/// Embree's SAH cost of `scene`, read from the build statistics that a child process running
/// `MESH_EMBREE_SAH=scene` prints (see `build_only`).
fn embree_sah(dir: &Path, scene: &str) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .arg(dir)
        .env("MESH_EMBREE_SAH", scene)
        .env_remove("MESH_BUILD")
        .output()
        .map_err(|e| format!("running the Embree statistics child: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Embree 3.13: "  total            : sah =  10.753 (100.00%), #bytes = ..."
    let sah = text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix("total")?.trim_start().strip_prefix(": sah =")?;
        rest.split_whitespace().next().map(str::to_owned)
    });
    sah.ok_or_else(|| format!("no \"total : sah\" line in Embree's statistics for {scene}"))
}

/// `MESH_PROFILE`: one library, one scene, one ray set, `passes` passes (see the module docs).
fn profile(dir: &Path, spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [lib, scene, kind, rest @ ..] = parts.as_slice() else {
        return Err(format!("MESH_PROFILE={spec}: expected LIB:SCENE:KIND[:PASSES]"));
    };
    let passes: usize = rest.first().map_or(Ok(1), |p| p.parse()).map_err(|e| format!("passes: {e}"))?;
    let (scene, file) = SCENES.iter().find(|(s, _)| s == scene).ok_or_else(|| format!("unknown scene {scene}"))?;
    let mesh = slabtree::load_mesh(dir.join(file)).map_err(|e| e.to_string())?;
    if *kind == "build" {
        // Builds only, on one thread, `passes` times: the build's instructions under callgrind
        // (the difference of two counts over the difference of their builds). slabtree's saved
        // form is hashed, so that a change meant to leave the tree alone can show that it does.
        let mut digest = String::new();
        // One pool for every build, so that its threads' start-up is not counted per build.
        let one = pool(1)?;
        for _ in 0..passes {
            match *lib {
                "slabtree" | "slabtree-wt" => {
                    let test = if *lib == "slabtree" { TriangleTest::MollerTrumbore } else { TriangleTest::Watertight };
                    let (bvh, _) = one.install(|| build_slab(&mesh, test));
                    let mut h = std::hash::DefaultHasher::new();
                    std::hash::Hash::hash(&bvh.0.to_bytes(), &mut h);
                    digest = format!(", saved BVH hash {:016x}", std::hash::Hasher::finish(&h));
                }
                "embree" => drop(embree_build_time(&mesh, 1, false)),
                other => return Err(format!("unknown library {other} for builds")),
            }
        }
        println!("{lib} {scene}: {passes} builds{digest}");
        return Ok(());
    }
    let kind: &'static str = KINDS.into_iter().find(|k| k == kind).ok_or("unknown kind")?;
    let set = load_rays(dir, scene, kind)?;
    let run = |t: &dyn Passes| {
        let (mut hits, mut best) = (0, Duration::MAX);
        for _ in 0..passes {
            let (h, d) = t.pass(&set.rays, &set.coherent, set.shadow);
            hits += h;
            best = best.min(d);
        }
        println!(
            "{lib} {scene}.{kind}: {} rays x {passes} passes, {hits} hits, best pass {:.3} Mrays/s",
            set.rays.len(),
            mrays(set.rays.len(), best)
        );
    };
    match *lib {
        "slabtree" => run(&build_slab(&mesh, TriangleTest::MollerTrumbore).0),
        "slabtree-wt" => run(&build_slab(&mesh, TriangleTest::Watertight).0),
        "embree" | "embree-robust" => {
            // With MESH_EMBREE_VERBOSE, Embree prints its build's statistics (node counts, SAH).
            let device =
                if std::env::var_os("MESH_EMBREE_VERBOSE").is_some() { Device::debug() } else { Device::new() };
            let flags = if *lib == "embree" { SceneFlags::NONE } else { SceneFlags::ROBUST };
            let s = embree_scene(&device, &mesh, flags);
            let (committed, _, _) = embree_commit(&s);
            run(&Embree(committed));
        }
        other => return Err(format!("unknown library {other}")),
    }
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let dir = match args.peek() {
        Some(a) if Path::new(a).is_dir() => PathBuf::from(args.next().unwrap()),
        // The shared scenes sit beside the repository: `../shared/scenes` from its root.
        _ => std::env::var_os("SLABTREE_SCENES")
            .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/scenes"), PathBuf::from),
    };
    let picked: Vec<String> = args.collect();
    if let Some(bad) = picked.iter().find(|p| !SCENES.iter().any(|(s, _)| s == p)) {
        eprintln!("error: `{bad}` is neither a directory nor one of the scenes bunny, dragon, sponza");
        std::process::exit(2);
    }
    if ftz_wanted() {
        set_ftz_daz();
    }
    if let Ok(scene) = std::env::var("MESH_EMBREE_SAH") {
        // The child of `embree_sah`: one verbose Embree build, whose statistics go to stdout.
        let Some((_, file)) = SCENES.iter().find(|(s, _)| *s == scene) else {
            eprintln!("error: unknown scene {scene}");
            std::process::exit(2);
        };
        match slabtree::load_mesh(dir.join(file)) {
            Ok(mesh) => drop(embree_build_time(&mesh, 1, true)),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        }
        return;
    }
    if let Some(rounds) = std::env::var("MESH_BUILD").ok().and_then(|r| r.parse().ok()) {
        if let Err(e) = build_only(&dir, &picked, rounds) {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        return;
    }
    if let Ok(spec) = std::env::var("MESH_PROFILE") {
        if let Err(e) = profile(&dir, &spec) {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        return;
    }
    let rounds = env_usize("MESH_PASSES", 7).max(1);
    let budget = env_f64("MESH_BUDGET_S", 4.0);
    let start = Instant::now();

    if std::env::var_os("MESH_EMBREE_VERBOSE").is_some() {
        // Embree prints its build configuration and the ISA it selected for a verbose device.
        // SAFETY: a C string config; the device is released at once.
        unsafe { sys::rtcReleaseDevice(sys::rtcNewDevice(c"verbose=1".as_ptr())) };
    }
    let device = Device::new();
    let version = embree_setup(&device);
    println!(
        "# mesh_vs_embree: slabtree MeshBvh vs Embree {}.{}.{}, obvhs, parry3d, bvh",
        version / 10000,
        version / 100 % 100,
        version % 100
    );
    println!(
        "scenes: {}; {rounds} interleaved single-thread rounds (order rotated per round), best kept; \
         rayon threads for builds: {}; FTZ/DAZ {}",
        dir.display(),
        rayon::current_num_threads(),
        if ftz_wanted() { "on" } else { "off" }
    );

    let mut builds = Vec::new();
    let mut sets = Vec::new();
    for (scene, file) in SCENES {
        if !picked.is_empty() && !picked.iter().any(|p| p == scene) {
            continue;
        }
        match run_scene(&dir, scene, file, &device, rounds, budget) {
            Ok((b, s)) => {
                builds.push(b);
                sets.extend(s);
            }
            Err(e) => {
                eprintln!("error: {scene}: {e}");
                std::process::exit(1);
            }
        }
    }

    // Tables.
    println!("\n### Build time (ms, best of {BUILDS}) and bytes per triangle\n");
    println!("| scene | triangles | {} |", LIBS.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(LIBS.len()));
    for b in &builds {
        let cells: Vec<String> = b
            .builds
            .iter()
            .map(|(t, _)| if *t == Duration::MAX { "-".to_string() } else { format!("{:.1}", t.as_secs_f64() * 1e3) })
            .collect();
        println!("| {} | {} | {} |", b.scene, b.triangles, cells.join(" | "));
    }
    println!();
    println!("| scene | bytes/tri: {} |", LIBS.join(" | "));
    println!("|---|{}", "---:|".repeat(LIBS.len()));
    for b in &builds {
        let cells: Vec<String> =
            b.builds.iter().map(|(_, bpt)| bpt.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"))).collect();
        println!("| {} | {} |", b.scene, cells.join(" | "));
    }

    println!(
        "\n### Single thread, Mrays/s (best of {rounds} interleaved passes; (k) = only k passes; other load = \
         share of the machine's CPU time that other processes used while the set ran; coherent = \
         runs of 256 rays judged coherent, the hint both slabtree and Embree were given)\n"
    );
    println!(
        "| scene | kind | slabtree | Embree | Embree robust | obvhs | parry3d | bvh | ratio slabtree/Embree | slabtree WT | ratio WT/Embree robust | other load | coherent |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in &sets {
        let cell = |l: usize| {
            let t = &s.st[l];
            if !t.active {
                return "-".to_string();
            }
            let v = mrays(s.n, t.best);
            if t.passes < rounds { format!("{v:.3} ({})", t.passes) } else { format!("{v:.3}") }
        };
        let ratio = |a: usize, b: usize| mrays(s.n, s.st[a].best) / mrays(s.n, s.st[b].best);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {:.2} | {} | {}/{} |",
            s.scene,
            s.kind,
            cell(0),
            cell(1),
            cell(2),
            cell(3),
            cell(4),
            cell(5),
            ratio(0, 1),
            cell(6),
            ratio(6, 2),
            s.foreign.map_or_else(|| "n/a".to_string(), |f| format!("{:.0}%", 100.0 * f)),
            s.coherent_runs.0,
            s.coherent_runs.1
        );
    }

    println!("\n### Hit counts (occluded counts for shadow); reference = Embree 4 robust files\n");
    println!("| scene | kind | rays | reference | {} |", LIBS.join(" | "));
    println!("|---|---|---:|---:|{}", "---:|".repeat(LIBS.len()));
    for s in &sets {
        let cells: Vec<String> =
            s.st.iter().map(|t| if t.active { t.count.to_string() } else { "-".to_string() }).collect();
        let r = s.reference.map_or_else(|| "n/a".to_string(), |c| c.to_string());
        println!("| {} | {} | {} | {} | {} |", s.scene, s.kind, s.n, r, cells.join(" | "));
    }

    println!(
        "\n### Two threads (rayon), Mrays/s, prebuilt rays (best of {} interleaved passes)\n",
        MT_ROUNDS_FACTOR * rounds
    );
    println!(
        "| scene | kind | slabtree 1T | slabtree 2T | speed-up | Embree 1T | Embree 2T | speed-up | Embree robust 1T | Embree robust 2T | ratio slabtree/Embree 2T |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in &sets {
        let m: Vec<f64> = s.mt.iter().map(|&d| mrays(s.n, d)).collect();
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} |",
            s.scene,
            s.kind,
            m[0],
            m[1],
            m[1] / m[0],
            m[2],
            m[3],
            m[3] / m[2],
            m[4],
            m[5],
            m[1] / m[3]
        );
    }
    println!("\ntotal run time: {:.1} s", start.elapsed().as_secs_f64());
}
