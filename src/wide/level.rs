//! Which SIMD instructions the kernels run: [`simd_level`], chosen at run time from the CPU for
//! the kernels dispatched through `super::lanes`, and [`compiled_simd_level`], fixed by the
//! build's target features for the kernels still written against `wide` alone (which picks its
//! implementation with `cfg(target_feature)` when it is compiled).

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

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

/// The SIMD level slabtree's dispatched kernels run at in this process, chosen once from CPUID
/// when first asked, whatever `-C target-cpu` the crate was built with: on x86-64
/// [`SimdLevel::Avx512`] on AMD's CPUs that have it, else [`SimdLevel::Avx2`] when the CPU has
/// AVX2 and FMA, else [`SimdLevel::Sse2`]; on aarch64 [`SimdLevel::Neon`].
///
/// [`SimdLevel::Avx512`] is chosen on its own only on AMD's CPUs (Zen 4 and later). Its kernels
/// are the AVX2 kernels with AVX-512's encodings and 32 vector registers allowed; there they ran
/// coherent rays a few per cent faster, and the walks with early child loads (incoherent rays,
/// BVHs larger than the last-level cache) up to 4% slower, so on those CPUs the walks with early
/// loads keep the AVX2 kernels unless a level is asked for. On the Intel CPUs measured AVX-512
/// was no faster, so they get AVX2 (`docs/performance.md`, "Which CPUs get AVX-512").
/// `SLABTREE_SIMD=avx512` chooses it, for every kernel, on any CPU that has it.
///
/// The environment variable `SLABTREE_SIMD` (`sse2`, `avx2`, `avx512`, `neon`, `scalar`) chooses
/// the level instead, for tests and comparisons; it never goes above what the CPU has (a higher
/// level gives the CPU's best, and on x86-64 `scalar` gives `sse2`), and a value that names no
/// level is ignored (see [`SimdLevel::from_name`]). [`set_simd_level`] changes it later.
///
/// Which kernels follow it: the mesh BVH's ray walks (closest and any hit, either triangle test,
/// alone, in batches and in streams), its swept boxes and shape casts, the dynamic tree's
/// 8-wide copy, and the binned builders' split choice and binning (the mesh BVH's builds, the
/// dynamic tree's bulk builds and treelet rebuilds). The mesh's closest-point and overlap queries, the scene's packets over its
/// instances and the dynamic tree's binary node tests still run at the level the build's target
/// features give ([`compiled_simd_level`]).
/// Every level gives the same answers (see `docs/robustness.md`).
#[inline]
pub fn simd_level() -> SimdLevel {
    #[cfg(test)]
    if let Some(level) = TEST_LEVEL.with(std::cell::Cell::get) {
        return level.min(cpu_level());
    }
    match stored(&LEVEL) {
        Some(level) => level,
        None => choose_level(),
    }
}

/// Sets the SIMD level of slabtree's dispatched kernels for the rest of the process (every
/// thread; every kernel, the walks with early child loads included, see [`simd_level`]), as
/// `SLABTREE_SIMD` would at start-up, and returns the level it set: `level` lowered to
/// the CPU's best, and on x86-64 raised to [`SimdLevel::Sse2`], the lowest level its kernels
/// are built for (elsewhere the CPU's one level). Queries already running finish at the level
/// they began with.
///
/// For comparing levels in one process (every level gives the same answers, bit for bit) and for
/// trying a lower level's speed; a program that never calls it gets [`simd_level`]'s choice.
///
/// ```
/// use slabtree::{SimdLevel, set_simd_level, simd_level};
/// let before = simd_level();
/// let set = set_simd_level(SimdLevel::Sse2);
/// assert_eq!(simd_level(), set);
/// #[cfg(target_arch = "x86_64")]
/// assert_eq!(set, SimdLevel::Sse2);
/// // Asking for more than the CPU has gives the CPU's best.
/// assert!(set_simd_level(SimdLevel::Avx512) >= before);
/// set_simd_level(before);
/// ```
pub fn set_simd_level(level: SimdLevel) -> SimdLevel {
    let level = runnable(level, cpu_level());
    EARLY_LOADS_LEVEL.store(level as u8, Ordering::Relaxed);
    LEVEL.store(level as u8, Ordering::Relaxed);
    level
}

/// `asked` as the kernels can run it on a CPU whose best is `cpu`: at most `cpu`, and on x86-64
/// at least SSE2 (below it the baseline's kernels run anyway); elsewhere the one level there is.
fn runnable(asked: SimdLevel, cpu: SimdLevel) -> SimdLevel {
    if cfg!(target_arch = "x86_64") { asked.clamp(SimdLevel::Sse2, cpu) } else { cpu }
}

