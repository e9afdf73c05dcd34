//! The order of three or more children hit at one node, without a loop: a sorting network over
//! packed keys, in AVX2 registers: the child order of the AVX2 and AVX-512 levels (`super::x86`).
//!
//! A closest-first walk enters the nearest child hit and leaves the others on the stack, nearest
//! on top. For two children one comparison does it (`traverse.rs`); for three or more, an
//! insertion sort took a data-dependent branch per child, which the predictor cannot learn, and
//! three or more children are hit at a good part of the node visits (`docs/performance.md`). Here each child's entry distance and lane are packed into one `i32`
//! key, as Embree's AVX-512 kernels pack them (`bvh_traverser1.h`): the distance's bits (entry
//! distances are at least +0 once clamped, and non-negative floats order as their bits do) with
//! the lowest three replaced by the lane. Then, with no branch:
//!
//! * the nearest child is the smallest key, a three-step horizontal minimum, so the walk's next
//!   node load waits only for that and not for the whole order;
//! * the other entries are sorted far to near by a bitonic network of six compare-exchange steps
//!   (Batcher 1968), and written to the stack with their children and exact distances gathered
//!   by the sorted lanes, 64 bytes in two stores.
//!
//! Distances that differ only in their lowest three bits (about 2⁻²¹ relative) are ordered by
//! lane instead, as equal ones are: the earlier lane first (see [`lane_numbers`]). The order
//! decides which child is tried first, so the work, and which of two triangles hit at
//! exactly the same `t` in different leaves is returned; a popped entry is still culled by its
//! exact distance.

use std::arch::x86_64::*;

use super::Node8;
use super::node::Entry;

// The stores below write an entry as its child's `u32` and then its distance.
const _: () = assert!(std::mem::offset_of!(Entry, 0) == 0 && std::mem::offset_of!(Entry, 1) == 4);
const _: () = assert!(std::mem::size_of::<Entry>() == 8);

/// Compare-exchange of each lane with the lane `PARTNER` names (an in-lane shuffle immediate,
/// `_mm256_shuffle_epi32`): lanes set in `TAKE_MAX` keep the larger key.
#[inline(always)]
unsafe fn step_in_lane<const PARTNER: i32, const TAKE_MAX: i32>(v: __m256i) -> __m256i {
    // SAFETY: AVX2 is enabled in the caller (`super::x86::Avx8`).
    unsafe {
        let p = _mm256_shuffle_epi32::<PARTNER>(v);
        _mm256_blend_epi32::<TAKE_MAX>(_mm256_min_epi32(v, p), _mm256_max_epi32(v, p))
    }
}

/// Eight `i32` keys sorted in descending order (lane 0 the largest): the bitonic network for 8,
/// with partners `i ^ j` for `(k, j)` = (2, 1), (4, 2), (4, 1), (8, 4), (8, 2), (8, 1). A lane
/// keeps the larger key where `(i & j == 0) == (i & k == 0)`.
#[inline(always)]
pub(crate) unsafe fn sort8_descending(v: __m256i) -> __m256i {
    // Shuffle immediates: 0xB1 pairs lanes i and i ^ 1, 0x4E lanes i and i ^ 2 (within each
    // 128-bit half); i ^ 4 swaps the halves.
    // SAFETY: AVX2 is enabled in the caller (`super::x86::Avx8`).
    unsafe {
        let v = step_in_lane::<0xB1, 0b1001_1001>(v);
        let v = step_in_lane::<0x4E, 0b1100_0011>(v);
        let v = step_in_lane::<0xB1, 0b1010_0101>(v);
        let p = _mm256_permute2x128_si256::<0x01>(v, v);
        let v = _mm256_blend_epi32::<0b0000_1111>(_mm256_min_epi32(v, p), _mm256_max_epi32(v, p));
        let v = step_in_lane::<0x4E, 0b0011_0011>(v);
        step_in_lane::<0xB1, 0b0101_0101>(v)
    }
}

/// For the children in `hit` (a mask of three or more lanes of `node`) with entry distances
/// `near`: the lane of the nearest, and the others written far to near at `out`, which must have
/// room for 8 entries (all 8 are written; the first `hit.count_ones() - 1` are the entries).
///
/// # Safety
/// `out` is valid for writing 8 entries, and the CPU has AVX2.
#[inline(always)]
pub(crate) unsafe fn nearest_and_rest(node: &Node8, near: __m256, hit: u32, out: *mut Entry) -> usize {
    // SAFETY: AVX2 is enabled in the caller (`super::x86::Avx8`); `out` as the caller promises.
    unsafe {
        let is_hit = lanes_of(hit);
        // Clamped at +0: an entry a rounding below the origin has a negative distance, whose
        // bits would order backwards.
        let bits = _mm256_max_epi32(_mm256_castps_si256(near), _mm256_setzero_si256());
        let keys = _mm256_or_si256(_mm256_andnot_si256(_mm256_set1_epi32(7), bits), lane_numbers());
        // The nearest: the smallest key of a hit lane (lanes not hit read as the largest).
        let m = _mm256_blendv_epi8(_mm256_set1_epi32(i32::MAX), keys, is_hit);
        let m = _mm256_min_epi32(m, _mm256_permute2x128_si256::<0x01>(m, m));
        let m = _mm256_min_epi32(m, _mm256_shuffle_epi32::<0x4E>(m));
        let m = _mm256_min_epi32(m, _mm256_shuffle_epi32::<0xB1>(m));
        let nearest = (_mm256_cvtsi256_si32(m) & 7) as usize;
        // The rest, far to near: lanes not hit sort last, and the nearest sorts after every
        // other hit lane, so it is the entry after the last one kept.
        write_sorted(node, near, _mm256_blendv_epi8(_mm256_set1_epi32(i32::MIN), keys, is_hit), out);
        nearest
    }
}

