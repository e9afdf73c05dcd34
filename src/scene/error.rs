//! The scene's typed errors.

use std::fmt;

use super::InstanceId;
use crate::dbvt::DbvtError;
use crate::math::InputError;

/// An error from a [`Scene`](super::Scene) operation. The scene is unchanged after any error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SceneError {
    /// The id names an instance that was removed (its slot may since hold another instance).
    StaleInstance(InstanceId),
    /// The id was issued by another scene.
    ForeignInstance(InstanceId),
    /// A transform with a NaN or infinite coefficient, or a singular linear part (it has no
    /// inverse, so rays cannot be taken into instance space).
    InvalidTransform,
    /// A box, ray, displacement or frustum that no query can use.
    Input(InputError),
    /// The instance tree refused the operation (capacity).
    Tree(DbvtError),
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SceneError::StaleInstance(id) => write!(f, "instance {id:?} was removed from this scene"),
            SceneError::ForeignInstance(id) => write!(f, "instance {id:?} belongs to another scene"),
            SceneError::InvalidTransform => {
                write!(f, "transform is not finite or not invertible")
            }
            SceneError::Input(e) => write!(f, "invalid input: {e}"),
            SceneError::Tree(e) => write!(f, "instance tree: {e}"),
        }
    }
}

impl std::error::Error for SceneError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SceneError::Input(e) => Some(e),
            SceneError::Tree(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InputError> for SceneError {
    fn from(e: InputError) -> Self {
        SceneError::Input(e)
    }
}

impl From<DbvtError> for SceneError {
    fn from(e: DbvtError) -> Self {
        match e {
            DbvtError::Input(i) => SceneError::Input(i),
            e => SceneError::Tree(e),
        }
    }
}
