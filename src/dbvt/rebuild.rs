//! Full rebuild and bulk build with the binned-SAH builder.

use super::error::DbvtError;
use super::node::{ChildRef, NULL};
use super::tree::MortonScratch;
use super::{Dbvt, DbvtConfig, ProxyId};
use crate::build::{BinnedSah, BuildItem};
use crate::build::{MortonGrid, morton_split};
use crate::math::Aabb;

impl<T> Dbvt<T> {
    /// Builds a tree over many boxes at once with binned SAH, which gives a better tree than
    /// inserting them one by one, much faster. This is how a scene is usually loaded. Ids are
    /// returned in input order.
    ///
    /// Fails without building anything if any box is NaN, infinite or inverted.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt};
    /// use glam::Vec3A;
    /// let boxes = (0..100).map(|i| (Aabb::new(Vec3A::splat(i as f32), Vec3A::splat(i as f32 + 0.5)), i));
    /// let (tree, ids) = Dbvt::build(boxes)?;
    /// assert_eq!(tree.len(), 100);
    /// assert_eq!(*tree.get(ids[42])?, 42);
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn build(items: impl IntoIterator<Item = (Aabb, T)>) -> Result<(Self, Vec<ProxyId>), DbvtError> {
        Self::build_with_config(items, DbvtConfig::default())
    }

    /// [`Dbvt::build`] with the given tuning.
    pub fn build_with_config(
        items: impl IntoIterator<Item = (Aabb, T)>,
        config: DbvtConfig,
    ) -> Result<(Self, Vec<ProxyId>), DbvtError> {
        Self::build_from(items, config, true)
    }

