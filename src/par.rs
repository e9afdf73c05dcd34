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

/// [`join`] when `parallel`, else `a` then `b` on the calling thread: for work too small to pay
/// for a hand-off. Called from outside rayon's pool, as a user's build is, a parallel call hands
/// its work to the pool's threads and waits on them (a wake-up and a sleep each way), which
/// costs more than building a BVH of a few hundred triangles (`docs/performance.md`, "Small
/// builds").
#[inline]
pub(crate) fn join_if<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if parallel { join(a, b) } else { (a(), b()) }
}

/// Whether a map in tasks of `min_len` elements over `len` elements goes to rayon's threads: it
/// has more than one task, and so is worth the hand-off (see [`join_if`]), and the feature is on.
#[inline]
fn several_tasks(len: usize, min_len: usize) -> bool {
    cfg!(feature = "parallel") && len > min_len
}

/// `f` of every element of `items`, in order, in tasks of `min_len` elements (the last may be
/// shorter), each free to be stolen (see [`map_checked_chunks_into`]). A single task runs on the
/// calling thread.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], min_len: usize, f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if several_tasks(items.len(), min_len) {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            return items.par_iter().with_min_len(min_len).with_max_len(min_len).map(f).collect();
        }
    }
    items.iter().map(f).collect()
}

/// `f(i)` for every `i` in `0..n`, in order, in tasks of `min_len` indices (the last may be
/// shorter), each free to be stolen (see [`map_checked_chunks_into`]). A single task runs on the
/// calling thread.
pub(crate) fn map_range<R: Send>(n: u32, min_len: usize, f: impl Fn(u32) -> R + Sync + Send) -> Vec<R> {
    if several_tasks(n as usize, min_len) {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            return (0..n).into_par_iter().with_min_len(min_len).with_max_len(min_len).map(f).collect();
        }
    }
    (0..n).map(f).collect()
}

/// Sets `out[i]` to `f(i)` for every `i`, in tasks of `min_len` elements (the last may be
/// shorter), each free to be stolen; a single task runs on the calling thread. As
/// [`map_range`], into an array the caller has.
pub(crate) fn fill<R: Send>(out: &mut [R], min_len: usize, f: impl Fn(u32) -> R + Sync + Send) {
    debug_assert!(u32::try_from(out.len()).is_ok());
    let fill_chunk = |(c, chunk): (usize, &mut [R])| {
        for (k, o) in chunk.iter_mut().enumerate() {
            *o = f((c * min_len + k) as u32);
        }
    };
    if several_tasks(out.len(), min_len) {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            out.par_chunks_mut(min_len).enumerate().for_each(fill_chunk);
            return;
        }
    }
    fill_chunk((0, out));
}

/// [`fill`], and `groups[g]` set to `group(&out[g * size..(g + 1) * size])` (the last group may
/// be shorter) right after that group's elements are made, while they are in cache. `min_len`
/// is a multiple of `size`, and `groups` holds `out.len().div_ceil(size)` elements.
pub(crate) fn fill_grouped<R: Send, G: Send>(
    out: &mut [R],
    groups: &mut [G],
    size: usize,
    min_len: usize,
    f: impl Fn(u32) -> R + Sync + Send,
    group: impl Fn(&[R]) -> G + Sync + Send,
) {
    assert!(size > 0 && min_len.is_multiple_of(size) && groups.len() == out.len().div_ceil(size));
    let fill_chunk = |(c, (chunk, groups)): (usize, (&mut [R], &mut [G]))| {
        for (g, (members, out)) in chunk.chunks_mut(size).zip(groups).enumerate() {
            let first = c * min_len + g * size;
            for (k, o) in members.iter_mut().enumerate() {
                *o = f((first + k) as u32);
            }
            *out = group(members);
        }
    };
    if several_tasks(out.len(), min_len) {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            out.par_chunks_mut(min_len).zip(groups.par_chunks_mut(min_len / size)).enumerate().for_each(fill_chunk);
            return;
        }
    }
    fill_chunk((0, (out, groups)));
}

