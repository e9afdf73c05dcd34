//! The x86-64 levels' lanes and entry points (see `super::lanes`).
//!
//! * [`Sse8`]: two SSE registers, the x86-64 baseline every x86-64 CPU has. It has no fused
//!   multiply-add, so rays take the exact node test at this level.
//! * [`Avx8`]: one 256-bit register. Its operations are AVX, AVX2 and FMA instructions, valid
//!   only inside [`run_avx2`] and [`run_avx512`], which enable them; `super::lanes`' dispatch
//!   calls those only on a CPU that has them.
//!
//! The AVX-512 level runs the same `Avx8` kernels with AVX-512's instructions enabled as well,
//! which the compiler uses for the comparisons (mask registers) and some selects.

use std::arch::x86_64::*;
use std::ops::{Add, Div, Mul, Sub};

use super::Node8;
use super::lanes::{Lanes8, WithLanes};
use super::node::Entry;
use crate::math::KeepLanes;

/// Runs `kernel` on [`Avx8`] lanes with AVX2, FMA and the bit-manipulation instructions of
/// x86-64-v3 enabled.
///
/// # Safety
/// The CPU has them (`super::level::cpu_level() >= SimdLevel::Avx2`).
#[target_feature(enable = "avx,avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
pub(crate) unsafe fn run_avx2<W: WithLanes>(kernel: W) -> W::Output {
    kernel.run::<Avx8>()
}

/// Runs `kernel` on [`Avx8`] lanes with x86-64-v4's AVX-512 (F, VL, BW, DQ, CD) enabled as well.
///
/// # Safety
/// The CPU has them (`super::level::cpu_level() >= SimdLevel::Avx512`).
#[target_feature(enable = "avx,avx2,fma,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512vl,avx512bw,avx512dq,avx512cd")]
pub(crate) unsafe fn run_avx512<W: WithLanes>(kernel: W) -> W::Output {
    kernel.run::<Avx8>()
}

/// Eight lanes as two SSE registers: the x86-64 baseline. (`repr(C)`: the halves in lane order,
/// which `to_array` relies on.)
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Sse8([__m128; 2]);

impl Sse8 {
    /// `f` on both halves.
    #[inline(always)]
    fn map2(self, other: Sse8, f: impl Fn(__m128, __m128) -> __m128) -> Sse8 {
        Sse8([f(self.0[0], other.0[0]), f(self.0[1], other.0[1])])
    }

    /// The sign bits of `f` on both halves, as eight bits.
    #[inline(always)]
    fn bits(self, other: Sse8, f: impl Fn(__m128, __m128) -> __m128) -> u32 {
        // SAFETY: SSE and SSE2 are in the x86-64 baseline.
        unsafe {
            let lo = _mm_movemask_ps(f(self.0[0], other.0[0])) as u32;
            let hi = _mm_movemask_ps(f(self.0[1], other.0[1])) as u32;
            lo | hi << 4
        }
    }

    /// `f` on both halves' bits as `i32` lanes.
    #[inline(always)]
    fn map2_int(self, other: Sse8, f: impl Fn(__m128i, __m128i) -> __m128i) -> Sse8 {
        // SAFETY: SSE2 is in the x86-64 baseline.
        self.map2(other, |a, b| unsafe { _mm_castsi128_ps(f(_mm_castps_si128(a), _mm_castps_si128(b))) })
    }
}

/// `a > b ? a : b` on `i32` lanes, with SSE2 alone (`pmaxsd` is SSE4.1).
#[inline(always)]
fn max_epi32_sse2(a: __m128i, b: __m128i) -> __m128i {
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        let gt = _mm_cmpgt_epi32(a, b);
        _mm_or_si128(_mm_and_si128(gt, a), _mm_andnot_si128(gt, b))
    }
}

/// `a < b ? a : b` on `i32` lanes, with SSE2 alone.
#[inline(always)]
fn min_epi32_sse2(a: __m128i, b: __m128i) -> __m128i {
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        let lt = _mm_cmplt_epi32(a, b);
        _mm_or_si128(_mm_and_si128(lt, a), _mm_andnot_si128(lt, b))
    }
}

