//! What the broad phase keeps per object: its handle ([`ObjectId`]), its [`BodyKind`] and
//! [`Filter`], and where its box lives.

use crate::dbvt::ProxyId;
use crate::math::Aabb;

/// A handle to an object of a [`BroadPhase`](super::BroadPhase).
///
/// Like [`ProxyId`] it carries a generation, so an id kept after its object was removed is
/// refused with [`BroadPhaseError::StaleObject`](super::BroadPhaseError::StaleObject) instead of
/// reaching whichever object reuses the slot. Ids order by [`ObjectId::index`] first: a pair
/// is always reported with the smaller id first.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    pub(super) index: u32,
    pub(super) generation: u32,
}

impl ObjectId {
    /// The slot index: dense, stable while the object lives, and reused after removal. Useful to
    /// index side tables (bodies, contacts).
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot when this id was issued.
    pub fn generation(self) -> u32 {
        self.generation
    }
}

/// How an object moves, which decides the pairs it can be in (as Box2D's and rapier's body
/// types do).
///
/// A pair needs at least one [`BodyKind::Dynamic`] object: static geometry never pairs with
/// static geometry, and by default neither does a kinematic object with a static or kinematic one,
/// since neither would respond to the contact. [`BroadPhaseConfig::kinematic_pairs`] reports
/// those too (for triggers carried by kinematic bodies).
///
/// [`BroadPhaseConfig::kinematic_pairs`]: super::BroadPhaseConfig::kinematic_pairs
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyKind {
    /// Level geometry: rarely moves. Kept in a tree of its own, which moving objects never
    /// disturb.
    Static,
    /// Moved by the program (platforms, doors, animated characters), not by contacts.
    Kinematic,
    /// Moved by the simulation.
    Dynamic,
}

impl BodyKind {
    /// The three kinds, in the order of the broad phase's trees.
    pub(super) const ALL: [BodyKind; 3] = [BodyKind::Static, BodyKind::Kinematic, BodyKind::Dynamic];

    /// The index of this kind's tree.
    #[inline(always)]
    pub(super) fn tree(self) -> usize {
        self as usize
    }
}

/// Which objects may pair, as collision layers: two objects pair only when each one's
/// `category` meets the other's `mask` (Box2D's `categoryBits` and `maskBits`).
///
/// ```
/// use slabtree::broad_phase::Filter;
/// let player = Filter { category: 0b01, mask: 0b11 };
/// let pickup = Filter { category: 0b10, mask: 0b01 };
/// let other_pickup = pickup;
/// assert!(player.pairs_with(&pickup));
/// assert!(!pickup.pairs_with(&other_pickup)); // pickups ignore each other
/// assert!(Filter::default().pairs_with(&player));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Filter {
    /// The layers this object is in.
    pub category: u32,
    /// The layers this object pairs with.
    pub mask: u32,
}

impl Default for Filter {
    /// Layer 1, pairing with every layer.
    fn default() -> Self {
        Filter { category: 1, mask: u32::MAX }
    }
}

impl Filter {
    /// `true` when objects with these two filters may pair. Symmetric.
    #[inline(always)]
    pub fn pairs_with(&self, other: &Filter) -> bool {
        self.category & other.mask != 0 && other.category & self.mask != 0
    }
}

/// The broad phase's record of one object slot, apart from its user data (kept in a vector of
/// its own, so that the pair search shares these records across threads whatever the data is).
/// One cache line: a move reads only this line to decide whether anything changes.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct Object {
    /// Its fat box, as its tree stores it (read by moves and the pair search without a lookup
    /// in the tree).
    pub(super) fat: Aabb,
    pub(super) generation: u32,
    /// The slot holds an object (its data is `Some`): kept here too, so that checking an id
    /// reads one record.
    pub(super) live: bool,
    pub(super) kind: BodyKind,
    pub(super) filter: Filter,
    /// In the move buffer: its box, filter or kind changed since the last `update_pairs`.
    pub(super) moved: bool,
    /// Its proxy in the tree of its kind (meaningless while the slot is free).
    pub(super) proxy: ProxyId,
    /// The entry of the last batch given to `move_objects` whose change to its box stands
    /// (`u32::MAX` when a later entry dropped it; from an older batch otherwise).
    pub(super) batch_entry: u32,
}

const _: () = assert!(std::mem::size_of::<Object>() == 64);
