//! Batches of incoherent rays, traced a few at a time in one thread, each ray's memory loads
//! overlapping the others' work.
//!
//! A random ray through a large BVH waits on memory at most of its node and pack visits: the
//! next node is known only once the current one is tested, so one ray has one load in flight at
//! a time, apart from the children it pushes (prefetched, `crate::wide::traverse`). A batch has
//! no such limit. Here [`LANES`] rays take turns, one visit each: a ray that has chosen its next
//! node or pack prefetches it and yields to the next ray, and by its next turn the lines have
//! arrived. This is "asynchronous memory access chaining" (Kocberber, Falsafi and Grot, "AMAC",
//! VLDB 2015) applied to BVH traversal; Aila and Karras ("Architecture Considerations for
//! Tracing Incoherent Rays", HPG 2010) make the same case for many rays in flight per core.
//!
//! Each ray's walk is the single-ray walk of `crate::wide::traverse::closest_first`, step for
//! step: the same node test, the same order of children, the same pruning by the current
//! `tmax`, the same triangle test. Only the interleaving of rays differs, so every answer is
//! the single ray's answer, bit for bit (the tests below check it against `intersect`).
//!
//! It pays only where the nodes come from memory rather than cache: [`super::LARGE_BVH_BYTES`]
//! decides, by the BVH's size.

use std::mem::MaybeUninit;

use super::bvh::TriangleTest;
use super::bvh::{HINT_RUN, Hit, MeshBvh, STACK};
use super::layout::Blocks;
use super::leaf::{LeafTest, Nearest, TriangleLeaf};
use super::triangle::PackHit;
use crate::math::{Ray, RayCoherence};
use crate::wide::{ChildBoxTest, ChildRef, Entry, FusedRay8, Lanes8, Node8, Ray8, WithLanes, dispatch};

/// Rays in flight per thread: enough to cover a ray's wait on memory with the others' work,
/// chosen on the dragon's random and diffuse rays (`docs/performance.md`).
pub(super) const LANES: usize = 8;

/// One ray's walk, resumable one visit at a time: the closest hit, or with `ANY` any hit, with
/// node tests in lanes `L`. Its stack is borrowed from the thread's pool (`STACKS`).
struct Walk<'s, const ANY: bool, const WATERTIGHT: bool, L> {
    /// The ray's index in the batch.
    ray: usize,
    node_test: RayNodeTest<L>,
    leaf: TriangleLeaf<WATERTIGHT, Nearest>,
    tmin: f32,
    tmax: f32,
    /// The node or pack to visit next (prefetched when it was chosen).
    cur: ChildRef,
    best: Option<(u32, PackHit)>,
    sp: usize,
    stack: &'s mut Stack,
}

/// A walk's stack: 8 KB, so kept in the thread's pool rather than allocated per batch.
type Stack = [MaybeUninit<Entry>; STACK];

impl<'s, const ANY: bool, const WATERTIGHT: bool, L: Lanes8> Walk<'s, ANY, WATERTIGHT, L> {
    /// A walk of ray `r` from the root, on `stack`.
    #[inline(always)]
    fn new(r: usize, ray: &Ray, stack: &'s mut Stack) -> Self {
        let leaf = TriangleLeaf::new(ray, Nearest);
        Walk {
            ray: r,
            node_test: RayNodeTest::new(ray),
            tmin: ray.tmin,
            tmax: leaf.walk_tmax(ray.tmax),
            leaf,
            cur: ChildRef::node(0),
            best: None,
            sp: 0,
            stack,
        }
    }

    /// Starts this walk again, for ray `r` (the stack's old entries are never read again).
    #[inline(always)]
    fn restart(&mut self, r: usize, ray: &Ray) {
        (self.ray, self.node_test, self.leaf) = (r, RayNodeTest::new(ray), TriangleLeaf::new(ray, Nearest));
        let tmax = self.leaf.walk_tmax(ray.tmax);
        (self.tmin, self.tmax, self.cur, self.best, self.sp) = (ray.tmin, tmax, ChildRef::node(0), None, 0);
    }

