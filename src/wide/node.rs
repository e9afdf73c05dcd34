//! The 8-wide node layout.
//!
//! Child bounds are stored as SoA planes, `bounds[side][axis][lane]` (side 0 = min, 1 = max), so
//! one ray is tested against all 8 children with `f32x8` and its sign bits pick the near planes.
//! Unused lanes hold the empty box (`+inf` min, `-inf` max), which no ray can hit and which cannot
//! make a NaN, and the reference [`ChildRef::EMPTY`].

use glam::Vec3A;

use crate::child::ChildRef;
use crate::math::Aabb;

/// A traversal entry: a child and its entry distance along the ray.
pub(crate) type Entry = (ChildRef, f32);

// An any-hit walk writes and reads an entry's child alone, at the entry's start.
const _: () = assert!(std::mem::offset_of!(Entry, 0) == 0);

/// One 8-wide node: child bounds as SoA planes and child references. 224 bytes, aligned to 32
/// (an `f32x8` row never straddles a cache line; the node spans four lines wherever it starts).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(32))]
pub(crate) struct Node8 {
    pub bounds: [[[f32; 8]; 3]; 2],
    pub child: [ChildRef; 8],
}

const _: () = assert!(std::mem::size_of::<Node8>() == 224);

/// Where a traversal finds the node a [`ChildRef::node`] names: a slice of nodes indexed by
/// node (the dynamic tree's copy), or the mesh BVH's block array indexed by block (`mesh/layout.rs`).
pub(crate) trait NodeStore {
    /// The node `index` names.
    ///
    /// # Safety
    /// `index` is the root's (`0`, in a non-empty store) or a node reference read from one of the
    /// store's own nodes. A store may skip the range check on that promise (the mesh BVH's does).
    unsafe fn node(&self, index: u32) -> &Node8;

    /// Bound row `row` (`side * 3 + axis`, below 6) of the node `index` names.
    ///
    /// # Safety
    /// As for [`NodeStore::node`].
    #[inline(always)]
    unsafe fn row(&self, index: u32, row: usize) -> &[f32; 8] {
        // SAFETY: the caller's promise is `node`'s.
        let node = unsafe { self.node(index) };
        debug_assert!(row < 6);
        &node.bounds.as_flattened()[row]
    }
}

impl NodeStore for [Node8] {
    #[inline(always)]
    unsafe fn node(&self, index: u32) -> &Node8 {
        &self[index as usize]
    }
}

impl Node8 {
    /// A node with every lane unused.
    pub(crate) const EMPTY: Node8 =
        Node8 { bounds: [[[f32::INFINITY; 8]; 3], [[f32::NEG_INFINITY; 8]; 3]], child: [ChildRef::EMPTY; 8] };

    /// Sets one lane's reference and box.
    pub(crate) fn set(&mut self, lane: usize, child: ChildRef, b: &Aabb) {
        self.child[lane] = child;
        self.set_bounds(lane, b);
    }

    /// Replaces one lane's box.
    #[inline]
    pub(crate) fn set_bounds(&mut self, lane: usize, b: &Aabb) {
        for a in 0..3 {
            self.bounds[0][a][lane] = b.min[a];
            self.bounds[1][a][lane] = b.max[a];
        }
    }

    /// One lane's box.
    pub(crate) fn lane_bounds(&self, lane: usize) -> Aabb {
        let b = &self.bounds;
        Aabb {
            min: Vec3A::new(b[0][0][lane], b[0][1][lane], b[0][2][lane]),
            max: Vec3A::new(b[1][0][lane], b[1][1][lane], b[1][2][lane]),
        }
    }

    /// The used lanes, as a bit mask.
    #[inline]
    pub(crate) fn used_lanes(&self) -> u32 {
        self.child.iter().enumerate().fold(0, |m, (l, c)| m | ((!c.is_empty()) as u32) << l)
    }

    /// Union of the used lanes.
    pub(crate) fn union(&self) -> Aabb {
        (0..8).filter(|&l| !self.child[l].is_empty()).fold(Aabb::EMPTY, |b, l| b.union(&self.lane_bounds(l)))
    }
}
