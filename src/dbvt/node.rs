//! Node layout of the dynamic tree, and the SIMD tests of a node's two children.
//!
//! An internal node stores the bounds of its *two children* side by side, not its own (the
//! sibling-pair layout of parry's `Bvh` and of Box2D v3 after PR #1104). Descending into a node
//! therefore tests both children with one set of `f32x4` operations, and a leaf's box is read from
//! its parent's line without touching the proxy array. Bounds are SoA planes indexed
//! `[side][axis][child]`, side 0 = min, 1 = max, so a ray's sign bit picks the near plane pair of an
//! axis directly, as in Williams et al. 2005.

use glam::Vec3A;
use wide::f32x4;

use crate::math::{Aabb, FAR_PAD, max_keep, min_keep};

pub(crate) use crate::child::{ChildRef, MAX_INDEX};

/// The null index: no parent, end of a free list.
pub(crate) const NULL: u32 = u32::MAX;
/// `slot` value marking a node that sits on the free list.
pub(crate) const FREE_SLOT: u8 = u8::MAX;

/// One internal node: the bounds of both children, their references and the links. 64 bytes, one
/// cache line.
///
/// No height is stored (Box2D keeps one per node): nothing here decides by it, and keeping it
/// exact cost every walk up a read of both children's nodes at each step. [`super::Dbvt::stats`]
/// measures the height when asked.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
pub(crate) struct Node {
    /// `planes[side][axis][child]`: side 0 is the min corner, 1 the max corner.
    pub planes: [[[f32; 2]; 3]; 2],
    pub child: [ChildRef; 2],
    /// Parent node, or [`NULL`] at the root. On the free list: the next free node.
    pub parent: u32,
    /// Which child slot of the parent holds this node; [`FREE_SLOT`] on the free list.
    pub slot: u8,
    /// A child's box stored here changed, and this node's own box (stored in its parent) has
    /// not been recomputed since: the next [`super::Dbvt::refit`] must visit it. Every node
    /// without the mark stores its exact union in its parent (`Dbvt::validate` checks this), so
    /// a refit after moving 10% of the proxies skips the subtrees where nothing moved.
    pub stale: bool,
}

const _: () = assert!(std::mem::size_of::<Node>() == 64);
const _: () = assert!(std::mem::align_of::<Node>() == 64);

impl Node {
    pub(crate) const FREE: Node = Node {
        planes: [[[0.0; 2]; 3]; 2],
        child: [ChildRef::EMPTY, ChildRef::EMPTY],
        parent: NULL,
        slot: FREE_SLOT,
        stale: false,
    };

    /// The bounds stored in child slot `s`.
    #[inline(always)]
    pub(crate) fn bounds(&self, s: usize) -> Aabb {
        let p = &self.planes;
        Aabb {
            min: Vec3A::new(p[0][0][s], p[0][1][s], p[0][2][s]),
            max: Vec3A::new(p[1][0][s], p[1][1][s], p[1][2][s]),
        }
    }

    /// Writes the bounds of child slot `s`.
    #[inline(always)]
    pub(crate) fn set_bounds(&mut self, s: usize, b: &Aabb) {
        for a in 0..3 {
            self.planes[0][a][s] = b.min[a];
            self.planes[1][a][s] = b.max[a];
        }
    }

    /// The union of both children: this node's own bounds.
    #[inline(always)]
    pub(crate) fn union(&self) -> Aabb {
        self.bounds(0).union(&self.bounds(1))
    }

    /// Half surface areas of both children grown by the box of `grow`, and of the children
    /// themselves: `[area(c0 ∪ b), area(c1 ∪ b), area(c0), area(c1)]`, in the arithmetic of
    /// [`Aabb::union`] and [`Aabb::half_area`] lane for lane, so each equals the scalar form
    /// bit for bit (the insertion's choices do not depend on which form computed them).
    #[inline(always)]
    pub(crate) fn grown_areas(&self, grow: &GrowLanes) -> [f32; 4] {
        let zero = f32x4::splat(0.0);
        let ext =
            |a: usize| (self.pair(1, a).fast_max(grow.max[a]) - self.pair(0, a).fast_min(grow.min[a])).fast_max(zero);
        let (x, y, z) = (ext(0), ext(1), ext(2));
        (x * y + y * z + z * x).to_array()
    }

