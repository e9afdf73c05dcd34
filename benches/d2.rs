//! Throughput of the 2D collision queries on the shared Box2D reference cases: Box2D-Lite box–box
//! manifolds, Box2D v3 polygon manifolds, GJK distances, times of impact and polygon ray casts.
//!
//! `cargo bench --bench d2`. The cases are read at run time from `$SLABTREE_BOX2D_REF` (default
//! `../shared/reference/box2d`); without them the bench prints a note and measures nothing.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec2;
use slabtree::d2::{self, DistanceInput, OrientedBox, RayCastInput, SimplexCache, ToiInput};
use slabtree_testkit::box2d::{J, cases, find_ref_dir, polygon, proxy, rot, sweep, v2, xf};

fn d2_benches(c: &mut Criterion) {
    let Some(dir) = find_ref_dir() else {
        println!("d2 bench: Box2D reference cases not found (set SLABTREE_BOX2D_REF); nothing measured");
        return;
    };

    let boxes = cases(&dir, "lite_collide.jsonl", |c| {
        let body = |j: &J| {
            let w = v2(j.get("width"));
            OrientedBox::with_rot(v2(j.get("position")), Vec2::new(0.5 * w.x, 0.5 * w.y), rot(j.get("cos_sin")))
        };
        (body(c.get("A")), body(c.get("B")))
    });
    let manifolds = cases(&dir, "v3_manifold.jsonl", |c| (polygon(c.get("A")), polygon(c.get("B")), xf(c.get("xf"))));
    let distances = cases(&dir, "v3_distance.jsonl", |c| DistanceInput {
        proxy_a: proxy(c.get("A")),
        proxy_b: proxy(c.get("B")),
        transform: xf(c.get("xf")),
        use_radii: c.get("useRadii").b(),
    });
    let tois = cases(&dir, "v3_toi.jsonl", |c| ToiInput {
        proxy_a: proxy(c.get("A")),
        proxy_b: proxy(c.get("B")),
        sweep_a: sweep(c.get("sweepA")),
        sweep_b: sweep(c.get("sweepB")),
        max_fraction: c.get("maxFraction").f(),
    });
    let rays = cases(&dir, "v3_raycast_polygon.jsonl", |c| {
        let r = c.get("ray");
        let input = RayCastInput {
            origin: v2(r.get("origin")),
            translation: v2(r.get("translation")),
            max_fraction: r.get("maxFraction").f(),
        };
        (polygon(c.get("polygon")), input)
    });

    let mut g = c.benchmark_group("d2");
    g.sample_size(30).measurement_time(Duration::from_secs(4));

    g.throughput(Throughput::Elements(boxes.len() as u64));
    g.bench_function(format!("box_box_manifold/{}", boxes.len()), |bch| {
        bch.iter(|| boxes.iter().map(|(a, b)| d2::collide_boxes(a, b).count).sum::<usize>())
    });

    g.throughput(Throughput::Elements(manifolds.len() as u64));
    g.bench_function(format!("polygon_manifold/{}", manifolds.len()), |bch| {
        bch.iter(|| manifolds.iter().map(|(a, b, x)| d2::collide_polygons(a, b, *x).point_count).sum::<usize>())
    });

    g.throughput(Throughput::Elements(distances.len() as u64));
    g.bench_function(format!("gjk_distance/{}", distances.len()), |bch| {
        bch.iter(|| distances.iter().map(|i| d2::shape_distance(i, &mut SimplexCache::default()).distance).sum::<f32>())
    });
    // Warm-started: the cache of the previous frame (the same pose) seeds the simplex.
    let mut warm: Vec<SimplexCache> = distances
        .iter()
        .map(|i| {
            let mut cache = SimplexCache::default();
            d2::shape_distance(i, &mut cache);
            cache
        })
        .collect();
    g.bench_function(format!("gjk_distance_warm/{}", distances.len()), |bch| {
        bch.iter(|| distances.iter().zip(warm.iter_mut()).map(|(i, c)| d2::shape_distance(i, c).distance).sum::<f32>())
    });

    g.throughput(Throughput::Elements(tois.len() as u64));
    g.bench_function(format!("time_of_impact/{}", tois.len()), |bch| {
        bch.iter(|| tois.iter().map(|i| d2::time_of_impact(i).fraction).sum::<f32>())
    });

    g.throughput(Throughput::Elements(rays.len() as u64));
    g.bench_function(format!("raycast_polygon/{}", rays.len()), |bch| {
        bch.iter(|| rays.iter().filter(|(p, r)| d2::raycast_polygon(p, r).hit).count())
    });
    g.finish();
}

criterion_group!(benches, d2_benches);
criterion_main!(benches);
