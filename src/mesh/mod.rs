//! Triangle meshes and their BVHs.
//!
//! * [`TriMesh`]: positions and triangles, checked on construction.
//! * [`TriMesh::uv_sphere`], [`TriMesh::torus`], [`TriMesh::cuboid`]: generated closed meshes.
//! * [`MeshBvh`]: a binned-SAH BVH collapsed to 8-wide nodes, with closest-hit, any-hit, batch and
//!   swept-box queries.

mod batch;
mod bvh;
pub(crate) mod cast;
mod closest;
pub(crate) mod collapse;
mod contents;
mod error;
mod interleave;
mod layout;
mod leaf;
#[cfg(test)]
mod levels;
mod linear;
pub(crate) mod overlap;
mod policy;
mod query;
mod saved;
mod shapes;
pub(crate) mod stream;
pub(crate) mod sweep;
pub(crate) mod triangle;
mod triangle_rays;
mod triangle_set;
mod trimesh;

pub use crate::math::QueryStats;
pub use bvh::{BuildOptions, BuildPhases, BuildQuality, Hit, LARGE_BVH_BYTES, MeshBvh, MeshStats, TriangleTest};
pub use sweep::BoxCastHit;

pub(crate) use batch::{BatchWalks, trace_batch};
pub use cast::ShapeCastHit;
pub use closest::ClosestPoint;
pub use error::MeshError;
pub use leaf::{AcceptAll, HitCandidate, HitControl, HitPolicy};
pub use saved::{FORMAT_VERSION, MAGIC, SavedBvhError, saved_checksum};
pub use trimesh::TriMesh;
