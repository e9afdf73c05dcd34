//! Removal: the leaf's sibling takes its parent's place, and the path to the root is refitted
//! (Box2D's `RemoveLeaf`), stopping as soon as nothing changes.

use super::error::DbvtError;
use super::node::{ChildRef, NULL};
use super::{Dbvt, ProxyId};

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
            self.root_bounds = crate::math::Aabb::EMPTY;
            return;
        }
        let pn = self.nodes[parent as usize];
        let sibling = pn.child[1 - slot as usize];
        let sibling_bounds = pn.bounds(1 - slot as usize);
        let (grand, gslot) = (pn.parent, pn.slot);
        self.set_child(grand, gslot, sibling, &sibling_bounds);
        self.free_node(parent);
        self.proxies[p as usize].parent = NULL;
        if grand != NULL {
            // Box2D's RemoveLeaf refits without rotating; bounds only shrink here.
            self.refit_upward(grand, false);
        }
        debug_assert!(self.root != Some(ChildRef::leaf(p)));
    }
}
