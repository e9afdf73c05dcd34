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

use glam::Vec3A;

use crate::math::Aabb;

/// One primitive to build over: its bounds, centroid and caller's index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildItem {
    /// The primitive's bounds.
    pub bounds: Aabb,
    /// The point binned (usually the bounds' centre).
    pub centroid: Vec3A,
    /// The caller's index of the primitive.
    pub index: u32,
}

impl BuildItem {
    /// An item whose centroid is the centre of its bounds.
    pub fn new(bounds: Aabb, index: u32) -> Self {
        BuildItem { bounds, centroid: bounds.center(), index }
    }
}

/// A node of the built binary tree. Node 0 is the root; children follow in depth-first order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BuildNode {
    /// An internal node with the indices of its two children.
    Inner {
        /// Bounds of the subtree.
        bounds: Aabb,
        /// Left child's node index.
        left: u32,
        /// Right child's node index.
        right: u32,
    },
    /// A leaf over `items[first .. first + count]` of the reordered item slice.
    Leaf {
        /// Bounds of the leaf's items.
        bounds: Aabb,
        /// First item.
        first: u32,
        /// Number of items.
        count: u32,
    },
}

impl BuildNode {
    /// The node's bounds.
    pub fn bounds(&self) -> &Aabb {
        match self {
            BuildNode::Inner { bounds, .. } | BuildNode::Leaf { bounds, .. } => bounds,
        }
    }
}

/// The builder's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinnedSah {
    /// Centroid bins per axis.
    pub bins: usize,
    /// Largest leaf. A node with more items is always split.
    pub max_leaf: usize,
    /// Cost of one node traversal relative to one primitive test.
    pub traversal_cost: f32,
    /// Subtrees larger than this are built in parallel.
    pub parallel_threshold: usize,
    /// Primitives are tested in blocks of this many (4 for SoA triangle packs), so the SAH counts
    /// a side's cost as `ceil(count / block)`, as Embree's builders do; a leaf of 4 then costs
    /// the same as a leaf of 1 and leaves come out full.
    pub block: usize,
}

impl Default for BinnedSah {
    fn default() -> Self {
        BinnedSah { bins: 16, max_leaf: 1, traversal_cost: 1.0, parallel_threshold: 8192, block: 1 }
    }
}

const MEDIAN_DEPTH: u32 = 48;
const MAX_BINS: usize = 64;

#[derive(Clone, Copy)]
struct Bin {
    bounds: Aabb,
    count: u32,
}

/// A chosen split: the left part's size and both parts' geometry bounds, which the bins already
/// hold, so no child scans its items for them. (Carrying centroid bounds per bin as well cost
/// more instructions than the scan it saves: 503M against 460M for the bunny, by callgrind.)
struct Split {
    mid: usize,
    left: Aabb,
    right: Aabb,
}

fn bounds_of(items: &[BuildItem]) -> Aabb {
    items.iter().fold(Aabb::EMPTY, |b, it| b.union(&it.bounds))
}

impl BinnedSah {
    /// `c` items' cost in blocks, `ceil(c / block)`, as an `f32`. A power-of-two block (1 or 4
    /// in practice) shifts instead of dividing: an integer division per candidate split was the
    /// largest single cost of small nodes (about 30 cycles each, 60 to 90 per node).
    #[inline(always)]
    fn block_counter(&self) -> impl Fn(u32) -> f32 + Copy {
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
        let mut out = Vec::with_capacity(2 * items.len() / self.max_leaf.max(1) + 1);
        if !items.is_empty() {
            self.build_into(items, 0, 0, bounds_of(items), &mut out);
        }
        out
    }

