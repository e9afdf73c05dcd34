//! What a run reports: the machine's other load, each library's results, and the per-ray
//! comparison with the reference answers.

use std::time::Duration;

use crate::libraries::Outcome;
use crate::{LIST_IDS, T_TOLERANCE};

/// Busy CPU time of the whole machine and of this process, from /proc, to tell how much other
/// processes ran while a ray set was being timed (Linux only; `None` elsewhere).
pub(crate) struct CpuSnapshot(Option<(u64, u64)>);

impl CpuSnapshot {
    pub(crate) fn take() -> CpuSnapshot {
        let machine = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            let line = s.lines().next()?;
            let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
            (v.len() >= 8).then(|| v[0] + v[1] + v[2] + v[5] + v[6] + v[7])
        });
        let own = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after the command name.
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        });
        CpuSnapshot(machine.zip(own))
    }

    /// The share of all CPUs' time, since this snapshot, used by other processes (clock ticks of
    /// 1/100 s, the Linux default).
    pub(crate) fn foreign_load(&self, wall: Duration) -> Option<f64> {
        let ((m0, o0), (m1, o1)) = (self.0?, CpuSnapshot::take().0?);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let other = (m1 - m0).saturating_sub(o1 - o0) as f64 / 100.0;
        Some((other / (wall.as_secs_f64() * cpus)).clamp(0.0, 1.0))
    }
}

/// Results of one library on one ray set.
pub(crate) struct Timing {
    pub(crate) best: Duration,
    pub(crate) passes: usize,
    pub(crate) count: usize,
    /// `false` for a library this run left out (`MESH_LIBS`).
    pub(crate) active: bool,
}

pub(crate) struct SetResult {
    pub(crate) scene: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) n: usize,
    pub(crate) reference: Option<usize>,
    pub(crate) st: Vec<Timing>,
    /// Two-thread table: slabtree 1T, 2T, Embree 1T, 2T, Embree robust 1T, 2T (best times).
    pub(crate) mt: Vec<Duration>,
    /// Share of the machine's CPU time used by other processes while the set ran.
    pub(crate) foreign: Option<f64>,
    /// Runs of [`HINT_RUN`] rays judged coherent, and all runs.
    pub(crate) coherent_runs: (usize, usize),
}

pub(crate) struct BuildResult {
    pub(crate) scene: &'static str,
    pub(crate) triangles: usize,
    /// Best build time and bytes per triangle, per library, in `LIBS` order.
    pub(crate) builds: Vec<(Duration, Option<f64>)>,
}

/// Library names in column order.
pub(crate) const LIBS: [&str; 7] = ["slabtree", "Embree", "Embree robust", "obvhs", "parry3d", "bvh", "slabtree WT"];

pub(crate) fn mrays(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64() / 1e6
}

/// Per-ray comparison of `got` against `want`: hit/miss disagreements and, where both hit, `t`
/// beyond the tolerance (a different triangle at the same `t` is a tie, not counted).
pub(crate) fn compare(got: &Outcome, want: &Outcome) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let (mut extra, mut missing, mut t_off) = (Vec::new(), Vec::new(), Vec::new());
    let n = match want {
        Outcome::Closest(v) => v.len(),
        Outcome::Occluded(v) => v.len(),
    };
    for i in 0..n {
        match (got.hit(i), want.hit(i)) {
            (true, false) => extra.push(i),
            (false, true) => missing.push(i),
            (true, true) => {
                if let (Some((tg, _)), Some((tw, _))) = (got.t_prim(i), want.t_prim(i))
                    && (tg - tw).abs() > T_TOLERANCE * tw.abs()
                {
                    t_off.push(i);
                }
            }
            (false, false) => {}
        }
    }
    (extra, missing, t_off)
}

pub(crate) fn ids(v: &[usize]) -> String {
    let shown: Vec<String> = v.iter().take(LIST_IDS).map(|i| i.to_string()).collect();
    if v.len() > LIST_IDS { format!("[{}, ...]", shown.join(", ")) } else { format!("[{}]", shown.join(", ")) }
}

// ---------------------------------------------------------------------------------------------
