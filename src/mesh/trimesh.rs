//! [`TriMesh`]: an indexed triangle mesh, checked on construction.

use glam::Vec3;

use super::MeshError;

/// An indexed triangle mesh: vertex positions and triangles as three vertex indices.
///
/// Triangles keep their input order: every hit reports the index into [`TriMesh::triangles`].
/// Degenerate (zero-area) triangles are allowed and kept, so indices stay stable; they are never
/// hit.
///
/// ```
/// use slabtree::TriMesh;
/// use glam::Vec3;
/// let mesh = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]])?;
/// assert_eq!(mesh.triangle(0), [Vec3::ZERO, Vec3::X, Vec3::Y]);
/// # Ok::<(), slabtree::MeshError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriMesh {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

impl TriMesh {
    /// A mesh from positions and triangles. Fails if an index is out of range or a position used
    /// by a triangle is NaN or infinite.
    pub fn new(positions: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> Result<TriMesh, MeshError> {
        let n = positions.len();
        for (t, tri) in triangles.iter().enumerate() {
            for &i in tri {
                if i as usize >= n {
                    return Err(MeshError::IndexOutOfRange { triangle: t, index: i, vertices: n });
                }
                if !positions[i as usize].is_finite() {
                    return Err(MeshError::NonFiniteVertex { vertex: i as usize });
                }
            }
        }
        Ok(TriMesh { positions, triangles })
    }

    /// Vertex positions.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Triangles, as indices into [`TriMesh::positions`].
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Number of triangles.
    pub fn len(&self) -> usize {
        self.triangles.len()
    }

    /// `true` when there are no triangles.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// The three corners of triangle `i`.
    #[inline]
    pub fn triangle(&self, i: usize) -> [Vec3; 3] {
        // Written out: `array::map` was not inlined here, a call in every build and query.
        let [a, b, c] = self.triangles[i];
        let p = &self.positions;
        [p[a as usize], p[b as usize], p[c as usize]]
    }

    /// The bounds of all vertices used by triangles, or `None` for an empty mesh.
    pub fn bounds(&self) -> Option<crate::Aabb> {
        if self.is_empty() {
            return None;
        }
        Some(crate::Aabb::from_points(
            self.triangles.iter().flat_map(|t| t.iter().map(|&v| self.positions[v as usize])),
        ))
    }

    /// Replaces the positions (same count), for deforming meshes. Checks finiteness.
    pub fn set_positions(&mut self, positions: Vec<Vec3>) -> Result<(), MeshError> {
        Self::check_positions(self.positions.len(), &positions)?;
        self.positions = positions;
        Ok(())
    }

    /// [`TriMesh::set_positions`] from a slice, copied over the vertices in place: a BVH that
    /// moves its mesh every frame allocates nothing for it.
    pub(crate) fn copy_positions(&mut self, positions: &[Vec3]) -> Result<(), MeshError> {
        Self::check_positions(self.positions.len(), positions)?;
        self.positions.copy_from_slice(positions);
        Ok(())
    }

    /// That `positions` can replace `expected` vertices: as many, and all finite.
    fn check_positions(expected: usize, positions: &[Vec3]) -> Result<(), MeshError> {
        if positions.len() != expected {
            return Err(MeshError::VertexCountMismatch { expected, got: positions.len() });
        }
        if let Some(v) = positions.iter().position(|p| !p.is_finite()) {
            return Err(MeshError::NonFiniteVertex { vertex: v });
        }
        Ok(())
    }
}
