//! The mesh BVH's memory: 8-wide nodes and triangle packs in one array of 32-byte blocks.
//!
//! A node takes 7 blocks (224 bytes) and a pack 5 (160 bytes). Wherever they start, a node spans
//! 4 cache lines and a pack 3, as 64-byte-aligned records of 256 and 192 bytes would, in less
//! memory. Three more things follow, for a traversal that waits on memory more than it computes:
//!
//! * A child reference holds where its node or pack starts as a *position*: its byte offset from
//!   the array's start in [`UNIT`]s of 8 bytes, 4 to a block. A bound row of the node is then at
//!   `row_start + position × 8`, where `row_start` (the array's start plus the row's offset in a
//!   node) is fixed for the whole walk: one x86 addressing mode, 8 being its largest scale
//!   ([`NodeStore::row`]). The node test's loads thus take the reference straight from its own
//!   load; a block index needed a shift and an add first, 2 cycles on the chain from one node's
//!   test to the next node's loads, which a ray waits out at every node
//!   (`docs/performance.md`). A byte offset would need no scale, but would
//!   cap the array at 2 GB; positions cap it at 16 GB.
//! * A child's address is the same sum whatever the child is, so the prefetch made as a child is
//!   pushed costs no branch or conditional move (two separate arrays needed both addresses and a
//!   `cmov`).
//! * The collapse writes each node's leaf packs right after the node, before its child nodes, as
//!   Embree's single allocator places a node's leaves beside it: a ray that tests a node and
//!   then its leaves reads neighbouring lines.
//!
//! Every block is plain `f32`/`u32` data, so any blocks read as a node or a pack are a valid value;
//! the references the collapse writes start a node or a pack where it wrote one. The collapse
//! counts the blocks first and writes them in place through [`BlockWriter`]s, one per subtree
//! run on another thread.

use super::triangle::TriPack;
use crate::pages::{PagedSlice, Spare};
use crate::wide::{ChildRef, Node8, NodeStore};

/// 32 bytes of a node or a pack.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(crate) struct Block([u32; 8]);

/// Blocks of a node and of a pack.
pub(crate) const NODE_BLOCKS: usize = 7;
pub(crate) const PACK_BLOCKS: usize = 5;

/// Bytes per step of a position (see the module docs).
const UNIT: usize = 8;

/// Positions per block.
const UNITS_PER_BLOCK: usize = size_of::<Block>() / UNIT;

/// The first block of the record at position `at` (a block's start): also for tables kept per
/// block.
#[inline(always)]
pub(crate) fn block_at(at: u32) -> usize {
    debug_assert!(starts_block(at), "position {at} is not a block's start");
    at as usize / UNITS_PER_BLOCK
}

/// Whether position `at` is a block's start, where a record can begin.
pub(crate) fn starts_block(at: u32) -> bool {
    (at as usize).is_multiple_of(UNITS_PER_BLOCK)
}

/// The position of block `block`; `None` when it is past what a reference can carry.
fn position_of(block: usize) -> Option<u32> {
    block.checked_mul(UNITS_PER_BLOCK).filter(|&at| at <= crate::child::MAX_INDEX as usize).map(|at| at as u32)
}

const _: () = {
    assert!(size_of::<Block>() == 32);
    assert!(size_of::<Node8>() == NODE_BLOCKS * 32 && align_of::<Node8>() == 32);
    assert!(size_of::<TriPack>() == PACK_BLOCKS * 32 && align_of::<TriPack>() == 32);
};

/// The node in the first [`NODE_BLOCKS`] of `blocks`.
#[inline(always)]
fn node_in(blocks: &[Block]) -> &Node8 {
    let b = &blocks[..NODE_BLOCKS];
    // SAFETY: `b` is 7 blocks, 32-aligned, of plain `u32` data, which is a valid `Node8`.
    unsafe { &*b.as_ptr().cast::<Node8>() }
}

/// The node in the first [`NODE_BLOCKS`] of `blocks`, to change.
fn node_in_mut(blocks: &mut [Block]) -> &mut Node8 {
    let b = &mut blocks[..NODE_BLOCKS];
    // SAFETY: as for `node_in`, and the borrow is exclusive.
    unsafe { &mut *b.as_mut_ptr().cast::<Node8>() }
}

/// The pack in the first [`PACK_BLOCKS`] of `blocks`, to change.
fn pack_in_mut(blocks: &mut [Block]) -> &mut TriPack {
    let b = &mut blocks[..PACK_BLOCKS];
    // SAFETY: 5 blocks, 32-aligned, of plain data, which is a valid `TriPack`; exclusive borrow.
    unsafe { &mut *b.as_mut_ptr().cast::<TriPack>() }
}

