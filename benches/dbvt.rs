//! Criterion benchmarks of the dynamic AABB tree at 1k, 10k and 100k proxies.
//!
//! Scene: `n` boxes of half-size uniform in `[0.1, 1]` per axis, centres uniform in a cube of side
//! `4 * n^(1/3)` centred on the origin. Rays start uniformly on a sphere just outside the scene
//! and aim at a uniform point inside the scene cube. Everything comes from one fixed-seed
//! SplitMix64, so every run measures the same work.
//!
//! Groups: `build` (insert all, remove all, rebuild with the default config and serially),
//! `frame` (one frame moving 10% of the proxies by 0.05–0.5, via `move_proxy`, or via
//! `enlarge_proxy` then `refit`; each iteration on a fresh clone of the tree), and `query_inserted`
//! / `query_built` (1000 closest-hit rays on the tight boxes kept as user data, 1000 box casts,
//! and all self pairs, on the tree built by insertion and on the bulk-built one), and `frustum`
//! (at 10k, the tree walk against the linear scan, from a few to most of the proxies in view, on
//! both trees).
//!
//! Run with `cargo bench --bench dbvt` (about two minutes plus the build), or filter, e.g.
//! `cargo bench --bench dbvt -- intersect_tight`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use glam::Vec3A;
use slabtree::{Aabb, Dbvt, DbvtConfig, PairControl, ProxyId, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2};
use slabtree_testkit::rng::Rng;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Queries per benchmark iteration (ray casts and box casts).
const QUERIES: usize = 1_000;
/// Fraction of the proxies moved in one frame.
const MOVED_FRACTION: f64 = 0.1;

/// Half the side of the cube holding the box centres.
fn scene_half(n: usize) -> f32 {
    2.0 * (n as f32).cbrt()
}

/// The tight boxes of the scene.
fn scene(n: usize, seed: u64) -> Vec<Aabb> {
    let mut rng = Rng(seed);
    let half = scene_half(n);
    (0..n)
        .map(|_| {
            let c = rng.in_cube(half);
            let h = Vec3A::new(rng.range(0.1, 1.0), rng.range(0.1, 1.0), rng.range(0.1, 1.0));
            Aabb::from_center_half_extents(c, h)
        })
        .collect()
}

/// Rays from a sphere around the scene towards uniform points inside it, with unit directions.
fn rays(n: usize, count: usize, seed: u64) -> Vec<Ray> {
    let mut rng = Rng(seed);
    let half = scene_half(n);
    let radius = half * 3f32.sqrt() + 2.0;
    (0..count)
        .map(|_| {
            let origin = rng.on_sphere() * radius;
            let target = rng.in_cube(half);
            Ray::new(origin, (target - origin).normalize())
        })
        .collect()
}

/// One frame of motion: `(proxy, new tight box, displacement)` for 10% of the proxies, distinct.
fn frame(boxes: &[Aabb], ids: &[ProxyId], seed: u64) -> Vec<(ProxyId, Aabb, Vec3A)> {
    let mut rng = Rng(seed);
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    let moved = ((boxes.len() as f64) * MOVED_FRACTION).round() as usize;
    (0..moved)
        .map(|k| {
            // Partial Fisher–Yates: a uniform sample without repetition.
            let j = k + rng.below(order.len() - k);
            order.swap(k, j);
            let i = order[k];
            let d = rng.on_sphere() * rng.range(0.05, 0.5);
            let b = boxes[i];
            (ids[i], Aabb::new(b.min + d, b.max + d), d)
        })
        .collect()
}

/// A tree built by inserting every box in order; user data is the tight box.
fn insert_all(boxes: &[Aabb]) -> (Dbvt<Aabb>, Vec<ProxyId>) {
    let mut tree = Dbvt::new();
    let ids = boxes.iter().map(|b| tree.insert(*b, *b).expect("valid box")).collect();
    (tree, ids)
}

