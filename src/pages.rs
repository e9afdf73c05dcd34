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

/// Whether an array of `bytes` bytes goes on huge pages (aligned to one, and advised).
fn is_huge(bytes: usize) -> bool {
    bytes >= HUGE_MIN && cfg!(target_os = "linux")
}

/// A fixed-length array of `T` in one allocation, aligned to and advised for 2 MB pages when it
/// is large. Dereferences to a slice.
pub(crate) struct PagedSlice<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    /// The allocation's size: [`PagedSlice::layout`]'s of `len`, or larger for an array made in
    /// [`Spare`] memory. Its alignment follows from it (see [`PagedSlice::allocated`]).
    bytes: usize,
}

// SAFETY: a `PagedSlice` owns its elements like a `Box<[T]>`.
unsafe impl<T: Copy + Send> Send for PagedSlice<T> {}
// SAFETY: shared access only reads, as for `Box<[T]>`.
unsafe impl<T: Copy + Sync> Sync for PagedSlice<T> {}

impl<T: Copy> PagedSlice<T> {
    /// The layout the array was allocated with: an allocation of a huge page or more is
    /// aligned to one, as [`PagedSlice::layout`] makes it, and a spare one taken is too (only
    /// those are taken).
    fn allocated(&self) -> Layout {
        let align = if is_huge(self.bytes) { HUGE_PAGE.max(align_of::<T>()) } else { align_of::<T>() };
        Layout::from_size_align(self.bytes, align).expect("the layout it was allocated with")
    }

    /// The layout of `len` elements: whole huge pages when large.
    fn layout(len: usize) -> Layout {
        let plain = Layout::array::<T>(len).expect("array size overflows isize");
        if is_huge(plain.size()) {
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
            return PagedSlice { ptr: NonNull::dangling(), len: src.len(), bytes: 0 };
        }
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else { handle_alloc_error(layout) };
        if layout.align() >= HUGE_PAGE {
            advise_huge_pages(raw, layout.size());
        }
        // SAFETY: `ptr` has room for `src.len()` elements and does not overlap `src`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), ptr.as_ptr(), src.len()) };
        PagedSlice { ptr, len: src.len(), bytes: layout.size() }
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
            return PagedSlice { ptr: NonNull::dangling(), len, bytes: 0 };
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
        PagedSlice { ptr, len, bytes: layout.size() }
    }

    /// `len` elements of all-zero bytes in the memory of `spare` when it has room for them (its
    /// pages already backed: only zeroed again, without the faults and the kernel's zeroing of
    /// fresh pages), else in a new allocation as [`PagedSlice::zeroed`] makes it. The spare
    /// memory's pages past the array are handed back to the kernel.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T` (plain integer and float data).
    pub(crate) unsafe fn zeroed_in(len: usize, spare: Option<Spare>) -> PagedSlice<T> {
        // SAFETY: zero bytes are a valid `T` by this function's contract.
        unsafe { Self::in_spare(len, spare, false) }
    }

    /// [`PagedSlice::zeroed_in`] without zeroing what the spare memory's last array wrote: for
    /// an array whose maker writes every element before reading it (a collapse's blocks, a
    /// linear build's items and keys), where zeroing memory that is already backed only costs.
    /// The elements hold those old bytes until then, and zeros past them.
    ///
    /// # Safety
    /// Any bytes must be a valid `T` (plain integer and float data).
    pub(crate) unsafe fn reused_in(len: usize, spare: Option<Spare>) -> PagedSlice<T> {
        // SAFETY: any bytes are a valid `T` by this function's contract.
        unsafe { Self::in_spare(len, spare, true) }
    }

