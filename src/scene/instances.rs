//! The scene itself: the instance table and its tree ([`Scene`]), instances and their ids,
//! adding, removing and moving them, and which form of the tree rays walk ([`RayTree`]). The
//! queries are in the files named for them (see the module's table).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use glam::{Affine3A, Mat3A, Vec3A};

use crate::dbvt::{Dbvt, DbvtConfig, ProxyId, WideView};
use crate::math::Aabb;
use crate::mesh::MeshBvh;

use super::SceneError;
use super::id::{InstanceId, InstanceSlot};

/// One instance: a shared mesh under an affine transform.
#[derive(Clone, Debug)]
pub struct Instance {
    pub(super) mesh: Arc<MeshBvh>,
    pub(super) transform: Affine3A,
    /// World space to instance space; its linear part, transposed, carries normals to world
    /// space (transposed per hit rather than stored: a move writes 48 fewer bytes).
    pub(super) inverse: Affine3A,
    pub(super) user_id: u64,
    pub(super) mask: u32,
    pub(super) proxy: ProxyId,
    pub(super) world: Aabb,
}

impl Instance {
    /// The mesh.
    pub fn mesh(&self) -> &Arc<MeshBvh> {
        &self.mesh
    }
    /// Instance space to world space.
    pub fn transform(&self) -> &Affine3A {
        &self.transform
    }
    /// World space to instance space.
    pub fn inverse(&self) -> &Affine3A {
        &self.inverse
    }
    /// The caller's id.
    pub fn user_id(&self) -> u64 {
        self.user_id
    }
    /// The filter mask: a query with mask `m` considers the instance when `mask & m != 0`.
    pub fn mask(&self) -> u32 {
        self.mask
    }
    /// The tight world-space box (the tree stores a fat one around it).
    pub fn world_aabb(&self) -> Aabb {
        self.world
    }
}

pub(super) struct Slot {
    pub(super) generation: u32,
    pub(super) inst: Option<Instance>,
}

static NEXT_SCENE_TAG: AtomicU32 = AtomicU32::new(1);

/// A summary: the instance count and the instance tree's summary (see [`Dbvt`]'s `Debug`).
impl std::fmt::Debug for Scene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scene").field("instances", &self.count).field("tree", &self.tree).finish_non_exhaustive()
    }
}

/// Instances of triangle meshes, for picking, occlusion, frustum culling, overlap and swept-box
/// queries. See the [module docs](crate::scene).
///
/// # When to use
///
/// Many objects that move as wholes, or many copies of a few meshes: a renderer's visibility and
/// picking layer, a game level. One static model is faster as one [`MeshBvh`]: a ray through a
/// scene walks the instance tree and restarts in each instance's BVH (a third slower on the
/// command's default scene of 282 objects, `docs/performance.md`).
///
/// # Cost
///
/// Moving an instance is an O(1) leaf update, applied to the instance tree by one refit per batch
/// ([`Scene::set_transforms`]); [`Scene::optimize`] keeps the tree's quality over time. Queries
/// allocate nothing once warm (but [`Scene::overlap`] and [`Scene::visible`], which return their
/// result). Masks select instances per query at no extra cost.
pub struct Scene {
    pub(super) tree: Dbvt<InstanceSlot>,
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<u32>,
    pub(super) count: usize,
    pub(super) tag: u32,
    /// The instance tree collapsed 8 wide for ray queries: made once enough rays have been cast
    /// since the last change to pay for it (see [`Scene::wide_view`]), set aside by every change
    /// of the instance tree.
    pub(super) wide: OnceLock<WideView>,
    /// Rays cast since the last change, towards that threshold.
    pub(super) rays_since_change: AtomicU64,
    /// Rays cast between the last two changes that had rays between them: the forecast for
    /// the rays until the next change.
    pub(super) rays_last_interval: u64,
    /// The last wide copy set aside, refitted by the next one when the tree's links have not
    /// changed since (only boxes moved), else collapsed into its storage.
    pub(super) wide_spare: Mutex<Option<WideView>>,
    /// Whether `wide_spare` can be refitted to the tree as it is: updated by each change.
    pub(super) spare_refits: bool,
    /// The instance tree's `topology` at the last change, to count the intervals between
    /// changes of its links.
    pub(super) topology_seen: u64,
    /// Intervals (changes with rays between them) since the tree's links last changed.
    pub(super) intervals_since_relink: u32,
    /// Intervals the last time the links stayed unchanged, at least 1: how long a collapsed
    /// wide copy is expected to live, since moves in between keep it up to date for free.
    pub(super) intervals_per_relink: u32,
    /// `set_transforms`' batch for the tree, kept so that a frame's moves allocate nothing.
    pub(super) move_scratch: Vec<(ProxyId, Aabb, Vec3A)>,
    /// `set_transforms`' checked placements, kept for the same reason.
    pub(super) place_scratch: Vec<(usize, Placement)>,
    /// Which tree ray queries walk.
    pub(super) ray_tree: RayTree,
    /// Instances in view at the last frustum query (before masks): when that was at least a
    /// quarter of the scene, the next query scans every box instead of walking the tree
    /// ([`Dbvt::frustum_scan`]).
    pub(super) last_in_view: AtomicU32,
}

