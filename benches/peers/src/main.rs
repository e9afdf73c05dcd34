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

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use glam::Vec3A;
use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::math::Vector;
use parry3d::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace, TraversalAction};
use parry3d::query::Ray as PRay;
use slabtree::{
    Aabb, Dbvt, DbvtConfig, LeafControl, PairControl, ProxyId, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2,
};
use slabtree_testkit::rng::Rng;

/// Fat margin, on every side, in both libraries.
const MARGIN: f32 = 0.1;
/// Frames of motion per maintenance path.
const FRAMES: usize = 50;
/// Fraction of the boxes moved per frame.
const MOVED_FRACTION: f64 = 0.1;
const RAYS: usize = 100_000;
const OVERLAPS: usize = 100_000;
/// Half-size of the overlap query boxes.
const QUERY_HALF: f32 = 1.0;
/// Rounds of every timing: at least this many; the best time of each library is kept.
const MIN_ROUNDS: usize = 5;
/// Rounds of the 50-frame runs, which are long: at least this many.
const MIN_FRAME_ROUNDS: usize = 3;
/// More rounds, up to [`MAX_ROUNDS`], until each library has run a workload this long in total:
/// a workload of a millisecond or less timed five times was at the mercy of one burst of other
/// load (the same self-pair row came out 0.87 and 2.44 in two runs).
const MIN_TOTAL_MS: f64 = 200.0;
const MAX_ROUNDS: usize = 100;

fn scene_half(n: usize) -> f32 {
    2.0 * (n as f32).cbrt()
}

fn scene(n: usize, rng: &mut Rng) -> Vec<Aabb> {
    let half = scene_half(n);
    (0..n)
        .map(|_| {
            let c = rng.in_cube(half);
            let h = Vec3A::new(rng.range(0.1, 1.0), rng.range(0.1, 1.0), rng.range(0.1, 1.0));
            Aabb::from_center_half_extents(c, h)
        })
        .collect()
}

/// One frame of motion: (box index, new tight box, displacement); distinct indices.
type Frame = Vec<(u32, Aabb, Vec3A)>;

/// FRAMES frames applied in turn to `tight`, which ends in the final state.
fn frames(tight: &mut [Aabb], rng: &mut Rng) -> Vec<Frame> {
    let n = tight.len();
    let moved = ((n as f64) * MOVED_FRACTION).round() as usize;
    let mut order: Vec<usize> = (0..n).collect();
    (0..FRAMES)
        .map(|_| {
            (0..moved)
                .map(|k| {
                    let j = k + rng.below(n - k);
                    order.swap(k, j);
                    let i = order[k];
                    let d = rng.on_sphere() * rng.range(0.05, 0.5);
                    let b = Aabb::new(tight[i].min + d, tight[i].max + d);
                    tight[i] = b;
                    (i as u32, b, d)
                })
                .collect()
        })
        .collect()
}

/// A slabtree ray and the same ray for parry (unit direction, `t` is a distance).
fn rays(n: usize, rng: &mut Rng) -> Vec<(Ray, PRay)> {
    let half = scene_half(n);
    let radius = half * 3f32.sqrt() + 2.0;
    (0..RAYS)
        .map(|_| {
            let o = rng.on_sphere() * radius;
            let d = (rng.in_cube(half) - o).normalize();
            (Ray::new(o, d), PRay::new(Vector::new(o.x, o.y, o.z), Vector::new(d.x, d.y, d.z)))
        })
        .collect()
}

fn to_parry(b: &Aabb) -> PAabb {
    PAabb::new(Vector::new(b.min.x, b.min.y, b.min.z), Vector::new(b.max.x, b.max.y, b.max.z))
}

/// The fat box both libraries store for a tight box.
fn fat(b: &Aabb) -> Aabb {
    b.expand(MARGIN)
}

