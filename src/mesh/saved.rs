//! Saved BVHs: a built [`MeshBvh`] written to bytes and read back without a rebuild.
//!
//! The format is little-endian and versioned. After a 32-byte header come the mesh (positions,
//! then triangles), the block array of nodes and packs (`super::layout`) as 32-bit words, and an
//! 8-byte checksum of everything before it:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `SLABBVH\0` |
//! | 4 | format version ([`FORMAT_VERSION`]) |
//! | 4 | triangle test: 0 Möller–Trumbore, 1 watertight |
//! | 4 | vertex count `v` |
//! | 4 | triangle count `t` |
//! | 4 | block count `b` |
//! | 4 | flags: bit 0 set when a triangle may be listed in several packs (spatial splits) |
//! | 12 `v` | positions, `f32` x, y, z |
//! | 12 `t` | triangles, `u32` vertex indices |
//! | 32 `b` | blocks, eight `u32` words each |
//! | 8 | checksum of all the above ([`saved_checksum`]) |
//!
//! The blocks are the BVH's array as it is in memory (`super::layout`): a child reference names
//! its node or pack by its offset from the block part's start in 8-byte steps, 4 to a block.
//! Version 2 counted whole blocks; it still reads, its references scaled as the tree is walked.
//!
//! Reading checks what safety needs, whatever made the file: a wrong length, magic, version or
//! checksum is an error, and so is any structure the traversal could not walk safely (a
//! reference out of range or backwards, which could make a cycle, records that overlap, an
//! unused node lane whose box is not the empty one, a triangle never listed, or listed twice
//! without the flag that allows it, a tree deeper than the traversal stack). No file makes a
//! query panic, loop or read out of bounds. Versions 2 and 3 had no flags (the word was zero).
//!
//! A BVH with spatial splits ([`BuildQuality::High`](super::BuildQuality::High)) stores the boxes
//! of its references' parts of triangles; [`MeshBvh::from_untrusted_bytes`] computes every box
//! again from whole triangles, which is correct but gives up the splits' tighter boxes.
//!
//! What the checksum guards is the contents: the boxes and triangle rows, which
//! [`MeshBvh::from_bytes`] uses as stored. That is the fast read, for a cache one's own program
//! wrote: about a tenth of the dragon's build (`docs/performance.md`). A file from a source one
//! does not trust may have had its checksum forged over boxes that miss their triangles;
//! [`MeshBvh::from_untrusted_bytes`] therefore computes every box and row again from the mesh,
//! as [`MeshBvh::refit`] does, so that such a file still answers every query exactly as a BVH of
//! the shape it describes over its mesh.

use std::time::Instant;

use glam::Vec3;

use super::layout::{Blocks, NODE_BLOCKS, PACK_BLOCKS, block_at, starts_block};
use super::triangle::NO_PRIM;
use super::triangle_set::TriangleSet;
use super::{BuildOptions, MeshBvh, MeshError, TriMesh, TriangleTest};
use crate::child::{ChildRef, MAX_INDEX};
use crate::math::Aabb;

/// The first eight bytes of a saved BVH.
#[doc(hidden)]
pub const MAGIC: [u8; 8] = *b"SLABBVH\0";

/// The version this library writes. It also reads version 3, whose header has no flags, and
/// version 2, whose child references count 32-byte blocks where later versions' count 8-byte
/// steps (`super::layout`): they are scaled as the tree is walked on reading.
#[doc(hidden)]
pub const FORMAT_VERSION: u32 = 4;

/// The header's flag for a BVH whose packs may list a triangle more than once.
const FLAG_SHARED: u32 = 1;

/// The oldest version this library reads.
const OLDEST_READ: u32 = 2;

/// Wide-node depth a saved tree may have: the traversal stacks hold 1024 entries and a level
/// pushes at most 7 (see `MeshBvh`'s stack bound); a build never comes near (48 + log2(n)).
const MAX_DEPTH: u32 = 140;

const HEADER: usize = 32;