    /// Whether the two children's boxes overlap (touching counts, as in [`Aabb::overlaps`]), in
    /// two `f32x4` comparisons: each child's min planes against the other's max planes.
    #[inline(always)]
    pub(crate) fn children_overlap(&self) -> bool {
        let p = &self.planes;
        // Lanes: x of child 0, x of child 1, y of child 0, y of child 1; then z twice over.
        let lo_xy = f32x4::new([p[0][0][0], p[0][0][1], p[0][1][0], p[0][1][1]]);
        let hi_xy = f32x4::new([p[1][0][1], p[1][0][0], p[1][1][1], p[1][1][0]]);
        let lo_z = f32x4::new([p[0][2][0], p[0][2][1], p[0][2][0], p[0][2][1]]);
        let hi_z = f32x4::new([p[1][2][1], p[1][2][0], p[1][2][1], p[1][2][0]]);
        (lo_xy.simd_le(hi_xy) & lo_z.simd_le(hi_z)).to_bitmask() == 15
    }

    #[inline(always)]
    fn pair(&self, side: usize, axis: usize) -> f32x4 {
        let p = self.planes[side][axis];
        f32x4::new([p[0], p[1], p[0], p[1]])
    }

    /// Overlaps of this node's two children with `other`'s two, as a 4-bit mask: bit `2i + j`
    /// for this node's child `i` against `other`'s child `j`, in one set of `f32x4` tests.
    /// Touching counts, as in [`Aabb::overlaps`].
    #[inline(always)]
    pub(crate) fn cross_overlaps(&self, other: &Node) -> u32 {
        let mut ok = f32x4::splat(0.0).simd_le(f32x4::splat(0.0)); // all lanes true
        for a in 0..3 {
            // Lanes (i, j) = (0, 0), (0, 1), (1, 0), (1, 1).
            let [lo, hi] = [self.planes[0][a], self.planes[1][a]];
            let (min_i, max_i) = (f32x4::new([lo[0], lo[0], lo[1], lo[1]]), f32x4::new([hi[0], hi[0], hi[1], hi[1]]));
            ok &= min_i.simd_le(other.pair(1, a)) & other.pair(0, a).simd_le(max_i);
        }
        ok.to_bitmask() & 15
    }
}

/// A ray (or a swept box's centre ray) prepared for testing node pairs, lane-splatted once per
/// query.
///
/// A node stores each side's planes as `x0 x1 y0 y1 z0 z1` (child 0, child 1 per axis), so the
/// test reads each side in two loads: the x and y planes of both children as one `f32x4` (`xy`
/// lanes below: `x x y y`) and the z planes as another (`z` lanes: `z z z z`). The ray's
/// per-axis values are laid out the same way, and the sign of each axis picks the near side of
/// its lanes with one blend per register, rather than a load per plane and axis chosen by the
/// sign, which the sign's data dependence makes a long chain of scalar work.
pub(crate) struct RayLanes {
    origin_xy: f32x4,
    origin_z: f32x4,
    inv_dir_xy: f32x4,
    inv_dir_z: f32x4,
    /// Lanes whose axis has a negative direction: there the near plane is the max side.
    negative_xy: f32x4,
    negative_z: f32x4,
    /// Added to the near and far plane of each axis: `∓ half_extent` for a box cast, else 0.
    near_offset_xy: f32x4,
    near_offset_z: f32x4,
    tmin: f32x4,
}