// SAFETY (every `unsafe` block of `Sse8`): SSE and SSE2 are in the x86-64 baseline.
impl Add for Sse8 {
    type Output = Sse8;
    #[inline(always)]
    fn add(self, o: Sse8) -> Sse8 {
        self.map2(o, |a, b| unsafe { _mm_add_ps(a, b) })
    }
}

impl Sub for Sse8 {
    type Output = Sse8;
    #[inline(always)]
    fn sub(self, o: Sse8) -> Sse8 {
        self.map2(o, |a, b| unsafe { _mm_sub_ps(a, b) })
    }
}

impl Mul for Sse8 {
    type Output = Sse8;
    #[inline(always)]
    fn mul(self, o: Sse8) -> Sse8 {
        self.map2(o, |a, b| unsafe { _mm_mul_ps(a, b) })
    }
}

impl Div for Sse8 {
    type Output = Sse8;
    #[inline(always)]
    fn div(self, o: Sse8) -> Sse8 {
        self.map2(o, |a, b| unsafe { _mm_div_ps(a, b) })
    }
}

impl KeepLanes for Sse8 {
    /// `maxps`'s operand order is the rule: `candidate > acc ? candidate : acc`.
    #[inline(always)]
    fn max_keep(candidate: Sse8, acc: Sse8) -> Sse8 {
        candidate.map2(acc, |c, a| unsafe { _mm_max_ps(c, a) })
    }

    #[inline(always)]
    fn min_keep(candidate: Sse8, acc: Sse8) -> Sse8 {
        candidate.map2(acc, |c, a| unsafe { _mm_min_ps(c, a) })
    }
}

impl Lanes8 for Sse8 {
    const FMA: bool = false;
    const NETWORK: bool = false;

    #[inline(always)]
    fn splat(x: f32) -> Sse8 {
        let h = unsafe { _mm_set1_ps(x) };
        Sse8([h, h])
    }

    #[inline(always)]
    fn load(row: &[f32; 8]) -> Sse8 {
        // SAFETY: `row` is 8 readable floats.
        unsafe { Sse8([_mm_loadu_ps(row.as_ptr()), _mm_loadu_ps(row.as_ptr().add(4))]) }
    }

    #[inline(always)]
    fn to_array(self) -> [f32; 8] {
        // SAFETY: both are 32 bytes of plain lanes, in lane order (`repr(C)`).
        unsafe { std::mem::transmute::<Sse8, [f32; 8]>(self) }
    }

    /// Two roundings: a multiply, then a subtraction.
    #[inline(always)]
    fn mul_sub(self, m: Sse8, s: Sse8) -> Sse8 {
        self * m - s
    }

    #[inline(always)]
    fn int_max(self, other: Sse8) -> Sse8 {
        self.map2_int(other, max_epi32_sse2)
    }

    #[inline(always)]
    fn int_min(self, other: Sse8) -> Sse8 {
        self.map2_int(other, min_epi32_sse2)
    }

    #[inline(always)]
    fn le_bits(self, other: Sse8) -> u32 {
        self.bits(other, |a, b| unsafe { _mm_cmple_ps(a, b) })
    }

    #[inline(always)]
    fn lt_bits(self, other: Sse8) -> u32 {
        self.bits(other, |a, b| unsafe { _mm_cmplt_ps(a, b) })
    }

    #[inline(always)]
    fn sign(self) -> Sse8 {
        self.map2(Sse8::splat(-0.0), |a, b| unsafe { _mm_and_ps(a, b) })
    }

    #[inline(always)]
    fn xor(self, other: Sse8) -> Sse8 {
        self.map2(other, |a, b| unsafe { _mm_xor_ps(a, b) })
    }

    #[inline(always)]
    fn select_bits(bits: u32, a: Sse8, b: Sse8) -> Sse8 {
        // SAFETY: SSE2 is in the x86-64 baseline.
        unsafe {
            let lane_bit = _mm_setr_epi32(1, 2, 4, 8);
            let half = |bits: u32, a: __m128, b: __m128| {
                let m =
                    _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32(bits as i32), lane_bit), lane_bit));
                _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b))
            };
            Sse8([half(bits, a.0[0], b.0[0]), half(bits >> 4, a.0[1], b.0[1])])
        }
    }
}

