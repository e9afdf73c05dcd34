//! The mesh BVH's ray queries: closest and any hit of one ray and of runs of rays, and the walk
//! that every query shares (the swept boxes' too, `super::sweep`).
//!
//! Every query walks the tree with the one closest-first loop of `crate::wide` (nearest children
//! first, entries beyond the current closest hit dropped), whose child slab test is the crate's
//! conservative one ([`crate::math::slab_interval`], lane for lane), so a triangle is never culled
//! by rounding at a node. What differs between queries is the leaf test ([`LeafTest`]): a ray
//! against a triangle pack, or a swept box against each triangle (`super::sweep`).

use glam::{Vec3, Vec3A};

use super::bvh::{Hit, MeshBvh, STACK, TriangleTest};
use super::layout::Blocks;
use super::leaf::{Decide, HitPolicy, LeafTest, Nearest, Offer, TriangleLeaf};
use super::triangle::{PackHit, PackRows};
use crate::math::QueryStats;
use crate::math::{InputError, Ray, RayCoherence};
use crate::wide::{
    ChildBoxTest, ChildRef, EntryPoint, FixedStack, FusedRay8, Lanes8, LeafVisitor, Ray8, WithLanes, closest_first,
    dispatch,
};

impl MeshBvh {
    /// The closest hit with `tmin <= t <= tmax`, or `None`. An invalid ray (NaN or infinite
    /// origin or direction, `tmin > tmax`) is refused with the [`InputError`] that
    /// [`Ray::validate`] gives, as by every query of the crate.
    #[inline]
    pub fn intersect(&self, ray: &Ray) -> Result<Option<Hit>, InputError> {
        ray.validate()?;
        let (hit, _) = self.trace_valid::<false>(ray, RayCoherence::Coherent);
        Ok(hit.map(|(prim, h)| self.finish(prim, h, ray)))
    }

    /// `true` when any triangle is hit with `tmin <= t <= tmax` (any hit: no ordering, the first
    /// hit ends the search). An invalid ray is refused, as by [`MeshBvh::intersect`].
    #[inline]
    pub fn occluded(&self, ray: &Ray) -> Result<bool, InputError> {
        ray.validate()?;
        Ok(self.trace_valid::<true>(ray, RayCoherence::Coherent).0.is_some())
    }

    /// The closest hit, and the nodes and leaves the query visited (for cost heat maps).
    #[inline]
    pub fn intersect_counting(&self, ray: &Ray) -> Result<(Option<Hit>, QueryStats), InputError> {
        ray.validate()?;
        let (hit, stats) = self.trace_valid::<false>(ray, RayCoherence::Coherent);
        Ok((hit.map(|(prim, h)| self.finish(prim, h, ray)), stats))
    }

    /// [`MeshBvh::occluded`], and the nodes and leaves the query visited.
    #[inline]
    pub fn occluded_counting(&self, ray: &Ray) -> Result<(bool, QueryStats), InputError> {
        ray.validate()?;
        let (hit, stats) = self.trace_valid::<true>(ray, RayCoherence::Coherent);
        Ok((hit.is_some(), stats))
    }

    /// The closest hits of valid `rays` into `out` (as long), on this thread, run by run (see
    /// `interleave::by_runs`).
    pub(super) fn intersect_valid_rays(&self, rays: &[Ray], out: &mut [Option<Hit>]) {
        super::interleave::by_runs(rays, self.is_large(), |span, hint| match hint {
            Some(hint) => self.intersect_valid_run(&rays[span.clone()], hint, &mut out[span]),
            None => self.intersect_interleaved(&rays[span.clone()], &mut out[span]),
        });
    }

    /// The closest hits of a run of valid rays, one after another, each written in place (see
    /// [`MeshBvh::intersect_valid_into`]), with the SIMD level's entry point chosen once for the
    /// run ([`EntryPoint`]): each ray is then one call (`docs/performance.md`, "How a batch
    /// runs").
    pub(super) fn intersect_valid_run(&self, rays: &[Ray], hint: RayCoherence, out: &mut [Option<Hit>]) {
        fn each<const W: bool, const E: bool>(bvh: &MeshBvh, rays: &[Ray], out: &mut [Option<Hit>]) {
            let entry = EntryPoint::<TraceInto<'_, W, E>>::chosen();
            for (ray, slot) in rays.iter().zip(out) {
                entry.run(TraceInto { bvh, ray, slot });
            }
        }
        let early = self.loads_early(hint);
        match self.options.triangle_test {
            TriangleTest::MollerTrumbore if early => each::<false, true>(self, rays, out),
            TriangleTest::MollerTrumbore => each::<false, false>(self, rays, out),
            TriangleTest::Watertight if early => each::<true, true>(self, rays, out),
            TriangleTest::Watertight => each::<true, false>(self, rays, out),
        }
    }

