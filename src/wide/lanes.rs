//! [`Lanes8`]: the eight `f32` lanes the node tests compute in, one implementation per SIMD
//! level. A kernel is written once, generic over `L: Lanes8`, with `#[inline(always)]` all the
//! way down to the lane operations; `super::dispatch` runs it at the level the CPU has.
//!
//! | level | `L` | fused multiply-add | child order |
//! |---|---|---|---|
//! | x86-64 baseline | `super::x86::Sse8`: two SSE halves | no: the exact node test | insertion |
//! | AVX2, AVX-512 | `super::x86::Avx8`: one 256-bit register | the fused node test | sorting network |
//! | elsewhere (aarch64) | `wide::f32x8` as compiled | where the target has it | insertion |
//!
//! Every level gives the same answers: the triangle tests round every product and sum
//! separately on every level (`mesh::triangle`), the node tests are conservative on every
//! level, and the closest hit at a shared distance is the lower triangle index, whichever
//! order a level's walk meets them in.

use std::ops::{Add, Div, Mul, Sub};

use super::Node8;
use super::node::Entry;
use crate::math::KeepLanes;

/// Eight `f32` lanes at one SIMD level, with what the 8-wide node tests and the traversal ask of
/// them. Every method is `#[inline(always)]` in every implementation, so that a kernel generic
/// over `Lanes8` compiles, inside a level's entry point, to that level's instructions.
pub(crate) trait Lanes8:
    Copy + KeepLanes + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// Whether [`Lanes8::mul_sub`] rounds once (a real fused multiply-add): the fused node test
    /// (`super::ray::FusedRay8`) is only conservative with one rounding.
    const FMA: bool;

    /// Whether [`Lanes8::nearest_and_rest`] is implemented (a sorting network); without it the
    /// traversal sorts by insertion.
    const NETWORK: bool;

    /// All lanes `x`.
    fn splat(x: f32) -> Self;

    /// The lanes of `row`.
    fn load(row: &[f32; 8]) -> Self;

    /// The lanes as an array.
    fn to_array(self) -> [f32; 8];

    /// `self · m − s`, rounded once where [`Lanes8::FMA`] (else twice).
    fn mul_sub(self, m: Self, s: Self) -> Self;

    /// The larger of the lanes' bits compared as `i32` (see `super::ray::int_max`).
    fn int_max(self, other: Self) -> Self;

    /// The smaller of the lanes' bits compared as `i32` (see `super::ray::int_min`).
    fn int_min(self, other: Self) -> Self;

    /// Bit `i` set where lane `i` of `self` is at most `other`'s (false on NaN).
    fn le_bits(self, other: Self) -> u32;

    /// Bit `i` set where lane `i` of `self` is less than `other`'s (false on NaN).
    fn lt_bits(self, other: Self) -> u32;

    /// Bit `i` set where lane `i` of `self` is at least `other`'s (false on NaN).
    #[inline(always)]
    fn ge_bits(self, other: Self) -> u32 {
        other.le_bits(self)
    }

    /// Bit `i` set where lane `i` of `self` is greater than `other`'s (false on NaN).
    #[inline(always)]
    fn gt_bits(self, other: Self) -> u32 {
        other.lt_bits(self)
    }

    /// The lanes' sign bits alone (`self & -0.0`).
    fn sign(self) -> Self;

    /// The lanes' bits exclusive-or `other`'s (with [`Lanes8::sign`]: a sign flipped or cleared).
    fn xor(self, other: Self) -> Self;

    /// Lane `i` of `a` where bit `i` of `bits` is set, else of `b`.
    fn select_bits(bits: u32, a: Self, b: Self) -> Self;

    /// For the children in `hit` (three or more lanes of `node`) entered at `near`: the lane of
    /// the nearest, with the others written far to near at `out` (`super::order`). Only called
    /// where [`Lanes8::NETWORK`].
    ///
    /// # Safety
    /// `out` is valid for writing 8 entries, and the level's instructions are enabled.
    unsafe fn nearest_and_rest(node: &Node8, near: Self, hit: u32, out: *mut Entry) -> usize {
        let _ = (node, near, hit, out);
        unreachable!("no sorting network at this level")
    }
}

/// `wide`'s eight lanes as compiled: the level of the build's target features. The packets,
/// the streams and the dynamic tree's copy run on them, and so does everything on targets other
/// than x86-64.
impl Lanes8 for wide::f32x8 {
    const FMA: bool = cfg!(target_feature = "fma");
    const NETWORK: bool = false;

    #[inline(always)]
    fn splat(x: f32) -> Self {
        wide::f32x8::splat(x)
    }

    #[inline(always)]
    fn load(row: &[f32; 8]) -> Self {
        wide::f32x8::new(*row)
    }

    #[inline(always)]
    fn to_array(self) -> [f32; 8] {
        wide::f32x8::to_array(self)
    }

    /// `wide`'s fused form only where the build has `fma` (x86); elsewhere a multiply and a
    /// subtraction, so that the rounding matches [`Lanes8::FMA`] on every target (`wide` fuses
    /// on aarch64, where the `fma` feature name does not exist and the exact node test is used).
    #[inline(always)]
    fn mul_sub(self, m: Self, s: Self) -> Self {
        if Self::FMA { wide::f32x8::mul_sub(self, m, s) } else { self * m - s }
    }

    #[inline(always)]
    fn int_max(self, other: Self) -> Self {
        let (a, b): (wide::i32x8, wide::i32x8) = (reinterpret(self), reinterpret(other));
        reinterpret(a.max(b))
    }

    #[inline(always)]
    fn int_min(self, other: Self) -> Self {
        let (a, b): (wide::i32x8, wide::i32x8) = (reinterpret(self), reinterpret(other));
        reinterpret(a.min(b))
    }