/// Why bytes could not be read as a saved BVH. Every variant says where.
#[derive(Clone, Debug, PartialEq)]
pub enum SavedBvhError {
    /// The bytes end before the part the header announces (or before a header).
    Truncated {
        /// What was being read.
        part: &'static str,
        /// Bytes needed up to the end of that part.
        needed: u64,
        /// Bytes there are.
        len: usize,
    },
    /// More bytes than the header announces.
    TrailingBytes {
        /// Bytes expected.
        expected: u64,
        /// Bytes there are.
        len: usize,
    },
    /// Not a saved BVH: the first eight bytes are not [`MAGIC`].
    NotASavedBvh,
    /// A version this library does not read.
    UnsupportedVersion(u32),
    /// The header holds a value out of its range.
    BadHeader {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u32,
    },
    /// The checksum does not match the contents: the bytes were damaged.
    Checksum {
        /// Stored in the file.
        stored: u64,
        /// Computed from the contents.
        computed: u64,
    },
    /// The mesh in the file is invalid (an index out of range, a non-finite vertex).
    Mesh(MeshError),
    /// The tree in the file cannot be traversed safely, or does not hold every triangle once.
    BadTree {
        /// The block where the problem is (or the triangle count, for a missing triangle).
        block: u32,
        /// What is wrong.
        reason: &'static str,
    },
}

impl std::fmt::Display for SavedBvhError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SavedBvhError::Truncated { part, needed, len } => {
                write!(f, "saved BVH truncated in the {part}: {needed} bytes needed, {len} present")
            }
            SavedBvhError::TrailingBytes { expected, len } => {
                write!(f, "saved BVH has {len} bytes where its header announces {expected}")
            }
            SavedBvhError::NotASavedBvh => write!(f, "not a saved slabtree BVH (wrong magic bytes)"),
            SavedBvhError::UnsupportedVersion(v) => {
                write!(f, "saved BVH format version {v}; this library reads versions {OLDEST_READ} to {FORMAT_VERSION}")
            }
            SavedBvhError::BadHeader { field, value } => write!(f, "saved BVH header: bad {field} {value}"),
            SavedBvhError::Checksum { stored, computed } => {
                write!(f, "saved BVH damaged: checksum {stored:#018x}, contents give {computed:#018x}")
            }
            SavedBvhError::Mesh(e) => write!(f, "saved BVH mesh: {e}"),
            SavedBvhError::BadTree { block, reason } => write!(f, "saved BVH tree, block {block}: {reason}"),
        }
    }
}

impl std::error::Error for SavedBvhError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SavedBvhError::Mesh(e) => Some(e),
            _ => None,
        }
    }
}

/// The checksum of a saved BVH's contents. It detects damage, not tampering; reading does not
/// depend on it for safety (see the module docs).
///
/// The bytes are taken in chunks of 1 MiB, hashed on rayon's threads. In a chunk, the 64-bit
/// words (the tail zero-padded) go in turn to four running hashes, each word mixed in with a
/// multiply and a rotation as FxHash mixes: four independent chains keep the multiplier busy
/// where one would wait out its latency at every word. The chunks' values, then the length, are
/// mixed in the same way, and the result is finalised with SplitMix64's mixer.
#[doc(hidden)]
pub fn saved_checksum(bytes: &[u8]) -> u64 {
    const CHUNK: usize = 1 << 20;
    let chunks = crate::par::map_range(bytes.len().div_ceil(CHUNK) as u32, 1, |i| {
        let start = i as usize * CHUNK;
        chunk_hash(&bytes[start..bytes.len().min(start + CHUNK)])
    });
    let h = chunks.iter().fold(bytes.len() as u64, |h, &c| fx(h, c));
    split_mix(h)
}

/// One mixing step of FxHash (rustc's hasher): rotate, xor in the word, multiply.
#[inline(always)]
fn fx(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// SplitMix64's finaliser: every input bit reaches every output bit.
fn split_mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// A chunk's value for [`saved_checksum`]: four interleaved FxHash chains over its words.
fn chunk_hash(chunk: &[u8]) -> u64 {
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("8 bytes"));
    let mut h = [1u64, 2, 3, 4];
    let mut quads = chunk.chunks_exact(32);
    for q in &mut quads {
        for (k, h) in h.iter_mut().enumerate() {
            *h = fx(*h, word(&q[8 * k..8 * k + 8]));
        }
    }
    let mut tail = [0u8; 32];
    tail[..quads.remainder().len()].copy_from_slice(quads.remainder());
    for (k, h) in h.iter_mut().enumerate() {
        *h = fx(*h, word(&tail[8 * k..8 * k + 8]));
    }
    h.iter().fold(chunk.len() as u64, |a, &b| fx(a, b))
}