    /// [`PagedSlice::zeroed_in`], or with `keep`, [`PagedSlice::reused_in`].
    ///
    /// # Safety
    /// All-zero bytes, and with `keep` any bytes, must be a valid `T`.
    unsafe fn in_spare(len: usize, spare: Option<Spare>, keep: bool) -> PagedSlice<T> {
        let bytes = Self::layout(len).size();
        // Only memory aligned to a huge page is taken, as `allocated` expects.
        let Some(spare) = spare.filter(|s| bytes > 0 && s.layout.size() >= bytes && s.layout.align() >= HUGE_PAGE)
        else {
            // SAFETY: zero bytes are a valid `T` by this function's contract.
            return unsafe { Self::zeroed(len) };
        };
        // The memory passes to the array, which frees it.
        let spare = std::mem::ManuallyDrop::new(spare);
        let (ptr, layout) = (spare.ptr, spare.layout);
        // Past the array: pages that held the previous contents, not to stay resident while the
        // array lives.
        // SAFETY: `bytes <= layout.size()`, within the allocation.
        release_pages(unsafe { ptr.as_ptr().add(bytes) }, layout.size() - bytes);
        // Bytes the last array never wrote are zeroed either way: they may never have been
        // written at all, and reading them would read uninitialised memory.
        let used = len * size_of::<T>();
        let kept = if keep { spare.written.min(used) } else { 0 };
        // SAFETY: the spare allocation holds `layout.size() >= bytes >= used` bytes, and nothing
        // else holds it; zero bytes are a valid `T`, and so are the kept ones (initialised, as
        // `written` says, and any bytes are a valid `T` when `keep` is asked for).
        unsafe { write_in_pieces(ptr.as_ptr().add(kept), used - kept, None) };
        PagedSlice { ptr: ptr.cast(), len, bytes: layout.size() }
    }

    /// The array's memory, its contents done with, for a later array to take
    /// ([`PagedSlice::zeroed_in`]).
    pub(crate) fn into_spare(self) -> Option<Spare> {
        let this = std::mem::ManuallyDrop::new(self);
        let written = this.len * size_of::<T>();
        (this.bytes != 0).then(|| Spare { ptr: this.ptr.cast(), layout: this.allocated(), written })
    }
}

/// The memory of an array whose contents are done with, kept for the next array to reuse: a
/// mesh build's items and their partition scratch become its BVH's blocks, so that the BVH is
/// written over pages already backed rather than fresh ones, whose first writes take a fault and
/// the kernel's zeroing each (`docs/performance.md`, "Scale"). Freed when dropped unused.
pub(crate) struct Spare {
    ptr: NonNull<u8>,
    layout: Layout,
    /// The bytes at its start that its last array initialised (its elements').
    written: usize,
}

// SAFETY: a `Spare` owns its memory, which holds no values, like a `Box<[u8]>`.
unsafe impl Send for Spare {}

