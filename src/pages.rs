//! Large read-mostly arrays on 2 MB pages.
//!
//! A ray through a BVH of tens of megabytes touches a handful of nodes scattered over the whole
//! array, and with 4 KB pages nearly every one of them also misses the TLB (Zen 3's L2 TLB maps
//! 8 MB of 4 KB pages). Embree asks Linux for transparent huge pages on its BVH memory
//! (`madvise(MADV_HUGEPAGE)` in `common/sys/alloc.cpp`), which matters where THP is set to
//! `madvise`, the default of many distributions. [`PagedSlice`] does the same for the mesh BVH's
//! nodes and triangle packs, which pays most for BVHs larger than the TLB maps, and something
//! even for smaller ones (`docs/performance.md`).
//!
//! The advice is given before the memory is first written, so the kernel can back it with huge
//! pages as it faults in. Elsewhere than Linux, or for arrays under [`HUGE_MIN`], this is a plain
//! boxed slice.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The size of a huge page on x86-64 and most aarch64 Linux systems. Under Miri, which
/// interprets every byte's write, 16 KB: the same code paths over arrays it can test in seconds.
const HUGE_PAGE: usize = if cfg!(miri) { 16 << 10 } else { 2 << 20 };

/// Arrays of at least this many bytes start on a huge page boundary and have their whole 2 MB
/// pages advised. Their size is rounded up to whole huge pages only where that wastes at most an
/// eighth; otherwise the tail past the last whole page stays on 4 KB pages. (Rounding every
/// array up, as before, wasted up to a third and kept arrays under 4 MB, the bunny's BVH among
/// them, off huge pages.)
const HUGE_MIN: usize = HUGE_PAGE;

/// A fixed-length array of `T` in one allocation, aligned to and advised for 2 MB pages when it
/// is large. Dereferences to a slice.
pub(crate) struct PagedSlice<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: a `PagedSlice` owns its elements like a `Box<[T]>`.
unsafe impl<T: Copy + Send> Send for PagedSlice<T> {}
// SAFETY: shared access only reads, as for `Box<[T]>`.
unsafe impl<T: Copy + Sync> Sync for PagedSlice<T> {}

impl<T: Copy> PagedSlice<T> {
    /// The layout of `len` elements: whole huge pages when large.
    fn layout(len: usize) -> Layout {
        let plain = Layout::array::<T>(len).expect("array size overflows isize");
        if plain.size() >= HUGE_MIN && cfg!(target_os = "linux") {
            // See `HUGE_MIN`.
            let up = plain.size().next_multiple_of(HUGE_PAGE);
            let size = if up - plain.size() <= plain.size() / 8 { up } else { plain.size() };
            Layout::from_size_align(size, HUGE_PAGE.max(plain.align())).expect("array size overflows isize")
        } else {
            plain
        }
    }

    /// A copy of `src`.
    pub(crate) fn from_slice(src: &[T]) -> PagedSlice<T> {
        let layout = Self::layout(src.len());
        if layout.size() == 0 {
            return PagedSlice { ptr: NonNull::dangling(), len: src.len() };
        }
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else { handle_alloc_error(layout) };
        if layout.align() >= HUGE_PAGE {
            advise_huge_pages(raw, layout.size());
        }
        // SAFETY: `ptr` has room for `src.len()` elements and does not overlap `src`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), ptr.as_ptr(), src.len()) };
        PagedSlice { ptr, len: src.len() }
    }
}

impl<T: Copy> PagedSlice<T> {
    /// `len` elements of all-zero bytes, advised for huge pages before they are first written.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T` (plain integer and float data).
    pub(crate) unsafe fn zeroed(len: usize) -> PagedSlice<T> {
        // SAFETY: zero bytes are a valid `T` by this function's contract.
        unsafe { Self::written(len, None) }
    }

    /// The elements whose bytes, in memory order, are `bytes`, advised for huge pages before
    /// they are first written. Panics unless `bytes` holds a whole number of elements.
    ///
    /// # Safety
    /// Any bytes must be a valid `T` (plain integer and float data).
    pub(crate) unsafe fn from_bytes(bytes: &[u8]) -> PagedSlice<T> {
        assert_eq!(bytes.len() % size_of::<T>(), 0, "a whole number of elements");
        // SAFETY: any bytes are a valid `T` by this function's contract.
        unsafe { Self::written(bytes.len() / size_of::<T>(), Some(bytes)) }
    }

