//! Binned surface-area-heuristic builder (Wald, "On fast Construction of SAH-based Bounding Volume
//! Hierarchies", 2007).
//!
//! Primitives are binned by centroid into `bins` slots along each axis; the split plane with the
//! lowest SAH cost among the bin boundaries is taken. Subtrees above `parallel_threshold`
//! primitives are built on rayon's threads with `join`; the result is the same tree either way, in
//! depth-first order, so builds are deterministic.
//!
//! Two guards keep it robust: primitives whose centroids coincide are split at the object median,
//! and beyond depth 48 every split is an object median, so the depth is at most 48 + log2(n) for
//! any input (adversarial distributions can otherwise peel one primitive per level).

use glam::Vec4;
use wide::f32x4;

use super::bins::{Binning, PARALLEL_BINNING, Table};
use super::item::{Bounds4, BuildItem, xyz};
use super::segments::{PENDING, Segment, place};
use super::small_split::{EXACT_BELOW, median_split};
use super::split::{BinnedSah, BuildNode, Split};
use crate::math::Aabb;
use crate::wide::{Lanes8, WithLanes, dispatch};

const MEDIAN_DEPTH: u32 = 48;
const MAX_BINS: usize = 64;

impl BinnedSah {
    /// `c` items' cost in blocks, `ceil(c / block)`, as an `f32`. A power-of-two block (1 or 4
    /// in practice) shifts instead of dividing: an integer division per candidate split was the
    /// largest single cost of small nodes (about 30 cycles each, 60 to 90 per node).
    #[inline(always)]
    pub(super) fn block_counter(&self) -> impl Fn(u32) -> f32 + Copy {
        let block = self.block.max(1) as u32;
        let shift = block.is_power_of_two().then(|| block.trailing_zeros());
        move |c: u32| match shift {
            Some(s) => ((c >> s) + u32::from(c & ((1 << s) - 1) != 0)) as f32,
            None => c.div_ceil(block) as f32,
        }
    }

    /// Builds over `items`, which are reordered so that every leaf covers a contiguous range.
    /// Returns no nodes for no items.
    pub fn build(&self, items: &mut [BuildItem]) -> Vec<BuildNode> {
        // The partitions move items between `items` and this array, level by level (see
        // `build_into`); it is split along with the items, so parallel subtrees each have
        // their own part. Copied on rayon's threads when large (megabytes for a large mesh).
        let mut scratch = if items.len() > self.parallel_threshold {
            crate::par::map(items, 1 << 14, |it| *it)
        } else {
            items.to_vec()
        };
        let (mut out, spawned) = self.build_unplaced(items, &mut scratch);
        // Freed before the segments are copied into place, which holds their nodes twice for
        // a while: the two are a build's largest arrays.
        drop(scratch);
        place(&mut out, spawned);
        out
    }

    /// [`BinnedSah::build`] with the partitions' scratch given, as long as `items`, its
    /// contents ignored and left undefined: a mesh build reuses the memory of both arrays for
    /// its BVH (`crate::pages::Spare`). Its pages are handed back to the kernel while the
    /// segments are copied into place, as `build` frees its own scratch.
    pub(crate) fn build_with_scratch(&self, items: &mut [BuildItem], scratch: &mut [BuildItem]) -> Vec<BuildNode> {
        let (mut out, spawned) = self.build_unplaced(items, scratch);
        if !spawned.is_empty() {
            // SAFETY: an item is plain float data, for which zero bytes are valid.
            unsafe { crate::pages::release(scratch) };
        }
        place(&mut out, spawned);
        out
    }

    /// The build over `items` with `scratch` (as long), its parallel subtrees' segments not yet
    /// placed (`super::segments::place`).
    fn build_unplaced(&self, items: &mut [BuildItem], scratch: &mut [BuildItem]) -> (Vec<BuildNode>, Vec<Segment>) {
        debug_assert_eq!(items.len(), scratch.len());
        // At most 2n - 1 nodes (leaves of one item). Reserving the bound only reserves address
        // space; reserving less made the vector grow, and copy itself, near the end.
        let mut out = Vec::with_capacity(2 * items.len());
        crate::pages::advise_huge_capacity(&mut out);
        let mut spawned = Vec::new();
        if !items.is_empty() {
            let (bounds, centroids) = self.whole_bounds(items);
            self.build_into(items, scratch, true, 0, 0, bounds.aabb(), centroids, &mut out, &mut spawned);
        }
        (out, spawned)
    }

