//! `slabtree bench`: rays of each kind generated in code, cast in batches on rayon, best of
//! several passes, as single rays and as streams (coherent rays regrouped into packets) side by
//! side. The kinds follow the shared scenes' ray sets: primary (camera), random (from a
//! sphere around the model into its bounds), diffuse (cosine-weighted bounces from the primary
//! hits) and shadow (any hit, from the primary hits to a light above the model).

use std::time::Instant;

use glam::{Vec3, Vec3A};
use slabtree::{BatchOptions, Hit, MeshBvh, Ray, Threads};

use super::args::{BenchArgs, Kind};
use super::camera::Camera;
use super::error::{CliError, CliResult};
use super::load;
use super::progress::{self, count, ms};
use super::rng::{self, Rng};
use super::scene::Scene;

/// The ray kinds in the order they are run.
const KINDS: [Kind; 4] = [Kind::Primary, Kind::Random, Kind::Diffuse, Kind::Shadow];

/// Runs the command.
pub fn run(args: &BenchArgs) -> CliResult<()> {
    let threads = progress::init_threads(args.bvh.threads)?;
    let start = Instant::now();
    let scene = load::load(&args.input)?;
    println!("loaded {}: {} triangles in {}", scene.name, count(scene.mesh.len()), ms(start.elapsed()));
    let (bvh, build) = progress::build(scene.mesh.clone(), &args.bvh);
    println!("built the BVH in {} ({}; SIMD kernels: {})", ms(build), progress::threads(threads), progress::simd());

    let generator = Generator::new(&scene);
    let primary = generator.primary(args.count as usize)?;
    let mut primary_hits = Vec::new();
    bvh.intersect_batch(&primary, &mut primary_hits, BatchOptions::default()).expect(GENERATED);
    let kinds: Vec<Kind> = if args.kind == Kind::All { KINDS.to_vec() } else { vec![args.kind] };
    println!(
        "{:<8} {:>10} {:>9} {:>10}   Mrays/s of batches (single rays, several in flight where that gains), then of streams ({} passes after a warm-up, {})",
        "kind",
        "rays",
        "hit",
        "best time",
        args.passes,
        progress::threads(threads)
    );
    for kind in kinds {
        let (name, rays, any) = match kind {
            Kind::Primary => ("primary", primary.clone(), false),
            Kind::Random => ("random", generator.random(args.count as usize), false),
            Kind::Diffuse => ("diffuse", generator.diffuse(&primary, &primary_hits), false),
            Kind::Shadow => ("shadow", generator.shadow(&primary, &primary_hits), true),
            Kind::All => unreachable!("expanded above"),
        };
        if rays.is_empty() {
            println!("{name:<8} {:>10}   skipped: no primary ray hit the model", 0);
            continue;
        }
        let (positive, passes) = time(&bvh, &rays, any, args.passes);
        let (stream_positive, streams) = time_streams(&bvh, &rays, any, args.passes);
        if stream_positive != positive {
            return Err(CliError::new(format!(
                "{name}: streams found {stream_positive} hits where single rays found {positive} (a bug in slabtree)"
            )));
        }
        println!(
            "{name:<8} {:>10} {:>8.2}% {:>10}   {}; streams: {} ({:.2}x)",
            count(rays.len()),
            100.0 * positive as f64 / rays.len() as f64,
            ms(passes.best),
            passes.rates(rays.len()),
            streams.rates_short(rays.len()),
            passes.best.as_secs_f64() / streams.best.as_secs_f64()
        );
    }
    Ok(())
}

/// Why a generated batch is never refused: every generator makes finite rays with ordered ranges
/// (a refusal would be a bug here, reported as one).
const GENERATED: &str = "generated rays are valid";

/// Batches of single rays: every ray alone, as a loop of `intersect` would trace it.
const SINGLE_RAYS: BatchOptions = BatchOptions { threads: Threads::Pool, packets: false, count_visits: false };

/// How many rays hit (or were occluded), and the timings of `passes` batch queries of single
/// rays after a warm-up, each into answer vectors made once outside the timed passes.
fn time(bvh: &MeshBvh, rays: &[Ray], any: bool, passes: u32) -> (usize, progress::Passes) {
    // Grown by the untimed warm-up pass, then reused.
    let (mut hits, mut occluded) = (Vec::new(), Vec::new());
    progress::timed(passes, "benchmarking", || {
        if any {
            bvh.occluded_batch(rays, &mut occluded, SINGLE_RAYS).expect(GENERATED);
            occluded.iter().filter(|&&o| o).count()
        } else {
            bvh.intersect_batch(rays, &mut hits, SINGLE_RAYS).expect(GENERATED);
            hits.iter().filter(|h| h.is_some()).count()
        }
    })
}

/// As [`time`], with the batch's default (`BatchOptions::packets`): coherent rays regrouped
/// into packets of up to 64 where a stream times them faster.
fn time_streams(bvh: &MeshBvh, rays: &[Ray], any: bool, passes: u32) -> (usize, progress::Passes) {
    let (mut hits, mut occluded) = (Vec::new(), Vec::new());
    progress::timed(passes, "benchmarking streams", || {
        if any {
            bvh.occluded_batch(rays, &mut occluded, BatchOptions::default()).expect(GENERATED);
            occluded.iter().filter(|&&o| o).count()
        } else {
            bvh.intersect_batch(rays, &mut hits, BatchOptions::default()).expect(GENERATED);
            hits.iter().filter(|h| h.is_some()).count()
        }
    })
}

