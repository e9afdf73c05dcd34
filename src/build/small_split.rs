//! Splits that do not bin: the exact SAH sweep of small nodes, and the object median that
//! guards against coincident centroids and deep trees (see `super::binned_sah`).

use super::split::{BinnedSah, Split, bounds_of, centroid_bounds};
use wide::f32x4;

use super::item::{Bounds4, BuildItem, half_areas};
use crate::math::Aabb;

impl BinnedSah {
    /// Full-sweep SAH for a handful of items: every boundary of the centroid order on every axis,
    /// or on `axis` alone (the widest centroid spread) with [`BinnedSah::longest_axis_only`] (as
    /// Wald 2007 does below his binning threshold). Cheaper than a bin table at this size and
    /// exact. Ties in centroid order are broken by index, so the result is deterministic.
    ///
    /// The sorts run over (key, position) pairs on the stack and the items are permuted once at
    /// the end, rather than the items themselves sorted once per axis: an item is several times
    /// the size of a pair, and the dynamic tree's treelet rebuilds are made of such small nodes.
    #[inline(always)]
    pub(super) fn exact_split(&self, items: &mut [BuildItem], bounds: &Aabb, axis: usize) -> Option<Split> {
        if items.len() == 2 { self.pair_split(items, bounds) } else { self.sweep_split(items, bounds, axis) }
    }

    /// [`BinnedSah::exact_split`] of two items: one boundary, whose cost is the same on every
    /// axis, so the sweep would keep the first axis's order. That order is taken directly: the
    /// same split as [`BinnedSah::sweep_split`]'s (a test compares them), without its three sorts
    /// and sweeps; a dynamic tree's bulk build, one proxy per leaf, ends most branches in pairs.
    #[inline(always)]
    fn pair_split(&self, items: &mut [BuildItem], bounds: &Aabb) -> Option<Split> {
        let blocks = self.block_counter();
        // As the sweep computes the cost (a sum of two terms, the same in either order), kept
        // only below infinity as the sweep keeps its best.
        let half_area = |it: &BuildItem| Bounds4::EMPTY.union(&Bounds4 { lo: it.lo, hi: it.hi }).aabb().half_area();
        let cost = half_area(&items[0]) * blocks(1) + half_area(&items[1]) * blocks(1);
        let cost = if cost < f32::INFINITY { cost } else { f32::INFINITY };
        let area = bounds.half_area();
        let split_cost = self.traversal_cost + if area > 0.0 { cost / area } else { 0.0 };
        if 2 <= self.max_leaf && split_cost >= blocks(2) {
            // A leaf: the items stay in their order, as the sweep leaves them.
            return None;
        }
        let key = |it: &BuildItem| (total_order_key(it.centroid2()[0]), it.index());
        if key(&items[1]) < key(&items[0]) {
            items.swap(0, 1);
        }
        Some(split_at(items, 1))
    }

    /// [`BinnedSah::exact_split`] by the full sweep, for 2 to [`EXACT_BELOW`] items. The three
    /// axes' sweeps run at once, one per lane of `f32x4` (see [`half_areas`]), and choose as one
    /// sweep per axis would: the lowest cost, the first axis and then the first boundary among
    /// equals (a test compares them).
    #[inline(always)]
    fn sweep_split(&self, items: &mut [BuildItem], bounds: &Aabb, axis: usize) -> Option<Split> {
        if self.longest_axis_only {
            return self.sweep_split_by_axis(items, bounds, axis);
        }
        let n = items.len();
        debug_assert!((2..=EXACT_BELOW).contains(&n));
        let block_count = self.block_counter();
        let blocks = |c: usize| block_count(c as u32);
        let orders = [centroid_order(items, 0), centroid_order(items, 1), centroid_order(items, 2)];
        let union = |acc: &mut [Bounds4; 3], i: usize| {
            for (a, acc) in acc.iter_mut().enumerate() {
                let it = &items[orders[a][i] as usize];
                *acc = acc.union(&Bounds4 { lo: it.lo, hi: it.hi });
            }
        };
        let mut right_area = [f32x4::ZERO; EXACT_BELOW + 1];
        let mut acc = [Bounds4::EMPTY; 3];
        for i in (1..n).rev() {
            union(&mut acc, i);
            right_area[i] = half_areas(&acc);
        }
        let inf = f32x4::splat(f32::INFINITY);
        let (mut best_cost, mut best_boundary) = (inf, f32x4::ZERO);
        let mut acc = [Bounds4::EMPTY; 3];
        for (i, &right) in right_area.iter().enumerate().take(n).skip(1) {
            union(&mut acc, i - 1);
            let cost = half_areas(&acc) * f32x4::splat(blocks(i)) + right * f32x4::splat(blocks(n - i));
            let better = cost.simd_lt(best_cost);
            best_cost = better.select(cost, best_cost);
            best_boundary = better.select(f32x4::splat(i as f32), best_boundary);
        }
        let (cost, boundary) = (best_cost.to_array(), best_boundary.to_array());
        let mut best = (f32::INFINITY, 0, 0usize); // cost, axis, boundary
        for a in 0..3 {
            if cost[a] < best.0 {
                best = (cost[a], a, boundary[a] as usize);
            }
        }
        // The chosen axis's order (axis 0's when no cost is finite).
        self.finish_sweep(items, bounds, (best.0, best.2), &orders[best.1])
    }