fn slab_config() -> DbvtConfig {
    // No motion prediction (parry has none) and a serial rebuild (one thread).
    DbvtConfig { margin: MARGIN, prediction: 0.0, parallel_threshold: usize::MAX, ..DbvtConfig::default() }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// `f`'s wall time in ms, and its result.
fn timed<R>(f: impl FnOnce() -> R) -> (f64, R) {
    let t = Instant::now();
    let r = std::hint::black_box(f());
    (ms(t), r)
}

/// `f`'s wall time in ms, with its result stored in `out` (outside the timing, so that the
/// previous result's drop is not timed either): one contender of [`interleaved`].
fn record<R>(out: &mut Option<R>, f: impl FnOnce() -> R) -> f64 {
    let (t, r) = timed(f);
    *out = Some(r);
    t
}

/// The best time of each of `runs` (each times itself and returns ms), run in turn round after
/// round, the order rotated by one each round so that no library always runs first: at least
/// `min_rounds` rounds, then more (up to [`MAX_ROUNDS`]) until each has run [`MIN_TOTAL_MS`] in
/// total. Interleaving puts a burst of other load on both libraries rather than on whichever
/// was being timed.
fn interleaved<const K: usize>(min_rounds: usize, runs: [&mut dyn FnMut() -> f64; K]) -> [f64; K] {
    let mut best = [f64::INFINITY; K];
    let mut total = [0.0; K];
    let mut all: [Vec<f64>; K] = std::array::from_fn(|_| Vec::new());
    let mut round = 0;
    while round < min_rounds || (round < MAX_ROUNDS && total.iter().any(|&t| t < MIN_TOTAL_MS)) {
        for k in 0..K {
            let i = (k + round) % K;
            let t = runs[i]();
            all[i].push(t);
            best[i] = best[i].min(t);
            total[i] += t;
        }
        round += 1;
    }
    if std::env::var_os("DBVT_ROUNDS").is_some() {
        eprintln!("rounds {round}: {all:.1?}");
    }
    best
}

/// A parry tree's SAH cost as `Dbvt::stats` measures slabtree's: 1 plus the half areas of every
/// node's box below the root (internal nodes and leaves) over the root's.
fn parry_sah_cost(bvh: &Bvh) -> f64 {
    let half_area = |b: &PAabb| {
        let e = b.maxs - b.mins;
        f64::from(e.x * e.y + e.y * e.z + e.z * e.x)
    };
    let root = half_area(&bvh.root_aabb());
    if bvh.is_empty() || root.is_nan() || root <= 0.0 {
        return 0.0;
    }
    let mut area = 0.0;
    bvh.traverse(|node| {
        area += half_area(&node.aabb());
        TraversalAction::Continue
    });
    1.0 + area / root
}

fn slab_insert_all(tight: &[Aabb]) -> (Dbvt<u32>, Vec<ProxyId>) {
    let mut tree = Dbvt::with_config(slab_config());
    let ids = tight.iter().enumerate().map(|(i, b)| tree.insert(*b, i as u32).expect("valid box")).collect();
    (tree, ids)
}

fn parry_insert_all(tight: &[Aabb]) -> Bvh {
    let mut bvh = Bvh::new();
    for (i, b) in tight.iter().enumerate() {
        bvh.insert(to_parry(&fat(b)), i as u32);
    }
    bvh
}

/// Answers of the query workloads, compared between the libraries.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Answers {
    ray_hits: u64,
    ray_t_sum: f64,
    overlap_fat: u64,
    overlap_tight: u64,
    pairs_fat: u64,
    pairs_tight: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct QueryTimes {
    rays: f64,
    /// slabtree only: the rays through the binary tree (parry: the same as `rays`).
    rays_binary: f64,
    /// slabtree only: the rays through the binary tree, in flight together (parry: `rays`).
    rays_batch: f64,
    overlaps: f64,
    pairs: f64,
}

/// Nodes and leaves visited by slabtree's ray workload, summed over every call (the profile mode
/// prints them per ray).
static RAY_VISITS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// The closest-hit ray workload on slabtree: (hits, sum of hit distances). With `wide`, through
/// the tree's 8-wide copy ([`Dbvt::wide`], the API for read-heavy trees), made inside the timed
/// region; otherwise through the binary tree.
fn slab_queries_rays(tree: &Dbvt<u32>, tight: &[Aabb], rays: &[(Ray, PRay)], wide: bool) -> (u64, f64) {
    let copy = if wide { Some(tree.wide().expect("refitted tree")) } else { None };
    let mut ws = QueryWorkspace::new();
    let (mut hits, mut sum) = (0u64, 0f64);
    // Summed here and added to `RAY_VISITS` once per call: two atomic adds per ray sat in the
    // timed loop.
    let mut visits = [0u64; 2];
    for (ray, _) in rays {
        let mut best = f32::INFINITY;
        let mut policy = |leaf: RayLeaf<'_, u32>| nearest_tight(ray, tight, &leaf, &mut best);
        let stats = match &copy {
            Some(w) => w.visit_ray(ray, &mut ws, &mut policy),
            None => tree.visit_ray(ray, &mut ws, &mut policy),
        }
        .expect("valid ray");
        visits[0] += stats.nodes;
        visits[1] += stats.leaves;
        if best.is_finite() {
            hits += 1;
            sum += f64::from(best);
        }
    }
    for (total, v) in RAY_VISITS.iter().zip(visits) {
        total.fetch_add(v, Relaxed);
    }
    (hits, sum)
}

/// The policy of both of slabtree's closest-hit ray workloads: the leaf's tight box tested
/// exactly, and the ray clipped at it when it is nearer than `best`.
fn nearest_tight(ray: &Ray, tight: &[Aabb], leaf: &RayLeaf<'_, u32>, best: &mut f32) -> RayControl {
    match ray_aabb2(ray, &tight[*leaf.data as usize]) {
        Some(t) if t < *best => {
            *best = t;
            RayControl::Clip(t)
        }
        _ => RayControl::Continue,
    }
}

/// The closest-hit ray workload through slabtree's binary tree with the rays in flight together
/// ([`Dbvt::visit_ray_batch`]): (hits, sum of hit distances).
fn slab_queries_rays_batch(tree: &Dbvt<u32>, tight: &[Aabb], rays: &[Ray], best: &mut Vec<f32>) -> (u64, f64) {
    let mut ws = QueryWorkspace::new();
    best.clear();
    best.resize(rays.len(), f32::INFINITY);
    tree.visit_ray_batch(rays, &mut ws, &mut |i: usize, leaf: RayLeaf<'_, u32>| {
        nearest_tight(&rays[i], tight, &leaf, &mut best[i])
    })
    .expect("valid rays");
    best.iter().filter(|t| t.is_finite()).fold((0, 0.0), |(n, s), &t| (n + 1, s + f64::from(t)))
}

