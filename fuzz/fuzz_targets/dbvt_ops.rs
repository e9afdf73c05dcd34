//! Dynamic-tree operation sequences against a brute-force model, `validate()` after every step.
//!
//! Each step is one of insert, remove, move, enlarge, a batch of `update_proxies` then `refit`,
//! `optimize_incremental`, `rebuild`, or a query (ray, box cast, overlap, point, self pairs) whose
//! answer is compared with a loop over the live proxies' stored boxes. Coordinates are mostly
//! small grid values (so boxes touch and nest), sometimes raw bit patterns (NaN, infinities,
//! denormals, 1e38): bad input must be a typed error that leaves the tree unchanged.
#![no_main]

#[path = "common/live_slots.rs"]
mod live_slots;

use glam::Vec3A;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use live_slots::LiveSlots;
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

/// An id as one integer, in the ids' order within one tree (index, then generation): sorting by
/// it leaves the fuzzer's instrumentation one comparison where the derived order had several.
fn key(id: ProxyId) -> u64 {
    (id.index() as u64) << 32 | id.generation() as u64
}

/// A pair of ids as one integer, in the pairs' order (see [`key`]).
fn pair_key((a, b): (ProxyId, ProxyId)) -> u128 {
    (key(a) as u128) << 64 | key(b) as u128
}

/// Each live proxy's id, tight box and data.
type Proxy = (ProxyId, Aabb, u32);

/// The model: the live proxies in the slots of their ids' indices.
struct Model(LiveSlots<Proxy>);

impl Model {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// The live proxy with this id, if any.
    fn get_mut(&mut self, id: ProxyId) -> Option<&mut Proxy> {
        self.0.get_mut(id.index()).filter(|p| p.0 == id)
    }

    fn insert(&mut self, id: ProxyId, b: Aabb, d: u32) {
        self.0.insert(id.index(), (id, b, d));
    }

    /// Removes a live proxy and returns its data.
    fn remove(&mut self, id: ProxyId) -> Option<u32> {
        self.get_mut(id)?;
        self.0.remove(id.index()).map(|p| p.2)
    }

    /// A live proxy chosen by the input, or now and then a stale id; `None` when there is none.
    fn pick(&self, u: &mut Unstructured, stale: &[ProxyId]) -> Result<Option<ProxyId>> {
        if !stale.is_empty() && u.ratio(1u8, 8)? {
            return Ok(Some(*u.choose(stale)?));
        }
        Ok(self.0.pick(u)?.map(|p| p.0))
    }

    /// Live proxies in index order, which is their ids' order.
    fn proxies(&self) -> impl Iterator<Item = &Proxy> {
        self.0.iter()
    }
}

/// Checks the tree against the model: same live ids and data, every stored box contains the
/// tight box, and `validate()`.
fn check_model(tree: &Dbvt<u32>, model: &Model, seen: &mut Vec<bool>) {
    tree.validate().expect("validate");
    assert_eq!(tree.len(), model.len());
    // Each proxy the tree lists is one of the model's, with its data, listed once; with as
    // many listed as the model holds, the two sets are equal.
    seen.clear();
    seen.resize(model.0.slot_count(), false);
    let mut listed = 0;
    for (id, d) in tree.iter() {
        listed += 1;
        let i = id.index() as usize;
        assert!(
            model.0.get(i as u32).is_some_and(|p| p.0 == id && p.2 == *d) && !seen[i],
            "the tree lists {id:?} with {d}, which the model lacks or the tree listed before"
        );
        seen[i] = true;
    }
    assert_eq!(listed, model.len(), "the tree lists fewer proxies than it holds");
    for (id, tight, _) in model.proxies() {
        let fat = tree.fat_aabb(*id).unwrap();
        assert!(fat.contains(tight), "fat box {fat:?} does not contain tight {tight:?}");
    }
}

/// Each live proxy's stored box, in the ids' order.
fn fats(tree: &Dbvt<u32>, model: &Model) -> Vec<(ProxyId, Aabb)> {
    model.proxies().map(|&(id, _, _)| (id, tree.fat_aabb(id).unwrap())).collect()
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mut tree: Dbvt<u32> = Dbvt::new();
    let mut model = Model(LiveSlots::new());
    let mut seen = Vec::new();
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
                    model.insert(*id, b, d);
                }
            }
            Err(_) => assert!(!all_valid, "build refused good boxes"),
        }
        check_model(&tree, &model, &mut seen);
    }
    for _ in 0..u.int_in_range(0u16..=300)? {
        if u.is_empty() {
            break;
        }
        match u.int_in_range(0u8..=10)? {
            0..=2 => {
                let b = aabb(u)?;
                match tree.insert(b, next) {
                    Ok(id) => {
                        assert!(valid(&b));
                        model.insert(id, b, next);
                    }
                    Err(e) => assert!(!valid(&b), "insert refused a good box: {e}"),
                }
                next += 1;
            }
            3 => {
                if let Some(id) = model.pick(u, &stale)? {
                    match tree.remove(id) {
                        Ok(d) => {
                            assert_eq!(model.remove(id), Some(d));
                            stale.push(id);
                        }
                        Err(e) => assert!(matches!(e, DbvtError::StaleProxy(_)) && model.get_mut(id).is_none()),
                    }
                }
            }
            4 | 5 => {
                if let Some(id) = model.pick(u, &stale)? {
                    let b = aabb(u)?;
                    let d = v(u)?;
                    let enlarge = u.arbitrary::<bool>()?;
                    let r = if enlarge { tree.enlarge_proxy(id, b, d) } else { tree.move_proxy(id, b, d) };
                    // An error: a stale id, a bad box or displacement, or a fat box that overflowed.
                    if r.is_ok() {
                        assert!(valid(&b) && d.is_finite());
                        model.get_mut(id).unwrap().1 = b;
                    }
                }
            }
            6 => {
                let mut moves = Vec::new();
                for _ in 0..u.int_in_range(0u8..=8)? {
                    if let Some(id) = model.pick(u, &stale)? {
                        moves.push((id, aabb(u)?, v(u)?));
                    }
                }
                let before = fats(&tree, &model);
                match tree.update_proxies(&moves) {
                    Ok(_) => {
                        for (id, b, _) in &moves {
                            model.get_mut(*id).unwrap().1 = *b;
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
                    // In the ids' order, so the pairs come out sorted.
                    let fs = fats(&tree, &model);
                    let mut want = Vec::new();
                    for i in 0..fs.len() {
                        for j in i + 1..fs.len() {
                            if fs[i].1.overlaps(&fs[j].1) {
                                want.push((fs[i].0, fs[j].0));
                            }
                        }
                    }
                    assert_eq!(pairs, want);
                }
            }
        }
        check_model(&tree, &model, &mut seen);
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
