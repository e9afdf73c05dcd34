//! The [`BuildQuality::Low`](super::BuildQuality) build: a linear BVH written straight into
//! 8-wide nodes, with no binary tree in between, as Embree's Morton builder writes its nodes.
//!
//! The triangles lie along the Morton curve of their centroids
//! ([`sort_along_curve`](crate::build::sort_along_curve)), so every subtree is a range of them,
//! and a range's two halves are where [`curve_cut`] cuts it. A wide node over a range opens
//! those cuts until it has 8 lanes, each lane a range, as the collapse opens a binary tree
//! (`super::collapse`): the largest box first near the top, and near the leaves by how many
//! leaves a range needs, so that the wide nodes there are full. A range's bounds are only known
//! once its subtree is built, so the plan first makes the binary tree of the cuts down to ranges
//! of [`TOP_LEAF`] triangles with their bounds ([`Ranges::top_tree`]), and plans each smaller
//! range over its own cut tree down to the leaves ([`Ranges::local_tree`]).
//!
//! Two passes, as the collapse's: [`plan`] opens every wide node and counts the blocks, so that
//! the array is allocated once at its size and subtrees are written on other threads into runs
//! of it; [`Writer::emit`] then writes the nodes and packs from the plan, their bounds from the
//! leaves up. Against building the binary tree and collapsing it, this writes no binary node
//! (two per leaf, each read again by the collapse), copies no subtree built on another thread
//! into place, and counts no leaves below every node.

use std::collections::HashMap;
use std::sync::Mutex;

use super::collapse::{BOTTOM_LEAVES, Collapsed, PARALLEL_LEVELS, TriangleRows, fitting_leaves, write_pack};
use super::layout::{BlockWriter, Blocks, NODE_BLOCKS, PACK_BLOCKS};
use crate::build::{BuildItem, CurveOrder, curve_cut};
use crate::child::ChildRef;
use crate::math::Aabb;
use crate::pages::Spare;

/// Triangles per leaf: a pack's.
const MAX_LEAF: usize = 4;

/// The plan of the 8-wide tree over items laid along the curve: every wide node's lanes, and
/// the blocks they take. It reads the items' keys and boxes, [`Plan::write`] only the triangles,
/// so the items' memory can take the tree.
pub(crate) struct Plan {
    /// Every wide node's lanes in depth-first order (a node, then its child subtrees in lane
    /// order), as [`Writer::emit`] writes them.
    lanes: Vec<Lanes>,
    /// The blocks and wide nodes of the subtrees written on other threads (see [`plan`]).
    sizes: HashMap<u64, (usize, usize)>,
    /// Blocks of the whole tree.
    blocks: usize,
    parallel: bool,
}

impl Plan {
    /// Plans the tree over `items`, laid along the curve in `order`. With `parallel`, the subtrees below the root's and its children's wide nodes are
    /// planned, and then written, on rayon's threads.
    pub(crate) fn new(order: &CurveOrder<'_>, items: &[BuildItem], parallel: bool) -> Plan {
        assert_eq!(order.keys.len(), items.len());
        let mut lanes = Vec::new();
        let sizes = Mutex::new(HashMap::new());
        let levels = if parallel { PARALLEL_LEVELS } else { 0 };
        let blocks = if items.is_empty() {
            0
        } else {
            let ranges = Ranges::new(order, items, parallel);
            plan(&ranges, 0, items.len() as u32, ranges.root(), &sizes, levels, &mut lanes, &mut Vec::new()).0
        };
        let sizes = sizes.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        Plan { lanes, sizes, blocks, parallel }
    }