/// The closest-hit ray workload on parry3d: (hits, sum of hit distances).
fn parry_queries_rays(bvh: &Bvh, tight: &[Aabb], rays: &[(Ray, PRay)]) -> (u64, f64) {
    let (mut hits, mut sum) = (0u64, 0f64);
    for (ray, pray) in rays {
        // The same tight-box test as on the slabtree side; parry keeps the smallest.
        let hit = bvh.cast_ray(pray, f32::MAX, |leaf, _best| ray_aabb2(ray, &tight[leaf as usize]));
        if let Some((_, t)) = hit {
            hits += 1;
            sum += f64::from(t);
        }
    }
    (hits, sum)
}

/// Every query workload on both trees (the same boxes), the libraries interleaved: the times of
/// slabtree and of parry3d, and their answers.
fn time_queries(
    tree: &Dbvt<u32>,
    bvh: &Bvh,
    tight: &[Aabb],
    rays: &[(Ray, PRay)],
    queries: &[Aabb],
) -> (QueryTimes, QueryTimes, Answers, Answers) {
    let (mut s_rays, mut s_binary, mut s_batch, mut p_rays) = (None, None, None, None);
    let plain: Vec<Ray> = rays.iter().map(|(r, _)| *r).collect();
    let mut best = Vec::new();
    let [t_wide, t_binary, t_batch, t_parry] = interleaved(
        MIN_ROUNDS,
        [
            &mut || record(&mut s_rays, || slab_queries_rays(tree, tight, rays, true)),
            &mut || record(&mut s_binary, || slab_queries_rays(tree, tight, rays, false)),
            &mut || record(&mut s_batch, || slab_queries_rays_batch(tree, tight, &plain, &mut best)),
            &mut || record(&mut p_rays, || parry_queries_rays(bvh, tight, rays)),
        ],
    );
    let (s_rays, p_rays) = (s_rays.expect("timed"), p_rays.expect("timed"));
    assert_eq!(s_binary.expect("timed"), s_rays, "the wide copy and the binary tree disagree");
    assert_eq!(s_batch.expect("timed"), s_rays, "the batch and the single rays disagree");

    let (mut ws, mut pws) = (QueryWorkspace::new(), BvhWorkspace::default());
    let pqueries: Vec<PAabb> = queries.iter().map(to_parry).collect();
    let (mut s_overlaps, mut p_overlaps) = (None, None);
    let [s_t_overlaps, p_t_overlaps] = interleaved(
        MIN_ROUNDS,
        [
            &mut || {
                record(&mut s_overlaps, || {
                    let (mut fat_count, mut tight_count) = (0u64, 0u64);
                    for q in queries {
                        tree.overlap(q, &mut ws, &mut |_: ProxyId, &i: &u32| {
                            fat_count += 1;
                            tight_count += u64::from(tight[i as usize].overlaps(q));
                            LeafControl::Continue
                        })
                        .expect("valid box");
                    }
                    (fat_count, tight_count)
                })
            },
            &mut || {
                record(&mut p_overlaps, || {
                    let (mut fat_count, mut tight_count) = (0u64, 0u64);
                    for (q, pq) in queries.iter().zip(&pqueries) {
                        for i in bvh.intersect_aabb(pq) {
                            fat_count += 1;
                            tight_count += u64::from(tight[i as usize].overlaps(q));
                        }
                    }
                    (fat_count, tight_count)
                })
            },
        ],
    );

    let (mut s_pairs, mut p_pairs) = (None, None);
    let [s_t_pairs, p_t_pairs] = interleaved(
        MIN_ROUNDS,
        [
            &mut || {
                record(&mut s_pairs, || {
                    let (mut fat_count, mut tight_count) = (0u64, 0u64);
                    tree.self_pairs(&mut ws, |_, &a, _, &b| {
                        fat_count += 1;
                        tight_count += u64::from(tight[a as usize].overlaps(&tight[b as usize]));
                        PairControl::Continue
                    })
                    .unwrap();
                    (fat_count, tight_count)
                })
            },
            &mut || {
                record(&mut p_pairs, || {
                    let (mut fat_count, mut tight_count) = (0u64, 0u64);
                    bvh.traverse_bvtt_single_tree::<false>(&mut pws, &mut |a, b| {
                        fat_count += 1;
                        tight_count += u64::from(tight[a as usize].overlaps(&tight[b as usize]));
                    });
                    (fat_count, tight_count)
                })
            },
        ],
    );
    let answers = |r: (u64, f64), o: (u64, u64), p: (u64, u64)| Answers {
        ray_hits: r.0,
        ray_t_sum: r.1,
        overlap_fat: o.0,
        overlap_tight: o.1,
        pairs_fat: p.0,
        pairs_tight: p.1,
    };
    (
        QueryTimes {
            rays: t_wide,
            rays_binary: t_binary,
            rays_batch: t_batch,
            overlaps: s_t_overlaps,
            pairs: s_t_pairs,
        },
        QueryTimes {
            rays: t_parry,
            rays_binary: t_parry,
            rays_batch: t_parry,
            overlaps: p_t_overlaps,
            pairs: p_t_pairs,
        },
        answers(s_rays, s_overlaps.expect("timed"), s_pairs.expect("timed")),
        answers(p_rays, p_overlaps.expect("timed"), p_pairs.expect("timed")),
    )
}

