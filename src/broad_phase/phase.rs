//! [`BroadPhase`] itself: its trees, objects and pair set, and the operations that change
//! objects (add, remove, move, filter and kind changes). Finding pairs is in `update.rs`, the
//! queries in `queries.rs`.

use glam::Vec3A;

use super::object::Object;
use super::pair_set::{NO_PAIR, PairEvents, PairSet};
use super::{BodyKind, BroadPhaseError, Filter, ObjectId};
use crate::dbvt::{Dbvt, DbvtConfig};
use crate::math::Aabb;

/// Tuning of a [`BroadPhase`].
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BroadPhaseConfig {
    /// The trees' tuning: the fat margin and the velocity prediction of moving objects' boxes
    /// ([`DbvtConfig::margin`], [`DbvtConfig::prediction`]) decide how often an object's box
    /// changes, and so how many objects each [`BroadPhase::update_pairs`] looks at.
    pub tree: DbvtConfig,
    /// Also report pairs of a kinematic object with a static or kinematic one (by default a pair
    /// needs a dynamic object; see [`BodyKind`]).
    pub kinematic_pairs: bool,
    /// [`BroadPhase::update_pairs`] searches for new pairs on rayon's threads (feature
    /// `parallel`) when at least this many objects changed. The events are the same either way.
    pub parallel_threshold: usize,
}

impl Default for BroadPhaseConfig {
    /// A margin of 0.05 and no velocity prediction (Bullet's `btDbvtBroadphase` defaults): the
    /// tracked pairs stay close to the overlapping ones, which is what the narrow phase pays
    /// for. A tree's own default prediction (2.0) suits slow movers but, on fast ones, tracks
    /// many more pairs (`docs/performance.md`, "The broad phase's choices, measured").
    fn default() -> Self {
        BroadPhaseConfig {
            tree: DbvtConfig { margin: 0.05, prediction: 0.0, ..DbvtConfig::default() },
            kinematic_pairs: false,
            parallel_threshold: 1024,
        }
    }
}

/// A broad phase: the objects of a physics world or a game level, and which pairs of them
/// overlap, updated frame after frame (Box2D's `b2BroadPhase`, Bullet's `btDbvtBroadphase`,
/// rapier's `BroadPhaseBvh`).
///
/// # When to use
///
/// Each frame a physics engine needs the pairs of objects that began to overlap and those that
/// stopped, to create and destroy contacts, rather than every overlapping pair from scratch.
/// Objects are kept in one [`Dbvt`] per [`BodyKind`], as fat boxes (their box grown by a margin
/// and stretched along their motion), so that small moves change nothing. Only objects whose fat
/// box changed (or whose filter or kind changed) are looked at by
/// [`BroadPhase::update_pairs`]. The same trees answer ray, box-cast, overlap and frustum
/// queries over every object, so scene queries need no second structure. For a set of boxes
/// without pair tracking, use a [`Dbvt`] directly.
///
/// # Determinism
///
/// The events are a function of the operations alone: the same calls give the same events in
/// the same order, whatever the thread count, and a broad phase saved and restored (feature
/// `serde`) goes on giving the events the original would.
///
/// ```
/// use slabtree::broad_phase::{BodyKind, BroadPhase};
/// use slabtree::Aabb;
/// use glam::Vec3A;
///
/// let cube = |x: f32| Aabb::from_center_half_extents(Vec3A::new(x, 0.0, 0.0), Vec3A::splat(0.5));
/// let mut world = BroadPhase::new();
/// let ground = world.add(Aabb::new(Vec3A::new(-50.0, -1.0, -50.0), Vec3A::new(50.0, -0.5, 50.0)), BodyKind::Static, "ground")?;
/// let ball = world.add(cube(0.0), BodyKind::Dynamic, "ball")?;
/// let crate_ = world.add(cube(5.0), BodyKind::Dynamic, "crate")?;
///
/// let events = world.update_pairs();
/// assert_eq!(events.began(), &[(ground, ball), (ground, crate_)]);
///
/// // The ball rolls into the crate: one pair begins.
/// for step in 1..=8 {
///     world.move_object(ball, cube(step as f32 * 0.5), Vec3A::new(0.5, 0.0, 0.0))?;
/// }
/// let events = world.update_pairs();
/// assert_eq!(events.began(), &[(ball, crate_)]);
/// assert!(events.ended().is_empty());
///
/// world.remove(crate_)?;
/// assert_eq!(world.update_pairs().ended(), &[(ground, crate_), (ball, crate_)]);
/// # Ok::<(), slabtree::broad_phase::BroadPhaseError>(())
/// ```
#[derive(Clone)]
pub struct BroadPhase<T> {
    pub(super) config: BroadPhaseConfig,
    /// One tree per [`BodyKind`] (in [`BodyKind::ALL`] order), each proxy's data its object's
    /// slot.
    pub(super) trees: [Dbvt<u32>; 3],
    pub(super) objects: Vec<Object>,
    /// Each slot's user data, `None` while the slot is free.
    pub(super) data: Vec<Option<T>>,
    /// Free object slots, the next to reuse last.
    pub(super) free: Vec<u32>,
    pub(super) count: u32,
    /// Slots whose fat box, filter or kind changed since the last `update_pairs` (with
    /// `Object::moved` set); a slot removed and reused may appear twice.
    pub(super) moved: Vec<u32>,
    /// How many objects of each tree changed since the last `update_pairs`.
    pub(super) moved_per_tree: [usize; 3],
    pub(super) pairs: PairSet,
    /// Pairs of objects removed since the last `update_pairs`.
    pub(super) removed_pairs: Vec<(ObjectId, ObjectId)>,
    pub(super) events: PairEvents,
    /// `move_objects`' list of the entries whose fat box changes: entry, slot and new box.
    pub(super) changes: Vec<(u32, u32, Aabb)>,
    /// The pair search's scratch (see `update.rs`).
    pub(super) search: Vec<super::scratch::SearchScratch>,
    /// Each tree's SAH cost after its last whole rebuild by `update_pairs` (0 before any).
    pub(super) rebuilt_sah: [f32; 3],
}

