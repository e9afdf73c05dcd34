//! Coherent rays: slabtree's ray streams (`MeshBvh::intersect_stream` / `occluded_stream`)
//! against slabtree's single rays and against Embree 3's single rays (`rtcIntersect1`) and
//! 8-ray packets (`rtcIntersect8` / `rtcOccluded8` on eight consecutive rays, coherent context),
//! on the shared scenes' primary, shadow and random rays, one thread, in one run.
//!
//! ```text
//! cargo run --release --manifest-path benches/peers/Cargo.toml --bin stream_vs_embree [SCENES] [SCENE...]
//! ```
//!
//! `SCENES` defaults to `$SLABTREE_SCENES`, else `../shared/scenes` beside the repository. Each
//! set is traced by the four in turn, `STREAM_PASSES` times (default 7) after a warm-up pass,
//! interleaved; the table gives the best and the median Mrays/s. slabtree's triangle test is
//! Möller–Trumbore and Embree's scene has its default (fast) flags. The stream's answers are
//! checked against slabtree's single rays (equal, bit for bit) and Embree's packets against
//! Embree's single rays (same hit or miss) before anything is timed.
//!
//! Profiling: `STREAM_PROFILE=SCENE:KIND:MODE[:PASSES]` (KIND `primary`, `shadow` or `random`;
//! MODE `single` or `stream`) traces that one ray set through slabtree alone, PASSES times
//! (default 1), and prints the best pass's rate: run it under `valgrind --tool=callgrind` with 1
//! and 3 passes and divide the difference by twice the ray count for instructions per ray, or
//! alternate two builds' runs to compare them in time. Build the profiled binary with
//! `RUSTFLAGS="-C target-cpu=x86-64-v3"` in its own target directory.

mod embree_geometry;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cgmath::Vector3;
use embree::{Device, IntersectContext, Ray, RayHit, Scene, sys};
use glam::Vec3;
use slabtree::{BuildOptions, MeshBvh, TriMesh};

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
    let device = Device::new();
    println!(
        "### Ray streams against single rays and Embree 3's 8-ray packets (1 thread, best / median Mrays/s of {passes} interleaved passes)"
    );
    println!();
    println!(
        "| set | slabtree single | slabtree stream | stream / single | Embree rtcIntersect1 | Embree rtcIntersect8 | stream / Embree8 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for scene in &scenes {
        let mesh = load_scene(&dir, scene)?;
        let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
        let escene = embree_scene(&device, &mesh);
        // Committed once; the queries go through the scene's handle.
        let _committed = escene.commit();
        for kind in ["primary", "shadow", "random"] {
            let set = load_rays(&dir, scene, kind)?;
            let rays = &set.rays;
            let (mut hits, mut occ, mut e1, mut e8) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            // The stream against the single rays, and Embree's packets against its single rays.
            if set.any {
                bvh.occluded_stream(rays, &mut occ).map_err(|e| e.to_string())?;
                for (i, r) in rays.iter().enumerate() {
                    assert_eq!(occ[i], bvh.occluded(r).unwrap(), "{scene} {kind}: ray {i}");
                }
            } else {
                bvh.intersect_stream(rays, &mut hits).map_err(|e| e.to_string())?;
                for (i, r) in rays.iter().enumerate() {
                    assert_eq!(hits[i], bvh.intersect(r).unwrap(), "{scene} {kind}: ray {i}");
                }
            }
            embree1(&escene, rays, set.any, &mut e1);
            embree8(&escene, rays, set.any, &mut e8);
            let same = e1.iter().zip(&e8).filter(|(a, b)| a.is_some() == b.is_some()).count();
            assert!(
                same as f64 >= 0.9999 * rays.len() as f64,
                "{scene} {kind}: Embree's packets disagree with its single rays"
            );
            let (mut hits1, mut occ1) = (vec![None; rays.len()], vec![false; rays.len()]);
            let mut times = [const { Vec::<Duration>::new() }; 4];
            for pass in 0..=passes {
                let mut t = [Duration::ZERO; 4];
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
                    bvh.occluded_stream(rays, &mut occ).unwrap();
                } else {
                    bvh.intersect_stream(rays, &mut hits).unwrap();
                }
                std::hint::black_box((&occ, &hits));
                t[1] = start.elapsed();
                let start = Instant::now();
                embree1(&escene, rays, set.any, &mut e1);
                t[2] = start.elapsed();
                let start = Instant::now();
                embree8(&escene, rays, set.any, &mut e8);
                t[3] = start.elapsed();
                if pass > 0 {
                    for k in 0..4 {
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
            let [mut a, mut b, mut c, mut d] = times;
            let (single, s_single) = cell(&mut a);
            let (stream, s_stream) = cell(&mut b);
            let (_, s_e1) = cell(&mut c);
            let (e8best, s_e8) = cell(&mut d);
            println!(
                "| {scene} {kind} | {s_single} | {s_stream} | {:.2} | {s_e1} | {s_e8} | {:.2} |",
                stream / single,
                stream / e8best
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
    let set = load_rays(dir, scene, kind)?;
    let rays = &set.rays;
    let (mut hits, mut occ) = (vec![None; rays.len()], vec![false; rays.len()]);
    let mut best = Duration::MAX;
    for _ in 0..passes {
        let start = Instant::now();
        match (*mode, set.any) {
            ("single", true) => occ.iter_mut().zip(rays).for_each(|(o, r)| *o = bvh.occluded(r).unwrap()),
            ("single", false) => hits.iter_mut().zip(rays).for_each(|(h, r)| *h = bvh.intersect(r).unwrap()),
            ("stream", true) => bvh.occluded_stream(rays, &mut occ).map_err(|e| e.to_string())?,
            ("stream", false) => bvh.intersect_stream(rays, &mut hits).map_err(|e| e.to_string())?,
            (other, _) => return Err(format!("unknown mode {other}")),
        }
        std::hint::black_box((&occ, &hits));
        best = best.min(start.elapsed());
    }
    let positive = if set.any { occ.iter().filter(|&&o| o).count() } else { hits.iter().flatten().count() };
    println!(
        "{scene} {kind} {mode}: {positive} positive, best {:.3} Mrays/s",
        rays.len() as f64 / best.as_secs_f64() / 1e6
    );
    Ok(())
}
