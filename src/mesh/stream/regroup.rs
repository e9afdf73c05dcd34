//! Regrouping a stream into packets ([`Regroup::run`]): rays bucketed by direction octant,
//! coherent buckets reordered tile by tile, and the coherence tests that send the other rays to
//! the single-ray path. The mesh BVH's streams and the scene's use it.

use glam::{Vec2, Vec3A};

use crate::math::{Ray, RayCoherence};

use super::choice::Choosing;
use crate::wide::packet::{PACKET, fusable};

/// Rays of one direction octant in a window, or of a packet, below which they are traced singly.
pub(crate) const MIN_PACKET: usize = 8;

/// The scratch of the regrouping, kept by its caller so that nothing is allocated per stream.
pub(crate) struct Regroup {
    /// A window's rays, by octant, as indices into the stream.
    by_octant: Vec<usize>,
    /// A bucket in tile order.
    sorted: Vec<usize>,
    /// Where each packet of a regrouped bucket ends (at most one per ray).
    ends: Vec<u16>,
    tiles: Tiles,
    /// A window's rays' octants.
    octant: Vec<u8>,
    /// Which of a window's rays were settled.
    settled: Vec<bool>,
}

impl Regroup {
    /// Room for a window of [`WINDOW`] rays.
    pub(crate) fn new() -> Regroup {
        let mut regroup = Regroup {
            by_octant: Vec::new(),
            sorted: Vec::new(),
            ends: Vec::new(),
            tiles: Tiles { proj: Vec::new(), tile: Vec::new(), start: vec![0; 2 * MAX_CELLS + 1] },
            octant: Vec::new(),
            settled: Vec::new(),
        };
        regroup.make_room(WINDOW);
        regroup
    }

    /// Room for windows of `window` rays: grown once, on the first stream that asks for it.
    fn make_room(&mut self, window: usize) {
        if self.octant.len() < window {
            self.by_octant.resize(window, 0);
            self.sorted.resize(window, 0);
            self.ends.reserve(window);
            self.tiles.proj.resize(window, Vec2::ZERO);
            self.tiles.tile.resize(window, 0);
            self.octant.resize(window, NONE);
            self.settled.resize(window, false);
        }
    }

