//! One peer library tracing one ray file, alone in its process: the other half of
//! `benches/peers/frontier.sh`, which runs this program and the `slabtree trace` command in turn,
//! one process at a time, so that no library finds its caches warmed or emptied by another.
//!
//! ```text
//! frontier trace LIB MESH RAYS [--any] [--passes N]
//! frontier camera SCENES_DIR SCENE SIZE OUT
//! frontier camera-any MESH SIZE OUT
//! frontier random MESH COUNT OUT
//! frontier shadow SCENE MESH CAMERA_RAYS OUT
//! ```
//!
//! `trace` builds LIB's BVH over MESH, traces every ray of RAYS once to warm up, then N more
//! times (default 7), and prints `best B Mrays/s, median M Mrays/s` and the number of hits (or
//! occluded rays with `--any`). Each pass starts from the raw ray records, so every library's ray
//! set-up is timed, and writes its answers into a vector made before the passes, as
//! `slabtree trace` does. LIB is one of:
//! * `embree`: Embree 3 (the system `libembree3`), default scene flags and build quality,
//!   `rtcIntersect1` / `rtcOccluded1` one ray at a time. Each run of 256 rays gets a coherent or
//!   an incoherent context as `RayCoherence::of_rays` judges the run (outside the timed passes),
//!   the hint slabtree's batches take themselves;
//! * `embree-robust`: the same with `RTC_SCENE_FLAG_ROBUST` (watertight triangles);
//! * `tinybvh`: tinybvh's `BVH8_CPU` from its binned `Build`, `Intersect` / `IsOccluded` one ray at
//!   a time (vendored header, built for this CPU by `build.rs`);
//! * `embree-hq`, `embree-hq-robust` and `tinybvh-hq`: the same at their high build quality
//!   (Embree's `RTC_BUILD_QUALITY_HIGH`, tinybvh's `BuildHQ`: spatial splits), for
//!   `slabtree trace --build-quality high`;
//! * `embree8`, `embree16`, `embree8-robust` and `embree16-robust`: Embree 3's ray packets,
//!   `rtcIntersect8/16` / `rtcOccluded8/16` with the coherent context, the packets filled from the
//!   raw records in each pass (against `slabtree trace`'s packets). With `--tiles`, a set of N × N
//!   rays (camera rays in scan-line order) goes into the packets in blocks of 4 × 2 or 4 × 4
//!   pixels, as Embree's tutorials fill them; else in the set's order.
//!
//! The line also gives the build's wall time.
//!
//! `camera` writes the camera rays of SCENE (`bunny`, `dragon` or `sponza`) at SIZE × SIZE pixels,
//! as the shared scenes' README defines its 256 × 256 `primary` rays: `frontier.sh` first checks
//! that SIZE 256 reproduces that file bit for bit. `camera-any` does the same for any mesh, with the
//! bunny's view (`w = (−0.5, 0.25, 1)`, `k = 1.25`, 40°) of its bounding box; `random` writes COUNT
//! rays as the README defines its `random` kind (an origin on the sphere of radius `D` about the
//! box's centre, towards a uniform point of the box), from this program's own generator.
//! `shadow` writes the shadow rays of CAMERA_RAYS' hits to SCENE's light, as the README defines
//! its `shadow` kind from the primary hits (here slabtree's hits, Möller–Trumbore; for the shared
//! 256 × 256 views they give the shared sets' occluded counts).

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use cgmath::Vector3;
use embree::{CommittedScene, Device, IntersectContext, RayHit, Scene, SceneFlags, sys};
use glam::DVec3;
use slabtree::TriMesh;

mod embree_geometry;
mod shadow_ray;

