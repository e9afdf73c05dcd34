//! Moving proxies: fat-margin moves, in-place enlargement, refit and incremental optimisation.
//!
//! Two ways to move a proxy, after Box2D:
//!
//! * [`Dbvt::move_proxy`] reinserts at once when the box leaves its fat box (Box2D v2's
//!   `MoveProxy`). The tree stays as good as an incrementally built one.
//! * [`Dbvt::enlarge_proxy`] grows the stored boxes in place, up to the first ancestor that
//!   already contains the new box (Box2D v3's `b2DynamicTree_EnlargeProxy`). Queries stay exact.
//! * [`Dbvt::update_proxy`] stores only the leaf's box, in O(1), and one [`Dbvt::refit`] after the
//!   batch fixes every ancestor in a backwards sweep over the depth-first arena (parry's per-frame
//!   scheme). Queries refuse to run in between.
//!
//! Tree quality is restored over time by [`Dbvt::optimize_incremental`] or at once by
//! [`Dbvt::rebuild`].

use glam::Vec3A;

use super::error::DbvtError;
use super::node::{ChildRef, NULL, Node};
use super::{Dbvt, ProxyId};
use crate::math::Aabb;
use crate::math::InputError;

/// How many entries ahead the batch passes (`update_proxies`, the optimiser's treelet emit)
/// prefetch the links they will write: enough for a miss to memory to land first.
pub(super) const LINK_LOOKAHEAD: usize = 8;

impl<T> Dbvt<T> {
    /// Validates a move and returns the proxy slot and the fat box it needs, or `None` when the
    /// current fat box still fits.
    fn plan_move(&self, id: ProxyId, aabb: &Aabb, displacement: Vec3A) -> Result<(u32, Option<Aabb>), DbvtError> {
        let p = self.check(id)?;
        aabb.validate()?;
        if !displacement.is_finite() {
            return Err(InputError::NonFiniteDisplacement.into());
        }
        match self.fat_needed(p, aabb, displacement) {
            None => Ok((p, None)),
            Some(fat) => {
                fat.validate()?;
                Ok((p, Some(fat)))
            }
        }
    }

    /// The fat box a move of live proxy `p` to `aabb` needs, or `None` when the stored one still
    /// fits: unless the stored box became huge compared with what the motion now needs (an
    /// object that moved fast and then stopped, as in Box2D v2). No checks.
    #[inline]
    fn fat_needed(&self, p: u32, aabb: &Aabb, displacement: Vec3A) -> Option<Aabb> {
        self.refattened(&self.proxies[p as usize].fat(), self.fatten(aabb, displacement), aabb)
    }

    /// The rule of [`Dbvt::fat_needed`] for a stored box the caller holds (the broad phase keeps
    /// a copy of its objects' boxes, and decides its moves without reading the tree).
    #[inline]
    fn refattened(&self, stored: &Aabb, fat: Aabb, aabb: &Aabb) -> Option<Aabb> {
        let keep = stored.contains(aabb) && fat.expand(4.0 * self.config.margin).contains(stored);
        (!keep).then_some(fat)
    }

    /// Checks a move as [`Dbvt::check_move`] does and applies the rule of [`Dbvt::fat_needed`]
    /// to a stored box the caller holds (the broad phase keeps a copy of its objects' boxes and
    /// decides a batch of moves without reading the tree): the new fat box, or `None` when
    /// `stored` still fits.
    #[inline]
    pub(crate) fn checked_refattened(
        &self,
        stored: &Aabb,
        aabb: &Aabb,
        displacement: Vec3A,
    ) -> Result<Option<Aabb>, DbvtError> {
        aabb.validate()?;
        if !displacement.is_finite() {
            return Err(InputError::NonFiniteDisplacement.into());
        }
        // As in `plan_move`, the fat box is checked only when it is needed: one that overflows
        // still contains the stored box, which is then kept.
        match self.refattened(stored, self.fatten(aabb, displacement), aabb) {
            Some(fat) => {
                fat.validate()?;
                Ok(Some(fat))
            }
            None => Ok(None),
        }
    }