    /// Cuts `rays` into windows of `window_rays` consecutive rays (at most [`LONG_WINDOW`], a
    /// multiple of [`RUN`]; see [`window_for`]) and each window's coherent rays
    /// into packets: `packet(cx, indices)` gets each packet (at least [`MIN_PACKET`] rays of one
    /// direction octant whose fused products are finite, in tile order) and `single(cx, i, hint)`
    /// every other ray, with the coherence of its run as `hint`, but for whole runs of rays traced
    /// alone (the incoherent ones, and every run of a window whose coherent rays are traced
    /// singly), which go to `alone(cx, range, hint)` together; `cx` is what all of them write to.
    /// The rays of a window's coherent runs are first offered to `settle(cx, window, coherent,
    /// settled)`, with `window` the window's range of `rays` and `coherent[k / RUN]` whether its
    /// ray `k` is in a coherent run: it may answer such a ray at once (one that misses the whole
    /// structure) and set `settled[k]`, which is `false` on entry, or leave it to the packets.
    /// They are offered while a probe runs and where the last probe found enough of them settled
    /// (`Choice::settle`).
    ///
    /// Whether a window's packets go to `packet` or their rays to `single` is timed by `clock`
    /// (any monotonic count of ticks) and kept in `choosing` (`super::choice`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run<C: ?Sized>(
        &mut self,
        window_rays: usize,
        choosing: &mut Choosing,
        rays: &[Ray],
        cx: &mut C,
        clock: impl Fn() -> u64,
        mut settle: impl FnMut(&mut C, std::ops::Range<usize>, &[bool], &mut [bool]),
        mut single: impl FnMut(&mut C, usize, RayCoherence),
        mut alone: impl FnMut(&mut C, std::ops::Range<usize>, RayCoherence),
        mut packet: impl FnMut(&mut C, &[usize]),
    ) {
        debug_assert!(window_rays <= LONG_WINDOW && window_rays.is_multiple_of(RUN));
        self.make_room(window_rays);
        let Regroup { by_octant, sorted, ends, tiles, octant, settled } = self;
        let Choosing { choice, probe } = choosing;
        for (w, window) in rays.chunks(window_rays).enumerate() {
            let base = w * window_rays;
            // Incoherent runs go to the single-ray path at once, in stream order.
            let mut runs = [false; LONG_WINDOW / RUN];
            for (r, run) in window.chunks(RUN).enumerate() {
                runs[r] = RayCoherence::of_rays(run) == RayCoherence::Coherent;
            }
            let coherent_run = &runs[..window.len().div_ceil(RUN)];
            let hint = |r: usize| if coherent_run[r] { RayCoherence::Coherent } else { RayCoherence::Incoherent };
            let span = |r: usize| base + r * RUN..base + (r * RUN + RUN).min(window.len());
            choice.next_window(probe);
            if probe.is_none() && !choice.packets && !choice.settle {
                (0..window.len().div_ceil(RUN)).for_each(|r| alone(cx, span(r), hint(r)));
                continue;
            }
            for r in (0..window.len().div_ceil(RUN)).filter(|&r| !coherent_run[r]) {
                alone(cx, span(r), RayCoherence::Incoherent);
            }
            // A window of incoherent rays alone (diffuse bounces) is done: it has nothing to
            // settle, bucket or time.
            if !coherent_run.contains(&true) {
                choice.end_window(probe);
                continue;
            }
            let settled = &mut settled[..window.len()];
            settled.fill(false);
            // Where the last probe found few rays to settle (a camera inside a room), the
            // packets' own walk finds the rest's misses at the root, and settling every coherent
            // ray first would only cost its test (`Choice::settle`).
            if probe.is_some() || choice.settle {
                settle(cx, base..base + window.len(), coherent_run, settled);
            }
            if probe.is_none() && !choice.packets {
                // Single rays: the coherent runs' unsettled stretches, each as a run.
                let mut k = 0;
                for stretch in settled.chunk_by(|a, b| a == b) {
                    let (from, to) = (k, k + stretch.len());
                    k = to;
                    if !stretch[0] {
                        // Split at the runs' ends: each keeps its own coherence.
                        let mut at = from;
                        while at < to {
                            let end = to.min((at / RUN + 1) * RUN);
                            if coherent_run[at / RUN] {
                                alone(cx, base + at..base + end, RayCoherence::Coherent);
                            }
                            at = end;
                        }
                    }
                }
                continue;
            }
            let prepared_from = if probe.is_some() { clock() } else { 0 };
            // Each ray's octant, or NONE when it is traced alone or settled.
            let mut count = [0usize; 8];
            for (k, ray) in window.iter().enumerate() {
                octant[k] = NONE;
                // A ray of an incoherent run was traced above with its run; a settled ray is
                // answered.
                if !coherent_run[k / RUN] || settled[k] {
                    continue;
                }
                if !fusable(ray) {
                    single(cx, base + k, RayCoherence::Coherent);
                    continue;
                }
                let s = ray.sign();
                let o = s[0] | s[1] << 1 | s[2] << 2;
                octant[k] = o;
                count[o as usize] += 1;
            }
            let mut start = [0usize; 8];
            for o in 1..8 {
                start[o] = start[o - 1] + count[o - 1];
            }
            let mut next = start;
            for (k, &o) in octant[..window.len()].iter().enumerate() {
                if o != NONE {
                    by_octant[next[o as usize]] = base + k;
                    next[o as usize] += 1;
                }
            }
            if let Some(p) = probe.as_mut() {
                p.prepared.add(clock().saturating_sub(prepared_from), count.iter().sum());
                p.coherent +=
                    window.chunks(RUN).zip(coherent_run).filter(|(_, c)| **c).map(|(run, _)| run.len()).sum::<usize>();
                p.settled += settled.iter().filter(|&&s| s).count();
            }
            for o in 0..8 {
                let bucket = &mut by_octant[start[o]..start[o] + count[o]];
                let sorted = &mut sorted[..bucket.len()];
                let tiling_from = if probe.is_some() { clock() } else { 0 };
                let tiled = bucket.len() >= MIN_PACKET && tile_order(rays, bucket, sorted, tiles, ends);
                if let Some(p) = probe.as_mut() {
                    p.tiled.add(clock().saturating_sub(tiling_from), bucket.len());
                }
                if !tiled {
                    bucket.iter().for_each(|&i| single(cx, i, RayCoherence::Coherent));
                    continue;
                }
                let mut from = 0;
                for &end in ends.iter() {
                    let idx = &bucket[from..end as usize];
                    from = end as usize;
                    let as_packet = idx.len() >= MIN_PACKET && coherent(rays, idx);
                    match probe.as_mut() {
                        Some(p) if as_packet => {
                            let to_packet = p.next_is_packet();
                            let began = clock();
                            if to_packet {
                                packet(cx, idx);
                            } else {
                                idx.iter().for_each(|&i| single(cx, i, RayCoherence::Coherent));
                            }
                            let walk = if to_packet { &mut p.packets } else { &mut p.single };
                            walk.add(clock().saturating_sub(began), idx.len());
                            if p.done() {
                                choice.decide(p);
                                *probe = None;
                            }
                        }
                        None if as_packet && choice.packets => packet(cx, idx),
                        _ => idx.iter().for_each(|&i| single(cx, i, RayCoherence::Coherent)),
                    }
                }
            }
            choice.end_window(probe);
        }
    }
}

