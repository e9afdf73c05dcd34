//! The child reference of every node layout: the dynamic tree's binary nodes (`dbvt::node`) and
//! the 8-wide nodes (`wide`) of the mesh BVH and of the tree's read-only copy.
//!
//! One `u32`: an internal node's index, or a leaf's index (a proxy of the tree, a triangle pack of
//! the mesh) with the top bit set, as in Embree's and tinybvh's node references. An unused slot of
//! an 8-wide node is [`ChildRef::EMPTY`], all ones: it carries the leaf bit too, so a traversal that
//! only asks `is_leaf` never descends into it (its box is empty, so no ray reaches it anyway).

/// Marks a [`ChildRef`] as a leaf rather than an internal node index.
pub(crate) const LEAF_BIT: u32 = 1 << 31;

/// A child slot's content: an internal node index, or a leaf index tagged with the leaf bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct ChildRef(u32);

/// The largest index a reference can carry (indices keep their top bit free, and the all-ones
/// value stays [`ChildRef::EMPTY`]).
pub(crate) const MAX_INDEX: u32 = LEAF_BIT - 2;

impl ChildRef {
    /// An unused slot of an 8-wide node.
    pub(crate) const EMPTY: ChildRef = ChildRef(u32::MAX);

    /// The internal node `index`.
    #[inline(always)]
    pub(crate) fn node(index: u32) -> ChildRef {
        ChildRef(index)
    }
    /// The leaf `index` (a proxy, a triangle pack).
    #[inline(always)]
    pub(crate) fn leaf(index: u32) -> ChildRef {
        ChildRef(index | LEAF_BIT)
    }
    /// `true` for a leaf, and for [`ChildRef::EMPTY`].
    #[inline(always)]
    pub(crate) fn is_leaf(self) -> bool {
        self.0 & LEAF_BIT != 0
    }
    /// `true` for [`ChildRef::EMPTY`].
    #[inline(always)]
    pub(crate) fn is_empty(self) -> bool {
        self == ChildRef::EMPTY
    }
    /// The raw bits (index and leaf flag), for carrying a reference through a builder's item.
    #[inline(always)]
    pub(crate) fn raw(self) -> u32 {
        self.0
    }
    /// The reference whose [`ChildRef::raw`] bits are `raw`.
    #[inline(always)]
    pub(crate) fn from_raw(raw: u32) -> ChildRef {
        ChildRef(raw)
    }
    /// The node or leaf index.
    #[inline(always)]
    pub(crate) fn index(self) -> u32 {
        self.0 & !LEAF_BIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_round_trip_and_empty_is_a_leaf() {
        for i in [0, 1, 12345, MAX_INDEX] {
            assert_eq!(ChildRef::node(i).index(), i);
            assert!(!ChildRef::node(i).is_leaf());
            assert_eq!(ChildRef::leaf(i).index(), i);
            assert!(ChildRef::leaf(i).is_leaf() && !ChildRef::leaf(i).is_empty());
            assert_eq!(ChildRef::from_raw(ChildRef::leaf(i).raw()), ChildRef::leaf(i));
        }
        assert!(ChildRef::EMPTY.is_leaf() && ChildRef::EMPTY.is_empty());
    }
}
