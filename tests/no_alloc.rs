//! Queries allocate nothing once their scratch has grown (as Box2D's): a counting global
//! allocator watches the queries of the mesh BVH, the dynamic tree and the scene (rays, ray
//! streams, hit policies and all hits, closest points and triangle overlaps, sphere and capsule casts, box casts and sweeps, overlap, frustum and pairs callbacks) after one warm-up round. Queries that return a collection (`overlap`,
//! `visible`) allocate their result and are not checked; `visible_into`, which fills the caller's vector, is.
//!
//! The count is per thread, so rayon's or the test harness's other threads do not disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use glam::{Affine3A, Quat, Vec3, Vec3A};
use slabtree::{
    Aabb, BatchOptions, BuildOptions, Dbvt, Frustum, HitCandidate, HitControl, LeafControl, MeshBvh, PairControl,
    ProxyId, QueryWorkspace, Ray, RayOptions, Scene, SceneHitCandidate, Threads, TriMesh,
};

use common::rng::Rng;
use slabtree_testkit as common;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a plain thread-local cell.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Allocations made on this thread while `f` runs.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Rays from outside a cube of side `side` through random points inside it, in packets of 8
/// sharing an origin (coherent enough that several rays meet the same instances).
fn packets(rng: &mut Rng, side: f32, n: usize) -> Vec<[Ray; 8]> {
    (0..n)
        .map(|_| {
            let o = Vec3A::new(-side, rng.range(0.0, side), rng.range(0.0, side));
            std::array::from_fn(|_| {
                let target = Vec3A::new(rng.range(0.0, side), rng.range(0.0, side), rng.range(0.0, side));
                Ray::new(o, (target - o).normalize())
            })
        })
        .collect()
}

