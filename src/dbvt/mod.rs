//! A dynamic AABB tree in the style of Bullet's `btDbvt` and Box2D's `b2DynamicTree`.
//!
//! Proxies (a box plus user data) live in the leaves of a binary tree whose internal nodes store
//! the bounds of both children in one 64-byte line (see `node.rs`). One file per concern:
//!
//! | file | what |
//! |---|---|
//! | `node.rs` | node layout and the SIMD tests of a node's two children |
//! | `arena.rs` | node and proxy allocation, the pre-order layout, rebuild reset, SAH cost |
//! | `insert.rs` | SAH sibling search, insertion, and the rotations on the way up |
//! | `remove.rs` | removal |
//! | `update.rs` | moves with fat margins, enlargement and refit |
//! | `optimize.rs` | incremental optimisation: in-place treelet rebuilds and top rebuilds |
//! | `rebuild.rs` | full binned-SAH rebuild and bulk build |
//! | `traverse.rs` | the one traversal loop, its workspace and statistics |
//! | `queries.rs` | ray, box-cast, overlap, point and frustum queries and their policies |
//! | `scan.rs` | frustum culling by a linear scan of the leaf boxes, for views that see most of the tree |
//! | `pairs.rs` | self pairs and tree-versus-tree pairs |
//! | `tree.rs` | `Dbvt` itself and `DbvtConfig` |
//! | `proxy.rs` | `ProxyId` and what the tree keeps per proxy |
//! | `validate.rs` | `validate()` and `stats()` |
//! | `wide/mod.rs` | an 8-wide read-only copy of the tree (used by the scene): collapse, refit, and the refit's mirrored writes |
//! | `wide/query.rs` | ray casts and frustum culling over that copy |

mod arena;
mod batch;
mod error;
mod insert;
mod nearest;
pub(crate) mod node;
mod optimize;
mod pairs;
mod proxy;
mod queries;
mod rebuild;
mod remove;
mod scan;
mod traverse;
mod tree;
mod update;
mod validate;
mod wide;

pub use batch::RayBatchPolicy;
pub use error::DbvtError;

pub use crate::math::QueryStats;
pub use nearest::NearestProxy;
pub use pairs::PairControl;
pub use proxy::ProxyId;
use proxy::{Proxy, Slot};
pub use queries::{LeafControl, LeafPolicy, ProxyHit, RayControl, RayLeaf, RayPolicy};
pub use traverse::{NodeTest, QueryWorkspace};
pub use tree::{Dbvt, DbvtConfig};
pub use validate::{TreeStats, ValidationError};
pub(crate) use wide::WideView;
pub use wide::{WideDbvt, WideStorage};