impl MeshBvh {
    /// Writes this BVH, with its mesh, in the saved format (see [`MeshBvh::from_bytes`]).
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BuildOptions, MeshBvh, TriMesh};
    /// let mesh = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let bytes = bvh.to_bytes();
    /// let back = MeshBvh::from_bytes(&bytes)?;
    /// assert_eq!(back.to_bytes(), bytes);
    /// // Damage is an error, never a wrong answer.
    /// let mut bad = bytes.clone();
    /// bad[40] ^= 1;
    /// assert!(MeshBvh::from_bytes(&bad).is_err());
    /// assert!(MeshBvh::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let (positions, triangles) = (self.mesh.positions(), self.mesh.triangles());
        let blocks = self.blocks.len();
        let len = HEADER + 12 * positions.len() + 12 * triangles.len() + 32 * blocks + 8;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&MAGIC);
        let test = match self.options.triangle_test {
            TriangleTest::MollerTrumbore => 0u32,
            TriangleTest::Watertight => 1,
        };
        // Counts fit: vertex and triangle indices are u32, and blocks are addressed by u32.
        let counts = [positions.len(), triangles.len(), blocks].map(|c| u32::try_from(c).expect("counts fit"));
        let flags = if self.shared.is_some() { FLAG_SHARED } else { 0 };
        for v in [FORMAT_VERSION, test, counts[0], counts[1], counts[2], flags] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for p in positions {
            for c in p.to_array() {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        for t in triangles {
            for i in t {
                out.extend_from_slice(&i.to_le_bytes());
            }
        }
        for block in self.blocks.word_blocks() {
            for w in block {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        let sum = saved_checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(out.len(), len);
        out
    }

    /// Reads a BVH written by [`MeshBvh::to_bytes`], without rebuilding it. This is the fast
    /// path, for a cache of BVHs one's own program wrote: the header, the length and the
    /// checksum are checked, and the tree's structure is walked once, so that no file, however
    /// made, can make a query panic, loop or read out of bounds (see the module docs of
    /// `mesh::saved`). The boxes and triangle rows are then used as stored: damage is caught by
    /// the checksum, but a file made to pass it with boxes that do not hold their triangles
    /// would answer for those boxes. Bytes from a source you do not trust go through
    /// [`MeshBvh::from_untrusted_bytes`]. The build options other than the triangle test take
    /// their defaults; they only matter to a build.
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh};
    /// let mesh = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]])?;
    /// let bytes = MeshBvh::build(&mesh, &BuildOptions::default()).to_bytes();
    /// let bvh = MeshBvh::from_bytes(&bytes)?;
    /// let hit = bvh.intersect(&Ray::new(Vec3::new(0.25, 0.25, 1.0), -Vec3::Z))?.unwrap();
    /// assert_eq!((hit.triangle, hit.t), (0, 1.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<MeshBvh, SavedBvhError> {
        read(bytes, Contents::Stored)
    }

    /// Reads a BVH written by [`MeshBvh::to_bytes`] from a source that is not trusted: as
    /// [`MeshBvh::from_bytes`], and then every box and every triangle row is computed again from
    /// the file's mesh, as [`MeshBvh::refit`] computes them. A file whose checksum was forged
    /// then still answers every query exactly as a BVH over its mesh, never with a box that
    /// misses its triangles. This costs about as much again as the fast read
    /// (`docs/performance.md`).
    ///
    /// ```
    /// use glam::Vec3;
    /// use slabtree::{BuildOptions, MeshBvh, TriMesh};
    /// let mesh = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]])?;
    /// let bytes = MeshBvh::build(&mesh, &BuildOptions::default()).to_bytes();
    /// assert_eq!(MeshBvh::from_untrusted_bytes(&bytes)?.to_bytes(), bytes);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_untrusted_bytes(bytes: &[u8]) -> Result<MeshBvh, SavedBvhError> {
        read(bytes, Contents::Recomputed)
    }
}

/// Whether a read uses the stored boxes and rows or computes them again from the mesh.
#[derive(Clone, Copy, PartialEq)]
enum Contents {
    Stored,
    Recomputed,
}