/// Makes rays for one scene, as the shared ray sets were made.
pub struct Generator<'a> {
    scene: &'a Scene,
    lo: Vec3,
    hi: Vec3,
    center: Vec3,
    diag: f32,
}

impl<'a> Generator<'a> {
    /// A generator for a non-empty scene.
    pub fn new(scene: &'a Scene) -> Generator<'a> {
        let b = scene.mesh.bounds().expect("the mesh is not empty");
        let (lo, hi) = (Vec3::from(b.min), Vec3::from(b.max));
        Generator { scene, lo, hi, center: (lo + hi) / 2.0, diag: (hi - lo).length().max(1e-6) }
    }

    /// About `n` camera rays: a square image from the scene's own view, or else a view framing
    /// the whole model.
    pub fn primary(&self, n: usize) -> CliResult<Vec<Ray>> {
        let side = ((n as f64).sqrt().round() as u32).max(1);
        let cam = match self.scene.view {
            Some(v) => Camera::look_at(v.eye, v.at, Vec3::Y, v.fov, 1.0)?,
            None => {
                let b = self.scene.mesh.bounds().expect("the mesh is not empty");
                Camera::framing(
                    &b,
                    self.scene.mesh.positions().iter().copied(),
                    Vec3::new(0.55, 0.45, 1.0),
                    Vec3::Y,
                    40.0,
                    1.0,
                )?
            }
        };
        Ok((0..side * side).map(|i| cam.ray((i % side) as f32 + 0.5, (i / side) as f32 + 0.5, side, side)).collect())
    }

    /// `n` incoherent rays: from a uniform point on the sphere of radius one diagonal around the
    /// centre towards a uniform point in the bounds.
    pub fn random(&self, n: usize) -> Vec<Ray> {
        let mut rng = Rng(0x7261_6e64);
        (0..n)
            .map(|_| {
                let s = Vec3::new(rng::normal(&mut rng), rng::normal(&mut rng), rng::normal(&mut rng))
                    .normalize_or(Vec3::Y);
                let o = self.center + self.diag * s;
                let p = self.lo + Vec3::new(rng.unit(), rng.unit(), rng.unit()) * (self.hi - self.lo);
                Ray::new(o, (p - o).normalize_or(-s))
            })
            .collect()
    }

    /// The hit point of each primary hit, moved off the surface along the normal facing the ray,
    /// with that normal.
    fn bounce_points<'h>(
        &self,
        primary: &'h [Ray],
        hits: &'h [Option<Hit>],
    ) -> impl Iterator<Item = (Vec3, Vec3)> + 'h {
        let eps = 1e-4 * self.diag;
        primary.iter().zip(hits).filter_map(move |(r, h)| {
            let h = h.as_ref()?;
            let d = Vec3::from(r.dir());
            let n = if h.normal.dot(d) > 0.0 { -h.normal } else { h.normal };
            Some((Vec3::from(r.at(h.t)) + eps * n, n))
        })
    }

    /// One cosine-weighted ray about the normal from each primary hit.
    pub fn diffuse(&self, primary: &[Ray], hits: &[Option<Hit>]) -> Vec<Ray> {
        let mut rng = Rng(0x6469_6666);
        self.bounce_points(primary, hits)
            .map(|(o, n)| {
                let (t, b) = basis(n);
                let (x1, x2) = (rng.unit(), rng.unit());
                let r = x1.sqrt();
                let phi = std::f32::consts::TAU * x2;
                let d = r * phi.cos() * t + r * phi.sin() * b + (1.0 - x1).max(0.0).sqrt() * n;
                Ray::new(Vec3A::from(o), Vec3A::from(d.normalize_or(n)))
            })
            .collect()
    }

    /// One occlusion ray from each primary hit to the light, `tmax` at the light.
    pub fn shadow(&self, primary: &[Ray], hits: &[Option<Hit>]) -> Vec<Ray> {
        let light = self.scene.light.unwrap_or(self.center + self.diag * Vec3::new(-0.3, 1.0, 0.4));
        self.bounce_points(primary, hits)
            .map(|(o, _)| {
                let to = light - o;
                let len = to.length();
                Ray::new(o, to / len.max(f32::MIN_POSITIVE)).with_range(0.0, len)
            })
            .collect()
    }
}

/// A branchless orthonormal basis around unit `n` (Duff et al. 2017).
fn basis(n: Vec3) -> (Vec3, Vec3) {
    let sign = 1.0f32.copysign(n.z);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    (Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x), Vec3::new(b, sign + n.y * n.y * a, -n.y))
}

#[cfg(test)]
mod tests {
    use super::basis;
    use glam::Vec3;

    #[test]
    fn orthonormal() {
        for n in [Vec3::Z, -Vec3::Z, Vec3::X, Vec3::new(0.3, -0.5, 0.8).normalize()] {
            let (t, b) = basis(n);
            assert!(t.dot(n).abs() < 1e-5 && b.dot(n).abs() < 1e-5 && t.dot(b).abs() < 1e-5);
            assert!((t.length() - 1.0).abs() < 1e-5 && (b.length() - 1.0).abs() < 1e-5);
        }
    }
}
