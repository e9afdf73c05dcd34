//! Watertightness on closed meshes: an icosphere, a torus and a subdivided cube, each with shared
//! vertices. Rays start strictly inside the closed surface and are aimed exactly at vertices, at
//! edge midpoints and at random points of edges, so every ray must hit the mesh; a ray that hits
//! nothing passed through a crack between triangles.
//!
//! * Watertight mode (`TriangleTest::Watertight`): the count must be 0.
//! * Fast mode (Möller–Trumbore): the rate is reported, not asserted.
//!
//! The default `cargo test` runs 300k rays (100k per mesh). With the `soak` feature it runs the
//! full 10 million (`cargo test --release --features soak --test watertight -- --nocapture`,
//! about a minute on 2 cores); `SLABTREE_WATERTIGHT_RAYS` overrides the total.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use glam::{Vec3, Vec3A};
use rayon::prelude::*;
use slabtree::{BuildOptions, BuildQuality, MeshBvh, Ray, TriMesh, TriangleTest};

// Rays are keyed by their index through SplitMix64's mix, so they are the same whatever the
// thread count.
use slabtree_testkit::rng::{Rng, mix};

pub fn icosphere(r: f32, subdivisions: u32) -> TriMesh {
    let t = (1.0 + 5f32.sqrt()) / 2.0;
    let mut p: Vec<Vec3> = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ]
    .iter()
    .map(|a| Vec3::from_array(*a).normalize() * r)
    .collect();
    let mut f: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        let mut mid = std::collections::HashMap::new();
        let mut m = |a: u32, b: u32, p: &mut Vec<Vec3>| {
            *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                p.push(((p[a as usize] + p[b as usize]) * 0.5).normalize() * r);
                p.len() as u32 - 1
            })
        };
        let mut g = Vec::with_capacity(f.len() * 4);
        for [a, b, c] in f {
            let (ab, bc, ca) = (m(a, b, &mut p), m(b, c, &mut p), m(c, a, &mut p));
            g.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        f = g;
    }
    TriMesh::new(p, f).unwrap()
}

/// The cube [-h, h]^3 with each face cut into n×n quads (two triangles each), vertices shared
/// along the cube's edges. Grid points are exact multiples of h/n.
pub fn subdivided_cube(h: f32, n: i32) -> TriMesh {
    let mut index = std::collections::HashMap::new();
    let mut p = Vec::new();
    let mut vid = |g: [i32; 3], p: &mut Vec<Vec3>| {
        *index.entry(g).or_insert_with(|| {
            p.push(Vec3::new(g[0] as f32, g[1] as f32, g[2] as f32) * (2.0 * h / n as f32) - Vec3::splat(h));
            p.len() as u32 - 1
        })
    };
    let mut t = Vec::new();
    for axis in 0..3 {
        for side in [0, n] {
            let (ua, va) = ((axis + 1) % 3, (axis + 2) % 3);
            for i in 0..n {
                for j in 0..n {
                    let g = |di: i32, dj: i32| {
                        let mut g = [0; 3];
                        g[axis] = side;
                        g[ua] = i + di;
                        g[va] = j + dj;
                        g
                    };
                    let (a, b, c, d) =
                        (vid(g(0, 0), &mut p), vid(g(1, 0), &mut p), vid(g(1, 1), &mut p), vid(g(0, 1), &mut p));
                    if side == 0 {
                        t.extend([[a, c, b], [a, d, c]]);
                    } else {
                        t.extend([[a, b, c], [a, c, d]]);
                    }
                }
            }
        }
    }
    TriMesh::new(p, t).unwrap()
}

/// A target on the mesh: a vertex, an edge midpoint, or a random point of an edge.
fn target(mesh: &TriMesh, r: &mut Rng) -> Vec3 {
    let tri = mesh.triangles()[(mix(r.0 ^ 0x5555) % mesh.len() as u64) as usize];
    let h = r.next();
    let [a, b, c] = tri.map(|i| mesh.positions()[i as usize]);
    let (e0, e1) = [(a, b), (b, c), (c, a)][(h % 3) as usize];
    match (h >> 8) % 3 {
        0 => e0,
        1 => (e0 + e1) * 0.5,
        _ => e0 + (e1 - e0) * r.unit(),
    }
}