    /// Geometry and centroid bounds of all items, on several threads when they are many.
    fn whole_bounds(&self, items: &[BuildItem]) -> (Bounds4, Bounds4) {
        if items.len() > PARALLEL_BINNING && items.len() > self.parallel_threshold {
            let (l, r) = items.split_at(items.len() / 2);
            let (a, b) = crate::par::join(|| self.whole_bounds(l), || self.whole_bounds(r));
            return (a.0.union(&b.0), a.1.union(&b.1));
        }
        let (mut b, mut c) = (Bounds4::EMPTY, Bounds4::EMPTY);
        for it in items {
            b.add_item(it);
            c.grow(it.centroid2());
        }
        (b, c)
    }

    /// Builds the subtree over `items` (which start at `first` in the caller's array, `depth`
    /// levels down) into `out`, and the right subtrees it hands to other threads into segments
    /// pushed to `spawned` (see `super::segments`). `other` is the same range of the other array:
    /// `home` tells whether `items` is the caller's array, where every leaf's items must end. A
    /// builder that makes the upper levels itself (`super::spatial`) hands its smaller nodes
    /// here, `home`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_into(
        &self,
        items: &mut [BuildItem],
        other: &mut [BuildItem],
        home: bool,
        first: u32,
        depth: u32,
        bounds: Aabb,
        centroids: Bounds4,
        out: &mut Vec<BuildNode>,
        spawned: &mut Vec<Segment>,
    ) {
        let n = items.len();
        let split = if n <= 1 { None } else { self.choose_split(items, other, &bounds, &centroids, depth) };
        let Some(Split { mid, left: lb, right: rb, left_centroids: lc, right_centroids: rc, moved }) = split else {
            if !home {
                // A leaf's items end where the caller looks for them.
                other.copy_from_slice(items);
            }
            out.push(BuildNode::Leaf { bounds, first, count: n as u32 });
            return;
        };
        // A binned split moves the items to the other array, whose part then holds them.
        let (items, other, home) = if moved { (other, items, !home) } else { (items, other, home) };
        let me = out.len();
        out.push(BuildNode::Leaf { bounds, first, count: 0 }); // placeholder
        let (left, right) = items.split_at_mut(mid);
        let (left_other, right_other) = other.split_at_mut(mid);
        let right_first = first + mid as u32;
        let (left_index, right_index);
        if n > self.parallel_threshold {
            // The left subtree is built in place by this thread; the right one, which another
            // thread may take, into a segment of its own, placed after the whole build.
            left_index = out.len() as u32;
            let ((), segment) = crate::par::join(
                || self.build_into(left, left_other, home, first, depth + 1, lb, lc, out, spawned),
                || {
                    // A segment holds one node per parallel level and then a subtree of at
                    // most `parallel_threshold` items (see `super::segments`).
                    let mut nodes = Vec::with_capacity(2 * right.len().min(self.parallel_threshold) + 64);
                    let mut below = Vec::new();
                    self.build_into(right, right_other, home, right_first, depth + 1, rb, rc, &mut nodes, &mut below);
                    Segment::new(me as u32, nodes, below)
                },
            );
            right_index = PENDING;
            spawned.push(segment);
        } else {
            left_index = out.len() as u32;
            self.build_into(left, left_other, home, first, depth + 1, lb, lc, out, spawned);
            right_index = out.len() as u32;
            self.build_into(right, right_other, home, right_first, depth + 1, rb, rc, out, spawned);
        }
        out[me] = BuildNode::Inner { bounds, left: left_index, right: right_index };
    }

    /// Picks a split and partitions `items`; returns the split, or `None` for a leaf.
    /// `centroids` bounds the items' [`BuildItem::centroid2`].
    ///
    /// Compiled once per SIMD level and run at the one [`crate::simd_level`] chose, like the
    /// ray kernels (`crate::wide::dispatch`): the exact sweeps, the SAH sweep and the partition
    /// are inlined into it, and the binning is dispatched alike ([`BinnedSah::fill_bins`]). A
    /// crate built for the x86-64 baseline otherwise builds with SSE2 alone, where a lane
    /// select is three operations and an integer minimum four (`docs/performance.md`,
    /// "Mesh BVH builds"). The arithmetic is the same at every level (no contraction into
    /// fused multiply-adds), so the tree is too (`tests/determinism.rs`).
    pub(super) fn choose_split(
        &self,
        items: &mut [BuildItem],
        scratch: &mut [BuildItem],
        bounds: &Aabb,
        centroids: &Bounds4,
        depth: u32,
    ) -> Option<Split> {
        dispatch(ChooseSplit { sah: self, items, scratch, bounds, centroids, depth })
    }

    /// The binned object split of `items`, not yet made: its SAH cost (in [`BinnedSah::sweep`]'s
    /// units) and the half area of the overlap of its two sides' boxes, which a spatial split is
    /// weighed against (`super::spatial`); [`BinnedSah::make_split`] then makes it without
    /// binning again. The cost is infinite, and the overlap the whole box's, when the centroids
    /// do not spread.
    pub(super) fn object_candidate(&self, items: &[BuildItem], bounds: &Aabb, centroids: &Bounds4) -> ObjectCandidate {
        let n = items.len();
        let bins = if n > FINE_BINNING_ABOVE { self.bins } else { self.bins.min(16) }.clamp(2, MAX_BINS);
        if bins <= 16 {
            self.candidate::<16>(items, bounds, centroids, bins)
        } else if bins <= 32 {
            self.candidate::<32>(items, bounds, centroids, bins)
        } else {
            self.candidate::<MAX_BINS>(items, bounds, centroids, bins)
        }
    }

    /// [`BinnedSah::object_candidate`] over `bins` (at most `B`) bins per axis, binned as
    /// [`BinnedSah::binned_split`] bins.
    fn candidate<const B: usize>(
        &self,
        items: &[BuildItem],
        bounds: &Aabb,
        centroids: &Bounds4,
        bins: usize,
    ) -> ObjectCandidate {
        let none = ObjectCandidate { cost: f32::INFINITY, overlap: bounds.half_area(), plan: None };
        let extent = centroids.hi - centroids.lo;
        let live = [extent.x > 0.0, extent.y > 0.0, extent.z > 0.0];
        if !live.contains(&true) {
            return none;
        }
        let binning = Binning {
            base: xyz(centroids.lo),
            scale: xyz(Vec4::splat(bins as f32) / extent.max(Vec4::splat(f32::MIN_POSITIVE))),
            bins,
        };
        let mut table = Table::<B>::EMPTY;
        self.fill_bins::<B>(items, &binning, None, &mut table);
        let (cost, axis, boundary) = self.sweep(&table, bins, live);
        if !cost.is_finite() {
            return none;
        }
        let side = |r: std::ops::Range<usize>| table.bounds[axis][r].iter().fold(Bounds4::EMPTY, |b, bin| b.union(bin));
        let (left, right) = (side(0..boundary).aabb(), side(boundary..bins).aabb());
        let overlap = Aabb { min: left.min.max(right.min), max: left.max.min(right.max) };
        let overlap = if overlap.min.cmple(overlap.max).all() { overlap.half_area() } else { 0.0 };
        ObjectCandidate { cost, overlap, plan: Some(ObjectPlan { binning, axis, boundary, left, right }) }
    }

    /// Makes the object split `candidate` planned: `items` partitioned into `scratch`, as
    /// [`BinnedSah::binned_split`] partitions them. `None` when there is no plan, or when the
    /// partition leaves a side empty (`items` untouched): the caller then asks
    /// [`BinnedSah::choose_split`], which has the fallbacks.
    pub(super) fn make_split(
        &self,
        items: &[BuildItem],
        scratch: &mut [BuildItem],
        candidate: &ObjectCandidate,
    ) -> Option<Split> {
        let plan = candidate.plan.as_ref()?;
        let (mid, left_centroids, right_centroids) = match plan.axis {
            0 => partition::<0>(items, scratch, &plan.binning, plan.boundary),
            1 => partition::<1>(items, scratch, &plan.binning, plan.boundary),
            _ => partition::<2>(items, scratch, &plan.binning, plan.boundary),
        };
        if mid == 0 || mid == items.len() {
            return None;
        }
        Some(Split { mid, left: plan.left, right: plan.right, left_centroids, right_centroids, moved: true })
    }

    /// The binned SAH split over `bins` (at most `B`) bins per axis.
    #[inline(always)]
    fn binned_split<const B: usize>(
        &self,
        items: &mut [BuildItem],
        scratch: &mut [BuildItem],
        bounds: &Aabb,
        centroids: &Bounds4,
        axis: usize,
        bins: usize,
    ) -> Option<Split> {
        let n = items.len();
        let extent = centroids.hi - centroids.lo;
        let live = [extent.x > 0.0, extent.y > 0.0, extent.z > 0.0];
        // `w` stays zero in every lane of the binning arithmetic (see `BuildItem::centroid2`).
        let binning = Binning {
            base: xyz(centroids.lo),
            scale: xyz(Vec4::splat(bins as f32) / extent.max(Vec4::splat(f32::MIN_POSITIVE))),
            bins,
        };
        let only = self.longest_axis_only.then_some(axis);
        let mut table = Table::<B>::EMPTY;
        self.fill_bins::<B>(items, &binning, only, &mut table);
        let axes = [0, 1, 2].map(|a| live[a] && only.is_none_or(|o| o == a));
        let best = self.sweep(&table, bins, axes);
        let blocks = self.block_counter();
        let area = bounds.half_area();
        let split_cost = self.traversal_cost + if area > 0.0 { best.0 / area } else { 0.0 };
        if n <= self.max_leaf && split_cost >= blocks(n as u32) {
            return None;
        }
        if !best.0.is_finite() {
            return Some(median_split(items, axis));
        }
        let (_, a, boundary) = best;
        let (mid, left_centroids, right_centroids) = match a {
            0 => partition::<0>(items, scratch, &binning, boundary),
            1 => partition::<1>(items, scratch, &binning, boundary),
            _ => partition::<2>(items, scratch, &binning, boundary),
        };
        if mid == 0 || mid == n {
            // Not a split after all (it cannot happen with bins of positive count on both
            // sides, but rounding must not make it an endless loop); `items` is untouched.
            return Some(median_split(items, axis));
        }
        let side = |r: std::ops::Range<usize>| table.bounds[a][r].iter().fold(Bounds4::EMPTY, |b, bin| b.union(bin));
        Some(Split {
            mid,
            left: side(0..boundary).aabb(),
            right: side(boundary..bins).aabb(),
            left_centroids,
            right_centroids,
            moved: true,
        })
    }
}