    /// [`BinnedSah::sweep_split`] one axis at a time, as it was written first: the sweep of
    /// `axis` alone with `longest_axis_only` (where the SIMD sweep's other two lanes would be
    /// wasted), and the reference that the SIMD sweep of all three axes is tested against.
    #[inline(always)]
    fn sweep_split_by_axis(&self, items: &mut [BuildItem], bounds: &Aabb, axis: usize) -> Option<Split> {
        let n = items.len();
        debug_assert!((2..=EXACT_BELOW).contains(&n));
        let block_count = self.block_counter();
        let blocks = |c: usize| block_count(c as u32);
        let mut best = (f32::INFINITY, 0usize, 0usize); // cost, axis, boundary
        let mut best_order = [0u8; EXACT_BELOW];
        let mut right_area = [0.0f32; EXACT_BELOW + 1];
        // `axis`, the widest centroid spread, alone with `longest_axis_only`.
        let axes = if self.longest_axis_only { axis..axis + 1 } else { 0..3 };
        let first_axis = axes.start;
        for a in axes {
            let order = centroid_order(items, a);
            let b = |i: usize| {
                let it = &items[order[i] as usize];
                Bounds4 { lo: it.lo, hi: it.hi }
            };
            let mut acc = Bounds4::EMPTY;
            for i in (1..n).rev() {
                acc = acc.union(&b(i));
                right_area[i] = acc.aabb().half_area();
            }
            let mut acc = Bounds4::EMPTY;
            let mut improved = false;
            for (i, &right) in right_area.iter().enumerate().take(n).skip(1) {
                acc = acc.union(&b(i - 1));
                let cost = acc.aabb().half_area() * blocks(i) + right * blocks(n - i);
                if cost < best.0 {
                    best = (cost, a, i);
                    improved = true;
                }
            }
            // The first axis swept keeps its order even when no cost is finite (the split is then
            // at the middle of that order); keeping axis 0's instead, which a sweep of another
            // axis alone never wrote, put copies of the first item in the place of every other.
            if improved || a == first_axis {
                best_order = order;
            }
        }
        self.finish_sweep(items, bounds, (best.0, best.2), &best_order)
    }

    /// The end of both sweeps: a leaf when splitting at the best `(cost, boundary)` costs no
    /// less than the leaf, else the items put in `order` (positions, as [`centroid_order`]
    /// gives them) and split at the boundary, or at the middle when no cost is finite.
    #[inline(always)]
    fn finish_sweep(
        &self,
        items: &mut [BuildItem],
        bounds: &Aabb,
        (cost, boundary): (f32, usize),
        order: &[u8; EXACT_BELOW],
    ) -> Option<Split> {
        let n = items.len();
        let area = bounds.half_area();
        let split_cost = self.traversal_cost + if area > 0.0 { cost / area } else { 0.0 };
        if n <= self.max_leaf && split_cost >= (self.block_counter())(n as u32) {
            return None;
        }
        let copy: [BuildItem; EXACT_BELOW] = std::array::from_fn(|i| items[order[i.min(n - 1)] as usize]);
        items.copy_from_slice(&copy[..n]);
        // A NaN-free but degenerate sweep (all costs infinite) still splits at the middle.
        let mid = if cost.is_finite() { boundary } else { n / 2 };
        Some(split_at(items, mid))
    }
}

/// The positions of `items` (at most [`EXACT_BELOW`]) in the order of their centroids on `axis`,
/// ties broken by index. Each item's place is its rank: how many keys are below its own, keys
/// that order as integers exactly as that pair does (`total_cmp`, then the index), so no two are
/// equal. Counting compares every pair, branch-free over a fixed length (the unused places hold
/// `u64::MAX`, which no key reaches, as every centroid is finite). An insertion sort would compare
/// fewer pairs, but its branch on each comparison is unpredictable for centroids in no order.
#[inline(always)]
fn centroid_order(items: &[BuildItem], axis: usize) -> [u8; EXACT_BELOW] {
    let mut keys = [u64::MAX; EXACT_BELOW];
    for (k, it) in keys.iter_mut().zip(items) {
        *k = (total_order_key(it.centroid2()[axis]) as u64) << 32 | u64::from(it.index());
    }
    let mut order = [0u8; EXACT_BELOW];
    for (i, &k) in keys.iter().enumerate().take(items.len()) {
        let rank = keys.iter().map(|&other| u8::from(other < k)).sum::<u8>();
        order[rank as usize] = i as u8;
    }
    order
}

