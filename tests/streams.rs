//! Ray streams (batches with `BatchOptions::packets`) against the single-ray path, the
//! oracle here: every answer must be exactly equal (same triangle, same bits of t, u, v and the
//! normal), in both triangle tests, on camera rays in scan-line order (regrouped into tiled
//! packets), shadow rays to one light, incoherent rays, rays through shared edges and vertices
//! (exact ties), grazing and degenerate rays, clipped ranges, mixed direction signs in one stream,
//! and streams of every length from 0 to 300.

use glam::{Vec3, Vec3A};
use slabtree::{BatchOptions, BuildOptions, BuildQuality, MeshBvh, Ray, Threads, TriMesh, TriangleTest};

use common::rng::{Rng, triangle_soup};
use slabtree_testkit as common;

/// A flat grid of unit squares in z = 0: rays through its vertices and edges meet exact ties.
fn grid(n: u32) -> TriMesh {
    let mut p = Vec::new();
    let mut t = Vec::new();
    for y in 0..=n {
        for x in 0..=n {
            p.push(Vec3::new(x as f32, y as f32, 0.0));
        }
    }
    for y in 0..n {
        for x in 0..n {
            let a = y * (n + 1) + x;
            t.push([a, a + 1, a + n + 2]);
            t.push([a, a + n + 2, a + n + 1]);
        }
    }
    TriMesh::new(p, t).unwrap()
}

/// The meshes of the tests, each in both triangle tests.
fn meshes() -> Vec<(&'static str, MeshBvh)> {
    let mut rng = Rng(0x57ea_0001);
    let inputs = [
        ("soup", triangle_soup(&mut rng, 3000, 10.0, 1.0)),
        ("sphere", TriMesh::uv_sphere(2.0, 48, 24)),
        ("grid", grid(16)),
        ("torus", TriMesh::torus(3.0, 1.0, 64, 32)),
    ];
    let mut out = Vec::new();
    for (name, mesh) in inputs {
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            out.push((name, MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() })));
        }
        // With spatial splits, whose leaves share triangles.
        let high = BuildOptions { quality: BuildQuality::High, ..Default::default() };
        out.push((name, MeshBvh::build(&mesh, &high)));
    }
    out
}

/// A hit's bits, normal included.
type Bits = Option<(u32, u32, u32, u32, [u32; 3])>;

fn bits(h: &Option<slabtree::Hit>) -> Bits {
    h.map(|h| (h.triangle, h.t.to_bits(), h.u.to_bits(), h.v.to_bits(), h.normal.to_array().map(f32::to_bits)))
}

/// Every answer of the stream equals the single ray's; returns the hits and occluded rays.
fn check(name: &str, bvh: &MeshBvh, rays: &[Ray]) -> (usize, usize) {
    let (mut hits, mut occluded) = (Vec::new(), Vec::new());
    bvh.intersect_batch(
        rays,
        &mut hits,
        BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
    )
    .unwrap();
    bvh.occluded_batch(
        rays,
        &mut occluded,
        BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
    )
    .unwrap();
    assert_eq!((hits.len(), occluded.len()), (rays.len(), rays.len()));
    for (i, ray) in rays.iter().enumerate() {
        let single = bvh.intersect(ray).unwrap();
        assert_eq!(bits(&hits[i]), bits(&single), "{name} {:?}: ray {i} {ray:?}", bvh.options().triangle_test);
        assert_eq!(occluded[i], bvh.occluded(ray).unwrap(), "{name}: ray {i} {ray:?}");
    }
    (hits.iter().flatten().count(), occluded.iter().filter(|&&o| o).count())
}

/// A `w`×`h` pinhole camera's rays in scan-line order, as a renderer or a ray file gives them.
fn camera(eye: Vec3, target: Vec3, w: u32, h: u32, fov: f32) -> Vec<Ray> {
    let f = (target - eye).normalize();
    let r = f.cross(Vec3::Y).normalize();
    let u = r.cross(f);
    let s = (fov / 2.0).tan();
    (0..w * h)
        .map(|i| {
            let px = ((i % w) as f32 + 0.5) / w as f32 * 2.0 - 1.0;
            let py = 1.0 - ((i / w) as f32 + 0.5) / h as f32 * 2.0;
            Ray::new(Vec3A::from(eye), Vec3A::from(f + r * px * s * w as f32 / h as f32 + u * py * s))
        })
        .collect()
}