impl RayLanes {
    /// `inflate` is the half-extent of a swept box (zero for rays).
    pub(crate) fn new(origin: Vec3A, inv_dir: Vec3A, sign: [u8; 3], tmin: f32, inflate: Vec3A) -> Self {
        let xy = |v: [f32; 3]| f32x4::new([v[0], v[0], v[1], v[1]]);
        let z = |v: [f32; 3]| f32x4::splat(v[2]);
        let negative = sign.map(|b| if b == 1 { f32::from_bits(u32::MAX) } else { 0.0 });
        // The near plane of a positive-direction axis is the min plane, moved out by -e.
        let near_offset = std::array::from_fn(|a| if sign[a] == 1 { inflate[a] } else { -inflate[a] });
        RayLanes {
            origin_xy: xy(origin.to_array()),
            origin_z: z(origin.to_array()),
            inv_dir_xy: xy(inv_dir.to_array()),
            inv_dir_z: z(inv_dir.to_array()),
            negative_xy: xy(negative),
            negative_z: z(negative),
            near_offset_xy: xy(near_offset),
            near_offset_z: z(near_offset),
            tmin: f32x4::splat(tmin),
        }
    }

    /// Slab test of both children of `node`: a 2-bit hit mask and the entry distances.
    ///
    /// Lane for lane this performs the operations of [`crate::math::slab_interval`] in the same
    /// order (x, then y, then z), with `maxps`/`minps` keeping the accumulator on NaN, so it
    /// agrees bit for bit with the scalar reference (checked in the tests). `INFLATE` adds the
    /// box-cast offsets.
    #[inline(always)]
    pub(crate) fn test_pair<const INFLATE: bool>(&self, node: &Node, tmax: f32) -> (u32, [f32; 2]) {
        let p = &node.planes;
        let xy = |side: usize| f32x4::new([p[side][0][0], p[side][0][1], p[side][1][0], p[side][1][1]]);
        let z = |side: usize| f32x4::new([p[side][2][0], p[side][2][1], p[side][2][0], p[side][2][1]]);
        let (min_xy, max_xy, min_z, max_z) = (xy(0), xy(1), z(0), z(1));
        let mut near_xy = self.negative_xy.select(max_xy, min_xy);
        let mut far_xy = self.negative_xy.select(min_xy, max_xy);
        let mut near_z = self.negative_z.select(max_z, min_z);
        let mut far_z = self.negative_z.select(min_z, max_z);
        if INFLATE {
            near_xy += self.near_offset_xy;
            far_xy -= self.near_offset_xy;
            near_z += self.near_offset_z;
            far_z -= self.near_offset_z;
        }
        let pad = f32x4::splat(FAR_PAD);
        let tn_xy = (near_xy - self.origin_xy) * self.inv_dir_xy;
        let tf_xy = (far_xy - self.origin_xy) * self.inv_dir_xy * pad;
        let tn_z = (near_z - self.origin_z) * self.inv_dir_z;
        let tf_z = (far_z - self.origin_z) * self.inv_dir_z * pad;
        // The y lanes (2, 3) moved down to lanes 0 and 1.
        let high = |v: f32x4| {
            let a = v.to_array();
            f32x4::new([a[2], a[3], a[2], a[3]])
        };
        let near = max_keep(tn_z, max_keep(high(tn_xy), max_keep(tn_xy, self.tmin)));
        // As `SlabInterval::is_hit`: entered within range, at a finite distance. `near` is never
        // NaN (the running maximum starts at the finite `tmin` and keeps it on NaN), so with the
        // exit capped at `f32::MAX` one comparison says both: `near <= far` and `near < inf`.
        // (One comparison and one `and` fewer per node.)
        let far = min_keep(tf_z, min_keep(high(tf_xy), min_keep(tf_xy, f32x4::splat(tmax.min(f32::MAX)))));
        let mask = near.simd_le(far).to_bitmask() & 3;
        let n = near.to_array();
        (mask, [n[0], n[1]])
    }
}

/// A box splatted for [`Node::grown_areas`]: lanes 0–1 hold the box, lanes 2–3 the empty box
/// (`+inf` minima, `-inf` maxima), which leaves the children's own bounds as they are.
pub(crate) struct GrowLanes {
    min: [f32x4; 3],
    max: [f32x4; 3],
}