    /// Any hit of each of valid `rays` into `out` (as long), on this thread, run by run (see
    /// `interleave::by_runs`).
    pub(super) fn occluded_valid_rays(&self, rays: &[Ray], out: &mut [bool]) {
        // One ray at a time through `trace_valid`, each dispatched on its own: an
        // `EntryPoint` chosen once per run, as the closest hits take, executed fewer instructions
        // but ran the bunny's shadow rays slower (`docs/performance.md`, "How a batch runs").
        super::interleave::by_runs(rays, self.is_large(), |span, hint| match hint {
            Some(hint) => self.occluded_valid_run(&rays[span.clone()], hint, &mut out[span]),
            None => self.occluded_interleaved(&rays[span.clone()], &mut out[span]),
        });
    }

    /// Any hit of each of a run of valid rays into `out`, one after another, each dispatched on
    /// its own (see [`MeshBvh::occluded_valid_rays`]).
    pub(super) fn occluded_valid_run(&self, rays: &[Ray], hint: RayCoherence, out: &mut [bool]) {
        for (r, o) in rays.iter().zip(out) {
            *o = self.trace_valid::<true>(r, hint).0.is_some();
        }
    }

    /// The closest hit of a ray that may be invalid (then it hits nothing and visits nothing),
    /// and what the walk visited: for rays the crate made itself (an instance's view of a world
    /// ray).
    pub(crate) fn intersect_unchecked(&self, ray: &Ray) -> (Option<Hit>, QueryStats) {
        let (hit, stats) = self.intersect_keyed_unchecked(ray);
        (hit.map(|(_, h)| h), stats)
    }

    /// [`MeshBvh::intersect_unchecked`] with the distance the walk ranked the hit by: the
    /// triangle test's rounded `t`, which the hit's refined `t` ([`MeshBvh::finish`]) can lie
    /// below. A scene compares its instances' hits by it and clips the ray at it, so that the
    /// next instance's query, ranged up to it, still takes a triangle at the same distance (a
    /// second copy of an instance), as the closest-hit walk within one mesh does.
    pub(crate) fn intersect_keyed_unchecked(&self, ray: &Ray) -> (Option<(f32, Hit)>, QueryStats) {
        if ray.validate().is_err() {
            return (None, QueryStats::default());
        }
        let (hit, stats) = self.trace_valid::<false>(ray, RayCoherence::Coherent);
        (hit.map(|(prim, h)| (h.t, self.finish(prim, h, ray))), stats)
    }

    /// [`MeshBvh::intersect_unchecked`] written to `slot`: for the ray streams' rays traced
    /// alone, which may be invalid (an instance's view of a world ray).
    #[inline]
    pub(crate) fn intersect_into(&self, ray: &Ray, hint: RayCoherence, slot: &mut Option<Hit>) {
        match ray.validate() {
            Ok(()) => self.intersect_valid_into(ray, hint, slot),
            Err(_) => *slot = None,
        }
    }

    /// The closest hit of a valid ray written to `slot`, with its own copy of the traversal: for
    /// the streams' rays traced alone (a batch's runs choose their entry point once instead,
    /// [`MeshBvh::intersect_valid_run`], with the same kernel). Returned by value and then
    /// stored, the answer was reloaded with wider loads than the stores that wrote it, a stall on
    /// store forwarding (`docs/performance.md`, "How a batch runs"); built and
    /// stored here, it is not reloaded. The walk and the hit's finish both run at the SIMD level
    /// chosen, in one kernel.
    #[inline(never)]
    fn intersect_valid_into(&self, ray: &Ray, hint: RayCoherence, slot: &mut Option<Hit>) {
        debug_assert!(ray.validate().is_ok(), "{ray:?}");
        let early = self.loads_early(hint);
        match self.options.triangle_test {
            TriangleTest::MollerTrumbore if early => dispatch(TraceInto::<false, true> { bvh: self, ray, slot }),
            TriangleTest::MollerTrumbore => dispatch(TraceInto::<false, false> { bvh: self, ray, slot }),
            TriangleTest::Watertight if early => dispatch(TraceInto::<true, true> { bvh: self, ray, slot }),
            TriangleTest::Watertight => dispatch(TraceInto::<true, false> { bvh: self, ray, slot }),
        }
    }

