//! Dynamic-tree operation sequences against a brute-force model, `validate()` after every step.
//!
//! Each step is one of insert, remove, move, enlarge, a batch of `update_proxies` then `refit`,
//! `optimize_incremental`, `rebuild`, or a query (ray, box cast, overlap, point, self pairs) whose
//! answer is compared with a loop over the live proxies' stored boxes. Coordinates are mostly
//! small grid values (so boxes touch and nest), sometimes raw bit patterns (NaN, infinities,
//! denormals, 1e38): bad input must be a typed error that leaves the tree unchanged.
#![no_main]

use std::collections::BTreeMap;

use glam::Vec3A;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::{Aabb, Dbvt, DbvtError, LeafControl, PairControl, ProxyId, QueryWorkspace, Ray, RayControl, ray_aabb2};

fn f(u: &mut Unstructured) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=15)? {
        0 => f32::from_bits(u.arbitrary()?),
        1 => *u.choose(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, -0.0, 3e38, -3e38, 1e20])?,
        _ => u.arbitrary::<i8>()? as f32 * 0.25,
    })
}

fn v(u: &mut Unstructured) -> Result<Vec3A> {
    Ok(Vec3A::new(f(u)?, f(u)?, f(u)?))
}

fn aabb(u: &mut Unstructured) -> Result<Aabb> {
    let a = v(u)?;
    if u.ratio(1u8, 16)? {
        return Ok(Aabb::new(a, v(u)?)); // possibly inverted or non-finite
    }
    let h = Vec3A::new(
        u.int_in_range(0u8..=16)? as f32 * 0.25,
        u.int_in_range(0u8..=16)? as f32 * 0.25,
        u.int_in_range(0u8..=16)? as f32 * 0.25,
    );
    Ok(Aabb::new(a, a + h))
}

fn valid(b: &Aabb) -> bool {
    b.validate().is_ok()
}

fn pick(u: &mut Unstructured, ids: &[ProxyId], stale: &[ProxyId]) -> Result<Option<ProxyId>> {
    if !stale.is_empty() && u.ratio(1u8, 8)? {
        return Ok(Some(*u.choose(stale)?));
    }
    if ids.is_empty() { Ok(None) } else { Ok(Some(*u.choose(ids)?)) }
}

/// An id as one integer, in the ids' order within one tree (index, then generation): sorting by
/// it leaves the fuzzer's instrumentation one comparison where the derived order had several.
fn key(id: ProxyId) -> u64 {
    (id.index() as u64) << 32 | id.generation() as u64
}

/// A pair of ids as one integer, in the pairs' order (see [`key`]).
fn pair_key((a, b): (ProxyId, ProxyId)) -> u128 {
    (key(a) as u128) << 64 | key(b) as u128
}

/// Checks the tree against the model: same live ids and data, every stored box contains the
/// tight box, and `validate()`.
fn check_model(tree: &Dbvt<u32>, model: &BTreeMap<ProxyId, (Aabb, u32)>) {
    tree.validate().expect("validate");
    assert_eq!(tree.len(), model.len());
    let live: Vec<(ProxyId, u32)> = tree.iter().map(|(id, d)| (id, *d)).collect();
    let want: Vec<(ProxyId, u32)> = model.iter().map(|(id, (_, d))| (*id, *d)).collect();
    let mut live_sorted = live.clone();
    live_sorted.sort_unstable_by_key(|&(id, _)| key(id));
    assert_eq!(live_sorted, want, "live proxies differ from the model");
    for (id, (tight, _)) in model {
        let fat = tree.fat_aabb(*id).unwrap();
        assert!(fat.contains(tight), "fat box {fat:?} does not contain tight {tight:?}");
    }
}

