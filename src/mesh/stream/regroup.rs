//! Regrouping a stream into packets ([`Regroup::run`]): rays bucketed by direction octant,
//! coherent buckets reordered tile by tile, and the coherence tests that send the other rays to
//! the single-ray path. The mesh BVH's streams and the scene's use it.

use glam::{Vec2, Vec3A};

use crate::math::{Ray, RayCoherence};

use crate::wide::packet::{PACKET, fusable};

/// Rays of one direction octant in a window, or of a packet, below which they are traced singly.
pub(crate) const MIN_PACKET: usize = 8;

/// How many rays of a packet shared its leaves: over the packet's leaf visits, the groups of
/// eight rays that entered a leaf, and the rays in them. A packet pays for itself only where
/// leaves are entered by several rays at once: one ray per group and leaf is the single ray's
/// work plus the packet's.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LeafSharing {
    pub groups: u32,
    pub rays: u32,
}

impl LeafSharing {
    /// Nothing measured (the scene's packets, whose leaves are instances): never a reason to
    /// stop making packets.
    pub(crate) const UNKNOWN: LeafSharing = LeafSharing { groups: 0, rays: 0 };

    /// `false` once enough leaf groups are counted ([`MIN_SAMPLE`]) and they shared fewer than
    /// [`MIN_SHARING`] rays each.
    fn pays(&self) -> bool {
        self.groups < MIN_SAMPLE || self.rays as f32 >= MIN_SHARING * self.groups as f32
    }
}

/// Leaf groups a window's packets must have entered for their sharing to decide the next window.
const MIN_SAMPLE: u32 = 256;
/// Rays per entered leaf group below which packets cost more than single rays, between the
/// sharing of packets that lose to single rays and of those that gain, on the shared scenes'
/// camera and shadow rays (`docs/performance.md`, "Ray streams").
const MIN_SHARING: f32 = 1.4;
/// While packets do not pay, one window in this many is still traced as packets, to notice when
/// they pay again.
const PROBE_EVERY: usize = 8;

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
    /// Room for a window.
    pub(crate) fn new() -> Regroup {
        Regroup {
            by_octant: vec![0; WINDOW],
            sorted: vec![0; WINDOW],
            ends: Vec::with_capacity(WINDOW),
            tiles: Tiles::new(),
            octant: vec![NONE; WINDOW],
            settled: vec![false; WINDOW],
        }
    }

    /// Cuts `rays` into windows of [`WINDOW`] consecutive rays and each window's coherent rays
    /// into packets: `packet(cx, indices)` gets each packet (at least [`MIN_PACKET`] rays of one
    /// direction octant whose fused products are finite, in tile order) and `single(cx, i, hint)`
    /// every other ray, with the coherence of its run as `hint`, but for whole runs of rays traced
    /// alone (the incoherent ones, and every run of a window whose packets would not pay), which
    /// go to `alone(cx, range, hint)` together; `cx` is what all of them write to. The rays of a
    /// window's coherent runs are first offered to `settle(cx, window, coherent, settled)`, with
    /// `window` the window's range of `rays` and `coherent[k / RUN]` whether its ray `k` is in a
    /// coherent run: it may answer such a ray at once (one that misses the whole structure) and
    /// set `settled[k]`, which is `false` on entry, or leave it to the packets.
    ///
    /// `packet` returns how its rays shared the leaves ([`LeafSharing`]). Once a window's packets
    /// have shared fewer than [`MIN_SHARING`] rays per leaf group (triangles smaller than the rays'
    /// spacing, where a packet's work only adds to the single rays'), counted over at least
    /// [`MIN_SAMPLE`] groups, the rest of the window and the following windows are traced one ray
    /// at a time, but for one window in [`PROBE_EVERY`], whose packets decide again.
    pub(crate) fn run<C: ?Sized>(
        &mut self,
        rays: &[Ray],
        cx: &mut C,
        mut settle: impl FnMut(&mut C, std::ops::Range<usize>, &[bool], &mut [bool]),
        mut single: impl FnMut(&mut C, usize, RayCoherence),
        mut alone: impl FnMut(&mut C, std::ops::Range<usize>, RayCoherence),
        mut packet: impl FnMut(&mut C, &[usize]) -> LeafSharing,
    ) {
        let Regroup { by_octant, sorted, ends, tiles, octant, settled } = self;
        let (mut packets_pay, mut since_probe) = (true, 0);
        for (w, window) in rays.chunks(WINDOW).enumerate() {
            let base = w * WINDOW;
            // Incoherent runs go to the single-ray path at once, in stream order.
            let mut coherent_run = [false; WINDOW / RUN];
            for (r, run) in window.chunks(RUN).enumerate() {
                coherent_run[r] = RayCoherence::of_rays(run) == RayCoherence::Coherent;
            }
            let hint = |r: usize| if coherent_run[r] { RayCoherence::Coherent } else { RayCoherence::Incoherent };
            let span = |r: usize| base + r * RUN..base + (r * RUN + RUN).min(window.len());
            since_probe += 1;
            if !packets_pay && since_probe < PROBE_EVERY {
                (0..window.len().div_ceil(RUN)).for_each(|r| alone(cx, span(r), hint(r)));
                continue;
            }
            for r in (0..window.len().div_ceil(RUN)).filter(|&r| !coherent_run[r]) {
                alone(cx, span(r), RayCoherence::Incoherent);
            }
            since_probe = 0;
            let mut shared = LeafSharing::default();
            let settled = &mut settled[..window.len()];
            settled.fill(false);
            settle(cx, base..base + window.len(), &coherent_run, settled);
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
            // Set once the window's packets have shared too little: the rest of it goes alone.
            let mut cut = false;
            for o in 0..8 {
                let bucket = &mut by_octant[start[o]..start[o] + count[o]];
                let sorted = &mut sorted[..bucket.len()];
                if cut || bucket.len() < MIN_PACKET || !tile_order(rays, bucket, sorted, tiles, ends) {
                    bucket.iter().for_each(|&i| single(cx, i, RayCoherence::Coherent));
                    continue;
                }
                let mut from = 0;
                for &end in ends.iter() {
                    let idx = &bucket[from..end as usize];
                    from = end as usize;
                    if cut || idx.len() < MIN_PACKET || !coherent(rays, idx) {
                        idx.iter().for_each(|&i| single(cx, i, RayCoherence::Coherent));
                    } else {
                        let s = packet(cx, idx);
                        shared.groups += s.groups;
                        shared.rays += s.rays;
                        cut = !shared.pays();
                    }
                }
            }
            if shared.groups >= MIN_SAMPLE {
                packets_pay = shared.pays();
            }
        }
    }
}

