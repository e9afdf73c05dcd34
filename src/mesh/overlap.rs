//! The triangles of a mesh that intersect a box or a sphere: the exact triangle test at the
//! leaves, not only the boxes whose bounds overlap.
//!
//! The descent, the rays' loop in its any-order form, keeps every lane whose box overlaps the
//! query's bounds (`f32x8` comparisons). At a
//! leaf, a triangle against a box is the separating-axis test of Akenine-Möller ("Fast 3D
//! Triangle-Box Overlap Testing", 2001): the box's three axes, the triangle's normal, and the nine
//! cross products of box axes and triangle edges; touching counts as overlap. Against a sphere, it
//! is the distance from the centre to the triangle's nearest point (Ericson 5.1.5).

use glam::Vec3;
use wide::f32x8;

use super::bvh::STACK;
use super::closest::closest_on_triangle;
use super::layout::Blocks;
use super::triangle::NO_PRIM;
use super::{MeshBvh, TriMesh};
use crate::math::{Aabb, InputError};
use crate::wide::{ChildBoxTest, ChildRef, FixedStack, LeafVisitor, Node8, closest_first};

/// Akenine-Möller's separating-axis test: whether triangle `[a, b, c]` and the box with centre
/// `centre` and half-extents `half` share a point (touching counts).
pub(crate) fn triangle_overlaps_box(centre: Vec3, half: Vec3, [a, b, c]: [Vec3; 3]) -> bool {
    let (v0, v1, v2) = (a - centre, b - centre, c - centre);
    // The box's axes: the triangle's bounds against the box's.
    let lo = v0.min(v1).min(v2);
    let hi = v0.max(v1).max(v2);
    if lo.cmpgt(half).any() || hi.cmplt(-half).any() {
        return false;
    }
    let edges = [v1 - v0, v2 - v1, v0 - v2];
    // The nine cross products of a box axis and an edge.
    for e in edges {
        for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
            let n = axis.cross(e);
            let (p0, p1, p2) = (n.dot(v0), n.dot(v1), n.dot(v2));
            let r = half.dot(n.abs());
            if p0.min(p1).min(p2) > r || p0.max(p1).max(p2) < -r {
                return false;
            }
        }
    }
    // The triangle's plane.
    let n = edges[0].cross(edges[1]);
    let d = n.dot(v0);
    d.abs() <= half.dot(n.abs())
}

