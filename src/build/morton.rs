//! Morton codes (Morton 1966; Lauterbach et al., "Fast BVH Construction on GPUs", 2009): a
//! point's quantised coordinates with their bits interleaved, so that sorting points by code
//! lays them along a Z-order curve and every run of codes sharing a prefix is one cell of an
//! octree. The dynamic tree's fast rebuild (`Dbvt::rebuild_morton`) splits on those prefixes.

use glam::Vec3A;
use wide::f32x4;

use crate::math::Aabb;

/// Bits per axis: 3 × 21 = 63 bits in a `u64`.
const BITS: u32 = 21;
/// The largest quantised coordinate.
const CELLS_MAX: f32 = ((1u32 << BITS) - 1) as f32;

/// Spreads the low 21 bits of `v` three apart (bit i to bit 3i), by the usual shift-and-mask
/// steps.
#[inline(always)]
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v) & 0x1f_ffff;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    x = (x | x << 2) & 0x1249_2492_4924_9249;
    x
}

/// Quantises points inside `bounds` to a 2^21 grid per axis and interleaves the bits.
#[derive(Clone, Copy, Debug)]
pub struct MortonGrid {
    min: Vec3A,
    scale: Vec3A,
}

impl MortonGrid {
    /// A grid of cubic cells over `bounds` (the points' bounds), as many along its longest
    /// axis as the code has room for. Cubic, so that the curve's splits (each at a cell's
    /// midplane) cut the longest side of the points' spread first: stretched to fill every
    /// axis instead, a flat scene's thin axis would be split as often as its wide ones.
    pub fn new(bounds: &Aabb) -> MortonGrid {
        let extent = (bounds.max - bounds.min).max_element().max(f32::MIN_POSITIVE);
        let scale = Vec3A::splat(CELLS_MAX / extent);
        // An empty or NaN-free but infinite extent gives a zero or NaN scale: every point then
        // lands in cell 0 (`code` clamps NaN to 0), which the builder splits at the middle.
        MortonGrid { min: bounds.min, scale }
    }

    /// The 63-bit Morton code of `p` (clamped to the grid).
    #[inline(always)]
    pub fn code(&self, p: Vec3A) -> u64 {
        let q = ((p - self.min) * self.scale).max(Vec3A::ZERO).min(Vec3A::splat(CELLS_MAX));
        spread(q.x as u32) << 2 | spread(q.y as u32) << 1 | spread(q.z as u32)
    }

    /// The code's top 32 bits, `code(p) >> 31`, made without the bits below them: the top 11
    /// bits of `x` and `y` and the top 10 of `z`, interleaved. One vector truncation takes the
    /// place of three scalar ones (`trunc_int` saturates as `as u32` does on the clamped range,
    /// and takes NaN to 0 as it does), and each coordinate spreads 11 bits, not 21: under half
    /// of [`MortonGrid::code`]'s work, for a linear BVH's sort keys.
    #[inline(always)]
    pub fn code_top32(&self, p: Vec3A) -> u32 {
        let q = ((p - self.min) * self.scale).max(Vec3A::ZERO).min(Vec3A::splat(CELLS_MAX));
        let [x, y, z, _] = f32x4::from(q.extend(0.0).to_array()).trunc_int().to_array().map(|c| c as u32);
        // Bit `i` of an axis is bit `3i + 2` (x), `3i + 1` (y) or `3i` (z) of the code, which
        // keeps its bits from 31 on: x's and y's from 10 on, z's from 11 on.
        spread11(x >> 10) << 1 | spread11(y >> 10) | spread11(z >> 11) << 2
    }
}

/// Spreads the low 11 bits of `v` three apart (bit i to bit 3i), as [`spread`] does.
#[inline(always)]
fn spread11(v: u32) -> u32 {
    let mut x = v & 0x7ff;
    x = (x | x << 16) & 0x0700_00ff;
    x = (x | x << 8) & 0x0700_f00f;
    x = (x | x << 4) & 0x430c_30c3;
    x = (x | x << 2) & 0x4924_9249;
    x
}

