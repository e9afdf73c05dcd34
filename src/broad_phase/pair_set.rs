//! The pairs a broad phase tracks: a pool of pair records, each linked into both of its objects'
//! lists (so an object's pairs are found without a search, as Box2D's contact edges), and a hash
//! index from the two objects to the record (so a pair found again is not added twice, as
//! Box2D's pair set and Bullet's hashed pair cache).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::ObjectId;

/// No pair: the end of a list, or an empty one.
pub(super) const NO_PAIR: u32 = u32::MAX;

/// One tracked pair: object slots `objects[0] < objects[1]`, and for each side the previous and
/// next pair in that object's list.
#[derive(Clone, Copy, Debug)]
struct PairNode {
    objects: [u32; 2],
    prev: [u32; 2],
    /// For a free record, `next[0]` is the next free record.
    next: [u32; 2],
}

/// Multiplicative hashing of a pair key (two 32-bit slots): the keys are small dense integers,
/// for which SipHash's resistance to chosen keys buys nothing and costs a fifth of a lookup.
#[derive(Default)]
pub(super) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline(always)]
    fn write_u64(&mut self, key: u64) {
        // The high half (the second slot) is folded into the low bits before the multiply, and
        // the product's high bits back into the low ones: the table takes its bucket from the
        // low bits and its tag from the high ones, and both should depend on both slots.
        let h = (self.0 ^ key ^ (key >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// The pairs currently overlapping, with each object's list of them.
#[derive(Clone, Debug, Default)]
pub(super) struct PairSet {
    nodes: Vec<PairNode>,
    free: u32,
    /// `(low slot, high slot)` packed as `low | high << 32`, to the pair's record.
    index: HashMap<u64, u32, BuildHasherDefault<PairHasher>>,
    /// Each object slot's first pair, or [`NO_PAIR`].
    heads: Vec<u32>,
}

#[inline(always)]
fn key(a: u32, b: u32) -> u64 {
    u64::from(a) | (u64::from(b) << 32)
}

impl PairSet {
    pub(super) fn new() -> Self {
        PairSet { free: NO_PAIR, ..Default::default() }
    }

    /// Pairs tracked.
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    /// Makes room for object slot `o` (slots are added one at a time, in order).
    pub(super) fn ensure_object(&mut self, o: u32) {
        if self.heads.len() <= o as usize {
            self.heads.resize(o as usize + 1, NO_PAIR);
        }
    }

    /// `true` when slots `a < b` are a tracked pair.
    #[inline]
    pub(super) fn contains(&self, a: u32, b: u32) -> bool {
        debug_assert!(a < b);
        self.index.contains_key(&key(a, b))
    }

    /// Tracks the pair of slots `a < b`, which is not tracked yet.
    pub(super) fn insert(&mut self, a: u32, b: u32) {
        debug_assert!(a < b && !self.contains(a, b));
        let (ha, hb) = (self.heads[a as usize], self.heads[b as usize]);
        let node = PairNode { objects: [a, b], prev: [NO_PAIR; 2], next: [ha, hb] };
        let p = if self.free != NO_PAIR {
            let p = self.free;
            self.free = self.nodes[p as usize].next[0];
            self.nodes[p as usize] = node;
            p
        } else {
            self.nodes.push(node);
            self.nodes.len() as u32 - 1
        };
        for (side, head) in [(0, ha), (1, hb)] {
            if head != NO_PAIR {
                let h = &mut self.nodes[head as usize];
                let s = Self::side(h, node.objects[side]);
                h.prev[s] = p;
            }
        }
        self.heads[a as usize] = p;
        self.heads[b as usize] = p;
        self.index.insert(key(a, b), p);
    }

    /// Which side of record `node` object slot `o` is on.
    #[inline(always)]
    fn side(node: &PairNode, o: u32) -> usize {
        usize::from(node.objects[1] == o)
    }

    /// Stops tracking record `p` and returns its two slots.
    pub(super) fn remove(&mut self, p: u32) -> [u32; 2] {
        let node = self.nodes[p as usize];
        for side in 0..2 {
            let (o, prev, next) = (node.objects[side], node.prev[side], node.next[side]);
            if prev == NO_PAIR {
                self.heads[o as usize] = next;
            } else {
                let n = &mut self.nodes[prev as usize];
                let s = Self::side(n, o);
                n.next[s] = next;
            }
            if next != NO_PAIR {
                let n = &mut self.nodes[next as usize];
                let s = Self::side(n, o);
                n.prev[s] = prev;
            }
        }
        self.index.remove(&key(node.objects[0], node.objects[1]));
        self.nodes[p as usize] = PairNode { objects: [NO_PAIR; 2], prev: [NO_PAIR; 2], next: [self.free, NO_PAIR] };
        self.free = p;
        node.objects
    }

    /// The first record in slot `o`'s list, or [`NO_PAIR`].
    #[inline]
    pub(super) fn first(&self, o: u32) -> u32 {
        self.heads[o as usize]
    }

    /// Record `p`'s two slots and the next record in slot `o`'s list.
    #[inline]
    pub(super) fn read(&self, p: u32, o: u32) -> ([u32; 2], u32) {
        let node = &self.nodes[p as usize];
        (node.objects, node.next[Self::side(node, o)])
    }

    /// Every tracked pair's two slots, in record order.
    pub(super) fn iter(&self) -> impl Iterator<Item = [u32; 2]> + '_ {
        self.nodes.iter().filter(|n| n.objects[0] != NO_PAIR).map(|n| n.objects)
    }
}

/// What changed in the pairs since the previous [`BroadPhase::update_pairs`]: the pairs that
/// began and the pairs that ended, each pair once, its smaller id first, both lists sorted.
///
/// A pair ends when its two fat boxes stop overlapping, when one object's filter or kind stops
/// it, or when one object is removed; a removed object's pairs end with the id it had.
///
/// [`BroadPhase::update_pairs`]: super::BroadPhase::update_pairs
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairEvents {
    pub(super) began: Vec<(ObjectId, ObjectId)>,
    pub(super) ended: Vec<(ObjectId, ObjectId)>,
}

impl PairEvents {
    /// Pairs that began: their fat boxes overlap now and did not before (or one object is new,
    /// or its filter or kind now lets them pair).
    pub fn began(&self) -> &[(ObjectId, ObjectId)] {
        &self.began
    }

    /// Pairs that ended.
    pub fn ended(&self) -> &[(ObjectId, ObjectId)] {
        &self.ended
    }
}