/// Writes `items` to `scratch` (as long as `items`), those whose bin on axis `AXIS` is below
/// `boundary` first (see [`Binning::rel`]), and returns how many go left and the centroid bounds of both sides, gathered on
/// the way. The children are built from `scratch`, so nothing is copied back: the two arrays
/// trade places at each level, and only a leaf's items are copied home, not every level's.
/// Without a branch on the side: each item goes to the next left slot or the next right slot
/// (from the end), picked by a mask, because which side an item takes is unpredictable and an
/// in-place scan that swaps misplaced pairs pays a misprediction for it; writing every item to
/// both slots (the wrong copy overwritten later) would double the stores instead.
#[inline(always)]
pub(super) fn partition<const AXIS: usize>(
    items: &[BuildItem],
    scratch: &mut [BuildItem],
    binning: &Binning,
    boundary: usize,
) -> (usize, Bounds4, Bounds4) {
    let n = items.len();
    let scratch = &mut scratch[..n];
    let wide = |v: Vec4| f32x4::from(v.to_array());
    let (inf, neg_inf) = (wide(Bounds4::EMPTY.lo), wide(Bounds4::EMPTY.hi));
    let (mut left_lo, mut left_hi, mut right_lo, mut right_hi) = (inf, neg_inf, inf, neg_inf);
    let boundary = f32x4::splat(boundary as f32);
    // Before each item, `l + (n - r)` items have been placed, fewer than `n`: `l < r <= n`.
    let (mut l, mut r) = (0, n);
    for it in items.iter() {
        let c = it.centroid2();
        // `Binning::rel`'s test in every lane at once: all lanes set when the item goes
        // right, none when it goes left (a NaN included). The mask feeds the blends below
        // directly; made from a `bool` (`BVec4A::splat`), it took four table lookups per item.
        let right = f32x4::splat(binning.rel::<AXIS>(c)).simd_ge(boundary);
        let goes_left = !right.any();
        // The slot chosen by a mask, not a branch (which a partition mispredicts often).
        let m = usize::from(goes_left).wrapping_neg();
        let slot = (l & m) | ((r - 1) & !m);
        debug_assert!(slot < n);
        // SAFETY: `slot` is `l` or `r - 1`, and `l < r <= n` (above), the length of `scratch`.
        unsafe { *scratch.get_unchecked_mut(slot) = *it };
        // `fast_min` and `fast_max` are `Vec4::min` and `Vec4::max`, operand for operand.
        let c = wide(c);
        left_lo = left_lo.fast_min(right.select(inf, c));
        left_hi = left_hi.fast_max(right.select(neg_inf, c));
        right_lo = right_lo.fast_min(right.select(c, inf));
        right_hi = right_hi.fast_max(right.select(c, neg_inf));
        l += usize::from(goes_left);
        r -= usize::from(!goes_left);
    }
    debug_assert_eq!(l, r);
    let glam = |v: f32x4| Vec4::from_array(v.to_array());
    (l, Bounds4 { lo: glam(left_lo), hi: glam(left_hi) }, Bounds4 { lo: glam(right_lo), hi: glam(right_hi) })
}

