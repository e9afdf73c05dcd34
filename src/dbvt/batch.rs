//! Many rays through the binary tree at once, several in flight.
//!
//! A single ray's walk is one chain of dependent loads: the next node is known only once the
//! current one's test has chosen it, so at 100k proxies each of its ~70 visits waits on a cache
//! miss, and fewer instructions do not make it faster (`docs/performance.md`, "The dynamic
//! tree's choices, measured"). Rays of a batch are independent, so the walk here takes
//! [`IN_FLIGHT`] of them in turn, one node each: while one ray's next node is on its way (its
//! children are prefetched before its test, as in [`Dbvt::visit_ray`]), the others are tested.
//! This is the mesh BVH's rays in flight (`MeshBvh::intersect_batch` through a large BVH), and the
//! interleaving of independent pointer chases of Kocberber, Falsafi and Grot, "Asynchronous
//! Memory Access Chaining" (VLDB 2015).
//!
//! Taking turns costs the branch predictor: a branch that one ray's walk takes in a pattern sees
//! eight rays' outcomes mixed. So each step here has no branch on the node test's outcome: the
//! next entry is always the top of the ray's stack, and the children are pushed with
//! `push_if`. (Callgrind's branch model at 100k proxies: 72 mispredictions per ray with a kept
//! next entry, a branch on an empty mask and the nearer child chosen by a branch; 17 without;
//! 20 for a ray cast alone.)
//!
//! Each ray walks exactly as [`Dbvt::visit_ray`] walks it (the same test, the same order of
//! children, the same clipping), so its policy calls come in the same order and every answer is
//! the single ray's; only the rays' turns interleave.

use glam::Vec3A;

use super::node::{ChildRef, RayLanes};
use super::queries::{ProxyHit, RayControl, RayLeaf, closest_hit};
use super::traverse::{QueryWorkspace, push_if};
use super::{Dbvt, DbvtError};
use crate::math::QueryStats;
use crate::math::{Ray, ray_aabb2, validate_rays};

/// Rays walked in turn by [`Dbvt::visit_ray_batch`]: enough for the others' tests to cover one
/// ray's cache miss (`docs/performance.md`).
pub(crate) const IN_FLIGHT: usize = 8;

