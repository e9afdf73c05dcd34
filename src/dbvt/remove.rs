//! Removal: the leaf's sibling takes its parent's place (Box2D's `RemoveLeaf`). The boxes above
//! are left as they were, larger than they need be, as parry's `Bvh::remove` leaves them; the
//! one node whose box may now be loose is marked, and [`Dbvt::refit`] tightens it and its
//! ancestors. Queries stay exact meanwhile: a loose box only contains more.

use super::error::DbvtError;
use super::node::{ChildRef, NULL};
use super::{Dbvt, ProxyId};
use crate::math::Aabb;

impl<T> Dbvt<T> {
    /// Removes a proxy and returns its data. The id (and every copy of it) becomes stale.
    ///
    /// The ancestors' boxes are not shrunk here (that walk up was a chain of cache misses); the
    /// next [`Dbvt::refit`] tightens them. Queries are exact in between.
    pub fn remove(&mut self, id: ProxyId) -> Result<T, DbvtError> {
        let p = self.check(id)?;
        self.remove_leaf(p);
        Ok(self.free_proxy(p))
    }

    /// Unlinks proxy `p` from the tree, keeping the proxy itself. Returns the node that held
    /// its parent ([`NULL`] when that was the root, or when `p` was the only leaf).
    pub(super) fn remove_leaf(&mut self, p: u32) -> u32 {
        let (parent, slot) = (self.proxies[p as usize].parent, self.proxies[p as usize].slot);
        if parent == NULL {
            self.topology += 1;
            self.root = None;
            self.root_bounds = Aabb::EMPTY;
            return NULL;
        }
        let pn = self.nodes[parent as usize];
        let sibling = pn.child[1 - slot as usize];
        let sibling_bounds = pn.bounds(1 - slot as usize);
        let (grand, gslot) = (pn.parent, pn.slot);
        // What the grandparent stores for the parent, read before it is overwritten.
        let replaced = self.bounds_of(ChildRef::node(parent));
        self.set_child(grand, gslot, sibling, &sibling_bounds);
        self.free_node(parent);
        self.proxies[p as usize].parent = NULL;
        if grand != NULL {
            // The grandparent's box can only shrink. Its line is in cache (read above); the
            // lines above it are not, and refitting them was a chain of dependent cache misses.
            // parry's removal leaves every ancestor loose; here the grandparent is marked, so
            // `refit` tightens exactly what the removal loosened.
            let g = &mut self.nodes[grand as usize];
            let other = g.bounds(1 - gslot as usize);
            if replaced.union(&other) != sibling_bounds.union(&other) {
                g.stale = true;
            }
        }
        debug_assert!(self.root != Some(ChildRef::leaf(p)));
        grand
    }
}
