//! The math core shared by 2D and 3D: boxes, rays, planes and the one slab test.

mod aabb;
mod batch;
mod coherence;
mod error;
mod frustum;
mod ray;
mod slab;
mod stats;

pub use aabb::{Aabb, Aabb2};
pub use batch::{BatchOptions, Threads};
pub use coherence::{RayCoherence, RayOptions};
pub use error::{BatchError, InputError};
pub use frustum::{Frustum, Plane};
pub use ray::{Ray, Ray2, RayHit2, validate_rays};
pub use slab::ray_aabb2;
pub(crate) use slab::{FAR_PAD, KeepLanes, max_keep, min_keep, slab_interval};
pub use stats::QueryStats;