struct Shape {
    name: &'static str,
    mesh: TriMesh,
    /// A random point strictly inside the closed surface, near the target.
    inside: fn(&mut Rng, Vec3) -> Vec3,
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "icosphere (r 1, 5 subdivisions)",
            mesh: icosphere(1.0, 5),
            inside: |r, _| {
                // Uniform in the ball of radius 0.9 (inside the inscribed polyhedron).
                loop {
                    let p = r.unit3() * 2.0 - Vec3::ONE;
                    if p.length_squared() <= 1.0 {
                        return p * 0.9;
                    }
                }
            },
        },
        Shape {
            name: "torus (2, 0.7, 128×64)",
            mesh: TriMesh::torus(2.0, 0.7, 128, 64),
            inside: |r, t| {
                let ang = t.z.atan2(t.x);
                Vec3::new(2.0 * ang.cos(), 0.0, 2.0 * ang.sin()) + (r.unit3() - Vec3::splat(0.5)) * 0.6
            },
        },
        Shape {
            name: "cube (±1, 32×32 per face)",
            mesh: subdivided_cube(1.0, 32),
            inside: |r, _| (r.unit3() * 2.0 - Vec3::ONE) * 0.95,
        },
    ]
}

#[test]
fn rays_at_vertices_and_edges_never_leak_in_watertight_mode() {
    let default = if cfg!(feature = "soak") { 10_000_000 } else { 300_000 };
    let total: u64 = std::env::var("SLABTREE_WATERTIGHT_RAYS").ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let shapes = shapes();
    let per = total / shapes.len() as u64;
    let mut all_wt = 0;
    for (k, s) in shapes.iter().enumerate() {
        let start = Instant::now();
        let wt =
            MeshBvh::build(&s.mesh, &BuildOptions { triangle_test: TriangleTest::Watertight, ..Default::default() });
        let mt = MeshBvh::build(&s.mesh, &BuildOptions::default());
        // With spatial splits: boxes of triangles' parts, clipped at planes.
        let high =
            BuildOptions { triangle_test: TriangleTest::Watertight, quality: BuildQuality::High, ..Default::default() };
        let wt_high = MeshBvh::build(&s.mesh, &high);
        let (leak_wt, leak_wt_any, leak_mt) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let leak_high = AtomicU64::new(0);
        let example = std::sync::Mutex::new(None);
        (0..per as usize).into_par_iter().with_min_len(4096).for_each(|i| {
            let i = i as u64;
            let mut r = Rng(mix(i ^ ((k as u64 + 1) << 48)));
            let t = target(&s.mesh, &mut r);
            let o = (s.inside)(&mut r, t);
            let ray = Ray::new(Vec3A::from(o), Vec3A::from(t - o));
            if wt.intersect(&ray).unwrap().is_none() {
                leak_wt.fetch_add(1, Ordering::Relaxed);
                example.lock().unwrap().get_or_insert((o, t));
            }
            if !wt.occluded(&ray).unwrap() {
                leak_wt_any.fetch_add(1, Ordering::Relaxed);
            }
            if wt_high.intersect(&ray).unwrap().is_none() {
                leak_high.fetch_add(1, Ordering::Relaxed);
            }
            if mt.intersect(&ray).unwrap().is_none() {
                leak_mt.fetch_add(1, Ordering::Relaxed);
            }
        });
        let (w, wa, m) = (leak_wt.into_inner(), leak_wt_any.into_inner(), leak_mt.into_inner());
        let wh = leak_high.into_inner();
        println!(
            "{:<34} {} tris, {per} rays: watertight leaks {w} (any-hit {wa}, spatial splits {wh}); Möller–Trumbore leaks {m} ({:.4}%), {:.1} s",
            s.name,
            s.mesh.len(),
            m as f64 * 100.0 / per as f64,
            start.elapsed().as_secs_f64()
        );
        if let Some((o, t)) = *example.lock().unwrap() {
            println!("  first watertight leak: origin {o:?} target {t:?}");
        }
        all_wt += w + wa + wh;
    }
    assert_eq!(all_wt, 0, "rays passed through a closed mesh in watertight mode");
}