#[test]
fn camera_rays_equal_single_rays() {
    for (name, bvh) in meshes() {
        let b = bvh.bounds().unwrap();
        let (c, d) = (Vec3::from(b.center()), (b.max - b.min).length());
        let mut seen = 0;
        for (k, dir) in
            [Vec3::new(0.3, 0.4, 1.0), Vec3::new(-1.0, 0.2, 0.1), Vec3::new(0.1, -1.0, -0.2)].iter().enumerate()
        {
            let eye = c + dir.normalize() * d * 1.2;
            // Views that put the model's centre at the image centre split the image into four
            // direction octants, and the 96-pixel rows cut windows of the stream mid-row.
            let rays = camera(eye, c, 96, 80, [1.0, 0.4, 1.6][k]);
            seen += check(name, &bvh, &rays).0;
        }
        // The grid is seen edge-on from one view: count the hits of all three.
        assert!(seen > 3 * 96 * 80 / 20, "{name}: too few hits to test anything ({seen})");
    }
}

#[test]
fn shadow_rays_to_one_light_equal_single_rays() {
    for (name, bvh) in meshes() {
        let b = bvh.bounds().unwrap();
        let (c, d) = (Vec3::from(b.center()), (b.max - b.min).length());
        let eye = c + Vec3::new(0.2, 0.5, 1.0).normalize() * d;
        let light = c + Vec3::new(-0.3, 1.0, 0.4) * d;
        let primary = camera(eye, c, 64, 64, 1.0);
        let mut hits = Vec::new();
        bvh.intersect_batch(
            &primary,
            &mut hits,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .unwrap();
        let shadow: Vec<Ray> = primary
            .iter()
            .zip(&hits)
            .filter_map(|(r, h)| {
                let h = h.as_ref()?;
                let p = Vec3::from(r.at(h.t)) + h.normal * 1e-4 * d * h.normal.dot(-Vec3::from(r.dir())).signum();
                Some(Ray::segment(p, light))
            })
            .collect();
        assert!(shadow.len() > 400, "{name}: {}", shadow.len());
        let (_, occluded) = check(name, &bvh, &shadow);
        // A flat grid cannot shadow itself; every other mesh shadows some of its points.
        assert!((occluded > 0 || name == "grid") && occluded < shadow.len(), "{name}: {occluded} of {}", shadow.len());
    }
}

#[test]
fn incoherent_and_mixed_rays_equal_single_rays() {
    let mut rng = Rng(0x57ea_0002);
    for (name, bvh) in meshes() {
        let b = bvh.bounds().unwrap();
        let (c, d) = (b.center(), (b.max - b.min).length());
        let mut rays = Vec::new();
        // Incoherent rays from a sphere around the model into it.
        for _ in 0..2000 {
            let o = c + rng.unit3a().normalize_or(Vec3A::X) * d - Vec3A::splat(0.5 * d);
            let p = b.min + (b.max - b.min) * rng.unit3a();
            rays.push(Ray::new(o, p - o));
        }
        // Coherent runs with every direction octant inside one window, interleaved.
        let eye = c + Vec3A::new(0.1, 0.2, 1.0) * d;
        for i in 0..3000 {
            let (x, y) = ((i % 50) as f32 / 25.0 - 1.0, (i / 50 % 60) as f32 / 30.0 - 1.0);
            rays.push(Ray::new(eye, c - eye + Vec3A::new(x, y, 0.0) * d * 0.4));
        }
        // Clipped ranges, rays starting inside, tmin = tmax.
        for i in 0..1500 {
            let o = c + (rng.unit3a() - Vec3A::splat(0.5)) * d * 0.3;
            let dir = Vec3A::new(0.3, 0.2, -1.0) + (rng.unit3a() - Vec3A::splat(0.5)) * 0.01;
            let (t0, t1) = (rng.range(0.0, 0.3 * d), rng.range(0.0, 2.0 * d));
            let ray = Ray::new(o, dir);
            rays.push(if i % 7 == 0 { ray.with_range(t0, t0) } else { ray.with_range(t0.min(t1), t0.max(t1)) });
        }
        check(name, &bvh, &rays);
    }
}

#[test]
fn ties_grazing_and_degenerate_rays_equal_single_rays() {
    let bvh = MeshBvh::build(&grid(16), &BuildOptions::default());
    let wt = MeshBvh::build(&grid(16), &BuildOptions { triangle_test: TriangleTest::Watertight, ..Default::default() });
    let mut rays = Vec::new();
    // Straight down through every vertex and edge midpoint: exact ties, coherent.
    for y in 0..=32 {
        for x in 0..=32 {
            rays.push(Ray::new(Vec3A::new(x as f32 * 0.5, y as f32 * 0.5, 5.0), Vec3A::new(0.0, 0.0, -1.0)));
            rays.push(Ray::new(Vec3A::new(x as f32 * 0.5, y as f32 * 0.5, 5.0), Vec3A::new(1e-7, 1e-7, -1.0)));
        }
    }
    // Grazing: in the plane of the grid, and just above and below it.
    for i in 0..400 {
        let z = [0.0f32, 1e-6, -1e-6, f32::MIN_POSITIVE][i % 4];
        rays.push(Ray::new(Vec3A::new(-1.0, i as f32 * 0.04, z), Vec3A::new(1.0, 0.001 * (i % 5) as f32, 0.0)));
    }
    // Zero direction components (which the packets leave to the single ray), a zero direction,
    // huge and tiny directions, far origins.
    for i in 0..300 {
        let p = Vec3A::new((i % 17) as f32, (i / 17) as f32, 3.0);
        rays.push(Ray::new(p, Vec3A::new(0.0, 0.0, -1.0)));
        rays.push(Ray::new(p, Vec3A::ZERO));
        rays.push(Ray::new(p, Vec3A::new(1e-30, 1e-30, -1e-30)));
        rays.push(Ray::new(p, Vec3A::new(0.1, 0.1, -1e30)));
        rays.push(Ray::new(p * 1e6, Vec3A::new(-1.0, -1.0, -1.0) - p));
    }
    check("grid", &bvh, &rays);
    check("grid", &wt, &rays);
}

#[test]
fn streams_of_every_length_equal_single_rays() {
    let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 24, 12), &BuildOptions::default());
    let rays = camera(Vec3::new(0.2, 0.3, 3.0), Vec3::ZERO, 20, 16, 0.9);
    for len in 0..=300 {
        check("sphere", &bvh, &rays[..len]);
    }
    // Nothing to hit: an empty mesh.
    let empty = MeshBvh::build(&TriMesh::default(), &BuildOptions::default());
    let (mut hits, mut occ) = (vec![None; 3], vec![true; 3]);
    empty
        .intersect_batch(
            &rays,
            &mut hits,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .unwrap();
    empty
        .occluded_batch(
            &rays,
            &mut occ,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .unwrap();
    assert!(hits.len() == rays.len() && hits.iter().all(Option::is_none));
    assert!(occ.len() == rays.len() && occ.iter().all(|&o| !o));
}

#[test]
fn an_invalid_ray_refuses_the_stream_and_names_it() {
    let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 24, 12), &BuildOptions::default());
    let mut rays = camera(Vec3::new(0.0, 0.0, 3.0), Vec3::ZERO, 16, 16, 0.9);
    rays[77] = Ray::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::Z);
    let (mut hits, mut occ) = (Vec::new(), Vec::new());
    assert_eq!(
        bvh.intersect_batch(
            &rays,
            &mut hits,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() }
        )
        .map_err(|e| e.index),
        Err(77)
    );
    assert_eq!(
        bvh.occluded_batch(
            &rays,
            &mut occ,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() }
        )
        .map_err(|e| e.index),
        Err(77)
    );
    rays[77] = Ray::new(Vec3A::ZERO, Vec3A::Z).with_range(2.0, 1.0);
    assert_eq!(
        bvh.intersect_batch(
            &rays,
            &mut hits,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() }
        )
        .map_err(|e| e.index),
        Err(77)
    );
}

