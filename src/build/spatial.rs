//! Spatial splits: the SBVH of Stich, Friedrich and Dietrich ("Spatial Splits in Bounding Volume
//! Hierarchies", HPG 2009), for the mesh BVH's `BuildQuality::High`.
//!
//! An object split sends each triangle to one side, so two children whose triangles are long and
//! thin (an interior's walls, floors and mouldings) overlap, and a ray crossing the overlap visits
//! both. A spatial split cuts space at a plane instead: a triangle that straddles the plane goes
//! to both sides, each with the box of its part on that side, and the children do not overlap.
//! The price is references: one triangle can sit in several leaves.
//!
//! At every node of more than [`HANDOVER`] references, the binned object split of
//! [`BinnedSah`] is the first candidate. Where its two children overlap by more than
//! [`SpatialSplits::alpha`] of the root's area (Stich's α), spatial splits are tried too: each
//! axis is cut into [`SPATIAL_BINS`] slabs, every reference is clipped into the slabs it spans,
//! and the plane with the lowest SAH cost, counting a straddling reference on both sides, is
//! compared with the object split. A straddling reference is kept whole on one side where that is
//! cheaper (Stich's reference unsplitting). The references a node may add are a share of the
//! whole build's budget, split between the children by their sizes, as in Embree's spatial
//! builder, so the tree does not depend on the order subtrees are built in or on the thread
//! count. Smaller nodes, and nodes below the budget or the depth guard, are built by the object
//! splits of [`BinnedSah`] alone.
//!
//! A reference's box is the bounds of its part of the triangle, found by clipping the triangle's
//! edges at the plane in `f64` and rounding the crossing points outwards to `f32`, so that every
//! box holds its part of the triangle whatever the rounding.

use glam::{Vec3, Vec3A};

use super::item::{Bounds4, BuildItem};
use super::segments::place;
use super::split::{BinnedSah, BuildNode, bounds_of, centroid_bounds};
use crate::math::Aabb;

/// Nodes of at most this many references are built by object splits alone.
pub const HANDOVER: usize = 16;

/// Slabs per axis of a spatial split's binning (Embree's spatial builder also uses 16).
pub const SPATIAL_BINS: usize = 16;

/// Beyond this depth every split is an object split (the object builder then guards the rest).
const SPATIAL_DEPTH: u32 = 40;

/// The spatial split builder's settings.
#[derive(Clone, Copy, Debug)]
pub struct SpatialSplits {
    /// The object splits, and the leaf and cost settings.
    pub object: BinnedSah,
    /// Spatial splits are tried where the object split's children overlap by more than this share
    /// of the root's surface area (Stich's α).
    pub alpha: f32,
    /// References the build may add, as a share of the triangles (0.25: at most 1.25 references
    /// per triangle).
    pub budget: f32,
}

/// A spatial split: its SAH cost (in the units of [`BinnedSah::sweep`]), axis and plane.
#[derive(Clone, Copy)]
struct Plane {
    cost: f32,
    axis: usize,
    at: f32,
}

impl SpatialSplits {
    /// Builds over `n` triangles, whose box and index `item(i)` gives and whose corners
    /// `triangle(i)` gives. Returns the references, reordered so that every leaf covers a
    /// contiguous range (a triangle's index may appear in several leaves), and the binary tree.
    pub fn build(
        &self,
        n: u32,
        item: impl Fn(u32) -> BuildItem + Sync + Send,
        triangle: impl Fn(u32) -> [Vec3; 3] + Sync + Send,
    ) -> (Vec<BuildItem>, Vec<BuildNode>) {
        let refs: Vec<BuildItem> = crate::par::map_range(n, 4096, item);
        let (mut nodes, mut items) = (Vec::with_capacity(2 * refs.len()), Vec::with_capacity(refs.len()));
        if refs.is_empty() {
            return (items, nodes);
        }
        let root = bounds_of(&refs).aabb();
        let ctx = Context { s: self, triangle: &triangle, min_overlap: self.alpha * root.half_area() };
        let budget = (self.budget.max(0.0) * n as f32) as usize;
        ctx.node(refs, budget, 0, &mut nodes, &mut items);
        (items, nodes)
    }
}

