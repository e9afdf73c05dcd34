//! The Embree oracle: every ray of every reference set in the shared scenes folder, compared
//! with Embree 4's hits (see the folder's README for the formats).
//!
//! Run with `cargo test --release --features shared-data --test embree_oracle -- --nocapture`.
//! The folder is `$SLABTREE_SCENES`, default `../shared/scenes` beside the repository. Every
//! `rays/<scene>.<kind>.rays` is discovered, with its mesh `<scene>.obj` or `<scene>.ply`, so a
//! new scene needs no code change. The test fails loudly when the folder is missing.
//! `SLABTREE_ORACLE_SCENES=bunny,dragon` limits it to those scenes (`.ci/run` runs the bunny alone
//! under emulation on aarch64, where the whole folder would take too long).
//!
//! Agreement per ray: the hit/miss decision matches; t matches to 1e-4 relative; the triangle
//! matches unless the two are tied (our triangle is hit, in f64, at Embree's t). A set fails below
//! 99.99% agreement. Every set is also traced as a ray stream, whose answers must equal the single
//! rays' exactly, in both triangle tests.

use std::path::{Path, PathBuf};

use glam::Vec3;
use slabtree::{BatchOptions, BuildOptions, BuildQuality, MeshBvh, Ray, Threads, TriMesh, TriangleTest};

use common::triangle::mt64;
use slabtree_testkit as common;

fn scenes_dir() -> PathBuf {
    let dir = std::env::var_os("SLABTREE_SCENES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/scenes"));
    assert!(
        dir.join("rays").is_dir(),
        "shared scenes not found at {}: set SLABTREE_SCENES to the folder holding rays/ and the meshes",
        dir.display()
    );
    dir
}

fn read_f32s(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bytes.len() % 4, 0, "{}: size not a multiple of 4", path.display());
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn load_rays(path: &Path) -> Vec<Ray> {
    let f = read_f32s(path);
    assert_eq!(f.len() % 8, 0);
    f.chunks_exact(8)
        .map(|r| Ray::new(Vec3::new(r[0], r[1], r[2]), Vec3::new(r[4], r[5], r[6])).with_range(r[3], r[7]))
        .collect()
}

/// f64 Möller–Trumbore t of the ray on one triangle (no epsilon), if hit.
fn t64(mesh: &TriMesh, tri: u32, ray: &Ray) -> Option<f64> {
    let (o, d) = (Vec3::from(ray.origin()).as_dvec3(), Vec3::from(ray.dir()).as_dvec3());
    let (t, u, v) = mt64(o, d, mesh.triangle(tri as usize).map(|v| v.as_dvec3()))?;
    // A little slack on the barycentrics: ties are rays through shared edges.
    let eps = 1e-6;
    (u >= -eps && v >= -eps && u + v <= 1.0 + eps).then_some(t)
}

/// Two different triangles at the same t are a tie when they share a vertex (the ray passes a
/// shared edge or vertex closer than f32 can resolve: the README measures Embree's own
/// barycentric error up to 7.6e-3) or when ours is hit, in f64, at that t (coplanar overlapping
/// faces, as Sponza has).
fn is_tie(mesh: &TriMesh, ours: u32, theirs: u32, ray: &Ray, t: f32) -> bool {
    let a = mesh.triangle(ours as usize);
    let b = mesh.triangle(theirs as usize);
    let shares_vertex = a.iter().any(|p| b.contains(p));
    shares_vertex || t64(mesh, ours, ray).is_some_and(|x| (x - t as f64).abs() <= 1e-4 * t as f64)
}

#[derive(Default)]
struct Tally {
    rays: usize,
    agree: usize,
    hit_miss: usize,
    t_off: usize,
    triangle: usize,
    ties: usize,
}