impl<T> Default for BroadPhase<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> BroadPhase<T> {
    /// An empty broad phase with the default [`BroadPhaseConfig`].
    pub fn new() -> Self {
        Self::with_config(BroadPhaseConfig::default())
    }

    /// An empty broad phase with the given tuning.
    pub fn with_config(config: BroadPhaseConfig) -> Self {
        BroadPhase {
            config,
            trees: std::array::from_fn(|_| Dbvt::with_config(config.tree)),
            objects: Vec::new(),
            data: Vec::new(),
            free: Vec::new(),
            count: 0,
            moved: Vec::new(),
            moved_per_tree: [0; 3],
            pairs: PairSet::new(),
            removed_pairs: Vec::new(),
            events: PairEvents::default(),
            changes: Vec::new(),
            search: Vec::new(),
            rebuilt_sah: [0.0; 3],
        }
    }

    /// The tuning in use.
    pub fn config(&self) -> &BroadPhaseConfig {
        &self.config
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// `true` when there is no object.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of pairs tracked: those reported as begun and not yet as ended.
    pub fn pair_count(&self) -> usize {
        self.pairs.len()
    }

    /// Every pair tracked, its smaller id first, in no particular order.
    pub fn pairs(&self) -> impl Iterator<Item = (ObjectId, ObjectId)> + '_ {
        self.pairs.iter().map(|[a, b]| (self.id_of(a), self.id_of(b)))
    }

    /// The events of the last [`BroadPhase::update_pairs`].
    pub fn events(&self) -> &PairEvents {
        &self.events
    }

    /// Checks an id and returns its slot.
    #[inline]
    pub(super) fn check(&self, id: ObjectId) -> Result<u32, BroadPhaseError> {
        match self.objects.get(id.index as usize) {
            Some(o) if o.generation == id.generation && o.live => Ok(id.index),
            _ => Err(BroadPhaseError::StaleObject(id)),
        }
    }

    /// The id of live slot `i`.
    #[inline]
    pub(super) fn id_of(&self, i: u32) -> ObjectId {
        ObjectId { index: i, generation: self.objects[i as usize].generation }
    }

    /// `true` when `id` names an object of this broad phase.
    pub fn contains(&self, id: ObjectId) -> bool {
        self.check(id).is_ok()
    }

    /// An object's user data.
    pub fn get(&self, id: ObjectId) -> Result<&T, BroadPhaseError> {
        let i = self.check(id)?;
        Ok(self.data[i as usize].as_ref().expect("checked live"))
    }

    /// An object's user data, mutably.
    pub fn get_mut(&mut self, id: ObjectId) -> Result<&mut T, BroadPhaseError> {
        let i = self.check(id)?;
        Ok(self.data[i as usize].as_mut().expect("checked live"))
    }

    /// An object's kind.
    pub fn kind(&self, id: ObjectId) -> Result<BodyKind, BroadPhaseError> {
        Ok(self.objects[self.check(id)? as usize].kind)
    }

    /// An object's filter.
    pub fn filter(&self, id: ObjectId) -> Result<Filter, BroadPhaseError> {
        Ok(self.objects[self.check(id)? as usize].filter)
    }

    /// The fat box stored for an object: the box pairs and queries test.
    pub fn fat_aabb(&self, id: ObjectId) -> Result<Aabb, BroadPhaseError> {
        Ok(self.objects[self.check(id)? as usize].fat)
    }