/// What every node of one build reads.
struct Context<'a, T> {
    s: &'a SpatialSplits,
    triangle: &'a T,
    /// `alpha` times the root's half area: the overlap above which spatial splits are tried.
    min_overlap: f32,
}

impl<T: Fn(u32) -> [Vec3; 3] + Sync + Send> Context<'_, T> {
    /// Builds the subtree over `refs`, which may add `budget` references, `depth` levels down:
    /// its nodes go to `nodes` in pre-order (links as indices into `nodes`), its leaves' references
    /// to `items` (leaf ranges as indices into `items`).
    fn node(
        &self,
        refs: Vec<BuildItem>,
        budget: usize,
        depth: u32,
        nodes: &mut Vec<BuildNode>,
        items: &mut Vec<BuildItem>,
    ) {
        let object = &self.s.object;
        let bounds = bounds_of(&refs);
        if refs.len() <= HANDOVER || depth >= SPATIAL_DEPTH {
            return self.hand_over(refs, bounds, depth, nodes, items);
        }
        let centroids = centroid_bounds(&refs);
        let candidate = object.object_candidate(&refs, &bounds.aabb(), &centroids);
        let (object_cost, overlap) = (candidate.cost, candidate.overlap);
        let spatial =
            if budget > 0 && overlap > self.min_overlap { self.best_plane(&refs, &bounds.aabb()) } else { None };
        let (left, right, added) = match spatial {
            Some(p) if p.cost < object_cost => self.split_at(refs, p, budget),
            _ => {
                let mut refs = refs;
                let mut scratch = refs.clone();
                let split = match object.make_split(&refs, &mut scratch, &candidate) {
                    Some(split) => Some(split),
                    None => object.choose_split(&mut refs, &mut scratch, &bounds.aabb(), &centroids, depth),
                };
                let Some(split) = split else {
                    return self.hand_over(refs, bounds, depth, nodes, items);
                };
                let mut parted = if split.moved { scratch } else { refs };
                let right = parted.split_off(split.mid);
                (parted, right, 0)
            }
        };
        // The rest of the budget, shared by size.
        let rest = budget - added.min(budget);
        let left_budget = (rest as u64 * left.len() as u64 / (left.len() + right.len()) as u64) as usize;
        let right_budget = rest - left_budget;
        let me = nodes.len();
        nodes.push(BuildNode::Leaf { bounds: bounds.aabb(), first: 0, count: 0 }); // placeholder
        let left_index = nodes.len() as u32;
        let right_index;
        if left.len() + right.len() > object.parallel_threshold {
            // The right subtree on another thread, into vectors of its own, appended after.
            let (mut rn, mut ri) = (Vec::new(), Vec::new());
            crate::par::join(
                || self.node(left, left_budget, depth + 1, nodes, items),
                || self.node(right, right_budget, depth + 1, &mut rn, &mut ri),
            );
            right_index = nodes.len() as u32;
            append(nodes, items, rn, ri);
        } else {
            self.node(left, left_budget, depth + 1, nodes, items);
            right_index = nodes.len() as u32;
            self.node(right, right_budget, depth + 1, nodes, items);
        }
        nodes[me] = BuildNode::Inner { bounds: bounds.aabb(), left: left_index, right: right_index };
    }

    /// The subtree over `refs` by the object builder alone, its references appended to `items`.
    fn hand_over(
        &self,
        refs: Vec<BuildItem>,
        bounds: Bounds4,
        depth: u32,
        nodes: &mut Vec<BuildNode>,
        items: &mut Vec<BuildItem>,
    ) {
        let first = items.len();
        let centroids = centroid_bounds(&refs);
        let mut scratch = refs.clone();
        items.extend(refs);
        let base = nodes.len();
        let mut spawned = Vec::new();
        let mut sub = Vec::new();
        let at = u32::try_from(first).expect("fewer than 2^32 references");
        self.s.object.build_into(
            &mut items[first..],
            &mut scratch,
            true,
            at,
            depth,
            bounds.aabb(),
            centroids,
            &mut sub,
            &mut spawned,
        );
        place(&mut sub, spawned);
        nodes.extend(sub.into_iter().map(|n| shifted(n, base as u32, 0)));
    }

    /// The spatial split of lowest SAH cost over every axis of `bounds`, or `None` when no plane
    /// has references on both sides.
    fn best_plane(&self, refs: &[BuildItem], bounds: &Aabb) -> Option<Plane> {
        let blocks = self.s.object.block_counter();
        let mut best: Option<Plane> = None;
        for axis in 0..3 {
            let (lo, extent) = (bounds.min[axis], bounds.max[axis] - bounds.min[axis]);
            if extent.is_nan() || extent <= 0.0 {
                continue;
            }
            let planes = Slabs::new(lo, extent);
            let SlabBins { slab, enter, exit } = self.bin(refs, axis, &planes);
            // Sweep: the right side of boundary k (slabs k..) from the right, then the left.
            let mut right_area = [0.0f32; SPATIAL_BINS];
            let mut right_count = [0u32; SPATIAL_BINS];
            let (mut acc, mut count) = (Aabb::EMPTY, 0);
            for k in (1..SPATIAL_BINS).rev() {
                acc = acc.union(&slab[k]);
                count += exit[k];
                right_area[k] = acc.half_area();
                right_count[k] = count;
            }
            let (mut acc, mut count) = (Aabb::EMPTY, 0);
            for k in 1..SPATIAL_BINS {
                acc = acc.union(&slab[k - 1]);
                count += enter[k - 1];
                if count == 0 || right_count[k] == 0 {
                    continue;
                }
                let cost = acc.half_area() * blocks(count) + right_area[k] * blocks(right_count[k]);
                if best.is_none_or(|b| cost < b.cost) {
                    best = Some(Plane { cost, axis, at: planes.plane(k) });
                }
            }
        }
        best
    }

    /// The spatial bins of `refs` along `axis`: each reference clipped into the slabs it spans.
    /// Large nodes are binned in halves on rayon's threads and the halves merged (unions and
    /// integer sums, the same in any order).
    fn bin(&self, refs: &[BuildItem], axis: usize, planes: &Slabs) -> SlabBins {
        if refs.len() > PARALLEL_SPATIAL_BINNING && refs.len() > self.s.object.parallel_threshold {
            let (l, r) = refs.split_at(refs.len() / 2);
            let (a, b) = crate::par::join(|| self.bin(l, axis, planes), || self.bin(r, axis, planes));
            return a.merged(&b);
        }
        let mut bins =
            SlabBins { slab: [Aabb::EMPTY; SPATIAL_BINS], enter: [0; SPATIAL_BINS], exit: [0; SPATIAL_BINS] };
        for r in refs {
            let b = r.bounds();
            let (first, last) = (planes.slab_of(b.min[axis]), planes.slab_of(b.max[axis]));
            if first == last {
                bins.slab[first] = bins.slab[first].union(&b);
            } else {
                let t = (self.triangle)(r.index());
                clip_into_slabs(&t, &b, axis, planes, first, last, &mut bins.slab);
            }
            bins.enter[first] += 1;
            bins.exit[last] += 1;
        }
        bins
    }

    /// Sends every reference to the side of plane `p` it lies on; a straddling one is clipped
    /// into both, or kept whole on one side where that costs less (reference unsplitting), and
    /// always kept whole once `budget` references have been added. Returns both sides and the
    /// references added.
    fn split_at(&self, refs: Vec<BuildItem>, p: Plane, budget: usize) -> (Vec<BuildItem>, Vec<BuildItem>, usize) {
        let a = p.axis;
        let (mut left, mut right, mut straddling) = (Vec::new(), Vec::new(), Vec::new());
        let (mut lb, mut rb) = (Aabb::EMPTY, Aabb::EMPTY);
        for r in refs {
            let b = r.bounds();
            if b.max[a] <= p.at {
                lb = lb.union(&b);
                left.push(r);
            } else if b.min[a] >= p.at {
                rb = rb.union(&b);
                right.push(r);
            } else {
                straddling.push(r);
            }
        }
        let blocks = self.s.object.block_counter();
        let mut added = 0;
        for r in straddling {
            let b = r.bounds();
            let (l, rr) = split_box(&(self.triangle)(r.index()), &b, a, p.at);
            let (nl, nr) = (left.len() as u32, right.len() as u32);
            let whole_left = lb.union(&b).half_area() * blocks(nl + 1) + rb.half_area() * blocks(nr);
            let whole_right = lb.half_area() * blocks(nl) + rb.union(&b).half_area() * blocks(nr + 1);
            let both = lb.union(&l).half_area() * blocks(nl + 1) + rb.union(&rr).half_area() * blocks(nr + 1);
            let can_split = added < budget && is_box(&l) && is_box(&rr);
            if can_split && both < whole_left && both < whole_right {
                lb = lb.union(&l);
                rb = rb.union(&rr);
                left.push(BuildItem::new(l, r.index()));
                right.push(BuildItem::new(rr, r.index()));
                added += 1;
            } else if whole_left <= whole_right {
                lb = lb.union(&b);
                left.push(r);
            } else {
                rb = rb.union(&b);
                right.push(r);
            }
        }
        // Every reference straddling on one side and none on the other: no split after all; an
        // even cut of the list keeps the recursion going (the object builder's median guard).
        if left.is_empty() || right.is_empty() {
            let mut all = if left.is_empty() { right } else { left };
            let tail = all.split_off(all.len() / 2);
            return (all, tail, added);
        }
        (left, right, added)
    }
}

