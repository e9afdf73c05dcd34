//! Trees and meshes are `Send + Sync`, and many threads querying one of them at once get exactly
//! the single-threaded answers.

use std::sync::Arc;

use glam::{Vec3, Vec3A};
use slabtree::{
    Aabb, BatchOptions, BuildOptions, Dbvt, LeafControl, MeshBvh, ProxyId, QueryWorkspace, Ray, RayControl, RayLeaf,
    TriMesh, TriangleTest,
};

use common::rng::Rng;
use slabtree_testkit as common;

fn assert_send_sync<T: Send + Sync>() {}

/// Compile-time: the shared structures may cross and be shared between threads.
#[test]
fn trees_meshes_and_errors_are_send_and_sync() {
    assert_send_sync::<Dbvt<u64>>();
    assert_send_sync::<Dbvt<Arc<String>>>();
    assert_send_sync::<MeshBvh>();
    assert_send_sync::<TriMesh>();
    assert_send_sync::<QueryWorkspace>();
    assert_send_sync::<ProxyId>();
    assert_send_sync::<slabtree::DbvtError>();
    assert_send_sync::<slabtree::MeshError>();
    assert_send_sync::<slabtree::LoadError>();
    assert_send_sync::<slabtree::Scene>();
    assert_send_sync::<slabtree::InstanceId>();
    assert_send_sync::<slabtree::SceneError>();
}

/// Many threads pick and test occlusion on one scene of shared meshes at once; every answer
/// equals the single-threaded one.
#[test]
fn many_threads_query_one_scene() {
    use glam::{Affine3A, Quat};
    let quad = TriMesh::new(
        vec![
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, 1.0, 0.0),
        ],
        vec![[0, 1, 2], [0, 2, 3]],
    )
    .unwrap();
    let shared = Arc::new(MeshBvh::build(&quad, &BuildOptions::default()));
    let mut scene = slabtree::Scene::new();
    let mut rng = Rng(99);
    for k in 0..400u64 {
        let at = Vec3::new(rng.unit() * 40.0 - 20.0, rng.unit() * 40.0 - 20.0, rng.unit() * 40.0 - 20.0);
        let q = Quat::from_rotation_y(rng.unit() * 6.0) * Quat::from_rotation_x(rng.unit() * 6.0);
        scene
            .add(
                shared.clone(),
                Affine3A::from_scale_rotation_translation(Vec3::splat(1.0 + rng.unit()), q, at),
                k,
                slabtree::Scene::ALL,
            )
            .unwrap();
    }
    let rays: Vec<Ray> = (0..4000)
        .map(|_| {
            let o = Vec3::new(rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5).normalize_or(Vec3::X) * 60.0;
            let target = Vec3::new(rng.unit() * 30.0 - 15.0, rng.unit() * 30.0 - 15.0, rng.unit() * 30.0 - 15.0);
            Ray::new(o, target - o)
        })
        .collect();
    let answer = |r: &Ray| {
        (
            scene.intersect(r, slabtree::Scene::ALL).unwrap().map(|p| (p.user_id, p.triangle, p.t.to_bits())),
            scene.occluded(r, slabtree::Scene::ALL).unwrap(),
        )
    };
    let single: Vec<_> = rays.iter().map(answer).collect();
    assert!(single.iter().filter(|a| a.0.is_some()).count() > 100, "too few hits to test anything");
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|k| {
                let (rays, answer) = (&rays, &answer);
                s.spawn(move || rays.iter().skip(k).step_by(3).map(|r| (answer(r), r)).collect::<Vec<_>>())
            })
            .collect();
        for (k, h) in handles.into_iter().enumerate() {
            for (i, (got, _)) in h.join().unwrap().into_iter().enumerate() {
                assert_eq!(got, single[k + 3 * i], "thread {k}, ray {}", k + 3 * i);
            }
        }
    });
}

type Answer = (Option<(ProxyId, u32)>, Vec<ProxyId>, Vec<ProxyId>);

fn query_tree(tree: &Dbvt<u32>, i: u64, ws: &mut QueryWorkspace) -> Answer {
    let mut r = Rng(i);
    let ray = Ray::new(r.unit3a() * 100.0, r.unit3a() - Vec3A::splat(0.5));
    let closest = tree.intersect(&ray, ws).unwrap().map(|h| (h.id, h.t.to_bits()));
    let mut all = Vec::new();
    tree.visit_ray(&ray, ws, &mut |l: RayLeaf<'_, u32>| {
        all.push(l.id);
        RayControl::Continue
    })
    .unwrap();
    let mut over = Vec::new();
    tree.overlap(&Aabb::from_center_half_extents(r.unit3a() * 100.0, Vec3A::splat(4.0)), ws, &mut |id, _: &u32| {
        over.push(id);
        LeafControl::Continue
    })
    .unwrap();
    all.sort();
    over.sort();
    (closest, all, over)
}

