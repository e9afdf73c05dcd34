//! The one closest-first traversal of 8-wide nodes, and its stacks.
//!
//! As in the CPU wide-BVH kernels of Embree and tinybvh (Benthin, Wald et al.): one ray against all
//! 8 children of a node with `f32x8`; a single child hit is entered directly, several are pushed
//! far to near so the nearest is popped first, and a popped entry whose entry distance lies beyond
//! the current `tmax` (a closer hit was found meanwhile) is dropped. Children that wait on the
//! stack are prefetched as they are pushed: traversal is bound by the latency of node and leaf
//! loads (`docs/performance.md`).
//!
//! The loop knows nothing of what a leaf holds: a [`LeafVisitor`] tests it (a triangle pack, a
//! proxy and its policy), may lower `tmax`, and may end the traversal.

use std::mem::MaybeUninit;

use super::{ChildBoxTest, Entry, Lanes8, Node8, NodeStore};
use crate::child::ChildRef;

/// What the traversal does at a leaf.
pub(crate) trait LeafVisitor {
    /// Visits `leaf` (a [`ChildRef::leaf`], never [`ChildRef::EMPTY`]), which the ray enters at
    /// `entry <= *tmax`. May lower `*tmax` (a closer hit clips the ray). Returns `false` to end
    /// the traversal. An any-hit walk (`closest_first::<true, ..>`) keeps no entry distances and
    /// passes `tmin`. The reference comes whole, so that a visitor may address its leaf from the
    /// raw bits, with no mask on the way to the leaf's loads (the mesh's packs,
    /// `Blocks::pack_of_leaf`).
    fn visit(&mut self, leaf: ChildRef, entry: f32, tmax: &mut f32) -> bool;

    /// Starts loading what visiting `child` will read (a hint; the default does nothing).
    #[inline(always)]
    fn prefetch(&self, child: ChildRef) {
        let _ = child;
    }

    /// Starts loading the children of `node`, before the node test picks any (a hint; the
    /// default does nothing).
    #[inline(always)]
    fn prefetch_children(&self, node: &Node8) {
        let _ = node;
    }
}

/// The stack of a traversal: a fixed array where depth is bounded (the mesh BVH), a vector kept
/// by the caller where it is not (the dynamic tree's copy). Neither allocates once warm.
///
/// The traversal keeps the stack's length in a local variable and asks the storage only for room
/// (once per node that pushes), so the length lives in a register rather than behind a reference.
pub(crate) trait EntryStack {
    /// A pointer to room for at least `n` entries; the entries below `n - 8` keep their values.
    /// Valid until the next call.
    fn room(&mut self, n: usize) -> *mut Entry;
}

/// A stack of at most `N` entries in place, uninitialised until written: zeroing the 8 KB of a
/// mesh traversal's stack per ray would cost more than many traversals. Pushing past `N` panics;
/// callers size `N` from a bound on the tree's depth.
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
    fn room(&mut self, n: usize) -> *mut Entry {
        assert!(n <= N, "traversal stack overflow: the tree is deeper than its bound");
        self.items.as_mut_ptr().cast()
    }
}

impl EntryStack for Vec<Entry> {
    #[inline(always)]
    fn room(&mut self, n: usize) -> *mut Entry {
        if self.len() < n {
            self.resize(n.max(2 * self.len()), (ChildRef::EMPTY, 0.0));
        }
        self.as_mut_ptr()
    }
}

/// Walks the subtree of `nodes` under node `start` (the root, [`ChildRef::node`]`(0)`, for a
/// whole walk; a node of it when a ray packet hands a subtree that few of its rays enter to its
/// rays one at a time, `super::packet`) along `ray` from `tmin` to `tmax`, handing `leaves`
/// every leaf whose box the ray enters before the current `tmax`, and returns the nodes visited.
/// `start` must exist.
///
/// At a node with several children hit, the nearest is entered at once and the others wait on
/// the stack, nearest on top, so leaves come roughly nearest first and a clipping visitor
/// (closest hit) prunes early; with `ANY` (any hit, where the first hit ends the walk) they wait
/// in lane order instead, which saves the sort, and without their entry distances: the walk ends
/// at the first hit, so `tmax` never shrinks below an entry that passed the node test, and
/// keeping the distances only cost a store and a reload per child (perf, Sponza shadow rays).
/// Nor is a placeholder distance stored: the entry's child is written alone
/// (`docs/performance.md`).
/// Two children hit, the common case, take one comparison, as in Embree's BVH traversal.
/// `INFLATE` grows every box by the swept box `ray` was made with ([`super::Ray8::new`]).
#[inline(always)]
pub(crate) fn closest_first<
    const ANY: bool,
    const INFLATE: bool,
    N: NodeStore + ?Sized,
    R: ChildBoxTest,
    S: EntryStack,
    V: LeafVisitor,
