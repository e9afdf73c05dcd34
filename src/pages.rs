//! Large read-mostly arrays on 2 MB pages.
//!
//! A ray through a BVH of tens of megabytes touches a handful of nodes scattered over the whole
//! array, and with 4 KB pages nearly every one of them also misses the TLB (Zen 3's L2 TLB maps
//! 8 MB of 4 KB pages). Embree asks Linux for transparent huge pages on its BVH memory
//! (`madvise(MADV_HUGEPAGE)` in `common/sys/alloc.cpp`), which matters where THP is set to
//! `madvise`, the default of many distributions. [`PagedSlice`] does the same for the mesh BVH's
//! nodes and triangle packs: measured on the dragon (64 MB), random rays +18% and shadow rays
//! +13% with THP on; on the bunny (4 MB, which the L2 TLB does map) still about 5% against
//! Embree on its random and shadow rays (`docs/performance.md`).
//!
//! Such an array is a mapping of its own, advised before it is first written, so the kernel can
//! back it with huge pages as it faults in, and hands it out zeroed without a pass of ours.
//! Elsewhere than Linux on x86-64 or aarch64, or for arrays under [`HUGE_MIN`], this is a plain
//! boxed slice.

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc, handle_alloc_error};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The size of a huge page on x86-64 and most aarch64 Linux systems.
const HUGE_PAGE: usize = 2 << 20;

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
    /// Bytes from the allocation's start to the array's (see [`allocate`]).
    head: usize,
}

// SAFETY: a `PagedSlice` owns its elements like a `Box<[T]>`.
unsafe impl<T: Copy + Send> Send for PagedSlice<T> {}
// SAFETY: shared access only reads, as for `Box<[T]>`.
unsafe impl<T: Copy + Sync> Sync for PagedSlice<T> {}

impl<T: Copy> PagedSlice<T> {
    /// The layout of `len` elements: whole huge pages when large.
    fn layout(len: usize) -> Layout {
        let plain = Layout::array::<T>(len).expect("array size overflows isize");
        if plain.size() >= HUGE_MIN && HUGE_PAGES {
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
        let Some((ptr, head)) = allocate(Self::layout(src.len()), false) else {
            return PagedSlice { ptr: NonNull::dangling(), len: src.len(), head: 0 };
        };
        let ptr = ptr.cast::<T>();
        // SAFETY: `ptr` has room for `src.len()` elements and does not overlap `src`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), ptr.as_ptr(), src.len()) };
        PagedSlice { ptr, len: src.len(), head }
    }
}

/// A fresh allocation of `layout` (`None` for a zero size), zeroed when `zero`, and the bytes
/// from its mapping's start to the array's start.
///
/// A huge-page-aligned array gets a private anonymous mapping of its own, one huge page longer
/// so that the array can start on a huge page, advised for huge pages (Embree's `os_malloc`
/// maps its BVH memory the same way). The kernel hands out such memory zeroed as it first
/// touches each page, so a zeroed array costs no pass of its own: the standard allocator's
/// `alloc_zeroed` writes every byte for any alignment beyond 16, and `calloc` does too when it
/// reuses freed memory, which repeated builds make it do (callgrind: a 16 MB pass per Sponza
/// build).
fn allocate(layout: Layout, zero: bool) -> Option<(NonNull<u8>, usize)> {
    if layout.size() == 0 {
        return None;
    }
    if layout.align() < HUGE_PAGE {
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { if zero { alloc_zeroed(layout) } else { alloc(layout) } };
        let Some(raw) = NonNull::new(raw) else { handle_alloc_error(layout) };
        return Some((raw, 0));
    }
    let raw = map_anonymous(layout.size() + HUGE_PAGE);
    let Some(raw) = NonNull::new(raw) else { handle_alloc_error(layout) };
    let head = raw.as_ptr().align_offset(HUGE_PAGE);
    // SAFETY: the head is less than a huge page, which the mapping has beyond the array.
    let start = unsafe { raw.add(head) };
    advise_huge_pages(start.as_ptr(), layout.size());
    Some((start, head))
}

/// Frees an array that [`allocate`] made for `layout`.
///
/// # Safety
/// `start` and `head` came from `allocate(layout, _)`, and the array is not used again.
unsafe fn release(start: NonNull<u8>, head: usize, layout: Layout) {
    if layout.align() < HUGE_PAGE {
        // SAFETY: by the contract, `allocate` gave this pointer for this layout.
        unsafe { dealloc(start.as_ptr(), layout) };
    } else {
        // SAFETY: by the contract, the mapping began `head` bytes before the array and is one
        // huge page longer than it.
        unsafe { unmap(start.as_ptr().sub(head), layout.size() + HUGE_PAGE) };
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
        let Some((raw, head)) = allocate(Self::layout(len), src.is_none()) else {
            return PagedSlice { ptr: NonNull::dangling(), len, head: 0 };
        };
        if let Some(src) = src {
            // SAFETY: `raw` has room for `len` elements and nothing else holds it yet; `src`
            // holds as many bytes, and they are a valid `T` by this function's contract.
            unsafe { copy_in_pieces(raw.as_ptr(), src) };
        }
        PagedSlice { ptr: raw.cast(), len, head }
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
            // SAFETY: allocated by `allocate` with this same layout, which gave `head`.
            unsafe { release(self.ptr.cast(), self.head, layout) };
        }
    }
}

