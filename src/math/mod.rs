//! The math core shared by 2D and 3D: boxes, rays, planes and the one slab test.

mod aabb;
mod error;
mod frustum;
mod ray;
mod slab;

pub use aabb::{Aabb, Aabb2};
pub use error::InputError;
pub use frustum::{Frustum, Plane};
pub use ray::{Ray, Ray2, RayHit2};
pub use slab::{FAR_PAD, SlabInterval, SlabRay, max_keep, min_keep, ray_aabb2, slab_interval};