/// The per-frame maintenance paths, each run on both libraries.
#[derive(Clone, Copy, Debug)]
enum Maintenance {
    /// Reinsert a box when it leaves its fat box: slabtree `move_proxy`; parry
    /// `reinsert_or_update_with_change_detection` (remove + SAH reinsert). No per-frame pass.
    Reinsert,
    /// Update leaves in place, then one refit: slabtree `update_proxy` + `refit`; parry
    /// `insert_or_update_partially` + `refit`. (The first refit after the inserts also lays the
    /// slabtree arena out depth-first; that cost is included, amortised over the frames.)
    InPlaceRefit,
    /// As `InPlaceRefit`, plus incremental optimisation: slabtree `update_proxy` + `refit` +
    /// `optimize_incremental(N / 100)`; parry `insert_or_update_partially` + `refit` +
    /// `optimize_incremental` (its documented per-step update, ~5% of leaves rebuilt).
    InPlaceOptimize,
}

impl Maintenance {
    const ALL: [Maintenance; 3] = [Maintenance::Reinsert, Maintenance::InPlaceRefit, Maintenance::InPlaceOptimize];

    fn label(self) -> &'static str {
        match self {
            Maintenance::Reinsert => "reinsert (move_proxy | reinsert_or_update)",
            Maintenance::InPlaceRefit => "in place + refit (update_proxies+refit | update_partially+refit)",
            Maintenance::InPlaceOptimize => {
                "in place + optimize (update_proxies+refit+optimize_incremental(N/100) | update_partially+refit+optimize_incremental)"
            }
        }
    }

    fn short(self) -> &'static str {
        match self {
            Maintenance::Reinsert => "after reinsert frames",
            Maintenance::InPlaceRefit => "after in-place+refit frames",
            Maintenance::InPlaceOptimize => "after in-place+optimize frames",
        }
    }
}

/// Runs all frames on a clone of the slabtree tree; returns ms/frame and the final tree.
fn slab_frames(tree: &Dbvt<u32>, ids: &[ProxyId], frames: &[Frame], m: Maintenance) -> (f64, Dbvt<u32>) {
    let mut tree = tree.clone();
    let budget = (tree.len() / 100).max(1);
    let mut total = 0.0;
    // A physics step hands its moves over as one batch; the buffer is reused across frames.
    let mut moves: Vec<(ProxyId, Aabb, glam::Vec3A)> = Vec::with_capacity(tree.len() / 5);
    for frame in frames {
        let t = Instant::now();
        match m {
            Maintenance::Reinsert => {
                for &(i, b, d) in frame {
                    tree.move_proxy(ids[i as usize], b, d).expect("live id");
                }
            }
            Maintenance::InPlaceRefit => {
                moves.clear();
                moves.extend(frame.iter().map(|&(i, b, d)| (ids[i as usize], b, d)));
                tree.update_proxies(&moves).expect("live ids");
                tree.refit();
            }
            Maintenance::InPlaceOptimize => {
                moves.clear();
                moves.extend(frame.iter().map(|&(i, b, d)| (ids[i as usize], b, d)));
                tree.update_proxies(&moves).expect("live ids");
                tree.refit();
                tree.optimize_incremental(budget);
            }
        }
        total += ms(t);
    }
    (total / frames.len() as f64, tree)
}

