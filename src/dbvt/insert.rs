//! Insertion: the SAH sibling search, and the refit-and-rotate walk back to the root.
//!
//! The sibling search is the branch-and-bound of Bittner, Hapala and Havran, "Incremental BVH
//! Construction for Ray Tracing" (2015), in the single-path form Box2D v3 uses
//! (`b2FindBestSibling`): it descends one path, and stops when the lower bound of every deeper
//! placement exceeds the best cost found. Costs are surface areas (the SAH), so the tree suits ray
//! queries, not only overlap tests.
//!
//! On the way back up, each ancestor is refitted and then offered one tree rotation (Kopta et al.,
//! "Fast, Effective BVH Updates for Animated Scenes", 2012, as Box2D v3's `b2RotateNodes`): the
//! swap of a child with a grandchild that most reduces the area of the internal child, if any.
//!
//! Height is not balanced explicitly. An earlier version forced AVL rotations (Box2D v2's
//! `Balance`) when child heights differed by more than one; those swap spatially unrelated
//! subtrees, which ruins the tree's SAH cost and its queries. With SAH rotations alone the cost
//! stays near a bulk build's, and the height bounds of `tests/dbvt_height.rs` hold
//! (`docs/performance.md`, "The dynamic tree's choices, measured").

use glam::Vec3A;

use super::error::DbvtError;
use super::node::{ChildRef, GrowLanes, NULL};
use super::{Dbvt, ProxyId};
use crate::math::Aabb;

/// How many levels above the removed leaf's grandparent [`Dbvt::reinsertion_start`] climbs
/// before it gives up and searches from the root: a start near the leaf keeps the search in
/// cache, one too near misses better places higher up and lets the tree's cost drift. Eight
/// levels had the fewest cache misses for a cost near the root search's (`docs/performance.md`,
/// "The dynamic tree's choices, measured").
const REINSERT_CLIMB: usize = 8;

/// Where an insertion's sibling search starts: a subtree, its box, and where it hangs.
pub(super) struct SearchStart {
    at: ChildRef,
    bounds: Aabb,
    parent: u32,
    slot: u8,
}

impl<T> Dbvt<T> {
    /// Inserts a proxy with box `aabb` (stored fattened by the configured margin) and returns its
    /// id.
    ///
    /// Refuses a NaN, infinite or inverted box with [`DbvtError::Input`]; the tree is unchanged.
    pub fn insert(&mut self, aabb: Aabb, data: T) -> Result<ProxyId, DbvtError> {
        aabb.validate()?;
        let fat = self.fatten(&aabb, Vec3A::ZERO);
        fat.validate()?;
        self.insert_stored(fat, data)
    }

    /// Inserts a proxy whose box is stored exactly as given, already fat (as
    /// [`Dbvt::from_stored_boxes`] takes them): how a proxy moves from one tree to another with
    /// its box unchanged. The box must be valid.
    pub(crate) fn insert_stored(&mut self, fat: Aabb, data: T) -> Result<ProxyId, DbvtError> {
        debug_assert!(fat.validate().is_ok());
        // A node is needed for every proxy but the first; reserve before changing anything so an
        // allocation failure leaves the tree untouched.
        if self.root.is_some() && self.free_node == NULL && self.nodes.len() as u32 > super::node::MAX_INDEX {
            return Err(DbvtError::CapacityExceeded);
        }
        let p = self.alloc_proxy(fat, data)?;
        self.insert_leaf(p)?;
        Ok(self.id_of(p))
    }

    /// Links proxy `p` (whose `fat` box is set) into the tree, searching from the root.
    pub(super) fn insert_leaf(&mut self, p: u32) -> Result<(), DbvtError> {
        self.insert_leaf_below(p, None)
    }

