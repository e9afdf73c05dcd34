//! Broad-phase operation sequences against a brute-force pair model.
//!
//! Each step is one of add, remove, move, a batch of moves (an object may be listed twice, an
//! entry may be bad), a filter change, a kind change or `update_pairs`. After each update the
//! tracked pairs must be exactly the pairs of live objects whose stored boxes overlap and whose
//! kinds and filters allow them, and the events exactly the difference from the previous update;
//! after every step each stored box must hold its object's last box. Coordinates are mostly small
//! grid values (so boxes touch), sometimes raw bit patterns (NaN, infinities, 1e38): bad input
//! must be a typed error that changes nothing.
#![no_main]

use std::collections::BTreeMap;

use glam::Vec3A;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::Aabb;
use slabtree::broad_phase::{BodyKind, BroadPhase, BroadPhaseConfig, Filter, ObjectId};

fn f(u: &mut Unstructured) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=31)? {
        0 => f32::from_bits(u.arbitrary()?),
        1 => *u.choose(&[f32::NAN, f32::INFINITY, -0.0, 3e38, -3e38, 1e20])?,
        _ => u.arbitrary::<i8>()? as f32 * 0.25,
    })
}

fn v(u: &mut Unstructured) -> Result<Vec3A> {
    Ok(Vec3A::new(f(u)?, f(u)?, f(u)?))
}

fn aabb(u: &mut Unstructured) -> Result<Aabb> {
    let a = v(u)?;
    let h = Vec3A::new(
        u.int_in_range(0u8..=12)? as f32 * 0.25,
        u.int_in_range(0u8..=12)? as f32 * 0.25,
        u.int_in_range(0u8..=12)? as f32 * 0.25,
    );
    Ok(Aabb::new(a, a + h))
}

fn kind(u: &mut Unstructured) -> Result<BodyKind> {
    Ok(*u.choose(&[BodyKind::Static, BodyKind::Kinematic, BodyKind::Dynamic])?)
}

/// The documented pair rule, written out.
fn allowed(a: (BodyKind, Filter), b: (BodyKind, Filter), kinematic_pairs: bool) -> bool {
    let kinds = [a.0, b.0];
    let kinds_ok = kinds.contains(&BodyKind::Dynamic) || (kinematic_pairs && kinds.contains(&BodyKind::Kinematic));
    kinds_ok && a.1.category & b.1.mask != 0 && b.1.category & a.1.mask != 0
}

/// A pair as one integer, in the pairs' order (each id's index, then its generation).
fn key((a, b): (ObjectId, ObjectId)) -> u128 {
    let id = |o: ObjectId| (o.index() as u128) << 32 | o.generation() as u128;
    id(a) << 64 | id(b)
}

