//! Subtrees built on other threads, each into a vector of its own, and their one copy into the
//! final node array.
//!
//! Above [`BinnedSah::parallel_threshold`](super::BinnedSah) items, the builder hands each right
//! subtree to `rayon::join` and keeps building the left one in place. The right one cannot be
//! written where it belongs, since the left one's size is not known yet, so it goes into a
//! [`Segment`]. A segment's nodes are its subtree in pre-order with the right subtrees it handed on
//! in turn left out; in the whole tree's pre-order those come right after the segment's own
//! nodes, deepest first, which is the order they finish in. So the final array is the root's
//! vector followed by every segment in that order, and [`place`] writes it with one copy of each
//! node, the segments on rayon's threads.
//!
//! Appending each segment to its parent's vector as it finished, as before, copied a node once
//! per parallel level above it (1.38M node copies for the dragon's 0.7M nodes) into vectors
//! reserved at twice their subtree's item count, most of them large enough to be fresh mappings
//! that the kernel zeroes page by page.

use std::mem::MaybeUninit;

use super::BuildNode;

/// The `right` link of a node whose right subtree is a [`Segment`], until [`place`] writes it.
pub(super) const PENDING: u32 = u32::MAX;

/// A right subtree built into its own vector, with the segments it handed on.
pub(super) struct Segment {
    /// The node, among the nodes of the vector that handed this segment on, whose right child is
    /// this segment's first node.
    pub(super) parent: u32,
    /// The subtree's nodes without the handed-on segments, in pre-order, linked by index into
    /// this vector (and [`PENDING`] towards a handed-on segment).
    pub(super) nodes: Vec<BuildNode>,
    /// The segments handed on, in the order they finished: their place in the pre-order.
    pub(super) spawned: Vec<Segment>,
    /// Nodes here and in every segment below.
    pub(super) total: usize,
}

impl Segment {
    /// A segment of `nodes` and the segments they handed on, whose parent is node `parent`.
    pub(super) fn new(parent: u32, nodes: Vec<BuildNode>, spawned: Vec<Segment>) -> Segment {
        let total = nodes.len() + spawned.iter().map(|s| s.total).sum::<usize>();
        Segment { parent, nodes, spawned, total }
    }
}

/// Appends the segments `spawned` (handed on by the nodes of `out`) to `out` in pre-order, and
/// links their parents to them.
pub(super) fn place(out: &mut Vec<BuildNode>, spawned: Vec<Segment>) {
    if spawned.is_empty() {
        return;
    }
    let base = out.len();
    let total = base + spawned.iter().map(|s| s.total).sum::<usize>();
    link_parents(out, base, &spawned);
    out.reserve_exact(total - base);
    write_all(&mut out.spare_capacity_mut()[..total - base], base, spawned);
    // SAFETY: `write_all` wrote every element of `out[base..total]`, each segment its `total`.
    unsafe { out.set_len(total) };
}

/// Sets the `right` link of each segment's parent, among `nodes`, to where the segment starts:
/// the first at `at`, each next one after the last.
fn link_parents(nodes: &mut [BuildNode], mut at: usize, spawned: &[Segment]) {
    for s in spawned {
        match &mut nodes[s.parent as usize] {
            BuildNode::Inner { right, .. } => {
                debug_assert_eq!(*right, PENDING);
                *right = u32::try_from(at).expect("fewer than 2^32 nodes");
            }
            BuildNode::Leaf { .. } => unreachable!("a segment's parent is an internal node"),
        }
        at += s.total;
    }
}

/// Writes `segments` one after the other into `dst` (whose first element is node `at` of the
/// final array), on rayon's threads. `dst` holds exactly their totals.
fn write_all(dst: &mut [MaybeUninit<BuildNode>], mut at: usize, segments: Vec<Segment>) {
    let mut rest = dst;
    let mut jobs = Vec::with_capacity(segments.len());
    for s in segments {
        let len = s.total;
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut(len);
        jobs.push((mine, at, s));
        at += len;
        rest = tail;
    }
    debug_assert!(rest.is_empty());
    crate::par::map_vec(jobs, |(dst, at, s)| write_one(dst, at, s));
}

/// Writes segment `s` at node `at` of the final array: its own nodes, their links moved by `at`,
/// then the segments it handed on.
fn write_one(dst: &mut [MaybeUninit<BuildNode>], at: usize, s: Segment) {
    let shift = u32::try_from(at).expect("fewer than 2^32 nodes");
    let moved = |link: u32| if link == PENDING { PENDING } else { link + shift };
    let (own, rest) = dst.split_at_mut(s.nodes.len());
    for (d, n) in own.iter_mut().zip(&s.nodes) {
        d.write(match *n {
            BuildNode::Inner { bounds, left, right } => {
                BuildNode::Inner { bounds, left: moved(left), right: moved(right) }
            }
            leaf => leaf,
        });
    }
    // SAFETY: every element of `own` was written just now.
    let own = unsafe { &mut *(own as *mut [MaybeUninit<BuildNode>] as *mut [BuildNode]) };
    let below = at + s.nodes.len();
    link_parents(own, below, &s.spawned);
    write_all(rest, below, s.spawned);
}