/// [`Regroup`]'s mark of a ray that takes no part in the packets.
const NONE: u8 = u8::MAX;

/// Rays regrouped together: enough rows of an image for its packets to become tiles (a multiple
/// of [`RUN`]).
pub(crate) const WINDOW: usize = 4096;
/// The window of a long stream ([`window_for`]): at 1024 × 1024 a window of 4096 rays holds four
/// rows of the image, and its tiles are 16 × 4; 16 rows let them be 8 × 8, for fewer
/// instructions per ray (`docs/performance.md`, "Ray streams"). A short stream keeps
/// [`WINDOW`], so that its probes and its windows still divide it finely.
pub(crate) const LONG_WINDOW: usize = 16384;
// A window's packet ends and tile counts are kept as `u16` (`tile_order`).
const _: () = assert!(LONG_WINDOW <= u16::MAX as usize);

/// The window for a stream of `rays` rays: [`LONG_WINDOW`] from that many rays on, else
/// [`WINDOW`].
pub(crate) fn window_for(rays: usize) -> usize {
    if rays >= LONG_WINDOW { LONG_WINDOW } else { WINDOW }
}
/// Rays on a side of a tile that [`tile_order`] makes.
const TILE: usize = 8;
/// Most tiles in a window's bucket.
const MAX_CELLS: usize = 1024;
/// Largest spread of a packet's unit directions, per axis, for it to be traced as a packet; wider
/// packets (diffuse bounces, random rays) cull too little to pay for the packet's set-up.
const MAX_DIR_SPREAD: f32 = 0.5;

