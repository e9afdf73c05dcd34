//! Batches that count their visits (`BatchOptions::count_visits`): the sum must be exactly the
//! sum of the single-ray counting queries over the same rays, on rayon's threads and the calling
//! thread, with or without `packets` (counting traces each ray alone), and the answers must be
//! those of the batch that does not count. A counted scene ray is the instance tree's visits
//! plus each instance mesh's own.

use std::sync::Arc;

use glam::{Affine3A, Vec3, Vec3A};
use slabtree::{BatchError, BatchOptions, BuildOptions, MeshBvh, QueryStats, Ray, RayTree, Scene, Threads, TriMesh};

use slabtree_testkit::rng::{Rng, triangle_soup};

/// Rays from around the soup towards its middle, some missing everything.
fn rays(rng: &mut Rng, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|_| {
            let origin = rng.on_sphere() * 30.0;
            let target = rng.in_cube(12.0);
            Ray::new(origin, target - origin)
        })
        .collect()
}

fn every_option() -> Vec<BatchOptions> {
    let mut all = Vec::new();
    for threads in [Threads::Pool, Threads::Calling] {
        for packets in [false, true] {
            all.push(BatchOptions { threads, packets, count_visits: true });
        }
    }
    all
}

#[test]
fn a_mesh_batch_counts_the_sum_of_its_rays() {
    let mut rng = Rng(11);
    let bvh = MeshBvh::build(&triangle_soup(&mut rng, 4000, 10.0, 1.0), &BuildOptions::default());
    let rays = rays(&mut rng, 3000);

    let singles: QueryStats = rays.iter().map(|r| bvh.intersect_counting(r).unwrap().1).sum();
    let any_singles: QueryStats = rays.iter().map(|r| bvh.occluded_counting(r).unwrap().1).sum();
    let mut plain = Vec::new();
    let zero = bvh.intersect_batch(&rays, &mut plain, BatchOptions::default()).unwrap();
    assert_eq!(zero, QueryStats::default(), "a batch that does not count returns zeros");
    let mut plain_any = Vec::new();
    bvh.occluded_batch(&rays, &mut plain_any, BatchOptions::default()).unwrap();

    let hits = plain.iter().filter(|h| h.is_some()).count() as u64;
    assert!(hits > 100 && hits < rays.len() as u64, "the rays must both hit and miss");
    // Every hit needs one triangle pack tested at least.
    assert!(singles.leaves >= hits);

    for options in every_option() {
        let mut counted = Vec::new();
        assert_eq!(bvh.intersect_batch(&rays, &mut counted, options).unwrap(), singles, "{options:?}");
        assert_eq!(counted, plain, "{options:?}");
        let mut counted_any = Vec::new();
        assert_eq!(bvh.occluded_batch(&rays, &mut counted_any, options).unwrap(), any_singles, "{options:?}");
        assert_eq!(counted_any, plain_any, "{options:?}");
    }
}

#[test]
fn a_counting_batch_refuses_an_invalid_ray_and_keeps_nothing() {
    let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 16, 8), &BuildOptions::default());
    let mut rays = vec![Ray::new(Vec3::new(0.0, 0.0, 5.0), -Vec3::Z); 1000];
    rays[700] = Ray::new(Vec3::new(f32::NAN, 0.0, 5.0), -Vec3::Z);
    let mut hits = Vec::new();
    let options = BatchOptions { count_visits: true, ..Default::default() };
    match bvh.intersect_batch(&rays, &mut hits, options) {
        Err(BatchError { index, .. }) => assert_eq!(index, 700),
        other => panic!("expected the ray error, got {other:?}"),
    }
    assert!(hits.is_empty());
}

#[test]
fn a_scene_ray_counts_both_levels() {
    let mesh = Arc::new(MeshBvh::build(&TriMesh::uv_sphere(1.0, 32, 16), &BuildOptions::default()));
    let mut scene = Scene::new();
    let shift = Vec3::new(3.0, -2.0, 1.0);
    scene.add(mesh.clone(), Affine3A::from_translation(shift), 0, Scene::ALL).unwrap();
    let mut rng = Rng(5);
    for _ in 0..200 {
        let origin = rng.on_sphere() * 4.0;
        let ray = Ray::new(origin + Vec3A::from(shift), -origin + rng.in_cube(0.5));
        let local = Ray::new(ray.origin() - Vec3A::from(shift), ray.dir());
        let (hit, stats) = scene.intersect_counting(&ray, Scene::ALL).unwrap();
        let (mesh_hit, in_mesh) = mesh.intersect_counting(&local).unwrap();
        assert_eq!(hit.map(|h| h.triangle), mesh_hit.map(|h| h.triangle));
        // One instance: the instance tree reaches its one leaf, and the mesh adds its own visits.
        assert_eq!(stats.leaves, in_mesh.leaves + 1);
        assert!(stats.nodes >= in_mesh.nodes && stats.nodes <= in_mesh.nodes + 1, "{stats:?} {in_mesh:?}");
        let (occluded, any_stats) = scene.occluded_counting(&ray, Scene::ALL).unwrap();
        let (mesh_occluded, any_in_mesh) = mesh.occluded_counting(&local).unwrap();
        assert_eq!(occluded, mesh_occluded);
        assert_eq!(any_stats.leaves, any_in_mesh.leaves + 1);
    }
}

#[test]
fn a_scene_batch_counts_the_sum_of_its_rays() {
    let mut rng = Rng(23);
    let mut scene = Scene::new();
    for i in 0..40 {
        let mesh = Arc::new(MeshBvh::build(&triangle_soup(&mut rng, 200, 2.0, 0.5), &BuildOptions::default()));
        let place = Affine3A::from_translation(Vec3::from(rng.in_cube(10.0)));
        scene.add(mesh, place, i, if i % 3 == 0 { 1 } else { 2 }).unwrap();
    }
    let rays = rays(&mut rng, 2000);
    // The instance tree's share of the count depends on its form, which `RayTree::Auto` may
    // change between the singles and the batch; each fixed form is compared with itself.
    for (ray_tree, mask) in [(RayTree::Binary, Scene::ALL), (RayTree::Wide, Scene::ALL), (RayTree::Wide, 2)] {
        scene.set_ray_tree(ray_tree);
        let singles: QueryStats = rays.iter().map(|r| scene.intersect_counting(r, mask).unwrap().1).sum();
        let any_singles: QueryStats = rays.iter().map(|r| scene.occluded_counting(r, mask).unwrap().1).sum();
        let mut plain = Vec::new();
        scene.intersect_batch(&rays, mask, &mut plain, BatchOptions::default()).unwrap();
        assert!(plain.iter().any(Option::is_some));
        for options in every_option() {
            let mut counted = Vec::new();
            assert_eq!(scene.intersect_batch(&rays, mask, &mut counted, options).unwrap(), singles, "{options:?}");
            assert_eq!(counted, plain, "{options:?}");
            let mut any = Vec::new();
            assert_eq!(scene.occluded_batch(&rays, mask, &mut any, options).unwrap(), any_singles, "{options:?}");
        }
    }
}