/// The threads a parallel map here would run on: the current rayon pool's (1 without the
/// feature).
pub(crate) fn threads() -> usize {
    #[cfg(feature = "parallel")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "parallel"))]
    {
        1
    }
}

/// `f` of every element of `items`, taken by value, in order, one task per element; a single
/// element on the calling thread.
pub(crate) fn map_vec<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if several_tasks(items.len(), 1) {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            return items.into_par_iter().map(f).collect();
        }
    }
    items.into_iter().map(f).collect()
}

/// `f(input chunk, output chunk)` over `input` and `out` (of one length) in chunks of `chunk`
/// elements, one task per chunk, each free to be stolen; on the calling thread for a single
/// chunk or without the feature. For work inside a task that may be uneven: the other threads
/// take chunks of it once they run out of their own.
pub(crate) fn for_each_chunk<T: Sync, R: Send>(
    input: &[T],
    out: &mut [R],
    chunk: usize,
    f: &(impl Fn(&[T], &mut [R]) + Sync + Send),
) {
    debug_assert_eq!(input.len(), out.len());
    if several_tasks(input.len(), chunk) && threads() > 1 {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            input.par_chunks(chunk).zip(out.par_chunks_mut(chunk)).with_max_len(1).for_each(|(i, o)| f(i, o));
            return;
        }
    }
    input.chunks(chunk).zip(out.chunks_mut(chunk)).for_each(|(i, o)| f(i, o));
}

/// `f(input chunk, output chunk)` over `input` in chunks of `chunk` elements, one task per chunk
/// on rayon's threads when `parallel` (and the feature is on), else chunk after chunk on the
/// calling thread, into `out`, which is cleared first and keeps its room: each output chunk is set
/// to `fill` on its own task before `f` sees it, so nothing of the output is written on the
/// calling thread, and the kernel's zeroing of fresh room and the first writes to it are shared
/// out too (`docs/performance.md`, "How a batch runs").
///
/// Only chunks that `check` accepts are given to `f`, each checked on its own task just before
/// `f` sees it, while its elements are in cache: a check of the whole input first would read all
/// of it from memory once more (`docs/performance.md`, "How a batch runs"). When `check`
/// refuses a chunk, the error of the lowest refused chunk is returned,
/// with `rebase(error, index of the chunk's first element)` applied, and `out` is left empty;
/// the chunks after a refused one may or may not have been traced.
#[allow(clippy::too_many_arguments)]
pub(crate) fn map_checked_chunks_into<T: Sync, R: Clone + Send + Sync, E: Send>(
    parallel: bool,
    input: &[T],
    chunk: usize,
    fill: R,
    out: &mut Vec<R>,
    check: impl Fn(&[T]) -> Result<(), E> + Sync + Send,
    rebase: impl Fn(E, usize) -> E,
    f: impl Fn(&[T], &mut [R]) + Sync + Send,
) -> Result<(), E> {
    use std::mem::MaybeUninit;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let n = input.len();
    out.clear();
    out.reserve(n);
    let room: &mut [MaybeUninit<R>] = &mut out.spare_capacity_mut()[..n];
    // The lowest refused chunk and its error; `first_refused` lets later chunks skip their work.
    let first_refused = AtomicUsize::new(usize::MAX);
    let refused: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let run = |k: usize, i: &[T], o: &mut [MaybeUninit<R>]| {
        if first_refused.load(Ordering::Relaxed) < k {
            return;
        }
        if let Err(e) = check(i) {
            first_refused.fetch_min(k, Ordering::Relaxed);
            let mut lowest = refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if lowest.as_ref().is_none_or(|&(j, _)| k < j) {
                *lowest = Some((k, e));
            }
            return;
        }
        for slot in o.iter_mut() {
            slot.write(fill.clone());
        }
        // SAFETY: every element of `o` was written just above, and `MaybeUninit<R>` has `R`'s
        // layout.
        let o = unsafe { &mut *(o as *mut [MaybeUninit<R>] as *mut [R]) };
        f(i, o);
    };
    // A pool of one thread, or a single chunk, runs here: handing the chunks to the pool costs a
    // wake-up per call, and the worker may run on another core than the one that holds the input
    // in its caches (`docs/performance.md`, "How a batch runs").
    let parallel = parallel && threads() > 1 && n > chunk;
    #[cfg(feature = "parallel")]
    if parallel {
        use rayon::prelude::*;
        // One task per chunk, each free to be stolen: rayon's adaptive split alone cut the chunks
        // into four pieces for two threads, and a thread that finished its half early found
        // nothing left to take from the other's last piece (`docs/performance.md`, "How a batch
        // runs").
        input
            .par_chunks(chunk)
            .zip(room.par_chunks_mut(chunk))
            .enumerate()
            .with_max_len(1)
            .for_each(|(k, (i, o))| run(k, i, o));
    }
    if !parallel {
        for (k, (i, o)) in input.chunks(chunk).zip(room.chunks_mut(chunk)).enumerate() {
            run(k, i, o);
        }
    }
    if let Some((k, e)) = refused.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        return Err(rebase(e, k * chunk));
    }
    // SAFETY: no chunk was refused, so every chunk's task wrote all of its elements (the chunks
    // cover `0..n`), and `n` is within the capacity reserved above. (Had `f` panicked, the length
    // would still be 0, and the written elements would leak, not drop twice.)
    unsafe { out.set_len(n) };
    Ok(())
}