/// Reorders `bucket`, rays of one octant from coherent runs ([`RayCoherence::of_rays`]), tile by tile,
/// and writes where each packet ends to `ends`; returns `false`, leaving the bucket as it is,
/// when the rays' projections have no finite, non-empty extent. `sorted` is scratch of the
/// bucket's length.
///
/// The tiles are square cells, about [`TILE`] rays on a side, over the directions' central
/// projection onto the plane across their dominant axis, `(d[u] / |d[w]|, d[v] / |d[w]|)`: for a
/// pinhole camera that is the image plane, so scan lines become tiles of pixels. The rays'
/// spacing there is estimated as `sqrt(area / rays)` of their bounding rectangle, and the rays
/// are placed by a counting sort over the cells (stable, linear in the rays). A window of fewer
/// rows than a tile (four rows of a 1024-wide image in 4096 rays) gets cells as tall as itself,
/// and packets of two such cells side by side: the reason for [`LONG_WINDOW`].
fn tile_order(
    rays: &[Ray],
    bucket: &mut [usize],
    sorted: &mut [usize],
    scratch: &mut Tiles,
    ends: &mut Vec<u16>,
) -> bool {
    let Tiles { proj, tile: tiles, start } = scratch;
    ends.clear();
    // The axis along which the directions point most (the bucket shares its octant, so the
    // plain sum does).
    let w = bucket.iter().fold(Vec3A::ZERO, |s, &i| s + rays[i].dir()).abs().max_position();
    let (u, v) = ((w + 1) % 3, (w + 2) % 3);
    let (mut lo, mut hi) = (Vec2::INFINITY, Vec2::NEG_INFINITY);
    for (p, &i) in proj.iter_mut().zip(bucket.iter()) {
        // `|1 / d[w]|` is `1 / |d[w]|`: the ray's own inverse direction saves a division.
        let (d, inv) = (rays[i].dir(), rays[i].inv_dir()[w].abs());
        *p = Vec2::new(d[u] * inv, d[v] * inv);
        lo = lo.min(*p);
        hi = hi.max(*p);
    }
    let ext = hi - lo;
    if !ext.is_finite() {
        return false;
    }
    // Cells of TILE × TILE rays at the average spacing, but never more than MAX_CELLS of them.
    let spacing = (ext.x * ext.y / bucket.len() as f32).sqrt();
    let mut cell = spacing * TILE as f32;
    let cells = |cell: f32| (ext / cell).floor() + Vec2::ONE;
    if cell.is_nan() || cell <= 0.0 || cells(cell).x * cells(cell).y > MAX_CELLS as f32 {
        cell = ((ext.x * ext.y / MAX_CELLS as f32).sqrt()).max(ext.max_element() / MAX_CELLS as f32) * 1.01;
        if cell.is_nan() || cell <= 0.0 {
            return false;
        }
    }
    let dims = cells(cell);
    let (gx, gy) = (dims.x as usize, dims.y as usize);
    // At most about 2 * MAX_CELLS by the cell sizes above; checked, since `start` has that room.
    if gx * gy > 2 * MAX_CELLS {
        return false;
    }
    // By the reciprocal: which cell a ray falls in near a border only changes the packets.
    let per_cell = 1.0 / cell;
    // Through `u32`: `q` is at least 0 and about the grid's size, and a float's conversion to a
    // 32-bit integer takes fewer instructions than to a 64-bit one.
    let (last_x, last_y) = (gx as u32 - 1, gy as u32 - 1);
    let cell_of = |p: Vec2| {
        let q = (p - lo) * per_cell;
        ((q.x as u32).min(last_x) + gx as u32 * (q.y as u32).min(last_y)) as usize
    };
    // Each ray's tile, computed once (fewer than 2^16 tiles), then a counting sort.
    for (t, &p) in tiles.iter_mut().zip(proj.iter()).take(bucket.len()) {
        *t = cell_of(p) as u16;
    }
    let tiles = &tiles[..bucket.len()];
    let start = &mut start[..gx * gy + 1];
    start.fill(0);
    for &c in tiles {
        start[c as usize + 1] += 1;
    }
    for c in 1..=gx * gy {
        start[c] += start[c - 1];
    }
    for (&c, &i) in tiles.iter().zip(bucket.iter()) {
        sorted[start[c as usize] as usize] = i;
        start[c as usize] += 1;
    }
    bucket.copy_from_slice(sorted);
    // Packets of whole tiles where they fit: `start[c]` is now where tile `c` ends.
    let mut open = 0usize;
    for c in 0..gx * gy {
        let end = start[c] as usize;
        if end - open > PACKET {
            let last = if c == 0 { 0 } else { start[c - 1] as usize };
            if last > open {
                ends.push(last as u16);
                open = last;
            }
            while end - open > PACKET {
                open += PACKET;
                ends.push(open as u16);
            }
        }
    }
    if open < bucket.len() {
        ends.push(bucket.len() as u16);
    }
    true
}

/// Rays of a stream judged coherent or not together, by [`RayCoherence::of_rays`].
pub(crate) const RUN: usize = 512;

/// Scratch of [`tile_order`]: each ray's projection and tile, and where each tile starts.
struct Tiles {
    proj: Vec<Vec2>,
    tile: Vec<u16>,
    start: Vec<u16>,
}