/// Nodes of more references than this bin their spatial splits on two threads.
const PARALLEL_SPATIAL_BINNING: usize = 1 << 14;

/// One axis's spatial bins: the box of the references' parts in each slab, and how many
/// references start and end in each.
struct SlabBins {
    slab: [Aabb; SPATIAL_BINS],
    enter: [u32; SPATIAL_BINS],
    exit: [u32; SPATIAL_BINS],
}

impl SlabBins {
    /// The bins of both halves' references.
    fn merged(&self, other: &SlabBins) -> SlabBins {
        SlabBins {
            slab: std::array::from_fn(|k| self.slab[k].union(&other.slab[k])),
            enter: std::array::from_fn(|k| self.enter[k] + other.enter[k]),
            exit: std::array::from_fn(|k| self.exit[k] + other.exit[k]),
        }
    }
}

/// The planes between [`SPATIAL_BINS`] slabs of equal width over `[lo, lo + extent]`.
struct Slabs {
    lo: f32,
    extent: f32,
    /// `SPATIAL_BINS / extent`.
    scale: f32,
}

impl Slabs {
    /// The slabs over `[lo, lo + extent]` (`extent > 0`).
    fn new(lo: f32, extent: f32) -> Slabs {
        Slabs { lo, extent, scale: SPATIAL_BINS as f32 / extent }
    }

