//! One scene size: every workload on both libraries, the answers compared, a row of the table.

use glam::Vec3A;
use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::partitioning::{Bvh, BvhBuildStrategy};
use slabtree::{Aabb, Dbvt};
use slabtree_testkit::rng::Rng;

use crate::queries::{Answers, time_queries};
use crate::timing::{interleaved, record, timed};
use crate::trees::{Maintenance, parry_frames, parry_insert_all, parry_sah_cost, slab_frames, slab_insert_all};
use crate::workload::{fat, frames, rays, scene, scene_half, slab_config, to_parry};
use crate::{MIN_FRAME_ROUNDS, MIN_ROUNDS, OVERLAPS, QUERY_HALF, RAYS};

pub(crate) struct Row {
    pub(crate) n: usize,
    pub(crate) workload: String,
    pub(crate) slab: f64,
    pub(crate) parry: f64,
}

/// Compares the answers of both libraries; prints a MISMATCH line per difference.
pub(crate) fn check(n: usize, state: &str, s: &Answers, p: &Answers, mismatches: &mut usize) {
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

pub(crate) fn run(n: usize, rows: &mut Vec<Row>, mismatches: &mut usize) {
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
