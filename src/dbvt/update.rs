//! Moving proxies: fat-margin moves, in-place enlargement, refit and incremental optimisation.
//!
//! Two ways to move a proxy, after Box2D:
//!
//! * [`Dbvt::move_proxy`] reinserts at once when the box leaves its fat box (Box2D v2's
//!   `MoveProxy`). The tree stays as good as an incrementally built one.
//! * [`Dbvt::enlarge_proxy`] only grows the stored boxes in place and flags the path to the root
//!   (Box2D v3's `b2DynamicTree_EnlargeProxy`). Structure is untouched, so a frame that moves many
//!   proxies pays one [`Dbvt::refit`] to tighten the flagged nodes, and quality is restored over
//!   time by [`Dbvt::optimize_incremental`] or at once by [`Dbvt::rebuild`].

use glam::Vec3A;

use super::node::{ChildRef, NULL};
use super::{Dbvt, ProxyId};
use crate::error::{DbvtError, InputError};
use crate::math::Aabb;

impl<T> Dbvt<T> {
    /// Validates a move and returns the proxy slot and the fat box it needs, or `None` when the
    /// current fat box still fits.
    fn plan_move(&self, id: ProxyId, aabb: &Aabb, displacement: Vec3A) -> Result<(u32, Option<Aabb>), DbvtError> {
        let p = self.check(id)?;
        aabb.validate()?;
        if !displacement.is_finite() {
            return Err(InputError::NonFiniteDisplacement.into());
        }
        let stored = self.proxies[p as usize].fat;
        let fat = self.fatten(aabb, displacement);
        if stored.contains(aabb) {
            // Still inside. Keep it unless the stored box became huge compared with what the
            // motion now needs (an object that moved fast and then stopped, as in Box2D v2).
            let huge = fat.expand(4.0 * self.config.margin);
            if huge.contains(&stored) {
                return Ok((p, None));
            }
        }
        fat.validate()?;
        Ok((p, Some(fat)))
    }

    /// Moves a proxy to `aabb`, given its `displacement` since the last move (used to predict the
    /// next one). Returns `true` when the proxy left its fat box and was reinserted, `false` when
    /// nothing changed.
    ///
    /// On error (stale id, bad box or displacement) the tree is unchanged.
    pub fn move_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vec3A) -> Result<bool, DbvtError> {
        let (p, fat) = self.plan_move(id, &aabb, displacement)?;
        let Some(fat) = fat else { return Ok(false) };
        self.remove_leaf(p);
        self.proxies[p as usize].fat = fat;
        self.insert_leaf(p)?;
        Ok(true)
    }

    /// Like [`Dbvt::move_proxy`], but a proxy that leaves its fat box gets its new fat box in
    /// place: its ancestors grow to contain it and are flagged, and the structure is untouched.
    /// Queries stay exact. Call [`Dbvt::refit`] after a batch of these to tighten the flagged
    /// nodes. Returns `true` when the stored box changed.
    pub fn enlarge_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vec3A) -> Result<bool, DbvtError> {
        let (p, fat) = self.plan_move(id, &aabb, displacement)?;
        let Some(fat) = fat else { return Ok(false) };
        let proxy = &mut self.proxies[p as usize];
        proxy.fat = fat;
        let (mut parent, slot) = (proxy.parent, proxy.slot);
        if parent == NULL {
            self.root_bounds = fat;
            return Ok(true);
        }
        self.nodes[parent as usize].set_bounds(slot as usize, &fat);
        // Grow ancestors while they no longer contain the box, then flag the rest of the path
        // (stopping at a node already flagged: its ancestors are flagged too).
        let mut growing = true;
        while parent != NULL {
            let node = &mut self.nodes[parent as usize];
            if node.enlarged && !growing {
                break;
            }
            node.enlarged = true;
            let (up, up_slot) = (node.parent, node.slot);
            if growing {
                let current =
                    if up == NULL { self.root_bounds } else { self.nodes[up as usize].bounds(up_slot as usize) };
                if current.contains(&fat) {
                    growing = false;
                } else {
                    let grown = current.union(&fat);
                    if up == NULL {
                        self.root_bounds = grown;
                    } else {
                        self.nodes[up as usize].set_bounds(up_slot as usize, &grown);
                    }
                }
            }
            parent = up;
        }
        Ok(true)
    }

    /// Recomputes the bounds of every flagged node bottom-up, making them tight again after
    /// [`Dbvt::enlarge_proxy`] calls. Structure is unchanged. Work is proportional to the number
    /// of flagged nodes.
    pub fn refit(&mut self) {
        let Some(root) = self.root else { return };
        if root.is_leaf() || !self.nodes[root.index() as usize].enlarged {
            return;
        }
        // Iterative post-order over flagged nodes: (node, children done?).
        let mut stack: Vec<(u32, bool)> = Vec::with_capacity(64);
        stack.push((root.index(), false));
        while let Some((n, done)) = stack.pop() {
            if done {
                let b = self.nodes[n as usize].union();
                self.store_bounds(n, &b);
                self.nodes[n as usize].enlarged = false;
                continue;
            }
            stack.push((n, true));
            for c in self.nodes[n as usize].child {
                if !c.is_leaf() && self.nodes[c.index() as usize].enlarged {
                    stack.push((c.index(), false));
                }
            }
        }
    }

    /// Spends a budget of `budget` reinsertions improving the tree: proxies are taken round-robin
    /// in slot order (deterministic, unlike Bullet's pointer-ordered pass), removed and inserted
    /// again with the SAH sibling search. Also tightens flagged nodes first. Returns the number of
    /// proxies reinserted.
    pub fn optimize_incremental(&mut self, budget: usize) -> usize {
        self.refit();
        let n = self.proxies.len() as u32;
        if n == 0 || self.proxy_count < 3 {
            return 0;
        }
        let mut done = 0;
        let mut scanned = 0;
        while done < budget && scanned < n {
            let p = self.optimize_cursor % n;
            self.optimize_cursor = (p + 1) % n;
            scanned += 1;
            if self.proxies[p as usize].data.is_none() {
                continue;
            }
            self.remove_leaf(p);
            // Reinsertion reuses the node just freed, so it cannot fail for capacity.
            self.insert_leaf(p).expect("a node was just freed");
            done += 1;
            if self.root == Some(ChildRef::leaf(p)) {
                break;
            }
        }
        done
    }
}