    /// The slab holding coordinate `x` (clamped to the slabs; near a plane, either side of it:
    /// the binning clamps each part to its slab).
    #[inline(always)]
    fn slab_of(&self, x: f32) -> usize {
        let s = ((x - self.lo) * self.scale) as usize;
        s.min(SPATIAL_BINS - 1)
    }

    /// Plane `k` (`0 < k < SPATIAL_BINS`), between slabs `k - 1` and `k`. Every use of a plane
    /// goes through here, so the binning and the partition cut at the same coordinate.
    fn plane(&self, k: usize) -> f32 {
        self.lo + self.extent * (k as f32 / SPATIAL_BINS as f32)
    }

    /// [`Slabs::plane`] `k`, or `outer` for the outer ends (`k` 0 or [`SPATIAL_BINS`]), which
    /// bound nothing: a reference's box is clamped to the slabs anyway.
    fn plane_or(&self, k: usize, outer: f32) -> f32 {
        if k == 0 || k >= SPATIAL_BINS { outer } else { self.plane(k) }
    }
}

/// The boxes of the parts of triangle `t` within `b` on either side of the plane `x[axis] = at`:
/// the box around each edge's crossing of the plane ([`crossing`]) joins both sides' corners;
/// each side is then clamped to its half-space and to `b`. A side without any of the triangle is
/// empty ([`Aabb::EMPTY`]).
#[inline]
pub(crate) fn split_box(t: &[Vec3; 3], b: &Aabb, axis: usize, at: f32) -> (Aabb, Aabb) {
    let (mut left, mut right) = (Aabb::EMPTY, Aabb::EMPTY);
    for i in 0..3 {
        let (u, v) = (Vec3A::from(t[i]), Vec3A::from(t[(i + 1) % 3]));
        if u[axis] <= at {
            left = left.grow(u);
        }
        if u[axis] >= at {
            right = right.grow(u);
        }
        if (u[axis] < at && v[axis] > at) || (u[axis] > at && v[axis] < at) {
            let (lo, hi) = if u[axis] < v[axis] { (u, v) } else { (v, u) };
            let x = crossing(lo, lo[axis], hi, hi[axis], at);
            left = left.union(&x);
            right = right.union(&x);
        }
    }
    let (half_left, half_right) = (clamp_axis(b, axis, f32::NEG_INFINITY, at), clamp_axis(b, axis, at, f32::INFINITY));
    (clip(&left, &half_left), clip(&right, &half_right))
}

