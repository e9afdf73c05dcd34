//! How slabtree's mesh BVH scales: a generated terrain of 1M, 4M and 16M triangles (or the sizes
//! asked for), built on 1 and 2 threads, traced, saved and loaded. Prints, per size: build time
//! and the peak memory (RSS) during it, bytes per triangle, rays per second (random rays from
//! above and a 1024 × 1024 camera view, one thread), and the saved file's size and load time.
//!
//! ```text
//! cargo run --release --example scale                          # 1M, 4M and 16M triangles
//! cargo run --release --example scale -- 2M 8M --threads 1     # other sizes, one thread only
//! cargo run --release --example scale -- 16M --ply terrain.ply # also write the mesh (for peers)
//! ```
//!
//! Peak memory is the process's high-water mark (`VmHWM`), reset before each phase through
//! `/proc/self/clear_refs` (Linux); it includes the mesh itself. `docs/performance.md`, "Scale",
//! has the figures and Embree's beside them (`benches/peers/scale.sh`).

use std::io::Write;
use std::time::{Duration, Instant};

use glam::Vec3;
use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, Threads, TriMesh};

/// A terrain of about `triangles` triangles over the unit square scaled to 1000 × 1000: a grid
/// of cells, two triangles each, with heights from a few octaves of waves and a hashed jitter
/// (so that no two cells are alike, as in a scanned landscape).
fn terrain(triangles: usize) -> TriMesh {
    let cells = ((triangles / 2) as f64).sqrt().round().max(1.0) as u32;
    let side = cells + 1;
    let mut positions = Vec::with_capacity((side * side) as usize);
    for j in 0..side {
        for i in 0..side {
            let (x, y) = (i as f32 / cells as f32, j as f32 / cells as f32);
            let mut h = 0.0;
            let mut amp = 60.0;
            for octave in 0..5 {
                let f = 3.0 * (1 << octave) as f32;
                h += amp * ((x * f + 0.3 * octave as f32).sin() * (y * f * 1.3 + 0.7).cos());
                amp *= 0.45;
            }
            let hash = (i.wrapping_mul(0x9e37_79b9) ^ j.wrapping_mul(0x85eb_ca6b)).wrapping_mul(0xc2b2_ae35);
            h += (hash >> 8) as f32 / (1u32 << 24) as f32 * 0.5;
            positions.push(Vec3::new(x * 1000.0, y * 1000.0, h));
        }
    }
    let mut tris = Vec::with_capacity((2 * cells * cells) as usize);
    for j in 0..cells {
        for i in 0..cells {
            let a = j * side + i;
            tris.push([a, a + 1, a + side]);
            tris.push([a + 1, a + side + 1, a + side]);
        }
    }
    TriMesh::new(positions, tris).expect("indices in range, finite points")
}

/// Random rays from above, aimed down and a little aside.
fn rays_from_above(n: usize) -> Vec<Ray> {
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut unit = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n)
        .map(|_| {
            let o = Vec3::new(unit() * 1000.0, unit() * 1000.0, 200.0);
            Ray::new(o, Vec3::new(unit() - 0.5, unit() - 0.5, -2.0))
        })
        .collect()
}

/// A `w` × `h` pinhole camera looking across the terrain from a corner, above it.
fn camera_rays(w: u32, h: u32) -> Vec<Ray> {
    let eye = Vec3::new(-100.0, -100.0, 250.0);
    let view = glam::camera::rh::view::look_at_mat4(eye, Vec3::new(500.0, 500.0, 0.0), Vec3::Z).inverse();
    let tan = (50f32.to_radians() * 0.5).tan();
    let mut rays = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let px = (2.0 * (x as f32 + 0.5) / w as f32 - 1.0) * tan * w as f32 / h as f32;
            let py = (1.0 - 2.0 * (y as f32 + 0.5) / h as f32) * tan;
            rays.push(Ray::new(eye, view.transform_vector3(Vec3::new(px, py, -1.0))));
        }
    }
    rays
}

/// Resets the process's peak RSS to its current RSS (Linux 4.0 and later; elsewhere nothing).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak RSS since the last [`reset_peak`], in MB (0 where unknown).
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
    kb.unwrap_or(0.0) / 1024.0
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.to_ascii_uppercase();
    let (digits, scale) = match s.strip_suffix('M') {
        Some(d) => (d, 1 << 20),
        None => match s.strip_suffix('K') {
            Some(d) => (d, 1 << 10),
            None => (s.as_str(), 1),
        },
    };
    digits.parse::<usize>().ok().map(|n| n * scale)
}

