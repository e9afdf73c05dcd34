//! Running a kernel at the SIMD level the CPU has: [`dispatch`] for one kernel, [`EntryPoint`]
//! for many in a row.
//!
//! A kernel ([`WithLanes`]) is written once, generic over `L: Lanes8`, and instantiated inside
//! one entry point per level that enables that level's instructions (`#[target_feature]`, in
//! `super::x86`): the compiler then emits AVX2 or AVX-512 code for the whole walk in a crate
//! built for the x86-64 baseline, and the CPU picks the entry point at run time. This is the
//! shape of Embree's `vfloat<N>` kernels compiled once per ISA, and of `pulp`'s `WithSimd`. The
//! choice is made once per query (a load and a predictable branch), never per node.

use super::lanes::WithLanes;
use super::level::early_loads_level;
use super::{SimdLevel, simd_level};

/// Runs `kernel` at the SIMD level [`simd_level`] reports (a walk with early child loads at
/// [`kernel_level`]'s): on x86-64, the baseline's lanes or an entry point compiled for AVX2 or
/// AVX-512; elsewhere `wide`'s lanes as compiled.
#[inline(always)]
pub(crate) fn dispatch<W: WithLanes>(kernel: W) -> W::Output {
    // SAFETY: neither level is ever above the CPU's.
    unsafe { dispatch_unchecked(kernel_level::<W>(), kernel) }
}

/// The level kernels of type `W` run at: [`simd_level`], or for walks with early child loads
/// ([`WithLanes::EARLY_LOADS`]) `early_loads_level`, which differs only where AVX-512 was chosen
/// without being asked for (`docs/performance.md`, "Which CPUs get AVX-512").
#[inline(always)]
fn kernel_level<W: WithLanes>() -> SimdLevel {
    if W::EARLY_LOADS { early_loads_level() } else { simd_level() }
}

/// The entry point of kernels of type `W` at the SIMD level [`simd_level`] reports, chosen once
/// for a caller that runs many such kernels in a row (a batch's run of rays, one kernel per ray):
/// each [`EntryPoint::run`] is then one call, with nothing chosen. Running the whole run as one
/// kernel, a loop inside the entry point, let the compiler keep loop-invariant values in vector
/// registers that the walk's own per-ray values then lost to the stack (`docs/performance.md`,
/// "How a batch runs").
pub(crate) struct EntryPoint<W: WithLanes>(unsafe fn(W) -> W::Output);

impl<W: WithLanes> EntryPoint<W> {
    /// The entry point of the level kernels of type `W` run at ([`dispatch`]).
    #[inline]
    pub(crate) fn chosen() -> EntryPoint<W> {
        // SAFETY: `kernel_level` is never above the CPU's level.
        unsafe { EntryPoint::at(kernel_level::<W>()) }
    }

    /// The entry point of `level`.
    ///
    /// # Safety
    /// The CPU has `level`'s instructions.
    #[inline]
    unsafe fn at(level: SimdLevel) -> EntryPoint<W> {
        #[cfg(target_arch = "x86_64")]
        {
            match level {
                SimdLevel::Avx512 => EntryPoint(super::x86::run_avx512::<W>),
                SimdLevel::Avx2 => EntryPoint(super::x86::run_avx2::<W>),
                _ => EntryPoint(run_baseline::<W>),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = level;
            EntryPoint(run_baseline::<W>)
        }
    }

    /// Runs `kernel` through the entry point.
    #[inline(always)]
    pub(crate) fn run(&self, kernel: W) -> W::Output {
        // SAFETY: the entry point is the one of a level `kernel_level` gave, never above the
        // CPU's (`EntryPoint::chosen` is the only constructor).
        unsafe { (self.0)(kernel) }
    }
}

/// `kernel` on the lanes the build targets when no entry point is chosen: the x86-64 baseline's
/// [`super::x86::Sse8`], elsewhere `wide`'s lanes as compiled (the `_` arm of `dispatch`).
#[inline(never)]
fn run_baseline<W: WithLanes>(kernel: W) -> W::Output {
    #[cfg(target_arch = "x86_64")]
    {
        kernel.run::<super::x86::Sse8>()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        kernel.run::<wide::f32x8>()
    }
}

/// Runs `kernel` at `level`, or at the CPU's best level if that is lower (tests run every level
/// the CPU has this way).
#[cfg(test)]
pub(crate) fn dispatch_at<W: WithLanes>(level: SimdLevel, kernel: W) -> W::Output {
    // SAFETY: the level is lowered to the CPU's.
    unsafe { dispatch_unchecked(level.min(super::level::cpu_level()), kernel) }
}

/// Runs `kernel` at `level`.
///
/// # Safety
/// The CPU has `level`'s instructions.
#[inline(always)]
unsafe fn dispatch_unchecked<W: WithLanes>(level: SimdLevel, kernel: W) -> W::Output {
    #[cfg(target_arch = "x86_64")]
    {
        match level {
            // SAFETY: the caller's promise.
            SimdLevel::Avx512 => unsafe { super::x86::run_avx512(kernel) },
            // SAFETY: as above.
            SimdLevel::Avx2 => unsafe { super::x86::run_avx2(kernel) },
            _ => kernel.run::<super::x86::Sse8>(),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        kernel.run::<wide::f32x8>()
    }
}

/// Runs the generic test function `$check::<L>()` at every level this CPU has (and on `wide`'s
/// lanes as compiled), each inside its level's entry point.
#[cfg(test)]
macro_rules! at_every_level {
    ($check:ident) => {{
        struct Kernel;
        impl $crate::wide::WithLanes for Kernel {
            type Output = ();
            #[inline(always)]
            fn run<L: $crate::wide::Lanes8>(self) {
                $check::<L>()
            }
        }
        $check::<wide::f32x8>();
        for level in $crate::wide::level::levels_on_this_cpu() {
            $crate::wide::dispatch::dispatch_at(level, Kernel);
        }
    }};
}
#[cfg(test)]
pub(crate) use at_every_level;

#[cfg(test)]
mod tests {
    use super::{EntryPoint, WithLanes};
    use crate::wide::level::early_loads_level;
    use crate::wide::{Lanes8, simd_level};

    /// A kernel that does nothing, a walk with early loads or not.
    struct Kernel<const EARLY: bool>;

    impl<const EARLY: bool> WithLanes for Kernel<EARLY> {
        type Output = ();
        const EARLY_LOADS: bool = EARLY;
        fn run<L: Lanes8>(self) {}
    }

    /// A walk with early loads gets the entry point of the early-load walks' level, any other
    /// kernel that of `simd_level` (the levels themselves are checked in `super::super::level`).
    #[test]
    fn walks_with_early_loads_run_at_their_own_level() {
        // SAFETY: neither level is above the CPU's; the entry points are compared, not run.
        let (early, other) = unsafe {
            (EntryPoint::<Kernel<true>>::at(early_loads_level()), EntryPoint::<Kernel<false>>::at(simd_level()))
        };
        assert!(std::ptr::fn_addr_eq(EntryPoint::<Kernel<true>>::chosen().0, early.0));
        assert!(std::ptr::fn_addr_eq(EntryPoint::<Kernel<false>>::chosen().0, other.0));
    }
}