/// One ray record: origin, tmin, direction, tmax.
type RawRay = [f32; 8];
/// Rays judged together for Embree's coherence hint.
const HINT_RUN: usize = 256;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("trace") => trace(&args[1..]),
        Some("camera") => camera(&args[1..]),
        Some("camera-any") => camera_any(&args[1..]),
        Some("random") => random(&args[1..]),
        Some("shadow") => shadow(&args[1..]),
        _ => {
            Err("usage: frontier trace LIB MESH RAYS [--any] [--passes N] | frontier camera SCENES_DIR SCENE SIZE OUT \
                  | frontier camera-any MESH SIZE OUT | frontier random MESH COUNT OUT \
                  | frontier shadow SCENE MESH CAMERA_RAYS OUT"
                .to_string())
        }
    };
    if let Err(e) = result {
        eprintln!("frontier: {e}");
        std::process::exit(2);
    }
}

// ---------------------------------------------------------------------------------------------
// Tracing.

fn trace(args: &[String]) -> Result<(), String> {
    let [lib, mesh, rays, rest @ ..] = args else {
        return Err("trace needs LIB MESH RAYS".into());
    };
    let mut any = false;
    let mut tiles = false;
    let mut passes = 7;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--any" => any = true,
            "--tiles" => tiles = true,
            "--passes" => passes = it.next().and_then(|p| p.parse().ok()).ok_or("--passes needs a number")?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let mesh = slabtree::load_mesh(mesh).map_err(|e| e.to_string())?;
    let rays = read_rays(Path::new(rays))?;
    let built;
    // The bytes Embree's build allocated (its memory monitor), per triangle.
    let mut bytes = None;
    let (count, times) = match lib.as_str() {
        "embree" | "embree-robust" | "embree-hq" | "embree-hq-robust" | "embree8" | "embree8-robust" | "embree16"
        | "embree16-robust" => {
            let device = Device::new();
            let flags = if lib.ends_with("robust") { SceneFlags::ROBUST } else { SceneFlags::NONE };
            let quality = if lib.contains("-hq") { sys::RTCBuildQuality::HIGH } else { sys::RTCBuildQuality::MEDIUM };
            let mut scene = Scene::new(&device);
            // SAFETY: the handle is the live scene just created; the flags and the quality are
            // valid values of their enums.
            unsafe {
                sys::rtcSetSceneFlags(scene.handle(), flags);
                sys::rtcSetSceneBuildQuality(scene.handle(), quality);
            }
            scene.attach_geometry(embree_geometry::triangle_geometry(&device, &mesh));
            // SAFETY: rtcGetSceneDevice returns the device with one more reference, released
            // here; the callback is a plain function that only touches an atomic.
            unsafe {
                let dev = sys::rtcGetSceneDevice(scene.handle());
                sys::rtcSetDeviceMemoryMonitorFunction(dev, Some(embree_monitor), std::ptr::null_mut());
                sys::rtcReleaseDevice(dev);
            }
            let start = Instant::now();
            let committed = scene.commit();
            built = start.elapsed();
            bytes = Some(EMBREE_BYTES.load(Ordering::Relaxed));
            let width = if lib.starts_with("embree16") {
                16
            } else if lib.starts_with("embree8") {
                8
            } else {
                1
            };
            if width > 1 {
                let order = packet_order(rays.len(), width, tiles);
                if any {
                    let mut out = vec![false; rays.len()];
                    timed(passes, || embree_occluded_packets(&committed, &rays, &order, width, &mut out))
                } else {
                    let mut out = vec![(f32::INFINITY, u32::MAX); rays.len()];
                    timed(passes, || embree_intersect_packets(&committed, &rays, &order, width, &mut out))
                }
            } else if any {
                let coherent = judge_runs(&rays);
                let mut out = vec![false; rays.len()];
                timed(passes, || embree_occluded(&committed, &rays, &coherent, &mut out))
            } else {
                let coherent = judge_runs(&rays);
                let mut out = vec![(f32::INFINITY, u32::MAX); rays.len()];
                timed(passes, || embree_intersect(&committed, &rays, &coherent, &mut out))
            }
        }
        "tinybvh" | "tinybvh-hq" => {
            let start = Instant::now();
            let peer = TinyBvh::build(&mesh, lib == "tinybvh-hq");
            built = start.elapsed();
            if any {
                let mut out = vec![0u8; rays.len()];
                timed(passes, || peer.occluded(&rays, &mut out))
            } else {
                let mut out = vec![[0f32; 4]; rays.len()];
                timed(passes, || peer.intersect(&rays, &mut out))
            }
        }
        other => {
            return Err(format!(
                "unknown library {other} (embree, embree-robust, embree-hq, embree-hq-robust, tinybvh or tinybvh-hq)"
            ));
        }
    };
    let mrays = |d: Duration| rays.len() as f64 / d.as_secs_f64() / 1e6;
    println!(
        "{lib}: best {:.2} Mrays/s, median {:.2} Mrays/s ({passes} passes after a warm-up); {count} of {} rays {}; build {:.1} ms",
        mrays(times[0]),
        mrays(times[times.len() / 2]),
        rays.len(),
        if any { "occluded" } else { "hit" },
        built.as_secs_f64() * 1e3
    );
    if let Some(b) = bytes {
        println!("{lib}: {:.1} bytes per triangle", b as f64 / mesh.len().max(1) as f64);
    }
    Ok(())
}

