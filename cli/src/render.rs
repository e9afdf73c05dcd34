//! The renderer: primary rays from a pinhole camera, then per mode diffuse light with shadow rays,
//! distance, normals or the BVH's cost per pixel; written as an 8-bit RGB PNG.
//!
//! The image is traced in blocks of rows. Within a block the primary rays are made first and then
//! cast in one batch ([`Tracer::intersect_batch`], on rayon; the flat BVH takes the block's rows
//! as ray streams, which regroup them into tiled packets), then the shadow rays of the hits
//! ([`Tracer::occluded_batch`]); only those two batch calls are timed, so the Mrays/s figures are
//! query time alone.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

use glam::{Vec3, Vec3A};
use rayon::prelude::*;
use slabtree::Ray;

use super::args::Mode;
use super::camera::Camera;
use super::error::{CliError, CliResult};
use super::progress;
use super::rng;
use super::scene::{DEFAULT_ALBEDO, Scene};
use super::tracer::{Surface, Tracer};

/// What to render.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// The camera.
    pub camera: Camera,
    /// Point light position (shade mode).
    pub light: Vec3,
    /// What a pixel shows.
    pub mode: Mode,
    /// `k`: `k × k` rays per pixel.
    pub supersample: u32,
    /// Ambient-occlusion rays per hit (shade mode; 0: none).
    pub ao: u32,
}

/// Ray counts and query times of one render.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Primary rays cast.
    pub primary_rays: usize,
    /// Primary rays that hit.
    pub primary_hits: usize,
    /// Wall time of the primary-ray queries.
    pub primary_time: Duration,
    /// Shadow rays cast (one per primary hit facing the light).
    pub shadow_rays: usize,
    /// Shadow rays that were blocked.
    pub shadow_blocked: usize,
    /// Wall time of the shadow-ray queries.
    pub shadow_time: Duration,
    /// Ambient-occlusion rays cast.
    pub ao_rays: usize,
    /// Ambient-occlusion rays that were blocked.
    pub ao_blocked: usize,
    /// Wall time of the ambient-occlusion queries.
    pub ao_time: Duration,
    /// Wide nodes visited per primary ray, mean (heat mode).
    pub mean_visits: f64,
    /// Wide nodes visited per primary ray, most (heat mode).
    pub max_visits: u32,
    /// Nodes visited per pixel shown as white (heat mode): the 99.9th percentile.
    pub white_visits: f32,
}

/// A default light for a model seen by `camera`: above, to the left of and in front of the
/// model's centre, about one and a half diagonals away.
pub fn default_light(scene: &Scene, camera: &Camera) -> Vec3 {
    let b = scene.mesh.bounds().expect("the mesh is not empty");
    let (lo, hi) = (Vec3::from(b.min), Vec3::from(b.max));
    let d = (hi - lo).length().max(1e-6);
    (lo + hi) / 2.0 + (-0.6 * camera.right + 1.2 * camera.up - 0.5 * camera.forward) * d
}

/// Sky colour (linear RGB) seen along a unit direction, relative to `up`.
fn sky(dir: Vec3, up: Vec3) -> Vec3 {
    let h = dir.dot(up).clamp(-1.0, 1.0);
    let horizon = Vec3::new(0.75, 0.82, 0.92);
    let zenith = Vec3::new(0.22, 0.42, 0.78);
    if h >= 0.0 { horizon.lerp(zenith, h.sqrt()) } else { horizon * (1.0 + 0.5 * h) }
}

/// Where a shaded sample waits for its shadow ray.
struct Pending {
    /// Linear RGB of the sky light (before ambient occlusion).
    ambient: Vec3,
    /// Linear RGB the direct light adds when the shadow ray is clear.
    direct: Vec3,
    /// The surface point, just off the surface, and its normal, for ambient occlusion rays.
    surface: Option<(Vec3, Vec3)>,
}

