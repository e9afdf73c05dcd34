//! Collapsing a binary BVH into 8-wide nodes (Wald, Benthin and Boulos, "Getting Rid of Packets",
//! 2008; Embree's BVH8): each wide node takes a binary node's children and repeatedly opens the
//! internal child of largest surface area until it has 8 children or only leaves remain.
//!
//! The node layout and its traversal live in `crate::wide`, shared with the dynamic tree's 8-wide
//! copy.

use std::sync::atomic::{AtomicU32, Ordering};

use super::layout::{BlockWriter, Blocks, NODE_BLOCKS, PACK_BLOCKS};
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
///
/// The blocks are counted first, so the array is allocated once at its size and written in
/// place. With `parallel`, the subtrees below the root's and its children's wide nodes are
/// written on rayon's threads, each into its run of the array: the same array, block for block.
pub(crate) fn collapse(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &(dyn Fn(u32) -> [glam::Vec3; 3] + Sync),
    parallel: bool,
) -> Collapsed {
    if build.is_empty() {
        return Collapsed { blocks: Blocks::zeroed(0), depth: 0 };
    }
    // The root is always a wide node, even over a single leaf, so traversal has one entry point;
    // `open` opens a single internal child first.
    let root = Lanes::one(0);
    // Blocks of every wide node's subtree, by the binary node it opens (see `blocks_under`).
    let sizes: Vec<AtomicU32> = (0..if parallel { build.len() } else { 0 }).map(|_| AtomicU32::new(0)).collect();
    let levels = if parallel { PARALLEL_LEVELS } else { 0 };
    let mut blocks = Blocks::zeroed(blocks_under(build, root, &sizes, levels));
    let mut out = blocks.writer();
    let depth = if parallel {
        emit_parallel(build, items, tri, root, out, &sizes, 1, PARALLEL_LEVELS)
    } else {
        let mut depth = 0;
        emit(build, items, tri, root, &mut out, 1, &mut depth);
        depth
    };
    Collapsed { blocks, depth }
}

/// Wide levels whose child subtrees are written in parallel: up to 64 subtrees, enough to keep
/// two to eight threads busy although subtrees differ in size.
const PARALLEL_LEVELS: u32 = 2;

/// Blocks that `emit` writes for the subtree under `children`: the same opening, counted. With a
/// `sizes` table (one entry per binary node), the size of every child subtree is recorded at the
/// binary node that its wide node opens. The child subtrees of the top `levels` wide levels are
/// counted on rayon's threads (the count walks the whole tree, as the collapse does, and was a
/// tenth of a two-thread Sponza build when serial); each entry is written by one thread only.
fn blocks_under(build: &[BuildNode], children: Lanes, sizes: &[AtomicU32], levels: u32) -> usize {
    let children = open(build, children);
    let count = |c: u32| -> usize {
        let BuildNode::Inner { left, right, .. } = build[c as usize] else { return PACK_BLOCKS };
        let size = blocks_under(build, Lanes::two(left, right), sizes, levels.saturating_sub(1));
        if let Some(s) = sizes.get(c as usize) {
            s.store(u32::try_from(size).expect("BVH larger than 2^32 blocks"), Ordering::Relaxed);
        }
        size
    };
    let below: usize = if levels > 0 {
        crate::par::map(children.as_slice(), 1, |&c| count(c)).into_iter().sum()
    } else {
        children.as_slice().iter().map(|&c| count(c)).sum()
    };
    NODE_BLOCKS + below
}

/// Writes a wide node for `children` (opened) and then its leaf packs, so that a node's packs
/// follow it in memory; returns the node's block. Internal lanes are left to the caller.
fn write_node(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &dyn Fn(u32) -> [glam::Vec3; 3],
    children: &Lanes,
    out: &mut BlockWriter<'_>,
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

/// Writes the subtree under `children` into `out`: its node, the node's packs, then its child
/// subtrees in lane order. Returns the node's block. Recursion depth is the binary depth, which
/// the builder bounds.
fn emit(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &dyn Fn(u32) -> [glam::Vec3; 3],
    children: Lanes,
    out: &mut BlockWriter<'_>,
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

/// [`emit`] into `out`, a run of exactly the subtree's size, with the child subtrees of `levels`
/// more wide levels written on rayon's threads, each into its own run (sized from `sizes`).
/// Returns the deepest wide level reached.
#[allow(clippy::too_many_arguments)]
fn emit_parallel(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &(dyn Fn(u32) -> [glam::Vec3; 3] + Sync),
    children: Lanes,
    out: BlockWriter<'_>,
    sizes: &[AtomicU32],
    depth: u32,
    levels: u32,
) -> u32 {
    let children = open(build, children);
    let inner: Vec<(usize, u32)> = children
        .as_slice()
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(build[**c as usize], BuildNode::Inner { .. }))
        .map(|(lane, &c)| (lane, c))
        .collect();
    // This node and its packs, then one run per child subtree.
    let own = NODE_BLOCKS + (children.len - inner.len()) * PACK_BLOCKS;
    let mut lens = vec![own];
    lens.extend(inner.iter().map(|&(_, c)| sizes[c as usize].load(Ordering::Relaxed) as usize));
    let mut runs = out.split(&lens).into_iter();
    let mut head = runs.next().expect("the node's own run");
    let me = write_node(build, items, tri, &children, &mut head);
    debug_assert!(head.is_full());
    let mut jobs = Vec::with_capacity(inner.len());
    for (&(lane, c), run) in inner.iter().zip(runs) {
        let BuildNode::Inner { bounds, left, right } = build[c as usize] else { unreachable!() };
        head.node_mut(me).set(lane, ChildRef::node(run.next_block()), &bounds);
        jobs.push((Lanes::two(left, right), run));
    }
    let depths = crate::par::map_vec(jobs, |(lanes, mut run)| {
        if levels > 1 {
            emit_parallel(build, items, tri, lanes, run, sizes, depth + 1, levels - 1)
        } else {
            let mut deepest = 0;
            emit(build, items, tri, lanes, &mut run, depth + 1, &mut deepest);
            debug_assert!(run.is_full());
            deepest
        }
    });
    depths.into_iter().fold(depth, u32::max)
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
    // Largest box first. Embree's builder sorts a wide node's children likewise ("for faster
    // shadow ray traversal"; by triangle count there): an any-hit walk enters the first child hit
    // (`crate::wide::closest_first`), and the largest is the likeliest to hold an occluder. By
    // area rather than count, since area is what a ray's chance of a hit follows: Sponza's shadow
    // rays visit 13.2 nodes and 2.45 packs each, against 14.4 and 2.55 sorted by count and 17.8
    // and 3.15 in split order (`examples/trace_rays`); the bunny and the dragon are within 2%.
    // Closest-hit walks order children by distance, so only their ties see this order.
    let n = children.len;
    children.child[..n]
        .sort_by(|a, b| build[*b as usize].bounds().half_area().total_cmp(&build[*a as usize].bounds().half_area()));
    children
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
            assert!(serial.blocks.word_blocks().eq(parallel.blocks.word_blocks()), "{} triangles", mesh.len());
        }
    }
}