/// `true` when the rays' unit directions spread by at most [`MAX_DIR_SPREAD`] on every axis,
/// judged by every fourth ray and the last: the tiles group rays of neighbouring directions, and
/// the judgement only chooses between two walks with the same answers.
fn coherent(rays: &[Ray], idx: &[usize]) -> bool {
    let (mut lo, mut hi) = (glam::Vec3A::INFINITY, glam::Vec3A::NEG_INFINITY);
    for &i in idx.iter().step_by(4).chain(idx.last()) {
        let d = rays[i].dir().normalize_or_zero();
        lo = lo.min(d);
        hi = hi.max(d);
    }
    (hi - lo).max_element() <= MAX_DIR_SPREAD
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use glam::Vec3A;

    use super::super::choice::{Choosing, MOST_PROBE_EVERY, PROBE_EVERY, PROBE_RAYS};
    use super::{MIN_PACKET, Regroup, WINDOW};
    use crate::math::{Ray, RayCoherence};

    /// Camera rays of `windows` windows, in scan lines of 64: every window coherent.
    fn camera_rays(windows: usize) -> Vec<Ray> {
        (0..windows * WINDOW)
            .map(|i| {
                let (x, y) = ((i % 64) as f32 / 64.0 - 0.5, (i / 64 % 64) as f32 / 64.0 - 0.5);
                Ray::new(Vec3A::new(0.0, 0.0, 3.0), Vec3A::new(x, y, -1.0))
            })
            .collect()
    }

    /// Runs the regrouping over `windows` windows of camera rays on a clock that packets advance
    /// by `cost(window).0` ticks per ray and single rays by `cost(window).1`, with every ray `i`
    /// with `settles(i)` settled at the root where it is offered to be, and returns the rays each
    /// window traced as packets, checking that every ray was answered once, settled, by a packet
    /// or alone with the coherent hint, how many rays that `settles` were traced alone in runs
    /// instead, and whether each window offered its rays to be settled.
    fn rays_in_packets(
        cost: impl Fn(usize) -> (u64, u64),
        settles: fn(usize) -> bool,
        windows: usize,
    ) -> (Vec<usize>, usize, Vec<bool>) {
        let rays = camera_rays(windows);
        let ticks = Cell::new(0u64);
        let mut seen = vec![0u8; rays.len()];
        let mut in_packets = vec![0usize; windows];
        let unsettled = Cell::new(0);
        let mut offered = vec![false; windows];
        Regroup::new().run(
            WINDOW,
            &mut Choosing::new(),
            &rays,
            &mut seen[..],
            || ticks.get(),
            |seen, window, coherent, settled| {
                offered[window.start / WINDOW] = true;
                for i in window.clone().filter(|&i| settles(i) && coherent[(i - window.start) / super::RUN]) {
                    settled[i - window.start] = true;
                    seen[i] += 1;
                }
            },
            |seen, i, hint| {
                assert_eq!(hint, RayCoherence::Coherent, "ray {i}");
                seen[i] += 1;
                ticks.set(ticks.get() + cost(i / WINDOW).1);
            },
            |seen, range, hint| {
                assert_eq!(hint, RayCoherence::Coherent, "rays {range:?}");
                unsettled.set(unsettled.get() + range.clone().filter(|&i| settles(i)).count());
                range.for_each(|i| seen[i] += 1);
            },
            |seen, idx| {
                assert!(idx.len() >= MIN_PACKET);
                idx.iter().for_each(|&i| seen[i] += 1);
                in_packets[idx[0] / WINDOW] += idx.len();
                ticks.set(ticks.get() + cost(idx[0] / WINDOW).0 * idx.len() as u64);
            },
        );
        assert!(seen.iter().all(|&s| s == 1), "a ray answered twice or never");
        (in_packets, unsettled.get(), offered)
    }

    /// Where packets take fewer ticks per ray, every window is traced as packets but for the
    /// probes' rays that single rays take, at least `PROBE_RAYS` and less than a packet more;
    /// where they take more, the probes alone make packets, and only as many. A probe that keeps
    /// the walk puts the next twice as far, up to `MOST_PROBE_EVERY` windows; one that changes it
    /// puts it `PROBE_EVERY` windows on.
    #[test]
    fn windows_take_the_walk_the_clock_finds_cheaper() {
        let none = |_| false;
        let n = 2 * MOST_PROBE_EVERY;
        let probe_share = |r: usize| (PROBE_RAYS..PROBE_RAYS + 64).contains(&r);
        // The windows that probe: the first, and then each the given number of windows on.
        let probes = |gaps: &[usize]| -> Vec<bool> {
            let mut at = vec![false; n];
            let mut w = 0;
            at[0] = true;
            for &gap in gaps {
                w += gap;
                at[w] = true;
            }
            at
        };
        let cheap = rays_in_packets(|_| (1, 2), none, n).0;
        // The rays that join packets when packets are all there is (some of a camera's rays fall
        // in octants too small for a packet).
        let all = cheap[1];
        assert!(all > WINDOW * 9 / 10, "{cheap:?}");
        // Packets were the walk before the first probe, so it keeps them.
        let at = probes(&[16, 32]);
        for (w, &r) in cheap.iter().enumerate() {
            assert!(if at[w] { probe_share(all - r) } else { r == all }, "window {w}: {cheap:?}");
        }
        let dear = rays_in_packets(|_| (3, 2), none, n).0;
        let at = probes(&[8, 16, 32]);
        for (w, &r) in dear.iter().enumerate() {
            assert!(if at[w] { probe_share(r) } else { r == 0 }, "window {w}: {dear:?}");
        }
        // Packets dearer in the first probe's windows, cheaper from the second probe on.
        let back = rays_in_packets(|w| if w < PROBE_EVERY { (3, 2) } else { (1, 2) }, none, n).0;
        let at = probes(&[8, 8, 16]);
        assert!(at[32] && !at[48]);
        for (w, &r) in back.iter().enumerate() {
            let expected = if w < PROBE_EVERY {
                dear[w] == r
            } else if at[w] {
                probe_share(all - r)
            } else {
                r == all
            };
            assert!(expected, "window {w}: {back:?}");
        }
        // A probe whose first windows settle every ray (the sky) goes on into the next, and the
        // next probe is counted from the window it ends in.
        let sky = rays_in_packets(|_| (3, 2), |i| i < 2 * WINDOW, n).0;
        for (w, &r) in sky.iter().enumerate() {
            assert!(if [2, 10, 26, 58].contains(&w) { probe_share(r) } else { r == 0 }, "window {w}: {sky:?}");
        }
        // A probe that never has enough rays decides after `PROBE_EVERY` windows by what it has.
        let sparse = rays_in_packets(|_| (3, 2), |i| i % WINDOW < WINDOW - 100, n).0;
        assert!(sparse[..PROBE_EVERY].iter().all(|&r| r > 0), "{sparse:?}");
        assert!(sparse[PROBE_EVERY..2 * PROBE_EVERY - 1].iter().all(|&r| r == 0), "{sparse:?}");
        // Settled rays are answered once, whichever walk the others take: the windows of single
        // rays settle first where the probe settled one ray in eight or more, and trace the rest;
        // where it settled fewer, they trace every ray alone.
        type Settles = fn(usize) -> bool;
        let cases: [(Settles, bool); 3] = [(|i| i % 3 == 0, true), (|i| i % 64 < 40, true), (|i| i % 100 == 0, false)];
        for (settles, settled_first) in cases {
            assert_eq!(rays_in_packets(|_| (3, 2), settles, n).1 == 0, settled_first);
            assert_eq!(rays_in_packets(|_| (1, 2), settles, n).1, 0);
        }
    }

    /// A window of incoherent rays alone (diffuse bounces) goes to `alone` run by run, in stream
    /// order, and costs nothing else: nothing is offered to be settled, bucketed or timed.
    #[test]
    fn incoherent_windows_go_alone_and_nothing_else() {
        // Directions scattered by a hash: every run is judged incoherent.
        let rays: Vec<Ray> = (0..2 * WINDOW + 100)
            .map(|i| {
                let h =
                    |k: u32| ((i as u32 ^ k).wrapping_mul(0x9E37_79B9).rotate_left(13) % 2001) as f32 / 1000.0 - 1.0;
                Ray::new(Vec3A::ZERO, Vec3A::new(h(1), h(2), h(3)) + Vec3A::new(0.0, 0.0, 1e-3))
            })
            .collect();
        let mut runs = Vec::new();
        let clock_reads = Cell::new(0);
        Regroup::new().run(
            WINDOW,
            &mut Choosing::new(),
            &rays,
            &mut runs,
            || {
                clock_reads.set(clock_reads.get() + 1);
                0
            },
            |_, _, _, _| panic!("incoherent rays offered to be settled"),
            |_, i, _| panic!("ray {i} traced alone outside a run"),
            |runs: &mut Vec<std::ops::Range<usize>>, range, hint| {
                assert_eq!(hint, RayCoherence::Incoherent);
                runs.push(range);
            },
            |_, _| panic!("a packet of incoherent rays"),
        );
        let expected: Vec<_> =
            (0..rays.len()).step_by(super::RUN).map(|s| s..(s + super::RUN).min(rays.len())).collect();
        assert_eq!(runs, expected);
        assert_eq!(clock_reads.get(), 0, "incoherent windows were timed");
    }

    /// A probe's two walks see alike rays: its packets alternate between them in tile order, so
    /// each walk's rays are spread over the probe's part of the window, not one half of it.
    #[test]
    fn a_probe_alternates_its_packets() {
        let rays = camera_rays(1);
        // Each packet as `true`, each ray traced singly as `false`.
        let mut walks = Vec::new();
        Regroup::new().run(
            WINDOW,
            &mut Choosing::new(),
            &rays,
            &mut walks,
            || 0,
            |_, _, _, _| {},
            |walks: &mut Vec<bool>, _, _| walks.push(false),
            |_, _, _| {},
            |walks: &mut Vec<bool>, _| walks.push(true),
        );
        // Runs of single rays as long as a packet stand for a packet given to the single rays;
        // shorter ones are rays that joined no packet.
        let mut tokens = Vec::new();
        for run in walks.chunk_by(|a, b| a == b) {
            if run[0] {
                tokens.extend(run);
            } else if run.len() >= MIN_PACKET {
                tokens.push(false);
            }
        }
        let singles = tokens.iter().filter(|&&p| !p).count();
        assert!((PROBE_RAYS / 64..=PROBE_RAYS / 56).contains(&singles), "{tokens:?}");
        // From the first packet to the last given to the single rays, the two walks take turns
        // (a walk may take two in a row where its packets were smaller); the clock never moves,
        // so packets cost no more than single rays and take the rest of the window.
        let first = tokens.iter().position(|&p| p).unwrap();
        let last = tokens.iter().rposition(|&p| !p).unwrap();
        let probe = &tokens[first..=last];
        assert!(probe.windows(2).all(|w| w[0] || w[1]), "{tokens:?}");
        assert!(probe.windows(3).all(|w| !(w[0] && w[1] && w[2])), "{tokens:?}");
        assert!(tokens.len() - last > WINDOW / 64 / 3, "{tokens:?}");
    }

    /// Every window offers its coherent rays to be settled at the root while a probe finds one
    /// in eight or more to settle; where the last probe found fewer, only the probes' windows
    /// do, and the packets find the misses at the root themselves.
    #[test]
    fn windows_settle_where_a_probe_found_enough_to_settle() {
        let n = 2 * MOST_PROBE_EVERY;
        let (_, _, many) = rays_in_packets(|_| (1, 2), |i| i % 3 == 0, n);
        assert!(many.iter().all(|&o| o), "{many:?}");
        let (in_packets, _, few) = rays_in_packets(|_| (1, 2), |i| i % 100 == 0, n);
        // Packets are kept, so the probes come at windows 0, 16 and 48 (as in
        // `windows_take_the_walk_the_clock_finds_cheaper`).
        for (w, &o) in few.iter().enumerate() {
            assert_eq!(o, [0, 16, 48].contains(&w), "window {w}: {few:?}");
        }
        // The rays that were not settled went to the packets.
        assert!(in_packets[1] > in_packets[0], "{in_packets:?}");
    }
}