/// Lanes 0 to 7, the low bits of the keys: of two children at the same distance the earlier
/// lane is taken first. A mesh node's lanes hold its children largest first (`mesh/collapse.rs`),
/// so the larger box is tried first; the insertion sort took the later one, and boxes entered
/// at one distance (an interior's axis-aligned walls) ran faster this way
/// (`docs/performance.md`).
#[inline(always)]
unsafe fn lane_numbers() -> __m256i {
    // SAFETY: AVX2 is enabled in the caller (`super::x86::Avx8`).
    unsafe { _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7) }
}

/// All ones in the lanes set in `mask`.
#[inline(always)]
unsafe fn lanes_of(mask: u32) -> __m256i {
    // SAFETY: AVX2 is enabled in the caller (`super::x86::Avx8`).
    unsafe {
        let bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(mask as i32), bit), bit)
    }
}

/// Writes 8 entries at `out`, in descending order of `keys` (a lane number in each key's lowest
/// three bits): each the child and the distance of its key's lane.
#[inline(always)]
unsafe fn write_sorted(node: &Node8, near: __m256, keys: __m256i, out: *mut Entry) {
    // SAFETY: AVX2 is enabled in the caller (`super::x86::Avx8`); `Node8::child` is 8 `u32`s
    // (`ChildRef` is a transparent `u32`), and `out` has room for 8 entries of a `u32` and an
    // `f32` each (the assertions at the top of the file).
    unsafe {
        let seven = _mm256_set1_epi32(7);
        let lanes = _mm256_and_si256(sort8_descending(keys), seven);
        let child = _mm256_loadu_si256(node.child.as_ptr() as *const __m256i);
        let child = _mm256_permutevar8x32_epi32(child, lanes);
        let dist = _mm256_permutevar8x32_epi32(_mm256_castps_si256(near), lanes);
        let lo = _mm256_unpacklo_epi32(child, dist);
        let hi = _mm256_unpackhi_epi32(child, dist);
        _mm256_storeu_si256(out as *mut __m256i, _mm256_permute2x128_si256::<0x20>(lo, hi));
        _mm256_storeu_si256((out as *mut __m256i).add(1), _mm256_permute2x128_si256::<0x31>(lo, hi));
    }
}

#[cfg(test)]
mod tests {
    use std::arch::x86_64::*;

    use slabtree_testkit::rng::Rng;

    use super::{nearest_and_rest, sort8_descending};
    use crate::child::ChildRef;
    use crate::wide::Node8;

    #[test]
    fn the_network_sorts_every_input() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let mut rng = Rng(7);
        for round in 0..20_000 {
            // Small ranges make ties; the extremes are included.
            let span = [3usize, 16, 1 << 20, 1 << 31][round % 4];
            let v: [i32; 8] = std::array::from_fn(|_| match rng.below(span + 1) {
                0 if round % 5 == 0 => i32::MIN,
                1 if round % 7 == 0 => i32::MAX,
                x => (x as i64 - (span / 2) as i64) as i32,
            });
            let mut want = v;
            want.sort_unstable_by(|a, b| b.cmp(a));
            // SAFETY: the CPU has AVX2 (checked above).
            let got: [i32; 8] =
                unsafe { std::mem::transmute(sort8_descending(_mm256_loadu_si256(v.as_ptr() as *const __m256i))) };
            assert_eq!(got, want, "input {v:?}");
        }
    }

    #[test]
    fn the_nearest_is_taken_and_the_rest_are_far_to_near() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let mut rng = Rng(11);
        let mut node = Node8::EMPTY;
        for l in 0..8 {
            node.child[l] = ChildRef::node(100 + l as u32);
        }
        for round in 0..20_000 {
            let hit = loop {
                let m = rng.below(256) as u32;
                if m.count_ones() >= 3 {
                    break m;
                }
            };
            // Distances from a few values (ties), including +0, -0 and a rounding below zero.
            let pool = [0.0f32, -0.0, -1e-7, 0.5, 0.5000001, 1.0, 3.25, 1e30];
            let near: [f32; 8] =
                std::array::from_fn(|_| if round % 2 == 0 { pool[rng.below(8)] } else { rng.unit() * 10.0 });
            let mut out = [(ChildRef::EMPTY, f32::NAN); 8];
            // SAFETY: `out` has room for 8 entries; the CPU has AVX2 (checked above).
            let nearest = unsafe { nearest_and_rest(&node, _mm256_loadu_ps(near.as_ptr()), hit, out.as_mut_ptr()) };
            let lanes: Vec<usize> = (0..8).filter(|l| hit & (1 << l) != 0).collect();
            // The oracle: the clamped distance, lowest three bits dropped, then the lane.
            let key = |l: usize| ((near[l].to_bits() as i32).max(0) & !7) | l as i32;
            let want_nearest = *lanes.iter().min_by_key(|&&l| key(l)).unwrap();
            assert_eq!(nearest, want_nearest, "hit {hit:08b} near {near:?}");
            let mut rest: Vec<usize> = lanes.into_iter().filter(|&l| l != nearest).collect();
            rest.sort_by_key(|&l| std::cmp::Reverse(key(l)));
            for (i, &l) in rest.iter().enumerate() {
                assert_eq!(out[i].0, node.child[l], "entry {i}, hit {hit:08b} near {near:?}");
                assert_eq!(out[i].1.to_bits(), near[l].to_bits(), "entry {i}: the exact distance");
            }
        }
    }
}