/// A mesh finer than the rays' spacing (a 590k-triangle sphere seen by 128 × 128 camera rays), where
/// each leaf is entered by about one ray of a packet, where packets gain nothing and the stream's
/// probes may send windows to single rays, and subtrees deep in the tree go to single rays too:
/// every answer is still the single ray's, and so are those of a coarse mesh seen by the same
/// rays, where packets gain.
#[test]
fn finer_than_the_rays_and_coarser_equal_single_rays() {
    for mesh in [TriMesh::uv_sphere(1.0, 768, 384), TriMesh::uv_sphere(1.0, 16, 8)] {
        for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
            let rays = camera(Vec3::new(0.3, 0.2, 2.5), Vec3::ZERO, 128, 128, 0.9);
            let (hits, occluded) = check("fine sphere", &bvh, &rays);
            assert!(hits > 4000 && occluded == hits, "{hits} {occluded}");
        }
    }
}

/// Exact ties seen from the origin, where the fused node test's widening is tiny: a fine grid in
/// the plane z = 0.7 with exact coordinates, so that every triangle has the same normal and every
/// hit the same `t` bit for bit, and rays through every fourth vertex (where Möller–Trumbore may
/// also let a ray through) and just beside them. The grid is fine against the rays, so that
/// subtrees near the leaves are walked by single rays of the packets.
#[test]
fn ties_seen_from_the_origin_equal_single_rays() {
    let n = 256u32;
    let mut p = Vec::new();
    let mut t = Vec::new();
    // Exact coordinates, so that every triangle has the same normal and every hit the same `t`.
    let at = |i: u32| i as f32 / 512.0 - 0.25;
    for y in 0..=n {
        for x in 0..=n {
            p.push(Vec3::new(at(x), at(y), 0.7));
        }
    }
    for y in 0..n {
        for x in 0..n {
            let a = y * (n + 1) + x;
            t.push([a, a + 1, a + n + 2]);
            t.push([a, a + n + 2, a + n + 1]);
        }
    }
    let mesh = TriMesh::new(p, t).unwrap();
    // Through every fourth vertex, in scan lines, and through points a little off the vertices.
    let mut rays = Vec::new();
    for y in (0..=n).step_by(4) {
        for x in (0..=n).step_by(4) {
            rays.push(Ray::new(Vec3A::ZERO, Vec3A::new(at(x), at(y), 0.7)));
        }
    }
    for y in (0..=n).step_by(4) {
        for x in (0..=n).step_by(4) {
            rays.push(Ray::new(Vec3A::ZERO, Vec3A::new(at(x) + 1e-7, at(y) - 1e-7, 0.7)));
        }
    }
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
        let (hits, _) = check("grid seen from the origin", &bvh, &rays);
        assert!(hits > rays.len() * 3 / 4, "{hits} of {}", rays.len());
    }
}

/// Camera rays whose range ends at their own hit, and at a few roundings either side of it: there
/// the triangle test's range check decides, by rounding, whether the hit is in range, and the
/// stream must decide exactly as the single ray does.
#[test]
fn ranges_ending_at_the_hit_equal_single_rays() {
    for (name, bvh) in meshes() {
        let b = bvh.bounds().unwrap();
        let (c, d) = (Vec3::from(b.center()), (b.max - b.min).length());
        let eye = c + Vec3::new(0.3, 0.4, 1.0).normalize() * d * 1.2;
        let mut rays = Vec::new();
        for ray in camera(eye, c, 48, 40, 1.0) {
            let Some(h) = bvh.intersect(&ray).unwrap() else { continue };
            let (mut below, mut above) = (h.t, h.t);
            rays.push(ray.with_range(0.0, h.t));
            for _ in 0..4 {
                (below, above) = (below.next_down(), above.next_up());
                rays.push(ray.with_range(0.0, below));
                rays.push(ray.with_range(0.0, above));
            }
        }
        let (hits, _) = check(name, &bvh, &rays);
        assert!(hits > 0 && hits < rays.len(), "{name}: ranges on both sides of the hits ({hits} of {})", rays.len());
    }
}
