//! Collapsing a binary BVH into 8-wide nodes (Wald, Benthin and Boulos, "Getting Rid of Packets",
//! 2008; Embree's BVH8): each wide node takes a binary node's children and opens internal ones,
//! the largest in surface area first, near the top until it has 8 children, and near the leaves
//! by their leaf counts, so that the wide nodes there are full ([`open`]).
//!
//! The node layout and its traversal live in `crate::wide`, shared with the dynamic tree's 8-wide
//! copy.

use std::collections::HashMap;
use std::sync::Mutex;

use super::layout::{BlockWriter, Blocks, NODE_BLOCKS, PACK_BLOCKS};
use super::triangle::{NO_PRIM, TriPack};
use crate::build::BuildNode;
use crate::child::ChildRef;
use crate::math::Aabb;
use crate::pages::Spare;

/// The collapsed tree: nodes and packs in one block array (see `super::layout`), the root at
/// block 0, each node followed by its leaf packs and then its child nodes' subtrees.
pub(crate) struct Collapsed {
    pub blocks: Blocks,
    pub depth: u32,
}

/// What the packs store of each triangle: its rows (`super::triangle::PackRows`) by index.
pub(crate) trait TriangleRows: Sync {
    /// Triangle `i`'s rows, and the box of its corners.
    fn rows_and_bounds(&self, i: u32) -> ([glam::Vec3; 3], Aabb);

    /// Starts loading what [`TriangleRows::rows_and_bounds`] of `i` reads first (a hint; the
    /// default does nothing).
    #[inline(always)]
    fn prefetch(&self, i: u32) {
        let _ = i;
    }

    /// Starts loading what [`TriangleRows::rows_and_bounds`] of `i` reads after what
    /// [`TriangleRows::prefetch`] asked for, once that has arrived (a hint; the default does
    /// nothing).
    #[inline(always)]
    fn prefetch_rest(&self, i: u32) {
        let _ = i;
    }
}

/// Asks for what the packs of `children`'s leaves read first ([`TriangleRows::prefetch`]).
#[inline(always)]
fn prefetch_packs(build: &[BuildNode], prims: &[u32], tri: &impl TriangleRows, children: &Lanes) {
    for &c in children.as_slice() {
        if let BuildNode::Leaf { first, count, .. } = build[c as usize] {
            for &prim in &prims[first as usize..(first + count) as usize] {
                tri.prefetch(prim);
            }
        }
    }
}

/// A function from a triangle to its corners, which are its rows.
impl<F: Fn(u32) -> [glam::Vec3; 3] + Sync> TriangleRows for F {
    fn rows_and_bounds(&self, i: u32) -> ([glam::Vec3; 3], Aabb) {
        let corners = self(i);
        (corners, Aabb::from_points(corners))
    }
}