    /// A tree of boxes stored exactly as given, with `config` for later inserts and moves: each
    /// box is taken as already grown by the margin, as [`Dbvt::fat_aabb`] reads it back from
    /// another tree, where [`Dbvt::build_with_config`] would grow it once more. A tree saved as
    /// its stored boxes thus comes back storing the same boxes, and answers every query the
    /// same (its structure is a fresh bulk build's).
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt, DbvtConfig};
    /// use glam::Vec3A;
    /// let config = DbvtConfig { margin: 0.5, ..Default::default() };
    /// let (tree, ids) = Dbvt::build_with_config([(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 'a')], config)?;
    /// let saved = [(tree.fat_aabb(ids[0])?, 'a')];
    /// let (copy, copied) = Dbvt::from_stored_boxes(saved, config)?;
    /// assert_eq!(copy.fat_aabb(copied[0])?, tree.fat_aabb(ids[0])?);
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn from_stored_boxes(
        items: impl IntoIterator<Item = (Aabb, T)>,
        config: DbvtConfig,
    ) -> Result<(Self, Vec<ProxyId>), DbvtError> {
        Self::build_from(items, config, false)
    }

    /// A bulk build of `items`, their boxes grown by the margin when `grow`.
    fn build_from(
        items: impl IntoIterator<Item = (Aabb, T)>,
        config: DbvtConfig,
        grow: bool,
    ) -> Result<(Self, Vec<ProxyId>), DbvtError> {
        let mut tree = Dbvt::with_config(config);
        let items = items.into_iter();
        // Room for what the iterator promises, so the arrays grow by copying at most once.
        let (expected, _) = items.size_hint();
        let mut ids = Vec::with_capacity(expected);
        tree.proxies.reserve(expected);
        tree.slots.reserve(expected);
        for (aabb, data) in items {
            aabb.validate()?;
            let fat = if grow { tree.fatten(&aabb, glam::Vec3A::ZERO) } else { aabb };
            let p = tree.alloc_proxy(fat, data)?;
            ids.push(tree.id_of(p));
        }
        tree.rebuild();
        Ok((tree, ids))
    }

    /// Rebuilds the whole tree from the proxies' fat boxes with binned SAH, in parallel above
    /// [`DbvtConfig::parallel_threshold`] proxies. Ids stay valid. Nodes come out in depth-first
    /// order, which also restores memory locality.
    pub fn rebuild(&mut self) {
        self.rebuild_binned(self.config.fast_build);
    }

    /// [`Dbvt::rebuild`], splitting along the widest centroid spread only or trying every axis
    /// (see [`DbvtConfig::fast_build`]).
    pub(super) fn rebuild_binned(&mut self, longest_axis_only: bool) {
        let mut items: Vec<BuildItem> = self
            .proxies
            .iter()
            .zip(&self.slots)
            .enumerate()
            .filter(|(_, (_, s))| s.data.is_some())
            .map(|(i, (p, _))| BuildItem::new(p.fat(), i as u32))
            .collect();
        let builder = sah_builder(self.config.parallel_threshold, longest_axis_only);
        let built = builder.build(&mut items);
        // A build over n items with one item per leaf has n - 1 internal nodes; write them in
        // pre-order (child 0 right after its parent), which `refit` and `optimize_incremental`
        // rely on.
        self.clear_arena(items.len().saturating_sub(1));
        if !built.is_empty() {
            for it in items.iter_mut() {
                it.set_index(ChildRef::leaf(it.index()).raw());
            }
            self.emit_preorder(&built, &items, NULL, 0, 0..);
        }
        self.finish_whole_rebuild();
    }

    /// Rebuilds the whole tree along a Morton curve (a linear BVH: Lauterbach et al. 2009,
    /// Karras 2012): the proxies are sorted by the Morton code of their fat box's centre, and
    /// each range of codes is split where its highest differing bit changes, that is, at an
    /// octree cell's midplane. It is several times faster than [`Dbvt::rebuild`], and its
    /// trees cost more by the SAH, from a little on even spreads to a quarter on meshes'
    /// triangles (`docs/performance.md`), which is why
    /// [`Dbvt::optimize_incremental`] uses it to refresh trees of moving proxies often, and
    /// [`Dbvt::rebuild`] stays the choice for a tree that will not change. Ids stay valid;
    /// nodes come out in depth-first order.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt};
    /// use glam::Vec3A;
    /// let at = |x: usize| Aabb::from_center_half_extents(Vec3A::new(x as f32, 0.0, 0.0), Vec3A::splat(0.4));
    /// let (mut tree, ids) = Dbvt::build((0..1000).map(|i| (at(i), i)))?;
    /// // Every proxy jumps elsewhere: the tree's structure no longer matches where they are.
    /// let moves: Vec<_> = ids.iter().enumerate().map(|(i, &id)| (id, at(i * 7919 % 1000), Vec3A::ZERO)).collect();
    /// tree.update_proxies(&moves)?;
    /// tree.refit();
    /// let stale = tree.stats().sah_cost;
    /// tree.rebuild_morton();
    /// tree.validate()?;
    /// assert!(tree.stats().sah_cost < stale / 10.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rebuild_morton(&mut self) {
        self.sort_morton();
        self.emit_sorted_morton();
    }

    /// The first half of [`Dbvt::rebuild_morton`]: the live proxies sorted along the curve, with
    /// their boxes in that order, in the Morton scratch.
    pub(super) fn sort_morton(&mut self) {
        let MortonScratch { keys, boxes, leaf_links: _ } = &mut self.morton;
        let live = || self.proxies.iter().zip(&self.slots).enumerate().filter(|(_, (_, s))| s.data.is_some());
        let grid = MortonGrid::new(&live().fold(Aabb::EMPTY, |b, (_, (p, _))| b.grow(p.fat().center())));
        keys.clear();
        keys.extend(live().map(|(i, (p, _))| (grid.code(p.fat().center()), i as u32)));
        // By code, then by proxy index: deterministic, whatever the sort's algorithm.
        keys.sort_unstable();
        // The boxes in curve order, gathered in one pass: independent loads the processor
        // overlaps, where reading each inside the recursion waited on one cache miss at a time
        // (the proxies are in creation order, a random one along the curve).
        boxes.clear();
        boxes.extend(keys.iter().map(|&(_, p)| self.proxies[p as usize].fat()));
    }

    /// The SAH cost (as [`TreeStats::sah_cost`](super::TreeStats::sah_cost)) of the tree that
    /// [`Dbvt::emit_sorted_morton`] would write from the sorted scratch, computed without
    /// writing it: the optimiser's test of whether a refresh would improve a tree built by
    /// insertion.
    pub(super) fn sorted_morton_sah(&self) -> f32 {
        let MortonScratch { keys, boxes, .. } = &self.morton;
        if keys.is_empty() {
            return 0.0;
        }
        let mut area = 0.0f64;
        let root = morton_areas(keys, boxes, 0, &mut area);
        let root_area = f64::from(root.half_area());
        if root_area.is_nan() || root_area <= 0.0 { 0.0 } else { (1.0 + area / root_area) as f32 }
    }

    /// The second half of [`Dbvt::rebuild_morton`]: writes the tree over the sorted scratch.
    pub(super) fn emit_sorted_morton(&mut self) {
        let mut scratch = std::mem::take(&mut self.morton);
        let MortonScratch { keys, boxes, leaf_links } = &mut scratch;
        leaf_links.clear();
        leaf_links.resize(keys.len(), (NULL, 0));

        self.clear_arena(keys.len().saturating_sub(1));
        if !keys.is_empty() {
            let mut next = 0;
            let (root, bounds) = self.emit_morton(keys, boxes, leaf_links, 0, &mut next);
            self.root = Some(root);
            self.root_bounds = bounds;
            if !root.is_leaf() {
                let node = &mut self.nodes[root.index() as usize];
                node.parent = NULL;
                node.slot = 0;
            }
        }
        // The proxies' parent links, again in one pass of independent stores.
        for (&(_, p), &(parent, slot)) in keys.iter().zip(leaf_links.iter()) {
            let proxy = &mut self.proxies[p as usize];
            proxy.parent = parent;
            proxy.slot = slot;
        }
        self.morton = scratch;
        self.finish_whole_rebuild();
    }

    /// Writes the subtree over `keys` (sorted Morton codes with their proxies; `boxes` and
    /// `leaf_links` run alongside, `first` is their offset) into the arena in pre-order from node
    /// `*next`, and returns its root and bounds. A range is split where its codes'
    /// highest differing bit changes, or in the middle when all codes are equal, so the depth is
    /// at most 63 + log2(n). Each leaf's parent link goes to `leaf_links`, for one pass later.
    fn emit_morton(
        &mut self,
        keys: &[(u64, u32)],
        boxes: &[Aabb],
        leaf_links: &mut [(u32, u8)],
        first: usize,
        next: &mut u32,
    ) -> (ChildRef, Aabb) {
        let n = keys.len();
        if n == 1 {
            return (ChildRef::leaf(keys[0].1), boxes[first]);
        }
        let mid = morton_split(keys, |k| k.0);
        let me = *next;
        *next += 1;
        let (l, lb) = self.emit_morton(&keys[..mid], boxes, leaf_links, first, next);
        let (r, rb) = self.emit_morton(&keys[mid..], boxes, leaf_links, first + mid, next);
        let node = &mut self.nodes[me as usize];
        node.child = [l, r];
        node.set_bounds(0, &lb);
        node.set_bounds(1, &rb);
        for (s, (c, at)) in [(l, first), (r, first + mid)].into_iter().enumerate() {
            if c.is_leaf() {
                leaf_links[at] = (me, s as u8);
            } else {
                let child = &mut self.nodes[c.index() as usize];
                child.parent = me;
                child.slot = s as u8;
            }
        }
        (ChildRef::node(me), lb.union(&rb))
    }
}

