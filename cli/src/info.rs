//! `slabtree info`: the size and quality of a mesh's BVH.

use std::time::Instant;

use super::args::InfoArgs;
use super::error::CliResult;
use super::load;
use slabtree::MeshBvh;

use super::progress::{self, count, ms};

/// Runs the command.
pub fn run(args: &InfoArgs) -> CliResult<()> {
    let threads = progress::init_threads(args.bvh.threads)?;
    let start = Instant::now();
    let scene = load::load(&args.input)?;
    let load = start.elapsed();
    let (bvh, _) = progress::build(&scene, &args.bvh);
    let s = bvh.stats();
    let b = scene.mesh.bounds().expect("the mesh is not empty");
    println!("file:               {}", scene.name);
    println!("triangles:          {}", count(s.triangles));
    println!("vertices:           {}", count(scene.mesh.positions().len()));
    println!("bounds:             ({}, {}, {}) to ({}, {}, {})", b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z);
    println!("SAH cost:           {:.2}", s.sah_cost);
    println!("nodes:              {} (8-wide)", count(s.nodes));
    println!("leaves:             {} (up to 4 triangles each)", count(s.leaves));
    println!("depth:              {}", s.depth);
    println!("bytes per triangle: {:.1}", s.bytes_per_triangle);
    let phases = |s: &slabtree::MeshStats| {
        let p = s.build_phases;
        [s.build_time, p.triangle_bounds, p.binary_build, p.rotations, p.collapse]
    };
    let mut times = vec![phases(&s)];
    let options = progress::build_options(&args.bvh);
    for _ in 1..args.builds {
        let again = progress::spin("building it again", || MeshBvh::build(&scene.mesh, &options).stats());
        times.push(phases(&again));
    }
    let threads = progress::threads(threads);
    if times.len() == 1 {
        let [total, bounds, binary, rotations, collapse] = times[0].map(ms);
        println!("build time:         {total} ({threads})");
        println!(
            "  of which:         triangle bounds {bounds}, binary SAH build {binary}, rotations {rotations}, collapse to 8-wide {collapse}"
        );
    } else {
        // Best and median of each column over the builds.
        let stat = |k: usize| {
            let mut col: Vec<_> = times.iter().map(|t| t[k]).collect();
            col.sort();
            format!("{} / {}", ms(col[0]), ms(col[col.len() / 2]))
        };
        println!("build time:         {} best / median of {} builds ({threads})", stat(0), times.len());
        println!(
            "  of which:         triangle bounds {}, binary SAH build {}, rotations {}, collapse to 8-wide {}",
            stat(1),
            stat(2),
            stat(3),
            stat(4)
        );
    }
    println!("load time:          {}", ms(load));
    Ok(())
}