impl MeshBvh {
    /// Appends to `out` the index of every triangle that intersects box `b` (touching counts),
    /// each once, in no particular order. Refuses a NaN, infinite or inverted box.
    ///
    /// ```
    /// use glam::{Vec3, Vec3A};
    /// use slabtree::{Aabb, BuildOptions, MeshBvh, TriMesh};
    /// let mesh = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let mut found = Vec::new();
    /// // The box overlaps the triangle's bounds, but not the triangle (it sits past the hypotenuse).
    /// bvh.triangles_in_box(&Aabb::new(Vec3A::new(0.8, 0.8, -1.0), Vec3A::new(1.0, 1.0, 1.0)), &mut found)?;
    /// assert!(found.is_empty());
    /// bvh.triangles_in_box(&Aabb::new(Vec3A::new(0.2, 0.2, -1.0), Vec3A::new(0.3, 0.3, 1.0)), &mut found)?;
    /// assert_eq!(found, [0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn triangles_in_box(&self, b: &Aabb, out: &mut Vec<u32>) -> Result<(), InputError> {
        b.validate()?;
        let (centre, half) = (Vec3::from(b.center()), Vec3::from(b.half_extents()));
        self.overlapping(b, |tri| triangle_overlaps_box(centre, half, tri), |prim| out.push(prim));
        Ok(())
    }

    /// Appends to `out` the index of every triangle within `radius` of `centre` (touching
    /// counts), each once, in no particular order. Refuses a non-finite centre, or a NaN,
    /// infinite or negative radius.
    pub fn triangles_in_sphere(&self, centre: Vec3, radius: f32, out: &mut Vec<u32>) -> Result<(), InputError> {
        if !centre.is_finite() || !radius.is_finite() || radius < 0.0 {
            return Err(InputError::InvalidPointQuery { point: centre, max_distance: radius });
        }
        self.overlapping(
            &sphere_bounds(centre, radius),
            |tri| sphere_touches(centre, radius, tri),
            |prim| out.push(prim),
        );
        Ok(())
    }

    /// Hands `found` every triangle in a leaf whose box overlaps `bounds` for which `hit` says
    /// yes, once: the rays' traversal loop in its any-order form, with a box as the node test
    /// and a visitor that never ends the walk. (The scene's queries pass an instance's triangles
    /// to `hit` placed in the world.) A triangle in several leaves (spatial splits) is handed
    /// on after the walk, its repeats dropped.
    pub(crate) fn overlapping(&self, bounds: &Aabb, hit: impl Fn([Vec3; 3]) -> bool, mut found: impl FnMut(u32)) {
        if self.mesh.is_empty() || !self.bounds.overlaps(bounds) {
            return;
        }
        let Some(shared) = &self.shared else {
            return self.overlapping_once(bounds, hit, found);
        };
        let mut later = Vec::new();
        self.overlapping_once(bounds, hit, |prim| {
            if shared.contains(prim as usize) {
                later.push(prim);
            } else {
                found(prim);
            }
        });
        later.sort_unstable();
        later.dedup();
        later.into_iter().for_each(found);
    }

    /// [`MeshBvh::overlapping`] for a triangle in one leaf: each leaf's triangles as the walk
    /// meets them.
    fn overlapping_once(&self, bounds: &Aabb, hit: impl Fn([Vec3; 3]) -> bool, found: impl FnMut(u32)) {
        let lanes = BoxLanes {
            lo: [0, 1, 2].map(|a| f32x8::splat(bounds.min[a])),
            hi: [0, 1, 2].map(|a| f32x8::splat(bounds.max[a])),
        };
        let mut visitor = Collect { blocks: &self.blocks, mesh: &self.mesh, hit, found };
        let mut stack = FixedStack::<_, STACK>::new();
        closest_first::<true, false, _, _, _, _>(
            &self.blocks,
            ChildRef::node(0),
            &lanes,
            0.0,
            f32::INFINITY,
            &mut stack,
            &mut visitor,
        );
    }
}

/// A box as the traversal loop's node test: the lanes whose boxes overlap it (touching counts,
/// as in `Aabb::overlaps`; an empty lane, +inf to -inf, never does). There are no entry
/// distances: the any-order walk keeps none.
struct BoxLanes {
    lo: [f32x8; 3],
    hi: [f32x8; 3],
}

impl ChildBoxTest for BoxLanes {
    type Lanes = f32x8;

    #[inline(always)]
    fn test<const INFLATE: bool>(&self, node: &Node8, _: f32) -> (u32, f32x8) {
        let mut keep = f32x8::splat(0.0).simd_le(f32x8::splat(0.0));
        for a in 0..3 {
            let (nlo, nhi) = (f32x8::new(node.bounds[0][a]), f32x8::new(node.bounds[1][a]));
            keep &= nlo.simd_le(self.hi[a]) & self.lo[a].simd_le(nhi);
        }
        (keep.to_bitmask(), f32x8::splat(0.0))
    }
}

/// The leaves of an overlap walk: each pack's triangles that `hit` accepts go to `found`.
struct Collect<'a, F, G> {
    blocks: &'a Blocks,
    mesh: &'a TriMesh,
    hit: F,
    found: G,
}

impl<F: Fn([Vec3; 3]) -> bool, G: FnMut(u32)> LeafVisitor for Collect<'_, F, G> {
    fn visit(&mut self, leaf: ChildRef, _: f32, _: &mut f32) -> bool {
        let pack = self.blocks.pack(leaf.index()).expect("a leaf reference names a pack");
        for &prim in pack.prim.iter().filter(|&&p| p != NO_PRIM) {
            if (self.hit)(self.mesh.triangle(prim as usize)) {
                (self.found)(prim);
            }
        }
        true
    }
}

/// The box around a sphere.
pub(crate) fn sphere_bounds(centre: Vec3, radius: f32) -> Aabb {
    Aabb::from_center_half_extents(glam::Vec3A::from(centre), glam::Vec3A::splat(radius))
}

/// Whether triangle `tri` has a point within `radius` of `centre` (touching counts).
pub(crate) fn sphere_touches(centre: Vec3, radius: f32, tri: [Vec3; 3]) -> bool {
    (closest_on_triangle(centre, tri).0 - centre).length_squared() <= radius * radius
}
