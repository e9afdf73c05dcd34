//! Proxies: the handle a caller keeps ([`ProxyId`]) and the two halves of what the tree keeps
//! for each (`Proxy`, read by updates; `Slot`, read by queries at a leaf).

use crate::math::Aabb;

/// A handle to a proxy in a [`Dbvt`](super::Dbvt).
///
/// It carries a generation, so an id kept after its proxy was removed is refused with
/// [`DbvtError::StaleProxy`](super::DbvtError::StaleProxy) instead of reaching whichever proxy reuses the slot, and a tree tag,
/// so an id from another tree is refused with [`DbvtError::ForeignProxy`](super::DbvtError::ForeignProxy).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProxyId {
    pub(super) index: u32,
    pub(super) generation: u32,
    pub(super) tree: u32,
}

impl ProxyId {
    /// An id no tree ever issued (tree tags start at 1): every tree refuses it as foreign. What
    /// a record holds where it has no proxy.
    #[cfg(feature = "serde")]
    pub(crate) const NONE: ProxyId = ProxyId { index: u32::MAX, generation: 0, tree: 0 };

    /// The slot index: dense, stable while the proxy lives, and reused after removal. Useful to
    /// index side tables.
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot when this id was issued.
    pub fn generation(self) -> u32 {
        self.generation
    }
}

/// The cold half of a proxy: its fat box and its place in the tree, used by updates. 32 bytes:
/// the box's corners are kept as three floats each rather than as 16-byte `Vec3A`s (48 bytes).
#[derive(Clone, Copy, Debug)]
pub(super) struct Proxy {
    /// The fat box's corners, exactly as stored in the parent's slot.
    pub(super) min: glam::Vec3,
    pub(super) max: glam::Vec3,
    /// Parent node, or [`NULL`](super::node::NULL) when the proxy is the root or free. For a free proxy: next free.
    pub(super) parent: u32,
    /// Slot in the parent.
    pub(super) slot: u8,
}

const _: () = assert!(std::mem::size_of::<Proxy>() == 32);

impl Proxy {
    pub(super) fn new(fat: &Aabb, parent: u32, slot: u8) -> Proxy {
        Proxy { min: fat.min.into(), max: fat.max.into(), parent, slot }
    }

    /// The fat box.
    #[inline(always)]
    pub(super) fn fat(&self) -> Aabb {
        Aabb { min: self.min.into(), max: self.max.into() }
    }

    #[inline(always)]
    pub(super) fn set_fat(&mut self, fat: &Aabb) {
        (self.min, self.max) = (fat.min.into(), fat.max.into());
    }
}

/// The hot half of a proxy, the only part a query reads at a leaf: kept apart so that leaf
/// visits touch 8-16 bytes instead of a 64-byte record.
#[derive(Clone, Debug)]
pub(super) struct Slot<T> {
    pub(super) generation: u32,
    /// `None` while the slot is free.
    pub(super) data: Option<T>,
}