/// The relative margin around an edge's crossing of a plane (see [`crossing`]): `2⁻²⁰`.
const CROSSING_MARGIN: f32 = 1.0 / (1u32 << 20) as f32;

/// Grows `slab[first..=last]` by the boxes of the parts of triangle `t` within `b` in each of
/// those slabs (of `planes`, along `axis`): the part in a slab is a convex polygon whose corners
/// are the triangle's corners within the slab and its crossings of the slab's two planes, so its
/// box is theirs (clamped to the slab and to `b`). Each plane's crossing is found once, on the
/// two edges it cuts ([`crossing`], as [`split_box`] finds it); the slabs between
/// take the crossings of both their planes. [`split_box`] plane after plane gives boxes as
/// conservative, for twice the work.
fn clip_into_slabs(t: &[Vec3; 3], b: &Aabb, axis: usize, planes: &Slabs, first: usize, last: usize, slab: &mut [Aabb]) {
    // The corners in order along the axis, each with its coordinate there (a compare-exchange
    // network: a sort call for three showed in the build's profile, `docs/performance.md`).
    let mut v = t.map(|c| (c[axis], Vec3A::from(c)));
    for (i, j) in [(0, 1), (1, 2), (0, 1)] {
        if v[j].0 < v[i].0 {
            v.swap(i, j);
        }
    }
    let [(la, lo), (ma, mid), (ha, hi)] = v;
    // Where plane `at` cuts the triangle: on the long edge, and on the short edge it reaches.
    let cut = |at: f32| -> Aabb {
        let short = if at <= ma { crossing(lo, la, mid, ma, at) } else { crossing(mid, ma, hi, ha, at) };
        crossing(lo, la, hi, ha, at).union(&short)
    };
    // The crossing of each plane between the triangle's lowest and highest corner, shared by
    // the slabs on either side of it.
    let cut_within = |at: f32| if la < at && at < ha { cut(at) } else { Aabb::EMPTY };
    let mut below = cut_within(planes.plane_or(first, f32::NEG_INFINITY));
    for (k, s) in slab.iter_mut().enumerate().take(last + 1).skip(first) {
        let (from, to) = (planes.plane_or(k, f32::NEG_INFINITY), planes.plane_or(k + 1, f32::INFINITY));
        let above = cut_within(to);
        let mut part = below.union(&above);
        for (c, ca) in [(lo, la), (mid, ma), (hi, ha)] {
            if from <= ca && ca <= to {
                part = part.grow(c);
            }
        }
        *s = s.union(&clip(&part, &clamp_axis(b, axis, from, to)));
        below = above;
    }
}

