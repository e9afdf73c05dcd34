//! Both trees built and maintained: insertion, the SAH cost, and the frames' maintenance in
//! each library's three ways ([`Maintenance`]).

use std::time::Instant;

use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::partitioning::{Bvh, BvhWorkspace, TraversalAction};
use slabtree::{Aabb, Dbvt, ProxyId};

use crate::MARGIN;
use crate::timing::ms;
use crate::workload::{Frame, fat, slab_config, to_parry};

/// A parry tree's SAH cost as `Dbvt::stats` measures slabtree's: 1 plus the half areas of every
/// node's box below the root (internal nodes and leaves) over the root's.
pub(crate) fn parry_sah_cost(bvh: &Bvh) -> f64 {
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

pub(crate) fn slab_insert_all(tight: &[Aabb]) -> (Dbvt<u32>, Vec<ProxyId>) {
    let mut tree = Dbvt::with_config(slab_config());
    let ids = tight.iter().enumerate().map(|(i, b)| tree.insert(*b, i as u32).expect("valid box")).collect();
    (tree, ids)
}

pub(crate) fn parry_insert_all(tight: &[Aabb]) -> Bvh {
    let mut bvh = Bvh::new();
    for (i, b) in tight.iter().enumerate() {
        bvh.insert(to_parry(&fat(b)), i as u32);
    }
    bvh
}

/// The per-frame maintenance paths, each run on both libraries.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Maintenance {
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
    pub(crate) const ALL: [Maintenance; 3] =
        [Maintenance::Reinsert, Maintenance::InPlaceRefit, Maintenance::InPlaceOptimize];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Maintenance::Reinsert => "reinsert (move_proxy | reinsert_or_update)",
            Maintenance::InPlaceRefit => "in place + refit (update_proxies+refit | update_partially+refit)",
            Maintenance::InPlaceOptimize => {
                "in place + optimize (update_proxies+refit+optimize_incremental(N/100) | update_partially+refit+optimize_incremental)"
            }
        }
    }

    pub(crate) fn short(self) -> &'static str {
        match self {
            Maintenance::Reinsert => "after reinsert frames",
            Maintenance::InPlaceRefit => "after in-place+refit frames",
            Maintenance::InPlaceOptimize => "after in-place+optimize frames",
        }
    }
}

/// Runs all frames on a clone of the slabtree tree; returns ms/frame and the final tree.
pub(crate) fn slab_frames(tree: &Dbvt<u32>, ids: &[ProxyId], frames: &[Frame], m: Maintenance) -> (f64, Dbvt<u32>) {
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

pub(crate) fn parry_frames(bvh: &Bvh, frames: &[Frame], m: Maintenance) -> (f64, Bvh) {
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