fn parry_frames(bvh: &Bvh, frames: &[Frame], m: Maintenance) -> (f64, Bvh) {
    let mut bvh = bvh.clone();
    let mut ws = BvhWorkspace::default();
    let mut total = 0.0;
    for frame in frames {
        let t = Instant::now();
        match m {
            Maintenance::Reinsert => {
                for (i, b, _) in frame {
                    bvh.reinsert_or_update_with_change_detection(to_parry(b), *i, MARGIN);
                }
            }
            Maintenance::InPlaceRefit => {
                for (i, b, _) in frame {
                    bvh.insert_or_update_partially(to_parry(b), *i, MARGIN);
                }
                bvh.refit(&mut ws);
            }
            Maintenance::InPlaceOptimize => {
                for (i, b, _) in frame {
                    bvh.insert_or_update_partially(to_parry(b), *i, MARGIN);
                }
                bvh.refit(&mut ws);
                bvh.optimize_incremental(&mut ws);
            }
        }
        total += ms(t);
    }
    (total / frames.len() as f64, bvh)
}

struct Row {
    n: usize,
    workload: String,
    slab: f64,
    parry: f64,
}

/// Compares the answers of both libraries; prints a MISMATCH line per difference.
fn check(n: usize, state: &str, s: &Answers, p: &Answers, mismatches: &mut usize) {
    let mut diff = |what: &str, a: String, b: String| {
        if a != b {
            *mismatches += 1;
            println!("MISMATCH N={n} [{state}] {what}: slabtree {a} vs parry3d {b}");
        }
    };
    diff("ray hits", s.ray_hits.to_string(), p.ray_hits.to_string());
    diff("sum of hit distances", format!("{:.6}", s.ray_t_sum), format!("{:.6}", p.ray_t_sum));
    diff("overlaps (fat boxes)", s.overlap_fat.to_string(), p.overlap_fat.to_string());
    diff("overlaps (tight boxes)", s.overlap_tight.to_string(), p.overlap_tight.to_string());
    diff("self pairs (fat boxes)", s.pairs_fat.to_string(), p.pairs_fat.to_string());
    diff("self pairs (tight boxes)", s.pairs_tight.to_string(), p.pairs_tight.to_string());
}

