//! [`BroadPhase::update_pairs`]: from the move buffer to the pairs that began and ended.
//!
//! Box2D v3's scheme (`b2UpdateBroadPhasePairs`), with Box2D's contact-edge lists for the ends:
//!
//! 1. The trees are tightened (refit) and their structure improved in proportion to what moved
//!    ([`Dbvt::optimize_incremental`], or a whole rebuild of a tree that mostly moved).
//! 2. Each changed object's pairs are checked again: a pair whose fat boxes no longer overlap,
//!    or that the filters or kinds now forbid, ends. A pair of two unchanged objects cannot
//!    change, so nothing else is looked at.
//! 3. Each changed object queries the trees of the kinds it pairs with, with its fat box. A pair
//!    of two changed objects is taken only from the one of lower slot, so it is found once. The
//!    searches only read, so above [`BroadPhaseConfig::parallel_threshold`] they run on rayon's
//!    threads, each on a run of the move buffer; their finds are added in move-buffer order.
//! 4. Both lists are sorted, so the events do not depend on the trees' shapes or the threads.
//!
//! [`Dbvt::optimize_incremental`]: crate::Dbvt::optimize_incremental
//! [`BroadPhaseConfig::parallel_threshold`]: super::BroadPhaseConfig::parallel_threshold

use super::object::Object;
use super::pair_set::{NO_PAIR, PairEvents};
use super::scratch::SearchScratch;
use super::{BodyKind, BroadPhase};
use crate::dbvt::{Dbvt, LeafControl, PairControl};

/// How much a mostly-moved tree's SAH cost may grow after its last rebuild before the next.
const REBUILD_GROWTH: f32 = 1.25;

/// Moved objects per search task on rayon's threads: enough work per task to pay for it.
#[cfg(feature = "parallel")]
const SEARCH_CHUNK: usize = 256;

impl<T> BroadPhase<T> {
    /// Finds the pairs that began and ended since the last call, and returns them.
    ///
    /// Call it once per frame, after the frame's moves. Only objects whose fat box, filter or
    /// kind changed are looked at. Once warm (the pair set, the move buffer and the trees have
    /// grown to the world's size), a call allocates nothing.
    pub fn update_pairs(&mut self) -> &PairEvents {
        let PairEvents { began, ended } = &mut self.events;
        began.clear();
        ended.clear();
        ended.append(&mut self.removed_pairs);
        self.tidy_trees();
        self.take_move_buffer();
        self.end_stale_pairs();
        self.find_new_pairs();
        for &i in &self.moved {
            self.objects[i as usize].moved = false;
        }
        self.moved.clear();
        self.moved_per_tree = [0; 3];
        self.events.began.sort_unstable();
        self.events.ended.sort_unstable();
        &self.events
    }

    /// Step 1: tightens the boxes the frame's moves grew and removals loosened, and keeps up the
    /// trees' structure in proportion to their moves. A tree whose proxies mostly moved (or were
    /// added), and whose SAH cost has grown by a quarter since its last rebuild, is rebuilt
    /// whole (fast movers outrun any incremental repair, as Box2D v3, which rebuilds its dynamic
    /// tree every step, assumes); otherwise an eighth of the moved leaves' worth of treelets is
    /// rebuilt (`docs/performance.md`, "The broad phase's choices, measured").
    fn tidy_trees(&mut self) {
        for k in 0..3 {
            let (tree, moved) = (&mut self.trees[k], self.moved_per_tree[k]);
            if moved == 0 {
                continue;
            }
            tree.refit();
            if moved * 2 >= tree.len() {
                let sah = tree.sah_cost();
                if sah > REBUILD_GROWTH * self.rebuilt_sah[k] {
                    // Static geometry is rebuilt rarely (when it was mostly added or moved) and
                    // queried every frame: it gets binned SAH, the best tree; moving objects
                    // get the Morton curve's, several times faster to build.
                    if BodyKind::ALL[k] == BodyKind::Static {
                        tree.rebuild();
                    } else {
                        tree.rebuild_morton();
                    }
                    self.rebuilt_sah[k] = tree.sah_cost();
                    continue;
                }
            }
            tree.optimize_incremental(moved.div_ceil(8));
        }
    }

    /// Leaves in `moved` each changed live slot once, in the order of their first change.
    fn take_move_buffer(&mut self) {
        let objects = &mut self.objects;
        // A slot removed and reused may be listed twice: the flag is cleared at its first entry
        // (and set again below), so its second is dropped.
        self.moved.retain(|&i| std::mem::take(&mut objects[i as usize].moved));
        for &i in &self.moved {
            objects[i as usize].moved = true;
        }
    }

    /// Step 2: ends the pairs of changed objects that no longer pair.
    fn end_stale_pairs(&mut self) {
        for &i in &self.moved {
            let mut p = self.pairs.first(i);
            while p != NO_PAIR {
                let ([a, b], next) = self.pairs.read(p, i);
                if !self.still_pairs(a, b) {
                    self.pairs.remove(p);
                    self.events.ended.push((self.id_of(a), self.id_of(b)));
                }
                p = next;
            }
        }
    }

    /// `true` when slots `a` and `b` (live) may pair and their fat boxes overlap.
    fn still_pairs(&self, a: u32, b: u32) -> bool {
        let (oa, ob) = (&self.objects[a as usize], &self.objects[b as usize]);
        may_pair(oa, ob, self.config.kinematic_pairs) && oa.fat.overlaps(&ob.fat)
    }

