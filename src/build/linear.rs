//! A linear BVH (LBVH: Lauterbach et al., "Fast BVH Construction on GPUs", 2009): the items
//! sorted along the Morton curve of their centroids, and the tree cut where the codes' highest
//! differing bit changes. After the sort it is linear in the items and evaluates no cost, so it
//! builds several times faster than the binned SAH for a tree whose rays cost more: the builder
//! of meshes rebuilt every frame (`BuildQuality::Low`). Embree's low-quality builder is of this
//! kind too.
//!
//! Here are its parts: the sort ([`sort_along_curve`]) and the cut of a range ([`curve_cut`]).
//! The mesh BVH writes its 8-wide nodes straight from them, with no binary tree stored.

use glam::Vec3A;

use super::item::{Bounds4, BuildItem};
use super::morton::{MortonGrid, morton_split};
use super::split::bounds_of;
use crate::math::Aabb;

/// Lays the items `item(0) .. item(n - 1)`, with `n` the length of `items`, along the Morton
/// curve of their centroids `centroid(i)`, which lie in `bounds`: writes them into `items` in
/// the curve's order and returns their sort keys in that order, for [`curve_cut`] to cut ranges
/// of them by, with the bounds of runs of them ([`CurveOrder`]). The order is by code, then by
/// index, so it is the same on any number of threads; with `parallel`, the keys, the sort and
/// the items are made on rayon's threads.
///
/// Each item is made once, in the curve's order, so that no array of items is sorted. The sort
/// keys go in `scratch`, of at least twice as many words as items: with `items`, memory the
/// caller can hand to the BVH afterwards (`crate::pages::Spare`). `prefetch(i, Fetch::First)`
/// starts loading what `item(i)` reads first, and `prefetch(i, Fetch::Rest)` what it reads
/// with that (hints), the first some items ahead and the rest half as far, once the first has
/// arrived: the curve's order visits the triangles out of their order in memory, and each item
/// otherwise waited on its triangle's indices and then on its corners.
pub fn sort_along_curve<'a>(
    items: &mut [BuildItem],
    scratch: &'a mut [u64],
    bounds: &Aabb,
    centroid: impl Fn(u32) -> Vec3A + Sync + Send,
    item: impl Fn(u32) -> BuildItem + Sync + Send,
    prefetch: impl Fn(u32, Fetch) + Sync + Send,
    parallel: bool,
) -> CurveOrder<'a> {
    let grid = MortonGrid::new(bounds);
    // Each item's key: the top 32 bits of its code (about 11 per axis, 2048 cells along the
    // longest), and its index below them, so one u64 sorts by code, then by index.
    let (keys, other) = scratch[..2 * items.len()].split_at_mut(items.len());
    crate::par::fill(keys, 1 << 14, |i| u64::from(grid.code_top32(centroid(i))) << 32 | u64::from(i));
    let keys = radix_sort(keys, other, parallel);
    let mut groups = vec![Aabb::EMPTY; items.len().div_ceil(GROUP)];
    let make = |k: u32| {
        if let Some(&ahead) = keys.get(k as usize + 2 * PREFETCH_AHEAD) {
            prefetch(index(ahead), Fetch::First);
        }
        if let Some(&ahead) = keys.get(k as usize + PREFETCH_AHEAD) {
            prefetch(index(ahead), Fetch::Rest);
        }
        item(index(keys[k as usize]))
    };
    crate::par::fill_grouped(items, &mut groups, GROUP, 1 << 14, make, |group| bounds_of(group).aabb());
    CurveOrder { keys, groups }
}

/// Items laid along the curve by [`sort_along_curve`]: their sort keys, in the items' order, and
/// the bounds of every [`GROUP`] items, so that a range's bounds are found without reading all
/// its items ([`CurveOrder::bounds`]).
pub struct CurveOrder<'a> {
    /// The items' sort keys, in the items' order: a key's upper half is its code, and its lower
    /// half the item's index ([`index`]).
    pub keys: &'a [u64],
    /// The bounds of items `g * GROUP .. (g + 1) * GROUP`, by `g`.
    groups: Vec<Aabb>,
}

impl CurveOrder<'_> {
    /// The bounds of `items[a..b]`, `items` being the items laid along the curve with these
    /// keys: the groups inside the range and the items at its ends.
    pub fn bounds(&self, items: &[BuildItem], a: usize, b: usize) -> Aabb {
        debug_assert!(a <= b && b <= items.len() && items.len() == self.keys.len());
        let (first, last) = (a.div_ceil(GROUP), b / GROUP);
        if first >= last {
            return bounds_of(&items[a..b]).aabb();
        }
        let ends = bounds_of(&items[a..first * GROUP]).union(&bounds_of(&items[last * GROUP..b])).aabb();
        self.groups[first..last].iter().fold(ends, |all, g| all.union(g))
    }
}

