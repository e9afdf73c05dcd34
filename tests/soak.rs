//! Soak: 10 million random operations on a tree of 100k proxies (feature `soak`, release build):
//!
//! `cargo test --release --features soak --test soak -- --nocapture`
//!
//! Operations: small moves (mostly inside the fat box), teleports, in-place enlargement, batches of
//! `update_proxies` (1000 moves) + `refit`, removals and insertions (in waves that pull the tree
//! toward 50k and back toward 100k, about ±25k, to exercise the free lists),
//! `optimize_incremental`, and a full `rebuild` now and then. Every 10k operations: `validate()`, the live set equals the model exactly (no proxy
//! lost, none duplicated, every datum where it belongs, every stored box containing its tight box),
//! and a handful of ray, overlap and point queries equal brute force over all live proxies.
//! Memory: the arenas' capacity (`stats().memory_bytes`) must stay flat across the insert/remove
//! waves, and the process peak RSS (VmHWM) is printed. `SLABTREE_SOAK_OPS` overrides the count.

use std::collections::HashMap;
use std::time::Instant;

use glam::Vec3A;
use slabtree::{Aabb, Dbvt, LeafControl, ProxyId, QueryWorkspace, Ray, RayControl, RayLeaf, ray_aabb2};

use common::rng::Rng;
use slabtree_testkit as common;

const N: usize = 100_000;
const WORLD: f32 = 200.0;
const CHECK_EVERY: u64 = 10_000;

fn random_box(r: &mut Rng) -> Aabb {
    let c = r.unit3a() * WORLD;
    Aabb::from_center_half_extents(c, Vec3A::splat(0.1) + r.unit3a() * 0.9)
}

/// The live proxies: id -> (tight box, datum), plus a dense list for random picks.
struct Model {
    map: HashMap<ProxyId, (Aabb, u64)>,
    list: Vec<ProxyId>,
    pos: HashMap<ProxyId, usize>,
}

impl Model {
    fn insert(&mut self, id: ProxyId, b: Aabb, d: u64) {
        assert!(self.map.insert(id, (b, d)).is_none(), "id {id:?} issued twice");
        self.pos.insert(id, self.list.len());
        self.list.push(id);
    }
    fn remove(&mut self, id: ProxyId) -> u64 {
        let i = self.pos.remove(&id).unwrap();
        self.list.swap_remove(i);
        if i < self.list.len() {
            self.pos.insert(self.list[i], i);
        }
        self.map.remove(&id).unwrap().1
    }
}

fn vm_hwm_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn check(tree: &Dbvt<u64>, model: &Model, r: &mut Rng, ws: &mut QueryWorkspace) {
    tree.validate().expect("validate");
    assert_eq!(tree.len(), model.map.len(), "proxy count");
    let mut seen = 0usize;
    for (id, d) in tree.iter() {
        let (tight, want) = model.map.get(&id).unwrap_or_else(|| panic!("tree holds {id:?}, unknown to the model"));
        assert_eq!(d, want, "datum of {id:?}");
        assert!(tree.fat_aabb(id).unwrap().contains(tight), "stored box of {id:?} lost its tight box");
        seen += 1;
    }
    assert_eq!(seen, model.map.len(), "a proxy is missing from iter()");
    let fats: Vec<(ProxyId, Aabb)> = model.list.iter().map(|id| (*id, tree.fat_aabb(*id).unwrap())).collect();
    for _ in 0..2 {
        let o = r.unit3a() * WORLD;
        let ray = Ray::new(o, r.unit3a() * 2.0 - Vec3A::ONE).with_range(0.0, WORLD * 0.5);
        let mut got = Vec::new();
        tree.visit_ray(&ray, ws, &mut |l: RayLeaf<'_, u64>| {
            got.push(l.id);
            RayControl::Continue
        })
        .unwrap();
        got.sort();
        let mut want: Vec<ProxyId> = fats.iter().filter(|(_, b)| ray_aabb2(&ray, b).is_some()).map(|p| p.0).collect();
        want.sort();
        assert_eq!(got, want, "ray {ray:?}");
        let q = Aabb::from_center_half_extents(r.unit3a() * WORLD, Vec3A::splat(5.0));
        let mut got = Vec::new();
        tree.overlap(&q, ws, &mut |id, _: &u64| {
            got.push(id);
            LeafControl::Continue
        })
        .unwrap();
        got.sort();
        let mut want: Vec<ProxyId> = fats.iter().filter(|(_, b)| b.overlaps(&q)).map(|p| p.0).collect();
        want.sort();
        assert_eq!(got, want, "overlap {q:?}");
        let p = r.unit3a() * WORLD;
        let mut got = Vec::new();
        tree.point(p, ws, &mut |id, _: &u64| {
            got.push(id);
            LeafControl::Continue
        })
        .unwrap();
        got.sort();
        let mut want: Vec<ProxyId> = fats.iter().filter(|(_, b)| b.contains_point(p)).map(|p| p.0).collect();
        want.sort();
        assert_eq!(got, want, "point {p:?}");
    }
}

