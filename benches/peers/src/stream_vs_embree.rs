//! Coherent rays: slabtree's ray streams (`MeshBvh::intersect_batch` / `occluded_batch` with `packets`)
//! against slabtree's single rays and against Embree 3's single rays (`rtcIntersect1`), its
//! 8-ray packets (`rtcIntersect8` / `rtcOccluded8` on eight consecutive rays) and its ray-stream
//! API (`rtcIntersect1M` / `rtcOccluded1M` on the whole set), all with the coherent context, on
//! the shared scenes' primary, shadow and random rays, one thread, in one run.
//!
//! ```text
//! cargo run --release --manifest-path benches/peers/Cargo.toml --bin stream_vs_embree [SCENES] [SCENE...]
//! ```
//!
//! `SCENES` defaults to `$SLABTREE_SCENES`, else `../shared/scenes` beside the repository. Each
//! set is traced by the five in turn, `STREAM_PASSES` times (default 7) after a warm-up pass,
//! interleaved; the table gives the best and the median Mrays/s. slabtree's triangle test is
//! Möller–Trumbore and Embree's scene has its default (fast) flags. The stream's answers are
//! checked against slabtree's single rays (equal, bit for bit) and Embree's packets and stream
//! against Embree's single rays (same hit or miss) before anything is timed.
//!
//! `STREAM_RESOLUTION=N` traces the same views at N × N pixels instead of the shared 256 × 256:
//! the camera rays and the shadow rays from their hits are generated as `scenes/README.md`
//! defines the shared sets (at 256 they are checked against the shared camera rays, and give the
//! shared shadow sets' occluded counts); random rays stay the shared files'.
//!
//! Profiling: `STREAM_PROFILE=SCENE:KIND:MODE[:PASSES]` (KIND `primary`, `shadow` or `random`;
//! MODE `single` or `stream`, or Embree's `embree1`, `embree8` or `embree1m`) traces that one
//! ray set through one of them, PASSES times (default 1), and prints the best pass's rate: run it under `valgrind --tool=callgrind` with 1
//! and 3 passes and divide the difference by twice the ray count for instructions per ray, or
//! alternate two builds' runs to compare them in time. Build the profiled binary with
//! `RUSTFLAGS="-C target-cpu=x86-64-v3"` in its own target directory.

mod embree_geometry;
mod shadow_ray;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cgmath::Vector3;
use embree::{Device, IntersectContext, Ray, RayHit, Scene, sys};
use glam::Vec3;
use slabtree::{BatchOptions, BuildOptions, MeshBvh, Threads, TriMesh};

/// A ray set: the rays, and whether they are occlusion (any-hit) queries.
struct RaySet {
    rays: Vec<slabtree::Ray>,
    any: bool,
}

fn load_rays(dir: &Path, scene: &str, kind: &'static str) -> Result<RaySet, String> {
    let path = dir.join("rays").join(format!("{scene}.{kind}.rays"));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() % 32 != 0 {
        return Err(format!("{}: not a whole number of 32-byte rays", path.display()));
    }
    let f = |r: &[u8], i: usize| f32::from_le_bytes([r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]]);
    let rays = bytes
        .chunks_exact(32)
        .map(|r| {
            slabtree::Ray::new(Vec3::new(f(r, 0), f(r, 1), f(r, 2)), Vec3::new(f(r, 4), f(r, 5), f(r, 6)))
                .with_range(f(r, 3), f(r, 7))
        })
        .collect();
    Ok(RaySet { rays, any: kind == "shadow" })
}

/// A shared scene's camera and light, from the table of `scenes/README.md` ("primary" and
/// "shadow"): eye, look-at, vertical field of view in degrees, light, and the scene's size `D`.
struct View {
    eye: [f64; 3],
    at: [f64; 3],
    vfov: f64,
    light: [f64; 3],
    size: f64,
}

fn view(scene: &str) -> Option<View> {
    Some(match scene {
        "bunny" => View {
            eye: [-0.153361, 0.178414, 0.271504],
            at: [-0.0168405, 0.110154, -0.001537],
            vfov: 40.0,
            light: [-0.0919145, 0.360401, 0.0985617],
            size: 0.250247,
        },
        "dragon" => View {
            eye: [0.0761658, 0.193322, 0.268879],
            at: [-0.0058789, 0.124951, -0.0046034],
            vfov: 40.0,
            light: [-0.0859505, 0.391857, 0.102159],
            size: 0.266905,
        },
        "sponza" => View {
            eye: [110.0, 15.0, 0.0],
            at: [-120.0, 35.0, 0.0],
            vfov: 70.0,
            light: [20.0, 300.0, 10.0],
            size: 463.698,
        },
        _ => return None,
    })
}

