//! Saving and restoring a [`BroadPhase`] with serde (feature `serde`).
//!
//! What is saved is what decides future events: each slot's generation, kind, filter, fat box
//! and data, the free slots in reuse order, the move buffer, the tracked pairs and the pairs of
//! removed objects not yet reported. The trees are not saved: they are rebuilt from the fat
//! boxes, which answer every query and pair test as before (a tree's shape changes the order in
//! which it meets boxes, never which boxes it meets, and the events are sorted). The last
//! events ([`BroadPhase::events`]) are not saved either.
//!
//! A restored broad phase is checked as it is read: a document that names a free slot twice, a
//! pair of a free slot, or a bad box is refused with a serde error, never accepted to panic
//! later.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::object::Object;
use super::{BodyKind, BroadPhase, BroadPhaseConfig, Filter, ObjectId};
use crate::dbvt::{Dbvt, ProxyId};
use crate::math::Aabb;

/// One slot as saved: `data` is `None` for a free slot.
#[derive(Serialize, Deserialize)]
struct Slot<D> {
    generation: u32,
    kind: BodyKind,
    filter: Filter,
    fat: Aabb,
    data: Option<D>,
}

/// The saved form; `D` is `&T` when saving and `T` when restoring (serde writes both alike).
#[derive(Serialize, Deserialize)]
struct Saved<D> {
    config: BroadPhaseConfig,
    slots: Vec<Slot<D>>,
    free: Vec<u32>,
    moved: Vec<u32>,
    pairs: Vec<(u32, u32)>,
    removed_pairs: Vec<(ObjectId, ObjectId)>,
}

impl<T: Serialize> Serialize for BroadPhase<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let slots = (self.objects.iter().zip(&self.data))
            .map(|(o, data)| Slot {
                generation: o.generation,
                kind: o.kind,
                filter: o.filter,
                fat: o.fat,
                data: data.as_ref(),
            })
            .collect();
        // The move buffer as `update_pairs` will take it: flagged slots, each once, in order.
        let mut seen = vec![false; self.objects.len()];
        let moved: Vec<u32> = (self.moved.iter().copied())
            .filter(|&i| self.objects[i as usize].moved && !std::mem::replace(&mut seen[i as usize], true))
            .collect();
        Saved {
            config: self.config,
            slots,
            free: self.free.clone(),
            moved,
            pairs: self.pairs.iter().map(|[a, b]| (a, b)).collect(),
            removed_pairs: self.removed_pairs.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for BroadPhase<T> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        let saved = Saved::<T>::deserialize(deserializer)?;
        restore(saved).map_err(De::Error::custom)
    }
}

/// Rebuilds a broad phase from its saved form, checking it first.
fn restore<T>(saved: Saved<T>) -> Result<BroadPhase<T>, String> {
    let n = saved.slots.len();
    if n >= (u32::MAX / 2) as usize {
        return Err(format!("{n} slots: more than a broad phase holds"));
    }
    let mut phase = BroadPhase::with_config(saved.config);
    // Free slots: each a slot without data, each once, and every slot without data listed.
    let mut listed = vec![false; n];
    for &i in &saved.free {
        match saved.slots.get(i as usize) {
            Some(s) if s.data.is_none() && !listed[i as usize] => listed[i as usize] = true,
            _ => return Err(format!("free slot {i} is out of range, holds an object, or is listed twice")),
        }
    }
    if saved.slots.iter().filter(|s| s.data.is_none()).count() != saved.free.len() {
        return Err("a slot without an object is not in the free list".into());
    }
    // The trees, from the live slots' fat boxes as stored.
    let mut proxies = vec![ProxyId::NONE; n];
    for kind in BodyKind::ALL {
        let live = saved.slots.iter().enumerate().filter(|(_, s)| s.data.is_some() && s.kind == kind);
        let items: Vec<(Aabb, u32)> = live.map(|(i, s)| (s.fat, i as u32)).collect();
        let (tree, ids) = Dbvt::from_stored_boxes(items.iter().copied(), saved.config.tree)
            .map_err(|e| format!("a saved fat box is unusable: {e}"))?;
        for ((_, i), id) in items.iter().zip(ids) {
            proxies[*i as usize] = id;
        }
        phase.trees[kind.tree()] = tree;
    }
    for (i, slot) in saved.slots.into_iter().enumerate() {
        let object = Object {
            fat: if slot.data.is_some() { slot.fat } else { Aabb::EMPTY },
            generation: slot.generation,
            live: slot.data.is_some(),
            kind: slot.kind,
            filter: slot.filter,
            moved: false,
            proxy: proxies[i],
            batch_entry: 0,
        };
        phase.count += u32::from(slot.data.is_some());
        phase.objects.push(object);
        phase.data.push(slot.data);
        phase.pairs.ensure_object(i as u32);
    }
    phase.free = saved.free;
    let live = |i: u32| phase.data.get(i as usize).is_some_and(Option::is_some);
    for &i in &saved.moved {
        if !live(i) || phase.objects[i as usize].moved {
            return Err(format!("moved slot {i} is free, out of range or listed twice"));
        }
        phase.objects[i as usize].moved = true;
        phase.moved_per_tree[phase.objects[i as usize].kind.tree()] += 1;
    }
    phase.moved = saved.moved;
    for &(a, b) in &saved.pairs {
        if a >= b || !live(a) || !live(b) || phase.pairs.contains(a, b) {
            return Err(format!("pair ({a}, {b}) is unordered, of a free slot, or listed twice"));
        }
        phase.pairs.insert(a, b);
    }
    phase.removed_pairs = saved.removed_pairs;
    Ok(phase)
}