    /// Any hit of a ray that may be invalid (then it hits nothing and visits nothing), and what
    /// the walk visited (the kernel counts whether or not the caller keeps the counts).
    pub(crate) fn occluded_unchecked(&self, ray: &Ray, hint: RayCoherence) -> (bool, QueryStats) {
        if ray.validate().is_err() {
            return (false, QueryStats::default());
        }
        let (hit, stats) = self.trace_valid::<true>(ray, hint);
        (hit.is_some(), stats)
    }

    /// A valid ray's nearest (or, with `ANY`, first) pack hit, and what the walk visited: the
    /// one step from every single-ray query to its kernel ([`MeshBvh::trace_test`]), which
    /// chooses the triangle test's loop and, for a large BVH or an incoherent ray, the walk with
    /// early child loads. Inlined into the caller, with the kernel out of line, so that the
    /// caller finishes the public hit in its own registers: returned through two more calls, the
    /// hit was copied between stack slots with wider loads than the stores that wrote it, and
    /// those loads waited on store forwarding (`docs/performance.md`).
    #[inline(always)]
    pub(super) fn trace_valid<const ANY: bool>(
        &self,
        ray: &Ray,
        hint: RayCoherence,
    ) -> (Option<(u32, PackHit)>, QueryStats) {
        let early = self.loads_early(hint);
        match self.options.triangle_test {
            TriangleTest::MollerTrumbore if early => self.trace_test::<ANY, false, true>(ray),
            TriangleTest::MollerTrumbore => self.trace_test::<ANY, false, false>(ray),
            TriangleTest::Watertight if early => self.trace_test::<ANY, true, true>(ray),
            TriangleTest::Watertight => self.trace_test::<ANY, true, false>(ray),
        }
    }

    /// [`MeshBvh::trace_valid`] for one triangle test, with or without the early child loads of
    /// large BVHs and incoherent rays (see [`LARGE_BVH_BYTES`](super::LARGE_BVH_BYTES) and
    /// [`RayCoherence`]). Each combination is a function of its own, out of line: the coherent
    /// rays' walk through a small BVH is then the same code as without the early loads (a
    /// run-time test per node cost instructions), and neither triangle test's loop has its
    /// register allocation moved by the other's code (`docs/performance.md`).
    /// The walk runs at the SIMD level [`crate::simd_level`] chose (`crate::wide::dispatch`).
    #[inline(never)]
    fn trace_test<const ANY: bool, const WATERTIGHT: bool, const EARLY: bool>(
        &self,
        ray: &Ray,
    ) -> (Option<(u32, PackHit)>, QueryStats) {
        dispatch(TraceNearest::<ANY, WATERTIGHT, EARLY> { bvh: self, ray })
    }

    /// [`MeshBvh::trace_valid`] with `policy` deciding at each hit (see `super::policy`), with
    /// the early child loads for a large BVH or an incoherent ray as there. Each triangle test
    /// gets its own traversal loop, without a per-leaf branch or the other test's per-ray set-up;
    /// the walk runs at the SIMD level [`crate::simd_level`] chose.
    pub(crate) fn trace_with<const ANY: bool, P: HitPolicy>(
        &self,
        ray: &Ray,
        policy: &mut P,
        hint: RayCoherence,
    ) -> (Option<(u32, PackHit)>, QueryStats) {
        let decide = Offer::new(policy, self.shared.as_deref());
        if self.loads_early(hint) {
            dispatch(TraceDeciding::<ANY, true, _> { bvh: self, ray, decide })
        } else {
            dispatch(TraceDeciding::<ANY, false, _> { bvh: self, ray, decide })
        }
    }