#[test]
fn many_threads_query_one_tree() {
    let mut r = Rng(1);
    let boxes: Vec<(Aabb, u32)> = (0..20_000)
        .map(|i| (Aabb::from_center_half_extents(r.unit3a() * 100.0, r.unit3a() + Vec3A::splat(0.05)), i))
        .collect();
    let (tree, _) = Dbvt::build(boxes).unwrap();
    const Q: u64 = 4000;
    let mut ws = QueryWorkspace::new();
    let single: Vec<Answer> = (0..Q).map(|i| query_tree(&tree, i, &mut ws)).collect();
    let tree = Arc::new(tree);
    let single = Arc::new(single);
    let threads = 8;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (tree, single) = (Arc::clone(&tree), Arc::clone(&single));
            std::thread::spawn(move || {
                let mut ws = QueryWorkspace::new();
                let mut mismatches = 0;
                // Each thread walks the queries in a different order, so they overlap in time.
                for k in 0..Q {
                    let i = (k * (2 * t + 1) + t * 97) % Q;
                    if query_tree(&tree, i, &mut ws) != single[i as usize] {
                        mismatches += 1;
                    }
                }
                mismatches
            })
        })
        .collect();
    let mismatches: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(mismatches, 0);
    // And scoped threads borrowing the tree directly, with rayon's pool at the same time.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut ws = QueryWorkspace::new();
                for i in 0..Q / 4 {
                    assert_eq!(query_tree(&tree, i, &mut ws), single[i as usize]);
                }
            });
        }
        use rayon::prelude::*;
        let ok = (0..Q)
            .into_par_iter()
            .map_init(QueryWorkspace::new, |ws, i| query_tree(&tree, i, ws) == single[i as usize])
            .all(|b| b);
        assert!(ok);
    });
}

#[test]
fn many_threads_query_one_mesh() {
    let (nu, nv) = (96u32, 48u32);
    let mut p = Vec::new();
    for i in 0..nu {
        for j in 0..nv {
            let (u, v) = (i as f32 / nu as f32 * std::f32::consts::TAU, j as f32 / nv as f32 * std::f32::consts::TAU);
            p.push(Vec3::new((2.0 + 0.7 * v.cos()) * u.cos(), 0.7 * v.sin(), (2.0 + 0.7 * v.cos()) * u.sin()));
        }
    }
    let idx = |i: u32, j: u32| (i % nu) * nv + (j % nv);
    let mut t = Vec::new();
    for i in 0..nu {
        for j in 0..nv {
            t.push([idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)]);
            t.push([idx(i, j), idx(i + 1, j + 1), idx(i, j + 1)]);
        }
    }
    let mesh = TriMesh::new(p, t).unwrap();
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
        let mut r = Rng(9);
        let rays: Vec<Ray> = (0..20_000)
            .map(|_| Ray::new((r.unit3a() - Vec3A::splat(0.5)) * 8.0, r.unit3a() - Vec3A::splat(0.5)))
            .collect();
        let single: Vec<_> = rays.iter().map(|ray| (bvh.intersect(ray).unwrap(), bvh.occluded(ray).unwrap())).collect();
        assert!(single.iter().filter(|s| s.0.is_some()).count() > 1000, "too few hits to mean anything");
        std::thread::scope(|s| {
            for t in 0..8usize {
                let (bvh, rays, single) = (&bvh, &rays, &single);
                s.spawn(move || {
                    for k in 0..rays.len() {
                        let i = (k * (2 * t + 1) + t * 131) % rays.len();
                        assert_eq!((bvh.intersect(&rays[i]).unwrap(), bvh.occluded(&rays[i]).unwrap()), single[i]);
                    }
                });
            }
        });
        // The batch entry points on rayon agree too.
        let batch = {
            let mut out = Vec::new();
            bvh.intersect_batch(&rays, &mut out, BatchOptions::default()).map(|_| out)
        }
        .unwrap();
        let occ = {
            let mut out = Vec::new();
            bvh.occluded_batch(&rays, &mut out, BatchOptions::default()).map(|_| out)
        }
        .unwrap();
        for i in 0..rays.len() {
            assert_eq!((batch[i], occ[i]), single[i]);
        }
        // Into the caller's vectors, which keep their room: longer, shorter and empty batches
        // after one another, each answer the single ray's, nothing left of the longer batch.
        let (mut hits, mut occluded) = (vec![None; 7], vec![true; 7]);
        for len in [rays.len(), 1000, 3, 0, rays.len()] {
            let start = (rays.len() - len) / 2;
            let part = &rays[start..start + len];
            bvh.intersect_batch(part, &mut hits, BatchOptions::default()).unwrap();
            bvh.occluded_batch(part, &mut occluded, BatchOptions::default()).unwrap();
            assert!(hits.len() == len && occluded.len() == len);
            for k in 0..len {
                assert_eq!((hits[k], occluded[k]), single[start + k]);
            }
        }
        let room = hits.as_ptr();
        bvh.intersect_batch(&rays[..rays.len() / 2], &mut hits, BatchOptions::default()).unwrap();
        assert_eq!(hits.as_ptr(), room, "a batch that fits keeps the vector's room");
    }
}