    /// Step 3 when most objects changed: every overlapping pair of the trees, from the trees'
    /// own pair walks ([`Dbvt::self_pairs`], [`Dbvt::tree_pairs`]), which visit each pair once
    /// where one query per object would meet it from both sides; pairs of two unchanged
    /// objects are passed over.
    fn find_by_tree_pairs(&mut self) {
        let mut found = std::mem::take(&mut self.search[0].found);
        found.clear();
        let objects = &self.objects;
        let pairs = &self.pairs;
        let mut ws = std::mem::take(&mut self.search[0].ws);
        let mut take = |a: u32, b: u32| {
            let (oa, ob) = (&objects[a as usize], &objects[b as usize]);
            if (oa.moved || ob.moved) && oa.filter.pairs_with(&ob.filter) {
                let (a, b) = if a < b { (a, b) } else { (b, a) };
                if !pairs.contains(a, b) {
                    found.push((a, b));
                }
            }
            PairControl::Continue
        };
        let [st, ki, dy] = &self.trees;
        let _ = dy.self_pairs(&mut ws, |_, &a, _, &b| take(a, b));
        let _ = dy.tree_pairs(st, &mut ws, |_, &a, _, &b| take(a, b));
        let _ = dy.tree_pairs(ki, &mut ws, |_, &a, _, &b| take(a, b));
        if self.config.kinematic_pairs {
            let _ = ki.self_pairs(&mut ws, |_, &a, _, &b| take(a, b));
            let _ = ki.tree_pairs(st, &mut ws, |_, &a, _, &b| take(a, b));
        }
        self.search[0].found = found;
        self.search[0].ws = ws;
        for &(a, b) in &self.search[0].found {
            self.pairs.insert(a, b);
            self.events.began.push((self.id_of(a), self.id_of(b)));
        }
    }

    /// Step 3: each changed object's new pairs, added in move-buffer order (or, when most
    /// objects changed and one thread searches, [`BroadPhase::find_by_tree_pairs`]).
    fn find_new_pairs(&mut self) {
        let tasks = self.search_tasks();
        if self.search.len() < tasks {
            self.search.resize_with(tasks, SearchScratch::default);
        }
        if tasks == 1 && self.moved.len() * 4 >= self.len() * 3 {
            return self.find_by_tree_pairs();
        }
        let search = &mut self.search[..tasks];
        let view =
            SearchView { objects: &self.objects, trees: &self.trees, kinematic_pairs: self.config.kinematic_pairs };
        let pairs = &self.pairs;
        let run = |moved: &[u32], scratch: &mut SearchScratch| {
            scratch.found.clear();
            for &i in moved {
                view.search(i, pairs, scratch);
            }
        };
        if tasks == 1 {
            run(&self.moved, &mut search[0]);
        } else {
            #[cfg(feature = "parallel")]
            {
                use rayon::prelude::*;
                search.par_iter_mut().zip(self.moved.par_chunks(SEARCH_CHUNK)).for_each(|(s, m)| run(m, s));
            }
        }
        for scratch in &self.search[..tasks] {
            for &(a, b) in &scratch.found {
                self.pairs.insert(a, b);
                self.events.began.push((self.id_of(a), self.id_of(b)));
            }
        }
    }

    /// How many tasks the search runs as: one on the calling thread, or one per
    /// [`SEARCH_CHUNK`] moved objects.
    fn search_tasks(&self) -> usize {
        #[cfg(feature = "parallel")]
        if self.moved.len() >= self.config.parallel_threshold.max(1) && rayon::current_num_threads() > 1 {
            return self.moved.len().div_ceil(SEARCH_CHUNK);
        }
        1
    }
}

/// `true` when two objects' kinds and filters let them pair.
#[inline(always)]
fn may_pair(a: &Object, b: &Object, kinematic_pairs: bool) -> bool {
    kinds_pair(a.kind, b.kind, kinematic_pairs) && a.filter.pairs_with(&b.filter)
}

/// `true` when objects of these kinds can pair: one is dynamic, or (with `kinematic_pairs`) one
/// is kinematic. Symmetric.
#[inline(always)]
fn kinds_pair(a: BodyKind, b: BodyKind, kinematic_pairs: bool) -> bool {
    use BodyKind::*;
    match (a, b) {
        (Dynamic, _) | (_, Dynamic) => true,
        (Kinematic, _) | (_, Kinematic) => kinematic_pairs,
        (Static, Static) => false,
    }
}

/// What the pair search reads, shared by its tasks.
struct SearchView<'a> {
    objects: &'a [Object],
    trees: &'a [Dbvt<u32>; 3],
    kinematic_pairs: bool,
}

impl SearchView<'_> {
    /// Adds to `scratch.found` the new pairs of changed slot `i`: the objects of the trees its
    /// kind pairs with whose fat boxes overlap its own, that its filter passes, and that are not
    /// tracked yet, leaving to a changed partner of lower slot the pairs it finds itself.
    fn search(&self, i: u32, pairs: &super::pair_set::PairSet, scratch: &mut SearchScratch) {
        let me = self.objects[i as usize];
        let fat = me.fat;
        let SearchScratch { ws, found } = scratch;
        for kind in BodyKind::ALL {
            if !kinds_pair(me.kind, kind, self.kinematic_pairs) {
                continue;
            }
            let _ = self.trees[kind.tree()].overlap(&fat, ws, &mut |_, &other: &u32| {
                let them = &self.objects[other as usize];
                let theirs = them.moved && other < i;
                if other != i && !theirs && me.filter.pairs_with(&them.filter) {
                    let (a, b) = if i < other { (i, other) } else { (other, i) };
                    if !pairs.contains(a, b) {
                        found.push((a, b));
                    }
                }
                LeafControl::Continue
            });
        }
    }
}
