//! The node and proxy arenas of a [`Dbvt`]: allocation and free lists, the depth-first pre-order
//! layout (`relayout`, `emit_preorder`) that `refit` sweeps and the optimiser rebuilds in place,
//! the reset and finish of whole rebuilds, and the SAH cost over the arena.

use super::error::DbvtError;
use super::node::{ChildRef, FREE_SLOT, MAX_INDEX, NULL, Node};
use super::update::LINK_LOOKAHEAD;
use super::{Dbvt, Proxy, Slot};
use crate::build::{BuildItem, BuildNode};
use crate::math::Aabb;

/// `relayout`'s mark, in its map from old to new node indices, of a node whose children it
/// swapped. Node indices stay at or below [`MAX_INDEX`], so the top bit is free.
const SWAPPED: u32 = 1 << 31;
const _: () = assert!(MAX_INDEX < SWAPPED);

impl<T> Dbvt<T> {
    pub(super) fn alloc_node(&mut self) -> Result<u32, DbvtError> {
        self.topology += 1;
        self.ordered = false;
        self.disorder = self.disorder.saturating_add(1);
        if self.free_node != NULL {
            let n = self.free_node;
            self.free_node = self.nodes[n as usize].parent;
            self.free_node_count -= 1;
            self.nodes[n as usize] = Node { slot: 0, ..Node::FREE };
            return Ok(n);
        }
        let n = self.nodes.len() as u32;
        if n > MAX_INDEX {
            return Err(DbvtError::CapacityExceeded);
        }
        self.nodes.push(Node { slot: 0, ..Node::FREE });
        Ok(n)
    }

    pub(super) fn free_node(&mut self, n: u32) {
        self.topology += 1;
        self.ordered = false;
        self.disorder = self.disorder.saturating_add(1);
        self.nodes[n as usize] = Node { parent: self.free_node, ..Node::FREE };
        self.free_node = n;
        self.free_node_count += 1;
    }

    pub(super) fn alloc_proxy(&mut self, fat: Aabb, data: T) -> Result<u32, DbvtError> {
        if self.free_proxy != NULL {
            let i = self.free_proxy;
            let p = &mut self.proxies[i as usize];
            self.free_proxy = p.parent;
            p.set_fat(&fat);
            p.parent = NULL;
            p.slot = 0;
            self.slots[i as usize].data = Some(data);
            self.proxy_count += 1;
            return Ok(i);
        }
        let i = self.proxies.len() as u32;
        if i > MAX_INDEX {
            return Err(DbvtError::CapacityExceeded);
        }
        self.proxies.push(Proxy::new(&fat, NULL, 0));
        self.slots.push(Slot { generation: 0, data: Some(data) });
        self.proxy_count += 1;
        Ok(i)
    }

    /// Returns proxy slot `p`'s data and puts the slot on the free list; its generation moves on,
    /// so every id of it becomes stale.
    pub(super) fn free_proxy(&mut self, p: u32) -> T {
        let slot = &mut self.slots[p as usize];
        let data = slot.data.take().expect("checked live");
        slot.generation = slot.generation.wrapping_add(1);
        self.proxies[p as usize].parent = self.free_proxy;
        self.free_proxy = p;
        self.proxy_count -= 1;
        data
    }

    /// What every whole rebuild starts with: no root, no free list, and `internal` fresh nodes
    /// for the build to fill in pre-order.
    pub(super) fn clear_arena(&mut self, internal: usize) {
        self.topology += 1;
        self.nodes.clear();
        self.nodes.resize(internal, Node::FREE);
        self.free_node = NULL;
        self.free_node_count = 0;
        self.root = None;
        self.root_bounds = Aabb::EMPTY;
    }

    /// What every whole rebuild ends with: an arena in pre-order with nothing to refit, and the
    /// SAH cost the optimiser measures aging against.
    pub(super) fn finish_whole_rebuild(&mut self) {
        self.ordered = true;
        self.disorder = 0;
        self.refit_pending = false;
        self.optimizer.rebuilt_sah = self.sah_cost();
    }

