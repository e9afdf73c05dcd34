//! Queries over the 8-wide copy: the ray cast (nearest entry first, for closest-hit policies)
//! and frustum culling (plane masking eight lanes at a time), handing the policy exactly the
//! proxies the binary tree's queries would, in another order.

use glam::Vec3A;
use wide::f32x8;

use super::WideView;
use crate::dbvt::ProxyId;
use crate::dbvt::node::FrustumLanes;
use crate::dbvt::queries::{ALL_PLANES, LeafControl, LeafPolicy, RayLeaf, RayPolicy, frustum_box_test};
use crate::dbvt::{Dbvt, DbvtError};
use crate::math::QueryStats;
use crate::math::{Frustum, Ray, ray_aabb2};
use crate::wide::{ChildRef, Lanes8, LeafVisitor, Node8, Ray8, WithLanes, closest_first, dispatch};

/// [`Dbvt::visit_ray_wide`]'s walk, as a kernel for [`dispatch()`]: it runs at the SIMD level
/// [`crate::simd_level`] chose. Returns the nodes and leaves visited.
struct RayCastWide<'a, V> {
    nodes: &'a [Node8],
    ray: &'a Ray,
    stack: &'a mut Vec<(ChildRef, f32)>,
    proxies: V,
}

impl<V: LeafVisitor + VisitCount> WithLanes for RayCastWide<'_, V> {
    type Output = (u32, u32);

    #[inline(always)]
    fn run<L: Lanes8>(self) -> (u32, u32) {
        let RayCastWide { nodes, ray, stack, mut proxies } = self;
        let lanes = Ray8::<L>::new(ray, Vec3A::ZERO);
        let visited = closest_first::<false, false, _, _, _, _>(
            nodes,
            ChildRef::node(0),
            &lanes,
            ray.tmin,
            ray.tmax,
            stack,
            &mut proxies,
        );
        (visited, proxies.leaves())
    }
}

/// The leaves a visitor saw.
trait VisitCount {
    fn leaves(&self) -> u32;
}

impl<T> Dbvt<T> {
    /// [`Dbvt::visit_ray`] over `view`, which must have been made from this tree since its last
    /// change. The same proxies reach `policy`, nearest entry first among those waiting, so
    /// closest-hit policies get the same answer (up to which of two equal distances is kept).
    /// `stack` is scratch, kept by the caller so that queries allocate nothing once it has grown.
    pub(crate) fn visit_ray_wide<P: RayPolicy<T>>(
        &self,
        view: &WideView,
        ray: &Ray,
        stack: &mut Vec<(ChildRef, f32)>,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        ray.validate()?;
        let mut stats = QueryStats::default();
        if view.nodes.is_empty() || ray_aabb2(ray, &view.root_bounds).is_none() {
            return Ok(stats);
        }
        let proxies = ProxyVisitor { tree: self, nodes: &view.nodes, policy, leaves: 0 };
        let (nodes, leaves) = dispatch(RayCastWide { nodes: &view.nodes, ray, stack, proxies });
        (stats.nodes, stats.leaves) = (nodes.into(), leaves.into());
        Ok(stats)
    }

    /// Walks `view` (made from this tree since its last change) with a loaded ray packet,
    /// whose rays take the exact form of the slab test, as [`Dbvt::visit_ray_wide`]'s `Ray8`
    /// does: `leaf(packet, at, data)` gets every proxy a ray of the packet may reach, with its
    /// data, and returns `false` to end the walk. With `ANY` (occlusion) the walk takes children
    /// in any order and ends once no ray is live. Returns the wide nodes visited.
    pub(crate) fn packet_walk_wide<const ANY: bool>(
        &self,
        view: &WideView,
        pk: &mut crate::wide::packet::Packet,
        mut leaf: impl FnMut(&mut crate::wide::packet::Packet, &crate::wide::packet_walk::PacketLeaf, &T) -> bool,
    ) -> Result<u32, DbvtError> {
        self.check_refitted()?;
        if view.nodes.is_empty() {
            return Ok(0);
        }
        let prefetch = |child: ChildRef| {
            if child.is_leaf() {
                crate::hint::prefetch(self.slots.as_ptr().wrapping_add(child.index() as usize));
            } else {
                crate::hint::prefetch_record(
                    view.nodes.as_ptr().wrapping_add(child.index() as usize),
                    size_of::<Node8>(),
                );
            }
        };
        // No subtree is handed to single rays (`ALONE` 0): the instance tree is small beside the
        // meshes at its leaves, which the scene traces as streams of their own.
        Ok(crate::wide::packet_walk::packet_walk::<wide::f32x8, ANY, false, 0, _>(
            &view.nodes[..],
            pk,
            prefetch,
            |pk: &mut crate::wide::packet::Packet, at: &crate::wide::packet_walk::PacketLeaf| {
                let data = self.slots[at.index as usize].data.as_ref().expect("leaf proxies are live");
                leaf(pk, at, data)
            },
        ))
    }

