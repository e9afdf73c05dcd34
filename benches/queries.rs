//! The mesh BVH's proximity queries and shape casts on a generated mesh (a 98k-triangle torus):
//! closest point, triangles in a box and in a sphere, sphere and capsule casts, and all hits along
//! a ray. Their comparison with parry3d on the shared scenes is `benches/peers`'
//! `queries_vs_parry`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glam::{Vec3, Vec3A};
use slabtree::{Aabb, BuildOptions, MeshBvh, Ray, TriMesh};
use slabtree_testkit::rng::Rng;

fn queries(c: &mut Criterion) {
    let mesh = TriMesh::torus(2.0, 0.6, 512, 96);
    let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let mut r = Rng(7);
    let mut around = || (r.unit3() - Vec3::splat(0.5)) * 7.0;
    let points: Vec<Vec3> = (0..1000).map(|_| around()).collect();
    let moves: Vec<(Vec3, Vec3)> = (0..1000).map(|_| (around(), around())).collect();
    let n = 1000u64;
    let mut g = c.benchmark_group("mesh_queries");
    g.sample_size(20).throughput(Throughput::Elements(n));
    g.bench_function("closest_point", |b| {
        b.iter(|| points.iter().filter_map(|&p| bvh.closest_point(p, f32::INFINITY).unwrap()).count())
    });
    let mut found = Vec::with_capacity(4096);
    g.bench_function("triangles_in_box", |b| {
        b.iter(|| {
            points
                .iter()
                .map(|&p| {
                    found.clear();
                    let q = Aabb::from_center_half_extents(Vec3A::from(p), Vec3A::splat(0.25));
                    bvh.triangles_in_box(&q, &mut found).unwrap();
                    found.len()
                })
                .sum::<usize>()
        })
    });
    g.bench_function("triangles_in_sphere", |b| {
        b.iter(|| {
            points
                .iter()
                .map(|&p| {
                    found.clear();
                    bvh.triangles_in_sphere(p, 0.25, &mut found).unwrap();
                    found.len()
                })
                .sum::<usize>()
        })
    });
    g.bench_function("cast_sphere", |b| {
        b.iter(|| moves.iter().filter_map(|&(a, to)| bvh.cast_sphere(a, 0.1, to - a).unwrap()).count())
    });
    g.bench_function("cast_capsule", |b| {
        b.iter(|| {
            moves.iter().filter_map(|&(a, to)| bvh.cast_capsule(a, a + Vec3::Y * 0.5, 0.1, to - a).unwrap()).count()
        })
    });
    let mut hits = Vec::new();
    g.bench_function("intersect_all", |b| {
        b.iter(|| {
            moves
                .iter()
                .map(|&(a, to)| {
                    bvh.intersect_all(&Ray::new(Vec3A::from(a), Vec3A::from(to - a)), &mut hits).unwrap();
                    hits.len()
                })
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, queries);
criterion_main!(benches);
