//! A model's live objects in the slots of their ids' indices, for structures that reuse the slot of
//! a removed object (the dynamic tree's proxies, the broad phase's objects): live objects' indices
//! are then distinct, which `insert` checks. Plain vectors indexed by slot, not a tree: under the
//! fuzzer's instrumentation a tree's searches, each comparison hooked, took a large part of an
//! execution.

use libfuzzer_sys::arbitrary::{Result, Unstructured};

pub struct LiveSlots<T> {
    slots: Vec<Option<T>>,
    /// The live slots' indices, densely, for picking one.
    live: Vec<u32>,
    /// Each live slot's place in `live`.
    place: Vec<u32>,
}

impl<T: Copy> LiveSlots<T> {
    pub fn new() -> Self {
        LiveSlots { slots: Vec::new(), live: Vec::new(), place: Vec::new() }
    }

    /// Live objects.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// One more than the largest index a slot has had.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Puts an object in slot `index`, which must be free.
    pub fn insert(&mut self, index: u32, object: T) {
        let i = index as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
            self.place.resize(i + 1, 0);
        }
        assert!(self.slots[i].is_none(), "the index of a live object was issued again");
        self.slots[i] = Some(object);
        self.place[i] = self.live.len() as u32;
        self.live.push(index);
    }

    /// Empties slot `index` and returns its object.
    pub fn remove(&mut self, index: u32) -> Option<T> {
        let i = index as usize;
        let object = self.slots.get_mut(i)?.take()?;
        let at = self.place[i] as usize;
        self.live.swap_remove(at);
        if let Some(&moved) = self.live.get(at) {
            self.place[moved as usize] = at as u32;
        }
        Some(object)
    }

    pub fn get(&self, index: u32) -> Option<&T> {
        self.slots.get(index as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        self.slots.get_mut(index as usize)?.as_mut()
    }

    /// A live object chosen by the input, or `None` when there is none.
    pub fn pick(&self, u: &mut Unstructured) -> Result<Option<T>> {
        if self.live.is_empty() {
            return Ok(None);
        }
        let k = u.int_in_range(0..=self.live.len() - 1)?;
        Ok(self.slots[self.live[k] as usize])
    }

    /// Live objects in index order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }
}