    /// Links proxy `p` (whose `fat` box is set) into the tree, searching the subtree of `start`
    /// when given (a node whose box contains the fat box; see [`Dbvt::reinsertion_start`]),
    /// else the whole tree.
    pub(super) fn insert_leaf_below(&mut self, p: u32, start: Option<SearchStart>) -> Result<(), DbvtError> {
        let leaf = ChildRef::leaf(p);
        let fat = self.proxies[p as usize].fat();
        let Some(root) = self.root else {
            self.set_child(NULL, 0, leaf, &fat);
            return Ok(());
        };
        let start = start.unwrap_or(SearchStart { at: root, bounds: self.root_bounds, parent: NULL, slot: 0 });
        let (sibling, old_parent, old_slot) = self.find_best_sibling(&fat, &start);
        let sibling_bounds = if old_parent == NULL {
            self.root_bounds
        } else {
            self.nodes[old_parent as usize].bounds(old_slot as usize)
        };

        let n = self.alloc_node()?;
        self.set_child(old_parent, old_slot, ChildRef::node(n), &sibling_bounds.union(&fat));
        self.set_child(n, 0, sibling, &sibling_bounds);
        self.set_child(n, 1, leaf, &fat);
        // The new node's bounds are already stored; offer it a rotation, then walk up from its
        // parent, whose slot has changed. Its children are known here: offering the rotation
        // from them, rather than reading the node back, spares a load over the stores just made
        // to a new node's line, which waits until that line arrives (perf: a fifth of an
        // insertion's time).
        if let Some((down, up)) = self.best_rotation([sibling, leaf], [sibling_bounds, fat]) {
            self.apply_rotation(n, down, up);
            // The same leaves, so the same box, unless the sibling awaited a refit (its stored
            // box then predates its children's): store what the children now say.
            let bounds = self.nodes[n as usize].union();
            self.store_bounds(n, &bounds);
        }
        self.refit_upward(old_parent, true);
        Ok(())
    }

    /// The child reference whose new parent should receive a leaf with box `d`, with the node
    /// and slot that hold it ([`NULL`] and 0 for the root).
    ///
    /// Both children of every node on the path are prefetched as it is examined: the descent is a
    /// chain of dependent loads, on which a large tree's insertion mostly waits, and the child
    /// not taken is the one the rotations on the way back up read. Returning the slot spares
    /// reading a leaf sibling's proxy record, a cache miss when proxies were created out of
    /// spatial order.
    ///
    /// The search covers the subtree of `start`. Below a start other than the root, whose box
    /// contains `d`, no ancestor of the start grows, so the costs are those of the whole tree
    /// restricted to that subtree.
    fn find_best_sibling(&self, d: &Aabb, start: &SearchStart) -> (ChildRef, u32, u8) {
        let root = start.at;
        let area_d = d.half_area();
        let root_union = start.bounds.union(d).half_area();
        // The best placement so far: the sibling's reference, and where it hangs as
        // `node << 1 | slot` (`u64::MAX` for the root; 64 bits, so that no node index can
        // collide with it). Kept in plain integers and updated by
        // selects, not branches: which child wins is a coin toss the predictor loses.
        let mut best_child = root.raw();
        let mut best_at = u64::MAX;
        let mut best_cost = root_union;
        // Sum of the area increases of the ancestors of the current node, itself included.
        let mut inherited = root_union - start.bounds.half_area();
        let mut current = root;
        let lanes = GrowLanes::new(d);
        while !current.is_leaf() {
            let at = current.index();
            let node = &self.nodes[at as usize];
            let child = node.child;
            // Unconditionally: a leaf's index names some node line (or lies past the arena,
            // which a prefetch ignores), and a branch on leafness would be mispredicted.
            for c in child {
                self.prefetch_node(c.index());
            }
            // Both children's areas, grown by `d` and as they are, in one set of `f32x4` steps.
            let areas = node.grown_areas(&lanes);
            let mut lower = [f32::INFINITY; 2];
            let mut grow = [0.0f32; 2];
            for s in 0..2 {
                let cost = areas[s] + inherited;
                let take = cost < best_cost;
                best_cost = if take { cost } else { best_cost };
                best_child = if take { child[s].raw() } else { best_child };
                best_at = if take { u64::from(at) << 1 | s as u64 } else { best_at };
                grow[s] = areas[s] - areas[2 + s];
                // Any placement below child s creates a node of area >= area(d) and grows s.
                let below = inherited + grow[s] + area_d;
                lower[s] = if child[s].is_leaf() { f32::INFINITY } else { below };
            }
            let s = usize::from(lower[1] < lower[0]);
            if lower[s] >= best_cost {
                break;
            }
            inherited += grow[s];
            current = child[s];
        }
        let best = ChildRef::from_raw(best_child);
        if best_at == u64::MAX {
            (best, start.parent, start.slot)
        } else {
            (best, (best_at >> 1) as u32, (best_at & 1) as u8)
        }
    }