/// [`BinnedSah::choose_split`] as a kernel for [`dispatch()`].
struct ChooseSplit<'a> {
    sah: &'a BinnedSah,
    items: &'a mut [BuildItem],
    scratch: &'a mut [BuildItem],
    bounds: &'a Aabb,
    centroids: &'a Bounds4,
    depth: u32,
}

impl WithLanes for ChooseSplit<'_> {
    type Output = Option<Split>;

    #[inline(always)]
    fn run<L: Lanes8>(self) -> Option<Split> {
        self.split()
    }
}

impl ChooseSplit<'_> {
    /// [`BinnedSah::choose_split`] at the level of the entry point it is inlined into.
    #[inline(always)]
    fn split(self) -> Option<Split> {
        let ChooseSplit { sah, items, scratch, bounds, centroids, depth } = self;
        let n = items.len();
        let extent = centroids.hi - centroids.lo;
        let axis = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        if extent[axis] <= 0.0 || depth >= MEDIAN_DEPTH {
            if n <= sah.max_leaf {
                return None;
            }
            return Some(median_split(items, axis));
        }
        // A split costs at least the traversal; when a leaf of all `n` items costs no more, no
        // split can win (the tests below would find the same), so the sort is skipped.
        if n <= sah.max_leaf && sah.traversal_cost >= (sah.block_counter())(n as u32) {
            return None;
        }
        if n <= EXACT_BELOW {
            return sah.exact_split(items, bounds, axis);
        }
        let bins = if n > FINE_BINNING_ABOVE { sah.bins } else { sah.bins.min(16) }.clamp(2, MAX_BINS);
        // The bin table is initialised for every node, so size it to the bins in use: a table
        // sized for the most bins would make zeroing it the main cost of a small node.
        if bins <= 16 {
            sah.binned_split::<16>(items, scratch, bounds, centroids, axis, bins)
        } else if bins <= 32 {
            sah.binned_split::<32>(items, scratch, bounds, centroids, axis, bins)
        } else {
            sah.binned_split::<MAX_BINS>(items, scratch, bounds, centroids, axis, bins)
        }
    }
}