fn mrays(n: usize, t: Duration) -> f64 {
    n as f64 / t.as_secs_f64() / 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sizes = Vec::new();
    let mut threads = vec![1, 2];
    let mut ply = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => {
                threads =
                    args.next().ok_or("--threads needs a list")?.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            "--ply" => ply = Some(args.next().ok_or("--ply needs a path")?),
            size => sizes.push(parse_size(size).ok_or_else(|| format!("not a size or option: {size}"))?),
        }
    }
    if sizes.is_empty() {
        sizes = vec![1 << 20, 4 << 20, 16 << 20];
    }
    println!("simd level {}, {} CPUs", slabtree::simd_level(), std::thread::available_parallelism()?);
    println!(
        "{:>10} {:>7} {:>10} {:>10} {:>9} {:>12} {:>12} {:>10} {:>9} {:>10}",
        "triangles",
        "threads",
        "build ms",
        "build MB",
        "bytes/tri",
        "random Mr/s",
        "camera Mr/s",
        "trace MB",
        "file MB",
        "load ms"
    );
    let above = rays_from_above(1 << 18);
    let camera = camera_rays(1024, 1024);
    for &n in &sizes {
        let mesh = terrain(n);
        if let Some(path) = &ply {
            write_ply(&mesh, path)?;
        }
        for (k, &t) in threads.iter().enumerate() {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
            reset_peak();
            let start = Instant::now();
            let bvh = pool.install(|| MeshBvh::build(&mesh, &BuildOptions::default()));
            let build = start.elapsed();
            let build_mb = peak_mb();
            let stats = bvh.stats();
            // Tracing, saving and loading once per size, after the first build.
            if k > 0 {
                println!(
                    "{:>10} {t:>7} {:>10.0} {build_mb:>10.0} {:>9.1}",
                    mesh.len(),
                    build.as_secs_f64() * 1e3,
                    stats.bytes_per_triangle
                );
                continue;
            }
            let mut hits = Vec::new();
            let options = BatchOptions { threads: Threads::Calling, ..Default::default() };
            reset_peak();
            let mut best = [Duration::MAX; 2];
            for _ in 0..3 {
                for (b, rays) in best.iter_mut().zip([&above, &camera]) {
                    let start = Instant::now();
                    bvh.intersect_batch(rays, &mut hits, options)?;
                    *b = (*b).min(start.elapsed());
                }
            }
            let trace_mb = peak_mb();
            let bytes = bvh.to_bytes();
            let file = std::env::temp_dir().join(format!("slabtree-scale-{}.bvh", std::process::id()));
            std::fs::write(&file, &bytes)?;
            drop(bytes);
            let start = Instant::now();
            let loaded = MeshBvh::from_bytes(&std::fs::read(&file)?)?;
            let load = start.elapsed();
            let file_mb = std::fs::metadata(&file)?.len() as f64 / 1e6;
            std::fs::remove_file(&file)?;
            assert_eq!(loaded.stats().nodes, stats.nodes);
            println!(
                "{:>10} {t:>7} {:>10.0} {build_mb:>10.0} {:>9.1} {:>12.2} {:>12.2} {trace_mb:>10.0} {file_mb:>9.0} {:>10.0}",
                mesh.len(),
                build.as_secs_f64() * 1e3,
                stats.bytes_per_triangle,
                mrays(above.len(), best[0]),
                mrays(camera.len(), best[1]),
                load.as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
}

/// Writes `mesh` as a binary little-endian PLY, for peers that read meshes from files.
fn write_ply(mesh: &TriMesh, path: &str) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    write!(
        out,
        "ply\nformat binary_little_endian 1.0\nelement vertex {}\nproperty float x\nproperty float y\nproperty float z\n\
         element face {}\nproperty list uchar int vertex_indices\nend_header\n",
        mesh.positions().len(),
        mesh.len()
    )?;
    for p in mesh.positions() {
        for c in p.to_array() {
            out.write_all(&c.to_le_bytes())?;
        }
    }
    for t in mesh.triangles() {
        out.write_all(&[3])?;
        for i in t {
            out.write_all(&i.to_le_bytes())?;
        }
    }
    out.flush()
}
