//! The one traversal loop of the dynamic tree, generic over a [`Visitor`] (as Jolt's
//! `WalkTree`): every single-tree query (ray, box cast, overlap, point, frustum) is a visitor.
//!
//! The stack is an explicit, growable `Vec` kept in a [`QueryWorkspace`], so there is no depth
//! limit (Box2D's fixed 1024-entry stack and Jolt's fixed stacks overflowed on deep trees) and no
//! allocation once the workspace has grown to the tree's depth.

use super::Dbvt;
use super::node::{ChildRef, Node};
use crate::hint::prefetch;
use crate::math::{Aabb, QueryStats};

/// Which node test the traversal uses. Both give identical results (the tests check this); the
/// scalar one is the reference.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeTest {
    /// Both children of a node in one set of `f32x4` operations.
    #[default]
    Simd,
    /// One child at a time with the scalar slab test.
    Scalar,
}

/// Reusable scratch for queries: keep one per thread and pass it to every query, and queries
/// allocate nothing once it has grown.
#[derive(Clone, Debug, Default)]
pub struct QueryWorkspace {
    pub(crate) stack: Vec<(ChildRef, f32)>,
    /// Pair queries: node pairs waiting (a node against itself, or two overlapping subtrees).
    pub(crate) node_pairs: Vec<(ChildRef, ChildRef)>,
    /// Pair queries: the nodes waiting while one leaf walks a subtree.
    pub(crate) subtree: Vec<ChildRef>,
    /// The stack of ray casts over an 8-wide copy of the tree.
    pub(crate) wide_stack: Vec<(crate::wide::ChildRef, f32)>,
    /// One stack per ray in flight of [`Dbvt::visit_ray_batch`].
    pub(crate) flight_stacks: Vec<Vec<(ChildRef, f32)>>,
    /// The node test used by ray-like queries.
    pub node_test: NodeTest,
}

impl QueryWorkspace {
    /// An empty workspace.
    pub fn new() -> Self {
        Self::default()
    }
}

/// What a query does at each step of the traversal.
pub(crate) trait Visitor<T> {
    /// Closest-first: visit the child with the smaller key first, and skip stack entries whose key
    /// [`Visitor::keep`] refuses.
    const ORDERED: bool;
    /// Tests the root's bounds; `Some(key)` to enter.
    fn enter_root(&mut self, bounds: &Aabb) -> Option<f32>;
    /// Tests both children of a node whose own entry had `key`: a 2-bit mask of those to visit,
    /// and their keys. (Unordered visitors may use the key to carry state down the tree, as the
    /// frustum's active plane mask.)
    fn test_children(&mut self, node: &Node, key: f32) -> (u32, [f32; 2]);
    /// Hands a leaf to the policy; `false` stops the traversal.
    fn visit_leaf(&mut self, id: super::ProxyId, data: &T, key: f32) -> bool;
    /// Whether an entry with this key still needs visiting (a ray's clipped `tmax`).
    fn keep(&self, key: f32) -> bool;
    /// Whether every leaf below an entry with this key is to be visited without further tests
    /// (a frustum subtree wholly inside every plane). Only unordered visitors may say so.
    fn whole(&self, _key: f32) -> bool {
        false
    }
}

impl<T> Dbvt<T> {
    /// Starts loading what visiting `c` reads: its node line, or for a leaf its proxy slot.
    #[inline(always)]
    pub(super) fn prefetch(&self, c: ChildRef) {
        if c.is_leaf() {
            prefetch(self.slots.as_ptr().wrapping_add(c.index() as usize));
        } else {
            prefetch(self.nodes.as_ptr().wrapping_add(c.index() as usize));
        }
    }