    fn build_into(&self, items: &mut [BuildItem], first: u32, depth: u32, bounds: Aabb, out: &mut Vec<BuildNode>) {
        let n = items.len();
        let split = if n <= 1 { None } else { self.choose_split(items, &bounds, depth) };
        let Some(Split { mid, left: lb, right: rb }) = split else {
            out.push(BuildNode::Leaf { bounds, first, count: n as u32 });
            return;
        };
        let me = out.len();
        out.push(BuildNode::Leaf { bounds, first, count: 0 }); // placeholder
        let (left, right) = items.split_at_mut(mid);
        let right_first = first + mid as u32;
        let (left_index, right_index);
        if n > self.parallel_threshold {
            let (lv, rv) = crate::par::join(
                || {
                    let mut v = Vec::new();
                    self.build_into(left, first, depth + 1, lb, &mut v);
                    v
                },
                || {
                    let mut v = Vec::new();
                    self.build_into(right, right_first, depth + 1, rb, &mut v);
                    v
                },
            );
            left_index = out.len() as u32;
            append_shifted(out, lv);
            right_index = out.len() as u32;
            append_shifted(out, rv);
        } else {
            left_index = out.len() as u32;
            self.build_into(left, first, depth + 1, lb, out);
            right_index = out.len() as u32;
            self.build_into(right, right_first, depth + 1, rb, out);
        }
        out[me] = BuildNode::Inner { bounds, left: left_index, right: right_index };
    }

    /// Picks a split and partitions `items`; returns the split, or `None` for a leaf.
    fn choose_split(&self, items: &mut [BuildItem], bounds: &Aabb, depth: u32) -> Option<Split> {
        let n = items.len();
        let cb = items.iter().fold(Aabb::EMPTY, |b, it| b.grow(it.centroid));
        let extent = cb.max - cb.min;
        let axis = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        if extent[axis] <= 0.0 || depth >= MEDIAN_DEPTH {
            if n <= self.max_leaf {
                return None;
            }
            return Some(median_split(items, axis));
        }
        if n <= EXACT_BELOW {
            return self.exact_split(items, bounds);
        }
        let bins = self.bins.clamp(2, MAX_BINS);
        // The bin table is initialised for every node, so size it to the bins in use: with the
        // default 16 bins, a 64-bin table made zeroing it the main cost of small nodes (measured
        // on the dynamic tree's treelet rebuilds).
        if bins <= 16 {
            self.binned_split::<16>(items, bounds, &cb, axis, bins)
        } else {
            self.binned_split::<MAX_BINS>(items, bounds, &cb, axis, bins)
        }
    }

    /// The binned SAH split over `bins` (at most `B`) bins per axis.
    fn binned_split<const B: usize>(
        &self,
        items: &mut [BuildItem],
        bounds: &Aabb,
        cb: &Aabb,
        axis: usize,
        bins: usize,
    ) -> Option<Split> {
        let n = items.len();
        let extent = cb.max - cb.min;
        let mut best = (f32::INFINITY, 0usize, 0usize); // cost, axis, boundary
        let empty = Bin { bounds: Aabb::EMPTY, count: 0 };
        let mut table = [[empty; B]; 3];
        let scale = Vec3A::splat(bins as f32) / extent.max(Vec3A::splat(f32::MIN_POSITIVE));
        for it in items.iter() {
            let rel = (it.centroid - cb.min) * scale;
            for a in 0..3 {
                if extent[a] <= 0.0 {
                    continue;
                }
                let b = bin_of(rel[a], bins);
                let bin = &mut table[a][b];
                bin.bounds = bin.bounds.union(&it.bounds);
                bin.count += 1;
            }
        }
        let blocks = self.block_counter();
        let mut right_area = [0.0f32; B];
        let mut right_count = [0u32; B];
        for (a, bins_a) in table.iter().enumerate() {
            if extent[a] <= 0.0 {
                continue;
            }
            // Sweep from the right: right_area[i] covers bins i.. .
            let mut acc = Aabb::EMPTY;
            let mut cnt = 0;
            for i in (1..bins).rev() {
                acc = acc.union(&bins_a[i].bounds);
                cnt += bins_a[i].count;
                right_area[i] = acc.half_area();
                right_count[i] = cnt;
            }
            let mut acc = Aabb::EMPTY;
            let mut cnt = 0;
            for i in 1..bins {
                acc = acc.union(&bins_a[i - 1].bounds);
                cnt += bins_a[i - 1].count;
                if cnt == 0 || right_count[i] == 0 {
                    continue;
                }
                let cost = acc.half_area() * blocks(cnt) + right_area[i] * blocks(right_count[i]);
                if cost < best.0 {
                    best = (cost, a, i);
                }
            }
        }
        let area = bounds.half_area();
        let split_cost = self.traversal_cost + if area > 0.0 { best.0 / area } else { 0.0 };
        if n <= self.max_leaf && split_cost >= blocks(n as u32) {
            return None;
        }
        if !best.0.is_finite() {
            return Some(median_split(items, axis));
        }
        let (_, a, boundary) = best;
        let mut mid = 0;
        for i in 0..n {
            let b = bin_of((items[i].centroid[a] - cb.min[a]) * scale[a], bins);
            if b < boundary {
                items.swap(i, mid);
                mid += 1;
            }
        }
        if mid == 0 || mid == n {
            return Some(median_split(items, axis));
        }
        let side = |r: std::ops::Range<usize>| table[a][r].iter().fold(Aabb::EMPTY, |b, bin| b.union(&bin.bounds));
        Some(Split { mid, left: side(0..boundary), right: side(boundary..bins) })
    }
}