/// Renders the image; returns 8-bit sRGB pixels (RGB, row-major, top row first) and the figures.
pub fn render(tracer: &Tracer, scene: &Scene, s: &Settings) -> CliResult<(Vec<u8>, Stats)> {
    let (w, h, k) = (s.width as usize, s.height as usize, s.supersample as usize);
    let spp = k * k;
    let bounds = scene.mesh.bounds().expect("the mesh is not empty");
    let diag = (bounds.max - bounds.min).length();
    let eps = 1e-4 * diag + 1e-6 * bounds.min.abs().max(bounds.max.abs()).max_element();
    let up = s.camera.up;
    let ao_radius = 0.3 * diag;

    // Per pixel: linear RGB sum (shade, normal) or (sum of t, hits, -) (depth) or (visits, -, -)
    // (heat).
    let mut accum = vec![Vec3::ZERO; w * h];
    let mut stats = Stats::default();
    let rows_per_block = (65_536 / (w * spp)).clamp(1, h);
    let pb = progress::bar(h as u64, "rendering");
    for y0 in (0..h).step_by(rows_per_block) {
        let rows = rows_per_block.min(h - y0);
        let pixels = rows * w;
        let rays: Vec<Ray> = (0..pixels * spp)
            .into_par_iter()
            .with_min_len(1024)
            .map(|i| {
                let (p, sub) = (i / spp, i % spp);
                let (px, py) = (p % w, y0 + p / w);
                let (sx, sy) = ((sub % k) as f32 + 0.5, (sub / k) as f32 + 0.5);
                s.camera.ray(px as f32 + sx / k as f32, py as f32 + sy / k as f32, s.width, s.height)
            })
            .collect();
        stats.primary_rays += rays.len();

        let start = Instant::now();
        let (hits, visits): (Vec<Option<Surface>>, Vec<u32>) = if s.mode == Mode::Heat {
            rays.par_iter().with_min_len(256).map(|r| tracer.intersect_counting(r)).unzip()
        } else {
            (tracer.intersect_batch(&rays), Vec::new())
        };
        stats.primary_time += start.elapsed();
        stats.primary_hits += hits.iter().filter(|h| h.is_some()).count();

        let block = &mut accum[y0 * w..y0 * w + pixels];
        match s.mode {
            Mode::Shade => {
                let (pending, shadow_rays): (Vec<Pending>, Vec<Option<Ray>>) = rays
                    .par_iter()
                    .zip(&hits)
                    .with_min_len(256)
                    .map(|(ray, hit)| shade(ray, hit.as_ref(), scene, s.light, up, eps))
                    .unzip();
                let casts: Vec<Ray> = shadow_rays.iter().flatten().copied().collect();
                let start = Instant::now();
                let blocked = tracer.occluded_batch(&casts);
                stats.shadow_time += start.elapsed();
                stats.shadow_rays += casts.len();
                stats.shadow_blocked += blocked.iter().filter(|&&b| b).count();
                let open = ambient_occlusion(tracer, &pending, s.ao, ao_radius, (y0 * w * spp) as u64, &mut stats);
                let mut blocked = blocked.into_iter();
                for (i, (p, sr)) in pending.iter().zip(&shadow_rays).enumerate() {
                    let lit = sr.is_some() && !blocked.next().unwrap_or(true);
                    let ambient = p.ambient * open.as_ref().map_or(1.0, |o| o[i]);
                    block[i / spp] += if lit { ambient + p.direct } else { ambient };
                }
            }
            Mode::Depth => {
                for (i, hit) in hits.iter().enumerate() {
                    if let Some(hit) = hit {
                        block[i / spp] += Vec3::new(hit.t, 1.0, 0.0);
                    }
                }
            }
            Mode::Normal => {
                for (i, (ray, hit)) in rays.iter().zip(&hits).enumerate() {
                    if let Some(hit) = hit {
                        block[i / spp] += facing(hit.normal, ray) * 0.5 + 0.5;
                    }
                }
            }
            Mode::Heat => {
                for (i, &v) in visits.iter().enumerate() {
                    block[i / spp].x += v as f32;
                    stats.max_visits = stats.max_visits.max(v);
                }
            }
        }
        pb.inc(rows as u64);
    }
    pb.finish_and_clear();

    let n = spp as f32;
    let pixels: Vec<[u8; 3]> = match s.mode {
        Mode::Shade => accum.iter().map(|c| srgb(*c / n)).collect(),
        Mode::Normal => {
            accum.iter().map(|c| (*c / n * 255.0 + 0.5).clamp(Vec3::ZERO, Vec3::splat(255.0))).map(bytes).collect()
        }
        Mode::Depth => {
            let means: Vec<Option<f32>> = accum.iter().map(|c| (c.y > 0.0).then(|| c.x / c.y)).collect();
            let (lo, hi) =
                means.iter().flatten().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            let span = (hi - lo).max(f32::MIN_POSITIVE);
            accum
                .iter()
                .zip(&means)
                .map(|(c, m)| match m {
                    // Near is bright; pixels only partly covered fade towards the black background.
                    Some(t) => bytes(Vec3::splat((1.0 - 0.85 * (t - lo) / span) * (c.y / n) * 255.0 + 0.5)),
                    None => [0, 0, 0],
                })
                .collect()
        }
        Mode::Heat => {
            let total: f64 = accum.iter().map(|c| c.x as f64).sum();
            stats.mean_visits = total / stats.primary_rays.max(1) as f64;
            // White is the 99.9th percentile of the pixels, so that a few outliers do not wash
            // out the rest of the picture.
            let mut sorted: Vec<f32> = accum.iter().map(|c| c.x / n).collect();
            sorted.sort_unstable_by(f32::total_cmp);
            let white = sorted[(sorted.len() - 1) * 999 / 1000].max(1.0);
            stats.white_visits = white;
            accum.iter().map(|c| bytes(heat(c.x / n / white) * 255.0 + 0.5)).collect()
        }
    };
    Ok((pixels.into_iter().flatten().collect(), stats))
}