impl Drop for Spare {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout (by a `PagedSlice`).
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
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
        if self.bytes != 0 {
            // SAFETY: allocated with this layout, by this array or the one whose spare memory it
            // took (see `allocated`).
            unsafe { dealloc(self.ptr.as_ptr().cast(), self.allocated()) };
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

/// The C library's `madvise(2)`, which the standard library already links on Linux; the advice
/// values are those of <sys/mman.h>, the same on every Linux architecture.
#[cfg(all(target_os = "linux", not(miri)))]
mod advice {
    use std::ffi::{c_int, c_void};
    pub(super) const MADV_DONTNEED: c_int = 4;
    pub(super) const MADV_HUGEPAGE: c_int = 14;
    unsafe extern "C" {
        pub(super) fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
}

/// Asks the kernel to back `[ptr, ptr + len)` with transparent huge pages. A hint: failure (an
/// old kernel, THP disabled) changes nothing but speed. Not under Miri, which cannot call C.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    // Whole huge pages only: the kernel can back a huge page only where all of it lies in the
    // advised range, so advising a shorter tail would change nothing.
    let whole = len / HUGE_PAGE * HUGE_PAGE;
    // SAFETY: the range lies in one allocation of ours and starts on a huge page; madvise only
    // reads the arguments and its result is ignored.
    unsafe { advice::madvise(ptr.cast(), whole, advice::MADV_HUGEPAGE) };
}

#[cfg(any(not(target_os = "linux"), miri))]
fn advise_huge_pages(_: *mut u8, _: usize) {}

/// Hands the whole pages of `[ptr, ptr + len)` back to the kernel (`MADV_DONTNEED`): they read
/// as zeros afterwards and hold no memory until written again. The range lies in one allocation
/// of ours, whose bytes there nothing reads until it writes them. A hint like
/// `advise_huge_pages`: nothing elsewhere, nor under Miri.
#[cfg(all(target_os = "linux", not(miri)))]
fn release_pages(ptr: *mut u8, len: usize) {
    // Whole 64 KB units are whole pages on every Linux target (base pages of 4 to 64 KB).
    const UNIT: usize = 64 << 10;
    let at = ptr as usize;
    let skip = at.next_multiple_of(UNIT) - at;
    let whole = len.saturating_sub(skip) / UNIT * UNIT;
    if whole > 0 {
        // SAFETY: `[ptr + skip, ptr + skip + whole)` lies in the range (above), aligned to whole
        // pages; MADV_DONTNEED on private anonymous memory only drops its pages.
        unsafe { advice::madvise(ptr.add(skip).cast(), whole, advice::MADV_DONTNEED) };
    }
}

#[cfg(any(not(target_os = "linux"), miri))]
fn release_pages(_: *mut u8, _: usize) {}

/// Advises the whole huge pages inside the spare capacity of `v` for transparent huge pages
/// before anything is written there: a build's node array is reserved at its bound (twice the
/// items) and filled front to back, and on 4 KB pages each of its pages took a fault of its own
/// (`docs/performance.md`, "The memory a build writes"). A hint, as
/// `advise_huge_pages`: nothing elsewhere, nor under Miri, nor for a capacity under two huge
/// pages.
pub(crate) fn advise_huge_capacity<T>(v: &mut Vec<T>) {
    let spare = v.spare_capacity_mut();
    let (start, bytes) = (spare.as_mut_ptr() as usize, size_of_val(spare));
    if !is_huge(bytes / 2) {
        return;
    }
    let skip = start.next_multiple_of(HUGE_PAGE) - start;
    // SAFETY: `skip < HUGE_PAGE <= bytes / 2`, so the pointer stays within the spare capacity.
    let at = unsafe { spare.as_mut_ptr().cast::<u8>().add(skip) };
    advise_huge_pages(at, bytes - skip);
}

/// Hands the whole pages inside `slice` back to the kernel, a hint (see `release_pages`): its
/// contents are done with, and its memory is not needed until it is written again (a build's
/// partition scratch while its parallel segments are copied into place).
///
/// # Safety
/// All-zero bytes must be a valid `T`: the released elements read as zeros.
pub(crate) unsafe fn release<T: Copy>(slice: &mut [T]) {
    release_pages(slice.as_mut_ptr().cast(), size_of_val(slice));
}

/// The memory of `elements` as 64-bit words: scratch for integers in memory a build already
/// holds, such as a linear build's sort keys in the half of its items' array that the BVH's
/// blocks take later (`pages::Spare`), where fresh vectors would take a fault and the kernel's
/// zeroing for each of their pages.
///
/// # Safety
/// Any bytes must be a valid `T` (plain integer and float data): the elements hold whatever words
/// are written.
pub(crate) unsafe fn as_words<T: Copy>(elements: &mut [T]) -> &mut [u64] {
    const { assert!(size_of::<T>().is_multiple_of(8) && align_of::<T>() >= align_of::<u64>()) };
    let words = elements.len() * (size_of::<T>() / 8);
    // SAFETY: the elements span exactly `words` words, aligned for `u64` (asserted above); the
    // borrow of `elements` is exclusive and lasts as long as the words'; any bytes are a valid
    // `T` by this function's contract, and every byte is a valid `u64`.
    unsafe { std::slice::from_raw_parts_mut(elements.as_mut_ptr().cast::<u64>(), words) }
}

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

    /// The words are the elements' memory: written as words, read back as elements, bit for bit.
    #[test]
    fn words_view_the_elements_memory() {
        /// Four floats on a 16-byte boundary, as a build item is.
        #[derive(Clone, Copy)]
        #[repr(C, align(16))]
        struct Corner([f32; 4]);
        let mut corners = [Corner([0.0; 4]); 3];
        // SAFETY: any bytes are valid `f32`s.
        let words = unsafe { super::as_words(&mut corners) };
        assert_eq!(words.len(), 6);
        for (k, w) in words.iter_mut().enumerate() {
            *w = ((2 * k as u64 + 1) << 32) | (2 * k as u64);
        }
        let bits: Vec<u32> = corners.iter().flat_map(|c| c.0).map(f32::to_bits).collect();
        assert_eq!(bits, (0..12).collect::<Vec<u32>>());
    }

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

    /// Advising a vector's spare capacity leaves the vector as it was, whatever its capacity
    /// (none, under two huge pages, several, at any offset from a huge page), and every element
    /// pushed afterwards reads back (under Miri, where a huge page is 16 KB, the advice's
    /// pointer arithmetic stays inside the allocation).
    #[test]
    fn advising_a_vectors_capacity_keeps_it_whole() {
        for (capacity, pushed) in
            [(0usize, 0usize), (100, 3), (super::HUGE_PAGE / 8, 10), (5 * super::HUGE_PAGE / 8 + 7, 1)]
        {
            let mut v: Vec<u64> = Vec::with_capacity(capacity);
            v.extend(0..pushed as u64);
            super::advise_huge_capacity(&mut v);
            assert!(v.capacity() >= capacity && v.iter().copied().eq(0..pushed as u64));
            v.extend((pushed..capacity).map(|i| i as u64 * 3));
            assert!(v.iter().enumerate().all(|(i, &x)| x == if i < pushed { i as u64 } else { i as u64 * 3 }));
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

    /// An array made in spare memory reads all zeros whatever the memory held before, takes
    /// that memory where it has room, and is freed with the memory's own layout (which Miri
    /// checks).
    #[test]
    fn arrays_in_spare_memory_start_zeroed() {
        let huge = super::HUGE_PAGE / 8; // u64s in a huge page
        for (old, new) in [
            (5 * huge + 3, 4 * huge),
            (5 * huge + 3, 5 * huge + 3),
            (1000, 900),
            (1000, 2000),
            (4 * huge, huge),
            (0, 10),
            (10, 0),
        ] {
            let v: Vec<u64> = (0..old as u64).map(|i| i | 1).collect();
            let p = PagedSlice::from_slice(&v);
            let (at, room) = (p.as_ptr() as usize, p.bytes);
            // SAFETY: zero bytes are a valid `u64`.
            let mut q = unsafe { PagedSlice::<u64>::zeroed_in(new, p.into_spare()) };
            assert_eq!(q.len(), new);
            assert!(q.iter().all(|&x| x == 0), "{old} -> {new}");
            // Taken where it has room (the address alone does not show the opposite: freed
            // first, the spare memory may come back from the allocator). Writing the whole array
            // below would overrun memory taken without room, which Miri reports.
            if cfg!(target_os = "linux") && old >= huge && new > 0 && new * 8 <= room {
                assert_eq!(q.as_ptr() as usize, at, "{old} -> {new}: spare memory with room not taken");
            }
            q.iter_mut().enumerate().for_each(|(i, x)| *x = i as u64);
            assert!(q.iter().enumerate().all(|(i, &x)| x == i as u64));
        }
    }

    /// An array reusing spare memory keeps what the memory's last array wrote, up to its own
    /// length, and reads zeros past that (bytes the last array never wrote), and takes the
    /// memory where it has room.
    #[test]
    fn arrays_reusing_spare_memory_keep_what_was_written() {
        let huge = super::HUGE_PAGE / 8; // u64s in a huge page
        for (old, new) in
            [(5 * huge + 3, 4 * huge), (8 * huge - 100, 8 * huge - 10), (4 * huge, huge), (1000, 900), (10, 0)]
        {
            let v: Vec<u64> = (0..old as u64).map(|i| i | 1).collect();
            let p = PagedSlice::from_slice(&v);
            let (at, room) = (p.as_ptr() as usize, p.bytes);
            // SAFETY: any bytes are a valid `u64`.
            let q = unsafe { PagedSlice::<u64>::reused_in(new, p.into_spare()) };
            assert_eq!(q.len(), new);
            let taken = cfg!(target_os = "linux") && old >= huge && new > 0 && new * 8 <= room;
            for (i, &x) in q.iter().enumerate() {
                let want = if taken && i < old { i as u64 | 1 } else { 0 };
                assert_eq!(x, want, "{old} -> {new}: element {i}");
            }
            if taken {
                assert_eq!(q.as_ptr() as usize, at, "{old} -> {new}: spare memory with room not taken");
            }
            // Rounded up to whole huge pages, this one has room past what was written.
            assert!(!cfg!(target_os = "linux") || old != 8 * huge - 100 || taken);
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