    /// Visits `cur` and picks the next node or pack, as one turn of `closest_first`'s loop does.
    /// Returns `false` when the walk is over.
    #[inline(always)]
    fn step(&mut self, blocks: &Blocks) -> bool {
        let cur = self.cur;
        if cur.is_leaf() {
            // SAFETY: `cur` is a leaf reference read from this BVH's nodes (never an empty one).
            let p = unsafe { blocks.pack_of_leaf(cur) };
            if let Some((prim, t, h)) = self.leaf.test::<ANY>(cur.index(), p, self.tmax) {
                self.best = Some((prim, h));
                if ANY {
                    return false;
                }
                self.tmax = self.leaf.walk_tmax(t);
            }
        } else {
            // SAFETY: `cur` is the root (the BVH is not empty) or a node reference read from one
            // of its nodes.
            let node: &Node8 = unsafe { blocks.node_unchecked(cur.index()) };
            let (mut mask, near) = self.node_test.test(node, self.tmax);
            if mask != 0 {
                let d = near.to_array();
                let first = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if mask == 0 {
                    self.cur = node.child[first];
                    blocks.prefetch_child(self.cur);
                    return true;
                }
                assert!(self.sp + 8 <= STACK, "traversal stack overflow: the tree is deeper than its bound");
                if ANY {
                    // Any order will do: enter the first, the others wait in lane order.
                    while mask != 0 {
                        let l = mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        self.push_sorted(blocks, (node.child[l], self.tmin), self.sp);
                    }
                    self.cur = node.child[first];
                    blocks.prefetch_child(self.cur);
                    return true;
                }
                let second = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if mask == 0 {
                    let (n, f) = if d[second] < d[first] { (second, first) } else { (first, second) };
                    self.push_sorted(blocks, (node.child[f], d[f]), self.sp);
                    self.cur = node.child[n];
                    blocks.prefetch_child(self.cur);
                    return true;
                }
                // Three or more: all wait, sorted far to near, and the nearest is taken back.
                let run = self.sp;
                self.push_sorted(blocks, (node.child[first], d[first]), run);
                self.push_sorted(blocks, (node.child[second], d[second]), run);
                while mask != 0 {
                    let l = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    self.push_sorted(blocks, (node.child[l], d[l]), run);
                }
                self.sp -= 1;
                // SAFETY: the entry just written on top; it was prefetched as it was pushed.
                self.cur = unsafe { self.stack[self.sp].assume_init() }.0;
                return true;
            }
        }
        // The nearest waiting entry not beyond the current `tmax` (prefetched when pushed).
        while self.sp > 0 {
            self.sp -= 1;
            // SAFETY: entries below `sp` were written.
            let e = unsafe { self.stack[self.sp].assume_init() };
            if ANY || e.1 <= self.tmax {
                self.cur = e.0;
                return true;
            }
        }
        false
    }

    /// Pushes `e` into the run of entries from `run`, sorted far to near (by insertion; entries
    /// of equal distance, as an any-hit walk's all are, stay in push order), and prefetches it.
    #[inline(always)]
    fn push_sorted(&mut self, blocks: &Blocks, e: Entry, run: usize) {
        blocks.prefetch_child(e.0);
        let mut j = self.sp;
        // SAFETY: entries run..sp were written.
        while j > run && unsafe { self.stack[j - 1].assume_init() }.1 < e.1 {
            self.stack[j] = self.stack[j - 1];
            j -= 1;
        }
        self.stack[j].write(e);
        self.sp += 1;
    }
}

impl MeshBvh {
    /// The closest hit of each of `rays` (all valid), written to `out` (as long as `rays`), with
    /// [`LANES`] rays in flight.
    pub(super) fn intersect_interleaved(&self, rays: &[Ray], out: &mut [Option<Hit>]) {
        debug_assert_eq!(rays.len(), out.len());
        let done = |r: usize, h: Option<(u32, PackHit)>| out[r] = h.map(|(prim, h)| self.finish(prim, h, &rays[r]));
        match self.options.triangle_test {
            TriangleTest::MollerTrumbore => self.interleave::<false, false>(rays, done),
            TriangleTest::Watertight => self.interleave::<false, true>(rays, done),
        }
    }