    /// Builds the public hit. The distance is recomputed once, in f64, from the triangle's
    /// plane: the f32 distance the traversal culls with loses precision when the hit is much
    /// closer to the origin than the triangle's vertices are (a cancellation of about
    /// |v0 - o| / t), which cost up to 1e-4 relative on Sponza's diffuse rays. The triangle comes
    /// from the pack the traversal just tested (the mesh's f32 corners, or the first corner and
    /// the edges that Möller–Trumbore tested), not from the mesh: its index and vertex arrays are
    /// two dependent cache misses per hit, which were a sixth of a random ray's time on the
    /// bunny (perf).
    #[inline]
    pub(crate) fn finish(&self, prim: u32, h: PackHit, ray: &Ray) -> Hit {
        self.finish_inline(prim, h, ray)
    }

    /// [`MeshBvh::finish`], always inlined: into a kernel of a SIMD level (`TraceInto`).
    #[inline(always)]
    fn finish_inline(&self, prim: u32, h: PackHit, ray: &Ray) -> Hit {
        let [a, r1, r2] = self.blocks.pack(h.pack).expect("a hit's pack exists").rows(h.lane);
        let a64 = a.as_dvec3();
        // The edges: the f32 edges that Möller–Trumbore packs store and test, or exact in f64
        // from the watertight packs' corners.
        let (e1, e2, e1_64, e2_64) = match self.options.triangle_test.pack_rows() {
            PackRows::Edges => (r1, r2, r1.as_dvec3(), r2.as_dvec3()),
            PackRows::Corners => (r1 - a, r2 - a, r1.as_dvec3() - a64, r2.as_dvec3() - a64),
        };
        let n = e1_64.cross(e2_64);
        let (o, d) = (Vec3::from(ray.origin()).as_dvec3(), Vec3::from(ray.dir()).as_dvec3());
        let ao = a64 - o;
        let t = n.dot(ao) / n.dot(d);
        // The plane's distance is ill-conditioned for a ray nearly in the triangle's plane: on a
        // fuzzed mesh with a vertex at 2e29 it gave 4.6e32 (or, negative, 0) for a graze that the
        // f32 test placed on the triangle's edge at t = 10. A refinement that moves the f32
        // distance by more than its rounding can explain is not trusted, and the f32 distance
        // stands: that rounding is relative to the distance, and to the distance from the
        // origin to the triangle's corner when the hit is much nearer (1e-4 relative was the
        // most seen, on Sponza's diffuse rays). (A select, not a branch to a better fallback:
        // code here that is not a select changes the register allocation of the caller's loop,
        // which costs every ray; `docs/performance.md`.)
        let slack = 1e-3 * h.t.abs() + 1e-5 * (ao.abs().max_element() / d.abs().max_element()) as f32;
        let t = t as f32;
        let t = if (t - h.t).abs() <= slack { t } else { h.t };
        let t = if t.is_finite() { t.clamp(ray.tmin, ray.tmax) } else { h.t };
        Hit { t, triangle: prim, u: h.u, v: h.v, normal: e1.cross(e2).normalize_or_zero() }
    }

