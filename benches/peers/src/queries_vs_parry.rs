//! slabtree's proximity queries and shape casts against parry3d's on the same meshes and queries,
//! one thread: the nearest point of a mesh (`MeshBvh::closest_point` against parry's
//! `TriMesh::project_point`, not solid), and sphere and capsule casts (`MeshBvh::cast_sphere` /
//! `cast_capsule` against `query::cast_shapes` with a `Ball` / `Capsule` and the `TriMesh`).
//!
//! ```text
//! cargo run --release --manifest-path benches/peers/Cargo.toml --bin queries_vs_parry -- [SCENES_DIR] [PASSES]
//! ```
//!
//! SCENES_DIR defaults to `../shared/scenes` beside the repository (the bunny and Sponza are
//! used); PASSES (default 5) interleaved timed passes per query kind, best and median printed.
//! Both libraries answer every query; the program counts where they agree (a distance within
//! 1e-4 of the scene's size, a `t` within 1e-4, hit or miss alike) and prints the largest
//! difference. For sphere casts it also checks each library's contacts: at the reported `t`, the
//! centre's distance to the mesh (by slabtree's closest point, which agrees with parry's) should
//! be the radius.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use glam::Vec3;
use parry3d::math::{Pose, Vector};
use parry3d::query::{PointQuery, ShapeCastOptions, cast_shapes};
use parry3d::shape::{Ball, Capsule, Shape, TriMesh as PTriMesh};
use slabtree::{BuildOptions, MeshBvh, load_mesh};
use slabtree_testkit::rng::Rng;

/// One query kind's inputs, both libraries' answers, and their times.
struct Kind {
    name: &'static str,
    slab: Vec<f64>,
    parry: Vec<f64>,
}

/// One library's run of one query kind: its answers, one number per query.
type Workload<'a> = Box<dyn Fn() -> Vec<f32> + 'a>;

fn v(p: Vec3) -> Vector {
    Vector::new(p.x, p.y, p.z)
}

/// parry3d's time of impact (NaN for a miss) of `shape` moving from `a` to `b` for each cast.
fn parry_casts(mesh: &PTriMesh, casts: &[(Vec3, Vec3)], shape: &dyn Shape) -> Vec<f32> {
    let opts = ShapeCastOptions {
        max_time_of_impact: 1.0,
        target_distance: 0.0,
        stop_at_penetration: true,
        compute_impact_geometry_on_penetration: false,
    };
    casts
        .iter()
        .map(|&(a, b)| {
            let pos = Pose::translation(a.x, a.y, a.z);
            cast_shapes(&pos, v(b - a), shape, &Pose::IDENTITY, Vector::ZERO, mesh, opts)
                .expect("supported")
                .map_or(f32::NAN, |h| h.time_of_impact)
        })
        .collect()
}