    #[inline(always)]
    fn le_bits(self, other: Self) -> u32 {
        self.simd_le(other).to_bitmask()
    }

    #[inline(always)]
    fn lt_bits(self, other: Self) -> u32 {
        self.simd_lt(other).to_bitmask()
    }

    #[inline(always)]
    fn sign(self) -> Self {
        self & wide::f32x8::splat(-0.0)
    }

    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        self ^ other
    }

    #[inline(always)]
    fn select_bits(bits: u32, a: Self, b: Self) -> Self {
        let all = f32::from_bits(u32::MAX);
        let mask = wide::f32x8::new(std::array::from_fn(|i| if bits & (1 << i) != 0 { all } else { 0.0 }));
        mask.bitselect(a, b)
    }
}

/// A reinterpretation between two of `wide`'s 32-byte vector types.
#[inline(always)]
fn reinterpret<A: Copy, B: Copy>(a: A) -> B {
    const { assert!(std::mem::size_of::<A>() == 32 && std::mem::size_of::<B>() == 32) };
    // SAFETY: both are 32 bytes of plain lanes, every bit pattern valid (checked sizes).
    unsafe { std::mem::transmute_copy(&a) }
}

/// A kernel to run at the level `super::dispatch` picks: `run` is instantiated once per level, inside
/// that level's entry point, and must be `#[inline(always)]` (with everything it calls that
/// touches lanes), or it is compiled for the baseline.
pub(crate) trait WithLanes {
    /// What the kernel returns.
    type Output;

    /// Whether the kernel is a walk with early child loads, which runs at
    /// `super::level::early_loads_level` rather than at [`crate::simd_level`].
    const EARLY_LOADS: bool = false;

    /// The kernel, on lanes `L`.
    fn run<L: Lanes8>(self) -> Self::Output;
}

#[cfg(test)]
mod tests {
    use slabtree_testkit::rng::Rng;

    use super::Lanes8;
    use crate::math::{max_keep, min_keep};
    use crate::wide::dispatch::at_every_level;

    /// Every operation of every level's lanes against the scalar definition, on values that
    /// include the slab test's special cases (±0, ±inf, NaN, subnormals).
    #[inline(always)]
    fn check<L: Lanes8>() {
        let special =
            [0.0f32, -0.0, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, -1e-40, 3.5, f32::MAX, -2.0];
        let mut rng = Rng(0x1a4e5);
        for round in 0..4000 {
            let pick = |rng: &mut Rng| -> [f32; 8] {
                std::array::from_fn(|_| {
                    if round % 2 == 0 { special[rng.below(special.len())] } else { rng.range(-4.0, 4.0) }
                })
            };
            let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let (va, vb, vc) = (L::load(&a), L::load(&b), L::load(&c));
            let same = |got: L, want: [f32; 8], what: &str| {
                let got = got.to_array();
                for i in 0..8 {
                    assert!(
                        got[i].to_bits() == want[i].to_bits() || (got[i].is_nan() && want[i].is_nan()),
                        "{what} lane {i}: {} vs {} ({a:?} {b:?} {c:?})",
                        got[i],
                        want[i]
                    );
                }
            };
            same(va + vb, std::array::from_fn(|i| a[i] + b[i]), "add");
            same(va - vb, std::array::from_fn(|i| a[i] - b[i]), "sub");
            same(va * vb, std::array::from_fn(|i| a[i] * b[i]), "mul");
            same(L::splat(a[3]), [a[3]; 8], "splat");
            same(max_keep(va, vb), std::array::from_fn(|i| max_keep(a[i], b[i])), "max_keep");
            same(min_keep(va, vb), std::array::from_fn(|i| min_keep(a[i], b[i])), "min_keep");
            let fused = |i: usize| if L::FMA { a[i].mul_add(b[i], -c[i]) } else { a[i] * b[i] - c[i] };
            same(va.mul_sub(vb, vc), std::array::from_fn(fused), "mul_sub");
            let int = |x: f32| x.to_bits() as i32;
            let back = |x: i32| f32::from_bits(x as u32);
            same(va.int_max(vb), std::array::from_fn(|i| back(int(a[i]).max(int(b[i])))), "int_max");
            same(va.int_min(vb), std::array::from_fn(|i| back(int(a[i]).min(int(b[i])))), "int_min");
            let bits = |f: &dyn Fn(usize) -> bool| (0..8).filter(|&i| f(i)).fold(0u32, |m, i| m | 1 << i);
            assert_eq!(va.le_bits(vb), bits(&|i| a[i] <= b[i]), "le {a:?} {b:?}");
            assert_eq!(va.lt_bits(vb), bits(&|i| a[i] < b[i]), "lt {a:?} {b:?}");
            assert_eq!(va.ge_bits(vb), bits(&|i| a[i] >= b[i]), "ge {a:?} {b:?}");
            assert_eq!(va.gt_bits(vb), bits(&|i| a[i] > b[i]), "gt {a:?} {b:?}");
            same(va / vb, std::array::from_fn(|i| a[i] / b[i]), "div");
            same(va.sign(), std::array::from_fn(|i| f32::from_bits(a[i].to_bits() & 0x8000_0000)), "sign");
            same(va.xor(vb), std::array::from_fn(|i| f32::from_bits(a[i].to_bits() ^ b[i].to_bits())), "xor");
            let pick = (round as u32).wrapping_mul(0x9e37_79b9) >> 24;
            same(
                L::select_bits(pick, va, vb),
                std::array::from_fn(|i| if pick & (1 << i) != 0 { a[i] } else { b[i] }),
                "select",
            );
        }
    }

    #[test]
    fn every_level_computes_the_scalar_lanes() {
        at_every_level!(check);
    }
}