fn fats(tree: &Dbvt<u32>, model: &BTreeMap<ProxyId, (Aabb, u32)>) -> Vec<(ProxyId, Aabb)> {
    model.keys().map(|id| (*id, tree.fat_aabb(*id).unwrap())).collect()
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mut tree: Dbvt<u32> = Dbvt::new();
    let mut model: BTreeMap<ProxyId, (Aabb, u32)> = BTreeMap::new();
    let mut stale: Vec<ProxyId> = Vec::new();
    let mut ws = QueryWorkspace::new();
    let mut next = 0u32;
    if u.ratio(1u8, 4)? {
        let n = u.int_in_range(0u8..=40)?;
        let mut items = Vec::new();
        for _ in 0..n {
            items.push((aabb(u)?, next));
            next += 1;
        }
        let all_valid = items.iter().all(|(b, _)| valid(b));
        match Dbvt::build(items.clone()) {
            Ok((t, ids)) => {
                assert!(all_valid, "build accepted a bad box");
                tree = t;
                for (id, (b, d)) in ids.iter().zip(items) {
                    model.insert(*id, (b, d));
                }
            }
            Err(_) => assert!(!all_valid, "build refused good boxes"),
        }
        check_model(&tree, &model);
    }
    for _ in 0..u.int_in_range(0u16..=300)? {
        if u.is_empty() {
            break;
        }
        let ids: Vec<ProxyId> = model.keys().copied().collect();
        match u.int_in_range(0u8..=10)? {
            0..=2 => {
                let b = aabb(u)?;
                match tree.insert(b, next) {
                    Ok(id) => {
                        assert!(valid(&b));
                        assert!(model.insert(id, (b, next)).is_none(), "id issued twice");
                    }
                    Err(e) => assert!(!valid(&b), "insert refused a good box: {e}"),
                }
                next += 1;
            }
            3 => {
                if let Some(id) = pick(u, &ids, &stale)? {
                    match tree.remove(id) {
                        Ok(d) => {
                            assert_eq!(model.remove(&id).unwrap().1, d);
                            stale.push(id);
                        }
                        Err(e) => assert!(matches!(e, DbvtError::StaleProxy(_)) && !model.contains_key(&id)),
                    }
                }
            }
            4 | 5 => {
                if let Some(id) = pick(u, &ids, &stale)? {
                    let b = aabb(u)?;
                    let d = v(u)?;
                    let enlarge = u.arbitrary::<bool>()?;
                    let r = if enlarge { tree.enlarge_proxy(id, b, d) } else { tree.move_proxy(id, b, d) };
                    // An error: a stale id, a bad box or displacement, or a fat box that overflowed.
                    if r.is_ok() {
                        assert!(valid(&b) && d.is_finite());
                        model.get_mut(&id).unwrap().0 = b;
                    }
                }
            }
            6 => {
                let mut moves = Vec::new();
                for _ in 0..u.int_in_range(0u8..=8)? {
                    if let Some(id) = pick(u, &ids, &stale)? {
                        moves.push((id, aabb(u)?, v(u)?));
                    }
                }
                let before = fats(&tree, &model);
                match tree.update_proxies(&moves) {
                    Ok(_) => {
                        for (id, b, _) in &moves {
                            model.get_mut(id).unwrap().0 = *b;
                        }
                    }
                    Err(_) => assert_eq!(fats(&tree, &model), before, "a failed batch changed the tree"),
                }
                tree.validate().expect("validate while refit pending");
                tree.refit();
            }
            7 => {
                let n = u.int_in_range(0u8..=20)?;
                tree.optimize_incremental(n as usize);
            }
            8 => tree.rebuild(),
            9 => {
                // Ray and box-cast queries against brute force on the stored boxes.
                let ray = Ray::new(v(u)?, v(u)?).with_range(f(u)?, f(u)?);
                let mut got = Vec::new();
                let r = tree.visit_ray(&ray, &mut ws, &mut |l: slabtree::RayLeaf<'_, u32>| {
                    got.push(l.id);
                    RayControl::Continue
                });
                match r {
                    Ok(_) => {
                        got.sort_unstable_by_key(|&id| key(id));
                        let want: Vec<ProxyId> = fats(&tree, &model)
                            .into_iter()
                            .filter(|(_, b)| ray_aabb2(&ray, b).is_some())
                            .map(|p| p.0)
                            .collect();
                        assert_eq!(got, want, "ray {ray:?}");
                        let closest = tree.intersect(&ray, &mut ws).unwrap();
                        let best = fats(&tree, &model)
                            .into_iter()
                            .filter_map(|(_, b)| ray_aabb2(&ray, &b))
                            .fold(None, |m: Option<f32>, t| Some(m.map_or(t, |m| m.min(t))));
                        assert_eq!(closest.map(|h| h.t), best);
                    }
                    Err(_) => assert!(ray.validate().is_err()),
                }
                let b = aabb(u)?;
                let d = v(u)?;
                if let Ok(Some(h)) = tree.cast_box(&b, d, &mut ws) {
                    assert!((0.0..=1.0).contains(&h.t), "box cast t {} outside [0, 1]", h.t);
                }
            }
            _ => {
                let b = aabb(u)?;
                let mut got = Vec::new();
                match tree.overlap(&b, &mut ws, &mut |id, _: &u32| {
                    got.push(id);
                    LeafControl::Continue
                }) {
                    Ok(_) => {
                        got.sort_unstable_by_key(|&id| key(id));
                        let want: Vec<ProxyId> =
                            fats(&tree, &model).into_iter().filter(|(_, f)| f.overlaps(&b)).map(|p| p.0).collect();
                        assert_eq!(got, want);
                    }
                    Err(_) => assert!(!valid(&b)),
                }
                if model.len() <= 64 {
                    let mut pairs = Vec::new();
                    tree.self_pairs(&mut ws, |a, _: &u32, b, _: &u32| {
                        pairs.push(if a < b { (a, b) } else { (b, a) });
                        PairControl::Continue
                    })
                    .unwrap();
                    pairs.sort_unstable_by_key(|&p| pair_key(p));
                    let fs = fats(&tree, &model);
                    let mut want = Vec::new();
                    for i in 0..fs.len() {
                        for j in i + 1..fs.len() {
                            if fs[i].1.overlaps(&fs[j].1) {
                                let (a, b) = (fs[i].0, fs[j].0);
                                want.push(if a < b { (a, b) } else { (b, a) });
                            }
                        }
                    }
                    want.sort_unstable_by_key(|&p| pair_key(p));
                    assert_eq!(pairs, want);
                }
            }
        }
        check_model(&tree, &model);
    }
    for id in &stale {
        assert!(tree.get(*id).is_err(), "stale id answered");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