/// Collapses `build` into 8-wide nodes. A binary leaf over `first..first + count` holds the
/// triangles `prims[first..first + count]` (the build items' indices, kept without their boxes,
/// which the collapse does not read: the largest array of a build, freed before the output is
/// made). `tri` gives a triangle's rows. Leaves of the binary tree must hold at most 4 items.
///
/// Two passes. The first opens every wide node ([`open`]) and records its lanes in depth-first
/// order, counting the blocks, so that the array is allocated once at its size; the second
/// writes the nodes and packs from those records, without opening anything again (opening reads
/// the binary nodes, and those reads wait on memory: opening twice was a tenth of a Sponza
/// build's time, perf). With `parallel`, both passes run the subtrees below the root's and its
/// children's wide nodes on rayon's threads, each written into its run of the array: the same
/// array, block for block. The array is made in `spare` memory where it has room (see
/// [`Blocks::reused_in`]).
pub(crate) fn collapse(
    build: &[BuildNode],
    prims: &[u32],
    tri: &impl TriangleRows,
    parallel: bool,
    spare: Option<Spare>,
) -> Collapsed {
    if build.is_empty() {
        return Collapsed { blocks: Blocks::zeroed(0), depth: 0 };
    }
    // The root is always a wide node, even over a single leaf, so traversal has one entry point;
    // `open` opens a single internal child first.
    let root = Lanes::one(0);
    // Blocks and wide nodes of every wide node's subtree, by the binary node it opens (see
    // `plan`).
    let sizes = Mutex::new(HashMap::new());
    let levels = if parallel { PARALLEL_LEVELS } else { 0 };
    let leaves = leaf_counts(build);
    let mut plan_out = Vec::new();
    let (len, _) = plan(build, &leaves, root, &sizes, levels, &mut plan_out);
    // Every block is written below (the plan counted them), so memory the build has already
    // backed need not be zeroed first.
    let mut blocks = Blocks::reused_in(len, spare);
    let mut out = blocks.writer();
    let depth = if parallel {
        let sizes = sizes.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        emit_parallel(build, prims, tri, &plan_out, out, &sizes, 1, PARALLEL_LEVELS)
    } else {
        let mut depth = 0;
        let mut lanes = plan_out.iter();
        emit(build, prims, tri, &mut lanes, &mut out, 1, &mut depth);
        debug_assert!(lanes.next().is_none());
        depth
    };
    Collapsed { blocks, depth }
}

/// The blocks and the wide nodes of the subtrees [`plan`] plans in parallel, by the binary node
/// each one's wide node opens.
type Sizes = Mutex<HashMap<u32, (usize, usize)>>;

/// Wide levels whose child subtrees are planned and written in parallel: up to 64 subtrees,
/// enough to keep two to eight threads busy although subtrees differ in size.
pub(super) const PARALLEL_LEVELS: u32 = 2;

/// Opens the wide node over `children` and every wide node below it, appending their lanes to
/// `out` in depth-first order (a node, then its child subtrees in lane order, as `emit` writes
/// them), and returns the blocks the subtree takes and its number of wide nodes. The child
/// subtrees of the top `levels` wide levels are planned on rayon's threads (the plan walks the
/// whole tree, and was a tenth of a two-thread Sponza build when serial), and their two sizes
/// are recorded in `sizes`, by the binary node that each one's wide node opens, for
/// [`emit_parallel`] to cut its runs by. Only those: a table over every binary node cost a
/// serial pass over the node count to make.
fn plan(
    build: &[BuildNode],
    leaves: &[u32],
    children: Lanes,
    sizes: &Sizes,
    levels: u32,
    out: &mut Vec<Lanes>,
) -> (usize, usize) {
    let children = open(build, leaves, children);
    out.push(children);
    let (mut blocks, mut wides) = (NODE_BLOCKS, 1);
    if levels > 0 {
        let below = crate::par::map(children.as_slice(), 1, |&c| {
            let BuildNode::Inner { left, right, .. } = build[c as usize] else { return None };
            let mut sub = Vec::new();
            let size = plan(build, leaves, Lanes::two(left, right), sizes, levels - 1, &mut sub);
            sizes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(c, size);
            Some((size, sub))
        });
        for sub in below {
            match sub {
                None => blocks += PACK_BLOCKS,
                Some(((b, w), sub)) => {
                    (blocks, wides) = (blocks + b, wides + w);
                    out.extend(sub);
                }
            }
        }
    } else {
        for &c in children.as_slice() {
            let BuildNode::Inner { left, right, .. } = build[c as usize] else {
                blocks += PACK_BLOCKS;
                continue;
            };
            let size = plan(build, leaves, Lanes::two(left, right), sizes, 0, out);
            (blocks, wides) = (blocks + size.0, wides + size.1);
        }
    }
    (blocks, wides)
}

