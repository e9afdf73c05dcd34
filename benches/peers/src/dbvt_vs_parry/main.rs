//! slabtree's `Dbvt` against parry3d's `Bvh` on the same workloads, one thread, one run.
//!
//! Scene: N boxes of half-size uniform in `[0.1, 1]` per axis, centres uniform in a cube of side
//! `4 * N^(1/3)`. Both trees store the same fat boxes: the tight box grown by `MARGIN` on every
//! side (slabtree with `prediction = 0`; parry's change-detection margin, and the initial insert
//! of parry given the fat box since its plain `insert` does not fatten). A moved box keeps its fat
//! box while the tight box stays inside it; otherwise its fat box becomes the new tight box grown
//! by `MARGIN`, in both libraries, so after any sequence of frames both trees hold identical fat
//! boxes whatever their structure, and every query below has one library-independent answer.
//!
//! Workloads, each on both libraries:
//! * insert all N (fat) boxes one by one, remove all, bulk build (binned SAH, serial);
//! * FRAMES frames in which 10% of the boxes move by 0.05–0.5 in a random direction, followed by
//!   each tree's maintenance, three ways (see `Maintenance`), in ms per frame;
//! * on the tree after insertion and after each maintenance path: 100k closest-hit rays on the
//!   *tight* boxes (the trees traverse fat boxes, the leaf callback tests the tight box with
//!   `slabtree::ray_aabb2` in both libraries and clips), 100k overlap queries with boxes of
//!   half-size 1, and all self pairs.
//!
//! Query answers are compared between the libraries (hit count and sum of hit distances, overlap
//! and pair counts on fat and on tight boxes); any difference prints a `MISMATCH` line.
//!
//! Usage: `dbvt_vs_parry [N ...]` (default: 1000 10000 100000).
//!
//! Profiling: `DBVT_PROFILE=LIB:WORKLOAD:N[:REPEATS]` (LIB `slabtree` or `parry`; WORKLOAD
//! `insert`, `remove` (every proxy of the inserted tree, in creation order), `build`, `reinsert` (the 50 frames), `pairs` (self pairs of the inserted tree),
//! `pairs-refit` (self pairs after the 50 in-place and refit frames), `pairs-reinsert` (after
//! the 50 reinsert frames; `RELAYOUT=1` as for the rays), `overlaps` (the 100k overlap
//! queries on the inserted tree), `pairs-optimized` (after
//! the 50 in-place and optimise frames) or `rays` (the 100k closest-hit rays on the inserted
//! tree, through its 8-wide copy, or the binary tree with `BINARY=1`, or the binary tree's
//! batch of rays in flight with `BATCH=1`; `rays-refit` after the 50
//! in-place and refit frames, `rays-reinsert` after the 50 reinsert frames, both on the moved
//! tight boxes; `RELAYOUT=1` first calls `refit`, which lays a disordered arena out in
//! depth-first order)) runs that one workload
//! REPEATS times (default 1) on one library and prints a checksum, so that
//! `valgrind --tool=callgrind` counts one library's instructions per item (run with 1 and 3
//! repeats and take the difference). Build the profiled binary with
//! `RUSTFLAGS="-C target-cpu=x86-64-v3"`. The ray workloads also print slabtree's nodes and leaves
//! visited per ray.
//!
//! `DBVT_ROUNDS=1` prints every interleaved round's times to stderr (each library's list in the
//! order the row's libraries are timed), to tell a row's noise from its ratio.

mod profile;
mod queries;
mod run;
mod timing;
mod trees;
mod workload;

use crate::profile::profile;
use crate::run::run;

/// Fat margin, on every side, in both libraries.
pub(crate) const MARGIN: f32 = 0.1;
/// Frames of motion per maintenance path.
pub(crate) const FRAMES: usize = 50;
/// Fraction of the boxes moved per frame.
pub(crate) const MOVED_FRACTION: f64 = 0.1;
pub(crate) const RAYS: usize = 100_000;
pub(crate) const OVERLAPS: usize = 100_000;
/// Half-size of the overlap query boxes.
pub(crate) const QUERY_HALF: f32 = 1.0;
/// Rounds of every timing: at least this many; the best time of each library is kept.
pub(crate) const MIN_ROUNDS: usize = 5;
/// Rounds of the 50-frame runs, which are long: at least this many.
pub(crate) const MIN_FRAME_ROUNDS: usize = 3;
/// More rounds, up to [`MAX_ROUNDS`], until each library has run a workload this long in total:
/// a workload of a millisecond or less timed five times was at the mercy of one burst of other
/// load (the same self-pair row came out 0.87 and 2.44 in two runs).
pub(crate) const MIN_TOTAL_MS: f64 = 200.0;
pub(crate) const MAX_ROUNDS: usize = 100;

fn main() {
    if let Ok(spec) = std::env::var("DBVT_PROFILE") {
        if let Err(e) = profile(&spec) {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        return;
    }
    let sizes: Vec<usize> = {
        let args: Vec<usize> =
            std::env::args().skip(1).map(|a| a.parse().expect("arguments are box counts, e.g. 10000")).collect();
        if args.is_empty() { vec![1_000, 10_000, 100_000] } else { args }
    };
    println!(
        "slabtree Dbvt vs parry3d Bvh: one thread, margin {MARGIN}, {FRAMES} frames moving {}% of the boxes by 0.05-0.5",
        MOVED_FRACTION * 100.0
    );
    let mut rows = Vec::new();
    let mut mismatches = 0;
    for &n in &sizes {
        run(n, &mut rows, &mut mismatches);
    }
    println!();
    println!("| N | workload | slabtree | parry3d | ratio (parry3d / slabtree) |");
    println!("|---:|---|---:|---:|---:|");
    for r in &rows {
        println!("| {} | {} | {:.3} | {:.3} | {:.2} |", r.n, r.workload, r.slab, r.parry, r.parry / r.slab);
    }
    println!();
    if mismatches == 0 {
        println!("All query answers agree between slabtree and parry3d.");
    } else {
        println!("{mismatches} MISMATCH(ES) between slabtree and parry3d (see above).");
        std::process::exit(1);
    }
}