/// `x`'s bits as a `u32` that orders as [`f32::total_cmp`] orders the floats: negative numbers
/// have their magnitude bits flipped (larger magnitudes first), then the sign bit is flipped so
/// that negatives come before positives.
#[inline(always)]
pub(super) fn total_order_key(x: f32) -> u32 {
    let bits = x.to_bits();
    let flip = ((bits as i32 >> 31) as u32 >> 1) | 0x8000_0000;
    bits ^ flip
}

/// Nodes of at most this many items are split by [`BinnedSah::exact_split`].
pub(super) const EXACT_BELOW: usize = 12;

/// The split of items already in order at `mid`, with both sides' bounds scanned.
#[inline(always)]
pub(super) fn split_at(items: &[BuildItem], mid: usize) -> Split {
    let (l, r) = items.split_at(mid);
    Split {
        mid,
        left: bounds_of(l).aabb(),
        right: bounds_of(r).aabb(),
        left_centroids: centroid_bounds(l),
        right_centroids: centroid_bounds(r),
        moved: false,
    }
}

/// Object-median split along `axis` (ties broken by index, so the result is deterministic).
#[inline(always)]
pub(super) fn median_split(items: &mut [BuildItem], axis: usize) -> Split {
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| {
        a.centroid2()[axis].total_cmp(&b.centroid2()[axis]).then(a.index().cmp(&b.index()))
    });
    split_at(items, mid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The centroid order is a sort by centroid (`total_cmp`) and then index, on every axis and
    /// length, with many equal centroids, signed zeros and infinite boxes among them.
    #[test]
    fn centroid_order_is_a_sort_by_centroid_then_index() {
        use glam::Vec3A;
        use slabtree_testkit::rng::Rng;
        let mut rng = Rng(0x51ab_7ee5);
        for round in 0..3000 {
            let n = 1 + round % EXACT_BELOW;
            let items: Vec<BuildItem> = (0..n)
                .map(|i| {
                    // Few distinct values, so that ties are common; -0 and +0 order apart.
                    let v = [-1.0, -0.0, 0.0, 0.5, 2.0][rng.below(5)];
                    let lo = Vec3A::new(v, [-0.0, 0.0][rng.below(2)], rng.unit3a().x);
                    let hi = if round % 7 == 0 { Vec3A::splat(f32::INFINITY) } else { lo + Vec3A::splat(0.25) };
                    // Indices are unique within a node, here scrambled against the positions.
                    BuildItem::new(Aabb::new(lo, hi), (round * 31 + i * 7919) as u32 % 1009)
                })
                .collect();
            for axis in 0..3 {
                let got = centroid_order(&items, axis);
                let mut want: Vec<usize> = (0..n).collect();
                want.sort_by(|&a, &b| {
                    let key = |i: usize| (items[i].centroid2()[axis], items[i].index());
                    key(a).0.total_cmp(&key(b).0).then(key(a).1.cmp(&key(b).1))
                });
                let got: Vec<usize> = got[..n].iter().map(|&i| i as usize).collect();
                assert_eq!(got, want, "round {round}, axis {axis}");
            }
        }
    }

    /// A pair's split is the sweep's: the same order of the two items, and the same decision to
    /// split or to make a leaf, over random, flat, coincident and non-finite boxes and leaf sizes.
    #[test]
    fn pair_split_is_the_sweep_split() {
        use glam::Vec3A;
        use slabtree_testkit::rng::Rng;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut compared = 0;
        for round in 0..4000 {
            let mut corner = || rng.unit3a() * 10.0;
            let lo = [corner(), corner()];
            let mut hi = [lo[0] + corner() * 0.3, lo[1] + corner() * 0.3];
            match round % 5 {
                1 => hi[0] = lo[0],            // a point
                2 => hi[1] = lo[1] + Vec3A::X, // a segment: zero area
                3 => hi[1] = hi[0],            // coincident upper corners
                4 => hi[1] = Vec3A::splat(f32::INFINITY),
                _ => {}
            }
            let items = [BuildItem::new(Aabb::new(lo[0], hi[0]), 7), BuildItem::new(Aabb::new(lo[1], hi[1]), 3)];
            let bounds = Aabb::new(lo[0].min(lo[1]), hi[0].max(hi[1]));
            for max_leaf in [1, 2, 4] {
                let b = BinnedSah { max_leaf, traversal_cost: [0.3, 1.0, 2.5][round % 3], ..Default::default() };
                let (mut a, mut s) = (items, items);
                let (pa, ps) = (b.pair_split(&mut a, &bounds), b.sweep_split(&mut s, &bounds, 0));
                assert_eq!(pa.map(|p| p.mid), ps.map(|p| p.mid), "round {round}, max_leaf {max_leaf}");
                assert_eq!(a.map(|i| i.index()), s.map(|i| i.index()), "round {round}, max_leaf {max_leaf}");
                compared += 1;
            }
        }
        assert_eq!(compared, 12_000);
    }

    /// The SIMD sweep splits as the sweep one axis at a time does (the same items in the same
    /// order, the same boundary, the same leaf decision) on random items of 2 to 12 with
    /// coincident and repeated boxes, flat, huge and infinite ones, every axis alone or all three,
    /// and blocks of 1 and 4.
    #[test]
    fn the_simd_sweep_split_is_the_sweep_by_axis() {
        use glam::Vec3A;
        use slabtree_testkit::rng::Rng;
        let mut rng = Rng(0x5851_F42D_4C95_7F2D);
        for round in 0..6000 {
            let n = 2 + rng.below(EXACT_BELOW - 1);
            let items: Vec<BuildItem> = (0..n)
                .map(|i| {
                    let lo = rng.unit3a() * 10.0;
                    let mut hi = lo + rng.unit3a().abs() * [0.0, 1.0, 3.0][rng.below(3)];
                    match rng.below(12) {
                        0 => hi.x = f32::INFINITY,
                        1 => hi = lo + Vec3A::new(2e20, 1.0, 2e20),
                        _ => {}
                    }
                    BuildItem::new(Aabb::new(lo, hi), (i as u32 * 7) % 13)
                })
                .collect();
            let mut items = items;
            if round % 5 == 0 {
                items[n - 1] = items[0]; // a repeated item: equal keys but for the index
                items[n - 1].set_index(99);
            }
            let bounds = items.iter().fold(Aabb::EMPTY, |b, it| b.union(&it.bounds()));
            for axis in 0..3 {
                for longest_axis_only in [false, true] {
                    for (block, max_leaf) in [(1, 1), (4, 4), (1, 4)] {
                        let b = BinnedSah { longest_axis_only, block, max_leaf, ..Default::default() };
                        let (mut simd, mut scalar) = (items.clone(), items.clone());
                        let (s, r) = (
                            b.sweep_split(&mut simd, &bounds, axis),
                            b.sweep_split_by_axis(&mut scalar, &bounds, axis),
                        );
                        let what =
                            format!("round {round}, axis {axis}, widest alone {longest_axis_only}, block {block}");
                        assert_eq!(s.map(|s| s.mid), r.map(|r| r.mid), "{what}");
                        assert_eq!(
                            simd.iter().map(|i| i.index()).collect::<Vec<_>>(),
                            scalar.iter().map(|i| i.index()).collect::<Vec<_>>(),
                            "{what}"
                        );
                    }
                }
            }
        }
    }

    /// A sweep whose every cost is infinite (boxes infinite along two axes, whose areas are
    /// then infinite on every side) still splits a permutation of its items, on whichever axis
    /// it sweeps alone.
    #[test]
    fn a_sweep_of_infinite_costs_keeps_every_item() {
        use glam::Vec3A;
        for axis in 0..3 {
            for longest_axis_only in [false, true] {
                let items: Vec<BuildItem> = (0..5u32)
                    .map(|i| {
                        let lo = Vec3A::new(i as f32, -(i as f32), 2.0 * i as f32);
                        let hi = lo + Vec3A::new(f32::INFINITY, f32::INFINITY, 1.0);
                        BuildItem::new(Aabb::new(lo, hi), 10 + i)
                    })
                    .collect();
                let bounds = items.iter().fold(Aabb::EMPTY, |b, it| b.union(&it.bounds()));
                let b = BinnedSah { longest_axis_only, ..Default::default() };
                let mut sorted = items.clone();
                let split = b.sweep_split(&mut sorted, &bounds, axis);
                let mut got: Vec<u32> = sorted.iter().map(|it| it.index()).collect();
                got.sort_unstable();
                assert_eq!(got, vec![10, 11, 12, 13, 14], "axis {axis}, longest axis only: {longest_axis_only}");
                assert!(split.is_some_and(|s| s.mid > 0 && s.mid < 5));
            }
        }
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
}