/// The box around where edge `u`–`w` (whose coordinates along the split axis are `ua <= wa`)
/// crosses the plane at `at` there; both ends for an edge in the plane.
///
/// The crossing `u + (w − u)·s`, `s = (at − ua) / (wa − ua)`, is computed in `f32`: each of its
/// few operations is off by at most half a step of its result, and every intermediate is at most
/// `|u| + |w|` in magnitude (the crossing lies between `u` and `w`), so its error is below
/// `3·2⁻²⁴·(|u| + |w|)` per axis, and the margin of [`CROSSING_MARGIN`]`·(|u| + |w|)` covers it
/// and its own rounding with room to spare. (`s` itself may be off by a few steps, which moves
/// the point along the edge by a few steps of `|w − u|`: covered too.)
#[inline(always)]
fn crossing(u: Vec3A, ua: f32, w: Vec3A, wa: f32, at: f32) -> Aabb {
    let du = wa - ua;
    if du <= 0.0 {
        return Aabb::EMPTY.grow(u).grow(w);
    }
    let s = ((at - ua) / du).clamp(0.0, 1.0);
    let x = u + (w - u) * s;
    let margin = (u.abs() + w.abs()) * CROSSING_MARGIN;
    Aabb { min: x - margin, max: x + margin }
}

/// `b` with its extent along `axis` clamped to `[from, to]`. Built with a lane select, not by
/// writing one lane: a one-lane store that the next whole-vector load reads waits on store
/// forwarding (`docs/performance.md`, "High quality: spatial splits").
#[inline(always)]
fn clamp_axis(b: &Aabb, axis: usize, from: f32, to: f32) -> Aabb {
    let on = glam::BVec3A::new(axis == 0, axis == 1, axis == 2);
    Aabb {
        min: Vec3A::select(on, b.min.max(Vec3A::splat(from)), b.min),
        max: Vec3A::select(on, b.max.min(Vec3A::splat(to)), b.max),
    }
}

/// Whether `b` holds any point (not [`Aabb::EMPTY`]).
fn is_box(b: &Aabb) -> bool {
    b.min.cmple(b.max).all()
}

/// `a ∩ b`, or [`Aabb::EMPTY`] when they do not meet.
fn clip(a: &Aabb, b: &Aabb) -> Aabb {
    let c = Aabb { min: a.min.max(b.min), max: a.max.min(b.max) };
    if is_box(&c) { c } else { Aabb::EMPTY }
}

/// `n` with its links moved by `nodes` and its leaf range by `items`.
fn shifted(n: BuildNode, nodes: u32, items: u32) -> BuildNode {
    match n {
        BuildNode::Inner { bounds, left, right } => {
            BuildNode::Inner { bounds, left: left + nodes, right: right + nodes }
        }
        BuildNode::Leaf { bounds, first, count } => BuildNode::Leaf { bounds, first: first + items, count },
    }
}

