//! Builds the BVH of a mesh file, saves it to bytes, reads it back, and prints the times: a saved
//! BVH skips the build.
//!
//! ```text
//! cargo run --release --example saved_bvh -- ../shared/scenes/dragon.ply [PASSES] [OUT]
//! ```
//!
//! Each of PASSES rounds (default 5) builds, writes, and reads once each way (`from_bytes`, the
//! fast read of a file one trusts, and `from_untrusted_bytes`, which computes every box again);
//! the best time of each step is printed, and the read-back BVHs must write the same bytes and
//! give the same hits. With OUT,
//! the saved bytes are also written to that file (`fuzz/run` seeds its `saved_bvh` corpus so).

use std::time::{Duration, Instant};

use glam::Vec3;
use slabtree::{BuildOptions, MeshBvh, Ray, load_mesh};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: saved_bvh MESH_FILE [PASSES] [OUT]")?;
    let passes: usize = args.next().map_or(Ok(5), |p| p.parse())?;
    let out = args.next();
    let mesh = load_mesh(&path)?;
    let [mut build, mut write, mut read, mut untrusted] = [Duration::MAX; 4];
    let mut bytes = Vec::new();
    let mut built = None;
    for _ in 0..passes.max(1) {
        let t = Instant::now();
        let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
        build = build.min(t.elapsed());
        let t = Instant::now();
        bytes = bvh.to_bytes();
        write = write.min(t.elapsed());
        let t = Instant::now();
        let back = MeshBvh::from_bytes(&bytes)?;
        read = read.min(t.elapsed());
        assert!(back.to_bytes() == bytes, "the read-back BVH writes other bytes");
        let t = Instant::now();
        let checked = MeshBvh::from_untrusted_bytes(&bytes)?;
        untrusted = untrusted.min(t.elapsed());
        assert!(checked.to_bytes() == bytes, "the recomputed BVH writes other bytes");
        built = Some((bvh, back));
    }
    let (bvh, back) = built.expect("at least one pass");
    // The same hits for rays from around the mesh towards its centre.
    let b = bvh.bounds().ok_or("empty mesh")?;
    let (c, r) = (Vec3::from(b.center()), Vec3::from(b.max - b.min).length());
    for i in 0..1000 {
        let a = i as f32 * 2.399_963; // golden angle
        let z = 1.0 - 2.0 * (i as f32 + 0.5) / 1000.0;
        let d = Vec3::new(a.cos() * (1.0 - z * z).sqrt(), a.sin() * (1.0 - z * z).sqrt(), z);
        let ray = Ray::new(c + d * r, -d);
        assert_eq!(bvh.intersect(&ray)?, back.intersect(&ray)?, "ray {i}");
    }
    if let Some(out) = out {
        std::fs::write(&out, &bytes)?;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{path}: {} triangles, {} bytes saved", mesh.len(), bytes.len());
    let of_build = |d: Duration| d.as_secs_f64() / build.as_secs_f64();
    println!(
        "best of {passes}: build {:.1} ms, write {:.1} ms, read {:.1} ms ({:.3} of the build), \
         untrusted read {:.1} ms ({:.3})",
        ms(build),
        ms(write),
        ms(read),
        of_build(read),
        ms(untrusted),
        of_build(untrusted)
    );
    Ok(())
}