/// [`MeshBvh::from_bytes`] and [`MeshBvh::from_untrusted_bytes`].
fn read(bytes: &[u8], contents: Contents) -> Result<MeshBvh, SavedBvhError> {
    let start = Instant::now();
    let truncated = |part, needed| SavedBvhError::Truncated { part, needed, len: bytes.len() };
    if bytes.len() < HEADER {
        return Err(if bytes.len() >= 8 && bytes[..8] != MAGIC {
            SavedBvhError::NotASavedBvh
        } else {
            truncated("header", HEADER as u64)
        });
    }
    if bytes[..8] != MAGIC {
        return Err(SavedBvhError::NotASavedBvh);
    }
    let word = |i: usize| u32::from_le_bytes(bytes[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
    let [version, test, vertices, triangles, blocks, flags] = std::array::from_fn(word);
    if !(OLDEST_READ..=FORMAT_VERSION).contains(&version) {
        return Err(SavedBvhError::UnsupportedVersion(version));
    }
    // Version 2's references count blocks: 4 steps of version 3's each.
    let ref_scale = if version == 2 { 4 } else { 1 };
    let triangle_test = match test {
        0 => TriangleTest::MollerTrumbore,
        1 => TriangleTest::Watertight,
        value => return Err(SavedBvhError::BadHeader { field: "triangle test", value }),
    };
    let known = if version >= 4 { FLAG_SHARED } else { 0 };
    if flags & !known != 0 {
        return Err(SavedBvhError::BadHeader { field: "flags", value: flags });
    }
    // In u64: the counts are u32, so no product overflows.
    let ends = [
        ("positions", 12 * u64::from(vertices)),
        ("triangles", 12 * u64::from(triangles)),
        ("blocks", 32 * u64::from(blocks)),
        ("checksum", 8),
    ];
    let mut end = HEADER as u64;
    let mut at = [0usize; 4];
    for (i, (part, size)) in ends.iter().enumerate() {
        at[i] = end as usize;
        end += size;
        if end > bytes.len() as u64 {
            return Err(truncated(part, end));
        }
    }
    if end < bytes.len() as u64 {
        return Err(SavedBvhError::TrailingBytes { expected: end, len: bytes.len() });
    }
    let body = &bytes[..at[3]];
    let stored = u64::from_le_bytes(bytes[at[3]..].try_into().expect("8 bytes"));
    let computed = saved_checksum(body);
    if stored != computed {
        return Err(SavedBvhError::Checksum { stored, computed });
    }
    // Three little-endian words of a 12-byte record.
    let words = |c: &[u8]| -> [u32; 3] {
        std::array::from_fn(|i| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().expect("4 bytes")))
    };
    // The mesh is read while the block array is copied (the copy waits mostly on the kernel's
    // first touch of fresh pages).
    let (mesh, mut blocks) = crate::par::join(
        || {
            let positions: Vec<Vec3> =
                bytes[at[0]..at[1]].chunks_exact(12).map(|c| Vec3::from_array(words(c).map(f32::from_bits))).collect();
            let tris: Vec<[u32; 3]> = bytes[at[1]..at[2]].chunks_exact(12).map(words).collect();
            TriMesh::new(positions, tris).map_err(SavedBvhError::Mesh)
        },
        || Blocks::from_le_bytes(&bytes[at[2]..at[3]]),
    );
    let mesh = mesh?;
    let options = BuildOptions { triangle_test, ..BuildOptions::default() };
    let may_share = flags & FLAG_SHARED != 0;
    let (depth, shared) = walk_and_fill(&mesh, &mut blocks, &options, contents, ref_scale, may_share)?;
    let bounds = if blocks.is_empty() { Aabb::EMPTY } else { blocks.node(0).union() };
    Ok(MeshBvh {
        blocks,
        mesh,
        options,
        bounds,
        shared: shared.map(Box::new),
        depth,
        build_time: start.elapsed(),
        build_phases: Default::default(),
    })
}

/// Checks that `blocks` is a tree the traversal can walk over `mesh` (see the module docs), and
/// with [`Contents::Recomputed`] writes every pack's rows and every lane's box from the mesh.
/// A triangle may be listed more than once only where `may_share`. Returns the wide depth and
/// the triangles listed more than once.
fn walk_and_fill(
    mesh: &TriMesh,
    blocks: &mut Blocks,
    options: &BuildOptions,
    contents: Contents,
    ref_scale: u32,
    may_share: bool,
) -> Result<(u32, Option<TriangleSet>), SavedBvhError> {
    let len = blocks.len() as u64;
    // Errors name blocks; references and the walk use positions (`super::layout`).
    let bad = |block: usize, reason: &'static str| SavedBvhError::BadTree { block: block as u32, reason };
    if mesh.is_empty() {
        return if len == 0 { Ok((0, None)) } else { Err(bad(0, "blocks for an empty mesh")) };
    }
    if len < NODE_BLOCKS as u64 {
        return Err(bad(0, "no root node"));
    }
    // A walk from the root. References only point forward, past the record that holds them
    // (the writer puts children after their parent), so the walk ends, no cycle is possible,
    // and children come at higher blocks than their parents. `seen` marks every block of every
    // record reached, so records neither repeat nor overlap (an overlap would let a rewrite of
    // one record, below or by `MeshBvh::refit`, turn its bytes into another's). Both marks are
    // bit sets: the triangles of consecutive packs are scattered over the mesh, and a bit per
    // triangle keeps the marks in cache where a byte per triangle did not
    // (`docs/performance.md`).
    let mut seen = TriangleSet::new(len as usize);
    let mut claim = |at: u32, size: usize| -> bool { (block_at(at)..block_at(at) + size).all(|b| seen.set(b)) };
    let mut listed = TriangleSet::new(mesh.len());
    let mut shared: Option<TriangleSet> = None;
    let mut node_at: Vec<u32> = Vec::new();
    let mut pack_at: Vec<u32> = Vec::new();
    let mut stack = vec![(0u32, 1u32)];
    let mut depth = 0;
    let out_of_range =
        |c: ChildRef| if c.is_leaf() { "pack reference out of range" } else { "node reference out of range" };
    while let Some((at, d)) = stack.pop() {
        // The node's block, which errors name.
        let here = block_at(at);
        if d > MAX_DEPTH {
            return Err(bad(here, "tree deeper than the traversal stack allows"));
        }
        depth = depth.max(d);
        if !claim(at, NODE_BLOCKS) {
            return Err(bad(here, "node overlaps another record"));
        }
        node_at.push(at);
        if ref_scale != 1 {
            // An older version's references, scaled to positions once: each node is reached
            // once (claimed above), and its children are walked from the scaled references.
            for c in blocks.node_mut(at).child.iter_mut().filter(|c| !c.is_empty()) {
                let i =
                    c.index().checked_mul(ref_scale).filter(|&i| i <= MAX_INDEX).ok_or(bad(here, out_of_range(*c)))?;
                *c = if c.is_leaf() { ChildRef::leaf(i) } else { ChildRef::node(i) };
            }
        }
        let node = blocks.node(at);
        let mut ended = false;
        let pushed = stack.len();
        for lane in 0..8 {
            let c = node.child[lane];
            if c.is_empty() {
                // An unused lane's box must be the empty one, which no ray or box can meet: the
                // traversal trusts the box to keep it from following the empty reference.
                let empty = (0..3).all(|a| {
                    node.bounds[0][a][lane].to_bits() == f32::INFINITY.to_bits()
                        && node.bounds[1][a][lane].to_bits() == f32::NEG_INFINITY.to_bits()
                });
                if !empty {
                    return Err(bad(here, "an unused lane with a box"));
                }
                ended = true;
                continue;
            }
            if ended {
                return Err(bad(here, "a used lane after an empty one"));
            }
            let size = if c.is_leaf() { PACK_BLOCKS } else { NODE_BLOCKS };
            let i = c.index();
            if !starts_block(i) {
                return Err(bad(here, "a reference inside a block"));
            }
            if i <= at || (block_at(i) + size) as u64 > len {
                return Err(bad(here, out_of_range(c)));
            }
            if c.is_leaf() {
                if !claim(i, PACK_BLOCKS) {
                    return Err(bad(block_at(i), "pack overlaps another record"));
                }
                let pack = blocks.pack(i).expect("range checked");
                for &prim in &pack.prim {
                    if prim == NO_PRIM {
                        continue;
                    }
                    if prim as usize >= mesh.len() {
                        return Err(bad(block_at(i), "triangle index out of range"));
                    }
                    if !listed.set(prim as usize) {
                        if !may_share {
                            return Err(bad(block_at(i), "triangle listed twice"));
                        }
                        shared.get_or_insert_with(|| TriangleSet::new(mesh.len())).set(prim as usize);
                    }
                }
                pack_at.push(i);
            } else {
                stack.push((i, d + 1));
            }
        }
        if node.child[0].is_empty() {
            return Err(bad(here, "node without children"));
        }
        // The first child is walked first: the writer lays the tree out in that order, so the
        // walk reads the array forwards, as the hardware prefetcher expects.
        stack[pushed..].reverse();
    }
    if let Some(missing) = listed.first_clear() {
        return Err(bad(missing, "triangle in no pack"));
    }
    if contents == Contents::Stored {
        return Ok((depth, shared));
    }
    // The contents, from the mesh, as the refit writes them. Children sit at higher blocks than
    // their parents, so descending block order puts them first.
    node_at.sort_unstable_by_key(|&at| std::cmp::Reverse(at));
    super::contents::write_contents(mesh, blocks, options.triangle_test.pack_rows(), &node_at, &pack_at);
    Ok((depth, shared))
}
