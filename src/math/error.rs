//! [`InputError`]: geometric input (a box, a ray, a frustum, a displacement) that no query or tree
//! can use. Nothing in the library panics on user data; it returns a typed error.

use std::fmt;

use glam::Vec3;

/// Geometric input that no query or tree can use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputError {
    /// A box with a NaN or infinite coordinate.
    NonFiniteAabb {
        /// The lower corner given.
        min: Vec3,
        /// The upper corner given.
        max: Vec3,
    },
    /// A box with `min > max` on some axis.
    InvertedAabb {
        /// The lower corner given.
        min: Vec3,
        /// The upper corner given.
        max: Vec3,
    },
    /// A ray with a NaN or infinite origin or direction.
    NonFiniteRay {
        /// The origin given.
        origin: Vec3,
        /// The direction given.
        dir: Vec3,
    },
    /// A ray whose `tmin` is not finite, whose `tmax` is NaN, or with `tmin > tmax`.
    InvalidRayRange {
        /// The start given.
        tmin: f32,
        /// The end given.
        tmax: f32,
    },
    /// A displacement or margin that is NaN, infinite, or (for a margin) negative.
    NonFiniteDisplacement,
    /// A frustum plane with a NaN or infinite coefficient.
    NonFinitePlane {
        /// Which of the six planes.
        index: usize,
    },
    /// A point query with a NaN or infinite point, or a NaN or negative maximum distance.
    InvalidPointQuery {
        /// The point given.
        point: Vec3,
        /// The maximum distance given.
        max_distance: f32,
    },
    /// A sphere or capsule to cast with a NaN or infinite point, or a NaN, infinite or negative
    /// radius.
    InvalidShape {
        /// The centre or segment end given (the first that is not finite, or the first).
        point: Vec3,
        /// The radius given.
        radius: f32,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NonFiniteAabb { min, max } => {
                write!(f, "box has a NaN or infinite coordinate (min {min}, max {max})")
            }
            InputError::InvertedAabb { min, max } => {
                write!(f, "box has min > max on some axis (min {min}, max {max})")
            }
            InputError::NonFiniteRay { origin, dir } => {
                write!(f, "ray has a NaN or infinite origin or direction (origin {origin}, dir {dir})")
            }
            InputError::InvalidRayRange { tmin, tmax } => {
                write!(f, "ray range [{tmin}, {tmax}] is not an ordered interval with finite tmin")
            }
            InputError::NonFiniteDisplacement => {
                write!(f, "displacement or margin is NaN, infinite or negative")
            }
            InputError::NonFinitePlane { index } => {
                write!(f, "frustum plane {index} has a NaN or infinite coefficient")
            }
            InputError::InvalidPointQuery { point, max_distance } => {
                write!(f, "point query at {point} within {max_distance}: the point must be finite, the distance >= 0")
            }
            InputError::InvalidShape { point, radius } => {
                write!(f, "shape at {point} with radius {radius}: points must be finite, the radius finite and >= 0")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// A batch or packet query refused because one of its rays is invalid: the first such ray's index
/// and why. The query returns no answers (a batch checks its rays run by run as it traces them,
/// so some may have been traced; a packet or stream checks them all first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchError {
    /// Index of the first invalid ray.
    pub index: usize,
    /// What is wrong with it.
    pub error: InputError,
}

impl BatchError {
    /// The same error for a slice that starts `base` rays into the caller's: for batches checked
    /// run by run.
    pub(crate) fn rebased(self, base: usize) -> BatchError {
        BatchError { index: self.index + base, ..self }
    }
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ray {}: {}", self.index, self.error)
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
