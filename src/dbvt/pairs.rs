//! Pair queries: every overlapping pair of proxies within one tree (parry's
//! `traverse_bvtt_single_tree`, see [`Dbvt::self_pairs`]), and between two trees (Bullet's
//! `collideTT`: a stack of (subtree, subtree) pairs is descended, always splitting the larger
//! internal side). Either way the work follows the overlap structure rather than n².

use super::node::{BoxLanes, ChildRef};
use super::traverse::{PairEntry, QueryStats, QueryWorkspace};
use super::{Dbvt, DbvtError, ProxyId};
use crate::math::Aabb;

/// What a pair policy tells the traversal after a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairControl {
    /// Go on.
    Continue,
    /// End the query now.
    Stop,
}

impl<T> Dbvt<T> {
    /// The children of `c` with their bounds (`c` internal).
    #[inline]
    fn children_of(&self, c: ChildRef) -> [(ChildRef, Aabb); 2] {
        let n = &self.nodes[c.index() as usize];
        [(n.child[0], n.bounds(0)), (n.child[1], n.bounds(1))]
    }

    /// Calls `callback(a, data_a, b, data_b)` once for every unordered pair of distinct proxies
    /// whose fat boxes overlap (touching counts). Within a pair, `a.index() < b.index()`.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt, PairControl, QueryWorkspace};
    /// use glam::Vec3A;
    /// let (tree, _) = Dbvt::build((0..4).map(|i| (Aabb::new(Vec3A::splat(i as f32), Vec3A::splat(i as f32 + 0.5)), i)))?;
    /// let mut ws = QueryWorkspace::new();
    /// let mut pairs = Vec::new();
    /// tree.self_pairs(&mut ws, |_, a, _, b| { pairs.push((*a, *b)); PairControl::Continue })?;
    /// // Fat boxes (margin 0.1) of neighbours reach each other: 0.5 + 0.1 >= 1 - 0.1 fails, so none.
    /// assert!(pairs.is_empty());
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn self_pairs<F>(&self, ws: &mut QueryWorkspace, mut callback: F) -> Result<QueryStats, DbvtError>
    where
        F: FnMut(ProxyId, &T, ProxyId, &T) -> PairControl,
    {
        if self.refit_pending {
            return Err(DbvtError::RefitPending);
        }
        let mut stats = QueryStats::default();
        let Some(root) = self.root else { return Ok(stats) };
        if root.is_leaf() {
            return Ok(stats);
        }
        // The descent of parry's `traverse_bvtt_single_tree` with an explicit stack: a node
        // against itself opens into each internal child against itself and, when the two
        // children overlap, the children against each other; two overlapping subtrees open both
        // sides at once (the four child pairs in one SIMD test); a leaf against a subtree
        // descends the subtree with the leaf's box held (`leaf_against`). The stacks hold only
        // node references: the boxes are read from the nodes, which hold their children's.
        let (node_pairs, subtree) = (&mut ws.node_pairs, &mut ws.subtree);
        node_pairs.clear();
        node_pairs.push((root, root));
        let mut pairs = SelfPairs { tree: self, callback: &mut callback, stats: &mut stats, subtree };
        while let Some((a, b)) = node_pairs.pop() {
            pairs.stats.nodes_visited += 1;
            let na = &self.nodes[a.index() as usize];
            if a == b {
                for c in na.child {
                    if !c.is_leaf() {
                        self.prefetch_node(c.index());
                        node_pairs.push((c, c));
                    }
                }
                let (b0, b1) = (na.bounds(0), na.bounds(1));
                if b0.overlaps(&b1) && !pairs.cross(na.child[0], &b0, na.child[1], &b1, node_pairs) {
                    break;
                }
                continue;
            }
            let nb = &self.nodes[b.index() as usize];
            let mut mask = na.cross_overlaps(nb);
            let mut stop = false;
            while mask != 0 && !stop {
                let bit = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let (i, j) = (bit >> 1, bit & 1);
                stop = !pairs.cross(na.child[i], &na.bounds(i), nb.child[j], &nb.bounds(j), node_pairs);
            }
            if stop {
                break;
            }
        }
        Ok(stats)
    }