    /// Stores a moved proxy's new fat box in its leaf slot and marks the parent for the refit.
    #[inline]
    fn store_fat(&mut self, p: u32, fat: Aabb) {
        let proxy = &mut self.proxies[p as usize];
        proxy.set_fat(&fat);
        let (parent, slot) = (proxy.parent, proxy.slot);
        self.set_bounds_of(parent, slot, &fat);
        if parent != NULL {
            self.nodes[parent as usize].stale = true;
            self.refit_pending = true;
        }
    }

    /// Moves a proxy to `aabb`, given its `displacement` since the last move (used to predict the
    /// next one). Returns `true` when the proxy left its fat box and was reinserted, `false` when
    /// nothing changed.
    ///
    /// On error (stale id, bad box or displacement) the tree is unchanged.
    pub fn move_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vec3A) -> Result<bool, DbvtError> {
        let (p, fat) = self.plan_move(id, &aabb, displacement)?;
        let Some(fat) = fat else { return Ok(false) };
        let grand = self.remove_leaf(p);
        self.proxies[p as usize].set_fat(&fat);
        let start = self.reinsertion_start(grand, &fat);
        self.insert_leaf_below(p, start)?;
        Ok(true)
    }

    /// Like [`Dbvt::move_proxy`], but a proxy that leaves its fat box gets its new fat box in
    /// place: its ancestors grow until one contains it, and the structure is untouched (Box2D v3's
    /// `b2DynamicTree_EnlargeProxy`). Queries stay exact; bounds stay loose until
    /// [`Dbvt::refit`]. Returns `true` when the stored box changed.
    pub fn enlarge_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vec3A) -> Result<bool, DbvtError> {
        let (p, fat) = self.plan_move(id, &aabb, displacement)?;
        let Some(fat) = fat else { return Ok(false) };
        self.enlarge_to(p, fat);
        Ok(true)
    }

    /// The second half of [`Dbvt::enlarge_proxy`], for a caller that checked the move and
    /// found the new fat box itself ([`Dbvt::checked_refattened`]): stores `fat` as live proxy `id`'s box
    /// and grows its ancestors until one contains it.
    pub(crate) fn enlarge_checked(&mut self, id: ProxyId, fat: Aabb) {
        debug_assert!(self.check(id).is_ok() && fat.validate().is_ok());
        self.enlarge_to(id.index, fat);
    }

    /// Stores `fat` as proxy `p`'s box and grows its ancestors until one contains it.
    fn enlarge_to(&mut self, p: u32, fat: Aabb) {
        self.proxies[p as usize].set_fat(&fat);
        // The ancestors only grow here; the next refit shrinks them back from the leaf's parent.
        let parent = self.proxies[p as usize].parent;
        if parent != NULL {
            self.nodes[parent as usize].stale = true;
        }
        let mut c = ChildRef::leaf(p);
        loop {
            let (parent, slot) = self.parent_of(c);
            let stored =
                if parent == NULL { self.root_bounds } else { self.nodes[parent as usize].bounds(slot as usize) };
            let grown = if c.is_leaf() { fat } else { stored.union(&fat) };
            if !c.is_leaf() && stored.contains(&fat) {
                return;
            }
            self.set_bounds_of(parent, slot, &grown);
            if parent == NULL {
                return;
            }
            c = ChildRef::node(parent);
        }
    }

    /// The fastest way to move many proxies in one frame: stores the new fat box of a proxy that
    /// left its old one and touches nothing else, in O(1). The ancestors are fixed by one
    /// [`Dbvt::refit`] after the batch; until then queries return
    /// [`DbvtError::RefitPending`] rather than answers that could miss moved proxies. Returns
    /// `true` when the stored box changed.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt, DbvtError, QueryWorkspace, Ray};
    /// use glam::Vec3A;
    /// let (mut tree, ids) = Dbvt::build((0..100).map(|i| (Aabb::new(Vec3A::splat(i as f32), Vec3A::splat(i as f32 + 0.5)), i)))?;
    /// for (i, id) in ids.iter().enumerate() {
    ///     let b = Aabb::new(Vec3A::splat(i as f32 + 1.0), Vec3A::splat(i as f32 + 1.5));
    ///     tree.update_proxy(*id, b, Vec3A::ONE)?;
    /// }
    /// let mut ws = QueryWorkspace::new();
    /// let ray = Ray::new(Vec3A::splat(-1.0), Vec3A::ONE);
    /// assert_eq!(tree.intersect(&ray, &mut ws), Err(DbvtError::RefitPending));
    /// tree.refit();
    /// assert!(tree.intersect(&ray, &mut ws)?.is_some());
    /// # Ok::<(), DbvtError>(())
    /// ```
    pub fn update_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vec3A) -> Result<bool, DbvtError> {
        let (p, fat) = self.plan_move(id, &aabb, displacement)?;
        let Some(fat) = fat else { return Ok(false) };
        self.store_fat(p, fat);
        Ok(true)
    }

    /// [`Dbvt::update_proxy`] for a whole batch, the usual shape of a physics step: returns how
    /// many stored boxes changed. The batch is checked first (ids, boxes, displacements) and
    /// nothing is changed if any entry is bad, so an error leaves the tree as it was.
    ///
    /// Each update touches three scattered cache lines (the proxy's slot, its link and its parent
    /// node). The checking pass already loads the first two and prefetches the links; the writing
    /// pass prefetches parent nodes a few entries ahead, so the misses overlap instead of queueing.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt};
    /// use glam::Vec3A;
    /// let (mut tree, ids) = Dbvt::build((0..10).map(|i| (Aabb::new(Vec3A::splat(i as f32), Vec3A::splat(i as f32 + 0.5)), i)))?;
    /// let moves: Vec<_> = ids.iter().map(|&id| {
    ///     let b = tree.fat_aabb(id).unwrap();
    ///     (id, Aabb::new(b.min + Vec3A::X * 3.0, b.max + Vec3A::X * 3.0), Vec3A::X * 3.0)
    /// }).collect();
    /// assert_eq!(tree.update_proxies(&moves)?, 10);
    /// tree.refit();
    /// tree.validate().unwrap();
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn update_proxies(&mut self, moves: &[(ProxyId, Aabb, Vec3A)]) -> Result<usize, DbvtError> {
        for (id, aabb, d) in moves {
            let p = self.check(*id)?;
            self.prefetch_link(p);
            self.check_move(aabb, *d)?;
        }
        let mut changed = 0;
        for (i, (id, aabb, d)) in moves.iter().enumerate() {
            if let Some((ahead, _, _)) = moves.get(i + LINK_LOOKAHEAD) {
                let parent = self.proxies[ahead.index as usize].parent;
                if parent != NULL {
                    self.prefetch_node(parent);
                }
            }
            // Checked above, every entry: only the move itself is left.
            if let Some(fat) = self.fat_needed(id.index, aabb, *d) {
                self.store_fat(id.index, fat);
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Checks that a move to `aabb` by `displacement` can be made: the box, the displacement and
    /// the fat box they make are all finite (the id is checked apart).
    #[inline]
    pub(crate) fn check_move(&self, aabb: &Aabb, displacement: Vec3A) -> Result<(), DbvtError> {
        aabb.validate()?;
        if !displacement.is_finite() {
            return Err(InputError::NonFiniteDisplacement.into());
        }
        self.fatten(aabb, displacement).validate()?;
        Ok(())
    }

    #[inline(always)]
    fn prefetch_link(&self, p: u32) {
        crate::hint::prefetch(self.proxies.as_ptr().wrapping_add(p as usize));
    }

    /// Starts loading node `n` (queries that put it on a stack, updates that will refit it).
    #[inline(always)]
    pub(super) fn prefetch_node(&self, n: u32) {
        crate::hint::prefetch(self.nodes.as_ptr().wrapping_add(n as usize));
    }

    /// `true` while [`Dbvt::update_proxy`] changes await a [`Dbvt::refit`].
    pub fn is_refit_pending(&self) -> bool {
        self.refit_pending
    }

    /// Writes bounds into slot `slot` of `parent`, or the root bounds.
    #[inline]
    fn set_bounds_of(&mut self, parent: u32, slot: u8, b: &Aabb) {
        if parent == NULL {
            self.root_bounds = *b;
        } else {
            self.nodes[parent as usize].set_bounds(slot as usize, b);
        }
    }

    /// Recomputes the bounds of every internal node above a moved leaf, bottom-up, tight around
    /// its children, keeping the structure. Call it once after a batch of [`Dbvt::update_proxy`]
    /// (required) or [`Dbvt::enlarge_proxy`] (to tighten).
    ///
    /// The nodes are kept in depth-first pre-order, so this is one backwards sweep over the arena
    /// (as parry's refit), with sequential memory access. Only nodes marked `stale` (the parent
    /// of a moved leaf, then each parent of a recomputed node) are recomputed and written to
    /// their parents; the others are read and passed over (Box2D v3's refit of "enlarged" nodes
    /// works the same way). When inserts, removals or rotations have disturbed the order, the
    /// arena is first laid out again depth-first, which also makes queries faster (better
    /// locality); that relayout costs one traversal.
    pub fn refit(&mut self) {
        if !self.ordered {
            // A few changes (an incremental optimisation, some reinsertions): refit by a
            // post-order walk, which allocates nothing and leaves the proxies alone. Many
            // changes: lay the arena out again, which pays off in every later query and refit.
            if (self.disorder as usize) * 16 < self.nodes.len() {
                self.refit_post_order();
                self.refit_pending = false;
                return;
            }
            self.relayout();
        }
        self.refit_sweep(|_, _| {});
    }

    /// The backwards sweep of [`Dbvt::refit`] over a pre-ordered arena: recomputes each stale
    /// node, and hands it to `changed` first (both of its child boxes may be new), so that a
    /// copy of the boxes (the 8-wide view) can be kept in step in the same pass.
    pub(super) fn refit_sweep(&mut self, mut changed: impl FnMut(u32, &Node)) {
        debug_assert!(self.ordered);
        if self.nodes.len() <= GATHERED_SWEEP_MAX_NODES {
            self.refit_sweep_gathered(&mut changed);
        } else {
            self.refit_sweep_plain(&mut changed);
        }
        self.refit_pending = false;
    }

    /// [`Dbvt::refit_sweep`] of an arena beyond L2: every node in turn, highest first.
    fn refit_sweep_plain(&mut self, changed: &mut impl FnMut(u32, &Node)) {
        for n in (0..self.nodes.len()).rev() {
            if self.nodes[n].stale {
                self.refit_stale(n, changed);
            }
        }
    }

    /// [`Dbvt::refit_sweep`] of an arena that stays in L2: read in blocks of 64 nodes, whose
    /// marks are gathered into one bit mask without a branch, and only the marked nodes are
    /// visited, highest first. A parent marked on the way is a lower index (pre-order): inside
    /// the block its bit is set in the mask; below it the mark waits in the node for its own
    /// block. Why: when a fraction of the proxies has moved, the plain sweep's branch on each
    /// node's mark is unpredictable, and the gather has no such branch. Why only within L2:
    /// beyond it the sweep waits on memory, and the gather's 64 loads must all arrive before any
    /// node is refitted, where the plain sweep overlaps its misses with the work
    /// (`docs/performance.md`, "The refit").
    fn refit_sweep_gathered(&mut self, changed: &mut impl FnMut(u32, &Node)) {
        let mut end = self.nodes.len();
        while end > 0 {
            let base = end.saturating_sub(64);
            let mut marked =
                self.nodes[base..end].iter().enumerate().fold(0u64, |m, (i, node)| m | (u64::from(node.stale) << i));
            while marked != 0 {
                let bit = 63 - marked.leading_zeros() as usize;
                marked &= !(1 << bit);
                let parent = self.refit_stale(base + bit, changed);
                // The parent's bit, when it lies in this block (below the node just refitted).
                let offset = (parent as usize).wrapping_sub(base);
                marked |= u64::from(offset < 64) << (offset & 63);
            }
            end = base;
        }
    }

    /// Refits stale node `n`: clears its mark, hands it to `changed`, stores its union in its
    /// parent and marks the parent. Returns the parent ([`NULL`] at the root).
    #[inline(always)]
    fn refit_stale(&mut self, n: usize, changed: &mut impl FnMut(u32, &Node)) -> u32 {
        let node = &mut self.nodes[n];
        node.stale = false;
        changed(n as u32, node);
        let b = node.union();
        let (parent, slot) = (node.parent, node.slot);
        self.set_bounds_of(parent, slot, &b);
        if parent != NULL {
            self.nodes[parent as usize].stale = true;
        }
        parent
    }

    /// Refits every internal node, children before parents, by an explicit post-order walk: valid
    /// in any arena order.
    fn refit_post_order(&mut self) {
        let Some(root) = self.root else { return };
        if root.is_leaf() {
            return;
        }
        // (node, 1 once its children are done, unused).
        let mut stack = std::mem::take(&mut self.walk_stack);
        stack.clear();
        stack.push((root.index(), 0, 0));
        while let Some((n, children_done, _)) = stack.pop() {
            let node = &mut self.nodes[n as usize];
            if children_done == 1 {
                // Every node is recomputed on this path, so the marks are only cleared.
                node.stale = false;
                let b = node.union();
                let (parent, slot) = (node.parent, node.slot);
                self.set_bounds_of(parent, slot, &b);
                continue;
            }
            stack.push((n, 1, 0));
            for c in node.child {
                if !c.is_leaf() {
                    stack.push((c.index(), 0, 0));
                }
            }
        }
        self.walk_stack = stack;
    }
}

/// The largest arena [`Dbvt::refit_sweep`] reads in gathered blocks: 1 MiB of 64-byte nodes,
/// about a current core's L2 cache, beyond which the gathered reads stop paying.
const GATHERED_SWEEP_MAX_NODES: usize = 1 << 14;

#[cfg(test)]
mod tests {
    use glam::Vec3A;

    use super::super::Dbvt;
    use crate::math::Aabb;
    use slabtree_testkit::rng::units;

    /// The two sweeps of `refit_sweep` leave the same arena, node for node, after the moves of a
    /// frame. The default tests' trees are below `GATHERED_SWEEP_MAX_NODES`, so without this the
    /// plain sweep would run only in larger trees (the height tests, the soak).
    #[test]
    fn the_gathered_and_the_plain_sweep_refit_alike() {
        let mut r = units(0x5EED);
        let boxes: Vec<Aabb> = (0..3000)
            .map(|_| Aabb::from_center_half_extents(Vec3A::new(r(), r(), r()) * 60.0, Vec3A::splat(0.2 + r())))
            .collect();
        let (mut tree, ids) = Dbvt::build(boxes.iter().map(|&b| (b, ()))).unwrap();
        for frame in 0..4 {
            // A tenth of the proxies move, some far enough to leave their fat boxes.
            let moves: Vec<_> = ids
                .iter()
                .skip(frame)
                .step_by(10)
                .map(|&id| {
                    let d = Vec3A::new(r() - 0.5, r() - 0.5, r() - 0.5) * 4.0;
                    let b = tree.fat_aabb(id).unwrap();
                    (id, Aabb::new(b.min + d, b.max + d), d)
                })
                .collect();
            tree.update_proxies(&moves).unwrap();
            assert!(tree.refit_pending && tree.ordered);
            let mut plain = tree.clone();
            tree.refit_sweep_gathered(&mut |_, _| {});
            plain.refit_sweep_plain(&mut |_, _| {});
            assert!(tree.nodes == plain.nodes, "frame {frame}: the sweeps disagree");
            tree.refit_pending = false;
            tree.validate().unwrap();
        }
    }
}
