//! Which SIMD instructions the kernels were compiled for, as [`simd_level`] reports it.
//!
//! The 8-wide node tests, the triangle-pack tests and the packets are written against the `wide`
//! crate, which picks its implementation with `cfg(target_feature)` when it is compiled. The
//! level is therefore fixed by the target features of the build (`-C target-cpu`, or
//! `-C target-feature`), not chosen at run time: a crate that depends on slabtree without those
//! flags gets the x86-64 baseline, SSE2, whatever CPU it runs on.

use std::fmt;

/// A level of SIMD instructions the kernels can be built for.
///
/// ```
/// let level = slabtree::simd_level();
/// println!("slabtree's kernels use {level}");
/// #[cfg(target_arch = "x86_64")]
/// assert!(level >= slabtree::SimdLevel::Sse2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SimdLevel {
    /// No SIMD instructions: `wide`'s portable arrays.
    Scalar,
    /// aarch64's Advanced SIMD, 4 lanes, with fused multiply-add.
    Neon,
    /// The x86-64 baseline (x86-64-v1): 4 lanes, eight lanes as two halves, no fused multiply-add.
    Sse2,
    /// x86-64-v3: AVX2 and FMA, 8 lanes and fused multiply-add.
    Avx2,
    /// x86-64-v4: AVX-512 (F, BW, CD, DQ, VL) as well, which the compiler may use for the 8-lane
    /// kernels (mask registers, three-operand forms) though they do not use 16 lanes.
    Avx512,
}

impl SimdLevel {
    /// The level's name, as [`simd_level`] prints it: `scalar`, `neon`, `sse2`, `avx2`, `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Scalar => "scalar",
            SimdLevel::Neon => "neon",
            SimdLevel::Sse2 => "sse2",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }
}

impl fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The SIMD level slabtree's kernels run at in this build, fixed when the crate was compiled
/// (see the module's notes): [`SimdLevel::Sse2`] for a build without `-C target-cpu` on x86-64,
/// [`SimdLevel::Avx2`] with `-C target-cpu=x86-64-v3` or a native build on an AVX2 machine.
///
/// Levels with a fused multiply-add ([`SimdLevel::Avx2`], [`SimdLevel::Avx512`],
/// [`SimdLevel::Neon`]) round the triangle tests' cross and dot products once where the others
/// round twice, so a hit's `t`, `u` and `v` can differ between them in the last bits, and a ray
/// through a shared edge can name the other triangle. Builds of one level agree bit for bit.
pub fn simd_level() -> SimdLevel {
    if cfg!(all(
        target_arch = "x86_64",
        target_feature = "avx512f",
        target_feature = "avx512vl",
        target_feature = "avx512bw",
        target_feature = "avx512dq",
        target_feature = "avx2",
        target_feature = "fma"
    )) {
        SimdLevel::Avx512
    } else if cfg!(all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "avx2",
        target_feature = "fma"
    )) {
        SimdLevel::Avx2
    } else if cfg!(all(any(target_arch = "x86", target_arch = "x86_64"), target_feature = "sse2")) {
        SimdLevel::Sse2
    } else if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
        SimdLevel::Neon
    } else {
        SimdLevel::Scalar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The level claims no instruction the CPU lacks (CPUID, through `is_x86_feature_detected!`,
    /// is the oracle) and no more than the build enables.
    #[test]
    fn level_matches_the_build_and_the_cpu() {
        let level = simd_level();
        assert_eq!(level.to_string(), level.name());
        #[cfg(target_arch = "x86_64")]
        {
            assert!(level >= SimdLevel::Sse2);
            assert_eq!(level >= SimdLevel::Avx2, cfg!(all(target_feature = "avx2", target_feature = "fma")), "{level}");
            if level >= SimdLevel::Avx2 {
                assert!(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"), "{level}");
            }
            if level == SimdLevel::Avx512 {
                for f in [
                    is_x86_feature_detected!("avx512f"),
                    is_x86_feature_detected!("avx512vl"),
                    is_x86_feature_detected!("avx512bw"),
                    is_x86_feature_detected!("avx512dq"),
                ] {
                    assert!(f, "{level}");
                }
            }
        }
        #[cfg(target_arch = "aarch64")]
        assert_eq!(level, SimdLevel::Neon);
    }
}