    /// [`MeshBvh::intersect_interleaved`] with each hit's key (see
    /// [`MeshBvh::intersect_keyed_unchecked`]).
    pub(super) fn intersect_interleaved_keyed(&self, rays: &[Ray], out: &mut [Option<(f32, Hit)>]) {
        debug_assert_eq!(rays.len(), out.len());
        let done =
            |r: usize, h: Option<(u32, PackHit)>| out[r] = h.map(|(prim, h)| (h.t, self.finish(prim, h, &rays[r])));
        match self.options.triangle_test {
            TriangleTest::MollerTrumbore => self.interleave::<false, false>(rays, done),
            TriangleTest::Watertight => self.interleave::<false, true>(rays, done),
        }
    }

    /// Whether each of `rays` (all valid) hits anything, written to `out` (as long as `rays`),
    /// with [`LANES`] rays in flight.
    pub(super) fn occluded_interleaved(&self, rays: &[Ray], out: &mut [bool]) {
        debug_assert_eq!(rays.len(), out.len());
        let done = |r: usize, h: Option<(u32, PackHit)>| out[r] = h.is_some();
        match self.options.triangle_test {
            TriangleTest::MollerTrumbore => self.interleave::<true, false>(rays, done),
            TriangleTest::Watertight => self.interleave::<true, true>(rays, done),
        }
    }

    /// Every ray's walk, [`LANES`] at a time, each finished one handed to `done` with its ray's
    /// index, at the SIMD level [`crate::simd_level`] chose.
    #[inline(never)]
    fn interleave<const ANY: bool, const WATERTIGHT: bool>(
        &self,
        rays: &[Ray],
        mut done: impl FnMut(usize, Option<(u32, PackHit)>),
    ) {
        if self.blocks.is_empty() {
            (0..rays.len()).for_each(|r| done(r, None));
            return;
        }
        // Up to LANES walks, on stacks from this thread's pool (nothing is allocated once it has
        // room); a finished walk takes the next ray, and the lanes drain at the end.
        with_stacks(|stacks| dispatch(Interleave::<ANY, WATERTIGHT, _> { bvh: self, rays, done, stacks }));
    }
}

/// [`MeshBvh::interleave`]'s walks, as a kernel for [`dispatch()`].
struct Interleave<'a, const ANY: bool, const WATERTIGHT: bool, F> {
    bvh: &'a MeshBvh,
    rays: &'a [Ray],
    done: F,
    stacks: &'a mut [Stack; LANES],
}

impl<const ANY: bool, const WATERTIGHT: bool, F: FnMut(usize, Option<(u32, PackHit)>)> WithLanes
    for Interleave<'_, ANY, WATERTIGHT, F>
{
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes8>(self) {
        let Interleave { bvh, rays, mut done, stacks } = self;
        let blocks = &bvh.blocks;
        let mut walks: [Option<Walk<ANY, WATERTIGHT, L>>; LANES] = [const { None }; LANES];
        let mut next = 0;
        let mut live = 0;
        for (slot, stack) in walks.iter_mut().zip(stacks.iter_mut()) {
            if next == rays.len() {
                break;
            }
            *slot = Some(Walk::new(next, &rays[next], stack));
            next += 1;
            live += 1;
        }
        while live > 0 {
            for slot in walks.iter_mut() {
                let Some(w) = slot else { continue };
                if w.step(blocks) {
                    continue;
                }
                done(w.ray, w.best);
                if next < rays.len() {
                    w.restart(next, &rays[next]);
                    next += 1;
                } else {
                    *slot = None;
                    live -= 1;
                }
            }
        }
    }
}

