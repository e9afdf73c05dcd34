//! Rays of a batch in flight together (`Dbvt::visit_ray_batch`): each ray's policy sees exactly
//! the calls a cast of that ray alone makes, in the same order, whatever the policy does (clip,
//! stop), and bad input refuses the whole batch.

use glam::Vec3A;
use slabtree::{Aabb, BatchError, Dbvt, DbvtError, InputError, QueryWorkspace, Ray, RayControl, RayLeaf};
use slabtree_testkit::rng::Rng;

/// A tree of `n` random boxes, and `m` random rays through its region.
fn scene(n: usize, m: usize, seed: u64) -> (Dbvt<u32>, Vec<Ray>) {
    let mut rng = Rng(seed);
    let side = 4.0 * (n as f32).cbrt();
    let mut tree = Dbvt::new();
    for i in 0..n {
        let c = Vec3A::new(rng.unit() * side, rng.unit() * side, rng.unit() * side);
        let h = Vec3A::new(0.1 + rng.unit(), 0.1 + rng.unit(), 0.1 + rng.unit());
        tree.insert(Aabb::from_center_half_extents(c, h), i as u32).unwrap();
    }
    let rays = (0..m)
        .map(|_| {
            let o = Vec3A::new(rng.unit() * side, rng.unit() * side, rng.unit() * side);
            let d = Vec3A::new(rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5);
            Ray::new(o, d).with_range(0.0, 1.0 + rng.unit() * side)
        })
        .collect();
    (tree, rays)
}

/// A policy whose decisions depend on the order of its calls: go on at the first leaf, clip at
/// the second, stop at the third. Returns each call's (proxy, t, tmax), per ray.
fn record<'a>(calls: &'a mut [Vec<(u32, f32, f32)>]) -> impl FnMut(usize, RayLeaf<'_, u32>) -> RayControl + 'a {
    move |i, leaf| {
        let c = &mut calls[i];
        c.push((*leaf.data, leaf.t, leaf.tmax));
        match c.len() {
            1 => RayControl::Continue,
            2 => RayControl::Clip(leaf.t),
            _ => RayControl::Stop,
        }
    }
}

#[test]
fn every_ray_sees_what_it_sees_alone() {
    let mut ws = QueryWorkspace::new();
    for (n, m, seed) in [(0, 5, 1), (1, 3, 2), (7, 0, 3), (50, 7, 4), (2000, 300, 5), (20000, 1000, 6)] {
        let (tree, rays) = scene(n, m, seed);
        let mut alone = vec![Vec::new(); rays.len()];
        let mut stats_alone = (0, 0);
        for (i, ray) in rays.iter().enumerate() {
            let mut p = record(&mut alone[i..=i]);
            let s = tree.visit_ray(ray, &mut ws, &mut |leaf: RayLeaf<'_, u32>| p(0, leaf)).unwrap();
            stats_alone.0 += s.nodes;
            stats_alone.1 += s.leaves;
        }
        let mut batch = vec![Vec::new(); rays.len()];
        let s = tree.visit_ray_batch(&rays, &mut ws, &mut record(&mut batch)).unwrap();
        assert_eq!(batch, alone, "{n} boxes, {m} rays");
        assert_eq!((s.nodes, s.leaves), stats_alone, "{n} boxes, {m} rays");
        if n >= 2000 {
            assert!(alone.iter().any(|c| c.len() == 3), "some ray must stop");
        }

        let mut hits = Vec::new();
        tree.intersect_batch(&rays, &mut ws, &mut hits).unwrap();
        let single: Vec<_> = rays.iter().map(|r| tree.intersect(r, &mut ws).unwrap()).collect();
        assert_eq!(hits, single);
    }
}

#[test]
fn bad_input_refuses_the_whole_batch() {
    let (mut tree, mut rays) = scene(100, 20, 7);
    let mut ws = QueryWorkspace::new();
    rays[13] = Ray::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::X);
    let expect = rays[13].validate().unwrap_err();
    let mut calls = 0;
    let refused = tree.visit_ray_batch(&rays, &mut ws, &mut |_: usize, _: RayLeaf<'_, u32>| {
        calls += 1;
        RayControl::Continue
    });
    // The ray's own error (compared as text: NaN fields are unequal to themselves), named by
    // its index.
    let Err(DbvtError::Ray(BatchError { index, error })) = refused else { panic!("{refused:?}") };
    assert_eq!((index, error.to_string()), (13, expect.to_string()));
    assert!(matches!(expect, InputError::NonFiniteRay { .. }), "{expect:?}");
    assert_eq!(calls, 0, "nothing is visited before the refusal");
    assert!(refused.unwrap_err().to_string().contains("ray 13"));
    let mut hits = vec![None; 3];
    assert!(tree.intersect_batch(&rays, &mut ws, &mut hits).is_err());
    assert!(hits.is_empty(), "no stale answers are left behind");

    // Moved without a refit: refused, as single rays are.
    rays[13] = Ray::new(Vec3A::ZERO, Vec3A::X);
    let id = tree.iter().next().map(|(id, _)| id).unwrap();
    tree.update_proxy(id, Aabb::new(Vec3A::splat(50.0), Vec3A::splat(51.0)), Vec3A::ZERO).unwrap();
    let pending = tree.visit_ray_batch(&rays, &mut ws, &mut |_: usize, _: RayLeaf<'_, u32>| RayControl::Continue);
    assert_eq!(pending, Err(DbvtError::RefitPending));
}