/// Nodes and packs in one block array, on huge pages when large (see [`PagedSlice`]); the root
/// node starts at block 0. Records are named by their position (see the module docs), as child
/// references name them.
#[derive(Clone)]
pub(crate) struct Blocks {
    blocks: PagedSlice<Block>,
}

impl Blocks {
    /// The node at position `at`. Panics when `at` leaves no room for a node. (The traversal
    /// reads nodes through [`Blocks::node_unchecked`].)
    pub(crate) fn node(&self, at: u32) -> &Node8 {
        node_in(&self.blocks[block_at(at)..block_at(at) + NODE_BLOCKS])
    }

    /// The pack at position `at`, or `None` when `at` leaves no room for one.
    pub(crate) fn pack(&self, at: u32) -> Option<&TriPack> {
        let b = self.blocks.get(block_at(at)..block_at(at) + PACK_BLOCKS)?;
        // SAFETY: 5 blocks, 32-aligned, of plain data, which is a valid `TriPack`.
        Some(unsafe { &*b.as_ptr().cast::<TriPack>() })
    }

    /// The node at position `at`, to change.
    pub(crate) fn node_mut(&mut self, at: u32) -> &mut Node8 {
        node_in_mut(&mut self.blocks[block_at(at)..])
    }

    /// The pack at position `at`, to change.
    pub(crate) fn pack_mut(&mut self, at: u32) -> &mut TriPack {
        pack_in_mut(&mut self.blocks[block_at(at)..])
    }

    /// The address of position `at`, for prefetching (never read through here).
    #[inline(always)]
    pub(crate) fn block_ptr(&self, at: u32) -> *const Block {
        self.blocks.as_ptr().cast::<[u8; UNIT]>().wrapping_add(at as usize).cast()
    }

    /// Starts loading every line of the node or pack `child` names (a hint; see
    /// [`crate::hint::prefetch_record`]).
    #[inline(always)]
    pub(crate) fn prefetch_child(&self, child: ChildRef) {
        let len = if child.is_leaf() { size_of::<TriPack>() } else { size_of::<Node8>() };
        crate::hint::prefetch_record(self.block_ptr(child.index()), len);
    }

