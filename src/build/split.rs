//! The builder's settings ([`BinnedSah`]), what it returns ([`BuildNode`]), and what its split
//! strategies share: the [`Split`] each returns, and the bounds of a node's items. The strategies are methods of [`BinnedSah`]
//! in their own files: binning (`super::bins`), exact sweeps and medians of small nodes
//! (`super::small_split`), and the recursion that chooses between them (`super::binned_sah`).

use super::item::{Bounds4, BuildItem};
use crate::math::Aabb;

/// The builder's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinnedSah {
    /// Centroid bins per axis, for nodes of more than 1024 items; smaller nodes use at most 16.
    pub bins: usize,
    /// Largest leaf. A node with more items is always split.
    pub max_leaf: usize,
    /// Cost of one node traversal relative to one primitive test.
    pub traversal_cost: f32,
    /// Subtrees larger than this are built in parallel.
    pub parallel_threshold: usize,
    /// Primitives are tested in blocks of this many (4 for SoA triangle packs), so the SAH counts
    /// a side's cost as `ceil(count / block)`, as Embree's builders do; a leaf of 4 then costs
    /// the same as a leaf of 1 and leaves come out full.
    pub block: usize,
    /// Split only along the axis where the node's centroids spread most, as parry's binned
    /// builder does, instead of trying all three: a third of the binning and of the small nodes'
    /// exact sweeps, for trees a little worse. The dynamic tree's bulk builds set it by default
    /// (`DbvtConfig::fast_build`), where build time matters more than the last bit of quality;
    /// its optimiser's rebuilds and the mesh BVH, whose rays pay for every bit of quality, do
    /// not (`docs/performance.md`, "Why the builder is shaped as it is").
    pub longest_axis_only: bool,
}

impl Default for BinnedSah {
    fn default() -> Self {
        BinnedSah {
            bins: 16,
            max_leaf: 1,
            traversal_cost: 1.0,
            parallel_threshold: 8192,
            block: 1,
            longest_axis_only: false,
        }
    }
}

/// A chosen split: the left part's size, both parts' geometry bounds (which the bins already
/// hold) and both parts' centroid bounds (gathered while partitioning), so no child scans its
/// items before it bins them.
pub(super) struct Split {
    pub(super) mid: usize,
    pub(super) left: Aabb,
    pub(super) right: Aabb,
    pub(super) left_centroids: Bounds4,
    pub(super) right_centroids: Bounds4,
    /// The items were moved to the other array (see [`BinnedSah::build_into`]) rather than
    /// reordered in place.
    pub(super) moved: bool,
}

pub(super) fn bounds_of(items: &[BuildItem]) -> Bounds4 {
    let mut b = Bounds4::EMPTY;
    for it in items {
        b.add_item(it);
    }
    b
}

pub(super) fn centroid_bounds(items: &[BuildItem]) -> Bounds4 {
    let mut b = Bounds4::EMPTY;
    for it in items {
        b.grow(it.centroid2());
    }
    b
}

/// A node of the built binary tree. Node 0 is the root; children follow in depth-first order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BuildNode {
    /// An internal node with the indices of its two children.
    Inner {
        /// Bounds of the subtree.
        bounds: Aabb,
        /// Left child's node index.
        left: u32,
        /// Right child's node index.
        right: u32,
    },
    /// A leaf over `items[first .. first + count]` of the reordered item slice.
    Leaf {
        /// Bounds of the leaf's items.
        bounds: Aabb,
        /// First item.
        first: u32,
        /// Number of items.
        count: u32,
    },
}

impl BuildNode {
    /// The node's bounds.
    pub fn bounds(&self) -> &Aabb {
        match self {
            BuildNode::Inner { bounds, .. } | BuildNode::Leaf { bounds, .. } => bounds,
        }
    }
}