#[cfg(all(test, feature = "parallel"))]
mod tests {
    use super::{fill_grouped, map_checked_chunks_into};

    /// Refuses a chunk holding a negative number, naming its index; a chunk holding -1 takes its
    /// time first, so that on two threads the later refused chunk is found first.
    fn check(chunk: &[i32]) -> Result<(), usize> {
        match chunk.iter().position(|&x| x < 0) {
            Some(i) => {
                if chunk[i] == -1 {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(i)
            }
            None => Ok(()),
        }
    }

    #[test]
    fn the_lowest_refused_chunk_is_named_and_the_output_left_empty() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut input = vec![1; 8];
        input[1] = -1;
        input[6] = -2;
        let mut out = vec![7; 3];
        let double = |i: &[i32], o: &mut [i32]| i.iter().zip(o).for_each(|(x, o)| *o = 2 * x);
        let got =
            pool.install(|| map_checked_chunks_into(true, &input, 4, 0, &mut out, check, |e, base| e + base, double));
        assert_eq!(got, Err(1));
        assert!(out.is_empty());
        assert_eq!(map_checked_chunks_into(false, &input, 4, 0, &mut out, check, |e, base| e + base, double), Err(1));
        assert!(out.is_empty());
        // Accepted everywhere: every chunk is mapped.
        let good: Vec<i32> = (0..10).collect();
        assert_eq!(
            pool.install(|| map_checked_chunks_into(true, &good, 4, 0, &mut out, check, |e, _| e, double)),
            Ok(())
        );
        assert_eq!(out, (0..10).map(|x| 2 * x).collect::<Vec<_>>());
    }

    /// Every element is `f` of its index and every group the sum of its elements, as a loop over
    /// the elements says, whatever the lengths of the tasks and of the last group.
    #[test]
    fn fill_grouped_makes_each_group_of_its_own_elements() {
        for (n, size, min_len) in [(0, 4, 8), (1, 4, 8), (37, 4, 8), (1000, 16, 64), (1000, 16, 1 << 14), (999, 3, 9)] {
            let mut out = vec![0u64; n];
            let mut groups = vec![0u64; n.div_ceil(size)];
            fill_grouped(&mut out, &mut groups, size, min_len, |i| u64::from(i) * 7 + 1, |g| g.iter().sum());
            let want: Vec<u64> = (0..n as u64).map(|i| i * 7 + 1).collect();
            assert_eq!(out, want, "n={n}");
            let sums: Vec<u64> = want.chunks(size).map(|g| g.iter().sum()).collect();
            assert_eq!(groups, sums, "n={n}, size={size}");
        }
    }
}
