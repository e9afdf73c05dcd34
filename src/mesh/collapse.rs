//! Collapsing a binary BVH into 8-wide nodes (Wald, Benthin and Boulos, "Getting Rid of Packets",
//! 2008; Embree's BVH8): each wide node takes a binary node's children and repeatedly opens the
//! internal child of largest surface area until it has 8 children or only leaves remain.
//!
//! The node layout and its traversal live in `crate::wide`, shared with the dynamic tree's 8-wide
//! copy.

use super::layout::{Blocks, BlocksBuilder};
use super::triangle::TriPack;
use crate::build::{BuildItem, BuildNode};
use crate::child::ChildRef;

/// The collapsed tree: nodes and packs in one block array (see `super::layout`), the root at
/// block 0, each node followed by its leaf packs and then its child nodes' subtrees.
pub(crate) struct Collapsed {
    pub blocks: Blocks,
    pub depth: u32,
}

/// Collapses `build` (over `items`, whose `index` is the triangle) into 8-wide nodes. `tri` gives
/// a triangle's corners. Leaves of the binary tree must hold at most 4 items.
pub(crate) fn collapse(build: &[BuildNode], items: &[BuildItem], tri: &dyn Fn(u32) -> [glam::Vec3; 3]) -> Collapsed {
    // A binary tree of n nodes has (n + 1) / 2 leaves, one pack each, and a wide node has at
    // least two children: at most (n + 1) / 2 wide nodes. Both bounds only reserve address space;
    // growing the vector instead copied the dragon's 60 MB several times.
    let mut out = BlocksBuilder::with_capacity(build.len() / 2 + 1, build.len() / 2 + 1);
    let mut depth = 0;
    if !build.is_empty() {
        // The root is always a wide node, even over a single leaf, so traversal has one entry
        // point; `emit` opens a single internal child first.
        emit(build, items, tri, Lanes::one(0), &mut out, 1, &mut depth);
    }
    Collapsed { blocks: out.finish(), depth }
}

/// The children of one wide node while it is being opened: at most 8 binary node indices, in
/// place. The collapse makes one of these per wide node, so they live on the stack, where they
/// were a vector per wide node (and the triangles of each leaf another).
#[derive(Clone, Copy)]
struct Lanes {
    child: [u32; 8],
    len: usize,
}

impl Lanes {
    fn one(c: u32) -> Lanes {
        Lanes { child: [c, 0, 0, 0, 0, 0, 0, 0], len: 1 }
    }

    fn two(a: u32, b: u32) -> Lanes {
        Lanes { child: [a, b, 0, 0, 0, 0, 0, 0], len: 2 }
    }

    fn as_slice(&self) -> &[u32] {
        &self.child[..self.len]
    }

    /// Replaces lane `i` by `a` and inserts `b` after it (opening an internal child). At most 7
    /// lanes are in use before, so there is room.
    fn split(&mut self, i: usize, a: u32, b: u32) {
        self.child.copy_within(i + 1..self.len, i + 2);
        self.child[i] = a;
        self.child[i + 1] = b;
        self.len += 1;
    }
}

/// Opens internal children (largest area first) until there are 8, writes a wide node for them,
/// then its leaf packs, then recurses into its internal children. Returns the node's block.
/// Recursion depth is the binary depth, which the builder bounds.
fn emit(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &dyn Fn(u32) -> [glam::Vec3; 3],
    mut children: Lanes,
    out: &mut BlocksBuilder,
    depth: u32,
    max_depth: &mut u32,
) -> u32 {
    *max_depth = (*max_depth).max(depth);
    // A node given a single internal child (the root case) opens it first.
    if children.len == 1
        && let BuildNode::Inner { left, right, .. } = build[children.child[0] as usize]
    {
        children = Lanes::two(left, right);
    }
    while children.len < 8 {
        let best = children
            .as_slice()
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(build[**c as usize], BuildNode::Inner { .. }))
            .max_by(|a, b| {
                build[*a.1 as usize].bounds().half_area().total_cmp(&build[*b.1 as usize].bounds().half_area())
            });
        let Some((i, &c)) = best else { break };
        let BuildNode::Inner { left, right, .. } = build[c as usize] else { unreachable!() };
        children.split(i, left, right);
    }
    let me = out.push_node();
    // Leaves first, so that a node's packs follow it in memory; then the child nodes.
    for (lane, &c) in children.as_slice().iter().enumerate() {
        let node = &build[c as usize];
        if let BuildNode::Leaf { first, count, .. } = *node {
            let mut pack = TriPack::EMPTY;
            for (k, it) in items[first as usize..(first + count) as usize].iter().enumerate() {
                pack.set(k, it.index, &tri(it.index));
            }
            let at = out.push_pack(&pack);
            out.node_mut(me).set(lane, ChildRef::leaf(at), node.bounds());
        }
    }
    for (lane, &c) in children.as_slice().iter().enumerate() {
        let node = &build[c as usize];
        if let BuildNode::Inner { left, right, .. } = *node {
            let at = emit(build, items, tri, Lanes::two(left, right), out, depth + 1, max_depth);
            out.node_mut(me).set(lane, ChildRef::node(at), node.bounds());
        }
    }
    me
}
