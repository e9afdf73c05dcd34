//! Timing: one call, a recorded call, and rounds of several runs interleaved.

use std::time::Instant;

use crate::{MAX_ROUNDS, MIN_TOTAL_MS};

pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// `f`'s wall time in ms, and its result.
pub(crate) fn timed<R>(f: impl FnOnce() -> R) -> (f64, R) {
    let t = Instant::now();
    let r = std::hint::black_box(f());
    (ms(t), r)
}

/// `f`'s wall time in ms, with its result stored in `out` (outside the timing, so that the
/// previous result's drop is not timed either): one contender of [`interleaved`].
pub(crate) fn record<R>(out: &mut Option<R>, f: impl FnOnce() -> R) -> f64 {
    let (t, r) = timed(f);
    *out = Some(r);
    t
}

/// The best time of each of `runs` (each times itself and returns ms), run in turn round after
/// round, the order rotated by one each round so that no library always runs first: at least
/// `min_rounds` rounds, then more (up to [`MAX_ROUNDS`]) until each has run [`MIN_TOTAL_MS`] in
/// total. Interleaving puts a burst of other load on both libraries rather than on whichever
/// was being timed.
pub(crate) fn interleaved<const K: usize>(min_rounds: usize, runs: [&mut dyn FnMut() -> f64; K]) -> [f64; K] {
    let mut best = [f64::INFINITY; K];
    let mut total = [0.0; K];
    let mut all: [Vec<f64>; K] = std::array::from_fn(|_| Vec::new());
    let mut round = 0;
    while round < min_rounds || (round < MAX_ROUNDS && total.iter().any(|&t| t < MIN_TOTAL_MS)) {
        for k in 0..K {
            let i = (k + round) % K;
            let t = runs[i]();
            all[i].push(t);
            best[i] = best[i].min(t);
            total[i] += t;
        }
        round += 1;
    }
    if std::env::var_os("DBVT_ROUNDS").is_some() {
        eprintln!("rounds {round}: {all:.1?}");
    }
    best
}
