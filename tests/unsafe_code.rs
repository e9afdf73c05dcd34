//! The library's `unsafe` code outside the SIMD lanes, at sizes Miri can run (`docs/robustness.md`,
//! "Miri"): the mesh BVH's block array (`mesh/layout.rs`, on `pages.rs`'s allocations), built on
//! two threads (`par.rs`, `build/segments.rs`) and walked by single rays, batches and streams
//! (`mesh/interleave.rs`, `mesh/stream`); saved BVHs read back, whole, truncated and damaged
//! (`mesh/saved.rs`, `PagedSlice::from_bytes`); the dynamic tree's arena through inserts,
//! removals, moves, optimisation and rebuilds; and the broad phase on top of it. Each answer is
//! checked against brute force, so the file is an ordinary test as well:
//!
//! ```text
//! RUSTFLAGS="" MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-ignore-leaks" \
//!     cargo +nightly miri test -p slabtree --test unsafe_code
//! ```
//!
//! (Tree Borrows: rayon's `crossbeam-epoch` breaks the older Stacked Borrows rules; rayon's pool
//! threads outlive the tests, which is not a leak of ours.)

use glam::{DVec3, Vec3, Vec3A};
use slabtree::{
    Aabb, BatchOptions, BodyKind, BroadPhase, BroadPhaseConfig, BuildOptions, BuildQuality, Dbvt, DbvtConfig, Hit,
    LeafControl, MeshBvh, QueryWorkspace, Ray, Threads, TriMesh, TriangleTest,
};

use common::rng::Rng;
use common::triangle::{margin, mt64};
use slabtree_testkit as common;

/// Two threads, so that the parallel build paths and the pool's batches run.
fn on_two_threads<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap().install(f)
}

fn rays(r: &mut Rng, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|_| {
            let o = r.direction() * 3.0;
            Ray::new(o, r.unit3() - Vec3::splat(0.5) - o)
        })
        .collect()
}

/// The closest hit by f64 brute force, or `None` when a triangle within rounding of its edge
/// (1e-4 in barycentric terms) is as near as the nearest clear hit, since either answer is right
/// there: `Some(None)` for a clear miss.
fn brute(mesh: &TriMesh, ray: &Ray) -> Option<Option<(u32, f64)>> {
    let (o, d) = (Vec3::from(ray.origin()).as_dvec3(), Vec3::from(ray.dir()).as_dvec3());
    let (mut clear, mut near_edge): (Option<(u32, f64)>, f64) = (None, f64::INFINITY);
    for i in 0..mesh.len() {
        let tri = mesh.triangle(i).map(|v| v.as_dvec3());
        let Some((t, u, v)) = mt64(o, d, tri) else { continue };
        let m = margin(u, v);
        if t < 0.0 || m < -1e-4 {
            continue;
        }
        if m < 1e-4 {
            near_edge = near_edge.min(t);
        } else if clear.is_none_or(|c| t < c.1) {
            clear = Some((i as u32, t));
        }
    }
    if near_edge <= clear.map_or(f64::INFINITY, |c| c.1) * (1.0 + 1e-6) && near_edge.is_finite() {
        return None;
    }
    Some(clear)
}

fn assert_hit(got: Option<Hit>, expected: Option<(u32, f64)>, what: &str) {
    match (got, expected) {
        (None, None) => {}
        (Some(h), Some((_, t))) => assert!((h.t as f64 - t).abs() <= 1e-4 * t, "{what}: t {} against {t}", h.t),
        _ => panic!("{what}: {got:?} against brute force {expected:?}"),
    }
}

fn mesh() -> TriMesh {
    // A sphere and a box inside it, in one mesh: big enough for several nodes and leaves.
    let sphere = if cfg!(miri) { TriMesh::uv_sphere(1.0, 8, 4) } else { TriMesh::uv_sphere(1.0, 24, 12) };
    let cube = TriMesh::cuboid(Vec3::splat(0.4));
    let mut positions = sphere.positions().to_vec();
    let k = positions.len() as u32;
    positions.extend_from_slice(cube.positions());
    let mut triangles = sphere.triangles().to_vec();
    triangles.extend(cube.triangles().iter().map(|t| t.map(|i| i + k)));
    TriMesh::new(positions, triangles).unwrap()
}

