//! `slabtree info`: the size and quality of a mesh's BVH.

use std::time::Instant;

use super::args::InfoArgs;
use super::error::CliResult;
use super::load;
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
    println!("build time:         {} ({})", ms(s.build_time), progress::threads(threads));
    let p = s.build_phases;
    println!(
        "  of which:         triangle bounds {}, binary SAH build {}, rotations {}, collapse to 8-wide {}",
        ms(p.triangle_bounds),
        ms(p.binary_build),
        ms(p.rotations),
        ms(p.collapse)
    );
    println!("load time:          {}", ms(load));
    Ok(())
}
