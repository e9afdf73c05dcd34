//! [`MeshError`]: a triangle mesh that cannot be built.

use std::fmt;

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
    /// A BVH built with spatial splits ([`BuildQuality::High`](crate::BuildQuality::High)) cannot
    /// be refitted: its boxes hold parts of triangles, cut at planes that moved vertices would
    /// cross. Rebuild it, or build a deforming mesh with `Low` or `Medium`.
    RefitSpatialSplits,
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
            MeshError::RefitSpatialSplits => {
                write!(f, "a BVH built with spatial splits (high quality) cannot be refitted; rebuild it")
            }
        }
    }
}

impl std::error::Error for MeshError {}