/// Which form of the instance tree ray queries (`pick`, `occluded` and their batches) walk. All
/// three give the same answers (the tests run every query under each); they differ in speed.
///
/// ```
/// use slabtree::scene::{RayTree, Scene};
/// let mut scene = Scene::new();
/// assert_eq!(scene.ray_tree(), RayTree::Auto);
/// scene.set_ray_tree(RayTree::Wide); // a static scene about to take many rays
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RayTree {
    /// The 8-wide copy when the rays expected before it must be collapsed again repay making it,
    /// else the binary dynamic tree. Rays run faster on the copy, but it costs a collapse (O(n))
    /// after each change of the tree's links (`docs/performance.md`). Batched moves ([`Scene::set_transforms`]) keep the links, and the
    /// refit writes their boxes into the copy as it goes, so the copy lives until the
    /// optimiser or an insertion next changes the links. The forecast is the rays per interval
    /// between changes (the larger of those cast since the last change and those cast in the
    /// interval before) times the intervals the links last stayed unchanged. In the picking
    /// frame loop (100 picks per frame) the rays take the copy at 1k and 10k instances, where
    /// the optimiser refreshes the tree every couple of dozen frames, and stay on the binary
    /// tree at 100k, where its treelet rounds change the links every frame or two.
    #[default]
    Auto,
    /// Always the binary dynamic tree; no copy is made.
    Binary,
    /// Always the 8-wide copy, made (collapsed or refitted) at the first ray after each change.
    Wide,
}

/// [`RayTree::Auto`] makes the 8-wide copy once `rays * COLLAPSE_GAIN >= instances`, where
/// `rays` is the forecast of rays until the links next change (see [`RayTree::Auto`]): about
/// where the rays' savings repay a collapse, with some margin, on the picking workload; the
/// collapse's and the rays' costs behind it are in `docs/performance.md`.
pub(super) const COLLAPSE_GAIN: usize = 12;
/// As [`COLLAPSE_GAIN`] when the last copy can be refitted instead, which costs far less than a
/// collapse.
pub(super) const REFIT_GAIN: usize = 100;

impl Default for Scene {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a transform puts a mesh: everything an instance derives from its transform.
pub(super) struct Placement {
    pub(super) transform: Affine3A,
    pub(super) inverse: Affine3A,
    pub(super) world: Aabb,
}

/// Checks `transform` (finite and invertible, with a finite inverse) and places `mesh` under it;
/// the one check every way of setting a transform goes through.
pub(super) fn place(mesh: &MeshBvh, transform: Affine3A) -> Result<Placement, SceneError> {
    let t = &transform;
    let finite = t.matrix3.is_finite() && t.translation.is_finite();
    let det = t.matrix3.determinant();
    if !finite || det == 0.0 || !det.is_finite() {
        return Err(SceneError::InvalidTransform);
    }
    let inverse = t.inverse();
    if !(inverse.matrix3.is_finite() && inverse.translation.is_finite()) {
        return Err(SceneError::InvalidTransform);
    }
    let local = mesh.bounds().unwrap_or(Aabb::new(Vec3A::ZERO, Vec3A::ZERO));
    let world = transform_aabb(t, &local);
    world.validate()?;
    Ok(Placement { transform, inverse, world })
}

impl Instance {
    pub(super) fn set_placement(&mut self, p: Placement) {
        self.transform = p.transform;
        self.inverse = p.inverse;
        self.world = p.world;
    }