    /// Where the reinsertion of a box `fat`, just removed from below node `from`, starts its
    /// search: the lowest of `from` and its next [`REINSERT_CLIMB`] ancestors whose children's
    /// union contains `fat`, or `None` (the root) when none does.
    ///
    /// Bullet's `btDbvt::update` reinserts from an ancestor of the old place in the same way
    /// (its `lookahead`). A small move usually lands near where it was: the removal has just
    /// read those nodes, and a search from the root reads the whole path again, most of it
    /// beyond L2 in a large tree.
    pub(super) fn reinsertion_start(&self, from: u32, fat: &Aabb) -> Option<SearchStart> {
        let mut n = from;
        for _ in 0..=REINSERT_CLIMB {
            if n == NULL {
                return None;
            }
            let node = &self.nodes[n as usize];
            let bounds = node.union();
            if bounds.contains(fat) {
                return Some(SearchStart { at: ChildRef::node(n), bounds, parent: node.parent, slot: node.slot });
            }
            n = node.parent;
        }
        None
    }

    /// Walks from node `n` to the root: optionally rotates, and stores each node's new bounds in
    /// its parent's slot. Stops early once the box its parent stores for a node still contains
    /// the node's children (and no rotation happened there): nothing above it needs to grow.
    /// Where that stored box is larger than the children's union (a removal left it loose, or a
    /// rotation below shrank it), the node is marked for the next refit instead of walking on:
    /// walking on to tighten every loose ancestor cost more cache misses per reinsertion than
    /// the removal's own walk saved.
    pub(super) fn refit_upward(&mut self, mut n: u32, rotate: bool) {
        while n != NULL {
            let rotated = rotate && self.rotate(n);
            let bounds = self.nodes[n as usize].union();
            let stored = self.bounds_of(ChildRef::node(n));
            if !rotated && stored.contains(&bounds) {
                if stored != bounds {
                    self.nodes[n as usize].stale = true;
                }
                return;
            }
            self.store_bounds(n, &bounds);
            n = self.nodes[n as usize].parent;
        }
    }

    /// Offers node `a` one rotation: swap one child with a child of the other child, if that
    /// reduces the area of the internal child (Box2D v3's `b2RotateNodes`).
    pub(super) fn rotate(&mut self, a: u32) -> bool {
        // Field by field, not a copy of the node: the walk up has just stored these bounds with
        // scalar writes, and a 32-byte load over them would wait for the stores to retire (a
        // failed store-to-load forwarding).
        let node = &self.nodes[a as usize];
        let child = [node.child[0], node.child[1]];
        let bounds = [node.bounds(0), node.bounds(1)];
        match self.best_rotation(child, bounds) {
            Some((down, up)) => {
                self.apply_rotation(a, down, up);
                true
            }
            None => false,
        }
    }

