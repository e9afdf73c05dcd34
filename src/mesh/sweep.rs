//! Swept-box queries: the first contact of an axis-aligned box (or, for the scene, an instance's
//! view of one: an oriented box) moving by a displacement with a mesh's triangles.
//!
//! The test is exact, by the separating-axis theorem over the sweep interval (Ericson, *Real-Time
//! Collision Detection*, 5.5.8, "Moving objects"; Eberly, "Intersection of Objects with Linear
//! and Angular Velocities"). A translating box and a triangle are disjoint at time t exactly
//! when one of 13 axes separates them: the box's 3 face normals, the triangle's normal, and the 9
//! cross products of box axes with triangle edges. On each axis the projections overlap during one
//! interval of t; the first contact is the latest interval start, if it precedes the earliest
//! interval end.
//!
//! The walk is the rays' own ([`MeshBvh::traverse`]) with every node's boxes grown by the
//! box's half-extents (their Minkowski sum with the box), nearest leaf first and clipped at each
//! contact; each triangle of a leaf it reaches is tested exactly ([`SweepLeaf`]). The shape casts
//! (`super::cast`) and the scene's sweeps (`crate::scene::sweep`) take the same walk.

use glam::{Vec3, Vec3A};

use super::TriMesh;
use super::bvh::MeshBvh;
use super::leaf::LeafTest;
use super::triangle::{NO_PRIM, TriPack};
use crate::Aabb;
use crate::math::{InputError, QueryStats, Ray};
use crate::wide::{Lanes8, WithLanes, dispatch};

/// The first contact of a swept box with a mesh.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxCastHit {
    /// Fraction of the displacement at first contact, in `[0, 1]`; 0 when the box starts in
    /// contact.
    pub t: f32,
    /// The triangle touched, in input order.
    pub triangle: u32,
    /// Unit contact normal, pointing from the triangle towards the box (against the motion).
    pub normal: Vec3,
}

/// The interval of `t` during which a swept box and a triangle overlap on every axis tested so
/// far, with the axis that set its start: the contact normal, unnormalised, pointing from the
/// triangle towards the box.
struct SweepInterval {
    enter: f32,
    exit: f32,
    normal: Vec3,
}

impl SweepInterval {
    const ALL: SweepInterval = SweepInterval { enter: f32::NEG_INFINITY, exit: f32::INFINITY, normal: Vec3::ZERO };

    /// Narrows the interval by axis `l`, on which the box centred at `center` has radius `r` and
    /// moves by `l·d` per unit of `t`. Returns `false` when `l` separates box and triangle for
    /// every `t` in `[0, tmax]`.
    #[inline(always)]
    fn clip(&mut self, l: Vec3, tri: &[Vec3; 3], center: Vec3, r: f32, d: Vec3, tmax: f32) -> bool {
        let (pa, pb, pc) = (l.dot(tri[0]), l.dot(tri[1]), l.dot(tri[2]));
        let tri_min = pa.min(pb).min(pc);
        let tri_max = pa.max(pb).max(pc);
        let p = l.dot(center);
        let s = l.dot(d);
        // Overlap on this axis while p + t·s - r <= tri_max and p + t·s + r >= tri_min.
        let (lo, hi) = (tri_min - p - r, tri_max - p + r);
        if s == 0.0 {
            return lo <= 0.0 && hi >= 0.0;
        }
        let (t0, t1) = if s > 0.0 { (lo / s, hi / s) } else { (hi / s, lo / s) };
        if t0 > self.enter {
            self.enter = t0;
            // The box meets this axis' face moving along s: the normal opposes the motion.
            self.normal = if s > 0.0 { -l } else { l };
        }
        self.exit = self.exit.min(t1);
        !(self.enter > self.exit || self.enter > tmax || self.exit < 0.0)
    }
}

