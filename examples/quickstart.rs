//! Builds a dynamic tree of 100,000 boxes, runs a few frames of motion, and casts rays, printing
//! the tree's statistics and the throughput of each step.
//!
//! Run it with `cargo run --release --example quickstart`.

use std::time::Instant;

use glam::Vec3A;
use slabtree::{Aabb, Dbvt, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2};
use slabtree_testkit::rng::Rng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = 100_000;
    let mut rng = Rng(7);
    let side = 4.0 * (n as f32).cbrt();
    // Each proxy keeps its tight box as user data; the tree stores fat boxes.
    let boxes: Vec<Aabb> = (0..n)
        .map(|_| Aabb::from_center_half_extents(rng.unit3a() * side, Vec3A::splat(0.1) + rng.unit3a() * 0.9))
        .collect();

    let t = Instant::now();
    let (mut tree, ids) = Dbvt::build(boxes.iter().map(|b| (*b, *b)))?;
    println!("bulk build of {n} boxes: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let s = tree.stats();
    println!(
        "height {}, {} internal nodes, SAH cost {:.1}, {:.1} MiB",
        s.height,
        s.internal_nodes,
        s.sah_cost,
        s.memory_bytes as f64 / (1 << 20) as f64
    );

    // Ten frames: 10% of the boxes move; enlarge in place, then one refit per frame.
    let t = Instant::now();
    let frames = 10;
    for _ in 0..frames {
        for _ in 0..n / 10 {
            let i = (rng.unit() * n as f32) as usize % n;
            let d = (rng.unit3a() * 2.0 - Vec3A::ONE) * 0.5;
            let moved = Aabb::new(tree.get(ids[i])?.min + d, tree.get(ids[i])?.max + d);
            *tree.get_mut(ids[i])? = moved;
            tree.enlarge_proxy(ids[i], moved, d)?;
        }
        tree.refit();
    }
    println!("per frame (move 10%, refit): {:.2} ms", t.elapsed().as_secs_f64() * 1e3 / frames as f64);
    tree.validate()?;

    // Closest hit on the tight boxes: the policy tests the tight box and clips the ray.
    let mut ws = QueryWorkspace::new();
    let center = Vec3A::splat(side * 0.5);
    let rays: Vec<Ray> = (0..200_000)
        .map(|_| {
            let o = center + (rng.unit3a() * 2.0 - Vec3A::ONE).normalize_or(Vec3A::X) * side;
            Ray::new(o, (rng.unit3a() * side - o).normalize())
        })
        .collect();
    let t = Instant::now();
    let mut hits = 0;
    for ray in &rays {
        let mut hit = false;
        tree.visit_ray(ray, &mut ws, &mut |leaf: RayLeaf<'_, Aabb>| match ray_aabb2(
            &ray.with_range(ray.tmin, leaf.tmax),
            leaf.data,
        ) {
            Some(t) => {
                hit = true;
                RayControl::Clip(t)
            }
            None => RayControl::Continue,
        })?;
        hits += hit as usize;
    }
    let secs = t.elapsed().as_secs_f64();
    println!("{} rays, {hits} hits: {:.2} Mrays/s (one thread)", rays.len(), rays.len() as f64 / secs / 1e6);
    Ok(())
}