/// Copies `src` to `raw`, on rayon's threads a huge page each when it spans several: the first
/// write to a page also takes its fault (and the kernel's zeroing of a huge page), which was a
/// tenth of a two-thread Sponza build when serial.
///
/// # Safety
/// `raw` is valid for writes of `src.len()` bytes, does not overlap `src`, and nothing else
/// accesses it meanwhile.
unsafe fn copy_in_pieces(raw: *mut u8, src: &[u8]) {
    let base = SharedPtr(raw);
    let bytes = src.len();
    // SAFETY: `[start, start + n)` lies in both ranges of the contract, which do not overlap,
    // and each piece is written by one task only.
    let piece = |start: usize, n: usize| unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr().add(start), base.get().add(start), n)
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

/// Whether arrays of [`HUGE_MIN`] bytes or more get huge pages: on Linux, where the constants
/// of `mmap(2)` below hold.
const HUGE_PAGES: bool = cfg!(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")));

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod sys {
    use std::ffi::{c_int, c_long, c_void};
    // From <sys/mman.h>, the same on x86-64 and aarch64 Linux.
    pub(super) const PROT_READ_WRITE: c_int = 0x1 | 0x2;
    pub(super) const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
    pub(super) const MADV_HUGEPAGE: c_int = 14;
    unsafe extern "C" {
        // The C library's, which the standard library already links on Linux.
        pub(super) fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: c_long,
        ) -> *mut c_void;
        pub(super) fn munmap(addr: *mut c_void, len: usize) -> c_int;
        pub(super) fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
}

/// A fresh private anonymous mapping of `len` bytes, zero, or null when the kernel refuses.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn map_anonymous(len: usize) -> *mut u8 {
    // SAFETY: a new mapping at an address of the kernel's choice; nothing else is touched.
    let p = unsafe { sys::mmap(std::ptr::null_mut(), len, sys::PROT_READ_WRITE, sys::MAP_PRIVATE_ANONYMOUS, -1, 0) };
    // MAP_FAILED is `(void *) -1`.
    if p as usize == usize::MAX { std::ptr::null_mut() } else { p.cast() }
}

/// Unmaps what [`map_anonymous`] mapped.
///
/// # Safety
/// `[ptr, ptr + len)` is a whole mapping of [`map_anonymous`], not used again.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn unmap(ptr: *mut u8, len: usize) {
    // SAFETY: by the contract. Failure would leave the mapping in place, a leak only.
    unsafe { sys::munmap(ptr.cast(), len) };
}