/// Closest hit on the tight boxes kept as user data: the traversal tests fat boxes, the policy
/// tests the tight one and clips the ray at each nearer hit.
fn closest_tight(tree: &Dbvt<Aabb>, ray: &Ray, ws: &mut QueryWorkspace) -> Option<f32> {
    let mut best = f32::INFINITY;
    tree.visit_ray(ray, ws, &mut |leaf: RayLeaf<'_, Aabb>| match ray_aabb2(ray, leaf.data) {
        Some(t) if t < best => {
            best = t;
            RayControl::Clip(t)
        }
        _ => RayControl::Continue,
    })
    .expect("valid ray");
    best.is_finite().then_some(best)
}

/// Group settings: short runs, with flat sampling and 10 samples where one iteration is slow.
fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, n: usize) {
    group.sample_size(10).warm_up_time(Duration::from_millis(500));
    if n >= 100_000 {
        group.sampling_mode(SamplingMode::Flat).measurement_time(Duration::from_secs(4));
    } else {
        group.measurement_time(Duration::from_secs(2));
    }
}

fn bench_build(c: &mut Criterion) {
    for n in SIZES {
        let boxes = scene(n, 1);
        let (tree, ids) = insert_all(&boxes);
        let mut group = c.benchmark_group("build");
        configure(&mut group, n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("insert", n), |b| b.iter(|| insert_all(black_box(&boxes))));
        group.bench_function(BenchmarkId::new("remove", n), |b| {
            b.iter_batched(
                || tree.clone(),
                |mut t| {
                    for &id in &ids {
                        t.remove(id).expect("live id");
                    }
                    t
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("rebuild", n), |b| {
            b.iter_batched(
                || tree.clone(),
                |mut t| {
                    t.rebuild();
                    t
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("rebuild_serial", n), |b| {
            let config = DbvtConfig { parallel_threshold: usize::MAX, ..DbvtConfig::default() };
            let (serial, _) = Dbvt::build_with_config(boxes.iter().map(|b| (*b, *b)), config).expect("valid boxes");
            b.iter_batched(
                || serial.clone(),
                |mut t| {
                    t.rebuild();
                    t
                },
                BatchSize::LargeInput,
            )
        });
        group.finish();
    }
}

fn bench_move(c: &mut Criterion) {
    for n in SIZES {
        let boxes = scene(n, 1);
        let (tree, ids) = insert_all(&boxes);
        let moves = frame(&boxes, &ids, 2);
        let mut group = c.benchmark_group("frame");
        configure(&mut group, n);
        group.throughput(Throughput::Elements(moves.len() as u64));
        group.bench_function(BenchmarkId::new("move_proxy", n), |b| {
            b.iter_batched(
                || tree.clone(),
                |mut t| {
                    for &(id, aabb, d) in &moves {
                        t.move_proxy(id, aabb, d).expect("live id");
                        *t.get_mut(id).expect("live id") = aabb;
                    }
                    t
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("enlarge_refit", n), |b| {
            b.iter_batched(
                || tree.clone(),
                |mut t| {
                    for &(id, aabb, d) in &moves {
                        t.enlarge_proxy(id, aabb, d).expect("live id");
                        *t.get_mut(id).expect("live id") = aabb;
                    }
                    t.refit();
                    t
                },
                BatchSize::LargeInput,
            )
        });
        group.finish();
    }
}

/// Queries on the tree built by repeated insertion (`query_inserted`) and on the same boxes bulk
/// built with binned SAH (`query_built`): the gap between the two is the cost of the incremental
/// tree's quality.
fn bench_queries(c: &mut Criterion) {
    for n in SIZES {
        let boxes = scene(n, 1);
        let (inserted, _) = insert_all(&boxes);
        let (built, _) = Dbvt::build(boxes.iter().map(|b| (*b, *b))).expect("valid boxes");
        let rays = rays(n, QUERIES, 3);
        // Boxes of half-size 0.5 swept from the ray origins across the whole scene.
        let radius = scene_half(n) * 3f32.sqrt() + 2.0;
        let casts: Vec<(Aabb, Vec3A)> = rays
            .iter()
            .map(|r| (Aabb::from_center_half_extents(r.origin(), Vec3A::splat(0.5)), r.dir() * (2.0 * radius)))
            .collect();
        let mut ws = QueryWorkspace::new();
        for (group_name, tree) in [("query_inserted", &inserted), ("query_built", &built)] {
            let mut group = c.benchmark_group(group_name);
            configure(&mut group, n);

            group.throughput(Throughput::Elements(rays.len() as u64));
            group.bench_function(BenchmarkId::new("intersect_tight", n), |b| {
                b.iter(|| {
                    let mut hits = 0u32;
                    for ray in &rays {
                        hits += u32::from(closest_tight(tree, ray, &mut ws).is_some());
                    }
                    hits
                })
            });
            group.bench_function(BenchmarkId::new("cast_box", n), |b| {
                b.iter(|| {
                    let mut hits = 0u32;
                    for (aabb, d) in &casts {
                        hits += u32::from(tree.cast_box(aabb, *d, &mut ws).expect("valid cast").is_some());
                    }
                    hits
                })
            });

            group.throughput(Throughput::Elements(n as u64));
            group.bench_function(BenchmarkId::new("self_pairs", n), |b| {
                b.iter(|| {
                    let mut pairs = 0u64;
                    tree.self_pairs(&mut ws, |_, _, _, _| {
                        pairs += 1;
                        PairControl::Continue
                    })
                    .unwrap();
                    pairs
                })
            });
            group.finish();
        }
    }
}

/// Frustum culling at 10k proxies: the tree walk (`Dbvt::frustum`) against the linear scan
/// (`Dbvt::frustum_scan`), on the tree built by insertion (its arena out of depth-first order)
/// and on the bulk-built one (in order, so the walk lists a subtree wholly in view by a
/// sequential sweep), for a camera outside the scene cube looking at its centre with fields of
/// view from narrow to wide. The benchmark id carries the percentage of proxies in view.
fn bench_frustum(c: &mut Criterion) {
    let n = 10_000;
    let boxes = scene(n, 1);
    let (inserted, _) = insert_all(&boxes);
    let (built, _) = Dbvt::build(boxes.iter().map(|b| (*b, *b))).expect("valid boxes");
    let half = scene_half(n);
    let eye = glam::Vec3::new(-half * 1.5, half * 0.3, -half * 1.5);
    let view = glam::camera::rh::view::look_at_mat4(eye, glam::Vec3::ZERO, glam::Vec3::Y);
    let mut ws = QueryWorkspace::new();
    let mut group = c.benchmark_group("frustum");
    configure(&mut group, n);
    for (name, tree) in [("inserted", &inserted), ("built", &built)] {
        for fov in [0.1f32, 0.3, 0.6, 1.2] {
            let f = slabtree::Frustum::from_view_projection(
                glam::camera::rh::proj::directx::perspective(fov, 16.0 / 9.0, 0.1, half * 6.0) * view,
            );
            let mut in_view = 0usize;
            tree.frustum_scan(&f, &mut |_, _: &Aabb| {
                in_view += 1;
                slabtree::LeafControl::Continue
            })
            .unwrap();
            let id = |how: &str| BenchmarkId::new(format!("{name}_{how}"), format!("{}pct_in_view", 100 * in_view / n));
            group.bench_function(id("walk"), |b| {
                b.iter(|| {
                    let mut k = 0u32;
                    tree.frustum(&f, &mut ws, &mut |_, _: &Aabb| {
                        k += 1;
                        slabtree::LeafControl::Continue
                    })
                    .unwrap();
                    k
                })
            });
            group.bench_function(id("scan"), |b| {
                b.iter(|| {
                    let mut k = 0u32;
                    tree.frustum_scan(&f, &mut |_, _: &Aabb| {
                        k += 1;
                        slabtree::LeafControl::Continue
                    })
                    .unwrap();
                    k
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_build, bench_move, bench_queries, bench_frustum);
criterion_main!(benches);
