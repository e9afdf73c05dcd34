//! A broad phase with pair tracking on top of the dynamic tree: which pairs of objects began to
//! overlap and which stopped, frame after frame, as a physics engine needs them.
//!
//! | file | what |
//! |---|---|
//! | `object.rs` | [`ObjectId`], [`BodyKind`], [`Filter`] and what is kept per object |
//! | `pair_set.rs` | the tracked pairs: a pool linked per object, a hash index, and [`PairEvents`] |
//! | `phase.rs` | [`BroadPhase`] and [`BroadPhaseConfig`]: adding, removing, moving and changing objects |
//! | `update.rs` | [`BroadPhase::update_pairs`]: from the move buffer to the events |
//! | `queries.rs` | ray, box-cast, overlap, point and frustum queries over every object |
//! | `save.rs` | saving and restoring with serde (feature `serde`) |
//! | `scratch.rs` | the pair search's buffers, kept between frames |
//! | `error.rs` | [`BroadPhaseError`] |

mod error;
mod object;
mod pair_set;
mod phase;
mod queries;
#[cfg(feature = "serde")]
mod save;
mod scratch;
mod update;

pub use error::BroadPhaseError;
pub use object::{BodyKind, Filter, ObjectId};
pub use pair_set::PairEvents;
pub use phase::{BroadPhase, BroadPhaseConfig};
pub use queries::ObjectHit;