/// Net bytes Embree has allocated, from its memory monitor callback.
static EMBREE_BYTES: AtomicI64 = AtomicI64::new(0);

unsafe extern "C" fn embree_monitor(_user: *mut std::os::raw::c_void, bytes: sys::ssize_t, _post: bool) -> bool {
    EMBREE_BYTES.fetch_add(bytes as i64, Ordering::Relaxed);
    true
}

/// Runs `pass` once to warm up, then `passes` timed times; the warm-up's count and the sorted
/// times.
fn timed(passes: usize, mut pass: impl FnMut() -> usize) -> (usize, Vec<Duration>) {
    let count = pass();
    let mut times: Vec<Duration> = (0..passes.max(1))
        .map(|_| {
            let start = Instant::now();
            black_box(pass());
            start.elapsed()
        })
        .collect();
    times.sort();
    (count, times)
}

fn read_rays(path: &Path) -> Result<Vec<RawRay>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() % 32 != 0 {
        return Err(format!("{}: not a whole number of 32-byte rays", path.display()));
    }
    Ok(bytes
        .chunks_exact(32)
        .map(|r| std::array::from_fn(|i| f32::from_le_bytes(r[4 * i..4 * i + 4].try_into().expect("4 bytes"))))
        .collect())
}

/// Each run of [`HINT_RUN`] rays judged coherent or not, as slabtree's batches judge them.
fn judge_runs(rays: &[RawRay]) -> Vec<bool> {
    rays.chunks(HINT_RUN)
        .map(|run| {
            let run: Vec<slabtree::Ray> = run
                .iter()
                .map(|r| {
                    slabtree::Ray::new(glam::Vec3A::new(r[0], r[1], r[2]), glam::Vec3A::new(r[4], r[5], r[6]))
                        .with_range(r[3], r[7])
                })
                .collect();
            slabtree::RayCoherence::of_rays(&run) == slabtree::RayCoherence::Coherent
        })
        .collect()
}

fn embree_ray(r: &RawRay) -> embree::Ray {
    embree::Ray::segment(Vector3::new(r[0], r[1], r[2]), Vector3::new(r[4], r[5], r[6]), r[3], r[7])
}

fn context(coherent: bool) -> IntersectContext {
    if coherent { IntersectContext::coherent() } else { IntersectContext::incoherent() }
}

fn embree_intersect(scene: &CommittedScene, rays: &[RawRay], coherent: &[bool], out: &mut [(f32, u32)]) -> usize {
    let mut hits = 0;
    for ((run, out), &c) in rays.chunks(HINT_RUN).zip(out.chunks_mut(HINT_RUN)).zip(coherent) {
        let mut ctx = context(c);
        for (r, o) in run.iter().zip(out) {
            let mut rh = RayHit::new(embree_ray(r));
            scene.intersect(&mut ctx, &mut rh);
            let hit = rh.hit.hit();
            *o = if hit { (rh.ray.tfar, rh.hit.primID) } else { (f32::INFINITY, u32::MAX) };
            black_box((rh.hit.u, rh.hit.v));
            hits += usize::from(hit);
        }
    }
    hits
}

