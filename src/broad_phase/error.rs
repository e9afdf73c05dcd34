//! [`BroadPhaseError`]: why a broad-phase operation was refused. The broad phase is unchanged
//! after any error.

use std::fmt;

use super::ObjectId;
use crate::dbvt::DbvtError;
use crate::math::InputError;

/// An error from a [`BroadPhase`](super::BroadPhase) operation. The broad phase is unchanged
/// after any error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BroadPhaseError {
    /// The box, displacement, ray or frustum given is unusable.
    Input(InputError),
    /// The id names an object that was removed (its slot may since hold another object), or
    /// one this broad phase never issued.
    StaleObject(ObjectId),
    /// The broad phase already holds `u32::MAX / 2` objects, or a tree that many nodes.
    CapacityExceeded,
    /// One of the broad phase's trees refused an operation the broad phase had checked: a bug
    /// in slabtree, to be reported. Nothing was changed.
    Tree(DbvtError),
}

impl fmt::Display for BroadPhaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BroadPhaseError::Input(e) => write!(f, "invalid input: {e}"),
            BroadPhaseError::StaleObject(id) => write!(f, "object {id:?} is not in this broad phase"),
            BroadPhaseError::CapacityExceeded => write!(f, "broad phase capacity exceeded"),
            BroadPhaseError::Tree(e) => write!(f, "internal error, please report it: {e}"),
        }
    }
}

impl std::error::Error for BroadPhaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BroadPhaseError::Input(e) => Some(e),
            BroadPhaseError::Tree(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InputError> for BroadPhaseError {
    fn from(e: InputError) -> Self {
        BroadPhaseError::Input(e)
    }
}

impl From<DbvtError> for BroadPhaseError {
    /// The broad phase checks its ids itself and keeps its trees refitted, so a tree can refuse
    /// only bad input or a full arena; anything else is reported as [`BroadPhaseError::Tree`].
    fn from(e: DbvtError) -> Self {
        match e {
            DbvtError::Input(e) => BroadPhaseError::Input(e),
            DbvtError::Ray(e) => BroadPhaseError::Input(e.error),
            DbvtError::CapacityExceeded => BroadPhaseError::CapacityExceeded,
            DbvtError::StaleProxy(_) | DbvtError::ForeignProxy(_) | DbvtError::RefitPending => {
                debug_assert!(false, "a broad phase's tree refused its own proxy: {e}");
                BroadPhaseError::Tree(e)
            }
        }
    }
}
