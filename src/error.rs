//! Typed errors. Nothing in the library panics on user data; it returns one of these.

use std::fmt;

use glam::Vec3;

use crate::dbvt::ProxyId;

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
        }
    }
}

impl std::error::Error for InputError {}

/// An error from a [`Dbvt`](crate::dbvt::Dbvt) operation. The tree is unchanged after any error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DbvtError {
    /// The box, ray, displacement or frustum given is unusable.
    Input(InputError),
    /// The id names a proxy that was removed (its slot may since hold another proxy).
    StaleProxy(ProxyId),
    /// The id was issued by another tree.
    ForeignProxy(ProxyId),
    /// The tree already holds `u32::MAX / 2` proxies or nodes.
    CapacityExceeded,
    /// Boxes were changed with [`Dbvt::update_proxy`](crate::dbvt::Dbvt::update_proxy) and
    /// [`Dbvt::refit`](crate::dbvt::Dbvt::refit) has not run since: queries would miss moved
    /// proxies, so they refuse to run.
    RefitPending,
}

impl fmt::Display for DbvtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbvtError::Input(e) => write!(f, "invalid input: {e}"),
            DbvtError::StaleProxy(id) => write!(f, "proxy {id:?} was removed from this tree"),
            DbvtError::ForeignProxy(id) => write!(f, "proxy {id:?} belongs to another tree"),
            DbvtError::CapacityExceeded => write!(f, "tree capacity exceeded"),
            DbvtError::RefitPending => write!(f, "proxies were updated without a refit; call refit() before querying"),
        }
    }
}

impl std::error::Error for DbvtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DbvtError::Input(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InputError> for DbvtError {
    fn from(e: InputError) -> Self {
        DbvtError::Input(e)
    }
}

/// A triangle mesh that cannot be built.
#[derive(Clone, Debug, PartialEq)]
pub enum MeshError {
    /// A triangle refers to a vertex that does not exist.
    IndexOutOfRange {
        /// The triangle.
        triangle: usize,
        /// The bad index.
        index: u32,
        /// How many vertices there are.
        vertices: usize,
    },
    /// A vertex used by a triangle has a NaN or infinite coordinate.
    NonFiniteVertex {
        /// The vertex.
        vertex: usize,
    },
    /// New positions for a refit have a different count.
    VertexCountMismatch {
        /// Vertices in the mesh.
        expected: usize,
        /// Vertices given.
        got: usize,
    },
}

impl fmt::Display for MeshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MeshError::IndexOutOfRange { triangle, index, vertices } => {
                write!(f, "triangle {triangle} uses vertex {index}, but there are only {vertices} vertices")
            }
            MeshError::NonFiniteVertex { vertex } => write!(f, "vertex {vertex} has a NaN or infinite coordinate"),
            MeshError::VertexCountMismatch { expected, got } => {
                write!(f, "expected {expected} vertex positions, got {got}")
            }
        }
    }
}

impl std::error::Error for MeshError {}