fn embree_occluded(scene: &CommittedScene, rays: &[RawRay], coherent: &[bool], out: &mut [bool]) -> usize {
    let mut occluded = 0;
    for ((run, out), &c) in rays.chunks(HINT_RUN).zip(out.chunks_mut(HINT_RUN)).zip(coherent) {
        let mut ctx = context(c);
        for (r, o) in run.iter().zip(out) {
            let mut ray = embree_ray(r);
            scene.occluded(&mut ctx, &mut ray);
            // rtcOccluded1 sets tfar to -inf on a hit.
            *o = ray.tfar == f32::NEG_INFINITY;
            occluded += usize::from(*o);
        }
    }
    occluded
}

/// The order in which the rays are put into Embree's packets of `width` (8 or 16): with `tiles`
/// and a square image whose side is a multiple of 4, blocks of 4 × 2 or 4 × 4 pixels, as
/// Embree's own tutorials fill their packets; else the rays in their order.
fn packet_order(n: usize, width: usize, tiles: bool) -> Vec<usize> {
    let side = n.isqrt();
    if !tiles || side * side != n || !side.is_multiple_of(4) {
        return (0..n).collect();
    }
    let rows = width / 4;
    let mut order = Vec::with_capacity(n);
    for y0 in (0..side).step_by(rows) {
        for x0 in (0..side).step_by(4) {
            for y in y0..y0 + rows {
                order.extend((x0..x0 + 4).map(|x| y * side + x));
            }
        }
    }
    order
}

/// Embree's packet types of 8 and 16 rays, filled from the raw rays and read back, one pass over
/// the rays in `order`, `width` at a time, through `rtcIntersectN` or `rtcOccludedN` with the
/// coherent context.
macro_rules! embree_packets {
    (
        $fill:ident,
        $intersect:ident,
        $occluded:ident,
        $rayhit:ty,
        $n:literal,
        $rtc_intersect:ident,
        $rtc_occluded:ident
    ) => {
        /// The rays `chunk` names as one packet, and its valid lanes.
        fn $fill(rays: &[RawRay], chunk: &[usize]) -> ($rayhit, [i32; $n]) {
            // SAFETY: plain data (floats and integers) for which zero bytes are valid.
            let mut rh: $rayhit = unsafe { std::mem::zeroed() };
            let mut valid = [0i32; $n];
            for (l, &i) in chunk.iter().enumerate() {
                let r = &rays[i];
                (rh.ray.org_x[l], rh.ray.org_y[l], rh.ray.org_z[l], rh.ray.tnear[l]) = (r[0], r[1], r[2], r[3]);
                (rh.ray.dir_x[l], rh.ray.dir_y[l], rh.ray.dir_z[l], rh.ray.tfar[l]) = (r[4], r[5], r[6], r[7]);
                rh.ray.mask[l] = u32::MAX;
                rh.hit.geomID[l] = u32::MAX;
                valid[l] = -1;
            }
            (rh, valid)
        }

        fn $intersect(scene: &CommittedScene, rays: &[RawRay], order: &[usize], out: &mut [(f32, u32)]) -> usize {
            let mut ctx = IntersectContext::coherent();
            let mut hits = 0;
            for chunk in order.chunks($n) {
                let (mut rh, valid) = $fill(rays, chunk);
                // SAFETY: a committed scene's handle, a valid context; the packet is aligned by
                // its type.
                unsafe { sys::$rtc_intersect(valid.as_ptr(), scene.handle(), &mut ctx, &mut rh) };
                for (l, &i) in chunk.iter().enumerate() {
                    let hit = rh.hit.geomID[l] != u32::MAX;
                    out[i] = if hit { (rh.ray.tfar[l], rh.hit.primID[l]) } else { (f32::INFINITY, u32::MAX) };
                    black_box((rh.hit.u[l], rh.hit.v[l]));
                    hits += usize::from(hit);
                }
            }
            hits
        }

        fn $occluded(scene: &CommittedScene, rays: &[RawRay], order: &[usize], out: &mut [bool]) -> usize {
            let mut ctx = IntersectContext::coherent();
            let mut occluded = 0;
            for chunk in order.chunks($n) {
                let (mut rh, valid) = $fill(rays, chunk);
                // SAFETY: as above.
                unsafe { sys::$rtc_occluded(valid.as_ptr(), scene.handle(), &mut ctx, &mut rh.ray) };
                for (l, &i) in chunk.iter().enumerate() {
                    // rtcOccludedN sets tfar to -inf on a hit.
                    out[i] = rh.ray.tfar[l] == f32::NEG_INFINITY;
                    occluded += usize::from(out[i]);
                }
            }
            occluded
        }
    };
}