    /// An instance-space normal in world space, unit length (zero if degenerate): multiplied by
    /// the inverse transpose of the linear part, which keeps it perpendicular to the surface
    /// under non-uniform scale and shear.
    #[inline]
    pub(crate) fn normal_to_world(&self, n: Vec3A) -> Vec3A {
        (self.inverse.matrix3.transpose() * n).normalize_or_zero()
    }
}

/// The world box of `local` under `t` (Arvo 1990: centre transformed, half-extents by |M|),
/// padded by a relative 2^-20 so that f32 rounding never makes it smaller than the exact box.
pub(crate) fn transform_aabb(t: &Affine3A, local: &Aabb) -> Aabb {
    let c = t.transform_point3a(local.center());
    let h = local.half_extents();
    let m = t.matrix3;
    let abs = Mat3A::from_cols(m.x_axis.abs(), m.y_axis.abs(), m.z_axis.abs());
    let e = abs * h;
    let pad = (c.abs() + e) * (1.0 / 1_048_576.0) + Vec3A::splat(f32::MIN_POSITIVE);
    Aabb::new(c - e - pad, c + e + pad)
}

impl Scene {
    /// An empty scene with the default tree tuning.
    pub fn new() -> Scene {
        Self::with_config(DbvtConfig::default())
    }

    /// An empty scene whose instance tree uses `config` (fat margin, motion prediction).
    pub fn with_config(config: DbvtConfig) -> Scene {
        Scene {
            tree: Dbvt::with_config(config),
            slots: Vec::new(),
            free: Vec::new(),
            count: 0,
            tag: NEXT_SCENE_TAG.fetch_add(1, Ordering::Relaxed),
            wide: OnceLock::new(),
            rays_since_change: AtomicU64::new(0),
            last_in_view: AtomicU32::new(0),
            rays_last_interval: 0,
            wide_spare: Mutex::new(None),
            spare_refits: false,
            topology_seen: 0,
            intervals_since_relink: 0,
            intervals_per_relink: 1,
            move_scratch: Vec::new(),
            place_scratch: Vec::new(),
            ray_tree: RayTree::Auto,
        }
    }

    /// Which tree ray queries walk (see [`RayTree`]).
    pub fn ray_tree(&self) -> RayTree {
        self.ray_tree
    }

    /// Chooses which tree ray queries walk (see [`RayTree`]). A wide copy already made stays
    /// valid, and is kept, unless the choice is [`RayTree::Binary`], which frees it.
    pub fn set_ray_tree(&mut self, ray_tree: RayTree) {
        if ray_tree == RayTree::Binary {
            self.changed();
        }
        self.ray_tree = ray_tree;
    }

    /// The 8-wide copy of the instance tree for ray queries, or `None` when they should walk the
    /// binary tree: always with [`RayTree::Binary`], and with [`RayTree::Auto`] while too few
    /// rays are expected before the next change to repay making it (see [`COLLAPSE_GAIN`]).
    pub(crate) fn wide_view(&self, rays: u64) -> Option<&WideView> {
        // Counted even once the copy exists: the count is the next interval's forecast.
        if rays > 0 {
            self.rays_since_change.fetch_add(rays, Ordering::Relaxed);
        }
        if let Some(v) = self.wide.get() {
            return Some(v);
        }
        match self.ray_tree {
            RayTree::Binary => return None,
            RayTree::Wide => {}
            RayTree::Auto => {
                let per_interval = self.rays_since_change.load(Ordering::Relaxed).max(self.rays_last_interval);
                // A collapsed copy serves every ray until the links next change: batched moves
                // in between are written into it by the refit (`Dbvt::refit_mirrored`).
                let (forecast, gain) = if self.spare_refits {
                    (per_interval, REFIT_GAIN)
                } else {
                    (per_interval.saturating_mul(u64::from(self.intervals_per_relink)), COLLAPSE_GAIN)
                };
                if (forecast as usize).saturating_mul(gain) < self.tree.len() {
                    return None;
                }
            }
        }
        // Threads racing here: one takes the spare, the others collapse afresh; one copy is
        // kept, all are equal.
        let spare = self.wide_spare.lock().ok().and_then(|mut s| s.take());
        let view = self.tree.wide_view(spare).ok()?;
        Some(self.wide.get_or_init(|| view))
    }

    /// Sets the wide copy aside: called by every method that changes the instance tree (its
    /// structure or its boxes), after the change, and only then.
    pub(super) fn changed(&mut self) {
        if let Ok(spare) = self.wide_spare.get_mut() {
            if let Some(old) = self.wide.take() {
                *spare = Some(old);
            }
            self.spare_refits = spare.as_ref().is_some_and(|v| self.tree.can_refit_wide(v));
        }
        self.count_interval();
    }