impl GrowLanes {
    #[inline(always)]
    pub(crate) fn new(b: &Aabb) -> Self {
        let (inf, ninf) = (f32::INFINITY, f32::NEG_INFINITY);
        GrowLanes {
            min: [0, 1, 2].map(|a| f32x4::new([b.min[a], b.min[a], inf, inf])),
            max: [0, 1, 2].map(|a| f32x4::new([b.max[a], b.max[a], ninf, ninf])),
        }
    }
}

/// A query box splatted for testing node pairs.
pub(crate) struct BoxLanes {
    min: [f32x4; 3],
    max: [f32x4; 3],
}

impl BoxLanes {
    pub(crate) fn new(b: &Aabb) -> Self {
        let s = |v: f32| f32x4::splat(v);
        BoxLanes { min: [s(b.min.x), s(b.min.y), s(b.min.z)], max: [s(b.max.x), s(b.max.y), s(b.max.z)] }
    }

    /// Overlap of the query box with both children of `node`, as a 2-bit mask. Touching counts,
    /// as in [`Aabb::overlaps`].
    #[inline(always)]
    pub(crate) fn test_pair(&self, node: &Node) -> u32 {
        let mut ok = f32x4::splat(0.0).simd_le(f32x4::splat(0.0)); // all lanes true
        for a in 0..3 {
            ok &= node.pair(0, a).simd_le(self.max[a]) & self.min[a].simd_le(node.pair(1, a));
        }
        ok.to_bitmask() & 3
    }
}

/// A frustum's planes splatted into lanes of `V` (`f32x4` for the node pairs here, `f32x8` for the
/// 8-wide copy in `wide/query.rs`), with each plane's p-vertex side chosen once.
pub(crate) struct FrustumLanes<V> {
    pub normal: [[V; 3]; 6],
    pub d: [V; 6],
    /// Per plane and axis: the side (0 min, 1 max) holding the p-vertex.
    pub side: [[usize; 3]; 6],
}

impl<V> FrustumLanes<V> {
    pub(crate) fn new(f: &crate::math::Frustum, splat: impl Fn(f32) -> V) -> Self {
        FrustumLanes {
            normal: f.planes.map(|p| [0, 1, 2].map(|a| splat(p.normal[a]))),
            d: f.planes.map(|p| splat(p.d)),
            side: f.planes.map(|p| [0, 1, 2].map(|a| (p.normal[a] >= 0.0) as usize)),
        }
    }
}

impl<V: Copy + std::ops::Mul<Output = V> + std::ops::Add<Output = V>> FrustumLanes<V> {
    /// The signed distance to plane `i` of a vertex per lane, where `corner(side, axis)` gives
    /// the lanes' coordinate on `axis` from the plane's p-vertex side (0 min, 1 max). In the
    /// arithmetic order of [`crate::math::Plane::signed_distance`], so each lane's answer is the
    /// scalar test's bit for bit: the one formula every SIMD frustum test (this node's pair, the
    /// 8-wide copy's nodes, the scan's boxes) goes through.
    #[inline(always)]
    pub(crate) fn p_vertex_distance(&self, i: usize, corner: impl Fn(usize, usize) -> V) -> V {
        let c = |a: usize| corner(self.side[i][a], a);
        self.normal[i][0] * c(0) + self.normal[i][1] * c(1) + self.normal[i][2] * c(2) + self.d[i]
    }
}