    /// Lays the internal nodes out again in depth-first pre-order, child 0 (made the larger of the
    /// two) right after its parent, dropping the free list.
    pub(super) fn relayout(&mut self) {
        self.topology += 1;
        // No internal node (an empty tree, or a single leaf): an empty arena is in pre-order.
        let Some(root) = self.root.filter(|r| !r.is_leaf()) else {
            self.nodes.clear();
            self.free_node = NULL;
            self.free_node_count = 0;
            self.ordered = true;
            self.disorder = 0;
            return;
        };
        // Copy into the spare arena kept from the last relayout, so that a relayout every few
        // frames touches no fresh pages (page faults were a large part of a frame when each
        // relayout allocated its arena; `docs/performance.md`).
        let live = self.nodes.len() - self.free_node_count as usize;
        let mut nodes = std::mem::take(&mut self.spare_nodes);
        nodes.clear();
        // Room for some insertions after the relayout (which drops the free list), so that the
        // next frames' reinsertions do not grow the arena by copying it.
        nodes.reserve(live + live / 16 + 8);
        // Where each old node goes. The proxies' links to their parents are fixed afterwards in
        // one pass in proxy order: writing them as the walk met the leaves was a cache miss per
        // proxy, most of the cost of the relayout that follows the optimiser's top rebuild.
        let mut moved_to = std::mem::take(&mut self.relayout_map);
        moved_to.clear();
        moved_to.resize(self.nodes.len(), NULL);
        // (old node, new parent, slot in the new parent); child 0 popped first.
        let mut stack = std::mem::take(&mut self.walk_stack);
        stack.clear();
        stack.push((root.index(), NULL, 0));
        while let Some((o, parent, slot)) = stack.pop() {
            let i = nodes.len() as u32;
            let mut node = self.nodes[o as usize];
            // The larger child goes first, right after its parent: that line arrives with the
            // parent's (the adjacent-line prefetch), and a ray enters the larger box more often.
            let swap = node.bounds(1).half_area() > node.bounds(0).half_area();
            if swap {
                node.child.swap(0, 1);
                for side in &mut node.planes {
                    for axis in side {
                        axis.swap(0, 1);
                    }
                }
            }
            moved_to[o as usize] = i | if swap { SWAPPED } else { 0 };
            node.parent = parent;
            node.slot = slot;
            if parent != NULL {
                nodes[parent as usize].child[slot as usize] = ChildRef::node(i);
            }
            for k in [1, 0] {
                let c = node.child[k];
                if !c.is_leaf() {
                    stack.push((c.index(), i, k as u8));
                }
            }
            nodes.push(node);
        }
        // Live proxies only: a free proxy's `parent` is the free list's next link.
        for (proxy, slot) in self.proxies.iter_mut().zip(&self.slots) {
            if slot.data.is_some() && proxy.parent != NULL {
                let m = moved_to[proxy.parent as usize];
                proxy.parent = m & !SWAPPED;
                proxy.slot ^= u8::from(m & SWAPPED != 0);
            }
        }
        self.walk_stack = stack;
        self.relayout_map = moved_to;
        self.spare_nodes = std::mem::replace(&mut self.nodes, nodes);
        self.free_node = NULL;
        self.free_node_count = 0;
        self.root = Some(ChildRef::node(0));
        self.ordered = true;
        self.disorder = 0;
    }

    /// Writes a binned-SAH build (leaves of one item each, item indices being raw [`ChildRef`]s)
    /// into the arena in pre-order under `parent`/`slot`, giving the internal nodes the indices
    /// `node_slots` yields, in order (the arena must already hold those nodes). With
    /// consecutive indices (`start..`) the result is a pre-order range.
    pub(super) fn emit_preorder(
        &mut self,
        built: &[BuildNode],
        items: &[BuildItem],
        parent: u32,
        slot: u8,
        mut node_slots: impl Iterator<Item = u32>,
    ) {
        let mut stack: Vec<(u32, u32, u8)> = vec![(0, parent, slot)];
        while let Some((b, parent, slot)) = stack.pop() {
            match built[b as usize] {
                BuildNode::Leaf { bounds, first, .. } => {
                    // Leaves come in item order, and each writes its proxy's parent link, a cache
                    // miss when proxies are many: start loading the link a few leaves ahead.
                    if let Some(ahead) =
                        items.get(first as usize + LINK_LOOKAHEAD).map(|it| ChildRef::from_raw(it.index()))
                        && ahead.is_leaf()
                    {
                        crate::hint::prefetch(self.proxies.as_ptr().wrapping_add(ahead.index() as usize));
                    }
                    self.set_child(parent, slot, ChildRef::from_raw(items[first as usize].index()), &bounds);
                }
                BuildNode::Inner { bounds, left, right } => {
                    let n = node_slots.next().expect("a node slot for every internal node");
                    self.nodes[n as usize] = Node { slot: 0, ..Node::FREE };
                    self.set_child(parent, slot, ChildRef::node(n), &bounds);
                    stack.push((right, n, 1));
                    stack.push((left, n, 0));
                }
            }
        }
    }

    /// The SAH cost with unit traversal and intersection costs (see [`TreeStats::sah_cost`](super::TreeStats::sah_cost)), by
    /// one sequential sweep of the arena: every node not on the free list is in the tree
    /// ([`Dbvt::validate`] checks that). Each child's area counts once, internal children as
    /// traversal steps and leaves as intersection tests; the root adds 1. The optimiser's
    /// refresh measures the tree's aging with it every few calls.
    pub(crate) fn sah_cost(&self) -> f32 {
        let root_area = f64::from(self.root_bounds.half_area());
        if self.root.is_none() || root_area.is_nan() || root_area <= 0.0 {
            return 0.0;
        }
        let area: f64 = (self.nodes.iter())
            .filter(|node| node.slot != FREE_SLOT)
            .map(|node| f64::from(node.bounds(0).half_area()) + f64::from(node.bounds(1).half_area()))
            .sum();
        (1.0 + area / root_area) as f32
    }
}