/// The scene's primary rays at `res` × `res` pixels, as `scenes/README.md` defines the 256 × 256
/// set (in f64, rounded once): the same view with finer pixels.
fn camera_rays(v: &View, res: usize) -> Vec<slabtree::Ray> {
    use glam::DVec3;
    let (eye, at) = (DVec3::from(v.eye), DVec3::from(v.at));
    let f = (at - eye).normalize();
    let r = f.cross(DVec3::Y).normalize();
    let u = r.cross(f);
    let t = (v.vfov.to_radians() / 2.0).tan();
    let n = res as f64;
    (0..res * res)
        .map(|k| {
            let (i, j) = ((k % res) as f64, (k / res) as f64);
            let (sx, sy) = ((2.0 * (i + 0.5) / n - 1.0) * t, (1.0 - 2.0 * (j + 0.5) / n) * t);
            let d = (f + sx * r + sy * u).normalize();
            slabtree::Ray::new(eye.as_vec3(), d.as_vec3())
        })
        .collect()
}

/// Shadow rays from `primary`'s hits (slabtree's single rays) to the light, as
/// `scenes/README.md` defines the shared set: from the hit point moved `1e-4·D` along the normal
/// that faces the ray, to the light, any hit.
fn shadow_rays(v: &View, mesh: &TriMesh, bvh: &MeshBvh, primary: &[slabtree::Ray]) -> Vec<slabtree::Ray> {
    let light = glam::DVec3::from(v.light);
    primary
        .iter()
        .filter_map(|ray| {
            let hit = bvh.intersect(ray).ok()??;
            Some(shadow_ray::shadow_ray(mesh, &hit, ray.dir().as_dvec3(), v.size, light))
        })
        .collect()
}

/// The ray set `kind` of `scene`: the shared file, or with `res` the primary and shadow rays of
/// the same view at `res` × `res` pixels (random rays are the shared file's either way). At 256
/// the generated camera rays are checked against the shared file's.
fn ray_set(
    dir: &Path,
    scene: &str,
    kind: &'static str,
    res: Option<usize>,
    mesh: &TriMesh,
    bvh: &MeshBvh,
) -> Result<RaySet, String> {
    let Some(res) = res.filter(|_| kind != "random") else { return load_rays(dir, scene, kind) };
    let v = view(scene).ok_or_else(|| format!("{scene}: no camera to generate rays at {res} × {res} pixels"))?;
    let primary = camera_rays(&v, res);
    if res == 256 {
        let shared = load_rays(dir, scene, "primary")?;
        let off =
            shared.rays.iter().zip(&primary).map(|(a, b)| (a.dir() - b.dir()).abs().max_element()).fold(0.0, f32::max);
        if shared.rays.len() != primary.len() || off > 1e-5 {
            return Err(format!("{scene}: the generated camera rays differ from the shared set by {off}"));
        }
    }
    Ok(match kind {
        "primary" => RaySet { rays: primary, any: false },
        _ => RaySet { rays: shadow_rays(&v, mesh, bvh, &primary), any: true },
    })
}

/// The mesh of scene `scene` (`SCENE.obj` or `SCENE.ply` in `dir`).
fn load_scene(dir: &Path, scene: &str) -> Result<TriMesh, String> {
    let file = ["obj", "ply"].iter().map(|e| dir.join(format!("{scene}.{e}"))).find(|p| p.exists());
    let file = file.ok_or_else(|| format!("{scene}: no {scene}.obj or {scene}.ply in {}", dir.display()))?;
    slabtree::io::load_mesh(&file).map_err(|e| format!("{}: {e}", file.display()))
}

/// An Embree scene (default flags) with the mesh as its one triangle geometry, committed.
fn embree_scene<'d>(device: &'d Device, mesh: &TriMesh) -> Scene<'d> {
    let geometry = embree_geometry::triangle_geometry(device, mesh);
    let mut scene = Scene::new(device);
    scene.attach_geometry(geometry);
    scene
}

/// Embree's answer per ray: the hit distance and triangle, or occluded (`t` 0, triangle 0).
type Answer = Option<(f32, u32)>;