embree_packets!(packet8, embree_intersect8, embree_occluded8, sys::RTCRayHit8, 8, rtcIntersect8, rtcOccluded8);
embree_packets!(packet16, embree_intersect16, embree_occluded16, sys::RTCRayHit16, 16, rtcIntersect16, rtcOccluded16);

/// One pass of Embree's packets of `width` rays (8 or 16), closest hits.
fn embree_intersect_packets(
    scene: &CommittedScene,
    rays: &[RawRay],
    order: &[usize],
    width: usize,
    out: &mut [(f32, u32)],
) -> usize {
    if width == 16 { embree_intersect16(scene, rays, order, out) } else { embree_intersect8(scene, rays, order, out) }
}

/// One pass of Embree's packets of `width` rays (8 or 16), occlusion.
fn embree_occluded_packets(
    scene: &CommittedScene,
    rays: &[RawRay],
    order: &[usize],
    width: usize,
    out: &mut [bool],
) -> usize {
    if width == 16 { embree_occluded16(scene, rays, order, out) } else { embree_occluded8(scene, rays, order, out) }
}

unsafe extern "C" {
    fn tinybvh_build(xyz: *const f32, triangles: u32, hq: bool) -> *mut std::ffi::c_void;
    fn tinybvh_free(peer: *mut std::ffi::c_void);
    fn tinybvh_intersect(peer: *const std::ffi::c_void, rays: *const f32, n: usize, out: *mut f32) -> usize;
    fn tinybvh_occluded(peer: *const std::ffi::c_void, rays: *const f32, n: usize, out: *mut u8) -> usize;
}

/// A tinybvh `BVH8_CPU` and the vertices it was built from (`src/tinybvh_shim.cpp`).
struct TinyBvh(*mut std::ffi::c_void);

impl TinyBvh {
    /// Its binned `Build`, or with `hq` its `BuildHQ` (spatial splits).
    fn build(mesh: &TriMesh, hq: bool) -> TinyBvh {
        let p = mesh.positions();
        let xyz: Vec<f32> =
            mesh.triangles().iter().flat_map(|t| t.iter().flat_map(|&i| p[i as usize].to_array())).collect();
        let triangles = u32::try_from(mesh.triangles().len()).expect("fewer than 2^32 triangles");
        // SAFETY: `xyz` holds 9 floats per triangle; the shim copies them before returning.
        TinyBvh(unsafe { tinybvh_build(xyz.as_ptr(), triangles, hq) })
    }

    fn intersect(&self, rays: &[RawRay], out: &mut [[f32; 4]]) -> usize {
        assert_eq!(rays.len(), out.len());
        // SAFETY: the peer is live; `rays` holds 8 floats per ray and `out` 4 per ray.
        unsafe { tinybvh_intersect(self.0, rays.as_ptr().cast(), rays.len(), out.as_mut_ptr().cast()) }
    }