    /// The traversal loop shared by every query: closest-first (`ANY = false`) or any-hit
    /// (`ANY = true`), with node bounds grown by `inflate` when `INFLATE` (swept boxes). Returns the
    /// leaf test's hit with its triangle, and what the walk visited. `ray` must be valid: each
    /// caller checks it once. Node tests compute in lanes `V` (the SIMD level).
    #[inline(always)]
    pub(super) fn traverse<V: Lanes8, const ANY: bool, const INFLATE: bool, const EARLY: bool, L: LeafTest>(
        &self,
        ray: &Ray,
        inflate: Vec3A,
        leaf: &mut L,
    ) -> (Option<(u32, L::Hit)>, QueryStats) {
        debug_assert!(ray.validate().is_ok(), "{ray:?}");
        // No separate test of the root box: the root node's lanes hold its children's boxes,
        // which the first node test checks anyway, lane for lane with the same arithmetic, so a
        // ray that misses the root misses them all for the price of that one test; a scalar root
        // test first cost every ray instructions (`docs/performance.md`).
        if self.blocks.is_empty() {
            return (None, QueryStats::default());
        }
        let (tmin, tmax) = (ray.tmin, leaf.walk_tmax(ray.tmax));
        let mut packs = PackVisitor::<ANY, L, EARLY> { blocks: &self.blocks, leaf, best: None, tested: 0 };
        let mut stack = FixedStack::<_, STACK>::new();
        // Rays take the fused node test where it applies, in a loop of its own: only that form's
        // per-ray constants are live in it.
        let fused = if INFLATE { None } else { FusedRay8::<V>::new(ray) };
        let nodes = match fused {
            Some(fused) => closest_first::<ANY, false, _, _, _, _>(
                &self.blocks,
                ChildRef::node(0),
                &fused,
                tmin,
                tmax,
                &mut stack,
                &mut packs,
            ),
            None if INFLATE => closest_first::<ANY, true, _, _, _, _>(
                &self.blocks,
                ChildRef::node(0),
                &Ray8::<V>::new(ray, inflate),
                tmin,
                tmax,
                &mut stack,
                &mut packs,
            ),
            None => closest_first::<ANY, false, _, _, _, _>(
                &self.blocks,
                ChildRef::node(0),
                &Ray8::<V, true>::lowered(ray),
                tmin,
                tmax,
                &mut stack,
                &mut packs,
            ),
        };
        (packs.best, QueryStats { nodes: nodes.into(), leaves: packs.tested.into() })
    }
}

/// The mesh's leaves for the shared traversal loop: each leaf index is a triangle pack, tested by
/// `leaf`; a hit clips the ray (closest hit) or ends the walk (`ANY`).
pub(super) struct PackVisitor<'a, const ANY: bool, L: LeafTest, const EARLY: bool = false> {
    pub(super) blocks: &'a Blocks,
    pub(super) leaf: &'a mut L,
    pub(super) best: Option<(u32, L::Hit)>,
    /// Packs tested.
    pub(super) tested: u32,
}

impl<const ANY: bool, L: LeafTest, const EARLY: bool> LeafVisitor for PackVisitor<'_, ANY, L, EARLY> {
    #[inline(always)]
    fn visit(&mut self, leaf: ChildRef, _entry: f32, tmax: &mut f32) -> bool {
        self.tested += 1;
        // SAFETY: the traversal visits only leaf references read from this BVH's nodes, and never
        // an empty slot's (see `Blocks::pack_unchecked`).
        let p = unsafe { self.blocks.pack_of_leaf(leaf) };
        if let Some((prim, t, h)) = self.leaf.test::<ANY>(leaf.index(), p, *tmax) {
            self.best = Some((prim, h));
            if ANY || self.leaf.stopped() {
                return false;
            }
            *tmax = self.leaf.walk_tmax(t);
        }
        true
    }

    /// Children that wait on the stack are fetched now: traversal is bound by the latency of node
    /// and pack loads. Nodes and packs share one block array, so either address is the same sum.
    #[inline(always)]
    fn prefetch(&self, child: ChildRef) {
        self.blocks.prefetch_child(child);
    }

    /// With `EARLY` (a BVH of [`LARGE_BVH_BYTES`](super::LARGE_BVH_BYTES) or more, or an
    /// incoherent ray: a walk of its own in the binary): the first two lines of every child, before
    /// the node test, so that from memory or the last-level cache a child's load overlaps the test
    /// that picks it. A coherent ray finds its children in the nearer caches, and the loads only
    /// cost it issue slots.
    #[inline(always)]
    fn prefetch_children(&self, node: &crate::wide::Node8) {
        if EARLY {
            // Two lines of each: one left the rest of a node to arrive after the test, and the
            // whole record cost more loads than it saved. An unused lane's reference names no
            // record, and its loads are aimed outside the canonical address range, where they
            // cost nothing: aimed where the reference points (past the array, unmapped) or at
            // the always-cached root node, they slowed the rays (`docs/performance.md`).
            for c in node.child {
                let at = if c.is_empty() { NOWHERE } else { self.blocks.block_ptr(c.index()) };
                crate::hint::prefetch(at);
                crate::hint::prefetch(at.wrapping_byte_add(64));
            }
        }
    }
}

/// An address outside x86-64's canonical range, for loads that must go nowhere (see
/// `prefetch_children`).
const NOWHERE: *const super::layout::Block = std::ptr::without_provenance(1 << 63);

