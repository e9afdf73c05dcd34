//! The queries on both trees (closest-hit rays on the tight boxes, overlaps, self pairs), their
//! answers and times.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::partitioning::{Bvh, BvhWorkspace};
use parry3d::query::Ray as PRay;
use slabtree::{Aabb, Dbvt, LeafControl, PairControl, ProxyId, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2};

use crate::MIN_ROUNDS;
use crate::timing::{interleaved, record};
use crate::workload::to_parry;

/// Answers of the query workloads, compared between the libraries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Answers {
    pub(crate) ray_hits: u64,
    pub(crate) ray_t_sum: f64,
    pub(crate) overlap_fat: u64,
    pub(crate) overlap_tight: u64,
    pub(crate) pairs_fat: u64,
    pub(crate) pairs_tight: u64,
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QueryTimes {
    pub(crate) rays: f64,
    /// slabtree only: the rays through the binary tree (parry: the same as `rays`).
    pub(crate) rays_binary: f64,
    /// slabtree only: the rays through the binary tree, in flight together (parry: `rays`).
    pub(crate) rays_batch: f64,
    pub(crate) overlaps: f64,
    pub(crate) pairs: f64,
}

/// Nodes and leaves visited by slabtree's ray workload, summed over every call (the profile mode
/// prints them per ray).
pub(crate) static RAY_VISITS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// The closest-hit ray workload on slabtree: (hits, sum of hit distances). With `wide`, through
/// the tree's 8-wide copy ([`Dbvt::wide`], the API for read-heavy trees), made inside the timed
/// region; otherwise through the binary tree.
pub(crate) fn slab_queries_rays(tree: &Dbvt<u32>, tight: &[Aabb], rays: &[(Ray, PRay)], wide: bool) -> (u64, f64) {
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
pub(crate) fn nearest_tight(ray: &Ray, tight: &[Aabb], leaf: &RayLeaf<'_, u32>, best: &mut f32) -> RayControl {
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
pub(crate) fn slab_queries_rays_batch(
    tree: &Dbvt<u32>,
    tight: &[Aabb],
    rays: &[Ray],
    best: &mut Vec<f32>,
) -> (u64, f64) {
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
pub(crate) fn parry_queries_rays(bvh: &Bvh, tight: &[Aabb], rays: &[(Ray, PRay)]) -> (u64, f64) {
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
pub(crate) fn time_queries(
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