/// Eight lanes in one AVX register. Its operations are only valid inside [`run_avx2`] and
/// [`run_avx512`] (they inline into them and take their instructions).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Avx8(__m256);

// SAFETY (every `unsafe` block of `Avx8`): its values exist only inside `run_avx2` and
// `run_avx512`, which enable AVX, AVX2 and FMA and are called only on CPUs that have them.
impl Add for Avx8 {
    type Output = Avx8;
    #[inline(always)]
    fn add(self, o: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_add_ps(self.0, o.0) })
    }
}

impl Sub for Avx8 {
    type Output = Avx8;
    #[inline(always)]
    fn sub(self, o: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_sub_ps(self.0, o.0) })
    }
}

impl Mul for Avx8 {
    type Output = Avx8;
    #[inline(always)]
    fn mul(self, o: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_mul_ps(self.0, o.0) })
    }
}

impl Div for Avx8 {
    type Output = Avx8;
    #[inline(always)]
    fn div(self, o: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_div_ps(self.0, o.0) })
    }
}

impl KeepLanes for Avx8 {
    /// `vmaxps`'s operand order is the rule: `candidate > acc ? candidate : acc`.
    #[inline(always)]
    fn max_keep(candidate: Avx8, acc: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_max_ps(candidate.0, acc.0) })
    }

    #[inline(always)]
    fn min_keep(candidate: Avx8, acc: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_min_ps(candidate.0, acc.0) })
    }
}

impl Lanes8 for Avx8 {
    const FMA: bool = true;
    const NETWORK: bool = true;

    #[inline(always)]
    fn splat(x: f32) -> Avx8 {
        Avx8(unsafe { _mm256_set1_ps(x) })
    }

    #[inline(always)]
    fn load(row: &[f32; 8]) -> Avx8 {
        // SAFETY: `row` is 8 readable floats.
        Avx8(unsafe { _mm256_loadu_ps(row.as_ptr()) })
    }

    #[inline(always)]
    fn to_array(self) -> [f32; 8] {
        // SAFETY: 32 bytes of plain lanes, in lane order.
        unsafe { std::mem::transmute::<__m256, [f32; 8]>(self.0) }
    }

    /// One rounding: `vfmsub`.
    #[inline(always)]
    fn mul_sub(self, m: Avx8, s: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_fmsub_ps(self.0, m.0, s.0) })
    }

    #[inline(always)]
    fn int_max(self, other: Avx8) -> Avx8 {
        Avx8(unsafe {
            _mm256_castsi256_ps(_mm256_max_epi32(_mm256_castps_si256(self.0), _mm256_castps_si256(other.0)))
        })
    }

    #[inline(always)]
    fn int_min(self, other: Avx8) -> Avx8 {
        Avx8(unsafe {
            _mm256_castsi256_ps(_mm256_min_epi32(_mm256_castps_si256(self.0), _mm256_castps_si256(other.0)))
        })
    }

    #[inline(always)]
    fn le_bits(self, other: Avx8) -> u32 {
        unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(self.0, other.0)) as u32 }
    }

    #[inline(always)]
    fn lt_bits(self, other: Avx8) -> u32 {
        unsafe { _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(self.0, other.0)) as u32 }
    }

    #[inline(always)]
    fn sign(self) -> Avx8 {
        Avx8(unsafe { _mm256_and_ps(self.0, _mm256_set1_ps(-0.0)) })
    }

    #[inline(always)]
    fn xor(self, other: Avx8) -> Avx8 {
        Avx8(unsafe { _mm256_xor_ps(self.0, other.0) })
    }

    #[inline(always)]
    fn select_bits(bits: u32, a: Avx8, b: Avx8) -> Avx8 {
        unsafe {
            let lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            let m = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(bits as i32), lane_bit), lane_bit);
            Avx8(_mm256_blendv_ps(b.0, a.0, _mm256_castsi256_ps(m)))
        }
    }

    #[inline(always)]
    unsafe fn nearest_and_rest(node: &Node8, near: Avx8, hit: u32, out: *mut Entry) -> usize {
        // SAFETY: the caller's promise.
        unsafe { super::order::nearest_and_rest(node, near.0, hit, out) }
    }
}