    /// Calls `callback(a, data_a, b, data_b)` for every proxy `a` of this tree and `b` of `other`
    /// whose fat boxes overlap: Bullet's `collideTT`.
    pub fn tree_pairs<U, F>(
        &self,
        other: &Dbvt<U>,
        ws: &mut QueryWorkspace,
        mut callback: F,
    ) -> Result<QueryStats, DbvtError>
    where
        F: FnMut(ProxyId, &T, ProxyId, &U) -> PairControl,
    {
        if self.refit_pending || other.refit_pending {
            return Err(DbvtError::RefitPending);
        }
        let mut stats = QueryStats::default();
        let (Some(ra), Some(rb)) = (self.root, other.root) else { return Ok(stats) };
        let stack = &mut ws.pairs;
        stack.clear();
        if self.root_bounds.overlaps(&other.root_bounds) {
            stack.push(PairEntry { a: ra, b: rb, ab: self.root_bounds, bb: other.root_bounds });
        }
        while let Some(PairEntry { a, b, ab, bb }) = stack.pop() {
            stats.nodes_visited += 1;
            if a.is_leaf() && b.is_leaf() {
                stats.leaves_visited += 1;
                let da = self.slots[a.index() as usize].data.as_ref().expect("live leaf");
                let db = other.slots[b.index() as usize].data.as_ref().expect("live leaf");
                if callback(self.id_of(a.index()), da, other.id_of(b.index()), db) == PairControl::Stop {
                    break;
                }
                continue;
            }
            push_split(self, a, ab, other, b, bb, stack);
        }
        Ok(stats)
    }
}

/// The state of one `self_pairs` query below its main loop.
struct SelfPairs<'a, T, F> {
    tree: &'a Dbvt<T>,
    callback: &'a mut F,
    stats: &'a mut QueryStats,
    subtree: &'a mut Vec<ChildRef>,
}

impl<T, F: FnMut(ProxyId, &T, ProxyId, &T) -> PairControl> SelfPairs<'_, T, F> {
    /// Reports one pair of distinct leaves, the lower index first. `false` to stop.
    #[inline]
    fn report(&mut self, x: ChildRef, y: ChildRef) -> bool {
        self.stats.leaves_visited += 1;
        let (pa, pb) = if x.index() < y.index() { (x.index(), y.index()) } else { (y.index(), x.index()) };
        let tree = self.tree;
        let da = tree.slots[pa as usize].data.as_ref().expect("live leaf");
        let db = tree.slots[pb as usize].data.as_ref().expect("live leaf");
        (self.callback)(tree.id_of(pa), da, tree.id_of(pb), db) == PairControl::Continue
    }

    /// Two disjoint subtrees `x` and `y` whose boxes `bx` and `by` overlap: a pair of leaves is
    /// reported, a leaf descends the other side, and two internal nodes wait on `node_pairs`.
    /// `false` to stop.
    #[inline]
    fn cross(
        &mut self,
        x: ChildRef,
        bx: &Aabb,
        y: ChildRef,
        by: &Aabb,
        node_pairs: &mut Vec<(ChildRef, ChildRef)>,
    ) -> bool {
        match (x.is_leaf(), y.is_leaf()) {
            (true, true) => self.report(x, y),
            (true, false) => self.leaf_against(x, bx, y),
            (false, true) => self.leaf_against(y, by, x),
            (false, false) => {
                self.tree.prefetch_node(x.index());
                self.tree.prefetch_node(y.index());
                node_pairs.push((x, y));
                true
            }
        }
    }

    /// Leaf `leaf` (box `lb`) against every leaf of the internal subtree `root` whose box
    /// overlaps it: both children of a node in one SIMD test, the first overlapping internal
    /// child entered and the second kept on `subtree`. `false` to stop.
    fn leaf_against(&mut self, leaf: ChildRef, lb: &Aabb, root: ChildRef) -> bool {
        let lanes = BoxLanes::new(lb);
        self.subtree.clear();
        let mut cur = root;
        loop {
            self.stats.nodes_visited += 1;
            let node = &self.tree.nodes[cur.index() as usize];
            let mut mask = lanes.test_pair(node);
            let mut next = None;
            while mask != 0 {
                let c = node.child[mask.trailing_zeros() as usize];
                mask &= mask - 1;
                if c.is_leaf() {
                    if !self.report(leaf, c) {
                        return false;
                    }
                } else if next.is_none() {
                    next = Some(c);
                } else {
                    self.tree.prefetch_node(c.index());
                    self.subtree.push(c);
                }
            }
            match next.or_else(|| self.subtree.pop()) {
                Some(c) => cur = c,
                None => return true,
            }
        }
    }
}

/// Splits the larger internal side of an overlapping pair and pushes the overlapping halves.
fn push_split<T, U>(
    ta: &Dbvt<T>,
    a: ChildRef,
    ab: Aabb,
    tb: &Dbvt<U>,
    b: ChildRef,
    bb: Aabb,
    stack: &mut Vec<PairEntry>,
) {
    let split_a = !a.is_leaf() && (b.is_leaf() || ab.half_area() >= bb.half_area());
    if split_a {
        for (c, cb) in ta.children_of(a) {
            if cb.overlaps(&bb) {
                stack.push(PairEntry { a: c, b, ab: cb, bb });
            }
        }
    } else {
        for (c, cb) in tb.children_of(b) {
            if cb.overlaps(&ab) {
                stack.push(PairEntry { a, b: c, ab, bb: cb });
            }
        }
    }
}