/// Asks the kernel to back `[ptr, ptr + len)` with transparent huge pages. A hint: failure (an
/// old kernel, THP disabled) changes nothing but speed.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    // Whole huge pages only: the kernel can back a huge page only where all of it lies in the
    // advised range, so advising a shorter tail would change nothing.
    let whole = len / HUGE_PAGE * HUGE_PAGE;
    // SAFETY: the range is the start of one mapping of ours, aligned to a huge page; madvise
    // only reads the arguments and its result is ignored.
    unsafe { sys::madvise(ptr.cast(), whole, sys::MADV_HUGEPAGE) };
}

// Elsewhere no layout is aligned to a huge page (see `PagedSlice::layout`), so these are never
// called.
#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn map_anonymous(_: usize) -> *mut u8 {
    unreachable!("huge pages only on Linux")
}
#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
unsafe fn unmap(_: *mut u8, _: usize) {
    unreachable!("huge pages only on Linux")
}
#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn advise_huge_pages(_: *mut u8, _: usize) {}

#[cfg(test)]
mod tests {
    use super::PagedSlice;

    /// Arrays of a huge page or more start on a huge page and are rounded up to whole ones only
    /// where that wastes at most an eighth; smaller arrays keep their plain layout.
    #[test]
    fn large_layouts_are_aligned_and_rounded_up_only_when_cheap() {
        use super::{HUGE_PAGE, Layout};
        for bytes in
            [64usize, HUGE_PAGE - 8, HUGE_PAGE, HUGE_PAGE + 8, 3 * HUGE_PAGE + 8, (4 << 20) - 4096, 9 * HUGE_PAGE - 8]
        {
            let l = PagedSlice::<u64>::layout(bytes / 8);
            if bytes < HUGE_PAGE || !super::HUGE_PAGES {
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
        for n in [0usize, 1, 1000, (5 << 20) / 8 + 3] {
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
    /// out as the source's bytes everywhere, and nothing past them is written.
    #[test]
    fn copies_every_byte_of_one_or_several_pieces() {
        for n in [0usize, 1, 1000, 2 << 20, (9 << 20) + 5] {
            let src: Vec<u8> = (0..n).map(|i| (i % 251) as u8 + 1).collect();
            let mut v = vec![0xffu8; n + 1];
            // SAFETY: `v` holds `n + 1` bytes and is borrowed mutably here only; `src` holds `n`.
            unsafe { super::copy_in_pieces(v.as_mut_ptr(), &src) };
            assert!(v[..n] == *src, "n = {n}");
            assert_eq!(v[n], 0xff, "n = {n}");
        }
        // Zeroed arrays come out zero also where freed dirty memory is handed out again, and
        // large ones start on a huge page.
        for n in [1usize, 1000, (9 << 20) / 8 + 5, (4 << 20) / 8] {
            drop(PagedSlice::from_slice(&vec![u64::MAX; n]));
            // SAFETY: zero bytes are a valid `u64`.
            let p = unsafe { PagedSlice::<u64>::zeroed(n) };
            assert!(p.iter().all(|&x| x == 0), "n = {n}");
            if n * 8 >= super::HUGE_MIN && super::HUGE_PAGES {
                assert_eq!(p.as_ptr() as usize % super::HUGE_PAGE, 0, "n = {n}");
                assert_eq!(PagedSlice::from_slice(&p[..]).as_ptr() as usize % super::HUGE_PAGE, 0);
            }
        }
        let bytes: Vec<u8> = (0..(9 << 20) + 40).map(|i| (i * 7 % 256) as u8).collect();
        // SAFETY: any bytes are a valid `u64`.
        let p = unsafe { PagedSlice::<u64>::from_bytes(&bytes) };
        assert!(p.iter().zip(bytes.chunks_exact(8)).all(|(&x, b)| x.to_ne_bytes() == *b));
    }
}
