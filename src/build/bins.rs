//! The bins of the binned SAH builder (`super::binned_sah`): how items map to bins, the table of
//! bins that a node's items are counted into, and the SAH sweep over its boundaries (Wald, "On
//! fast Construction of SAH-based Bounding Volume Hierarchies", 2007).

use glam::Vec4;
use wide::{f32x4, i32x4};

use super::item::{Bounds4, BuildItem, half_areas};
use super::split::BinnedSah;
use crate::wide::{Lanes8, WithLanes, dispatch};

/// Items binned per task when a large node's bins are filled on several threads: the bins are
/// merged by `min`, `max` and integer sums, which are exact in any order, so the split is the
/// one a single thread finds.
pub(super) const PARALLEL_BINNING: usize = 1 << 15;

/// Items from which a node's bins are filled as two tables (see [`BinnedSah::fill_bins`]):
/// below, clearing and merging the second table costs more than it saves.
const TWO_TABLES_FROM: usize = 256;

/// A node's bins on each axis: `bounds[axis][bin]`, and `count[bin][axis]` items in the bin
/// (lane 3 unused). The counts are kept apart so that a bin's box is 32 bytes, its address a
/// shift of its index, and by bin so that the sweep loads the counts of all three axes at once.
/// Filled in place by [`BinnedSah::fill_bins`], not returned by value, so that the table is not
/// copied once more per node. Counts are `i32`, as the
/// SIMD sweep reads them: a node holds fewer than 2^31 items.
pub(super) struct Table<const B: usize> {
    pub(super) bounds: [[Bounds4; B]; 3],
    pub(super) count: [[i32; 4]; B],
}

impl<const B: usize> Table<B> {
    pub(super) const EMPTY: Self = Table { bounds: [[Bounds4::EMPTY; B]; 3], count: [[0; 4]; B] };

    /// Adds `it` to bin `bin` of axis `a`.
    #[inline(always)]
    fn add(&mut self, a: usize, bin: usize, it: &BuildItem) {
        // A bin is below `bins <= B`, so the mask changes nothing; it spares the bounds checks.
        self.bounds[a][bin & (B - 1)].add_item(it);
        self.count[bin & (B - 1)][a] += 1;
    }

    /// Adds the bins of `other` to these.
    #[inline(always)]
    fn merge(&mut self, other: &Table<B>) {
        for (ta, tb) in self.bounds.iter_mut().zip(&other.bounds) {
            for (x, y) in ta.iter_mut().zip(tb) {
                *x = x.union(y);
            }
        }
        for (ta, tb) in self.count.iter_mut().zip(&other.count) {
            for (x, y) in ta.iter_mut().zip(tb) {
                *x += y;
            }
        }
    }
}

/// How a node's centroids map to bins: `bin = (centroid2 - base) * scale`, truncated and
/// clamped (see `bin_of`).
#[derive(Clone, Copy)]
pub(super) struct Binning {
    pub(super) base: Vec4,
    pub(super) scale: Vec4,
    pub(super) bins: usize,
}

impl Binning {
    /// The centroid `c`'s place on axis `AXIS` in bins above the low end, unrounded. An item's
    /// bin is below `boundary` (in `1..bins`) exactly when `rel >= boundary` fails, NaN included
    /// (its bin is 0), since truncation and clamping keep every `rel` on its side of an integer
    /// boundary inside the range: [`partition`](super::binned_sah::partition) sorts items by that test without computing bins.
    ///
    /// The axis is a constant so that the partition's loop reads the lane from a register; an
    /// axis known only at run time sends each item's centroid through the stack to index it.
    #[inline(always)]
    pub(super) fn rel<const AXIS: usize>(&self, c: Vec4) -> f32 {
        (c[AXIS] - self.base[AXIS]) * self.scale[AXIS]
    }

