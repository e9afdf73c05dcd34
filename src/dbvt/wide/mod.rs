//! An 8-wide, read-only copy of the tree for ray casts and frustum culling (Wald, Benthin and Boulos, "Getting Rid of
//! Packets", 2008; Embree's BVH8), collapsed from the binary tree in one pass.
//!
//! A binary ray cast pays one dependent node load and one hard-to-predict branch per level, and a
//! cursor ray walks many levels to reach its few instances, so the instance tree, not the meshes,
//! dominated a pick (`docs/performance.md`, "The dynamic tree's choices, measured"). Eight
//! children per node cut the levels to a third and test them with one set of `f32x8` operations,
//! as the mesh BVH does. The copy is only worth its O(n) collapse when enough rays follow before
//! the next change, so the [`crate::Scene`] builds it lazily (see `Scene::wide_view`).
//!
//! Each wide node takes the binary subtree three levels below a binary node: its up to 8
//! descendants at that depth, or shallower leaves. (Not the child of largest area first, as
//! `mesh::collapse` opens them: its slightly better nodes did not repay a collapse several times
//! as costly, which is paid again after every change.) Leaf lanes hold proxy indices, with the
//! same fat boxes as the binary tree, so a ray reaches exactly the proxies it reaches there, only in another order.
//!
//! Each lane also records the binary node slot its box came from. While the tree's links are
//! unchanged (its `topology` counter, which only insertion, removal, rotation, relayout,
//! rebuild and optimisation bump), moving proxies changes only boxes, and the copy is refitted
//! by copying each lane's box again from that slot: a gather with no traversal, a fraction of
//! the collapse's cost (see [`Dbvt::wide_view`]). Better still, [`Dbvt::refit_mirrored`] writes
//! each box into its lane as the tree's own refit recomputes it, through the inverse map
//! (`lane_of`), so that a batch of moves costs the copy no pass of its own.
//!
//! The queries over the copy (ray cast and frustum culling) are in `query.rs`.

mod frozen;
mod query;

pub use frozen::{WideDbvt, WideStorage};

use super::{Dbvt, DbvtError};
use crate::math::Aabb;
use crate::wide::{ChildRef, Node8};

/// The 8-wide copy of a [`Dbvt`] at one moment: valid until the tree next changes, unless
/// [`Dbvt::refit_mirrored`] writes the change into it.
#[derive(Clone, Debug)]
pub(crate) struct WideView {
    /// Node 0 is the root; empty when the tree is.
    nodes: Vec<Node8>,
    /// For each node, where each used lane's box lives in the binary tree: `2 * node + slot`, or
    /// [`ROOT_LEAF`]; [`NONE`] after the last used lane.
    sources: Vec<[u32; 8]>,
    root_bounds: Aabb,
    /// For each binary node slot `2 * node + slot`, the lane that copies its box
    /// (`8 * wide node + lane`), or [`NONE`]: how [`Dbvt::refit_mirrored`] finds the lanes to
    /// write. Only right while `topology` is the tree's.
    lane_of: Vec<u32>,
    /// The tree's `topology` when the copy was collapsed.
    topology: u64,
}

/// The source of the one lane of a tree whose root is a leaf: the tree's root bounds.
const ROOT_LEAF: u32 = u32::MAX - 1;
/// No source (after the last used lane), or no lane (a binary slot no lane copies).
const NONE: u32 = u32::MAX;

impl<T> Dbvt<T> {
    /// Makes the 8-wide copy of the tree as it is now, from `old`, a copy of an earlier moment
    /// (or `None`). When the tree's links have not changed since `old` was made, only its boxes
    /// are copied again, a gather much cheaper than a collapse (see the module docs); otherwise
    /// the tree is collapsed anew into `old`'s storage, since fresh storage each frame would be
    /// faulted in again. Fails while refits are pending, as queries do.
    pub(crate) fn wide_view(&self, old: Option<WideView>) -> Result<WideView, DbvtError> {
        self.check_refitted()?;
        match old {
            Some(mut view) if view.topology == self.topology => {
                self.refit_wide(&mut view);
                Ok(view)
            }
            Some(view) => Ok(self.collapse_wide(view)),
            None => Ok(self.collapse_wide(WideView::empty())),
        }
    }