    /// Writes the planned tree, `prims` the triangles along the curve (the items' indices) and
    /// `tri` their rows; returns the tree and its bounds. The tree is the same block for block
    /// with or without `parallel`. The array is made in `spare` memory where it has room (see
    /// [`Blocks::reused_in`]).
    pub(crate) fn write(&self, prims: &[u32], tri: &impl TriangleRows, spare: Option<Spare>) -> (Collapsed, Aabb) {
        if self.lanes.is_empty() {
            return (Collapsed { blocks: Blocks::zeroed(0), depth: 0 }, Aabb::EMPTY);
        }
        // Every block is written below (the plan counted them), so memory already backed need
        // not be zeroed first.
        let mut blocks = Blocks::reused_in(self.blocks, spare);
        let out = blocks.writer();
        let writer = Writer { prims, tri };
        let (depth, bounds) = if self.parallel {
            writer.emit_parallel(&self.lanes, out, &self.sizes, 1, PARALLEL_LEVELS)
        } else {
            let (mut out, mut depth) = (out, 0);
            let mut plan = self.lanes.iter();
            let (_, bounds) = writer.emit(&mut plan, &mut out, 1, &mut depth);
            debug_assert!(plan.next().is_none() && out.is_full());
            (depth, bounds)
        };
        (Collapsed { blocks, depth }, bounds)
    }
}

/// One wide node's lanes: consecutive ranges of the items, lane `l` over
/// `fence[l]..fence[l + 1]`, in the curve's order.
#[derive(Clone, Copy, Debug)]
struct Lanes {
    fence: [u32; 9],
    len: usize,
}

impl Lanes {
    /// The ranges of the lanes, in order.
    fn ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.fence[..=self.len].windows(2).map(|w| (w[0] as usize, w[1] as usize))
    }
}

/// Whether a range of `count` items is a leaf.
fn is_leaf(count: usize) -> bool {
    count <= MAX_LEAF
}

/// The items and their keys, for cutting ranges, with the top of the tree of cuts.
struct Ranges<'a> {
    keys: &'a [u64],
    items: &'a [BuildItem],
    order: &'a CurveOrder<'a>,
    /// The binary tree of the cuts down to ranges of at most [`TOP_LEAF`] items, in pre-order
    /// ([`Ranges::top_tree`]).
    top: Vec<TopNode>,
}

/// A range of the top tree ([`Ranges::top_tree`]).
#[derive(Clone, Copy, Debug)]
struct TopNode {
    /// Where the range is cut; 0 for a leaf of the top tree (a cut is never at a range's start).
    cut: u32,
    /// The two halves' nodes.
    halves: [u32; 2],
    /// The half area of the range's bounds.
    area: f32,
}

/// Ranges of at most this many items are the leaves of the top tree ([`Ranges::top_tree`]):
/// the ranges of the wide nodes opened by area, over more than [`BOTTOM_LEAVES`] leaves, are
/// larger.
const TOP_LEAF: usize = 4 * BOTTOM_LEAVES as usize;

/// Ranges above which the top tree is made on two threads.
const PARALLEL_TOP: usize = 1 << 15;

