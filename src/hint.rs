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

/// Prefetches every cache line of a record of `len` bytes, at most 256, that starts on a 32-byte
/// boundary (an 8-wide node of 224 bytes spans 4 lines, a triangle pack of 160 bytes 3): its lines
/// at offsets 0, 64 and 128, and 192 when the record reaches past it. Prefetching only lines 0 and
/// 2, counting on an adjacent-line prefetcher for the others, left rays waiting on the other lines
/// of the nodes and packs they had pushed, which prefetching all of them saves
/// (`docs/performance.md`).
#[inline(always)]
pub(crate) fn prefetch_record<T>(ptr: *const T, len: usize) {
    debug_assert!(len <= 256);
    prefetch(ptr);
    prefetch(ptr.wrapping_byte_add(64));
    prefetch(ptr.wrapping_byte_add(128));
    // The fourth line, or the third once more for a shorter record: a select, not a branch.
    prefetch(ptr.wrapping_byte_add(if len > 192 { 192 } else { 128 }));
}