/// Decides, at each leaf a ray of a batch reaches, whether that ray continues, clips or stops;
/// `ray` is its index in the batch. Closures `FnMut(usize, RayLeaf<T>) -> RayControl`
/// implement it.
pub trait RayBatchPolicy<T> {
    /// Called once per leaf whose box ray `ray` reaches within its current range, in the order
    /// [`Dbvt::visit_ray`] would call it for that ray alone. Calls for different rays interleave.
    fn visit(&mut self, ray: usize, leaf: RayLeaf<'_, T>) -> RayControl;
}

impl<T, F: FnMut(usize, RayLeaf<'_, T>) -> RayControl> RayBatchPolicy<T> for F {
    fn visit(&mut self, ray: usize, leaf: RayLeaf<'_, T>) -> RayControl {
        self(ray, leaf)
    }
}

/// One ray in flight: its index, its node test and its range. What it visits next is the top of
/// its stack.
struct Flight {
    index: usize,
    lanes: RayLanes,
    tmax: f32,
}

impl<T> Dbvt<T> {
    /// [`Dbvt::visit_ray`] of every ray of `rays`, eight at a time: each ray's leaves go
    /// to `policy` with the ray's index, in the order its own cast would hand them over, and the
    /// answers are the single casts' answers. Returns the visit counts summed over the rays.
    ///
    /// For many rays at once, this is the binary tree's fast path: one ray's walk waits on a
    /// cache miss at every level, and here the other rays' tests fill that wait
    /// (`docs/performance.md`). The 8-wide
    /// copy, [`Dbvt::wide`], is the other fast path, for a tree that stays unchanged long enough
    /// to pay for its collapse.
    ///
    /// Refuses the whole batch, visiting nothing, when a ray is invalid ([`DbvtError::Ray`],
    /// naming the first) or a refit is pending. Allocates nothing once `ws` has grown. The node
    /// test is the SIMD one whatever `ws.node_test` says (both give the same answers).
    ///
    /// ```
    /// use glam::Vec3A;
    /// use slabtree::{Aabb, Dbvt, QueryWorkspace, Ray, RayControl, RayLeaf};
    /// let boxes = (0..100).map(|i| (Aabb::from_center_half_extents(Vec3A::new(i as f32 * 3.0, 0.0, 0.0), Vec3A::splat(0.5)), i));
    /// let (tree, _) = Dbvt::build(boxes)?;
    /// let rays: Vec<Ray> = (0..10).map(|k| Ray::new(Vec3A::new(k as f32 * 30.0 - 1.0, 0.0, 0.0), Vec3A::X)).collect();
    /// let mut first = vec![None; rays.len()];
    /// tree.visit_ray_batch(&rays, &mut QueryWorkspace::new(), &mut |ray: usize, leaf: RayLeaf<'_, i32>| {
    ///     if first[ray].is_none_or(|(t, _)| leaf.t < t) {
    ///         first[ray] = Some((leaf.t, *leaf.data));
    ///     }
    ///     RayControl::Clip(leaf.t)
    /// })?;
    /// assert_eq!(first[3].map(|(_, i)| i), Some(30));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit_ray_batch<P: RayBatchPolicy<T>>(
        &self,
        rays: &[Ray],
        ws: &mut QueryWorkspace,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        validate_rays(rays).map_err(DbvtError::Ray)?;
        let mut stats = QueryStats::default();
        let Some(root) = self.root else { return Ok(stats) };
        let stacks = &mut ws.flight_stacks;
        stacks.resize_with(IN_FLIGHT, Vec::new);
        let mut flights: [Option<Flight>; IN_FLIGHT] = Default::default();
        let mut next_ray = 0;
        let mut active = 0;
        // Fills `slot` with the next ray that enters the root, if any is left; `false` when none is.
        let board = |slot: &mut Option<Flight>, stack: &mut Vec<(ChildRef, f32)>, next_ray: &mut usize| {
            while *next_ray < rays.len() {
                let (index, ray) = (*next_ray, &rays[*next_ray]);
                *next_ray += 1;
                if let Some(key) = ray_aabb2(ray, &self.root_bounds) {
                    stack.clear();
                    stack.push((root, key));
                    let lanes = RayLanes::new(ray.origin(), ray.inv_dir(), ray.sign(), ray.tmin, Vec3A::ZERO);
                    *slot = Some(Flight { index, lanes, tmax: ray.tmax });
                    return true;
                }
            }
            *slot = None;
            false
        };
        for (slot, stack) in flights.iter_mut().zip(stacks.iter_mut()) {
            active += usize::from(board(slot, stack, &mut next_ray));
        }
        while active > 0 {
            for (slot, stack) in flights.iter_mut().zip(stacks.iter_mut()) {
                let Some(f) = slot else { continue };
                // One step of `Dbvt::traverse` for this ray (ordered: the nearer child next). The
                // next entry is always the top of the stack, the nearer child pushed last.
                let Some((c, key)) = stack.pop() else {
                    if !board(slot, stack, &mut next_ray) {
                        active -= 1;
                    }
                    continue;
                };
                if key > f.tmax {
                    continue;
                }
                if c.is_leaf() {
                    stats.leaves += 1;
                    let (id, data) = self.leaf(c.index());
                    let leaf = RayLeaf { id, data, t: key, tmax: f.tmax };
                    if !policy.visit(f.index, leaf).apply(&mut f.tmax) {
                        stack.clear();
                    }
                    continue;
                }
                stats.nodes += 1;
                let node = &self.nodes[c.index() as usize];
                self.prefetch(node.child[0]);
                self.prefetch(node.child[1]);
                let (mask, keys) = f.lanes.test_pair::<false>(node, f.tmax);
                // As in `Dbvt::traverse`, no branch on which children were hit: the farther
                // waits below the nearer when both were.
                let both = mask == 3;
                // Child 1 when it alone was hit, or when both were and it is nearer; in bit
                // operations, since the compiler made a branch of the conditional form.
                let nearer_1 = u32::from(keys[1] < keys[0]);
                let near = ((mask >> 1) & ((!mask & 1) | nearer_1)) as usize;
                push_if(stack, both, (node.child[1 - near], keys[1 - near]));
                push_if(stack, mask != 0, (node.child[near], keys[near]));
            }
        }
        Ok(stats)
    }

    /// [`Dbvt::intersect`] of every ray of `rays`, several in flight ([`Dbvt::visit_ray_batch`]),
    /// into `hits` (cleared first): for each ray, the proxy whose fat box it enters first, of
    /// equal distances the lowest [`ProxyId::index`](super::ProxyId::index).
    pub fn intersect_batch(
        &self,
        rays: &[Ray],
        ws: &mut QueryWorkspace,
        hits: &mut Vec<Option<ProxyHit>>,
    ) -> Result<QueryStats, DbvtError> {
        hits.clear();
        hits.resize(rays.len(), None);
        // Each ray's hit kept by `Dbvt::intersect`'s own policy.
        self.visit_ray_batch(rays, ws, &mut |ray: usize, leaf: RayLeaf<'_, T>| closest_hit(&mut hits[ray])(leaf))
            .inspect_err(|_| hits.clear())
    }
}
