//! Traces ray files (the shared scenes' format: 8 f32 per ray) against a mesh on one thread and
//! prints Mrays/s per file, best of several passes.
//!
//! `cargo run --release --example trace_rays -- MESH RAYS... [--watertight] [--passes N] [--rotations N] [--bins N] [--quality low|medium|high] [--batch]`
//!
//! With `--batch`, each pass also traces the file through `intersect_batch` / `occluded_batch`
//! on the calling thread (`Threads::Calling`, the default walks: packets where a stream times
//! them faster, several rays in flight through a BVH of `LARGE_BVH_BYTES` or more), in turn with
//! the single rays, checks that both give the same
//! answers, and prints the batch's Mrays/s beside the single rays': those of the loop that only
//! counts the hits, and of the loop that keeps each answer in a vector, as the batch does.

use std::time::Instant;

use glam::Vec3;
use slabtree::{BatchOptions, BuildOptions, BuildQuality, MeshBvh, Ray, Threads, TriangleTest, load_mesh};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let watertight = args.iter().any(|a| a == "--watertight");
    let batch = args.iter().any(|a| a == "--batch");
    let one_thread = BatchOptions { threads: Threads::Calling, ..Default::default() };
    let passes = args.iter().position(|a| a == "--passes").map_or(5, |i| args[i + 1].parse().unwrap_or(5));
    let rotations = args.iter().position(|a| a == "--rotations").map_or(3, |i| args[i + 1].parse().unwrap_or(3));
    let default_bins = BuildOptions::default().bins;
    let bins =
        args.iter().position(|a| a == "--bins").map_or(default_bins, |i| args[i + 1].parse().unwrap_or(default_bins));
    let files: Vec<&String> = args
        .iter()
        .filter(|a| {
            !a.starts_with("--") && a.parse::<usize>().is_err() && !["low", "medium", "high"].contains(&a.as_str())
        })
        .collect();
    let Some(mesh_path) = files.first() else {
        eprintln!(
            "usage: trace_rays MESH RAYS... [--watertight] [--passes N] [--rotations N] [--bins N] [--quality low|medium|high] [--batch]"
        );
        std::process::exit(2);
    };
    let mesh = load_mesh(mesh_path)?;
    let quality = match args.iter().position(|a| a == "--quality").map(|i| args[i + 1].as_str()) {
        Some("low") => BuildQuality::Low,
        Some("high") => BuildQuality::High,
        _ => BuildQuality::Medium,
    };
    let test = if watertight { TriangleTest::Watertight } else { TriangleTest::MollerTrumbore };
    let bvh = MeshBvh::build(
        &mesh,
        &BuildOptions { triangle_test: test, rotation_passes: rotations, bins, quality, ..Default::default() },
    );
    let s = bvh.stats();
    println!(
        "{}: {} triangles, build {:.1} ms, SAH {:.1}, {} nodes, depth {}, {:.1} B/tri",
        mesh_path,
        s.triangles,
        s.build_time.as_secs_f64() * 1e3,
        s.sah_cost,
        s.nodes,
        s.depth,
        s.bytes_per_triangle
    );
    for path in &files[1..] {
        let bytes = std::fs::read(path)?;
        let rays: Vec<Ray> = bytes
            .chunks_exact(32)
            .map(|r| {
                let f: Vec<f32> = r.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                Ray::new(Vec3::new(f[0], f[1], f[2]), Vec3::new(f[4], f[5], f[6])).with_range(f[3], f[7])
            })
            .collect();
        let shadow = path.contains("shadow");
        let (mut best, mut best_batch, mut best_stored) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        // The batches' answers go into vectors kept across passes, as a renderer keeps its
        // frame's buffers (a fresh 2 MB vector per pass timed the kernel's page faults too).
        let (mut hits_out, mut occluded) = (Vec::new(), Vec::new());
        let mut hits = 0;
        for _ in 0..passes {
            let t = Instant::now();
            hits = if shadow {
                rays.iter().filter(|r| bvh.occluded(r).unwrap()).count()
            } else {
                // Every field of the hit kept, as a caller keeps it: a count alone lets the
                // compiler drop the work that only the answer's fields need.
                let keep = |h: slabtree::Hit| std::hint::black_box((h.t, h.u, h.v, h.normal));
                rays.iter().filter(|r| bvh.intersect(r).unwrap().map(keep).is_some()).count()
            };
            best = best.min(t.elapsed().as_secs_f64());
            if batch {
                // The loop a caller writes when it keeps the answers: each into its slot.
                let t = Instant::now();
                if shadow {
                    occluded.resize(rays.len(), false);
                    for (r, o) in rays.iter().zip(occluded.iter_mut()) {
                        *o = bvh.occluded(r).unwrap();
                    }
                } else {
                    hits_out.resize(rays.len(), None);
                    for (r, h) in rays.iter().zip(hits_out.iter_mut()) {
                        *h = bvh.intersect(r).unwrap();
                    }
                }
                std::hint::black_box((&occluded, &hits_out));
                best_stored = best_stored.min(t.elapsed().as_secs_f64());
                let t = Instant::now();
                let same = if shadow {
                    bvh.occluded_batch(&rays, &mut occluded, one_thread)?;
                    best_batch = best_batch.min(t.elapsed().as_secs_f64());
                    rays.iter().zip(&occluded).all(|(r, o)| bvh.occluded(r).ok() == Some(*o))
                } else {
                    bvh.intersect_batch(&rays, &mut hits_out, one_thread)?;
                    best_batch = best_batch.min(t.elapsed().as_secs_f64());
                    rays.iter().zip(&hits_out).all(|(r, h)| bvh.intersect(r).ok() == Some(*h))
                };
                assert!(same, "{path}: the batch's answers differ from the single rays'");
            }
        }
        // What the rays visited, per ray: a cost model independent of the machine's noise.
        let (mut nodes, mut leaves) = (0u64, 0u64);
        for r in &rays {
            let s = if shadow { bvh.occluded_counting(r)?.1 } else { bvh.intersect_counting(r)?.1 };
            nodes += s.nodes as u64;
            leaves += s.leaves as u64;
        }
        let n = rays.len().max(1) as f64;
        println!(
            "  {path}: {} rays, {hits} hits, {:.2} Mrays/s, {:.2} nodes and {:.2} leaves per ray",
            rays.len(),
            rays.len() as f64 / best / 1e6,
            nodes as f64 / n,
            leaves as f64 / n
        );
        if batch {
            let mrays = rays.len() as f64 / best_batch / 1e6;
            println!(
                "    batch, one thread: {mrays:.2} Mrays/s ({:.2}x the single rays; {:.2}x the single rays kept in a vector, {:.2} Mrays/s)",
                best / best_batch,
                best_stored / best_batch,
                rays.len() as f64 / best_stored / 1e6
            );
        }
    }
    Ok(())
}