    /// [`Dbvt::refit`], also writing each box it changes into `view`'s lane for it, when `view`
    /// is a copy of the tree as it stood before the moves being refitted (same `topology`, and
    /// up to date until those moves): `view` then comes out a copy of the refitted tree, with no
    /// second pass over it, and `true` is returned. Otherwise (no view, another topology, or an
    /// arena that must be laid out again first) the refit runs alone and `false` says `view` is
    /// stale. Why: a separate refit of the copy, a gather from the binary boxes, would be a
    /// second pass over every moved box each frame (`docs/performance.md`).
    pub(crate) fn refit_mirrored(&mut self, view: Option<&mut WideView>) -> bool {
        let Some(view) = view.filter(|v| v.topology == self.topology && self.ordered) else {
            if self.refit_pending {
                self.refit();
            }
            return false;
        };
        if self.refit_pending {
            let (nodes, lane_of) = (&mut view.nodes, &view.lane_of);
            // A slot with no lane (its child is collapsed into the wide node above) is written
            // to a scratch node rather than skipped: the target is chosen by a select, where a
            // branch on `NONE` mispredicted on 2.1k slots per frame (the 10k scene loop).
            let mut scratch = Node8::EMPTY;
            self.refit_sweep(|n, node| {
                for s in 0..2 {
                    let lane = lane_of[(2 * n) as usize + s];
                    let index = if lane == NONE { usize::MAX } else { (lane >> 3) as usize };
                    let dst = nodes.get_mut(index).unwrap_or(&mut scratch);
                    copy_slot(dst, (lane & 7) as usize, &node.planes, s);
                }
            });
        }
        view.set_root_bounds(&self.root_bounds);
        true
    }

    /// The tree's `topology` counter: bumped by every change of links (see [`WideView`]).
    pub(crate) fn topology(&self) -> u64 {
        self.topology
    }

    /// `true` when a copy made at `view`'s moment can be refitted to the tree as it is now.
    pub(crate) fn can_refit_wide(&self, view: &WideView) -> bool {
        view.topology == self.topology
    }

    /// Copies every lane's box again from where the binary tree keeps it.
    fn refit_wide(&self, view: &mut WideView) {
        if view.set_root_bounds(&self.root_bounds) {
            return;
        }
        for (node, sources) in view.nodes.iter_mut().zip(&view.sources) {
            for (lane, &src) in sources.iter().enumerate() {
                if src == NONE {
                    break;
                }
                copy_slot(node, lane, &self.nodes[(src >> 1) as usize].planes, (src & 1) as usize);
            }
        }
    }