/// A binned object split weighed but not yet made ([`BinnedSah::object_candidate`]).
pub(super) struct ObjectCandidate {
    /// Its SAH cost, in [`BinnedSah::sweep`]'s units (infinite when there is none).
    pub(super) cost: f32,
    /// The half area of the overlap of its two sides' boxes.
    pub(super) overlap: f32,
    plan: Option<ObjectPlan>,
}

/// Where an [`ObjectCandidate`] cuts: the binning, the axis and boundary, and both sides' boxes.
struct ObjectPlan {
    binning: Binning,
    axis: usize,
    boundary: usize,
    left: Aabb,
    right: Aabb,
}

/// Nodes of more items than this are binned with all of [`BinnedSah::bins`]; smaller ones with
/// at most 16, where the bins' initialisation and sweep, not the items, are the cost.
const FINE_BINNING_ABOVE: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3A;

    fn items(n: usize) -> Vec<BuildItem> {
        (0..n)
            .map(|i| {
                let x = (i as f32 * 0.618).fract() * 100.0;
                let y = (i as f32 * 0.377).fract() * 100.0;
                let b = Aabb::from_center_half_extents(Vec3A::new(x, y, i as f32 * 0.01), Vec3A::splat(0.5));
                BuildItem::new(b, i as u32)
            })
            .collect()
    }

    #[test]
    fn every_item_in_exactly_one_leaf_and_bounds_contain() {
        for (n, max_leaf, threshold, longest_axis_only) in [
            (1, 1, 8, false),
            (2, 1, 8, false),
            (1000, 1, 64, false),
            (1000, 4, 100000, false),
            (5000, 4, 256, false),
            (1000, 1, 64, true),
            (5000, 1, 100000, true),
        ] {
            let mut it = items(n);
            let b = BinnedSah { max_leaf, parallel_threshold: threshold, longest_axis_only, ..Default::default() };
            let nodes = b.build(&mut it);
            let mut seen = vec![0u32; n];
            for node in &nodes {
                match *node {
                    BuildNode::Leaf { bounds, first, count } => {
                        assert!(count as usize <= max_leaf);
                        for item in &it[first as usize..(first + count) as usize] {
                            seen[item.index() as usize] += 1;
                            assert!(bounds.contains(&item.bounds()));
                        }
                    }
                    BuildNode::Inner { bounds, left, right } => {
                        assert!(bounds.contains(nodes[left as usize].bounds()));
                        assert!(bounds.contains(nodes[right as usize].bounds()));
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n={n}");
        }
    }

    /// Parallel subtrees, and above `PARALLEL_BINNING` items parallel bounds and bins, give the
    /// serial build's tree and item order.
    #[test]
    fn parallel_and_serial_builds_are_identical() {
        for (n, longest_axis_only) in [(20_000, false), (3 * PARALLEL_BINNING, false), (3 * PARALLEL_BINNING, true)] {
            let mut a = items(n);
            let mut b = a.clone();
            let serial =
                BinnedSah { parallel_threshold: usize::MAX, longest_axis_only, ..Default::default() }.build(&mut a);
            let parallel = BinnedSah { parallel_threshold: 512, longest_axis_only, ..Default::default() }.build(&mut b);
            assert_eq!(serial, parallel);
            assert_eq!(a, b);
        }
    }

    /// Two slabs of boxes far apart in y, each spread over twice that distance in x: the best
    /// first split separates the slabs (along y), which binning all axes finds; binning only the
    /// axis of the widest centroid spread (x) cuts both slabs across instead.
    #[test]
    fn longest_axis_only_bins_the_widest_spread_alone() {
        let slabs = || -> Vec<BuildItem> {
            (0..400)
                .map(|i| {
                    let (x, y) = ((i / 2) as f32 * 0.1, if i % 2 == 0 { 0.0 } else { 10.0 });
                    BuildItem::new(Aabb::from_center_half_extents(Vec3A::new(x, y, 0.0), Vec3A::splat(0.05)), i)
                })
                .collect()
        };
        let root_children = |longest_axis_only: bool| {
            let mut it = slabs();
            let nodes = BinnedSah { longest_axis_only, ..Default::default() }.build(&mut it);
            let BuildNode::Inner { left, right, .. } = nodes[0] else { panic!("the root is a leaf") };
            [*nodes[left as usize].bounds(), *nodes[right as usize].bounds()]
        };
        // All axes: each child holds one slab, a box 0.1 high.
        for b in root_children(false) {
            assert!(b.max.y - b.min.y < 0.2, "{b:?}");
        }
        // The widest spread only: each child spans both slabs, across part of the x range.
        for b in root_children(true) {
            assert!(b.max.y - b.min.y > 10.0, "{b:?}");
            assert!(b.max.x - b.min.x < 15.0, "{b:?}");
        }
    }

    #[test]
    fn coincident_centroids_still_split() {
        let mut it: Vec<_> = (0..100).map(|i| BuildItem::new(Aabb::new(Vec3A::ZERO, Vec3A::ONE), i)).collect();
        let nodes = BinnedSah::default().build(&mut it);
        assert_eq!(nodes.iter().filter(|n| matches!(n, BuildNode::Leaf { .. })).count(), 100);
    }
}