/// The node test of a ray's walk: the fused form where the lanes' level and the ray allow it,
/// else the exact one, as the single ray's walk (`MeshBvh::traverse`) chooses.
enum RayNodeTest<L> {
    Fused(FusedRay8<L>),
    Exact(Ray8<L, true>),
}

impl<L: Lanes8> RayNodeTest<L> {
    #[inline(always)]
    fn new(ray: &Ray) -> Self {
        match FusedRay8::<L>::new(ray) {
            Some(fused) => RayNodeTest::Fused(fused),
            None => RayNodeTest::Exact(Ray8::lowered(ray)),
        }
    }

    /// The lanes of `node` the ray enters before `tmax`, and their entry distances.
    #[inline(always)]
    fn test(&self, node: &Node8, tmax: f32) -> (u32, L) {
        match self {
            RayNodeTest::Fused(f) => f.test::<false>(node, tmax),
            RayNodeTest::Exact(e) => e.test::<false>(node, tmax),
        }
    }
}

thread_local! {
    /// This thread's walk stacks, kept between batches.
    static STACKS: std::cell::RefCell<Option<Box<[Stack; LANES]>>> = const { std::cell::RefCell::new(None) };
}

/// Calls `f` with this thread's [`LANES`] walk stacks, or with fresh ones when they are in use on
/// this thread already.
fn with_stacks<R>(f: impl FnOnce(&mut [Stack; LANES]) -> R) -> R {
    let fresh = || Box::new([const { [const { MaybeUninit::uninit() }; STACK] }; LANES]);
    STACKS.with(|pool| match pool.try_borrow_mut() {
        Ok(mut stacks) => f(stacks.get_or_insert_with(fresh)),
        Err(_) => f(&mut fresh()),
    })
}

