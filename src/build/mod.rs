//! Top-down BVH construction shared by the dynamic tree's rebuild and (later) the mesh BVHs.

mod binned_sah;

pub use binned_sah::{BinnedSah, BuildItem, BuildNode};
