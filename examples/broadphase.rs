//! A physics engine's broad phase: a world of boxes stepped frame by frame, each frame's moves
//! handed to a [`BroadPhase`] in one batch and the pairs that began and ended read back, as a
//! solver would to create and destroy contacts. Runs the three workloads of the peer program
//! (a settled pile, a level with 10% of its objects moving, a swarm of fast movers) and prints
//! per-frame times and event counts.
//!
//! `cargo run --release --example broadphase [objects] [frames]`

use std::time::Instant;

use slabtree::broad_phase::{BodyKind, BroadPhase, ObjectId};
use slabtree_testkit::worlds::{Workload, World};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let frames: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    println!("{n} objects, {frames} frames (the pair search runs on rayon's threads above 1024 changes)");
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>12} {:>12} {:>10}",
        "world", "setup ms", "frame µs", "worst µs", "began/frame", "ended/frame", "pairs"
    );
    for workload in Workload::ALL {
        let mut world = World::new(workload, n, 7);
        let start = Instant::now();
        let mut phase = BroadPhase::new();
        let ids: Vec<ObjectId> = world
            .bodies
            .iter()
            .enumerate()
            .map(|(i, b)| phase.add(b.aabb(), if b.dynamic { BodyKind::Dynamic } else { BodyKind::Static }, i))
            .collect::<Result<_, _>>()?;
        phase.update_pairs();
        let setup = start.elapsed();

        let mut steps = Vec::new();
        let (mut total, mut worst) = (0.0f64, 0.0f64);
        let (mut began, mut ended) = (0, 0);
        for _ in 0..frames {
            world.step(&mut steps);
            let t = Instant::now();
            phase.move_objects(steps.iter().map(|&(i, aabb, d)| (ids[i], aabb, d)))?;
            let events = phase.update_pairs();
            let us = t.elapsed().as_secs_f64() * 1e6;
            began += events.began().len();
            ended += events.ended().len();
            total += us;
            worst = worst.max(us);
        }
        println!(
            "{:<8} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>12.1} {:>10}",
            workload.name(),
            setup.as_secs_f64() * 1e3,
            total / frames as f64,
            worst,
            began as f64 / frames as f64,
            ended as f64 / frames as f64,
            phase.pair_count()
        );
    }
    Ok(())
}
