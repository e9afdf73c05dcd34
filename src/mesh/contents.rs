//! What the mesh determines in a BVH's blocks: each pack's triangle rows and each node's lane
//! boxes. A build's collapse writes them from the triangles ([`MeshRows`]); a refit writes them
//! again over the same tree, and so does reading a saved BVH, which stores the tree without them
//! ([`write_contents`]).

use glam::Vec3;

use super::TriMesh;
use super::layout::{Blocks, block_at};
use super::triangle::{NO_PRIM, PackRows, TriPack};
use crate::math::Aabb;
use crate::wide::Node8;

/// Writes what the mesh determines in `blocks`: every pack's triangle rows (`rows`), then every
/// node's lane boxes, from its children's, exactly as a build writes them (min and max are exact,
/// so the order does not matter). `nodes` lists the nodes with children before parents, `packs`
/// the packs; both come from a walk of the tree ([`Blocks::walk`], or a saved BVH's checked
/// walk). Used by `MeshBvh::refit` and by reading a saved BVH (`super::saved`).
pub(super) fn write_contents(mesh: &TriMesh, blocks: &mut Blocks, rows: PackRows, nodes: &[u32], packs: &[u32]) {
    // The packs, and their boxes for the nodes, on rayon's threads, then written back in place.
    let built = {
        let blocks = &*blocks;
        crate::par::map(packs, 1024, |&at| {
            let prims = blocks.pack(at).expect("`packs` lists packs").prim;
            let (mut p, mut b) = (TriPack::EMPTY, Aabb::EMPTY);
            for (lane, &prim) in prims.iter().enumerate().filter(|(_, p)| **p != NO_PRIM) {
                let tri = mesh.triangle(prim as usize);
                p.set(lane, prim, &rows.rows(tri));
                b = b.union(&Aabb::from_points(tri));
            }
            (p, b)
        })
    };
    // Each pack's box, found through its first block.
    let mut box_of = vec![0u32; if packs.is_empty() { 0 } else { blocks.len() }];
    for (i, (&at, (p, _))) in packs.iter().zip(&built).enumerate() {
        *blocks.pack_mut(at) = *p;
        box_of[block_at(at)] = i as u32;
    }
    for &at in nodes {
        let old = *blocks.node(at);
        let mut n = Node8::EMPTY;
        for (lane, &c) in old.child.iter().enumerate().filter(|(_, c)| !c.is_empty()) {
            let b = if c.is_leaf() {
                built[box_of[block_at(c.index())] as usize].1
            } else {
                blocks.node(c.index()).union()
            };
            n.set(lane, c, &b);
        }
        *blocks.node_mut(at) = n;
    }
}

/// A mesh's triangles as the collapse reads them into packs.
pub(super) struct MeshRows<'m> {
    pub(super) mesh: &'m TriMesh,
    pub(super) rows: PackRows,
}

impl super::collapse::TriangleRows for MeshRows<'_> {
    #[inline]
    fn rows_and_bounds(&self, i: u32) -> ([Vec3; 3], Aabb) {
        let corners = self.mesh.triangle(i as usize);
        (self.rows.rows(corners), Aabb::from_points(corners))
    }

    /// The triangle's vertex indices.
    #[inline]
    fn prefetch(&self, i: u32) {
        crate::hint::prefetch(self.mesh.triangles().as_ptr().wrapping_add(i as usize));
    }

    /// The triangle's corners, by the indices `prefetch` asked for.
    #[inline]
    fn prefetch_rest(&self, i: u32) {
        let p = self.mesh.positions().as_ptr();
        for v in self.mesh.triangles()[i as usize] {
            crate::hint::prefetch(p.wrapping_add(v as usize));
        }
    }
}
