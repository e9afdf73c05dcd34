//! The mesh BVH's memory: 8-wide nodes and triangle packs in one array of 64-byte lines.
//!
//! A node takes 4 lines and a pack 3; a child reference holds the line where its node or pack
//! starts. Two things follow, both for a traversal that waits on memory more than it computes:
//!
//! * A child's address is one shift and one add from the array's start, whatever it is, so the
//!   prefetch made as a child is pushed costs no branch or conditional move (two separate arrays
//!   needed both addresses and a `cmov`).
//! * The collapse writes each node's leaf packs right after the node, before its child nodes, as
//!   Embree's single allocator places a node's leaves beside it: a ray that tests a node and
//!   then its leaves reads neighbouring lines.
//!
//! Every line is plain `f32`/`u32` data, so any line read as a node or a pack is a valid value;
//! the references the collapse writes start a node or a pack where it wrote one.

use super::triangle::TriPack;
use crate::pages::PagedSlice;
use crate::wide::{Node8, NodeStore};

/// One cache line of a node or a pack.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Line([u32; 16]);

/// Lines of a node and of a pack.
pub(crate) const NODE_LINES: usize = 4;
pub(crate) const PACK_LINES: usize = 3;

const _: () = {
    assert!(size_of::<Line>() == 64);
    assert!(size_of::<Node8>() == NODE_LINES * 64 && align_of::<Node8>() == 64);
    assert!(size_of::<TriPack>() == PACK_LINES * 64 && align_of::<TriPack>() == 64);
};

/// Nodes and packs in one line array, on huge pages when large (see [`PagedSlice`]).
#[derive(Clone)]
pub(crate) struct Lines {
    lines: PagedSlice<Line>,
    /// The line of every node, in pre-order (the root first), and of every pack: for refits and
    /// statistics, which visit all of them.
    pub node_at: Vec<u32>,
    pub pack_at: Vec<u32>,
}

impl Lines {
    /// The node starting at line `at`. Panics when `at` leaves no room for a node.
    #[inline(always)]
    pub(crate) fn node(&self, at: u32) -> &Node8 {
        let l = &self.lines[at as usize..at as usize + NODE_LINES];
        // SAFETY: `l` is 4 lines, 64-aligned, of plain `u32` data, which is a valid `Node8`.
        unsafe { &*l.as_ptr().cast::<Node8>() }
    }

    /// The pack starting at line `at`, or `None` when `at` leaves no room for one.
    #[inline(always)]
    pub(crate) fn pack(&self, at: u32) -> Option<&TriPack> {
        let l = self.lines.get(at as usize..at as usize + PACK_LINES)?;
        // SAFETY: as for `node`, with 3 lines.
        Some(unsafe { &*l.as_ptr().cast::<TriPack>() })
    }

    /// The node at line `at`, to change.
    pub(crate) fn node_mut(&mut self, at: u32) -> &mut Node8 {
        let l = &mut self.lines[at as usize..at as usize + NODE_LINES];
        // SAFETY: as for `node`, and the borrow is exclusive.
        unsafe { &mut *l.as_mut_ptr().cast::<Node8>() }
    }

    /// The pack at line `at`, to change.
    pub(crate) fn pack_mut(&mut self, at: u32) -> &mut TriPack {
        let l = &mut self.lines[at as usize..at as usize + PACK_LINES];
        // SAFETY: as for `node_mut`.
        unsafe { &mut *l.as_mut_ptr().cast::<TriPack>() }
    }

    /// The address of line `at`, for prefetching (never read through here).
    #[inline(always)]
    pub(crate) fn line_ptr(&self, at: u32) -> *const Line {
        self.lines.as_ptr().wrapping_add(at as usize)
    }

    /// Bytes of nodes and packs.
    pub(crate) fn bytes(&self) -> usize {
        self.lines.len() * size_of::<Line>()
    }

    /// `true` for a BVH without nodes (an empty mesh).
    pub(crate) fn is_empty(&self) -> bool {
        self.node_at.is_empty()
    }
}

impl NodeStore for Lines {
    #[inline(always)]
    fn node(&self, index: u32) -> &Node8 {
        Lines::node(self, index)
    }
}

/// Builds a [`Lines`] by appending nodes and packs.
pub(crate) struct LinesBuilder {
    lines: Vec<Line>,
    node_at: Vec<u32>,
    pack_at: Vec<u32>,
}

impl LinesBuilder {
    /// An empty array with room for about `nodes` nodes and `packs` packs.
    pub(crate) fn with_capacity(nodes: usize, packs: usize) -> Self {
        LinesBuilder {
            lines: Vec::with_capacity(nodes * NODE_LINES + packs * PACK_LINES),
            node_at: Vec::with_capacity(nodes),
            pack_at: Vec::with_capacity(packs),
        }
    }

    fn push<T: Copy>(&mut self, value: &T, count: usize) -> u32 {
        debug_assert_eq!(size_of::<T>(), count * size_of::<Line>());
        let at = self.lines.len();
        // SAFETY: `T` (a node or a pack) is `count` lines of plain data, 64-aligned (asserted
        // above), so its bytes read as `count` lines.
        let lines = unsafe { std::slice::from_raw_parts((value as *const T).cast::<Line>(), count) };
        self.lines.extend_from_slice(lines);
        u32::try_from(at).expect("BVH larger than 2^32 cache lines")
    }

    /// Appends an empty node and returns its line.
    pub(crate) fn push_node(&mut self) -> u32 {
        let at = self.push(&Node8::EMPTY, NODE_LINES);
        self.node_at.push(at);
        at
    }

    /// Appends `pack` and returns its line.
    pub(crate) fn push_pack(&mut self, pack: &TriPack) -> u32 {
        let at = self.push(pack, PACK_LINES);
        self.pack_at.push(at);
        at
    }

    /// The node at line `at`, to fill in.
    pub(crate) fn node_mut(&mut self, at: u32) -> &mut Node8 {
        let l = &mut self.lines[at as usize..at as usize + NODE_LINES];
        // SAFETY: as for `Lines::node_mut`.
        unsafe { &mut *l.as_mut_ptr().cast::<Node8>() }
    }

    /// The finished array, copied once to its final place.
    pub(crate) fn finish(self) -> Lines {
        Lines { lines: PagedSlice::from_slice(&self.lines), node_at: self.node_at, pack_at: self.pack_at }
    }
}