    /// Bytes of nodes and packs.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * size_of::<Block>()
    }

    /// Every block's words in order: for writing the array out (`super::saved`), and to compare
    /// two arrays in tests.
    pub(crate) fn word_blocks(&self) -> impl Iterator<Item = &[u32; 8]> {
        self.blocks.iter().map(|b| &b.0)
    }

    /// Blocks in the array.
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// The blocks whose words are `bytes`, 32 little-endian bytes per block in order: for
    /// reading the array back (`super::saved`). Panics unless `bytes` holds whole blocks.
    pub(crate) fn from_le_bytes(bytes: &[u8]) -> Blocks {
        // SAFETY: a block is plain `u32` data, for which any bytes are a valid value.
        let mut blocks = Blocks { blocks: unsafe { PagedSlice::<Block>::from_bytes(bytes) } };
        // The bytes went in as they are, which is each word's value on a little-endian machine.
        if cfg!(target_endian = "big") {
            for w in blocks.blocks.iter_mut().flat_map(|b| &mut b.0) {
                *w = u32::from_le(*w);
            }
        }
        blocks
    }

    /// An array of `len` blocks, zeroed, for a [`BlockWriter`] to fill.
    pub(crate) fn zeroed(len: usize) -> Blocks {
        // SAFETY: a block is plain `u32` data, for which zero bytes are a valid value.
        Blocks { blocks: unsafe { PagedSlice::<Block>::zeroed(len) } }
    }

    /// `len` blocks in the memory of `spare` where it has room, holding whatever it held (see
    /// [`PagedSlice::reused_in`]), else zeroed: for a writer that writes every block, as the
    /// collapse does ([`BlockWriter`]).
    pub(crate) fn reused_in(len: usize, spare: Option<Spare>) -> Blocks {
        // SAFETY: a block is plain `u32` data, for which any bytes are a valid value.
        Blocks { blocks: unsafe { PagedSlice::<Block>::reused_in(len, spare) } }
    }

    /// The array's memory, its contents done with, for a build to reuse
    /// ([`PagedSlice::into_spare`]): a rebuild's items go where its old tree was.
    pub(crate) fn into_spare(self) -> Option<Spare> {
        self.blocks.into_spare()
    }

    /// A writer over all blocks, starting at block 0.
    pub(crate) fn writer(&mut self) -> BlockWriter<'_> {
        BlockWriter { blocks: &mut self.blocks, base: 0, at: 0 }
    }

    /// `true` for a BVH without nodes (an empty mesh).
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The positions of every node in pre-order (the root first) and of every pack, found by a
    /// walk from the root: for refits and statistics, which visit all of them.
    pub(crate) fn walk(&self) -> (Vec<u32>, Vec<u32>) {
        let (mut nodes, mut packs) = (Vec::new(), Vec::new());
        let mut stack = if self.is_empty() { Vec::new() } else { vec![0u32] };
        while let Some(at) = stack.pop() {
            nodes.push(at);
            let node = self.node(at);
            // Reversed so that the first lane's subtree comes next, as in the collapse's order.
            for &c in node.child.iter().rev().filter(|c| !c.is_empty()) {
                if c.is_leaf() {
                    packs.push(c.index());
                } else {
                    stack.push(c.index());
                }
            }
        }
        (nodes, packs)
    }

    /// The node at position `at`, without a range check: for the traversal, which only
    /// follows references read from the nodes themselves (a range check on every node and pack
    /// was a noticeable part of a visit's instructions; `docs/performance.md`).
    ///
    /// # Safety
    /// `at` is a node reference of a node of this array. The collapse writes each reference with
    /// the record it names, inside the array, and nothing else writes references; the traversal
    /// never follows an empty slot's reference ([`ChildRef::EMPTY`](crate::wide::ChildRef)), since
    /// an empty slot's planes (`+inf` and `-inf`, never NaN) put it outside every node test's mask.
    #[inline(always)]
    pub(crate) unsafe fn node_unchecked(&self, at: u32) -> &Node8 {
        // SAFETY: by the caller's contract, 7 blocks inside the array start at position `at`;
        // 32-aligned plain `u32` data, which is a valid `Node8`.
        unsafe { self.record_unchecked(at) }
    }

    /// The pack at position `at`, without a range check (see [`Blocks::node_unchecked`]).
    ///
    /// # Safety
    /// `at` is a leaf reference of a node of this array, other than an empty slot's.
    #[inline(always)]
    pub(crate) unsafe fn pack_unchecked(&self, at: u32) -> &TriPack {
        // SAFETY: as for `node_unchecked`, with 5 blocks, a valid `TriPack`.
        unsafe { self.record_unchecked(at) }
    }

    /// The pack `leaf` names, without a range check, addressed from the reference's raw bits:
    /// `raw × 8` is the pack's byte offset plus the leaf flag's `2³¹ × 8`, so the pack lies at
    /// that product past an origin 16 GB before the array's start, which the compiler keeps in
    /// a register for the walk. The pack's loads then take the reference as loaded, with no
    /// mask (`and $0x7fffffff`) before them: one cycle on the chain from a node's test to its
    /// leaf's loads, as [`NodeStore::row`] saves the shift for nodes. (Both wrapping steps are
    /// exact modulo the address width, so the sum is the pack's address on any target.)
    ///
    /// # Safety
    /// As for [`Blocks::pack_unchecked`]: `leaf` is a leaf reference of a node of this array,
    /// other than an empty slot's.
    #[inline(always)]
    pub(crate) unsafe fn pack_of_leaf(&self, leaf: ChildRef) -> &TriPack {
        debug_assert!(leaf.is_leaf() && !leaf.is_empty());
        let origin = self.blocks.as_ptr().cast::<[u8; UNIT]>().wrapping_sub(crate::child::LEAF_BIT as usize);
        let at = origin.wrapping_add(leaf.raw() as usize).cast::<TriPack>();
        debug_assert_eq!(at, self.blocks.as_ptr().cast::<[u8; UNIT]>().wrapping_add(leaf.index() as usize).cast());
        // SAFETY: `at` is the address of the pack at position `leaf.index()` (above), which by
        // the caller's contract lies inside the array: `pack_unchecked`'s record.
        unsafe { &*at }
    }

    /// The node or pack `T` at position `at`, without a range check.
    ///
    /// # Safety
    /// `size_of::<T>()` bytes of the array start at position `at`, and they are a valid `T`
    /// (a [`Node8`] or a [`TriPack`], plain data aligned to 32).
    #[inline(always)]
    unsafe fn record_unchecked<T>(&self, at: u32) -> &T {
        debug_assert!(
            block_at(at) * size_of::<Block>() + size_of::<T>() <= self.bytes(),
            "reference {at} out of range"
        );
        // SAFETY: the caller's contract.
        unsafe { &*self.blocks.as_ptr().cast::<[u8; UNIT]>().add(at as usize).cast::<T>() }
    }
}