    fn occluded(&self, rays: &[RawRay], out: &mut [u8]) -> usize {
        assert_eq!(rays.len(), out.len());
        // SAFETY: the peer is live; `rays` holds 8 floats per ray and `out` one byte per ray.
        unsafe { tinybvh_occluded(self.0, rays.as_ptr().cast(), rays.len(), out.as_mut_ptr()) }
    }
}

impl Drop for TinyBvh {
    fn drop(&mut self) {
        // SAFETY: built by `tinybvh_build` and freed once.
        unsafe { tinybvh_free(self.0) }
    }
}

// ---------------------------------------------------------------------------------------------
// Camera rays.

/// A scene's pinhole camera as the shared scenes' README defines it.
struct Camera {
    eye: DVec3,
    look_at: DVec3,
    up: DVec3,
    vfov_degrees: f64,
}

/// The bounding box of the mesh's f32 vertex positions (all of them, referenced or not), in f64.
fn bounds(mesh: &TriMesh) -> (DVec3, DVec3) {
    mesh.positions().iter().fold((DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)), |(lo, hi), p| {
        let p = p.as_dvec3();
        (lo.min(p), hi.max(p))
    })
}

/// A camera looking at the centre `c` of the mesh's box from `c + k·D·normalize(w)`, 40°.
fn object_camera(mesh: &TriMesh, w: DVec3, k: f64) -> Camera {
    let (lo, hi) = bounds(mesh);
    let c = (lo + hi) / 2.0;
    let d = (hi - lo).length();
    Camera { eye: c + k * d * w.normalize(), look_at: c, up: DVec3::Y, vfov_degrees: 40.0 }
}

/// The README's cameras: for the single objects the look-at point is the bounding box's centre
/// `c` and the eye `c + k·D·normalize(w)`; Sponza's camera is given as numbers.
fn scene_camera(scene: &str, mesh: &TriMesh) -> Result<Camera, String> {
    let object = |w: DVec3, k: f64| object_camera(mesh, w, k);
    match scene {
        "bunny" => Ok(object(DVec3::new(-0.5, 0.25, 1.0), 1.25)),
        "dragon" => Ok(object(DVec3::new(0.3, 0.25, 1.0), 1.1)),
        "sponza" => Ok(Camera {
            eye: DVec3::new(110.0, 15.0, 0.0),
            look_at: DVec3::new(-120.0, 35.0, 0.0),
            up: DVec3::Y,
            vfov_degrees: 70.0,
        }),
        other => Err(format!("no camera for scene {other} (bunny, dragon or sponza)")),
    }
}

fn camera(args: &[String]) -> Result<(), String> {
    let [dir, scene, size, out] = args else {
        return Err("camera needs SCENES_DIR SCENE SIZE OUT".into());
    };
    let file = match scene.as_str() {
        "dragon" => "dragon.ply",
        s => &format!("{s}.obj"),
    };
    let mesh = slabtree::load_mesh(Path::new(dir).join(file)).map_err(|e| e.to_string())?;
    let size: usize = size.parse().map_err(|_| "SIZE must be a number")?;
    write_camera(&scene_camera(scene, &mesh)?, size, out)
}

fn camera_any(args: &[String]) -> Result<(), String> {
    let [mesh, size, out] = args else {
        return Err("camera-any needs MESH SIZE OUT".into());
    };
    let mesh = slabtree::load_mesh(mesh).map_err(|e| e.to_string())?;
    let size: usize = size.parse().map_err(|_| "SIZE must be a number")?;
    write_camera(&object_camera(&mesh, DVec3::new(-0.5, 0.25, 1.0), 1.25), size, out)
}

