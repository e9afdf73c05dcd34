//! [`Dbvt`] itself: the arena of nodes and proxies its other files work on, its tuning
//! ([`DbvtConfig`]) and its handles ([`ProxyId`]). The operations are in the files named for them
//! (see the module's table).

use std::sync::atomic::{AtomicU32, Ordering};

use glam::Vec3A;

use super::DbvtError;
use super::node::{ChildRef, NULL, Node};
use super::proxy::{Proxy, ProxyId, Slot};
use crate::math::Aabb;

/// Tuning of a [`Dbvt`].
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DbvtConfig {
    /// Margin added on every side of a proxy's box to make its fat box (Box2D's
    /// `aabbMargin`, Bullet's 0.05). Small moves inside the fat box cost nothing.
    pub margin: f32,
    /// The fat box is also stretched by `prediction * displacement` in the direction of motion
    /// (Box2D v2's `aabbMultiplier`, Bullet's velocity `SignedExpand`).
    pub prediction: f32,
    /// A full rebuild above this many proxies splits its work across rayon's threads.
    pub parallel_threshold: usize,
    /// [`Dbvt::optimize_incremental`] rebuilds a tree of at most this many proxies whole with
    /// binned SAH, in one call once its saved-up budget covers every leaf: the best tree, at
    /// the cost of one long call. Default 0: every tree up to `refresh_max` is
    /// refreshed instead, which keeps frames shorter and their worst case smaller. Raise it for
    /// small trees that should stay at a binned build's quality.
    pub whole_rebuild_max: usize,
    /// Above `whole_rebuild_max` and up to this many proxies, [`Dbvt::optimize_incremental`]
    /// refreshes the tree: one [`Dbvt::rebuild_morton`] of the whole tree once its SAH cost has
    /// grown by `refresh_growth` since the last whole rebuild and the budgets since the last
    /// refresh have paid for it (an eighth of a leaf per proxy). A tree built by insertion is
    /// instead rebuilt with binned SAH at the first call if a Morton tree would have a lower
    /// SAH cost. A refresh restores what treelet
    /// rebuilds cannot (which leaves share a subtree) and lands in one call, so the default of
    /// 131072 bounds that call's length; larger trees are optimised in treelets. 0 turns it off.
    /// The measurements behind the defaults are in `docs/performance.md`.
    pub refresh_max: usize,
    /// How much the SAH cost may grow after a whole rebuild before a refresh (see
    /// `refresh_max`): 0.05 is 5%.
    pub refresh_growth: f32,
    /// Bulk builds ([`Dbvt::build`], [`Dbvt::rebuild`]) split each node along the axis where
    /// its boxes' centres spread most, as parry's builder does, instead of trying all three:
    /// much less work per proxy, for trees slightly worse in SAH cost
    /// (`docs/performance.md`). Default `true`; `false` builds the best
    /// tree. The optimiser's own rebuilds ([`Dbvt::optimize_incremental`]) always try all three
    /// axes: they exist for quality.
    pub fast_build: bool,
}

impl Default for DbvtConfig {
    fn default() -> Self {
        DbvtConfig {
            margin: 0.1,
            prediction: 2.0,
            parallel_threshold: 8192,
            whole_rebuild_max: 0,
            refresh_max: 131_072,
            refresh_growth: 0.05,
            fast_build: true,
        }
    }
}

static NEXT_TREE_TAG: AtomicU32 = AtomicU32::new(1);

