//! Splits that do not bin: the exact SAH sweep of small nodes, and the object median that
//! guards against coincident centroids and deep trees (see `super::binned_sah`).

use super::binned_sah::{BinnedSah, Split, bounds_of, centroid_bounds};
use super::item::{Bounds4, BuildItem};
use crate::math::Aabb;

impl BinnedSah {
    /// Full-sweep SAH for a handful of items: every boundary of the centroid order on every axis
    /// (as Wald 2007 does below his binning threshold). Cheaper than a bin table at this size and
    /// exact. Ties in centroid order are broken by index, so the result is deterministic.
    ///
    /// The sorts run over (key, position) pairs on the stack and the items are permuted once at
    /// the end: sorting the items themselves, once per axis, was most of the cost of the
    /// dynamic tree's treelet rebuilds (measured with callgrind).
    pub(super) fn exact_split(&self, items: &mut [BuildItem], bounds: &Aabb) -> Option<Split> {
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
                keys[i] = ((total_order_key(it.centroid2()[a]) as u64) << 32 | u64::from(it.index()), i as u8);
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
        Some(split_at(items, mid))
    }
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