/// The bin of a centroid `rel` bins above the low end: `rel` truncated and clamped to
/// `0..bins` (NaN to 0), as `(rel as usize).min(bins - 1)` but through `i32`, whose saturating
/// conversion is three instructions on x86-64 where `usize`'s is a dozen. It runs three times per
/// item per level: measured with callgrind, the `usize` cast was 9% of a tree rebuild.
#[inline(always)]
fn bin_of(rel: f32, bins: usize) -> usize {
    (rel as i32).clamp(0, bins as i32 - 1) as usize
}

impl BinnedSah {
    /// Full-sweep SAH for a handful of items: every boundary of the centroid order on every axis
    /// (as Wald 2007 does below his binning threshold). Cheaper than a bin table at this size and
    /// exact. Ties in centroid order are broken by index, so the result is deterministic.
    ///
    /// The sorts run over (key, position) pairs on the stack and the items are permuted once at
    /// the end: sorting the 64-byte items themselves, once per axis, was most of the cost of the
    /// dynamic tree's treelet rebuilds (measured with callgrind).
    fn exact_split(&self, items: &mut [BuildItem], bounds: &Aabb) -> Option<Split> {
        let n = items.len();
        debug_assert!((2..=EXACT_BELOW).contains(&n));
        let block_count = self.block_counter();
        let blocks = |c: usize| block_count(c as u32);
        let mut best = (f32::INFINITY, 0usize, 0usize); // cost, axis, boundary
        let mut best_order = [0u8; EXACT_BELOW];
        let mut order = [0u8; EXACT_BELOW];
        let mut right_area = [0.0f32; EXACT_BELOW + 1];
        let mut keys = [(0u64, 0u8); EXACT_BELOW];
        for a in 0..3 {
            // Insertion sort of positions by (centroid, index), n at most 12, on keys that order
            // as integers exactly as that pair does (`total_cmp`, then the index): one compare
            // per step instead of two loads from the items and a float total order (measured
            // with callgrind: the sort was a sixth of a tree rebuild).
            for (i, it) in items.iter().enumerate() {
                keys[i] = ((total_order_key(it.centroid[a]) as u64) << 32 | u64::from(it.index), i as u8);
            }
            for i in 1..n {
                let (k, mut j) = (keys[i], i);
                while j > 0 && keys[j - 1].0 > k.0 {
                    keys[j] = keys[j - 1];
                    j -= 1;
                }
                keys[j] = k;
            }
            for (o, k) in order.iter_mut().zip(&keys[..n]) {
                *o = k.1;
            }
            let b = |i: usize| &items[order[i] as usize].bounds;
            let mut acc = Aabb::EMPTY;
            for i in (1..n).rev() {
                acc = acc.union(b(i));
                right_area[i] = acc.half_area();
            }
            let mut acc = Aabb::EMPTY;
            let mut improved = false;
            for (i, &right) in right_area.iter().enumerate().take(n).skip(1) {
                acc = acc.union(b(i - 1));
                let cost = acc.half_area() * blocks(i) + right * blocks(n - i);
                if cost < best.0 {
                    best = (cost, a, i);
                    improved = true;
                }
            }
            if improved || a == 0 {
                best_order = order;
            }
        }
        let area = bounds.half_area();
        let split_cost = self.traversal_cost + if area > 0.0 { best.0 / area } else { 0.0 };
        if n <= self.max_leaf && split_cost >= blocks(n) {
            return None;
        }
        // Put the items in the chosen axis's order.
        let copy: [BuildItem; EXACT_BELOW] = std::array::from_fn(|i| items[best_order[i.min(n - 1)] as usize]);
        items.copy_from_slice(&copy[..n]);
        // A NaN-free but degenerate sweep (all costs infinite) still splits at the middle.
        let mid = if best.0.is_finite() { best.2 } else { n / 2 };
        Some(Split { mid, left: bounds_of(&items[..mid]), right: bounds_of(&items[mid..]) })
    }
}

