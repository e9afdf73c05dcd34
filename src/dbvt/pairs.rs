//! Pair queries: every overlapping pair of proxies within one tree, and between two trees
//! (Bullet's `collideTT`). A stack of (subtree, subtree) pairs is descended, always splitting the
//! larger internal side, so work follows the overlap structure rather than n².

use super::node::ChildRef;
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
        let stack = &mut ws.pairs;
        stack.clear();
        stack.push(PairEntry { a: root, b: root, ab: self.root_bounds, bb: self.root_bounds });
        while let Some(PairEntry { a, b, ab, bb }) = stack.pop() {
            stats.nodes_visited += 1;
            if a == b {
                if a.is_leaf() {
                    continue;
                }
                let [(c0, b0), (c1, b1)] = self.children_of(a);
                stack.push(PairEntry { a: c1, b: c1, ab: b1, bb: b1 });
                stack.push(PairEntry { a: c0, b: c0, ab: b0, bb: b0 });
                if b0.overlaps(&b1) {
                    stack.push(PairEntry { a: c0, b: c1, ab: b0, bb: b1 });
                }
                continue;
            }
            if a.is_leaf() && b.is_leaf() {
                stats.leaves_visited += 1;
                let (pa, pb) = if a.index() < b.index() { (a.index(), b.index()) } else { (b.index(), a.index()) };
                let da = self.slots[pa as usize].data.as_ref().expect("live leaf");
                let db = self.slots[pb as usize].data.as_ref().expect("live leaf");
                if callback(self.id_of(pa), da, self.id_of(pb), db) == PairControl::Stop {
                    break;
                }
                continue;
            }
            push_split(self, a, ab, self, b, bb, stack);
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