/// Where a range of at least two keys sorted by their codes (`code(key)`) splits: where the
/// codes' highest differing bit changes (the boundary of the smallest octree cell holding them
/// all), or in the middle when all codes are equal. Trees cut this way are at most
/// 64 + log2(n) deep.
pub fn morton_split<K>(keys: &[K], code: impl Fn(&K) -> u64) -> usize {
    let n = keys.len();
    let diff = code(&keys[0]) ^ code(&keys[n - 1]);
    if diff == 0 {
        n / 2
    } else {
        let bit = 1u64 << (63 - diff.leading_zeros());
        if n <= SHORT_RANGE {
            // The keys before the split are those without the bit (they are sorted): counted
            // without a branch, where the binary search waited on each of its loads in turn.
            keys.iter().filter(|k| code(k) & bit == 0).count()
        } else {
            keys.partition_point(|k| code(k) & bit == 0)
        }
    }
}

/// Ranges of at most this many keys are split by counting rather than by a binary search.
const SHORT_RANGE: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    /// The code against a bit-by-bit interleave.
    #[test]
    fn codes_interleave_the_bits() {
        let grid = MortonGrid::new(&Aabb::new(Vec3A::ZERO, Vec3A::splat(CELLS_MAX)));
        for (x, y, z) in
            [(0u32, 0u32, 0u32), (1, 0, 0), (0, 1, 0), (0, 0, 1), (2_097_151, 5, 1_234_567), (77, 2_000_000, 3)]
        {
            let mut want = 0u64;
            for b in 0..BITS {
                want |= u64::from(x >> b & 1) << (3 * b + 2);
                want |= u64::from(y >> b & 1) << (3 * b + 1);
                want |= u64::from(z >> b & 1) << (3 * b);
            }
            assert_eq!(grid.code(Vec3A::new(x as f32, y as f32, z as f32)), want, "{x} {y} {z}");
        }
    }

    /// The top 32 bits made directly are the full code's, at every cell edge and in between.
    #[test]
    fn the_top_32_bits_match_the_full_code() {
        let grid = MortonGrid::new(&Aabb::new(Vec3A::splat(-3.0), Vec3A::new(5.0, 1.0, 2.0)));
        let mut rng = slabtree_testkit::rng::Rng(8);
        for _ in 0..20_000 {
            let p = Vec3A::new(rng.range(-4.0, 6.0), rng.range(-4.0, 6.0), rng.range(-4.0, 6.0));
            assert_eq!(u64::from(grid.code_top32(p)), grid.code(p) >> 31, "{p}");
        }
        let cells = MortonGrid::new(&Aabb::new(Vec3A::ZERO, Vec3A::splat(CELLS_MAX)));
        for v in [0u32, 1, 1023, 1024, 2047, 2048, 4095, 0x1f_f800, 0x1f_ffff] {
            for p in [Vec3A::new(v as f32, 0.0, 0.0), Vec3A::new(0.0, v as f32, 0.0), Vec3A::new(0.0, 0.0, v as f32)] {
                assert_eq!(u64::from(cells.code_top32(p)), cells.code(p) >> 31, "{p}");
            }
        }
        assert_eq!(grid.code_top32(Vec3A::splat(f32::NAN)), 0);
    }

    /// Points outside the grid, and NaN, clamp instead of wrapping.
    #[test]
    fn codes_clamp() {
        let grid = MortonGrid::new(&Aabb::new(Vec3A::ZERO, Vec3A::ONE));
        assert_eq!(grid.code(Vec3A::splat(-5.0)), 0);
        assert_eq!(grid.code(Vec3A::splat(5.0)), grid.code(Vec3A::ONE));
        assert_eq!(grid.code(Vec3A::splat(f32::NAN)), 0);
    }

    /// The split is the first key with the highest differing bit set, found by looking at every
    /// key, equal codes and all.
    #[test]
    fn the_split_is_where_the_highest_differing_bit_turns_on() {
        let mut rng = slabtree_testkit::rng::Rng(5);
        for n in [2, 3, 5, 16, 33, 100, 1000] {
            for mask in [0x7u64, 0xff, 0xffff_ffff] {
                let mut keys: Vec<u64> = (0..n).map(|_| rng.next() & mask).collect();
                keys.sort();
                let diff = keys[0] ^ keys[n - 1];
                let want = if diff == 0 {
                    n / 2
                } else {
                    let top = 63 - diff.leading_zeros();
                    keys.iter().position(|k| k >> top & 1 == 1).expect("the last key has it")
                };
                assert_eq!(morton_split(&keys, |k| *k), want, "n={n}, mask={mask:#x}");
            }
        }
    }
}
