//! Data parallelism behind the `parallel` feature: rayon's threads when it is on, the calling
//! thread when it is off. The results are the same either way (every user of these helpers
//! computes each element independently, and `join` returns both halves in order).

/// Runs `a` and `b`, potentially in parallel, and returns both results.
#[inline]
pub(crate) fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    #[cfg(feature = "parallel")]
    return rayon::join(a, b);
    #[cfg(not(feature = "parallel"))]
    (a(), b())
}

/// `f` of every element of `items`, in order, in tasks of `min_len` elements (the last may be
/// shorter), each free to be stolen (see [`map_chunks_into`]).
pub(crate) fn map<T: Sync, R: Send>(items: &[T], min_len: usize, f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.par_iter().with_min_len(min_len).with_max_len(min_len).map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        let _ = min_len;
        items.iter().map(f).collect()
    }
}

/// `f(i)` for every `i` in `0..n`, in order, in tasks of `min_len` indices (the last may be
/// shorter), each free to be stolen (see [`map_chunks_into`]).
pub(crate) fn map_range<R: Send>(n: u32, min_len: usize, f: impl Fn(u32) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..n).into_par_iter().with_min_len(min_len).with_max_len(min_len).map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        let _ = min_len;
        (0..n).map(f).collect()
    }
}

/// `f` of every element of `items`, taken by value, in order, one task per element.
pub(crate) fn map_vec<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.into_par_iter().map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        items.into_iter().map(f).collect()
    }
}

/// `f(input chunk, output chunk)` over `input` in chunks of `chunk` elements, one task per chunk,
/// into `out`, which is cleared first and keeps its room: each output chunk is set to `fill` on
/// its own task before `f` sees it, so nothing of the output is written on the calling thread,
/// and the kernel's zeroing of fresh room and the first writes to it are shared out too. (A
/// batch of the bunny's 65k camera rays allocated and filled its 2 MB of answers on the calling
/// thread in 0.28 ms, after checking its rays there in 0.20 ms: an eighth of its two-thread time;
/// `docs/performance.md`, "Batches: nothing serial".)
pub(crate) fn map_chunks_into<T: Sync, R: Clone + Send + Sync>(
    input: &[T],
    chunk: usize,
    fill: R,
    out: &mut Vec<R>,
    f: impl Fn(&[T], &mut [R]) + Sync + Send,
) {
    use std::mem::MaybeUninit;
    let n = input.len();
    out.clear();
    out.reserve(n);
    let room: &mut [MaybeUninit<R>] = &mut out.spare_capacity_mut()[..n];
    let run = |i: &[T], o: &mut [MaybeUninit<R>]| {
        for slot in o.iter_mut() {
            slot.write(fill.clone());
        }
        // SAFETY: every element of `o` was written just above, and `MaybeUninit<R>` has `R`'s
        // layout.
        let o = unsafe { &mut *(o as *mut [MaybeUninit<R>] as *mut [R]) };
        f(i, o);
    };
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        // One task per chunk, each free to be stolen: rayon's adaptive split alone cut the chunks
        // into four pieces for two threads, and a thread that finished its half early found
        // nothing left to take from the other's last piece (Sponza's camera rays, whose top half
        // costs 1.35x the bottom, ran 1.7x as fast on two threads as on one; tasks of one chunk:
        // `docs/performance.md`, "Two threads: a task per chunk").
        input.par_chunks(chunk).zip(room.par_chunks_mut(chunk)).with_max_len(1).for_each(|(i, o)| run(i, o));
    }
    #[cfg(not(feature = "parallel"))]
    for (i, o) in input.chunks(chunk).zip(room.chunks_mut(chunk)) {
        run(i, o);
    }
    // SAFETY: the first `n` elements of the room were each written by their chunk's task (the
    // chunks cover `0..n`), and `n` is within the capacity reserved above. (Had `f` panicked,
    // the length would still be 0, and the written elements would leak, not drop twice.)
    unsafe { out.set_len(n) };
}

/// `check` over `items` in chunks of `chunk` elements on rayon's threads; the first chunk's error
/// (the lowest index), with `rebase(error, index of the chunk's first element)` applied.
pub(crate) fn first_error<T: Sync, E: Send>(
    items: &[T],
    chunk: usize,
    check: impl Fn(&[T]) -> Result<(), E> + Sync + Send,
    rebase: impl Fn(E, usize) -> E,
) -> Result<(), E> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        let bad = items.par_chunks(chunk).enumerate().find_first(|(_, c)| check(c).is_err());
        match bad {
            Some((k, c)) => check(c).map_err(|e| rebase(e, k * chunk)),
            None => Ok(()),
        }
    }
    #[cfg(not(feature = "parallel"))]
    {
        let _ = (chunk, &rebase);
        check(items)
    }
}
