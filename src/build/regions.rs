//! Subtrees built on other threads straight into the final node array, each in a region
//! reserved for it, and then moved together into pre-order.
//!
//! A binary tree over `k` items, each leaf holding at least one, has at most `2k - 1` nodes. So a
//! node over `k` items at index `p`, whose split gives its left child `mid` items, can reserve
//! `p + 1 .. p + 2 mid` for its left subtree and `p + 2 mid .. p + 2k - 1` for its right one,
//! before either is built: the right one can then be built on another thread, in the array the
//! tree ends in, rather than in a vector of its own whose pages are fresh and which is then copied
//! into place. Each subtree fills its region from the front, so regions end in gaps; [`compact`]
//! closes them, moving every region's nodes down to their place in the pre-order, where a build
//! on one thread writes them. (The spatial builder's upper levels, whose reference counts grow
//! as they split, keep vectors of their own; below them it builds with the binned builder, and
//! so in regions.)
//!
//! The regions of a node array reserved at `2n - 1` nodes tile it, so the threads write disjoint
//! elements, each region through a [`Region`] that owns its slice.

use std::mem::MaybeUninit;

use super::BuildNode;

/// The `right` link of a node whose right subtree was built in a region of its own, until
/// [`compact`] moves that region into place.
pub(super) const PENDING: u32 = u32::MAX;

/// The part of the node array reserved for one subtree: it writes its nodes from the front, in
/// pre-order, and hands the regions of the right subtrees it builds on other threads to them.
pub(super) struct Region<'a> {
    slots: &'a mut [MaybeUninit<BuildNode>],
    /// The array index of `slots[0]`.
    start: usize,
    /// Nodes written, from the front.
    len: usize,
}

impl<'a> Region<'a> {
    /// The region of the whole tree: `slots`, from index 0 of the array.
    pub(super) fn whole(slots: &'a mut [MaybeUninit<BuildNode>]) -> Region<'a> {
        Region { slots, start: 0, len: 0 }
    }

    /// Writes `node` after the nodes written so far and returns its array index.
    pub(super) fn push(&mut self, node: BuildNode) -> u32 {
        self.slots[self.len].write(node);
        self.len += 1;
        u32::try_from(self.start + self.len - 1).expect("fewer than 2^32 nodes")
    }

    /// Writes `node` over the node at array index `at`, one this region wrote.
    pub(super) fn set(&mut self, at: u32, node: BuildNode) {
        let i = at as usize - self.start;
        assert!(i < self.len, "a node this region wrote");
        self.slots[i].write(node);
    }

    /// The array index the next node goes to.
    pub(super) fn next_index(&self) -> u32 {
        u32::try_from(self.start + self.len).expect("fewer than 2^32 nodes")
    }

    /// Splits off the region of the right subtree of the node just written, over `items` items
    /// of which its left child takes `mid`: `2 (items - mid) - 1` slots from `2 mid - 1` past the
    /// next one. This region keeps the left subtree's slots and ends there; the node's own
    /// subtree is the last it writes.
    pub(super) fn split_right(&mut self, items: usize, mid: usize) -> Region<'a> {
        let slots = std::mem::take(&mut self.slots);
        let (mine, rest) = slots.split_at_mut(self.len + 2 * mid - 1);
        let right = &mut rest[..2 * (items - mid) - 1];
        self.slots = mine;
        Region { start: self.start + self.slots.len(), slots: right, len: 0 }
    }

    /// What this region built, with the right subtrees it handed on, for [`compact`].
    pub(super) fn finish(self, parent: u32, spawned: Vec<Built>) -> Built {
        Built { parent, start: self.start, len: self.len, spawned }
    }
}

/// The nodes a [`Region`] wrote, and what the regions it handed on built.
pub(super) struct Built {
    /// The array index of the node whose right child is this region's first node (its link is
    /// [`PENDING`] until [`compact`] sets it); unused for the whole tree's region.
    parent: u32,
    /// The array index of the region's first node.
    start: usize,
    /// The nodes it wrote, in pre-order, linked by array index (and [`PENDING`] towards the
    /// right subtrees built on other threads).
    len: usize,
    /// The regions of the right subtrees it handed on, in the order they finished: in the
    /// tree's pre-order they follow its own nodes in that order (each right subtree after the
    /// left one of its parent, and the deepest parent's first).
    spawned: Vec<Built>,
}

/// Moves the nodes of `whole` (the tree's region, from index 0 of `out`'s spare capacity) and of
/// every region it handed on into pre-order at the front of `out`, with their links moved
/// with them, and sets `out`'s length to the tree's nodes.
///
/// Each region moves down or stays: the nodes placed before it are the nodes before it in
/// pre-order, which are no more than the slots reserved before it. Moved in pre-order, no
/// region is written over before it has moved.
pub(super) fn compact(out: &mut Vec<BuildNode>, whole: Built) {
    assert_eq!(whole.start, 0, "the whole tree's region");
    let spare = out.spare_capacity_mut();
    let mut at = 0;
    place(spare, whole, None, &mut at);
    // SAFETY: `place` wrote every element of `out[..at]`, each region its nodes in turn from
    // index 0 without gaps.
    unsafe { out.set_len(at) };
}

/// Moves the region `b` to index `*at` of `slots`, sets its parent's right link (at its final
/// index `parent_at`) to it, advances `*at` past it, and does the same for the regions it
/// handed on.
fn place(slots: &mut [MaybeUninit<BuildNode>], b: Built, parent_at: Option<usize>, at: &mut usize) {
    let to = *at;
    debug_assert!(to <= b.start);
    if let Some(p) = parent_at {
        // SAFETY: the parent was placed (and so written) before this region.
        match unsafe { slots[p].assume_init_mut() } {
            BuildNode::Inner { right, .. } => {
                debug_assert_eq!(*right, PENDING);
                *right = u32::try_from(to).expect("fewer than 2^32 nodes");
            }
            BuildNode::Leaf { .. } => unreachable!("a region's parent is an internal node"),
        }
    }
    slots.copy_within(b.start..b.start + b.len, to);
    let shift = (b.start - to) as u32;
    for slot in &mut slots[to..to + b.len] {
        // SAFETY: the region wrote these `len` nodes, just moved here.
        if let BuildNode::Inner { left, right, .. } = unsafe { slot.assume_init_mut() } {
            *left -= shift;
            if *right != PENDING {
                *right -= shift;
            }
        }
    }
    *at += b.len;
    for s in b.spawned {
        let parent = s.parent as usize - b.start + to;
        place(slots, s, Some(parent), at);
    }
}
