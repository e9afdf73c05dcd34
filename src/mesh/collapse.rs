//! Collapsing a binary BVH into 8-wide nodes (Wald, Benthin and Boulos, "Getting Rid of Packets",
//! 2008; Embree's BVH8): each wide node takes a binary node's children and repeatedly opens the
//! internal child of largest surface area until it has 8 children or only leaves remain.
//!
//! The node layout and its traversal live in `crate::wide`, shared with the dynamic tree's 8-wide
//! copy.

use super::layout::{Block, Blocks, BlocksBuilder, set_child};
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
/// a triangle's corners. Leaves of the binary tree must hold at most 4 items. With `parallel`,
/// the subtrees below the root's and its children's wide nodes are collapsed on rayon's threads
/// (the result is the same array, block for block).
pub(crate) fn collapse(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &(dyn Fn(u32) -> [glam::Vec3; 3] + Sync),
    parallel: bool,
) -> Collapsed {
    if build.is_empty() {
        return Collapsed { blocks: BlocksBuilder::with_capacity(0, 0).finish(), depth: 0 };
    }
    // The root is always a wide node, even over a single leaf, so traversal has one entry point;
    // `open` opens a single internal child first.
    if !parallel {
        // A binary tree of n nodes has (n + 1) / 2 leaves, one pack each, and a wide node has at
        // least two children: at most (n + 1) / 2 wide nodes. Both bounds only reserve address
        // space; growing the vector instead copied the dragon's 60 MB several times.
        let mut out = BlocksBuilder::with_capacity(build.len() / 2 + 1, build.len() / 2 + 1);
        let mut depth = 0;
        emit(build, items, tri, Lanes::one(0), &mut out, 1, &mut depth);
        return Collapsed { blocks: out.finish(), depth };
    }
    let piece = emit_piece(build, items, tri, Lanes::one(0), 1, PARALLEL_LEVELS);
    let blocks = Blocks::assemble(piece.len(), |dst| piece.place(dst, 0));
    Collapsed { blocks, depth: piece.depth }
}

/// Wide levels whose child subtrees are collapsed in parallel: up to 64 subtrees, enough to keep
/// two to eight threads busy although subtrees differ in size.
const PARALLEL_LEVELS: u32 = 2;

/// A run of the block array collapsed on its own: its blocks, with references counting from its
/// own start, and the subtrees collapsed apart that follow it in the array, each with the node
/// (a block of this run) and lane that refer to it. The array is the same as a serial collapse's:
/// there too a node is followed by its packs and then its child subtrees in lane order.
struct Piece {
    blocks: BlocksBuilder,
    subtrees: Vec<(u32, usize, Piece)>,
    depth: u32,
}

impl Piece {
    /// Blocks of this run and of its subtrees.
    fn len(&self) -> usize {
        self.blocks.len() + self.subtrees.iter().map(|(_, _, p)| p.len()).sum::<usize>()
    }

    /// Writes this run and its subtrees to the start of `dst`, which is block `base` onward of
    /// the final array; the subtrees on rayon's threads (a serial copy of every block was a fifth
    /// of Sponza's collapse on two threads).
    fn place(&self, dst: &mut [Block], base: u32) {
        let (own, mut rest) = dst.split_at_mut(self.blocks.len());
        self.blocks.place(own, base);
        let mut at = base + own.len() as u32;
        let mut parts = Vec::with_capacity(self.subtrees.len());
        for (node, lane, sub) in &self.subtrees {
            let len = sub.len();
            let (part, tail) = rest.split_at_mut(len);
            set_child(own, *node, *lane, ChildRef::node(at));
            parts.push((part, at, sub));
            rest = tail;
            at += len as u32;
        }
        place_all(&mut parts);
    }
}

/// Places each piece in its part of the array, halves of the list on two threads.
fn place_all(parts: &mut [(&mut [Block], u32, &Piece)]) {
    match parts {
        [] => {}
        [(dst, base, piece)] => piece.place(dst, *base),
        _ => {
            let (a, b) = parts.split_at_mut(parts.len() / 2);
            crate::par::join(|| place_all(a), || place_all(b));
        }
    }
}

