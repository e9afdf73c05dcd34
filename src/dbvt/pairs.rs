//! Pair queries: every overlapping pair of proxies within one tree, and between two trees.
//!
//! Both descend as parry's `traverse_bvtt_single_tree` does (Bullet's `collideTT` is the same
//! idea), with explicit stacks: two overlapping subtrees open both sides at once, their four child
//! pairs tested in one SIMD test (`Node::cross_overlaps`); a leaf against a subtree walks the
//! subtree with the leaf's box held (`PairWalk::leaf_against`); within one tree, a node against
//! itself opens into each internal child against itself and, when the two children overlap, the
//! children against each other. The stacks hold node references only: every node holds its
//! children's boxes. The work follows the overlap structure rather than n².

use super::node::{BoxLanes, ChildRef, Node};
use super::traverse::{LeafQueue, QueryWorkspace};
use super::{Dbvt, DbvtError, ProxyId};
use crate::math::Aabb;
use crate::math::QueryStats;

/// What a pair policy tells the traversal after a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairControl {
    /// Go on.
    Continue,
    /// End the query now.
    Stop,
}

impl<T> Dbvt<T> {
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
        let (node_pairs, subtree) = (&mut ws.node_pairs, &mut ws.subtree);
        node_pairs.clear();
        // (n, n): node n against itself; otherwise two disjoint overlapping subtrees.
        node_pairs.push((root, root));
        let mut walk = PairWalk {
            a: self,
            b: self,
            same: true,
            callback: &mut callback,
            stats: &mut stats,
            subtree,
            queue: no_pairs(),
        };
        while let Some((x, y)) = node_pairs.pop() {
            walk.stats.nodes += 1;
            let nx = &self.nodes[x.index() as usize];
            if x != y {
                if !walk.open_both(nx, &self.nodes[y.index() as usize], node_pairs) {
                    return Ok(stats);
                }
                continue;
            }
            // The children's pairs across are pushed first and each child against itself after,
            // child 1 then child 0, so that the walk pops child 0's own pairs first, then child
            // 1's, then those across: the order of parry's recursion. In the pre-order arena
            // (child 0 right after its parent) that reads the nodes forward in memory; popping
            // the pushes in the other order took 1.4-1.9 times as long at 100k proxies, whose
            // nodes (6.4 MB) are beyond L2 (`DBVT_PROFILE=slabtree:pairs-optimized:100000` of
            // `benches/peers`, alternated runs).
            if nx.children_overlap()
                && !walk.cross(nx.child[0], || nx.bounds(0), nx.child[1], || nx.bounds(1), node_pairs)
            {
                return Ok(stats);
            }
            for c in [nx.child[1], nx.child[0]] {
                if !c.is_leaf() {
                    self.prefetch_node(c.index());
                    node_pairs.push((c, c));
                }
            }
        }
        walk.flush();
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
        let (node_pairs, subtree) = (&mut ws.node_pairs, &mut ws.subtree);
        node_pairs.clear();
        let mut walk = PairWalk {
            a: self,
            b: other,
            same: false,
            callback: &mut callback,
            stats: &mut stats,
            subtree,
            queue: no_pairs(),
        };
        if self.root_bounds.overlaps(&other.root_bounds) {
            if !walk.cross(ra, || self.root_bounds, rb, || other.root_bounds, node_pairs) {
                return Ok(stats);
            }
            // Pairs of internal nodes, this tree's first.
            while let Some((x, y)) = node_pairs.pop() {
                walk.stats.nodes += 1;
                let (nx, ny) = (&self.nodes[x.index() as usize], &other.nodes[y.index() as usize]);
                if !walk.open_both(nx, ny, node_pairs) {
                    return Ok(stats);
                }
            }
        }
        walk.flush();
        Ok(stats)
    }
}

/// The state of one pair query below its main loop: subtrees of tree `a` against subtrees of tree
/// `b` (the same tree, `same`, for self pairs).
struct PairWalk<'a, A, B, F> {
    a: &'a Dbvt<A>,
    b: &'a Dbvt<B>,
    /// Self pairs: `a` and `b` are one tree, and a pair is reported with the lower index first.
    same: bool,
    callback: &'a mut F,
    stats: &'a mut QueryStats,
    /// The nodes waiting while a leaf walks a subtree.
    subtree: &'a mut Vec<ChildRef>,
    /// Pairs found and not yet handed to `callback`, oldest first: each pair's two slots
    /// (its ids and data) are prefetched when it is found and read [`REPORT_AHEAD`] pairs later,
    /// while the walk goes on. Read at once, they were two cache misses per pair that the walk
    /// waited on (100k proxies: 1.2 MB of slots in creation order, beyond L2). When `callback`
    /// asks to stop, the query returns at once and the pairs still queued are dropped.
    queue: LeafQueue<(ChildRef, ChildRef), REPORT_AHEAD>,
}

/// Pairs found ahead of the one handed to the callback (see `PairWalk::queue`).
const REPORT_AHEAD: usize = 8;

