//! Naming an instance: the id a caller keeps ([`InstanceId`]), and what the instance tree keeps
//! per instance (`InstanceSlot`).

/// The user data the scene stores in its [`Dbvt`](crate::Dbvt): the slot of the instance in the scene's table
/// and a copy of its filter mask, so that filtered and frustum queries never touch the table for
/// instances they skip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InstanceSlot {
    /// Index into the scene's instance table.
    pub(crate) index: u32,
    /// The generation of the slot (for building the instance's id without the table).
    pub(crate) generation: u32,
    /// The instance's filter mask.
    pub(crate) mask: u32,
}

/// A handle to an instance in a [`Scene`](super::Scene): generational, so an id kept after its instance was
/// removed is refused with [`SceneError::StaleInstance`](super::SceneError::StaleInstance), and tagged with its scene.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId {
    pub(super) index: u32,
    pub(super) generation: u32,
    pub(super) scene: u32,
}

impl InstanceId {
    /// The slot index: dense, stable while the instance lives, reused after removal.
    pub fn index(self) -> u32 {
        self.index
    }
}
