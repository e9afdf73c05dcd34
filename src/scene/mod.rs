//! A two-level scene: instances of shared [`MeshBvh`](crate::MeshBvh)es under affine transforms, kept in a
//! [`Dbvt`](crate::Dbvt) by their world-space boxes. The picking, visibility and collision layer of a
//! renderer or a game, on top of the dynamic tree (top level) and the mesh BVH (bottom level),
//! as Embree's and OptiX's instancing.
//!
//! | file | what |
//! |---|---|
//! | `id.rs` | instance ids |
//! | `instances.rs` | the scene itself: instances, add / remove / moves |
//! | `batch.rs` | many rays at once, one by one or as packets |
//! | `error.rs` | [`SceneError`] |
//! | `query.rs` | pick, occlusion, their batches, frustum and overlap |
//! | `reach.rs` | where an instance's hits may start, and how far past a ray's range the instance walk reaches for them |
//! | `sweep.rs` | the swept box against the triangles of every instance (oriented-box SAT) |
//! | `stream.rs` | ray streams: packets through the instance tree and each instance's mesh |
//!
//! Rays are taken into an instance's space with the inverse transform and *not* renormalised,
//! so a hit's `t` is the same in both spaces and instances clip one another directly.
//!
//! ```
//! use std::sync::Arc;
//! use glam::{Affine3A, Vec3, Vec3A};
//! use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh};
//! use slabtree::scene::Scene;
//! let quad = TriMesh::new(
//!     vec![Vec3::new(-1.0, -1.0, 0.0), Vec3::new(1.0, -1.0, 0.0), Vec3::new(1.0, 1.0, 0.0), Vec3::new(-1.0, 1.0, 0.0)],
//!     vec![[0, 1, 2], [0, 2, 3]],
//! )?;
//! let mesh = Arc::new(MeshBvh::build(&quad, &BuildOptions::default()));
//! let mut scene = Scene::new();
//! let near = scene.add(mesh.clone(), Affine3A::from_translation(Vec3::new(0.0, 0.0, -2.0)), 7, Scene::ALL)?;
//! let _far = scene.add(mesh, Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0)), 8, Scene::ALL)?;
//! let pick = scene.intersect(&Ray::new(Vec3A::ZERO, -Vec3A::Z), Scene::ALL)?.unwrap();
//! assert_eq!((pick.instance, pick.user_id, pick.t), (near, 7, 2.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
mod error;
mod id;
mod instances;
mod policy;
mod proximity;
mod query;
mod reach;
mod stream;
mod sweep;

pub use error::SceneError;
pub use id::InstanceId;
pub(crate) use id::InstanceSlot;
pub(crate) use instances::transform_aabb;
pub use instances::{Instance, RayTree, Scene};
pub use policy::{SceneHitCandidate, SceneHitPolicy};
pub use proximity::SceneClosestPoint;
pub use query::SceneHit;
pub use sweep::{SceneBoxCastHit, SceneShapeCastHit};
