//! # slabtree
//!
//! Ray queries against bounding-volume hierarchies.
//!
//! * [`math`]: boxes, rays, planes and the one conservative, branchless slab test
//!   ([`ray_aabb2`]), shared by 2D and 3D.
//! * [`dbvt`]: a dynamic AABB tree ([`Dbvt`]) with insert, remove, fat-margin moves, refit,
//!   incremental optimisation and binned-SAH rebuilds; ray, box-cast, overlap, point, frustum and
//!   pair queries, with SIMD node tests and caller policies at the leaves.
//! * [`broad_phase`]: a broad phase on the dynamic tree ([`BroadPhase`]): static, kinematic and
//!   dynamic objects with layer filters, and the pairs that began and ended each frame.
//! * [`mesh`]: triangle meshes and their 8-wide BVHs ([`MeshBvh`]).
//! * [`d2`]: 2D collision on the same math core: Box2D-Lite box manifolds, Box2D v3 polygon
//!   manifolds, GJK distance, time of impact and ray casts, bit-exact with Box2D.
//! * [`scene`]: a two-level scene of moving instances of shared [`MeshBvh`]es ([`Scene`]): pick,
//!   occlusion, frustum and overlap queries and swept boxes, the picking and visibility layer of a
//!   renderer.
//! * [`io`]: Wavefront OBJ and PLY (ASCII and binary) loaders into a [`TriMesh`] ([`load_mesh`]).
//!
//! Features: `parallel` (on by default) runs builds and batch queries on rayon's threads; `serde`
//! derives `Serialize` and `Deserialize` for the value types.
//!
//! ```
//! use slabtree::{Aabb, Dbvt, QueryWorkspace, Ray};
//! use glam::Vec3A;
//!
//! let boxes = (0..1000).map(|i| {
//!     let c = Vec3A::new((i % 10) as f32, ((i / 10) % 10) as f32, (i / 100) as f32) * 2.0;
//!     (Aabb::from_center_half_extents(c, Vec3A::splat(0.5)), i)
//! });
//! let (tree, _ids) = Dbvt::build(boxes)?;
//! let mut ws = QueryWorkspace::new();
//! let hit = tree.intersect(&Ray::new(Vec3A::new(-10.0, 0.0, 0.0), Vec3A::X), &mut ws)?;
//! assert_eq!(tree.get(hit.unwrap().id)?, &0);
//! # Ok::<(), slabtree::DbvtError>(())
//! ```
#![warn(missing_docs)]

pub mod broad_phase;
mod build;
mod child;
pub mod d2;
pub mod dbvt;
mod hint;
pub mod io;
pub mod math;
pub mod mesh;
mod pages;
mod par;
pub mod scene;
mod wide;

pub use broad_phase::{BodyKind, BroadPhase, BroadPhaseConfig, BroadPhaseError, ObjectId, PairEvents};
pub use dbvt::{
    Dbvt, DbvtConfig, DbvtError, LeafControl, LeafPolicy, NearestProxy, PairControl, ProxyHit, ProxyId, QueryStats,
    QueryWorkspace, RayBatchPolicy, RayControl, RayLeaf, RayPolicy, TreeStats, ValidationError, WideDbvt, WideStorage,
};
pub use io::{LoadError, LoadErrorKind, load_mesh};
pub use math::{
    Aabb, Aabb2, BatchError, BatchOptions, Frustum, InputError, Plane, Ray, Ray2, RayCoherence, RayHit2, RayOptions,
    Threads, ray_aabb2,
};
pub use mesh::{
    AcceptAll, BoxCastHit, BuildOptions, BuildPhases, BuildQuality, ClosestPoint, Hit, HitCandidate, HitControl,
    HitPolicy, MeshBvh, MeshError, MeshStats, SavedBvhError, ShapeCastHit, TriMesh, TriangleTest,
};
pub use scene::{
    Instance, InstanceId, RayTree, Scene, SceneBoxCastHit, SceneClosestPoint, SceneError, SceneHit, SceneHitCandidate,
    SceneHitPolicy, SceneShapeCastHit,
};
pub use wide::{SimdLevel, compiled_simd_level, set_simd_level, simd_level};

/// The README's examples, compiled and run as doctests so that they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