/// A dynamic bounding-volume tree of axis-aligned boxes with user data `T`.
///
/// # When to use
///
/// Objects that move, appear and disappear: a game's or a physics engine's broad phase, picking
/// among moving objects, the top level of a [`crate::Scene`]. For static triangles, a
/// [`crate::MeshBvh`] is faster (8-wide nodes, triangle packs).
///
/// # Cost
///
/// A move inside the proxy's fat box costs nothing; [`Dbvt::update_proxies`] with one
/// [`Dbvt::refit`] per frame is O(1) per moved proxy plus one pass over the changed nodes;
/// [`Dbvt::insert`] and removal are O(log n) on a balanced tree. Queries walk the tree with a
/// stack in a [`QueryWorkspace`](super::QueryWorkspace) and allocate nothing once it has grown. Every query refuses to
/// run while a refit is pending ([`DbvtError::RefitPending`]) rather than miss a moved proxy.
///
/// ```
/// use slabtree::{Aabb, Dbvt, QueryWorkspace, Ray};
/// use glam::Vec3A;
///
/// let mut tree = Dbvt::new();
/// let a = tree.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), "crate")?;
/// let b = tree.insert(Aabb::new(Vec3A::splat(4.0), Vec3A::splat(5.0)), "barrel")?;
///
/// let mut ws = QueryWorkspace::new();
/// let ray = Ray::new(Vec3A::new(-1.0, 0.5, 0.5), Vec3A::X);
/// let hit = tree.intersect(&ray, &mut ws)?.expect("the crate is on the ray");
/// assert_eq!(hit.id, a);
/// assert_eq!(tree.get(hit.id)?, &"crate");
///
/// // Moves inside the fat box are free; leaving it reinserts the proxy.
/// let changed = tree.move_proxy(b, Aabb::new(Vec3A::splat(9.0), Vec3A::splat(10.0)), Vec3A::splat(5.0))?;
/// assert!(changed);
/// tree.remove(a)?;
/// assert!(tree.get(a).is_err()); // stale id: an error, never another proxy
/// tree.validate().unwrap();
/// # Ok::<(), slabtree::DbvtError>(())
/// ```
#[derive(Clone)]
pub struct Dbvt<T> {
    pub(super) nodes: Vec<Node>,
    pub(super) free_node: u32,
    pub(super) free_node_count: u32,
    pub(super) proxies: Vec<Proxy>,
    pub(super) slots: Vec<Slot<T>>,
    pub(super) free_proxy: u32,
    pub(super) proxy_count: u32,
    pub(super) root: Option<ChildRef>,
    pub(super) root_bounds: Aabb,
    pub(super) config: DbvtConfig,
    pub(super) tag: u32,
    /// `optimize_incremental`'s progress between calls.
    pub(super) optimizer: OptimizerState,
    /// The previous arena, kept by `relayout` to copy into next time without fresh allocation.
    pub(super) spare_nodes: Vec<Node>,
    /// `relayout`'s map from old to new node indices, kept for the same reason.
    pub(super) relayout_map: Vec<u32>,
    /// Nodes are in depth-first pre-order (every child after its parent), so `refit` can sweep
    /// the arena backwards. Set by `rebuild` and by `refit`'s relayout; cleared by any change of
    /// structure.
    pub(super) ordered: bool,
    /// Structural changes (node allocations, frees, rotations) since the arena was last laid
    /// out depth-first; `refit` lays it out again only when these are many.
    pub(super) disorder: u32,
    /// Some leaf boxes were changed by `update_proxy` and the ancestors not yet refitted; queries
    /// refuse to run until `refit`.
    pub(super) refit_pending: bool,
    /// Bumped by every change of a child link or a node index (insertion, removal, rotation,
    /// relayout, rebuild, optimisation), never by a change of bounds alone: a copy of the tree
    /// made at the same `topology` (the 8-wide view) can be refitted instead of rebuilt.
    pub(super) topology: u64,
    /// `rebuild_morton`'s buffers.
    pub(super) morton: MortonScratch,
    /// The explicit stack of the arena walks (`relayout`, `refit`'s post-order walk), kept so
    /// that a warm tree's per-frame maintenance allocates nothing.
    pub(super) walk_stack: Vec<(u32, u32, u8)>,
}