/// Appends a subtree built into vectors of its own (`sub_nodes`, `sub_items`) after `nodes` and
/// `items`.
fn append(
    nodes: &mut Vec<BuildNode>,
    items: &mut Vec<BuildItem>,
    sub_nodes: Vec<BuildNode>,
    sub_items: Vec<BuildItem>,
) {
    let (n, i) = (nodes.len() as u32, u32::try_from(items.len()).expect("fewer than 2^32 references"));
    nodes.extend(sub_nodes.into_iter().map(|s| shifted(s, n, i)));
    items.extend(sub_items);
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec3;
    use slabtree_testkit::rng::Rng;

    /// A uniformly random point of triangle `t`, in `f64`.
    fn point_of(t: &[Vec3; 3], rng: &mut Rng) -> DVec3 {
        let (mut s, mut u) = (rng.unit() as f64, rng.unit() as f64);
        if s + u > 1.0 {
            (s, u) = (1.0 - s, 1.0 - u);
        }
        let [p0, p1, p2] = t.map(|p| p.as_dvec3());
        p0 + (p1 - p0) * s + (p2 - p0) * u
    }

    /// The slab boxes of a reference hold every point of its part of the triangle in their slab:
    /// random triangles, each first cut once (so that the reference's box is a part of it), then
    /// binned into slabs over the reference's extent or beyond it.
    #[test]
    fn slab_boxes_hold_their_parts_of_the_triangle() {
        let mut rng = Rng(0x5b1f_0002);
        let mut checked = 0;
        for i in 0..5_000 {
            let scale = [1.0f32, 1e3, 1e-2][i % 3];
            let t = [0, 1, 2].map(|_| Vec3::from(rng.unit3a() * scale));
            let whole = Aabb::from_points(t);
            let (cut_axis, axis) = (i % 3, (i / 3) % 3);
            let at = whole.min[cut_axis] + (whole.max[cut_axis] - whole.min[cut_axis]) * rng.unit();
            let (l, r) = split_box(&t, &whole, cut_axis, at);
            let b = if i % 2 == 0 { l } else { r };
            if !is_box(&b) || b.max[axis] <= b.min[axis] {
                continue;
            }
            // Slabs over the reference's extent, or over a wider range.
            let widen = [0.0f32, 0.3][i % 2] * (b.max[axis] - b.min[axis]);
            let planes = Slabs::new(b.min[axis] - widen, b.max[axis] - b.min[axis] + 2.0 * widen);
            let (first, last) = (planes.slab_of(b.min[axis]), planes.slab_of(b.max[axis]));
            let mut slab = [Aabb::EMPTY; SPATIAL_BINS];
            clip_into_slabs(&t, &b, axis, &planes, first, last, &mut slab);
            for _ in 0..16 {
                let p = point_of(&t, &mut rng);
                let tol = |x: f64| 1e-6 * x.abs().max(scale as f64);
                let within = |bx: &Aabb| {
                    (0..3).all(|a| bx.min[a] as f64 - tol(p[a]) <= p[a] && p[a] <= bx.max[a] as f64 + tol(p[a]))
                };
                if !within(&b) {
                    continue;
                }
                let k = planes.slab_of(p[axis] as f32).clamp(first, last);
                assert!(within(&slab[k]), "{t:?} in {b:?}, axis {axis}: {p:?} not in slab {k} {:?}", slab[k]);
                checked += 1;
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// A point of the triangle on one side of the plane lies in that side's box, for random
    /// triangles, planes through them and points on their edges and inside, at every scale.
    #[test]
    fn a_split_box_holds_its_part_of_the_triangle() {
        let mut rng = Rng(0x5b1f_0001);
        let mut checked = 0;
        for i in 0..20_000 {
            let scale = [1.0f32, 1e-3, 1e4, 3e7][i % 4];
            let offset = Vec3::splat([0.0f32, 1e3, -7e5][i % 3]);
            let t = [0, 1, 2].map(|_| Vec3::from(rng.unit3a() * scale) + offset);
            let b = Aabb::from_points(t);
            let axis = i % 3;
            let at = b.min[axis] + (b.max[axis] - b.min[axis]) * rng.unit();
            let (l, r) = split_box(&t, &b, axis, at);
            for _ in 0..8 {
                let p = point_of(&t, &mut rng);
                let inside = |bx: &Aabb| {
                    (0..3).all(|a| {
                        bx.min[a] as f64 <= p[a] + 1e-9 * p[a].abs().max(1.0)
                            && p[a] <= bx.max[a] as f64 + 1e-9 * p[a].abs().max(1.0)
                    })
                };
                if p[axis] < at as f64 {
                    assert!(inside(&l), "{t:?} axis {axis} at {at}: {p:?} not in {l:?}");
                    checked += 1;
                } else if p[axis] > at as f64 {
                    assert!(inside(&r), "{t:?} axis {axis} at {at}: {p:?} not in {r:?}");
                    checked += 1;
                }
            }
            // The crossing points, exactly where the plane meets an edge.
            for e in 0..3 {
                let (u, v) = (t[e].as_dvec3(), t[(e + 1) % 3].as_dvec3());
                if (u[axis] - at as f64) * (v[axis] - at as f64) < 0.0 {
                    let mut x = u + (v - u) * ((at as f64 - u[axis]) / (v[axis] - u[axis]));
                    // On the plane by definition (the f64 arithmetic may miss it by a step).
                    x[axis] = at as f64;
                    for bx in [&l, &r] {
                        for a in 0..3 {
                            assert!(
                                bx.min[a] as f64 <= x[a] && x[a] <= bx.max[a] as f64,
                                "{t:?} {axis} {at}: {x:?} {bx:?}"
                            );
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }
}