    /// The traversal loop. Depth-first with an explicit stack; with `V::ORDERED`, the nearer
    /// child is taken first and the farther one pushed with its key, so entries beyond a clipped
    /// ray are culled when popped.
    ///
    /// Unordered queries (overlap, frustum) hand leaves to the visitor [`LEAF_LOOKAHEAD`] leaves
    /// late: each leaf's proxy slot is prefetched when the leaf is reached and read only after
    /// the traversal has moved on. Proxy slots are in creation order, not tree order, so without
    /// this every leaf visit of a large query is a cache miss, which dominated large frustum
    /// queries (`docs/performance.md`).
    pub(crate) fn traverse<V: Visitor<T>>(&self, stack: &mut Vec<(ChildRef, f32)>, v: &mut V) -> QueryStats {
        let mut stats = QueryStats::default();
        let Some(root) = self.root else { return stats };
        let Some(key) = v.enter_root(&self.root_bounds) else { return stats };
        stack.clear();
        let mut pending = LeafQueue::<u32, LEAF_LOOKAHEAD>::new(0);
        let mut next = Some((root, key));
        'walk: loop {
            // A child just entered needs no `keep` test: it was tested against the same range.
            let (c, key) = match next.take() {
                Some(e) => e,
                None => loop {
                    match stack.pop() {
                        Some(e) if V::ORDERED && !v.keep(e.1) => continue,
                        Some(e) => break e,
                        None => break 'walk,
                    }
                },
            };
            if c.is_leaf() {
                if V::ORDERED {
                    if !self.visit_leaf(v, c.index(), key, &mut stats) {
                        return stats;
                    }
                } else {
                    self.prefetch(c);
                    if let Some(p) = pending.push(c.index())
                        && !self.visit_leaf(v, p, 0.0, &mut stats)
                    {
                        return stats;
                    }
                }
                continue;
            }
            if !V::ORDERED && self.ordered && v.whole(key) {
                let all = self.for_each_leaf_below(c.index(), |p| {
                    self.prefetch(ChildRef::leaf(p));
                    pending.push(p).is_none_or(|due| self.visit_leaf(v, due, 0.0, &mut stats))
                });
                if !all {
                    return stats;
                }
                continue;
            }
            stats.nodes += 1;
            let node = &self.nodes[c.index() as usize];
            // The next step is one of these two children, and which one is known only after
            // the test: start loading both now, so the test's work overlaps the load (the tree
            // is larger than L2 from about 10k proxies; `docs/performance.md`).
            self.prefetch(node.child[0]);
            self.prefetch(node.child[1]);
            let (mask, keys) = v.test_children(node, key);
            if mask == 0 {
                continue;
            }
            // Which child comes next and whether the other waits, without a branch on the mask:
            // which children a ray enters, and which is nearer, follow no pattern a predictor
            // learns, and a four-way branch here mispredicted at most nodes.
            let both = mask == 3;
            // One child hit: that one (mask 1 or 2). Both: the nearer (the first, unordered).
            let near = if both { usize::from(V::ORDERED && keys[1] < keys[0]) } else { (mask >> 1) as usize };
            let (near_child, far_child) = select_pair(node.child.map(ChildRef::raw), near);
            let (near_key, far_key) = select_pair(keys.map(f32::to_bits), near);
            push_if(stack, both, (ChildRef::from_raw(far_child), f32::from_bits(far_key)));
            next = Some((ChildRef::from_raw(near_child), f32::from_bits(near_key)));
        }
        while let Some(p) = pending.pop() {
            if !self.visit_leaf(v, p, 0.0, &mut stats) {
                break;
            }
        }
        stats
    }

    /// Hands every proxy below internal node `n` to `visit` until it returns `false` (then returns
    /// `false`), in arena order. The arena must be in pre-order (`self.ordered`): `n`'s subtree is
    /// then the node range from `n` to the last node down its last internal children, which is
    /// read sequentially, with no stack and no tests. This is what makes a frustum query over a
    /// large scene cheap where it is wholly inside: a walk that chases child links waits on a
    /// cache miss per node there.
    pub(super) fn for_each_leaf_below(&self, n: u32, mut visit: impl FnMut(u32) -> bool) -> bool {
        debug_assert!(self.ordered);
        let mut last = n;
        loop {
            let c = self.nodes[last as usize].child;
            last = match (c[0].is_leaf(), c[1].is_leaf()) {
                (_, false) => c[1].index(),
                (false, true) => c[0].index(),
                (true, true) => break,
            };
        }
        for node in &self.nodes[n as usize..=last as usize] {
            for c in node.child {
                if c.is_leaf() && !visit(c.index()) {
                    return false;
                }
            }
        }
        true
    }

    /// Hands proxy `p` to the visitor; `false` stops the traversal.
    #[inline(always)]
    fn visit_leaf<V: Visitor<T>>(&self, v: &mut V, p: u32, key: f32, stats: &mut QueryStats) -> bool {
        stats.leaves += 1;
        let (id, data) = self.leaf(p);
        v.visit_leaf(id, data, key)
    }

    /// The id and data of the live proxy in slot `p`, which a leaf of the tree names.
    #[inline(always)]
    pub(super) fn leaf(&self, p: u32) -> (super::ProxyId, &T) {
        let data = self.slots[p as usize].data.as_ref().expect("leaf proxies are live");
        (self.id_of(p), data)
    }
}

/// Pushes `e` when `push`, without a branch on it: the entry is written past the end either
/// way and the length grows by `push` (the reserve's branch is taken once per growth, which
/// the predictor learns).
#[inline(always)]
pub(super) fn push_if<E: Copy>(stack: &mut Vec<E>, push: bool, e: E) {
    stack.reserve(1);
    let len = stack.len();
    // SAFETY: `reserve(1)` leaves room for one more entry at `len`; the length grows by at most
    // one, over an entry written just now.
    unsafe {
        stack.as_mut_ptr().add(len).write(e);
        stack.set_len(len + usize::from(push));
    }
}

/// How many leaves an unordered traversal holds back so their prefetched slots arrive first.
const LEAF_LOOKAHEAD: usize = 32;

/// A fixed ring of `N` entries waiting for their prefetch (no allocation): proxy indices for
/// the unordered traversals, pairs of leaves for the pair queries.
pub(super) struct LeafQueue<E, const N: usize> {
    items: [E; N],
    head: usize,
    len: usize,
}

impl<E: Copy, const N: usize> LeafQueue<E, N> {
    /// An empty ring (`fill` only takes the room).
    pub(super) fn new(fill: E) -> Self {
        LeafQueue { items: [fill; N], head: 0, len: 0 }
    }

    /// Adds `e`; when the ring is full, returns the oldest entry, which is due for its visit.
    #[inline(always)]
    pub(super) fn push(&mut self, e: E) -> Option<E> {
        if self.len == N {
            let due = std::mem::replace(&mut self.items[self.head], e);
            self.head = (self.head + 1) % N;
            Some(due)
        } else {
            self.items[(self.head + self.len) % N] = e;
            self.len += 1;
            None
        }
    }

    /// Removes the oldest entry.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<E> {
        (self.len > 0).then(|| {
            let e = self.items[self.head];
            self.head = (self.head + 1) % N;
            self.len -= 1;
            e
        })
    }
}

/// `(pair[near], pair[1 - near])` for `near` 0 or 1, by masking two values already in registers
/// rather than by an indexed load: the next node's address is on the loop's critical path, and
/// a load from the node (or a store and reload of the keys) added its latency to every step.
#[inline(always)]
fn select_pair(pair: [u32; 2], near: usize) -> (u32, u32) {
    let swap = (pair[0] ^ pair[1]) & (near as u32).wrapping_neg();
    (pair[0] ^ swap, pair[1] ^ swap)
}