    /// The item's bins on all three axes at once, as `bin_of` gives them: the same arithmetic
    /// lane for lane, and `trunc_int` saturates as `as i32` does (NaN to 0). One vector
    /// conversion and clamp replaces three scalar ones, the bulk of the binning loop's work.
    #[inline(always)]
    pub(super) fn bins3(&self, it: &BuildItem) -> [usize; 3] {
        let rel = f32x4::from(((it.centroid2() - self.base) * self.scale).to_array());
        // With SSE2, the plain truncation (`cvttps2dq`) turns NaN and anything beyond `i32`
        // into `i32::MIN`, which the clamp below takes to bin 0, as `bin_of` takes NaN; a large
        // `rel` is first lowered to `bins` by a `min` that keeps a NaN (SSE's `min` returns its
        // second operand when either is NaN). Three instructions instead of the seven of the
        // saturating `trunc_int`, on every item of every binned node.
        #[cfg(target_feature = "sse2")]
        let b = f32x4::splat(self.bins as f32).fast_min(rel).fast_trunc_int();
        #[cfg(not(target_feature = "sse2"))]
        let b = rel.trunc_int();
        let b = b.max(i32x4::ZERO).min(i32x4::splat(self.bins as i32 - 1));
        let b = b.to_array();
        [b[0] as usize, b[1] as usize, b[2] as usize]
    }
}

impl BinnedSah {
    /// Adds `items` to the bins of every axis of `table`, or of axis `only` alone (the other
    /// rows stay as they are); on several threads for large nodes, each part binned at the
    /// SIMD level [`crate::simd_level`] chose (see [`BinnedSah::choose_split`]).
    pub(super) fn fill_bins<const B: usize>(
        &self,
        items: &[BuildItem],
        binning: &Binning,
        only: Option<usize>,
        table: &mut Table<B>,
    ) {
        if items.len() > PARALLEL_BINNING && items.len() > self.parallel_threshold {
            let (l, r) = items.split_at(items.len() / 2);
            let mut right = Table::EMPTY;
            crate::par::join(
                || self.fill_bins::<B>(l, binning, only, table),
                || self.fill_bins::<B>(r, binning, only, &mut right),
            );
            table.merge(&right);
            return;
        }
        dispatch(FillBins { items, binning, only, table });
    }

    /// [`BinnedSah::fill_bins`] on this thread, at the level of the entry point it is inlined
    /// into.
    #[inline(always)]
    fn fill_bins_here<const B: usize>(
        items: &[BuildItem],
        binning: &Binning,
        only: Option<usize>,
        table: &mut Table<B>,
    ) {
        const { assert!(B.is_power_of_two()) };
        if let Some(a) = only {
            for it in items {
                table.add(a, binning.bins3(it)[a], it);
            }
            return;
        }
        // An axis without extent is never read; binning it anyway (all in bin 0) is cheaper
        // than a test per item. A function rather than a closure, so that it is sure to be
        // inlined into the level's entry point.
        #[inline(always)]
        fn add<const B: usize>(table: &mut Table<B>, binning: &Binning, it: &BuildItem) {
            for (a, &bin) in binning.bins3(it).iter().enumerate() {
                table.add(a, bin, it);
            }
        }
        if items.len() < TWO_TABLES_FROM {
            for it in items {
                add(table, binning, it);
            }
            return;
        }
        // Neighbouring items often fall in the same bins (a node's items come in the order its
        // parent's partition left them), and each update of a bin waits for the last one's
        // store. Two tables, taking every other item, halve those chains.
        let mut odd = Table::EMPTY;
        let mut pairs = items.chunks_exact(2);
        for pair in &mut pairs {
            add(table, binning, &pair[0]);
            add(&mut odd, binning, &pair[1]);
        }
        if let [last] = pairs.remainder() {
            add(table, binning, last);
        }
        table.merge(&odd);
    }

