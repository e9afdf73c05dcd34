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

#[path = "common/live_slots.rs"]
mod live_slots;

use glam::Vec3A;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use live_slots::LiveSlots;
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

/// Each live object's id, last box, kind and filter.
type Object = (ObjectId, Aabb, BodyKind, Filter);

/// The model: the live objects in the slots of their ids' indices, and the generations issued
/// at each index, to catch an id issued twice.
struct Model {
    objects: LiveSlots<Object>,
    issued: Vec<Vec<u32>>,
}

impl Model {
    fn add(&mut self, id: ObjectId, b: Aabb, k: BodyKind) {
        let i = id.index() as usize;
        if self.issued.len() <= i {
            self.issued.resize(i + 1, Vec::new());
        }
        assert!(!self.issued[i].contains(&id.generation()), "an id was issued twice");
        self.issued[i].push(id.generation());
        self.objects.insert(id.index(), (id, b, k, Filter::default()));
    }

    fn get_mut(&mut self, id: ObjectId) -> &mut Object {
        self.objects.get_mut(id.index()).filter(|o| o.0 == id).expect("a live object")
    }

    /// A live object's id chosen by the input, or `None` when there is none.
    fn pick(&self, u: &mut Unstructured) -> Result<Option<ObjectId>> {
        Ok(self.objects.pick(u)?.map(|o| o.0))
    }

    /// Whether `id` is a live object's id.
    fn is_live(&self, id: ObjectId) -> bool {
        self.objects.get(id.index()).is_some_and(|o| o.0 == id)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(kinematic_pairs) = u.arbitrary::<bool>() else { return };
    let config = BroadPhaseConfig { kinematic_pairs, parallel_threshold: 1, ..Default::default() };
    let mut bp: BroadPhase<u32> = BroadPhase::with_config(config);
    let mut model = Model { objects: LiveSlots::new(), issued: Vec::new() };
    // The tracked pairs as sorted keys (a removed object's pairs keep its old id, which may share
    // its index with a new object).
    let mut tracked: Vec<u128> = Vec::new();
    // Which pairs of slots the brute force wants, and which the broad phase reported, as a
    // matrix by index: the reported pairs come in no particular order.
    let mut wanted: Vec<bool> = Vec::new();
    let mut reported: Vec<bool> = Vec::new();
    for step in 0..200u32 {
        let Ok(op) = u.int_in_range(0u8..=7) else { break };
        match op {
            0 | 1 => {
                let Ok(b) = aabb(&mut u) else { break };
                let Ok(k) = kind(&mut u) else { break };
                match bp.add(b, k, step) {
                    Ok(id) => model.add(id, b, k),
                    Err(_) => assert!(b.validate().is_err(), "a valid box was refused"),
                }
            }
            2 => {
                let Ok(Some(id)) = model.pick(&mut u) else { continue };
                bp.remove(id).unwrap();
                model.objects.remove(id.index());
                assert!(bp.remove(id).is_err() && bp.get(id).is_err());
            }
            3 => {
                let Ok(Some(id)) = model.pick(&mut u) else { continue };
                let (Ok(b), Ok(d)) = (aabb(&mut u), v(&mut u)) else { break };
                let before = bp.fat_aabb(id).unwrap();
                match bp.move_object(id, b, d) {
                    Ok(_) => model.get_mut(id).1 = b,
                    Err(_) => assert_eq!(bp.fat_aabb(id).unwrap(), before, "a refused move changed the box"),
                }
            }
            4 => {
                let mut batch = Vec::new();
                for _ in 0..u.int_in_range(1u8..=5).unwrap_or(1) {
                    let Ok(Some(id)) = model.pick(&mut u) else { break };
                    let (Ok(b), Ok(d)) = (aabb(&mut u), v(&mut u)) else { break };
                    batch.push((id, b, d));
                }
                let before: Vec<Aabb> = model.objects.iter().map(|o| bp.fat_aabb(o.0).unwrap()).collect();
                match bp.move_objects(&batch) {
                    Ok(_) => {
                        for (id, b, _) in &batch {
                            model.get_mut(*id).1 = *b;
                        }
                    }
                    Err(_) => {
                        let after: Vec<Aabb> = model.objects.iter().map(|o| bp.fat_aabb(o.0).unwrap()).collect();
                        assert_eq!(before, after, "a refused batch changed a box");
                    }
                }
            }
            5 => {
                let Ok(Some(id)) = model.pick(&mut u) else { continue };
                let (Ok(c), Ok(m)) = (u.int_in_range(0u32..=3), u.int_in_range(0u32..=3)) else { break };
                let filter = Filter { category: c, mask: m };
                bp.set_filter(id, filter).unwrap();
                model.get_mut(id).3 = filter;
            }
            6 => {
                let Ok(Some(id)) = model.pick(&mut u) else { continue };
                let Ok(k) = kind(&mut u) else { break };
                bp.set_kind(id, k).unwrap();
                model.get_mut(id).2 = k;
            }
            _ => {
                let events = bp.update_pairs().clone();
                let all: Vec<(ObjectId, (BodyKind, Filter), Aabb)> =
                    model.objects.iter().map(|&(id, _, k, fl)| (id, (k, fl), bp.fat_aabb(id).unwrap())).collect();
                let n = model.objects.slot_count();
                wanted.clear();
                wanted.resize(n * n, false);
                // Generated in the objects' order, so already sorted.
                let mut want = Vec::new();
                for (i, (a, ka, fa)) in all.iter().enumerate() {
                    for (b, kb, fb) in &all[i + 1..] {
                        // The boxes first: most pairs are apart, and the rule's comparisons are
                        // what the fuzzer's instrumentation makes costly.
                        if fa.overlaps(fb) && allowed(*ka, *kb, kinematic_pairs) {
                            want.push(key((*a, *b)));
                            wanted[a.index() as usize * n + b.index() as usize] = true;
                        }
                    }
                }
                let keys = |pairs: &[(ObjectId, ObjectId)]| pairs.iter().copied().map(key).collect::<Vec<_>>();
                assert_eq!(keys(events.began()), minus(&want, &tracked));
                assert_eq!(keys(events.ended()), minus(&tracked, &want));
                // Each reported pair is one the brute force wants, between the live ids, once.
                reported.clear();
                reported.resize(n * n, false);
                let mut count = 0;
                for (a, b) in bp.pairs() {
                    assert!(
                        model.is_live(a) && model.is_live(b) && a.index() < b.index(),
                        "pair {a:?} {b:?}: not two live objects, the smaller index first"
                    );
                    let at = a.index() as usize * n + b.index() as usize;
                    assert!(wanted[at] && !reported[at], "pair {a:?} {b:?} not overlapping or tracked twice");
                    reported[at] = true;
                    count += 1;
                }
                assert_eq!(count, want.len(), "a pair is not tracked");
                tracked = want;
            }
        }
        assert_eq!(bp.len(), model.objects.len());
        for (id, b, _, _) in model.objects.iter() {
            assert!(bp.fat_aabb(*id).unwrap().contains(b), "a stored box lost its object's box");
        }
    }
});
