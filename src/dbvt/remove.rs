//! Removal: the leaf's sibling takes its parent's place, and the path to the root is refitted
//! (Box2D's `RemoveLeaf`), stopping as soon as nothing changes.

use super::error::DbvtError;
use super::node::{ChildRef, NULL};
use super::{Dbvt, ProxyId};
use crate::math::Aabb;

impl<T> Dbvt<T> {
    /// Removes a proxy and returns its data. The id (and every copy of it) becomes stale.
    pub fn remove(&mut self, id: ProxyId) -> Result<T, DbvtError> {
        let p = self.check(id)?;
        self.remove_leaf(p);
        Ok(self.free_proxy(p))
    }

    /// Unlinks proxy `p` from the tree, keeping the proxy itself.
    pub(super) fn remove_leaf(&mut self, p: u32) {
        let (parent, slot) = (self.proxies[p as usize].parent, self.proxies[p as usize].slot);
        if parent == NULL {
            self.topology += 1;
            self.root = None;
            self.root_bounds = Aabb::EMPTY;
            return;
        }
        let pn = self.nodes[parent as usize];
        let sibling = pn.child[1 - slot as usize];
        let sibling_bounds = pn.bounds(1 - slot as usize);
        let (grand, gslot) = (pn.parent, pn.slot);
        // What the grandparent stores for the parent (read before it is overwritten; the walk
        // up needs the grandparent's line anyway).
        let replaced = self.bounds_of(ChildRef::node(parent));
        self.set_child(grand, gslot, sibling, &sibling_bounds);
        self.free_node(parent);
        self.proxies[p as usize].parent = NULL;
        if grand != NULL {
            // Box2D's RemoveLeaf refits without rotating; bounds only shrink here.
            self.shrink_upward(grand, gslot, replaced);
        }
        debug_assert!(self.root != Some(ChildRef::leaf(p)));
    }

    /// Walks up from node `n`, whose child slot `slot` held `old_child` and now holds a box
    /// inside it: stores each node's new box where its parent keeps it, until a node's box comes
    /// out unchanged. Unchanged is judged from the node's own line (its box before, the union of
    /// `old_child` and its other child), not from the copy in its parent as `refit_upward`
    /// judges: that copy is one more cache miss per removal, at the level where the walk stops
    /// (perf, 100k proxies: half of a removal's time waited on those loads). A node that awaits
    /// a refit may stop the walk with its copy in its parent out of date: it is marked, and the
    /// refit recomputes it and everything above it.
    fn shrink_upward(&mut self, mut n: u32, mut slot: u8, mut old_child: Aabb) {
        while n != NULL {
            let node = &self.nodes[n as usize];
            let other = node.bounds(1 - slot as usize);
            let (old, new) = (old_child.union(&other), node.bounds(slot as usize).union(&other));
            if new == old {
                return;
            }
            let (parent, parent_slot) = (node.parent, node.slot);
            // What the parent stores for `n` before it is overwritten: `old` when `n` was exact,
            // something else when `n` awaits a refit (then only this says what the parent's own
            // box was). The next step reads this line anyway.
            let stored = self.bounds_of(ChildRef::node(n));
            self.store_bounds(n, &new);
            (n, slot, old_child) = (parent, parent_slot, stored);
        }
    }
}