/// Eight consecutive rays as Embree's `RTCRayHit8` (lanes past the end are invalid).
fn ray8(rays: &[slabtree::Ray]) -> (sys::RTCRayHit8, [i32; 8]) {
    // SAFETY: RTCRayHit8 is plain data (floats and integers) for which zero bytes are valid.
    let mut rh: sys::RTCRayHit8 = unsafe { std::mem::zeroed() };
    let mut valid = [0i32; 8];
    for (l, r) in rays.iter().enumerate() {
        let (o, d) = (r.origin(), r.dir());
        (rh.ray.org_x[l], rh.ray.org_y[l], rh.ray.org_z[l]) = (o.x, o.y, o.z);
        (rh.ray.dir_x[l], rh.ray.dir_y[l], rh.ray.dir_z[l]) = (d.x, d.y, d.z);
        rh.ray.tnear[l] = r.tmin;
        rh.ray.tfar[l] = r.tmax;
        rh.ray.mask[l] = u32::MAX;
        rh.hit.geomID[l] = u32::MAX;
        valid[l] = -1;
    }
    (rh, valid)
}

/// Embree 3 through `rtcIntersect1` / `rtcOccluded1`.
fn embree1(scene: &Scene, rays: &[slabtree::Ray], any: bool, out: &mut Vec<Answer>) {
    out.clear();
    let mut ctx = IntersectContext::coherent();
    for r in rays {
        let (o, d) = (r.origin(), r.dir());
        let ray = Ray::segment(Vector3::new(o.x, o.y, o.z), Vector3::new(d.x, d.y, d.z), r.tmin, r.tmax);
        if any {
            let mut ray = ray;
            // SAFETY: a committed scene's handle, a valid context and ray.
            unsafe { sys::rtcOccluded1(scene.handle(), &mut ctx, &mut ray) };
            out.push((ray.tfar == f32::NEG_INFINITY).then_some((0.0, 0)));
        } else {
            let mut rh = RayHit::new(ray);
            // SAFETY: as above.
            unsafe { sys::rtcIntersect1(scene.handle(), &mut ctx, &mut rh) };
            out.push((rh.hit.geomID != u32::MAX).then_some((rh.ray.tfar, rh.hit.primID)));
        }
    }
}

/// Embree 3 through `rtcIntersect8` / `rtcOccluded8`, eight consecutive rays at a time.
fn embree8(scene: &Scene, rays: &[slabtree::Ray], any: bool, out: &mut Vec<Answer>) {
    out.clear();
    let mut ctx = IntersectContext::coherent();
    for chunk in rays.chunks(8) {
        let (mut rh, valid) = ray8(chunk);
        if any {
            // SAFETY: a committed scene's handle, a valid context; the packet is 32-byte aligned
            // by its type.
            unsafe { sys::rtcOccluded8(valid.as_ptr(), scene.handle(), &mut ctx, &mut rh.ray) };
            out.extend((0..chunk.len()).map(|l| (rh.ray.tfar[l] == f32::NEG_INFINITY).then_some((0.0, 0))));
        } else {
            // SAFETY: as above.
            unsafe { sys::rtcIntersect8(valid.as_ptr(), scene.handle(), &mut ctx, &mut rh) };
            out.extend(
                (0..chunk.len()).map(|l| (rh.hit.geomID[l] != u32::MAX).then_some((rh.ray.tfar[l], rh.hit.primID[l]))),
            );
        }
    }
}

/// Embree 3 through `rtcIntersect1M` / `rtcOccluded1M`: the whole set as one stream of rays, in
/// the set's order, coherent context (Embree's own ray-stream API; `rays_aos` is reused across
/// passes, its rays rewritten each pass as the call overwrites them).
fn embree_stream(
    scene: &Scene,
    rays: &[slabtree::Ray],
    any: bool,
    rays_aos: &mut Vec<sys::RTCRayHit>,
    out: &mut Vec<Answer>,
) {
    out.clear();
    let mut ctx = IntersectContext::coherent();
    rays_aos.clear();
    rays_aos.extend(rays.iter().map(|r| {
        let (o, d) = (r.origin(), r.dir());
        RayHit::new(Ray::segment(Vector3::new(o.x, o.y, o.z), Vector3::new(d.x, d.y, d.z), r.tmin, r.tmax))
    }));
    let n = u32::try_from(rays.len()).expect("a ray set fits in u32");
    if any {
        // SAFETY: a committed scene's handle, a valid context, and `n` rays whose ray part
        // starts each `RTCRayHit` record, at the record's stride.
        unsafe {
            sys::rtcOccluded1M(
                scene.handle(),
                &mut ctx,
                rays_aos.as_mut_ptr().cast::<sys::RTCRay>(),
                n,
                size_of::<sys::RTCRayHit>(),
            )
        };
        out.extend(rays_aos.iter().map(|rh| (rh.ray.tfar == f32::NEG_INFINITY).then_some((0.0, 0))));
    } else {
        // SAFETY: as above, with whole `RTCRayHit` records.
        unsafe { sys::rtcIntersect1M(scene.handle(), &mut ctx, rays_aos.as_mut_ptr(), n, size_of::<sys::RTCRayHit>()) };
        out.extend(rays_aos.iter().map(|rh| (rh.hit.geomID != u32::MAX).then_some((rh.ray.tfar, rh.hit.primID))));
    }
}