fn compare_set(mesh: &TriMesh, bvh: &MeshBvh, rays: &[Ray], reference: &Path, kind: &str) -> Tally {
    let mut tally = Tally { rays: rays.len(), ..Default::default() };
    if kind == "shadow" {
        let expect = std::fs::read(reference).unwrap();
        assert_eq!(expect.len(), rays.len());
        let got = {
            let mut out = Vec::new();
            bvh.occluded_batch(rays, &mut out, BatchOptions { packets: false, ..Default::default() }).map(|_| out)
        }
        .expect("the shared rays are valid");
        // The same rays as a stream (packets of coherent rays) give the same answers.
        let mut streamed = Vec::new();
        bvh.occluded_batch(
            rays,
            &mut streamed,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .expect("the shared rays are valid");
        assert!(streamed == got, "{kind}: the stream's answers differ from single rays'");
        for (i, (&g, &e)) in got.iter().zip(&expect).enumerate() {
            if g == (e == 1) {
                tally.agree += 1;
            } else {
                tally.hit_miss += 1;
                if tally.hit_miss <= 5 {
                    println!("    ray {i}: occluded {g}, Embree {}", e == 1);
                }
            }
        }
        return tally;
    }
    let f = read_f32s(reference);
    assert_eq!(f.len(), rays.len() * 4);
    let got = {
        let mut out = Vec::new();
        bvh.intersect_batch(rays, &mut out, BatchOptions { packets: false, ..Default::default() }).map(|_| out)
    }
    .expect("the shared rays are valid");
    let mut streamed = Vec::new();
    bvh.intersect_batch(
        rays,
        &mut streamed,
        BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
    )
    .expect("the shared rays are valid");
    assert!(streamed == got, "{kind}: the stream's answers differ from single rays'");
    for (i, g) in got.iter().enumerate() {
        let (et, eprim) = (f[4 * i], f[4 * i + 1].to_bits() as i32);
        let ok = match (g, eprim >= 0) {
            (None, false) => true,
            (Some(h), true) => {
                let t_ok = ((h.t - et).abs() as f64) <= 1e-4 * et.abs() as f64;
                if !t_ok {
                    tally.t_off += 1;
                    false
                } else if h.triangle as i32 == eprim {
                    true
                } else if is_tie(mesh, h.triangle, eprim as u32, &rays[i], et) {
                    tally.ties += 1;
                    true
                } else {
                    tally.triangle += 1;
                    false
                }
            }
            _ => {
                tally.hit_miss += 1;
                false
            }
        };
        if ok {
            tally.agree += 1;
        } else if i + 1 - tally.agree <= 5 {
            println!("    ray {i}: ours {g:?}, Embree t {et} prim {eprim}");
        }
    }
    tally
}

#[test]
fn agrees_with_embree_on_every_shared_ray_set() {
    let dir = scenes_dir();
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir.join("rays"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rays"))
        .collect();
    sets.sort();
    assert!(!sets.is_empty(), "no .rays files in {}", dir.join("rays").display());
    if let Ok(only) = std::env::var("SLABTREE_ORACLE_SCENES") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        sets.retain(|p| only.iter().any(|s| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{s}."))));
        assert!(!sets.is_empty(), "SLABTREE_ORACLE_SCENES={only:?} names no ray set");
    }
    let mut failures = Vec::new();
    let mut current: Option<(String, TriMesh, Vec<MeshBvh>)> = None;
    for set in &sets {
        let stem = set.file_stem().unwrap().to_string_lossy().to_string();
        let (scene, kind) = stem.split_once('.').expect("<scene>.<kind>.rays");
        if current.as_ref().is_none_or(|c| c.0 != scene) {
            let mesh_path = ["obj", "ply"].iter().map(|e| dir.join(format!("{scene}.{e}"))).find(|p| p.exists());
            let mesh_path = mesh_path.unwrap_or_else(|| panic!("no mesh {scene}.obj or {scene}.ply beside rays/"));
            let mesh = slabtree::io::load_mesh(&mesh_path).unwrap_or_else(|e| panic!("{e}"));
            // Both tests, and the fast build's and the spatial splits' trees with each.
            let bvhs = [
                (TriangleTest::Watertight, BuildQuality::Medium),
                (TriangleTest::MollerTrumbore, BuildQuality::Medium),
                (TriangleTest::Watertight, BuildQuality::Low),
                (TriangleTest::Watertight, BuildQuality::High),
                (TriangleTest::MollerTrumbore, BuildQuality::High),
            ]
            .map(|(t, quality)| {
                MeshBvh::build(&mesh, &BuildOptions { triangle_test: t, quality, ..Default::default() })
            })
            .to_vec();
            println!(
                "{scene}: {} triangles, build {:?}, SIMD level {}",
                mesh.len(),
                bvhs[0].stats().build_time,
                slabtree::simd_level()
            );
            current = Some((scene.to_string(), mesh, bvhs));
        }
        let (_, mesh, bvhs) = current.as_ref().unwrap();
        let rays = load_rays(set);
        let reference = set.with_extension(if kind == "shadow" { "occluded" } else { "hits" });
        for bvh in bvhs {
            let t = compare_set(mesh, bvh, &rays, &reference, kind);
            let rate = t.agree as f64 / t.rays as f64;
            println!(
                "  {stem:<18} {:<14} {:<6} {:>6} rays  agree {:>9.5}%  (hit/miss {}, t {}, triangle {}; ties accepted {})",
                format!("{:?}", bvh.options().triangle_test),
                format!("{:?}", bvh.options().quality),
                t.rays,
                100.0 * rate,
                t.hit_miss,
                t.t_off,
                t.triangle,
                t.ties
            );
            if rate < 0.9999 {
                let options = bvh.options();
                failures.push(format!(
                    "{stem} {:?} {:?}: {:.5}%",
                    options.triangle_test,
                    options.quality,
                    100.0 * rate
                ));
            }
        }
    }
    assert!(failures.is_empty(), "below 99.99% agreement: {failures:?}");
}