#[test]
fn mesh_bvh_blocks_walked_every_way() {
    let mesh = mesh();
    let mut r = Rng(7);
    let rays = rays(&mut r, if cfg!(miri) { 6 } else { 200 });
    for quality in [BuildQuality::Low, BuildQuality::Medium, BuildQuality::High] {
        for triangle_test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
            // Under Miri, one triangle test per quality, each test twice in all.
            if cfg!(miri) && (quality == BuildQuality::Medium) != (triangle_test == TriangleTest::Watertight) {
                continue;
            }
            let options = BuildOptions { quality, triangle_test, parallel_threshold: 16, ..Default::default() };
            let bvh = on_two_threads(|| MeshBvh::build(&mesh, &options));
            let what = format!("{quality:?} {triangle_test:?}");
            let mut batches = Vec::new();
            for (threads, packets) in [(Threads::Calling, false), (Threads::Calling, true), (Threads::Pool, false)] {
                let mut out = Vec::new();
                on_two_threads(|| {
                    bvh.intersect_batch(&rays, &mut out, BatchOptions { threads, packets, ..Default::default() })
                })
                .unwrap();
                batches.push(out);
            }
            for (i, ray) in rays.iter().enumerate() {
                let got = bvh.intersect(ray).unwrap();
                assert_eq!(bvh.occluded(ray).unwrap(), got.is_some(), "{what}: any hit");
                for batch in &batches {
                    assert_eq!(batch[i], got, "{what}: a batch against the single ray");
                }
                if let Some(expected) = brute(&mesh, ray) {
                    assert_hit(got, expected, &what);
                }
            }
            // The leaf walks of the other queries read the same blocks.
            let mut found = Vec::new();
            let b = Aabb::new(Vec3A::splat(-0.5), Vec3A::splat(0.1));
            bvh.triangles_in_box(&b, &mut found).unwrap();
            found.sort_unstable();
            found.dedup();
            assert!(!found.is_empty() && found.iter().all(|&t| (t as usize) < mesh.len()));
            let near = bvh.closest_point(Vec3::new(0.1, 0.05, 0.0), 10.0).unwrap().unwrap();
            let brute_near = (0..mesh.len())
                .map(|i| {
                    common::triangle::triangle_distance(
                        DVec3::new(0.1, 0.05, 0.0),
                        mesh.triangle(i).map(|v| v.as_dvec3()),
                    )
                })
                .fold(f64::INFINITY, f64::min);
            assert!((near.distance as f64 - brute_near).abs() < 1e-5, "{what}: closest point");
        }
    }
}

#[test]
fn saved_bvhs_read_back_whole_and_refuse_damage() {
    let mesh = mesh();
    let mut r = Rng(9);
    let rays = rays(&mut r, if cfg!(miri) { 4 } else { 100 });
    for quality in [BuildQuality::Medium, BuildQuality::High] {
        let bvh = MeshBvh::build(&mesh, &BuildOptions { quality, ..Default::default() });
        let bytes = bvh.to_bytes();
        for read in [MeshBvh::from_bytes(&bytes).unwrap(), MeshBvh::from_untrusted_bytes(&bytes).unwrap()] {
            assert!(read.to_bytes() == bytes, "{quality:?}: a round trip gives the same bytes");
            for ray in &rays {
                assert_eq!(read.intersect(ray).unwrap(), bvh.intersect(ray).unwrap());
            }
        }
        // Truncations and damaged bytes, spread over the header, the tree and the mesh.
        let step = if cfg!(miri) { bytes.len() / 4 } else { 7 };
        for cut in (0..bytes.len()).step_by(step.max(1)) {
            assert!(MeshBvh::from_bytes(&bytes[..cut]).is_err(), "{quality:?}: cut at {cut} was read");
            let mut damaged = bytes.clone();
            damaged[cut] ^= 0x5a;
            assert!(MeshBvh::from_bytes(&damaged).is_err(), "{quality:?}: damage at {cut} was read");
            assert!(MeshBvh::from_untrusted_bytes(&damaged).is_err(), "{quality:?}: damage at {cut} was read");
        }
    }
}