impl<T> Default for Dbvt<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Dbvt<T> {
    /// An empty tree with the default [`DbvtConfig`].
    pub fn new() -> Self {
        Self::with_config(DbvtConfig::default())
    }

    /// An empty tree with the given tuning.
    pub fn with_config(config: DbvtConfig) -> Self {
        Dbvt {
            nodes: Vec::new(),
            free_node: NULL,
            free_node_count: 0,
            proxies: Vec::new(),
            slots: Vec::new(),
            free_proxy: NULL,
            proxy_count: 0,
            root: None,
            root_bounds: Aabb::EMPTY,
            config,
            tag: NEXT_TREE_TAG.fetch_add(1, Ordering::Relaxed),
            optimizer: OptimizerState::default(),
            spare_nodes: Vec::new(),
            relayout_map: Vec::new(),
            ordered: true,
            disorder: 0,
            refit_pending: false,
            topology: 0,
            morton: Default::default(),
            walk_stack: Vec::new(),
        }
    }

    /// The tuning in use.
    pub fn config(&self) -> &DbvtConfig {
        &self.config
    }

    /// Number of live proxies.
    pub fn len(&self) -> usize {
        self.proxy_count as usize
    }

    /// `true` when the tree holds no proxy.
    pub fn is_empty(&self) -> bool {
        self.proxy_count == 0
    }

    /// The bounds of everything in the tree, or `None` when it is empty.
    pub fn root_bounds(&self) -> Option<Aabb> {
        self.root.map(|_| self.root_bounds)
    }

    /// The user data of a live proxy.
    pub fn get(&self, id: ProxyId) -> Result<&T, DbvtError> {
        let i = self.check(id)?;
        Ok(self.slots[i as usize].data.as_ref().expect("checked live"))
    }

    /// The user data of a live proxy, mutably.
    pub fn get_mut(&mut self, id: ProxyId) -> Result<&mut T, DbvtError> {
        let i = self.check(id)?;
        Ok(self.slots[i as usize].data.as_mut().expect("checked live"))
    }

    /// The fat box stored for a live proxy: the box every query tests.
    pub fn fat_aabb(&self, id: ProxyId) -> Result<Aabb, DbvtError> {
        let i = self.check(id)?;
        Ok(self.proxies[i as usize].fat())
    }

    /// `true` when `id` names a live proxy of this tree.
    pub fn contains(&self, id: ProxyId) -> bool {
        self.check(id).is_ok()
    }

