//! A linear BVH (LBVH: Lauterbach et al., "Fast BVH Construction on GPUs", 2009): the items
//! sorted along the Morton curve of their centroids, and the tree cut where the codes' highest
//! differing bit changes. After the sort it is linear in the items and evaluates no cost, so it
//! builds several times faster than the binned SAH for a tree whose rays cost more: the builder
//! of meshes rebuilt every frame (`BuildQuality::Low`). Embree's low-quality builder is of this
//! kind too.

use glam::Vec3A;

use super::item::{Bounds4, BuildItem};
use super::morton::{MortonGrid, morton_split};
use super::segments::{PENDING, Segment, place};
use super::split::{BuildNode, bounds_of};
use crate::math::Aabb;

/// Builds the tree over the items `item(0) .. item(n - 1)`, with `n` the length of `items`,
/// whose centroids `centroid(i)` lie in `bounds`: writes the items along the curve into `items`,
/// so that every leaf covers `items[first .. first + count]`, and returns the nodes, as
/// [`BinnedSah::build`](super::BinnedSah::build) returns them: node 0 the root, each node before
/// its children. A range of at most `max_leaf` items is a leaf. Subtrees over more than
/// `parallel_threshold` items are built on rayon's threads; the tree is the same on any number
/// of threads (the order is by code, then by index, and the cuts depend on the codes alone).
/// Each item is made once, in the curve's order, so that no array of items is sorted. The sort
/// keys go in `scratch`, of at least twice as many words as items: with `items`, memory the
/// caller can hand to the BVH afterwards (`crate::pages::Spare`). `prefetch(i, Fetch::First)`
/// starts loading what `item(i)` reads first, and `prefetch(i, Fetch::Rest)` what it reads
/// with that (hints), the first some items ahead and the rest half as far, once the first has
/// arrived: the curve's order visits the triangles out of their order in memory, and each item
/// otherwise waited on its triangle's indices and then on its corners.
#[allow(clippy::too_many_arguments)]
pub fn build_linear(
    items: &mut [BuildItem],
    scratch: &mut [u64],
    bounds: &Aabb,
    centroid: impl Fn(u32) -> Vec3A + Sync + Send,
    item: impl Fn(u32) -> BuildItem + Sync + Send,
    prefetch: impl Fn(u32, Fetch) + Sync + Send,
    max_leaf: usize,
    parallel_threshold: usize,
) -> Vec<BuildNode> {
    let grid = MortonGrid::new(bounds);
    // Each item's key: the top 32 bits of its code (about 11 per axis, 2048 cells along the
    // longest), and its index below them, so one u64 sorts by code, then by index.
    let (keys, other) = scratch[..2 * items.len()].split_at_mut(items.len());
    crate::par::fill(keys, 1 << 14, |i| u64::from(grid.code_top32(centroid(i))) << 32 | u64::from(i));
    let keys = radix_sort(keys, other, parallel_threshold < items.len());
    crate::par::fill(items, 1 << 14, |k| {
        if let Some(&ahead) = keys.get(k as usize + 2 * PREFETCH_AHEAD) {
            prefetch(index(ahead), Fetch::First);
        }
        if let Some(&ahead) = keys.get(k as usize + PREFETCH_AHEAD) {
            prefetch(index(ahead), Fetch::Rest);
        }
        item(index(keys[k as usize]))
    });
    // At most 2n - 1 nodes; reserving the bound only reserves address space (as the binned
    // builder's), where a vector that grew would copy itself.
    let mut out = Vec::with_capacity(2 * items.len());
    crate::pages::advise_huge_capacity(&mut out);
    if !items.is_empty() {
        let mut spawned = Vec::new();
        emit(keys, items, 0, max_leaf.max(1), parallel_threshold, &mut out, &mut spawned);
        place(&mut out, spawned);
    }
    out
}

/// Items ahead of the one being made for which the fill asks for the rest of what they read
/// (`prefetch`); it asks for what they read first twice as far ahead.
const PREFETCH_AHEAD: usize = 16;

/// Which of an item's reads [`build_linear`]'s `prefetch` asks for.
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

