//! 8-wide BVH nodes (Wald, Benthin and Boulos, "Getting Rid of Packets", 2008; Embree's BVH8),
//! shared by the mesh BVH (`mesh`), the dynamic tree's read-only copy (`dbvt::wide`) and the
//! packet paths (`mesh::stream`, `scene::stream`):
//!
//! | file | what |
//! |---|---|
//! | `node.rs` | [`Node8`]: eight child boxes as SoA planes and eight [`ChildRef`]s |
//! | `ray.rs` | [`Ray8`]: one ray (or a swept box's centre ray) against the eight children |
//! | `traverse.rs` | the traversal stacks and the one closest-first loop, generic over the leaf |
//! | `order.rs` | the order of three or more children hit, by a sorting network (AVX2) |
//! | `lanes.rs` | [`Lanes8`], the lanes of one SIMD level, and [`WithLanes`], a kernel over them |
//! | `dispatch.rs` | running a kernel at the level the CPU has: [`dispatch()`], [`EntryPoint`] |
//! | `x86.rs` | the x86-64 levels' lanes and their `#[target_feature]` entry points |
//! | `packet.rs` | ray packets of up to 64 and the one packet walk, generic over the leaf |
//! | `level.rs` | [`SimdLevel`]: the level chosen at run time, and the one compiled |
//!
//! Builders (`mesh::collapse`, `dbvt::wide`) write nodes; the loop in `traverse.rs` reads them and
//! hands each leaf it reaches to a [`LeafVisitor`], which decides what a leaf means (a triangle
//! pack, a proxy) and whether the ray is clipped or stopped.

pub(crate) mod dispatch;
pub(crate) mod lanes;
pub(crate) mod level;
mod node;
#[cfg(target_arch = "x86_64")]
mod order;
pub(crate) mod packet;
pub(crate) mod packet_walk;
mod ray;
mod traverse;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use crate::child::ChildRef;
pub(crate) use dispatch::{EntryPoint, dispatch};
pub(crate) use lanes::{Lanes8, WithLanes};
pub use level::{SimdLevel, compiled_simd_level, set_simd_level, simd_level};
pub(crate) use node::{Entry, Node8, NodeStore};
pub(crate) use ray::{ChildBoxTest, FUSED_PAD, FusedRay8, Ray8, box_margin};
pub(crate) use traverse::{FixedStack, LeafVisitor, closest_first};
