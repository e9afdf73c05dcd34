//! The one closest-first traversal of 8-wide nodes, and its stacks.
//!
//! As in the CPU wide-BVH kernels of Embree and tinybvh (Benthin, Wald et al.): one ray against all
//! 8 children of a node with `f32x8`; a single child hit is entered directly, several are pushed
//! far to near so the nearest is popped first, and a popped entry whose entry distance lies beyond
//! the current `tmax` (a closer hit was found meanwhile) is dropped. Children that wait on the
//! stack are prefetched as they are pushed: traversal is bound by the latency of node and leaf
//! loads (measured on the mesh BVH: +15-35% on the dragon, 64 MB, neutral on Sponza).
//!
//! The loop knows nothing of what a leaf holds: a [`LeafVisitor`] tests it (a triangle pack, a
//! proxy and its policy), may lower `tmax`, and may end the traversal.

use std::mem::MaybeUninit;

use super::{Node8, Ray8};
use crate::child::ChildRef;

/// A traversal entry: a child and its entry distance along the ray.
pub(crate) type Entry = (ChildRef, f32);

/// What the traversal does at a leaf.
pub(crate) trait LeafVisitor {
    /// Visits leaf `index` (of a [`ChildRef::leaf`]), which the ray enters at `entry <= *tmax`.
    /// May lower `*tmax` (a closer hit clips the ray). Returns `false` to end the traversal.
    fn visit(&mut self, index: u32, entry: f32, tmax: &mut f32) -> bool;

    /// Starts loading what visiting `child` will read (a hint; the default does nothing).
    #[inline(always)]
    fn prefetch(&self, child: ChildRef) {
        let _ = child;
    }
}

/// The stack of a traversal: a fixed array where depth is bounded (the mesh BVH), a vector kept
/// by the caller where it is not (the dynamic tree's copy). Neither allocates once warm.
pub(crate) trait EntryStack {
    /// Empties the stack.
    fn clear(&mut self);
    /// Number of entries.
    fn len(&self) -> usize;
    /// Pushes `e` on top.
    fn push(&mut self, e: Entry);
    /// Inserts `e` into the run `base..len()`, which holds entries in descending distance, keeping
    /// it descending (insertion sort: runs are at most 8 long).
    fn insert_sorted(&mut self, base: usize, e: Entry);
    /// Removes the top entry.
    fn pop(&mut self) -> Option<Entry>;
}

/// A stack of at most `N` entries in place, uninitialised until written: zeroing the 8 KB of a
/// mesh traversal's stack per ray would cost more than many traversals. Pushing past `N` panics
/// (an index out of bounds); callers size `N` from a bound on the tree's depth.
pub(crate) struct FixedStack<E, const N: usize> {
    items: [MaybeUninit<E>; N],
    len: usize,
}

impl<E: Copy, const N: usize> FixedStack<E, N> {
    /// An empty stack.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        FixedStack { items: [const { MaybeUninit::uninit() }; N], len: 0 }
    }

    /// Pushes `e` on top.
    #[inline(always)]
    pub(crate) fn push(&mut self, e: E) {
        self.items[self.len].write(e);
        self.len += 1;
    }

    /// Removes the top entry.
    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<E> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: every entry below `len` was written before `len` passed it.
        Some(unsafe { self.items[self.len].assume_init() })
    }
}

impl<const N: usize> EntryStack for FixedStack<Entry, N> {
    #[inline(always)]
    fn clear(&mut self) {
        self.len = 0;
    }
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        FixedStack::push(self, e)
    }
    #[inline(always)]
    fn insert_sorted(&mut self, base: usize, e: Entry) {
        let mut j = self.len;
        // SAFETY: entries base..len were written (base <= len).
        while j > base && unsafe { self.items[j - 1].assume_init() }.1 < e.1 {
            self.items[j] = self.items[j - 1];
            j -= 1;
        }
        self.items[j].write(e);
        self.len += 1;
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Entry> {
        FixedStack::pop(self)
    }
}

impl EntryStack for Vec<Entry> {
    #[inline(always)]
    fn clear(&mut self) {
        Vec::clear(self)
    }
    #[inline(always)]
    fn len(&self) -> usize {
        Vec::len(self)
    }
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        Vec::push(self, e)
    }
    #[inline(always)]
    fn insert_sorted(&mut self, base: usize, e: Entry) {
        self.push(e);
        let mut j = self.len() - 1;
        while j > base && self[j - 1].1 < e.1 {
            self[j] = self[j - 1];
            j -= 1;
        }
        self[j] = e;
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Entry> {
        Vec::pop(self)
    }
}

/// Walks `nodes` (node 0 is the root) along `ray` from `tmin` to `tmax`, handing `leaves` every leaf
/// whose box the ray enters before the current `tmax`, and returns the nodes visited.
///
/// Children wait on the stack nearest on top, so leaves come roughly nearest first and a clipping
/// visitor (closest hit) prunes early; with `ANY` (any hit, where the first hit ends the walk)
/// they are pushed in lane order instead, which saves the sort. `INFLATE` grows every box by the swept box
/// `ray` was made with ([`Ray8::new`]).
#[inline(always)]
pub(crate) fn closest_first<const ANY: bool, const INFLATE: bool, S: EntryStack, V: LeafVisitor>(
    nodes: &[Node8],
    ray: &Ray8,
    tmin: f32,
    mut tmax: f32,
    stack: &mut S,
    leaves: &mut V,
) -> u32 {
    let mut visits = 0u32;
    stack.clear();
    let mut cur = (ChildRef::node(0), tmin);
    loop {
        let (c, dist) = cur;
        if dist <= tmax {
            if c.is_leaf() {
                if !leaves.visit(c.index(), dist, &mut tmax) {
                    break;
                }
            } else {
                visits += 1;
                let node = &nodes[c.index() as usize];
                let (mut mask, near) = ray.test::<INFLATE>(node, tmax);
                if mask != 0 {
                    let d = near.to_array();
                    if mask & (mask - 1) == 0 {
                        // One child hit: continue with it directly.
                        let l = mask.trailing_zeros() as usize;
                        cur = (node.child[l], d[l]);
                        continue;
                    }
                    // Several: far to near, so the nearest is popped first.
                    let base = stack.len();
                    while mask != 0 {
                        let l = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        let e = (node.child[l], d[l]);
                        leaves.prefetch(e.0);
                        if ANY {
                            stack.push(e);
                        } else {
                            stack.insert_sorted(base, e);
                        }
                    }
                }
            }
        }
        match stack.pop() {
            Some(e) => cur = e,
            None => break,
        }
    }
    visits
}
