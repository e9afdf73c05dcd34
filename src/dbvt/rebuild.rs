//! Full rebuild and bulk build with the binned-SAH builder.

use super::node::{ChildRef, NULL, Node};
use super::{Dbvt, DbvtConfig, ProxyId};
use crate::build::{BinnedSah, BuildItem};
use crate::error::DbvtError;
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
        let mut tree = Dbvt::with_config(config);
        let mut ids = Vec::new();
        for (aabb, data) in items {
            aabb.validate()?;
            let fat = tree.fatten(&aabb, glam::Vec3A::ZERO);
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
        let mut items: Vec<BuildItem> = self
            .proxies
            .iter()
            .zip(&self.slots)
            .enumerate()
            .filter(|(_, (_, s))| s.data.is_some())
            .map(|(i, (p, _))| BuildItem::new(p.fat, i as u32))
            .collect();
        let builder =
            BinnedSah { max_leaf: 1, parallel_threshold: self.config.parallel_threshold, ..Default::default() };
        let built = builder.build(&mut items);

        self.topology += 1;
        self.nodes.clear();
        self.free_node = NULL;
        self.free_node_count = 0;
        self.root = None;
        self.root_bounds = Aabb::EMPTY;
        if built.is_empty() {
            self.ordered = true;
            self.disorder = 0;
            self.refit_pending = false;
            return;
        }
        // A build over n items with one item per leaf has n - 1 internal nodes; write them in
        // pre-order (child 0 right after its parent), which `refit` and `optimize_incremental`
        // rely on.
        self.nodes.resize(items.len() - 1, Node::FREE);
        for it in items.iter_mut() {
            it.index = ChildRef::leaf(it.index).raw();
        }
        self.emit_preorder(&built, &items, NULL, 0, 0..);
        self.ordered = true;
        self.disorder = 0;
        self.refit_pending = false;
    }
}