/// The normal turned towards the ray's origin.
fn facing(n: Vec3, ray: &Ray) -> Vec3 {
    if n.dot(Vec3::from(ray.dir())) > 0.0 { -n } else { n }
}

/// Shades one primary sample: sky for a miss; for a hit, the surface's sky light now and its
/// direct light once the shadow ray (returned) is known to be clear.
fn shade(ray: &Ray, hit: Option<&Surface>, scene: &Scene, light: Vec3, up: Vec3, eps: f32) -> (Pending, Option<Ray>) {
    let dir = Vec3::from(ray.dir());
    let Some(hit) = hit else {
        return (Pending { ambient: sky(dir, up), direct: Vec3::ZERO, surface: None }, None);
    };
    let albedo = scene.colors.as_ref().map_or(DEFAULT_ALBEDO, |c| c[hit.triangle as usize]);
    let n = facing(hit.normal, ray);
    let p = Vec3::from(ray.at(hit.t)) + n * eps;
    let to_light = light - p;
    let ndl = n.dot(to_light.normalize_or_zero());
    // Sky light: more from above than from below.
    let ambient = albedo * (0.10 + 0.22 * (0.5 + 0.5 * n.dot(up)));
    if ndl <= 0.0 {
        return (Pending { ambient, direct: Vec3::ZERO, surface: Some((p, n)) }, None);
    }
    let sun = Vec3::new(1.0, 0.93, 0.82) * 0.95;
    let shadow = Ray::new(Vec3A::from(p), Vec3A::from(to_light)).with_range(0.0, 1.0);
    (Pending { ambient, direct: albedo * sun * ndl, surface: Some((p, n)) }, Some(shadow))
}