/// Writes a wide node for `children` (opened) and then its leaf packs, so that a node's packs
/// follow it in memory; returns the node's position. Internal lanes are left to the caller.
fn write_node(
    build: &[BuildNode],
    prims: &[u32],
    tri: &impl TriangleRows,
    children: &Lanes,
    out: &mut BlockWriter<'_>,
) -> u32 {
    let me = out.push_node();
    // The triangles of all the node's packs are requested at once: they are scattered over the
    // mesh (a pack's neighbours in the tree are not its neighbours in the file), and each one's
    // corners waited on memory in turn (perf, the dragon). What they read first was asked for
    // one node ahead ([`emit`]), so the rest can be asked for now.
    for &c in children.as_slice() {
        if let BuildNode::Leaf { first, count, .. } = build[c as usize] {
            for &prim in &prims[first as usize..(first + count) as usize] {
                tri.prefetch_rest(prim);
            }
        }
    }
    for (lane, &c) in children.as_slice().iter().enumerate() {
        let node = &build[c as usize];
        if let BuildNode::Leaf { first, count, .. } = *node {
            let mut lanes = [NO_PRIM; 4];
            let leaf = &prims[first as usize..(first + count) as usize];
            lanes[..leaf.len()].copy_from_slice(leaf);
            let (at, _) = out.push_pack_with(|pack| write_pack(pack, &mut lanes[..leaf.len()], tri));
            out.node_mut(me).set(lane, ChildRef::leaf(at), node.bounds());
        }
    }
    me
}

/// Writes the triangles `leaf` (at most 4), which it sorts, into the empty `pack`, and returns
/// the box of their corners.
///
/// Lanes in ascending triangle order: a pack's test keeps the first lane of equal distances and
/// the walk the lowest triangle of equal distances across packs, so with the lanes sorted the
/// two rules are one, and the closest hit among ties does not depend on which packs a level's
/// walk reaches after the first (a triangle split into several leaves can be met again in
/// another pack).
pub(super) fn write_pack(pack: &mut TriPack, leaf: &mut [u32], tri: &impl TriangleRows) -> Aabb {
    leaf.sort_unstable();
    let mut bounds = Aabb::EMPTY;
    for (k, &prim) in leaf.iter().enumerate() {
        let (rows, b) = tri.rows_and_bounds(prim);
        pack.set(k, prim, &rows);
        bounds = bounds.union(&b);
    }
    bounds
}

/// Writes the subtree whose wide nodes' lanes `plan` yields, in the plan's order, into `out`:
/// its node, the node's packs, then its child subtrees in lane order. Returns the node's position.
/// Recursion depth is the binary depth, which the builder bounds.
fn emit(
    build: &[BuildNode],
    prims: &[u32],
    tri: &impl TriangleRows,
    plan: &mut std::slice::Iter<'_, Lanes>,
    out: &mut BlockWriter<'_>,
    depth: u32,
    max_depth: &mut u32,
) -> u32 {
    *max_depth = (*max_depth).max(depth);
    let children = plan.next().expect("the plan has every wide node");
    // Three nodes in flight: the binary nodes of the one after next, the triangle indices of the
    // next (from its binary nodes, asked for one node before), and the corners of this one
    // (`write_node`, from its indices): each read then finds what the one before asked for.
    let ahead = plan.as_slice();
    if let Some(after_next) = ahead.get(1) {
        for &c in after_next.as_slice() {
            crate::hint::prefetch(build.as_ptr().wrapping_add(c as usize));
        }
    }
    if let Some(next) = ahead.first() {
        prefetch_packs(build, prims, tri, next);
    }
    let me = write_node(build, prims, tri, children, out);
    for (lane, &c) in children.as_slice().iter().enumerate() {
        let node = &build[c as usize];
        if let BuildNode::Inner { .. } = *node {
            let at = emit(build, prims, tri, plan, out, depth + 1, max_depth);
            out.node_mut(me).set(lane, ChildRef::node(at), node.bounds());
        }
    }
    me
}