    /// The lowest SAH cost over the boundaries `1..bins` of the axes in `axes`, with its axis and
    /// boundary: `(cost, axis, boundary)`, or an infinite cost when no boundary has items on
    /// both sides. All three axes are swept at once, one per lane of `f32x4`: the same arithmetic
    /// as one axis at a time (`BinnedSah::sweep_by_axis`, which a test compares), lane for
    /// lane, and the same choice among equal costs, the first axis and then the first boundary.
    /// One sweep instead of three, because the sweep runs at every binned node.
    #[inline(always)]
    pub(super) fn sweep<const B: usize>(&self, table: &Table<B>, bins: usize, axes: [bool; 3]) -> (f32, usize, usize) {
        let block = self.block.max(1) as u32;
        let shift = block.is_power_of_two().then(|| block.trailing_zeros());
        // `ceil(count / block)` in every lane, as `block_counter` computes it.
        let blocks = |c: i32x4| -> f32x4 {
            match shift {
                Some(s) => {
                    let partial = !(c & i32x4::splat((1 << s) - 1)).simd_eq(i32x4::ZERO);
                    // `partial` is -1 where a block is partly filled.
                    ((c >> s) - partial).round_float()
                }
                None => i32x4::from(c.to_array().map(|c| (c as u32).div_ceil(block) as i32)).round_float(),
            }
        };
        let zero = f32x4::ZERO;
        let union = |acc: &mut [Bounds4; 3], i: usize| {
            for (a, acc) in acc.iter_mut().enumerate() {
                *acc = acc.union(&table.bounds[a][i]);
            }
        };
        let mut right_area = [zero; B];
        let mut right_blocks = [zero; B];
        // Sweep from the right: right_area[i] covers bins i.. .
        let mut acc = [Bounds4::EMPTY; 3];
        let mut count = i32x4::ZERO;
        for i in (1..bins).rev() {
            union(&mut acc, i);
            count += i32x4::from(table.count[i]);
            right_area[i] = half_areas(&acc);
            right_blocks[i] = blocks(count);
        }
        let live = f32x4::new([0, 1, 2, 3].map(|a| if a < 3 && axes[a] { 1.0 } else { 0.0 })).simd_ne(zero);
        let (inf, mut best_cost, mut best_boundary) = (f32x4::splat(f32::INFINITY), f32x4::splat(f32::INFINITY), zero);
        let mut acc = [Bounds4::EMPTY; 3];
        let mut count = i32x4::ZERO;
        for i in 1..bins {
            union(&mut acc, i - 1);
            count += i32x4::from(table.count[i - 1]);
            let left_blocks = blocks(count);
            // A boundary with no item on one side is no split; an axis not swept neither.
            let valid = live & left_blocks.simd_ne(zero) & right_blocks[i].simd_ne(zero);
            let cost = half_areas(&acc) * left_blocks + right_area[i] * right_blocks[i];
            let better = valid.select(cost, inf).simd_lt(best_cost);
            best_cost = better.select(cost, best_cost);
            best_boundary = better.select(f32x4::splat(i as f32), best_boundary);
        }
        let (cost, boundary) = (best_cost.to_array(), best_boundary.to_array());
        let mut best = (f32::INFINITY, 0, 0);
        for a in 0..3 {
            if cost[a] < best.0 {
                best = (cost[a], a, boundary[a] as usize);
            }
        }
        best
    }

    /// [`BinnedSah::sweep`] one axis at a time, as it was written first: the reference that the
    /// SIMD sweep is tested against.
    #[cfg(test)]
    fn sweep_by_axis<const B: usize>(&self, table: &Table<B>, bins: usize, axes: [bool; 3]) -> (f32, usize, usize) {
        let mut best = (f32::INFINITY, 0usize, 0usize); // cost, axis, boundary
        let blocks = self.block_counter();
        let mut right_area = [0.0f32; B];
        let mut right_count = [0u32; B];
        for (a, bins_a) in table.bounds.iter().enumerate() {
            if !axes[a] {
                continue;
            }
            let count = |i: usize| table.count[i][a] as u32;
            let mut acc = Bounds4::EMPTY;
            let mut cnt = 0;
            for i in (1..bins).rev() {
                acc = acc.union(&bins_a[i]);
                cnt += count(i);
                right_area[i] = acc.aabb().half_area();
                right_count[i] = cnt;
            }
            let mut acc = Bounds4::EMPTY;
            let mut cnt = 0;
            for i in 1..bins {
                acc = acc.union(&bins_a[i - 1]);
                cnt += count(i - 1);
                if cnt == 0 || right_count[i] == 0 {
                    continue;
                }
                let cost = acc.aabb().half_area() * blocks(cnt) + right_area[i] * blocks(right_count[i]);
                if cost < best.0 {
                    best = (cost, a, i);
                }
            }
        }
        best
    }
}

/// The bin of a centroid `rel` bins above the low end: `rel` truncated and clamped to
/// `0..bins` (NaN to 0), as `(rel as usize).min(bins - 1)`. The scalar definition that
/// [`Binning::bins3`] and [`Binning::below`] compute faster, kept to test them against.
#[cfg(test)]
fn bin_of(rel: f32, bins: usize) -> usize {
    (rel as i32).clamp(0, bins as i32 - 1) as usize
}

/// [`BinnedSah::fill_bins`]'s part on one thread, as a kernel for [`dispatch()`].
struct FillBins<'a, const B: usize> {
    items: &'a [BuildItem],
    binning: &'a Binning,
    only: Option<usize>,
    table: &'a mut Table<B>,
}