impl MortonScratch {
    /// Bytes held.
    pub(super) fn memory_bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.boxes.capacity() * std::mem::size_of::<Aabb>()
            + self.leaf_links.capacity() * std::mem::size_of::<(u32, u8)>()
    }
}

/// The bounds of the Morton subtree over `keys` (as [`Dbvt::emit_morton`] would write it, with
/// `boxes` alongside from `first`), adding both children's half areas at each of its internal
/// nodes to `area`.
fn morton_areas(keys: &[(u64, u32)], boxes: &[Aabb], first: usize, area: &mut f64) -> Aabb {
    if keys.len() == 1 {
        return boxes[first];
    }
    let mid = morton_split(keys, |k| k.0);
    let l = morton_areas(&keys[..mid], boxes, first, area);
    let r = morton_areas(&keys[mid..], boxes, first + mid, area);
    *area += f64::from(l.half_area()) + f64::from(r.half_area());
    l.union(&r)
}

/// The binned-SAH settings of the tree's builds: one proxy per leaf, and either one binned
/// axis per node, as parry's builder bins (see [`BinnedSah::longest_axis_only`]), or all three.
/// `parallel_threshold`: subtrees larger than this are built on several threads.
pub(super) fn sah_builder(parallel_threshold: usize, longest_axis_only: bool) -> BinnedSah {
    BinnedSah { max_leaf: 1, parallel_threshold, longest_axis_only, ..Default::default() }
}