/// The 13 separating axes of a box with edge directions `u` and a triangle with edges `edges`:
/// the box's face normals, the triangle's normal and the 9 edge-edge cross products.
fn sat_axes(u: [Vec3; 3], edges: [Vec3; 3]) -> [Vec3; 13] {
    let mut axes = [Vec3::ZERO; 13];
    axes[0] = u[1].cross(u[2]);
    axes[1] = u[2].cross(u[0]);
    axes[2] = u[0].cross(u[1]);
    axes[3] = edges[0].cross(edges[1]);
    let mut k = 4;
    for e in edges {
        for ui in u {
            axes[k] = e.cross(ui);
            k += 1;
        }
    }
    axes
}

/// Squared length scale of a triangle, to recognise degenerate axes: an edge parallel to a box
/// axis gives a zero cross product (units of length), a degenerate triangle a zero normal (units
/// of area). Such axes separate nothing the other axes do not, so they are skipped.
fn edge_scale(edges: &[Vec3; 3]) -> f32 {
    (edges[0].length_squared() + edges[1].length_squared() + edges[2].length_squared()).max(f32::MIN_POSITIVE)
}

/// First contact of box (`center`, `half`) moving by `d` during `t` in `[0, tmax]` with the
/// triangle, as `(t, normal)`.
pub(crate) fn sweep_box_triangle(center: Vec3, half: Vec3, d: Vec3, tri: &[Vec3; 3], tmax: f32) -> Option<(f32, Vec3)> {
    let [a, b, c] = *tri;
    let edges = [b - a, c - b, a - c];
    let scale = edge_scale(&edges);
    let mut interval = SweepInterval::ALL;
    for (k, l) in sat_axes([Vec3::X, Vec3::Y, Vec3::Z], edges).into_iter().enumerate() {
        let degenerate = match k {
            0..=2 => false,
            3 => l.length_squared() <= 1e-12 * scale * scale,
            _ => l.length_squared() <= 1e-12 * scale,
        };
        if degenerate {
            continue;
        }
        let r = half.x * l.x.abs() + half.y * l.y.abs() + half.z * l.z.abs();
        if !interval.clip(l, tri, center, r, d, tmax) {
            return None;
        }
    }
    // In contact at the start (no axis had a positive entry): t = 0.
    let t = if interval.enter <= 0.0 { 0.0 } else { interval.enter };
    Some((t, interval.normal.normalize_or_zero()))
}

/// A box in an instance's space (see `scene::sweep`): centre, edge directions (unit in world
/// space, not in instance space) and half-extents along them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Obb {
    pub center: Vec3,
    pub axes: [Vec3; 3],
    pub half: Vec3,
}

/// First contact of `obb` moving by `d` during `t` in `[0, tmax]` with the triangle, as
/// `(t, normal)`; the normal is a separating-axis direction in the box's space, unnormalised,
/// pointing from the triangle towards the box.
pub(crate) fn sweep_obb_triangle(obb: &Obb, d: Vec3, tri: &[Vec3; 3], tmax: f32) -> Option<(f32, Vec3)> {
    let [a, b, c] = *tri;
    let edges = [b - a, c - b, a - c];
    let u = obb.axes;
    let scale = edge_scale(&edges);
    let ulen = [u[0].length_squared(), u[1].length_squared(), u[2].length_squared()];
    let mut interval = SweepInterval::ALL;
    for (k, l) in sat_axes(u, edges).into_iter().enumerate() {
        // Parallel edges give (near) zero crosses, a degenerate triangle a zero normal: such axes
        // separate nothing the others do not.
        let degenerate = match k {
            0..=2 => l.length_squared() == 0.0,
            3 => l.length_squared() <= 1e-12 * scale * scale,
            _ => l.length_squared() <= 1e-12 * scale * ulen[(k - 4) % 3],
        };
        if degenerate {
            continue;
        }
        let r = obb.half.x * l.dot(u[0]).abs() + obb.half.y * l.dot(u[1]).abs() + obb.half.z * l.dot(u[2]).abs();
        if !interval.clip(l, tri, obb.center, r, d, tmax) {
            return None;
        }
    }
    Some((interval.enter.max(0.0), interval.normal))
}