#[test]
fn ray_queries_allocate_nothing_once_warm() {
    let mut rng = Rng(5);
    let meshes: Vec<Arc<MeshBvh>> = [TriMesh::uv_sphere(0.5, 16, 8), TriMesh::torus(0.4, 0.15, 16, 8)]
        .iter()
        .map(|m| Arc::new(MeshBvh::build(m, &BuildOptions::default())))
        .collect();
    let side = 12.0;
    let mut scene = Scene::new();
    let mut tree = Dbvt::new();
    for i in 0..300 {
        let p = Vec3::new(rng.range(0.0, side), rng.range(0.0, side), rng.range(0.0, side));
        let t = Affine3A::from_rotation_translation(Quat::from_rotation_y(rng.range(0.0, 6.0)), p);
        scene.add(meshes[i % 2].clone(), t, i as u64, slabtree::Scene::ALL).unwrap();
        tree.insert(Aabb::from_center_half_extents(Vec3A::from(p), Vec3A::splat(0.5)), i).unwrap();
    }
    let rays = packets(&mut rng, side, 64);
    let mut ws = QueryWorkspace::new();
    let mut hits = 0usize;
    let mut visible = Vec::new();
    // The packets' rays as one stream, and the stream queries' answers, which keep their room.
    // Camera rays in scan-line order follow, which the streams trace as packets.
    let eye = Vec3A::new(-side, side / 2.0, side / 2.0);
    let camera = (0..48 * 48).map(|i| {
        let (x, y) = ((i % 48) as f32 / 48.0 - 0.5, (i / 48) as f32 / 48.0 - 0.5);
        Ray::new(eye, Vec3A::new(1.0, y, x))
    });
    let stream: Vec<Ray> = rays.iter().flatten().copied().chain(camera).collect();
    let (mut stream_hits, mut stream_occluded) = (Vec::new(), Vec::new());
    let (mut batch_hits, mut batch_occluded) = (Vec::new(), Vec::new());
    let (mut scene_hits, mut scene_occluded) = (Vec::new(), Vec::new());
    let (mut all_hits, mut scene_all_hits) = (Vec::new(), Vec::new());
    let mut near_triangles = Vec::with_capacity(4096);
    let mut tree_hits = Vec::new();
    let mut round = |count: &mut usize| {
        // The dynamic tree's rays in flight together.
        tree.intersect_batch(&stream, &mut ws, &mut tree_hits).unwrap();
        *count += tree_hits.iter().flatten().count();
        // Batches on rayon's threads, into vectors that keep their room.
        meshes[0]
            .intersect_batch(&stream, &mut batch_hits, BatchOptions { packets: false, ..Default::default() })
            .unwrap();
        meshes[1]
            .occluded_batch(&stream, &mut batch_occluded, BatchOptions { packets: false, ..Default::default() })
            .unwrap();
        *count += batch_hits.iter().flatten().count() + batch_occluded.iter().filter(|&&o| o).count();
        meshes[0]
            .intersect_batch(
                &stream,
                &mut stream_hits,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        meshes[1]
            .occluded_batch(
                &stream,
                &mut stream_occluded,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        *count += stream_hits.iter().flatten().count() + stream_occluded.iter().filter(|&&o| o).count();
        scene
            .intersect_batch(
                &stream,
                Scene::ALL,
                &mut scene_hits,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        scene
            .occluded_batch(
                &stream,
                Scene::ALL,
                &mut scene_occluded,
                BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
            )
            .unwrap();
        *count += scene_hits.iter().flatten().count() + scene_occluded.iter().filter(|&&o| o).count();
        for pk in &rays {
            for r in pk {
                *count += scene.intersect(r, slabtree::Scene::ALL).unwrap().is_some() as usize;
                *count += scene.occluded(r, slabtree::Scene::ALL).unwrap() as usize;
                *count += meshes[0].intersect(r).unwrap().is_some() as usize;
                *count += meshes[1].occluded(r).unwrap() as usize;
                // A policy, and all hits into the caller's vector.
                let mut odd_only =
                    |c: &HitCandidate| if c.triangle % 2 == 1 { HitControl::Accept } else { HitControl::Ignore };
                *count += meshes[0].intersect_with(r, &mut odd_only, RayOptions::default()).unwrap().is_some() as usize;
                *count += meshes[1].occluded_with(r, &mut odd_only, RayOptions::default()).unwrap() as usize;
                meshes[1].intersect_all(r, &mut all_hits).unwrap();
                *count += all_hits.len();
                let mut even_users = |c: &SceneHitCandidate| {
                    if c.user_id.is_multiple_of(2) { HitControl::Accept } else { HitControl::Ignore }
                };
                *count += scene.intersect_with(r, Scene::ALL, &mut even_users).unwrap().is_some() as usize;
                *count += scene.occluded_with(r, Scene::ALL, &mut even_users).unwrap() as usize;
                scene.intersect_all(r, Scene::ALL, &mut scene_all_hits).unwrap();
                *count += scene_all_hits.len();
                let p = Vec3::from(r.origin());
                *count += scene.closest_point(p, f32::INFINITY, Scene::ALL).unwrap().is_some() as usize;
                near_triangles.clear();
                let probe = Aabb::from_center_half_extents(r.origin() + r.dir() * 5.0, Vec3A::splat(1.0));
                scene.triangles_in_box(&probe, Scene::ALL, &mut near_triangles).unwrap();
                scene.triangles_in_sphere(p + Vec3::from(r.dir()) * 5.0, 1.0, Scene::ALL, &mut near_triangles).unwrap();
                *count += near_triangles.len();
                let step = Vec3::from(r.dir()) * 6.0;
                *count += meshes[0].cast_sphere(p, 0.3, step).unwrap().is_some() as usize;
                *count += meshes[1].cast_capsule(p, p + Vec3::Y, 0.3, step).unwrap().is_some() as usize;
                *count += scene.cast_sphere(p, 0.3, step, Scene::ALL).unwrap().is_some() as usize;
                *count += scene.cast_capsule(p, p + Vec3::Y, 0.3, step, Scene::ALL).unwrap().is_some() as usize;
                *count += tree.intersect(r, &mut ws).unwrap().is_some() as usize;
            }
            let probe = Aabb::from_center_half_extents(pk[0].origin() + pk[0].dir() * side, Vec3A::splat(0.3));
            *count += tree.cast_box(&probe, pk[1].dir() * side, &mut ws).unwrap().is_some() as usize;
            *count += scene.cast_box(&probe, pk[1].dir() * side, Scene::ALL).unwrap().is_some() as usize;
            let mut touch = |_: ProxyId, _: &usize| {
                *count += 1;
                LeafControl::Continue
            };
            tree.overlap(
                &probe.union(&Aabb::from_center_half_extents(probe.center() + Vec3A::splat(2.0), Vec3A::ONE)),
                &mut ws,
                &mut touch,
            )
            .unwrap();
            let eye = pk[2].origin();
            let view = glam::camera::rh::view::look_at_mat4(eye.into(), (eye + pk[2].dir()).into(), Vec3::Y);
            let frustum =
                Frustum::from_view_projection(glam::camera::rh::proj::directx::perspective(0.8, 1.0, 0.1, side) * view);
            tree.frustum(&frustum, &mut ws, &mut touch).unwrap();
            scene.visible_into(&frustum, u32::MAX, &mut visible).unwrap();
            *count += visible.len();
        }
        tree.self_pairs(&mut ws, |_, _, _, _| {
            *count += 1;
            PairControl::Continue
        })
        .unwrap();
    };
    // Warm-up: the scratch grows and the scene makes its 8-wide copy of the instance tree.
    let warm = allocations(|| round(&mut hits));
    assert!(warm > 0, "the counter sees the warm-up's allocations");
    assert!(hits > 0, "the rays meet the instances");
    let after = allocations(|| round(&mut hits));
    assert_eq!(after, 0, "warm ray queries allocated {after} times");
}

/// Through a BVH of `LARGE_BVH_BYTES` or more, the streams trace their incoherent runs with rays
/// in flight, whose walks (a stack each) are kept per thread: a warm stream allocates nothing
/// there either.
#[test]
fn streams_through_a_large_bvh_allocate_nothing_once_warm() {
    let mut rng = Rng(11);
    // Small triangles in a unit cube, enough of them for a large BVH.
    let n = 700_000u32;
    let positions: Vec<Vec3> = (0..n)
        .flat_map(|_| {
            let c = Vec3::new(rng.range(0.0, 1.0), rng.range(0.0, 1.0), rng.range(0.0, 1.0));
            [c, c + Vec3::new(0.004, 0.0, 0.0), c + Vec3::new(0.0, 0.004, 0.002)]
        })
        .collect();
    let triangles = (0..n).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect();
    let bvh = MeshBvh::build(&TriMesh::new(positions, triangles).unwrap(), &BuildOptions::default());
    assert!(bvh.bvh_bytes() >= slabtree::mesh::LARGE_BVH_BYTES, "{} bytes", bvh.bvh_bytes());
    // Random rays: incoherent runs, which go in flight.
    let rays: Vec<Ray> = (0..2048)
        .map(|_| {
            let o = Vec3A::new(rng.range(-1.0, 2.0), rng.range(-1.0, 2.0), -1.0);
            let target = Vec3A::new(rng.range(0.0, 1.0), rng.range(0.0, 1.0), rng.range(0.0, 1.0));
            Ray::new(o, target - o)
        })
        .collect();
    let (mut hits, mut occluded) = (Vec::new(), Vec::new());
    let mut count = 0usize;
    let mut round = |count: &mut usize| {
        bvh.intersect_batch(
            &rays,
            &mut hits,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .unwrap();
        bvh.occluded_batch(
            &rays,
            &mut occluded,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        )
        .unwrap();
        *count += hits.iter().flatten().count() + occluded.iter().filter(|&&o| o).count();
    };
    let warm = allocations(|| round(&mut count));
    assert!(warm > 0, "the counter sees the warm-up's allocations");
    assert!(count > 0, "the rays hit the triangles");
    let after = allocations(|| round(&mut count));
    assert_eq!(after, 0, "warm streams through a large BVH allocated {after} times");
}

/// A broad phase's frame (a batch of moves, a removal and an add, filter and kind changes, and
/// `update_pairs`) allocates nothing once warm, in each workload, with the search on the calling
/// thread.
#[test]
fn broad_phase_frames_allocate_nothing_once_warm() {
    use slabtree::broad_phase::BroadPhaseConfig;
    use slabtree_testkit::worlds::{Driven, Workload, World};
    for workload in Workload::ALL {
        let config = BroadPhaseConfig { parallel_threshold: usize::MAX, ..Default::default() };
        let mut driven = Driven::new(World::new(workload, 2000, 3), config);
        let mut events = 0;
        let frame = |driven: &mut Driven, events: &mut usize| {
            driven.step();
            let e = driven.phase.update_pairs();
            *events += e.began().len() + e.ended().len();
        };
        let warm = allocations(|| (0..120).for_each(|_| frame(&mut driven, &mut events)));
        assert!(warm > 0, "the counter sees the warm-up's allocations");
        let after = allocations(|| (0..20).for_each(|_| frame(&mut driven, &mut events)));
        assert!(events > 0, "{workload:?}: pairs change");
        assert_eq!(after, 0, "{workload:?}: warm frames allocated {after} times");
    }
}