/// [`emit`] of the plan `lanes` (exactly the subtree's) into `out`, a run of exactly the
/// subtree's size, with the child subtrees of `levels` more wide levels written on rayon's
/// threads, each into its own run of blocks and from its own part of the plan (both sized from
/// `sizes`). Returns the deepest wide level reached.
#[allow(clippy::too_many_arguments)]
fn emit_parallel(
    build: &[BuildNode],
    prims: &[u32],
    tri: &impl TriangleRows,
    lanes: &[Lanes],
    out: BlockWriter<'_>,
    sizes: &HashMap<u32, (usize, usize)>,
    depth: u32,
    levels: u32,
) -> u32 {
    let children = &lanes[0];
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
    lens.extend(inner.iter().map(|&(_, c)| sizes[&c].0));
    let mut runs = out.split(&lens).into_iter();
    let mut head = runs.next().expect("the node's own run");
    let me = write_node(build, prims, tri, children, &mut head);
    debug_assert!(head.is_full());
    let mut jobs = Vec::with_capacity(inner.len());
    let mut rest = &lanes[1..];
    for (&(lane, c), run) in inner.iter().zip(runs) {
        let BuildNode::Inner { bounds, .. } = build[c as usize] else { unreachable!() };
        head.node_mut(me).set(lane, ChildRef::node(run.next_position()), &bounds);
        let (sub, tail) = rest.split_at(sizes[&c].1);
        rest = tail;
        jobs.push((sub, run));
    }
    debug_assert!(rest.is_empty());
    let depths = crate::par::map_vec(jobs, |(sub, mut run)| {
        if levels > 1 {
            emit_parallel(build, prims, tri, sub, run, sizes, depth + 1, levels - 1)
        } else {
            let mut deepest = 0;
            let mut plan = sub.iter();
            emit(build, prims, tri, &mut plan, &mut run, depth + 1, &mut deepest);
            debug_assert!(run.is_full() && plan.next().is_none());
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
}

/// The number of leaves in each binary node's subtree, by node index.
///
/// The builders number every node before its children (pre-order), and then one backward pass
/// over the array meets every child before its parent, reading the nodes in memory order, where a
/// walk down the links waits on a scattered node at many steps, all of them on the calling
/// thread (`docs/performance.md`, "Steps a parallel build ran on one thread"). Rotations keep the indices but not that
/// order, so a child numbered before its parent sends the count to the walk.
fn leaf_counts(build: &[BuildNode]) -> Vec<u32> {
    let mut leaves = vec![0u32; build.len()];
    for (i, node) in build.iter().enumerate().rev() {
        leaves[i] = match *node {
            BuildNode::Leaf { .. } => 1,
            BuildNode::Inner { left, right, .. } if left as usize > i && right as usize > i => {
                leaves[left as usize] + leaves[right as usize]
            }
            BuildNode::Inner { .. } => return leaf_counts_by_walk(build, leaves),
        };
    }
    leaves
}

/// [`leaf_counts`] by an explicit post-order walk from the root, for any numbering, into
/// `leaves` (of one entry per node; each entry is written before it is read). Left children
/// first: a builder puts them right after their parent, and rotations move few nodes, so the
/// walk reads mostly forward through memory.
fn leaf_counts_by_walk(build: &[BuildNode], mut leaves: Vec<u32>) -> Vec<u32> {
    let mut stack = vec![(0u32, false)];
    while let Some((i, children_done)) = stack.pop() {
        match build[i as usize] {
            BuildNode::Leaf { .. } => leaves[i as usize] = 1,
            BuildNode::Inner { left, right, .. } if children_done => {
                leaves[i as usize] = leaves[left as usize] + leaves[right as usize];
            }
            BuildNode::Inner { left, right, .. } => stack.extend([(i, true), (right, false), (left, false)]),
        }
    }
    leaves
}

/// Wide nodes over at most this many leaves are opened by their leaf counts ([`open`]); those
/// above it by area alone.
pub(super) const BOTTOM_LEAVES: u32 = 64;

/// The most leaves each child of a wide node over `total` leaves may hold for the node's subtree
/// to take no more wide levels than it must: the largest power of 8 below `total` (1 from 2 to 8
/// leaves: every child a leaf).
pub(super) fn fitting_leaves(total: u32) -> u32 {
    let mut fits = 1u32;
    while fits.saturating_mul(8) < total {
        fits *= 8;
    }
    fits
}

/// One lane of a wide node being opened, read from its binary node once, when the lane is made:
/// the binary nodes are scattered over memory, and reading them again at every step of the
/// opening and every comparison of the sort below made the collapse slower
/// (`docs/performance.md`).
#[derive(Clone, Copy, Default)]
struct Lane {
    node: u32,
    area: f32,
    /// Leaves in the subtree; 0 for a leaf itself, which is never opened.
    leaves: u32,
    /// Whether opening it needs no more wide nodes below than keeping it: its children's
    /// subtrees, each packed into full wide nodes, take no more than its own does.
    opens_free: bool,
}

impl Lane {
    fn new(build: &[BuildNode], leaves: &[u32], node: u32) -> Lane {
        let area = build[node as usize].bounds().half_area();
        let BuildNode::Inner { left, right, .. } = build[node as usize] else {
            return Lane { node, area, leaves: 0, opens_free: false };
        };
        // At least ceil((n - 1) / 7) wide nodes hold a subtree of n leaves, as the node's own
        // count is taken; each child's is rounded up to ceil(m / 7) (none for a leaf, the only
        // subtree of one leaf), so opening counts as free only with that margin. The counts come
        // from `leaves`, not from the children's nodes, which would be two more scattered reads
        // per lane.
        let wides = |x: u32| match leaves[x as usize] {
            0 | 1 => 0,
            m => m.div_ceil(7),
        };
        let n = leaves[node as usize];
        // Most internal lanes are opened soon after (all of them near the leaves), and opening
        // reads both children, scattered over the binary tree: asked for now, they are not
        // waited on then.
        crate::hint::prefetch(build.as_ptr().wrapping_add(left as usize));
        crate::hint::prefetch(build.as_ptr().wrapping_add(right as usize));
        Lane { node, area, leaves: n, opens_free: wides(left) + wides(right) <= (n - 1).div_ceil(7) }
    }
}

/// Opens internal children into one wide node's lanes, at most 8. A single internal child (the
/// root case) is opened first.
///
/// Near the top, the internal lane of largest area is opened while lanes are free (Wald et al.;
/// Embree's BVH8). That alone cuts the wide levels from the top, and leaves the bottom wide level
/// with what remains of the binary depth: on a balanced tree, two, four or eight lanes by the
/// depth modulo three, and up to twice the wide nodes per triangle at some sizes. So a wide node
/// over at most [`BOTTOM_LEAVES`] leaves opens by counts: first each child too large to fit in
/// one wide level fewer ([`fitting_leaves`]), then those that open at no cost in wide nodes
/// ([`Lane::opens_free`]), each the largest in area first; other lanes stay empty. The wide
/// nodes near the leaves are then full, and a subtree's top node takes what is left.
fn open(build: &[BuildNode], leaves: &[u32], mut children: Lanes) -> Lanes {
    if children.len == 1
        && let BuildNode::Inner { left, right, .. } = build[children.child[0] as usize]
    {
        children = Lanes::two(left, right);
    }
    let mut lanes = [Lane::default(); 8];
    let mut len = children.len;
    for (l, &c) in lanes.iter_mut().zip(children.as_slice()) {
        *l = Lane::new(build, leaves, c);
    }
    let total: u32 = children.as_slice().iter().map(|&c| leaves[c as usize]).sum();
    let fits = fitting_leaves(total);
    while len < 8 {
        // The largest lane that `opens`, the last of equals (as `max_by` keeps).
        let largest = |opens: &dyn Fn(&Lane) -> bool| {
            (0..len).filter(|&i| opens(&lanes[i])).max_by(|&a, &b| lanes[a].area.total_cmp(&lanes[b].area))
        };
        let pick = if total > BOTTOM_LEAVES {
            largest(&|l| l.leaves > 0)
        } else {
            largest(&|l| l.leaves > fits).or_else(|| largest(&|l| l.leaves > 0 && l.opens_free))
        };
        let Some(i) = pick else {
            break;
        };
        let BuildNode::Inner { left, right, .. } = build[lanes[i].node as usize] else { unreachable!() };
        // It gives way to its two children, in its place.
        lanes.copy_within(i + 1..len, i + 2);
        (lanes[i], lanes[i + 1]) = (Lane::new(build, leaves, left), Lane::new(build, leaves, right));
        len += 1;
    }
    // Largest box first. Embree's builder sorts a wide node's children likewise ("for faster
    // shadow ray traversal"; by triangle count there): an any-hit walk enters the first child hit
    // (`crate::wide::closest_first`), and the largest is the likeliest to hold an occluder. By
    // area rather than count, since area is what a ray's chance of a hit follows: an interior's
    // shadow rays visit fewer nodes and packs this way than sorted by count or in split order
    // (`docs/performance.md`).
    // Closest-hit walks order children by distance, so only their ties see this order. The sort
    // is stable: equal areas keep their order.
    lanes[..len].sort_by(|a, b| b.area.total_cmp(&a.area));
    Lanes { child: lanes.map(|l| l.node), len }
}

#[cfg(test)]
mod tests {
    use super::{collapse, leaf_counts};
    use crate::build::{BinnedSah, BuildItem, BuildNode, rotate_passes};
    use crate::math::Aabb;
    use crate::mesh::TriMesh;
    use crate::pages::PagedSlice;

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
            let prims: Vec<u32> = items.iter().map(BuildItem::index).collect();
            let serial = collapse(&build, &prims, &tri, false, None);
            let parallel = collapse(&build, &prims, &tri, true, None);
            assert_eq!(serial.depth, parallel.depth);
            assert!(serial.blocks.word_blocks().eq(parallel.blocks.word_blocks()), "{} triangles", mesh.len());
            // In spare memory full of other words, larger and smaller than the array: the same
            // words again, every byte written or zeroed.
            for words in [serial.blocks.len() * 8 + 1000, serial.blocks.len() * 8, serial.blocks.len() * 4] {
                for on_threads in [false, true] {
                    let spare = PagedSlice::from_slice(&vec![0xdead_beef_u32; words]).into_spare();
                    let again = collapse(&build, &prims, &tri, on_threads, spare);
                    assert!(serial.blocks.word_blocks().eq(again.blocks.word_blocks()), "{words} spare words");
                }
            }
        }
    }

    /// The leaves below each node, counted by recursion.
    fn leaves_below(build: &[BuildNode], i: u32, out: &mut [u32]) -> u32 {
        out[i as usize] = match build[i as usize] {
            BuildNode::Leaf { .. } => 1,
            BuildNode::Inner { left, right, .. } => leaves_below(build, left, out) + leaves_below(build, right, out),
        };
        out[i as usize]
    }

    /// The backward pass over a builder's pre-order, and the walk it hands a rotated tree to,
    /// both count what recursion counts.
    #[test]
    fn leaf_counts_in_pre_order_and_after_rotations() {
        let mesh = TriMesh::uv_sphere(1.0, 40, 20);
        let mut items: Vec<BuildItem> =
            (0..mesh.len()).map(|i| BuildItem::new(Aabb::from_points(mesh.triangle(i)), i as u32)).collect();
        let mut build = BinnedSah { max_leaf: 4, block: 4, ..Default::default() }.build(&mut items);
        let mut want = vec![0; build.len()];
        for rotated in [false, true] {
            if rotated {
                assert!(rotate_passes(&mut build, 3, false) > 0);
                // Some child now comes before its parent, so the walk counts.
                let before_parent = build
                    .iter()
                    .enumerate()
                    .any(|(i, n)| matches!(*n, BuildNode::Inner { left, right, .. } if (left.min(right) as usize) < i));
                assert!(before_parent);
            }
            leaves_below(&build, 0, &mut want);
            assert_eq!(leaf_counts(&build), want, "rotated: {rotated}");
        }
    }
}