    /// The rotation that most reduces the area of a node's internal child, for a node with
    /// children `child` and their `bounds`: (slot of the child that moves down, slot in the other
    /// child of the grandchild that moves up), or `None` when no swap reduces it.
    #[allow(clippy::needless_range_loop)] // `down` indexes bounds and children together
    #[inline(always)]
    fn best_rotation(&self, child: [ChildRef; 2], bounds: [Aabb; 2]) -> Option<(usize, usize)> {
        // The winner as `1 + 2 * down + up` (0: none), chosen by selects rather than branches,
        // as in the sibling search.
        let mut best = 0usize;
        let mut best_gain = 0.0f32;
        for down in 0..2 {
            let other = child[1 - down];
            if other.is_leaf() {
                continue;
            }
            let old_area = bounds[1 - down].half_area();
            // After the swap, `other` holds `moving` and its child `1 - up`.
            let grown = self.nodes[other.index() as usize].grown_areas(&GrowLanes::new(&bounds[down]));
            for up in 0..2 {
                let gain = old_area - grown[1 - up];
                let take = gain > best_gain;
                best_gain = if take { gain } else { best_gain };
                best = if take { 1 + 2 * down + up } else { best };
            }
        }
        best.checked_sub(1).map(|k| (k >> 1, k & 1))
    }

    /// Swaps child `down` of node `a` with child `up` of its other child (a rotation chosen by
    /// [`Dbvt::best_rotation`]), and notes that the tree's order has changed.
    fn apply_rotation(&mut self, a: u32, down: usize, up: usize) {
        self.swap_with_grandchild(a, down, up);
        self.ordered = false;
        self.disorder = self.disorder.saturating_add(1);
    }

    /// Swaps child `down` of node `a` with child `up` of `a`'s other child, then refits that
    /// other child.
    fn swap_with_grandchild(&mut self, a: u32, down: usize, up: usize) {
        // Field by field, as in `rotate`.
        let node = &self.nodes[a as usize];
        let other = node.child[1 - down].index();
        let moving = node.child[down];
        let moving_bounds = node.bounds(down);
        let o = &self.nodes[other as usize];
        let lifted = o.child[up];
        let lifted_bounds = o.bounds(up);
        self.set_child(a, down as u8, lifted, &lifted_bounds);
        self.set_child(other, up as u8, moving, &moving_bounds);
        let o = &self.nodes[other as usize];
        let bounds = o.union();
        self.nodes[a as usize].set_bounds(1 - down, &bounds);
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3A;

    use super::super::node::NULL;
    use super::super::{Dbvt, DbvtConfig};
    use crate::math::Aabb;

    /// A reinsertion search that starts below the root can pick its start itself as the
    /// sibling: then the new node hangs where the start hung, not at the root. Clusters of equal
    /// boxes make it certain: a box equal to a cluster's box ties with every placement inside,
    /// and the start wins ties.
    #[test]
    fn a_search_start_below_the_root_can_become_the_sibling() {
        let cell = |x: f32| Aabb::new(Vec3A::new(x, 0.0, 0.0), Vec3A::new(x + 1.0, 1.0, 1.0));
        let items = [0.0, 30.0, 60.0].into_iter().flat_map(|x| (0..4).map(move |_| cell(x)));
        let config = DbvtConfig { margin: 0.0, prediction: 0.0, ..DbvtConfig::default() };
        let (mut tree, _) = Dbvt::build_with_config(items.enumerate().map(|(i, b)| (b, i)), config).unwrap();
        // The root of the first cluster: its box is the cell, and it hangs below the root.
        let start = (0..tree.nodes.len() as u32)
            .find(|&n| {
                let node = &tree.nodes[n as usize];
                node.parent != NULL
                    && node.union() == cell(0.0)
                    && tree.nodes[node.parent as usize].union() != cell(0.0)
            })
            .expect("a cluster's subtree");
        let hung_at = (tree.nodes[start as usize].parent, tree.nodes[start as usize].slot);
        let p = tree.alloc_proxy(cell(0.0), 12).unwrap();
        let from = tree.reinsertion_start(start, &cell(0.0)).expect("the cluster's box contains the cell");
        assert_eq!(from.at.index(), start);
        tree.insert_leaf_below(p, Some(from)).unwrap();
        let parent = tree.proxies[p as usize].parent;
        assert_eq!((tree.nodes[parent as usize].parent, tree.nodes[parent as usize].slot), hung_at);
        tree.validate().unwrap();
        assert_eq!(tree.len(), 13);
    }
}