#[test]
fn ten_million_operations_on_100k_proxies() {
    let ops: u64 = std::env::var("SLABTREE_SOAK_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let start = Instant::now();
    let mut r = Rng(2024);
    let mut next_datum = 0u64;
    let items: Vec<(Aabb, u64)> = (0..N)
        .map(|_| {
            next_datum += 1;
            (random_box(&mut r), next_datum)
        })
        .collect();
    let (mut tree, ids) = Dbvt::build(items.clone()).unwrap();
    let mut model = Model { map: HashMap::new(), list: Vec::new(), pos: HashMap::new() };
    for (id, (b, d)) in ids.iter().zip(items) {
        model.insert(*id, b, d);
    }
    let mut ws = QueryWorkspace::new();
    check(&tree, &model, &mut r, &mut ws);
    let mem0 = tree.stats().memory_bytes;
    let (mut mem_max, mut mem_after_first_wave) = (mem0, None);
    // Waves: pull toward N/2 for 500k operations, then back toward N for the next 500k.
    let wave = 1_000_000u64;
    let (mut done, mut next_check) = (0u64, CHECK_EVERY);
    let mut counts = [0u64; 8];
    while done < ops {
        let phase_shrinking = (done % wave) < wave / 2;
        let target = if phase_shrinking { N / 2 } else { N };
        let k = r.below(1000);
        if k < 300 {
            // Churn toward the wave's target size.
            let remove = if model.list.len() > target { k < 200 } else { k < 100 };
            if remove && !model.list.is_empty() {
                let id = model.list[r.below(model.list.len())];
                let d = tree.remove(id).unwrap();
                assert_eq!(model.remove(id), d);
                assert!(tree.get(id).is_err());
                counts[0] += 1;
            } else {
                let b = random_box(&mut r);
                next_datum += 1;
                let id = tree.insert(b, next_datum).unwrap();
                model.insert(id, b, next_datum);
                counts[1] += 1;
            }
            done += 1;
        } else if k < 900 {
            // Small move, usually inside the fat box.
            let id = model.list[r.below(model.list.len())];
            let e = model.map.get_mut(&id).unwrap();
            let d = (r.unit3a() - Vec3A::splat(0.5)) * 0.2;
            let b = Aabb::new(e.0.min + d, e.0.max + d);
            e.0 = b;
            tree.move_proxy(id, b, d).unwrap();
            counts[2] += 1;
            done += 1;
        } else if k < 940 {
            // Teleport.
            let id = model.list[r.below(model.list.len())];
            let b = random_box(&mut r);
            model.map.get_mut(&id).unwrap().0 = b;
            tree.move_proxy(id, b, Vec3A::ZERO).unwrap();
            counts[3] += 1;
            done += 1;
        } else if k < 998 {
            let id = model.list[r.below(model.list.len())];
            let e = model.map.get_mut(&id).unwrap();
            let d = (r.unit3a() - Vec3A::splat(0.5)) * 2.0;
            let b = Aabb::new(e.0.min + d, e.0.max + d);
            e.0 = b;
            tree.enlarge_proxy(id, b, d).unwrap();
            counts[4] += 1;
            done += 1;
        } else if k == 998 {
            // A frame: a batch of 1000 moves (1% of the proxies), then refit. About half of all
            // operations are batched moves.
            let mut moves = Vec::with_capacity(1000);
            for _ in 0..1000 {
                let id = model.list[r.below(model.list.len())];
                let e = model.map.get_mut(&id).unwrap();
                let d = (r.unit3a() - Vec3A::splat(0.5)) * 0.6;
                let b = Aabb::new(e.0.min + d, e.0.max + d);
                e.0 = b;
                moves.push((id, b, d));
            }
            // Duplicates in one batch: the last move wins in both the model and the tree.
            tree.update_proxies(&moves).unwrap();
            tree.refit();
            tree.optimize_incremental(64);
            counts[5] += 1000;
            done += 1000;
        } else if r.below(100) == 0 {
            tree.rebuild();
            counts[6] += 1;
            done += 1;
        } else {
            tree.optimize_incremental(1000);
            counts[7] += 1;
            done += 1;
        }
        if done >= next_check {
            next_check += CHECK_EVERY;
            check(&tree, &model, &mut r, &mut ws);
            let m = tree.stats().memory_bytes;
            mem_max = mem_max.max(m);
            if done >= wave && mem_after_first_wave.is_none() {
                mem_after_first_wave = Some(mem_max);
            }
        }
    }
    check(&tree, &model, &mut r, &mut ws);
    let stats = tree.stats();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "soak: {done} operations in {secs:.1} s ({:.2} M ops/s), {} checks; final {} proxies, height {}",
        done as f64 / secs / 1e6,
        done / CHECK_EVERY,
        stats.leaves,
        stats.height
    );
    println!(
        "ops: remove {} insert {} move {} teleport {} enlarge {} batched-update {} rebuild {} optimize {}",
        counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6], counts[7]
    );
    println!(
        "memory_bytes: start {mem0}, max after the first wave {:?}, max overall {mem_max}, final {}; peak RSS (VmHWM) {} kB",
        mem_after_first_wave,
        stats.memory_bytes,
        vm_hwm_kb().map_or("?".into(), |k| k.to_string())
    );
    // Flat: once the first insert/remove wave has run, the arenas never grow again.
    if let Some(first) = mem_after_first_wave {
        assert!(mem_max <= first, "arena memory grew after the first wave: {first} -> {mem_max}");
    }
}