/// A key's item index: its lower half.
#[inline(always)]
fn index(key: u64) -> u32 {
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

/// Appends the subtree over `keys` (with `items` alongside; `first` is their offset in the
/// whole array) to `out` in pre-order, its node indices counted from `out`'s start, and returns
/// its bounds. Above `parallel_threshold` items the right subtree goes to another thread, into a
/// segment pushed to `spawned` and placed after the whole build, as the binned builder's are
/// (`super::segments`).
fn emit(
    keys: &[u64],
    items: &[BuildItem],
    first: u32,
    max_leaf: usize,
    parallel_threshold: usize,
    out: &mut Vec<BuildNode>,
    spawned: &mut Vec<Segment>,
) -> Aabb {
    let n = keys.len();
    if n <= max_leaf {
        let bounds = bounds_of(items).aabb();
        out.push(BuildNode::Leaf { bounds, first, count: n as u32 });
        return bounds;
    }
    let mid = morton_split(keys, code);
    let mid = if n <= SMALL { leaf_filling_cut(items, mid, max_leaf) } else { mid };
    let me = out.len();
    out.push(BuildNode::Leaf { bounds: Aabb::EMPTY, first: 0, count: 0 }); // set below
    let (left_keys, right_keys) = keys.split_at(mid);
    let (left_items, right_items) = items.split_at(mid);
    let right_first = first + mid as u32;
    let left = me as u32 + 1;
    let emit_left = |out: &mut Vec<BuildNode>, spawned: &mut Vec<Segment>| {
        emit(left_keys, left_items, first, max_leaf, parallel_threshold, out, spawned)
    };
    let (lb, rb, right) = if n > parallel_threshold {
        let (lb, (rb, segment)) = crate::par::join(
            || emit_left(out, spawned),
            || {
                let (mut nodes, mut below) =
                    (Vec::with_capacity(2 * right_keys.len().min(parallel_threshold) + 64), Vec::new());
                let rb =
                    emit(right_keys, right_items, right_first, max_leaf, parallel_threshold, &mut nodes, &mut below);
                (rb, Segment::new(me as u32, nodes, below))
            },
        );
        spawned.push(segment);
        (lb, rb, PENDING)
    } else {
        let lb = emit_left(out, spawned);
        let right = out.len() as u32;
        let rb = emit(right_keys, right_items, right_first, max_leaf, parallel_threshold, out, spawned);
        (lb, rb, right)
    };
    let bounds = lb.union(&rb);
    out[me] = BuildNode::Inner { bounds, left, right };
    bounds
}

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

    /// The tree over `input`, as the mesh builds it (the grid over the centroids' bounds), and
    /// that grid.
    fn build(input: &[BuildItem], max_leaf: usize, threshold: usize) -> (Vec<BuildItem>, Vec<BuildNode>, MortonGrid) {
        let bounds = input.iter().fold(Aabb::EMPTY, |b, i| b.grow(i.bounds().center()));
        let centroid = |i: u32| input[i as usize].bounds().center();
        let mut items = vec![BuildItem::new(Aabb::EMPTY, 0); input.len()];
        let mut scratch = vec![0; 2 * input.len()];
        let nodes = build_linear(
            &mut items,
            &mut scratch,
            &bounds,
            centroid,
            |i| input[i as usize],
            |_, _| {},
            max_leaf,
            threshold,
        );
        (items, nodes, MortonGrid::new(&bounds))
    }

    /// Every node reached once from the root, every item in exactly one leaf of at most
    /// `max_leaf`, each node's bounds the union of its children's (of its items' for a leaf), and
    /// the leaves in pre-order follow the curve: each leaf's codes at or above the previous one's.
    #[test]
    fn a_tree_over_every_item_once_along_the_curve() {
        for (n, max_leaf, threshold) in
            [(1, 4, 8), (2, 1, 8), (5, 4, 8), (1000, 4, 64), (5000, 1, 100_000), (5000, 4, 256)]
        {
            let (it, nodes, grid) = build(&items(n, n as u64), max_leaf, threshold);
            let mut seen = vec![0u32; n];
            let mut reached = vec![0u32; nodes.len()];
            let mut last_code = 0u64; // the top 32 bits, as the build sorts
            let mut stack = vec![0u32];
            while let Some(k) = stack.pop() {
                reached[k as usize] += 1;
                match nodes[k as usize] {
                    BuildNode::Leaf { bounds, first, count } => {
                        assert!(count >= 1 && count as usize <= max_leaf);
                        let leaf = &it[first as usize..(first + count) as usize];
                        assert_eq!(leaf.iter().fold(Aabb::EMPTY, |b, i| b.union(&i.bounds())), bounds);
                        for item in leaf {
                            seen[item.index() as usize] += 1;
                            let code = grid.code(item.bounds().center()) >> 31;
                            assert!(code >= last_code, "n={n}: the leaves leave the curve's order");
                            last_code = code;
                        }
                    }
                    BuildNode::Inner { bounds, left, right } => {
                        assert_eq!(nodes[left as usize].bounds().union(nodes[right as usize].bounds()), bounds);
                        stack.push(right);
                        stack.push(left);
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n={n}");
            assert!(reached.iter().all(|&c| c == 1), "n={n}");
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

    /// Subtrees built on other threads give the serial build's tree and item order.
    #[test]
    fn parallel_and_serial_builds_are_identical() {
        let input = items(40_000, 9);
        let (a, serial, _) = build(&input, 4, usize::MAX);
        let (b, parallel, _) = build(&input, 4, 1000);
        assert_eq!(serial, parallel);
        assert_eq!(a, b);
    }
}
