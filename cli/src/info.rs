//! `slabtree info`: the size and quality of a mesh's BVH.

use std::time::{Duration, Instant};

use slabtree::{MeshBvh, MeshStats};

use super::args::InfoArgs;
use super::error::{CliError, CliResult};
use super::load;
use super::progress::{self, count, ms};

/// Runs the command.
pub fn run(args: &InfoArgs) -> CliResult<()> {
    let threads = progress::init_threads(args.bvh.threads)?;
    let start = Instant::now();
    let scene = load::load(&args.input)?;
    let load = start.elapsed();
    let (bvh, _) = progress::build(scene.mesh.clone(), &args.bvh);
    let s = bvh.stats();
    let b = scene.mesh.bounds().expect("the mesh is not empty");
    println!("file:               {}", scene.name);
    println!("triangles:          {}", count(s.triangles));
    println!("vertices:           {}", count(scene.mesh.positions().len()));
    println!("bounds:             ({}, {}, {}) to ({}, {}, {})", b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z);
    println!("build quality:      {}", format!("{:?}", bvh.options().quality).to_lowercase());
    println!("SAH cost:           {:.2}", s.sah_cost);
    println!("nodes:              {} (8-wide)", count(s.nodes));
    println!("leaves:             {} (up to 4 triangles each)", count(s.leaves));
    println!(
        "references:         {} ({:.2} per triangle; spatial splits put a triangle in several leaves)",
        count(s.references),
        s.references as f64 / s.triangles.max(1) as f64
    );
    println!("depth:              {}", s.depth);
    println!("bytes per triangle: {:.1}", s.bytes_per_triangle);
    let how = if std::env::var_os("SLABTREE_SIMD").is_some() {
        "asked for by SLABTREE_SIMD"
    } else {
        "chosen at run time from the CPU"
    };
    println!("SIMD kernels:       {} ({how})", slabtree::simd_level());
    println!("other kernels:      {} (fixed when slabtree was compiled)", slabtree::compiled_simd_level());
    let phases = |s: &MeshStats| {
        let p = s.build_phases;
        [s.build_time, p.triangle_bounds, p.binary_build, p.rotations, p.collapse]
    };
    let mut times = vec![phases(&s)];
    let options = progress::build_options(&args.bvh);
    for _ in 1..args.builds {
        let again = progress::spin("building it again", || MeshBvh::build(&scene.mesh, &options).stats());
        times.push(phases(&again));
    }
    let stat = |k: usize| best_and_median(times.iter().map(|t| t[k]).collect());
    let of = if times.len() == 1 { String::new() } else { format!(" best / median of {} builds", times.len()) };
    println!("build time:         {}{of} ({})", stat(0), progress::threads(threads));
    println!(
        "  of which:         triangle bounds {}, binary build {}, rotations {}, collapse to 8-wide {}",
        stat(1),
        stat(2),
        stat(3),
        stat(4)
    );
    if args.rebuilds > 0 {
        let mut bvh = bvh;
        let positions = scene.mesh.positions().to_vec();
        let times: Vec<_> = (0..args.rebuilds)
            .map(|_| {
                // The mesh's own positions: every rebuild checks them, and they are valid.
                progress::spin("building it again in place", || bvh.rebuild(&positions))
                    .map_err(|e| CliError::new(format!("rebuild: {e}")))?;
                Ok(bvh.stats().build_time)
            })
            .collect::<CliResult<_>>()?;
        let of = if times.len() == 1 { String::new() } else { format!(" best / median of {} rebuilds", times.len()) };
        println!("rebuild time:       {}{of} in place ({})", best_and_median(times), progress::threads(threads));
    }
    println!("load time:          {}", ms(load));
    Ok(())
}

/// One time as it is; several, the best and the median.
fn best_and_median(mut times: Vec<Duration>) -> String {
    times.sort();
    if times.len() == 1 { ms(times[0]) } else { format!("{} / {}", ms(times[0]), ms(times[times.len() / 2])) }
}