    /// Collapses the tree into 8-wide nodes, in `old`'s storage.
    fn collapse_wide(&self, old: WideView) -> WideView {
        let WideView { mut nodes, mut sources, mut lane_of, .. } = old;
        nodes.clear();
        sources.clear();
        lane_of.clear();
        // Room for the usual count at once (under one wide node per two proxies in practice, up
        // to one per internal node): grown by doubling instead, the first collapse into fresh
        // storage would copy and fault in each larger block.
        let expected = self.proxy_count as usize / 2 + 1;
        nodes.reserve(expected);
        sources.reserve(expected);
        let mut view = |nodes, sources: Vec<[u32; 8]>| {
            lane_of.resize(2 * self.nodes.len(), NONE);
            for (w, lanes) in sources.iter().enumerate() {
                for (l, &src) in lanes.iter().enumerate() {
                    if src < ROOT_LEAF {
                        lane_of[src as usize] = (8 * w + l) as u32;
                    }
                }
            }
            WideView {
                nodes,
                sources,
                lane_of: std::mem::take(&mut lane_of),
                root_bounds: self.root_bounds,
                topology: self.topology,
            }
        };
        let Some(root) = self.root else {
            return view(nodes, sources);
        };
        nodes.push(Node8::EMPTY);
        sources.push([NONE; 8]);
        if root.is_leaf() {
            nodes[0].set(0, ChildRef::leaf(root.index()), &self.root_bounds);
            sources[0][0] = ROOT_LEAF;
            return view(nodes, sources);
        }
        // (wide node to fill, binary node whose subtree it covers); iterative, so a deep binary
        // tree cannot overflow the call stack.
        let mut work = vec![(0u32, root.index())];
        while let Some((w, b)) = work.pop() {
            // The binary subtree three levels down from `b`: up to 8 lanes, in depth-first order.
            let mut open = [(b, 0u32); 4];
            let mut n_open = 1;
            let mut lane = 0;
            while n_open > 0 {
                n_open -= 1;
                let (at, depth) = open[n_open];
                let node = &self.nodes[at as usize];
                for s in (0..2).rev() {
                    let c = node.child[s];
                    if !c.is_leaf() && depth < 2 {
                        open[n_open] = (c.index(), depth + 1);
                        n_open += 1;
                        continue;
                    }
                    let r = if c.is_leaf() {
                        ChildRef::leaf(c.index())
                    } else {
                        nodes.push(Node8::EMPTY);
                        sources.push([NONE; 8]);
                        work.push((nodes.len() as u32 - 1, c.index()));
                        ChildRef::node(nodes.len() as u32 - 1)
                    };
                    nodes[w as usize].set(lane, r, &node.bounds(s));
                    sources[w as usize][lane] = 2 * at + s as u32;
                    lane += 1;
                }
            }
        }
        view(nodes, sources)
    }
}

/// Copies the box of child slot `s` of a binary node (its `planes`) into `lane` of `dst`, plane
/// by plane, without making an `Aabb`: this is the whole of both refits of the copy.
#[inline(always)]
fn copy_slot(dst: &mut Node8, lane: usize, planes: &[[[f32; 2]; 3]; 2], s: usize) {
    #[allow(clippy::needless_range_loop)] // indices: the iterator form did not compile to plain copies
    for side in 0..2 {
        for a in 0..3 {
            dst.bounds[side][a][lane] = planes[side][a][s];
        }
    }
}

impl WideView {
    /// A copy of no tree, with no storage yet.
    fn empty() -> WideView {
        WideView {
            nodes: Vec::new(),
            sources: Vec::new(),
            lane_of: Vec::new(),
            root_bounds: Aabb::EMPTY,
            topology: u64::MAX,
        }
    }

    /// Takes the tree's root bounds, also into the one lane of a tree whose root is a leaf;
    /// returns `true` in that case, where they are the whole copy.
    fn set_root_bounds(&mut self, root: &Aabb) -> bool {
        self.root_bounds = *root;
        let root_leaf = self.sources.first().is_some_and(|s| s[0] == ROOT_LEAF);
        if root_leaf {
            self.nodes[0].set_bounds(0, root);
        }
        root_leaf
    }

