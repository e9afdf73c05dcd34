//! Frustum culling by a linear scan of the proxies' boxes instead of a walk of the tree.
//!
//! A hierarchy pays off when it lets a query skip most of the leaves. When much of a scene is
//! in view, the frustum walk visits about one node per visible leaf, each a dependent load and a
//! dozen branches, to end up listing most proxies anyway. Testing every proxy's box in turn,
//! eight at a time, reads the boxes in order and spends a few instructions per box. Collin,
//! "Culling the Battlefield" (DICE, GDC 2011), replaced a culling hierarchy with such a scan for
//! this reason. [`crate::Scene::visible_into`] takes the scan when its last query found at
//! least a quarter of the instances in view.

use glam::Vec3A;
use wide::{f32x4, f32x8};

use super::node::FrustumLanes;
use super::queries::{LeafControl, LeafPolicy};
use super::{Dbvt, DbvtError};
use crate::math::QueryStats;
use crate::math::{Aabb, Frustum};

impl<T> Dbvt<T> {
    /// Hands to `policy` exactly the proxies [`Dbvt::frustum`] would (those whose fat box is not
    /// certainly outside the frustum, as [`Frustum::may_contain`]), by testing every proxy's box
    /// rather than walking the tree, in slot index order. Faster than the walk when a large part
    /// of the tree is in view and its arena is out of order or out of cache, slower when little
    /// is in view (`docs/performance.md`, "The dynamic tree's choices, measured").
    /// `QueryStats::nodes` is 0.
    ///
    /// Refuses a non-finite frustum, and, as [`Dbvt::frustum`] does, a tree whose
    /// [`Dbvt::update_proxy`] changes await a refit.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt, Frustum, LeafControl, QueryWorkspace};
    /// use glam::{Mat4, Vec3, Vec3A};
    /// let mut tree = Dbvt::new();
    /// for i in 0..20 {
    ///     let c = Vec3A::new(0.0, 0.0, -2.0 * i as f32 - 1.0); // a row down -z
    ///     tree.insert(Aabb::from_center_half_extents(c, Vec3A::splat(0.25)), i)?;
    /// }
    /// let view = glam::camera::rh::view::look_at_mat4(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y);
    /// let f = Frustum::from_view_projection(glam::camera::rh::proj::directx::perspective(1.0, 1.0, 0.1, 10.0) * view);
    /// let (mut scanned, mut walked) = (Vec::new(), Vec::new());
    /// tree.frustum_scan(&f, &mut |_, &i: &i32| { scanned.push(i); LeafControl::Continue })?;
    /// tree.frustum(&f, &mut QueryWorkspace::new(), &mut |_, &i: &i32| { walked.push(i); LeafControl::Continue })?;
    /// walked.sort();
    /// assert_eq!(scanned, walked);
    /// assert_eq!(scanned, (0..5).collect::<Vec<_>>()); // the far plane is at 10
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn frustum_scan<P: LeafPolicy<T>>(&self, frustum: &Frustum, policy: &mut P) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        frustum.validate()?;
        let planes = FrustumLanes::new(frustum, f32x8::splat);
        let mut stats = QueryStats::default();
        let (chunks, rest) = self.proxies.as_chunks::<8>();
        for (c, chunk) in chunks.iter().enumerate() {
            let keep = in_view(&planes, std::array::from_fn(|i| chunk[i].fat()));
            if !self.visit_in_view(c as u32 * 8, keep, &mut stats, policy) {
                return Ok(stats);
            }
        }
        if let Some(last) = rest.last() {
            // The short last chunk repeats its last box; the repeats are masked off.
            let keep = in_view(&planes, std::array::from_fn(|i| rest.get(i).unwrap_or(last).fat()));
            let valid = (1u32 << rest.len()) - 1;
            self.visit_in_view(chunks.len() as u32 * 8, keep & valid, &mut stats, policy);
        }
        Ok(stats)
    }

    /// Hands the live proxies `base + l` for each lane `l` set in `keep` to `policy`; `false`
    /// when it stops.
    #[inline(always)]
    fn visit_in_view<P: LeafPolicy<T>>(
        &self,
        base: u32,
        mut keep: u32,
        stats: &mut QueryStats,
        policy: &mut P,
    ) -> bool {
        while keep != 0 {
            let p = base + keep.trailing_zeros();
            keep &= keep - 1;
            // A free slot keeps its last box: skip it.
            if let Some(data) = self.slots[p as usize].data.as_ref() {
                stats.leaves += 1;
                if policy.visit(self.id_of(p), data) == LeafControl::Stop {
                    return false;
                }
            }
        }
        true
    }
}

/// The lanes of eight boxes not certainly outside the frustum: for each plane, the signed
/// distance of each box's p-vertex (`FrustumLanes::p_vertex_distance`), so that the answer is
/// [`Frustum::may_contain`]'s bit for bit. Each box's corners are loaded whole and
/// transposed, four boxes at a time, into x, y and z lanes: gathering the lanes one float at a
/// time costs more than the plane tests, and four boxes per `f32x4` instead of eight per
/// `f32x8` would repeat the per-plane work.
#[inline(always)]
fn in_view(planes: &FrustumLanes<f32x8>, boxes: [Aabb; 8]) -> u32 {
    let corner = |v: Vec3A| f32x4::new(v.extend(0.0).to_array());
    let half = |h: usize, max: bool| {
        let c: [f32x4; 4] = std::array::from_fn(|i| {
            let b = &boxes[4 * h + i];
            corner(if max { b.max } else { b.min })
        });
        f32x4::transpose(c).map(|v| v.to_array())
    };
    let join = |lo: [f32; 4], hi: [f32; 4]| f32x8::new([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]);
    let side = |max: bool| {
        let (lo, hi) = (half(0, max), half(1, max));
        [join(lo[0], hi[0]), join(lo[1], hi[1]), join(lo[2], hi[2])]
    };
    let b = [side(false), side(true)];
    let zero = f32x8::splat(0.0);
    let mut outside = 0u32;
    for i in 0..6 {
        // (`& 1`: the sides are 0 or 1, and saying so drops the bounds checks.)
        outside |= planes.p_vertex_distance(i, |s, a| b[s & 1][a]).simd_lt(zero).to_bitmask();
    }
    !outside & 0xff
}