impl NodeStore for Blocks {
    #[inline(always)]
    unsafe fn node(&self, index: u32) -> &Node8 {
        // SAFETY: `NodeStore::node`'s contract (the root, or a reference read from this array's
        // nodes) is `node_unchecked`'s.
        unsafe { self.node_unchecked(index) }
    }

    /// Row `row` at `row_start + index × 8` (see the module docs): the compiler keeps each
    /// `row_start` of a walk in a register, and each load is one addressing mode off `index`.
    #[inline(always)]
    unsafe fn row(&self, index: u32, row: usize) -> &[f32; 8] {
        debug_assert!(row < 6 && block_at(index) + NODE_BLOCKS <= self.blocks.len());
        // SAFETY: as for `node`: the node at `index` lies inside the array, and row `row < 6`
        // inside the node, 32-aligned plain floats.
        unsafe {
            let row_start = self.blocks.as_ptr().add(row).cast::<[u8; UNIT]>();
            &*row_start.add(index as usize).cast::<[f32; 8]>()
        }
    }
}

/// Writes nodes and packs one after the other into a run of a block array whose size is known
/// in advance (the collapse counts it first): no vector grows, nothing is copied afterwards,
/// and runs split off with [`BlockWriter::split`] are written on other threads. Records are named
/// by their position in the whole array.
pub(crate) struct BlockWriter<'a> {
    blocks: &'a mut [Block],
    /// The index in the whole array of `blocks[0]`.
    base: u32,
    /// The next block to write, in `blocks`.
    at: usize,
}

impl<'a> BlockWriter<'a> {
    fn push<T: Copy>(&mut self, value: &T, count: usize) -> u32 {
        debug_assert_eq!(size_of::<T>(), count * size_of::<Block>());
        // SAFETY: `T` (a node or a pack) is `count` blocks of plain data, 32-aligned (asserted
        // above), so its bytes read as `count` blocks.
        let src = unsafe { std::slice::from_raw_parts((value as *const T).cast::<Block>(), count) };
        self.blocks[self.at..self.at + count].copy_from_slice(src);
        let at = position_of(self.base as usize + self.at).expect("BVH larger than 16 GB");
        self.at += count;
        at
    }

    /// Writes an empty node and returns its position.
    pub(crate) fn push_node(&mut self) -> u32 {
        self.push(&Node8::EMPTY, NODE_BLOCKS)
    }

    /// Writes an empty pack, has `fill` fill it in place (a pack built elsewhere and copied in
    /// was a call to `memcpy` per pack), and returns its position and what `fill` returned.
    pub(crate) fn push_pack_with<R>(&mut self, fill: impl FnOnce(&mut TriPack) -> R) -> (u32, R) {
        let at = self.next_position();
        let pack = pack_in_mut(&mut self.blocks[self.at..]);
        *pack = TriPack::EMPTY;
        let filled = fill(pack);
        self.at += PACK_BLOCKS;
        (at, filled)
    }

    /// The node this writer wrote at position `at`, to fill in.
    pub(crate) fn node_mut(&mut self, at: u32) -> &mut Node8 {
        node_in_mut(&mut self.blocks[block_at(at) - self.base as usize..])
    }

    /// The position the next write goes to.
    pub(crate) fn next_position(&self) -> u32 {
        position_of(self.base as usize + self.at).expect("BVH larger than 16 GB")
    }

    /// Splits this run, not yet written, into consecutive runs of `lens` blocks, which add up
    /// to its length: each can be written on another thread.
    pub(crate) fn split(self, lens: &[usize]) -> Vec<BlockWriter<'a>> {
        debug_assert_eq!(self.at, 0);
        let (mut rest, mut base) = (self.blocks, self.base);
        let mut runs = Vec::with_capacity(lens.len());
        for &len in lens {
            let (run, tail) = rest.split_at_mut(len);
            runs.push(BlockWriter { blocks: run, base, at: 0 });
            base += len as u32;
            rest = tail;
        }
        assert!(rest.is_empty(), "runs do not cover the array");
        runs
    }

    /// `true` once every block of the run has been written.
    pub(crate) fn is_full(&self) -> bool {
        self.at == self.blocks.len()
    }
}