/// The keys of sorted `a` that sorted `b` lacks, in order.
fn minus(a: &[u128], b: &[u128]) -> Vec<u128> {
    let mut rest = b.iter().peekable();
    a.iter()
        .filter(|p| {
            while rest.next_if(|q| q < p).is_some() {}
            rest.peek() != Some(p)
        })
        .copied()
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(kinematic_pairs) = u.arbitrary::<bool>() else { return };
    let config = BroadPhaseConfig { kinematic_pairs, parallel_threshold: 1, ..Default::default() };
    let mut bp: BroadPhase<u32> = BroadPhase::with_config(config);
    // Each live object's last box, kind and filter.
    let mut live: BTreeMap<ObjectId, (Aabb, BodyKind, Filter)> = BTreeMap::new();
    // The tracked pairs as sorted keys: the model's sets are sorted vectors of integers (trees
    // of pairs took most of an execution under the fuzzer's instrumentation).
    let mut tracked: Vec<u128> = Vec::new();
    let mut gone: Vec<ObjectId> = Vec::new();
    let pick = |u: &mut Unstructured, live: &BTreeMap<ObjectId, _>| -> Result<Option<ObjectId>> {
        if live.is_empty() {
            return Ok(None);
        }
        let k = u.int_in_range(0..=live.len() - 1)?;
        Ok(live.keys().nth(k).copied())
    };
    for step in 0..200u32 {
        let Ok(op) = u.int_in_range(0u8..=7) else { break };
        match op {
            0 | 1 => {
                let Ok(b) = aabb(&mut u) else { break };
                let Ok(k) = kind(&mut u) else { break };
                match bp.add(b, k, step) {
                    Ok(id) => {
                        assert!(!live.contains_key(&id) && !gone.contains(&id), "an id was issued twice");
                        live.insert(id, (b, k, Filter::default()));
                    }
                    Err(_) => assert!(b.validate().is_err(), "a valid box was refused"),
                }
            }
            2 => {
                let Ok(Some(id)) = pick(&mut u, &live) else { continue };
                bp.remove(id).unwrap();
                live.remove(&id);
                gone.push(id);
                assert!(bp.remove(id).is_err() && bp.get(id).is_err());
            }
            3 => {
                let Ok(Some(id)) = pick(&mut u, &live) else { continue };
                let (Ok(b), Ok(d)) = (aabb(&mut u), v(&mut u)) else { break };
                let before = bp.fat_aabb(id).unwrap();
                match bp.move_object(id, b, d) {
                    Ok(_) => live.get_mut(&id).unwrap().0 = b,
                    Err(_) => assert_eq!(bp.fat_aabb(id).unwrap(), before, "a refused move changed the box"),
                }
            }
            4 => {
                let mut batch = Vec::new();
                for _ in 0..u.int_in_range(1u8..=5).unwrap_or(1) {
                    let Ok(Some(id)) = pick(&mut u, &live) else { break };
                    let (Ok(b), Ok(d)) = (aabb(&mut u), v(&mut u)) else { break };
                    batch.push((id, b, d));
                }
                let before: Vec<Aabb> = live.keys().map(|&id| bp.fat_aabb(id).unwrap()).collect();
                match bp.move_objects(&batch) {
                    Ok(_) => {
                        for (id, b, _) in &batch {
                            live.get_mut(id).unwrap().0 = *b;
                        }
                    }
                    Err(_) => {
                        let after: Vec<Aabb> = live.keys().map(|&id| bp.fat_aabb(id).unwrap()).collect();
                        assert_eq!(before, after, "a refused batch changed a box");
                    }
                }
            }
            5 => {
                let Ok(Some(id)) = pick(&mut u, &live) else { continue };
                let (Ok(c), Ok(m)) = (u.int_in_range(0u32..=3), u.int_in_range(0u32..=3)) else { break };
                let filter = Filter { category: c, mask: m };
                bp.set_filter(id, filter).unwrap();
                live.get_mut(&id).unwrap().2 = filter;
            }
            6 => {
                let Ok(Some(id)) = pick(&mut u, &live) else { continue };
                let Ok(k) = kind(&mut u) else { break };
                bp.set_kind(id, k).unwrap();
                live.get_mut(&id).unwrap().1 = k;
            }
            _ => {
                let events = bp.update_pairs().clone();
                let all: Vec<(ObjectId, (BodyKind, Filter), Aabb)> =
                    live.iter().map(|(&id, &(_, k, fl))| (id, (k, fl), bp.fat_aabb(id).unwrap())).collect();
                let mut want = Vec::new();
                for (i, (a, ka, fa)) in all.iter().enumerate() {
                    for (b, kb, fb) in &all[i + 1..] {
                        // The boxes first: most pairs are apart, and the rule's comparisons are
                        // what the fuzzer's instrumentation makes costly.
                        if fa.overlaps(fb) && allowed(*ka, *kb, kinematic_pairs) {
                            want.push(key(if a.index() < b.index() { (*a, *b) } else { (*b, *a) }));
                        }
                    }
                }
                want.sort_unstable();
                let keys = |pairs: &[(ObjectId, ObjectId)]| pairs.iter().copied().map(key).collect::<Vec<_>>();
                assert_eq!(keys(events.began()), minus(&want, &tracked));
                assert_eq!(keys(events.ended()), minus(&tracked, &want));
                // Sorted, not collected into a set: a pair tracked twice fails here.
                let mut pairs: Vec<_> = bp.pairs().map(key).collect();
                pairs.sort_unstable();
                assert_eq!(pairs, want);
                tracked = want;
            }
        }
        assert_eq!(bp.len(), live.len());
        for (&id, (b, _, _)) in &live {
            assert!(bp.fat_aabb(id).unwrap().contains(b), "a stored box lost its object's box");
        }
    }
});