/// Whether `ray` (valid) enters a child of `node`: the first node test of its walk when `node` is
/// the root, in the form (fused or exact) the build's lanes give, as the streams' walks take it. A ray that enters
/// none of the root's children hits nothing, which lets the ray streams settle it before
/// regrouping.
#[inline(always)]
pub(crate) fn enters_node<L: Lanes8>(node: &crate::wide::Node8, ray: &Ray) -> bool {
    // Up to the raised `tmax` the walks cull with (`super::leaf::TriangleLeaf`): a hit at the ray's
    // very end may lie in a box whose rounded entry distance is just past it.
    let tmax = crate::wide::packet::raised_tmax(ray.tmax);
    let mask = match FusedRay8::<L>::new(ray) {
        Some(fused) => fused.test::<false>(node, tmax).0,
        None => Ray8::<L, true>::lowered(ray).test::<false>(node, tmax).0,
    };
    mask != 0
}

/// The nearest (or, with `ANY`, first) hit of one ray by one triangle test, as a kernel for
/// [`dispatch()`].
pub(super) struct TraceNearest<'a, const ANY: bool, const WATERTIGHT: bool, const EARLY: bool> {
    pub(super) bvh: &'a MeshBvh,
    pub(super) ray: &'a Ray,
}

impl<const ANY: bool, const WATERTIGHT: bool, const EARLY: bool> WithLanes
    for TraceNearest<'_, ANY, WATERTIGHT, EARLY>
{
    type Output = (Option<(u32, PackHit)>, QueryStats);
    const EARLY_LOADS: bool = EARLY;

    #[inline(always)]
    fn run<V: Lanes8>(self) -> Self::Output {
        let leaf = &mut TriangleLeaf::<WATERTIGHT, _>::new(self.ray, Nearest);
        self.bvh.traverse::<V, ANY, false, EARLY, _>(self.ray, Vec3A::ZERO, leaf)
    }
}

/// One ray's walk with a caller's decision at each hit, as a kernel for [`dispatch()`].
struct TraceDeciding<'a, const ANY: bool, const EARLY: bool, D> {
    bvh: &'a MeshBvh,
    ray: &'a Ray,
    decide: D,
}

impl<const ANY: bool, const EARLY: bool, D: Decide> WithLanes for TraceDeciding<'_, ANY, EARLY, D> {
    type Output = (Option<(u32, PackHit)>, QueryStats);
    const EARLY_LOADS: bool = EARLY;

    #[inline(always)]
    fn run<V: Lanes8>(self) -> Self::Output {
        let (bvh, ray) = (self.bvh, self.ray);
        match bvh.options.triangle_test {
            TriangleTest::MollerTrumbore => bvh.traverse::<V, ANY, false, EARLY, _>(
                ray,
                Vec3A::ZERO,
                &mut TriangleLeaf::<false, _>::new(ray, self.decide),
            ),
            TriangleTest::Watertight => bvh.traverse::<V, ANY, false, EARLY, _>(
                ray,
                Vec3A::ZERO,
                &mut TriangleLeaf::<true, _>::new(ray, self.decide),
            ),
        }
    }
}

/// The closest hit of one ray, finished and written to `slot`, as a kernel for [`dispatch()`]
/// (`MeshBvh::intersect_valid_into`).
struct TraceInto<'a, const WATERTIGHT: bool, const EARLY: bool> {
    bvh: &'a MeshBvh,
    ray: &'a Ray,
    slot: &'a mut Option<Hit>,
}

impl<const WATERTIGHT: bool, const EARLY: bool> WithLanes for TraceInto<'_, WATERTIGHT, EARLY> {
    type Output = ();
    const EARLY_LOADS: bool = EARLY;

    #[inline(always)]
    fn run<V: Lanes8>(self) {
        let (bvh, ray) = (self.bvh, self.ray);
        let leaf = &mut TriangleLeaf::<WATERTIGHT, _>::new(ray, Nearest);
        let (found, _) = bvh.traverse::<V, false, false, EARLY, _>(ray, Vec3A::ZERO, leaf);
        *self.slot = found.map(|(prim, h)| bvh.finish_inline(prim, h, ray));
    }
}