/// The box's centre, half-extents and the sweep as f32 vectors.
pub(crate) fn box_parts(aabb: &Aabb) -> (Vec3A, Vec3A) {
    (aabb.center(), aabb.half_extents())
}

impl MeshBvh {
    /// First contact of box `aabb` moving by `displacement` (`t` in `[0, 1]`) with the mesh's
    /// triangles: exact, by separating axes over the sweep (see [`BoxCastHit`]). Invalid input
    /// (NaN, infinite) touches nothing.
    ///
    /// ```
    /// use slabtree::{Aabb, BuildOptions, MeshBvh, TriMesh};
    /// use glam::{Vec3, Vec3A};
    /// // A floor triangle at y = 0 and a unit box falling onto it from y = 2.
    /// let mesh = TriMesh::new(vec![Vec3::new(-5.0, 0.0, -5.0), Vec3::new(5.0, 0.0, -5.0), Vec3::new(0.0, 0.0, 5.0)], vec![[0, 1, 2]])?;
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let hit = bvh.cast_box(&Aabb::from_center_half_extents(Vec3A::new(0.0, 2.0, 0.0), Vec3A::splat(0.5)), Vec3A::new(0.0, -4.0, 0.0))?.unwrap();
    /// assert_eq!(hit.t, 0.375); // the box bottom (y = 1.5) reaches y = 0 after 1.5 of 4 units
    /// assert!(hit.normal.abs_diff_eq(Vec3::Y, 1e-6));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cast_box(&self, aabb: &Aabb, displacement: Vec3A) -> Result<Option<BoxCastHit>, InputError> {
        aabb.validate()?;
        if !displacement.is_finite() {
            return Err(InputError::NonFiniteDisplacement);
        }
        let (center, half) = box_parts(aabb);
        // A finite box can still have infinite half-extents (min -3e38, max 3e38), and infinite
        // offsets turn empty child slots' planes into NaN: such a box sweeps nothing.
        if !(center.is_finite() && half.is_finite()) {
            return Ok(None);
        }
        let ray = Ray::new(center, displacement).with_range(0.0, 1.0);
        let (c, h, d) = (center.into(), half.into(), displacement.into());
        let hit = self.sweep_with(&ray, half, |tri: &[Vec3; 3], limit| sweep_box_triangle(c, h, d, tri, limit));
        Ok(hit.map(|(triangle, t, normal)| BoxCastHit { t, triangle, normal }))
    }

    /// First contact, with `t` in `[0, limit]`, of oriented box `obb` moving by `d` (an
    /// instance's view of a world box, see `scene::sweep`), as `(triangle, t, normal)` with the
    /// normal unnormalised. The BVH is box-cast with `ext`, half-extents of a box containing
    /// `obb` (whose sweep then contains the oriented box's), nearest leaf first and clipped at
    /// each contact, as [`MeshBvh::cast_box`]; each triangle is tested exactly.
    pub(crate) fn cast_obb(&self, obb: &Obb, ext: Vec3A, d: Vec3A, limit: f32) -> Option<(u32, f32, Vec3)> {
        // Infinite offsets would turn empty child slots' planes into NaN; f32::MAX keeps the
        // inflated planes conservative (at worst infinite) and NaN-free.
        let ext = ext.min(Vec3A::splat(f32::MAX));
        let ray = Ray::new(Vec3A::from(obb.center), d).with_range(0.0, limit);
        // An instance's view of a valid world box can still overflow to infinity: it touches
        // nothing.
        if ray.validate().is_err() {
            return None;
        }
        let dv: Vec3 = d.into();
        self.sweep_with(&ray, ext, |tri: &[Vec3; 3], lim| sweep_obb_triangle(obb, dv, tri, lim))
    }

    /// First contact of a swept shape: the BVH box-cast along `ray` (`t` in its range) with a box
    /// of half-extents `ext` around the shape, nearest leaf first and clipped at each contact,
    /// and each triangle tested by `hit(triangle, limit)`, which gives the contact's `t` and its
    /// payload. `ray` must be valid and `ext` finite.
    pub(crate) fn sweep_with<H: Copy>(
        &self,
        ray: &Ray,
        ext: Vec3A,
        hit: impl Fn(&[Vec3; 3], f32) -> Option<(f32, H)>,
    ) -> Option<(u32, f32, H)> {
        let mut leaf = SweepLeaf::new(&self.mesh, ray, hit);
        let (found, _) = dispatch(SweepWalk { bvh: self, ray, ext, leaf: &mut leaf });
        found.map(|(triangle, (t, h))| (triangle, t, h))
    }
}

