//! SIMD pair node test against the scalar reference, on the same tree and rays: the measurement
//! behind the choice of the default `NodeTest`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec3A;
use slabtree::dbvt::NodeTest;
use slabtree::{Aabb, Dbvt, LeafControl, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2};
use slabtree_testkit::rng::Rng;

fn scene(n: usize) -> (Dbvt<Aabb>, Vec<Ray>, Vec<Aabb>) {
    let mut r = Rng(n as u64);
    let side = 4.0 * (n as f32).cbrt();
    let boxes: Vec<(Aabb, Aabb)> = (0..n)
        .map(|_| {
            let b = Aabb::from_center_half_extents(r.unit3a() * side, Vec3A::splat(0.1) + r.unit3a() * 0.9);
            (b, b)
        })
        .collect();
    let (tree, _) = Dbvt::build(boxes).unwrap();
    let c = Vec3A::splat(side * 0.5);
    let rays = (0..10_000)
        .map(|_| {
            let o = c + (r.unit3a() * 2.0 - Vec3A::ONE).normalize_or(Vec3A::X) * side;
            Ray::new(o, (r.unit3a() * side - o).normalize())
        })
        .collect();
    let queries = (0..10_000).map(|_| Aabb::from_center_half_extents(r.unit3a() * side, Vec3A::ONE)).collect();
    (tree, rays, queries)
}

fn node_tests(c: &mut Criterion) {
    for n in [10_000usize, 100_000] {
        let (tree, rays, queries) = scene(n);
        let mut g = c.benchmark_group(format!("node_test/{n}"));
        g.sample_size(20).throughput(Throughput::Elements(rays.len() as u64));
        for mode in [NodeTest::Simd, NodeTest::Scalar] {
            let mut ws = QueryWorkspace::new();
            ws.node_test = mode;
            g.bench_function(BenchmarkId::new("ray_closest_tight", format!("{mode:?}")), |b| {
                b.iter(|| {
                    let mut hits = 0u32;
                    for ray in &rays {
                        let mut best = None;
                        tree.visit_ray(ray, &mut ws, &mut |l: RayLeaf<'_, Aabb>| match ray_aabb2(
                            &ray.with_range(ray.tmin, l.tmax),
                            l.data,
                        ) {
                            Some(t) => {
                                best = Some(t);
                                RayControl::Clip(t)
                            }
                            None => RayControl::Continue,
                        })
                        .unwrap();
                        hits += best.is_some() as u32;
                    }
                    hits
                })
            });
            g.bench_function(BenchmarkId::new("overlap", format!("{mode:?}")), |b| {
                b.iter(|| {
                    let mut count = 0u32;
                    for q in &queries {
                        tree.overlap(q, &mut ws, &mut |_, _: &Aabb| {
                            count += 1;
                            LeafControl::Continue
                        })
                        .unwrap();
                    }
                    count
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, node_tests);
criterion_main!(benches);
