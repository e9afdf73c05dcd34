//! The timed choice of a stream's walk ([`Choice`]): packets or single rays for a window's
//! coherent rays, whichever a probe of both measured the faster, kept from one call to the next
//! ([`Choosing`]). The regrouping (`super::regroup`) consults it window by window.

/// Which walk a window's coherent rays take, packets or single rays, chosen by the clock.
///
/// Which is faster depends on the scene, the rays and the machine: packets gain where several
/// rays enter each leaf, and lose where the triangles are smaller than the rays' spacing, where
/// a packet's work only adds to each ray's own. Both walks give the same answers, so the choice
/// changes the time alone, and the time is what it is judged by.
///
/// * A probe window hands its packets to the two walks in turn, neighbouring tiles of alike rays
///   to each, until each walk has traced [`PROBE_RAYS`] rays. A probe goes on into the next
///   windows where its own has too few rays that the root does not settle (the sky above a
///   model), for up to [`PROBE_EVERY`] windows.
/// * The packets are charged their share of the window's preparation too (the octants and the
///   tiles). Settling the rays that miss the root is charged to neither: both walks' windows
///   settle them where a probe found enough of them ([`Choice::settle`]).
/// * The walk with the fewer ticks per ray takes the rest of the window and the windows up to
///   the next probe: [`PROBE_EVERY`] windows on, twice as many each time a probe keeps the walk,
///   up to [`MOST_PROBE_EVERY`].
/// * A choice is kept from one stream call to the next ([`Choosing`]), as a batch hands its
///   stream over one window at a time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Choice {
    /// Whether packets are the walk chosen.
    pub(super) packets: bool,
    /// Windows from the end of one probe to the start of the next.
    interval: usize,
    /// Whether the windows settle the rays that miss the root first, the packets' as the single
    /// rays': where the last probe settled at least one coherent ray in [`SETTLE_FROM`].
    /// (Settling tests the root for 64 rays at once, far less than a single ray's walk to find
    /// the same miss; where few rays miss, the packets find them at the root for less than a
    /// test of every ray.)
    pub(super) settle: bool,
    /// Windows since the last probe.
    since_probe: usize,
}

impl Choice {
    /// Packets until a probe says otherwise; the first window probes.
    fn new() -> Choice {
        Choice { packets: true, interval: PROBE_EVERY, settle: true, since_probe: PROBE_EVERY - 1 }
    }

    /// Moves to the next window, in which `probe` goes on or, when none does and one is due,
    /// begins.
    pub(super) fn next_window(&mut self, probe: &mut Option<Probe>) {
        match probe {
            Some(p) => p.windows += 1,
            None => {
                self.since_probe += 1;
                if self.since_probe >= self.interval {
                    self.since_probe = 0;
                    *probe = Some(Probe::default());
                }
            }
        }
    }

    /// Ends the window: a probe that has gone on for [`PROBE_EVERY`] windows decides by what it
    /// has.
    pub(super) fn end_window(&mut self, probe: &mut Option<Probe>) {
        if let Some(p) = probe
            && p.windows + 1 >= PROBE_EVERY
        {
            self.decide(p);
            *probe = None;
        }
    }

    /// Takes the cheaper walk of `probe`, if both traced enough rays to judge by
    /// ([`MIN_JUDGED`]); else keeps the walk it had.
    pub(super) fn decide(&mut self, probe: &Probe) {
        let Probe { packets, single, prepared, tiled, settled, coherent, .. } = *probe;
        if packets.rays >= MIN_JUDGED && single.rays >= MIN_JUDGED {
            let packet_cost = packets.per_ray() + prepared.per_ray() + tiled.per_ray();
            let packets_cheaper = packet_cost <= single.per_ray();
            let kept = self.packets == packets_cheaper;
            self.packets = packets_cheaper;
            self.interval = if kept { (2 * self.interval).min(MOST_PROBE_EVERY) } else { PROBE_EVERY };
        }
        if coherent > 0 {
            self.settle = settled * SETTLE_FROM >= coherent;
        }
    }
}

/// The ticks spent on some rays.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Timed {
    ticks: u64,
    rays: usize,
}

impl Timed {
    /// Adds `ticks` spent on `rays` rays.
    pub(super) fn add(&mut self, ticks: u64, rays: usize) {
        self.ticks += ticks;
        self.rays += rays;
    }

    /// Ticks per ray (0 for no rays).
    fn per_ray(&self) -> f64 {
        if self.rays == 0 { 0.0 } else { self.ticks as f64 / self.rays as f64 }
    }
}

/// A probe window's timings ([`Choice`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Probe {
    /// The packets' walks, and the rays in them.
    pub(super) packets: Timed,
    /// The single rays' walks of the packets given to them.
    pub(super) single: Timed,
    /// Bucketing the window's rays by octant, per ray bucketed.
    pub(super) prepared: Timed,
    /// The tile orders, per ray ordered.
    pub(super) tiled: Timed,
    /// The probe's rays of coherent runs, and those settled among them.
    pub(super) settled: usize,
    pub(super) coherent: usize,
    /// The windows it went on into.
    windows: usize,
}

impl Probe {
    /// Whether the next packet goes to the packet walk: the walk that has traced fewer rays.
    pub(super) fn next_is_packet(&self) -> bool {
        self.packets.rays <= self.single.rays
    }

    /// Whether both walks have traced enough rays.
    pub(super) fn done(&self) -> bool {
        self.packets.rays >= PROBE_RAYS && self.single.rays >= PROBE_RAYS
    }
}

/// Rays each walk traces in a probe window before the choice is made.
pub(super) const PROBE_RAYS: usize = 1024;
/// Rays each walk must have traced in a probe window for it to decide anything (a window with
/// fewer coherent rays that miss nothing keeps the walk chosen before).
const MIN_JUDGED: usize = 128;
/// Windows from one probe to the next, after a probe that changed the walk.
pub(super) const PROBE_EVERY: usize = 8;
/// Windows from one probe to the next at most (a stream of 1024 × 1024 rays is 256 windows).
pub(super) const MOST_PROBE_EVERY: usize = 32;

/// The walk chosen for a kind of stream ([`Choice`]), and the probe under way: kept by the
/// caller from one call of [`Regroup::run`](super::regroup::Regroup::run) to the next.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Choosing {
    pub(super) choice: Choice,
    pub(super) probe: Option<Probe>,
}

impl Choosing {
    /// Packets, and a probe in the first window.
    pub(crate) fn new() -> Choosing {
        Choosing { choice: Choice::new(), probe: None }
    }

    /// A choice held for a test: packets, or single rays that settle the rays missing the root
    /// first with `settle`, and no probe for as long as a test runs.
    #[cfg(test)]
    pub(crate) fn fixed(packets: bool, settle: bool) -> Choosing {
        Choosing { choice: Choice { packets, interval: usize::MAX, settle, since_probe: 0 }, probe: None }
    }
}

/// Windows settle their rays first where a probe settled one coherent ray in this many or more.
const SETTLE_FROM: usize = 8;

/// A clock for [`Regroup::run`](super::regroup::Regroup::run)'s probes: nanoseconds since it was made.
pub(crate) fn wall_clock() -> impl Fn() -> u64 {
    let base = std::time::Instant::now();
    move || base.elapsed().as_nanos() as u64
}
