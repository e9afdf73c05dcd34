//! Incremental optimisation: whole rebuilds of small trees, refreshes of mid-sized ones, and
//! in-place treelet rebuilds of large ones.
//!
//! Moving proxies leave a tree whose structure was chosen for where they *were*. Bullet's
//! `btDbvt::optimizeIncremental` and the reinsertion passes of Bittner et al. (2013) repair it leaf
//! by leaf; parry's `Bvh::optimize_incremental` instead rebuilds whole subtrees with binned SAH,
//! round-robin, about 5% of the leaves per call, and the top of the tree every other call. We do
//! the latter, because of the arena's layout:
//!
//! When the arena is in depth-first pre-order (child 0 right after its parent, as `rebuild` and
//! `relayout` leave it), every subtree of `k` leaves is the `k - 1` consecutive nodes starting at
//! its root. Rebuilding a subtree over the same leaves and writing it back in pre-order into the
//! same range keeps the whole arena in pre-order, so `refit` stays one sequential sweep (a
//! reinsertion scatters nodes, and the next refit then walks the tree, which at 100k proxies was
//! a large part of a scene frame; `docs/performance.md`). The subtree's box, the union of the same leaves, does
//! not change, so no ancestor needs a refit.
//!
//! A treelet rebuild cannot move a leaf out of its treelet, so every [`TOP_PERIOD`]-th round also
//! rebuilds the top of the tree over its subtrees of at most √n leaves (as parry's root
//! refinement). A round's cost is fixed by the tree's size, so a budget smaller than a treelet
//! is saved up as credit and a round runs once it covers one: the caller's budget sets the
//! average cost per call.
//!
//! Three regimes, by the tree's size:
//! - up to [`DbvtConfig::whole_rebuild_max`] leaves (0 by default): one treelet, the whole tree
//!   rebuilt with binned SAH once the credit covers every leaf;
//! - up to [`DbvtConfig::refresh_max`] leaves (131072 by default): *refreshed*, a whole rebuild
//!   along a Morton curve ([`Dbvt::rebuild_morton`], a linear BVH: Lauterbach et al. 2009, Karras
//!   2012) once the SAH cost has grown by [`DbvtConfig::refresh_growth`] since the last whole
//!   rebuild (as RT-DEFORM, Lauterbach et al. 2006, rebuilds once refitting has degraded the
//!   tree), its cost charged to the following calls' budgets. A tree that does not move never
//!   grows in cost, so it is never refreshed; a tree built by insertion, which has no rebuild to
//!   age from, is rebuilt with binned SAH at the first look if even the Morton tree would cost
//!   less by the SAH;
//! - larger trees: treelets and top rebuilds, as above.
//!
//! Why these regimes and defaults, with the measurements: `docs/performance.md`, "The
//! incremental optimiser".
//!
//! [`DbvtConfig::whole_rebuild_max`]: super::DbvtConfig::whole_rebuild_max
//! [`DbvtConfig::refresh_max`]: super::DbvtConfig::refresh_max
//! [`DbvtConfig::refresh_growth`]: super::DbvtConfig::refresh_growth

use super::Dbvt;
use super::node::{ChildRef, NULL};
use crate::build::BuildItem;

/// Every this many rounds, `optimize_incremental` also rebuilds the top of the tree: often
/// enough that the top keeps up with the treelets below it, rarely enough that its relayout of
/// the whole arena (most of a round's cost at 100k proxies) stays a small part of the frames
/// (`docs/performance.md`).
pub(crate) const TOP_PERIOD: u32 = 8;

/// A refresh (a whole [`Dbvt::rebuild_morton`]) costs about a ninth of a binned-SAH rebuild of
/// as many leaves (`docs/performance.md`), rounded up to an eighth: it uses up
/// `n / REFRESH_COST_DIVISOR` leaves of budget.
const REFRESH_COST_DIVISOR: u64 = 8;

/// The refresh checks the SAH cost (one sweep of the arena) every this many calls of
/// `optimize_incremental`, so that the check stays a small part of a call.
const REFRESH_CHECK_PERIOD: u32 = 8;

/// A subtree of a pre-ordered arena: its root node, its node count (`leaves - 1`) and the ordinal
/// of its first leaf in depth-first order.
#[derive(Clone, Copy, Debug)]
struct Subtree {
    root: u32,
    nodes: u32,
    first_leaf: u32,
}

