//! Single rays against the batch queries on one thread: `MeshBvh::intersect` / `occluded` ray by
//! ray, and `intersect_batch` / `occluded_batch` in a one-thread rayon pool, which keep several
//! rays in flight through a BVH larger than `INTERLEAVE_FROM` (`src/mesh/interleave.rs`). Prints
//! Mrays/s, best of 7 interleaved passes, and checks that both give the same answers.
//!
//! `cargo run --release --example batch_rays -- MESH RAYS... [--watertight]` (a ray file whose
//! name contains `shadow` is traced as any-hit rays).

use glam::Vec3;
use slabtree::{BuildOptions, MeshBvh, Ray, TriangleTest};
use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let mesh = slabtree::io::load_mesh(&a[0]).unwrap();
    let wt = a.iter().any(|x| x == "--watertight");
    let tt = if wt { TriangleTest::Watertight } else { TriangleTest::MollerTrumbore };
    let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: tt, ..Default::default() });
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for path in a[1..].iter().filter(|x| !x.starts_with("--")) {
        let bytes = std::fs::read(path).unwrap();
        let rays: Vec<Ray> = bytes
            .chunks_exact(32)
            .map(|r| {
                let f: Vec<f32> = r.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                Ray::new(Vec3::new(f[0], f[1], f[2]), Vec3::new(f[4], f[5], f[6])).with_range(f[3], f[7])
            })
            .collect();
        let (mut bs, mut bb) = (f64::INFINITY, f64::INFINITY);
        let mut same = true;
        let shadow = path.contains("shadow");
        for _ in 0..7 {
            if shadow {
                let t = Instant::now();
                let s: Vec<_> = rays.iter().map(|r| bvh.occluded(r).unwrap()).collect();
                bs = bs.min(t.elapsed().as_secs_f64());
                let t = Instant::now();
                let b = pool.install(|| bvh.occluded_batch(&rays).unwrap());
                bb = bb.min(t.elapsed().as_secs_f64());
                same &= s == b;
                continue;
            }
            let t = Instant::now();
            let s: Vec<_> = rays.iter().map(|r| bvh.intersect(r).unwrap()).collect();
            bs = bs.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let b = pool.install(|| bvh.intersect_batch(&rays).unwrap());
            bb = bb.min(t.elapsed().as_secs_f64());
            same &= s == b;
        }
        let n = rays.len() as f64;
        assert!(same, "{path}: the batch's answers differ from the single rays'");
        println!("{path}: single {:.2}, batch {:.2} Mrays/s ({:.2}x)", n / bs / 1e6, n / bb / 1e6, bs / bb);
    }
}
