//! 8-wide BVH nodes (Wald, Benthin and Boulos, "Getting Rid of Packets", 2008; Embree's BVH8),
//! shared by the mesh BVH (`mesh`), the dynamic tree's read-only copy (`dbvt::wide`) and the
//! packet paths (`mesh::packet`, `mesh::stream`):
//!
//! | file | what |
//! |---|---|
//! | `node.rs` | [`Node8`]: eight child boxes as SoA planes and eight [`ChildRef`]s |
//! | `ray.rs` | [`Ray8`]: one ray (or a swept box's centre ray) against the eight children |
//! | `traverse.rs` | the traversal stacks and the one closest-first loop, generic over the leaf |
//! | `order.rs` | the order of three or more children hit, by a sorting network (AVX2) |
//! | `packet.rs` | ray packets of up to 64 and the one packet walk, generic over the leaf |
//! | `level.rs` | [`SimdLevel`]: which SIMD instructions the kernels were compiled for |
//!
//! Builders (`mesh::collapse`, `dbvt::wide`) write nodes; the loop in `traverse.rs` reads them and
//! hands each leaf it reaches to a [`LeafVisitor`], which decides what a leaf means (a triangle
//! pack, a proxy) and whether the ray is clipped or stopped.

mod level;
mod node;
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod order;
pub(crate) mod packet;
mod ray;
mod traverse;

pub(crate) use crate::child::ChildRef;
pub use level::{SimdLevel, simd_level};
pub(crate) use node::{Node8, NodeStore};
pub(crate) use ray::{FusedRay8, NodeTest, Ray8};
pub(crate) use traverse::{Entry, FixedStack, LeafVisitor, closest_first};