/// An empty queue of pairs (the fill only takes the room).
fn no_pairs() -> LeafQueue<(ChildRef, ChildRef), REPORT_AHEAD> {
    LeafQueue::new((ChildRef::leaf(0), ChildRef::leaf(0)))
}

impl<A, B, F: FnMut(ProxyId, &A, ProxyId, &B) -> PairControl> PairWalk<'_, A, B, F> {
    /// Reports leaf `x` of `a` with leaf `y` of `b`, in the order found, through the queue
    /// (see `queue`). `false` to stop.
    #[inline]
    fn report(&mut self, x: ChildRef, y: ChildRef) -> bool {
        // Within one tree the pair is unordered: the lower index first (both are leaves of the
        // one tree, so swapping them keeps each with its tree).
        let (x, y) = if self.same && y.index() < x.index() { (y, x) } else { (x, y) };
        crate::hint::prefetch(self.a.slots.as_ptr().wrapping_add(x.index() as usize));
        crate::hint::prefetch(self.b.slots.as_ptr().wrapping_add(y.index() as usize));
        match self.queue.push((x, y)) {
            Some((ox, oy)) => self.deliver(ox, oy),
            None => true,
        }
    }

    /// Hands every queued pair to the callback, oldest first, until it asks to stop: what a walk
    /// that ran to its end does last.
    fn flush(&mut self) {
        while let Some((x, y)) = self.queue.pop() {
            if !self.deliver(x, y) {
                return;
            }
        }
    }

    /// Hands the pair of leaf `x` of `a` and leaf `y` of `b` to the callback. `false` to stop.
    #[inline]
    fn deliver(&mut self, x: ChildRef, y: ChildRef) -> bool {
        self.stats.leaves += 1;
        let da = self.a.slots[x.index() as usize].data.as_ref().expect("live leaf");
        let db = self.b.slots[y.index() as usize].data.as_ref().expect("live leaf");
        (self.callback)(self.a.id_of(x.index()), da, self.b.id_of(y.index()), db) == PairControl::Continue
    }

    /// Internal nodes `nx` of `a` and `ny` of `b`, whose boxes overlap: their four child pairs
    /// in one test, each overlapping one handed to `cross`. `false` to stop.
    #[inline]
    fn open_both(&mut self, nx: &Node, ny: &Node, node_pairs: &mut Vec<(ChildRef, ChildRef)>) -> bool {
        let mut mask = nx.cross_overlaps(ny);
        // Highest bit first, so that the pair of the two first children is pushed last and
        // popped first (forward in memory, as in `Dbvt::self_pairs`).
        while mask != 0 {
            let bit = 31 - mask.leading_zeros() as usize;
            mask &= !(1 << bit);
            let (i, j) = (bit >> 1, bit & 1);
            if !self.cross(nx.child[i], || nx.bounds(i), ny.child[j], || ny.bounds(j), node_pairs) {
                return false;
            }
        }
        true
    }

    /// Subtree `x` of `a` and subtree `y` of `b` (disjoint), whose boxes `bx()` and `by()`
    /// overlap: a pair of leaves is reported, a leaf walks the other side, and two internal nodes
    /// wait on `node_pairs`. `false` to stop. The boxes are read only where a leaf needs its
    /// own (building them for every pair was a sixth of a self-pair query's instructions).
    #[inline]
    fn cross(
        &mut self,
        x: ChildRef,
        bx: impl FnOnce() -> Aabb,
        y: ChildRef,
        by: impl FnOnce() -> Aabb,
        node_pairs: &mut Vec<(ChildRef, ChildRef)>,
    ) -> bool {
        match (x.is_leaf(), y.is_leaf()) {
            (true, true) => self.report(x, y),
            (true, false) => {
                let b = self.b;
                self.leaf_against(b, &bx(), y, |walk, leaf| walk.report(x, leaf))
            }
            (false, true) => {
                let a = self.a;
                self.leaf_against(a, &by(), x, |walk, leaf| walk.report(leaf, y))
            }
            (false, false) => {
                self.a.prefetch_node(x.index());
                self.b.prefetch_node(y.index());
                node_pairs.push((x, y));
                true
            }
        }
    }

    /// Every leaf of the internal subtree `root` of `tree` whose box overlaps `lb`, handed to
    /// `found`: both children of a node in one SIMD test, the first overlapping internal child
    /// entered and the second kept on `subtree`. `false` (from `found`) to stop.
    fn leaf_against<X>(
        &mut self,
        tree: &Dbvt<X>,
        lb: &Aabb,
        root: ChildRef,
        mut found: impl FnMut(&mut Self, ChildRef) -> bool,
    ) -> bool {
        let lanes = BoxLanes::new(lb);
        self.subtree.clear();
        let mut cur = root;
        loop {
            self.stats.nodes += 1;
            let node = &tree.nodes[cur.index() as usize];
            let mut mask = lanes.test_pair(node);
            let mut next = None;
            while mask != 0 {
                let c = node.child[mask.trailing_zeros() as usize];
                mask &= mask - 1;
                if c.is_leaf() {
                    if !found(self, c) {
                        return false;
                    }
                } else if next.is_none() {
                    next = Some(c);
                } else {
                    tree.prefetch_node(c.index());
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
