//! One library and one workload, for callgrind (`DBVT_PROFILE`).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use glam::Vec3A;
use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
use slabtree::{Aabb, Dbvt, LeafControl, PairControl, ProxyId, QueryWorkspace, Ray};
use slabtree_testkit::rng::Rng;

use crate::queries::{RAY_VISITS, parry_queries_rays, slab_queries_rays, slab_queries_rays_batch};
use crate::timing::ms;
use crate::trees::{Maintenance, parry_frames, parry_insert_all, slab_frames, slab_insert_all};
use crate::workload::{fat, frames, rays, scene, scene_half, slab_config, to_parry};
use crate::{OVERLAPS, QUERY_HALF, RAYS};

/// `DBVT_PROFILE`: one library, one workload, `repeats` times (see the module docs).
pub(crate) fn profile(spec: &str) -> Result<(), String> {
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