impl<const B: usize> WithLanes for FillBins<'_, B> {
    type Output = ();

    #[inline(always)]
    fn run<L: Lanes8>(self) {
        BinnedSah::fill_bins_here(self.items, self.binning, self.only, self.table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::binned_sah::partition;

    /// The SIMD sweep picks what the sweep one axis at a time picks, cost, axis and boundary, on
    /// random tables with empty bins, repeated bins (equal costs, where the first axis and then
    /// the first boundary must win), flat and infinite boxes, axes left out, and blocks of 1, 3
    /// and 4.
    #[test]
    fn the_simd_sweep_is_the_sweep_by_axis() {
        use slabtree_testkit::rng::Rng;
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut splits = 0;
        for round in 0..3000 {
            let mut table = Table::<16>::EMPTY;
            let bins = 2 + rng.below(15);
            for a in 0..3 {
                for i in 0..bins {
                    let kind = rng.below(8);
                    if kind == 0 {
                        continue; // an empty bin
                    }
                    let lo = rng.vec(-10.0, 10.0).extend(0.0);
                    let mut hi = lo + (rng.vec(0.0, 3.0) * if kind == 1 { 0.0 } else { 1.0 }).extend(0.0);
                    if kind == 2 {
                        hi.x = f32::INFINITY;
                    }
                    table.bounds[a][i] = Bounds4 { lo, hi };
                    table.count[i][a] = 1 + rng.below(9) as i32;
                }
            }
            if round % 3 == 0 {
                // Every axis the same: equal costs across axes.
                table.bounds[1] = table.bounds[0];
                table.bounds[2] = table.bounds[0];
                for c in &mut table.count {
                    (c[1], c[2]) = (c[0], c[0]);
                }
            }
            if round % 4 == 1 {
                // Mirror-image halves: equal costs along one axis.
                for i in 0..bins / 2 {
                    table.bounds[0][bins - 1 - i] = table.bounds[0][i];
                    table.count[bins - 1 - i][0] = table.count[i][0];
                }
            }
            let axes = [round % 7 != 3, round % 5 != 2, round % 11 != 4];
            for block in [1, 3, 4] {
                let sah = BinnedSah { block, ..Default::default() };
                let (simd, scalar) = (sah.sweep(&table, bins, axes), sah.sweep_by_axis(&table, bins, axes));
                assert_eq!(simd.0.to_bits(), scalar.0.to_bits(), "round {round}, block {block}");
                if scalar.0.is_finite() {
                    assert_eq!((simd.1, simd.2), (scalar.1, scalar.2), "round {round}, block {block}");
                    splits += 1;
                }
            }
        }
        assert!(splits > 3000, "{splits} finite splits");
    }

    /// The SIMD bins and the partition's side agree with the scalar definition of a bin on every
    /// kind of value: inside the range, on bin boundaries, outside it, huge, infinite and NaN.
    #[test]
    fn bins_and_the_boundary_test_agree_with_bin_of() {
        let mut rels = vec![0.0, -0.0, 0.5, 1.0, 1.5, 15.0, 15.999, 16.0, 16.5, 63.0, 64.0, -1.0, -0.5];
        rels.extend([3e9, -3e9, f32::MAX, f32::MIN, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-45]);
        rels.extend((0..2000).map(|i| (i as f32 * 0.618_034).fract() * 80.0 - 8.0));
        rels.extend((0..=64).map(|i| i as f32));
        rels.extend((1..=64).map(|i| f32::from_bits((i as f32).to_bits() - 1)));
        for bins in [2, 16, 64] {
            let binning = Binning { base: Vec4::ZERO, scale: Vec4::new(1.0, 1.0, 1.0, 0.0), bins };
            for chunk in rels.chunks(3) {
                let r = [chunk[0], chunk[chunk.len() - 1], chunk[chunk.len() / 2]];
                // min = 0 and max = r: the binned point is r itself.
                let it = BuildItem { lo: Vec4::new(0.0, 0.0, 0.0, 0.0), hi: Vec4::new(r[0], r[1], r[2], 0.0) };
                let b = binning.bins3(&it);
                for a in 0..3 {
                    assert_eq!(b[a], bin_of(r[a], bins), "rel {}", r[a]);
                    for boundary in 1..bins {
                        let partition = [partition::<0>, partition::<1>, partition::<2>][a];
                        let (left, _, _) = partition(&[it], &mut [it], &binning, boundary);
                        assert_eq!(left == 1, bin_of(r[a], bins) < boundary, "rel {}", r[a]);
                    }
                }
            }
        }
    }
}