impl Subtree {
    fn leaves(&self) -> u32 {
        self.nodes + 1
    }
}

impl<T> Dbvt<T> {
    /// Improves the tree's structure, spending about `budget` leaves of (binned-SAH) rebuild
    /// work per call on average, in one of three ways by the tree's size `n` (see the module
    /// docs for the measurements behind each):
    ///
    /// - up to [`DbvtConfig::whole_rebuild_max`](super::DbvtConfig::whole_rebuild_max) (0 by
    ///   default), the tree is one treelet, rebuilt whole with binned SAH once the saved-up
    ///   budget covers it;
    /// - up to [`DbvtConfig::refresh_max`](super::DbvtConfig::refresh_max) (131072), it is
    ///   refreshed: rebuilt whole with [`Dbvt::rebuild_morton`] once its SAH cost has grown by
    ///   [`DbvtConfig::refresh_growth`](super::DbvtConfig::refresh_growth) since the last whole
    ///   rebuild and the budgets since the last refresh have paid for it (`n / 8` leaves); a
    ///   tree that does not move is left alone, except that a tree built by insertion is
    ///   rebuilt with binned SAH at the first call if a Morton tree's SAH cost would be lower
    ///   (one longer call, charged to the following budgets);
    /// - above, subtrees ("treelets") of up to `max(8, 4√n)` leaves are rebuilt in place with
    ///   binned SAH, round-robin in depth-first leaf order, and every eighth round also
    ///   rebuilds the top of the tree over its subtrees of at most a quarter of that size.
    ///
    /// A budget smaller than a treelet is saved up: such calls only add to a credit, and a round
    /// runs once the credit covers a treelet (so `optimize_incremental(n / 40)` rebuilds one 4√n-leaf treelet every
    /// few calls in a large tree, and a tree under `whole_rebuild_max` whole every 40 calls:
    /// either costs that much on average). Setting both limits to 0 gives treelets at every
    /// size. Ids, fat boxes and query results are unchanged; queries get faster. Refits first if [`Dbvt::update_proxy`] changes are
    /// pending. Returns the number of leaves whose subtree was rebuilt by this call: 0 exactly
    /// when the call only saved credit and left the tree as it was.
    ///
    /// Call it once per frame with about 1–5% of [`Dbvt::len`] when proxies move.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt};
    /// use glam::Vec3A;
    /// let at = |x: usize| Aabb::from_center_half_extents(Vec3A::new(x as f32, 0.0, 0.0), Vec3A::splat(0.4));
    /// let (mut tree, ids) = Dbvt::build((0..1000).map(|i| (at(i), i)))?;
    /// let built = tree.stats().sah_cost;
    /// // A tree that does not move is left as it is.
    /// assert_eq!(tree.optimize_incremental(13), 0);
    /// // Every proxy jumps elsewhere: the refit keeps answers right, but the structure is stale.
    /// let moves: Vec<_> = ids.iter().enumerate().map(|(i, &id)| (id, at(i * 7919 % 1000), Vec3A::ZERO)).collect();
    /// tree.update_proxies(&moves)?;
    /// tree.refit();
    /// assert!(tree.stats().sah_cost > 10.0 * built);
    /// // A frame loop's calls, 1/80 of the leaves each: within eight, one refreshes every leaf.
    /// let rebuilt: usize = (0..8).map(|_| tree.optimize_incremental(13)).sum();
    /// assert_eq!(rebuilt, 1000);
    /// assert!(tree.stats().sah_cost < 1.25 * built);
    /// tree.validate()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn optimize_incremental(&mut self, budget: usize) -> usize {
        if self.refit_pending {
            self.refit();
        }
        let n = self.proxy_count;
        if n < 3 || budget == 0 {
            return 0;
        }
        if n as usize > self.config.whole_rebuild_max && n as usize <= self.config.refresh_max {
            return self.refresh_if_aged(budget as u64);
        }
        // Treelets of 4√n leaves, as parry's, whatever the budget (capping them at a small
        // budget shrank them below the top rebuild's groups, and trees of moving proxies
        // decayed); a small budget makes rounds rarer instead. The credit is capped so that a
        // tree left alone for a long time does not pay it all back in one call.
        let size = if n as usize <= self.config.whole_rebuild_max {
            n
        } else {
            ((4.0 * (n as f32).sqrt()).ceil() as u32).max(8)
        };
        let cap = 2 * u64::from(n.max(size));
        self.optimizer.credit = (self.optimizer.credit + budget as u64).min(cap);
        if self.optimizer.credit < u64::from(size) {
            return 0;
        }
        if !self.ordered {
            self.relayout();
        }
        self.optimizer.calls = self.optimizer.calls.wrapping_add(1);
        // (The top of a tree rebuilt whole needs no rebuild of its own.)
        if size < n && self.optimizer.calls.is_multiple_of(TOP_PERIOD) {
            // Pseudo-leaves a quarter of a treelet: each treelet then spans several of them, so
            // leaves mix across the groups the top rebuild moves around. (With pseudo-leaves as
            // big as treelets, a leaf could never leave its group, and trees of moving proxies
            // decayed far below a rebuild's quality; `docs/performance.md`.)
            self.rebuild_top((size / 4).max(2));
        }
        // At most one pass over the leaves per round: a credit above `n` (it is capped at `2n`)
        // would have the wrap-around pick the same treelets again.
        let credit = self.optimizer.credit.min(u64::from(n)) as u32;
        let treelets = self.pick_treelets(size, credit);
        let mut items = Vec::with_capacity(size as usize);
        let mut done = 0;
        for t in treelets {
            self.rebuild_treelet(t, &mut items);
            done += t.leaves() as usize;
        }
        // A round always finds a treelet: the larger child of any subtree over `size` leaves has
        // at least 5, so descending from the root ends at one of 3 to `size` leaves.
        debug_assert!(done > 0, "a round rebuilt nothing");
        // Treelets are picked until they cover the credit, so this spends all of it.
        self.optimizer.credit = self.optimizer.credit.saturating_sub(done as u64);
        done
    }

    /// The refresh (see [`DbvtConfig::refresh_max`](super::DbvtConfig::refresh_max)): `budget`
    /// first pays back the last refresh's cost; with nothing left owing, every
    /// [`REFRESH_CHECK_PERIOD`]-th call measures the SAH cost, and rebuilds the tree with
    /// [`Dbvt::rebuild_morton`] once it has grown by `refresh_growth` since the last whole
    /// rebuild (Lauterbach et al., "RT-DEFORM", 2006, rebuild when refitting has degraded the
    /// tree by a set ratio). Returns the leaves rebuilt: all of them or none.
    fn refresh_if_aged(&mut self, budget: u64) -> usize {
        let paid = budget.min(self.optimizer.refresh_debt);
        self.optimizer.refresh_debt -= paid;
        if self.optimizer.refresh_debt > 0 {
            return 0;
        }
        let check = self.optimizer.refresh_checks.is_multiple_of(REFRESH_CHECK_PERIOD);
        self.optimizer.refresh_checks = self.optimizer.refresh_checks.wrapping_add(1);
        if !check {
            return 0;
        }
        let sah = self.sah_cost();
        let n = self.proxy_count;
        if self.optimizer.rebuilt_sah == 0.0 {
            // Never rebuilt (built by insertion). An inserted tree can beat a Morton build
            // (sorted, near-1D scenes) or lose to it clearly (random boxes;
            // `docs/performance.md`), so the first look sorts the proxies along the curve and
            // costs the Morton tree without writing it. If the inserted tree loses, it is
            // rebuilt once with binned SAH, the best tree, which later refreshes age from.
            // Otherwise aging counts from here. The
            // trial and the rebuild are charged to later budgets as refreshes are.
            self.sort_morton();
            let trial = self.sorted_morton_sah();
            if trial < sah {
                self.rebuild_binned(false);
                self.optimizer.refresh_debt = u64::from(n).saturating_sub(budget - paid);
                return n as usize;
            }
            self.optimizer.refresh_debt = (u64::from(n) / REFRESH_COST_DIVISOR).saturating_sub(budget - paid);
            self.optimizer.rebuilt_sah = sah;
            return 0;
        }
        if sah <= self.optimizer.rebuilt_sah * (1.0 + self.config.refresh_growth) {
            return 0;
        }
        self.rebuild_morton();
        self.optimizer.refresh_debt = (u64::from(n) / REFRESH_COST_DIVISOR).saturating_sub(budget - paid);
        n as usize
    }

    /// The root subtree, or `None` when the root is a leaf or absent.
    fn root_subtree(&self) -> Option<Subtree> {
        let root = self.root.filter(|r| !r.is_leaf())?;
        debug_assert!(self.ordered && root.index() == 0);
        Some(Subtree { root: root.index(), nodes: self.nodes.len() as u32, first_leaf: 0 })
    }

    /// The two children of an internal subtree, from pre-order arithmetic alone: child 0 (if
    /// internal) starts right after the root, child 1 right after child 0's range. A leaf child is
    /// `Err(proxy)`.
    fn split_subtree(&self, s: Subtree) -> [Result<Subtree, u32>; 2] {
        let c = self.nodes[s.root as usize].child;
        let nodes0 = match (c[0].is_leaf(), c[1].is_leaf()) {
            (true, _) => 0,
            (false, false) => c[1].index() - s.root - 1,
            (false, true) => s.nodes - 1,
        };
        let nodes1 = s.nodes - 1 - nodes0;
        let side = |k: usize, nodes: u32, first_leaf: u32| {
            if c[k].is_leaf() {
                Err(c[k].index())
            } else {
                debug_assert_eq!(c[k].index(), if k == 0 { s.root + 1 } else { s.root + 1 + nodes0 });
                Ok(Subtree { root: c[k].index(), nodes, first_leaf })
            }
        };
        [side(0, nodes0, s.first_leaf), side(1, nodes1, s.first_leaf + nodes0 + 1)]
    }

    /// Disjoint subtrees of at most `size` leaves (and at least 3: smaller ones have a single
    /// shape) covering about `budget` leaves, starting at the round-robin cursor and wrapping once.
    fn pick_treelets(&mut self, size: u32, budget: u32) -> Vec<Subtree> {
        let mut out = Vec::new();
        let Some(root) = self.root_subtree() else { return out };
        let mut cursor = if self.optimizer.cursor >= root.leaves() { 0 } else { self.optimizer.cursor };
        let mut covered = 0;
        let mut stack = Vec::with_capacity(64);
        for pass in 0..2 {
            stack.clear();
            stack.push(root);
            while let Some(s) = stack.pop() {
                if covered >= budget {
                    break;
                }
                if s.first_leaf + s.leaves() <= cursor {
                    continue;
                }
                if s.leaves() <= size {
                    if s.leaves() >= 3 {
                        out.push(s);
                        covered += s.leaves();
                    }
                    cursor = s.first_leaf + s.leaves();
                    continue;
                }
                let [c0, c1] = self.split_subtree(s);
                // Child 0 is visited first: push it last.
                stack.extend(c1.ok());
                stack.extend(c0.ok());
            }
            if covered >= budget || pass == 1 {
                break;
            }
            cursor = 0;
        }
        self.optimizer.cursor = if cursor >= root.leaves() { 0 } else { cursor };
        out
    }

    /// Rebuilds subtree `t` with binned SAH over its own leaves, into its own node range.
    fn rebuild_treelet(&mut self, t: Subtree, items: &mut Vec<BuildItem>) {
        items.clear();
        for node in &self.nodes[t.root as usize..(t.root + t.nodes) as usize] {
            for s in 0..2 {
                if node.child[s].is_leaf() {
                    items.push(BuildItem::new(node.bounds(s), node.child[s].raw()));
                }
            }
        }
        debug_assert_eq!(items.len() as u32, t.leaves());
        let (parent, slot) = (self.nodes[t.root as usize].parent, self.nodes[t.root as usize].slot);
        let old_bounds = self.bounds_of(ChildRef::node(t.root));
        let built = super::rebuild::sah_builder(usize::MAX, false).build(items);
        self.emit_preorder(&built, items, parent, slot, t.root..);
        // The new nodes are exact unions of the leaves. The treelet's box is the same unless an
        // enlarged (stale) node inside had left it loose; then the parent must be refitted.
        if parent != NULL && self.bounds_of(ChildRef::node(t.root)) != old_bounds {
            self.nodes[parent as usize].stale = true;
        }
    }

    /// Rebuilds the nodes above the subtrees of at most `max_leaves` leaves with binned SAH over
    /// those subtrees' boxes, then lays the arena out in pre-order again.
    fn rebuild_top(&mut self, max_leaves: u32) {
        let Some(root) = self.root_subtree() else { return };
        if root.leaves() <= max_leaves {
            return;
        }
        // Cut the tree into pseudo-leaves, and note the nodes above the cut for reuse.
        let mut items = Vec::new();
        let mut top_nodes = Vec::new();
        let mut stack = vec![root];
        while let Some(s) = stack.pop() {
            top_nodes.push(s.root);
            let node = self.nodes[s.root as usize];
            for (k, c) in self.split_subtree(s).into_iter().enumerate() {
                match c {
                    Ok(sub) if sub.leaves() > max_leaves => stack.push(sub),
                    _ => items.push(BuildItem::new(node.bounds(k), node.child[k].raw())),
                }
            }
        }
        debug_assert_eq!(items.len(), top_nodes.len() + 1);
        let built = super::rebuild::sah_builder(usize::MAX, false).build(&mut items);
        // Emit the new top into the old top's node slots (in any order: the relayout below puts
        // the arena back in pre-order).
        self.emit_preorder(&built, &items, NULL, 0, top_nodes.into_iter());
        self.relayout();
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3A;

    use super::super::{Dbvt, DbvtConfig};
    use crate::math::Aabb;

    use slabtree_testkit::rng::units;

    fn inserted(boxes: &[Aabb]) -> Dbvt<usize> {
        let mut tree = Dbvt::with_config(DbvtConfig { margin: 0.0, prediction: 0.0, ..DbvtConfig::default() });
        for (i, b) in boxes.iter().enumerate() {
            tree.insert(*b, i).unwrap();
        }
        tree
    }

    fn random_boxes(n: usize, seed: u64) -> Vec<Aabb> {
        let mut r = units(seed);
        (0..n)
            .map(|_| {
                let c = Vec3A::new(r(), r(), r()) * 40.0;
                Aabb::from_center_half_extents(c, Vec3A::new(r(), r(), r()) * 0.9 + 0.1)
            })
            .collect()
    }

    /// The dry run's cost is the cost of the tree the Morton rebuild then writes (the sums run
    /// in another order, in f64, so the f32 results may differ in the last bit).
    #[test]
    fn sorted_morton_sah_is_the_cost_of_the_morton_tree() {
        for n in [1, 2, 3, 17, 1000] {
            let mut tree = inserted(&random_boxes(n, n as u64));
            tree.sort_morton();
            let predicted = tree.sorted_morton_sah();
            tree.rebuild_morton();
            let written = tree.stats().sah_cost;
            assert!((predicted - written).abs() <= f32::EPSILON * written, "n = {n}: {predicted} vs {written}");
        }
    }

    /// A tree built by insertion is rebuilt (binned SAH) at the first call exactly when the
    /// Morton tree costs less; then (with nothing moving) it is left alone.
    #[test]
    fn an_inserted_tree_is_refreshed_only_when_a_morton_tree_is_better() {
        // Random boxes in a cube: insertion loses to the Morton tree.
        let mut tree = inserted(&random_boxes(4000, 9));
        let before = tree.stats().sah_cost;
        let mut morton = tree.clone();
        morton.rebuild_morton();
        assert!(morton.stats().sah_cost < before, "the scene no longer shows the case");
        // The optimiser's rebuild is the best binned build, on every axis.
        let mut binned = tree.clone();
        binned.rebuild_binned(false);
        assert_eq!(tree.optimize_incremental(40), 4000);
        assert_eq!(tree.stats().sah_cost, binned.stats().sah_cost);
        tree.validate().unwrap();
        assert_eq!((0..100).map(|_| tree.optimize_incremental(40)).sum::<usize>(), 0);

        // Unit boxes in a row, inserted in order, on a slanted line: insertion wins.
        let row: Vec<Aabb> = (0..4000)
            .map(|i| Aabb::from_center_half_extents(Vec3A::new(i as f32, 0.37 * i as f32, 0.0), Vec3A::splat(0.5)))
            .collect();
        let mut tree = inserted(&row);
        let before = tree.stats().sah_cost;
        let mut morton = tree.clone();
        morton.rebuild_morton();
        assert!(morton.stats().sah_cost > before, "the scene no longer shows the case");
        assert_eq!((0..100).map(|_| tree.optimize_incremental(40)).sum::<usize>(), 0);
        assert_eq!(tree.stats().sah_cost, before);
    }
}