    /// Every live proxy with its data, in slot order (deterministic).
    pub fn iter(&self) -> impl Iterator<Item = (ProxyId, &T)> + '_ {
        self.slots.iter().enumerate().filter_map(move |(i, p)| p.data.as_ref().map(|d| (self.id_of(i as u32), d)))
    }

    /// Removes every proxy; ids issued before become stale.
    pub fn clear(&mut self) {
        let ids: Vec<ProxyId> = self.iter().map(|(id, _)| id).collect();
        for id in ids {
            let _ = self.remove(id);
        }
    }

    /// Checks an id and returns its slot index.
    #[inline]
    pub(super) fn check(&self, id: ProxyId) -> Result<u32, DbvtError> {
        if id.tree != self.tag {
            return Err(DbvtError::ForeignProxy(id));
        }
        match self.slots.get(id.index as usize) {
            Some(p) if p.generation == id.generation && p.data.is_some() => Ok(id.index),
            _ => Err(DbvtError::StaleProxy(id)),
        }
    }

    #[inline]
    pub(super) fn id_of(&self, index: u32) -> ProxyId {
        ProxyId { index, generation: self.slots[index as usize].generation, tree: self.tag }
    }

    /// The fat box for a tight box moving by `displacement`.
    #[inline]
    pub(super) fn fatten(&self, aabb: &Aabb, displacement: Vec3A) -> Aabb {
        let fat = aabb.expand(self.config.margin);
        // Without prediction (the broad phase's default) the displacement adds nothing.
        if self.config.prediction == 0.0 {
            fat
        } else {
            fat.extend_by_displacement(displacement * self.config.prediction)
        }
    }

    // ----- links -----

    /// The bounds of a child reference, read from where the tree stores them.
    #[inline]
    pub(super) fn bounds_of(&self, c: ChildRef) -> Aabb {
        let (parent, slot) = self.parent_of(c);
        if parent == NULL { self.root_bounds } else { self.nodes[parent as usize].bounds(slot as usize) }
    }

    #[inline]
    pub(super) fn parent_of(&self, c: ChildRef) -> (u32, u8) {
        if c.is_leaf() {
            let p = &self.proxies[c.index() as usize];
            (p.parent, p.slot)
        } else {
            let n = &self.nodes[c.index() as usize];
            (n.parent, n.slot)
        }
    }

    #[inline]
    pub(super) fn set_parent(&mut self, c: ChildRef, parent: u32, slot: u8) {
        if c.is_leaf() {
            let p = &mut self.proxies[c.index() as usize];
            p.parent = parent;
            p.slot = slot;
        } else {
            let n = &mut self.nodes[c.index() as usize];
            n.parent = parent;
            n.slot = slot;
        }
    }

    /// Puts `c` with bounds `b` into slot `s` of node `n`, or at the root when `n` is [`NULL`].
    #[inline]
    pub(super) fn set_child(&mut self, n: u32, s: u8, c: ChildRef, b: &Aabb) {
        self.topology += 1;
        if n == NULL {
            self.root = Some(c);
            self.root_bounds = *b;
        } else {
            let node = &mut self.nodes[n as usize];
            node.child[s as usize] = c;
            node.set_bounds(s as usize, b);
        }
        self.set_parent(c, n, s);
    }

    /// Writes new bounds for node `n` where its parent (or the root) stores them.
    #[inline]
    pub(super) fn store_bounds(&mut self, n: u32, b: &Aabb) {
        let (parent, slot) = (self.nodes[n as usize].parent, self.nodes[n as usize].slot);
        if parent == NULL {
            self.root_bounds = *b;
        } else {
            self.nodes[parent as usize].set_bounds(slot as usize, b);
        }
    }
}

/// What `optimize_incremental` carries from one call to the next.
#[derive(Clone, Debug, Default)]
pub(super) struct OptimizerState {
    /// Round-robin position of the treelet rounds: a leaf ordinal in depth-first order.
    pub(super) cursor: u32,
    /// Treelet rounds so far; every `optimize::TOP_PERIOD`-th also rebuilds the top of the tree.
    pub(super) calls: u32,
    /// Leaves of rebuild work given by budgets but not yet spent.
    pub(super) credit: u64,
    /// The SAH cost just after the last whole rebuild (0 if none): a refresh comes once the tree
    /// has aged past it by [`DbvtConfig::refresh_growth`].
    ///
    /// [`DbvtConfig::refresh_growth`]: super::DbvtConfig::refresh_growth
    pub(super) rebuilt_sah: f32,
    /// The part of the last refresh's cost that later budgets have not yet paid back, in leaves
    /// of binned-SAH rebuild work.
    pub(super) refresh_debt: u64,
    /// Calls in the refresh range, to space out the SAH checks.
    pub(super) refresh_checks: u32,
}

/// `rebuild_morton`'s buffers, kept between rebuilds: a tree refreshed every few frames then
/// allocates nothing (fresh buffers cost page faults, a fifth of a 10k rebuild).
#[derive(Clone, Debug, Default)]
pub(super) struct MortonScratch {
    /// (Morton code, proxy), sorted.
    pub(super) keys: Vec<(u64, u32)>,
    /// The proxies' fat boxes in `keys` order.
    pub(super) boxes: Vec<Aabb>,
    /// Each leaf's (parent, slot), in `keys` order.
    pub(super) leaf_links: Vec<(u32, u8)>,
}