    /// [`Dbvt::frustum`] over `view` (made from this tree since its last change): the same
    /// proxies reach `policy`, in another order. Plane masking as in the binary query (each
    /// stacked entry carries the planes its box is not known to be inside; a subtree wholly
    /// inside is walked without a test), eight lanes at a time.
    pub(crate) fn frustum_wide<P: LeafPolicy<T>>(
        &self,
        view: &WideView,
        frustum: &Frustum,
        stack: &mut Vec<(ChildRef, f32)>,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        frustum.validate()?;
        let mut stats = QueryStats::default();
        if view.nodes.is_empty() {
            return Ok(stats);
        }
        let (keep, active) = frustum_box_test(frustum, &view.root_bounds, ALL_PLANES);
        if !keep {
            return Ok(stats);
        }
        let planes = FrustumLanes::new(frustum, f32x8::splat);
        stack.clear();
        // Keys are plane masks, exact as small f32s, so the ray stack serves.
        stack.push((ChildRef::node(0), active as f32));
        let mut visit = |p: u32, stats: &mut QueryStats| {
            stats.leaves += 1;
            let data = self.slots[p as usize].data.as_ref().expect("leaf proxies are live");
            policy.visit(self.id_of(p), data) == LeafControl::Continue
        };
        while let Some((n, key)) = stack.pop() {
            stats.nodes += 1;
            let node = &view.nodes[n.index() as usize];
            let (mut keep, partial) = planes.test(node, key as u32);
            while keep != 0 {
                let l = keep.trailing_zeros() as usize;
                keep &= keep - 1;
                let c = node.child[l];
                if c.is_leaf() {
                    if !visit(c.index(), &mut stats) {
                        return Ok(stats);
                    }
                } else if partial[l] == 0 && self.ordered {
                    // Wholly inside: every leaf below, read from the binary tree's node range
                    // (the lane's box is child `src & 1` of binary node `src >> 1`).
                    let src = view.sources[n.index() as usize][l];
                    let below = self.nodes[(src >> 1) as usize].child[(src & 1) as usize].index();
                    if !self.for_each_leaf_below(below, |p| visit(p, &mut stats)) {
                        return Ok(stats);
                    }
                } else {
                    stack.push((c, partial[l] as f32));
                }
            }
        }
        Ok(stats)
    }
}

/// The tree's proxies for the shared traversal loop: each leaf index is a proxy slot, handed to
/// the caller's policy with its entry distance.
struct ProxyVisitor<'a, T, P> {
    tree: &'a Dbvt<T>,
    nodes: &'a [Node8],
    policy: &'a mut P,
    leaves: u32,
}

impl<T, P> VisitCount for ProxyVisitor<'_, T, P> {
    fn leaves(&self) -> u32 {
        self.leaves
    }
}

impl<T, P: RayPolicy<T>> LeafVisitor for ProxyVisitor<'_, T, P> {
    #[inline(always)]
    fn visit(&mut self, leaf: ChildRef, entry: f32, tmax: &mut f32) -> bool {
        self.leaves += 1;
        let p = leaf.index();
        let tree = self.tree;
        let data = tree.slots[p as usize].data.as_ref().expect("leaf proxies are live");
        let id: ProxyId = tree.id_of(p);
        self.policy.visit(RayLeaf { id, data, t: entry, tmax: *tmax }).apply(tmax)
    }

    /// Starts loading what a stacked entry will read: a wide node's lines, or a proxy slot.
    #[inline(always)]
    fn prefetch(&self, child: ChildRef) {
        if child.is_leaf() {
            crate::hint::prefetch(self.tree.slots.as_ptr().wrapping_add(child.index() as usize));
        } else {
            let node = self.nodes.as_ptr().wrapping_add(child.index() as usize);
            crate::hint::prefetch_record(node, size_of::<Node8>());
        }
    }
}

/// The frustum test of [`Node8`]s: [`FrustumLanes::test_pair`] eight lanes at a time, in the
/// same arithmetic order as [`crate::math::Plane::signed_distance`], so each lane's answer is
/// [`frustum_box_test`]'s.
impl FrustumLanes<f32x8> {
    /// The used lanes of `node` outside none of the planes in `active` (the node's own box is
    /// inside the others), as a bit mask, and for each lane the active planes it is not entirely
    /// inside: 0 for a lane wholly in the frustum, whose subtree then needs no more tests.
    #[inline(always)]
    fn test(&self, node: &Node8, active: u32) -> (u32, [u8; 8]) {
        let used = node.used_lanes();
        let mut partial = [0u8; 8];
        if active == 0 {
            return (used, partial);
        }
        let zero = f32x8::splat(0.0);
        let mut outside = 0u32;
        for i in 0..6 {
            if active & (1 << i) == 0 {
                continue;
            }
            // `far` 0: the p-vertices; 1: the n-vertices (the other side on every axis). The
            // `& 1` tells the compiler the side is 0 or 1 and drops a bounds check per axis.
            let distance = |far: usize| self.p_vertex_distance(i, |s, a| f32x8::new(node.bounds[(s ^ far) & 1][a]));
            // Outside: the p-vertex strictly below the plane. Inside: the n-vertex on or above
            // it (a NaN distance is neither: kept, and tested again below).
            outside |= distance(0).simd_lt(zero).to_bitmask();
            let mut not_inside = !distance(1).simd_ge(zero).to_bitmask() & used;
            while not_inside != 0 {
                let l = not_inside.trailing_zeros() as usize;
                not_inside &= not_inside - 1;
                partial[l] |= 1 << i;
            }
        }
        (used & !outside, partial)
    }
}