/// Items per group of [`CurveOrder`]'s bounds.
const GROUP: usize = 16;

/// Where a linear BVH (LBVH: Lauterbach et al., "Fast BVH Construction on GPUs", 2009) cuts a
/// range of more than `max_leaf` items laid along the curve ([`sort_along_curve`]), `keys`
/// their keys and `items` the items: at the highest bit in which the range's codes differ
/// ([`morton_split`]), or, in a range of a few leaves, after a whole number of leaves where the
/// SAH prices that lower ([`leaf_filling_cut`]). The cut depends on the range alone, so a tree
/// cut this way is the same on any number of threads. Returns the items on its left, at least
/// one and fewer than all.
pub fn curve_cut(keys: &[u64], items: &[BuildItem], max_leaf: usize) -> usize {
    debug_assert!(keys.len() == items.len() && keys.len() > max_leaf.max(1));
    let mid = morton_split(keys, code);
    if items.len() <= SMALL { leaf_filling_cut(items, mid, max_leaf.max(1)) } else { mid }
}

/// Items ahead of the one being made for which the fill asks for the rest of what they read
/// (`prefetch`); it asks for what they read first twice as far ahead.
const PREFETCH_AHEAD: usize = 16;

/// Which of an item's reads [`sort_along_curve`]'s `prefetch` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// What the item reads first (a triangle's vertex indices).
    First,
    /// What it reads by way of that (the triangle's corners), asked for once that has arrived.
    Rest,
}

/// A key's code: its upper half.
#[inline(always)]
fn code(key: &u64) -> u64 {
    key >> 32
}

/// The item index a sort key of [`sort_along_curve`] carries: its lower half.
#[inline(always)]
pub fn index(key: u64) -> u32 {
    key as u32
}

/// Sorts `keys` by code (their upper halves; the indices below them are already in order, and
/// the sort keeps the order of equal codes) and returns them sorted, in `keys` or in `other` (of
/// the same length), which the passes take in turn: a least-significant-digit radix sort,
/// [`DIGIT_BITS`] bits per pass, with the passes over digits that every code shares skipped.
/// Linear in the keys, where a comparison sort of the full keys took longer on a large mesh;
/// three passes of 11 bits each move the keys once less than four of 8.
///
/// With `parallel`, each pass cuts the keys into one run per thread: each run counts its own
/// digits, and then moves its keys to where its counts place them, after the same digit's keys
/// of the runs before it. A stable sort has one result, so the keys come out the same on any
/// number of threads.
fn radix_sort<'a>(mut keys: &'a mut [u64], mut other: &'a mut [u64], parallel: bool) -> &'a mut [u64] {
    assert_eq!(keys.len(), other.len());
    let n = keys.len();
    let runs = if parallel { crate::par::threads().min(n / MIN_SORT_RUN).max(1) } else { 1 };
    let run_len = n.div_ceil(runs).max(1);
    let digit = |key: u64, d: usize| (code(&key) >> (DIGIT_BITS as usize * d)) as usize & (BUCKETS - 1);
    // Run `r` of the keys.
    fn run(keys: &[u64], run_len: usize, r: u32) -> &[u64] {
        let n = keys.len();
        &keys[(r as usize * run_len).min(n)..((r as usize + 1) * run_len).min(n)]
    }
    // Each run's counts of every digit, or of digit `only`: a fixed loop over the digits, which
    // the compiler unrolls, where a loop over a list of digits stays a loop.
    let counts_of = |keys: &[u64], only: Option<usize>| {
        crate::par::map_range(runs as u32, 1, |r| {
            let mut counts = [[0u32; BUCKETS]; DIGITS];
            let keys = run(keys, run_len, r);
            match only {
                None => {
                    for &key in keys {
                        for (d, counts) in counts.iter_mut().enumerate() {
                            counts[digit(key, d)] += 1;
                        }
                    }
                }
                Some(d) => {
                    for &key in keys {
                        counts[d][digit(key, d)] += 1;
                    }
                }
            }
            counts
        })
    };
    let per_run = counts_of(keys, None);
    for d in 0..DIGITS {
        let mut total = [0usize; BUCKETS];
        for run in &per_run {
            for (t, &c) in total.iter_mut().zip(&run[d]) {
                *t += c as usize;
            }
        }
        if total.contains(&n) {
            continue; // every code has the same digit here
        }
        // Each run's digits as they lie now: a pass before this one moved keys between runs.
        let per_run: Vec<[usize; BUCKETS]> = if runs == 1 {
            vec![total]
        } else {
            counts_of(keys, Some(d)).iter().map(|c| c[d].map(|c| c as usize)).collect()
        };
        // Where each run's first key of each digit goes: after the keys of smaller digits, and
        // after the same digit's keys of the runs before it.
        let mut starts = vec![[0usize; BUCKETS]; runs];
        let mut at = 0;
        for b in 0..BUCKETS {
            for (start, counts) in starts.iter_mut().zip(&per_run) {
                start[b] = at;
                at += counts[b];
            }
        }
        assert_eq!(at, n, "the runs' counts cover every key");
        let to = Scatter(other.as_mut_ptr());
        let keys_now: &[u64] = keys;
        crate::par::map_range(runs as u32, 1, |r| {
            let mut next = starts[r as usize];
            for &key in run(keys_now, run_len, r) {
                let b = digit(key, d);
                // SAFETY: `next[b]` stays within this run's range for digit `b`: it starts where
                // the counts of smaller digits and of earlier runs end, and this run holds as
                // many keys of digit `b` as its count, so it never reaches the next range; the
                // ranges tile `0..n` (asserted above), so the runs write disjoint elements of
                // `other`, which nothing else reads or writes until `map_range` returns.
                unsafe { to.write(next[b], key) };
                next[b] += 1;
            }
        });
        std::mem::swap(&mut keys, &mut other);
    }
    keys
}

