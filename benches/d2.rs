//! Throughput of the 2D collision queries on the shared Box2D reference cases: Box2D-Lite box–box
//! manifolds, Box2D v3 polygon manifolds, GJK distances, times of impact and polygon ray casts.
//!
//! `cargo bench --bench d2`. The cases are read at run time from `$SLABTREE_BOX2D_REF` (default
//! `../shared/reference/box2d`); without them the bench prints a note and measures nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec2;
use slabtree::d2::{
    self, DistanceInput, OrientedBox, Polygon, RayCastInput, Rot, ShapeProxy, SimplexCache, Sweep, ToiInput, Transform,
};

/// A minimal JSON reader for the reference lines (see `tests/box2d_oracle.rs`).
enum J {
    Num(f64),
    Other,
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    fn get(&self, k: &str) -> &J {
        match self {
            J::Obj(v) => v.iter().find(|(a, _)| a == k).map(|(_, v)| v).unwrap_or_else(|| panic!("missing {k}")),
            _ => panic!("not an object"),
        }
    }
    fn f(&self) -> f32 {
        match self {
            J::Num(x) => *x as f32,
            _ => panic!("not a number"),
        }
    }
    fn fs(&self) -> Vec<f32> {
        match self {
            J::Arr(v) => v.iter().map(J::f).collect(),
            _ => panic!("not an array"),
        }
    }
    fn is_true(&self) -> bool {
        matches!(self, J::Num(x) if *x != 0.0)
    }
}

fn parse(s: &str) -> J {
    fn value(b: &[u8], i: &mut usize) -> J {
        while b[*i].is_ascii_whitespace() {
            *i += 1;
        }
        match b[*i] {
            b'{' | b'[' => {
                let obj = b[*i] == b'{';
                *i += 1;
                let (mut kv, mut arr) = (Vec::new(), Vec::new());
                loop {
                    while b[*i].is_ascii_whitespace() || b[*i] == b',' {
                        *i += 1;
                    }
                    if b[*i] == b'}' || b[*i] == b']' {
                        *i += 1;
                        return if obj { J::Obj(kv) } else { J::Arr(arr) };
                    }
                    if obj {
                        let key = string(b, i);
                        while b[*i] != b':' {
                            *i += 1;
                        }
                        *i += 1;
                        kv.push((key, value(b, i)));
                    } else {
                        arr.push(value(b, i));
                    }
                }
            }
            b'"' => {
                string(b, i);
                J::Other
            }
            b't' => {
                *i += 4;
                J::Num(1.0)
            }
            b'f' => {
                *i += 5;
                J::Num(0.0)
            }
            b'n' => {
                *i += 4;
                J::Other
            }
            _ => {
                let start = *i;
                while matches!(b[*i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    *i += 1;
                }
                J::Num(std::str::from_utf8(&b[start..*i]).unwrap().parse().unwrap())
            }
        }
    }
    fn string(b: &[u8], i: &mut usize) -> String {
        *i += 1;
        let start = *i;
        while b[*i] != b'"' {
            *i += if b[*i] == b'\\' { 2 } else { 1 };
        }
        *i += 1;
        String::from_utf8_lossy(&b[start..*i - 1]).into_owned()
    }
    value(s.as_bytes(), &mut 0)
}

fn v2(j: &J) -> Vec2 {
    let a = j.fs();
    Vec2::new(a[0], a[1])
}

fn rot(j: &J) -> Rot {
    let a = j.fs();
    Rot::from_cos_sin(a[0], a[1])
}

fn pts(j: &J) -> Vec<Vec2> {
    j.fs().chunks_exact(2).map(|c| Vec2::new(c[0], c[1])).collect()
}

fn proxy(j: &J) -> ShapeProxy {
    ShapeProxy::new(&pts(j.get("v")), j.get("radius").f())
}

fn polygon(j: &J) -> Polygon {
    let (v, n) = (pts(j.get("v")), pts(j.get("n")));
    let mut p = Polygon::make_box(1.0, 1.0);
    p.count = v.len();
    p.vertices[..v.len()].copy_from_slice(&v);
    p.normals[..n.len()].copy_from_slice(&n);
    p.centroid = v2(j.get("centroid"));
    p.radius = j.get("radius").f();
    p
}

fn xf(j: &J) -> Transform {
    Transform::new(v2(j.get("p")), rot(j.get("q")))
}

fn sweep(j: &J) -> Sweep {
    Sweep {
        local_center: v2(j.get("localCenter")),
        c1: v2(j.get("c1")),
        c2: v2(j.get("c2")),
        q1: rot(j.get("q1")),
        q2: rot(j.get("q2")),
    }
}

fn cases<T>(dir: &Path, file: &str, f: impl Fn(&J) -> T) -> Vec<T> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| f(&parse(l))).collect()
}

fn ref_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SLABTREE_BOX2D_REF")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/box2d"));
    dir.is_dir().then_some(dir)
}

fn d2_benches(c: &mut Criterion) {
    let Some(dir) = ref_dir() else {
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
        use_radii: c.get("useRadii").is_true(),
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