/// The open fraction of each sample's hemisphere: `n` cosine-weighted any-hit rays of length
/// `radius` per hit sample (`None` when `n` is 0). `first` numbers the block's first sample, so that
/// every sample has its own random directions whatever the block size.
fn ambient_occlusion(
    tracer: &Tracer,
    pending: &[Pending],
    n: u32,
    radius: f32,
    first: u64,
    stats: &mut Stats,
) -> Option<Vec<f32>> {
    if n == 0 {
        return None;
    }
    let n = n as usize;
    let rays: Vec<Ray> = pending
        .par_iter()
        .enumerate()
        .with_min_len(256)
        .flat_map_iter(|(i, p)| {
            let mut rng = rng::hashed(first + i as u64);
            let surface = p.surface;
            (0..if surface.is_some() { n } else { 0 }).map(move |k| {
                let (o, normal) = surface.expect("only hits cast rays");
                // Stratified in the first dimension.
                let x1 = (k as f32 + rng.unit()) / n as f32;
                Ray::new(Vec3A::from(o), Vec3A::from(cosine_dir(normal, x1, rng.unit()))).with_range(0.0, radius)
            })
        })
        .collect();
    let start = Instant::now();
    let blocked = tracer.occluded_batch(&rays);
    stats.ao_time += start.elapsed();
    stats.ao_rays += rays.len();
    stats.ao_blocked += blocked.iter().filter(|&&b| b).count();
    let mut blocked = blocked.into_iter();
    Some(
        pending
            .iter()
            .map(|p| match p.surface {
                Some(_) => (0..n).filter(|_| !blocked.next().unwrap_or(false)).count() as f32 / n as f32,
                None => 1.0,
            })
            .collect(),
    )
}

/// A cosine-weighted direction about unit `n` from two uniform numbers.
fn cosine_dir(n: Vec3, x1: f32, x2: f32) -> Vec3 {
    let (t, b) = n.any_orthonormal_pair();
    let r = x1.sqrt();
    let phi = std::f32::consts::TAU * x2;
    (r * phi.cos() * t + r * phi.sin() * b + (1.0 - x1).max(0.0).sqrt() * n).normalize_or(n)
}

/// Linear RGB to 8-bit sRGB.
fn srgb(c: Vec3) -> [u8; 3] {
    let f = |x: f32| {
        let x = x.clamp(0.0, 1.0);
        let s = if x <= 0.003_130_8 { 12.92 * x } else { 1.055 * x.powf(1.0 / 2.4) - 0.055 };
        (s * 255.0 + 0.5) as u8
    };
    [f(c.x), f(c.y), f(c.z)]
}

fn bytes(c: Vec3) -> [u8; 3] {
    let c = c.clamp(Vec3::ZERO, Vec3::splat(255.0));
    [c.x as u8, c.y as u8, c.z as u8]
}

/// The heat palette: dark blue (cheap) through blue, cyan, green, yellow and red to white (the
/// most expensive pixels), for `x` in `[0, 1]`.
fn heat(x: f32) -> Vec3 {
    const STOPS: [Vec3; 7] = [
        Vec3::new(0.02, 0.02, 0.20),
        Vec3::new(0.05, 0.20, 0.85),
        Vec3::new(0.00, 0.75, 0.90),
        Vec3::new(0.15, 0.85, 0.25),
        Vec3::new(0.98, 0.90, 0.10),
        Vec3::new(0.95, 0.20, 0.05),
        Vec3::new(1.00, 1.00, 1.00),
    ];
    let t = x.clamp(0.0, 1.0) * (STOPS.len() - 1) as f32;
    let i = (t as usize).min(STOPS.len() - 2);
    STOPS[i].lerp(STOPS[i + 1], t - i as f32)
}

/// Writes 8-bit RGB pixels as a PNG file.
pub fn write_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> CliResult<()> {
    let file = File::create(path).map_err(|e| CliError::io(path, "create", &e))?;
    let mut enc = png::Encoder::new(BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let err = |e: png::EncodingError| CliError::new(format!("{}: cannot write the PNG: {e}", path.display()));
    let mut writer = enc.write_header().map_err(err)?;
    writer.write_image_data(rgb).map_err(err)?;
    writer.finish().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palettes() {
        assert_eq!(srgb(Vec3::ZERO), [0, 0, 0]);
        assert_eq!(srgb(Vec3::ONE), [255, 255, 255]);
        assert_eq!(srgb(Vec3::splat(0.5)), [188, 188, 188]);
        assert_eq!(heat(1.0), Vec3::ONE);
        assert!(heat(0.0).z > heat(0.0).x);
    }
}