    /// Wide nodes in the copy.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Every lane's bounds contain the bounds of the wide node it points to (for the tests).
    #[cfg(test)]
    fn nested(&self) -> bool {
        self.nodes.iter().all(|n| {
            (0..8).all(|l| {
                let c = n.child[l];
                c.is_leaf() || n.lane_bounds(l).contains(&self.nodes[c.index() as usize].union())
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::queries::RayLeaf;
    use super::super::{ProxyId, RayControl};
    use super::*;
    use crate::math::{Frustum, Ray, ray_aabb2};
    use glam::Vec3A;

    fn boxes(n: usize, seed: u64) -> Vec<Aabb> {
        let mut s = seed;
        let mut f = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n)
            .map(|_| Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * 40.0, Vec3A::splat(0.2 + f())))
            .collect()
    }

    /// The wide cast reaches exactly the proxies the binary cast reaches, with the same entry
    /// distances; with clipping, both closest-hit answers are the brute-force one.
    #[test]
    fn wide_cast_matches_the_binary_cast_and_brute_force() {
        for (n, seed) in [(1, 1u64), (2, 2), (9, 3), (300, 4), (3000, 5)] {
            let bx = boxes(n, seed);
            let mut tree = Dbvt::new();
            for (i, b) in bx.iter().enumerate() {
                tree.insert(*b, i).unwrap();
            }
            let view = tree.wide_view(None).unwrap();
            assert!(view.nested());
            // Every wide node but the root consumes at least one binary internal node.
            assert!(view.node_count() <= n.max(1), "{} wide nodes for {n} leaves", view.node_count());
            let mut ws = super::super::QueryWorkspace::new();
            let mut stack = Vec::new();
            let targets = boxes(200, seed + 100);
            for (k, target) in targets.iter().enumerate() {
                let origin = Vec3A::new(-10.0, (k % 7) as f32 * 6.0, (k % 5) as f32 * 8.0);
                let ray = Ray::new(origin, target.center() - origin);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                tree.visit_ray(&ray, &mut ws, &mut |l: RayLeaf<'_, usize>| {
                    a.push((*l.data, l.t.to_bits()));
                    RayControl::Continue
                })
                .unwrap();
                tree.visit_ray_wide(&view, &ray, &mut stack, &mut |l: RayLeaf<'_, usize>| {
                    b.push((*l.data, l.t.to_bits()));
                    RayControl::Continue
                })
                .unwrap();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "n={n} ray {k}");
                // Closest box entry, clipping as it goes, against brute force over every box.
                let brute = bx.iter().filter_map(|b| ray_aabb2(&ray, b)).min_by(f32::total_cmp);
                let mut best: Option<f32> = None;
                tree.visit_ray_wide(&view, &ray, &mut stack, &mut |l: RayLeaf<'_, usize>| {
                    let t = ray_aabb2(&ray, &bx[*l.data]);
                    if let Some(t) = t
                        && best.is_none_or(|b| t < b)
                    {
                        best = Some(t);
                        return RayControl::Clip(t);
                    }
                    RayControl::Continue
                })
                .unwrap();
                assert_eq!(best, brute, "n={n} ray {k}");
            }
        }
    }

    /// A copy refitted after moves, and one written by the refit itself (`refit_mirrored`), equal
    /// a fresh collapse of the moved tree, lane for lane; after a change of links the old copy is
    /// collapsed anew, and equals a fresh one too.
    #[test]
    fn refitted_copy_equals_a_fresh_collapse() {
        let bx = boxes(500, 9);
        let mut tree = Dbvt::new();
        let ids: Vec<_> = bx.iter().enumerate().map(|(i, b)| tree.insert(*b, i).unwrap()).collect();
        tree.rebuild();
        let mut view = tree.wide_view(None).unwrap();
        let mut mirrored = tree.wide_view(None).unwrap();
        let moved = boxes(500, 10);
        for round in 0..3 {
            let moves: Vec<_> = (0..500)
                .filter(|i| i % 3 == round)
                .map(|i| {
                    (
                        ids[i],
                        Aabb::new(moved[i].min + Vec3A::splat(round as f32), moved[i].max + Vec3A::splat(round as f32)),
                        Vec3A::ZERO,
                    )
                })
                .collect();
            tree.update_proxies(&moves).unwrap();
            assert!(tree.refit_mirrored(Some(&mut mirrored)), "a pre-ordered tree and a current copy");
            assert!(tree.can_refit_wide(&view), "moves alone keep the links");
            view = tree.wide_view(Some(view)).unwrap();
            let fresh = tree.wide_view(None).unwrap();
            assert_eq!(
                (&view.nodes, &view.sources, view.root_bounds),
                (&fresh.nodes, &fresh.sources, fresh.root_bounds)
            );
            assert_eq!((&mirrored.nodes, mirrored.root_bounds), (&fresh.nodes, fresh.root_bounds), "round {round}");
        }
        tree.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 500).unwrap();
        assert!(!tree.can_refit_wide(&view));
        let view = tree.wide_view(Some(view)).unwrap();
        let fresh = tree.wide_view(None).unwrap();
        assert_eq!((&view.nodes, &view.sources), (&fresh.nodes, &fresh.sources));
        // A single leaf at the root, refitted after it moves.
        let mut one = Dbvt::new();
        let id = one.insert(bx[0], 0).unwrap();
        let view = one.wide_view(None).unwrap();
        one.update_proxy(id, bx[1], Vec3A::ZERO).unwrap();
        one.refit();
        let view = one.wide_view(Some(view)).unwrap();
        assert_eq!(view.nodes, one.wide_view(None).unwrap().nodes);
    }

    /// The wide frustum query hands over exactly the proxies of the binary one, which are the
    /// fat boxes `Frustum::may_contain` keeps (brute force), for frusta inside, across and outside
    /// the boxes.
    #[test]
    fn wide_frustum_matches_the_binary_query_and_brute_force() {
        use crate::dbvt::LeafControl;
        // Inserted trees, and rebuilt ones, whose pre-ordered arena lets subtrees wholly inside
        // be read as node ranges.
        for ((n, seed), rebuilt) in
            [(1, 11u64), (2, 12), (40, 13), (3000, 14)].into_iter().flat_map(|c| [(c, false), (c, true)])
        {
            let bx = boxes(n, seed);
            let mut tree = Dbvt::new();
            let fat: Vec<Aabb> = bx
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let id = tree.insert(*b, i).unwrap();
                    tree.fat_aabb(id).unwrap()
                })
                .collect();
            if rebuilt {
                tree.rebuild();
            }
            let view = tree.wide_view(None).unwrap();
            let mut ws = super::super::QueryWorkspace::new();
            let mut stack = Vec::new();
            for k in 0..40 {
                let eye = glam::Vec3::new(-20.0 + k as f32 * 2.0, 20.0, (k % 7) as f32 * 10.0 - 20.0);
                let target = glam::Vec3::new((k % 5) as f32 * 10.0, (k % 3) as f32 * 15.0, 20.0);
                let far = 5.0 + k as f32 * 3.0;
                let vp = glam::camera::rh::proj::directx::perspective(0.3 + k as f32 * 0.05, 1.5, 0.1, far)
                    * glam::camera::rh::view::look_at_mat4(eye, target, glam::Vec3::Y);
                let frustum = Frustum::from_view_projection(vp);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                tree.frustum(&frustum, &mut ws, &mut |_: ProxyId, d: &usize| {
                    a.push(*d);
                    LeafControl::Continue
                })
                .unwrap();
                tree.frustum_wide(&view, &frustum, &mut stack, &mut |_: ProxyId, d: &usize| {
                    b.push(*d);
                    LeafControl::Continue
                })
                .unwrap();
                a.sort_unstable();
                b.sort_unstable();
                let brute: Vec<usize> = (0..n).filter(|&i| frustum.may_contain(&fat[i])).collect();
                assert_eq!(a, brute, "binary: n={n} rebuilt {rebuilt} frustum {k}");
                assert_eq!(b, brute, "wide: n={n} rebuilt {rebuilt} frustum {k}");
            }
        }
    }

    #[test]
    fn empty_tree_and_pending_refit() {
        let mut tree: Dbvt<u32> = Dbvt::new();
        let view = tree.wide_view(None).unwrap();
        let mut hits = 0;
        tree.visit_ray_wide(&view, &Ray::new(Vec3A::ZERO, Vec3A::X), &mut Vec::new(), &mut |_: RayLeaf<'_, u32>| {
            hits += 1;
            RayControl::Continue
        })
        .unwrap();
        assert_eq!(hits, 0);
        let id = tree.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 0).unwrap();
        tree.insert(Aabb::new(Vec3A::splat(3.0), Vec3A::splat(4.0)), 1).unwrap();
        tree.update_proxy(id, Aabb::new(Vec3A::splat(9.0), Vec3A::splat(10.0)), Vec3A::ZERO).unwrap();
        assert!(tree.wide_view(None).is_err());
    }
}