/// `STREAM_RESOLUTION`, the image size of generated camera and shadow rays (see [`ray_set`]).
fn resolution() -> Option<usize> {
    std::env::var("STREAM_RESOLUTION").ok().and_then(|v| v.parse().ok())
}

fn main() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let dir = if args.first().is_some_and(|a| Path::new(a).is_dir()) {
        PathBuf::from(args.remove(0))
    } else {
        std::env::var_os("SLABTREE_SCENES")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/scenes"))
    };
    let scenes: Vec<String> =
        if args.is_empty() { ["bunny", "dragon", "sponza"].map(String::from).to_vec() } else { args };
    if let Ok(spec) = std::env::var("STREAM_PROFILE") {
        return profile(&dir, &spec);
    }
    let passes: usize = std::env::var("STREAM_PASSES").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let resolution = resolution();
    let device = Device::new();
    println!(
        "### Ray streams against single rays and Embree 3's 8-ray packets and ray streams ({}, 1 thread, best / median Mrays/s of {passes} interleaved passes)",
        resolution.map_or("the shared ray sets".to_string(), |n| format!("camera and shadow rays at {n} × {n} pixels"))
    );
    println!();
    println!(
        "| set | slabtree single | slabtree stream | stream / single | Embree rtcIntersect1 | Embree rtcIntersect8 | stream / Embree8 | Embree rtcIntersect1M | Embree 1M / Embree1 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for scene in &scenes {
        let mesh = load_scene(&dir, scene)?;
        let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
        let escene = embree_scene(&device, &mesh);
        // Committed once; the queries go through the scene's handle.
        let _committed = escene.commit();
        for kind in ["primary", "shadow", "random"] {
            let set = ray_set(&dir, scene, kind, resolution, &mesh, &bvh)?;
            let rays = &set.rays;
            let (mut hits, mut occ, mut e1, mut e8) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut em, mut aos) = (Vec::new(), Vec::new());
            // The stream against the single rays, and Embree's packets against its single rays.
            if set.any {
                bvh.occluded_batch(
                    rays,
                    &mut occ,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                )
                .map_err(|e| e.to_string())?;
                for (i, r) in rays.iter().enumerate() {
                    assert_eq!(occ[i], bvh.occluded(r).unwrap(), "{scene} {kind}: ray {i}");
                }
            } else {
                bvh.intersect_batch(
                    rays,
                    &mut hits,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                )
                .map_err(|e| e.to_string())?;
                for (i, r) in rays.iter().enumerate() {
                    assert_eq!(hits[i], bvh.intersect(r).unwrap(), "{scene} {kind}: ray {i}");
                }
            }
            embree1(&escene, rays, set.any, &mut e1);
            embree8(&escene, rays, set.any, &mut e8);
            embree_stream(&escene, rays, set.any, &mut aos, &mut em);
            for other in [&e8, &em] {
                let same = e1.iter().zip(other).filter(|(a, b)| a.is_some() == b.is_some()).count();
                assert!(
                    same as f64 >= 0.9999 * rays.len() as f64,
                    "{scene} {kind}: Embree's packets or stream disagree with its single rays"
                );
            }
            let (mut hits1, mut occ1) = (vec![None; rays.len()], vec![false; rays.len()]);
            let mut times = [const { Vec::<Duration>::new() }; 5];
            for pass in 0..=passes {
                let mut t = [Duration::ZERO; 5];
                // Single rays write their answers too, as the stream does.
                let start = Instant::now();
                if set.any {
                    for (o, r) in occ1.iter_mut().zip(rays) {
                        *o = bvh.occluded(r).unwrap();
                    }
                } else {
                    for (h, r) in hits1.iter_mut().zip(rays) {
                        *h = bvh.intersect(r).unwrap();
                    }
                }
                std::hint::black_box((&occ1, &hits1));
                t[0] = start.elapsed();
                let start = Instant::now();
                if set.any {
                    bvh.occluded_batch(
                        rays,
                        &mut occ,
                        BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                    )
                    .unwrap();
                } else {
                    bvh.intersect_batch(
                        rays,
                        &mut hits,
                        BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                    )
                    .unwrap();
                }
                std::hint::black_box((&occ, &hits));
                t[1] = start.elapsed();
                let start = Instant::now();
                embree1(&escene, rays, set.any, &mut e1);
                t[2] = start.elapsed();
                let start = Instant::now();
                embree8(&escene, rays, set.any, &mut e8);
                t[3] = start.elapsed();
                let start = Instant::now();
                embree_stream(&escene, rays, set.any, &mut aos, &mut em);
                t[4] = start.elapsed();
                if pass > 0 {
                    for k in 0..5 {
                        times[k].push(t[k]);
                    }
                }
            }
            let rate = |d: Duration| rays.len() as f64 / d.as_secs_f64() / 1e6;
            let cell = |v: &mut Vec<Duration>| {
                v.sort();
                let (best, median) = (v[0], v[v.len() / 2]);
                (rate(best), format!("{:.2} / {:.2}", rate(best), rate(median)))
            };
            let [mut a, mut b, mut c, mut d, mut e] = times;
            let (single, s_single) = cell(&mut a);
            let (stream, s_stream) = cell(&mut b);
            let (e1best, s_e1) = cell(&mut c);
            let (e8best, s_e8) = cell(&mut d);
            let (embest, s_em) = cell(&mut e);
            println!(
                "| {scene} {kind} | {s_single} | {s_stream} | {:.2} | {s_e1} | {s_e8} | {:.2} | {s_em} | {:.2} |",
                stream / single,
                stream / e8best,
                embest / e1best
            );
        }
    }
    Ok(())
}