/// The level of the walks with early child loads (the mesh BVH's walks for incoherent rays and
/// BVHs larger than the last-level cache): [`simd_level`], but AVX2 where AVX-512 was chosen
/// without being asked for (see [`simd_level`]).
#[inline]
pub(crate) fn early_loads_level() -> SimdLevel {
    #[cfg(test)]
    if let Some(level) = TEST_LEVEL.with(std::cell::Cell::get) {
        return level.min(cpu_level());
    }
    match stored(&EARLY_LOADS_LEVEL) {
        Some(level) => level,
        None => {
            choose_level();
            early_loads_level()
        }
    }
}

/// The level `cell` holds, or `None` before the first choice.
#[inline(always)]
fn stored(cell: &AtomicU8) -> Option<SimdLevel> {
    match cell.load(Ordering::Relaxed) {
        0 => Some(SimdLevel::Scalar),
        1 => Some(SimdLevel::Neon),
        2 => Some(SimdLevel::Sse2),
        3 => Some(SimdLevel::Avx2),
        4 => Some(SimdLevel::Avx512),
        _ => None,
    }
}

/// The first [`simd_level`]: chooses, and keeps the choice in [`LEVEL`] (and the early-load
/// walks' in [`EARLY_LOADS_LEVEL`]).
#[cold]
#[inline(never)]
fn choose_level() -> SimdLevel {
    let (level, asked) = chosen_level();
    let early = if asked { level } else { level.min(SimdLevel::Avx2) };
    EARLY_LOADS_LEVEL.store(early as u8, Ordering::Relaxed);
    LEVEL.store(level as u8, Ordering::Relaxed);
    level
}