/// The camera's SIZE × SIZE rays in scan-line order, computed in f64 and stored as f32.
fn write_camera(cam: &Camera, size: usize, out: &str) -> Result<(), String> {
    let f = (cam.look_at - cam.eye).normalize();
    let r = f.cross(cam.up).normalize();
    let u = r.cross(f);
    let tan = (cam.vfov_degrees.to_radians() / 2.0).tan();
    let eye = cam.eye.as_vec3();
    let mut bytes = Vec::with_capacity(size * size * 32);
    for j in 0..size {
        for i in 0..size {
            let sx = (2.0 * (i as f64 + 0.5) / size as f64 - 1.0) * tan;
            let sy = (1.0 - 2.0 * (j as f64 + 0.5) / size as f64) * tan;
            let dir = (f + sx * r + sy * u).normalize().as_vec3();
            for x in [eye.x, eye.y, eye.z, 0.0, dir.x, dir.y, dir.z, f32::INFINITY] {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    std::fs::write(out, bytes).map_err(|e| format!("{out}: {e}"))
}

fn random(args: &[String]) -> Result<(), String> {
    let [mesh, count, out] = args else {
        return Err("random needs MESH COUNT OUT".into());
    };
    let mesh = slabtree::load_mesh(mesh).map_err(|e| e.to_string())?;
    let count: usize = count.parse().map_err(|_| "COUNT must be a number")?;
    let (lo, hi) = bounds(&mesh);
    let (c, d) = ((lo + hi) / 2.0, (hi - lo).length());
    // SplitMix64: a fixed sequence, so that every process and every run traces the same rays.
    let mut state = 0x5eed_u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut bytes = Vec::with_capacity(count * 32);
    for _ in 0..count {
        // A uniform direction (Marsaglia's rejection in the cube), then a uniform point of the box.
        let n = loop {
            let v = DVec3::new(2.0 * next() - 1.0, 2.0 * next() - 1.0, 2.0 * next() - 1.0);
            let l = v.length_squared();
            if l > 1e-12 && l <= 1.0 {
                break v / l.sqrt();
            }
        };
        let o = c + d * n;
        let p = lo + DVec3::new(next(), next(), next()) * (hi - lo);
        let (o, dir) = (o.as_vec3(), (p - o).normalize().as_vec3());
        for x in [o.x, o.y, o.z, 0.0, dir.x, dir.y, dir.z, f32::INFINITY] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(out, bytes).map_err(|e| format!("{out}: {e}"))
}

/// Shadow rays from the hits of CAMERA_RAYS (slabtree's closest hits, Möller–Trumbore) to SCENE's
/// light, as the shared scenes' README defines its `shadow` set from the primary hits: the hit
/// point moved `1e-4·D` along the normal that faces the ray, stored as f32, towards the light,
/// `tmax` the distance to it; misses make no ray. The light is the README's: Sponza's
/// (20, 300, 10), and for any other mesh `c + D·(−0.3, 1.0, 0.4)` of its box.
fn shadow(args: &[String]) -> Result<(), String> {
    let [scene, mesh, camera, out] = args else {
        return Err("shadow needs SCENE MESH CAMERA_RAYS OUT".into());
    };
    let mesh = slabtree::load_mesh(mesh).map_err(|e| e.to_string())?;
    let rays = read_rays(Path::new(camera))?;
    let (lo, hi) = bounds(&mesh);
    let (c, d) = ((lo + hi) / 2.0, (hi - lo).length());
    let light = if scene == "sponza" { DVec3::new(20.0, 300.0, 10.0) } else { c + d * DVec3::new(-0.3, 1.0, 0.4) };
    let bvh = slabtree::MeshBvh::build(&mesh, &slabtree::BuildOptions::default());
    let mut bytes = Vec::with_capacity(rays.len() * 32);
    for r in &rays {
        let dir = glam::Vec3::new(r[4], r[5], r[6]);
        let ray = slabtree::Ray::new(glam::Vec3::new(r[0], r[1], r[2]), dir).with_range(r[3], r[7]);
        let Some(hit) = bvh.intersect(&ray).map_err(|e| e.to_string())? else { continue };
        let shadow = shadow_ray::shadow_ray(&mesh, &hit, dir.as_dvec3(), d, light);
        let (o, dir) = (shadow.origin(), shadow.dir());
        for x in [o.x, o.y, o.z, shadow.tmin, dir.x, dir.y, dir.z, shadow.tmax] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(out, bytes).map_err(|e| format!("{out}: {e}"))
}
