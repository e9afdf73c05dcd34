//! Top-down BVH construction shared by the dynamic tree's rebuild and (later) the mesh BVHs.

mod binned_sah;
mod morton;
mod rotate;

pub use binned_sah::{BinnedSah, BuildItem, BuildNode};
pub use morton::MortonGrid;
pub use rotate::rotate_passes;