/// Collapses the subtree under `children` into a [`Piece`]; `levels` more wide levels hand their
/// child subtrees to rayon's threads.
fn emit_piece(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &(dyn Fn(u32) -> [glam::Vec3; 3] + Sync),
    children: Lanes,
    depth: u32,
    levels: u32,
) -> Piece {
    if levels == 0 {
        // Room for the subtree's packs and as many nodes (every wide node has two children or
        // more), so the vector never grows and copies itself.
        let leaves = leaves_under(build, &children);
        let mut out = BlocksBuilder::with_capacity(leaves, leaves);
        let mut max_depth = depth;
        emit(build, items, tri, children, &mut out, depth, &mut max_depth);
        return Piece { blocks: out, subtrees: Vec::new(), depth: max_depth };
    }
    let mut out = BlocksBuilder::with_capacity(1, 8);
    let children = open(build, children);
    let me = write_node(build, items, tri, &children, &mut out);
    // The internal lanes, with their bounds written now and their references when placed.
    let inner: Vec<(usize, Lanes)> = children
        .as_slice()
        .iter()
        .enumerate()
        .filter_map(|(lane, &c)| match build[c as usize] {
            BuildNode::Inner { bounds, left, right } => {
                out.node_mut(me).set(lane, ChildRef::node(0), &bounds);
                Some((lane, Lanes::two(left, right)))
            }
            BuildNode::Leaf { .. } => None,
        })
        .collect();
    let pieces = crate::par::map(&inner, 1, |&(_, lanes)| emit_piece(build, items, tri, lanes, depth + 1, levels - 1));
    let depth = pieces.iter().map(|p| p.depth).max().unwrap_or(depth);
    let subtrees = inner.iter().zip(pieces).map(|(&(lane, _), p)| (me, lane, p)).collect();
    Piece { blocks: out, subtrees, depth }
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

/// Leaves of the binary tree under `children`.
fn leaves_under(build: &[BuildNode], children: &Lanes) -> usize {
    let mut stack: Vec<u32> = children.as_slice().to_vec();
    let mut leaves = 0;
    while let Some(c) = stack.pop() {
        match build[c as usize] {
            BuildNode::Inner { left, right, .. } => stack.extend([left, right]),
            BuildNode::Leaf { .. } => leaves += 1,
        }
    }
    leaves
}

/// Opens internal children (largest area first) until there are 8 or only leaves remain. A
/// single internal child (the root case) is opened first.
fn open(build: &[BuildNode], mut children: Lanes) -> Lanes {
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
    children
}

/// Appends a wide node for `children` (opened) and then its leaf packs, so that a node's packs
/// follow it in memory; returns the node's block. Internal lanes are left for the caller.
fn write_node(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &dyn Fn(u32) -> [glam::Vec3; 3],
    children: &Lanes,
    out: &mut BlocksBuilder,
) -> u32 {
    let me = out.push_node();
    for (lane, &c) in children.as_slice().iter().enumerate() {
        let node = &build[c as usize];
        if let BuildNode::Leaf { first, count, .. } = *node {
            let mut pack = TriPack::EMPTY;
            for (k, it) in items[first as usize..(first + count) as usize].iter().enumerate() {
                pack.set(k, it.index(), &tri(it.index()));
            }
            let at = out.push_pack(&pack);
            out.node_mut(me).set(lane, ChildRef::leaf(at), node.bounds());
        }
    }
    me
}

/// Collapses the subtree under `children` into `out`: its node, the node's packs, then its child
/// subtrees in lane order. Returns the node's block. Recursion depth is the binary depth, which
/// the builder bounds.
fn emit(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &dyn Fn(u32) -> [glam::Vec3; 3],
    children: Lanes,
    out: &mut BlocksBuilder,
    depth: u32,
    max_depth: &mut u32,
) -> u32 {
    *max_depth = (*max_depth).max(depth);
    let children = open(build, children);
    let me = write_node(build, items, tri, &children, out);
    for (lane, &c) in children.as_slice().iter().enumerate() {
        let node = &build[c as usize];
        if let BuildNode::Inner { left, right, .. } = *node {
            let at = emit(build, items, tri, Lanes::two(left, right), out, depth + 1, max_depth);
            out.node_mut(me).set(lane, ChildRef::node(at), node.bounds());
        }
    }
    me
}

#[cfg(test)]
mod tests {
    use super::collapse;
    use crate::build::{BinnedSah, BuildItem};
    use crate::math::Aabb;
    use crate::mesh::TriMesh;

    /// The parallel collapse places every subtree where the serial one writes it, with its
    /// references moved accordingly: the two arrays are equal word for word.
    #[test]
    fn the_parallel_collapse_is_the_serial_one_block_for_block() {
        for mesh in [TriMesh::uv_sphere(1.0, 96, 48), TriMesh::torus(2.0, 0.5, 7, 5), TriMesh::uv_sphere(1.0, 3, 2)] {
            let mut items: Vec<BuildItem> =
                (0..mesh.len()).map(|i| BuildItem::new(Aabb::from_points(mesh.triangle(i)), i as u32)).collect();
            let builder = BinnedSah { max_leaf: 4, block: 4, ..Default::default() };
            let build = builder.build(&mut items);
            let tri = |i: u32| mesh.triangle(i as usize);
            let serial = collapse(&build, &items, &tri, false);
            let parallel = collapse(&build, &items, &tri, true);
            assert_eq!(serial.depth, parallel.depth);
            assert!(serial.blocks.words() == parallel.blocks.words(), "{} triangles", mesh.len());
        }
    }
}