/// A swept shape against triangles, one at a time, by its exact test `hit(tri, limit)`, which
/// gives the time of first contact and what else the query reports: the axis-aligned box's
/// ([`MeshBvh::cast_box`]), an instance's oriented box's ([`MeshBvh::cast_obb`]), a sphere's or
/// a capsule's (`super::cast`).
///
/// Of contacts at one `t` in different leaves (a box landing on a flat floor of many triangles),
/// the lower triangle index is kept, whichever the walk meets first: the SIMD levels order
/// children differently (`TriangleLeaf` keeps the same rule for rays). So that every such leaf
/// is reached at every level, the walk culls boxes with its bound raised by the rounding band
/// ([`raised_tmax`](crate::wide::packet::raised_tmax)), as `TriangleLeaf`'s does: a node's
/// rounded entry distance can lie just past a contact's `t`, and a swept box far from the origin
/// makes many contacts at one rounded `t`. The contact's range itself is `end_t`, kept here.
struct SweepLeaf<'m, F> {
    mesh: &'m TriMesh,
    hit: F,
    /// Where the sweep ends: its range's end, then the nearest contact's `t`.
    end_t: f32,
    /// The triangle of the nearest contact so far (`u32::MAX` before the first).
    end_prim: u32,
}

impl<'m, F> SweepLeaf<'m, F> {
    fn new(mesh: &'m TriMesh, ray: &Ray, hit: F) -> Self {
        SweepLeaf { mesh, hit, end_t: ray.tmax, end_prim: u32::MAX }
    }
}

impl<H: Copy, F: Fn(&[Vec3; 3], f32) -> Option<(f32, H)>> LeafTest for SweepLeaf<'_, F> {
    type Hit = (f32, H);
    fn test<const ANY: bool>(&mut self, _: u32, p: &TriPack, tmax: f32) -> Option<(u32, f32, (f32, H))> {
        let mut best: Option<(u32, f32, (f32, H))> = None;
        for lane in 0..4 {
            let prim = p.prim[lane];
            if prim == NO_PRIM {
                continue;
            }
            let limit = best.map_or(tmax, |b| b.1);
            let tri = self.mesh.triangle(prim as usize);
            if let Some((t, n)) = (self.hit)(&tri, limit)
                && best.is_none_or(|b| t < b.1 || (t == b.1 && prim < b.0))
            {
                best = Some((prim, t, (t, n)));
            }
        }
        let (prim, t, _) = best?;
        if t > self.end_t || (t == self.end_t && prim >= self.end_prim) {
            return None;
        }
        (self.end_t, self.end_prim) = (t, prim);
        best
    }

    #[inline(always)]
    fn walk_tmax(&self, t: f32) -> f32 {
        crate::wide::packet::raised_tmax(t)
    }
}

/// A swept box's walk (the box cast of [`MeshBvh::cast_box`] and the shape casts), as a kernel
/// for [`dispatch()`].
struct SweepWalk<'a, L> {
    bvh: &'a MeshBvh,
    ray: &'a Ray,
    ext: Vec3A,
    leaf: &'a mut L,
}

impl<L: LeafTest> WithLanes for SweepWalk<'_, L> {
    type Output = (Option<(u32, L::Hit)>, QueryStats);

    #[inline(always)]
    fn run<V: Lanes8>(self) -> Self::Output {
        self.bvh.traverse::<V, false, true, false, _>(self.ray, self.ext, self.leaf)
    }
}