    /// `len` elements of the bytes of `src` (zeros without it).
    ///
    /// # Safety
    /// Those bytes must be a valid `T`; `src`, when given, holds `len` elements' bytes.
    unsafe fn written(len: usize, src: Option<&[u8]>) -> PagedSlice<T> {
        let layout = Self::layout(len);
        if layout.size() == 0 {
            return PagedSlice { ptr: NonNull::dangling(), len };
        }
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else { handle_alloc_error(layout) };
        if layout.align() >= HUGE_PAGE {
            advise_huge_pages(raw, layout.size());
        }
        // SAFETY: `raw` has room for `len` elements and nothing else holds it yet; `src` holds
        // as many bytes, and the bytes written are a valid `T` by this function's contract.
        unsafe { write_in_pieces(raw, len * size_of::<T>(), src) };
        PagedSlice { ptr, len }
    }
}

impl<T: Copy> Deref for PagedSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised elements (or is dangling with a zero size).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for PagedSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Clone for PagedSlice<T> {
    fn clone(&self) -> Self {
        PagedSlice::from_slice(self)
    }
}

impl<T: Copy> Drop for PagedSlice<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.len);
        if layout.size() != 0 {
            // SAFETY: allocated in `from_slice` with this same layout.
            unsafe { dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

/// Writes `src` (or zeros) over `[raw, raw + bytes)`, on rayon's threads a huge page each when
/// it spans several: the first write to a page also takes its fault (and the kernel's zeroing of
/// a huge page), which was a tenth of a two-thread Sponza build when serial.
///
/// # Safety
/// `raw` is valid for writes of `bytes` bytes, and nothing else accesses them meanwhile; `src`,
/// when given, holds `bytes` bytes.
unsafe fn write_in_pieces(raw: *mut u8, bytes: usize, src: Option<&[u8]>) {
    debug_assert!(src.is_none_or(|s| s.len() == bytes));
    let base = SharedPtr(raw);
    let piece = |start: usize, n: usize| match src {
        // SAFETY: `[start, start + n)` lies in the range of the contract, in `src` as in `raw`,
        // which do not overlap (`raw` is fresh), and each piece is written by one task only.
        Some(s) => unsafe { std::ptr::copy_nonoverlapping(s.as_ptr().add(start), base.get().add(start), n) },
        // SAFETY: as above.
        None => unsafe { std::ptr::write_bytes(base.get().add(start), 0, n) },
    };
    if bytes <= HUGE_PAGE {
        // One piece: no task to hand to another thread.
        piece(0, bytes);
        return;
    }
    crate::par::map_range(bytes.div_ceil(HUGE_PAGE) as u32, 1, |i| {
        let start = i as usize * HUGE_PAGE;
        piece(start, HUGE_PAGE.min(bytes - start));
    });
}

/// A pointer that tasks may share because each writes its own part of the memory.
#[derive(Clone, Copy)]
struct SharedPtr(*mut u8);

impl SharedPtr {
    fn get(self) -> *mut u8 {
        self.0
    }
}

// SAFETY: used only by `write_in_pieces`, whose tasks write disjoint ranges.
unsafe impl Send for SharedPtr {}
// SAFETY: as above.
unsafe impl Sync for SharedPtr {}

/// Asks the kernel to back `[ptr, ptr + len)` with transparent huge pages. A hint: failure (an
/// old kernel, THP disabled) changes nothing but speed. Not under Miri, which cannot call C.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    use std::ffi::{c_int, c_void};
    // From <sys/mman.h>; the value is the same on every Linux architecture.
    const MADV_HUGEPAGE: c_int = 14;
    unsafe extern "C" {
        // The C library's `madvise(2)`, which the standard library already links on Linux.
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    // Whole huge pages only: the kernel can back a huge page only where all of it lies in the
    // advised range, so advising a shorter tail would change nothing.
    let whole = len / HUGE_PAGE * HUGE_PAGE;
    // SAFETY: the range is the start of one allocation of ours, aligned to a huge page; madvise
    // only reads the arguments and its result is ignored.
    unsafe { madvise(ptr.cast(), whole, MADV_HUGEPAGE) };
}

#[cfg(any(not(target_os = "linux"), miri))]
fn advise_huge_pages(_: *mut u8, _: usize) {}

/// Hands memory the C library's allocator holds freed back to the kernel (glibc's
/// `malloc_trim(0)`). A build's parallel segments are a megabyte or two each, below glibc's mmap
/// threshold once it has risen, and once they are copied into place glibc keeps their pages in
/// its heap rather than unmapping them: about as much memory as the binary tree itself, held
/// while the collapse allocates the BVH (`docs/performance.md`, "Scale"). A hint, as
/// `advise_huge_pages`; nothing elsewhere, nor under Miri.
#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
pub(crate) fn release_freed_memory() {
    use std::ffi::c_int;
    unsafe extern "C" {
        // glibc's `malloc_trim(3)`, in the C library the standard library links.
        fn malloc_trim(pad: usize) -> c_int;
    }
    // SAFETY: malloc_trim takes no pointer and is thread-safe; its result is only a report.
    unsafe { malloc_trim(0) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
pub(crate) fn release_freed_memory() {}

#[cfg(test)]
mod tests {
    use super::PagedSlice;

    /// Arrays of a huge page or more start on a huge page and are rounded up to whole ones only
    /// where that wastes at most an eighth; smaller arrays keep their plain layout.
    #[test]
    fn large_layouts_are_aligned_and_rounded_up_only_when_cheap() {
        use super::{HUGE_PAGE, Layout};
        for bytes in [
            64usize,
            HUGE_PAGE - 8,
            HUGE_PAGE,
            HUGE_PAGE + 8,
            3 * HUGE_PAGE + 8,
            2 * HUGE_PAGE - 4096,
            9 * HUGE_PAGE - 8,
        ] {
            let l = PagedSlice::<u64>::layout(bytes / 8);
            if bytes < HUGE_PAGE || !cfg!(target_os = "linux") {
                assert_eq!(l, Layout::array::<u64>(bytes / 8).unwrap());
                continue;
            }
            assert_eq!(l.align(), HUGE_PAGE);
            let up = bytes.next_multiple_of(HUGE_PAGE);
            let expected = if up - bytes <= bytes / 8 { up } else { bytes };
            assert_eq!(l.size(), expected, "{bytes} bytes");
        }
    }

    #[test]
    fn copies_small_large_and_empty_arrays() {
        for n in [0usize, 1, 1000, 5 * super::HUGE_PAGE / 8 + 3] {
            let v: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
            let mut p = PagedSlice::from_slice(&v);
            assert_eq!(&p[..], &v[..]);
            let q = p.clone();
            if n > 0 {
                p[n - 1] ^= 1;
                assert_ne!(p[n - 1], q[n - 1]);
            }
            assert_eq!(&q[..], &v[..]);
        }
    }

    /// Ranges of one piece and of several (written on several tasks, the last piece short) come
    /// out zero, or the source's bytes, everywhere, and nothing past them is written.
    #[test]
    fn writes_every_byte_of_one_or_several_pieces() {
        let large = 4 * super::HUGE_PAGE + 40;
        for n in [0usize, 1, 1000, super::HUGE_PAGE, large - 35] {
            let src: Vec<u8> = (0..n).map(|i| (i % 251) as u8 + 1).collect();
            for from in [None, Some(&src[..])] {
                let mut v = vec![0xffu8; n + 1];
                // SAFETY: `v` holds `n + 1` bytes and is borrowed mutably here only; `src` holds `n`.
                unsafe { super::write_in_pieces(v.as_mut_ptr(), n, from) };
                match from {
                    None => assert!(v[..n].iter().all(|&x| x == 0), "n = {n}"),
                    Some(s) => assert!(v[..n] == *s, "n = {n}"),
                }
                assert_eq!(v[n], 0xff, "n = {n}");
            }
        }
        // SAFETY: zero bytes, and any bytes, are a valid `u64`.
        let p = unsafe { PagedSlice::<u64>::zeroed(large / 8) };
        assert!(p.iter().all(|&x| x == 0));
        let bytes: Vec<u8> = (0..large).map(|i| (i * 7 % 256) as u8).collect();
        // SAFETY: as above.
        let p = unsafe { PagedSlice::<u64>::from_bytes(&bytes) };
        assert!(p.iter().zip(bytes.chunks_exact(8)).all(|(&x, b)| x.to_ne_bytes() == *b));
    }
}
