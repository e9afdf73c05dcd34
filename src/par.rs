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

/// `f` of every element of `items`, in order, in chunks of at least `min_len` per task.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], min_len: usize, f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.par_iter().with_min_len(min_len).map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        let _ = min_len;
        items.iter().map(f).collect()
    }
}

/// `f(i)` for every `i` in `0..n`, in order, in chunks of at least `min_len` per task.
pub(crate) fn map_range<R: Send>(n: u32, min_len: usize, f: impl Fn(u32) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..n).into_par_iter().with_min_len(min_len).map(f).collect()
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

/// `f(input chunk, output chunk)` over `input` and `output` (of one length) in matching chunks
/// of `chunk` elements, one task per chunk.
pub(crate) fn for_chunks<T: Sync, R: Send>(
    input: &[T],
    output: &mut [R],
    chunk: usize,
    f: impl Fn(&[T], &mut [R]) + Sync + Send,
) {
    debug_assert_eq!(input.len(), output.len());
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        input.par_chunks(chunk).zip(output.par_chunks_mut(chunk)).for_each(|(i, o)| f(i, o));
    }
    #[cfg(not(feature = "parallel"))]
    for (i, o) in input.chunks(chunk).zip(output.chunks_mut(chunk)) {
        f(i, o);
    }
}
