//! The one packet walk ([`packet_walk`]) over 8-wide nodes, generic over what a leaf holds: a
//! packet (`super::packet`) culled at each node by its interval test, each child entered with
//! the first and the last ray that enter it, and the leaves, or the subtrees that few rays
//! enter, handed to a [`PacketVisitor`]. The mesh BVH's streams and the scene's both take it.

use super::packet::{Packet, Planes};
use super::{ChildRef, FixedStack, Lanes8, NodeStore};

/// Stack entries of the packet walk; as for the single ray (7 siblings per level).
const STACK: usize = 1024;

/// A waiting child of the packet walk: the child, the rays that may enter it (the first and the
/// last), and where its box is (the parent node and lane), which a leaf's rays are tested
/// against when it is taken.
#[derive(Clone, Copy)]
struct PacketEntry {
    child: ChildRef,
    parent: u32,
    lane: u8,
    first: u8,
    last: u8,
    /// A node that so few rays enter that they walk it alone (see [`packet_walk`]).
    alone: bool,
}

/// A leaf the packet walk reached, or a node whose subtree its few rays walk alone: its index
/// (of a [`ChildRef::leaf`], or of a [`ChildRef::node`]), its box's planes, and the packet's rays
/// that may enter it, `first..=last`.
pub(crate) struct PacketLeaf<L = wide::f32x8> {
    pub index: u32,
    /// `index` is a node's, whose subtree the rays walk alone.
    pub subtree: bool,
    pub planes: Planes<L>,
    pub first: usize,
    pub last: usize,
}

impl<L: Lanes8> PacketLeaf<L> {
    /// The live rays of group `g` that enter the leaf's box, by the single-ray slab test
    /// (`TIES`: against `tmax` raised as [`Packet::enter`] says, for closest hits).
    #[inline(always)]
    pub(crate) fn entering<const FUSED: bool, const TIES: bool>(&self, pk: &Packet, g: usize) -> u32 {
        let active = pk.active(g, self.first, self.last);
        if active == 0 { 0 } else { pk.enter::<L, FUSED, TIES>(&self.planes, g) & active }
    }

    /// The groups the leaf's rays lie in.
    #[inline(always)]
    pub(crate) fn groups(&self) -> std::ops::RangeInclusive<usize> {
        self.first / 8..=self.last / 8
    }
}

/// What [`packet_walk`] does at a leaf (see there). Closures implement it; a kernel that runs
/// at a SIMD level implements it on a type of its own, with its body `#[inline(always)]`, since
/// a closure the compiler leaves out of line loses the level's instructions (`super::lanes`).
pub(crate) trait PacketVisitor<L> {
    /// Tests the rays of the packet that may enter `leaf`; `false` ends the walk.
    fn visit(&mut self, pk: &mut Packet, leaf: &PacketLeaf<L>) -> bool;
}

impl<L, F: FnMut(&mut Packet, &PacketLeaf<L>) -> bool> PacketVisitor<L> for F {
    #[inline(always)]
    fn visit(&mut self, pk: &mut Packet, leaf: &PacketLeaf<L>) -> bool {
        self(pk, leaf)
    }
}

/// Walks `nodes` (the root is node 0 of the store, and must exist) with the loaded packet: each
/// node's children are culled for the whole packet by [`Packet::cull_test`], each remaining
/// child is entered with the first and the last ray that enter it ([`Packet::entering`]), nearer
/// children first (by the interval test's entry bound) unless `ANY`, and every leaf reached goes to
/// `leaf`, which tests its rays (through [`PacketLeaf::entering`]), may clip them
/// ([`Packet::clip`], then [`Packet::clipped`]) or end them (`pk.live`), and returns `false` to end
/// the walk. `prefetch` starts loading a child that is pushed. Returns the nodes visited.
///
/// A child node that at most `ALONE` rays enter (counted where [`Packet::entering`] counts
/// exactly) goes to `leaf` too, marked [`PacketLeaf::subtree`], for those rays to walk its
/// subtree one at a time: deep in the tree, where a packet's rays have parted, the packet's tests
/// serve one or two rays at the cost of many, and the single ray's walk is cheaper (the switch of
/// Benthin, Wald, Woop, Ernst and Mark 2012, "Combining Single and Packet-Ray Tracing for
/// Arbitrary Ray Distributions on the Intel MIC Architecture"). With `ALONE` 0, `leaf` only
/// ever gets leaves.
#[inline(always)]
pub(crate) fn packet_walk<L: Lanes8, const ANY: bool, const FUSED: bool, const ALONE: u32, N: NodeStore + ?Sized>(
    nodes: &N,
    pk: &mut Packet,
    prefetch: impl Fn(ChildRef),
    mut leaf: impl PacketVisitor<L>,
) -> u32 {
    let mut visits = 0;
    let mut stack = FixedStack::<PacketEntry, STACK>::new();
    let mut cur =
        PacketEntry { child: ChildRef::node(0), parent: 0, lane: 0, first: 0, last: (pk.n - 1) as u8, alone: false };
    loop {
        let (first, last) = (cur.first as usize, cur.last as usize);
        if cur.child.is_leaf() || cur.alone {
            // SAFETY: `parent` is a node that held this reference.
            let parent = unsafe { nodes.node(cur.parent) };
            let planes = pk.planes::<L>(parent, cur.lane as usize);
            let at = PacketLeaf { index: cur.child.index(), subtree: cur.alone, planes, first, last };
            if !leaf.visit(pk, &at) || (ANY && pk.live == 0) {
                break;
            }
        } else {
            visits += 1;
            // SAFETY: the root, or a node reference read from the store's own nodes.
            let node = unsafe { nodes.node(cur.child.index()) };
            let (mut mask, key) = pk.cull_test::<L>(node);
            let key = key.to_array();
            let mut found = [(cur, 0.0f32); 8];
            let mut n = 0;
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let planes = pk.planes::<L>(node, l);
                // Any hit too takes the raised `tmax`: the single ray's walk culls its boxes with it
                // (`mesh::leaf::TriangleLeaf`), so that a hit at the ray's very end is reached at
                // every SIMD level, and the packet must reach what the single ray reaches.
                let range = pk.entering::<L, FUSED, true>(&planes, first, last);
                if let Some((lo, hi, count)) = range {
                    let (child, parent) = (node.child[l], cur.child.index());
                    let alone = count <= ALONE && !child.is_leaf();
                    let e = PacketEntry { child, parent, lane: l as u8, first: lo as u8, last: hi as u8, alone };
                    // Far to near by insertion, so the nearest is taken first.
                    let mut j = n;
                    while !ANY && j > 0 && found[j - 1].1 < key[l] {
                        found[j] = found[j - 1];
                        j -= 1;
                    }
                    found[j] = (e, key[l]);
                    n += 1;
                }
            }
            if n > 0 {
                for &(e, _) in &found[..n - 1] {
                    prefetch(e.child);
                    stack.push(e);
                }
                cur = found[n - 1].0;
                continue;
            }
        }
        match stack.pop() {
            Some(e) => cur = e,
            None => break,
        }
    }
    visits
}