/// The level the build's target features give (`-C target-cpu`, `-C target-feature`): what the
/// kernels that are not dispatched at run time use (see [`simd_level`]).
pub fn compiled_simd_level() -> SimdLevel {
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

impl SimdLevel {
    /// The level named `name` (as [`SimdLevel::name`] spells it, any case), or `None`.
    ///
    /// ```
    /// use slabtree::SimdLevel;
    /// assert_eq!(SimdLevel::from_name("AVX2"), Some(SimdLevel::Avx2));
    /// assert_eq!(SimdLevel::from_name("sse4"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<SimdLevel> {
        LEVELS.into_iter().find(|l| l.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// Every level, in the order of the enum (their discriminants, which `stored` matches).
const LEVELS: [SimdLevel; 5] =
    [SimdLevel::Scalar, SimdLevel::Neon, SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512];

/// [`LEVEL`] before the first [`simd_level`].
const UNSET: u8 = u8::MAX;

/// The level [`simd_level`] chose, as its discriminant, or [`UNSET`]. Two threads asking first
/// at once both choose, and choose the same.
static LEVEL: AtomicU8 = AtomicU8::new(UNSET);

/// The level [`early_loads_level`] gives, as its discriminant, or [`UNSET`]; set with [`LEVEL`].
static EARLY_LOADS_LEVEL: AtomicU8 = AtomicU8::new(UNSET);

/// The level `SLABTREE_SIMD` asks for, at most the CPU's best, or else [`default_level`]; and
/// whether it was asked for.
fn chosen_level() -> (SimdLevel, bool) {
    let cpu = cpu_level();
    match std::env::var("SLABTREE_SIMD").ok().as_deref().and_then(SimdLevel::from_name) {
        Some(asked) => (runnable(asked, cpu), true),
        // CPUID's vendor is read only where there is an AVX-512 level to choose.
        None => (default_level(cpu, cpu >= SimdLevel::Avx512 && prefers_avx512()), false),
    }
}

/// The level chosen on a CPU whose best is `cpu` when `SLABTREE_SIMD` asks for none: the best,
/// but AVX-512 only where `prefers_avx512` (AMD's CPUs; see [`simd_level`]).
fn default_level(cpu: SimdLevel, prefers_avx512: bool) -> SimdLevel {
    if prefers_avx512 { cpu } else { cpu.min(SimdLevel::Avx2) }
}

/// Whether this CPU runs the AVX-512 kernels of coherent rays faster than the AVX2 ones, as
/// measured: AMD's (the vendor string of CPUID leaf 0), whose AVX-512 CPUs (Zen 4, Zen 5) run
/// the 8-lane kernels at full speed with twice the registers; not Intel's, where the AVX-512
/// level ran the ray sets no faster (`docs/performance.md`, "Which CPUs get AVX-512").
fn prefers_avx512() -> bool {
    // Miri runs no inline assembly, which `__cpuid` is.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: CPUID leaf 0 exists on every x86-64 CPU. (`__cpuid` is safe to call from
        // Rust 1.94 on; the minimum supported version, 1.89, still asks for the block.)
        #[allow(unused_unsafe)]
        let id = unsafe { std::arch::x86_64::__cpuid(0) };
        // "AuthenticAMD", in EBX, EDX, ECX.
        (id.ebx, id.edx, id.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163)
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    {
        false
    }
}

/// The best level this CPU runs (CPUID on x86-64). Cached by `std`'s feature detection.
#[inline]
pub(crate) fn cpu_level() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        let v3 = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("bmi1")
            && is_x86_feature_detected!("bmi2")
            && is_x86_feature_detected!("lzcnt")
            && is_x86_feature_detected!("popcnt");
        let v4 = v3
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512cd");
        if v4 {
            SimdLevel::Avx512
        } else if v3 {
            SimdLevel::Avx2
        } else {
            SimdLevel::Sse2
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        compiled_simd_level()
    }
}

#[cfg(test)]
thread_local! {
    /// The level [`at_level`] holds on this thread, for the library's own tests.
    static TEST_LEVEL: std::cell::Cell<Option<SimdLevel>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with [`simd_level`] at `level` (at most the CPU's) on this thread: the library's
/// tests run any query at every level this way.
#[cfg(test)]
pub(crate) fn at_level<R>(level: SimdLevel, f: impl FnOnce() -> R) -> R {
    let old = TEST_LEVEL.with(|l| l.replace(Some(level)));
    let out = f();
    TEST_LEVEL.with(|l| l.set(old));
    out
}

/// The levels this CPU runs, lowest first: what the tests run every kernel at.
#[cfg(test)]
pub(crate) fn levels_on_this_cpu() -> Vec<SimdLevel> {
    let cpu = cpu_level();
    if cfg!(target_arch = "x86_64") {
        [SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512].into_iter().filter(|&l| l <= cpu).collect()
    } else {
        vec![cpu]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run-time level claims no instruction the CPU lacks (CPUID, through
    /// `is_x86_feature_detected!`, is the oracle) and is the CPU's best, AVX-512 only on AMD's
    /// CPUs (the vendor in `/proc/cpuinfo`, where there is one, is the oracle) and then not for
    /// the walks with early loads, unless `SLABTREE_SIMD` asks for a level; and the compiled
    /// level is no more than the build enables.
    #[test]
    fn levels_match_the_cpu_and_the_build() {
        let level = simd_level();
        assert_eq!(level.to_string(), level.name());
        assert_eq!(SimdLevel::from_name(level.name()), Some(level));
        assert!(level <= cpu_level());
        let asked = std::env::var("SLABTREE_SIMD").ok().as_deref().and_then(SimdLevel::from_name);
        let amd = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .map(|info| info.lines().any(|l| l.starts_with("vendor_id") && l.trim_end().ends_with("AuthenticAMD")));
        if let Some(amd) = amd {
            assert_eq!(prefers_avx512(), amd && cfg!(target_arch = "x86_64") && !cfg!(miri));
        }
        let preferred = default_level(cpu_level(), prefers_avx512());
        assert_eq!(level, asked.map_or(preferred, |a| runnable(a, cpu_level())));
        assert!(asked.is_some() || level != SimdLevel::Avx512 || amd != Some(false));
        let early = early_loads_level();
        assert_eq!(early, if asked.is_some() { level } else { level.min(SimdLevel::Avx2) });
        assert_eq!(default_level(SimdLevel::Avx512, false), SimdLevel::Avx2);
        assert_eq!(default_level(SimdLevel::Avx512, true), SimdLevel::Avx512);
        assert_eq!(default_level(SimdLevel::Avx2, true), SimdLevel::Avx2);
        assert_eq!(default_level(SimdLevel::Sse2, false), SimdLevel::Sse2);
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(runnable(SimdLevel::Scalar, SimdLevel::Avx2), SimdLevel::Sse2);
            assert_eq!(runnable(SimdLevel::Avx512, SimdLevel::Avx2), SimdLevel::Avx2);
            assert_eq!(runnable(SimdLevel::Avx2, SimdLevel::Avx512), SimdLevel::Avx2);
        }
        #[cfg(target_arch = "x86_64")]
        {
            let compiled = compiled_simd_level();
            assert!(level >= SimdLevel::Sse2 && compiled >= SimdLevel::Sse2);
            assert_eq!(
                compiled >= SimdLevel::Avx2,
                cfg!(all(target_feature = "avx2", target_feature = "fma")),
                "{compiled}"
            );
            let v3 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            let v4 = v3 && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl");
            assert!(cpu_level() < SimdLevel::Avx2 || v3);
            assert!(cpu_level() < SimdLevel::Avx512 || v4);
            assert!(cpu_level() >= SimdLevel::Avx2 || !(v3 && is_x86_feature_detected!("bmi2")));
        }
        #[cfg(target_arch = "aarch64")]
        assert_eq!(level, SimdLevel::Neon);
    }
}