fn run(n: usize, rows: &mut Vec<Row>, mismatches: &mut usize) {
    let mut rng = Rng(0x5EED_0000 + n as u64);
    let initial = scene(n, &mut rng);
    let mut last = initial.clone();
    let frames = frames(&mut last, &mut rng);
    let rays = rays(n, &mut rng);
    let half = scene_half(n);
    let queries: Vec<Aabb> =
        (0..OVERLAPS).map(|_| Aabb::from_center_half_extents(rng.in_cube(half), Vec3A::splat(QUERY_HALF))).collect();
    let mut push = |workload: String, slab: f64, parry: f64| rows.push(Row { n, workload, slab, parry });

    // Construction and teardown.
    let (mut slab_inserted, mut parry_inserted) = (None, None);
    let [s_insert, p_insert] = interleaved(
        MIN_ROUNDS,
        [&mut || record(&mut slab_inserted, || slab_insert_all(&initial)), &mut || {
            record(&mut parry_inserted, || parry_insert_all(&initial))
        }],
    );
    let (slab_tree, ids) = slab_inserted.expect("timed at least once");
    let parry_tree = parry_inserted.expect("timed at least once");
    push("insert all N (ms)".into(), s_insert, p_insert);
    // Removal alone, each run on a fresh clone.
    let [s_remove, p_remove] = interleaved(
        MIN_ROUNDS,
        [
            &mut || {
                let mut t = slab_tree.clone();
                timed(|| {
                    for &id in &ids {
                        t.remove(id).expect("live id");
                    }
                })
                .0
            },
            &mut || {
                let mut t = parry_tree.clone();
                timed(|| {
                    for i in 0..n as u32 {
                        t.remove(i);
                    }
                })
                .0
            },
        ],
    );
    push("remove all N (ms)".into(), s_remove, p_remove);
    let fat_items: Vec<(Aabb, u32)> = initial.iter().enumerate().map(|(i, b)| (*b, i as u32)).collect();
    let parry_fat: Vec<PAabb> = initial.iter().map(|b| to_parry(&fat(b))).collect();
    let (mut slab_built, mut parry_built) = (None, None);
    let [s_build, p_build] = interleaved(
        MIN_ROUNDS,
        [
            &mut || {
                record(&mut slab_built, || {
                    Dbvt::build_with_config(fat_items.iter().copied(), slab_config()).expect("valid boxes")
                })
            },
            &mut || record(&mut parry_built, || Bvh::from_leaves(BvhBuildStrategy::Binned, &parry_fat)),
        ],
    );
    let (built, parry_built) = (slab_built.expect("timed").0, parry_built.expect("timed"));
    let mut morton = built.clone();
    morton.rebuild_morton();
    println!(
        "N={n} [bulk build] slabtree SAH cost {:.1} (binned SAH), {:.1} (Morton); parry3d {:.1} (binned)",
        built.stats().sah_cost,
        morton.stats().sah_cost,
        parry_sah_cost(&parry_built)
    );
    push("bulk build, binned SAH (ms)".into(), s_build, p_build);

    // Frames: each round replays all of them from the inserted trees; the best round's mean.
    let mut states = Vec::new();
    for m in Maintenance::ALL {
        let (mut s_end, mut p_end) = (None, None);
        let [s_ms, p_ms] = interleaved(
            MIN_FRAME_ROUNDS,
            [
                &mut || {
                    let (t, tree) = slab_frames(&slab_tree, &ids, &frames, m);
                    s_end = Some(tree);
                    t * frames.len() as f64
                },
                &mut || {
                    let (t, bvh) = parry_frames(&parry_tree, &frames, m);
                    p_end = Some(bvh);
                    t * frames.len() as f64
                },
            ],
        );
        let (s_tree, p_tree) = (s_end.expect("timed"), p_end.expect("timed"));
        if let Err(e) = s_tree.validate() {
            *mismatches += 1;
            println!("MISMATCH N={n} slabtree tree invalid after {m:?} frames: {e:?}");
        }
        let per_frame = frames.len() as f64;
        push(format!("frame: {} (ms/frame)", m.label()), s_ms / per_frame, p_ms / per_frame);
        states.push((m.short(), s_tree, p_tree));
    }

    // Queries on the inserted trees and on the trees after each maintenance path.
    let (s_q, p_q, s_a, p_a) = time_queries(&slab_tree, &parry_tree, &initial, &rays, &queries);
    check(n, "after insert", &s_a, &p_a, mismatches);
    let mut query_rows = vec![("after insert", s_q, p_q, s_a)];
    let mut reference: Option<Answers> = None;
    for (state, s_tree, p_tree) in &states {
        let (s_q, p_q, s_a, p_a) = time_queries(s_tree, p_tree, &last, &rays, &queries);
        check(n, state, &s_a, &p_a, mismatches);
        // Every post-frame tree holds the same fat and tight boxes: one answer for all.
        match reference {
            None => reference = Some(s_a),
            Some(r) => check(n, &format!("{state} vs first post-frame state"), &s_a, &r, mismatches),
        }
        query_rows.push((state, s_q, p_q, s_a));
    }
    // Tree quality: slabtree's own statistics, parry's depth and SAH cost (the same measure).
    let quality = |state: &str, s: &Dbvt<u32>, p: &Bvh| {
        let st = s.stats();
        println!(
            "N={n} [{state}] slabtree height {} SAH cost {:.1}; parry3d depth {} SAH cost {:.1}",
            st.height,
            st.sah_cost,
            p.subtree_depth(0),
            parry_sah_cost(p)
        );
    };
    quality("after insert", &slab_tree, &parry_tree);
    for (state, s_tree, p_tree) in &states {
        quality(state, s_tree, p_tree);
    }
    for (state, s_q, p_q, a) in &query_rows {
        println!(
            "N={n} [{state}] rays: {} hits, sum t = {:.3}; overlaps: {} fat / {} tight; self pairs: {} fat / {} tight",
            a.ray_hits, a.ray_t_sum, a.overlap_fat, a.overlap_tight, a.pairs_fat, a.pairs_tight
        );
        push(format!("{RAYS} closest-hit rays on tight boxes, {state} (ms)"), s_q.rays, p_q.rays);
        push(format!("{RAYS} closest-hit rays, {state}, slabtree's binary tree (ms)"), s_q.rays_binary, p_q.rays);
        push(
            format!("{RAYS} closest-hit rays, {state}, slabtree's binary tree, a batch in flight (ms)"),
            s_q.rays_batch,
            p_q.rays,
        );
        push(format!("{OVERLAPS} overlap queries, half-size {QUERY_HALF}, {state} (ms)"), s_q.overlaps, p_q.overlaps);
        push(format!("self pairs, {state} (ms)"), s_q.pairs, p_q.pairs);
    }
}