/// `x`'s bits as a `u32` that orders as [`f32::total_cmp`] orders the floats: negative numbers
/// have their magnitude bits flipped (larger magnitudes first), then the sign bit is flipped so
/// that negatives come before positives.
#[inline(always)]
fn total_order_key(x: f32) -> u32 {
    let bits = x.to_bits();
    let flip = ((bits as i32 >> 31) as u32 >> 1) | 0x8000_0000;
    bits ^ flip
}

/// Nodes of at most this many items are split by [`BinnedSah::exact_split`].
const EXACT_BELOW: usize = 12;

/// Object-median split along `axis` (ties broken by index, so the result is deterministic).
fn median_split(items: &mut [BuildItem], axis: usize) -> Split {
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| a.centroid[axis].total_cmp(&b.centroid[axis]).then(a.index.cmp(&b.index)));
    Split { mid, left: bounds_of(&items[..mid]), right: bounds_of(&items[mid..]) }
}

fn append_shifted(out: &mut Vec<BuildNode>, sub: Vec<BuildNode>) {
    let shift = out.len() as u32;
    out.extend(sub.into_iter().map(|n| match n {
        BuildNode::Inner { bounds, left, right } => {
            BuildNode::Inner { bounds, left: left + shift, right: right + shift }
        }
        leaf => leaf,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The exact split's integer keys order floats exactly as `total_cmp` does.
    #[test]
    fn total_order_keys_order_as_total_cmp() {
        let xs = [
            f32::NEG_INFINITY,
            -f32::MAX,
            -1.5,
            -1.0,
            -f32::MIN_POSITIVE,
            -1e-45,
            -0.0,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.0,
            1.5,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(total_order_key(a).cmp(&total_order_key(b)), a.total_cmp(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn every_item_in_exactly_one_leaf_and_bounds_contain() {
        for (n, max_leaf, threshold) in [(1, 1, 8), (2, 1, 8), (1000, 1, 64), (1000, 4, 100000), (5000, 4, 256)] {
            let mut it = items(n);
            let b = BinnedSah { max_leaf, parallel_threshold: threshold, ..Default::default() };
            let nodes = b.build(&mut it);
            let mut seen = vec![0u32; n];
            for node in &nodes {
                match *node {
                    BuildNode::Leaf { bounds, first, count } => {
                        assert!(count as usize <= max_leaf);
                        for item in &it[first as usize..(first + count) as usize] {
                            seen[item.index as usize] += 1;
                            assert!(bounds.contains(&item.bounds));
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

    #[test]
    fn parallel_and_serial_builds_are_identical() {
        let mut a = items(20000);
        let mut b = a.clone();
        let serial = BinnedSah { parallel_threshold: usize::MAX, ..Default::default() }.build(&mut a);
        let parallel = BinnedSah { parallel_threshold: 512, ..Default::default() }.build(&mut b);
        assert_eq!(serial, parallel);
        assert_eq!(a, b);
    }

    #[test]
    fn coincident_centroids_still_split() {
        let mut it: Vec<_> = (0..100).map(|i| BuildItem::new(Aabb::new(Vec3A::ZERO, Vec3A::ONE), i)).collect();
        let nodes = BinnedSah::default().build(&mut it);
        assert_eq!(nodes.iter().filter(|n| matches!(n, BuildNode::Leaf { .. })).count(), 100);
    }
}
