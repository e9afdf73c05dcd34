//! Cache prefetch hints for the traversal loops, which are bound by the latency of node loads
//! (Embree and tinybvh prefetch the children they push for the same reason).

/// Starts loading the cache line that holds `ptr` into L1. A hint only: it never faults, even on
/// an invalid or dangling address, and does nothing off x86-64.
#[inline(always)]
pub(crate) fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Prefetches a record of up to 256 bytes (an 8-wide node, a triangle pack) by its lines 0 and 2
/// only: the adjacent-line prefetcher brings in their pairs, and each prefetch instruction costs
/// issue slots that cache-resident scenes (Sponza) feel.
#[inline(always)]
pub(crate) fn prefetch_wide<T>(ptr: *const T) {
    prefetch(ptr);
    prefetch(ptr.wrapping_byte_add(128));
}
