//! `slabtree trace`: ray files in, hit files out, in the shared scenes' formats.
//!
//! * Rays: N records of 32 bytes, 8 little-endian f32: `ox oy oz tmin dx dy dz tmax`.
//! * Hits: N records of 16 bytes: `t` (f32), `prim` (i32), `u`, `v` (f32); a miss is
//!   `t = +inf, prim = -1, u = v = 0`.
//! * Any hit (`--any`): N bytes, 1 when the ray hits something with `tmin <= t <= tmax`.

use std::path::Path;
use std::time::Instant;

use glam::Vec3;
use slabtree::{BatchOptions, Hit, Ray};

use super::args::TraceArgs;
use super::error::{CliError, CliResult};
use super::load;
use super::progress::{self, count, ms};

/// Bytes per ray record.
pub const RAY_BYTES: usize = 32;
/// Bytes per hit record.
pub const HIT_BYTES: usize = 16;

/// Reads a ray file.
pub fn read_rays(path: &Path) -> CliResult<Vec<Ray>> {
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, "read", &e))?;
    if bytes.len() % RAY_BYTES != 0 {
        return Err(CliError::new(format!(
            "{}: {} bytes is not a whole number of rays (each is {RAY_BYTES} bytes: ox oy oz tmin dx dy dz tmax as f32)",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(RAY_BYTES).map(decode_ray).collect())
}

/// One 32-byte ray record.
pub fn decode_ray(r: &[u8]) -> Ray {
    let f = |i: usize| f32::from_le_bytes([r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]]);
    Ray::new(Vec3::new(f(0), f(1), f(2)), Vec3::new(f(4), f(5), f(6))).with_range(f(3), f(7))
}

/// One 16-byte hit record.
pub fn encode_hit(hit: Option<&Hit>, out: &mut Vec<u8>) {
    let (t, prim, u, v) = match hit {
        Some(h) => (h.t, h.triangle as i32, h.u, h.v),
        None => (f32::INFINITY, -1, 0.0, 0.0),
    };
    out.extend_from_slice(&t.to_le_bytes());
    out.extend_from_slice(&prim.to_le_bytes());
    out.extend_from_slice(&u.to_le_bytes());
    out.extend_from_slice(&v.to_le_bytes());
}

/// Runs the command.
pub fn run(args: &TraceArgs) -> CliResult<()> {
    let threads = progress::init_threads(args.bvh.threads)?;
    // Read the rays first: a bad ray file fails before a long load and build.
    let rays = read_rays(&args.rays)?;
    super::check_output(&args.out)?;
    let start = Instant::now();
    let scene = load::load(&args.input)?;
    println!("loaded {}: {} triangles in {}", scene.name, count(scene.mesh.len()), ms(start.elapsed()));
    let (bvh, build) = progress::build(scene.mesh, &args.bvh);
    println!("built the BVH in {} ({}; SIMD kernels: {})", ms(build), progress::threads(threads), progress::simd());

    // The answers go into vectors made once, outside the timed passes, so that a pass times the
    // queries, not the allocation and first touch of their answers.
    let options = BatchOptions { packets: !args.single_rays, ..Default::default() };
    let (out, hits, label) = if args.any {
        let mut occluded = Vec::with_capacity(rays.len());
        let (done, time) =
            progress::timed(args.passes, "tracing", || bvh.occluded_batch(&rays, &mut occluded, options));
        done.map_err(|e| bad_ray(&args.rays, e))?;
        print_query(rays.len(), occluded.iter().filter(|&&o| o).count(), &time, threads, "occluded");
        let bytes: Vec<u8> = occluded.iter().map(|&o| u8::from(o)).collect();
        (bytes, occluded.len(), "bytes")
    } else {
        let mut hits = Vec::with_capacity(rays.len());
        let (done, time) = progress::timed(args.passes, "tracing", || bvh.intersect_batch(&rays, &mut hits, options));
        done.map_err(|e| bad_ray(&args.rays, e))?;
        print_query(rays.len(), hits.iter().filter(|h| h.is_some()).count(), &time, threads, "hit");
        let mut bytes = Vec::with_capacity(hits.len() * HIT_BYTES);
        for h in &hits {
            encode_hit(h.as_ref(), &mut bytes);
        }
        (bytes, hits.len(), "hit records")
    };
    std::fs::write(&args.out, &out).map_err(|e| CliError::io(&args.out, "write", &e))?;
    println!("wrote {}: {} {label}", args.out.display(), count(hits));
    Ok(())
}

/// A ray file's invalid ray, named by its record number (from 0, as in the file).
fn bad_ray(path: &Path, e: slabtree::BatchError) -> CliError {
    CliError::new(format!("{}: ray {}: {}", path.display(), e.index, e.error))
}

fn print_query(rays: usize, positive: usize, time: &progress::Passes, threads: usize, what: &str) {
    let pct = 100.0 * positive as f64 / rays.max(1) as f64;
    println!(
        "query: {} rays in {} (best of {} after a warm-up): {} ({}; {pct:.2}% {what})",
        count(rays),
        ms(time.best),
        time.count,
        time.rates(rays),
        progress::threads(threads)
    );
}