impl FrustumLanes<f32x4> {
    /// Tests both children against the planes in `active` (a 6-bit plane mask; the parent is
    /// inside all the others). Returns a 2-bit mask of the children outside no active plane, and,
    /// for each child, the active planes it is not entirely inside (its own `active` mask: 0
    /// means the child lies wholly inside the frustum and its subtree needs no more tests).
    ///
    /// This is plane masking (Bittner, Wonka and Wimmer 2001; Assarsson and Möller 2000). A child
    /// box lies inside its parent's, and round-to-nearest arithmetic is monotone, so skipping a
    /// plane the parent is inside never changes an answer: the result equals testing every plane
    /// at every node with [`crate::math::Frustum::may_contain`]. Lanes 0–1 hold each child's
    /// p-vertex (farthest along the normal), lanes 2–3 its n-vertex, in the same arithmetic order
    /// as [`crate::math::Plane::signed_distance`].
    #[inline(always)]
    pub(crate) fn test_pair(&self, node: &Node, active: u32) -> (u32, [u32; 2]) {
        let zero = f32x4::splat(0.0);
        let mut outside = 0u32;
        let mut partial = [0u32; 2];
        for i in 0..6 {
            if active & (1 << i) == 0 {
                continue;
            }
            // Lanes 0-1: the p-vertices (side `s`), lanes 2-3: the n-vertices (side `1 - s`).
            let sd = self.p_vertex_distance(i, |s, a| {
                let (p, n) = (node.planes[s][a], node.planes[1 - s][a]);
                f32x4::new([p[0], p[1], n[0], n[1]])
            });
            // Outside: the p-vertex is strictly below the plane. Inside: the n-vertex is on or
            // above it. A NaN distance is neither, so the box is kept and tested again below.
            outside |= sd.simd_lt(zero).to_bitmask() & 3;
            let not_inside = !sd.simd_ge(zero).to_bitmask();
            partial[0] |= ((not_inside >> 2) & 1) << i;
            partial[1] |= ((not_inside >> 3) & 1) << i;
        }
        (!outside & 3, partial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use slabtree_testkit::rng::Rng;

    fn random_box(state: &mut Rng) -> Aabb {
        let scale = [1e-3f32, 1.0, 1e3][(state.unit() * 3.0) as usize % 3];
        let c = Vec3A::new(state.unit() - 0.5, state.unit() - 0.5, state.unit() - 0.5) * 10.0 * scale;
        let h = Vec3A::new(state.unit(), state.unit(), state.unit()) * scale;
        // Some flat boxes: zero extent on one axis.
        let h = if state.unit() < 0.1 { h * Vec3A::new(1.0, 0.0, 1.0) } else { h };
        Aabb::from_center_half_extents(c, h)
    }

    #[test]
    fn children_overlap_as_the_scalar_test() {
        let mut state = Rng(11);
        let mut seen = [0usize; 2];
        for i in 0..20_000 {
            let mut node = Node::FREE;
            let a = random_box(&mut state);
            // Every fourth pair touches exactly: b starts where a ends on one axis.
            let b = if i % 4 == 0 {
                let axis = i / 4 % 3;
                let mut b = random_box(&mut state);
                let shift = a.max[axis] - b.min[axis];
                b.min[axis] += shift;
                b.max[axis] += shift;
                b
            } else {
                Aabb::from_center_half_extents(a.center() + (random_box(&mut state).center() * 0.1), a.half_extents())
            };
            node.set_bounds(0, &a);
            node.set_bounds(1, &b);
            let want = a.overlaps(&b);
            seen[want as usize] += 1;
            assert_eq!(node.children_overlap(), want, "{a:?} {b:?}");
        }
        assert!(seen[0] > 1000 && seen[1] > 1000, "both outcomes tested: {seen:?}");
    }

    #[test]
    fn grown_areas_equal_the_scalar_union_bit_for_bit() {
        let mut state = Rng(7);
        for _ in 0..20_000 {
            let mut node = Node::FREE;
            let (a, b, d) = (random_box(&mut state), random_box(&mut state), random_box(&mut state));
            node.set_bounds(0, &a);
            node.set_bounds(1, &b);
            let got = node.grown_areas(&GrowLanes::new(&d));
            let want = [a.union(&d).half_area(), b.union(&d).half_area(), a.half_area(), b.half_area()];
            assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{a:?} {b:?} grown by {d:?}");
        }
    }
}
