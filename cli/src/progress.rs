//! Progress bars (on a terminal only), number formatting and the worker-thread setup shared by the
//! commands.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use slabtree::{BuildOptions, BuildQuality, MeshBvh, TriMesh, TriangleTest};

use super::args::{BvhArgs, QualityArg, TestArg};
use super::error::{CliError, CliResult};

/// `true` when progress should be drawn: standard error is a terminal.
fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

/// A progress bar of `len` steps with a message, drawn on standard error when it is a terminal
/// and hidden otherwise.
pub fn bar(len: u64, message: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), target());
    pb.set_style(
        ProgressStyle::with_template("{msg} [{wide_bar}] {percent:>3}% (eta {eta})")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    pb.set_message(message.to_owned());
    pb
}

fn target() -> ProgressDrawTarget {
    if interactive() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() }
}

/// Runs `f` with a spinner and `message` on a terminal, clearing it afterwards.
pub fn spin<T>(message: &str, f: impl FnOnce() -> T) -> T {
    let pb = ProgressBar::with_draw_target(None, target());
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("the template is valid"));
    pb.set_message(message.to_owned());
    if interactive() {
        pb.enable_steady_tick(Duration::from_millis(100));
    }
    let out = f();
    pb.finish_and_clear();
    out
}

/// Sets the number of rayon worker threads (the default is one per core) and returns how many
/// there are.
pub fn init_threads(threads: Option<u32>) -> CliResult<usize> {
    if let Some(n) = threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n as usize)
            .build_global()
            .map_err(|e| CliError::new(format!("cannot start {n} worker threads: {e}")))?;
    }
    Ok(rayon::current_num_threads())
}

/// The library's triangle test for the command-line choice.
pub fn triangle_test(t: TestArg) -> TriangleTest {
    match t {
        TestArg::Watertight => TriangleTest::Watertight,
        TestArg::MollerTrumbore => TriangleTest::MollerTrumbore,
    }
}

/// The library's build options for the command-line choices.
pub fn build_options(args: &BvhArgs) -> BuildOptions {
    let quality = match args.build_quality {
        QualityArg::Low => BuildQuality::Low,
        QualityArg::Medium => BuildQuality::Medium,
        QualityArg::High => BuildQuality::High,
    };
    BuildOptions { triangle_test: triangle_test(args.triangle_test), quality, ..Default::default() }
}

/// Builds the BVH of a scene's mesh with a spinner, keeping the mesh (a caller that still needs
/// it passes a copy); returns the BVH and the build's wall time.
pub fn build(mesh: TriMesh, args: &BvhArgs) -> (MeshBvh, Duration) {
    let options = build_options(args);
    let start = Instant::now();
    let bvh =
        spin(&format!("building the BVH of {} triangles", count(mesh.len())), || MeshBvh::build_owned(mesh, &options));
    (bvh, start.elapsed())
}

/// `1234567` as `1,234,567`.
pub fn count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in milliseconds, e.g. `12.3 ms`.
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Millions of rays per second.
pub fn mrays(rays: usize, d: Duration) -> f64 {
    rays as f64 / d.as_secs_f64().max(1e-12) / 1e6
}

/// The best and the median of several timed passes.
#[derive(Clone, Copy, Debug)]
pub struct Passes {
    /// Fastest pass.
    pub best: Duration,
    /// Median pass (the mean of the two middle ones for an even count).
    pub median: Duration,
    /// Timed passes.
    pub count: u32,
}

impl Passes {
    /// `best X Mrays/s, median Y Mrays/s` for `rays` rays per pass.
    pub fn rates(&self, rays: usize) -> String {
        format!("best {:.2} Mrays/s, median {:.2} Mrays/s", mrays(rays, self.best), mrays(rays, self.median))
    }

    /// `X / Y Mrays/s` (best / median) for `rays` rays per pass.
    pub fn rates_short(&self, rays: usize) -> String {
        format!("{:.2} / {:.2} Mrays/s", mrays(rays, self.best), mrays(rays, self.median))
    }
}

/// Runs `pass` once to warm up (caches, rayon's threads, page faults), then `passes` timed times
/// (at least 1), and returns the warm-up's result and the timings: one command gives a fair
/// figure on a noisy machine.
pub fn timed<T>(passes: u32, label: &str, mut pass: impl FnMut() -> T) -> (T, Passes) {
    let passes = passes.max(1);
    let pb = bar(u64::from(passes) + 1, label);
    let first = pass();
    pb.inc(1);
    let mut times: Vec<Duration> = (0..passes)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(pass());
            let t = start.elapsed();
            pb.inc(1);
            t
        })
        .collect();
    pb.finish_and_clear();
    times.sort();
    let n = times.len();
    let median = if n % 2 == 1 { times[n / 2] } else { (times[n / 2 - 1] + times[n / 2]) / 2 };
    (first, Passes { best: times[0], median, count: passes })
}

/// Refuses a `SLABTREE_SIMD` that names no level (the library would ignore it, and the figures
/// printed would not be the level asked for).
pub fn check_simd_override() -> Result<(), crate::error::CliError> {
    match std::env::var("SLABTREE_SIMD") {
        Ok(v) if slabtree::SimdLevel::from_name(&v).is_none() => Err(crate::error::CliError::new(format!(
            "SLABTREE_SIMD={v} names no SIMD level (scalar, neon, sse2, avx2, avx512)"
        ))),
        _ => Ok(()),
    }
}

/// The SIMD level the ray kernels run at, chosen at run time.
pub fn simd() -> String {
    slabtree::simd_level().to_string()
}

/// `threads` as `1 thread` or `2 threads`.
pub fn threads(n: usize) -> String {
    if n == 1 { "1 thread".into() } else { format!("{n} threads") }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