/// Hands `trace` the runs of [`HINT_RUN`] rays of `rays`, each judged by
/// [`RayCoherence::of_rays`]: a run to trace one ray after another with its hint (`Some(hint)`),
/// or, through a BVH that is `large` ([`LARGE_BVH_BYTES`](super::LARGE_BVH_BYTES) or more), each
/// stretch of consecutive incoherent runs to trace with several rays in flight (`None`).
/// Coherent rays go one by one whatever the BVH's size and the query: each follows its
/// neighbours' nodes, which are in cache, so rays in flight have no memory latency to hide and
/// only add their bookkeeping (`docs/performance.md`, "Batches: coherent rays one by one").
pub(super) fn by_runs(rays: &[Ray], large: bool, mut trace: impl FnMut(std::ops::Range<usize>, Option<RayCoherence>)) {
    let mut stretch = 0..0;
    for (k, run) in rays.chunks(HINT_RUN).enumerate() {
        let span = k * HINT_RUN..k * HINT_RUN + run.len();
        let hint = RayCoherence::of_rays(run);
        if large && hint == RayCoherence::Incoherent {
            stretch = if stretch.is_empty() { span } else { stretch.start..span.end };
            continue;
        }
        if !stretch.is_empty() {
            trace(std::mem::replace(&mut stretch, 0..0), None);
        }
        trace(span, Some(hint));
    }
    if !stretch.is_empty() {
        trace(stretch, None);
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec3A};

    use super::{HINT_RUN, by_runs};
    use crate::math::RayCoherence;
    use crate::{BuildOptions, MeshBvh, Ray, TriMesh, TriangleTest};
    use slabtree_testkit::rng::Rng;

    /// A soup of `n` small random triangles in the unit cube.
    fn soup(n: usize, seed: &mut Rng) -> TriMesh {
        let mut p = Vec::new();
        for _ in 0..n {
            let c = Vec3::new(seed.unit(), seed.unit(), seed.unit());
            for _ in 0..3 {
                p.push(c + 0.1 * Vec3::new(seed.unit() - 0.5, seed.unit() - 0.5, seed.unit() - 0.5));
            }
        }
        let tris = (0..n as u32).map(|i| [3 * i, 3 * i + 1, 3 * i + 2]).collect();
        TriMesh::new(p, tris).unwrap()
    }

    /// Rays from around the cube to points in it, with some that the fused node test refuses (a
    /// negative `tmin`, a zero direction component) and some that miss everything.
    fn rays(n: usize, seed: &mut Rng) -> Vec<Ray> {
        (0..n)
            .map(|i| {
                let o = Vec3::new(seed.unit(), seed.unit(), seed.unit()) * 3.0 - Vec3::splat(1.0);
                let to = Vec3::new(seed.unit(), seed.unit(), seed.unit());
                let mut d = to - o;
                match i % 7 {
                    0 => d.y = 0.0,
                    1 => return Ray::new(o, d).with_range(-1.0, f32::INFINITY),
                    2 => d = -d,
                    3 => return Ray::new(o, d).with_range(0.0, 0.5 * seed.unit()),
                    _ => {}
                }
                Ray::new(o, d)
            })
            .collect()
    }

    /// Every answer of the interleaved walks (closest and any hit) is the single ray's, bit for
    /// bit, in both triangle tests, for batches of every length around the lane count (filling and draining the
    /// lanes) and a long one.
    #[test]
    fn interleaved_hits_are_the_single_ray_hits() {
        let mut seed = Rng(7);
        let mesh = soup(3000, &mut seed);
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..BuildOptions::default() });
            for n in (0..=2 * super::LANES + 1).chain([700]) {
                let rays = rays(n, &mut seed);
                let mut got = vec![None; n];
                bvh.intersect_interleaved(&rays, &mut got);
                let want: Vec<_> = rays.iter().map(|r| bvh.intersect(r).unwrap()).collect();
                assert_eq!(got, want, "{test:?}, {n} rays");
                let mut got = vec![false; n];
                bvh.occluded_interleaved(&rays, &mut got);
                let want_any: Vec<_> = rays.iter().map(|r| bvh.occluded(r).unwrap()).collect();
                assert_eq!(got, want_any, "{test:?}, {n} rays, any hit");
                if n == 700 {
                    let hits = want.iter().filter(|h| h.is_some()).count();
                    assert!(hits > 100 && hits < 600, "{hits} of the rays hit something");
                }
            }
        }
    }

    /// The runs cover the rays once, in order; through a large BVH only the incoherent runs go in
    /// flight, joined where they follow one another; through a small one every run goes one by
    /// one with its own hint.
    #[test]
    fn runs_go_in_flight_where_they_gain() {
        let mut seed = Rng(3);
        // Runs: coherent, incoherent, incoherent, coherent, and a short incoherent tail.
        let coherent = |n: usize| (0..n).map(|i| Ray::new(Vec3A::ZERO, Vec3A::new(1.0, i as f32 * 1e-4, 0.0)));
        let random = |n: usize, seed: &mut Rng| rays(n, seed);
        let mut all: Vec<Ray> = coherent(HINT_RUN).collect();
        all.extend(random(2 * HINT_RUN, &mut seed));
        all.extend(coherent(HINT_RUN));
        all.extend(random(100, &mut seed));
        let hints: Vec<RayCoherence> = all.chunks(HINT_RUN).map(RayCoherence::of_rays).collect();
        use RayCoherence::{Coherent, Incoherent};
        assert_eq!(hints, [Coherent, Incoherent, Incoherent, Coherent, Incoherent], "the runs as planned");
        let spans = |large: bool| {
            let mut got = Vec::new();
            by_runs(&all, large, |s: std::ops::Range<usize>, h: Option<RayCoherence>| got.push((s, h)));
            got
        };
        let (r, n) = (HINT_RUN, all.len());
        assert_eq!(
            spans(true),
            [(0..r, Some(Coherent)), (r..3 * r, None), (3 * r..4 * r, Some(Coherent)), (4 * r..n, None)]
        );
        let one_by_one: Vec<_> = (0..hints.len()).map(|k| (k * r..(k * r + r).min(n), Some(hints[k]))).collect();
        assert_eq!(spans(false), one_by_one);
    }
}
