//! BVH construction shared by the dynamic tree's rebuilds and the mesh BVHs: the binned-SAH
//! builder (top-down, parallel and deterministic), Morton codes for linear rebuilds, and tree
//! rotations.

mod binned_sah;
mod bins;
mod item;
mod linear;
mod morton;
mod rotate;
mod segments;
mod small_split;
mod spatial;
mod split;

pub use item::BuildItem;
pub use linear::{CurveOrder, Fetch, curve_cut, index as curve_key_index, sort_along_curve};
pub use morton::{MortonGrid, morton_split};
pub use rotate::rotate_passes;
pub use spatial::SpatialSplits;
pub use split::{BinnedSah, BuildNode};