/// Answers (a distance or a time of impact; NaN for a miss) of `n` queries, and the time.
fn time(f: &dyn Fn() -> Vec<f32>) -> (Vec<f32>, f64) {
    let t = Instant::now();
    let out = black_box(f());
    (out, t.elapsed().as_secs_f64() * 1e3)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/scenes"));
    let passes: usize = args.next().map_or(5, |p| p.parse().expect("PASSES is a number"));
    println!(
        "# queries_vs_parry: slabtree against parry3d 0.31, one thread, best / median of {passes} interleaved passes"
    );
    println!();
    println!(
        "| scene | query | n | slabtree ms (best, median) | parry3d ms (best, median) | parry / slabtree | agree | largest difference | contacts at the radius, slabtree / parry3d |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (scene, file) in [("bunny", "bunny.obj"), ("sponza", "sponza.obj")] {
        let mesh = load_mesh(dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
        let pmesh = PTriMesh::new(mesh.positions().iter().map(|&p| v(p)).collect(), mesh.triangles().to_vec())
            .expect("a valid mesh");
        let b = bvh.bounds().expect("a mesh with triangles");
        let (lo, size) = (Vec3::from(b.min), Vec3::from(b.max - b.min));
        let diag = size.length();
        let mut rng = Rng(0x5EED);
        let mut point = |grow: f32| lo - size * (grow - 1.0) * 0.5 + rng.unit3() * size * grow;
        // Points in and around the bounds; casts from around the bounds across them.
        let points: Vec<Vec3> = (0..20_000).map(|_| point(1.5)).collect();
        let casts: Vec<(Vec3, Vec3)> = (0..5_000).map(|_| (point(1.2), point(1.2))).collect();
        let (r_sphere, half_capsule) = (0.01 * diag, 0.02 * diag);
        let kinds: Vec<(&'static str, usize, Workload<'_>, Workload<'_>)> = vec![
            (
                "closest point",
                points.len(),
                Box::new(|| {
                    points
                        .iter()
                        .map(|&p| bvh.closest_point(p, f32::INFINITY).unwrap().map_or(f32::NAN, |c| c.distance))
                        .collect()
                }),
                Box::new(|| {
                    points
                        .iter()
                        .map(|&p| {
                            let proj = pmesh.project_point(&Pose::IDENTITY, v(p), false);
                            (proj.point - v(p)).length()
                        })
                        .collect()
                }),
            ),
            (
                "sphere cast",
                casts.len(),
                Box::new(|| {
                    casts
                        .iter()
                        .map(|&(a, b)| bvh.cast_sphere(a, r_sphere, b - a).unwrap().map_or(f32::NAN, |h| h.t))
                        .collect()
                }),
                Box::new(|| parry_casts(&pmesh, &casts, &Ball::new(r_sphere))),
            ),
            (
                "capsule cast",
                casts.len(),
                Box::new(|| {
                    casts
                        .iter()
                        .map(|&(a, b)| {
                            let (p0, p1) = (a - Vec3::Y * half_capsule, a + Vec3::Y * half_capsule);
                            bvh.cast_capsule(p0, p1, r_sphere, b - a).unwrap().map_or(f32::NAN, |h| h.t)
                        })
                        .collect()
                }),
                Box::new(|| parry_casts(&pmesh, &casts, &Capsule::new_y(half_capsule, r_sphere))),
            ),
        ];
        for (name, n, slab, parry) in &kinds {
            let mut k = Kind { name, slab: Vec::new(), parry: Vec::new() };
            let (mut a_s, mut a_p) = (Vec::new(), Vec::new());
            for pass in 0..passes {
                // Interleaved, and the order alternated, so that neither library always runs warm.
                let order: [&dyn Fn() -> Vec<f32>; 2] = if pass % 2 == 0 { [slab, parry] } else { [parry, slab] };
                let (x, tx) = time(order[0]);
                let (y, ty) = time(order[1]);
                let ((s, ts), (p, tp)) = if pass % 2 == 0 { ((x, tx), (y, ty)) } else { ((y, ty), (x, tx)) };
                k.slab.push(ts);
                k.parry.push(tp);
                (a_s, a_p) = (s, p);
            }
            // Agreement: both miss, or both answer within 1e-4 of the scene's size (a distance)
            // or of the whole move (a time, in [0, 1]).
            let scale = if k.name == "closest point" { diag } else { 1.0 };
            let (mut agree, mut worst) = (0usize, 0.0f32);
            for (s, p) in a_s.iter().zip(&a_p) {
                let d = if s.is_nan() && p.is_nan() {
                    0.0
                } else if s.is_nan() || p.is_nan() {
                    f32::INFINITY
                } else {
                    (s - p).abs()
                };
                agree += usize::from(d <= 1e-4 * scale);
                worst = worst.max(d);
            }
            // For sphere casts, where each library's contact is: the centre's distance to the
            // mesh at the reported t, against the radius (exact: within 1e-4 of it).
            let at_radius = |answers: &[f32]| {
                let (mut exact, mut hits) = (0usize, 0usize);
                for (&t, &(a, b)) in answers.iter().zip(&casts) {
                    if t.is_nan() || t == 0.0 {
                        continue;
                    }
                    hits += 1;
                    let d = bvh.closest_point(a + (b - a) * t, f32::INFINITY).unwrap().map_or(f32::NAN, |c| c.distance);
                    exact += usize::from((d - r_sphere).abs() <= 1e-4 * r_sphere);
                }
                100.0 * exact as f64 / hits.max(1) as f64
            };
            let contact = if k.name == "sphere cast" {
                format!("{:.1}% / {:.1}%", at_radius(&a_s), at_radius(&a_p))
            } else {
                "-".to_string()
            };
            let stats = |t: &mut Vec<f64>| {
                t.sort_by(f64::total_cmp);
                (t[0], t[t.len() / 2])
            };
            let ((sb, sm), (pb, pm)) = (stats(&mut k.slab), stats(&mut k.parry));
            println!(
                "| {scene} | {} | {n} | {sb:.1}, {sm:.1} | {pb:.1}, {pm:.1} | {:.2} | {:.2}% | {worst:.2e} | {contact} |",
                k.name,
                pb / sb,
                100.0 * agree as f64 / *n as f64
            );
        }
    }
}