#[test]
fn dynamic_tree_arena_through_churn() {
    let mut r = Rng(11);
    let mut tree: Dbvt<u32> = Dbvt::new();
    let mut live: Vec<(slabtree::ProxyId, Aabb)> = Vec::new();
    let boxed = |c: Vec3A| Aabb::new(c - Vec3A::splat(0.05), c + Vec3A::splat(0.05));
    let steps = if cfg!(miri) { 120 } else { 3000 };
    let mut ws = QueryWorkspace::new();
    for step in 0..steps {
        match r.below(8) {
            0..=3 => {
                let b = boxed(r.in_cube(1.0));
                live.push((tree.insert(b, step).unwrap(), b));
            }
            4 if !live.is_empty() => {
                let (id, _) = live.swap_remove(r.below(live.len()));
                tree.remove(id).unwrap();
            }
            5 if !live.is_empty() => {
                let k = r.below(live.len());
                let b = boxed(r.in_cube(1.0));
                tree.move_proxy(live[k].0, b, Vec3A::ZERO).unwrap();
                live[k].1 = b;
            }
            6 => {
                tree.optimize_incremental(4);
            }
            _ if step % 40 == 0 => tree.rebuild(),
            _ => {}
        }
        if step % 10 == 0 {
            tree.validate().unwrap();
            let q = boxed(r.in_cube(1.0));
            let mut got = Vec::new();
            tree.overlap(&q, &mut ws, &mut |id: slabtree::ProxyId, _: &u32| {
                got.push(id);
                LeafControl::Continue
            })
            .unwrap();
            // Stored boxes are fattened, so they hold every tight box that overlaps.
            for (id, b) in &live {
                if b.overlaps(&q) {
                    assert!(got.contains(id), "step {step}: overlap missed {id:?}");
                }
            }
        }
    }
}

#[test]
fn broad_phase_pairs_equal_brute_force() {
    let mut r = Rng(13);
    // No margin: the stored boxes are the tight ones, which brute force pairs.
    let tree = DbvtConfig { margin: 0.0, prediction: 0.0, ..Default::default() };
    let mut phase: BroadPhase<u32> = BroadPhase::with_config(BroadPhaseConfig { tree, ..Default::default() });
    let n = if cfg!(miri) { 24 } else { 300 };
    let boxed = |c: Vec3A| Aabb::new(c - Vec3A::splat(0.1), c + Vec3A::splat(0.1));
    let mut objects = Vec::new();
    for i in 0..n {
        let b = boxed(r.in_cube(1.0));
        let kind = if i % 4 == 0 { BodyKind::Static } else { BodyKind::Dynamic };
        objects.push((phase.add(b, kind, i as u32).unwrap(), b, kind));
    }
    for frame in 0..3 {
        for k in (frame..objects.len()).step_by(3) {
            let b = boxed(r.in_cube(1.0));
            phase.move_object(objects[k].0, b, Vec3A::ZERO).unwrap();
            objects[k].1 = b;
        }
        phase.update_pairs();
        let mut expected = Vec::new();
        for (i, a) in objects.iter().enumerate() {
            for b in &objects[i + 1..] {
                let either_dynamic = a.2 == BodyKind::Dynamic || b.2 == BodyKind::Dynamic;
                if either_dynamic && a.1.overlaps(&b.1) {
                    expected.push(if a.0 < b.0 { (a.0, b.0) } else { (b.0, a.0) });
                }
            }
        }
        expected.sort_unstable();
        let mut got: Vec<_> = phase.pairs().collect();
        got.sort_unstable();
        assert_eq!(got, expected, "frame {frame}");
    }
}