    /// The forecast's bookkeeping of a change: the rays of the interval it closes, and whether
    /// it changed the tree's links. [`Scene::changed`] does this too; a change that kept the
    /// wide copy up to date (batched moves) does only this.
    pub(super) fn count_interval(&mut self) {
        // Consecutive changes with no ray between them (a move, then an optimisation) are one
        // interval for the forecast.
        let rays = std::mem::take(self.rays_since_change.get_mut());
        if rays > 0 {
            self.rays_last_interval = rays;
            self.intervals_since_relink += 1;
        }
        if self.tree.topology() != self.topology_seen {
            self.topology_seen = self.tree.topology();
            self.intervals_per_relink = self.intervals_since_relink.max(1);
            self.intervals_since_relink = 0;
        }
    }

    /// Number of instances.
    pub fn len(&self) -> usize {
        self.count
    }

    /// `true` when there is no instance.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Checks the instance tree's invariants (the tree's [`Dbvt::validate`]: links, boxes
    /// enclosing their children, the instance count): for tests and fuzzing, and after a
    /// change you suspect.
    pub fn validate(&self) -> Result<(), crate::dbvt::ValidationError> {
        self.tree.validate()
    }

    /// The instance tree's shape: node count, height, SAH cost.
    pub fn tree_stats(&self) -> crate::dbvt::TreeStats {
        self.tree.stats()
    }

    /// The mask that every query mask shares a bit with: pass it to query every instance.
    pub const ALL: u32 = u32::MAX;

    /// Adds an instance of `mesh` under `transform`, with the filter `mask` (see
    /// [`Instance::mask`]; [`Scene::ALL`] makes it seen by every query).
    pub fn add(
        &mut self,
        mesh: Arc<MeshBvh>,
        transform: Affine3A,
        user_id: u64,
        mask: u32,
    ) -> Result<InstanceId, SceneError> {
        let p = place(&mesh, transform)?;
        let index = match self.free.last() {
            Some(&i) => i,
            None => self.slots.len() as u32,
        };
        let generation = self.slots.get(index as usize).map_or(0, |s| s.generation);
        let proxy = self.tree.insert(p.world, InstanceSlot { index, generation, mask })?;
        self.changed();
        if self.free.pop().is_none() {
            self.slots.push(Slot { generation: 0, inst: None });
        }
        let slot = &mut self.slots[index as usize];
        let (transform, inverse, world) = (p.transform, p.inverse, p.world);
        slot.inst = Some(Instance { mesh, transform, inverse, user_id, mask, proxy, world });
        self.count += 1;
        Ok(InstanceId { index, generation: slot.generation, scene: self.tag })
    }

    pub(super) fn check(&self, id: InstanceId) -> Result<usize, SceneError> {
        if id.scene != self.tag {
            return Err(SceneError::ForeignInstance(id));
        }
        match self.slots.get(id.index as usize) {
            Some(s) if s.generation == id.generation && s.inst.is_some() => Ok(id.index as usize),
            _ => Err(SceneError::StaleInstance(id)),
        }
    }

    pub(crate) fn id_of(&self, index: u32) -> InstanceId {
        InstanceId { index, generation: self.slots[index as usize].generation, scene: self.tag }
    }

    #[inline]
    pub(crate) fn id_from(&self, s: &InstanceSlot) -> InstanceId {
        InstanceId { index: s.index, generation: s.generation, scene: self.tag }
    }

    #[inline]
    pub(crate) fn slot(&self, index: u32) -> &Instance {
        self.slots[index as usize].inst.as_ref().expect("the tree only holds live instances")
    }

    /// The instance `id` names.
    pub fn get(&self, id: InstanceId) -> Result<&Instance, SceneError> {
        let i = self.check(id)?;
        Ok(self.slots[i].inst.as_ref().expect("checked live"))
    }

    /// `true` when `id` names a live instance of this scene.
    pub fn contains(&self, id: InstanceId) -> bool {
        self.check(id).is_ok()
    }

    /// Every instance, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (InstanceId, &Instance)> + '_ {
        self.slots.iter().enumerate().filter_map(move |(i, s)| s.inst.as_ref().map(|x| (self.id_of(i as u32), x)))
    }

    /// Removes an instance and returns its user id; `id` becomes stale.
    pub fn remove(&mut self, id: InstanceId) -> Result<u64, SceneError> {
        let i = self.check(id)?;
        let proxy = self.slots[i].inst.as_ref().expect("checked live").proxy;
        self.tree.remove(proxy)?;
        self.changed();
        let slot = &mut self.slots[i];
        let inst = slot.inst.take().expect("checked live");
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(i as u32);
        self.count -= 1;
        Ok(inst.user_id)
    }