/// `DBVT_PROFILE`: one library, one workload, `repeats` times (see the module docs).
fn profile(spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [lib, workload, n, rest @ ..] = parts.as_slice() else {
        return Err(format!("DBVT_PROFILE={spec}: expected LIB:WORKLOAD:N[:REPEATS]"));
    };
    let n: usize = n.parse().map_err(|e| format!("N: {e}"))?;
    let repeats: usize = rest.first().map_or(Ok(1), |r| r.parse()).map_err(|e| format!("repeats: {e}"))?;
    let mut rng = Rng(0x5EED_0000 + n as u64);
    let initial = scene(n, &mut rng);
    let mut last = initial.clone();
    let frames = frames(&mut last, &mut rng);
    let mut check = 0u64;
    // Per-repeat times in ms, where the workload records them.
    let mut times: Vec<f64> = Vec::new();
    match (*lib, *workload) {
        ("slabtree", "insert") => (0..repeats).for_each(|_| {
            let t = Instant::now();
            check += slab_insert_all(&initial).0.len() as u64;
            times.push(ms(t));
        }),
        ("parry", "insert") => (0..repeats).for_each(|_| {
            let t = Instant::now();
            check += parry_insert_all(&initial).leaf_count() as u64;
            times.push(ms(t));
        }),
        ("slabtree", "remove") => {
            let (tree, ids) = slab_insert_all(&initial);
            for _ in 0..repeats {
                let mut t = tree.clone();
                let t0 = Instant::now();
                for &id in &ids {
                    t.remove(id).expect("live id");
                }
                times.push(ms(t0));
                check += t.len() as u64;
            }
        }
        ("parry", "remove") => {
            let bvh = parry_insert_all(&initial);
            for _ in 0..repeats {
                let mut t = bvh.clone();
                let t0 = Instant::now();
                for i in 0..n as u32 {
                    t.remove(i);
                }
                times.push(ms(t0));
                check += t.leaf_count() as u64;
            }
        }
        ("slabtree", "build") => {
            let items: Vec<(Aabb, u32)> = initial.iter().enumerate().map(|(i, b)| (*b, i as u32)).collect();
            for _ in 0..repeats {
                let t = Instant::now();
                check += Dbvt::build_with_config(items.iter().copied(), slab_config()).expect("valid").0.len() as u64;
                times.push(ms(t));
            }
        }
        ("parry", "build") => {
            let fat: Vec<PAabb> = initial.iter().map(|b| to_parry(&fat(b))).collect();
            (0..repeats).for_each(|_| {
                let t = Instant::now();
                check += Bvh::from_leaves(BvhBuildStrategy::Binned, &fat).leaf_count() as u64;
                times.push(ms(t));
            });
        }
        ("slabtree", "reinsert") => {
            let (tree, ids) = slab_insert_all(&initial);
            for _ in 0..repeats {
                let (t, tree) = slab_frames(&tree, &ids, &frames, Maintenance::Reinsert);
                check += tree.len() as u64;
                times.push(t);
            }
        }
        ("parry", "reinsert") => {
            let bvh = parry_insert_all(&initial);
            for _ in 0..repeats {
                let (t, bvh) = parry_frames(&bvh, &frames, Maintenance::Reinsert);
                check += bvh.leaf_count() as u64;
                times.push(t);
            }
        }
        ("slabtree" | "parry", "overlaps") => {
            let half = scene_half(n);
            let queries: Vec<Aabb> = (0..OVERLAPS)
                .map(|_| Aabb::from_center_half_extents(rng.in_cube(half), Vec3A::splat(QUERY_HALF)))
                .collect();
            let pqueries: Vec<PAabb> = queries.iter().map(to_parry).collect();
            let (tree, _) = slab_insert_all(&initial);
            let bvh = parry_insert_all(&initial);
            let mut ws = QueryWorkspace::new();
            for _ in 0..repeats {
                let t = Instant::now();
                if *lib == "slabtree" {
                    for q in &queries {
                        tree.overlap(q, &mut ws, &mut |_: ProxyId, &i: &u32| {
                            check += u64::from(i);
                            LeafControl::Continue
                        })
                        .expect("valid box");
                    }
                } else {
                    for pq in &pqueries {
                        for i in bvh.intersect_aabb(pq) {
                            check += u64::from(i);
                        }
                    }
                }
                times.push(ms(t));
            }
        }
        ("slabtree", "rays" | "rays-refit" | "rays-reinsert") => {
            let (tree, ids) = slab_insert_all(&initial);
            let mut tree = match *workload {
                "rays" => tree,
                "rays-refit" => slab_frames(&tree, &ids, &frames, Maintenance::InPlaceRefit).1,
                _ => slab_frames(&tree, &ids, &frames, Maintenance::Reinsert).1,
            };
            if std::env::var_os("RELAYOUT").is_some() {
                tree.refit();
            }
            let tight = if *workload == "rays" { &initial } else { &last };
            let rays = rays(n, &mut rng);
            let (plain, mut best): (Vec<Ray>, _) = (rays.iter().map(|(r, _)| *r).collect(), Vec::new());
            for _ in 0..repeats {
                let t = Instant::now();
                check += if std::env::var_os("BATCH").is_some() {
                    slab_queries_rays_batch(&tree, tight, &plain, &mut best).0
                } else {
                    slab_queries_rays(&tree, tight, &rays, std::env::var_os("BINARY").is_none()).0
                };
                times.push(ms(t));
            }
        }
        ("parry", "rays" | "rays-refit" | "rays-reinsert") => {
            let bvh = parry_insert_all(&initial);
            let bvh = match *workload {
                "rays" => bvh,
                "rays-refit" => parry_frames(&bvh, &frames, Maintenance::InPlaceRefit).1,
                _ => parry_frames(&bvh, &frames, Maintenance::Reinsert).1,
            };
            let tight = if *workload == "rays" { &initial } else { &last };
            let rays = rays(n, &mut rng);
            for _ in 0..repeats {
                let t = Instant::now();
                check += parry_queries_rays(&bvh, tight, &rays).0;
                times.push(ms(t));
            }
        }
        ("slabtree", "pairs" | "pairs-refit" | "pairs-reinsert" | "pairs-optimized") => {
            let (tree, ids) = slab_insert_all(&initial);
            let mut tree = match *workload {
                "pairs" => tree,
                "pairs-refit" => slab_frames(&tree, &ids, &frames, Maintenance::InPlaceRefit).1,
                "pairs-reinsert" => slab_frames(&tree, &ids, &frames, Maintenance::Reinsert).1,
                _ => slab_frames(&tree, &ids, &frames, Maintenance::InPlaceOptimize).1,
            };
            if std::env::var_os("RELAYOUT").is_some() {
                tree.refit();
            }
            let mut ws = QueryWorkspace::new();
            for _ in 0..repeats {
                let t = Instant::now();
                // The main run's callback: each pair's tight boxes are tested.
                tree.self_pairs(&mut ws, |_, &a, _, &b| {
                    check += u64::from(last[a as usize].overlaps(&last[b as usize]));
                    PairControl::Continue
                })
                .expect("valid tree");
                times.push(ms(t));
            }
        }
        ("parry", "pairs" | "pairs-refit" | "pairs-reinsert" | "pairs-optimized") => {
            let bvh = parry_insert_all(&initial);
            let bvh = match *workload {
                "pairs" => bvh,
                "pairs-refit" => parry_frames(&bvh, &frames, Maintenance::InPlaceRefit).1,
                "pairs-reinsert" => parry_frames(&bvh, &frames, Maintenance::Reinsert).1,
                _ => parry_frames(&bvh, &frames, Maintenance::InPlaceOptimize).1,
            };
            let mut ws = BvhWorkspace::default();
            for _ in 0..repeats {
                let t = Instant::now();
                bvh.traverse_bvtt_single_tree::<false>(&mut ws, &mut |a, b| {
                    check += u64::from(last[a as usize].overlaps(&last[b as usize]))
                });
                times.push(ms(t));
            }
        }
        _ => return Err(format!("DBVT_PROFILE={spec}: unknown library or workload")),
    }
    println!("{lib} {workload} N={n} x {repeats}: checksum {check}");
    let visits = RAY_VISITS.each_ref().map(|v| v.load(Relaxed) as f64 / (RAYS * repeats) as f64);
    if visits[0] > 0.0 {
        println!("per ray: {:.1} nodes, {:.2} leaves visited", visits[0], visits[1]);
    }
    if !times.is_empty() {
        if std::env::var_os("DBVT_TIMES").is_some() {
            println!("{times:.2?}");
        }
        times.sort_by(f64::total_cmp);
        println!("ms per repeat: best {:.3}, median {:.3}", times[0], times[times.len() / 2]);
    }
    Ok(())
}

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