    /// Every object with its data, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (ObjectId, &T)> + '_ {
        self.data
            .iter()
            .zip(&self.objects)
            .enumerate()
            .filter_map(|(i, (d, o))| d.as_ref().map(|d| (ObjectId { index: i as u32, generation: o.generation }, d)))
    }

    /// Puts slot `i` in the move buffer, once.
    #[inline]
    fn mark_moved(&mut self, i: u32) {
        let o = &mut self.objects[i as usize];
        if !o.moved {
            o.moved = true;
            self.moved_per_tree[o.kind.tree()] += 1;
            self.moved.push(i);
        }
    }

    /// Adds an object with box `aabb` (stored fat, as [`Dbvt::insert`] stores it), the default
    /// [`Filter`] and user data `data`. Its pairs begin at the next
    /// [`BroadPhase::update_pairs`].
    ///
    /// Refuses a NaN, infinite or inverted box with [`BroadPhaseError::Input`].
    pub fn add(&mut self, aabb: Aabb, kind: BodyKind, data: T) -> Result<ObjectId, BroadPhaseError> {
        let i = match self.free.last() {
            Some(&i) => i,
            None if self.objects.len() as u32 >= u32::MAX / 2 => return Err(BroadPhaseError::CapacityExceeded),
            None => self.objects.len() as u32,
        };
        let proxy = self.trees[kind.tree()].insert(aabb, i)?;
        let fat = self.trees[kind.tree()].fat_aabb(proxy)?;
        let generation = self.objects.get(i as usize).map_or(0, |o| o.generation);
        let object = Object {
            fat,
            generation,
            live: true,
            kind,
            filter: Filter::default(),
            moved: false,
            proxy,
            batch_entry: 0,
        };
        if (i as usize) < self.objects.len() {
            self.free.pop();
            self.objects[i as usize] = object;
            self.data[i as usize] = Some(data);
        } else {
            self.objects.push(object);
            self.data.push(Some(data));
            self.pairs.ensure_object(i);
        }
        self.count += 1;
        self.mark_moved(i);
        Ok(self.id_of(i))
    }

    /// Removes an object and returns its data. Its pairs are reported as ended, under this id, by
    /// the next [`BroadPhase::update_pairs`].
    pub fn remove(&mut self, id: ObjectId) -> Result<T, BroadPhaseError> {
        let i = self.check(id)?;
        let (kind, proxy) = (self.objects[i as usize].kind, self.objects[i as usize].proxy);
        self.trees[kind.tree()].remove(proxy)?;
        loop {
            let p = self.pairs.first(i);
            if p == NO_PAIR {
                break;
            }
            let [a, b] = self.pairs.remove(p);
            self.removed_pairs.push((self.id_of(a), self.id_of(b)));
        }
        let o = &mut self.objects[i as usize];
        if o.moved {
            o.moved = false;
            self.moved_per_tree[kind.tree()] -= 1;
        }
        o.generation = o.generation.wrapping_add(1);
        o.live = false;
        self.free.push(i);
        self.count -= 1;
        Ok(self.data[i as usize].take().expect("checked live"))
    }

    /// Moves an object to box `aabb`, given its `displacement` since the last move (which
    /// stretches its fat box along the motion; [`Vec3A::ZERO`] for a teleport). Returns `true`
    /// when its fat box changed, so that the next [`BroadPhase::update_pairs`] looks at it;
    /// `false` when the move stayed inside it and changed nothing.
    ///
    /// The tree's boxes are grown in place ([`Dbvt::enlarge_proxy`]), so queries stay exact
    /// before the next `update_pairs`, which tightens them.
    ///
    /// On error (stale id, bad box or displacement) nothing is changed.
    pub fn move_object(&mut self, id: ObjectId, aabb: Aabb, displacement: Vec3A) -> Result<bool, BroadPhaseError> {
        let i = self.check(id)?;
        let o = &self.objects[i as usize];
        let tree = &mut self.trees[o.kind.tree()];
        let changed = tree.enlarge_proxy(o.proxy, aabb, displacement)?;
        if changed {
            self.objects[i as usize].fat = tree.fat_aabb(o.proxy)?;
            self.mark_moved(i);
        }
        Ok(changed)
    }

    /// [`BroadPhase::move_object`] for a batch, the usual shape of a physics step, and faster
    /// than one call per object: returns how many fat boxes changed. `moves` is a slice or any
    /// iterator of `(id, box, displacement)`, read once (so a frame's moves need not be copied
    /// into a vector first). Every entry is checked before anything changes: if one is bad,
    /// nothing is. An object listed more than once ends where its last entry puts it.
    ///
    /// ```
    /// use slabtree::{Aabb, BodyKind, BroadPhase};
    /// use glam::Vec3A;
    /// let mut world = BroadPhase::new();
    /// let unit = |x: f32| Aabb::from_center_half_extents(Vec3A::new(x, 0.0, 0.0), Vec3A::splat(0.5));
    /// let ids = [world.add(unit(0.0), BodyKind::Dynamic, ())?, world.add(unit(5.0), BodyKind::Dynamic, ())?];
    /// // The solver's new positions, handed over without a copy.
    /// let xs = [0.01, 1.5];
    /// let changed = world.move_objects(ids.iter().zip(xs).map(|(&id, x)| (id, unit(x), Vec3A::ZERO)))?;
    /// assert_eq!(changed, 1); // the first stayed inside its fat box
    /// # Ok::<(), slabtree::BroadPhaseError>(())
    /// ```
    pub fn move_objects<M>(&mut self, moves: impl IntoIterator<Item = M>) -> Result<usize, BroadPhaseError>
    where
        M: std::borrow::Borrow<(ObjectId, Aabb, Vec3A)>,
    {
        // One pass checks every entry and finds the fat boxes that change, from the copies kept
        // here (most moves of a frame stay inside their fat box and need nothing more); the
        // second writes only those. An object listed more than once ends where its last entry
        // puts it: each change marks the object with its entry, and only the changes whose entry
        // is still the mark are written.
        let mut changes = std::mem::take(&mut self.changes);
        changes.clear();
        for (k, entry) in moves.into_iter().enumerate() {
            let (id, aabb, d) = entry.borrow();
            let k = u32::try_from(k).unwrap_or(u32::MAX - 1);
            let Ok(i) = self.check(*id) else {
                self.changes = changes;
                return Err(BroadPhaseError::StaleObject(*id));
            };
            let o = &self.objects[i as usize];
            match self.trees[o.kind.tree()].checked_refattened(&o.fat, aabb, *d) {
                Ok(Some(fat)) => {
                    changes.push((k, i, fat));
                    self.objects[i as usize].batch_entry = k;
                }
                Ok(None) => {
                    // When an earlier entry of this batch changed this object's box, that change
                    // is dropped, and the stored box, which holds this entry's box, stays. (A
                    // mark left by an earlier batch names no change of this one.)
                    let earlier = o.batch_entry;
                    if earlier < k && changes.binary_search_by_key(&earlier, |c| c.0).is_ok_and(|at| changes[at].1 == i)
                    {
                        self.objects[i as usize].batch_entry = u32::MAX;
                    }
                }
                Err(e) => {
                    self.changes = changes;
                    return Err(e.into());
                }
            }
        }
        changes.retain(|&(k, i, _)| self.objects[i as usize].batch_entry == k);
        for &(_, i, fat) in &changes {
            let o = &mut self.objects[i as usize];
            o.fat = fat;
            self.trees[o.kind.tree()].enlarge_checked(o.proxy, fat);
            self.mark_moved(i);
        }
        let changed = changes.len();
        self.changes = changes;
        Ok(changed)
    }

    /// Sets an object's filter. Pairs it no longer passes end, and pairs it now passes begin, at
    /// the next [`BroadPhase::update_pairs`].
    pub fn set_filter(&mut self, id: ObjectId, filter: Filter) -> Result<(), BroadPhaseError> {
        let i = self.check(id)?;
        if self.objects[i as usize].filter != filter {
            self.objects[i as usize].filter = filter;
            self.mark_moved(i);
        }
        Ok(())
    }

    /// Changes an object's kind (a body put to sleep as static, a door that starts to move). Its
    /// fat box is kept; the pairs the new kind forbids end, and those it allows begin, at the next
    /// [`BroadPhase::update_pairs`].
    pub fn set_kind(&mut self, id: ObjectId, kind: BodyKind) -> Result<(), BroadPhaseError> {
        let i = self.check(id)?;
        let (old, proxy) = (self.objects[i as usize].kind, self.objects[i as usize].proxy);
        if old == kind {
            return Ok(());
        }
        let new_proxy = self.trees[kind.tree()].insert_stored(self.objects[i as usize].fat, i)?;
        self.trees[old.tree()].remove(proxy)?;
        let o = &mut self.objects[i as usize];
        if o.moved {
            self.moved_per_tree[old.tree()] -= 1;
            self.moved_per_tree[kind.tree()] += 1;
        }
        (o.kind, o.proxy) = (kind, new_proxy);
        self.mark_moved(i);
        Ok(())
    }

    /// Removes every object. Their pairs are reported as ended by the next
    /// [`BroadPhase::update_pairs`].
    pub fn clear(&mut self) {
        let ids: Vec<ObjectId> = self.iter().map(|(id, _)| id).collect();
        for id in ids {
            let _ = self.remove(id);
        }
    }
}