/// `STREAM_PROFILE`: one ray set through slabtree's single rays or its stream, `passes` times
/// (see the module docs).
fn profile(dir: &Path, spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [scene, kind, mode, rest @ ..] = parts.as_slice() else {
        return Err(format!("STREAM_PROFILE={spec}: expected SCENE:KIND:MODE[:PASSES]"));
    };
    let passes: usize = rest.first().map_or(Ok(1), |p| p.parse()).map_err(|e| format!("passes: {e}"))?;
    let kind = ["primary", "shadow", "random"].into_iter().find(|k| k == kind).ok_or(format!("unknown kind {kind}"))?;
    let mesh = load_scene(dir, scene)?;
    let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let set = ray_set(dir, scene, kind, resolution(), &mesh, &bvh)?;
    let rays = &set.rays;
    let (mut hits, mut occ) = (vec![None; rays.len()], vec![false; rays.len()]);
    // Embree's scene only for Embree's modes, so that a profile of slabtree's holds none of it.
    let device = mode.starts_with("embree").then(Device::new);
    let escene = device.as_ref().map(|d| embree_scene(d, &mesh));
    let _committed = escene.as_ref().map(|s| s.commit());
    let (mut answers, mut aos) = (Vec::new(), Vec::new());
    let mut best = Duration::MAX;
    for _ in 0..passes {
        let start = Instant::now();
        match (*mode, set.any) {
            ("single", true) => occ.iter_mut().zip(rays).for_each(|(o, r)| *o = bvh.occluded(r).unwrap()),
            ("single", false) => hits.iter_mut().zip(rays).for_each(|(h, r)| *h = bvh.intersect(r).unwrap()),
            ("stream", true) => bvh
                .occluded_batch(
                    rays,
                    &mut occ,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                )
                .map(|_| ())
                .map_err(|e| e.to_string())?,
            ("stream", false) => bvh
                .intersect_batch(
                    rays,
                    &mut hits,
                    BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
                )
                .map(|_| ())
                .map_err(|e| e.to_string())?,
            ("embree1", any) => embree1(escene.as_ref().unwrap(), rays, any, &mut answers),
            ("embree8", any) => embree8(escene.as_ref().unwrap(), rays, any, &mut answers),
            ("embree1m", any) => embree_stream(escene.as_ref().unwrap(), rays, any, &mut aos, &mut answers),
            (other, _) => return Err(format!("unknown mode {other}")),
        }
        std::hint::black_box((&occ, &hits));
        best = best.min(start.elapsed());
    }
    let positive = match (mode.starts_with("embree"), set.any) {
        (true, _) => answers.iter().flatten().count(),
        (false, true) => occ.iter().filter(|&&o| o).count(),
        (false, false) => hits.iter().flatten().count(),
    };
    println!(
        "{scene} {kind} {mode}: {positive} positive, best {:.3} Mrays/s",
        rays.len() as f64 / best.as_secs_f64() / 1e6
    );
    Ok(())
}