/// [`Regroup`]'s mark of a ray that takes no part in the packets.
const NONE: u8 = u8::MAX;

/// Rays regrouped together: enough rows of an image for its packets to become tiles (a multiple
/// of [`RUN`]).
pub(super) const WINDOW: usize = 4096;
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
/// are placed by a counting sort over the cells (stable, linear in the rays).
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

impl Tiles {
    /// Room for a window.
    fn new() -> Tiles {
        Tiles { proj: vec![Vec2::ZERO; WINDOW], tile: vec![0; WINDOW], start: vec![0; 2 * MAX_CELLS + 1] }
    }
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
    use glam::Vec3A;

    use super::{LeafSharing, MIN_SAMPLE, PROBE_EVERY, Regroup, WINDOW};
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

    /// Runs the regrouping with packets that report `sharing(window)`, and returns for each window
    /// whether it made packets, checking that every ray was answered once, by a packet or alone
    /// with the coherent hint.
    fn windows_with_packets(sharing: impl Fn(usize) -> LeafSharing, windows: usize) -> Vec<bool> {
        let rays = camera_rays(windows);
        let mut seen = vec![0u8; rays.len()];
        Regroup::new().run(
            &rays,
            &mut seen[..],
            |_, _, _, _| {},
            |seen, i, hint| {
                assert_eq!(hint, RayCoherence::Coherent, "ray {i}");
                seen[i] += 1;
            },
            |seen, range, hint| {
                assert_eq!(hint, RayCoherence::Coherent, "rays {range:?}");
                range.for_each(|i| seen[i] += 1);
            },
            |seen, idx| {
                idx.iter().for_each(|&i| seen[i] += 2);
                sharing(idx[0] / WINDOW)
            },
        );
        assert!(seen.iter().all(|&s| s == 1 || s == 2), "a ray answered twice or never");
        seen.chunks(WINDOW).map(|w| w.contains(&2)).collect()
    }

    /// Packets whose rays share the leaves are kept; packets that serve about one ray per leaf
    /// group send the following windows to single rays, but for a probe every `PROBE_EVERY`
    /// windows, and packets come back as soon as a probe finds them paying.
    #[test]
    fn windows_whose_packets_do_not_pay_are_traced_alone() {
        let n = 3 * PROBE_EVERY;
        let (pays, fails) = (LeafSharing { groups: 1000, rays: 4000 }, LeafSharing { groups: 1000, rays: 1100 });
        let paying = windows_with_packets(|_| pays, n);
        assert!(paying.iter().all(|&p| p), "{paying:?}");
        let failing = windows_with_packets(|_| fails, n);
        let probes: Vec<bool> = (0..n).map(|w| w % PROBE_EVERY == 0).collect();
        assert_eq!(failing, probes);
        // Packets that stop paying, then pay again from the second probe on.
        let back = windows_with_packets(|w| if w < PROBE_EVERY { fails } else { pays }, n);
        let expected: Vec<bool> = (0..n).map(|w| w == 0 || w >= PROBE_EVERY).collect();
        assert_eq!(back, expected);
        // Too few leaf groups to judge: packets go on.
        let unknown = windows_with_packets(|_| LeafSharing::UNKNOWN, n);
        assert!(unknown.iter().all(|&p| p), "{unknown:?}");
    }

    /// Within a window, packets stop as soon as those made so far have been counted over enough
    /// leaf groups and shared too little; packets that pay, or that are not yet counted over
    /// enough groups, go on to the window's end.
    #[test]
    fn a_window_stops_making_packets_once_they_do_not_pay() {
        let rays = camera_rays(1);
        let packets = |sharing: LeafSharing| {
            let mut made = 0;
            Regroup::new().run(
                &rays,
                &mut made,
                |_, _, _, _| {},
                |_, _, _| {},
                |_, _, _| {},
                |made, _| {
                    *made += 1;
                    sharing
                },
            );
            made
        };
        let all = packets(LeafSharing { groups: 8, rays: 32 });
        assert!(all >= WINDOW / 64, "{all} packets");
        assert_eq!(packets(LeafSharing { groups: 8, rays: 8 }), MIN_SAMPLE.div_ceil(8) as usize);
        assert_eq!(packets(LeafSharing::UNKNOWN), all);
    }
}
