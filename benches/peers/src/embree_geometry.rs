//! The Embree 3 triangle geometry that both mesh peer programs (`mesh_vs_embree`,
//! `stream_vs_embree`) build from a slabtree `TriMesh`.

use cgmath::{Vector3, Vector4};
use embree::{Device, Geometry, TriangleMesh};
use slabtree::TriMesh;

/// The mesh as one committed triangle geometry, its vertex and index buffers in the mesh's
/// order, so that Embree's `primID` is the mesh's triangle index.
pub fn triangle_geometry<'d>(device: &'d Device, mesh: &TriMesh) -> Geometry<'d> {
    let mut tm = TriangleMesh::unanimated(device, mesh.triangles().len(), mesh.positions().len());
    {
        let mut verts = tm.vertex_buffer.map();
        for (i, p) in mesh.positions().iter().enumerate() {
            verts[i] = Vector4::new(p.x, p.y, p.z, 0.0);
        }
        let mut idx = tm.index_buffer.map();
        for (i, t) in mesh.triangles().iter().enumerate() {
            idx[i] = Vector3::new(t[0], t[1], t[2]);
        }
    }
    let mut geometry = Geometry::Triangle(tm);
    geometry.commit();
    geometry
}