/// Bits of a code sorted per pass: 3 × 11 covers its 32.
const DIGIT_BITS: u32 = 11;
/// Passes of the sort.
const DIGITS: usize = 32usize.div_ceil(DIGIT_BITS as usize);
/// Values of a digit.
const BUCKETS: usize = 1 << DIGIT_BITS;

/// Keys per run below which the radix sort's passes stay on one thread.
const MIN_SORT_RUN: usize = if cfg!(miri) { 64 } else { 1 << 16 };

/// The sorted array the radix sort's runs write, each into elements of its own.
struct Scatter(*mut u64);

impl Scatter {
    /// Writes element `i`.
    ///
    /// # Safety
    /// `i` is within the array, and no other thread reads or writes element `i` meanwhile.
    unsafe fn write(&self, i: usize, key: u64) {
        // SAFETY: by the contract.
        unsafe { self.0.add(i).write(key) };
    }
}

// SAFETY: the runs that share it write disjoint elements (see `radix_sort`).
unsafe impl Sync for Scatter {}

/// Ranges of at most this many items (four leaves of the mesh's four) choose their cut by cost.
const SMALL: usize = 16;

/// The cut of a small range of `n > max_leaf` items: the curve's cut `mid`, or a cut after a
/// whole number of leaves, whichever the SAH prices lowest, each side costing its box's half
/// area times the leaves it needs. Cut on the curve's cells alone, the bottom of the tree leaves
/// many leaves part empty (a range of seven could become leaves of two, one and four), and the
/// collapse and every ray then pay for the extra leaves; moving a cut that high up in the tree
/// would throw far-apart items together instead.
fn leaf_filling_cut(items: &[BuildItem], mid: usize, max_leaf: usize) -> usize {
    let n = items.len();
    debug_assert!(n <= SMALL && mid < n);
    // The candidate cuts, a bit each (`n <= SMALL` fits a `u32`).
    let mut cuts = 1u32 << mid;
    for at in (max_leaf..n).step_by(max_leaf) {
        cuts |= 1 << at;
    }
    let is_cut = |at: usize| cuts >> at & 1 != 0;
    let leaves = |count: usize| count.div_ceil(max_leaf) as f32;
    // The half area of the items from each cut on, gathered right to left; then the cost of each
    // cut, left to right: two passes over the items, and no array of boxes to fill.
    let mut after = [0.0f32; SMALL];
    let mut suffix = Bounds4::EMPTY;
    for at in (1..n).rev() {
        suffix.add_item(&items[at]);
        if is_cut(at) {
            after[at] = suffix.aabb().half_area();
        }
    }
    let (mut best, mut best_cost) = (mid, f32::INFINITY);
    let mut prefix = Bounds4::EMPTY;
    for at in 1..n {
        prefix.add_item(&items[at - 1]);
        if is_cut(at) {
            let c = prefix.aabb().half_area() * leaves(at) + after[at] * leaves(n - at);
            // The curve's cut wins ties: it is the one that follows the cells.
            if c < best_cost || (c == best_cost && at == mid) {
                (best, best_cost) = (at, c);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use slabtree_testkit::rng::Rng;

    /// Boxes scattered in a cube, some of them sharing a centroid (equal codes).
    fn items(n: usize, seed: u64) -> Vec<BuildItem> {
        let mut rng = Rng(seed);
        let mut centres: Vec<Vec3A> = Vec::new();
        (0..n)
            .map(|i| {
                let c = if i % 7 == 3 { centres[rng.below(centres.len())] } else { rng.in_cube(50.0) };
                centres.push(c);
                BuildItem::new(Aabb::from_center_half_extents(c, Vec3A::splat(rng.range(0.01, 2.0))), i as u32)
            })
            .collect()
    }

    /// `input` laid along the curve of the grid over its centroids' bounds, as the mesh lays
    /// its triangles: the items, their keys and the grid.
    fn sorted(input: &[BuildItem], parallel: bool) -> (Vec<BuildItem>, Vec<u64>, MortonGrid) {
        let bounds = input.iter().fold(Aabb::EMPTY, |b, i| b.grow(i.bounds().center()));
        let centroid = |i: u32| input[i as usize].bounds().center();
        let mut items = vec![BuildItem::new(Aabb::EMPTY, 0); input.len()];
        let mut scratch = vec![0; 2 * input.len()];
        let item = |i: u32| input[i as usize];
        let keys =
            sort_along_curve(&mut items, &mut scratch, &bounds, centroid, item, |_, _| {}, parallel).keys.to_vec();
        (items, keys, MortonGrid::new(&bounds))
    }

    /// The items come out ordered as the standard library's sort orders them by the top 32 bits
    /// of their full codes, then by index, each once, with their keys beside them, on one
    /// thread and on several.
    #[test]
    fn items_lie_along_the_curve_by_code_then_index() {
        for n in [0, 1, 7, 5000, 3 * MIN_SORT_RUN + 5] {
            let input = items(n, n as u64 + 1);
            for parallel in [false, true] {
                let (it, keys, grid) = sorted(&input, parallel);
                let top = |i: &BuildItem| grid.code(i.bounds().center()) >> 31;
                let mut want: Vec<(u64, u32)> = input.iter().map(|i| (top(i), i.index())).collect();
                want.sort();
                let got: Vec<(u64, u32)> = it.iter().map(|i| (top(i), i.index())).collect();
                assert_eq!(got, want, "n={n}");
                assert!(it.iter().all(|i| input[i.index() as usize] == *i), "n={n}");
                let keyed: Vec<(u64, u32)> = keys.iter().map(|k| (code(k), index(*k))).collect();
                assert_eq!(keyed, want, "n={n}");
            }
        }
    }

    /// Above [`SMALL`] items a range is cut where the highest bit in which its first and last
    /// codes differ turns on; at or below it, at the cut among that one and the whole-leaf ones
    /// whose SAH price (by brute force over the items) is lowest.
    #[test]
    fn ranges_are_cut_at_the_highest_differing_bit_or_the_cheapest_leaf_cut() {
        let input = items(4000, 77);
        let (it, keys, _) = sorted(&input, false);
        let mut rng = Rng(5);
        for _ in 0..3000 {
            let n = if rng.below(2) == 0 { 5 + rng.below(12) } else { 17 + rng.below(400) };
            let a = rng.below(it.len() - n);
            let (k, r) = (&keys[a..a + n], &it[a..a + n]);
            let cut = curve_cut(k, r, 4);
            assert!(cut >= 1 && cut < n);
            let (first, last) = (code(&k[0]), code(&k[n - 1]));
            let mid = if first == last {
                n / 2
            } else {
                let bit = 63 - (first ^ last).leading_zeros();
                k.iter().position(|key| code(key) >> bit & 1 == 1).unwrap()
            };
            if n > SMALL {
                assert_eq!(cut, mid, "n={n}");
                continue;
            }
            let area = |s: &[BuildItem]| s.iter().fold(Aabb::EMPTY, |b, i| b.union(&i.bounds())).half_area();
            let price = |c: usize| area(&r[..c]) * c.div_ceil(4) as f32 + area(&r[c..]) * (n - c).div_ceil(4) as f32;
            let best = std::iter::once(mid).chain((4..n).step_by(4)).map(price).fold(f32::INFINITY, f32::min);
            assert!(price(cut) <= best, "n={n}: cut {cut} prices {} against {best}", price(cut));
            assert!(cut == mid || cut.is_multiple_of(4), "n={n}: cut {cut}");
        }
    }

    /// The radix sort orders as the standard library's sort by code, then position.
    #[test]
    fn the_radix_sort_orders_by_code_then_position() {
        let mut rng = Rng(4);
        for n in [0, 1, 2, 100, 5000, 3 * MIN_SORT_RUN + 7] {
            // Few distinct codes in some bits, many in others, and repeats; in the second, the
            // middle digit shared by all (its pass skipped).
            let mask = if n % 2 == 0 { 0xff0f_00f3_0000_0000 } else { 0xffc0_07ff_0000_0000 };
            let keys: Vec<u64> = (0..n).map(|i| (rng.next() & mask) | i as u64).collect();
            let mut want = keys.clone();
            want.sort();
            for parallel in [false, true] {
                let (mut keys, mut other) = (keys.clone(), vec![0; n]);
                assert_eq!(radix_sort(&mut keys, &mut other, parallel), want, "n={n}");
            }
        }
    }
}