>(
    nodes: &N,
    start: ChildRef,
    ray: &R,
    tmin: f32,
    mut tmax: f32,
    stack: &mut S,
    leaves: &mut V,
) -> u32 {
    let mut visits = 0u32;
    // The stack: `sp` entries at `base`, which `room` keeps valid for 8 more.
    let mut base = stack.room(8);
    let mut sp = 0usize;
    let (mut cur, mut dist) = (start, tmin);
    'walk: loop {
        if cur.is_leaf() {
            if !leaves.visit(cur, dist, &mut tmax) {
                break;
            }
        } else {
            visits += 1;
            // SAFETY: `cur` is the root, which the callers check exists, or a node reference read
            // from one of `nodes`' own nodes.
            let node = unsafe { nodes.node(cur.index()) };
            // SAFETY: as above.
            let (mask, near) = unsafe { ray.test_at::<INFLATE, _>(nodes, cur.index(), tmax) };
            // After the test in the source, so that the node's own rows are loaded first; the
            // children's loads still start long before the test's verdict.
            leaves.prefetch_children(node);
            // The first lane is taken before the branch on whether any child is hit, and the
            // branch asks whether it is a lane: LLVM carries the mask into
            // that branch's block as its 8-bit value, and there zero-extends it again, a `movzx`
            // on the chain from this node's test to the next node's loads (perf annotate;
            // `docs/performance.md`).
            let first = mask.trailing_zeros() as usize;
            if first < 8 {
                let mut mask = mask & (mask - 1);
                let d = near.to_array();
                if mask == 0 {
                    // One child hit: continue with it.
                    (cur, dist) = (node.child[first], if ANY { tmin } else { d[first] });
                    continue;
                }
                base = stack.room(sp + 8);
                let mut push = |e: Entry| {
                    leaves.prefetch(e.0);
                    // SAFETY: `room(sp + 8)` made room for the at most 7 entries pushed here. An
                    // any-hit walk writes the child alone: its distances are never read.
                    unsafe {
                        if ANY {
                            base.add(sp).cast::<ChildRef>().write(e.0);
                        } else {
                            base.add(sp).write(e);
                        }
                    }
                    sp += 1;
                };
                if ANY {
                    // Any order will do: enter the first, the others wait.
                    while mask != 0 {
                        let l = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        push((node.child[l], tmin));
                    }
                    (cur, dist) = (node.child[first], tmin);
                    continue;
                }
                let second = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if mask == 0 {
                    // Two: enter the nearer, the farther waits.
                    let (n, f) = if d[second] < d[first] { (second, first) } else { (first, second) };
                    push((node.child[f], d[f]));
                    (cur, dist) = (node.child[n], d[n]);
                    continue;
                }
                // Three or more: the nearest is entered, the others wait, sorted far to near.
                if R::Lanes::NETWORK {
                    let hit = mask | 1 << first | 1 << second;
                    // SAFETY: `room(sp + 8)` made room for the 8 entries written; the lanes'
                    // level is enabled here (`super::lanes::dispatch`).
                    let nearest = unsafe { R::Lanes::nearest_and_rest(node, near, hit, base.add(sp)) };
                    let mut rest = hit & !(1 << nearest);
                    sp += rest.count_ones() as usize;
                    while rest != 0 {
                        leaves.prefetch(node.child[rest.trailing_zeros() as usize]);
                        rest &= rest - 1;
                    }
                    (cur, dist) = (node.child[nearest], d[nearest]);
                }
                // Without the network, by insertion (at most 8), and the nearest is taken back at
                // once; at equal distances the earlier lane is taken first, as with the network.
                else {
                    let run = sp;
                    let mut insert = |l: usize| {
                        let e = (node.child[l], d[l]);
                        leaves.prefetch(e.0);
                        let mut j = sp;
                        // SAFETY: entries run..sp were written; room(run + 8) covers j <= run + 7.
                        unsafe {
                            while j > run && (*base.add(j - 1)).1 <= e.1 {
                                base.add(j).write(*base.add(j - 1));
                                j -= 1;
                            }
                            base.add(j).write(e);
                        }
                        sp += 1;
                    };
                    insert(first);
                    insert(second);
                    while mask != 0 {
                        let l = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        insert(l);
                    }
                    sp -= 1;
                    // SAFETY: the entry just written on top.
                    (cur, dist) = unsafe { *base.add(sp) };
                }
                continue;
            }
        }
        // Next: the nearest waiting entry not beyond the current `tmax`.
        while sp > 0 {
            sp -= 1;
            if ANY {
                // SAFETY: the children of entries below `sp` were written (their distances not).
                (cur, dist) = (unsafe { base.add(sp).cast::<ChildRef>().read() }, tmin);
                continue 'walk;
            }
            // SAFETY: entries below `sp` were written.
            let e = unsafe { *base.add(sp) };
            if e.1 <= tmax {
                (cur, dist) = e;
                continue 'walk;
            }
        }
        break;
    }
    visits
}