    /// Changes an instance's filter mask.
    pub fn set_mask(&mut self, id: InstanceId, mask: u32) -> Result<(), SceneError> {
        // The tree's boxes stay: the wide copy reads masks from the tree's leaf data, live.
        let i = self.check(id)?;
        let inst = self.slots[i].inst.as_mut().expect("checked live");
        inst.mask = mask;
        self.tree.get_mut(inst.proxy)?.mask = mask;
        Ok(())
    }

    /// Moves an instance: a fat-margin move of its world box, free while the new box stays inside
    /// the fat one, a reinsertion otherwise. Returns `true` when the tree changed. A NaN, infinite
    /// or singular transform is refused with [`SceneError::InvalidTransform`].
    pub fn set_transform(&mut self, id: InstanceId, transform: Affine3A) -> Result<bool, SceneError> {
        let i = self.check(id)?;
        let inst = self.slots[i].inst.as_ref().expect("checked live");
        let p = place(&inst.mesh, transform)?;
        let changed = self.tree.move_proxy(inst.proxy, p.world, p.world.center() - inst.world.center())?;
        self.slots[i].inst.as_mut().expect("checked live").set_placement(p);
        // A move inside the fat box leaves the tree, and so the wide copy, as it was: queries read
        // the instance's new transform from its slot.
        if changed {
            self.changed();
        }
        Ok(changed)
    }

    /// Moves many instances in one pass, the usual shape of a frame: each world box is stored in
    /// O(1) (no reinsertion) and one linear refit fixes the tree afterwards
    /// ([`Dbvt::update_proxies`] and [`Dbvt::refit`]). Every entry is checked first; on error
    /// nothing changes. Returns how many stored boxes changed. Follow with
    /// [`Scene::optimize`] now and then to keep the tree's quality.
    pub fn set_transforms(&mut self, moves: &[(InstanceId, Affine3A)]) -> Result<usize, SceneError> {
        // Both batches live in the scene between calls: fresh ones (2 MB of placements per
        // frame at 100k instances) were mapped and faulted in anew every frame, as glibc maps
        // blocks this large.
        let mut tree_moves = std::mem::take(&mut self.move_scratch);
        let mut plan = std::mem::take(&mut self.place_scratch);
        tree_moves.clear();
        plan.clear();
        let checked = self
            .plan_moves(moves, &mut tree_moves, &mut plan)
            .and_then(|()| Ok(self.tree.update_proxies(&tree_moves)?));
        if let Ok(changed) = checked
            && changed > 0
        {
            // The wide copy, if there is one, is written by the refit as the boxes change (see
            // `Dbvt::refit_mirrored`) and stays the copy; else it is set aside as by any change.
            if self.tree.refit_mirrored(self.wide.get_mut()) {
                self.count_interval();
            } else {
                self.changed();
            }
        }
        if checked.is_ok() {
            for (i, p) in plan.drain(..) {
                self.slots[i].inst.as_mut().expect("checked live").set_placement(p);
            }
        }
        self.move_scratch = tree_moves;
        self.place_scratch = plan;
        checked
    }

    /// Checks every move of a batch and places its instance, changing nothing: the tree's moves
    /// into `tree_moves`, the placements into `plan`.
    pub(super) fn plan_moves(
        &self,
        moves: &[(InstanceId, Affine3A)],
        tree_moves: &mut Vec<(ProxyId, Aabb, Vec3A)>,
        plan: &mut Vec<(usize, Placement)>,
    ) -> Result<(), SceneError> {
        for &(id, transform) in moves {
            let i = self.check(id)?;
            let inst = self.slots[i].inst.as_ref().expect("checked live");
            let p = place(&inst.mesh, transform)?;
            tree_moves.push((inst.proxy, p.world, p.world.center() - inst.world.center()));
            plan.push((i, p));
        }
        Ok(())
    }

    /// Incremental optimisation of the instance tree (see [`Dbvt::optimize_incremental`]).
    pub fn optimize(&mut self, budget: usize) -> usize {
        let rebuilt = self.tree.optimize_incremental(budget);
        if rebuilt > 0 {
            self.changed();
        }
        rebuilt
    }

    /// Rebuilds the instance tree with binned SAH.
    pub fn rebuild(&mut self) {
        self.tree.rebuild();
        self.changed();
    }
}