impl<'a> Ranges<'a> {
    /// The ranges of the items laid along the curve in `order`, with their top tree.
    fn new(order: &'a CurveOrder<'a>, items: &'a [BuildItem], parallel: bool) -> Ranges<'a> {
        let mut ranges = Ranges { keys: order.keys, items, order, top: Vec::new() };
        let mut top = Vec::new();
        if !items.is_empty() {
            ranges.top_tree(0, items.len(), parallel, &mut top);
        }
        ranges.top = top;
        ranges
    }

    /// Appends the binary tree of the cuts of `a..b`, down to ranges of at most [`TOP_LEAF`]
    /// items, to `out` in pre-order, its halves' indices counted from `out`'s start, and returns
    /// the bounds of `a..b`. Each range's bounds come from its halves' and, at the leaves, from
    /// the order's bounds of runs of items: the wide nodes near the top open the largest box
    /// first by them, as the collapse opens a binary tree, where opening the most items first
    /// priced an interior's tree a fifth higher (SAH).
    fn top_tree(&self, a: usize, b: usize, parallel: bool, out: &mut Vec<TopNode>) -> Aabb {
        let me = out.len();
        out.push(TopNode { cut: 0, halves: [0; 2], area: 0.0 }); // set below
        if b - a <= TOP_LEAF {
            let bounds = self.order.bounds(self.items, a, b);
            out[me].area = bounds.half_area();
            return bounds;
        }
        let cut = self.cut(a, b);
        let (left, right, right_at) = if parallel && b - a > PARALLEL_TOP {
            let (left, (right, mut nodes)) = crate::par::join(
                || self.top_tree(a, cut, true, out),
                || {
                    let mut nodes = Vec::new();
                    (self.top_tree(cut, b, true, &mut nodes), nodes)
                },
            );
            let at = out.len() as u32;
            for node in nodes.iter_mut().filter(|n| n.cut != 0) {
                node.halves = node.halves.map(|h| h + at);
            }
            out.extend(nodes);
            (left, right, at)
        } else {
            let left = self.top_tree(a, cut, false, out);
            let at = out.len() as u32;
            (left, self.top_tree(cut, b, false, out), at)
        };
        let bounds = left.union(&right);
        out[me] = TopNode { cut: cut as u32, halves: [me as u32 + 1, right_at], area: bounds.half_area() };
        bounds
    }

    /// The whole range's node in the top tree.
    fn root(&self) -> Option<u32> {
        (!self.top.is_empty()).then_some(0)
    }

    /// The cut of the range `a..b` of more than [`MAX_LEAF`] items, from `a`.
    fn cut(&self, a: usize, b: usize) -> usize {
        a + curve_cut(&self.keys[a..b], &self.items[a..b], MAX_LEAF)
    }

    /// The lanes of the wide node over `a..b`, a range of more than [`TOP_LEAF`] items (so over
    /// more than [`BOTTOM_LEAVES`] leaves), whose node in the top tree is `top`: its two halves, opened
    /// further while lanes are free, the internal lane of the largest box first (among the top
    /// tree's ranges; else the one of most items), the last of equals.
    ///
    /// Returns the lanes and each one's node in the top tree, where it is one.
    fn open(&self, a: usize, b: usize, top: Option<u32>) -> (Lanes, [Option<u32>; 8]) {
        debug_assert!(b - a > TOP_LEAF);
        let mut lanes = Lanes { fence: [b as u32; 9], len: 1 };
        lanes.fence[0] = a as u32;
        let mut tops = [None; 8];
        tops[0] = top;
        // Lane 0 is always opened first: it is the whole range.
        let mut pick = Some(0);
        while let Some(l) = pick {
            let (s, e) = (lanes.fence[l] as usize, lanes.fence[l + 1] as usize);
            let node = tops[l].map(|t| self.top[t as usize]).filter(|node| node.cut != 0);
            let cut = node.map_or_else(|| self.cut(s, e), |node| node.cut as usize);
            let halves = node.map_or([None; 2], |node| node.halves.map(Some));
            lanes.fence.copy_within(l + 1..=lanes.len, l + 2);
            lanes.fence[l + 1] = cut as u32;
            tops.copy_within(l + 1..lanes.len, l + 2);
            (tops[l], tops[l + 1]) = (halves[0], halves[1]);
            lanes.len += 1;
            if lanes.len == 8 {
                break;
            }
            let count = |l: usize| (lanes.fence[l + 1] - lanes.fence[l]) as usize;
            let area = |l: usize| tops[l].map(|t| self.top[t as usize].area);
            pick = (0..lanes.len)
                .filter(|&l| !is_leaf(count(l)))
                .filter_map(|l| Some((l, area(l)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(l, _)| l)
                .or_else(|| (0..lanes.len).filter(|&l| !is_leaf(count(l))).max_by_key(|&l| count(l)));
        }
        (lanes, tops)
    }

    /// The cut tree of the range `a..b` down to its leaves,
    /// with every range's bounds and leaf count, into `nodes` (cleared first) in pre-order. What
    /// the wide nodes within a range of at most [`TOP_LEAF`] items open by, as the collapse
    /// opens a binary tree: near the leaves by exact leaf counts, which an estimate from the
    /// triangles (a quarter of them) left a twentieth more wide nodes for.
    fn local_tree(&self, a: usize, b: usize, nodes: &mut Vec<LocalNode>) {
        debug_assert!(b - a <= TOP_LEAF);
        nodes.clear();
        self.local_node(a, b, nodes);
    }

    /// Appends the node of `a..b` and those below it to `nodes` (see [`Ranges::local_tree`]);
    /// returns its bounds.
    fn local_node(&self, a: usize, b: usize, nodes: &mut Vec<LocalNode>) -> Aabb {
        let me = nodes.len();
        let mut node = LocalNode { first: a as u32, end: b as u32, halves: [0; 2], leaves: 1, area: 0.0 };
        nodes.push(node);
        let bounds = if is_leaf(b - a) {
            self.order.bounds(self.items, a, b)
        } else {
            let cut = self.cut(a, b);
            let left = nodes.len() as u16;
            let lb = self.local_node(a, cut, nodes);
            let right = nodes.len() as u16;
            let rb = self.local_node(cut, b, nodes);
            node.halves = [left, right];
            node.leaves = nodes[left as usize].leaves + nodes[right as usize].leaves;
            lb.union(&rb)
        };
        node.area = bounds.half_area();
        nodes[me] = node;
        bounds
    }
}

/// A range of a cut tree near the leaves ([`Ranges::local_tree`]).
#[derive(Clone, Copy, Debug, Default)]
struct LocalNode {
    first: u32,
    end: u32,
    /// The two halves' nodes, for a range of more than [`MAX_LEAF`] items.
    halves: [u16; 2],
    /// Leaves in the range's subtree.
    leaves: u16,
    /// The half area of the range's bounds.
    area: f32,
}

impl LocalNode {
    fn is_leaf(&self) -> bool {
        is_leaf((self.end - self.first) as usize)
    }
}

/// Opens the wide node over the local nodes `children` (one, or two halves), as the collapse's
/// `open` opens binary nodes: a single internal child first; then, above [`BOTTOM_LEAVES`]
/// leaves, the internal lane of the largest box while lanes are free; at or below it, first each
/// lane too large to fit in one wide level fewer ([`fitting_leaves`]), then those that open at
/// no cost in wide nodes, each the largest box first. Returns the lanes' nodes in the curve's
/// order.
fn open_local(nodes: &[LocalNode], children: &[u16]) -> ([u16; 8], usize) {
    let mut lanes = [0u16; 8];
    let mut len = children.len();
    lanes[..len].copy_from_slice(children);
    if len == 1 && !nodes[lanes[0] as usize].is_leaf() {
        (lanes[0], lanes[1]) = (nodes[lanes[0] as usize].halves[0], nodes[lanes[0] as usize].halves[1]);
        len = 2;
    }
    let node = |l: u16| &nodes[l as usize];
    let total: u32 = lanes[..len].iter().map(|&l| u32::from(node(l).leaves)).sum();
    let fits = fitting_leaves(total);
    // At least ceil((n - 1) / 7) wide nodes hold a subtree of n leaves; each half's is rounded
    // up to ceil(m / 7) (none for a leaf), so opening is free only with that margin (the
    // collapse's `Lane::opens_free`).
    let wides = |l: u16| if node(l).is_leaf() { 0 } else { u32::from(node(l).leaves).div_ceil(7) };
    let opens_free =
        |l: u16| wides(node(l).halves[0]) + wides(node(l).halves[1]) <= (u32::from(node(l).leaves) - 1).div_ceil(7);
    while len < 8 {
        // The internal lane of the largest box that `opens`, the last of equals.
        let largest = |opens: &dyn Fn(u16) -> bool| {
            (0..len)
                .filter(|&i| !node(lanes[i]).is_leaf() && opens(lanes[i]))
                .max_by(|&a, &b| node(lanes[a]).area.total_cmp(&node(lanes[b]).area))
        };
        let pick = if total > BOTTOM_LEAVES {
            largest(&|_| true)
        } else {
            largest(&|l| u32::from(node(l).leaves) > fits).or_else(|| largest(&opens_free))
        };
        let Some(i) = pick else { break };
        let halves = node(lanes[i]).halves;
        lanes.copy_within(i + 1..len, i + 2);
        (lanes[i], lanes[i + 1]) = (halves[0], halves[1]);
        len += 1;
    }
    (lanes, len)
}

/// The blocks and the wide nodes of the subtrees [`plan`] plans on other threads, by their
/// range ([`range_key`]).
type Sizes = Mutex<HashMap<u64, (usize, usize)>>;

/// The key of the range `a..b` in [`Sizes`].
fn range_key(a: usize, b: usize) -> u64 {
    (a as u64) << 32 | b as u64
}

/// Opens the wide node over `a..b` (whose node in the top tree is `top`) and every wide node below
/// it, appending their lanes to `out` in depth-first order (a node, then its child subtrees in
/// lane order, as [`Writer::emit`] writes them), and returns the blocks the subtree takes and
/// its number of wide nodes. The child subtrees of the top `levels` wide levels are planned on
/// rayon's threads, and their sizes recorded in `sizes` for [`Writer::emit_parallel`] to cut
/// its runs by. A range of at most [`TOP_LEAF`] items is planned over its cut tree, made in
/// `local` ([`Ranges::local_tree`]).
#[allow(clippy::too_many_arguments)]
fn plan(
    ranges: &Ranges<'_>,
    a: u32,
    b: u32,
    top: Option<u32>,
    sizes: &Sizes,
    levels: u32,
    out: &mut Vec<Lanes>,
    local: &mut Vec<LocalNode>,
) -> (usize, usize) {
    if (b - a) as usize <= TOP_LEAF {
        ranges.local_tree(a as usize, b as usize, local);
        return plan_local(local, &[0], sizes, levels, out);
    }
    let (lanes, tops) = ranges.open(a as usize, b as usize, top);
    out.push(lanes);
    let (mut blocks, mut wides) = (NODE_BLOCKS, 1);
    // The internal lanes, each with its node in the top tree.
    let mut internal = [(0, 0, None); 8];
    let mut count = 0;
    for ((s, e), &top) in lanes.ranges().zip(&tops) {
        if is_leaf(e - s) {
            blocks += PACK_BLOCKS;
        } else {
            internal[count] = (s as u32, e as u32, top);
            count += 1;
        }
    }
    let internal = &internal[..count];
    if levels > 0 {
        let below = crate::par::map(internal, 1, |&(s, e, top)| {
            let (mut sub, mut local) = (Vec::new(), Vec::new());
            let size = plan(ranges, s, e, top, sizes, levels - 1, &mut sub, &mut local);
            sizes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(range_key(s as usize, e as usize), size);
            (size, sub)
        });
        for ((b, w), sub) in below {
            (blocks, wides) = (blocks + b, wides + w);
            out.extend(sub);
        }
    } else {
        for &(s, e, top) in internal {
            let (b, w) = plan(ranges, s, e, top, sizes, 0, out, local);
            (blocks, wides) = (blocks + b, wides + w);
        }
    }
    (blocks, wides)
}

/// [`plan`] of the wide node over the nodes `children` (one, or two halves) of a range's cut
/// tree `nodes` ([`Ranges::local_tree`]), and of every wide node below it.
fn plan_local(
    nodes: &[LocalNode],
    children: &[u16],
    sizes: &Sizes,
    levels: u32,
    out: &mut Vec<Lanes>,
) -> (usize, usize) {
    let (mut lanes, len) = open_local(nodes, children);
    let lanes = &mut lanes[..len];
    lanes.sort_unstable_by_key(|&l| nodes[l as usize].first);
    let mut fences = Lanes { fence: [nodes[lanes[len - 1] as usize].end; 9], len };
    for (fence, &l) in fences.fence.iter_mut().zip(lanes.iter()) {
        *fence = nodes[l as usize].first;
    }
    out.push(fences);
    let (mut blocks, mut wides) = (NODE_BLOCKS, 1);
    for &l in lanes.iter() {
        let node = &nodes[l as usize];
        if node.is_leaf() {
            blocks += PACK_BLOCKS;
            continue;
        }
        let size = plan_local(nodes, &[l], sizes, levels.saturating_sub(1), out);
        if levels > 0 {
            let key = range_key(node.first as usize, node.end as usize);
            sizes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(key, size);
        }
        (blocks, wides) = (blocks + size.0, wides + size.1);
    }
    (blocks, wides)
}

/// What the write pass reads: the triangles along the curve and their rows.
struct Writer<'a, T> {
    prims: &'a [u32],
    tri: &'a T,
}

/// A wide node's lanes as written: each one's reference and box.
type Children = [(ChildRef, Aabb); 8];

impl<T: TriangleRows> Writer<'_, T> {
    /// Asks for what the packs of `lanes`'s leaves read first ([`TriangleRows::prefetch`]), or,
    /// with `rest`, what they read after that.
    #[inline(always)]
    fn prefetch_leaves(&self, lanes: &Lanes, rest: bool) {
        for (s, e) in lanes.ranges().filter(|&(s, e)| is_leaf(e - s)) {
            for &prim in &self.prims[s..e] {
                if rest { self.tri.prefetch_rest(prim) } else { self.tri.prefetch(prim) }
            }
        }
    }

    /// Writes an empty wide node for `lanes` and then its leaf packs, so that a node's packs
    /// follow it in memory; returns the node's position and the leaf lanes' references and
    /// boxes (the internal lanes' are left to the caller).
    fn write_node(&self, lanes: &Lanes, out: &mut BlockWriter<'_>) -> (u32, Children) {
        let me = out.push_node();
        // The leaves' triangles are scattered over the mesh; what they read first was asked for
        // one node ahead ([`Writer::emit`]), so the rest can be asked for now, all at once.
        self.prefetch_leaves(lanes, true);
        let mut children = [(ChildRef::leaf(0), Aabb::EMPTY); 8];
        for (child, (s, e)) in children.iter_mut().zip(lanes.ranges()) {
            if is_leaf(e - s) {
                let mut leaf = [0u32; MAX_LEAF];
                leaf[..e - s].copy_from_slice(&self.prims[s..e]);
                let (at, bounds) = out.push_pack_with(|pack| write_pack(pack, &mut leaf[..e - s], self.tri));
                *child = (ChildRef::leaf(at), bounds);
            }
        }
        (me, children)
    }

    /// Writes the subtree whose wide nodes' lanes `plan` yields into `out`: its node, the node's
    /// packs, then its child subtrees in lane order. Returns the node's position and bounds.
    /// Recursion depth is the tree's wide depth.
    fn emit(
        &self,
        plan: &mut std::slice::Iter<'_, Lanes>,
        out: &mut BlockWriter<'_>,
        depth: u32,
        max_depth: &mut u32,
    ) -> (u32, Aabb) {
        *max_depth = (*max_depth).max(depth);
        let lanes = plan.next().expect("the plan has every wide node");
        if let Some(next) = plan.as_slice().first() {
            self.prefetch_leaves(next, false);
        }
        let (me, mut children) = self.write_node(lanes, out);
        for (child, (s, e)) in children.iter_mut().zip(lanes.ranges()) {
            if !is_leaf(e - s) {
                let (at, bounds) = self.emit(plan, out, depth + 1, max_depth);
                *child = (ChildRef::node(at), bounds);
            }
        }
        (me, set_lanes(out, me, &children[..lanes.len]))
    }

    /// [`Writer::emit`] of the plan `plan` (exactly the subtree's) into `out`, a run of exactly
    /// the subtree's size, with the child subtrees of `levels` more wide levels written on
    /// rayon's threads, each into its own run of blocks and from its own part of the plan (both
    /// sized from `sizes`). Returns the deepest wide level reached and the subtree's bounds.
    fn emit_parallel(
        &self,
        plan: &[Lanes],
        out: BlockWriter<'_>,
        sizes: &HashMap<u64, (usize, usize)>,
        depth: u32,
        levels: u32,
    ) -> (u32, Aabb) {
        let lanes = &plan[0];
        let internal: Vec<(usize, (usize, usize))> =
            lanes.ranges().enumerate().filter(|&(_, (s, e))| !is_leaf(e - s)).collect();
        // This node and its packs, then one run per child subtree.
        let own = NODE_BLOCKS + (lanes.len - internal.len()) * PACK_BLOCKS;
        let mut lens = vec![own];
        lens.extend(internal.iter().map(|&(_, (s, e))| sizes[&range_key(s, e)].0));
        let mut runs = out.split(&lens).into_iter();
        let mut head = runs.next().expect("the node's own run");
        let (me, mut children) = self.write_node(lanes, &mut head);
        debug_assert!(head.is_full());
        let mut jobs = Vec::with_capacity(internal.len());
        let mut rest = &plan[1..];
        for (&(lane, (s, e)), run) in internal.iter().zip(runs) {
            let (sub, tail) = rest.split_at(sizes[&range_key(s, e)].1);
            rest = tail;
            jobs.push((lane, run.next_position(), sub, run));
        }
        debug_assert!(rest.is_empty());
        let below = crate::par::map_vec(jobs, |(lane, at, sub, mut run)| {
            let (deepest, bounds) = if levels > 1 {
                self.emit_parallel(sub, run, sizes, depth + 1, levels - 1)
            } else {
                let mut deepest = 0;
                let mut plan = sub.iter();
                let (_, bounds) = self.emit(&mut plan, &mut run, depth + 1, &mut deepest);
                debug_assert!(run.is_full() && plan.next().is_none());
                (deepest, bounds)
            };
            (lane, at, deepest, bounds)
        });
        let mut deepest = depth;
        for (lane, at, d, bounds) in below {
            children[lane] = (ChildRef::node(at), bounds);
            deepest = deepest.max(d);
        }
        (deepest, set_lanes(&mut head, me, &children[..lanes.len]))
    }
}

/// Sets the lanes of node `me` to `children`, the largest box first (as the collapse orders
/// them, for any-hit walks: `super::collapse`), equal areas in lane order; returns their union.
fn set_lanes(out: &mut BlockWriter<'_>, me: u32, children: &[(ChildRef, Aabb)]) -> Aabb {
    let area: [f32; 8] = std::array::from_fn(|l| children.get(l).map_or(0.0, |c| c.1.half_area()));
    // An insertion sort, stable: eight lanes at most.
    let mut order = [0usize; 8];
    for l in 0..children.len() {
        let mut at = l;
        while at > 0 && area[order[at - 1]].total_cmp(&area[l]).is_lt() {
            order[at] = order[at - 1];
            at -= 1;
        }
        order[at] = l;
    }
    let order = &order[..children.len()];
    let node = out.node_mut(me);
    let mut bounds = Aabb::EMPTY;
    for (lane, &l) in order.iter().enumerate() {
        let (child, b) = &children[l];
        node.set(lane, *child, b);
        bounds = bounds.union(b);
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Fetch, sort_along_curve};
    use crate::mesh::TriMesh;
    use crate::mesh::triangle::NO_PRIM;
    use crate::pages::PagedSlice;

    /// Meshes from one triangle to forty thousand, one with many equal centroids (the torus's
    /// thin tube at a coarse grid puts many triangles in one cell).
    fn meshes() -> Vec<TriMesh> {
        let one = TriMesh::new(vec![glam::Vec3::ZERO, glam::Vec3::X, glam::Vec3::Y], vec![[0, 1, 2]]).unwrap();
        vec![
            one,
            TriMesh::uv_sphere(1.0, 3, 2),
            TriMesh::torus(2.0, 0.5, 7, 5),
            TriMesh::uv_sphere(1.0, 96, 48),
            TriMesh::torus(200.0, 0.001, 700, 6),
            // Above `PARALLEL_TOP`: the top tree made on two threads.
            TriMesh::uv_sphere(1.0, 200, 100),
        ]
    }

    /// The tree of `mesh`, its triangles' rows the corners, as the mesh BVH builds it.
    fn build(mesh: &TriMesh, parallel: bool, spare: Option<Spare>) -> (Collapsed, Aabb) {
        let n = mesh.len();
        let item = |i: u32| BuildItem::new(Aabb::from_points(mesh.triangle(i as usize)), i);
        let centroid = |i: u32| Aabb::from_points(mesh.triangle(i as usize)).center();
        let mut items = vec![BuildItem::new(Aabb::EMPTY, 0); n];
        let mut scratch = vec![0; 2 * n];
        let bounds = mesh.bounds().unwrap_or(Aabb::EMPTY);
        let order = sort_along_curve(&mut items, &mut scratch, &bounds, centroid, item, |_, _: Fetch| {}, parallel);
        let tri = |i: u32| mesh.triangle(i as usize);
        let plan = Plan::new(&order, &items, parallel);
        let prims: Vec<u32> = items.iter().map(BuildItem::index).collect();
        plan.write(&prims, &tri, spare)
    }

    /// Checks the subtree of the node at `at` against the mesh by brute force and returns its
    /// triangles' bounds and its wide depth: each lane's box is exactly its triangles' bounds,
    /// larger boxes come first, every pack holds one to four triangles in ascending order with
    /// their corners, and `seen` counts each triangle met.
    fn check(blocks: &Blocks, mesh: &TriMesh, at: u32, seen: &mut [u32]) -> (Aabb, u32) {
        let node = blocks.node(at);
        let (mut bounds, mut depth, mut last_area) = (Aabb::EMPTY, 1, f32::INFINITY);
        for lane in 0..8 {
            let child = node.child[lane];
            if child.is_empty() {
                assert!((lane..8).all(|l| node.child[l].is_empty()), "a used lane after an empty one");
                break;
            }
            let below = if child.is_leaf() {
                let pack = blocks.pack(child.index()).unwrap();
                let used: Vec<u32> = pack.prim.iter().copied().filter(|&p| p != NO_PRIM).collect();
                assert!(!used.is_empty() && used.is_sorted() && pack.prim[used.len()..].iter().all(|&p| p == NO_PRIM));
                let mut b = Aabb::EMPTY;
                for (k, &prim) in used.iter().enumerate() {
                    seen[prim as usize] += 1;
                    assert_eq!(pack.rows(k), mesh.triangle(prim as usize));
                    b = b.union(&Aabb::from_points(mesh.triangle(prim as usize)));
                }
                b
            } else {
                let (b, d) = check(blocks, mesh, child.index(), seen);
                depth = depth.max(d + 1);
                b
            };
            assert_eq!(node.lane_bounds(lane), below);
            assert!(below.half_area() <= last_area, "lanes out of area order");
            last_area = below.half_area();
            bounds = bounds.union(&below);
        }
        (bounds, depth)
    }

    /// Every triangle in exactly one leaf, under boxes that are exactly their triangles' bounds,
    /// at the depth the build reports, on one thread and on several.
    #[test]
    fn every_triangle_once_under_the_bounds_of_its_leaves() {
        for mesh in meshes() {
            for parallel in [false, true] {
                let (tree, bounds) = build(&mesh, parallel, None);
                let mut seen = vec![0; mesh.len()];
                let (walked, depth) = check(&tree.blocks, &mesh, 0, &mut seen);
                assert!(seen.iter().all(|&c| c == 1), "{} triangles", mesh.len());
                assert_eq!(walked, bounds);
                assert_eq!(bounds, mesh.bounds().unwrap());
                assert_eq!(depth, tree.depth);
                let (nodes, packs) = tree.blocks.walk();
                assert_eq!(tree.blocks.len(), nodes.len() * NODE_BLOCKS + packs.len() * PACK_BLOCKS, "unused blocks");
            }
        }
        let (empty, bounds) = build(&TriMesh::new(vec![], vec![]).unwrap(), false, None);
        assert!(empty.blocks.is_empty() && bounds == Aabb::EMPTY);
    }

    /// The subtrees written on other threads are placed where the serial build writes them: the
    /// two arrays are equal word for word, also when written over spare memory holding other
    /// words, larger and smaller than the array.
    #[test]
    fn the_parallel_build_is_the_serial_one_block_for_block() {
        for mesh in meshes() {
            let (serial, _) = build(&mesh, false, None);
            let (parallel, _) = build(&mesh, true, None);
            assert_eq!(serial.depth, parallel.depth);
            assert!(serial.blocks.word_blocks().eq(parallel.blocks.word_blocks()), "{} triangles", mesh.len());
            for words in [serial.blocks.len() * 8 + 1000, serial.blocks.len() * 8, serial.blocks.len() * 4] {
                let spare = PagedSlice::from_slice(&vec![0xdead_beef_u32; words]).into_spare();
                let (again, _) = build(&mesh, true, spare);
                assert!(serial.blocks.word_blocks().eq(again.blocks.word_blocks()), "{words} spare words");
            }
        }
    }
}
